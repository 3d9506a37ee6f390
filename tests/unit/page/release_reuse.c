/*
 * tests/unit/page/release_reuse.c - without the release thread (auto mode,
 * the default, in a program that never starts it), a zone seen reusing what
 * it freed over the floor keeps the recent peak's part of the bound, and
 * still gives memory back after the delay (release.c, "Reuse without the
 * thread"). The page layer alone never starts the thread (malloc's slow
 * paths poll), so this process never has one.
 *
 *  reuse_kept        vm.release_watermark_kb = 8 MiB, a delay of an hour:
 *                    128 MiB of touched order-PC_MAX_ORDER blocks freed go
 *                    down to the floor at once (no reuse seen yet); taken
 *                    and touched again within the delay (the excess faults
 *                    in again: at least half of it), the climb past the
 *                    floor is reuse, so the next frees keep all of it,
 *                    resident (mincore), through timed passes three
 *                    quarters of the delay on, and the round after reuses
 *                    it with fewer than 1/16 of its pages in minor faults
 *                    (getrusage). Freed once more and a delay later, the
 *                    next slow path (a free into the zone) releases it by
 *                    age: none of its pages resident (mincore).
 *  idle_not_kept     the same zone, more than RELEASE_REUSE_DELAYS delays
 *                    later (the reuse seen before has lapsed, the mark is
 *                    older than the delay): 128 MiB allocated, touched and
 *                    freed once, as a program that then goes idle: what
 *                    exceeds the floor goes at once (at most the floor and
 *                    a block resident).
 *  never_keeps       vm.release_thread=0: three rounds of 128 MiB within
 *                    the delay; each free goes down to the floor.
 * pc_page_check() after each. No verdict depends on timing: the page clock
 * moves only by the test, and the delay is an hour.
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"

#define MiB ((size_t)1 << 20)
#define BLOCK (PC_PAGE_SIZE << PC_MAX_ORDER)
#define BLOCK_PAGES ((size_t)1 << PC_MAX_ORDER)
#define ROUND (128 * MiB)
#define ROUND_PAGES (ROUND >> PC_PAGE_SHIFT)
#define NBLOCKS (ROUND / BLOCK)
#define FLOOR_PAGES 2048 /* vm.release_watermark_kb = 8 MiB */
#define HOUR_NS (3600ull * 1000000000u)

static char *blocks[NBLOCKS];
/* Every block address handed out by a round, for the residency checks
 * after they are freed (the same addresses come back: the warmest first). */
static char *seen[4 * NBLOCKS];
static size_t nseen;

static void alloc_touch(char pattern)
{
	for (size_t i = 0; i < NBLOCKS; i++) {
		blocks[i] = pc_alloc_pages(PC_MAX_ORDER);
		REQUIRE(blocks[i] != NULL);
		touch_pages(blocks[i], BLOCK, pattern);
		bool known = false;
		for (size_t j = 0; j < nseen && !known; j++)
			known = seen[j] == blocks[i];
		if (!known) {
			REQUIRE(nseen < PC_ARRAY_SIZE(seen));
			seen[nseen++] = blocks[i];
		}
	}
}

static void free_all(void)
{
	for (size_t i = NBLOCKS; i-- > 0;)
		pc_free_pages(blocks[i], PC_MAX_ORDER);
}

/* Pages of every block address handed out so far that are resident. */
static size_t seen_resident(void)
{
	size_t n = 0;
	for (size_t i = 0; i < nseen; i++)
		n += resident_pages(seen[i], BLOCK_PAGES);
	return n;
}

/* One round: allocate and touch, free; the minor faults of the touches. */
static long round_faults(char pattern)
{
	long f0 = minor_faults();
	alloc_touch(pattern);
	long faults = minor_faults() - f0;
	free_all();
	return faults;
}

static void setup(long thread_mode)
{
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_THREAD, thread_mode, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_WATERMARK_KB, FLOOR_PAGES * 4, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_DELAY_MS, 3600000, false) == 0);
	pc_page_trim();
	nseen = 0;
}

TEST(reuse_kept)
{
	setup(PC_RELEASE_THREAD_AUTO);
	/* Round 1: nothing seen yet; the frees cut down to the floor. */
	round_faults(0x11);
	CHECK(dirty_pages_total(false) <= FLOOR_PAGES + BLOCK_PAGES);
	CHECK(seen_resident() <= FLOOR_PAGES + BLOCK_PAGES);
	/* Round 2 within the delay: the excess faults in again (the reuse). */
	long f2 = round_faults(0x22);
	CHECK(f2 >= (long)(ROUND_PAGES - FLOOR_PAGES) / 2);
	/* Reuse seen: its frees are kept, resident. */
	size_t kept = dirty_pages_total(false);
	CHECK(kept >= ROUND_PAGES - BLOCK_PAGES);
	if (kept < ROUND_PAGES - BLOCK_PAGES)
		fprintf(stderr, "  %zu pages kept after round 2 (faults %ld)\n", kept, f2);
	CHECK(seen_resident() >= ROUND_PAGES - BLOCK_PAGES);
	for (int q = 1; q <= 3; q++) { /* timed passes: nothing due by age yet */
		pc_page_clock_advance(HOUR_NS / 4 + 1000000);
		pc_page_release_due();
	}
	CHECK(dirty_pages_total(false) >= ROUND_PAGES - BLOCK_PAGES);
	/* Round 3: reused without faulting it in again. */
	long f3 = round_faults(0x33);
	CHECK(f3 < (long)ROUND_PAGES / 16);
	if (f3 >= (long)ROUND_PAGES / 16)
		fprintf(stderr, "  %ld minor faults in round 3\n", f3);
	CHECK(dirty_pages_total(false) >= ROUND_PAGES - BLOCK_PAGES);
	/* A delay later, the next slow path (a free into the zone: its pass is
	 * timed) releases everything by age. */
	pc_page_clock_advance(HOUR_NS + 1000000);
	char *p = pc_alloc_pages(PC_MAX_ORDER);
	REQUIRE(p != NULL);
	pc_free_pages(p, PC_MAX_ORDER);
	size_t left = seen_resident();
	CHECK(left <= BLOCK_PAGES); /* at most the block just freed, if never released */
	if (left > BLOCK_PAGES)
		fprintf(stderr, "  %zu pages resident a delay after the frees\n", left);
	CHECK(dirty_pages_total(false) <= BLOCK_PAGES);
	CHECK(pc_page_check());
}

TEST(idle_not_kept)
{
	setup(PC_RELEASE_THREAD_AUTO);
	/* Past the reuse seen in the test before (it counts a few delays). */
	for (int i = 0; i < 8; i++) {
		pc_page_clock_advance(HOUR_NS + 1000000);
		pc_page_release_due();
	}
	round_faults(0x44);
	CHECK(dirty_pages_total(false) <= FLOOR_PAGES + BLOCK_PAGES);
	size_t left = seen_resident();
	CHECK(left <= FLOOR_PAGES + BLOCK_PAGES);
	if (left > FLOOR_PAGES + BLOCK_PAGES)
		fprintf(stderr, "  %zu pages resident after one round\n", left);
	CHECK(pc_page_check());
}

TEST(never_keeps)
{
	setup(PC_RELEASE_THREAD_NEVER);
	for (int r = 0; r < 3; r++) {
		round_faults((char)(0x50 + r));
		CHECK(dirty_pages_total(false) <= FLOOR_PAGES + BLOCK_PAGES);
		CHECK(seen_resident() <= FLOOR_PAGES + BLOCK_PAGES);
	}
	CHECK(pc_page_check());
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_THREAD, PC_RELEASE_THREAD_AUTO, false) == 0);
}

int main(void)
{
	pc_page_init();
	RUN(reuse_kept);
	RUN(idle_not_kept);
	RUN(never_keeps);
	return test_report();
}
