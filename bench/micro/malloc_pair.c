/*
 * bench/malloc_pair.c - the cost of one malloc + free pair through the C API
 * (issue 8's "ns per pair"): one thread allocates a block, touches it and
 * frees it, over and over. It calls plain malloc/free, so it measures
 * whichever allocator is loaded: run it with LD_PRELOAD=libpcmalloc.so (or
 * another allocator) to compare.
 *
 *   bench_malloc_pair [--smoke] [--iters N] [--sizes a,b,c]
 *
 * Prints one JSON object per line: {"bench":"malloc-pair","size":...,
 * "iters":...,"ns_per_pair":...,"cpu_ns_per_pair":...}: wall time, and the
 * thread's CPU time (CLOCK_THREAD_CPUTIME_ID), which leaves out the time the
 * thread waited for a CPU on a shared machine. Not a test: it asserts nothing about
 * speed. Under callgrind, run it twice with different --iters and divide
 * the difference in instructions by the difference in iterations.
 */
#define _GNU_SOURCE
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

int main(int argc, char **argv)
{
	long iters = 50000000;
	char sizes_arg[128] = "16,64,256";
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--smoke") == 0)
			iters = 10000;
		else if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
			iters = atol(argv[++i]);
		else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc)
			snprintf(sizes_arg, sizeof(sizes_arg), "%s", argv[++i]);
	}
	for (char *tok = strtok(sizes_arg, ","); tok; tok = strtok(NULL, ",")) {
		size_t size = (size_t)atol(tok);
		void *(*m)(size_t) = malloc_fn;
		void (*f)(void *) = free_fn;
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
		printf("{\"bench\":\"malloc-pair\",\"size\":%zu,\"iters\":%ld,\"ns_per_pair\":%.2f,"
		       "\"cpu_ns_per_pair\":%.2f}\n", size, iters, ns, cpu);
	}
	return 0;
}
