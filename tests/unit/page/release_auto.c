/*
 * tests/unit/page/release_auto.c - vm.release_thread=2 (auto, the default):
 * the background thread starts only once a zone's free pool outgrows its
 * floor, and the bound's peak part counts from then on.
 *
 *  small_pool_no_thread  a pool under the floor (16 MiB freed, watermark
 *                        64 MiB): no thread wanted, a poll starts none.
 *  wanted_over_floor     256 MiB of touched blocks freed (watermark 8 MiB,
 *                        delay an hour): with no thread the excess goes at
 *                        once (as with vm.release_thread=0), and the thread
 *                        is wanted; a fork child neither wants nor has one.
 *  thread_keeps_peak     the poll (what malloc's slow paths call) starts the
 *                        thread; the same 256 MiB allocated and freed again
 *                        is then kept (the recent peak), reused without new
 *                        page faults; moving the page clock half a delay
 *                        with two forced passes releases it down to the
 *                        watermark (the bound decays by time, as in
 *                        release.c's release_at_watermark).
 *  off_again             vm.release_thread=0: the thread leaves (waited for
 *                        without a time limit), no longer wanted, and the
 *                        bound has no peak part again.
 * No verdict depends on timing: the delay is an hour (its quarter, a peak
 * window, 15 minutes), so the thread's own passes release nothing by age
 * and roll no window while the test runs; the clock moves only by the test.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <sys/wait.h>

#define MiB ((size_t)1 << 20)
#define BLOCK (PC_PAGE_SIZE << PC_MAX_ORDER)
#define MAX_BLOCKS 128
#define QUARTER_DELAY_NS (900ull * 1000000000u + 1000000u) /* 15 min + 1 ms */

static char *blocks[MAX_BLOCKS];
static size_t nblocks;

static void alloc_touch(size_t bytes, int pattern)
{
	for (size_t done = 0; done < bytes; done += BLOCK) {
		REQUIRE(nblocks < MAX_BLOCKS);
		char *p = pc_alloc_pages(PC_MAX_ORDER);
		REQUIRE(p != NULL);
		touch_pages(p, BLOCK, (char)pattern);
		blocks[nblocks++] = p;
	}
}

static void free_blocks(void)
{
	while (nblocks > 0)
		pc_free_pages(blocks[--nblocks], PC_MAX_ORDER);
}

TEST(small_pool_no_thread)
{
	REQUIRE(pc_option(PC_OPT_VM_RELEASE_THREAD) == 2); /* the default */
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_DELAY_MS, 3600000, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_WATERMARK_KB, 65536, false) == 0);
	alloc_touch(16 * MiB, 0x11);
	free_blocks();
	pc_page_release_due();
	CHECK(!pc_page_release_thread_wanted());
	pc_page_release_thread_poll();
	CHECK(!pc_page_release_thread_running());
	CHECK(!pc_page_release_thread_active());
	CHECK(dirty_pages_total(false) >= (16 * MiB >> PC_PAGE_SHIFT)); /* under the floor: kept */
	pc_page_trim();
}

TEST(wanted_over_floor)
{
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_WATERMARK_KB, 8192, false) == 0);
	size_t r0 = os_resident_bytes();
	alloc_touch(256 * MiB, 0x22);
	size_t r1 = os_resident_bytes();
	CHECK(r1 >= r0 + 250 * MiB);
	free_blocks();
	/* No thread yet: the frees released down to the floor at once. */
	CHECK(dirty_pages_total(false) <= 2048 + (BLOCK >> PC_PAGE_SHIFT));
	CHECK(os_resident_bytes() + 200 * MiB <= r1);
	CHECK(pc_page_release_thread_wanted());
	CHECK(!pc_page_release_thread_running());
	CHECK(!pc_page_release_thread_active());
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) /* the child starts its own thread when it needs one */
		_exit(pc_page_release_thread_wanted() || pc_page_release_thread_running() ? 1 : 0);
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(pc_page_check());
}

TEST(thread_keeps_peak)
{
	pc_page_release_thread_poll();
	CHECK(pc_page_release_thread_running());
	CHECK(pc_page_release_thread_active());
	alloc_touch(256 * MiB, 0x33);
	size_t r1 = os_resident_bytes();
	free_blocks();
	/* The peak part: all of it kept, resident. */
	CHECK(dirty_pages_total(false) >= (248 * MiB >> PC_PAGE_SHIFT));
	CHECK(os_resident_bytes() + 16 * MiB >= r1);
	long f0 = minor_faults();
	alloc_touch(256 * MiB, 0x44); /* the next round reuses it */
	long faults = minor_faults() - f0;
	CHECK(faults < (long)((256 * MiB) >> PC_PAGE_SHIFT) / 16);
	if (faults >= (long)((256 * MiB) >> PC_PAGE_SHIFT) / 16)
		fprintf(stderr, "  %ld minor faults reusing 256 MiB\n", faults);
	free_blocks();
	CHECK(dirty_pages_total(false) >= (248 * MiB >> PC_PAGE_SHIFT));
	/* The bound decays by time: two windows later the peak is gone. */
	pc_page_clock_advance(QUARTER_DELAY_NS);
	pc_page_release_due();
	pc_page_clock_advance(QUARTER_DELAY_NS);
	pc_page_release_due();
	CHECK(dirty_pages_total(false) <= 2048);
	CHECK(os_resident_bytes() + 200 * MiB <= r1);
	CHECK(pc_page_check());
}

TEST(off_again)
{
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_THREAD, 0, false) == 0);
	while (pc_page_release_thread_running())
		usleep(1000);
	CHECK(!pc_page_release_thread_wanted());
	CHECK(!pc_page_release_thread_active());
	pc_page_release_thread_poll();
	CHECK(!pc_page_release_thread_running());
	alloc_touch(256 * MiB, 0x55);
	free_blocks();
	CHECK(dirty_pages_total(false) <= 2048 + (BLOCK >> PC_PAGE_SHIFT)); /* no peak part */
	CHECK(pc_page_check());
	pc_page_trim();
}

int main(void)
{
	pc_page_init();
	RUN(small_pool_no_thread);
	RUN(wanted_over_floor);
	RUN(thread_keeps_peak);
	RUN(off_again);
	return test_report();
}
