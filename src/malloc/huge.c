/*
 * malloc/huge.c - blocks larger than PC_LARGE_MAX: a mapping each, with a
 * header page in front of the first byte (struct pc_huge_header), kept for
 * reuse a while after free (huge_cache.c: under vm.release_delay_ms,
 * bounded by vm.huge_cache_kb) and then unmapped, so that the memory and
 * the address space go back to the OS; resized with mremap.
 *
 * Every live huge block is in the table of huge_table.c: huge_header reads a
 * header only after the table says the pointer is a live huge block, so a
 * foreign pointer (page aligned, in no region) is never dereferenced.
 *
 * Counters are relaxed atomics (statistics for mallinfo2).
 */
#include "malloc.h"

static _Atomic size_t huge_mapped, huge_blocks;

size_t huge_bytes_mapped(void) { return pc_load_relaxed(&huge_mapped); }
size_t huge_count(void) { return pc_load_relaxed(&huge_blocks); }

/* A new mapping for `data` bytes aligned to align, with its header page in
 * front; map_base and map_size set. NULL if the OS refuses. */
static struct pc_huge_header *map_new(size_t data, size_t align)
{
	size_t slack = align > PC_PAGE_SIZE ? align : 0;
	size_t total = PC_PAGE_SIZE + data + slack;
	char *raw = os_map(total, PC_PAGE_SIZE);
	if (!raw)
		return NULL;
	char *user = (char *)pc_align_up((uintptr_t)raw + PC_PAGE_SIZE, align);
	char *base = user - PC_PAGE_SIZE;
	if (base > raw)
		os_unmap(raw, (size_t)(base - raw));
	if (raw + total > user + data)
		os_unmap(user + data, (size_t)(raw + total - (user + data)));
	struct pc_huge_header *h = (struct pc_huge_header *)(void *)base;
	h->map_base = base;
	h->map_size = PC_PAGE_SIZE + data;
	return h;
}

void *huge_alloc(size_t size, size_t align)
{
	if (size > PC_REQUEST_MAX || align > PC_REQUEST_MAX / 2)
		return NULL;
	align = PC_MAX(align, PC_PAGE_SIZE);
	size_t data = pc_align_up(size, PC_PAGE_SIZE);
	struct pc_huge_header *h = NULL;
	huge_cache_expire();
	if (align == PC_PAGE_SIZE)
		h = huge_cache_take(PC_PAGE_SIZE + data);
	if (h) {
		h->recycled = true; /* old contents: calloc must clear it */
	} else {
		h = map_new(data, align);
		if (!h)
			return NULL;
		h->recycled = false;
	}
	char *user = (char *)h + PC_PAGE_SIZE;
	h->magic = PC_HUGE_MAGIC;
	h->align = align;
	if (!huge_table_insert(user)) { /* after the header: see the table */
		os_unmap(h, h->map_size);
		return NULL;
	}
	pc_add_relaxed(&huge_mapped, h->map_size);
	pc_add_relaxed(&huge_blocks, 1);
	return user;
}

/* The header of a huge block, or NULL if p cannot be one. */
const struct pc_huge_header *huge_header(const void *p)
{
	if (!p || ((uintptr_t)p & (PC_PAGE_SIZE - 1)) || !huge_table_contains(p))
		return NULL;
	const struct pc_huge_header *h = (const void *)((const char *)p - PC_PAGE_SIZE);
	return h->magic == PC_HUGE_MAGIC && h->map_base == (const void *)h ? h : NULL;
}

bool huge_free(void *p)
{
	if (!huge_table_remove(p)) /* a racing free of the same block won */
		return false;
	struct pc_huge_header *h = (struct pc_huge_header *)(void *)((char *)p - PC_PAGE_SIZE);
	size_t size = h->map_size;
	h->magic = 0;
	pc_sub_relaxed(&huge_mapped, size);
	pc_sub_relaxed(&huge_blocks, 1);
	if (!huge_cache_put(h))
		os_unmap(h, size);
	huge_cache_expire();
	return true;
}

size_t huge_usable(const void *p)
{
	const struct pc_huge_header *h = (const void *)((const char *)p - PC_PAGE_SIZE);
	return h->map_size - PC_PAGE_SIZE;
}

/* Whether calloc must clear the block: a reused mapping holds old data. */
bool huge_recycled(const void *p)
{
	const struct pc_huge_header *h = (const void *)((const char *)p - PC_PAGE_SIZE);
	return h->recycled;
}

/* Resize with mremap; only for blocks without extra alignment (a moved
 * mapping is only page aligned). NULL on failure, p then untouched. */
void *huge_realloc(void *p, size_t size)
{
	struct pc_huge_header *h = (struct pc_huge_header *)(void *)((char *)p - PC_PAGE_SIZE);
	size_t old = h->map_size, total = PC_PAGE_SIZE + pc_align_up(size, PC_PAGE_SIZE);
	if (h->align > PC_PAGE_SIZE || size > PC_REQUEST_MAX)
		return NULL;
	struct pc_huge_header *n = os_remap(h, old, total);
	if (!n)
		return NULL;
	char *q = (char *)n + PC_PAGE_SIZE;
	if (n != h) { /* moved: the table follows (the old address is unmapped) */
		huge_table_remove(p);
		if (!huge_table_insert(q))
			pc_fatal("realloc(%p): the table of huge blocks is full", p);
	}
	n->map_base = n;
	n->map_size = total;
	pc_add_relaxed(&huge_mapped, total - old); /* wraps correctly when shrinking */
	return q;
}
