/*
 * tests/unit/slab/counts.c - the slab counts read while slabs are made on
 * one CPU and given back on another (slab_alloc.c, slab_counts).
 *
 * The counts are per CPU number (struct pc_cache_cpu): slabs made and slabs
 * given back by threads on that CPU, each only ever growing. A slab made on
 * CPU 0 and given back on CPU 1 shows on two CPUs' counters, so a reader
 * must sum what was given back before what was made: a reader that summed
 * net per-CPU counts, or made before given back, and was preempted between
 * two loads, missed the makes of slabs it saw given back, and its sum went
 * below 0 (-511 slabs in the review of this change, num_slabs wrapped to
 * 1.8e19 in the statistics). The churn is forced here, in order, at the
 * point between the reader's two sums (pc_slab_counts_test_hook): a thread
 * pinned to the process's first CPU allocates 2,000 objects of 2 KiB (125
 * new slabs), one pinned to its second frees them and shrinks the cache (they are given back
 * there); both joined in the hook. No timing.
 *
 *  made_here_gone_there  the count read across the churn is at least the
 *                        slabs that hold the 64 objects kept through it
 *                        (and so never below 0), at most those and the
 *                        slabs the churn made; once quiet, pc_cache_check
 *                        finds the counts equal to its walk.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "slab/slab.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <pthread.h>

#define KEEP 64
#define CHURN 2000
#define SIZE 2048

static struct pc_cache *cache;
static void *keep[KEEP];
static void *churn_objs[CHURN];
static _Atomic int hook_calls;

static void *make_on_cpu0(void *arg)
{
	(void)arg;
	REQUIRE(pin_cpu(0));
	for (int i = 0; i < CHURN; i++) {
		REQUIRE((churn_objs[i] = pc_cache_alloc(cache)) != NULL);
		memset(churn_objs[i], 0x5c, 16);
	}
	return NULL;
}

static void *give_back_on_cpu1(void *arg)
{
	(void)arg;
	REQUIRE(pin_cpu(1));
	for (int i = 0; i < CHURN; i++)
		pc_cache_free(cache, churn_objs[i]);
	pc_cache_shrink(cache); /* the empty slabs go back here, on the second CPU */
	return NULL;
}

static void run_thread(void *(*fn)(void *))
{
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, fn, NULL) == 0);
	REQUIRE(pthread_join(t, NULL) == 0);
}

/* Between the reader's two sums: the churn, once. */
static void churn(struct pc_cache *s)
{
	if (s != cache || pc_add_relaxed(&hook_calls, 1) != 0)
		return;
	run_thread(make_on_cpu0);
	run_thread(give_back_on_cpu1);
}

/* Distinct slabs among the kept objects. */
static long kept_slabs(void)
{
	long n = 0;
	for (int i = 0; i < KEEP; i++) {
		bool seen = false;
		for (int j = 0; j < i && !seen; j++)
			seen = pc_slab_of(keep[j]) == pc_slab_of(keep[i]);
		n += !seen;
	}
	return n;
}

TEST(made_here_gone_there)
{
	if (!pin_cpu(1)) { /* the process's second CPU (unit_helpers.h) */
		fprintf(stderr, "  needs two CPUs: skipped\n");
		return;
	}
	REQUIRE((cache = pc_cache_create("slab-counts", SIZE, 0, NULL)) != NULL);
	for (int i = 0; i < KEEP; i++)
		REQUIRE((keep[i] = pc_cache_alloc(cache)) != NULL);
	CHECK_EQ(pc_cache_check(cache), KEEP);
	struct pc_cache_info info;
	pc_cache_info(cache, &info);
	long before = info.slabs, held = kept_slabs();
	CHECK(before >= held && held >= 1);

	pc_store_relaxed(&pc_slab_counts_test_hook, churn);
	pc_cache_info(cache, &info);
	pc_store_relaxed(&pc_slab_counts_test_hook, NULL);
	CHECK_EQ(pc_load_relaxed(&hook_calls), 1);
	long per = info.objects_per_slab, most = before + (CHURN + per - 1) / per + 2;
	CHECK(info.slabs >= held);
	CHECK(info.slabs <= most); /* and the churn's makes at most (a wrapped sum is above) */
	CHECK(info.total_objects >= held * per);
	if (info.slabs < held || info.slabs > most)
		fprintf(stderr, "  read %ld slabs / %ld objects across the churn; %ld hold kept objects\n",
			info.slabs, info.total_objects, held);

	/* Quiet again: the counts are the walk's. */
	CHECK_EQ(pc_cache_check(cache), KEEP);
	pc_cache_info(cache, &info);
	CHECK(info.slabs >= held);
	for (int i = 0; i < KEEP; i++)
		pc_cache_free(cache, keep[i]);
	CHECK_EQ(pc_cache_check(cache), 0);
	CHECK_EQ(pc_cache_destroy(cache), 0);
}

int main(void)
{
	pc_page_init();
	RUN(made_here_gone_there);
	return test_report();
}
