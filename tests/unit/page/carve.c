/*
 * tests/unit/page/carve.c - what a small program's first blocks write in
 * the descriptor mapping (issue 9, docs/footprint.md: 36 kB of descriptors
 * for about 120 pages in use).
 *
 * Blocks for pc_alloc_pages that nothing on the lists serves are carved
 * from the start of a fresh chunk (buddy.c, "carving") instead of splitting
 * it, which wrote the heads of its free halves (pages 512, 256, 128, 64 of
 * the chunk, a descriptor page each); and a free run that ends at its
 * chunk's end has no end descriptor (run.c, has_end). Each case looks at
 * the descriptors themselves: one never written is all zero bytes (a
 * region's descriptors start zeroed). Deterministic: pinned to the first
 * allowed CPU, no release pass (an hour's delay, a watermark of 4 GiB), the
 * zone's functions called directly under its lock (no per-CPU batches),
 * nothing timed.
 *
 *  carve_first_block  the zone's first order-0 block is page 0 of its
 *                     first chunk; no descriptor past page 0 is written
 *                     (the split wrote 1, 2, 4, ..., 512);
 *  carve_aligned      order 3 next: page 8, the pieces 1, 2-3 and 4-7 on
 *                     the lists (an order-1 block then comes from them,
 *                     not from the carve); order 8: page 256, 16..255 in
 *                     pieces; order 9: page 512, the chunk all carved (no
 *                     carve chunk left); nothing written past the carve;
 *  carve_whole_again  all of it freed: the chunk, carved whole already,
 *                     is one free top-order block again (the carve that
 *                     ends because everything carved from it is free is
 *                     carve_no_room's third chunk);
 *  carve_no_room      a carve at 520 pages asked for order 9: it ends (its
 *                     rest on the lists as aligned blocks, merged with
 *                     what is free before it) and the next chunk is
 *                     carved; freed, both chunks whole again;
 *  carve_seed_all     zone_seed_all_locked (a new region, lending) ends a
 *                     carve: every free page on the lists;
 *  run_end_at_chunk   a run cut from a fresh chunk's start leaves the free
 *                     rest without an end descriptor (the chunk's last
 *                     descriptor stays zero); runs freed around it still
 *                     merge, and the chunk goes back whole.
 * pc_page_check() after each.
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <string.h>

#define CHUNK ((size_t)1 << PC_MAX_ORDER)

static struct pc_zone *zone;
static struct pc_page *chunk; /* the first chunk of the zone's region */

static struct pc_page *take(unsigned order)
{
	return zone_take(zone, order, true);
}

static void give(struct pc_page *pg, unsigned order)
{
	zone_give(zone, pg, order);
}

/* Descriptors [from, to) of the chunk at c never written: all zero bytes. */
static size_t written(const struct pc_page *c, size_t from, size_t to)
{
	static const struct pc_page zero;
	size_t n = 0;
	for (size_t i = from; i < to; i++)
		n += memcmp(&c[i], &zero, sizeof zero) != 0;
	return n;
}

static size_t free_blocks_below_top(void)
{
	size_t n = 0;
	for (unsigned o = 0; o < PC_MAX_ORDER; o++)
		n += zone->free_area[o].nr_free;
	return n;
}

static struct pc_page *first_block;

TEST(carve_first_block)
{
	REQUIRE(zone_grow(zone));
	struct pc_region *r = zone->regions;
	chunk = &r->pages[0];
	first_block = take(0);
	REQUIRE(first_block != NULL);
	CHECK(first_block == chunk);
	CHECK(zone->carve == chunk);
	CHECK_EQ(zone->carve_next, 1);
	CHECK_EQ(written(chunk, 1, CHUNK), 0);
	CHECK_EQ(free_blocks_below_top(), 0);
	CHECK(pc_page_check());
}

static struct pc_page *b3, *b1, *b8, *b9;

TEST(carve_aligned)
{
	b3 = take(3);
	CHECK(b3 == chunk + 8);
	CHECK_EQ(zone->carve_next, 16);
	CHECK_EQ(zone->free_area[0].nr_free, 1); /* page 1 */
	CHECK_EQ(zone->free_area[1].nr_free, 1); /* pages 2-3 */
	CHECK_EQ(zone->free_area[2].nr_free, 1); /* pages 4-7 */
	b1 = take(1);
	CHECK(b1 == chunk + 2); /* from the lists, not carved */
	CHECK_EQ(zone->carve_next, 16);
	CHECK_EQ(written(chunk, 16, CHUNK), 0);
	b8 = take(8);
	CHECK(b8 == chunk + 256);
	CHECK_EQ(zone->carve_next, 512);
	CHECK_EQ(written(chunk, 512, CHUNK), 0);
	b9 = take(9);
	CHECK(b9 == chunk + 512);
	CHECK(zone->carve == NULL); /* all carved */
	CHECK_EQ(zone->carve_next, 0);
	CHECK(pc_page_check());
}

TEST(carve_whole_again)
{
	give(b9, 9);
	give(b8, 8);
	give(b1, 1);
	give(b3, 3);
	give(first_block, 0);
	CHECK_EQ(free_blocks_below_top(), 0);
	CHECK(pc_pg_state(chunk) == PC_PG_BUDDY && pc_pg_order(chunk) == PC_MAX_ORDER);
	check_coalesced_locked(true);
}

TEST(carve_no_room)
{
	/* A second chunk carved: the first is a free block on the lists now,
	 * so take it whole first (as the run heap would), leaving the lists
	 * empty below the seed. */
	struct pc_page *whole = take(PC_MAX_ORDER);
	REQUIRE(whole == chunk);
	struct pc_page *c = chunk + CHUNK; /* the next chunk, not yet seeded */
	struct pc_page *a = take(9), *b = take(3);
	REQUIRE(a != NULL && b != NULL);
	CHECK(a == c && b == c + 512);
	CHECK(zone->carve == c);
	CHECK_EQ(zone->carve_next, 520);
	struct pc_page *d = take(9); /* no room: the carve ends, the next chunk */
	REQUIRE(d != NULL);
	CHECK(d == c + CHUNK);
	CHECK(zone->carve == c + CHUNK);
	CHECK_EQ(zone->carve_next, 512);
	/* the rest, 520..1023, on the lists as 8, 16, ..., 256 */
	for (unsigned o = 3; o <= 8; o++)
		CHECK_EQ(zone->free_area[o].nr_free, 1);
	CHECK(pc_page_check());
	give(b, 3); /* merges with the rest: 512..1023 */
	CHECK(pc_pg_state(c + 512) == PC_PG_BUDDY && pc_pg_order(c + 512) == 9);
	give(a, 9);
	CHECK(pc_pg_state(c) == PC_PG_BUDDY && pc_pg_order(c) == PC_MAX_ORDER);
	give(d, 9); /* everything carved from the third chunk free: whole */
	CHECK(zone->carve == NULL);
	give(whole, PC_MAX_ORDER);
	check_coalesced_locked(true);
}

TEST(carve_seed_all)
{
	/* Three chunks are on the lists now: take them, so the next block is
	 * carved from the fourth. */
	struct pc_page *w[3];
	for (int i = 0; i < 3; i++)
		REQUIRE((w[i] = take(PC_MAX_ORDER)) != NULL);
	struct pc_page *a = take(2);
	REQUIRE(a != NULL);
	CHECK(a == chunk + 3 * CHUNK);
	CHECK(zone->carve == a);
	pc_lock_acquire(&zone->lock);
	zone_seed_all_locked(zone);
	pc_lock_release(&zone->lock);
	CHECK(zone->carve == NULL);
	CHECK_EQ(zone->seed_pages, 0);
	CHECK(pc_page_check());
	give(a, 2);
	for (int i = 0; i < 3; i++)
		give(w[i], PC_MAX_ORDER);
	check_coalesced_locked(true);
}

TEST(run_end_at_chunk)
{
	/* A fresh region's chunk for the run heap: a new zone region, so that
	 * the chunk's descriptors were never written. */
	size_t before = zone->managed_pages;
	pc_lock_acquire(&zone->lock);
	/* every chunk of the first region in use: the heap must take a new one */
	size_t n = zone->free_area[PC_MAX_ORDER].nr_free;
	pc_lock_release(&zone->lock);
	REQUIRE(n == PC_REGION_PAGES / CHUNK);
	struct pc_page *w[PC_REGION_PAGES / CHUNK];
	for (size_t i = 0; i < n; i++)
		REQUIRE((w[i] = take(PC_MAX_ORDER)) != NULL);
	REQUIRE(zone_grow(zone));
	REQUIRE(zone->managed_pages == before + PC_REGION_PAGES);
	struct pc_page *c = &zone->regions->pages[0];
	pc_lock_acquire(&zone->lock);
	struct pc_page *a = zone_run_alloc_locked(zone, 4, 1);
	pc_lock_release(&zone->lock);
	REQUIRE(a == c);
	CHECK(pc_pg_state(c + 4) == PC_PG_RUN && c[4].aux == CHUNK - 4);
	CHECK_EQ(written(c, CHUNK - 1, CHUNK), 0); /* no end descriptor */
	CHECK(pc_page_check());
	/* Cut the rest so that the chunk's last run is in use, then free in an
	 * order that merges a run after a free one (the end descriptor's use)
	 * and one before a free run at the chunk's end. */
	pc_lock_acquire(&zone->lock);
	struct pc_page *b = zone_run_alloc_locked(zone, CHUNK - 8, 1);
	struct pc_page *d = zone_run_alloc_locked(zone, 4, 1);
	pc_lock_release(&zone->lock);
	REQUIRE(b == c + 4 && d == c + CHUNK - 4);
	pc_lock_acquire(&zone->lock);
	zone_run_free_locked(zone, d, 4); /* a free run at the chunk's end */
	pc_lock_release(&zone->lock);
	CHECK(pc_pg_state(c + CHUNK - 4) == PC_PG_RUN && pc_pg_state(c + CHUNK - 1) == PC_PG_NONE);
	CHECK(pc_page_check());
	pc_lock_acquire(&zone->lock);
	zone_run_free_locked(zone, a, 4); /* a free run with an end: 0..3 */
	pc_lock_release(&zone->lock);
	CHECK(pc_pg_state(c + 3) == PC_PG_RUN_END && c[3].aux == 4);
	pc_lock_acquire(&zone->lock);
	zone_run_free_locked(zone, b, CHUNK - 8); /* merges both: the whole chunk */
	pc_lock_release(&zone->lock);
	CHECK(pc_pg_state(c) == PC_PG_BUDDY && pc_pg_order(c) == PC_MAX_ORDER);
	CHECK_EQ(zone->run_free_pages, 0);
	CHECK_EQ(zone->run_chunk_pages, 0);
	for (size_t i = 0; i < n; i++)
		give(w[i], PC_MAX_ORDER);
	check_coalesced_locked(true);
}

int main(void)
{
	if (!(zone = page_test_start()))
		return 0;
	REQUIRE(zone->regions == NULL);
	RUN(carve_first_block);
	RUN(carve_aligned);
	RUN(carve_whole_again);
	RUN(carve_no_room);
	RUN(carve_seed_all);
	RUN(run_end_at_chunk);
	return test_report();
}
