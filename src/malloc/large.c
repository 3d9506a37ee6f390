/*
 * malloc/large.c - blocks of more than PC_SMALL_MAX bytes up to one buddy
 * block (PC_LARGE_MAX): whole pages straight from the page allocator.
 *
 * A request of n pages takes the buddy block of the next order up and gives
 * the tail it does not need straight back, as aligned sub-blocks (the
 * kernel's alloc_pages_exact), so at most part of one page is wasted. The
 * head page descriptor records the page count (state PC_PG_LARGE, aux = n);
 * free hands the n pages back as the aligned blocks that make up n.
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

/* Shrink to new_size (> PC_SMALL_MAX) by giving back the tail pages. */
bool large_shrink_in_place(struct pc_page *pg, void *p, size_t new_size)
{
	size_t pages = (new_size + PC_PAGE_SIZE - 1) >> PC_PAGE_SHIFT;
	if (pages > pg->aux)
		return false;
	free_page_range(p, pages, pg->aux);
	pg->aux = (uint32_t)pages;
	return true;
}
