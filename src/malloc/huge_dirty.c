/*
 * malloc/huge_dirty.c - which pages of a cached huge range may hold data:
 * the dirty extents kept in the range's header page (struct pc_huge_header,
 * malloc.h, states the invariants).
 *
 * A freed block is dirty over all its data pages; a range released by the
 * cache (MADV_DONTNEED) has none. Joining two cached ranges appends the
 * higher one's extents after the lower one's, plus its header page (written,
 * so dirty); splitting one divides them. So a range made of resident and
 * released parts keeps both: the cache joins neighbours whatever their
 * state, counts only the dirty part as resident, and calloc clears only the
 * dirty pages of a block it takes (the others read zero, and a sparse user
 * does not fault them all in).
 *
 * When a join would need more than PC_HUGE_DIRTY_MAX extents, the two
 * closest are made one (the gap between them counted dirty): a superset is
 * always correct, it only costs clearing or releasing a few zero pages.
 *
 * No locks: the caller owns the range (taken from the cache, or being
 * freed).
 */
#include "malloc.h"

#include <string.h>

_Static_assert(sizeof(struct pc_huge_header) <= PC_PAGE_SIZE, "the header fits its page");

/* Make the two extents with the smallest gap between them one; returns the
 * new count. Called with every extent in use. */
static unsigned squeeze(struct pc_huge_header *h)
{
	struct pc_huge_extent *e = h->dirty;
	unsigned n = h->nr_dirty, best = 0;
	size_t best_gap = SIZE_MAX;
	for (unsigned i = 0; i + 1 < n; i++) {
		size_t gap = e[i + 1].off - (e[i].off + e[i].len);
		if (gap < best_gap) {
			best_gap = gap;
			best = i;
		}
	}
	e[best].len = e[best + 1].off + e[best + 1].len - e[best].off;
	for (unsigned i = best + 1; i + 1 < n; i++)
		e[i] = e[i + 1];
	return n - 1;
}

/* Append [off, off + len) to h's extents; off is at or beyond the start of
 * the last one (callers push in address order). */
static void push(struct pc_huge_header *h, size_t off, size_t len)
{
	struct pc_huge_extent *e = h->dirty;
	unsigned n = h->nr_dirty;
	if (len == 0)
		return;
	if (n && e[n - 1].off + e[n - 1].len >= off) { /* touching: one extent */
		size_t end = PC_MAX(e[n - 1].off + e[n - 1].len, off + len);
		e[n - 1].len = end - e[n - 1].off;
		return;
	}
	if (n == PC_HUGE_DIRTY_MAX)
		n = squeeze(h);
	e[n].off = off;
	e[n].len = len;
	h->nr_dirty = n + 1;
}

bool huge_dirty_valid(const struct pc_huge_header *h)
{
	if (h->nr_dirty > PC_HUGE_DIRTY_MAX)
		return false;
	size_t end = 0; /* of the last extent: the next starts beyond it */
	for (unsigned i = 0; i < h->nr_dirty; i++) {
		const struct pc_huge_extent *e = &h->dirty[i];
		if (e->len == 0 || e->off < PC_PAGE_SIZE || e->off <= end || e->off > h->map_size ||
		    e->len > h->map_size - e->off || ((e->off | e->len) & (PC_PAGE_SIZE - 1)))
			return false;
		end = e->off + e->len;
	}
	return true;
}

void huge_dirty_all(struct pc_huge_header *h)
{
	h->nr_dirty = 0;
	push(h, PC_PAGE_SIZE, h->map_size - PC_PAGE_SIZE);
	pc_assert_expensive(huge_dirty_valid(h));
}

size_t huge_dirty_bytes(const struct pc_huge_header *h)
{
	size_t sum = 0;
	for (unsigned i = 0; i < h->nr_dirty; i++)
		sum += h->dirty[i].len;
	return sum;
}

void huge_dirty_join(struct pc_huge_header *lo, const struct pc_huge_header *hi)
{
	size_t at = lo->map_size;
	/* hi's list is read before anything is written into its page (lo's
	 * list lives in lo's header page: no overlap). */
	unsigned n = hi->nr_dirty;
	push(lo, at, PC_PAGE_SIZE); /* hi's header page */
	for (unsigned i = 0; i < n; i++)
		push(lo, at + hi->dirty[i].off, hi->dirty[i].len);
	/* lo's size is the caller's to grow: check against the joined size. */
	pc_assert_expensive(lo->nr_dirty == 0 ||
			    lo->dirty[lo->nr_dirty - 1].off + lo->dirty[lo->nr_dirty - 1].len <= at + hi->map_size);
}

void huge_dirty_split(struct pc_huge_header *h, size_t at, struct pc_huge_header *tail)
{
	size_t data = at + PC_PAGE_SIZE; /* tail's data starts after its header */
	unsigned keep = 0;
	tail->nr_dirty = 0;
	for (unsigned i = 0; i < h->nr_dirty; i++) {
		size_t lo = h->dirty[i].off, hi = lo + h->dirty[i].len;
		if (hi > data)
			push(tail, PC_MAX(lo, data) - at, hi - PC_MAX(lo, data));
		if (lo < at) {
			h->dirty[keep].off = lo;
			h->dirty[keep].len = PC_MIN(hi, at) - lo;
			keep++;
		}
	}
	h->nr_dirty = keep;
	pc_assert_expensive(tail->nr_dirty == 0 ||
			    tail->dirty[tail->nr_dirty - 1].off + tail->dirty[tail->nr_dirty - 1].len <= tail->map_size);
}

size_t huge_dirty_release(struct pc_huge_header *h, size_t want)
{
	unsigned n = h->nr_dirty;
	if (n == 0 || want == 0)
		return 0;
	/* From the last extent down until `want` (rounded up to pages) is
	 * covered; the list changes only once the pages are gone. */
	want = pc_align_up(want, PC_PAGE_SIZE);
	size_t hi = h->dirty[n - 1].off + h->dirty[n - 1].len, lo = hi, done = 0, cut = 0;
	while (n > 0 && done < want) {
		const struct pc_huge_extent *e = &h->dirty[n - 1];
		cut = PC_MIN(e->len, want - done);
		lo = e->off + e->len - cut;
		done += cut;
		if (cut < e->len)
			break; /* the extent keeps its front */
		n--;
		cut = 0;
	}
	/* One call for the span: pages in the gaps are not resident, so
	 * MADV_DONTNEED only walks their page tables. A failure (it does not
	 * fail on a range we own) keeps the extents: still correct. */
	if (os_release((char *)h + lo, hi - lo) != 0)
		return 0;
	if (cut)
		h->dirty[n - 1].len -= cut;
	h->nr_dirty = n;
	pc_assert_expensive(huge_dirty_valid(h));
	return done;
}

void huge_dirty_zero(struct pc_huge_header *h, size_t limit)
{
	for (unsigned i = 0; i < h->nr_dirty; i++) {
		size_t lo = h->dirty[i].off, hi = PC_MIN(h->dirty[i].off + h->dirty[i].len, limit);
		if (lo < hi)
			memset((char *)h + lo, 0, hi - lo);
	}
}
