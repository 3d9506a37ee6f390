/*
 * bench/page_pair.c - micro-benchmark of the page allocator (not a test).
 *
 *   pair    one thread: pc_alloc_pages + pc_free_pages of one block, per order
 *   batch   one thread: allocate N order-0 pages, then free them, for each
 *           vm.pcp_batch_scale_max in 0, 3, 5: how batch scaling trades
 *           zone-lock round trips for longer holds (seed 001)
 *
 * Prints one JSON object per line. --smoke runs a few iterations.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "page/page.h"

static long iterations = 5000000;

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void bench_pair(unsigned order)
{
	long n = iterations >> (order > 3 ? 4 : 0);
	double t0 = now_ns();
	for (long i = 0; i < n; i++)
		pc_free_pages(pc_alloc_pages(order), order);
	printf("{\"bench\":\"page-pair\",\"order\":%u,\"ns_per_op\":%.2f}\n", order, (now_ns() - t0) / n);
}

static void bench_batch(long scale)
{
	enum { N = 20000 };
	static void *pages[N];
	pc_option_set(PC_OPT_VM_PCP_BATCH_SCALE_MAX, scale, false);
	long rounds = iterations / N / 2 + 1;
	uint64_t refills0 = pc_load_relaxed(&pc_zone_preferred(os_cpu_current())->stats.refills);
	double t0 = now_ns();
	for (long r = 0; r < rounds; r++) {
		for (int i = 0; i < N; i++)
			pages[i] = pc_alloc_pages(0);
		for (int i = 0; i < N; i++)
			pc_free_pages(pages[i], 0);
	}
	double ns = (now_ns() - t0) / (rounds * N * 2.0);
	uint64_t refills = pc_load_relaxed(&pc_zone_preferred(os_cpu_current())->stats.refills) - refills0;
	printf("{\"bench\":\"page-batch\",\"scale_max\":%ld,\"ns_per_op\":%.2f,\"refills_per_1k_allocs\":%.2f}\n",
	       scale, ns, refills * 1000.0 / (rounds * N));
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--smoke") == 0)
		iterations = 20000;
	pc_option_set(PC_OPT_STATS_ENABLE, 1, true);
	pc_page_init();
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
	for (unsigned o = 0; o <= PC_MAX_ORDER; o += 2)
		bench_pair(o);
	for (long s = 0; s <= 5; s += s < 3 ? 3 : 2)
		bench_batch(s);
	return 0;
}
