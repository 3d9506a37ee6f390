/*
 * bench/micro/stats_cost.c - what statistics cost (issue 10): the same work with
 * stats.enable=0 and =1, interleaved, on one pinned CPU:
 *   cache     alloc + free of one 64-byte object (the sheaf fast path; no
 *             counter there, on or off)
 *   batch     allocate 4096 objects of 256 bytes, free them (slow paths:
 *             sheaf refills and barn exchanges, slab refills, list_lock and
 *             barn lock, pages through the per-CPU lists)
 *   pages     allocate 512 order-0 pages, free them (pcp refills and
 *             drains, zone lock, their histograms when on)
 * Prints one JSON object per line: {"bench":...,"stats":0|1,"ns_per_op":...}
 * for each of `rounds` rounds. Not a test. --smoke runs a few iterations.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "slab/slab.h"

static long scale = 200;
static int rounds = 5;

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double bench_cache(struct pc_cache *s)
{
	long n = scale * 50000;
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		void *p = pc_cache_alloc(s);
		*(volatile char *)p = 1;
		pc_cache_free(s, p);
	}
	return (now_ns() - t0) / (double)n;
}

static double bench_batch(struct pc_cache *s)
{
	static void *objs[4096];
	long n = scale;
	double t0 = now_ns();
	for (long r = 0; r < n; r++) {
		for (int i = 0; i < 4096; i++)
			objs[i] = pc_cache_alloc(s);
		for (int i = 0; i < 4096; i++)
			pc_cache_free(s, objs[i]);
	}
	return (now_ns() - t0) / (double)(n * 4096);
}

static double bench_pages(void)
{
	static void *pages[512];
	long n = scale;
	double t0 = now_ns();
	for (long r = 0; r < n; r++) {
		for (int i = 0; i < 512; i++)
			pages[i] = pc_alloc_pages(0);
		for (int i = 0; i < 512; i++)
			pc_free_pages(pages[i], 0);
	}
	return (now_ns() - t0) / (double)(n * 512);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--smoke") == 0) {
		scale = 1;
		rounds = 1;
	}
	pc_page_init();
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
	struct pc_cache *small = pc_cache_create("cost-64", 64, 0, NULL);
	struct pc_cache *mid = pc_cache_create("cost-256", 256, 0, NULL);
	if (!small || !mid)
		return 1;
	for (int r = 0; r < rounds; r++) {
		for (int on = 0; on <= 1; on++) {
			pc_option_set(PC_OPT_STATS_ENABLE, on, false);
			printf("{\"bench\":\"cache\",\"stats\":%d,\"ns_per_op\":%.2f}\n", on, bench_cache(small));
			printf("{\"bench\":\"batch\",\"stats\":%d,\"ns_per_op\":%.2f}\n", on, bench_batch(mid));
			printf("{\"bench\":\"pages\",\"stats\":%d,\"ns_per_op\":%.2f}\n", on, bench_pages());
			fflush(stdout);
		}
	}
	return 0;
}
