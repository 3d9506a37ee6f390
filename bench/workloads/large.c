/*
 * bench/workloads/large.c - large blocks, touched and freed (issue 9).
 *
 * Each thread keeps --live blocks (8) of --min..--max bytes (64 KiB - 4 MiB,
 * log-uniform) and, --steps times, frees a random one and allocates a new one,
 * writing one byte per page of it.
 *
 *   bench_large [--threads 2] [--live 8] [--steps 4000] [--min 65536] [--max 4194304]
 */
#include "bench.h"

static long live, steps;
static size_t min_size, max_size;

static void *worker(long id)
{
	uint64_t rng = bench_seed(id);
	char **blk = calloc((size_t)live, sizeof(*blk));
	for (long s = 0; s < steps; s++) {
		long i = (long)(bench_rand(&rng) % (uint64_t)live);
		free(blk[i]);
		size_t n = bench_log_uniform(&rng, min_size, max_size);
		blk[i] = bench_xmalloc(n);
		bench_touch(blk[i], n);
	}
	bench_free_all(blk, live);
	return NULL;
}

int main(int argc, char **argv)
{
	struct bench_args a;
	bench_start(&a, argc, argv);
	long threads = bench_long(&a, "threads", 2, 2);
	live = bench_long(&a, "live", 8, 4);
	steps = bench_long(&a, "steps", 4000, 50);
	min_size = (size_t)bench_long(&a, "min", 65536, 65536);
	max_size = (size_t)bench_long(&a, "max", 4194304, 4194304);
	double ns = bench_run_threads(threads, worker);
	double ops = (double)threads * (double)steps;
	bench_result("large", threads, ops, ns, NULL);
	return 0;
}
