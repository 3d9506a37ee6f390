/*
 * page/pcp.c - per-CPU page lists: small blocks (orders 0..PC_PCP_MAX_ORDER)
 * cached per CPU and per zone, so that most page allocations and frees take
 * no zone lock (seed 001).
 *
 * Batching: a refill takes `batch << alloc_factor` pages from the zone under
 * one zone-lock hold; each refill that finds room raises alloc_factor by one,
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
 * frees, or stops, keeps a small list: every release pass (release.c) takes
 * an eighth off each high, down to vm.pcp_high_min, and drains the excess
 * (pcp_decay). A small program thus holds vm.pcp_high_min pages per CPU, not
 * vm.pcp_high.
 *
 * Runs (run.c) of up to PC_PCP_MAX_RUN pages have lists of their own, one
 * per length, refilled from and drained to the zone's run heap the same way
 * and counted in the same count and high.
 *
 * Every function here but pcp_init and pcp_decay runs with pcp->lock held:
 * try-locked by allocation and free, locked outright by draining
 * (pc_page_drain_all).
 */
#include "page.h"

void pcp_init(struct pc_pcp *pcp)
{
	pc_spin_stat_init(&pcp->lock, PC_LOCK_RANK_PCP, &pcp->lock_stats);
	pcp->count = 0;
	pcp->high = 0; /* raised to the floor at first use (pcp_high) */
	pcp->alloc_factor = pcp->free_factor = 0;
	for (unsigned o = 0; o <= PC_PCP_MAX_ORDER; o++)
		pc_list_init(&pcp->lists[o]);
	for (unsigned n = 0; n <= PC_PCP_MAX_RUN; n++)
		pc_list_init(&pcp->runs[n]);
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

/* Blocks of the order to take in the next refill (kernel: nr_pcp_alloc). */
static int refill_blocks(struct pc_pcp *pcp, unsigned order)
{
	int batch = (int)pc_option(PC_OPT_VM_PCP_BATCH);
	int high = pcp_high(pcp);
	unsigned cap = scale_max();
	int base = PC_MAX(batch >> order, 2);
	int room = high > pcp->count ? (high - pcp->count) >> order : 0;
	int max_blocks = PC_MAX(room, base);

	if (pcp->alloc_factor > cap)
		pcp->alloc_factor = (uint8_t)cap;
	int n = base << pcp->alloc_factor;
	if (n <= max_blocks && pcp->alloc_factor < cap)
		pcp->alloc_factor++;
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

/* Move a batch from the zone to a list: blocks of `order` (run == 0) or runs
 * of `run` pages (order: the order that holds one, to size the batch). The
 * number moved, 0 if the zone had none. */
static int pcp_refill(struct pc_zone *z, struct pc_pcp *pcp, unsigned order, unsigned run)
{
	pc_spin_stat_assert_held(&pcp->lock);
	uint8_t factor = pcp->alloc_factor;
	int want = refill_blocks(pcp, order), got = 0;
	unsigned pages = run ? run : 1u << order;
	struct pc_list *l = run ? &pcp->runs[run] : &pcp->lists[order];
	bool stats = page_stats_on();
	uint64_t t0 = stats ? os_now_ns() : 0;

	pc_lock_acquire(&z->lock);
	for (; got < want; got++) {
		struct pc_page *pg = run ? zone_run_alloc_locked(z, run, 1) : zone_alloc_block_locked(z, order, true);
		if (!pg)
			break;
		pcp_mark(pg, pages);
		pc_list_add_tail(&pg->list, l);
	}
	zone_publish_hints_locked(z);
	pc_lock_release(&z->lock);
	if (got == 0) { /* an empty zone: no batch moved, nothing to scale */
		pcp->alloc_factor = factor;
		return 0;
	}

	pcp->count += got * (int)pages;
	pcp->refills++;
	pcp->last_refill = (uint32_t)got * pages;
	pcp->free_factor >>= 1;
	if (stats) {
		uint64_t ns = os_now_ns() - t0;
		pc_add_relaxed(&z->stats.refills, 1);
		pc_add_relaxed(&z->stats.refill_pages, (uint64_t)got * pages);
		pc_hist_add(&z->stats.refill_ns, ns);
		pc_hist_add(&z->stats.refill_batch, (uint64_t)got * pages);
	}
	return got;
}

/* Take a block of `order` from the pcp, refilling from the zone if empty. */
struct pc_page *pcp_alloc(struct pc_zone *z, struct pc_pcp *pcp, unsigned order)
{
	pc_spin_stat_assert_held(&pcp->lock);
	struct pc_list *l = &pcp->lists[order];
	if (pc_list_empty(l) && pcp_refill(z, pcp, order, 0) == 0)
		return NULL;
	struct pc_page *pg = pc_list_first(l, struct pc_page, list);
	pc_list_del(&pg->list);
	pcp->count -= 1 << order;
	pc_pg_set_state(pg, PC_PG_ALLOC);
	return pg;
}

/* Take a run of `pages` (<= PC_PCP_MAX_RUN) from the pcp, refilling from the
 * zone's run heap if its list is empty. */
struct pc_page *pcp_alloc_run(struct pc_zone *z, struct pc_pcp *pcp, size_t pages)
{
	struct pc_list *l = &pcp->runs[pages];
	if (pc_list_empty(l) && pcp_refill(z, pcp, pc_log2(pages), (unsigned)pages) == 0)
		return NULL;
	struct pc_page *pg = pc_list_first(l, struct pc_page, list);
	pc_list_del(&pg->list);
	pcp->count -= (int)pages;
	pc_pg_set_state(pg, PC_PG_ALLOC);
	return pg;
}

/* The lists of a pcp as one index: orders 0..PC_PCP_MAX_ORDER, then run
 * lengths 1..PC_PCP_MAX_RUN. */
#define PCP_NR_LISTS (PC_PCP_MAX_ORDER + 1 + PC_PCP_MAX_RUN)

static struct pc_list *pcp_list_at(struct pc_pcp *pcp, unsigned i)
{
	return i <= PC_PCP_MAX_ORDER ? &pcp->lists[i] : &pcp->runs[i - PC_PCP_MAX_ORDER];
}

/* Move the coldest entry (the tail) of list i to the zone; its pages. */
static int pcp_drain_one(struct pc_zone *z, struct pc_pcp *pcp, unsigned i, uint64_t now)
{
	struct pc_list *l = pcp_list_at(pcp, i);
	struct pc_page *pg = pc_list_entry(l->prev, struct pc_page, list);
	pc_list_del(&pg->list);
	pc_pg_set_state(pg, PC_PG_NONE);
	int pages;
	if (i <= PC_PCP_MAX_ORDER) {
		zone_free_block_at_locked(z, pg, i, PC_MEM_DIRTY, now);
		pages = 1 << i;
	} else {
		pages = (int)(i - PC_PCP_MAX_ORDER);
		zone_run_free_at_locked(z, pg, (size_t)pages, now);
	}
	pcp->count -= pages;
	return pages;
}

/*
 * Return at least `pages` pages (or all) to the zone under one zone-lock
 * hold, coldest first: from the tails, cycling over the lists that hold
 * something (found once, so that a drain costs what it moves, not a scan of
 * all PCP_NR_LISTS lists per entry moved: a drain of one run length used to
 * look at 71 lists for each run, 15% of Test A's samples at 16 KiB).
 */
void pcp_drain_locked(struct pc_zone *z, struct pc_pcp *pcp, int pages)
{
	pc_spin_stat_assert_held(&pcp->lock);
	int moved = 0;
	uint64_t t0 = pc_stats_clock();
	uint64_t now = pc_page_clock_ns(); /* one freed time for the batch */
	uint8_t live[PCP_NR_LISTS];
	unsigned nlive = 0;
	for (unsigned i = 0; i < PCP_NR_LISTS; i++)
		if (!pc_list_empty(pcp_list_at(pcp, i)))
			live[nlive++] = (uint8_t)i;
	pc_lock_acquire(&z->lock);
	while (moved < pages && nlive > 0) {
		unsigned kept = 0;
		for (unsigned k = 0; k < nlive; k++) {
			if (moved < pages)
				moved += pcp_drain_one(z, pcp, live[k], now);
			if (!pc_list_empty(pcp_list_at(pcp, live[k])))
				live[kept++] = live[k];
		}
		nlive = kept;
	}
	zone_publish_hints_locked(z);
	pc_lock_release(&z->lock);
	pcp->drains++;
	pcp->last_drain = (uint32_t)moved;
	if (page_stats_on()) {
		pc_add_relaxed(&z->stats.drains, 1);
		pc_add_relaxed(&z->stats.drain_pages, (uint64_t)moved);
		pc_hist_add(&z->stats.drain_batch, (uint64_t)moved);
	}
	pc_hist_add_since(&z->stats.drain_ns, t0);
}

static bool pcp_over_high(struct pc_zone *z, struct pc_pcp *pcp, int high);

/* Put a block on the pcp; past `high` pages, drain a scaled batch. Returns
 * whether it drained (the zone's free memory then grew). */
bool pcp_free(struct pc_zone *z, struct pc_pcp *pcp, struct pc_page *pg, unsigned order)
{
	pc_spin_stat_assert_held(&pcp->lock);
	int high = pcp_high(pcp); /* the options may change at run time */

	pcp_mark(pg, 1u << order);
	pc_list_add(&pg->list, &pcp->lists[order]);
	pcp->count += 1 << order;
	if (pc_likely(pcp->count <= high))
		return false;
	return pcp_over_high(z, pcp, high);
}

/* The same for a run of `pages` (<= PC_PCP_MAX_RUN). */
bool pcp_free_run(struct pc_zone *z, struct pc_pcp *pcp, struct pc_page *pg, size_t pages)
{
	int high = pcp_high(pcp);

	pcp_mark(pg, (unsigned)pages);
	pc_list_add(&pg->list, &pcp->runs[pages]);
	pcp->count += (int)pages;
	if (pc_likely(pcp->count <= high))
		return false;
	return pcp_over_high(z, pcp, high);
}

/* Past high: grow high if the CPU cycles pages, else drain a scaled batch. */
static bool pcp_over_high(struct pc_zone *z, struct pc_pcp *pcp, int high)
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
	pcp_drain_locked(z, pcp, PC_MAX(batch, pcp->count - high));
	return true;
}

/*
 * Decay: take an eighth off the high of every pcp of z (not below the floor)
 * and drain what each holds above it. Called from release passes, with no
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
		if (pcp->count > high)
			pcp_drain_locked(z, pcp, pcp->count - high);
		pc_spin_stat_unlock(&pcp->lock);
	}
}
