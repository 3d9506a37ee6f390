/*
 * page/page_alloc.c - the entry points of the page allocator: choosing a
 * zone, the per-CPU fast path, fallback to other zones and nodes, growth,
 * running out of memory, trimming and fork.
 *
 * Fast path (orders <= PC_PCP_MAX_ORDER): try-lock the current CPU's pcp of
 * the preferred zone and take a block from it. If the pcp lock is busy the
 * caller never waits for it: it goes to the zone under the zone lock.
 * Slow path: other zones with free memory (same node first), then a new
 * region for the preferred zone, then, before giving up, every pcp drained.
 */
#include "page.h"

#include <errno.h>

struct pc_region *_Atomic pc_region_table[(size_t)1 << PC_REGION_TABLE_BITS];

/* One block from zone z: through the pcp of `cpu` when the order allows and
 * the pcp is free, else from the buddy lists. NULL if z has none. */
static struct pc_page *zone_take(struct pc_zone *z, unsigned cpu, unsigned order)
{
	if (order <= PC_PCP_MAX_ORDER) {
		struct pc_pcp *pcp = &z->pcp[cpu];
		if (pc_likely(pc_spin_trylock(&pcp->lock))) {
			uint64_t refills = pcp->refills;
			struct pc_page *pg = pcp_alloc(z, pcp, order);
			bool refilled = pcp->refills != refills;
			pc_spin_unlock(&pcp->lock);
			if (pg && page_stats_on())
				pc_add_relaxed(&z->stats.pcp_hits, 1);
			if (pc_unlikely(refilled)) /* a slow path: time for a release pass? */
				zone_maybe_release(z);
			return pg;
		}
		if (page_stats_on())
			pc_add_relaxed(&z->stats.pcp_busy, 1);
	}
	return zone_alloc(z, order);
}

/*
 * A block from a zone other than `skip` that looks like it has free memory
 * (racy hint: a stale value costs one lock round trip at most): from zones of
 * `node` only, or from other nodes only; and only from zones with at least
 * `min_free` free pages.
 */
static struct pc_page *take_elsewhere(struct pc_zone *skip, unsigned node, bool same_node,
				      size_t min_free, unsigned cpu, unsigned order)
{
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		if (z == skip || (z->node == node) != same_node)
			continue;
		if (pc_load_relaxed(&z->free_hint) < PC_MAX(min_free, (size_t)1 << order))
			continue;
		struct pc_page *pg = zone_take(z, cpu, order);
		if (pg) {
			if (page_stats_on())
				pc_add_relaxed(&z->stats.fallbacks, 1);
			return pg;
		}
	}
	return NULL;
}

/* Last resort before failing: drain every pcp, then try every zone. */
static struct pc_page *take_after_drain(unsigned order)
{
	pc_page_drain_all();
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_page *pg = zone_alloc(pc_zone_get(i), order);
		if (pg)
			return pg;
	}
	return NULL;
}

/*
 * The preferred zone had no block. Order of preference:
 *  1. a sibling instance of the same node with plenty free (a quarter of a
 *     region): reuse its memory rather than map more, but do not drain a
 *     sibling dry, which would put this CPU on the sibling's lock for good;
 *  2. grow the preferred zone (a new region, bound to its node);
 *  3. when the OS refuses: any zone of the node, then of other nodes, then
 *     every pcp drained.
 */
static PC_NOINLINE struct pc_page *alloc_slow(struct pc_zone *pref, unsigned cpu, unsigned order)
{
	struct pc_page *pg;
	for (int attempt = 0; attempt < 4; attempt++) {
		pg = take_elsewhere(pref, pref->node, true, PC_REGION_PAGES / 4, cpu, order);
		if (pg)
			return pg;
		if (!zone_grow(pref))
			break;
		pg = zone_take(pref, cpu, order);
		if (pg)
			return pg;
	}
	pg = take_elsewhere(pref, pref->node, true, 0, cpu, order);
	if (!pg)
		pg = take_elsewhere(pref, pref->node, false, 0, cpu, order);
	return pg ? pg : take_after_drain(order);
}

static void *alloc_on(struct pc_zone *z, unsigned cpu, unsigned order)
{
	if (page_stats_on())
		pc_add_relaxed(&z->stats.alloc_calls, 1);
	struct pc_page *pg = zone_take(z, cpu, order);
	if (pc_unlikely(!pg))
		pg = alloc_slow(z, cpu, order);
	if (pc_unlikely(!pg)) {
		errno = ENOMEM;
		return NULL;
	}
	pc_assert_internal(pc_pg_state(pg) == PC_PG_ALLOC && pc_pg_order(pg) == order);
	return pc_page_address(pg);
}

void *pc_alloc_pages(unsigned order)
{
	if (pc_unlikely(order > PC_MAX_ORDER || !pc_page_try_init())) {
		errno = ENOMEM;
		return NULL;
	}
	unsigned cpu = os_cpu_current();
	return alloc_on(pc_zone_preferred(cpu), cpu, order);
}

void *pc_alloc_pages_node(unsigned order, unsigned node)
{
	if (pc_unlikely(order > PC_MAX_ORDER || !pc_page_try_init())) {
		errno = ENOMEM;
		return NULL;
	}
	unsigned cpu = os_cpu_current();
	struct pc_zone *z = pc_zone_preferred(cpu);
	if (node != z->node && node < pc_node_count()) {
		struct pc_node *n = pc_node_get(node);
		z = &n->zones[cpu % n->nr_zones];
	}
	return alloc_on(z, cpu, order);
}

/*
 * True if pg lies in a free block (on a buddy list or a pcp list): then this
 * free is a double free. A free block of order o containing pg starts at
 * pg's index rounded down to 2^o, so look at those at most 11 heads. An
 * allocated page is in no free block, and whoever frees it synchronised with
 * its allocation, so the relaxed state reads cannot see a stale free head.
 */
static bool inside_free_block(struct pc_page *pg)
{
	struct pc_region *r = pc_page_region(pg);
	size_t idx = (size_t)(pg - r->pages);
	for (unsigned o = 0; o <= PC_MAX_ORDER; o++) {
		struct pc_page *head = &r->pages[idx & ~(((size_t)1 << o) - 1)];
		unsigned st = pc_pg_state_acquire(head); /* then the order: see pc_pg_set_state */
		if ((st == PC_PG_BUDDY || st == PC_PG_PCP) && pc_pg_order(head) >= o)
			return true;
	}
	return false;
}

static PC_COLD void bad_free(const void *p, unsigned order, const char *why)
{
	pc_fatal("pc_free_pages(%p, order %u): %s", p, order, why);
}

void pc_free_pages(void *p, unsigned order)
{
	struct pc_page *pg = pc_page_of(p);
	if (pc_unlikely(!pg || order > PC_MAX_ORDER ||
			((uintptr_t)p & ((PC_PAGE_SIZE << order) - 1))))
		bad_free(p, order, "not a block of the page allocator");
	if (pc_unlikely(inside_free_block(pg)))
		bad_free(p, order, "double free");
	struct pc_zone *z = pc_page_region(pg)->zone;
	if (page_stats_on())
		pc_add_relaxed(&z->stats.free_calls, 1);
	pc_pg_set_state(pg, PC_PG_NONE);
	if (order <= PC_PCP_MAX_ORDER) {
		struct pc_pcp *pcp = &z->pcp[os_cpu_current()];
		if (pc_likely(pc_spin_trylock(&pcp->lock))) {
			bool drained = pcp_free(z, pcp, pg, order);
			pc_spin_unlock(&pcp->lock);
			if (page_stats_on())
				pc_add_relaxed(&z->stats.pcp_frees, 1);
			if (drained)
				zone_maybe_release(z);
			return;
		}
		if (page_stats_on())
			pc_add_relaxed(&z->stats.pcp_busy, 1);
	}
	zone_free(z, pg, order);
}

void pc_page_drain_all(void)
{
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		for (unsigned c = 0; c < os_cpu_count(); c++) {
			struct pc_pcp *pcp = &z->pcp[c];
			pc_spin_lock(&pcp->lock);
			if (pcp->count > 0)
				pcp_drain_locked(z, pcp, pcp->count);
			pc_spin_unlock(&pcp->lock);
		}
	}
}

size_t pc_page_trim(void)
{
	size_t released = 0;
	if (!pc_page_try_init())
		return 0;
	pc_page_drain_all();
	for (unsigned i = 0; i < pc_zone_count(); i++)
		released += zone_release(pc_zone_get(i), 0);
	return released;
}

/* fork: grow locks, then pcp locks, then zone locks, zone by zone (the lock
 * order of page.h); released in reverse in the parent. */
void pc_page_prefork(void)
{
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		pc_mutex_lock(&z->grow_lock);
		for (unsigned c = 0; c < os_cpu_count(); c++)
			pc_spin_lock(&z->pcp[c].lock);
		pc_lock_acquire_for_fork(&z->lock);
	}
}

void pc_page_postfork_parent(void)
{
	for (unsigned i = pc_zone_count(); i-- > 0;) {
		struct pc_zone *z = pc_zone_get(i);
		pc_lock_release(&z->lock);
		for (unsigned c = os_cpu_count(); c-- > 0;)
			pc_spin_unlock(&z->pcp[c].lock);
		pc_mutex_unlock(&z->grow_lock);
	}
}

void pc_page_postfork_child(void)
{
	zone_release_fork_child();
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		pc_lock_reinit(&z->lock);
		for (unsigned c = 0; c < os_cpu_count(); c++)
			pc_spin_init(&z->pcp[c].lock);
		pc_mutex_init(&z->grow_lock);
	}
}
