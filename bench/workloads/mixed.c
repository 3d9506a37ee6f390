/*
 * bench/workloads/mixed.c - mixed sizes with realloc (issue 9).
 *
 * Each thread keeps a working set of --blocks blocks (4000) of sizes drawn
 * log-uniformly from --min..--max (8 B - 128 KiB) and, --steps times, picks a
 * random block and either frees it and allocates a new one or (one step in
 * --realloc-every, default 8) reallocs it to a new random size. Each new
 * block has its first and last byte written.
 *
 *   bench_mixed [--threads 2] [--blocks 4000] [--steps 400000] [--min 8] [--max 131072]
 */
#include "bench.h"

static long blocks, steps, realloc_every;
static size_t min_size, max_size;

static void *worker(long id)
{
	uint64_t rng = bench_seed(id);
	char **blk = bench_xmalloc((size_t)blocks * sizeof(*blk));
	for (long i = 0; i < blocks; i++) {
		size_t n = bench_log_uniform(&rng, min_size, max_size);
		blk[i] = bench_xmalloc(n);
		blk[i][0] = blk[i][n - 1] = 1;
	}
	for (long s = 0; s < steps; s++) {
		long i = (long)(bench_rand(&rng) % (uint64_t)blocks);
		size_t n = bench_log_uniform(&rng, min_size, max_size);
		if (s % realloc_every == 0) {
			blk[i] = realloc(blk[i], n);
			if (!blk[i]) {
				fprintf(stderr, "mixed: realloc failed\n");
				exit(1);
			}
		} else {
			free(blk[i]);
			blk[i] = bench_xmalloc(n);
		}
		blk[i][0] = blk[i][n - 1] = (char)s;
	}
	bench_free_all(blk, blocks);
	return NULL;
}

int main(int argc, char **argv)
{
	struct bench_args a;
	bench_start(&a, argc, argv);
	long threads = bench_long(&a, "threads", 2, 2);
	blocks = bench_long(&a, "blocks", 4000, 200);
	steps = bench_long(&a, "steps", 400000, 5000);
	realloc_every = bench_long(&a, "realloc-every", 8, 8);
	min_size = (size_t)bench_long(&a, "min", 8, 8);
	max_size = (size_t)bench_long(&a, "max", 131072, 131072);
	double ns = bench_run_threads(threads, worker);
	double ops = (double)threads * (double)steps;
	bench_result("mixed", threads, ops, ns, NULL);
	return 0;
}
