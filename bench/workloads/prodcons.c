/*
 * bench/workloads/prodcons.c - producer/consumer with remote frees (issue 8).
 *
 * --threads is rounded up to an even number and split into pairs. In each
 * pair the producer allocates --messages objects of --min..--max bytes
 * (16-1024), fills a word, and passes them through a bounded ring; the
 * consumer checks and frees them, so every free is remote (another thread
 * allocated the object).
 *
 *   bench_prodcons [--threads 2] [--messages 2000000] [--min 16] [--max 1024] [--ring 4096]
 */
#include "bench.h"

#include <stdatomic.h>

struct ring {
	_Alignas(64) _Atomic size_t head; /* written by the producer */
	_Alignas(64) _Atomic size_t tail; /* written by the consumer */
	_Alignas(64) void *_Atomic *slot;
};

static long messages, ring_size;
static size_t min_size, max_size;
static struct ring *rings;

static void *worker(long id)
{
	struct ring *r = &rings[id / 2];
	uint64_t rng = bench_seed(id);
	if (id % 2 == 0) { /* producer */
		for (long m = 0; m < messages; m++) {
			size_t n = bench_uniform(&rng, min_size, max_size);
			long *p = bench_xmalloc(n);
			p[0] = m;
			size_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
			/* acquire: the consumer is done with the slot we reuse */
			while (h - atomic_load_explicit(&r->tail, memory_order_acquire) >= (size_t)ring_size)
				sched_yield();
			atomic_store_explicit(&r->slot[h % (size_t)ring_size], p, memory_order_relaxed);
			/* release: publishes the slot and the object's contents */
			atomic_store_explicit(&r->head, h + 1, memory_order_release);
		}
	} else { /* consumer */
		for (long m = 0; m < messages; m++) {
			size_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
			/* acquire: pairs with the producer's release of head */
			while (atomic_load_explicit(&r->head, memory_order_acquire) == t)
				sched_yield();
			long *p = atomic_load_explicit(&r->slot[t % (size_t)ring_size], memory_order_relaxed);
			if (p[0] != m) {
				fprintf(stderr, "prodcons: message %ld arrived as %ld\n", m, p[0]);
				exit(1);
			}
			free(p);
			/* release: the slot may be reused once we have read it */
			atomic_store_explicit(&r->tail, t + 1, memory_order_release);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct bench_args a;
	bench_start(&a, argc, argv);
	long threads = bench_long(&a, "threads", 2, 2);
	threads += threads % 2;
	messages = bench_long(&a, "messages", 2000000, 20000);
	ring_size = bench_long(&a, "ring", 4096, 256);
	min_size = (size_t)bench_long(&a, "min", 16, 16);
	max_size = (size_t)bench_long(&a, "max", 1024, 1024);
	rings = aligned_alloc(64, (size_t)(threads / 2) * sizeof(*rings));
	for (long i = 0; i < threads / 2; i++) {
		atomic_init(&rings[i].head, 0);
		atomic_init(&rings[i].tail, 0);
		rings[i].slot = calloc((size_t)ring_size, sizeof(void *));
	}
	double ns = bench_run_threads(threads, worker);
	double ops = (double)(threads / 2) * (double)messages;
	bench_result("prodcons", threads, ops, ns, NULL);
	return 0;
}
