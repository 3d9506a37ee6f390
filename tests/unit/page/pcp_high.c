/*
 * tests/unit/page/pcp_high.c - a per-CPU list's high is sized to what its
 * CPU uses and decays when it stops (issue 9, item 6; kernel: pcp->high).
 *
 * Deterministic: the thread is pinned to its first allowed CPU, the release delay is an
 * hour (no pass starts on its own: the first forced pass plans the next one
 * a quarter of the delay later), and decay passes are forced by calling
 * pc_page_release_due(), one pass per call. Nothing is timed.
 *
 *  grows      allocating and freeing 512 pages, round after round, is
 *             cycling: high grows above vm.pcp_high_min, never past
 *             vm.pcp_high;
 *  decays     each pass takes exactly an eighth off high (not below the
 *             floor) and drains what the list holds above it, until high is
 *             back at the floor;
 *  frees_only a CPU that frees 1000 pages without refilling in between is
 *             not cycling: high grows by one batch at most.
 *  bound_pass_keeps_high  a pass that runs because the zone holds more
 *             dirty memory than its bound (a 4 MiB run freed into the zone,
 *             watermark 1 MiB), not because its time came, releases the
 *             excess but leaves high alone (it took an eighth off, as a
 *             timed pass does, at every such pass).
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"

#define ROUNDS 8
#define PAGES  512

static char *pages[1000];
static struct pc_pcp *pcp;

static int high_min(void) { return (int)pc_option(PC_OPT_VM_PCP_HIGH_MIN); }

TEST(grows)
{
	pc_page_drain_all();
	int start = pcp->high;
	CHECK(start <= high_min());
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < PAGES; i++)
			REQUIRE((pages[i] = pc_alloc_pages(0)) != NULL);
		for (int i = 0; i < PAGES; i++)
			pc_free_pages(pages[i], 0);
	}
	CHECK(pcp->high > high_min());
	CHECK(pcp->high <= (int)pc_option(PC_OPT_VM_PCP_HIGH));
	CHECK(pcp->count <= pcp->high);
	CHECK(pc_page_check());
}

TEST(decays)
{
	int high = pcp->high, passes = 0;
	REQUIRE(high > high_min());
	size_t bad_step = 0, over = 0;
	while (high > high_min() && passes < 100) {
		pc_page_release_due();
		passes++;
		int want = PC_MAX(high - high / 8, high_min());
		bad_step += pcp->high != want;
		over += pcp->count > pcp->high;
		high = pcp->high;
	}
	CHECK_EQ(bad_step, 0);
	CHECK_EQ(over, 0);
	CHECK_EQ(pcp->high, high_min());
	/* From high h, about log(h / min) / log(8 / 7) passes: bounded. */
	CHECK(passes >= 1 && passes < 100);
	/* Once at the floor it stays there. */
	pc_page_release_due();
	CHECK_EQ(pcp->high, high_min());
	CHECK(pc_page_check());
}

TEST(frees_only)
{
	for (int i = 0; i < 1000; i++)
		REQUIRE((pages[i] = pc_alloc_pages(0)) != NULL);
	pc_page_drain_all();
	pc_page_release_due(); /* back to the floor */
	int start = pcp->high;
	for (int i = 0; i < 1000; i++)
		pc_free_pages(pages[i], 0);
	CHECK(pcp->high <= start + (int)pc_option(PC_OPT_VM_PCP_BATCH));
	CHECK(pcp->count <= pcp->high);
	CHECK(pc_page_check());
}

TEST(bound_pass_keeps_high)
{
	pcp->high = (int)pc_option(PC_OPT_VM_PCP_HIGH); /* as if grown */
	int high = pcp->high;
	set_opt(PC_OPT_VM_RELEASE_WATERMARK_KB, 1024);
	void *run = pc_alloc_run(PC_RUN_MAX_PAGES); /* a whole chunk: not cached per CPU */
	REQUIRE(run != NULL);
	pc_free_run(run, PC_RUN_MAX_PAGES); /* to the zone, dirty: over the bound */
	CHECK(dirty_pages_total(false) <= 256); /* the pass ran and released... */
	CHECK_EQ(pcp->high, high);                /* ...but did not decay */
	set_opt(PC_OPT_VM_RELEASE_WATERMARK_KB, 65536);
	CHECK(pc_page_check());
}

int main(void)
{
	if (!pin_cpu0_or_skip())
		return 0;
	pc_page_init();
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, 3600000);
	pc_page_release_due(); /* plans the next pass a quarter hour away */
	pcp = &pc_zone_preferred((unsigned)test_cpu(0))->pcp[test_cpu(0)];
	RUN(grows);
	RUN(decays);
	RUN(frees_only);
	RUN(bound_pass_keeps_high);
	return test_report();
}
