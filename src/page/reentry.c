/*
 * page/reentry.c - the page allocator's entry points as the layers above
 * call them, and what they do when a signal handler calls them while its
 * own thread is already inside the page allocator (page.h, "Re-entry").
 *
 * Every entry point that may take a page lock (a zone lock, a pcp lock, a
 * zone's grow lock) or leave page work half done (a batch in flight, a
 * release pass, an unmapping) counts itself in this thread's pc_page_depth
 * around the work (page_enter/page_leave: a TLS byte, raised before the
 * first lock is taken and lowered after the last is dropped). A call that
 * finds the depth raised was made by a signal handler (the page layer never
 * calls up, and its release hooks run with the depth at 0): it must take no
 * lock the interrupted frame may hold, and none that another thread may hold
 * while it waits for one of those (every allocator lock nests outside the
 * page locks), so it takes none:
 *   - an allocation (pc_alloc_pages*, pc_alloc_run*, pc_page_lend) returns
 *     NULL with errno ENOMEM; pc_run_grow says no;
 *   - a free (pc_free_pages, pc_free_run, pc_page_unlend, the tail of
 *     pc_run_shrink) is put on this thread's deferred list, linked through
 *     the block's own first bytes (every block is at least a page), and done
 *     by the interrupted frame's page_leave when the depth falls back to 0:
 *     with no page lock held, so the deferred free takes the ordinary path;
 *   - maintenance (pc_page_trim, pc_page_drain_all, pc_page_unmap_free,
 *     pc_page_release_due) does nothing and returns 0.
 * The layers above read the depth through pc_page_reentered() (page.h) and
 * keep such a handler off their own locks too (slab.h, malloc.h).
 *
 * Owns, per thread: pc_page_depth and page_deferred (a list a nested handler
 * may push onto: compare-and-swap; the drain takes it whole with an
 * exchange). Globally: relaxed counters of refused, deferred and drained
 * calls (pc_page_reentry_counts). The list is empty whenever the depth is 0
 * (the last page_leave drains it), so thread exit and fork (which run with
 * the depth at 0 unless a handler calls them inside the page layer, which is
 * not supported: page.h) never find a deferred block.
 */
#include "page.h"

#include <errno.h>

#define PC_TLS __attribute__((tls_model("initial-exec")))

__thread unsigned char pc_page_depth PC_TLS;

/* A block freed by a re-entered call, waiting for the depth to fall to 0. */
enum page_defer_kind { DEFER_PAGES = 1, DEFER_RUN, DEFER_LENT };
struct page_deferred {
	struct page_deferred *next;
	uint32_t kind;  /* enum page_defer_kind */
	uint32_t count; /* DEFER_PAGES: the order; else the pages */
};
static __thread struct page_deferred *_Atomic page_deferred PC_TLS;

static _Atomic uint64_t reentry_refused, reentry_deferred, reentry_drained;

void pc_page_reentry_counts(struct pc_page_reentry_counts *out)
{
	out->refused = pc_load_relaxed(&reentry_refused);
	out->deferred = pc_load_relaxed(&reentry_deferred);
	out->drained = pc_load_relaxed(&reentry_drained);
}

static PC_NOINLINE void page_drain_deferred(void);

PC_INLINE void page_enter(void)
{
	pc_page_depth++;
	atomic_signal_fence(memory_order_seq_cst); /* before any lock is taken */
}

PC_INLINE void page_leave(void)
{
	atomic_signal_fence(memory_order_seq_cst); /* after every lock is dropped */
	if (--pc_page_depth == 0 && pc_unlikely(pc_load_relaxed(&page_deferred) != NULL))
		page_drain_deferred();
}

/* A re-entered allocation or maintenance call: nothing done. */
static PC_NOINLINE void page_refuse(void)
{
	pc_add_relaxed(&reentry_refused, 1);
}

static PC_NOINLINE void *page_refuse_alloc(void)
{
	page_refuse();
	errno = ENOMEM;
	return NULL;
}

/* A re-entered free: p's first bytes link it into this thread's list. */
static PC_NOINLINE void page_defer(void *p, enum page_defer_kind kind, size_t count)
{
	if (pc_unlikely(!pc_page_of(p) || ((uintptr_t)p & (PC_PAGE_SIZE - 1))))
		pc_fatal("page free of %p in a signal handler: not a page of the allocator", p);
	struct page_deferred *d = p;
	d->kind = kind;
	d->count = (uint32_t)count;
	struct page_deferred *head = pc_load_relaxed(&page_deferred);
	do /* a compare-and-swap: a nested handler may push meanwhile */
		d->next = head;
	while (!pc_cas_weak_relaxed(&page_deferred, &head, d));
	pc_add_relaxed(&reentry_deferred, 1);
}

/* The depth fell to 0 with blocks deferred: free them now, each through its
 * entry point (a handler that interrupts this defers again, onto a new
 * list, which that free's own page_leave drains). */
static PC_NOINLINE void page_drain_deferred(void)
{
	/* An exchange, so that a handler's push cannot be lost between our load
	 * and store (same thread: the order needs no fence beyond this). */
	struct page_deferred *d = pc_xchg_acquire(&page_deferred, NULL);
	int saved = errno; /* the interrupted call's ENOMEM stays */
	while (d) {
		struct page_deferred *next = d->next;
		enum page_defer_kind kind = d->kind;
		uint32_t count = d->count;
		pc_add_relaxed(&reentry_drained, 1);
		if (kind == DEFER_PAGES)
			pc_free_pages(d, count);
		else if (kind == DEFER_RUN)
			pc_free_run(d, count);
		else
			pc_page_unlend(d, count);
		d = next;
	}
	errno = saved;
}

void pc_page_reentry_enter(void)
{
	page_enter();
}

void pc_page_reentry_leave(void)
{
	page_leave();
}

/* ---- allocation ------------------------------------------------------------ */
void *pc_alloc_pages(unsigned order)
{
	if (pc_unlikely(pc_page_reentered()))
		return page_refuse_alloc();
	page_enter();
	void *p = page_alloc_pages(order);
	page_leave();
	return p;
}

void *pc_alloc_pages_node(unsigned order, unsigned node)
{
	if (pc_unlikely(pc_page_reentered()))
		return page_refuse_alloc();
	page_enter();
	void *p = page_alloc_pages_node(order, node);
	page_leave();
	return p;
}

void *pc_alloc_run_aligned(size_t pages, size_t align_pages)
{
	if (pc_unlikely(pc_page_reentered()))
		return page_refuse_alloc();
	page_enter();
	void *p = page_alloc_run_aligned(pages, align_pages);
	page_leave();
	return p;
}

void *pc_alloc_run(size_t pages)
{
	return pc_alloc_run_aligned(pages, 1);
}

unsigned pc_alloc_runs(size_t pages, void **out, unsigned n)
{
	if (pc_unlikely(pc_page_reentered())) {
		page_refuse();
		return 0;
	}
	page_enter();
	unsigned got = page_alloc_runs(pages, out, n);
	page_leave();
	return got;
}

bool pc_run_grow(void *p, size_t pages, size_t to)
{
	if (pc_unlikely(pc_page_reentered())) {
		page_refuse();
		return to == pages;
	}
	page_enter();
	bool ok = page_run_grow(p, pages, to);
	page_leave();
	return ok;
}

void *pc_page_lend(size_t pages, bool *fresh)
{
	if (pc_unlikely(pc_page_reentered()))
		return page_refuse_alloc();
	page_enter();
	void *p = page_lend(pages, fresh);
	page_leave();
	return p;
}

/* ---- free ------------------------------------------------------------------ */
void pc_free_pages(void *p, unsigned order)
{
	if (pc_unlikely(pc_page_reentered())) {
		page_defer(p, DEFER_PAGES, order);
		return;
	}
	page_enter();
	page_free_pages(p, order);
	page_leave();
}

void pc_free_run(void *p, size_t pages)
{
	if (pc_unlikely(pc_page_reentered())) {
		page_defer(p, DEFER_RUN, pages);
		return;
	}
	page_enter();
	page_free_run(p, pages);
	page_leave();
}

/* Re-entered, the tail waits as a run of its own: it is one (its pages are
 * in use, inside the caller's run), and its owner keeps only the head. */
void pc_run_shrink(void *p, size_t pages, size_t to)
{
	if (pc_unlikely(pc_page_reentered())) {
		pc_assert(to >= 1 && to <= pages);
		if (to < pages)
			page_defer((char *)p + (to << PC_PAGE_SHIFT), DEFER_RUN, pages - to);
		return;
	}
	page_enter();
	page_run_shrink(p, pages, to);
	page_leave();
}

void pc_page_unlend(void *p, size_t pages)
{
	if (pc_unlikely(pc_page_reentered())) {
		page_defer(p, DEFER_LENT, pages);
		return;
	}
	page_enter();
	page_unlend(p, pages);
	page_leave();
}

/* ---- maintenance ------------------------------------------------------------ */
size_t pc_page_trim(void)
{
	if (pc_unlikely(pc_page_reentered())) {
		page_refuse();
		return 0;
	}
	page_enter();
	size_t released = page_trim();
	page_leave();
	return released;
}

void pc_page_drain_all(void)
{
	if (pc_unlikely(pc_page_reentered())) {
		page_refuse();
		return;
	}
	page_enter();
	page_drain_all();
	page_leave();
}

size_t pc_page_unmap_free(void)
{
	if (pc_unlikely(pc_page_reentered())) {
		page_refuse();
		return 0;
	}
	page_enter();
	size_t n = page_unmap_free();
	page_leave();
	return n;
}

size_t pc_page_release_due(void)
{
	if (pc_unlikely(pc_page_reentered())) {
		page_refuse();
		return 0;
	}
	page_enter();
	size_t released = page_release_due();
	page_leave();
	return released;
}
