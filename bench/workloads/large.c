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
	for (long i = 0; i < live; i++)
		free(blk[i]);
	free(blk);
	return NULL;
}

int main(int argc, char **argv)
{
	struct bench_args a;
	bench_args_init(&a, argc, argv);
	bench_stats_start();
	long threads = bench_long(&a, "threads", 2, 2);
	live = bench_long(&a, "live", 8, 4);
	steps = bench_long(&a, "steps", 4000, 50);
	min_size = (size_t)bench_long(&a, "min", 65536, 65536);
	max_size = (size_t)bench_long(&a, "max", 4194304, 4194304);
	double ns = bench_run_threads(threads, worker);
	double ops = (double)threads * (double)steps;
	printf("{\"bench\":\"large\",\"threads\":%ld,\"ops\":%.0f,\"elapsed_s\":%.6f,"
	       "\"mops_per_s\":%.4f,\"peak_rss_kb\":%ld}\n",
	       threads, ops, ns / 1e9, ops / ns * 1e3, bench_peak_rss_kb());
	bench_stats_report("large", threads, ns);
	return 0;
}
