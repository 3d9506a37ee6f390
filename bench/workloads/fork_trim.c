/*
 * bench/workloads/fork_trim.c - how long fork() takes while another thread
 * calls malloc_trim(0) in a loop (issue 8, item 4: fork beside trim). A fork
 * waits in the allocator's prefork handler for the locks a trim holds; this
 * shows how long.
 *
 * --threads (2) threads churn malloc/free of 16 B - 4 KiB blocks (keeping
 * 256 each), so that there are per-thread or per-CPU caches to flush; with
 * --trim 1 (default) one more thread calls malloc_trim(0) without pause.
 * The main thread forks --forks (200) times; each child _exits at once, and
 * the parent times the fork() call alone (its return in the parent) and
 * waits for the child. A --gap-us (200) pause between forks.
 *
 *   bench_fork_trim [--threads 2] [--forks 200] [--trim 1] [--gap-us 200]
 *
 * Prints {"bench":"fork_trim", "trims":.., "fork_us_median":..,
 * "fork_us_p90":.., "fork_us_max":.., ...}.
 */
#include "bench.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

extern int malloc_trim(size_t pad);

static atomic_bool stop;
static atomic_long trims;

static void *churn(void *arg)
{
	uint64_t rng = bench_seed((uintptr_t)arg + 1);
	void *slot[256] = { 0 };
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		unsigned i = (unsigned)(bench_rand(&rng) % 256);
		free(slot[i]);
		slot[i] = bench_xmalloc(bench_log_uniform(&rng, 16, 4096));
	}
	for (int i = 0; i < 256; i++)
		free(slot[i]);
	return NULL;
}

static void *trimmer(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		malloc_trim(0);
		atomic_fetch_add_explicit(&trims, 1, memory_order_relaxed);
	}
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	struct bench_args a;
	bench_args_init(&a, argc, argv);
	long threads = bench_long(&a, "threads", 2, 1);
	long forks = bench_long(&a, "forks", 200, 10);
	long trim = bench_long(&a, "trim", 1, 1);
	long gap_us = bench_long(&a, "gap-us", 200, 200);
	pthread_t th[65];
	if (threads > 64)
		threads = 64;
	for (long i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, churn, (void *)(uintptr_t)i);
	if (trim)
		pthread_create(&th[threads], NULL, trimmer, NULL);
	double *us = bench_xmalloc((size_t)forks * sizeof(*us));
	double t_start = bench_now_ns();
	for (long f = 0; f < forks; f++) {
		struct timespec gap = { 0, gap_us * 1000 };
		nanosleep(&gap, NULL);
		double t0 = bench_now_ns();
		pid_t pid = fork();
		if (pid == 0)
			_exit(0);
		us[f] = (bench_now_ns() - t0) / 1e3;
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
	double wall = (bench_now_ns() - t_start) / 1e9;
	atomic_store(&stop, true);
	for (long i = 0; i < threads + (trim ? 1 : 0); i++)
		pthread_join(th[i], NULL);
	qsort(us, (size_t)forks, sizeof(*us), cmp_double);
	printf("{\"bench\":\"fork_trim\",\"threads\":%ld,\"trim\":%ld,\"forks\":%ld,\"trims\":%ld,"
	       "\"wall_s\":%.3f,\"fork_us_median\":%.1f,\"fork_us_p90\":%.1f,\"fork_us_max\":%.1f}\n",
	       threads, trim, forks, atomic_load(&trims), wall, us[forks / 2],
	       us[forks * 9 / 10], us[forks - 1]);
	free(us);
	return 0;
}
