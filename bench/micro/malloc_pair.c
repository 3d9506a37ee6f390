/*
 * bench/malloc_pair.c - the cost of one malloc + free pair through the C API
 * (issue 8's "ns per pair"): one thread allocates a block, touches it and
 * frees it, over and over. It calls plain malloc/free, so it measures
 * whichever allocator is loaded: run it with LD_PRELOAD=libpcmalloc.so (or
 * another allocator) to compare.
 *
 *   bench_malloc_pair [--smoke] [--iters N] [--sizes a,b,c] [--api NAME]
 *
 * --api picks the pair (default malloc): malloc (malloc + free), calloc
 * (calloc(1, size) + free), realloc (realloc(NULL, size) + free),
 * posix_memalign (alignment 16, + free), aligned_alloc (alignment 64, +
 * free), new (C++ operator new(size) + operator delete(p), looked up by
 * their symbol names, _Znwm and _ZdlPv: the preloaded allocator's, else
 * the C++ runtime's if the process has one; none: an error). Each other
 * entry point of an allocator usually costs a jump or two more than the
 * malloc pair; this shows how many.
 *
 * Prints one JSON object per line: {"bench":"malloc-pair","api":...,"size":...,
 * "iters":...,"ns_per_pair":...,"cpu_ns_per_pair":...}: wall time, and the
 * thread's CPU time (CLOCK_THREAD_CPUTIME_ID), which leaves out the time the
 * thread waited for a CPU on a shared machine. Not a test: it asserts nothing about
 * speed. Under callgrind, run it twice with different --iters and divide
 * the difference in instructions by the difference in iterations.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double clock_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void *(*volatile malloc_fn)(size_t) = malloc; /* no inlining or elision */
static void (*volatile free_fn)(void *) = free;

/* The other entry points, each as a malloc-like call of one size. */
static void *(*volatile calloc_fn)(size_t, size_t) = calloc;
static void *(*volatile realloc_fn)(void *, size_t) = realloc;
static int (*volatile posix_memalign_fn)(void **, size_t, size_t) = posix_memalign;
static void *(*volatile aligned_alloc_fn)(size_t, size_t) = aligned_alloc;
static void *(*new_fn)(size_t);
static void (*delete_fn)(void *);
static void *by_calloc(size_t size) { return calloc_fn(1, size); }
static void *by_realloc(size_t size) { return realloc_fn(NULL, size); }
static void *by_posix_memalign(size_t size)
{
	void *p = NULL;
	return posix_memalign_fn(&p, 16, size) == 0 ? p : NULL;
}
static void *by_aligned_alloc(size_t size) { return aligned_alloc_fn(64, (size + 63) & ~(size_t)63); }

/* The pair of --api name, or false if unknown or not in this process. */
static bool pick_api(const char *name, void *(**m)(size_t), void (**f)(void *))
{
	*m = malloc_fn;
	*f = free_fn;
	if (strcmp(name, "malloc") == 0)
		return true;
	if (strcmp(name, "calloc") == 0)
		*m = by_calloc;
	else if (strcmp(name, "realloc") == 0)
		*m = by_realloc;
	else if (strcmp(name, "posix_memalign") == 0)
		*m = by_posix_memalign;
	else if (strcmp(name, "aligned_alloc") == 0)
		*m = by_aligned_alloc;
	else if (strcmp(name, "new") == 0) {
		new_fn = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "_Znwm");
		delete_fn = (void (*)(void *))dlsym(RTLD_DEFAULT, "_ZdlPv");
		if (!new_fn || !delete_fn)
			return false;
		*m = new_fn;
		*f = delete_fn;
	} else
		return false;
	return true;
}

int main(int argc, char **argv)
{
	long iters = 50000000;
	char sizes_arg[128] = "16,64,256";
	const char *api = "malloc";
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--smoke") == 0)
			iters = 10000;
		else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
			iters = atol(argv[++i]);
		else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc)
			snprintf(sizes_arg, sizeof(sizes_arg), "%s", argv[++i]);
		else if (strcmp(argv[i], "--api") == 0 && i + 1 < argc)
			api = argv[++i];
	}
	void *(*m)(size_t);
	void (*f)(void *);
	if (!pick_api(api, &m, &f)) {
		fprintf(stderr, "bench_malloc_pair: --api %s: unknown, or not in this process\n", api);
		return 2;
	}
	for (char *tok = strtok(sizes_arg, ","); tok; tok = strtok(NULL, ",")) {
		size_t size = (size_t)atol(tok);
		for (int w = 0; w < 1000; w++) /* warm the caches of every layer */
			f(m(size));
		double t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		for (long i = 0; i < iters; i++) {
			void *p = m(size);
			*(volatile char *)p = 1;
			f(p);
		}
		double cpu = (clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / (double)iters;
		double ns = (clock_ns(CLOCK_MONOTONIC) - t0) / (double)iters;
		printf("{\"bench\":\"malloc-pair\",\"api\":\"%s\",\"size\":%zu,\"iters\":%ld,"
		       "\"ns_per_pair\":%.2f,\"cpu_ns_per_pair\":%.2f}\n", api, size, iters, ns, cpu);
	}
	return 0;
}
