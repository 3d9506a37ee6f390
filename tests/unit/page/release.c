/*
 * tests/unit/page/release.c - free memory goes back to the OS.
 *
 *  (a0) Without the background thread (vm.release_thread=0; auto before it starts),
 *      the bound has no peak part: 256 MiB of touched blocks freed with the
 *      watermark at 8 MiB and a delay of an hour go back at once, down to
 *      the watermark, before any pass: a program that goes idle right after
 *      its frees makes no call that would run one.
 *  (a) vm.release_thread=1 (the option only: the page layer alone never
 *      starts the thread, malloc's slow paths do), vm.release_watermark_kb =
 *      8 MiB and a delay of an hour: 256 MiB of
 *      touched order-PC_MAX_ORDER blocks freed. The footprint stays within
 *      the recent peak of use, so all of it is kept (resident), at the
 *      passes a quarter, a half and three quarters of the delay later too
 *      (the peak's windows last a delay); allocated and touched again then,
 *      it costs fewer than 1/16 of its pages in minor faults (getrusage);
 *      freed again and a delay later it goes by age: the resident size
 *      drops by at least 200 MiB and at most a watermark's worth stays
 *      dirty.
 *  (a2) Fragments that cannot be reused: after an older peak of 384 MiB
 *      that two passes a delay apart must have let expire, 256 MiB of
 *      order-7 blocks, every
 *      other one freed (128 MiB of dirty pieces no order-PC_MAX_ORDER block
 *      can use), then 64 MiB of order-PC_MAX_ORDER blocks taken: the use
 *      passes what the footprint allows (the peak), and the zones release
 *      pieces at once until in use + dirty is back within the bound.
 *  (b) Watermark raised to 1 GiB at run time: 128 MiB of touched pages freed
 *      stay resident (the delay, an hour, never passes during the test);
 *      pc_page_trim() then releases all of it (>= 120 MiB, exactly the dirty
 *      pages of the zones) and the resident size drops by at least 100 MiB.
 *  (c) Memory that was released reads zero when it is allocated again.
 * pc_page_check() after each step.
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"

#define MiB ((size_t)1 << 20)
#define BLOCK (PC_PAGE_SIZE << PC_MAX_ORDER)
#define MAX_BLOCKS 512

static char *blocks[MAX_BLOCKS];
static size_t nblocks;
/* Every block written with a nonzero pattern at some point. */
static char *written[MAX_BLOCKS];
static size_t nwritten;

static void note_written(char *p)
{
	for (size_t i = 0; i < nwritten; i++)
		if (written[i] == p)
			return;
	REQUIRE(nwritten < MAX_BLOCKS);
	written[nwritten++] = p;
}

static void alloc_touch(size_t bytes, int pattern)
{
	for (size_t done = 0; done < bytes; done += BLOCK) {
		REQUIRE(nblocks < MAX_BLOCKS);
		char *p = pc_alloc_pages(PC_MAX_ORDER);
		REQUIRE(p != NULL);
		memset(p, pattern, BLOCK);
		note_written(p);
		blocks[nblocks++] = p;
	}
}

static void free_blocks(void)
{
	while (nblocks > 0)
		pc_free_pages(blocks[--nblocks], PC_MAX_ORDER);
}

#define QUARTER_DELAY_NS (900ull * 1000000000u + 1000000u) /* 15 min + 1 ms */

/* Pages in use in all zones (managed - free), the footprint's other part. */
static size_t used_pages_total(void)
{
	size_t used = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		used += pc_load_relaxed(&z->managed_hint) - pc_load_relaxed(&z->free_hint);
	}
	return used;
}

TEST(released_at_once_without_thread)
{
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_THREAD, 0, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_WATERMARK_KB, 8192, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_DELAY_MS, 3600000, false) == 0);
	size_t r0 = os_resident_bytes();
	REQUIRE(r0 > 0);
	alloc_touch(256 * MiB, 0x22);
	size_t r1 = os_resident_bytes();
	CHECK(r1 >= r0 + 250 * MiB);
	free_blocks();
	/* No pass, no clock moved: the frees themselves released. */
	CHECK(dirty_pages_total(false) <= 2048 + (BLOCK >> PC_PAGE_SHIFT));
	size_t r2 = os_resident_bytes();
	CHECK(r2 + 200 * MiB <= r1);
	if (r2 + 200 * MiB > r1)
		fprintf(stderr, "  resident %zu MiB touched, %zu MiB after the frees\n",
			r1 / MiB, r2 / MiB);
	CHECK(pc_page_check());
	pc_page_trim();
}

TEST(release_at_watermark)
{
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_THREAD, 1, false) == 0); /* the peak part */
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_WATERMARK_KB, 8192, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_DELAY_MS, 3600000, false) == 0);
	size_t r0 = os_resident_bytes();
	REQUIRE(r0 > 0);
	alloc_touch(256 * MiB, 0x11);
	size_t r1 = os_resident_bytes();
	CHECK(r1 >= r0 + 250 * MiB);
	free_blocks();
	/* Within the peak: kept, resident, reusable without a fault, at every
	 * timed pass until the delay has passed (the peak's windows last a
	 * delay; they lasted a quarter, and half a delay released it). */
	CHECK(dirty_pages_total(false) >= (248 * MiB >> PC_PAGE_SHIFT));
	CHECK(os_resident_bytes() + 16 * MiB >= r1);
	for (int q = 1; q <= 3; q++) {
		pc_page_clock_advance(QUARTER_DELAY_NS);
		pc_page_release_due();
		CHECK(dirty_pages_total(false) >= (248 * MiB >> PC_PAGE_SHIFT));
	}
	/* Three quarters of the delay later, the next round reuses it. */
	long f0 = minor_faults();
	alloc_touch(256 * MiB, 0x12);
	long faults = minor_faults() - f0;
	CHECK(faults < (long)((256 * MiB) >> PC_PAGE_SHIFT) / 16);
	if (faults >= (long)((256 * MiB) >> PC_PAGE_SHIFT) / 16)
		fprintf(stderr, "  %ld minor faults reusing 256 MiB 3/4 delay later\n", faults);
	free_blocks();
	/* Once it has stayed free for the delay it goes, by age. */
	pc_page_clock_advance(4 * QUARTER_DELAY_NS);
	pc_page_release_due();
	size_t r2 = os_resident_bytes();
	CHECK(r2 + 200 * MiB <= r1);
	if (r2 + 200 * MiB > r1)
		fprintf(stderr, "  resident %zu MiB touched, %zu MiB after the passes\n",
			r1 / MiB, r2 / MiB);
	/* Nothing is in use any more: at most the watermark (8 MiB = 2048
	 * pages) stays dirty (none here: all of it was due). */
	CHECK(dirty_pages_total(false) <= 2048);
	CHECK(pc_page_check());
}

#define PIECE_ORDER (PC_PCP_MAX_ORDER + 1) /* 512 KiB: past the per-CPU lists */
#define PIECES ((256 * MiB) / (PC_PAGE_SIZE << PIECE_ORDER))

TEST(fragments_released_past_peak)
{
	static char *pieces[PIECES];
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_THREAD, 1, false) == 0); /* the peak part */
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_WATERMARK_KB, 8192, false) == 0);
	pc_page_trim();
	/* An older, larger peak (384 MiB taken and freed: not touched, and not
	 * recorded in blocks[], which (c) counts), then two passes a delay
	 * apart: the peak must have expired, or the fragments below would be
	 * kept under it (review of midfaults, item A: with windows that never
	 * roll, every other check here holds by age alone). */
	static char *old_peak[(384 * MiB) / BLOCK];
	for (size_t i = 0; i < (384 * MiB) / BLOCK; i++)
		REQUIRE((old_peak[i] = pc_alloc_pages(PC_MAX_ORDER)) != NULL);
	for (size_t i = 0; i < (384 * MiB) / BLOCK; i++)
		pc_free_pages(old_peak[i], PC_MAX_ORDER);
	pc_page_clock_advance(4 * QUARTER_DELAY_NS); /* two passes a delay apart: no old peak left */
	pc_page_release_due();
	pc_page_clock_advance(4 * QUARTER_DELAY_NS);
	pc_page_release_due();
	for (size_t i = 0; i < PIECES; i++) {
		pieces[i] = pc_alloc_pages(PIECE_ORDER);
		REQUIRE(pieces[i] != NULL);
		memset(pieces[i], 0x5a, PC_PAGE_SIZE << PIECE_ORDER);
	}
	for (size_t i = 0; i < PIECES; i += 2)
		pc_free_pages(pieces[i], PIECE_ORDER);
	size_t frag = (PIECES / 2) << PIECE_ORDER; /* 128 MiB of pieces, in pages */
	CHECK(dirty_pages_total(false) >= frag); /* within the peak: kept */
	char *big[(64 * MiB) / BLOCK]; /* none of it can come from the pieces */
	for (size_t i = 0; i < (64 * MiB) / BLOCK; i++) {
		big[i] = pc_alloc_pages(PC_MAX_ORDER);
		REQUIRE(big[i] != NULL);
		memset(big[i], 0x66, BLOCK);
	}
	size_t used = used_pages_total(), dirty = dirty_pages_total(false);
	/* Released at once down to the bound: the peak (256 MiB) less the use,
	 * or a quarter of the use, whichever is more (the watermark is less). */
	size_t peak = 256 * MiB >> PC_PAGE_SHIFT;
	CHECK(dirty < frag);
	CHECK(dirty <= PC_MAX(peak > used ? peak - used : 0, used / 4) + (4 * MiB >> PC_PAGE_SHIFT));
	if (dirty >= frag)
		fprintf(stderr, "  %zu pages in use, %zu dirty\n", used, dirty);
	for (size_t i = 0; i < (64 * MiB) / BLOCK; i++)
		pc_free_pages(big[i], PC_MAX_ORDER);
	for (size_t i = 1; i < PIECES; i += 2)
		pc_free_pages(pieces[i], PIECE_ORDER);
	CHECK(pc_page_check());
	pc_page_trim();
}

TEST(trim_above_high_watermark)
{
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_WATERMARK_KB, 1L << 20, false) == 0); /* 1 GiB */
	pc_page_drain_all();
	size_t dirty0 = dirty_pages_total(false);
	alloc_touch(128 * MiB, 0x22);
	size_t r1 = os_resident_bytes();
	free_blocks();
	size_t r2 = os_resident_bytes();
	/* Under the watermark: nothing released, it stays resident. */
	CHECK(r2 + 16 * MiB >= r1);
	CHECK(dirty_pages_total(false) >= (128 * MiB >> PC_PAGE_SHIFT));
	CHECK(dirty_pages_total(false) <= dirty0 + (128 * MiB >> PC_PAGE_SHIFT));
	CHECK(pc_page_check());

	uint64_t rel_pages = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++)
		rel_pages += atomic_load(&pc_zone_get(i)->stats.released_pages);
	pc_page_drain_all();
	size_t dirty = dirty_pages_total(false);
	size_t released = pc_page_trim();
	size_t r3 = os_resident_bytes();
	CHECK(released >= 120 * MiB);
	CHECK_EQ(released, dirty << PC_PAGE_SHIFT); /* all the dirty pages, once */
	CHECK(r3 + 100 * MiB <= r2);
	CHECK_EQ(dirty_pages_total(false), 0);
	uint64_t rel_pages2 = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++)
		rel_pages2 += atomic_load(&pc_zone_get(i)->stats.released_pages);
	CHECK_EQ(rel_pages2 - rel_pages, released >> PC_PAGE_SHIFT);
	CHECK(pc_page_check());
	/* Nothing left to release. */
	CHECK_EQ(pc_page_trim(), 0);
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_WATERMARK_KB, 8192, false) == 0);
}

/* Allocate everything free; every block we wrote before must read zero now
 * (it was released). Then a few small blocks too. */
TEST(released_memory_is_zero)
{
	pc_page_drain_all();
	size_t checked = 0, nonzero = 0;
	while (free_total() > 0) {
		REQUIRE(nblocks < MAX_BLOCKS);
		char *p = pc_alloc_pages(PC_MAX_ORDER);
		REQUIRE(p != NULL);
		blocks[nblocks++] = p;
		bool was_written = false;
		for (size_t i = 0; i < nwritten; i++)
			was_written |= written[i] == p;
		if (!was_written)
			continue;
		checked++;
		/* First and last word of every page, and the whole first page. */
		for (size_t off = 0; off < BLOCK; off += PC_PAGE_SIZE) {
			uint64_t a, b;
			memcpy(&a, p + off, 8);
			memcpy(&b, p + off + PC_PAGE_SIZE - 8, 8);
			nonzero += a != 0 || b != 0;
		}
		for (size_t off = 0; off < PC_PAGE_SIZE; off++)
			nonzero += p[off] != 0;
	}
	CHECK_EQ(nwritten, 64); /* (b) reused the blocks of (a) */
	CHECK_EQ(checked, nwritten);
	CHECK_EQ(nonzero, 0);
	free_blocks();

	/* Small orders carved out of released memory are zero too. */
	for (unsigned o = 0; o <= PC_PCP_MAX_ORDER; o++) {
		char *p = pc_alloc_pages(o);
		REQUIRE(p != NULL);
		size_t nz = 0;
		for (size_t off = 0; off < (PC_PAGE_SIZE << o); off++)
			nz += p[off] != 0;
		CHECK_EQ(nz, 0);
		pc_free_pages(p, o);
	}
	pc_page_drain_all();
	check_coalesced(false);
}

int main(void)
{
	pc_page_init();
	RUN(released_at_once_without_thread);
	RUN(release_at_watermark);
	RUN(fragments_released_past_peak);
	RUN(trim_above_high_watermark);
	RUN(released_memory_is_zero);
	return test_report();
}
