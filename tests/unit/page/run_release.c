/*
 * tests/unit/page/run_release.c - free runs inside a chunk that is still
 * partly used go back to the OS after vm.release_delay_ms, like free blocks
 * of the buddy lists (run.c, "delayed release of free runs").
 *
 * No verdict depends on timing: the delay is an hour, the test moves the
 * page clock past it (pc_page_clock_advance) and forces a pass
 * (pc_page_release_due). Runs are longer than PC_PCP_MAX_RUN pages, so
 * they bypass the per-CPU lists and every free reaches the run heap at once.
 * Residency is read with mincore.
 *
 *  released_after_delay  three runs of one chunk touched, the middle one
 *                        freed: before the delay a pass keeps it resident;
 *                        past it the pass releases it (not resident, the
 *                        zone's run_dirty_pages back to 0), the runs around
 *                        it keep their pages and contents; freed and
 *                        allocated again it reads zero.
 *  merged_keeps_newest   a run freed an hour ago merges with its neighbour
 *                        freed now: the merged run is not due until the
 *                        newer part is.
 *  trim_once             pc_page_trim releases dirty runs and marks them
 *                        released: a second trim finds none.
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"

#define RUN_PAGES 100 /* pages: more than PC_PCP_MAX_RUN */
#define HOUR_MS 3600000L
#define DELAY_NS ((uint64_t)HOUR_MS * 1000000u)

static void reset(void)
{
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, HOUR_MS);
	set_opt(PC_OPT_VM_RELEASE_WATERMARK_KB, 1L << 20);
	set_opt(PC_OPT_VM_RELEASE_ADVICE, 0);
	pc_page_trim();
	REQUIRE(dirty_pages_total(true) == 0);
}

/* Three runs cut one after the other from one chunk: a, b, c adjacent. */
static void three_runs(char **a, char **b, char **c)
{
	*a = pc_alloc_run(RUN_PAGES);
	*b = pc_alloc_run(RUN_PAGES);
	*c = pc_alloc_run(RUN_PAGES);
	REQUIRE(*a && *b && *c);
	memset(*a, 0xa1, RUN_PAGES << PC_PAGE_SHIFT);
	memset(*b, 0xb2, RUN_PAGES << PC_PAGE_SHIFT);
	memset(*c, 0xc3, RUN_PAGES << PC_PAGE_SHIFT);
}

static bool filled(const char *p, size_t bytes, unsigned char v)
{
	for (size_t i = 0; i < bytes; i++)
		if ((unsigned char)p[i] != v)
			return false;
	return true;
}

TEST(released_after_delay)
{
	reset();
	char *a, *b, *c;
	three_runs(&a, &b, &c);
	pc_free_run(b, RUN_PAGES);
	CHECK_EQ(dirty_pages_total(true), RUN_PAGES);
	CHECK_EQ(resident_pages(b, RUN_PAGES), RUN_PAGES);
	pc_page_clock_advance(DELAY_NS / 2);
	pc_page_release_due();
	CHECK_EQ(dirty_pages_total(true), RUN_PAGES);
	CHECK_EQ(resident_pages(b, RUN_PAGES), RUN_PAGES);
	pc_page_clock_advance(DELAY_NS / 2 + 1000000);
	CHECK(pc_page_release_due() >= (size_t)RUN_PAGES << PC_PAGE_SHIFT);
	CHECK_EQ(dirty_pages_total(true), 0);
	CHECK_EQ(resident_pages(b, RUN_PAGES), 0);
	CHECK_EQ(resident_pages(a, RUN_PAGES), RUN_PAGES);
	CHECK_EQ(resident_pages(c, RUN_PAGES), RUN_PAGES);
	CHECK(filled(a, RUN_PAGES << PC_PAGE_SHIFT, 0xa1));
	CHECK(filled(c, RUN_PAGES << PC_PAGE_SHIFT, 0xc3));
	CHECK(pc_page_check());
	/* The released run is handed out again (the best fit for its length)
	 * and reads zero. */
	char *d = pc_alloc_run(RUN_PAGES);
	REQUIRE(d != NULL);
	CHECK(d == b);
	CHECK(filled(d, RUN_PAGES << PC_PAGE_SHIFT, 0));
	pc_free_run(a, RUN_PAGES);
	pc_free_run(c, RUN_PAGES);
	pc_free_run(d, RUN_PAGES);
	CHECK(pc_page_check());
}

TEST(merged_keeps_newest)
{
	reset();
	char *a, *b, *c, *e = pc_alloc_run(RUN_PAGES); /* e keeps the chunk partly used */
	REQUIRE(e != NULL);
	three_runs(&a, &b, &c);
	pc_free_run(a, RUN_PAGES);
	pc_page_clock_advance(DELAY_NS - 1000000000u); /* a is nearly due */
	pc_free_run(b, RUN_PAGES);                          /* merges with a, freed now */
	pc_page_clock_advance(2000000000u);           /* a alone would be due */
	pc_page_release_due();
	CHECK_EQ(resident_pages(a, RUN_PAGES), RUN_PAGES);
	CHECK_EQ(resident_pages(b, RUN_PAGES), RUN_PAGES);
	pc_page_clock_advance(DELAY_NS);
	pc_page_release_due();
	CHECK_EQ(resident_pages(a, RUN_PAGES), 0);
	CHECK_EQ(resident_pages(b, RUN_PAGES), 0);
	CHECK_EQ(resident_pages(c, RUN_PAGES), RUN_PAGES);
	CHECK(pc_page_check());
	pc_free_run(c, RUN_PAGES);
	pc_free_run(e, RUN_PAGES);
	CHECK(pc_page_check());
}

TEST(trim_once)
{
	reset();
	char *a, *b, *c;
	three_runs(&a, &b, &c);
	pc_free_run(b, RUN_PAGES);
	CHECK_EQ(dirty_pages_total(true), RUN_PAGES);
	CHECK(pc_page_trim() >= (size_t)RUN_PAGES << PC_PAGE_SHIFT);
	CHECK_EQ(dirty_pages_total(true), 0);
	CHECK_EQ(resident_pages(b, RUN_PAGES), 0);
	CHECK(filled(a, RUN_PAGES << PC_PAGE_SHIFT, 0xa1));
	pc_free_run(a, RUN_PAGES);
	pc_free_run(c, RUN_PAGES);
	CHECK(pc_page_check());
}

int main(void)
{
	pc_page_init();
	RUN(released_after_delay);
	RUN(merged_keeps_newest);
	RUN(trim_once);
	return test_report();
}
