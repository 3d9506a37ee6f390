/*
 * page/buddy.c - the buddy free lists of a zone and growing a zone by
 * mapping a region (release.c returns free memory to the OS).
 *
 * Owns the free areas and counters of every zone (under zone->lock), the
 * chunks not yet seeded and the carve chunk (zone->seed_region, seed_pages,
 * carve, carve_next: under zone->lock; small blocks are carved from a fresh
 * chunk rather than split from it, "carving" below) and the region list
 * (appended under zone->lock, with zone->grow_lock serialising the
 * mapping). See page.h for the invariants.
 */
#include "page.h"

#include <errno.h>
#include <string.h>

bool page_stats_on(void)
{
	return pc_unlikely(pc_option(PC_OPT_STATS_ENABLE) != 0);
}

/* Copy the counters where lock-free readers may look (relaxed: hints only),
 * without the peak of use (a pcp refill, whose batch may come straight
 * back: pcp.c). */
void zone_publish_counts_locked(struct pc_zone *z)
{
	pc_lock_assert_held(&z->lock);
	pc_store_relaxed(&z->free_hint, z->free_pages);
	pc_store_relaxed(&z->dirty_hint, z->dirty_pages);
	pc_store_relaxed(&z->managed_hint, z->managed_pages);
	pc_store_relaxed(&z->run_dirty_hint, z->run_dirty_pages);
	pc_store_relaxed(&z->all_free_hint, z->free_pages + z->run_free_pages);
}

/* The counters, and the peak of use of the current window (release.c). */
void zone_publish_hints_locked(struct pc_zone *z)
{
	zone_publish_counts_locked(z);
	size_t used = zone_used_locked(z);
	if (pc_unlikely(used > z->peak_used[0])) { /* a new peak of this window */
		z->peak_used[0] = used;
		pc_store_relaxed(&z->peak_hint, PC_MAX(used, z->peak_used[1]));
	}
}

static void free_area_add(struct pc_zone *z, struct pc_page *pg, unsigned order,
			  enum pc_mem mem, uint64_t freed_ns)
{
	bool dirty = mem == PC_MEM_DIRTY;
	struct pc_free_area *fa = &z->free_area[order];
	pc_pg_set_order(pg, order); /* before the state: see pc_pg_set_state */
	pc_pg_set_state(pg, PC_PG_BUDDY);
	pg->mem = (uint8_t)mem;
	pg->freed_ns = freed_ns;
	/* The newest dirty block at the head: allocation takes from the head
	 * (the warmest memory), release from the tail (the oldest). */
	pc_list_add(&pg->list, dirty ? &fa->dirty : &fa->clean);
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

/* Take one free block (the head of a free block of `order`) off its list:
 * for lending (lend.c). */
void zone_take_block_locked(struct pc_zone *z, struct pc_page *pg, unsigned order)
{
	pc_lock_assert_held(&z->lock);
	free_area_del(z, pg, order);
}

#define CHUNK_PAGES ((size_t)1 << PC_MAX_ORDER)

static bool carve_all_free(const struct pc_zone *z);
static PC_COLD void carve_end_locked(struct pc_zone *z);

/*
 * Free a block and merge it with its buddies. The buddy of the block of
 * 2^order pages at page index i is the block at i ^ 2^order: the two halves
 * of the aligned block of twice the size. While the buddy heads a free block
 * of the same order, take it off its list and go one order up with the
 * merged block, which starts at the lower index (i & buddy). Regions are
 * aligned to far more than the largest block, so a buddy is always in the
 * same region and therefore the same zone. The merged block is dirty if
 * either half was (dirty means "may be resident": an over-estimate is safe),
 * else released if either half was; a dirty merged block counts as freed
 * when its newer dirty half was, so that no page is released before it has
 * stayed free for the whole delay.
 * A block freed dirty is stamped with freed_ns, the page-clock time it was
 * freed (ignored unless mem is DIRTY): callers that free a batch read the
 * clock once; zone_free_block_locked reads it for one block.
 */
void zone_free_block_at_locked(struct pc_zone *z, struct pc_page *pg, unsigned order, enum pc_mem mem,
			       uint64_t freed_ns)
{
	pc_lock_assert_held(&z->lock);
	struct pc_region *r = pc_page_region(pg);
	size_t idx = (size_t)(pg - r->pages);
	if (mem != PC_MEM_DIRTY)
		freed_ns = 0;

	while (order < PC_MAX_ORDER) {
		size_t buddy_idx = idx ^ ((size_t)1 << order);
		struct pc_page *buddy = &r->pages[buddy_idx];
		if (pc_pg_state(buddy) != PC_PG_BUDDY || pc_pg_order(buddy) != order)
			break;
		if (buddy->mem == PC_MEM_DIRTY)
			freed_ns = mem == PC_MEM_DIRTY ? PC_MAX(freed_ns, buddy->freed_ns) : buddy->freed_ns;
		mem = PC_MAX(mem, (enum pc_mem)buddy->mem);
		free_area_del(z, buddy, order);
		idx &= buddy_idx;
		order++;
	}
	free_area_add(z, &r->pages[idx], order, mem, freed_ns);
	if (pc_unlikely(z->carve == &r->pages[idx & ~(CHUNK_PAGES - 1)]) && carve_all_free(z))
		carve_end_locked(z); /* carving (below): the chunk may be whole again */
}

void zone_free_block_locked(struct pc_zone *z, struct pc_page *pg, unsigned order, enum pc_mem mem)
{
	zone_free_block_at_locked(z, pg, order, mem, mem == PC_MEM_DIRTY ? pc_page_clock_ns() : 0);
}

/*
 * Seeding: a new region's chunks (blocks of PC_MAX_ORDER) go on the free
 * lists one at a time, when nothing on the lists can serve a request, not
 * all at once when it is mapped: putting a block on a list writes its head
 * descriptor, and the 16 heads of a region lie on 16 different pages of its
 * descriptor mapping, 64 KiB of RSS for a program that uses one chunk. The
 * chunks not yet seeded, [seed_next, PC_REGION_PAGES) of seed_region, are
 * FRESH and counted in free_pages (seed_pages of them).
 */
static bool zone_seed_one_locked(struct pc_zone *z)
{
	if (z->seed_pages == 0)
		return false;
	struct pc_region *r = z->seed_region;
	size_t idx = PC_REGION_PAGES - z->seed_pages;
	z->seed_pages -= (size_t)1 << PC_MAX_ORDER;
	z->free_pages -= (size_t)1 << PC_MAX_ORDER; /* free_area_add counts it again */
	free_area_add(z, &r->pages[idx], PC_MAX_ORDER, PC_MEM_FRESH, 0);
	return true;
}

/*
 * Carving: a block of an order below PC_MAX_ORDER for pc_alloc_pages that
 * nothing on the lists serves is cut from the start of a chunk not yet
 * seeded, one aligned block after the other, instead of putting the chunk
 * on the lists and splitting it. A split writes the head descriptor of
 * every half it frees: pages 512, 256, 128 and 64 of the chunk, four
 * descriptor pages (64 descriptors a page) for a program whose slabs fit
 * in the chunk's first 256 KiB (docs/footprint.md). Carving writes the
 * descriptors of the blocks it hands out and of the pieces that its
 * alignment skips (those go on the lists), next to each other.
 *
 * The carve chunk (zone->carve) has its first carve_next pages carved:
 * handed out, or free on the lists or per-CPU lists like any block. The
 * rest is FRESH, counted in free_pages, on no list, with no head, so a
 * carved block merges with its free neighbours only up to carve_next. The
 * carve ends, its rest going on the lists as aligned FRESH blocks that
 * merge with what is free before them, when no aligned block of the order
 * asked fits in it any more, when everything carved from it is free again
 * (then it is a whole free chunk again, as a split chunk would be), when a
 * new region is mapped and when lending looks for free ranges
 * (zone_seed_all_locked). Only pc_alloc_pages carves (kept: the region is
 * keep_mapped and never unmapped), so unmapping never meets a carve.
 */

/* [from, to) of the chunk at page idx of r, carve pages not yet carved, on
 * the lists as aligned FRESH blocks, each merged with its free buddies. */
PC_INLINE void carve_release_range(struct pc_zone *z, struct pc_region *r, size_t idx,
				   size_t from, size_t to)
{
	while (from < to) {
		unsigned o = (unsigned)__builtin_ctzl(from | CHUNK_PAGES);
		while (from + ((size_t)1 << o) > to)
			o--;
		z->free_pages -= (size_t)1 << o; /* zone_free_block_at_locked counts it again */
		zone_free_block_at_locked(z, &r->pages[idx + from], o, PC_MEM_FRESH, 0);
		from += (size_t)1 << o;
	}
}

/* Whether every page carved from the carve chunk is free on the lists:
 * coalescing is complete and nothing merges past carve_next, so the carved
 * pages are all free iff they are the aligned blocks of carve_next's binary
 * digits, largest first, each a free head of its order. */
static bool carve_all_free(const struct pc_zone *z)
{
	for (size_t at = 0, rest = z->carve_next; rest; ) {
		unsigned o = 63 - (unsigned)__builtin_clzl(rest); /* the highest digit left */
		const struct pc_page *pg = z->carve + at;
		if (pc_pg_state(pg) != PC_PG_BUDDY || pc_pg_order(pg) != o)
			return false;
		at += (size_t)1 << o;
		rest -= (size_t)1 << o;
	}
	return true;
}

static PC_COLD void carve_end_locked(struct pc_zone *z)
{
	struct pc_page *c = z->carve;
	struct pc_region *r = pc_page_region(c);
	size_t from = z->carve_next;
	z->carve = NULL; /* first: the frees below must not end it again */
	z->carve_next = 0;
	carve_release_range(z, r, (size_t)(c - r->pages), from, CHUNK_PAGES);
}

/* A block of `order` (< PC_MAX_ORDER) carved from the carve chunk, from the
 * next chunk not yet seeded if there is no carve chunk; NULL if there is
 * none either, or if the carve chunk has no room for the block: the carve
 * has then ended, its rest is on the lists, which the caller looks at
 * again. Head state PC_PG_NONE, mem FRESH. A slow path, yet inlined (with
 * carve_release_range): every program enters it, and cmake/hot-text.ld
 * places the text programs enter by function name, so a function of its
 * own would land outside that text. */
PC_INLINE struct pc_page *carve_take_locked(struct pc_zone *z, unsigned order)
{
	if (!z->carve) {
		if (z->seed_pages == 0)
			return NULL;
		/* its pages stay in free_pages, as the carve's */
		z->carve = &z->seed_region->pages[PC_REGION_PAGES - z->seed_pages];
		z->seed_pages -= CHUNK_PAGES;
		z->carve_next = 0;
	}
	size_t size = (size_t)1 << order, from = z->carve_next;
	size_t at = (from + size - 1) & ~(size - 1);
	if (at + size > CHUNK_PAGES) {
		carve_end_locked(z);
		return NULL;
	}
	struct pc_page *c = z->carve, *pg = c + at;
	struct pc_region *r = pc_page_region(c);
	z->carve_next = at + size;
	z->free_pages -= size;
	if (z->carve_next == CHUNK_PAGES) { /* all carved: an ordinary chunk now */
		z->carve = NULL;
		z->carve_next = 0;
	}
	/* the pieces the alignment skips; pg is not free, so they end no carve */
	carve_release_range(z, r, (size_t)(c - r->pages), from, at);
	pc_pg_set_order(pg, order);
	pg->mem = PC_MEM_FRESH;
	return pg;
}

/* Every free page on the lists: the carve ended, every chunk seeded. */
void zone_seed_all_locked(struct pc_zone *z)
{
	pc_lock_assert_held(&z->lock);
	if (z->carve)
		carve_end_locked(z);
	while (zone_seed_one_locked(z))
		;
}

/* pc_page_check: the carve chunk lies in a keep_mapped region of z, is
 * not among the chunks not yet seeded, has both pages carved and pages
 * not yet carved, not all of the first free (the carve would have ended),
 * and no descriptor of the pages not yet carved was written (what the
 * merges and free_pages rely on: no head there, free or in use). That
 * reads up to 64 KiB of descriptors never touched (zero pages mapped, a
 * fault on their first write later): pc_page_check only, so footprints are
 * not measured after it (tests, PC_DEBUG >= 3). */
bool zone_carve_check_locked(struct pc_zone *z)
{
	if (!z->carve)
		return z->carve_next == 0;
	struct pc_region *r = pc_page_region(z->carve);
	size_t idx = (size_t)(z->carve - r->pages);
	if (r->zone != z || !r->keep_mapped || (idx & (CHUNK_PAGES - 1)) != 0 || z->carve_next == 0 ||
	    z->carve_next >= CHUNK_PAGES || carve_all_free(z))
		return false;
	if (r == z->seed_region && idx >= PC_REGION_PAGES - z->seed_pages)
		return false;
	static const struct pc_page untouched;
	for (size_t i = z->carve_next; i < CHUNK_PAGES; i++)
		if (memcmp(&z->carve[i], &untouched, sizeof untouched) != 0)
			return false;
	return true;
}

/* Smallest order >= `order` with a dirty block, else the smallest with any
 * block; or > PC_MAX_ORDER. */
static unsigned pick_order(struct pc_zone *z, unsigned order)
{
	unsigned first = PC_MAX_ORDER + 1;
	for (unsigned o = order; o <= PC_MAX_ORDER; o++) {
		if (z->free_area[o].nr_free == 0)
			continue;
		if (!pc_list_empty(&z->free_area[o].dirty))
			return o;
		if (first > PC_MAX_ORDER)
			first = o;
	}
	return first;
}

/*
 * Placement by region (unmap.c: a region that ever held a block of
 * pc_alloc_pages is never unmapped). While the zone has regions that did
 * not (unkept_regions), blocks for pc_alloc_pages (kept) come from regions
 * that already did if any has one free, and chunks for the run heap from
 * the others: slabs stay packed into the regions they pinned already, and
 * runs leave those regions' free memory to slabs, so that after a peak of
 * runs their regions can be unmapped. Warm memory still comes first for
 * runs (a run faults in every page it touches, a slab only a few): dirty
 * chunks of unpinned regions, then any dirty chunk, then clean chunks of
 * unpinned regions (the seed region's next chunk too). Slabs take a clean
 * block of a pinned region before a dirty one of an unpinned region. The
 * first PLACE_SCAN blocks of each list are looked at, from `order` up,
 * under the zone lock; NULL if none fits (the caller then takes any).
 */
#define PLACE_SCAN 8

static struct pc_page *scan_placed(struct pc_zone *z, unsigned order, bool kept, bool dirty,
				   unsigned *op)
{
	for (unsigned o = order; o <= PC_MAX_ORDER; o++) {
		struct pc_list *l = dirty ? &z->free_area[o].dirty : &z->free_area[o].clean, *it = l->next;
		for (unsigned n = 0; it != l && n < PLACE_SCAN; it = it->next, n++) {
			struct pc_page *pg = pc_list_entry(it, struct pc_page, list);
			if (pc_page_region(pg)->keep_mapped == kept) {
				*op = o;
				return pg;
			}
		}
	}
	return NULL;
}

static bool has_dirty(const struct pc_zone *z, unsigned order)
{
	for (unsigned o = order; o <= PC_MAX_ORDER; o++)
		if (!pc_list_empty(&z->free_area[o].dirty))
			return true;
	return false;
}

static struct pc_page *pick_placed(struct pc_zone *z, unsigned order, bool kept, unsigned *op)
{
	struct pc_page *pg = scan_placed(z, order, kept, true, op);
	if (pg || (!kept && has_dirty(z, order)))
		return pg;
	pg = scan_placed(z, order, kept, false, op);
	if (!pg && !kept && z->seed_pages && !z->seed_region->keep_mapped && zone_seed_one_locked(z))
		pg = scan_placed(z, PC_MAX_ORDER, false, false, op);
	return pg;
}

/* A block that may hold a slab comes from pg's region: never unmapped. */
static void mark_keep_mapped(struct pc_zone *z, struct pc_page *pg)
{
	struct pc_region *r = pc_page_region(pg);
	if (!r->keep_mapped) { /* written once: the line stays read-mostly */
		r->keep_mapped = true;
		z->unkept_regions--;
	}
}

/*
 * Take a block of 2^order pages, split down from a larger one if need be,
 * the upper halves going back on their free lists (a dirty block's halves
 * keep its freed time). Resident (dirty) memory is preferred even when it
 * means splitting a larger block: reusing it costs no page faults, while
 * taking clean blocks would let dirty ones pile up until they are released
 * and faulted in again. The placement by region above comes first. A
 * block below the top order for pc_alloc_pages is carved from the carve
 * chunk instead ("carving" above) when nothing on the lists serves it, or
 * when the placement finds nothing in a pinned region. kept: the block is
 * for pc_alloc_pages (its region is then marked keep_mapped), else a chunk
 * for the run heap.
 * Returns the head with state PC_PG_NONE (the caller sets it), or NULL.
 */
struct pc_page *zone_alloc_block_locked(struct pc_zone *z, unsigned order, bool kept)
{
	pc_lock_assert_held(&z->lock);
	unsigned o = PC_MAX_ORDER + 1;
	struct pc_page *pg = NULL;
	/* Carving (above), where a split chunk's halves would have served:
	 * when nothing on the lists serves the block, and, for the placement
	 * by region, before any block of an unpinned region (the carve chunk's
	 * rest is free memory of a pinned region, on no list). If the carve
	 * ended, what it left is on the lists: look again; then a new carve. */
	for (int tries = 0;; tries++) {
		pg = z->unkept_regions ? pick_placed(z, order, kept, &o) : NULL;
		if (pg)
			break;
		o = pick_order(z, order);
		bool carve_first = z->unkept_regions && z->carve;
		if (!kept || order >= PC_MAX_ORDER || tries == 2 || (o <= PC_MAX_ORDER && !carve_first))
			break;
		struct pc_page *c = carve_take_locked(z, order);
		if (c) {
			mark_keep_mapped(z, c);
			return c;
		}
	}
	if (!pg) {
		if (o > PC_MAX_ORDER && zone_seed_one_locked(z))
			o = PC_MAX_ORDER;
		if (o > PC_MAX_ORDER)
			return NULL;
		struct pc_free_area *fa = &z->free_area[o];
		struct pc_list *l = pc_list_empty(&fa->dirty) ? &fa->clean : &fa->dirty;
		pg = pc_list_first(l, struct pc_page, list);
	}
	if (kept)
		mark_keep_mapped(z, pg);
	enum pc_mem mem = (enum pc_mem)pg->mem;
	uint64_t freed_ns = pg->freed_ns;
	free_area_del(z, pg, o);
	while (o > order) {
		o--;
		free_area_add(z, pg + ((size_t)1 << o), o, mem, freed_ns);
	}
	pc_pg_set_order(pg, order);
	pg->mem = (uint8_t)mem;
	return pg;
}

/*
 * The dirty free block freed longest ago, if it was freed before due_before:
 * taken off its list (state PC_PG_NONE, order in *order), or NULL. The
 * oldest block of each order is at the tail of its dirty list.
 */
struct pc_page *zone_take_oldest_dirty_locked(struct pc_zone *z, uint64_t due_before, unsigned *order)
{
	pc_lock_assert_held(&z->lock);
	struct pc_page *best = NULL;
	for (unsigned o = 0; o <= PC_MAX_ORDER; o++) {
		struct pc_list *l = &z->free_area[o].dirty;
		if (pc_list_empty(l))
			continue;
		struct pc_page *pg = pc_list_entry(l->prev, struct pc_page, list);
		if (pg->freed_ns < due_before && (!best || pg->freed_ns < best->freed_ns)) {
			best = pg;
			*order = o;
		}
	}
	if (best)
		free_area_del(z, best, *order);
	return best;
}

/* ---- what release batches would give back (the grow wait) ---------------- */

/* Under z->lock: whether a release pass holds the block headed by pg, of
 * `order` or more (z->release_held_blocks: at most a batch per pass). */
static bool block_held_locked(const struct pc_zone *z, const struct pc_page *pg, unsigned order)
{
	const struct pc_list *it;
	pc_list_for_each(it, &z->release_held_blocks)
		if (pc_list_entry(it, struct pc_page, list) == pg)
			return pc_pg_order(pg) >= order;
	return false;
}

/* Under z->lock: whether the aligned block [idx, idx + 2^order) of r is
 * wholly free once every held block is back: a free block or a held one
 * covers it, or each of its halves is so. Only a block with a held piece
 * inside is asked, so no free block covers it from further out; the look
 * goes into a half only while the halves before were free, and ends at the
 * first page that is neither (depth <= order). */
static bool free_once_back_locked(const struct pc_zone *z, struct pc_region *r, size_t idx,
				  unsigned order)
{
	const struct pc_page *pg = &r->pages[idx];
	unsigned st = pc_pg_state(pg);
	if (st == PC_PG_BUDDY && pc_pg_order(pg) >= order)
		return true;
	if (st == PC_PG_NONE && block_held_locked(z, pg, order))
		return true;
	/* else a page in use, or a smaller free or held block at idx: the
	 * halves, each on its own */
	if (order == 0)
		return false;
	size_t half = (size_t)1 << (order - 1);
	return free_once_back_locked(z, r, idx, order - 1) &&
	       free_once_back_locked(z, r, idx + half, order - 1);
}

/*
 * Under z->lock: whether the blocks release passes hold would, once freed
 * back, give a free block of `order` or more: one of them is that big, or
 * the aligned block of `order` around one of them would then be wholly
 * free (its buddies, free now or held too, merge with it; coalescing is
 * complete, so freeing them back gives exactly the maximal free aligned
 * blocks). What the grow wait asks before it waits (page_alloc.c).
 */
bool zone_held_blocks_serve_locked(struct pc_zone *z, unsigned order)
{
	pc_lock_assert_held(&z->lock);
	if (z->free_pages + z->release_held < ((size_t)1 << order))
		return false; /* not enough pages, merged or not */
	struct pc_list *it;
	pc_list_for_each(it, &z->release_held_blocks) {
		struct pc_page *pg = pc_list_entry(it, struct pc_page, list);
		if (pc_pg_order(pg) >= order)
			return true;
		struct pc_region *r = pc_page_region(pg);
		size_t around = (size_t)(pg - r->pages) & ~(((size_t)1 << order) - 1);
		if (free_once_back_locked(z, r, around, order))
			return true;
	}
	return false;
}

void zone_free(struct pc_zone *z, struct pc_page *pg, unsigned order)
{
	pc_lock_acquire(&z->lock);
	zone_free_block_locked(z, pg, order, PC_MEM_DIRTY);
	zone_publish_hints_locked(z);
	pc_lock_release(&z->lock);
	zone_maybe_release(z);
}

/* A new region's span and metadata, the metadata right below the span
 * (struct pc_region), or NULL (errno ENOMEM). The span alone first, then
 * the metadata below it, usually free (the kernel places mappings top
 * down); if something is there, two regions' worth, of which the second's
 * span and the metadata below it stay. */
static struct pc_region *region_map_fresh(void)
{
	const size_t meta = sizeof(struct pc_region);
	char *base = os_map(PC_REGION_SIZE, PC_REGION_SIZE);
	if (!base)
		return NULL;
	int saved = errno;
	if (os_map_at(base - meta, meta))
		return (struct pc_region *)(void *)(base - meta);
	bool refused = errno == ENOMEM;
	os_unmap(base, PC_REGION_SIZE);
	if (refused)
		return NULL;
	errno = saved;
	char *two = os_map(2 * PC_REGION_SIZE, PC_REGION_SIZE);
	if (!two)
		return NULL;
	os_unmap(two, PC_REGION_SIZE - meta);
	return (struct pc_region *)(void *)(two + PC_REGION_SIZE - meta);
}

/* Map a region: at the address of one unmapped before if one is free
 * again (its zeroed metadata is still there: unmap.c), else a new one. */
static struct pc_region *region_map(struct pc_zone *z)
{
	bool refused;
	struct pc_region *r = zone_spare_remap(z, &refused);
	if (refused)
		return NULL;
	if (!r)
		r = region_map_fresh();
	if (!r)
		return NULL;
	char *base = (char *)(r + 1);
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
	z->unkept_regions++;
	z->managed_pages += PC_REGION_PAGES;
	zone_seed_all_locked(z); /* what is left of the previous region, if any */
	z->seed_region = r;
	z->seed_pages = PC_REGION_PAGES;
	z->free_pages += PC_REGION_PAGES;
	zone_publish_hints_locked(z);
	pc_lock_release(&z->lock);
	pc_add_relaxed(&z->stats.regions_mapped, 1);
	pc_mutex_unlock(&z->grow_lock);
	zone_release_note_grown(z); /* auto: may want the release thread now */
	return true;
}
