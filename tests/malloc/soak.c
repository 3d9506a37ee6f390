/*
 * tests/malloc/soak.c - a long run of everything at once. Not a benchmark,
 * and no verdict depends on timing: whatever the scheduler does, every check
 * below must hold on every block and every sample.
 *
 *   soak [seconds]   (default 60; `make test` runs 60, longer runs are in
 *                     docs/reliability.md)
 *
 * Until the time is up, generations of WORKERS_PER_CPU threads per CPU (at
 * least 16: threads >> CPUs) each run OPS_PER_LIFE operations and exit, and
 * the next generation starts (thread churn). A worker keeps up to LOCAL
 * blocks and at most LIVE_CAP bytes of them, over all size classes (small,
 * large, a few huge), made by malloc, calloc, memalign, aligned_alloc and
 * posix_memalign (blocks taken from the shared array come on top of the
 * cap); it reallocates them (growing and shrinking), frees them,
 * and swaps small and large ones through a shared array, so that most of
 * those are freed by another thread, often after their maker has exited.
 * Every block carries its size and a pattern (malloc_test.h), checked
 * before every realloc and free, and calloc memory must be zero.
 * Beside the workers:
 *  - a forker forks again and again while they allocate; each child
 *    allocates, checks and frees blocks of every kind in two threads and
 *    exits 0 (an alarm turns a hang in the child into a failure);
 *  - a tuner changes run-time tunables through pcmalloc_ctl_set (every set
 *    must succeed), and samples the resident set size.
 * Verdicts: no damaged block, no misaligned one, no failed tunable set,
 * every child exited 0, at least one fork and one generation; the resident
 * set never exceeded start + 2 * (the most the program can hold live) +
 * RETAIN_ALLOWANCE, and after everything is freed and trimmed it is back
 * within RETAIN_ALLOWANCE of the start.
 */
#define _GNU_SOURCE
#include "malloc_test.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>

#include "pcmalloc.h"

#define WORKERS_PER_CPU 8
#define MIN_WORKERS 16
#define OPS_PER_LIFE 20000
#define LOCAL 128
#define LIVE_CAP (8 * MiB)          /* bytes a worker holds at most */
#define HUGE_MAX (6 * MiB)
#define TRANSFER 256
#define TRANSFER_MAX (64 * KiB)     /* largest block put in the shared array */
#define RETAIN_ALLOWANCE (256 * MiB) /* caches, pcp lists, slabs, stacks */
#define PC_MIN_SZ(a, b) ((a) < (b) ? (a) : (b))

static _Atomic(void *) transfer[TRANSFER];
static atomic_long n_damaged, n_misaligned, n_ops, n_forks, n_bad_children, n_bad_sets;
static atomic_bool stop_helpers;
static size_t rss_start, rss_peak;

static void damaged(const char *where, const void *p)
{
	if (atomic_fetch_add(&n_damaged, 1) < 10)
		fprintf(stderr, "soak: %s: block %p damaged\n", where, p);
}

/* ---- blocks --------------------------------------------------------------- */
static void *block_new(uint64_t *rng, size_t n)
{
	unsigned how = (unsigned)(test_rand(rng) % 8);
	size_t align = (size_t)16 << (test_rand(rng) % 10); /* 16 .. 8 KiB */
	void *p = NULL;
	if (how == 0) {
		p = p_calloc(1, n);
		if (p && (((unsigned char *)p)[0] || ((unsigned char *)p)[n - 1]))
			damaged("calloc not zero", p);
	} else if (how == 1) {
		p = p_memalign(align, n);
	} else if (how == 2) {
		p = p_aligned_alloc(align, n);
	} else if (how == 3) {
		if (p_posix_memalign(&p, align, n) != 0)
			p = NULL;
	} else {
		p = p_malloc(n);
		align = 16;
	}
	if (!p)
		return NULL;
	if (!is_aligned(p, how >= 1 && how <= 3 ? align : 16))
		atomic_fetch_add(&n_misaligned, 1);
	object_fill(p, n);
	return p;
}

static void block_free(void *p)
{
	if (!object_check(p))
		damaged("free", p);
	p_free(p);
}

/* ---- workers ---------------------------------------------------------------- */
struct worker {
	uint64_t rng;
	void *blocks[LOCAL];
	size_t live;
};

static size_t size_of(const void *p) { return (size_t)((const uint64_t *)p)[0]; }

static void drop(struct worker *w, int i)
{
	if (!w->blocks[i])
		return;
	w->live -= size_of(w->blocks[i]);
	block_free(w->blocks[i]);
	w->blocks[i] = NULL;
}

static void do_realloc(struct worker *w, int i, size_t n)
{
	void *p = w->blocks[i];
	size_t old = object_check(p);
	if (!old) {
		damaged("before realloc", p);
		return;
	}
	void *q = p_realloc(p, n);
	if (!q)
		return;
	/* The old contents came along: check them as they were (key from
	 * the old address), then stamp the new block. */
	if (!pattern_check_from(q, old, PC_MIN_SZ(old, n), pattern_key(p, old), 2))
		damaged("realloc moved contents", q);
	object_fill(q, n);
	w->blocks[i] = q;
	w->live += n - old;
}

static void swap_transfer(struct worker *w, int i)
{
	void *mine = w->blocks[i];
	if (mine && size_of(mine) > TRANSFER_MAX)
		return;
	void *theirs = atomic_exchange(&transfer[test_rand(&w->rng) % TRANSFER], mine);
	if (mine)
		w->live -= size_of(mine);
	w->blocks[i] = theirs;
	if (theirs) {
		if (!object_check(theirs))
			damaged("transfer", theirs);
		w->live += size_of(theirs);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	for (long op = 0; op < OPS_PER_LIFE; op++) {
		int i = (int)(test_rand(&w->rng) % LOCAL);
		unsigned what = (unsigned)(test_rand(&w->rng) % 10);
		size_t n = random_size(&w->rng, 40, 2, HUGE_MAX);
		n = n < 16 ? 16 : n;
		if (what < 4) {
			drop(w, i);
			if (w->live + n <= LIVE_CAP && (w->blocks[i] = block_new(&w->rng, n)))
				w->live += n;
		} else if (what < 6) {
			drop(w, i);
		} else if (what < 8) {
			if (w->blocks[i] && w->live - size_of(w->blocks[i]) + n <= LIVE_CAP)
				do_realloc(w, i, n);
		} else {
			swap_transfer(w, i);
		}
	}
	for (int i = 0; i < LOCAL; i++)
		drop(w, i);
	atomic_fetch_add(&n_ops, OPS_PER_LIFE);
	return NULL;
}

/* ---- the forker ----------------------------------------------------------------- */
static void *child_thread(void *arg)
{
	uint64_t rng = (uint64_t)(uintptr_t)arg;
	for (int k = 0; k < 200; k++) {
		size_t n = random_size(&rng, 100, 10, HUGE_MAX);
		void *p = block_new(&rng, n < 16 ? 16 : n);
		if (!p)
			return (void *)1;
		if (!object_check(p))
			return (void *)1;
		p_free(p);
	}
	return NULL;
}

static void fork_child(uint64_t seed)
{
	alarm(30); /* a hang in the child is a failure, not a stuck test */
	pthread_t t;
	void *r1 = NULL, *r2;
	bool threaded = pthread_create(&t, NULL, child_thread, (void *)(uintptr_t)(seed + 1)) == 0;
	r2 = child_thread((void *)(uintptr_t)(seed + 2));
	if (threaded)
		pthread_join(t, &r1);
	_exit(threaded && !r1 && !r2 && !atomic_load(&n_damaged) ? 0 : 1);
}

static void *forker_main(void *arg)
{
	(void)arg;
	for (uint64_t k = 1; !atomic_load(&stop_helpers) || atomic_load(&n_forks) == 0; k++) {
		pid_t pid = fork();
		if (pid == 0)
			fork_child(k * 7919);
		if (pid < 0) {
			atomic_fetch_add(&n_bad_children, 1);
			break;
		}
		int status = 0;
		waitpid(pid, &status, 0);
		atomic_fetch_add(&n_forks, 1);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			if (atomic_fetch_add(&n_bad_children, 1) < 5)
				fprintf(stderr, "soak: fork child status %#x\n", status);
		}
		usleep(50 * 1000);
	}
	return NULL;
}

/* ---- the tuner ---------------------------------------------------------------------- */
struct tunable {
	const char *name;
	long values[4];
};
static const struct tunable tunables[] = {
	{ "vm.pcp_batch_scale_max", { 0, 5, 2, 6 } },
	{ "vm.pcp_batch", { 1, 16, 63, 4 } },
	{ "vm.pcp_high", { 0, 2048, 64, 4096 } },
	{ "vm.release_watermark_kb", { 0, 8192, 1024, 65536 } },
	{ "slub.cpu_partial", { 0, -1, 4, 30 } },
	{ "slub.min_partial", { 0, 5, 1, 10 } },
	{ "slub.max_order", { 0, -1, 1, 3 } },
	{ "slub.min_objects", { 1, -1, 4, 64 } },
	{ "stats.enable", { 1, 0, 1, 0 } },
};

static void *tuner_main(void *arg)
{
	(void)arg;
	for (unsigned k = 0; !atomic_load(&stop_helpers); k++) {
		const struct tunable *t = &tunables[k % (sizeof(tunables) / sizeof(tunables[0]))];
		if (pcmalloc_ctl_set(t->name, t->values[(k / 9) % 4]) != 0 &&
		    atomic_fetch_add(&n_bad_sets, 1) < 5)
			fprintf(stderr, "soak: pcmalloc_ctl_set(%s) failed: %s\n", t->name, strerror(errno));
		size_t rss = rss_bytes();
		if (rss > rss_peak)
			rss_peak = rss;
		usleep(10 * 1000);
	}
	return NULL;
}

/* Put every tunable the tuner touches back to its default. */
static void tunables_default(void)
{
	static const struct { const char *name; long value; } defaults[] = {
		{ "vm.pcp_batch_scale_max", 5 }, { "vm.pcp_batch", 16 }, { "vm.pcp_high", 2048 },
		{ "vm.release_watermark_kb", 8192 }, { "slub.cpu_partial", -1 },
		{ "slub.min_partial", 5 }, { "slub.max_order", -1 }, { "slub.min_objects", -1 },
		{ "stats.enable", 0 },
	};
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		CHECK_EQ(pcmalloc_ctl_set(defaults[i].name, defaults[i].value), 0);
}

static double seconds = 60;

TEST(soak)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int nworkers = (int)(ncpu * WORKERS_PER_CPU > MIN_WORKERS ? ncpu * WORKERS_PER_CPU : MIN_WORKERS);
	struct worker *workers = calloc((size_t)nworkers, sizeof(*workers));
	pthread_t *th = calloc((size_t)nworkers, sizeof(*th));
	REQUIRE(workers && th);
	rss_start = rss_peak = rss_bytes();
	pthread_t forker, tuner;
	REQUIRE(pthread_create(&forker, NULL, forker_main, NULL) == 0);
	REQUIRE(pthread_create(&tuner, NULL, tuner_main, NULL) == 0);
	double end = now_seconds() + seconds;
	long generations = 0;
	do {
		for (int t = 0; t < nworkers; t++) {
			memset(&workers[t], 0, sizeof(workers[t]));
			workers[t].rng = (uint64_t)generations * 1000003u + (uint64_t)t + 1;
			REQUIRE(pthread_create(&th[t], NULL, worker_main, &workers[t]) == 0);
		}
		for (int t = 0; t < nworkers; t++)
			pthread_join(th[t], NULL);
		generations++;
	} while (now_seconds() < end);
	atomic_store(&stop_helpers, true);
	pthread_join(forker, NULL);
	pthread_join(tuner, NULL);
	for (int i = 0; i < TRANSFER; i++) {
		void *p = atomic_exchange(&transfer[i], NULL);
		if (p)
			block_free(p);
	}
	free(workers);
	free(th);
	tunables_default();
	p_malloc_trim(0);
	size_t rss_end = rss_bytes();
	/* A worker holds LIVE_CAP bytes of its own blocks, plus up to one
	 * transferred block (<= TRANSFER_MAX) per slot taken from the array. */
	size_t live_max = (size_t)nworkers * (LIVE_CAP + LOCAL * TRANSFER_MAX) +
			  TRANSFER * TRANSFER_MAX;
	printf("soak: %.0f s, %d workers, %ld generations, %ld ops, %ld forks; RSS start %zu MiB, "
	       "peak %zu MiB (bound %zu MiB), end %zu MiB\n", seconds, nworkers, generations,
	       atomic_load(&n_ops), atomic_load(&n_forks), rss_start / MiB, rss_peak / MiB,
	       (rss_start + 2 * live_max + RETAIN_ALLOWANCE) / MiB, rss_end / MiB);
	CHECK_EQ(atomic_load(&n_damaged), 0);
	CHECK_EQ(atomic_load(&n_misaligned), 0);
	CHECK_EQ(atomic_load(&n_bad_sets), 0);
	CHECK_EQ(atomic_load(&n_bad_children), 0);
	CHECK(atomic_load(&n_forks) >= 1);
	CHECK(generations >= 1);
	CHECK(rss_peak <= rss_start + 2 * live_max + RETAIN_ALLOWANCE);
	CHECK(rss_end <= rss_start + RETAIN_ALLOWANCE);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		seconds = atof(argv[1]);
	RUN(malloc_interposed);
	RUN(soak);
	return test_report();
}
