/*
 * bench/workloads/huge.c - huge blocks cycled (issue 9).
 *
 * Each thread, --steps times, allocates a block of --min..--max bytes
 * (5-25 MB, uniform), writes one byte per page and frees it: a program
 * that keeps building and dropping big buffers.
 *
 *   bench_huge [--threads 1] [--steps 200] [--min 5000000] [--max 25000000]
 */
#include "bench.h"

static long steps;
static size_t min_size, max_size;

static void *worker(long id)
{
	uint64_t rng = bench_seed(id);
	for (long s = 0; s < steps; s++) {
		size_t n = bench_uniform(&rng, min_size, max_size);
		char *p = bench_xmalloc(n);
		bench_touch(p, n);
		free(p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct bench_args a;
	bench_start(&a, argc, argv);
	long threads = bench_long(&a, "threads", 1, 1);
	steps = bench_long(&a, "steps", 200, 5);
	min_size = (size_t)bench_long(&a, "min", 5000000, 5000000);
	max_size = (size_t)bench_long(&a, "max", 25000000, 25000000);
	double ns = bench_run_threads(threads, worker);
	double ops = (double)threads * (double)steps;
	bench_result("huge", threads, ops, ns, NULL);
	return 0;
}
