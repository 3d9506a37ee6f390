/*
 * tests/unit/page/release.c - free memory goes back to the OS.
 *
 *  (a) vm.release_watermark_kb = 8 MiB and a delay of an hour: 256 MiB of
 *      touched order-PC_MAX_ORDER blocks freed; the zones release down to
 *      their bound (the watermark, once nothing is in use) as they go, so the
 *      resident size (os_resident_bytes, read after the frees) drops by at
 *      least 200 MiB and at most a watermark's worth stays dirty.
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

TEST(release_at_watermark)
{
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_WATERMARK_KB, 8192, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_DELAY_MS, 3600000, false) == 0);
	size_t r0 = os_resident_bytes();
	REQUIRE(r0 > 0);
	alloc_touch(256 * MiB, 0x11);
	size_t r1 = os_resident_bytes();
	CHECK(r1 >= r0 + 250 * MiB);
	free_blocks();
	size_t r2 = os_resident_bytes();
	CHECK(r2 + 200 * MiB <= r1);
	if (r2 + 200 * MiB > r1)
		fprintf(stderr, "  resident %zu MiB touched, %zu MiB after the frees\n",
			r1 / MiB, r2 / MiB);
	/* What stays dirty is bounded by the watermark (8 MiB = 2048 pages):
	 * nothing is in use any more (zone_maybe_release). */
	CHECK(dirty_pages_total(false) <= 2048);
	CHECK(pc_page_check());
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
	RUN(release_at_watermark);
	RUN(trim_above_high_watermark);
	RUN(released_memory_is_zero);
	return test_report();
}
