/*
 * tests/unit/page/carve_place.c - carving keeps the placement by region
 * (buddy.c, zone_alloc_block_locked; review of pagerss, item 1).
 *
 * A region that never held a pc_alloc_pages block may be unmapped after a
 * peak; blocks for pc_alloc_pages therefore come from regions pinned
 * already while they have free memory. The carve chunk's rest is such
 * memory on no list, so the placement's scan of the lists does not see
 * it: a block the scan does not find is carved before any block of an
 * unpinned region is taken (which would pin that region for ever).
 *
 *  slab_stays_in_pinned_region  region a's chunks all taken for the run
 *                               heap (unpinned), region b mapped, a block
 *                               carved from b; one of a's chunks freed:
 *                               the next block comes from b's carve, a
 *                               stays unpinned.
 *
 * Deterministic: pinned to the first allowed CPU, no release pass, the
 * zone's functions called directly under its lock; pc_page_check() after.
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"

static struct pc_zone *zone;

static struct pc_page *take(unsigned order, bool kept)
{
	return zone_take(zone, order, kept);
}

static void give(struct pc_page *pg, unsigned order)
{
	zone_give(zone, pg, order);
}

TEST(slab_stays_in_pinned_region)
{
	REQUIRE(zone_grow(zone));
	struct pc_region *a = zone->regions;
	struct pc_page *w[PC_REGION_PAGES >> PC_MAX_ORDER];
	for (size_t i = 0; i < PC_REGION_PAGES >> PC_MAX_ORDER; i++)
		REQUIRE((w[i] = take(PC_MAX_ORDER, false)) != NULL); /* run chunks: a unpinned */
	REQUIRE(zone_grow(zone));
	struct pc_region *b = zone->regions;
	REQUIRE(a != b && !a->keep_mapped);
	struct pc_page *s1 = take(0, true); /* carved from b, which it pins */
	REQUIRE(s1 != NULL);
	CHECK(pc_page_region(s1) == b && b->keep_mapped);
	give(w[0], PC_MAX_ORDER); /* a chunk of a on the lists */
	struct pc_page *s2 = take(0, true);
	REQUIRE(s2 != NULL);
	CHECK(pc_page_region(s2) == b);
	CHECK(!a->keep_mapped);
	CHECK(pc_page_check());
	give(s2, 0);
	give(s1, 0);
	for (size_t i = 1; i < PC_REGION_PAGES >> PC_MAX_ORDER; i++)
		give(w[i], PC_MAX_ORDER);
	check_coalesced_locked(true);
}

int main(void)
{
	if (!(zone = page_test_start()))
		return 0;
	REQUIRE(zone->regions == NULL);
	RUN(slab_stays_in_pinned_region);
	return test_report();
}
