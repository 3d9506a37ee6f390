/*
 * page/pcp.c - per-CPU page lists: small blocks (orders 0..PC_PCP_MAX_ORDER)
 * cached per CPU and per zone, so that most page allocations and frees take
 * no zone lock (seed 001).
 *
 * Batching: a refill takes `batch << alloc_factor` pages from the zone under
 * one zone-lock hold; each refill that lands a full batch raises alloc_factor by one,
 * up to vm.pcp_batch_scale_max, so a CPU that keeps allocating moves ever
 * larger batches and takes the zone lock ever more rarely. Frees scale the
 * drain the same way with free_factor. A drain halves alloc_factor and a
 * refill halves free_factor, so a CPU that turns from allocating to freeing
 * starts again from small batches. The scale cap is read at every use, so a
 * run-time change of vm.pcp_batch_scale_max takes effect at the next batch:
 * 0 keeps each zone-lock hold short (latency), 5 amortises it (throughput).
 *
 * High (kernel: pcp->high, sized to use and decaying): each pcp drains
 * above its own `high`, which starts at vm.pcp_high_min. A drain that comes
 * after a refill since the previous drain means the CPU cycles pages through
 * its list (allocates and frees alike): high grows by one batch, up to
 * vm.pcp_high, so that the cycle stays off the zone lock. A CPU that only
 * frees, or stops, keeps a small list: every timed release pass (at most
 * one per quarter delay per zone, or a forced one: release.c) takes an
 * eighth off each high, down to vm.pcp_high_min, and drains the excess
 * (pcp_decay). A small program thus holds vm.pcp_high_min pages per CPU, not
 * vm.pcp_high.
 *
 * Runs (run.c) of up to PC_PCP_MAX_RUN pages have lists of their own, one
 * per length, refilled from and drained to the zone's run heap the same way
 * and counted in the same count and high.
 *
 * Allocation and free never hold the pcp lock while they wait for the zone
 * lock: a refill is sized under the pcp lock (pcp_refill_plan), taken from
 * the zone with it dropped and put on the list under it again (pcp_refill);
 * a free past high, and a decay, detach their batch under the pcp lock
 * (pcp_detach_locked) and free it to the zone after dropping it
 * (pcp_batch_free). With more threads than CPUs, a thread preempted or
 * asleep on the zone lock while it held the pcp lock sent every other
 * thread of its CPU to the zone lock, one block at a time
 * (docs/pages-medium.md).
 *
 * In flight: between the two locks the entries of a batch are on no list,
 * state PC_PG_NONE, as allocated pages are (pc_page_check counts them as in
 * use). Each pcp counts its batches in flight (in_flight: incremented under
 * its lock, decremented once the batch is in the zone or on the list), and
 * fork, once it holds every pcp lock (no new batch can start then), keeps
 * a zone's lock only when none of its pcps has one left (each needs only
 * that lock to arrive), so a child never inherits a batch that nobody owns
 * there (pc_page_prefork). A refill's pages are also reserved in refill_pages,
 * so that another thread of the CPU that finds the list empty meanwhile
 * sizes its own within the room left (a minimum batch at least):
 * concurrent refills pass high together by a minimum batch each at most,
 * not k times high. A refill that cannot land (the pcp lock busy) goes back
 * to the zone as it came (clean blocks stay clean, dirty ones keep their
 * age).
 *
 * What backs an entry (its head's mem, freed_ns): an entry freed on this
 * CPU is dirty, freed_ns 0 (stamped when drained: no clock read on the
 * fast path); one a refill put on the list keeps the zone's mem and
 * freed_ns until it is handed out, so a drain gives a clean entry back
 * clean and a dirty one with its age.
 *
 * Runs for malloc's medium cache (page_alloc_runs, pcp_take_runs): up to n
 * runs of one length for the caller, what the list holds under one hold of
 * its lock and the rest by one refill (pcp_refill_many: the caller's share,
 * then the list's batch), or with the pcp lock busy all of them from the
 * zone under one zone-lock hold, bypassing the list.
 *
 * The drains of pc_page_drain_all and trim take the pcp lock outright and
 * keep it (pcp_drain_locked). Every other function here runs with
 * pcp->lock held, but pcp_init, pcp_batch_init, pcp_decay, pcp_refill,
 * pcp_refill_many, pcp_take_runs, page_alloc_runs and pcp_batch_free (and
 * their helpers: refill_take and refill_put_back take the zone lock,
 * refill_land_locked the pcp lock; pcp_take_runs the pcp lock, or the zone
 * lock when the pcp lock is busy).
 */
#include "page.h"

void pcp_init(struct pc_pcp *pcp)
{
	pc_spin_stat_init(&pcp->lock, PC_LOCK_RANK_PCP, &pcp->lock_stats);
	pcp->count = 0;
	pcp->high = 0; /* raised to the floor at first use (pcp_high) */
	pcp->alloc_factor = pcp->free_factor = 0;
	pc_store_relaxed(&pcp->in_flight, 0);
	pc_store_relaxed(&pcp->refill_pages, 0);
	for (unsigned o = 0; o <= PC_PCP_MAX_ORDER; o++)
		pc_list_init(&pcp->lists[o]);
	for (unsigned n = 0; n <= PC_PCP_MAX_RUN; n++)
		pc_list_init(&pcp->runs[n]);
	for (unsigned w = 0; w < PC_ARRAY_SIZE(pcp->used); w++)
		pcp->used[w] = 0;
}

/* The pcp's high, clamped to [min(vm.pcp_high_min, vm.pcp_high), vm.pcp_high]
 * (both may change at run time). */
static int pcp_high(struct pc_pcp *pcp)
{
	int max = (int)pc_option(PC_OPT_VM_PCP_HIGH);
	int min = PC_MIN((int)pc_option(PC_OPT_VM_PCP_HIGH_MIN), max);
	pcp->high = PC_MIN(PC_MAX(pcp->high, min), max);
	return pcp->high;
}

static unsigned scale_max(void)
{
	return (unsigned)pc_option(PC_OPT_VM_PCP_BATCH_SCALE_MAX);
}

/*
 * Blocks of the order to take in the next refill (kernel: nr_pcp_alloc):
 * batch << alloc_factor, within the room that the lists and the refills in
 * flight (refill_pages) leave under high, but at least a minimum batch (2
 * blocks, or vm.pcp_batch pages). Two threads of one CPU that found its
 * list empty at once both sized a refill to high, and k of them took k
 * times high (review of medium, item 3); now concurrent refills overshoot
 * high by a minimum batch each at most. A refill sized while another is in
 * flight still takes a minimum batch: one block each sent every thread of
 * the CPU to the zone lock per allocation while the first waited for it
 * (Test D at 16 KiB: 2.3 times the zone-lock acquisitions). *grow: a full
 * batch fits, so alloc_factor rises when it lands whole.
 */
static int refill_blocks(struct pc_pcp *pcp, unsigned order, int pages, bool *grow)
{
	int batch = (int)pc_option(PC_OPT_VM_PCP_BATCH);
	int high = pcp_high(pcp);
	unsigned cap = scale_max();
	int base = PC_MAX(batch >> order, 2);
	/* Relaxed: every increment is made under pcp->lock, which we hold; a
	 * decrement not seen yet only makes this refill smaller. */
	int reserved = pc_load_relaxed(&pcp->refill_pages);
	int filled = pcp->count + reserved;
	int room = high > filled ? (high - filled) / pages : 0;
	int max_blocks = PC_MAX(room, base);

	if (pcp->alloc_factor > cap)
		pcp->alloc_factor = (uint8_t)cap;
	int n = base << pcp->alloc_factor;
	*grow = n <= max_blocks && pcp->alloc_factor < cap;
	return PC_MIN(n, max_blocks);
}

/* A block or run of `pages` onto a pcp list: its length in aux (the
 * checker's), the largest power of two it covers as order (the double-free
 * check's), then the state. */
static void pcp_mark(struct pc_page *pg, unsigned pages)
{
	pg->aux = pages;
	pc_pg_set_order(pg, pc_log2(pages)); /* before the state: see pc_pg_set_state */
	pc_pg_set_state(pg, PC_PG_PCP);
}

/* The lists of a pcp as one index: orders 0..PC_PCP_MAX_ORDER, then run
 * lengths 1..PC_PCP_MAX_RUN. */
#define PCP_NR_LISTS (PC_PCP_MAX_ORDER + 1 + PC_PCP_MAX_RUN)

static struct pc_list *pcp_list_at(struct pc_pcp *pcp, unsigned i)
{
	return i <= PC_PCP_MAX_ORDER ? &pcp->lists[i] : &pcp->runs[i - PC_PCP_MAX_ORDER];
}

/* The index of the list a request names: a buddy block of `order` (run ==
 * 0) or a run of `run` pages (order: the order that holds one, to size
 * batches). */
static unsigned pcp_index_of(unsigned order, unsigned run)
{
	return run ? PC_PCP_MAX_ORDER + run : order;
}

/* pcp->used: list i just got an entry / may just have lost its last. */
static void pcp_used_set(struct pc_pcp *pcp, unsigned i)
{
	pcp->used[i >> 6] |= (uint64_t)1 << (i & 63);
}

static void pcp_used_update(struct pc_pcp *pcp, unsigned i)
{
	if (pc_list_empty(pcp_list_at(pcp, i)))
		pcp->used[i >> 6] &= ~((uint64_t)1 << (i & 63));
}

/* Pop the warmest entry of a list, or NULL if it is empty (no refill: the
 * caller refills with the pcp lock dropped, pcp_refill). */
struct pc_page *pcp_take(struct pc_pcp *pcp, unsigned order, unsigned run)
{
	pc_spin_stat_assert_held(&pcp->lock);
	unsigned i = pcp_index_of(order, run);
	struct pc_list *l = pcp_list_at(pcp, i);
	if (pc_list_empty(l))
		return NULL;
	struct pc_page *pg = pc_list_first(l, struct pc_page, list);
	pc_list_del(&pg->list);
	pcp_used_update(pcp, i);
	pcp->count -= run ? (int)run : 1 << order;
	pc_pg_set_state(pg, PC_PG_ALLOC);
	return pg;
}

/*
 * A refill, part 1, under pcp->lock (the caller found the list empty): size
 * it (refill_blocks) and announce it: its pages in refill_pages, so that
 * other refills of this CPU leave them room, and one batch more in
 * in_flight, so that fork waits for it (pc_page_prefork). pcp_refill then
 * runs it with the lock dropped and takes both back.
 */
void pcp_refill_plan(struct pc_pcp *pcp, unsigned order, unsigned run, struct pcp_refill *r)
{
	pc_spin_stat_assert_held(&pcp->lock);
	r->order = order;
	r->run = run;
	r->pages = run ? (int)run : 1 << order;
	r->want = refill_blocks(pcp, order, r->pages, &r->grow);
	r->got = 0;
	r->mine = 1;
	r->reserved = (r->want - 1) * r->pages;
	pc_list_init(&r->batch);
	pc_add_relaxed(&pcp->refill_pages, r->reserved); /* relaxed: see refill_blocks */
	pc_add_relaxed(&pcp->in_flight, 1); /* relaxed: under the lock prefork takes */
}

/* Counters of a refill of `pages` pages (the caller's block and those put
 * on the list). Under pcp->lock. */
static void pcp_note_refill(struct pc_zone *z, struct pc_pcp *pcp, uint32_t pages, uint64_t t0)
{
	pcp->refills++;
	pcp->last_refill = pages;
	pcp->free_factor >>= 1;
	if (page_stats_on()) {
		pc_add_relaxed(&z->stats.refills, 1);
		pc_add_relaxed(&z->stats.refill_pages, pages);
		pc_hist_add_since(&z->stats.refill_ns, t0);
		pc_hist_add(&z->stats.refill_batch, pages);
	}
}

/* Up to r->want entries from the zone under one zone-lock hold, onto
 * r->batch, each head as the zone kept it (mem, freed_ns). The counters are
 * published, not the peak of use: the batch may come straight back
 * (refill_put_back), and pages that stay on a list count as in use at the
 * zone's next publish. */
static void refill_take(struct pc_zone *z, struct pcp_refill *r)
{
	pc_lock_acquire(&z->lock);
	pc_page_test_point(PC_PAGE_TEST_ZONE_LOCKED);
	if (r->run)
		r->got = (int)zone_run_alloc_many_locked(z, r->run, (unsigned)r->want, &r->batch);
	for (; !r->run && r->got < r->want; r->got++) {
		struct pc_page *pg = zone_alloc_block_locked(z, r->order, true);
		if (!pg)
			break;
		pc_list_add_tail(&pg->list, &r->batch);
	}
	zone_publish_counts_locked(z);
	pc_lock_release(&z->lock);
}

/*
 * Under pcp->lock: the refill's entries, all but the caller's, onto the
 * list, and the refill counted (the caller's block included). Frees of
 * this CPU may have filled the list meanwhile: it may then pass high by
 * this batch until the next free drains it. Giving back what did not fit
 * at once was tried: every such refill then took the zone lock twice, 20%
 * more acquisitions of it in Test D at 16 KiB, for a list over high that
 * the next free drains anyway.
 */
static void refill_land_locked(struct pc_zone *z, struct pc_pcp *pcp, struct pcp_refill *r)
{
	pc_spin_stat_assert_held(&pcp->lock);
	int keep = r->got - PC_MIN(r->got, r->mine);
	unsigned i = pcp_index_of(r->order, r->run);
	struct pc_list *l = pcp_list_at(pcp, i);
	for (int k = 0; k < keep; k++) {
		struct pc_page *pg = pc_list_first(&r->batch, struct pc_page, list);
		pc_list_del(&pg->list);
		pcp_mark(pg, (unsigned)r->pages);
		pc_list_add_tail(&pg->list, l);
	}
	if (keep > 0)
		pcp_used_set(pcp, i);
	pcp->count += keep * r->pages;
	if (r->grow && r->got == r->want && pcp->alloc_factor < scale_max())
		pcp->alloc_factor++;
	pcp_note_refill(z, pcp, (uint32_t)r->got * (uint32_t)r->pages, r->t0);
}

/* The entries of a refill that did not land (its pcp was busy) go back to
 * the zone as they were: a clean block stays clean, a dirty one keeps the time it was freed
 * (zone_alloc_block_locked and zone_run_alloc_locked keep both in the
 * head). Not a drain: nothing was freed. */
static void refill_put_back(struct pc_zone *z, struct pcp_refill *r)
{
	pc_lock_acquire(&z->lock);
	for (struct pc_list *it = r->batch.next, *next; it != &r->batch; it = next) {
		next = it->next;
		struct pc_page *pg = pc_list_entry(it, struct pc_page, list);
		if (r->run)
			zone_run_free_mem_locked(z, pg, r->run, (enum pc_mem)pg->mem, pg->freed_ns);
		else
			zone_free_block_at_locked(z, pg, r->order, (enum pc_mem)pg->mem, pg->freed_ns);
	}
	pc_list_init(&r->batch);
	zone_publish_hints_locked(z);
	pc_lock_release(&z->lock);
}

/* The first n entries (fewer if it holds fewer) of a batch taken from the
 * zone to the caller: off the batch, heads PC_PG_ALLOC. Returns how many. */
static unsigned batch_hand_out(struct pc_list *batch, struct pc_page **out, unsigned n)
{
	unsigned i = 0;
	for (; i < n && !pc_list_empty(batch); i++) {
		out[i] = pc_list_first(batch, struct pc_page, list);
		pc_list_del(&out[i]->list);
		pc_pg_set_state(out[i], PC_PG_ALLOC);
	}
	return i;
}

/*
 * A refill, part 2, called with no lock held after pcp_refill_plan: the
 * batch from the zone under one zone-lock hold, the first entry for the
 * caller (state PC_PG_ALLOC), the others onto the list if its lock is free
 * now (refill_land_locked), the rest back to the zone as it was
 * (refill_put_back). The pcp lock is never held while the zone lock is
 * waited for: with more threads than CPUs, a thread preempted or asleep on
 * the zone lock with the pcp lock held sent every other thread of its CPU
 * to the zone lock too, one block each (Test D at 16 threads on 2 CPUs:
 * more allocations went to the zone than to the pcp). NULL if the zone had
 * none (nothing changes on the list: the factor rises only when a batch
 * lands).
 */
static unsigned pcp_refill_many(struct pc_zone *z, struct pc_pcp *pcp, struct pcp_refill *r,
				struct pc_page **mine)
{
	r->t0 = pc_stats_clock();
	refill_take(z, r);
	pc_page_test_point(PC_PAGE_TEST_REFILL_TAKEN);
	r->landed = false;
	unsigned n = batch_hand_out(&r->batch, mine, (unsigned)r->mine);
	if (n > 0) {
		if (pc_spin_stat_trylock(&pcp->lock)) {
			refill_land_locked(z, pcp, r);
			pc_spin_stat_unlock(&pcp->lock);
			r->landed = true;
		}
		else if (!pc_list_empty(&r->batch))
			refill_put_back(z, r);
	}
	pc_sub_relaxed(&pcp->refill_pages, r->reserved);
	/* Release, last: a prefork that reads 0 (acquire) sees everything this
	 * refill did, its zone work and refill_pages included. */
	pc_sub_release(&pcp->in_flight, 1);
	return n;
}

struct pc_page *pcp_refill(struct pc_zone *z, struct pc_pcp *pcp, struct pcp_refill *r)
{
	struct pc_page *mine = NULL;
	return pcp_refill_many(z, pcp, r, &mine) ? mine : NULL;
}

/*
 * Runs for malloc's medium cache (pc_alloc_runs): up to n runs of `run`
 * pages from zone z for the caller, heads PC_PG_ALLOC. What this CPU's list
 * of that length holds, under one hold of its lock; what it lacks, by one
 * refill sized for the caller's share and the list's own batch (one
 * zone-lock hold, the pcp lock dropped meanwhile, as pcp_refill). With the
 * pcp lock busy, all n from the zone under one hold. One block per call
 * took the pcp lock once per medium malloc, and with 8 threads per CPU a
 * holder preempted in it sent the other threads of its CPU to the zone
 * lock one block each for whole time slices (Test D at 16 threads, 16 KiB,
 * 10 rounds: pcp_busy 514k-675k of the 3.2M page allocations and frees;
 * docs/pages-medium.md, "2026-11-24 evening, helper medium3"). Returns how
 * many (0: the zone had none; the caller's single-run path grows it).
 */
static unsigned pcp_take_runs(struct pc_zone *z, unsigned cpu, unsigned run, struct pc_page **out,
			      unsigned n)
{
	struct pc_pcp *pcp = &z->pcp[cpu];
	unsigned order = pc_log2(run), got = 0;
	if (pc_likely(pc_spin_stat_trylock(&pcp->lock))) {
		pc_page_test_point(PC_PAGE_TEST_PCP_LOCKED);
		struct pc_page *pg;
		while (got < n && (pg = pcp_take(pcp, order, run)) != NULL)
			out[got++] = pg;
		if (got == n) {
			pc_spin_stat_unlock(&pcp->lock);
			if (page_stats_on())
				pc_add_relaxed(&z->stats.pcp_hits, got);
			return got;
		}
		struct pcp_refill r;
		pcp_refill_plan(pcp, order, run, &r);
		r.mine = (int)(n - got);   /* the caller's share first, then */
		r.want += r.mine - 1;      /* the list's batch (reserved) */
		pc_spin_stat_unlock(&pcp->lock); /* not held while the zone lock is waited for */
		unsigned more = pcp_refill_many(z, pcp, &r, out + got);
		if (page_stats_on()) /* as zone_take counts a refill's block */
			pc_add_relaxed(r.landed ? &z->stats.pcp_hits : &z->stats.pcp_busy, more);
		if (page_stats_on() && got)
			pc_add_relaxed(&z->stats.pcp_hits, got);
		zone_maybe_release(z); /* a slow path: time for a release pass? */
		return got + more;
	}
	struct pc_list batch;
	pc_list_init(&batch);
	pc_lock_acquire(&z->lock);
	pc_page_test_point(PC_PAGE_TEST_ZONE_LOCKED);
	got = zone_run_alloc_many_locked(z, run, n, &batch);
	zone_publish_hints_locked(z);
	pc_lock_release(&z->lock);
	got = batch_hand_out(&batch, out, got);
	if (page_stats_on())
		pc_add_relaxed(&z->stats.pcp_busy, got);
	if (got)
		zone_release_if_over(z); /* the footprint may have passed its peak */
	return got;
}

/* pc_alloc_runs' work (reentry.c wraps it): the preferred zone of this
 * CPU only; one call counts once in alloc_calls. */
unsigned page_alloc_runs(size_t pages, void **out, unsigned n)
{
	if (pages == 0 || pages > PC_PCP_MAX_RUN || n == 0 || !pc_page_try_init())
		return 0;
	struct pc_page *pgs[PC_ALLOC_RUNS_MAX];
	n = PC_MIN(n, PC_ALLOC_RUNS_MAX);
	unsigned cpu = os_cpu_current();
	struct pc_zone *z = pc_zone_preferred(cpu);
	if (page_stats_on())
		pc_add_relaxed(&z->stats.alloc_calls, 1);
	unsigned got = pcp_take_runs(z, cpu, (unsigned)pages, pgs, n);
	for (unsigned i = 0; i < got; i++)
		out[i] = pc_page_address(pgs[i]);
	return got;
}

void pcp_batch_init(struct pcp_batch *b)
{
	pc_list_init(&b->blocks);
	pc_list_init(&b->runs);
	b->pages = 0;
	b->from = NULL;
}

/* Move the coldest entry (the tail) of list i into the batch; its pages.
 * A block's order and a run's length stay in its head (order, aux). */
static int pcp_detach_one(struct pc_pcp *pcp, unsigned i, struct pcp_batch *b)
{
	struct pc_list *l = pcp_list_at(pcp, i);
	struct pc_page *pg = pc_list_entry(l->prev, struct pc_page, list);
	pc_list_del(&pg->list);
	pcp_used_update(pcp, i);
	pc_pg_set_state(pg, PC_PG_NONE); /* in flight: neither free nor listed */
	int pages = i <= PC_PCP_MAX_ORDER ? 1 << i : (int)(i - PC_PCP_MAX_ORDER);
	pc_list_add_tail(&pg->list, i <= PC_PCP_MAX_ORDER ? &b->blocks : &b->runs);
	pcp->count -= pages;
	b->pages += pages;
	return pages;
}

/*
 * Take at least `pages` pages (or all) off the lists into batch b, coldest
 * first: from the tails, cycling over the lists that hold something (read
 * from pcp->used, so that a drain costs what it moves: a drain of one run
 * length used to look at all 71 lists for each run, 15% of Test A's samples
 * at 16 KiB, and a scan of them once per drain was still 4% of
 * bench_mixed's at 2 threads). Under
 * pcp->lock; pcp_batch_free then frees the batch to the zone, with the pcp
 * lock dropped or not.
 */
void pcp_detach_locked(struct pc_pcp *pcp, int pages, struct pcp_batch *b)
{
	pc_spin_stat_assert_held(&pcp->lock);
	uint8_t live[PCP_NR_LISTS];
	unsigned nlive = 0;
	for (unsigned w = 0; w < PC_ARRAY_SIZE(pcp->used); w++)
		for (uint64_t bits = pcp->used[w]; bits; bits &= bits - 1)
			live[nlive++] = (uint8_t)(w * 64 + (unsigned)__builtin_ctzll(bits));
	int moved = 0;
	if (!b->from) { /* in flight from now until pcp_batch_free: see pcp_refill_plan */
		b->from = pcp;
		pc_add_relaxed(&pcp->in_flight, 1);
	}
	while (moved < pages && nlive > 0) {
		unsigned kept = 0;
		for (unsigned k = 0; k < nlive; k++) {
			if (moved < pages)
				moved += pcp_detach_one(pcp, live[k], b);
			if (!pc_list_empty(pcp_list_at(pcp, live[k])))
				live[kept++] = live[k];
		}
		nlive = kept;
	}
	pcp->drains++;
	pcp->last_drain = (uint32_t)moved;
}

/* Free a detached batch to the zone under one zone-lock hold. An entry
 * freed on this CPU is dirty (pcp_free, pcp_free_run) and stamped with one
 * page-clock time for the batch; one a refill put on the list and nobody
 * used keeps the mem and freed time it had in the zone (clean stays clean,
 * a dirty one's freed_ns is a page-clock time, never 0). */
static uint64_t entry_freed_ns(const struct pc_page *pg, uint64_t now)
{
	return pg->freed_ns ? pg->freed_ns : now;
}

void pcp_batch_free(struct pc_zone *z, struct pcp_batch *b)
{
	uint64_t t0 = pc_stats_clock();
	uint64_t now = pc_page_clock_ns();
	pc_lock_acquire(&z->lock);
	for (struct pc_list *it = b->blocks.next, *next; it != &b->blocks; it = next) {
		next = it->next;
		struct pc_page *pg = pc_list_entry(it, struct pc_page, list);
		zone_free_block_at_locked(z, pg, pc_pg_order(pg), (enum pc_mem)pg->mem, entry_freed_ns(pg, now));
	}
	for (struct pc_list *it = b->runs.next, *next; it != &b->runs; it = next) {
		next = it->next;
		struct pc_page *pg = pc_list_entry(it, struct pc_page, list);
		zone_run_free_mem_locked(z, pg, pg->aux, (enum pc_mem)pg->mem, entry_freed_ns(pg, now));
	}
	zone_publish_hints_locked(z);
	pc_lock_release(&z->lock);
	if (b->from) /* release, after the zone work: see pcp_refill */
		pc_sub_release(&b->from->in_flight, 1);
	if (page_stats_on()) {
		pc_add_relaxed(&z->stats.drains, 1);
		pc_add_relaxed(&z->stats.drain_pages, (uint64_t)b->pages);
		pc_hist_add(&z->stats.drain_batch, (uint64_t)b->pages);
	}
	pc_hist_add_since(&z->stats.drain_ns, t0);
	pcp_batch_init(b);
}

/* Return at least `pages` pages (or all) to the zone, the pcp lock held
 * throughout (drain_all, decay, trim: rare, and they take it blocking). */
void pcp_drain_locked(struct pc_zone *z, struct pc_pcp *pcp, int pages)
{
	struct pcp_batch b;
	pcp_batch_init(&b);
	pcp_detach_locked(pcp, pages, &b);
	pcp_batch_free(z, &b);
}

static bool pcp_over_high(struct pc_pcp *pcp, int high, struct pcp_batch *out);

/* Put a block on the pcp; past `high` pages, detach a scaled batch into
 * *out for the caller to free to the zone once it has dropped the pcp lock
 * (pcp_batch_free). Returns whether it did. */
bool pcp_free(struct pc_pcp *pcp, struct pc_page *pg, unsigned order, struct pcp_batch *out)
{
	pc_spin_stat_assert_held(&pcp->lock);
	int high = pcp_high(pcp); /* the options may change at run time */

	pcp_mark(pg, 1u << order);
	pg->mem = PC_MEM_DIRTY; /* it was handed out: maybe resident (pcp_batch_free) */
	pg->freed_ns = 0;       /* freed now: stamped by the drain */
	pc_list_add(&pg->list, &pcp->lists[order]);
	pcp_used_set(pcp, order);
	pcp->count += 1 << order;
	if (pc_likely(pcp->count <= high))
		return false;
	return pcp_over_high(pcp, high, out);
}

/* The same for a run of `pages` (<= PC_PCP_MAX_RUN). */
bool pcp_free_run(struct pc_pcp *pcp, struct pc_page *pg, size_t pages, struct pcp_batch *out)
{
	pc_spin_stat_assert_held(&pcp->lock);
	int high = pcp_high(pcp);

	pcp_mark(pg, (unsigned)pages);
	pg->mem = PC_MEM_DIRTY;
	pg->freed_ns = 0;
	pc_list_add(&pg->list, &pcp->runs[pages]);
	pcp_used_set(pcp, PC_PCP_MAX_ORDER + (unsigned)pages);
	pcp->count += (int)pages;
	if (pc_likely(pcp->count <= high))
		return false;
	return pcp_over_high(pcp, high, out);
}

/* Past high: grow high if the CPU cycles pages, else detach a scaled batch. */
static bool pcp_over_high(struct pc_pcp *pcp, int high, struct pcp_batch *out)
{
	if (pcp->refills != pcp->refills_at_drain) { /* cycling: room for a batch more */
		pcp->refills_at_drain = pcp->refills;
		pcp->high = high = PC_MIN(high + (int)pc_option(PC_OPT_VM_PCP_BATCH),
					  (int)pc_option(PC_OPT_VM_PCP_HIGH));
	}
	if (pcp->count <= high)
		return false;

	unsigned cap = scale_max();
	if (pcp->free_factor > cap)
		pcp->free_factor = (uint8_t)cap;
	int batch = (int)pc_option(PC_OPT_VM_PCP_BATCH) << pcp->free_factor;
	if (pcp->free_factor < cap)
		pcp->free_factor++;
	pcp->alloc_factor >>= 1;
	pcp_batch_init(out);
	pcp_detach_locked(pcp, PC_MAX(batch, pcp->count - high), out);
	return true;
}

/*
 * Decay: take an eighth off the high of every pcp of z (not below the floor)
 * and drain what each holds above it, the batch freed to the zone with the
 * pcp lock dropped, as a free's drain is: passes run from allocation and
 * free slow paths, which never wait for the zone lock with a pcp lock held
 * (review of medium, item 5). Called from timed release passes, with no
 * lock held; a pcp whose lock is busy is skipped until the next pass.
 */
void pcp_decay(struct pc_zone *z)
{
	for (unsigned c = 0; c < os_cpu_count(); c++) {
		struct pc_pcp *pcp = &z->pcp[c];
		if (!pc_spin_stat_trylock(&pcp->lock))
			continue;
		pcp->high -= pcp->high / 8;
		int high = pcp_high(pcp);
		struct pcp_batch b;
		pcp_batch_init(&b);
		if (pcp->count > high)
			pcp_detach_locked(pcp, pcp->count - high, &b);
		pc_spin_stat_unlock(&pcp->lock);
		if (b.from)
			pcp_batch_free(z, &b);
	}
}
