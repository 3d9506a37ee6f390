/*
 * tests/unit/slab/remote_flush.c - flushing the sheaves of other live
 * threads. Runs with rseq (per-CPU sheaves: the rseq membarrier flush), on
 * the per-thread fallback (remote_flush_norseq) and under ThreadSanitizer
 * (always the fallback), where the thread registry and its membarrier
 * handshake do it (slab.h, "Flushing another thread's sheaves").
 *
 *  - a thread fills its sheaf (N objects allocated and freed; the capacity
 *    set to 128, since the default one starts small) and parks on a
 *    semaphore, alive; the main thread sees those objects as free (active 0,
 *    sheaf_objects counts them: statistics see every live thread's sheaves),
 *    then pc_cache_shrink, pc_slab_reclaim (what pc_trim, malloc_trim and the
 *    out-of-memory retry call) or pc_cache_destroy gives them back: no sheaf
 *    object left, every slab back to the page allocator (or the cache gone);
 *    the parked thread then uses the cache again (its sheaf was taken: the
 *    slow path makes a new one) and the totals are exact;
 *  - flushes (shrink and reclaim, back to back) racing threads that hammer
 *    the fast paths: every object carries its owner's pattern, checked
 *    before it is freed (an object handed out twice would be overwritten),
 *    and at the end every object is accounted for (pc_cache_check exact);
 *  - thread mode without membarrier (the test hook): the parked thread's
 *    sheaf stays (still counted free, not active), the caller's and the
 *    barns' are flushed; the thread's exit gives its sheaf back.
 * No verdict depends on timing: the parked thread waits on a semaphore and
 * the race's verdict is only the contents and the totals.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "slab/slab.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <pthread.h>
#include <semaphore.h>
#include <string.h>

#define N 100 /* objects the parked thread cycles through its sheaf */

static struct pc_cache_info info_of(struct pc_cache *s)
{
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	return info;
}

struct parked {
	struct pc_cache *s;
	bool use_after; /* use the cache again once released */
	sem_t ready, go;
};

static void *park_with_full_sheaf(void *arg)
{
	struct parked *p = arg;
	void *v[N];
	for (int i = 0; i < N; i++)
		REQUIRE((v[i] = pc_cache_alloc(p->s)) != NULL);
	for (int i = 0; i < N; i++)
		pc_cache_free(p->s, v[i]);
	sem_post(&p->ready);
	while (sem_wait(&p->go) != 0)
		;
	if (p->use_after) {
		for (int i = 0; i < N; i++) {
			REQUIRE((v[i] = pc_cache_alloc(p->s)) != NULL);
			memset(v[i], 0x5a, 64);
		}
		for (int i = 0; i < N; i++)
			pc_cache_free(p->s, v[i]);
	}
	return NULL;
}

static void park_start(struct parked *p, pthread_t *t, struct pc_cache *s, bool use_after)
{
	p->s = s;
	p->use_after = use_after;
	REQUIRE(sem_init(&p->ready, 0, 0) == 0 && sem_init(&p->go, 0, 0) == 0);
	REQUIRE(pthread_create(t, NULL, park_with_full_sheaf, p) == 0);
	while (sem_wait(&p->ready) != 0)
		;
	/* Its N objects are free (in its sheaf, or its CPU's), not active. */
	struct pc_cache_info info = info_of(s);
	CHECK_EQ(info.active_objects, 0);
	CHECK(info.sheaf_objects >= N);
	CHECK(info.slabs > 0);
}

static void park_end(struct parked *p, pthread_t t)
{
	sem_post(&p->go);
	REQUIRE(pthread_join(t, NULL) == 0);
	sem_destroy(&p->ready);
	sem_destroy(&p->go);
}

static void check_all_back(struct pc_cache *s)
{
	struct pc_cache_info info = info_of(s);
	CHECK_EQ(info.sheaf_objects, 0);
	CHECK_EQ(info.active_objects, 0);
	CHECK_EQ(info.slabs, 0); /* every object back in its slab, every slab freed */
}

TEST(shrink_takes_parked_threads_sheaf)
{
	struct pc_cache *s = pc_cache_create("rf-shrink", 64, 0, NULL);
	REQUIRE(s != NULL);
	struct parked p;
	pthread_t t;
	park_start(&p, &t, s, true);
	CHECK_EQ(pc_cache_shrink(s) > 0, true);
	check_all_back(s);
	park_end(&p, t); /* it allocates again: a fresh sheaf */
	CHECK_EQ(pc_cache_check(s), 0);
	CHECK_EQ(pc_cache_destroy(s), 0);
}

TEST(reclaim_takes_parked_threads_sheaf)
{
	struct pc_cache *s = pc_cache_create("rf-reclaim", 64, 0, NULL);
	REQUIRE(s != NULL);
	struct parked p;
	pthread_t t;
	park_start(&p, &t, s, true);
	pc_slab_reclaim(); /* pc_trim, malloc_trim, the out-of-memory retry */
	check_all_back(s);
	park_end(&p, t);
	CHECK_EQ(pc_cache_check(s), 0);
	CHECK_EQ(pc_cache_destroy(s), 0);
}

TEST(destroy_takes_parked_threads_sheaf)
{
	struct pc_cache *s = pc_cache_create("rf-destroy", 64, 0, NULL);
	REQUIRE(s != NULL);
	struct parked p;
	pthread_t t;
	park_start(&p, &t, s, false);
	CHECK_EQ(pc_cache_destroy(s), 0); /* nothing allocated: it goes */
	park_end(&p, t);                   /* its exit finds no sheaf of s */
}

/* ---- flushes racing the fast paths ---------------------------------------------- */
#define HAMMER_THREADS 4
#define HAMMER_BATCH 24
#define OBJ_WORDS (64 / sizeof(uint64_t))

static struct pc_cache *hammer_cache;
static _Atomic int hammer_running;
static _Atomic long hammer_bad;

static void *hammer(void *arg)
{
	uint64_t id = (uint64_t)(uintptr_t)arg;
	uint64_t *v[HAMMER_BATCH];
	long rounds = (long)scaled(3000, 4);
	for (long r = 0; r < rounds; r++) {
		unsigned k = 1 + (unsigned)((r * 7 + id) % HAMMER_BATCH);
		for (unsigned i = 0; i < k; i++) {
			REQUIRE((v[i] = pc_cache_alloc(hammer_cache)) != NULL);
			for (unsigned w = 0; w < OBJ_WORDS; w++)
				v[i][w] = id << 48 | (uint64_t)r << 8 | i;
		}
		for (unsigned i = 0; i < k; i++) {
			for (unsigned w = 0; w < OBJ_WORDS; w++)
				if (v[i][w] != (id << 48 | (uint64_t)r << 8 | i))
					pc_add_relaxed(&hammer_bad, 1);
			pc_cache_free(hammer_cache, v[i]);
		}
		test_progress();
	}
	pc_add_relaxed(&hammer_running, -1);
	return NULL;
}

TEST(flush_races_fast_paths)
{
	hammer_cache = pc_cache_create("rf-hammer", 64, 0, NULL);
	REQUIRE(hammer_cache != NULL);
	pthread_t t[HAMMER_THREADS];
	pc_store_relaxed(&hammer_running, HAMMER_THREADS);
	for (uintptr_t i = 0; i < HAMMER_THREADS; i++)
		REQUIRE(pthread_create(&t[i], NULL, hammer, (void *)(i + 1)) == 0);
	long flushes = 0;
	while (pc_load_relaxed(&hammer_running) > 0 || flushes < 4) {
		if (flushes++ % 2)
			pc_cache_shrink(hammer_cache);
		else
			pc_slab_reclaim();
	}
	for (int i = 0; i < HAMMER_THREADS; i++)
		REQUIRE(pthread_join(t[i], NULL) == 0);
	CHECK_EQ(pc_load_relaxed(&hammer_bad), 0);
	CHECK_EQ(pc_cache_check(hammer_cache), 0); /* every object accounted for */
	CHECK_EQ(pc_cache_destroy(hammer_cache), 0);
}

/* ---- thread mode without membarrier ----------------------------------------------- */
TEST(no_membarrier_leaves_other_threads_sheaves)
{
	if (pc_sheaf_mode() != PC_SHEAF_MODE_THREAD) {
		printf("  (rseq mode: the membarrier of rseq is required there; skipped)\n");
		return;
	}
	struct pc_cache *s = pc_cache_create("rf-nofence", 64, 0, NULL);
	REQUIRE(s != NULL);
	struct parked p;
	pthread_t t;
	park_start(&p, &t, s, false);
	long held = info_of(s).sheaf_objects;
	void *mine = pc_cache_alloc(s); /* and a sheaf of our own */
	REQUIRE(mine != NULL);
	pc_cache_free(s, mine);
	pc_store_relaxed(&pc_sheaf_test_no_fence, true);
	pc_cache_shrink(s);
	pc_slab_reclaim();
	struct pc_cache_info info = info_of(s);
	CHECK_EQ(info.sheaf_objects, held); /* its sheaf stays (ours went) ... */
	CHECK_EQ(info.active_objects, 0);   /* ... and still counts as free */
	CHECK(info.slabs > 0);
	pc_store_relaxed(&pc_sheaf_test_no_fence, false);
	park_end(&p, t); /* its exit gives the sheaf to the barn */
	pc_cache_shrink(s);
	check_all_back(s);
	CHECK_EQ(pc_cache_destroy(s), 0);
}

int main(void)
{
	watchdog_install("remote_flush: watchdog: the test hangs\n");
	watchdog_arm(120);
	pc_page_init();
	/* A fixed capacity of at least N, so that a thread's N frees all stay
	 * in sheaves (the default one starts smaller and grows: sheaf.c). */
	REQUIRE(pc_option_set(PC_OPT_SLUB_SHEAF_CAPACITY, 128, false) == 0);
	RUN(shrink_takes_parked_threads_sheaf);
	RUN(reclaim_takes_parked_threads_sheaf);
	RUN(destroy_takes_parked_threads_sheaf);
	RUN(flush_races_fast_paths);
	RUN(no_membarrier_leaves_other_threads_sheaves);
	return test_report();
}
