/*
 * tests/unit/page/pcp_runs.c - pc_alloc_runs: a batch of runs for malloc's
 * medium cache with one hold of the per-CPU list's lock and at most one of
 * the zone lock (pcp.c, pcp_take_runs), and the zone's cut of many runs
 * from one free run (run.c, zone_run_alloc_many_locked).
 *
 * Deterministic: pinned to the first allowed CPU, no release pass (an hour's delay, a
 * watermark of 4 GiB), statistics on; the zone lock's acquisitions are
 * counted by its lock statistics. Nothing is timed.
 *
 *  refill_one_zone_hold  an empty list: 16 runs of 4 pages take the zone
 *                        lock once (one refill for the caller's 16 and the
 *                        list's batch), all distinct, page aligned, usable;
 *                        cut one after another from one free run (each
 *                        starts where the one before ends: the same order
 *                        as one zone_run_alloc_locked per run gave, which
 *                        this checks; its saving, one removal and one
 *                        insertion per free run, is not observable here);
 *  from_the_list         freed, they are on the list: 16 again take no
 *                        zone lock;
 *  list_then_refill      a list of 5: 16 take those 5 and 11 by one
 *                        refill (one zone-lock hold), and the list keeps
 *                        the refill's batch for the list;
 *  busy_one_zone_hold    with the pcp lock held (as by a preempted
 *                        holder), 16 come from the zone under one hold
 *                        (one per run before: the single-run path);
 *  refused_reentered     a call from inside the page layer (a signal
 *                        handler) returns 0, takes no lock and counts as a
 *                        refused call.
 * (A zone with no region gives 0: a batch never grows it; pc_alloc_run
 * does, and the first test calls it once for that.)
 * pc_page_check() after each.
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <string.h>

#define RUN_PAGES 4
#define N 16

static struct pc_zone *zone;
static struct pc_pcp *pcp;
static void *runs[PC_ALLOC_RUNS_MAX];

static uint64_t zone_locks(void)
{
	return pc_load_relaxed(&zone->lock_stats.acquisitions);
}

static int list_len(void)
{
	int n = 0;
	struct pc_list *it;
	pc_list_for_each(it, &pcp->runs[RUN_PAGES])
		n++;
	return n;
}

/* Distinct, page aligned, writable runs of RUN_PAGES pages. */
static bool runs_ok(unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (!runs[i] || ((uintptr_t)runs[i] & (PC_PAGE_SIZE - 1)))
			return false;
		for (unsigned j = 0; j < i; j++) {
			char *a = runs[i], *b = runs[j];
			if (a < b + RUN_PAGES * PC_PAGE_SIZE && b < a + RUN_PAGES * PC_PAGE_SIZE)
				return false;
		}
		memset(runs[i], (int)i, RUN_PAGES * PC_PAGE_SIZE);
	}
	return true;
}

static void free_all(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		pc_free_run(runs[i], RUN_PAGES);
}

TEST(refill_one_zone_hold)
{
	void *first = pc_alloc_run(RUN_PAGES); /* the zone's first region (a batch never grows it) */
	REQUIRE(first != NULL);
	pc_free_run(first, RUN_PAGES);
	pc_page_drain_all();
	REQUIRE(list_len() == 0);
	uint64_t locks = zone_locks(), refills = pc_load_relaxed(&zone->stats.refills);
	CHECK_EQ(pc_alloc_runs(RUN_PAGES, runs, N), N);
	CHECK_EQ(zone_locks() - locks, 1);
	CHECK_EQ(pc_load_relaxed(&zone->stats.refills) - refills, 1);
	CHECK(runs_ok(N));
	/* One free run cut from its start: each run begins where the one
	 * before it ends. */
	unsigned next = 0;
	for (unsigned i = 1; i < N; i++)
		next += (char *)runs[i] == (char *)runs[i - 1] + RUN_PAGES * PC_PAGE_SIZE;
	CHECK_EQ(next, N - 1);
	CHECK(pc_page_check());
}

TEST(from_the_list)
{
	pc_page_drain_all();
	free_all(N); /* onto the list: 64 pages, high is at least that */
	REQUIRE(list_len() == N);
	uint64_t locks = zone_locks();
	CHECK_EQ(pc_alloc_runs(RUN_PAGES, runs, N), N);
	CHECK_EQ(zone_locks() - locks, 0);
	CHECK(runs_ok(N));
	free_all(N);
	CHECK(pc_page_check());
}

TEST(list_then_refill)
{
	pc_page_drain_all();
	void *five[5];
	for (int i = 0; i < 5; i++)
		REQUIRE((five[i] = pc_alloc_run(RUN_PAGES)) != NULL);
	pc_page_drain_all();
	for (int i = 0; i < 5; i++)
		pc_free_run(five[i], RUN_PAGES);
	REQUIRE(list_len() == 5);
	uint64_t locks = zone_locks();
	CHECK_EQ(pc_alloc_runs(RUN_PAGES, runs, N), N);
	CHECK_EQ(zone_locks() - locks, 1);
	CHECK(runs_ok(N));
	unsigned from_list = 0;
	for (unsigned i = 0; i < N; i++)
		for (int j = 0; j < 5; j++)
			from_list += runs[i] == five[j];
	CHECK_EQ(from_list, 5);
	CHECK(list_len() > 0); /* the list's own batch landed */
	CHECK(pcp->count <= pc_option(PC_OPT_VM_PCP_HIGH));
	free_all(N);
	CHECK(pc_page_check());
}

TEST(busy_one_zone_hold)
{
	pc_page_drain_all();
	uint64_t busy = pc_load_relaxed(&zone->stats.pcp_busy);
	pc_spin_stat_lock(&pcp->lock); /* as a holder preempted in it */
	uint64_t locks = zone_locks();
	unsigned got = pc_alloc_runs(RUN_PAGES, runs, N);
	uint64_t held = zone_locks() - locks;
	pc_spin_stat_unlock(&pcp->lock);
	CHECK_EQ(got, N);
	CHECK_EQ(held, 1);
	CHECK_EQ(pc_load_relaxed(&zone->stats.pcp_busy) - busy, N);
	CHECK_EQ(list_len(), 0); /* nothing went through the list */
	CHECK(runs_ok(N));
	free_all(N);
	CHECK(pc_page_check());
}

TEST(refused_reentered)
{
	uint64_t locks = zone_locks();
	struct pc_page_reentry_counts c0, c1;
	pc_page_reentry_counts(&c0);
	pc_page_reentry_enter();
	unsigned got = pc_alloc_runs(RUN_PAGES, runs, N);
	pc_page_reentry_leave();
	pc_page_reentry_counts(&c1);
	CHECK_EQ(got, 0);
	CHECK_EQ(zone_locks() - locks, 0);
	CHECK_EQ(c1.refused - c0.refused, 1); /* counted as every refused call */
	CHECK_EQ(pc_alloc_runs(0, runs, N), 0);
	CHECK_EQ(pc_alloc_runs(PC_PCP_MAX_RUN + 1, runs, N), 0);
	CHECK(pc_page_check());
}

int main(void)
{
	if (!(zone = page_test_start()))
		return 0;
	set_opt(PC_OPT_STATS_ENABLE, 1);
	pcp = &zone->pcp[test_cpu(0)];
	RUN(refill_one_zone_hold);
	RUN(from_the_list);
	RUN(list_then_refill);
	RUN(busy_one_zone_hold);
	RUN(refused_reentered);
	return test_report();
}
