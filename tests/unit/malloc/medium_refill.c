/*
 * tests/unit/malloc/medium_refill.c - a medium malloc that misses the
 * per-CPU cache refills its stack in one page call (medium.c,
 * medium_refill; pc_alloc_runs): up to the room frees have made in the
 * stack, so that the misses of a run of mallocs take the per-CPU list's
 * lock (and the zone lock) once per batch, not once per block.
 *
 * rseq mode only (the per-CPU stacks; thread mode does not batch): pinned
 * to CPU 0, no release thread, statistics on (the zone's page calls and
 * its lock's acquisitions are counted). Nothing is timed.
 *
 *  alloc_only_keeps_none  after pc_trim (capacities 0), 40 mallocs of 16
 *                         KiB cache nothing: a class that frees have not
 *                         grown fetches only the caller's block;
 *  miss_refills_stack     freed, the blocks grow the class's capacity
 *                         (within the bound); once they are all taken
 *                         again, the next miss makes one page call that
 *                         fills the stack to its capacity (cached bytes =
 *                         capacity), with at most one zone-lock hold, and
 *                         the next capacity-many mallocs make no page call.
 * Before medium_refill each miss made one page call of one block:
 * miss_refills_stack's cached bytes stayed 0.
 */
#define _GNU_SOURCE
#include "test.h"
#include "unit/unit_helpers.h"

#include "malloc/malloc.h"

#include <string.h>

#define KiB ((size_t)1024)
#define N 40

static char *blocks[N + 64];
static struct pc_zone *zone;

static uint64_t page_calls(void)
{
	return pc_load_relaxed(&zone->stats.alloc_calls);
}

TEST(alloc_only_keeps_none)
{
	pc_trim();
	CHECK_EQ(medium_capacity_bytes(0), 0);
	for (int i = 0; i < N; i++) {
		REQUIRE((blocks[i] = pc_malloc(16 * KiB)) != NULL);
		memset(blocks[i], i, 16 * KiB);
	}
	CHECK_EQ(medium_cached_bytes(), 0);
}

TEST(miss_refills_stack)
{
	for (int i = 0; i < N; i++)
		pc_free(blocks[i]);
	size_t cap = medium_capacity_bytes(0);
	CHECK(cap >= 2 * 16 * KiB);
	CHECK_EQ(medium_cached_bytes(), cap);
	size_t nblocks = cap / (16 * KiB);
	REQUIRE(nblocks < N);
	for (size_t i = 0; i < nblocks; i++) /* hits: the stack emptied */
		REQUIRE((blocks[i] = pc_malloc(16 * KiB)) != NULL);
	CHECK_EQ(medium_cached_bytes(), 0);
	uint64_t calls = page_calls(), locks = pc_load_relaxed(&zone->lock_stats.acquisitions);
	REQUIRE((blocks[nblocks] = pc_malloc(16 * KiB)) != NULL); /* the miss */
	CHECK_EQ(page_calls() - calls, nblocks + 1); /* one call, counted per run */
	CHECK(pc_load_relaxed(&zone->lock_stats.acquisitions) - locks <= 1);
	CHECK_EQ(medium_cached_bytes(), cap);
	calls = page_calls();
	for (size_t i = nblocks + 1; i <= 2 * nblocks; i++) {
		REQUIRE((blocks[i] = pc_malloc(16 * KiB)) != NULL);
		memset(blocks[i], (int)i, 16 * KiB);
	}
	CHECK_EQ(page_calls() - calls, 0);
	CHECK_EQ(medium_cached_bytes(), 0);
	for (size_t i = 0; i <= 2 * nblocks; i++)
		pc_free(blocks[i]);
	pc_trim();
	CHECK(pc_page_check());
}

int main(void)
{
	REQUIRE(pc_malloc_init());
	if (pc_load_relaxed(&pc_medium_slots) == NULL) {
		fprintf(stderr, "no per-CPU medium cache (thread mode): skipped\n");
		return 0;
	}
	if (!pin_cpu(0)) {
		fprintf(stderr, "cannot pin to CPU 0: skipped\n");
		return 0;
	}
	set_opt(PC_OPT_VM_RELEASE_THREAD, 0);
	set_opt(PC_OPT_STATS_ENABLE, 1);
	zone = pc_zone_preferred(0);
	RUN(alloc_only_keeps_none);
	RUN(miss_refills_stack);
	return test_report();
}
