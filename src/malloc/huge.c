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
 * When the OS refuses the mapping (a limit on address space: RLIMIT_AS), the
 * page allocator first unmaps the regions it may (pc_page_unmap_free: wholly
 * free ones that never held a slab) and the mapping is tried again; if that
 * fails too, the block borrows a range of free pages of a region instead
 * (pc_page_lend, page/lend.c: regions that once held slabs are never
 * unmapped, so after a peak their free address space would otherwise stay
 * unused). Such a block has
 * the same layout (header page, then the data), `lent` set in its header,
 * and its first data page has state PC_PG_HUGE, so that free() (which finds
 * a descriptor for it) knows it. It is never cached, unmapped or remapped:
 * the range must stay mapped (page.h says why); free gives it back to the
 * page allocator, realloc moves it.
 *
 * Counters are relaxed atomics (statistics for mallinfo2).
 */
#include "malloc.h"

#define HUGE_THP_SIZE ((size_t)2 << 20) /* a transparent huge page (x86-64) */

static _Atomic size_t huge_mapped, huge_blocks;

size_t huge_bytes_mapped(void) { return pc_load_relaxed(&huge_mapped); }

/* `bytes` more mapped for live blocks. Auto mode: live huge blocks past
 * the floor want the release thread (its hook expires what their frees
 * leave cached; malloc's poll at the end of the call starts it). */
static void mapped_grew(size_t bytes)
{
	pc_page_release_note_held(pc_add_relaxed(&huge_mapped, bytes) + bytes);
}
/* `bytes` fewer: the page layer keeps the live total, so that the release
 * thread set to auto live is wanted only if they are still past the floor. */
static void mapped_shrank(size_t bytes)
{
	pc_page_release_note_held(pc_sub_relaxed(&huge_mapped, bytes) - bytes);
}
size_t huge_count(void) { return pc_load_relaxed(&huge_blocks); }

/* A range lent by the page allocator for `data` bytes (page aligned), header
 * page in front; NULL if no region has one free. */
static struct pc_huge_header *lend_new(size_t data, bool *fresh)
{
	size_t pages = 1 + (data >> PC_PAGE_SHIFT);
	struct pc_huge_header *h = pc_page_lend(pages, fresh);
	if (!h)
		return NULL;
	h->map_base = h;
	h->map_size = pages << PC_PAGE_SHIFT;
	h->lent = true;
	return h;
}

/* Give a block's memory back: the range to the page allocator, or the
 * mapping to the OS. */
static void give_back(struct pc_huge_header *h, size_t size)
{
	if (h->lent) {
		pc_pg_set_state(pc_page_of_owned((char *)h + PC_PAGE_SIZE), PC_PG_NONE);
		pc_page_unlend(h, size >> PC_PAGE_SHIFT);
	} else {
		os_unmap(h, size);
	}
}

/*
 * A new mapping for `data` bytes aligned to align, with its header page in
 * front; map_base and map_size set. NULL if the OS refuses. With
 * vm.huge_thp (and no extra alignment; `thp_ok`) the mapping starts on a
 * 2 MiB boundary and asks for transparent huge pages, so that touching a
 * block takes one fault per 2 MiB instead of one per page (docs/huge.md);
 * map_refused tries again without, in case the 2 MiB of slack this needs
 * were what the OS refused. The advice comes before the header is written:
 * the header's write is the first fault of the first 2 MiB, which then gets
 * a huge page too (after it, that extent would already have a table of
 * 4 KiB pages).
 */
static bool thp_wanted(size_t data, size_t align)
{
	return align == PC_PAGE_SIZE && data >= HUGE_THP_SIZE && pc_option(PC_OPT_VM_HUGE_THP);
}

static struct pc_huge_header *map_new(size_t data, size_t align, bool thp_ok)
{
	size_t thp = thp_ok && thp_wanted(data, align) ? HUGE_THP_SIZE : 0;
	size_t slack = align > PC_PAGE_SIZE ? align : thp;
	size_t total = PC_PAGE_SIZE + data + slack;
	char *raw = os_map(total, PC_PAGE_SIZE);
	if (!raw)
		return NULL;
	char *user = thp ? (char *)pc_align_up((uintptr_t)raw, thp) + PC_PAGE_SIZE
			 : (char *)pc_align_up((uintptr_t)raw + PC_PAGE_SIZE, align);
	char *base = user - PC_PAGE_SIZE;
	if (base > raw)
		os_unmap(raw, (size_t)(base - raw));
	if (raw + total > user + data)
		os_unmap(user + data, (size_t)(raw + total - (user + data)));
	if (thp)
		os_advise_hugepage(base, PC_PAGE_SIZE + data); /* a hint: failure is harmless */
	struct pc_huge_header *h = (struct pc_huge_header *)(void *)base;
	h->map_base = base;
	h->map_size = PC_PAGE_SIZE + data;
	h->lent = false;
	return h;
}

/*
 * The OS refused a mapping (a limit on address space): give back the address
 * space we may and try again (without the slack of a THP-aligned mapping),
 * then borrow. The per-CPU page lists are
 * drained first, so that their pages coalesce into wholly free regions,
 * which the page allocator then unmaps (pc_page_unmap_free), and the cached
 * huge mappings go too. Only then is a free range of a region lent (its
 * region then stays mapped while the block lives). NULL if all fails. A
 * signal handler that interrupted a slab or medium slow path or the page
 * allocator (pc_slab_reentered, medium_reentered) skips the medium flush,
 * the drain and the unmapping, which block on locks its thread may hold (as
 * malloc_aligned skips its reclaim); the page allocator refuses it a lent
 * range then too, so only a fresh mapping or a cached one serves it.
 */
static PC_NOINLINE struct pc_huge_header *map_refused(size_t data, size_t align, bool *fresh)
{
	struct pc_huge_header *h = NULL;
	if (!pc_slab_reentered() && !medium_reentered()) {
		medium_flush(); /* its blocks pin their regions: to the per-CPU lists */
		pc_page_drain_all();
		size_t given_back = pc_page_unmap_free();
		given_back += huge_cache_flush();
		h = given_back || thp_wanted(data, align) ? map_new(data, align, false) : NULL;
	}
	if (!h && align == PC_PAGE_SIZE) {
		h = lend_new(data, fresh);
		if (h) /* free() finds a descriptor: it says huge */
			pc_pg_set_state(pc_page_of_owned((char *)h + PC_PAGE_SIZE), PC_PG_HUGE);
	}
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
		h->recycled = true; /* old contents: calloc clears the dirty extents */
		h->lent = false;
	} else {
		bool fresh = true;
		h = map_new(data, align, true);
		if (!h)
			h = map_refused(data, align, &fresh);
		if (!h)
			return NULL;
		h->recycled = !fresh;
		if (!fresh)
			huge_dirty_all(h); /* a lent range that held data */
	}
	char *user = (char *)h + PC_PAGE_SIZE;
	h->magic = PC_HUGE_MAGIC;
	h->align = align;
	if (!huge_table_insert(user)) { /* after the header: see the table */
		give_back(h, h->map_size);
		return NULL;
	}
	mapped_grew(h->map_size);
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
	mapped_shrank(size);
	pc_sub_relaxed(&huge_blocks, 1);
	huge_cache_expire(); /* first: a stale neighbour is not merged into h */
	if (h->lent || !huge_cache_put(h))
		give_back(h, size);
	else
		pc_page_release_thread_kick(); /* a sleeping thread expires it */
	return true;
}

size_t huge_usable(const void *p)
{
	const struct pc_huge_header *h = (const void *)((const char *)p - PC_PAGE_SIZE);
	return h->map_size - PC_PAGE_SIZE;
}

/* A fresh mapping was zeroed by the kernel; a reused one holds old data in
 * its dirty extents only (huge_dirty.c), so only they are cleared: calloc
 * of a released range faults nothing in. */
void huge_zero(void *p, size_t size)
{
	struct pc_huge_header *h = (struct pc_huge_header *)(void *)((char *)p - PC_PAGE_SIZE);
	if (h->recycled)
		huge_dirty_zero(h, PC_PAGE_SIZE + size);
}

/* Shrink block h (header page at h, `old` bytes mapped) to `total` bytes:
 * the tail is cached as a range of its own (huge_cache_put: reused by the
 * next huge malloc, or joined again when the block is freed), or unmapped
 * when the cache will not take it. */
static void shrink(struct pc_huge_header *h, size_t old, size_t total)
{
	struct pc_huge_header *tail = (struct pc_huge_header *)(void *)((char *)h + total);
	tail->map_size = old - total;
	tail->align = PC_PAGE_SIZE;
	tail->lent = false;
	huge_cache_expire(); /* first, as in huge_free */
	if (old - total < 2 * PC_PAGE_SIZE || !huge_cache_put(tail))
		os_unmap(tail, old - total);
	else
		pc_page_release_thread_kick(); /* as in huge_free */
}

/* Resize: shrink in place (the tail cached), grow in place into the cached
 * range right after the block (huge_cache_grow), else with mremap; only for
 * blocks without extra alignment (a moved mapping is only page aligned).
 * NULL on failure, p then untouched: the caller moves the block, as when
 * mremap cannot grow a block that spans two mappings (one taken from
 * ranges the cache joined, huge_cache.c). */
void *huge_realloc(void *p, size_t size)
{
	struct pc_huge_header *h = (struct pc_huge_header *)(void *)((char *)p - PC_PAGE_SIZE);
	size_t old = h->map_size, total = PC_PAGE_SIZE + pc_align_up(size, PC_PAGE_SIZE);
	if (h->align > PC_PAGE_SIZE || h->lent || size > PC_REQUEST_MAX)
		return NULL; /* the caller moves the block */
	if (total <= old) {
		h->map_size = total; /* before the tail is published */
		mapped_shrank(old - total);
		if (total < old)
			shrink(h, old, total);
		return p;
	}
	if (huge_cache_grow(h, total)) { /* the cached range after it */
		mapped_grew(h->map_size - old); /* the caller (realloc) polls */
		return p;
	}
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
	mapped_grew(total - old);
	return q;
}
