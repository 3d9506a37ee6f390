/*
 * tests/unit/page/delay.c - free pages go back to the OS only after
 * vm.release_delay_ms, and the knobs around it work live.
 *
 * No verdict here depends on timing: the delay is set to an hour (so real
 * time never reaches it during the test) and the test moves the page clock
 * forward (pc_page_clock_advance) to make "the delay has passed" true, then
 * forces a release pass (pc_page_release_due). The bound (the watermark) is
 * raised to 1 GiB except where the test is about it. Blocks are of order
 * PC_MAX_ORDER, which bypass the per-CPU lists, so every free reaches the
 * zone at once.
 *
 *  reuse_within_delay   64 MiB touched, freed, allocated and touched again
 *                       before the delay: nothing released, and the second
 *                       touch takes (almost) no minor faults (getrusage).
 *  released_after_delay half the delay later a pass releases nothing; past
 *                       the delay it releases all of it, RSS falls, and the
 *                       next touch faults every page in again.
 *  delay_zero           vm.release_delay_ms=0 set live: each free releases.
 *  bound_oldest_first   vm.release_thread on (the option only: the bound then
 *                       has its peak part), watermark 8 MiB, 64 MiB freed:
 *                       kept while the peak of
 *                       use counts (the footprint stays within it), also
 *                       at two passes a quarter delay apart (the peak's
 *                       windows last a delay); with the peak forgotten
 *                       (as a delay or two later), the next pass keeps at
 *                       most the bound, and what it released is the oldest.
 *  shorter_delay_live   (review item G) the delay shortened live, from 4 to
 *                       1 hour, ends the peak's window already open: an
 *                       older peak of 192 MiB (a window opened under the
 *                       4-hour delay just before) is forgotten after two
 *                       passes 1 hour apart (the zone's peak is then the
 *                       use), so that 64 MiB of free order-7 pieces, kept
 *                       while within the peak, go down to the bound at
 *                       once when 32 MiB of order-PC_MAX_ORDER blocks are
 *                       taken beside them (the footprint past the new
 *                       peak). With the window's end fixed when it opened,
 *                       the old peak stayed for 4 hours and all of it was
 *                       kept.
 *  trim_at_once         pc_page_trim releases everything, delay or not.
 *  thread_live          vm.release_thread turned on live: the thread starts
 *                       at the next poll, releases what is due once the clock
 *                       passes the delay (waits for two finished passes: the
 *                       second began after the clock moved), stops when the
 *                       option goes back to 0, and starts again.
 *  lazy_advice          vm.release_advice=1 (MADV_FREE): a pass still takes
 *                       the pages off the dirty count and they are reusable.
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"

#define MiB ((size_t)1 << 20)
#define BLOCK (PC_PAGE_SIZE << PC_MAX_ORDER)
#define NBLOCKS 16 /* 64 MiB */
#define HOUR_MS 3600000L
#define DELAY_NS ((uint64_t)HOUR_MS * 1000000u)

static char *blocks[NBLOCKS];

static void alloc_touch(int pattern)
{
	for (int i = 0; i < NBLOCKS; i++) {
		blocks[i] = pc_alloc_pages(PC_MAX_ORDER);
		REQUIRE(blocks[i] != NULL);
		memset(blocks[i], pattern, BLOCK);
	}
}

static void free_all(void)
{
	for (int i = 0; i < NBLOCKS; i++)
		pc_free_pages(blocks[i], PC_MAX_ORDER);
}

/* Start every test from a zone with nothing dirty and the default knobs
 * replaced by "an hour" and "1 GiB". */
static void reset(void)
{
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, HOUR_MS);
	set_opt(PC_OPT_VM_RELEASE_WATERMARK_KB, 1L << 20);
	set_opt(PC_OPT_VM_RELEASE_ADVICE, 0);
	set_opt(PC_OPT_VM_RELEASE_THREAD, 0);
	pc_page_trim();
	REQUIRE(dirty_pages_total(false) == 0);
}

TEST(reuse_within_delay)
{
	reset();
	alloc_touch(0x11);
	free_all();
	CHECK(dirty_pages_total(false) >= NBLOCKS * (BLOCK >> PC_PAGE_SHIFT));
	CHECK_EQ(pc_page_release_due(), 0); /* nothing is due yet */
	long f0 = minor_faults();
	alloc_touch(0x22); /* the dirty blocks come first: resident, no faults */
	long faults = minor_faults() - f0;
	CHECK(faults < (long)(NBLOCKS * (BLOCK >> PC_PAGE_SHIFT)) / 16);
	if (faults >= (long)(NBLOCKS * (BLOCK >> PC_PAGE_SHIFT)) / 16)
		fprintf(stderr, "  %ld minor faults reusing %d blocks\n", faults, NBLOCKS);
	free_all();
	CHECK(pc_page_check());
}

TEST(released_after_delay)
{
	reset();
	alloc_touch(0x33);
	free_all();
	size_t dirty = dirty_pages_total(false);
	size_t r1 = os_resident_bytes();
	pc_page_clock_advance(DELAY_NS / 2);
	CHECK_EQ(pc_page_release_due(), 0);
	CHECK_EQ(dirty_pages_total(false), dirty);
	pc_page_clock_advance(DELAY_NS / 2 + 1000000);
	size_t released = pc_page_release_due();
	CHECK(released >= NBLOCKS * BLOCK);
	CHECK_EQ(dirty_pages_total(false), 0);
	CHECK(os_resident_bytes() + 48 * MiB <= r1);
	long f0 = minor_faults();
	alloc_touch(0x44); /* released: every page faults in again */
	CHECK(minor_faults() - f0 >= (long)(NBLOCKS * (BLOCK >> PC_PAGE_SHIFT)) / 2);
	free_all();
	CHECK(pc_page_check());
}

TEST(delay_zero)
{
	reset();
	alloc_touch(0x55);
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, 0); /* live */
	for (int i = 0; i < NBLOCKS; i++) {
		pc_free_pages(blocks[i], PC_MAX_ORDER);
		CHECK_EQ(dirty_pages_total(false), 0);
	}
	CHECK(pc_page_check());
}

TEST(bound_oldest_first)
{
	reset();
	alloc_touch(0x66);
	set_opt(PC_OPT_VM_RELEASE_THREAD, 1); /* the bound's peak part (no thread starts here) */
	set_opt(PC_OPT_VM_RELEASE_WATERMARK_KB, 8192); /* bound: 2048 pages */
	for (int i = 0; i < NBLOCKS; i++) {
		pc_page_clock_advance(1000000); /* 1 ms apart: a strict age order */
		pc_free_pages(blocks[i], PC_MAX_ORDER);
	}
	CHECK(dirty_pages_total(false) >= NBLOCKS * (BLOCK >> PC_PAGE_SHIFT)); /* the peak's */
	for (int pass = 0; pass < 2; pass++) { /* the peak's windows last a delay */
		pc_page_clock_advance(DELAY_NS / 4 + 1000000);
		pc_page_release_due();
	}
	CHECK(dirty_pages_total(false) >= NBLOCKS * (BLOCK >> PC_PAGE_SHIFT)); /* still the peak's */
	pc_page_release_forget_peak(); /* as two rolls would, a delay or more on */
	pc_page_release_due(); /* half the delay: nothing due by age */
	CHECK(dirty_pages_total(false) <= 2048);
	/* The newest block is the one kept; the first freed was released. */
	struct pc_page *first = pc_page_of(blocks[0]), *last = pc_page_of(blocks[NBLOCKS - 1]);
	CHECK_EQ(pc_pg_state(first), PC_PG_BUDDY);
	CHECK_EQ(first->mem, PC_MEM_RELEASED);
	CHECK_EQ(pc_pg_state(last), PC_PG_BUDDY);
	CHECK_EQ(last->mem, PC_MEM_DIRTY);
	CHECK(pc_page_check());
}

#define PIECE_ORDER (PC_PCP_MAX_ORDER + 1) /* past the per-CPU lists */
#define PIECES ((128 * MiB) / (PC_PAGE_SIZE << PIECE_ORDER))
#define OLD_PEAK_BLOCKS ((192 * MiB) / BLOCK)
#define BIG_BLOCKS ((32 * MiB) / BLOCK)

/* The largest peak of use of any zone (peak_hint), and the use now. */
static size_t peak_hint_max(void)
{
	size_t peak = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++)
		peak = PC_MAX(peak, pc_load_relaxed(&pc_zone_get(i)->peak_hint));
	return peak;
}

TEST(shorter_delay_live)
{
	static char *pieces[PIECES], *old_peak[OLD_PEAK_BLOCKS], *big[BIG_BLOCKS];
	reset();
	set_opt(PC_OPT_VM_RELEASE_THREAD, 1); /* the bound's peak part (no thread starts here) */
	set_opt(PC_OPT_VM_RELEASE_WATERMARK_KB, 8192);
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, 4 * HOUR_MS);
	pc_page_clock_advance(4 * DELAY_NS + 1000000);
	pc_page_release_due(); /* a window opens now, under the 4-hour delay */
	for (size_t i = 0; i < OLD_PEAK_BLOCKS; i++) /* its peak: 192 MiB, not touched */
		REQUIRE((old_peak[i] = pc_alloc_pages(PC_MAX_ORDER)) != NULL);
	for (size_t i = 0; i < OLD_PEAK_BLOCKS; i++)
		pc_free_pages(old_peak[i], PC_MAX_ORDER);
	pc_page_trim();
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, HOUR_MS); /* shorter, live */
	for (int pass = 0; pass < 2; pass++) { /* two windows of the new delay */
		pc_page_clock_advance(DELAY_NS + 1000000);
		pc_page_release_due();
	}
	size_t peak = peak_hint_max();
	CHECK(peak < (64 * MiB >> PC_PAGE_SHIFT)); /* the old peak is gone */
	if (peak >= (64 * MiB >> PC_PAGE_SHIFT))
		fprintf(stderr, "  peak still %zu pages two new delays later\n", peak);
	for (size_t i = 0; i < PIECES; i++) {
		REQUIRE((pieces[i] = pc_alloc_pages(PIECE_ORDER)) != NULL);
		memset(pieces[i], 0x5a, PC_PAGE_SIZE << PIECE_ORDER);
	}
	for (size_t i = 0; i < PIECES; i += 2)
		pc_free_pages(pieces[i], PIECE_ORDER);
	size_t frag = (PIECES / 2) << PIECE_ORDER; /* 64 MiB of pieces, in pages */
	CHECK(dirty_pages_total(false) >= frag); /* within the peak (128 MiB): kept */
	for (size_t i = 0; i < BIG_BLOCKS; i++) { /* none of it can come from the pieces */
		REQUIRE((big[i] = pc_alloc_pages(PC_MAX_ORDER)) != NULL);
		memset(big[i], 0x66, BLOCK);
	}
	/* Use 96 MiB, peak 128 MiB: the bound is 32 MiB (a block more at most). */
	size_t dirty = dirty_pages_total(false);
	CHECK(dirty <= (36 * MiB >> PC_PAGE_SHIFT));
	if (dirty > (36 * MiB >> PC_PAGE_SHIFT))
		fprintf(stderr, "  %zu pages dirty past the new peak\n", dirty);
	for (size_t i = 0; i < BIG_BLOCKS; i++)
		pc_free_pages(big[i], PC_MAX_ORDER);
	for (size_t i = 1; i < PIECES; i += 2)
		pc_free_pages(pieces[i], PIECE_ORDER);
	CHECK(pc_page_check());
	pc_page_trim();
}

TEST(trim_at_once)
{
	reset();
	alloc_touch(0x77);
	free_all();
	size_t dirty = dirty_pages_total(false);
	CHECK(dirty >= NBLOCKS * (BLOCK >> PC_PAGE_SHIFT));
	CHECK_EQ(pc_page_trim(), dirty << PC_PAGE_SHIFT);
	CHECK_EQ(dirty_pages_total(false), 0);
}

/* Wait (no time limit: the verdict never depends on how long) until the
 * thread has finished two more passes than now. */
static void wait_two_passes(void)
{
	uint64_t p0 = pc_page_release_thread_passes();
	while (pc_page_release_thread_passes() < p0 + 2) {
		set_opt(PC_OPT_VM_RELEASE_DELAY_MS, HOUR_MS); /* wakes the thread */
		usleep(1000);
	}
}

TEST(thread_live)
{
	reset();
	CHECK(!pc_page_release_thread_running());
	pc_page_release_thread_poll(); /* option off: no thread */
	CHECK(!pc_page_release_thread_running());
	set_opt(PC_OPT_VM_RELEASE_THREAD, 1);
	pc_page_release_thread_poll();
	CHECK(pc_page_release_thread_running());
	alloc_touch(0x88);
	free_all();
	wait_two_passes();
	CHECK(dirty_pages_total(false) >= NBLOCKS * (BLOCK >> PC_PAGE_SHIFT)); /* not due yet */
	pc_page_clock_advance(DELAY_NS + 1000000);
	wait_two_passes();
	CHECK_EQ(dirty_pages_total(false), 0); /* the thread released it, nobody else ran */
	set_opt(PC_OPT_VM_RELEASE_THREAD, 0);
	while (pc_page_release_thread_running())
		usleep(1000);
	set_opt(PC_OPT_VM_RELEASE_THREAD, 1); /* and again */
	pc_page_release_thread_poll();
	CHECK(pc_page_release_thread_running());
	set_opt(PC_OPT_VM_RELEASE_THREAD, 0);
	while (pc_page_release_thread_running())
		usleep(1000);
	CHECK(pc_page_check());
}

TEST(lazy_advice)
{
	reset();
	set_opt(PC_OPT_VM_RELEASE_ADVICE, 1);
	alloc_touch(0x99);
	free_all();
	size_t dirty = dirty_pages_total(false);
	pc_page_clock_advance(DELAY_NS + 1000000);
	CHECK_EQ(pc_page_release_due(), dirty << PC_PAGE_SHIFT);
	CHECK_EQ(dirty_pages_total(false), 0);
	alloc_touch(0xaa); /* usable again, whatever the kernel did */
	for (int i = 0; i < NBLOCKS; i++)
		CHECK_EQ((unsigned char)blocks[i][BLOCK - 1], 0xaa);
	free_all();
	set_opt(PC_OPT_VM_RELEASE_ADVICE, 0);
	CHECK(pc_page_check());
}

int main(void)
{
	pc_page_init();
	RUN(reuse_within_delay);
	RUN(released_after_delay);
	RUN(delay_zero);
	RUN(bound_oldest_first);
	RUN(shorter_delay_live);
	RUN(trim_at_once);
	RUN(thread_live);
	RUN(lazy_advice);
	return test_report();
}
