/*
 * tests/unit/slab/decay.c - sheaves and barns nobody touches go back to the
 * slabs (the decay, src/slab/sheaf_decay.c). Runs with rseq (per-CPU
 * sheaves), on the per-thread fallback (decay_norseq) and under
 * ThreadSanitizer. vm.release_delay_ms is an hour and the page clock is
 * moved (pc_page_clock_advance), or passes are forced (pc_slab_decay_pass):
 * no verdict depends on timing.
 *
 *  idle_thread_decays   a thread fills its sheaf and the barn and parks;
 *                       a first pass only looks; pc_slab_decay before the
 *                       interval does nothing; after the page clock moves an
 *                       interval, the next due pass flushes the parked
 *                       thread's sheaf and the barn: no sheaf object left.
 *  used_sheaf_stays     (pinned to CPU 0) a sheaf changed between two passes
 *                       stays; unchanged over the next pass it goes.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "slab/slab.h"
#include "test.h"
#include "unit/unit_helpers.h"
#include "unit/slab/parked.h"

#include <pthread.h>
#include <semaphore.h>

#define HOUR_MS 3600000L
#define FILL 400 /* > one sheaf of 64-byte objects: the barn gets some */

static long sheaf_objects(struct pc_cache *s)
{
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	return info.sheaf_objects;
}

static struct pc_cache *idle_cache;

TEST(idle_thread_decays)
{
	idle_cache = pc_cache_create("dc-idle", 64, 0, NULL);
	REQUIRE(idle_cache != NULL);
	struct parked parked;
	parked_start(&parked, idle_cache, FILL);
	long held = sheaf_objects(idle_cache);
	CHECK(held > 0);
	pc_slab_decay_pass(); /* the first look */
	CHECK_EQ(sheaf_objects(idle_cache), held);
	CHECK_EQ(pc_slab_decay(), 0); /* not due: an hour to go */
	CHECK_EQ(sheaf_objects(idle_cache), held);
	pc_page_clock_advance((uint64_t)HOUR_MS * 1000000u);
	pc_slab_decay(); /* due now (or a slow path's poll ran it) */
	CHECK_EQ(sheaf_objects(idle_cache), 0);
	struct pc_cache_info info;
	pc_cache_info(idle_cache, &info);
	CHECK_EQ(info.active_objects, 0);
	parked_finish(&parked);
	CHECK_EQ(pc_cache_check(idle_cache), 0);
	CHECK_EQ(pc_cache_destroy(idle_cache), 0);
}

TEST(used_sheaf_stays)
{
	if (!pin_cpu(0)) {
		printf("  (cannot pin to a CPU; skipped)\n");
		return;
	}
	struct pc_cache *s = pc_cache_create("dc-used", 64, 0, NULL);
	REQUIRE(s != NULL);
	void *v[10];
	for (int i = 0; i < 10; i++)
		REQUIRE((v[i] = pc_cache_alloc(s)) != NULL);
	for (int i = 0; i < 10; i++)
		pc_cache_free(s, v[i]);
	long held = sheaf_objects(s);
	CHECK(held > 0);
	pc_slab_decay_pass(); /* looks */
	void *keep = pc_cache_alloc(s); /* uses the sheaf: its count changes */
	REQUIRE(keep != NULL);
	pc_slab_decay_pass(); /* changed since the look: stays */
	CHECK_EQ(sheaf_objects(s), held - 1);
	pc_slab_decay_pass(); /* unchanged since: goes */
	CHECK_EQ(sheaf_objects(s), 0);
	pc_cache_free(s, keep);
	CHECK_EQ(pc_cache_check(s), 0);
	CHECK_EQ(pc_cache_destroy(s), 0);
}

int main(void)
{
	watchdog_install("decay: watchdog: the test hangs\n");
	alarm(300);
	pc_page_init();
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, HOUR_MS);
	RUN(idle_thread_decays);
	RUN(used_sheaf_stays);
	return test_report();
}
