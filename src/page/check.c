/*
 * page/check.c - the invariant walker of the page allocator (see page.h for
 * the invariants). Slow: meant for tests and debug builds.
 *
 * Takes, zone by zone, every pcp lock and then the zone lock (the lock order
 * of page.h), so the zone is frozen while it is checked: it may run at any
 * time. Expensive-assert builds (PC_DEBUG >= 3) run it by themselves, through
 * pc_page_check_at, after pc_page_trim and in a fork child (slab/check.c
 * registers that: after every layer's postfork handler has made the locks
 * usable again), docs/reliability.md.
 */
#include "page.h"

/* One block of a free list: its zone, state, order, alignment, coalescing. */
static bool check_free_block(struct pc_zone *z, struct pc_page *pg, unsigned o, bool dirty_list)
{
	struct pc_region *r = pc_page_region(pg);
	size_t idx = (size_t)(pg - r->pages);
	PC_PAGE_CHECK(r->zone == z, "zone %u: block of another zone on its list", z->id);
	PC_PAGE_CHECK(pc_pg_state(pg) == PC_PG_BUDDY && pc_pg_order(pg) == o,
		      "zone %u: order-%u list holds page state %u order %u",
		      z->id, o, pc_pg_state(pg), pc_pg_order(pg));
	PC_PAGE_CHECK((pg->mem == PC_MEM_DIRTY) == dirty_list,
		      "zone %u: order-%u block with mem %u on the %s list", z->id, o, pg->mem,
		      dirty_list ? "dirty" : "clean");
	PC_PAGE_CHECK((idx & (((size_t)1 << o) - 1)) == 0,
		      "zone %u: misaligned order-%u block", z->id, o);
	if (o < PC_MAX_ORDER) {
		struct pc_page *b = &r->pages[idx ^ ((size_t)1 << o)];
		PC_PAGE_CHECK(!(pc_pg_state(b) == PC_PG_BUDDY && pc_pg_order(b) == o),
			      "zone %u: order-%u buddies both free (not coalesced)", z->id, o);
	}
	return true;
}

/* Free lists: shape, counts and complete coalescing. */
static bool check_free_areas(struct pc_zone *z, size_t *blocks)
{
	size_t free_pages = 0, dirty_pages = 0;
	for (unsigned o = 0; o <= PC_MAX_ORDER; o++) {
		size_t n = 0;
		for (int d = 0; d < 2; d++) {
			struct pc_list *it, *head = d ? &z->free_area[o].dirty : &z->free_area[o].clean;
			pc_list_for_each(it, head) {
				struct pc_page *pg = pc_list_entry(it, struct pc_page, list);
				if (!check_free_block(z, pg, o, d))
					return false;
				n++;
				free_pages += (size_t)1 << o;
				dirty_pages += d ? (size_t)1 << o : 0;
			}
		}
		PC_PAGE_CHECK(n == z->free_area[o].nr_free, "zone %u: order %u nr_free %zu, list %zu",
			      z->id, o, z->free_area[o].nr_free, n);
		*blocks += n;
	}
	PC_PAGE_CHECK(z->seed_pages % ((size_t)1 << PC_MAX_ORDER) == 0 &&
		      (z->seed_pages == 0 || z->seed_region != NULL),
		      "zone %u: seed_pages %zu", z->id, z->seed_pages);
	PC_PAGE_CHECK(zone_carve_check_locked(z), "zone %u: carve chunk %p, %zu pages carved", z->id,
		      (void *)z->carve, z->carve_next);
	size_t uncarved = z->carve ? ((size_t)1 << PC_MAX_ORDER) - z->carve_next : 0;
	PC_PAGE_CHECK(free_pages + z->seed_pages + uncarved == z->free_pages,
		      "zone %u: free_pages %zu, lists %zu, not seeded %zu, not carved %zu",
		      z->id, z->free_pages, free_pages, z->seed_pages, uncarved);
	PC_PAGE_CHECK(dirty_pages == z->dirty_pages, "zone %u: dirty_pages %zu, lists %zu",
		      z->id, z->dirty_pages, dirty_pages);
	return true;
}

/* Every region page by page: free and pcp blocks never overlap, and every
 * page marked free is a listed head (its count matches the lists). */
static bool check_regions(struct pc_zone *z, size_t listed_blocks, size_t pcp_blocks,
			  size_t listed_runs)
{
	size_t buddy_heads = 0, pcp_heads = 0, run_heads = 0, managed = 0, unkept = 0;
	for (struct pc_region *r = z->regions; r; r = r->next) {
		size_t covered = 0;
		managed += PC_REGION_PAGES;
		unkept += !r->keep_mapped;
		PC_PAGE_CHECK(pc_region_of(r->base) == r, "zone %u: region not in the table", z->id);
		/* The layout every lookup computes with (page.h, struct pc_region). */
		PC_PAGE_CHECK(r->base == (char *)(r + 1) && pc_page_region(&r->pages[0]) == r,
			      "zone %u: region %p not right above its metadata", z->id, (void *)r->base);
		for (size_t i = 0; i < PC_REGION_PAGES; i++) {
			struct pc_page *pg = &r->pages[i];
			unsigned st = pc_pg_state(pg);
			if (st == PC_PG_LENT) { /* in use, but nothing free inside it */
				PC_PAGE_CHECK(i >= covered && i + pg->aux <= PC_REGION_PAGES,
					      "zone %u: lent range at page %zu overlaps", z->id, i);
				covered = i + pg->aux;
				continue;
			}
			if (st != PC_PG_BUDDY && st != PC_PG_PCP && st != PC_PG_RUN)
				continue;
			PC_PAGE_CHECK(i >= covered, "zone %u: free blocks overlap at page %zu", z->id, i);
			/* pcp entries and free runs carry their length in aux */
			covered = i + (st == PC_PG_BUDDY ? (size_t)1 << pc_pg_order(pg) : (size_t)pg->aux);
			buddy_heads += st == PC_PG_BUDDY;
			pcp_heads += st == PC_PG_PCP;
			run_heads += st == PC_PG_RUN;
		}
	}
	for (struct pc_region *r = z->spare_regions; r; r = r->next)
		PC_PAGE_CHECK(pc_region_of(r->base) == NULL && r->base == (char *)(r + 1),
			      "zone %u: spare %p in the table", z->id, (void *)r->base);
	PC_PAGE_CHECK(buddy_heads == listed_blocks, "zone %u: %zu pages marked free, %zu listed",
		      z->id, buddy_heads, listed_blocks);
	PC_PAGE_CHECK(pcp_heads == pcp_blocks, "zone %u: %zu pages marked pcp, %zu on pcp lists",
		      z->id, pcp_heads, pcp_blocks);
	PC_PAGE_CHECK(run_heads == listed_runs, "zone %u: %zu pages marked free run, %zu on the bins",
		      z->id, run_heads, listed_runs);
	PC_PAGE_CHECK(managed == z->managed_pages, "zone %u: managed %zu, regions %zu",
		      z->id, z->managed_pages, managed);
	PC_PAGE_CHECK(unkept == z->unkept_regions, "zone %u: unkept_regions %zu, regions %zu",
		      z->id, z->unkept_regions, unkept);
	return true;
}

static bool check_pcp(struct pc_zone *z, struct pc_pcp *pcp, size_t *blocks)
{
	int pages = 0;
	for (unsigned o = 0; o <= PC_PCP_MAX_ORDER; o++) {
		struct pc_list *it;
		pc_list_for_each(it, &pcp->lists[o]) {
			struct pc_page *pg = pc_list_entry(it, struct pc_page, list);
			PC_PAGE_CHECK(pc_pg_state(pg) == PC_PG_PCP && pc_pg_order(pg) == o,
				      "zone %u: pcp order-%u list holds state %u order %u",
				      z->id, o, pc_pg_state(pg), pc_pg_order(pg));
			PC_PAGE_CHECK(pc_page_region(pg)->zone == z, "zone %u: pcp holds a foreign page", z->id);
			PC_PAGE_CHECK(pg->mem <= PC_MEM_DIRTY, "zone %u: pcp entry with mem %u", z->id, pg->mem);
			pages += 1 << o;
			(*blocks)++;
		}
	}
	for (unsigned n = 1; n <= PC_PCP_MAX_RUN; n++) {
		struct pc_list *it;
		pc_list_for_each(it, &pcp->runs[n]) {
			struct pc_page *pg = pc_list_entry(it, struct pc_page, list);
			PC_PAGE_CHECK(pc_pg_state(pg) == PC_PG_PCP && pg->aux == n && pc_pg_order(pg) == pc_log2(n),
				      "zone %u: pcp %u-page run list holds state %u length %u", z->id, n,
				      pc_pg_state(pg), pg->aux);
			PC_PAGE_CHECK(pc_page_region(pg)->zone == z, "zone %u: pcp holds a foreign run", z->id);
			PC_PAGE_CHECK(pg->mem <= PC_MEM_DIRTY, "zone %u: pcp run with mem %u", z->id, pg->mem);
			pages += (int)n;
			(*blocks)++;
		}
	}
	PC_PAGE_CHECK(pages == pcp->count, "zone %u: pcp count %d, lists %d", z->id, pcp->count, pages);
	/* In flight (pcp.c): both raised only under the pcp lock, which we
	 * hold; refill_pages falls before in_flight (release), so a 0 read
	 * with acquire means no refill is left to plan pages. */
	int in_flight = pc_load_acquire(&pcp->in_flight), planned = pc_load_relaxed(&pcp->refill_pages);
	PC_PAGE_CHECK(in_flight >= 0 && planned >= 0 && (in_flight > 0 || planned == 0),
		      "zone %u: pcp in flight %d, refill pages %d", z->id, in_flight, planned);
	for (unsigned i = 0; i < PC_PCP_MAX_ORDER + 1 + PC_PCP_MAX_RUN; i++) {
		struct pc_list *l = i <= PC_PCP_MAX_ORDER ? &pcp->lists[i] : &pcp->runs[i - PC_PCP_MAX_ORDER];
		bool used = (pcp->used[i >> 6] >> (i & 63)) & 1;
		PC_PAGE_CHECK(used == !pc_list_empty(l), "zone %u: pcp list %u %s but its used bit is %d",
			      z->id, i, pc_list_empty(l) ? "empty" : "not empty", used);
	}
	return true;
}

static bool check_zone(struct pc_zone *z)
{
	size_t listed = 0, pcp_blocks = 0, runs = 0;
	bool ok = true;
	/* A release pass's blocks (runs) are on release_held_blocks (runs),
	 * the blocks' pages counted in release_held, from their take to their
	 * free back, both in one in_flight window (release.c, run.c). */
	size_t held_pages = 0, held_nr = 0;
	struct pc_list *it;
	pc_list_for_each(it, &z->release_held_blocks) {
		struct pc_page *pg = pc_list_entry(it, struct pc_page, list);
		PC_PAGE_CHECK(pc_pg_state(pg) == PC_PG_NONE, "zone %u: held block with state %u", z->id,
			      pc_pg_state(pg));
		held_pages += (size_t)1 << pc_pg_order(pg);
		held_nr++;
	}
	pc_list_for_each(it, &z->release_held_runs) {
		/* what the grow wait's merge walk relies on (run.c, held_run_merged) */
		struct pc_page *pg = pc_list_entry(it, struct pc_page, list);
		size_t idx = (size_t)(pg - pc_page_region(pg)->pages);
		PC_PAGE_CHECK(pc_pg_state(pg) == PC_PG_NONE && pg->aux >= 1 &&
				      idx % PC_RUN_MAX_PAGES + pg->aux <= PC_RUN_MAX_PAGES,
			      "zone %u: held run with state %u, %u pages at chunk offset %zu", z->id,
			      pc_pg_state(pg), pg->aux, idx % PC_RUN_MAX_PAGES);
		held_nr++;
	}
	PC_PAGE_CHECK(held_pages == z->release_held, "zone %u: release_held %zu, held blocks %zu pages",
		      z->id, z->release_held, held_pages);
	PC_PAGE_CHECK(z->in_flight > 0 || held_nr == 0,
		      "zone %u: %zu pieces held by a release pass, none in flight", z->id, held_nr);
	for (unsigned c = 0; ok && c < os_cpu_count(); c++)
		ok = check_pcp(z, &z->pcp[c], &pcp_blocks);
	ok = ok && check_free_areas(z, &listed);
	ok = ok && zone_run_check_locked(z, &runs);
	ok = ok && check_regions(z, listed, pcp_blocks, runs);
	return ok;
}

#if PC_DEBUG >= 3
void pc_page_check_at(const char *where)
{
	if (!pc_page_check())
		pc_fatal("page allocator invariants broken %s (pc_page_check: see above)", where);
}
#endif

bool pc_page_check(void)
{
	bool ok = true;
	for (unsigned i = 0; ok && i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		pc_lock_nesting_begin(); /* every pcp lock of z, in CPU order (lock.h) */
		for (unsigned c = 0; c < os_cpu_count(); c++)
			pc_spin_stat_lock(&z->pcp[c].lock);
		pc_lock_acquire(&z->lock);
		ok = check_zone(z);
		pc_lock_release(&z->lock);
		for (unsigned c = 0; c < os_cpu_count(); c++)
			pc_spin_stat_unlock(&z->pcp[c].lock);
		pc_lock_nesting_end();
	}
	return ok;
}
