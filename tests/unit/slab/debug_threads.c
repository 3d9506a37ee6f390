/*
 * tests/unit/slab/debug_threads.c - debug caches (slub_debug mode, slab.h
 * "Debug caches") under threads: four threads allocate objects of two debug
 * caches (F Z P U), fill each with a pattern of its own, hand half of them
 * to the next thread to free (cross-thread frees), check every object's
 * contents before freeing it, and free their own. Every free runs the full
 * checks (red zone, freelist walk) and every allocation the poison check,
 * so a race in the debug paths shows as a report (SIGABRT) or a broken
 * pattern; the walker then finds every object free. Not a benchmark.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>

#include "slab/slab.h"
#include "test.h"

#define THREADS 4
#define ROUNDS 200
#define BATCH 64

static struct pc_cache *caches[2];
static void *_Atomic handoff[THREADS][BATCH];
static _Atomic int bad;

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed * 31u + i);
}

static bool intact(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed * 31u + i))
			return false;
	return true;
}

/* The seed of an object: its address, so any thread can check it. */
static unsigned seed_of(const void *p) { return (unsigned)((uintptr_t)p >> 4); }

static void *worker(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;
	void *mine[BATCH];
	for (int r = 0; r < ROUNDS; r++) {
		struct pc_cache *s = caches[r & 1];
		for (int i = 0; i < BATCH; i++) {
			mine[i] = pc_cache_alloc(s);
			if (!mine[i]) {
				pc_add_relaxed(&bad, 1);
				return NULL;
			}
			fill(mine[i], s->object_size, seed_of(mine[i]));
		}
		/* half to the next thread's hand-off slots, the rest freed here */
		for (int i = 0; i < BATCH; i += 2) {
			void *old = pc_xchg_acq_rel(&handoff[(me + 1) % THREADS][i], mine[i]);
			if (old) {
				struct pc_cache *os = pc_slab_cache_of(old);
				if (!intact(old, os->object_size, seed_of(old)))
					pc_add_relaxed(&bad, 1);
				pc_cache_free(os, old);
			}
		}
		for (int i = 1; i < BATCH; i += 2) {
			if (!intact(mine[i], s->object_size, seed_of(mine[i])))
				pc_add_relaxed(&bad, 1);
			pc_cache_free(s, mine[i]);
		}
	}
	return NULL;
}

TEST(threads_with_debug_caches)
{
	char msg[320];
	REQUIRE(pc_option_apply_text("test", "slub.debug", "FZPU:dbgt-*", true, msg, sizeof(msg)) == 0);
	caches[0] = pc_cache_create("dbgt-small", 24, 0, NULL);
	caches[1] = pc_cache_create("dbgt-large", 700, 64, NULL);
	REQUIRE(caches[0] && caches[1] && caches[0]->debug && caches[1]->debug);
	pthread_t t[THREADS];
	for (unsigned i = 0; i < THREADS; i++)
		REQUIRE(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i) == 0);
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(pc_load_relaxed(&bad), 0);
	for (unsigned i = 0; i < THREADS; i++)
		for (int k = 0; k < BATCH; k++) {
			void *p = pc_load_relaxed(&handoff[i][k]);
			if (p)
				pc_cache_free(pc_slab_cache_of(p), p);
		}
	CHECK_EQ(pc_cache_check(caches[0]), 0);
	CHECK_EQ(pc_cache_check(caches[1]), 0);
}

int main(void)
{
	RUN(threads_with_debug_caches);
	return test_report();
}
