/*
 * page/buddy.c - the buddy free lists of a zone, growing a zone by mapping a
 * region, and returning free memory to the OS.
 *
 * Owns the free areas and counters of every zone (under zone->lock) and the
 * region list (appended under zone->lock, with zone->grow_lock serialising
 * the mapping). See page.h for the invariants.
 */
#include "page.h"

#include <errno.h>

bool page_stats_on(void)
{
	return pc_unlikely(pc_option(PC_OPT_STATS_ENABLE) != 0);
}

/* Copy the counters where lock-free readers may look (relaxed: hints only). */
void zone_publish_hints_locked(struct pc_zone *z)
{
	pc_store_relaxed(&z->free_hint, z->free_pages);
	pc_store_relaxed(&z->dirty_hint, z->dirty_pages);
}

static void free_area_add(struct pc_zone *z, struct pc_page *pg, unsigned order, enum pc_mem mem)
{
	bool dirty = mem == PC_MEM_DIRTY;
	struct pc_free_area *fa = &z->free_area[order];
	pc_pg_set_order(pg, order); /* before the state: see pc_pg_set_state */
	pc_pg_set_state(pg, PC_PG_BUDDY);
	pg->mem = (uint8_t)mem;
	/* Dirty blocks first: allocation takes from the head and so reuses
	 * resident memory before memory that would fault in again. */
	if (dirty)
		pc_list_add(&pg->list, &fa->list);
	else
		pc_list_add_tail(&pg->list, &fa->list);
	fa->nr_free++;
	z->free_pages += (size_t)1 << order;
	if (dirty)
		z->dirty_pages += (size_t)1 << order;
}

static void free_area_del(struct pc_zone *z, struct pc_page *pg, unsigned order)
{
	pc_list_del(&pg->list);
	z->free_area[order].nr_free--;
	z->free_pages -= (size_t)1 << order;
	if (pg->mem == PC_MEM_DIRTY)
		z->dirty_pages -= (size_t)1 << order;
	pc_pg_set_state(pg, PC_PG_NONE);
}

/*
 * Free a block and merge it with its buddies. The buddy of the block of
 * 2^order pages at page index i is the block at i ^ 2^order: the two halves
 * of the aligned block of twice the size. While the buddy heads a free block
 * of the same order, take it off its list and go one order up with the
 * merged block, which starts at the lower index (i & buddy). Regions are
 * aligned to far more than the largest block, so a buddy is always in the
 * same region and therefore the same zone. The merged block is dirty if
 * either half was (dirty means "may be resident": an over-estimate is safe),
 * else released if either half was.
 */
void zone_free_block_locked(struct pc_zone *z, struct pc_page *pg, unsigned order, enum pc_mem mem)
{
	struct pc_region *r = pc_page_region(pg);
	size_t idx = (size_t)(pg - r->pages);

	pc_lock_assert_held(&z->lock);
	while (order < PC_MAX_ORDER) {
		size_t buddy_idx = idx ^ ((size_t)1 << order);
		struct pc_page *buddy = &r->pages[buddy_idx];
		if (pc_pg_state(buddy) != PC_PG_BUDDY || pc_pg_order(buddy) != order)
			break;
		mem = PC_MAX(mem, (enum pc_mem)buddy->mem);
		free_area_del(z, buddy, order);
		idx &= buddy_idx;
		order++;
	}
	free_area_add(z, &r->pages[idx], order, mem);
}

/* Smallest order >= `order` whose list starts with a dirty block (dirty
 * blocks sit at the heads), else the smallest with any block; or > MAX. */
static unsigned pick_order(struct pc_zone *z, unsigned order)
{
	unsigned first = PC_MAX_ORDER + 1;
	for (unsigned o = order; o <= PC_MAX_ORDER; o++) {
		if (z->free_area[o].nr_free == 0)
			continue;
		if (pc_list_first(&z->free_area[o].list, struct pc_page, list)->mem == PC_MEM_DIRTY)
			return o;
		if (first > PC_MAX_ORDER)
			first = o;
	}
	return first;
}

/*
 * Take a block of 2^order pages, split down from a larger one if need be,
 * the upper halves going back on their free lists. Resident (dirty) memory
 * is preferred even when it means splitting a larger block: reusing it costs
 * no page faults, while taking clean blocks would let dirty ones pile up
 * until they are released and faulted in again.
 * Returns the head with state PC_PG_NONE (the caller sets it), or NULL.
 */
struct pc_page *zone_alloc_block_locked(struct pc_zone *z, unsigned order)
{
	pc_lock_assert_held(&z->lock);
	unsigned o = pick_order(z, order);
	if (o > PC_MAX_ORDER)
		return NULL;
	struct pc_page *pg = pc_list_first(&z->free_area[o].list, struct pc_page, list);
	enum pc_mem mem = (enum pc_mem)pg->mem;
	free_area_del(z, pg, o);
	while (o > order) {
		o--;
		free_area_add(z, pg + ((size_t)1 << o), o, mem);
	}
	pc_pg_set_order(pg, order);
	pg->mem = (uint8_t)mem;
	if (mem == PC_MEM_RELEASED) /* memory we gave back, faulting in again */
		pc_add_relaxed(&z->refaulted, (size_t)1 << order);
	return pg;
}

/* Lock, take one block, unlock. NULL if the zone has none of the order. */
struct pc_page *zone_alloc(struct pc_zone *z, unsigned order)
{
	pc_lock_acquire(&z->lock);
	struct pc_page *pg = zone_alloc_block_locked(z, order);
	if (pg)
		pc_pg_set_state(pg, PC_PG_ALLOC);
	zone_publish_hints_locked(z);
	pc_lock_release(&z->lock);
	return pg;
}

void zone_free(struct pc_zone *z, struct pc_page *pg, unsigned order)
{
	pc_lock_acquire(&z->lock);
	zone_free_block_locked(z, pg, order, PC_MEM_DIRTY);
	zone_publish_hints_locked(z);
	pc_lock_release(&z->lock);
	zone_maybe_release(z);
}

/* Map the two parts of a region: the span itself and its descriptors. */
static struct pc_region *region_map(struct pc_zone *z)
{
	char *base = os_map(PC_REGION_SIZE, PC_REGION_SIZE);
	if (!base)
		return NULL;
	size_t meta_size = pc_align_up(sizeof(struct pc_region), PC_PAGE_SIZE);
	struct pc_region *r = os_map(meta_size, PC_REGION_META_ALIGN);
	if (!r) {
		os_unmap(base, PC_REGION_SIZE);
		return NULL;
	}
	if (page_numa_bind())
		(void)os_bind_node(base, PC_REGION_SIZE, z->node); /* a hint: failure is harmless */
	r->base = base;
	r->zone = z;
	return r;
}

/*
 * Give the zone a new region. Only one thread maps at a time; one that waited
 * for the grow lock returns at once if another thread grew the zone meanwhile.
 * Returns false when the OS refused memory.
 */
bool zone_grow(struct pc_zone *z)
{
	/* regions_mapped counts every growth (always, not only with stats on) and
	 * doubles as a generation number for this check. */
	uint64_t generation = pc_load_relaxed(&z->stats.regions_mapped);
	pc_mutex_lock(&z->grow_lock);
	if (pc_load_relaxed(&z->stats.regions_mapped) != generation) {
		pc_mutex_unlock(&z->grow_lock);
		return true;
	}
	struct pc_region *r = region_map(z);
	if (!r) {
		pc_add_relaxed(&z->stats.map_failures, 1);
		pc_mutex_unlock(&z->grow_lock);
		return false;
	}
	/* Release: a reader of the table sees base and zone initialised. */
	pc_store_release(&pc_region_table[(uintptr_t)r->base >> PC_REGION_SHIFT], r);
	pc_lock_acquire(&z->lock);
	r->next = z->regions;
	z->regions = r;
	z->managed_pages += PC_REGION_PAGES;
	for (size_t i = 0; i < PC_REGION_PAGES; i += (size_t)1 << PC_MAX_ORDER)
		free_area_add(z, &r->pages[i], PC_MAX_ORDER, PC_MEM_FRESH);
	zone_publish_hints_locked(z);
	pc_lock_release(&z->lock);
	pc_add_relaxed(&z->stats.regions_mapped, 1);
	pc_mutex_unlock(&z->grow_lock);
	return true;
}

/* The first dirty free block, largest order first, or NULL. */
static struct pc_page *first_dirty_block(struct pc_zone *z, unsigned *order)
{
	for (int o = PC_MAX_ORDER; o >= 0; o--) {
		struct pc_list *l = &z->free_area[o].list;
		if (pc_list_empty(l))
			continue;
		struct pc_page *pg = pc_list_first(l, struct pc_page, list);
		if (pg->mem == PC_MEM_DIRTY) { /* dirty blocks sit at the head */
			*order = (unsigned)o;
			return pg;
		}
	}
	return NULL;
}

/*
 * Return free memory to the OS until at most keep_pages of the zone's free
 * pages may be resident. A block is taken off the free lists, released with
 * the zone lock dropped (madvise is slow; others keep allocating), and freed
 * back clean. Returns the bytes released.
 */
size_t zone_release(struct pc_zone *z, size_t keep_pages)
{
	size_t released = 0;
	int saved = errno; /* free() never changes errno; madvise may fail (mlock) */
	for (;;) {
		unsigned order = 0;
		pc_lock_acquire(&z->lock);
		struct pc_page *pg = z->dirty_pages > keep_pages ? first_dirty_block(z, &order) : NULL;
		if (pg)
			free_area_del(z, pg, order);
		pc_lock_release(&z->lock);
		if (!pg)
			break;
		size_t bytes = PC_PAGE_SIZE << order;
		bool ok = os_release(pc_page_address(pg), bytes) == 0;
		pc_lock_acquire(&z->lock);
		zone_free_block_locked(z, pg, order, ok ? PC_MEM_RELEASED : PC_MEM_DIRTY);
		zone_publish_hints_locked(z);
		pc_lock_release(&z->lock);
		if (!ok)
			break;
		released += bytes;
		pc_add_relaxed(&z->stats.released_pages, bytes >> PC_PAGE_SHIFT);
		pc_add_relaxed(&z->stats.release_calls, 1);
	}
	errno = saved;
	return released;
}

static _Atomic uint32_t releasing; /* one releaser process-wide is plenty */

/* In a fork child: a releaser of the parent does not exist there. */
void zone_release_fork_child(void)
{
	pc_store_relaxed(&releasing, 0);
}

/*
 * Called after frees into the zone: decide whether dirty free memory goes
 * back to the OS. "Dirty" over-counts (a freed block counts as resident even
 * where it was never touched), and releasing memory the program is about to
 * reuse only buys page faults, so the zone keeps up to `retain` dirty pages:
 *   - above retain (at first 4 * vm.release_watermark_kb) it releases at
 *     once, down to half the watermark: a program that frees most of its
 *     memory sees its RSS fall;
 *   - if half of what the last release gave back was handed out again within
 *     2 s, the zone is thrashing: retain doubles (up to 4 GiB) instead;
 *   - 10 s without thrashing halve it again, and dirty memory above the
 *     watermark is then released at most once a second (idle memory decays).
 * One thread releases at a time; the others go on. Every field here is a
 * relaxed heuristic: a stale read only shifts a decision by one call.
 */
void zone_maybe_release(struct pc_zone *z)
{
	size_t mark = (size_t)pc_option(PC_OPT_VM_RELEASE_WATERMARK_KB) >> 2; /* KiB -> pages */
	size_t dirty = pc_load_relaxed(&z->dirty_hint);
	if (pc_likely(dirty <= mark))
		return;
	uint64_t now = os_now_ns();
	uint64_t since = now - pc_load_relaxed(&z->last_release_ns);
	size_t base = 4 * PC_MAX(mark, (size_t)1);
	size_t retain = PC_MAX(pc_load_relaxed(&z->retain_pages), base);
	size_t last = pc_load_relaxed(&z->last_released);
	if (last && since < 2000000000u && pc_load_relaxed(&z->refaulted) >= last / 2) {
		retain = PC_MIN(2 * retain, (size_t)1 << 20);
		pc_store_relaxed(&z->thrash_ns, now);
		pc_store_relaxed(&z->last_released, 0);
	} else if (now - pc_load_relaxed(&z->thrash_ns) > 10000000000u && retain > base) {
		retain /= 2;
		pc_store_relaxed(&z->thrash_ns, now);
	}
	pc_store_relaxed(&z->retain_pages, retain);
	bool idle = now - pc_load_relaxed(&z->thrash_ns) > 10000000000u && since >= 1000000000u;
	if (dirty <= retain && !idle)
		return;
	/* Acquire/release: the flag orders nothing but itself (zone_release
	 * takes the zone lock); the orders just make the hand-over explicit. */
	if (pc_xchg_acquire(&releasing, 1))
		return;
	pc_store_relaxed(&z->last_release_ns, now);
	pc_store_relaxed(&z->refaulted, 0);
	size_t released = zone_release(z, mark / 2) >> PC_PAGE_SHIFT;
	pc_store_relaxed(&z->last_released, released);
	pc_store_release(&releasing, 0);
}
