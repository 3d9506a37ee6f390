/*
 * tests/unit/page/unmap.c - wholly free regions go back to the OS (unmap.c,
 * issue 9 item 5: address space given back), except those that ever held a
 * block of pc_alloc_pages (page.h, top comment: lock-free readers of slab
 * memory).
 *
 * One zone instance, the thread pinned to one CPU, so that every request goes
 * to one zone; runs of a whole chunk (PC_RUN_MAX_PAGES pages: more than
 * PC_PCP_MAX_RUN, so they bypass the per-CPU lists). Nothing depends on
 * timing: the delay is an hour and the page clock is moved by hand.
 *
 *  trim_unmaps            REGIONS regions of runs freed: pc_page_trim unmaps
 *                         them all; the zone's managed pages and the
 *                         process's address space shrink by that much; the
 *                         table has no entry for them; a stale pointer into
 *                         one finds no descriptor; runs allocated again work
 *                         (the descriptor mappings are reused).
 *  slab_region_stays      a region that handed out one pc_alloc_pages block
 *                         stays mapped after that block and everything else
 *                         is freed and trimmed, and keeps its flag.
 *  placement              with a pinned region A and a new region B that
 *                         both have dirty free chunks: runs come from B,
 *                         pc_alloc_pages blocks from A, and B is unmapped
 *                         after a trim.
 *  release_pass_unmaps    a release pass unmaps clean free regions beyond
 *                         the first, not dirty ones before the delay.
 *  unmap_free_in_place    pc_page_unmap_free (malloc's call when a huge
 *                         mapping is refused) unmaps without a trim and
 *                         leaves the per-CPU lists alone.
 *  layout                 a region's metadata lies right below its span
 *                         (struct pc_region): the descriptor computed from
 *                         an address is the region's, and back; addresses in
 *                         the metadata, and in the span of a region that was
 *                         unmapped, have no descriptor.
 *  spare_same_address     an unmapped region's metadata stays mapped and
 *                         zeroed; while another mapping holds its old span
 *                         the zone grows elsewhere and the spare stays; once
 *                         the span is free again the zone maps it there.
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"

#define CHUNK ((size_t)PC_RUN_MAX_PAGES)
#define CHUNKS_PER_REGION (PC_REGION_PAGES / CHUNK)
#define REGIONS 3
#define MAX_RUNS (CHUNKS_PER_REGION * 8)
#define HOUR_MS 3600000L

static struct pc_zone *zone;
static char *runs[MAX_RUNS];

static size_t regions(void)
{
	pc_lock_acquire(&zone->lock);
	size_t n = zone->managed_pages / PC_REGION_PAGES;
	pc_lock_release(&zone->lock);
	return n;
}

static uint64_t unmapped(void)
{
	return pc_load_relaxed(&zone->stats.regions_unmapped);
}

/* Runs of a chunk each, n of them, one byte touched in each. */
static void alloc_runs(size_t n)
{
	REQUIRE(n <= MAX_RUNS);
	for (size_t i = 0; i < n; i++) {
		runs[i] = pc_alloc_run(CHUNK);
		REQUIRE(runs[i] != NULL);
		REQUIRE(zone_of(runs[i]) == zone);
		runs[i][0] = 1;
	}
}

static void free_runs(size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (runs[i])
			pc_free_run(runs[i], CHUNK);
}

static void reset(void)
{
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, HOUR_MS);
	set_opt(PC_OPT_VM_RELEASE_WATERMARK_KB, 1L << 22);
	pc_page_trim();
}

TEST(trim_unmaps)
{
	reset();
	size_t before = regions();
	alloc_runs(REGIONS * CHUNKS_PER_REGION);
	size_t peak = regions(), vm_peak = mapped_bytes();
	CHECK(peak >= before + REGIONS);
	char *stale = runs[0];
	uint64_t u0 = unmapped();
	free_runs(REGIONS * CHUNKS_PER_REGION);
	CHECK_EQ(regions(), peak); /* freeing unmaps nothing before the delay */
	pc_page_trim();
	CHECK_EQ(unmapped() - u0, peak - before);
	CHECK_EQ(regions(), before);
	CHECK(vm_peak - mapped_bytes() >= (peak - before) * PC_REGION_SIZE);
	CHECK(pc_page_of(stale) == NULL); /* its table entry is gone */
	CHECK(pc_page_check());
	/* The address space comes back on demand; contents are fresh. */
	alloc_runs(REGIONS * CHUNKS_PER_REGION);
	CHECK_EQ(regions(), peak);
	for (size_t i = 0; i < REGIONS * CHUNKS_PER_REGION; i++)
		CHECK_EQ(runs[i][1], 0);
	CHECK(pc_page_check());
	free_runs(REGIONS * CHUNKS_PER_REGION);
	pc_page_trim();
	CHECK_EQ(regions(), before);
}

TEST(slab_region_stays)
{
	reset();
	char *p = pc_alloc_pages(0);
	REQUIRE(p != NULL && zone_of(p) == zone);
	struct pc_region *r = pc_page_region(pc_page_of(p));
	CHECK(r->keep_mapped);
	alloc_runs(2 * CHUNKS_PER_REGION);
	free_runs(2 * CHUNKS_PER_REGION);
	pc_free_pages(p, 0);
	pc_page_trim();
	CHECK(pc_region_of(p) == r);
	CHECK(r->keep_mapped);
	CHECK(regions() >= 1);
	CHECK(pc_page_check());
}

/* Index of the first run not in region r, or n. */
static size_t first_outside(size_t n, const struct pc_region *r)
{
	for (size_t i = 0; i < n; i++)
		if (pc_region_of(runs[i]) != r)
			return i;
	return n;
}

TEST(placement)
{
	reset();
	char *p = pc_alloc_pages(0); /* pins its region: A */
	REQUIRE(p != NULL);
	struct pc_region *a = pc_region_of(p);
	REQUIRE(regions() == 1); /* every other region was unmapped by the trim */
	/* Runs fill A, then spill into a new region B. */
	alloc_runs(CHUNKS_PER_REGION + 1);
	size_t out = first_outside(CHUNKS_PER_REGION + 1, a);
	REQUIRE(out < CHUNKS_PER_REGION + 1);
	struct pc_region *b = pc_region_of(runs[out]);
	CHECK(!b->keep_mapped);
	/* A's runs go, and B's first: both have dirty free chunks. */
	for (size_t i = 0; i < CHUNKS_PER_REGION + 1; i++) {
		if (pc_region_of(runs[i]) == a || i == out) {
			pc_free_run(runs[i], CHUNK);
			runs[i] = NULL;
		}
	}
	char *run = pc_alloc_run(CHUNK);
	REQUIRE(run != NULL);
	CHECK(pc_region_of(run) == b);   /* runs rather from a region not pinned */
	char *q = pc_alloc_pages(3);
	REQUIRE(q != NULL);
	CHECK(pc_region_of(q) == a);     /* slabs rather from the pinned one */
	CHECK(!b->keep_mapped);
	pc_free_run(run, CHUNK);
	pc_free_pages(q, 3);
	pc_free_pages(p, 0);
	free_runs(CHUNKS_PER_REGION + 1);
	uint64_t u0 = unmapped();
	pc_page_trim();
	CHECK_EQ(unmapped() - u0, 1);
	CHECK(pc_region_of(p) == a);
	CHECK_EQ(regions(), 1);
	CHECK(pc_page_check());
}

TEST(release_pass_unmaps)
{
	reset();
	size_t before = regions();
	REQUIRE(before >= 1); /* the pinned region of the tests above */
	alloc_runs(REGIONS * CHUNKS_PER_REGION);
	size_t peak = regions();
	free_runs(REGIONS * CHUNKS_PER_REGION);
	pc_page_release_due(); /* not due: dirty regions stay */
	CHECK_EQ(regions(), peak);
	pc_page_clock_advance((uint64_t)HOUR_MS * 1000000u + 1000000u);
	pc_page_release_due(); /* released, then unmapped (clean) */
	CHECK_EQ(regions(), before);
	CHECK(pc_page_check());
}

TEST(unmap_free_in_place)
{
	reset();
	size_t before = regions();
	alloc_runs(CHUNKS_PER_REGION * 2);
	char *p = pc_alloc_run(1); /* a one-page run ends on the per-CPU list */
	REQUIRE(p != NULL);
	size_t peak = regions();
	pc_free_run(p, 1);
	int pcp = zone->pcp[os_cpu_current()].count;
	CHECK(pcp > 0);
	free_runs(CHUNKS_PER_REGION * 2);
	size_t n = pc_page_unmap_free();
	CHECK(n >= 1);
	CHECK_EQ(regions(), peak - n);
	CHECK(regions() >= before);
	CHECK_EQ(zone->pcp[os_cpu_current()].count, pcp);
	CHECK(pc_page_check());
	pc_page_trim();
}

TEST(layout)
{
	reset();
	char *p = pc_alloc_run(3);
	REQUIRE(p != NULL);
	struct pc_region *r = pc_region_of(p);
	REQUIRE(r != NULL);
	CHECK((char *)(r + 1) == r->base);
	CHECK((char *)(r->pages + PC_REGION_PAGES) == r->base);
	CHECK(((uintptr_t)r->base & (PC_REGION_SIZE - 1)) == 0);
	size_t index = (size_t)(p - r->base) >> PC_PAGE_SHIFT;
	for (size_t i = 0; i < 3; i++) {
		char *a = p + i * PC_PAGE_SIZE + 100;
		struct pc_page *pg = pc_page_of(a);
		CHECK(pg == &r->pages[index + i]);
		CHECK(pc_page_of_owned(a) == pg);
		CHECK(pc_page_region(pg) == r);
		CHECK(pc_page_address(pg) == p + i * PC_PAGE_SIZE);
	}
	CHECK(pc_page_region(&r->pages[0]) == r && pc_page_region(&r->pages[PC_REGION_PAGES - 1]) == r);
	CHECK(pc_page_address(&r->pages[PC_REGION_PAGES - 1]) == r->base + PC_REGION_SIZE - PC_PAGE_SIZE);
	/* The metadata is mapped, but no region's span. */
	CHECK(pc_page_of(r->base - 1) == NULL);
	CHECK(pc_page_of(r->pages) == NULL);
	CHECK(pc_page_of(r) == NULL);
	pc_free_run(p, 3);
	CHECK(pc_page_check());
}

/* Spare metadata on the zone's list (its lock): how many, and whether r
 * is one. */
static size_t spares(const struct pc_region *r, bool *found)
{
	size_t n = 0;
	*found = false;
	pc_lock_acquire(&zone->lock);
	for (struct pc_region *s = zone->spare_regions; s; s = s->next, n++)
		*found |= s == r;
	pc_lock_release(&zone->lock);
	return n;
}

/* Whether a run of runs[0..n) lies in the span at base. */
static bool runs_at(size_t n, const char *base)
{
	for (size_t i = 0; i < n; i++)
		if (runs[i] >= base && runs[i] < base + PC_REGION_SIZE)
			return true;
	return false;
}

TEST(spare_same_address)
{
	reset();
	size_t before = regions();
	bool found;
	alloc_runs(CHUNKS_PER_REGION + 1); /* at least one new region */
	struct pc_region *r = pc_region_of(runs[CHUNKS_PER_REGION]);
	REQUIRE(r != NULL && !r->keep_mapped);
	char *base = r->base;
	free_runs(CHUNKS_PER_REGION + 1);
	pc_page_trim();
	REQUIRE(regions() == before);
	spares(r, &found);
	CHECK(found);
	CHECK(pc_page_of(base) == NULL);
	/* The metadata is still there, zeroed: a stale reader sees no block. */
	CHECK(pc_page_region(&r->pages[0]) == r && r->base == base && r->zone == zone);
	CHECK(pc_pg_state(&r->pages[5]) == PC_PG_NONE && r->pages[5].slot_objects == 0);
	/* Another mapping takes the old span: the zone grows elsewhere, the
	 * spare stays, and the other mapping's addresses are not the zone's. */
	char *other = os_map_at(base, PC_REGION_SIZE);
	REQUIRE(other == base);
	alloc_runs(CHUNKS_PER_REGION + 1);
	CHECK(regions() > before);
	CHECK(!runs_at(CHUNKS_PER_REGION + 1, base));
	CHECK(pc_page_of(base) == NULL && pc_page_of(base + 12345) == NULL);
	spares(r, &found);
	CHECK(found);
	free_runs(CHUNKS_PER_REGION + 1);
	pc_page_trim();
	os_unmap(other, PC_REGION_SIZE);
	/* Free again: the zone maps its next regions at spares' addresses
	 * (the spare list is tried first; nothing else maps meanwhile). */
	size_t s2 = spares(r, &found);
	REQUIRE(found);
	alloc_runs(CHUNKS_PER_REGION + 1);
	size_t grown = regions() - before;
	CHECK(grown >= 1);
	CHECK_EQ(spares(r, &found), s2 - grown);
	for (size_t i = 0; i < CHUNKS_PER_REGION + 1; i++) {
		struct pc_region *n = pc_region_of(runs[i]);
		CHECK(n->base == (char *)(n + 1));
		CHECK(pc_page_of(runs[i]) == &n->pages[(size_t)(runs[i] - n->base) >> PC_PAGE_SHIFT]);
	}
	free_runs(CHUNKS_PER_REGION + 1);
	pc_page_trim();
	CHECK(pc_page_check());
}

#define BLOCKED 6

TEST(spares_rotate)
{
	reset();
	char *blocker[BLOCKED];
	for (int b = 0; b < BLOCKED; b++) {
		alloc_runs(CHUNKS_PER_REGION + 1);
		char *base = pc_region_of(runs[CHUNKS_PER_REGION])->base;
		free_runs(CHUNKS_PER_REGION + 1);
		pc_page_trim();
		blocker[b] = os_map_at(base, PC_REGION_SIZE); /* hold the old span */
		REQUIRE(blocker[b] == base);
	}
	/* The deepest spare: free its span again. */
	bool found;
	size_t n = spares(NULL, &found);
	struct pc_region *deep = NULL;
	pc_lock_acquire(&zone->lock);
	for (struct pc_region *s = zone->spare_regions; s; s = s->next)
		deep = s;
	pc_lock_release(&zone->lock);
	REQUIRE(deep != NULL);
	int freed = -1;
	for (int b = 0; b < BLOCKED; b++)
		if (blocker[b] == deep->base)
			freed = b;
	REQUIRE(freed >= 0);
	os_unmap(blocker[freed], PC_REGION_SIZE);
	blocker[freed] = NULL;
	/* Grow one region at a time (the runs kept) until it is used. */
	size_t used = 0, growths = 0;
	while (pc_region_of(deep->base) != deep && growths <= n / 4 + 1) {
		size_t before = regions();
		while (regions() == before && used < MAX_RUNS) {
			runs[used] = pc_alloc_run(CHUNK);
			REQUIRE(runs[used] != NULL);
			used++;
		}
		growths++;
	}
	CHECK(pc_region_of(deep->base) == deep);
	CHECK(growths <= n / 4 + 1);
	for (int b = 0; b < BLOCKED; b++) {
		if (blocker[b]) {
			CHECK(pc_region_of(blocker[b]) == NULL); /* still a spare */
			os_unmap(blocker[b], PC_REGION_SIZE);
		}
	}
	CHECK(pc_page_check());
	free_runs(used);
	pc_page_trim();
	CHECK(pc_page_check());
}

int main(void)
{
	REQUIRE(pc_option_set(PC_OPT_VM_ZONE_INSTANCES, 1, true) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_NUMA_FAKE, 0, true) == 0);
	pc_page_init();
	REQUIRE(pin_cpu(0));
	zone = pc_zone_preferred((unsigned)test_cpu(0));
	RUN(trim_unmaps);
	RUN(slab_region_stays);
	RUN(placement);
	RUN(release_pass_unmaps);
	RUN(unmap_free_in_place);
	RUN(layout);
	RUN(spare_same_address);
	RUN(spares_rotate);
	return test_report();
}
