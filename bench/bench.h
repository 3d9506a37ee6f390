/*
 * bench/bench.h - what every workload in bench/ shares: command-line
 * parameters, clocks (ns and rdtsc cycles), a deterministic random number
 * generator, threads, RSS, and JSON-line output.
 *
 * The workloads are benchmarks, never tests: they assert nothing about speed.
 * Each prints one JSON object per line on stdout; tools/bench.py reads only
 * those lines. `--smoke` shrinks every parameter so that `make test` checks
 * in a second that the program runs and prints valid JSON.
 *
 * The peer workloads call plain malloc/free, so the allocator under test is
 * whatever the dynamic linker binds (glibc, or a library in LD_PRELOAD). A
 * "white-box" build of the same source (BENCH_WHITEBOX, linked with
 * pcmalloc_static) also prints pcmalloc's lock, zone and cache statistics
 * after the run (bench/whitebox.c).
 */
#ifndef PC_BENCH_H
#define PC_BENCH_H

#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- parameters ------------------------------------------------------------ */
/* Parameters are "--name value" pairs, plus the flag --smoke. A workload
 * declares each one with its default and its smoke value. */
struct bench_args {
	int argc;
	char **argv;
	int smoke;
};

static inline void bench_args_init(struct bench_args *a, int argc, char **argv)
{
	a->argc = argc;
	a->argv = argv;
	a->smoke = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--smoke") == 0)
			a->smoke = 1;
		else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fprintf(stderr, "usage: %s [--smoke] [--name value ...] (see the source's header)\n",
				argv[0]);
			exit(0);
		}
	}
}

/* Value of --name, else (smoke ? smoke_value : value). */
static inline long bench_long(const struct bench_args *a, const char *name, long value,
			      long smoke_value)
{
	for (int i = 1; i + 1 < a->argc; i++)
		if (a->argv[i][0] == '-' && a->argv[i][1] == '-' && strcmp(a->argv[i] + 2, name) == 0)
			return strtol(a->argv[i + 1], NULL, 0);
	return a->smoke ? smoke_value : value;
}

static inline const char *bench_str(const struct bench_args *a, const char *name, const char *value)
{
	for (int i = 1; i + 1 < a->argc; i++)
		if (a->argv[i][0] == '-' && a->argv[i][1] == '-' && strcmp(a->argv[i] + 2, name) == 0)
			return a->argv[i + 1];
	return value;
}

static inline long bench_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? n : 1;
}

/* ---- clocks ------------------------------------------------------------------ */
static inline double bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Time-stamp counter (constant rate on current x86-64; seed 002 counts
 * cycles this way). */
static inline uint64_t bench_rdtsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
#else
	return (uint64_t)bench_now_ns();
#endif
}

/* ---- random numbers: xorshift64*, one state per thread ------------------------ */
static inline uint64_t bench_rand(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static inline uint64_t bench_seed(long i)
{
	return 0x9E3779B97F4A7C15ULL * (uint64_t)(i + 1) | 1;
}

/* Uniform in [lo, hi]. */
static inline size_t bench_uniform(uint64_t *s, size_t lo, size_t hi)
{
	return lo + (size_t)(bench_rand(s) % (hi - lo + 1));
}

/* Log-uniform in [lo, hi]: every power of two range equally likely. */
static inline size_t bench_log_uniform(uint64_t *s, size_t lo, size_t hi)
{
	int blo = 63 - __builtin_clzll(lo), bhi = 63 - __builtin_clzll(hi);
	int b = blo + (int)(bench_rand(s) % (uint64_t)(bhi - blo + 1));
	size_t base = (size_t)1 << b;
	size_t v = base + (size_t)(bench_rand(s) % base);
	return v < lo ? lo : v > hi ? hi : v;
}

/* Write one byte per 4 KiB page so that the memory is really resident. */
static inline void bench_touch(void *p, size_t n)
{
	volatile char *c = p;
	for (size_t i = 0; i < n; i += 4096)
		c[i] = (char)i;
	if (n)
		c[n - 1] = 1;
}

/* ---- threads ----------------------------------------------------------------- */
/* Start n threads running fn(i) behind a barrier, so that they start together;
 * returns the wall time (ns) from the first thread's start to the last one's
 * end, as the threads themselves read the clock: the main thread may be
 * descheduled after the barrier (a loaded machine), so its own clock reads
 * could miss most of the run. */
struct bench_team {
	void *(*fn)(long i);
	pthread_barrier_t barrier;
	double start_ns;
};
struct bench_member {
	struct bench_team *team;
	long i;
	void *ret;
	double start_ns, end_ns;
};

static inline void *bench_member_main(void *arg)
{
	struct bench_member *m = arg;
	pthread_barrier_wait(&m->team->barrier);
	m->start_ns = bench_now_ns();
	m->ret = m->team->fn(m->i);
	m->end_ns = bench_now_ns();
	return NULL;
}

static inline double bench_run_threads(long n, void *(*fn)(long i))
{
	if (n < 1 || n > 4096) {
		fprintf(stderr, "threads: %ld is not in 1..4096\n", n);
		exit(2);
	}
	struct bench_team team = { .fn = fn };
	struct bench_member *m = calloc((size_t)n, sizeof(*m));
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	if (!m || !t) {
		perror("calloc");
		exit(1);
	}
	pthread_barrier_init(&team.barrier, NULL, (unsigned)n + 1);
	for (long i = 0; i < n; i++) {
		m[i].team = &team;
		m[i].i = i;
		if (pthread_create(&t[i], NULL, bench_member_main, &m[i]) != 0) {
			perror("pthread_create");
			exit(1);
		}
	}
	pthread_barrier_wait(&team.barrier);
	double first = 0, last = 0;
	for (long i = 0; i < n; i++) {
		pthread_join(t[i], NULL); /* orders the member's clock reads before ours */
		if (i == 0 || m[i].start_ns < first)
			first = m[i].start_ns;
		if (i == 0 || m[i].end_ns > last)
			last = m[i].end_ns;
	}
	double ns = last - first;
	pthread_barrier_destroy(&team.barrier);
	free(m);
	free(t);
	return ns;
}

static inline void bench_pin(long cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET((int)(cpu % bench_cpus()), &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* ---- memory ------------------------------------------------------------------ */
/* Resident set size now, in KiB (from /proc/self/statm). */
static inline long bench_rss_kb(void)
{
	long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &size, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Peak RSS so far, KiB (VmHWM). */
static inline long bench_peak_rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "VmHWM:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	fclose(f);
	return kb;
}

static inline void *bench_xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p) {
		fprintf(stderr, "out of memory (%zu bytes)\n", n);
		exit(1);
	}
	return p;
}

/* ---- white-box statistics ------------------------------------------------------ */
/* With BENCH_WHITEBOX: turn pcmalloc's statistics on (call first thing), and
 * print them as JSON lines tagged with `bench` after the run, with each lock
 * class's wait share = wait time / (threads * elapsed). Without: nothing. */
#ifdef BENCH_WHITEBOX
void bench_stats_start(void);
void bench_stats_report(const char *bench, long threads, double elapsed_ns);
#else
static inline void bench_stats_start(void) {}
static inline void bench_stats_report(const char *bench, long threads, double elapsed_ns)
{
	(void)bench;
	(void)threads;
	(void)elapsed_ns;
}
#endif

/* ---- the common start and end of a workload ------------------------------------ */
/* Parse the command line and, in a white-box build, turn statistics on. */
static inline void bench_start(struct bench_args *a, int argc, char **argv)
{
	bench_args_init(a, argc, argv);
	bench_stats_start();
}

/* The result line every workload prints after its threads have joined:
 * {"bench":NAME,"threads":T,"ops":OPS,"elapsed_s":..,"mops_per_s":..,
 *  "peak_rss_kb":..[,EXTRA]} where EXTRA (NULL: none) is more JSON members,
 * "k":v,..., without the leading comma; then the white-box statistics line. */
static inline void bench_result(const char *bench, long threads, double ops, double elapsed_ns,
				const char *extra)
{
	printf("{\"bench\":\"%s\",\"threads\":%ld,\"ops\":%.0f,\"elapsed_s\":%.6f,"
	       "\"mops_per_s\":%.6f,\"peak_rss_kb\":%ld%s%s}\n",
	       bench, threads, ops, elapsed_ns / 1e9, ops / elapsed_ns * 1e3, bench_peak_rss_kb(),
	       extra ? "," : "", extra ? extra : "");
	fflush(stdout);
	bench_stats_report(bench, threads, elapsed_ns);
}

/* Free n blocks and the array that held them (NULL entries allowed). */
static inline void bench_free_all(char **blocks, long n)
{
	for (long i = 0; i < n; i++)
		free(blocks[i]);
	free(blocks);
}

#endif /* PC_BENCH_H */
