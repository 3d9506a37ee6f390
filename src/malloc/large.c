/*
 * malloc/large.c - blocks of more than PC_SMALL_MAX bytes up to one buddy
 * block (PC_LARGE_MAX): runs of whole pages from the page allocator.
 *
 * A block of n pages is a run of exactly n pages (pc_alloc_run, page/run.c):
 * it costs n pages, not the next power of two. Runs of up to PC_PCP_MAX_RUN
 * pages (medium blocks, 256 KiB) come from and go back to the per-CPU list
 * for their length, one call each with no zone lock; longer ones are a best
 * fit in the zone's run heap, which keeps them in chunks of their own, apart
 * from slabs (page/run.c says why). An alignment above a page is a run
 * placed at that alignment.
 *
 * Medium blocks (PC_MEDIUM_MIN_PAGES .. PC_PCP_MAX_RUN pages) are first
 * looked for in, and freed to, malloc's per-CPU cache of them (medium.c):
 * no lock when it serves the call.
 *
 * The head page descriptor records the page count (state PC_PG_LARGE, aux =
 * n, which the page layer keeps for runs); realloc shrinks a block in place
 * always (the tail goes back to the zone) and grows it in place when the
 * pages after it are free in the zone.
 */
#include "malloc.h"

static size_t pages_of(size_t size)
{
	return (size + PC_PAGE_SIZE - 1) >> PC_PAGE_SHIFT;
}

/* A medium block (no alignment above a page) from the per-CPU cache first
 * (medium.c), else a run from the page allocator. */
void *large_alloc(size_t size, size_t align)
{
	size_t pages = pages_of(size);
	char *p = NULL;
	if (pc_likely(pages >= PC_MEDIUM_MIN_PAGES && pages <= PC_PCP_MAX_RUN && align <= PC_PAGE_SIZE)) {
		p = medium_cache_pop(pages);
		if (!p)
			p = medium_cache_miss(pages); /* the bound's raise, the decay's tick, a refill */
	}
	if (!p)
		p = pc_alloc_run_aligned(pages, PC_MAX(align, PC_PAGE_SIZE) >> PC_PAGE_SHIFT);
	if (!p)
		return NULL;
	struct pc_page *pg = pc_page_of_owned(p);
	pc_pg_set_state(pg, PC_PG_LARGE);
	pg->aux = (uint32_t)pages;
	return p;
}

/* A medium block goes to the per-CPU cache (medium.c), which gives it to
 * the page allocator when full; the state is cleared first, so a second
 * free of it is an invalid pointer wherever the block is. */
void large_free(struct pc_page *pg, void *p)
{
	size_t pages = pg->aux;
	pc_pg_set_state(pg, PC_PG_NONE);
	if (pages >= PC_MEDIUM_MIN_PAGES && pages <= PC_PCP_MAX_RUN)
		medium_cache_push(p, pages);
	else
		pc_free_run(p, pages);
}

size_t large_usable(const struct pc_page *pg)
{
	return (size_t)pg->aux << PC_PAGE_SHIFT;
}

/* Shrink to new_size (> PC_SMALL_MAX, <= the usable size): the tail pages
 * go back to the zone. */
bool large_shrink_in_place(struct pc_page *pg, void *p, size_t new_size)
{
	size_t pages = pages_of(new_size);
	if (pages > pg->aux)
		return false;
	pc_run_shrink(p, pg->aux, pages);
	pg->aux = (uint32_t)pages;
	return true;
}

/* Grow to new_size (<= PC_LARGE_MAX) if the pages after the block are free. */
bool large_grow_in_place(struct pc_page *pg, void *p, size_t new_size)
{
	size_t pages = pages_of(new_size);
	if (pages <= pg->aux)
		return true;
	if (!pc_run_grow(p, pg->aux, pages))
		return false;
	pg->aux = (uint32_t)pages;
	return true;
}
