/*
 * tests/unit/malloc/huge_unmap.c - after a peak of medium blocks, the
 * regions they leave wholly free are unmapped, and their address space
 * serves huge blocks of their own mappings under a limit on address space
 * (issue 9, item 5; page/unmap.c).
 *
 * In a forked child (the limit must not touch the test itself):
 *  1. FREED bytes of blocks of 16..64 KiB (runs: no slab is made, so only
 *     the region that start-up pinned with its slabs holds any);
 *  2. RLIMIT_AS set to the child's address space + HEADROOM;
 *  3. everything freed, then 8 MiB mallocs until one fails: by then every
 *     region but the ones that held slabs before the fill is unmapped (by
 *     release passes once the frees exceed the bound on dirty memory, by
 *     the first refused mapping at the latest), and together the blocks
 *     hold at least FREED; every
 *     page of each is written and read back (no two overlap);
 *  4. all freed and pc_trim: the regions are as many as before the fill.
 * No verdict depends on timing: the release delay is an hour, and a single
 * thread allocates.
 */
#define _GNU_SOURCE
#include "test.h"
#include "unit/unit_helpers.h"

#include "malloc/malloc.h"

#include <stdlib.h>
#include <string.h>

#define MiB ((size_t)1 << 20)
#define FREED (256 * MiB)
#define HEADROOM (16 * MiB)
#define HUGE (8 * MiB)
#define MAX_MEDIUM 20000
#define MAX_HUGE 256

static void *medium[MAX_MEDIUM];
static char *huge[MAX_HUGE];

static size_t regions(void)
{
	size_t pages = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++)
		pages += pc_load_relaxed(&pc_zone_get(i)->managed_hint);
	return pages / PC_REGION_PAGES;
}

static uint64_t regions_unmapped(void)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++)
		n += pc_load_relaxed(&pc_zone_get(i)->stats.regions_unmapped);
	return n;
}

/* FREED bytes of 16..64 KiB blocks; the count, or 0 if one failed. */
static size_t fill_medium(void)
{
	uint64_t rng = 7;
	size_t n = 0, bytes = 0;
	while (bytes < FREED && n < MAX_MEDIUM) {
		rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
		size_t size = 16384 + (size_t)(rng >> 33) % (48 * 1024);
		char *p = pc_malloc(size);
		if (!p)
			return 0;
		p[0] = 1;
		medium[n++] = p;
		bytes += size;
	}
	return n;
}

/* The child: exit codes say which step failed. */
static int child(void)
{
	/* With malloc's medium cache on (the default): the blocks it keeps
	 * after the frees hold their regions until the huge path's refused
	 * mapping flushes it (huge.c, map_refused). */
	if (!pc_malloc_init() || pc_option_set(PC_OPT_VM_RELEASE_DELAY_MS, 3600000, false) != 0)
		return 2;
	void *first = pc_malloc(HUGE); /* maps the table of huge blocks */
	if (!first)
		return 3;
	pc_free(first);
	pc_trim();
	size_t before = regions();
	size_t n = fill_medium();
	if (n == 0)
		return 4;
	size_t peak = regions();
	if (peak < before + 3)
		return 5;
	struct rlimit rl = { mapped_bytes() + HEADROOM, 0 };
	rl.rlim_max = rl.rlim_cur;
	if (rl.rlim_cur == HEADROOM || setrlimit(RLIMIT_AS, &rl) != 0)
		return 6;
	uint64_t u0 = regions_unmapped();
	for (size_t i = 0; i < n; i++) /* release passes may unmap some already */
		pc_free(medium[i]);
	size_t k = 0;
	while (k < MAX_HUGE && (huge[k] = pc_malloc(HUGE)) != NULL) {
		for (size_t off = 0; off < HUGE; off += PC_PAGE_SIZE)
			memcpy(huge[k] + off, &k, sizeof k);
		k++;
	}
	fprintf(stderr, "huge_unmap: %zu regions at the peak, %zu before; %llu unmapped; %zu blocks of 8 MiB\n",
		peak, before, (unsigned long long)(regions_unmapped() - u0), k);
	if (regions_unmapped() - u0 < peak - before)
		return 7;
	if (k * HUGE < FREED)
		return 8;
	for (size_t i = 0; i < k; i++)
		for (size_t off = 0; off < HUGE; off += PC_PAGE_SIZE)
			if (memcmp(huge[i] + off, &i, sizeof i) != 0)
				return 9;
	if (!pc_page_check())
		return 10;
	for (size_t i = 0; i < k; i++)
		pc_free(huge[i]);
	pc_trim();
	if (regions() != before || !pc_page_check())
		return 11;
	return 0;
}

TEST(freed_regions_serve_huge_blocks)
{
	check_in_child(child);
}

int main(void)
{
	RUN(freed_regions_serve_huge_blocks);
	return test_report();
}
