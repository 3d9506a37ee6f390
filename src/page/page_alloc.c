/*
 * page/page_alloc.c - the entry points of the page allocator: choosing a
 * zone, the per-CPU fast path, fallback to other zones and nodes, growth,
 * running out of memory, trimming and fork.
 *
 * Fast path (orders <= PC_PCP_MAX_ORDER): try-lock the current CPU's pcp of
 * the preferred zone and take a block from it. If the pcp lock is busy the
 * caller never waits for it: it goes to the zone under the zone lock.
 * Slow path: other zones with free memory (same node first), then the
 * preferred zone once a release batch in flight there is back (a bounded
 * wait), then a new region for it, then, before giving up, every pcp
 * drained.
 * Runs (run.c) take the same paths: per-CPU lists up to PC_PCP_MAX_RUN
 * pages, else the zone's run heap under the zone lock.
 */
#include "page.h"

#include <errno.h>

struct pc_region *_Atomic pc_region_table[(size_t)1 << PC_REGION_TABLE_BITS];
void (*_Atomic pc_page_test_hook)(enum pc_page_test_point at);
_Atomic bool page_forking;

/* What is asked for: a buddy block of `order` (pages == 0), or a run of
 * `pages` aligned to align_pages. */
struct page_req {
	unsigned order;
	size_t pages, align_pages;
};

static size_t req_pages(const struct page_req *rq)
{
	return rq->pages ? rq->pages : (size_t)1 << rq->order;
}

/* Under z->lock: the block or run, head state PC_PG_ALLOC, or NULL. */
static struct pc_page *zone_alloc_req_locked(struct pc_zone *z, const struct page_req *rq)
{
	struct pc_page *pg = rq->pages ? zone_run_alloc_locked(z, rq->pages, rq->align_pages)
				       : zone_alloc_block_locked(z, rq->order, true);
	if (pg)
		pc_pg_set_state(pg, PC_PG_ALLOC);
	return pg;
}

static struct pc_page *zone_alloc_req(struct pc_zone *z, const struct page_req *rq)
{
	pc_lock_acquire(&z->lock);
	pc_page_test_point(PC_PAGE_TEST_ZONE_LOCKED);
	struct pc_page *pg = zone_alloc_req_locked(z, rq);
	zone_publish_hints_locked(z);
	pc_lock_release(&z->lock);
	return pg;
}

/* Whether the request goes through a per-CPU list. */
static bool req_pcp(const struct page_req *rq)
{
	return rq->pages ? rq->pages <= PC_PCP_MAX_RUN && rq->align_pages == 1
			 : rq->order <= PC_PCP_MAX_ORDER;
}

/* One block or run from zone z: through the pcp of `cpu` when the request
 * allows and the pcp is free, else from the zone. NULL if z has none. */
static struct pc_page *zone_take(struct pc_zone *z, unsigned cpu, const struct page_req *rq)
{
	if (req_pcp(rq)) {
		struct pc_pcp *pcp = &z->pcp[cpu];
		if (pc_likely(pc_spin_stat_trylock(&pcp->lock))) {
			pc_page_test_point(PC_PAGE_TEST_PCP_LOCKED);
			unsigned run = (unsigned)rq->pages;
			unsigned order = run ? pc_log2(run) : rq->order;
			struct pc_page *pg = pcp_take(pcp, order, run);
			if (pc_likely(pg != NULL)) {
				pc_spin_stat_unlock(&pcp->lock);
				if (page_stats_on())
					pc_add_relaxed(&z->stats.pcp_hits, 1);
				return pg;
			}
			struct pcp_refill r;
			pcp_refill_plan(pcp, order, run, &r);
			pc_spin_stat_unlock(&pcp->lock); /* not held while the zone lock is waited for */
			pg = pcp_refill(z, pcp, &r);
			if (pg && page_stats_on()) /* served through the pcp, by its refill, */
				pc_add_relaxed(r.landed ? &z->stats.pcp_hits : &z->stats.pcp_busy, 1);
				/* or a zone round trip: the pcp was busy when it came back */
			zone_maybe_release(z); /* a slow path: time for a release pass? */
			return pg;
		}
		if (page_stats_on())
			pc_add_relaxed(&z->stats.pcp_busy, 1);
	}
	struct pc_page *pg = zone_alloc_req(z, rq);
	if (pg)
		zone_release_if_over(z); /* the footprint may have passed its peak */
	return pg;
}

/*
 * A block from a zone other than `skip` that looks like it has free memory
 * (racy hint: a stale value costs one lock round trip at most): from zones of
 * `node` only, or from other nodes only; and only from zones with at least
 * `min_free` free pages.
 */
static struct pc_page *take_elsewhere(struct pc_zone *skip, unsigned node, bool same_node,
				      size_t min_free, unsigned cpu, const struct page_req *rq)
{
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		if (z == skip || (z->node == node) != same_node)
			continue;
		if (pc_load_relaxed(&z->free_hint) < PC_MAX(min_free, req_pages(rq)))
			continue;
		struct pc_page *pg = zone_take(z, cpu, rq);
		if (pg) {
			if (page_stats_on())
				pc_add_relaxed(&z->stats.fallbacks, 1);
			return pg;
		}
	}
	return NULL;
}

/* Last resort before failing: drain every pcp, then try every zone. */
static struct pc_page *take_after_drain(const struct page_req *rq)
{
	page_drain_all();
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_page *pg = zone_alloc_req(pc_zone_get(i), rq);
		if (pg)
			return pg;
	}
	return NULL;
}

/* With 8 copies of medium_idle's old burst at once on 2 cores
 * (load average 15-21), 30 ms ran out in 3 runs of about 220 and 50 ms in
 * 1 of 240 (the zone then grew, as before: docs/pages.md, "helper
 * growwait"). */
#define GROW_WAIT_NS 50000000u /* 50 ms */

/*
 * Under z->lock: whether what release batches of z hold off its lists
 * would serve rq once back, alone or merged with its free neighbours and
 * the other held pieces (buddy.c, zone_held_blocks_serve_locked: the
 * blocks, by the buddy structure; run.c, zone_held_runs_serve_locked: the
 * free runs, by their chunks). A block request: a free block of its order
 * or more, or a chunk wholly free (a top-order block). A run request: a
 * free run of `need` pages (with an alignment, its worst placement, as
 * zone_run_alloc_locked sizes it), or a top-order block for the run heap.
 * Exact for the zone as it is at the look (the lists can change while it
 * waits: each turn looks again). Not waited for: an unmapping (unmap.c: a
 * wholly free region going away, which no request gets back), pieces that
 * cannot serve the request even merged (a pass over small blocks, or over
 * free runs of partly used chunks, while a 4 MiB block is asked for), and
 * pcp batches (pcp.c: between a pcp and the zone for one wait on this
 * lock, no system call in between, and of blocks of orders <=
 * PC_PCP_MAX_ORDER).
 */
static bool zone_held_serves_locked(struct pc_zone *z, const struct page_req *rq)
{
	if (pc_list_empty(&z->release_held_blocks) && pc_list_empty(&z->release_held_runs))
		return false;
	if (!rq->pages)
		return zone_held_blocks_serve_locked(z, rq->order) ||
		       zone_held_runs_serve_locked(z, PC_RUN_MAX_PAGES);
	size_t need = PC_MIN(rq->pages + rq->align_pages - 1, PC_RUN_MAX_PAGES);
	return zone_held_runs_serve_locked(z, need) || zone_held_blocks_serve_locked(z, PC_MAX_ORDER);
}

/*
 * Before growing z: a release pass may hold the very memory this request
 * needs, off every list while its batch (up to 32 blocks of 4 MiB, or 32
 * free runs) is madvised. Growing then maps a whole 64 MiB region that stays
 * free once the batch is back (issue 9: tests/unit/malloc/medium_idle.c, 8
 * of 240 loaded runs). So take from z, and while that finds nothing and the
 * batches in flight hold what would serve the request once back
 * (zone_held_serves_locked), yield and take again; a pass that takes batch
 * after batch is waited for as long as its batches keep coming, up to the
 * bound. Each turn is one hold of the zone lock (the take, then the look
 * at what is held, with nothing freed in between), the lock the pass
 * needs to give its batch back; the take goes to the zone, not through a
 * pcp, as a busy pcp's does.
 *
 * The wait is bounded (GROW_WAIT_NS on the monotonic clock, not the page
 * clock, which tests move): the holder could be this very thread. A signal
 * handler that interrupted its own thread's release pass cannot get here
 * today (reentry.c refuses an allocation whose thread is inside the page
 * layer, before any lock), but nothing may hang if that ever changes; and
 * the holder may be another thread that was stopped or killed inside the
 * allocator, or one descheduled on a loaded machine: then growing, as
 * before, is the right answer. The bound holds for the whole slow path
 * (its up to 4 attempts share one start). No page lock is held while
 * waiting, so the lock order of page.h is unchanged, and z->growing,
 * raised by the caller, keeps unmap.c off z meanwhile; a caller's own
 * locks stay held through it (the slab layer's c->lock in slab_alloc_slow:
 * that CPU's other threads wait as they would for the mmap of a growth).
 */
static struct pc_page *take_after_release(struct pc_zone *z, const struct page_req *rq,
					  uint64_t *start)
{
	for (;;) {
		pc_lock_acquire(&z->lock);
		pc_page_test_point(PC_PAGE_TEST_ZONE_LOCKED);
		struct pc_page *pg = zone_alloc_req_locked(z, rq);
		bool wait = !pg && zone_held_serves_locked(z, rq);
		if (pg)
			zone_publish_hints_locked(z);
		pc_lock_release(&z->lock);
		if (pg)
			zone_release_if_over(z); /* as zone_take's zone path: the reuse, the bound */
		if (!wait)
			return pg;
		uint64_t now = os_now_ns();
		if (!*start)
			*start = now; /* one bound for the whole slow path */
		else if (now - *start > GROW_WAIT_NS)
			return NULL;
		pc_page_test_point(PC_PAGE_TEST_GROW_WAIT);
		os_yield();
	}
}

/*
 * The preferred zone had no block. Order of preference:
 *  1. a sibling instance of the same node with plenty free (a quarter of a
 *     region): reuse its memory rather than map more, but do not drain a
 *     sibling dry, which would put this CPU on the sibling's lock for good;
 *  2. the preferred zone again, once a release batch in flight there is back
 *     (take_after_release);
 *  3. grow the preferred zone (a new region, bound to its node);
 *  4. when the OS refuses: any zone of the node, then of other nodes, then
 *     every pcp drained.
 */
static struct pc_page *alloc_slow_steps(struct pc_zone *pref, unsigned cpu,
					const struct page_req *rq)
{
	struct pc_page *pg;
	uint64_t wait_start = 0; /* take_after_release's, once it waits */
	for (int attempt = 0; attempt < 4; attempt++) {
		pg = take_elsewhere(pref, pref->node, true, PC_REGION_PAGES / 4, cpu, rq);
		if (pg)
			return pg;
		pg = take_after_release(pref, rq, &wait_start);
		if (pg)
			return pg;
		if (!zone_grow(pref))
			break;
		pg = zone_take(pref, cpu, rq);
		if (pg)
			return pg;
	}
	pg = take_elsewhere(pref, pref->node, true, 0, cpu, rq);
	if (!pg)
		pg = take_elsewhere(pref, pref->node, false, 0, cpu, rq);
	return pg ? pg : take_after_drain(rq);
}

/* The slow path, announced in pref->growing: while a thread grows the zone
 * and then takes from it, the region it grew is wholly free, and unmap.c
 * must not take it away in between (relaxed: the region is linked under
 * the zone lock after the increment, and the unmapper reads the count under
 * that lock; a stale nonzero count only skips an unmapping). */
static PC_NOINLINE struct pc_page *alloc_slow(struct pc_zone *pref, unsigned cpu,
					       const struct page_req *rq)
{
	pc_add_relaxed(&pref->growing, 1);
	struct pc_page *pg = alloc_slow_steps(pref, cpu, rq);
	pc_sub_relaxed(&pref->growing, 1);
	return pg;
}

static void *alloc_on(struct pc_zone *z, unsigned cpu, const struct page_req *rq)
{
	if (page_stats_on())
		pc_add_relaxed(&z->stats.alloc_calls, 1);
	struct pc_page *pg = zone_take(z, cpu, rq);
	if (pc_unlikely(!pg))
		pg = alloc_slow(z, cpu, rq);
	if (pc_unlikely(!pg)) {
		errno = ENOMEM;
		return NULL;
	}
	pc_assert_internal(pc_pg_state(pg) == PC_PG_ALLOC && (rq->pages || pc_pg_order(pg) == rq->order));
	return pc_page_address(pg);
}

void *page_alloc_pages(unsigned order)
{
	if (pc_unlikely(order > PC_MAX_ORDER || !pc_page_try_init())) {
		errno = ENOMEM;
		return NULL;
	}
	unsigned cpu = os_cpu_current();
	struct page_req rq = { .order = order };
	return alloc_on(pc_zone_preferred(cpu), cpu, &rq);
}

void *page_alloc_run_aligned(size_t pages, size_t align_pages)
{
	if (pc_unlikely(pages == 0 || pages > PC_RUN_MAX_PAGES || !pc_is_pow2(align_pages) ||
			align_pages > PC_RUN_MAX_PAGES || !pc_page_try_init())) {
		errno = ENOMEM;
		return NULL;
	}
	unsigned cpu = os_cpu_current();
	struct page_req rq = { .pages = pages, .align_pages = align_pages };
	return alloc_on(pc_zone_preferred(cpu), cpu, &rq);
}

void *page_alloc_pages_node(unsigned order, unsigned node)
{
	if (pc_unlikely(order > PC_MAX_ORDER || !pc_page_try_init())) {
		errno = ENOMEM;
		return NULL;
	}
	unsigned cpu = os_cpu_current();
	struct pc_zone *z = pc_zone_preferred(cpu);
	if (node != z->node && node < pc_node_count()) {
		struct pc_node *n = pc_node_get(node);
		z = &n->zones[cpu % n->nr_zones];
	}
	struct page_req rq = { .order = order };
	return alloc_on(z, cpu, &rq);
}

/*
 * True if pg lies in a free block (on a buddy list or a pcp list): then this
 * free is a double free. A free block of order o containing pg starts at
 * pg's index rounded down to 2^o, so look at those at most 11 heads. An
 * allocated page is in no free block, and whoever frees it synchronised with
 * its allocation, so the relaxed state reads cannot see a stale free head.
 */
static bool inside_free_block(struct pc_page *pg)
{
	struct pc_region *r = pc_page_region(pg);
	size_t idx = (size_t)(pg - r->pages);
	for (unsigned o = 0; o <= PC_MAX_ORDER; o++) {
		struct pc_page *head = &r->pages[idx & ~(((size_t)1 << o) - 1)];
		unsigned st = pc_pg_state_acquire(head); /* then the order: see pc_pg_set_state */
		if ((st == PC_PG_BUDDY || st == PC_PG_PCP) && pc_pg_order(head) >= o)
			return true;
	}
	return false;
}

/* A free pushed its pcp past high: the batch it detached goes to the zone
 * (no lock held), then a release pass if one is due. */
static PC_NOINLINE void pcp_drain_done(struct pc_zone *z, struct pcp_batch *b)
{
	pcp_batch_free(z, b);
	zone_maybe_release(z);
}

static PC_COLD void bad_free(const void *p, unsigned order, const char *why)
{
	pc_fatal("pc_free_pages(%p, order %u): %s", p, order, why);
}

void page_free_pages(void *p, unsigned order)
{
	struct pc_page *pg = pc_page_of(p);
	if (pc_unlikely(!pg || order > PC_MAX_ORDER ||
			((uintptr_t)p & ((PC_PAGE_SIZE << order) - 1))))
		bad_free(p, order, "not a block of the page allocator");
	if (pc_unlikely(inside_free_block(pg)))
		bad_free(p, order, "double free");
	struct pc_zone *z = pc_page_region(pg)->zone;
	if (page_stats_on())
		pc_add_relaxed(&z->stats.free_calls, 1);
	pc_pg_set_state(pg, PC_PG_NONE);
	if (order <= PC_PCP_MAX_ORDER) {
		struct pc_pcp *pcp = &z->pcp[os_cpu_current()];
		if (pc_likely(pc_spin_stat_trylock(&pcp->lock))) {
			pc_page_test_point(PC_PAGE_TEST_PCP_LOCKED);
			struct pcp_batch b;
			bool drained = pcp_free(pcp, pg, order, &b);
			pc_spin_stat_unlock(&pcp->lock);
			if (page_stats_on())
				pc_add_relaxed(&z->stats.pcp_frees, 1);
			if (drained) /* the batch goes to the zone with the pcp lock dropped */
				pcp_drain_done(z, &b);
			return;
		}
		if (page_stats_on())
			pc_add_relaxed(&z->stats.pcp_busy, 1);
	}
	zone_free(z, pg, order);
}

/* A run's head as the free path finds it: a run handed out (not free, not
 * on a list), owned by the caller. Best effort: a second free of a run
 * that has merged into a free run since is caught only if its head page is
 * that run's head or end mark, and a free run that ends at its chunk's end
 * has no end mark (run.c, has_end). */
static bool run_head_live(const struct pc_page *pg)
{
	unsigned st = pc_pg_state_acquire(pg);
	return st != PC_PG_RUN && st != PC_PG_RUN_END && st != PC_PG_PCP && st != PC_PG_BUDDY;
}

void page_free_run(void *p, size_t pages)
{
	struct pc_page *pg = pc_page_of(p);
	if (pc_unlikely(!pg || pages == 0 || pages > PC_RUN_MAX_PAGES ||
			((uintptr_t)p & (PC_PAGE_SIZE - 1)) || !run_head_live(pg)))
		pc_fatal("pc_free_run(%p, %zu pages): not a run in use (double free?)", p, pages);
	struct pc_zone *z = pc_page_region(pg)->zone;
	if (page_stats_on())
		pc_add_relaxed(&z->stats.free_calls, 1);
	pc_pg_set_state(pg, PC_PG_NONE);
	if (pages <= PC_PCP_MAX_RUN) {
		struct pc_pcp *pcp = &z->pcp[os_cpu_current()];
		if (pc_likely(pc_spin_stat_trylock(&pcp->lock))) {
			struct pcp_batch b;
			bool drained = pcp_free_run(pcp, pg, pages, &b);
			pc_spin_stat_unlock(&pcp->lock);
			if (drained)
				pcp_drain_done(z, &b);
			return;
		}
		if (page_stats_on())
			pc_add_relaxed(&z->stats.pcp_busy, 1);
	}
	pc_lock_acquire(&z->lock);
	pc_page_test_point(PC_PAGE_TEST_ZONE_LOCKED);
	zone_run_free_locked(z, pg, pages);
	zone_publish_hints_locked(z);
	pc_lock_release(&z->lock);
	zone_maybe_release(z);
}

bool page_run_grow(void *p, size_t pages, size_t to)
{
	if (to <= pages || to > PC_RUN_MAX_PAGES)
		return to == pages;
	struct pc_page *pg = pc_page_of_owned(p);
	struct pc_zone *z = pc_page_region(pg)->zone;
	pc_lock_acquire(&z->lock);
	bool ok = zone_run_claim_locked(z, pg, pages, to);
	if (ok) /* the free run it took: all_free_hint (statistics) */
		zone_publish_hints_locked(z);
	pc_lock_release(&z->lock);
	return ok;
}

void page_run_shrink(void *p, size_t pages, size_t to)
{
	pc_assert(to >= 1 && to <= pages);
	if (to == pages)
		return;
	struct pc_page *pg = pc_page_of_owned(p);
	struct pc_zone *z = pc_page_region(pg)->zone;
	pc_lock_acquire(&z->lock);
	zone_run_free_locked(z, pg + to, pages - to);
	zone_publish_hints_locked(z);
	pc_lock_release(&z->lock);
	zone_maybe_release(z);
}

void page_drain_all(void)
{
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		for (unsigned c = 0; c < os_cpu_count(); c++) {
			struct pc_pcp *pcp = &z->pcp[c];
			pc_spin_stat_lock(&pcp->lock);
			if (pcp->count > 0)
				pcp_drain_locked(z, pcp, pcp->count);
			pc_spin_stat_unlock(&pcp->lock);
		}
	}
}

size_t page_trim(void)
{
	size_t released = 0;
	if (!pc_page_try_init())
		return 0;
	page_drain_all();
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		released += zone_release(z, 0);
		pc_lock_acquire(&z->lock);
		released += zone_run_release_locked(z);
		zone_publish_hints_locked(z);
		pc_lock_release(&z->lock);
	}
	page_unmap_free(); /* the regions wholly free now, if they may be */
	pc_page_check_at("after trim");
	return released;
}

/* Under z->lock: work of z in flight with its lock dropped (pcp.c: batches
 * of its pcps; release.c, run.c, unmap.c: z->in_flight). A pcp's count is
 * raised under that pcp's lock, which the caller holds; a stale nonzero
 * only costs one more look. */
static bool zone_in_flight_locked(struct pc_zone *z)
{
	if (z->in_flight)
		return true;
	for (unsigned c = 0; c < os_cpu_count(); c++)
		if (pc_load_acquire(&z->pcp[c].in_flight) != 0) /* pairs with the batch's release */
			return true;
	return false;
}

/* The work waited for never ends only if its thread died in the allocator
 * (cancelled, or a signal handler that never returned): say so once after
 * 10 s, rather than hang in silence. */
static void prefork_wait_note(const struct pc_zone *z, uint64_t *since)
{
	uint64_t now = os_now_ns();
	if (*since == 0)
		*since = now;
	else if (*since != UINT64_MAX && now - *since > 10000000000u) {
		pc_message("pcmalloc: fork has waited 10 s for page allocator work in flight in zone %u "
			   "(a thread stopped inside malloc?)", z->id);
		*since = UINT64_MAX;
	}
}

/*
 * fork: every zone's grow lock, then every pcp lock, then every zone lock
 * (three passes in zone order, so that ranks never decrease: the witness,
 * lock.h, allows only equal ranks to nest here); released in the parent.
 * No other path holds two zones' locks, and each takes them in rank order.
 * A zone lock is kept only once no work of the zone is in flight with it
 * dropped (a pcp batch, a release batch, an unmapping): taken then, the
 * child would hold that memory on no list and in no zone, pages nobody there
 * can free. No new pcp batch can start while we hold every pcp lock, and
 * each piece of work in flight needs only its zone's lock to finish (a
 * refill that finds its pcp lock ours goes back to the zone), so dropping
 * that lock and trying again ends; zone work that takes batch after batch
 * (release passes, unmapping) stops before its next one while
 * page_forking is set, so the wait is one batch long.
 */
void pc_page_prefork(void)
{
	for (unsigned i = 0; i < pc_zone_count(); i++)
		pc_mutex_lock(&pc_zone_get(i)->grow_lock);
	for (unsigned i = 0; i < pc_zone_count(); i++)
		for (unsigned c = 0; c < os_cpu_count(); c++)
			pc_spin_lock(&pc_zone_get(i)->pcp[c].lock.spin); /* not counted */
	pc_store_relaxed(&page_forking, true); /* no new batch of zone work (page.h) */
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		pc_lock_acquire_for_fork(&z->lock);
		uint64_t since = 0;
		while (zone_in_flight_locked(z)) {
			pc_lock_release(&z->lock);
			pc_page_test_point(PC_PAGE_TEST_PREFORK_WAIT);
			prefork_wait_note(z, &since);
			os_yield();
			pc_lock_acquire_for_fork(&z->lock);
		}
	}
	pc_page_test_point(PC_PAGE_TEST_FORK_LOCKED);
}

void pc_page_postfork_parent(void)
{
	pc_store_relaxed(&page_forking, false);
	for (unsigned i = pc_zone_count(); i-- > 0;) {
		struct pc_zone *z = pc_zone_get(i);
		pc_lock_release(&z->lock);
		for (unsigned c = os_cpu_count(); c-- > 0;)
			pc_spin_unlock(&z->pcp[c].lock.spin);
		pc_mutex_unlock(&z->grow_lock);
	}
}

void pc_page_postfork_child(void)
{
	pc_store_relaxed(&page_forking, false);
	zone_release_fork_child();
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		pc_lock_reinit(&z->lock);
		for (unsigned c = 0; c < os_cpu_count(); c++) {
			pc_spin_stat_reinit(&z->pcp[c].lock);
			/* prefork saw none in flight: make the child's counts say so
			 * whatever it inherited (relaxed: one thread runs) */
			pc_store_relaxed(&z->pcp[c].in_flight, 0);
			pc_store_relaxed(&z->pcp[c].refill_pages, 0);
		}
		pc_mutex_reinit(&z->grow_lock);
		/* A thread of the parent counted in alloc_slow (waiting for a
		 * release batch, say) does not exist here: left counted, it
		 * would keep unmap.c off this zone for good (relaxed: one
		 * thread runs). */
		pc_store_relaxed(&z->growing, 0);
	}
}
