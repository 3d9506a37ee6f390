/*
 * tests/malloc/stress.c - many threads allocating, reallocating, handing
 * blocks to each other and freeing them. Not a benchmark: it checks that
 * every block comes back with the contents it was given, and its timings
 * mean nothing.
 *
 *   stress [threads] [rounds] [ops per thread per round] [seconds]
 *   defaults: 32 threads, 10 rounds, 10000 ops, 15 s budget
 *
 * Each round starts `threads` new threads; each thread runs a deterministic
 * stream of operations (seeded from round and thread number) over its own
 * slots and a shared array of transfer slots swapped with atomic_exchange,
 * so most frees of a transferred block happen on another thread, often after
 * the thread that allocated it has exited. Sizes cover all classes: mostly
 * small, some large, a few huge. Every block is filled with a pattern
 * derived from its address and size (tests/malloc/malloc_test.h) and checked
 * before it is freed or reallocated.
 *
 * The time budget stops the threads early on a slow machine (or a debug
 * build); that is reported, not failed. Like mimalloc's test/test-stress.c.
 */
#define _GNU_SOURCE
#include "malloc_test.h"

#include <pthread.h>
#include <stdbool.h>

#define LOCAL_SLOTS 64
#define TRANSFER_SLOTS 1024
#define LARGE_PM 40 /* per mille of allocations in the large class */
#define HUGE_PM 2   /* per mille in the huge class */
#define HUGE_MAX (12 * MiB)

static int nthreads = 32, nrounds = 10;
static long nops = 10000;
static double budget_s = 15, t_start;

/* Blocks in transit: self-describing objects (size >= 16), NULL when empty. */
static _Atomic(void *) transfer[TRANSFER_SLOTS];

static atomic_long n_alloc, n_free, n_realloc, n_damaged, n_null, n_misaligned;
static atomic_bool out_of_time;

struct slot {
	void *p;
	size_t size;
};

static void damaged(const char *where, const void *p, size_t size)
{
	if (atomic_fetch_add(&n_damaged, 1) < 10)
		fprintf(stderr, "stress: %s: block %p of %zu bytes damaged\n", where, p, size);
}

/* A new block of a random size; objects (>= 16 bytes) carry their size. */
static void *block_new(uint64_t *rng, size_t *size)
{
	size_t n = random_size(rng, LARGE_PM, HUGE_PM, HUGE_MAX);
	void *p;
	unsigned how = (unsigned)(test_rand(rng) % 16);
	if (how == 0) {
		p = p_calloc(1, n);
		if (p && n >= 8 && (*(uint64_t *)p != 0 || ((char *)p)[n - 1] != 0))
			damaged("calloc not zeroed", p, n);
	} else if (how == 1) {
		size_t a = (size_t)16 << (test_rand(rng) % 9); /* 16 .. 4096 */
		p = p_aligned_alloc(a, n);
		if (p && !is_aligned(p, a))
			atomic_fetch_add(&n_misaligned, 1);
	} else {
		p = p_malloc(n);
	}
	if (!p) {
		atomic_fetch_add(&n_null, 1);
		return NULL;
	}
	if (!is_aligned(p, min_alignment(n)))
		atomic_fetch_add(&n_misaligned, 1);
	atomic_fetch_add(&n_alloc, 1);
	if (n >= 16)
		object_fill(p, n);
	else
		pattern_fill(p, n);
	*size = n;
	return p;
}

static bool block_check(const void *p, size_t size)
{
	if (size >= 16)
		return object_check(p) == size;
	return pattern_check(p, size);
}

static void block_free(void *p, size_t size)
{
	if (!p)
		return;
	if (!block_check(p, size))
		damaged("free", p, size);
	p_free(p);
	atomic_fetch_add(&n_free, 1);
}

/* Grows or shrinks a block, maybe into another class; the shared bytes
 * must survive. */
static void block_realloc(struct slot *s, uint64_t *rng)
{
	size_t n = random_size(rng, LARGE_PM * 2, HUGE_PM * 2, HUGE_MAX);
	if (!block_check(s->p, s->size))
		damaged("before realloc", s->p, s->size);
	uint64_t key = pattern_key(s->p, s->size);
	void *q = p_realloc(s->p, n);
	if (!q) {
		atomic_fetch_add(&n_null, 1);
		return; /* the old block stays */
	}
	size_t keep = n < s->size ? n : s->size;
	/* Objects start with their size and size ^ key (words 0 and 1). */
	size_t first = s->size >= 16 ? 2 : 0;
	if (!pattern_check_from(q, s->size, keep, key, first))
		damaged("realloc lost contents", q, n);
	atomic_fetch_add(&n_realloc, 1);
	if (n >= 16)
		object_fill(q, n);
	else
		pattern_fill(q, n);
	s->p = q;
	s->size = n;
}

/* Swaps a local block (>= 16 bytes, or none) with a random transfer slot. */
static void block_transfer(struct slot *s, uint64_t *rng)
{
	if (s->p && s->size < 16)
		return; /* tiny blocks cannot tell their size: keep them */
	void *got = atomic_exchange(&transfer[test_rand(rng) % TRANSFER_SLOTS], s->p);
	s->p = got;
	s->size = 0;
	if (got) {
		s->size = object_check(got);
		if (!s->size) {
			damaged("transfer", got, 0);
			s->p = NULL; /* leak it rather than free garbage */
		}
	}
}

static void *worker(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	uint64_t rng = 0x9E3779B97F4A7C15ull * (id + 1) ^ 0xabcdef12345ull;
	struct slot local[LOCAL_SLOTS] = { { NULL, 0 } };
	for (long op = 0; op < nops; op++) {
		if ((op & 255) == 255 && now_seconds() - t_start > budget_s) {
			atomic_store(&out_of_time, true);
			break;
		}
		struct slot *s = &local[test_rand(&rng) % LOCAL_SLOTS];
		unsigned r = (unsigned)(test_rand(&rng) % 100);
		if (r < 45) { /* allocate into the slot */
			block_free(s->p, s->size);
			s->p = block_new(&rng, &s->size);
		} else if (r < 70) {
			block_transfer(s, &rng);
		} else if (r < 80) {
			if (s->p)
				block_realloc(s, &rng);
		} else { /* free */
			block_free(s->p, s->size);
			s->p = NULL;
		}
	}
	/* Leave: hand half of what is left to other threads, free the rest. */
	for (int i = 0; i < LOCAL_SLOTS; i++) {
		if (local[i].p && test_rand(&rng) % 2)
			block_transfer(&local[i], &rng);
		block_free(local[i].p, local[i].size);
	}
	return NULL;
}

TEST(stress)
{
	double t0 = now_seconds();
	t_start = t0;
	pthread_t *th = calloc((size_t)nthreads, sizeof(*th));
	REQUIRE(th != NULL);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * KiB);
	int create_failed = 0;
	for (int round = 0; round < nrounds && !atomic_load(&out_of_time); round++) {
		for (int t = 0; t < nthreads; t++) {
			uintptr_t id = (uintptr_t)round * 1000 + (uintptr_t)t;
			if (pthread_create(&th[t], &attr, worker, (void *)id) != 0) {
				create_failed++;
				th[t] = 0;
			}
		}
		for (int t = 0; t < nthreads; t++)
			if (th[t])
				pthread_join(th[t], NULL);
	}
	pthread_attr_destroy(&attr);
	free(th);
	/* The blocks still in transit, freed by the main thread. */
	for (int i = 0; i < TRANSFER_SLOTS; i++) {
		void *p = atomic_exchange(&transfer[i], NULL);
		if (p) {
			size_t n = object_check(p);
			if (!n) {
				damaged("left in transfer", p, 0);
				continue;
			}
			block_free(p, n);
		}
	}
	double dt = now_seconds() - t0;
	printf("stress: %d threads x %d rounds x %ld ops: %ld allocs, %ld reallocs, %ld frees in %.1f s%s\n",
	       nthreads, nrounds, nops, atomic_load(&n_alloc), atomic_load(&n_realloc),
	       atomic_load(&n_free), dt,
	       atomic_load(&out_of_time) ? " (time budget reached, stopped early)" : "");
	CHECK_EQ(create_failed, 0);
	CHECK_EQ(atomic_load(&n_damaged), 0);   /* contents checked on free */
	CHECK_EQ(atomic_load(&n_null), 0);      /* no allocation failed */
	CHECK_EQ(atomic_load(&n_misaligned), 0);
	CHECK_EQ(atomic_load(&n_alloc), atomic_load(&n_free)); /* every block came back */
	CHECK(atomic_load(&n_alloc) > 0);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		nthreads = atoi(argv[1]);
	if (argc > 2)
		nrounds = atoi(argv[2]);
	if (argc > 3)
		nops = atol(argv[3]);
	if (argc > 4)
		budget_s = atof(argv[4]);
	REQUIRE(nthreads > 0 && nrounds > 0 && nops > 0);
	alarm((unsigned)budget_s + 90); /* a deadlock ends the test (SIGALRM) */
	RUN(malloc_interposed);
	RUN(stress);
	return test_report();
}
