/*
 * page/unmap.c - giving wholly free regions back to the OS (issue 9, item
 * 5: "address space given back too").
 *
 * After a peak, free memory goes back to the OS with madvise (release.c),
 * but the address space of the regions stays reserved, and under a limit on
 * address space (RLIMIT_AS, `ulimit -v`) the program can then map nothing
 * else. So a region every page of which is free on the buddy lists (its 16
 * chunks are free blocks of PC_MAX_ORDER, or not yet seeded) is unmapped,
 * unless it ever held a block of pc_alloc_pages (keep_mapped: slab memory
 * that lock-free readers may still read; page.h, top comment, gives the
 * rule and the readers). Its span is unmapped; its descriptors are not
 * (lock-free readers of the table may still look at them): its table entry
 * is cleared first, then the span unmapped, the descriptors zeroed, and the
 * metadata mapping (right below the span: page.h, struct pc_region) kept on
 * the zone's spare list; zone_grow maps a span at such an old address
 * first, if nothing else took it meanwhile (zone_spare_remap).
 *
 * When: pc_page_trim (all of them); pc_page_unmap_free (malloc, when the OS
 * refuses a huge block its mapping); and release passes (zone_unmap_maybe),
 * once the zone holds a whole region of free memory already released
 * (clean: so a region is not unmapped while its pages might be reused warm)
 * and keeping one region per zone, so that a small program that cycles
 * memory does not map and unmap a region each time.
 *
 * Not while a thread is in the zone's allocation slow path (zone->growing):
 * a region it has just mapped is wholly free until it takes from it.
 *
 * Locking: the region list, the free lists and spare_regions are under
 * zone->lock; the munmap and the zeroing run with it dropped, on a region
 * that is then on no list and in no table entry (only stale lock-free
 * readers may look at its descriptors).
 */
#include "page.h"

#include <errno.h>
#include <string.h>

#define CHUNK_PAGES ((size_t)1 << PC_MAX_ORDER)

/* Pages [0, end) of r are on the free lists or in use; the rest of r is the
 * part of the seed region not seeded yet (buddy.c), free. */
static size_t seeded_end(const struct pc_zone *z, const struct pc_region *r)
{
	return r == z->seed_region ? PC_REGION_PAGES - z->seed_pages : PC_REGION_PAGES;
}

/* Under z->lock: whether r may be unmapped now: it never held a block of
 * pc_alloc_pages and every chunk of it is a free block (with clean_only,
 * none of them dirty). Coalescing is complete, so a wholly free chunk is
 * one free block of PC_MAX_ORDER. */
static bool region_unmappable_locked(const struct pc_zone *z, const struct pc_region *r,
				     bool clean_only)
{
	if (r->keep_mapped)
		return false;
	for (size_t i = 0; i < seeded_end(z, r); i += CHUNK_PAGES) {
		const struct pc_page *pg = &r->pages[i];
		if (pc_pg_state(pg) != PC_PG_BUDDY || pc_pg_order(pg) != PC_MAX_ORDER)
			return false;
		if (clean_only && pg->mem == PC_MEM_DIRTY)
			return false;
	}
	return true;
}

/* Under z->lock: take r's chunks off the free lists, r off the zone's list
 * and its table entry; z's counters shrink by a region. */
static void region_detach_locked(struct pc_zone *z, struct pc_region *r)
{
	for (size_t i = 0; i < seeded_end(z, r); i += CHUNK_PAGES)
		zone_take_block_locked(z, &r->pages[i], PC_MAX_ORDER);
	if (r == z->seed_region) {
		z->free_pages -= z->seed_pages;
		z->seed_pages = 0;
		z->seed_region = NULL;
	}
	struct pc_region **link = &z->regions;
	while (*link != r)
		link = &(*link)->next;
	*link = r->next;
	z->unkept_regions--;
	z->managed_pages -= PC_REGION_PAGES;
	/* Release: pairs with pc_region_of's acquire (a reader that sees NULL
	 * sees no region; one that still sees r reads descriptors that stay
	 * mapped). Before the munmap, so that a huge block mapped at the old
	 * address later is never taken for a page of r. */
	pc_store_release(&pc_region_table[(uintptr_t)r->base >> PC_REGION_SHIFT], NULL);
}

/* Zero the descriptors of a detached region, as a new mapping's are, by
 * madvise (no RSS kept; they start on a page of their own). A stale reader
 * sees PC_PG_NONE or an old value. The header keeps base (where the span
 * may be mapped again) and zone. */
static void region_scrub(struct pc_region *r)
{
	if (os_release(r->pages, PC_REGION_DESC_BYTES) != 0)
		memset(r->pages, 0, PC_REGION_DESC_BYTES); /* mlocked: zero it by hand */
	r->keep_mapped = false;
}

size_t zone_unmap_free(struct pc_zone *z, bool clean_only, size_t keep_regions)
{
	size_t unmapped = 0;
	while (!page_fork_pending()) { /* a fork waits for one region at most */
		struct pc_region *r = NULL;
		pc_lock_acquire(&z->lock);
		/* Not while a thread grows the zone: the region it just mapped is
		 * wholly free until it takes from it (page_alloc.c, alloc_slow). */
		if (pc_load_relaxed(&z->growing) == 0 && z->managed_pages > keep_regions * PC_REGION_PAGES)
			for (r = z->regions; r && !region_unmappable_locked(z, r, clean_only); r = r->next)
				;
		if (r) {
			region_detach_locked(z, r);
			z->in_flight++; /* in no zone list until spare: fork waits */
		}
		zone_publish_hints_locked(z);
		pc_lock_release(&z->lock);
		if (!r)
			return unmapped;
		os_unmap(r->base, PC_REGION_SIZE);
		region_scrub(r);
		pc_lock_acquire(&z->lock);
		r->next = z->spare_regions;
		z->spare_regions = r;
		z->in_flight--;
		pc_lock_release(&z->lock);
		pc_add_relaxed(&z->stats.regions_unmapped, 1);
		unmapped++;
	}
	return unmapped;
}

/* From a release pass (no lock held): unmap clean free regions beyond the
 * first, if the zone holds a whole region of clean free memory at all (two
 * relaxed loads when it does not). */
void zone_unmap_maybe(struct pc_zone *z)
{
	size_t free = pc_load_relaxed(&z->free_hint), dirty = pc_load_relaxed(&z->dirty_hint);
	if (pc_likely(free < dirty + PC_REGION_PAGES) ||
	    pc_load_relaxed(&z->managed_hint) <= PC_REGION_PAGES)
		return;
	zone_unmap_free(z, true, 1);
}

/* Spares zone_spare_remap tries per growth of a zone. */
#define SPARE_TRIES 4

/*
 * Under z->grow_lock (zone_grow; so no fork meanwhile: prefork takes it
 * first): a spare whose span is mapped again at its old address, right
 * above its metadata (os_map_at), off the spare list; or NULL when there
 * is none, when the first SPARE_TRIES spares' old addresses are all taken
 * by other mappings, or when the OS refuses (*refused set, errno ENOMEM;
 * else errno is kept). The list is taken whole under the lock and the
 * mappings tried without it; the spares tried and found taken go to the
 * tail (the next growth tries others first), and the list goes back in
 * front of what unmappings added meanwhile.
 *
 * So a spare serves only a region at its own old address: the list holds
 * at most the zone's peak of regions plus the old spans that other
 * mappings (a huge block the kernel put there, another library's) hold,
 * each a header page of RSS and 1 MiB of address space; one becomes usable
 * again when that mapping goes.
 */
struct pc_region *zone_spare_remap(struct pc_zone *z, bool *refused)
{
	*refused = false;
	pc_lock_acquire(&z->lock);
	struct pc_region *spares = z->spare_regions;
	z->spare_regions = NULL;
	pc_lock_release(&z->lock);
	int saved = errno;
	struct pc_region *got = NULL, *taken = NULL, **taken_tail = &taken;
	for (unsigned tries = 0; spares && !got && !*refused && tries < SPARE_TRIES; tries++) {
		struct pc_region *r = spares;
		spares = r->next;
		r->next = NULL;
		if (os_map_at(r->base, PC_REGION_SIZE)) {
			got = r;
			break;
		}
		if (errno == ENOMEM)
			*refused = true; /* so would the next be */
		*taken_tail = r; /* EEXIST: its address is taken (or refused): it stays */
		taken_tail = &r->next;
	}
	if (!*refused)
		errno = saved;
	/* The rest of the list, then those tried in vain. */
	struct pc_region **tail = &spares;
	while (*tail)
		tail = &(*tail)->next;
	*tail = taken;
	if (taken)
		tail = taken_tail;
	pc_lock_acquire(&z->lock);
	*tail = z->spare_regions;
	z->spare_regions = spares;
	pc_lock_release(&z->lock);
	return got;
}

size_t page_unmap_free(void)
{
	size_t unmapped = 0;
	if (!pc_page_try_init())
		return 0;
	for (unsigned i = 0; i < pc_zone_count(); i++)
		unmapped += zone_unmap_free(pc_zone_get(i), false, 0);
	return unmapped;
}
