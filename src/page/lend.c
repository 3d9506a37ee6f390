/*
 * page/lend.c - lending free ranges of regions to huge blocks (issue 9,
 * "address space given back too").
 *
 * A region that ever held a slab is never unmapped (page.h says why), and
 * one that did not is unmapped only once wholly free (unmap.c), so after a
 * peak of small and large blocks much of their address space may stay
 * reserved; under a limit on address space (RLIMIT_AS, `ulimit -v`) a huge
 * block then finds no room for a mapping of its own. So when the OS refuses
 * that mapping even after the unmapping, the huge block borrows a range of
 * contiguous free pages of a region instead: the range is
 * taken off the buddy lists (state PC_PG_LENT on its first page, aux = its
 * length) and handed out as it is, still mapped, still in the region table,
 * its descriptors untouched but for the head. Given back, it is freed into
 * the buddy lists as dirty blocks, which coalesce and age like any others.
 *
 * Only pages on the buddy lists are lent (not those on per-CPU lists, not
 * free runs inside the run heap's chunks): the caller drains and reclaims
 * before its last try. The search is a walk over every page descriptor of
 * the zone's regions (a free block is skipped whole), under the zone lock:
 * slow, but it runs only when the OS has refused memory. The range is the
 * best fit: the shortest free stretch that holds it, used from its start.
 */
#include "page.h"

/* Under z->lock: the shortest stretch of free buddy pages in a region of z
 * that holds `pages`; its region and start in *rp, *startp. 0 if none. */
static size_t lend_best_fit_locked(struct pc_zone *z, size_t pages, struct pc_region **rp,
				   size_t *startp)
{
	size_t best = 0;
	for (struct pc_region *r = z->regions; r; r = r->next) {
		size_t i = 0, start = 0, len = 0;
		while (i <= PC_REGION_PAGES) {
			struct pc_page *pg = i < PC_REGION_PAGES ? &r->pages[i] : NULL;
			if (pg && pc_pg_state(pg) == PC_PG_BUDDY) {
				if (len == 0)
					start = i;
				len += (size_t)1 << pc_pg_order(pg);
				i += (size_t)1 << pc_pg_order(pg);
				continue;
			}
			if (len >= pages && (best == 0 || len < best)) {
				best = len;
				*rp = r;
				*startp = start;
			}
			len = 0;
			/* A lent range is skipped whole; anything else page by page
			 * (a free block starts at a page of its own, never inside
			 * something in use). */
			i += pg && pc_pg_state(pg) == PC_PG_LENT ? (size_t)pg->aux : 1;
		}
	}
	return best;
}

/* Free [idx, idx + n) of r into z's buddy lists as aligned blocks (each one
 * the largest that fits its place), with `mem`. Under z->lock. */
static void lend_free_range_locked(struct pc_zone *z, struct pc_region *r, size_t idx, size_t n,
				   enum pc_mem mem)
{
	size_t end = idx + n;
	while (idx < end) {
		unsigned o = idx ? (unsigned)__builtin_ctzll(idx) : PC_MAX_ORDER;
		o = PC_MIN(o, PC_MAX_ORDER);
		while (idx + ((size_t)1 << o) > end)
			o--;
		zone_free_block_locked(z, &r->pages[idx], o, mem);
		idx += (size_t)1 << o;
	}
}

/* Take [start, start + pages) of r off z's free lists: every free block that
 * overlaps it is taken whole, and the parts of those outside the range go
 * back. Returns whether all of it was never touched (FRESH). Under z->lock. */
static bool lend_take_range_locked(struct pc_zone *z, struct pc_region *r, size_t start, size_t pages)
{
	size_t end = start + pages, i = start;
	enum pc_mem last_mem = PC_MEM_FRESH;
	bool fresh = true;
	/* The range starts at a free block's head (the search starts stretches
	 * only there) and ends inside or at the end of a free block. */
	while (i < end) {
		struct pc_page *pg = &r->pages[i];
		unsigned o = pc_pg_order(pg);
		pc_assert_internal(pc_pg_state(pg) == PC_PG_BUDDY);
		last_mem = (enum pc_mem)pg->mem;
		fresh = fresh && last_mem == PC_MEM_FRESH;
		zone_take_block_locked(z, pg, o);
		i += (size_t)1 << o;
	}
	if (i > end) /* the tail of the last block goes back, as it was */
		lend_free_range_locked(z, r, end, i - end, last_mem);
	return fresh;
}

void *page_lend(size_t pages, bool *fresh)
{
	if (pages == 0 || pages > PC_REGION_PAGES || !pc_page_try_init())
		return NULL;
	for (unsigned zi = 0; zi < pc_zone_count(); zi++) {
		struct pc_zone *z = pc_zone_get(zi);
		if (pc_load_relaxed(&z->free_hint) < pages)
			continue;
		pc_lock_acquire(&z->lock);
		struct pc_region *r = NULL;
		size_t start = 0;
		void *p = NULL;
		zone_seed_all_locked(z); /* every chunk is a candidate */
		if (lend_best_fit_locked(z, pages, &r, &start)) {
			*fresh = lend_take_range_locked(z, r, start, pages);
			struct pc_page *head = &r->pages[start];
			head->aux = (uint32_t)pages;
			pc_pg_set_state(head, PC_PG_LENT);
			zone_publish_hints_locked(z);
			p = pc_page_address(head);
		}
		pc_lock_release(&z->lock);
		if (p) {
			pc_add_relaxed(&z->stats.lent_pages, pages);
			return p;
		}
	}
	return NULL;
}

void page_unlend(void *p, size_t pages)
{
	struct pc_page *pg = pc_page_of(p);
	if (pc_unlikely(!pg || pc_pg_state_acquire(pg) != PC_PG_LENT || pg->aux != pages))
		pc_fatal("pc_page_unlend(%p, %zu pages): not a lent range", p, pages);
	struct pc_region *r = pc_page_region(pg);
	struct pc_zone *z = r->zone;
	pc_lock_acquire(&z->lock);
	pc_pg_set_state(pg, PC_PG_NONE);
	lend_free_range_locked(z, r, (size_t)(pg - r->pages), pages, PC_MEM_DIRTY);
	zone_publish_hints_locked(z);
	pc_lock_release(&z->lock);
	pc_sub_relaxed(&z->stats.lent_pages, pages);
	zone_maybe_release(z);
}
