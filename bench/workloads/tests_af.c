/*
 * bench/workloads/tests_af.c - seed 002's Tests A-F through malloc/free.
 *
 * For each object size (--sizes, default 8,16,..,16384), each test does
 * --objects (10000) operations per thread, --reps (5) times; it prints the
 * median over the repetitions of the mean cost of one operation, in ns and in
 * time-stamp-counter cycles (rdtsc), as the seed counts them:
 *   A  one thread allocates --objects objects           (ns per malloc)
 *   B  ... then frees them in the same order            (ns per free)
 *   C  one thread: malloc and immediately free, repeated (ns per pair)
 *   D  --threads threads (one per CPU by default, each pinned) allocate
 *      concurrently                                     (ns per malloc)
 *   E  --threads threads malloc and immediately free    (ns per pair)
 *   F  --threads - 1 threads each allocate --objects objects, then one
 *      thread frees all of them: every free is remote   (ns per free)
 * The seed ran 10000 operations per CPU on 8 CPUs (F: 70000 objects from 7
 * CPUs); here --threads defaults to the number of CPUs.
 *
 *   bench_tests_af [--threads N] [--objects 10000] [--reps 5]
 *                  [--sizes 8,16,...] [--tests ABCDEF]
 *
 * Prints {"bench":"tests_af","test":"A","size":8,"threads":1,
 * "ns_per_op":..,"cycles_per_op":..} per test and size.
 *
 * --rounds 1 adds one line per repetition on stderr: its cycles per
 * operation and the process's minor faults during it (getrusage); for A
 * also B's, for D-F the timed loops' thread CPU time per operation and
 * their voluntary / involuntary context switches (docs/pages-medium.md,
 * "2026-11-24 evening"):
 *   A 16384 r3 63 cyc 0 flt (B 79, 0 flt)
 *   D 16384 r3 178 cyc 24 flt 52 cpu_ns/op 10 vcsw 310 ivcsw
 */
#include "bench.h"

#include <stdatomic.h>
#include <sys/resource.h>

#define MAX_REPS 64
#define MAX_THREADS 256

static long objects, reps, threads, show_rounds;
static size_t cur_size;
static void **objs[MAX_THREADS]; /* objs[t][i]: objects of thread t */
static pthread_barrier_t phase;

/* Mean cost per operation of one timed loop. */
struct cost {
	double ns, cycles;
};

static struct cost loop_alloc(void **v)
{
	double t0 = bench_now_ns();
	uint64_t c0 = bench_rdtsc();
	for (long i = 0; i < objects; i++) {
		v[i] = bench_xmalloc(cur_size);
		*(volatile char *)v[i] = 1;
	}
	uint64_t c1 = bench_rdtsc();
	return (struct cost){ (bench_now_ns() - t0) / objects, (double)(c1 - c0) / objects };
}

static struct cost loop_free(void **v, long n)
{
	double t0 = bench_now_ns();
	uint64_t c0 = bench_rdtsc();
	for (long i = 0; i < n; i++)
		free(v[i]);
	uint64_t c1 = bench_rdtsc();
	return (struct cost){ (bench_now_ns() - t0) / n, (double)(c1 - c0) / n };
}

static struct cost loop_pair(void)
{
	double t0 = bench_now_ns();
	uint64_t c0 = bench_rdtsc();
	for (long i = 0; i < objects; i++) {
		void *p = bench_xmalloc(cur_size);
		*(volatile char *)p = 1;
		free(p);
	}
	uint64_t c1 = bench_rdtsc();
	return (struct cost){ (bench_now_ns() - t0) / objects, (double)(c1 - c0) / objects };
}

/* ---- --rounds: what one repetition cost besides cycles ---- */
static _Atomic long loop_cpu_ns, loop_vcsw, loop_ivcsw;

static long minor_faults(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return u.ru_minflt;
}

static long thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* A concurrent test's timed loop; with --rounds its thread's CPU time and
 * context switches are added to the repetition's. */
static struct cost timed(struct cost (*loop)(void **), void **v)
{
	if (!show_rounds)
		return loop(v);
	struct rusage u0, u1;
	long c0 = thread_cpu_ns();
	getrusage(RUSAGE_THREAD, &u0);
	struct cost c = loop(v);
	long c1 = thread_cpu_ns();
	getrusage(RUSAGE_THREAD, &u1);
	atomic_fetch_add(&loop_cpu_ns, c1 - c0);
	atomic_fetch_add(&loop_vcsw, u1.ru_nvcsw - u0.ru_nvcsw);
	atomic_fetch_add(&loop_ivcsw, u1.ru_nivcsw - u0.ru_nivcsw);
	return c;
}

static struct cost pair_loop(void **unused)
{
	(void)unused;
	return loop_pair();
}

static struct cost free_all_loop(void **unused);

/* Per-thread results of the concurrent tests. */
static struct cost thread_cost[MAX_THREADS];
static char cur_test;

static void *concurrent(long id)
{
	bench_pin(id);
	if (cur_test == 'D') {
		thread_cost[id] = timed(loop_alloc, objs[id]);
		pthread_barrier_wait(&phase);
		loop_free(objs[id], objects);
	} else if (cur_test == 'E') {
		thread_cost[id] = timed(pair_loop, NULL);
	} else { /* F: threads 1.. allocate; after the barrier thread 0 frees all */
		if (id > 0)
			loop_alloc(objs[id]);
		pthread_barrier_wait(&phase);
		if (id == 0)
			thread_cost[0] = timed(free_all_loop, NULL);
	}
	return NULL;
}

/* Test F's timed part: thread 0 frees every other thread's objects. */
static struct cost free_all_loop(void **unused)
{
	(void)unused;
	struct cost sum = { 0, 0 };
	for (long t = 1; t < threads; t++) {
		struct cost c = loop_free(objs[t], objects);
		sum.ns += c.ns / (double)(threads - 1);
		sum.cycles += c.cycles / (double)(threads - 1);
	}
	return sum;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void report(char test, long nthreads, double *ns, double *cyc)
{
	printf("{\"bench\":\"tests_af\",\"test\":\"%c\",\"size\":%zu,\"threads\":%ld,"
	       "\"objects\":%ld,\"ns_per_op\":%.2f,\"cycles_per_op\":%.1f,\"peak_rss_kb\":%ld}\n",
	       test, cur_size, nthreads, objects, median(ns, reps), median(cyc, reps), bench_peak_rss_kb());
}

static void run_size(const char *tests)
{
	double ns[2][MAX_REPS], cyc[2][MAX_REPS];
	if (strchr(tests, 'A') || strchr(tests, 'B')) {
		for (long r = 0; r < reps; r++) {
			long f0 = minor_faults();
			struct cost a = loop_alloc(objs[0]);
			long f1 = minor_faults();
			struct cost b = loop_free(objs[0], objects);
			ns[0][r] = a.ns, cyc[0][r] = a.cycles;
			ns[1][r] = b.ns, cyc[1][r] = b.cycles;
			if (show_rounds)
				fprintf(stderr, "A %zu r%ld %.0f cyc %ld flt (B %.0f, %ld flt)\n", cur_size, r,
					a.cycles, f1 - f0, b.cycles, minor_faults() - f1);
		}
		if (strchr(tests, 'A'))
			report('A', 1, ns[0], cyc[0]);
		if (strchr(tests, 'B'))
			report('B', 1, ns[1], cyc[1]);
	}
	if (strchr(tests, 'C')) {
		for (long r = 0; r < reps; r++) {
			struct cost c = loop_pair();
			ns[0][r] = c.ns, cyc[0][r] = c.cycles;
		}
		report('C', 1, ns[0], cyc[0]);
	}
	for (const char *t = "DEF"; *t; t++) {
		if (!strchr(tests, *t) || (*t == 'F' && threads < 2))
			continue;
		cur_test = *t;
		for (long r = 0; r < reps; r++) {
			long f0 = minor_faults();
			pthread_barrier_init(&phase, NULL, (unsigned)threads);
			bench_run_threads(threads, concurrent);
			pthread_barrier_destroy(&phase);
			double sn = 0, sc = 0;
			long k = *t == 'F' ? 1 : threads;
			for (long i = 0; i < k; i++)
				sn += thread_cost[i].ns, sc += thread_cost[i].cycles;
			ns[0][r] = sn / k, cyc[0][r] = sc / k;
			if (show_rounds) /* faults of the whole repetition, frees included */
				fprintf(stderr, "%c %zu r%ld %.0f cyc %ld flt %.0f cpu_ns/op %ld vcsw %ld ivcsw\n",
					*t, cur_size, r, sc / k, minor_faults() - f0,
					(double)atomic_exchange(&loop_cpu_ns, 0) /
						(double)((*t == 'F' ? threads - 1 : threads) * objects),
					atomic_exchange(&loop_vcsw, 0), atomic_exchange(&loop_ivcsw, 0));
		}
		report(*t, threads, ns[0], cyc[0]);
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct bench_args a;
	bench_start(&a, argc, argv);
	threads = bench_long(&a, "threads", bench_cpus(), 2);
	objects = bench_long(&a, "objects", 10000, 200);
	reps = bench_long(&a, "reps", 5, 1);
	show_rounds = bench_long(&a, "rounds", 0, 0);
	const char *tests = bench_str(&a, "tests", "ABCDEF");
	char sizes[256];
	snprintf(sizes, sizeof(sizes), "%s",
		 bench_str(&a, "sizes", a.smoke ? "8,4096,16384" : "8,16,32,64,128,256,512,1024,2048,4096,8192,16384"));
	if (threads > MAX_THREADS || reps > MAX_REPS || threads < 1 || reps < 1 || objects < 1) {
		fprintf(stderr, "tests_af: --threads 1..%d, --reps 1..%d, --objects >= 1\n", MAX_THREADS, MAX_REPS);
		return 2;
	}
	for (long t = 0; t < threads; t++)
		objs[t] = bench_xmalloc((size_t)objects * sizeof(void *));
	double t0 = bench_now_ns();
	for (char *tok = strtok(sizes, ","); tok; tok = strtok(NULL, ",")) {
		cur_size = (size_t)strtoul(tok, NULL, 0);
		run_size(tests);
	}
	bench_stats_report("tests_af", threads, bench_now_ns() - t0);
	return 0;
}
