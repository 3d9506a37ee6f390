/*
 * bench/workloads/larson.c - larson-like random replacement (issue 8).
 *
 * Each thread keeps --slots objects (default 2000) of --min..--max bytes
 * (16-256) and, --steps times, frees a random slot and puts a fresh object
 * of a random size there. Every free is local (the thread allocated it), but
 * the objects freed are old, so most frees miss the CPU slab: this is the
 * SLUB weakness seed 002 describes.
 *
 *   bench_larson [--threads 2] [--slots 2000] [--steps 2000000] [--min 16] [--max 256]
 *
 * Prints {"bench":"larson","threads":..,"ops":..,"elapsed_s":..,"mops_per_s":..}.
 */
#include "bench.h"

static long slots, steps;
static size_t min_size, max_size;

static void *worker(long id)
{
	uint64_t rng = bench_seed(id);
	char **slot = bench_xmalloc((size_t)slots * sizeof(*slot));
	for (long i = 0; i < slots; i++) {
		slot[i] = bench_xmalloc(bench_uniform(&rng, min_size, max_size));
		slot[i][0] = (char)i;
	}
	for (long s = 0; s < steps; s++) {
		long i = (long)(bench_rand(&rng) % (uint64_t)slots);
		free(slot[i]);
		size_t n = bench_uniform(&rng, min_size, max_size);
		slot[i] = bench_xmalloc(n);
		slot[i][0] = (char)s; /* touch the first and last byte, as a user would */
		slot[i][n - 1] = (char)s;
	}
	bench_free_all(slot, slots);
	return NULL;
}

int main(int argc, char **argv)
{
	struct bench_args a;
	bench_start(&a, argc, argv);
	long threads = bench_long(&a, "threads", 2, 2);
	slots = bench_long(&a, "slots", 2000, 200);
	steps = bench_long(&a, "steps", 2000000, 10000);
	min_size = (size_t)bench_long(&a, "min", 16, 16);
	max_size = (size_t)bench_long(&a, "max", 256, 256);
	double ns = bench_run_threads(threads, worker);
	double ops = (double)threads * (double)steps;
	bench_result("larson", threads, ops, ns, NULL);
	return 0;
}
