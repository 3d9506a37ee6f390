/*
 * tests/unit/slab/order_fallback.c - a slab of the smallest order when the
 * page allocator has no block of the cache's order (slab_alloc.c, slab_new;
 * SLUB's oo_min). Runs with rseq and on the fallback (slab/..._norseq).
 *
 * The situation is forced, not waited for: with the OS refusing every new
 * mapping (os_inject_map_failures), the test takes every free page of every
 * zone, then gives back one page of each aligned group of four, so that
 * plenty of memory is free but no block above order 0 is.
 *  - A cache whose slabs are order 2 (slub.min_objects 64 of 256 B) still
 *    allocates: each object's page heads a one-page slab of 16 objects; the
 *    objects can be written and freed, and pc_cache_check is exact.
 *  - Nothing is left: after the objects and the pages are freed and the
 *    injection cleared, every zone coalesces whole again.
 * Without the fallback, pc_cache_alloc returned NULL here.
 */
#define _GNU_SOURCE
#include "slab/slab.h"
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"
#include "pcmalloc.h"

#include <errno.h>
#include <limits.h>

#define OBJ 256

static int by_address(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(char *const *)a, y = (uintptr_t)*(char *const *)b;
	return (x > y) - (x < y);
}

TEST(order0_when_fragmented)
{
	REQUIRE(pcmalloc_ctl_set("slub.min_objects", 64) == 0);
	struct pc_cache *s = pc_cache_create("order-fallback", OBJ, 0, NULL);
	REQUIRE(s != NULL);
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	REQUIRE(info.order >= 2); /* 64 objects of 256 B: 16 KiB */
	unsigned per_page = (unsigned)(PC_PAGE_SIZE / info.size);

	/* Every free page, with the OS refusing more (a first block makes the
	 * page layer start and map its first region). */
	pc_free_pages(pc_alloc_pages(0), 0);
	pc_page_drain_all();
	size_t expect = free_total();
	REQUIRE(expect > 0);
	char **pg = malloc(expect * sizeof(*pg));
	REQUIRE(pg != NULL);
	os_inject_map_failures(0, UINT_MAX);
	size_t n = 0;
	for (char *p; n < expect && (p = pc_alloc_pages(0)) != NULL;)
		pg[n++] = p;
	REQUIRE(n == expect);
	REQUIRE(pc_alloc_pages(0) == NULL);

	/* One page of each aligned group of four back: free, but no order 1. */
	qsort(pg, n, sizeof(*pg), by_address);
	size_t kept = 0, given = 0;
	for (size_t i = 0; i < n; i++) {
		if (((uintptr_t)pg[i] / PC_PAGE_SIZE) % 4 == 0) {
			pc_free_pages(pg[i], 0);
			given++;
		} else {
			pg[kept++] = pg[i];
		}
	}
	REQUIRE(given >= 64);
	pc_page_drain_all();
	CHECK(pc_alloc_pages(1) == NULL);
	CHECK(pc_alloc_pages(2) == NULL);

	/* The cache still allocates: a one-page slab of per_page objects. */
	void *obj[64];
	unsigned got = 0;
	for (; got < per_page; got++) {
		obj[got] = pc_cache_alloc(s);
		if (!obj[got])
			break;
		memset(obj[got], 0x5a, OBJ);
	}
	CHECK_EQ(got, per_page);
	size_t order0 = 0; /* objects whose own page heads a one-page slab */
	for (unsigned i = 0; i < got; i++) {
		struct pc_page *head = pc_page_of(obj[i]);
		order0 += head && pc_pg_state(head) == PC_PG_SLAB && pc_pg_order(head) == 0 &&
			  head->slot_objects == per_page;
	}
	CHECK_EQ(order0, got);
	pc_cache_info(s, &info);
	CHECK_EQ(info.order, 2); /* the cache's order is unchanged for later slabs */

	/* Memory back (the walker needs some), then the cache is exact. */
	for (size_t i = 0; i < kept; i++)
		pc_free_pages(pg[i], 0);
	free(pg);
	os_inject_map_failures(0, 0);
	CHECK_EQ(pc_cache_check(s), got);
	for (unsigned i = 0; i < got; i++)
		pc_cache_free(s, obj[i]);
	CHECK_EQ(pc_cache_check(s), 0);
	pc_cache_shrink(s);
	pc_cache_destroy(s);

	/* Nothing left behind once every cache (the sheaf caches that held this
	 * cache's sheaves included) gives back its empty slabs. */
	pc_slab_reclaim();
	pc_page_drain_all();
	check_coalesced(true);
}

int main(void)
{
	RUN(order0_when_fragmented);
	return test_report();
}
