/*
 * tests/unit/page/pcp.c - per-CPU page lists: batch scaling of refills and
 * drains (seed 001), run-time changes of vm.pcp_batch_scale_max and
 * vm.pcp_high, draining, and the try-lock rule (a busy pcp lock sends the
 * caller to the zone, never makes it spin).
 *
 * The thread is pinned to its first allowed CPU c (test_cpu(0)) so that
 * os_cpu_current() is stable and every order-0 allocation and free goes
 * through pc_zone_preferred(c)->pcp[c] ("the pcp" below).
 * Start-up options: vm.pcp_batch=4, vm.pcp_high=100000 (no drains while
 * allocating) with vm.pcp_high_min as high (a fixed high, whatever the use),
 * vm.pcp_batch_scale_max=3, stats.enable=1.
 *
 * Refill sizes are read from pcp->last_refill each time pcp->refills moves;
 * drain sizes from pcp->last_drain each time pcp->drains moves.
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#define BATCH     4
#define MAX_PAGES 4096

static char *pages[MAX_PAGES];
static size_t npages;
static struct pc_zone *zone;
static struct pc_pcp *pcp;

/* Allocate order-0 pages until `want` refills of the pcp have been seen;
 * seq[] gets their sizes. */
static void record_refills(uint32_t *seq, size_t want)
{
	size_t seen = 0;
	uint64_t refills = pcp->refills;
	while (seen < want && npages < MAX_PAGES) {
		char *p = pc_alloc_pages(0);
		REQUIRE(p != NULL);
		pages[npages++] = p;
		if (pcp->refills != refills) {
			CHECK_EQ(pcp->refills, refills + 1); /* one refill per call at most */
			refills = pcp->refills;
			seq[seen++] = pcp->last_refill;
		}
	}
	REQUIRE(seen == want);
}

/* Free order-0 pages one by one until `want` drains of the pcp have been
 * seen; seq[] gets their sizes. Each drain must leave count == before - moved. */
static void record_drains(uint32_t *seq, size_t want)
{
	size_t seen = 0;
	uint64_t drains = pcp->drains;
	while (seen < want) {
		REQUIRE(npages > 0);
		int before = pcp->count;
		pc_free_pages(pages[--npages], 0);
		if (pcp->drains != drains) {
			CHECK_EQ(pcp->drains, drains + 1);
			drains = pcp->drains;
			seq[seen++] = pcp->last_drain;
			CHECK_EQ(pcp->count, before + 1 - (int)pcp->last_drain);
		} else {
			CHECK_EQ(pcp->count, before + 1);
		}
	}
}

static void check_seq(const char *what, const uint32_t *got, const uint32_t *want, size_t n)
{
	bool same = true;
	for (size_t i = 0; i < n; i++)
		same &= got[i] == want[i];
	CHECK(same);
	if (!same) {
		fprintf(stderr, "  %s: got", what);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, " %u", got[i]);
		fprintf(stderr, ", want");
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, " %u", want[i]);
		fprintf(stderr, "\n");
	}
}

/* Write the scaling factors of the pcp (white box: under its lock). */
static void set_factors(uint8_t alloc_factor, uint8_t free_factor)
{
	pc_spin_stat_lock(&pcp->lock);
	pcp->alloc_factor = alloc_factor;
	pcp->free_factor = free_factor;
	pc_spin_stat_unlock(&pcp->lock);
}
static void reset_factors(void) { set_factors(0, 0); }

static size_t zone_stat(_Atomic uint64_t *c) { return (size_t)atomic_load(c); }

/*
 * The very first order-0 allocation of the process finds the zone empty. The
 * sizes of the refills of the pcp must still read 4, 8, 16, 32, 32, 32: a refill
 * that found the zone empty moved nothing and must neither count as a refill
 * nor raise the scaling factor.
 */
TEST(refill_scaling_fresh_zone)
{
	REQUIRE(zone->managed_pages == 0); /* nothing allocated yet */
	uint32_t seq[6];
	const uint32_t want[6] = { 4, 8, 16, 32, 32, 32 };
	record_refills(seq, 6);
	check_seq("refills from a fresh zone", seq, want, 6);
}

/* Same with a zone that already has memory, from factor 0; then the cap is
 * lowered to 1 (refills of 8 at most) and raised to 5 (they grow to 128). */
TEST(refill_scaling)
{
	pc_page_drain_all();
	REQUIRE(pcp->count == 0);
	reset_factors();
	uint32_t seq[6];
	const uint32_t want[6] = { 4, 8, 16, 32, 32, 32 }; /* capped at batch << 3 */
	record_refills(seq, 6);
	check_seq("scale_max 3", seq, want, 6);
	CHECK_EQ(pcp->alloc_factor, 3);

	set_opt(PC_OPT_VM_PCP_BATCH_SCALE_MAX, 1);
	const uint32_t want1[4] = { 8, 8, 8, 8 };
	record_refills(seq, 4);
	check_seq("scale_max 1", seq, want1, 4);
	CHECK(pcp->alloc_factor <= 1);

	set_opt(PC_OPT_VM_PCP_BATCH_SCALE_MAX, 5);
	const uint32_t want5[6] = { 8, 16, 32, 64, 128, 128 };
	record_refills(seq, 6);
	check_seq("scale_max 5", seq, want5, 6);
	CHECK_EQ(pcp->alloc_factor, 5);

	/* Scale 0: every refill is one batch. */
	set_opt(PC_OPT_VM_PCP_BATCH_SCALE_MAX, 0);
	const uint32_t want0[3] = { 4, 4, 4 };
	record_refills(seq, 3);
	check_seq("scale_max 0", seq, want0, 3);
	set_opt(PC_OPT_VM_PCP_BATCH_SCALE_MAX, 3);

	/* Refills never exceed the room under vm.pcp_high: with high 20 and an
	 * empty pcp a refill takes at most 20 pages (but at least one batch). */
	pc_page_drain_all();
	reset_factors();
	set_opt(PC_OPT_VM_PCP_HIGH, 20);
	set_opt(PC_OPT_VM_PCP_BATCH_SCALE_MAX, 6);
	record_refills(seq, 6);
	for (int i = 0; i < 6; i++)
		CHECK(seq[i] >= BATCH && seq[i] <= 20);
	set_opt(PC_OPT_VM_PCP_HIGH, 100000);
	set_opt(PC_OPT_VM_PCP_BATCH_SCALE_MAX, 3);
	CHECK(pc_page_check());
}

/* The drain side: past vm.pcp_high a free drains batch << free_factor pages,
 * the factor growing by one per drain up to the cap; a drain halves the
 * allocation factor. */
TEST(drain_scaling)
{
	/* Enough pages to free: everything below comes from this array. */
	while (npages < 1200) {
		char *p = pc_alloc_pages(0);
		REQUIRE(p != NULL);
		pages[npages++] = p;
	}
	uint32_t seq[6];

	pc_page_drain_all();
	set_factors(3, 0); /* drains halve the allocation factor: 3 -> 1 -> 0 */
	set_opt(PC_OPT_VM_PCP_HIGH, 64);
	set_opt(PC_OPT_VM_PCP_BATCH_SCALE_MAX, 3);
	const uint32_t want3[5] = { 4, 8, 16, 32, 32 };
	record_drains(seq, 5);
	check_seq("drains, scale_max 3, high 64", seq, want3, 5);
	CHECK_EQ(pcp->alloc_factor, 0);
	CHECK_EQ(pcp->free_factor, 3);
	CHECK(pcp->count <= 64);

	/* Cap lowered to 1 with vm.pcp_high 16: drains of 8. */
	pc_page_drain_all();
	set_opt(PC_OPT_VM_PCP_HIGH, 16);
	set_opt(PC_OPT_VM_PCP_BATCH_SCALE_MAX, 1);
	const uint32_t want1[3] = { 8, 8, 8 };
	record_drains(seq, 3);
	check_seq("drains, scale_max 1, high 16", seq, want1, 3);
	CHECK(pcp->count <= 16);

	/* Cap raised to 5 with vm.pcp_high 256: they grow to 128. */
	pc_page_drain_all();
	set_opt(PC_OPT_VM_PCP_HIGH, 256);
	set_opt(PC_OPT_VM_PCP_BATCH_SCALE_MAX, 5);
	const uint32_t want5[6] = { 8, 16, 32, 64, 128, 128 };
	record_drains(seq, 6);
	check_seq("drains, scale_max 5, high 256", seq, want5, 6);
	CHECK(pcp->count <= 256);

	/* A lowered vm.pcp_high takes effect at the next free: the pcp drains
	 * down to it at once, however small the batch. */
	int before = pcp->count;
	REQUIRE(before > 40);
	set_opt(PC_OPT_VM_PCP_HIGH, 8);
	pc_free_pages(pages[--npages], 0);
	CHECK(pcp->count <= 8);
	CHECK(pcp->last_drain >= (uint32_t)(before + 1 - 8));

	/* vm.pcp_high 0: every free leaves the pcp empty. */
	set_opt(PC_OPT_VM_PCP_HIGH, 0);
	for (int i = 0; i < 20; i++) {
		pc_free_pages(pages[--npages], 0);
		CHECK_EQ(pcp->count, 0);
	}
	set_opt(PC_OPT_VM_PCP_HIGH, 100000);
	set_opt(PC_OPT_VM_PCP_BATCH_SCALE_MAX, 3);
	CHECK(pc_page_check());
}

/* pc_page_drain_all empties every pcp; accounting holds afterwards. */
TEST(drain_all)
{
	/* Put pages on the pcp: free half of what we hold. */
	size_t keep = npages / 2;
	while (npages > keep)
		pc_free_pages(pages[--npages], 0);
	CHECK(pcp->count > 0);
	uint64_t drains = pcp->drains;
	pc_page_drain_all();
	CHECK_EQ(pcp->drains, drains + 1);
	for (unsigned i = 0; i < pc_zone_count(); i++)
		for (unsigned c = 0; c < os_cpu_count(); c++)
			CHECK_EQ(pc_zone_get(i)->pcp[c].count, 0);
	/* Draining an empty pcp is not a drain. */
	pc_page_drain_all();
	CHECK_EQ(pcp->drains, drains + 1);
	CHECK(pc_page_check());
	size_t free_pages = 0, managed = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		free_pages += pc_zone_get(i)->free_pages;
		managed += pc_zone_get(i)->managed_pages;
	}
	CHECK_EQ(managed, free_pages + npages);
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "test_page_pcp: watchdog: a call spun on the busy pcp lock\n";
	ssize_t r = write(2, msg, sizeof(msg) - 1);
	(void)r;
	_exit(2);
}

/* With the pcp locked (as if another thread on its CPU held it), allocation and
 * free go to the zone: they return, leave the pcp untouched, and count busy. */
TEST(busy_pcp_goes_to_zone)
{
	REQUIRE(pc_option(PC_OPT_STATS_ENABLE) == 1);
	REQUIRE(pc_zone_preferred(0) == zone);
	signal(SIGALRM, on_alarm);
	alarm(10);
	uint64_t busy0 = zone_stat(&zone->stats.pcp_busy);
	uint64_t hits0 = zone_stat(&zone->stats.pcp_hits);
	/* Something on the pcp, so that a wrong pcp access would show. */
	pc_free_pages(pages[--npages], 0);
	int count = pcp->count;
	uint64_t refills = pcp->refills, drains = pcp->drains;

	pc_spin_stat_lock(&pcp->lock);
	char *p[3];
	for (int i = 0; i < 3; i++) {
		p[i] = pc_alloc_pages((unsigned)i); /* orders 0..2: pcp orders */
		CHECK(p[i] != NULL);
		if (p[i]) {
			CHECK_EQ(pc_pg_state(pc_page_of_owned(p[i])), PC_PG_ALLOC);
			CHECK_EQ(pc_page_of(p[i])->order, i);
		}
	}
	uint64_t busy_alloc = zone_stat(&zone->stats.pcp_busy);
	for (int i = 0; i < 3; i++)
		if (p[i]) {
			pc_free_pages(p[i], (unsigned)i);
			/* Straight to the buddy lists, not the pcp. */
			uint8_t st = (uint8_t)pc_pg_state(pc_page_of_owned(p[i]));
			CHECK(st == PC_PG_BUDDY || st == PC_PG_NONE);
		}
	uint64_t busy_free = zone_stat(&zone->stats.pcp_busy);
	CHECK_EQ(pcp->count, count);
	CHECK_EQ(pcp->refills, refills);
	CHECK_EQ(pcp->drains, drains);
	pc_spin_stat_unlock(&pcp->lock);
	alarm(0);

	CHECK_EQ(busy_alloc - busy0, 3);
	CHECK_EQ(busy_free - busy_alloc, 3);
	CHECK_EQ(zone_stat(&zone->stats.pcp_hits), hits0);
	/* Unlocked again: the pcp serves. */
	char *q = pc_alloc_pages(0);
	CHECK(q != NULL);
	CHECK_EQ(zone_stat(&zone->stats.pcp_hits), hits0 + 1);
	CHECK_EQ(zone_stat(&zone->stats.pcp_busy), busy_free);
	if (q)
		pc_free_pages(q, 0);
	CHECK(pc_page_check());
}

/* Orders 1..PC_PCP_MAX_ORDER have their own lists: a refill of order o moves
 * blocks of order o, counted in pages; order PC_PCP_MAX_ORDER + 1 bypasses. */
TEST(higher_orders)
{
	pc_page_drain_all();
	reset_factors();
	for (unsigned o = 1; o <= PC_PCP_MAX_ORDER; o++) {
		uint64_t refills = pcp->refills;
		char *p = pc_alloc_pages(o);
		REQUIRE(p != NULL);
		CHECK_EQ(pcp->refills, refills + 1);
		/* Blocks: max(batch >> o, 2) << factor; pages = blocks << o. */
		CHECK_EQ(pcp->last_refill % (1u << o), 0);
		CHECK(pcp->last_refill >= (2u << o));
		CHECK(!pc_list_empty(&pcp->lists[o]) || pcp->last_refill == (1u << o));
		CHECK_EQ(pcp->count, (int)pcp->last_refill - (1 << o));
		pc_free_pages(p, o);
		CHECK_EQ(pcp->count, (int)pcp->last_refill);
		pc_page_drain_all();
	}
	uint64_t refills = pcp->refills;
	char *p = pc_alloc_pages(PC_PCP_MAX_ORDER + 1);
	REQUIRE(p != NULL);
	CHECK_EQ(pcp->refills, refills);
	CHECK_EQ(pcp->count, 0);
	pc_free_pages(p, PC_PCP_MAX_ORDER + 1);
	CHECK_EQ(pcp->count, 0);
	CHECK(pc_page_check());
}

TEST(cleanup)
{
	while (npages > 0)
		pc_free_pages(pages[--npages], 0);
	pc_page_drain_all();
	check_coalesced(false);
}

int main(void)
{
	REQUIRE(pc_option_set(PC_OPT_VM_PCP_BATCH, BATCH, true) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_PCP_HIGH, 100000, true) == 0);
	/* The floor as high as the cap: every pcp's high is vm.pcp_high. */
	REQUIRE(pc_option_set(PC_OPT_VM_PCP_HIGH_MIN, 1 << 20, true) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_PCP_BATCH_SCALE_MAX, 3, true) == 0);
	REQUIRE(pc_option_set(PC_OPT_STATS_ENABLE, 1, true) == 0);
	pc_page_init();
	if (!pin_cpu0_or_skip())
		return test_report();
	zone = pc_zone_preferred((unsigned)test_cpu(0));
	pcp = &zone->pcp[test_cpu(0)];
	RUN(refill_scaling_fresh_zone);
	RUN(refill_scaling);
	RUN(drain_scaling);
	RUN(drain_all);
	RUN(busy_pcp_goes_to_zone);
	RUN(higher_orders);
	RUN(cleanup);
	return test_report();
}
