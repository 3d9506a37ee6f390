/*
 * tests/unit/page/release_bound.c - a release pass follows the zone's bound
 * while it runs, and pages in its hands are no peak of use.
 *
 * A pass takes a batch of dirty blocks under the zone lock and madvises them
 * with the lock dropped; meanwhile other threads free into the zone, which
 * raises the dirty count and, by lowering the use, the bound's peak part
 * (peak - use) as much. A pass that kept the bound it computed at its start
 * went on releasing everything freed during it: seed 002's Test D at 16
 * threads lost 25,000-30,000 of its 80,000 pages in some rounds that way and
 * faulted them back in at the next (docs/pages.md, "Test D at 16 threads").
 * The frees of those threads are forced here, in order, by the page layer's
 * test hook at the point where the pass holds its first batch
 * (PC_PAGE_TEST_RELEASE_TAKEN): a second thread frees and is joined there;
 * no timing.
 *
 *  (a) bound_followed: 16 touched blocks of order PC_MAX_ORDER (4 MiB: the
 *      peak of use); 9 freed under a 1 GiB watermark (kept); the peak
 *      forgotten (pc_page_release_forget_peak: the use now, 7 blocks); the
 *      watermark back to 8 MiB (2 blocks): freeing the 10th runs a pass
 *      over the bound (the watermark, 2 blocks, more than a quarter of the
 *      use or the peak less the use). At the pass's first batch (8 blocks)
 *      another thread frees the other 6 blocks: the use falls to 0 and the
 *      bound rises to the peak (7 blocks). The pass must stop there: 6 to 8
 *      blocks stay dirty (it did release; a block past the bound at most).
 *      With the bound read once, 2 blocks stayed.
 *  (b) in_flight_no_peak: a pass that takes more than the use's peak off
 *      the lists at once (the same 16 blocks, all freed and kept under a
 *      1 GiB watermark, the peak forgotten while nothing is in use,
 *      then released by a trim in one batch) leaves the zone's peak where
 *      it was: pages on their way to the OS are not use.
 * pc_page_check() after each.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <pthread.h>

#define MiB ((size_t)1 << 20)
#define BLOCK (PC_PAGE_SIZE << PC_MAX_ORDER)
#define BLOCK_PAGES ((size_t)1 << PC_MAX_ORDER)
#define NBLOCKS 16
#define KEEP_FREED 9 /* (a): freed before the pass */

static char *blocks[NBLOCKS];
static struct pc_zone *zone;

static void alloc_all(void)
{
	for (size_t i = 0; i < NBLOCKS; i++) {
		blocks[i] = pc_alloc_pages(PC_MAX_ORDER);
		REQUIRE(blocks[i] != NULL);
		memset(blocks[i], 0x3c, BLOCK);
		/* One zone: the bound and the peak are a zone's (pinned to one CPU,
		 * the zones' instance for it serves every block). */
		REQUIRE(zone_of(blocks[i]) == zone);
	}
}

/* Forget the peak of use: it is then the use now. Two window rolls by the
 * clock would take two delays, and everything freed before them would be
 * due by age; these tests need the bound alone. */
static void forget_peak(void)
{
	pc_page_release_forget_peak();
}

static size_t zone_dirty(void)
{
	return pc_load_relaxed(&zone->dirty_hint);
}

/* (a)'s other thread: it frees blocks[KEEP_FREED + 1 ..] into the zone (this thread is
 * inside the page layer at the hook, where its own frees would wait for the
 * pass's end: reentry.c). The zone lock is not held at the hook; the pass's
 * releasing flag sends these frees' own passes away. */
static void *free_rest(void *arg)
{
	(void)arg;
	for (size_t i = KEEP_FREED + 1; i < NBLOCKS; i++)
		pc_free_pages(blocks[i], PC_MAX_ORDER);
	return NULL;
}

/* (a)'s hook: at the first batch a pass holds, the other thread's frees,
 * done before the pass goes on. */
static _Atomic int hook_calls;
static void free_rest_at_first_batch(enum pc_page_test_point at)
{
	if (at != PC_PAGE_TEST_RELEASE_TAKEN || pc_add_relaxed(&hook_calls, 1) != 0)
		return;
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, free_rest, NULL) == 0);
	REQUIRE(pthread_join(t, NULL) == 0);
}

static void setup(void)
{
	REQUIRE(pin_cpu(0));
	set_opt(PC_OPT_VM_RELEASE_THREAD, 1); /* the peak part (no thread: the page layer never starts one) */
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, 3600000); /* nothing is due by age */
	set_opt(PC_OPT_VM_RELEASE_WATERMARK_KB, 8192);
	pc_page_trim();
	char *probe = pc_alloc_pages(PC_MAX_ORDER);
	REQUIRE(probe != NULL);
	zone = zone_of(probe);
	pc_free_pages(probe, PC_MAX_ORDER);
	pc_page_trim();
	forget_peak();
}

/* After setup: every block allocated, the first n freed and kept dirty
 * (a watermark of 1 GiB), and the peak of use forgotten down to what is
 * still in use. */
static void freed_and_kept(size_t n)
{
	setup();
	alloc_all();
	set_opt(PC_OPT_VM_RELEASE_WATERMARK_KB, 1 << 20);
	for (size_t i = 0; i < n; i++)
		pc_free_pages(blocks[i], PC_MAX_ORDER);
	forget_peak();
}

TEST(bound_followed)
{
	freed_and_kept(KEEP_FREED); /* the peak: 7 blocks in use */
	CHECK(zone_dirty() >= KEEP_FREED * BLOCK_PAGES);
	set_opt(PC_OPT_VM_RELEASE_WATERMARK_KB, 8192);
	pc_store_relaxed(&hook_calls, 0);
	pc_store_relaxed(&pc_page_test_hook, free_rest_at_first_batch);
	pc_free_pages(blocks[KEEP_FREED], PC_MAX_ORDER); /* over the bound: a pass */
	pc_store_relaxed(&pc_page_test_hook, NULL);
	CHECK(pc_load_relaxed(&hook_calls) >= 1);
	/* Nothing in use now, the peak 7 blocks: the bound is 7 blocks (more
	 * than the watermark), and the pass took one block at most past it. */
	size_t dirty = zone_dirty();
	CHECK(dirty >= 6 * BLOCK_PAGES);
	CHECK(dirty <= 8 * BLOCK_PAGES); /* it did release what was over */
	if (dirty < 6 * BLOCK_PAGES || dirty > 8 * BLOCK_PAGES)
		fprintf(stderr, "  %zu dirty pages after the pass (blocks of %zu)\n", dirty, BLOCK_PAGES);
	CHECK(pc_page_check());
	pc_page_trim();
}

TEST(in_flight_no_peak)
{
	freed_and_kept(NBLOCKS); /* the peak: nothing in use */
	size_t peak = pc_load_relaxed(&zone->peak_hint);
	CHECK(zone_dirty() >= NBLOCKS * BLOCK_PAGES);
	pc_page_trim(); /* one batch of 16 blocks in flight, 64 MiB */
	CHECK(zone_dirty() == 0);
	CHECK(pc_load_relaxed(&zone->peak_hint) == peak);
	if (pc_load_relaxed(&zone->peak_hint) != peak)
		fprintf(stderr, "  peak %zu pages before the trim, %zu after\n", peak,
			(size_t)pc_load_relaxed(&zone->peak_hint));
	CHECK(pc_page_check());
	set_opt(PC_OPT_VM_RELEASE_WATERMARK_KB, 8192);
}

int main(void)
{
	pc_page_init();
	RUN(bound_followed);
	RUN(in_flight_no_peak);
	return test_report();
}
