/*
 * malloc/large.c - blocks of more than PC_SMALL_MAX bytes up to one buddy
 * block (PC_LARGE_MAX): whole pages straight from the page allocator.
 *
 * Medium blocks (a buddy order up to PC_PCP_MAX_ORDER, 256 KiB) keep their
 * whole power-of-two block: they come from and go back to the per-CPU page
 * lists in one call each, with no zone lock, and their buddies coalesce
 * completely. Splitting off the unused tail (the kernel's alloc_pages_exact)
 * was measured to cost more than it saves there: the tails, scattered over
 * the free lists and the per-CPU lists, keep the blocks around them from
 * coalescing, and on the mixed-size workload the process grew to 1.6x the
 * RSS of whole blocks and ran 3x slower (docs/pages.md). A medium block's
 * unused tail costs RSS only where an earlier, larger user touched it.
 *
 * Larger blocks take the buddy block of the next order up and give the tail
 * they do not need straight back, as aligned sub-blocks, so at most part of
 * one page is wasted: there a tail is worth up to 2 MiB.
 *
 * The head page descriptor records the page count (state PC_PG_LARGE, aux =
 * n, a power of two for medium blocks); free hands the n pages back as the
 * aligned blocks that make up n (a single block for a power of two).
 */
#include "malloc.h"

static unsigned order_of_pages(size_t pages)
{
	return pages <= 1 ? 0 : pc_log2(pages - 1) + 1;
}

/* Free pages [from, to) of the block at base as maximal aligned blocks. */
static void free_page_range(char *base, size_t from, size_t to)
{
	while (from < to) {
		unsigned order = pc_log2(to - from);
		if (from != 0)
			order = PC_MIN(order, (unsigned)__builtin_ctzll(from));
		pc_free_pages(base + (from << PC_PAGE_SHIFT), order);
		from += (size_t)1 << order;
	}
}

void *large_alloc(size_t size, size_t align)
{
	size_t pages = (size + PC_PAGE_SIZE - 1) >> PC_PAGE_SHIFT;
	unsigned order = order_of_pages(pages);
	if (align > PC_PAGE_SIZE)
		order = PC_MAX(order, pc_log2(align) - PC_PAGE_SHIFT);
	char *p = pc_alloc_pages(order);
	if (!p)
		return NULL;
	struct pc_page *pg = pc_page_of_owned(p);
	if (order <= PC_PCP_MAX_ORDER)
		pages = (size_t)1 << order; /* medium: the whole block */
	else
		free_page_range(p, pages, (size_t)1 << order);
	pc_pg_set_state(pg, PC_PG_LARGE);
	pg->aux = (uint32_t)pages;
	return p;
}

void large_free(struct pc_page *pg, void *p)
{
	size_t pages = pg->aux;
	pc_pg_set_state(pg, PC_PG_NONE);
	free_page_range(p, 0, pages);
}

size_t large_usable(const struct pc_page *pg)
{
	return (size_t)pg->aux << PC_PAGE_SHIFT;
}

/* Shrink to new_size (> PC_SMALL_MAX) by giving back the tail pages; a
 * medium block stays whole while more than half is used, else false (the
 * caller moves it). */
bool large_shrink_in_place(struct pc_page *pg, void *p, size_t new_size)
{
	size_t pages = (new_size + PC_PAGE_SIZE - 1) >> PC_PAGE_SHIFT;
	if (pages > pg->aux)
		return false;
	if (pg->aux <= ((size_t)1 << PC_PCP_MAX_ORDER)) /* medium: keep it whole */
		return pages > pg->aux / 2; /* or move to a smaller block */
	free_page_range(p, pages, pg->aux);
	pg->aux = (uint32_t)pages;
	return true;
}
