/*
 * bench/workloads/small.c - a small, short program (issue 9): its peak RSS
 * shows an allocator's fixed footprint.
 *
 * Each thread builds and drops a few small data structures: --steps times it
 * allocates an object of 8-512 bytes into a table of --live (1000) slots,
 * freeing what was there. A few hundred KiB live in all.
 *
 *   bench_small [--threads 1] [--live 1000] [--steps 200000]
 */
#include "bench.h"

static long live, steps;

static void *worker(long id)
{
	uint64_t rng = bench_seed(id);
	char **slot = calloc((size_t)live, sizeof(*slot));
	for (long s = 0; s < steps; s++) {
		long i = (long)(bench_rand(&rng) % (uint64_t)live);
		free(slot[i]);
		size_t n = bench_log_uniform(&rng, 8, 512);
		slot[i] = bench_xmalloc(n);
		memset(slot[i], (int)s, n);
	}
	bench_free_all(slot, live);
	return NULL;
}

int main(int argc, char **argv)
{
	struct bench_args a;
	bench_start(&a, argc, argv);
	long threads = bench_long(&a, "threads", 1, 1);
	live = bench_long(&a, "live", 1000, 100);
	steps = bench_long(&a, "steps", 200000, 2000);
	double ns = bench_run_threads(threads, worker);
	double ops = (double)threads * (double)steps;
	bench_result("small", threads, ops, ns, NULL);
	return 0;
}
