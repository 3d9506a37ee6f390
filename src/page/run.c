/*
 * page/run.c - runs: exact page counts for medium and large malloc blocks
 * (issue 9: a block of n pages costs n pages, not the next power of two).
 *
 * Why not the buddy lists: a buddy block is a power of two, aligned. Cutting
 * an n-page run out of one and freeing the tail back as aligned pieces was
 * measured (docs/pages.md): the pieces of freed runs cannot serve the next
 * run (which needs an aligned block again) and slabs take them, so the zone
 * fills with fragments and the mixed-size workload needed twice the memory.
 * So runs live apart, in chunks: buddy blocks of PC_MAX_ORDER (4 MiB) that
 * the zone hands to its run heap whole. Inside its chunks the heap keeps
 * free runs of any length, best fit, coalesced at once with their free
 * neighbours (glibc and jemalloc place large blocks this way); a chunk that
 * becomes wholly free goes back to the buddy lists, where it ages and is
 * released like any free block. Slabs and pc_alloc_pages never see a chunk,
 * as the kernel keeps movable and unmovable pages in separate pageblocks.
 *
 * A free run of n pages: its head descriptor has state PC_PG_RUN and aux n,
 * and is on run_bins[n]; its last descriptor (n >= 2, unless the run ends
 * where its chunk does: has_end) has state PC_PG_RUN_END and aux n, so that
 * a run freed just after it finds its head in O(1). Every other page of it
 * has state PC_PG_NONE. run_bitmap has bit n
 * set iff run_bins[n] is not empty, so the best fit is a bit scan (a bin
 * with its bit clear may be uninitialised: see zone_run_init). A bin has
 * two lists, as a buddy order has: dirty runs (newest at the head, so the
 * oldest, next to release, at the tail) and the others; allocation takes
 * the warmest dirty run of the length first. A free
 * run never crosses its chunk's edge, and no free run is next to another
 * one in the same chunk (coalescing is complete).
 *
 * Everything here runs under zone->lock (it is part of the zone's free
 * memory, just kept apart); the per-CPU lists of runs are in pcp.c.
 */
#include "page.h"

/* Bins are initialised when first used (run_insert), so that a zone that
 * never holds a free run of some length does not touch its list head: the
 * 1025 bins are 16 KiB, a fixed cost for every small program. A bin whose
 * bitmap bit is clear counts as empty whatever its memory holds. */
void zone_run_init(struct pc_zone *z)
{
	(void)z; /* the zone is zeroed memory: every bitmap bit clear */
}

static bool bin_used(const struct pc_zone *z, size_t n)
{
	return (z->run_bitmap[n >> 6] >> (n & 63)) & 1;
}

static size_t chunk_start(size_t idx)
{
	return idx & ~(PC_RUN_MAX_PAGES - 1);
}

/* Whether the free run [idx, idx + n) has an end descriptor (PC_PG_RUN_END):
 * not if it is one page long, nor if it ends where its chunk does, where no
 * run is freed after it (runs never merge across a chunk's edge): a chunk
 * cut from its start leaves its last descriptor page untouched, 4 KiB of
 * RSS for a program whose runs fill only the start of its chunk. */
static bool has_end(size_t idx, size_t n)
{
	return n > 1 && idx + n != chunk_start(idx) + PC_RUN_MAX_PAGES;
}

/* Put [idx, idx + n) of r on the heap as one free run backed by `mem`
 * (freed at freed_ns if DIRTY), at the head of its bin's list. */
static void run_insert(struct pc_zone *z, struct pc_region *r, size_t idx, size_t n,
		       enum pc_mem mem, uint64_t freed_ns)
{
	struct pc_page *head = &r->pages[idx];
	head->aux = (uint32_t)n;
	head->mem = (uint8_t)mem;
	head->freed_ns = freed_ns;
	pc_pg_set_state(head, PC_PG_RUN);
	if (has_end(idx, n)) {
		r->pages[idx + n - 1].aux = (uint32_t)n;
		pc_pg_set_state(&r->pages[idx + n - 1], PC_PG_RUN_END);
	}
	struct pc_run_bin *bin = &z->run_bins[n];
	if (!bin_used(z, n)) {
		pc_list_init(&bin->dirty);
		pc_list_init(&bin->clean);
	}
	if (mem == PC_MEM_DIRTY) {
		pc_list_add(&head->list, &bin->dirty);
		z->run_dirty_pages += n;
	} else {
		pc_list_add(&head->list, &bin->clean);
	}
	z->run_bitmap[n >> 6] |= (uint64_t)1 << (n & 63);
	z->run_free_pages += n;
}

/* Take a free run off the heap; its pages are PC_PG_NONE after. */
static void run_remove(struct pc_zone *z, struct pc_page *head)
{
	size_t n = head->aux;
	pc_list_del(&head->list);
	if (pc_list_empty(&z->run_bins[n].dirty) && pc_list_empty(&z->run_bins[n].clean))
		z->run_bitmap[n >> 6] &= ~((uint64_t)1 << (n & 63));
	z->run_free_pages -= n;
	if (head->mem == PC_MEM_DIRTY)
		z->run_dirty_pages -= n;
	pc_pg_set_state(head, PC_PG_NONE);
	if (has_end((size_t)(head - pc_page_region(head)->pages), n))
		pc_pg_set_state(head + n - 1, PC_PG_NONE);
}

/* Smallest length >= n with a free run, or 0. */
static size_t best_fit(const struct pc_zone *z, size_t n)
{
	size_t w = n >> 6;
	uint64_t bits = z->run_bitmap[w] & (~(uint64_t)0 << (n & 63));
	for (;;) {
		if (bits)
			return (w << 6) + (size_t)__builtin_ctzll(bits);
		if (++w > PC_RUN_MAX_PAGES / 64)
			return 0;
		bits = z->run_bitmap[w];
	}
}

/* What backs two merged free runs: the max of their mem (dirty if either
 * may be resident), freed when the newer dirty part was (as buddy blocks:
 * released later, never earlier). */
static void run_merge_mem(enum pc_mem *mem, uint64_t *freed_ns, const struct pc_page *other)
{
	if (other->mem == PC_MEM_DIRTY)
		*freed_ns = *mem == PC_MEM_DIRTY ? PC_MAX(*freed_ns, other->freed_ns) : other->freed_ns;
	*mem = PC_MAX(*mem, (enum pc_mem)other->mem);
}

/*
 * Free [idx, idx + n) of r into the heap, backed by `mem` (freed at
 * freed_ns): merged with the free run that ends just before it and the one
 * that starts just after it (within the chunk). A chunk wholly free goes
 * back to the buddy lists.
 */
static void run_free_range(struct pc_zone *z, struct pc_region *r, size_t idx, size_t n,
			   enum pc_mem mem, uint64_t freed_ns)
{
	size_t start = chunk_start(idx);
	if (idx > start) {
		struct pc_page *prev = &r->pages[idx - 1];
		unsigned st = pc_pg_state(prev);
		if (st == PC_PG_RUN_END || st == PC_PG_RUN) {
			size_t len = st == PC_PG_RUN ? 1 : prev->aux;
			run_merge_mem(&mem, &freed_ns, prev - len + 1);
			run_remove(z, prev - len + 1);
			idx -= len;
			n += len;
		}
	}
	if (idx + n < start + PC_RUN_MAX_PAGES && pc_pg_state(&r->pages[idx + n]) == PC_PG_RUN) {
		struct pc_page *next = &r->pages[idx + n];
		run_merge_mem(&mem, &freed_ns, next);
		n += next->aux;
		run_remove(z, next);
	}
	if (n == PC_RUN_MAX_PAGES) { /* the whole chunk: back to the buddy lists */
		z->run_chunk_pages -= PC_RUN_MAX_PAGES;
		/* freed when its newest dirty part was, as a merged run */
		zone_free_block_at_locked(z, &r->pages[idx], PC_MAX_ORDER, mem, freed_ns);
		return;
	}
	run_insert(z, r, idx, n, mem, freed_ns);
}

/* A new chunk from the buddy lists, its pages one free run; false if none. */
static bool run_grow_heap(struct pc_zone *z)
{
	struct pc_page *pg = zone_alloc_block_locked(z, PC_MAX_ORDER, false);
	if (!pg)
		return false;
	struct pc_region *r = pc_page_region(pg);
	z->run_chunk_pages += PC_RUN_MAX_PAGES;
	run_insert(z, r, (size_t)(pg - r->pages), PC_RUN_MAX_PAGES, (enum pc_mem)pg->mem, pg->freed_ns);
	return true;
}

/*
 * A run of `pages` whose start is aligned to align_pages (1: a page): the
 * best fit (smallest free run that holds it, the most recently freed of its
 * length), split; the parts before and after go back. With an alignment,
 * a run long enough for any placement (pages + align_pages - 1). NULL if
 * neither the heap nor the buddy lists have room. Head state PC_PG_NONE.
 */
struct pc_page *zone_run_alloc_locked(struct pc_zone *z, size_t pages, size_t align_pages)
{
	pc_lock_assert_held(&z->lock);
	size_t need = PC_MIN(pages + align_pages - 1, PC_RUN_MAX_PAGES);
	size_t len = best_fit(z, need);
	if (!len) {
		if (!run_grow_heap(z))
			return NULL;
		len = best_fit(z, need);
	}
	struct pc_run_bin *bin = &z->run_bins[len];
	struct pc_page *head = pc_list_first(pc_list_empty(&bin->dirty) ? &bin->clean : &bin->dirty,
					     struct pc_page, list);
	struct pc_region *r = pc_page_region(head);
	size_t idx = (size_t)(head - r->pages);
	size_t at = (idx + align_pages - 1) & ~(align_pages - 1);
	/* Cannot fail: a run of need pages holds an aligned start, and when need
	 * is capped at a chunk, only a fresh chunk (aligned to 4 MiB) fits it. */
	if (pc_unlikely(at + pages > idx + len))
		return NULL;
	enum pc_mem mem = (enum pc_mem)head->mem; /* the pieces left keep it */
	uint64_t freed_ns = head->freed_ns;
	run_remove(z, head);
	/* The pieces left go straight back on the bins, not through
	 * run_free_range: their outer neighbours are not free (coalescing was
	 * complete) and their inner one is the run handed out, so there is
	 * nothing to merge, and no descriptor is read before it is written. A
	 * descriptor page of a chunk cut for the first time has never been
	 * touched: a read there maps the zero page and the write after it
	 * faults again to copy it, with a TLB flush of every CPU the process
	 * runs on (do_wp_page), all under the zone lock: 16% of the samples of
	 * bench_mixed at 16 threads (docs/pages-medium.md). */
	if (at > idx)
		run_insert(z, r, idx, at - idx, mem, freed_ns);
	if (at + pages < idx + len)
		run_insert(z, r, at + pages, idx + len - at - pages, mem, freed_ns);
	return &r->pages[at];
}

/*
 * Up to n runs of `pages` pages (page aligned) onto `out` (through their
 * heads' list), heads PC_PG_NONE keeping the mem and freed time of the free
 * run they were cut from (as zone_run_alloc_locked's). Each free run taken
 * (the best fit for one run, as zone_run_alloc_locked's: the best fit for
 * all n cut big free runs where small freed ones were reused before, and
 * bench_mixed's peak RSS grew by a third) is removed once, cut into as
 * many runs as it holds from its start, and what is left of it inserted
 * once: a per-CPU refill of n runs cost n removals and n insertions of the
 * rest of one free run, all under the zone lock (pcp.c;
 * docs/pages-medium.md, "2026-11-24 evening, helper medium3"). Returns how many.
 */
unsigned zone_run_alloc_many_locked(struct pc_zone *z, size_t pages, unsigned n, struct pc_list *out)
{
	pc_lock_assert_held(&z->lock);
	unsigned got = 0;
	while (got < n) {
		size_t len = best_fit(z, pages);
		if (!len) {
			if (!run_grow_heap(z))
				break;
			len = best_fit(z, pages);
		}
		struct pc_run_bin *bin = &z->run_bins[len];
		struct pc_page *head = pc_list_first(pc_list_empty(&bin->dirty) ? &bin->clean : &bin->dirty,
						     struct pc_page, list);
		struct pc_region *r = pc_page_region(head);
		size_t idx = (size_t)(head - r->pages), k = PC_MIN(len / pages, (size_t)(n - got));
		enum pc_mem mem = (enum pc_mem)head->mem;
		uint64_t freed_ns = head->freed_ns;
		run_remove(z, head);
		/* The rest first, as zone_run_alloc_locked: no descriptor read
		 * before it is written. */
		if (k * pages < len)
			run_insert(z, r, idx + k * pages, len - k * pages, mem, freed_ns);
		for (size_t i = 0; i < k; i++) {
			struct pc_page *pg = &r->pages[idx + i * pages];
			pg->mem = (uint8_t)mem;
			pg->freed_ns = freed_ns;
			pc_pg_set_state(pg, PC_PG_NONE);
			pc_list_add_tail(&pg->list, out);
		}
		got += (unsigned)k;
	}
	return got;
}

/* Free a run of `pages` (head state already PC_PG_NONE) backed by `mem`,
 * freed at page-clock time freed_ns if DIRTY (a batch reads the clock once;
 * a refill's run that goes back unused keeps what it had: pcp.c). */
void zone_run_free_mem_locked(struct pc_zone *z, struct pc_page *pg, size_t pages, enum pc_mem mem,
			      uint64_t freed_ns)
{
	struct pc_region *r = pc_page_region(pg);
	pc_lock_assert_held(&z->lock);
	run_free_range(z, r, (size_t)(pg - r->pages), pages, mem, mem == PC_MEM_DIRTY ? freed_ns : 0);
}

/* The same for a run that was handed out: dirty, freed at `now`. */
void zone_run_free_at_locked(struct pc_zone *z, struct pc_page *pg, size_t pages, uint64_t now)
{
	zone_run_free_mem_locked(z, pg, pages, PC_MEM_DIRTY, now);
}

void zone_run_free_locked(struct pc_zone *z, struct pc_page *pg, size_t pages)
{
	zone_run_free_at_locked(z, pg, pages, pc_page_clock_ns());
}

/* Lengthen the run at pg from `pages` to `to` if a free run long enough
 * starts right after it in the same chunk; what it does not need stays free. */
bool zone_run_claim_locked(struct pc_zone *z, struct pc_page *pg, size_t pages, size_t to)
{
	struct pc_region *r = pc_page_region(pg);
	size_t idx = (size_t)(pg - r->pages), end = idx + pages;
	pc_lock_assert_held(&z->lock);
	if (chunk_start(idx) + PC_RUN_MAX_PAGES < idx + to || end == chunk_start(idx) + PC_RUN_MAX_PAGES)
		return false;
	struct pc_page *next = &r->pages[end];
	if (pc_pg_state(next) != PC_PG_RUN || next->aux < to - pages)
		return false;
	size_t len = next->aux;
	enum pc_mem mem = (enum pc_mem)next->mem;
	uint64_t freed_ns = next->freed_ns;
	run_remove(z, next);
	if (len > to - pages)
		run_insert(z, r, idx + to, len - (to - pages), mem, freed_ns);
	return true;
}

/* pc_page_trim: give every dirty free run of the heap back to the OS (under
 * the lock: trim is rare, and a run released must not be handed out
 * meanwhile). Returns the bytes released. */
size_t zone_run_release_locked(struct pc_zone *z)
{
	size_t bytes = 0;
	for (size_t n = 1; n <= PC_RUN_MAX_PAGES; n++) {
		if (!bin_used(z, n))
			continue;
		struct pc_list *dirty = &z->run_bins[n].dirty;
		for (struct pc_list *it = dirty->next, *next; it != dirty; it = next) {
			struct pc_page *pg = pc_list_entry(it, struct pc_page, list);
			next = it->next;
			if (os_release(pc_page_address(pg), n << PC_PAGE_SHIFT) != 0)
				continue;
			bytes += n << PC_PAGE_SHIFT;
			pc_list_del(&pg->list);
			pc_list_add(&pg->list, &z->run_bins[n].clean);
			pg->mem = PC_MEM_RELEASED;
			z->run_dirty_pages -= n;
		}
	}
	return bytes;
}

/* ---- delayed release of free runs ------------------------------------------- */
/*
 * Free runs inside chunks that are still partly used never reach the buddy
 * lists, so the buddy lists' release passes do not see them. Each pass of
 * release.c therefore also takes the dirty free runs freed before due_before
 * off the heap, a batch at a time under the zone lock, releases them with
 * the lock dropped and frees them back as RELEASED (merging with whatever
 * became free next to them meanwhile). A bin's dirty list is taken from its
 * tail (the oldest) up to its first run not yet due; a pass takes no more
 * than RUN_SCAN_MAX runs, so that it ends. A run split off a larger one
 * keeps its time and may sit nearer the head than its age says: it is then
 * released later, never earlier.
 */
#define RUN_RELEASE_BATCH 32
#define RUN_SCAN_MAX 1024

static unsigned run_take_due_locked(struct pc_zone *z, uint64_t due_before, size_t *budget,
				    struct pc_page **runs)
{
	unsigned taken = 0;
	for (size_t w = 0; w <= PC_RUN_MAX_PAGES / 64; w++) {
		for (uint64_t bits = z->run_bitmap[w]; bits; bits &= bits - 1) {
			size_t n = (w << 6) + (size_t)__builtin_ctzll(bits);
			struct pc_list *dirty = &z->run_bins[n].dirty;
			for (struct pc_list *it = dirty->prev, *prev; it != dirty; it = prev) {
				struct pc_page *pg = pc_list_entry(it, struct pc_page, list);
				prev = it->prev;
				if (taken == RUN_RELEASE_BATCH || *budget == 0)
					return taken;
				if (pg->freed_ns >= due_before)
					break;
				--*budget;
				run_remove(z, pg); /* aux (its length) stays */
				pc_list_add(&pg->list, &z->release_held_runs); /* the grow wait */
				runs[taken++] = pg;
			}
		}
	}
	return taken;
}

size_t zone_run_release_due(struct pc_zone *z, uint64_t due_before)
{
	struct pc_page *runs[RUN_RELEASE_BATCH];
	size_t released = 0, budget = RUN_SCAN_MAX;
	bool ok = true;
	while (ok && pc_load_relaxed(&z->run_dirty_hint) != 0 && !page_fork_pending()) {
		pc_lock_acquire(&z->lock);
		unsigned n = run_take_due_locked(z, due_before, &budget, runs);
		z->in_flight += n > 0; /* off the heap until freed back: fork waits */
		zone_publish_hints_locked(z);
		pc_lock_release(&z->lock);
		if (n == 0)
			break;
		pc_page_test_point(PC_PAGE_TEST_RELEASE_TAKEN);
		bool done[RUN_RELEASE_BATCH];
		for (unsigned i = 0; i < n; i++) {
			size_t bytes = (size_t)runs[i]->aux << PC_PAGE_SHIFT;
			done[i] = ok && page_release_memory(pc_page_address(runs[i]), bytes) == 0;
			ok = done[i];
			released += done[i] ? bytes : 0;
		}
		pc_lock_acquire(&z->lock);
		for (unsigned i = 0; i < n; i++) {
			struct pc_region *r = pc_page_region(runs[i]);
			pc_list_del(&runs[i]->list); /* off release_held_runs */
			run_free_range(z, r, (size_t)(runs[i] - r->pages), runs[i]->aux,
				       done[i] ? PC_MEM_RELEASED : PC_MEM_DIRTY, runs[i]->freed_ns);
		}
		z->in_flight--;
		zone_publish_hints_locked(z);
		pc_lock_release(&z->lock);
	}
	pc_add_relaxed(&z->stats.released_pages, released >> PC_PAGE_SHIFT);
	return released;
}

/* ---- what release batches would give back (the grow wait) ---------------- */

/* Under z->lock: the run a release pass holds (z->release_held_runs) that
 * starts at page `at` of r (or, with ends, ends just before it), or NULL. */
static struct pc_page *held_run_at(struct pc_zone *z, struct pc_region *r, size_t at, bool ends)
{
	struct pc_list *it;
	pc_list_for_each(it, &z->release_held_runs) {
		struct pc_page *pg = pc_list_entry(it, struct pc_page, list);
		if (pc_page_region(pg) == r && (size_t)(pg - r->pages) + (ends ? pg->aux : 0) == at)
			return pg;
	}
	return NULL;
}

/* Under z->lock: the free run the held run pg becomes once it and every
 * other held run are back: it, and the free and held runs it touches
 * through each other, to either side within its chunk (run_free_range
 * merges so; PC_RUN_MAX_PAGES: the whole chunk, back to the buddy lists
 * as a block of the top order). */
static size_t held_run_merged(struct pc_zone *z, struct pc_page *pg)
{
	struct pc_region *r = pc_page_region(pg);
	size_t idx = (size_t)(pg - r->pages), start = chunk_start(idx), lo = idx, hi = idx + pg->aux;
	while (lo > start) {
		const struct pc_page *prev = &r->pages[lo - 1], *held;
		unsigned st = pc_pg_state(prev);
		if (st == PC_PG_RUN_END || st == PC_PG_RUN)
			lo -= st == PC_PG_RUN ? 1 : prev->aux;
		else if ((held = held_run_at(z, r, lo, true)) != NULL)
			lo -= held->aux;
		else
			break;
	}
	while (hi < start + PC_RUN_MAX_PAGES) {
		const struct pc_page *next = &r->pages[hi], *held;
		if (pc_pg_state(next) == PC_PG_RUN)
			hi += next->aux;
		else if ((held = held_run_at(z, r, hi, false)) != NULL)
			hi += held->aux;
		else
			break;
	}
	return hi - lo;
}

/*
 * Under z->lock: whether the free runs release passes hold would, once
 * freed back, give a free run of `need` pages or more: one of them merged
 * with what it touches (held_run_merged; need PC_RUN_MAX_PAGES: a wholly
 * free chunk, a block of the top order for the buddy lists). Exact for the
 * heap as it is: a run of need pages or more is what zone_run_alloc_locked's
 * best fit takes. What the grow wait asks before it waits (page_alloc.c).
 */
bool zone_held_runs_serve_locked(struct pc_zone *z, size_t need)
{
	pc_lock_assert_held(&z->lock);
	struct pc_list *it;
	pc_list_for_each(it, &z->release_held_runs) {
		struct pc_page *pg = pc_list_entry(it, struct pc_page, list);
		if (pg->aux >= need || held_run_merged(z, pg) >= need)
			return true;
	}
	return false;
}

/* One free run found on bins[n]'s dirty (d) or clean list. */
static bool run_check_one(struct pc_zone *z, struct pc_page *pg, size_t n, bool d)
{
	struct pc_region *r = pc_page_region(pg);
	size_t idx = (size_t)(pg - r->pages), start = chunk_start(idx);
	PC_PAGE_CHECK(r->zone == z && pc_pg_state(pg) == PC_PG_RUN && pg->aux == n,
		  "zone %u: %zu-page run bin holds state %u length %u", z->id, n,
		  pc_pg_state(pg), pg->aux);
	PC_PAGE_CHECK((pg->mem == PC_MEM_DIRTY) == d, "zone %u: %zu-page run with mem %u on the %s list",
		  z->id, n, pg->mem, d ? "dirty" : "clean");
	PC_PAGE_CHECK(idx + n <= start + PC_RUN_MAX_PAGES && n < PC_RUN_MAX_PAGES,
		  "zone %u: free run leaves its chunk", z->id);
	PC_PAGE_CHECK(!has_end(idx, n) || (pc_pg_state(pg + n - 1) == PC_PG_RUN_END && pg[n - 1].aux == n),
		  "zone %u: free run of %zu without its end", z->id, n);
	PC_PAGE_CHECK(has_end(idx, n) || n == 1 || pc_pg_state(pg + n - 1) == PC_PG_NONE,
		  "zone %u: free run of %zu at its chunk's end with an end mark", z->id, n);
	PC_PAGE_CHECK(idx == start || (pc_pg_state(pg - 1) != PC_PG_RUN &&
				   pc_pg_state(pg - 1) != PC_PG_RUN_END),
		  "zone %u: free runs not coalesced", z->id);
	PC_PAGE_CHECK(idx + n == start + PC_RUN_MAX_PAGES || pc_pg_state(pg + n) != PC_PG_RUN,
		  "zone %u: free runs not coalesced", z->id);
	return true;
}

/* The heap's invariants (top of the file); *listed = free runs on the bins. */
bool zone_run_check_locked(struct pc_zone *z, size_t *listed)
{
	size_t pages = 0, dirty = 0;
	for (size_t n = 1; n <= PC_RUN_MAX_PAGES; n++) {
		if (!bin_used(z, n)) /* empty, maybe never initialised */
			continue;
		struct pc_run_bin *bin = &z->run_bins[n];
		PC_PAGE_CHECK(!pc_list_empty(&bin->dirty) || !pc_list_empty(&bin->clean),
			  "zone %u: run bitmap bit %zu wrong", z->id, n);
		for (int d = 0; d < 2; d++) {
			struct pc_list *it, *list = d ? &bin->dirty : &bin->clean;
			pc_list_for_each(it, list) {
				if (!run_check_one(z, pc_list_entry(it, struct pc_page, list), n, d))
					return false;
				pages += n;
				dirty += d ? n : 0;
				(*listed)++;
			}
		}
	}
	PC_PAGE_CHECK(pages == z->run_free_pages, "zone %u: run_free_pages %zu, bins %zu", z->id,
		  z->run_free_pages, pages);
	PC_PAGE_CHECK(dirty == z->run_dirty_pages, "zone %u: run_dirty_pages %zu, bins %zu", z->id,
		  z->run_dirty_pages, dirty);
	PC_PAGE_CHECK(pages <= z->run_chunk_pages, "zone %u: more free run pages than chunks", z->id);
	return true;
}
