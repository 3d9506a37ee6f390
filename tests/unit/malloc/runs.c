/*
 * tests/unit/malloc/runs.c - medium and large blocks are runs of exactly the
 * pages asked for (issue 9, item 3), and realloc resizes them in place.
 *
 * The cost of a block is read from the page allocator's own accounting, not
 * from timing or RSS sampling: pages in use = managed - free (buddy lists
 * and run heap) - pages on the per-CPU lists, summed over the zones under
 * their locks. Single-threaded
 * parts only, so nothing else allocates between two readings.
 *
 *  every_count      every page count 3..600 (sizes n pages minus a random
 *                   part of a page): usable size n pages, the pages in use
 *                   grow by exactly n at malloc and fall by n at free;
 *                   contents checked at free, with up to 48 blocks live.
 *  realloc_in_place a 1024-page block shrunk to n pages keeps its address
 *                   (the tail goes back: n pages in use), then grown in
 *                   place into the pages it gave back, for every n in
 *                   3..600; contents intact across each step.
 *  grow_needs_free  a block whose next page is taken (a one-page run split
 *                   off its end) moves when grown, contents kept; without
 *                   the wall it grows in place.
 *  threads          4 threads, random page counts, realloc up and down,
 *                   contents checked (PC_TEST_LABELS: tsan).
 * After each: pc_page_check(), and all pages back (in use as at the start).
 */
#define _GNU_SOURCE
#include "test.h"

#include "malloc/malloc.h"

#include <pthread.h>

/* managed - free - free runs - per-CPU pages, all zones, under the locks (page.h's order:
 * the pcp locks, then the zone lock), less the blocks on malloc's per-CPU
 * medium stacks (free for malloc, in use for the page allocator; medium.c). */
static size_t pages_in_use(void)
{
	size_t used = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		pc_lock_nesting_begin(); /* every pcp lock of z, as pc_page_check */
		for (unsigned c = 0; c < os_cpu_count(); c++)
			pc_spin_stat_lock(&z->pcp[c].lock);
		pc_lock_acquire(&z->lock);
		size_t pcp = 0;
		for (unsigned c = 0; c < os_cpu_count(); c++)
			pcp += (size_t)z->pcp[c].count;
		used += z->managed_pages - z->free_pages - z->run_free_pages - pcp;
		pc_lock_release(&z->lock);
		for (unsigned c = 0; c < os_cpu_count(); c++)
			pc_spin_stat_unlock(&z->pcp[c].lock);
		pc_lock_nesting_end();
	}
	return used - medium_cached_bytes() / PC_PAGE_SIZE;
}

/* Contents: a word every 256 bytes (16 a page), derived from a key and the offset, so that a page handed out
 * twice, or moved without its contents, shows. Cheap enough for debug and
 * sanitizer builds, where filling every byte of 3..600-page blocks is not. */
#define STRIDE 256

static uint64_t pattern(const void *key, size_t off)
{
	return ((uint64_t)(uintptr_t)key * 0x9E3779B97F4A7C15ULL) ^ (off * 0x2545F4914F6CDD1DULL);
}

/* Tag [from, to) of p (from a multiple of STRIDE): the words at the
 * multiples of STRIDE that fit. */
static void fill(unsigned char *p, size_t from, size_t to, const void *key)
{
	for (size_t i = from; i + 8 <= to; i += STRIDE)
		memcpy(p + i, &(uint64_t){ pattern(key, i) }, 8);
}

/* Tags at the multiples of STRIDE in [0, n) that do not match key (all of
 * them written by fills that covered at least [0, n)). */
static size_t bad_bytes(const unsigned char *p, size_t n, const void *key)
{
	size_t bad = 0;
	for (size_t i = 0; i + 8 <= n; i += STRIDE) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		bad += w != pattern(key, i);
	}
	return bad;
}

#define PG PC_PAGE_SIZE
#define LIVE 48

struct blk {
	unsigned char *p;
	size_t size;
};

TEST(every_count)
{
	REQUIRE(pc_malloc_init());
	struct blk live[LIVE] = { { 0 } };
	uint64_t s = 9;
	size_t bad_usable = 0, bad_cost = 0, bad_contents = 0, bad_free_cost = 0;
	size_t base = pages_in_use();
	for (size_t n = 3; n <= 600; n++) {
		size_t k = (size_t)(test_rand(&s) % LIVE);
		if (live[k].p) {
			size_t before = pages_in_use();
			bad_contents += bad_bytes(live[k].p, live[k].size, live[k].p) != 0;
			size_t pages = pc_align_up(live[k].size, PG) / PG;
			pc_free(live[k].p);
			bad_free_cost += before - pages_in_use() != pages;
		}
		size_t size = n * PG - (size_t)(test_rand(&s) % PG);
		size_t before = pages_in_use();
		unsigned char *p = pc_malloc(size);
		REQUIRE(p != NULL);
		size_t cost = pages_in_use() - before;
		if (cost != n) {
			fprintf(stderr, "  %zu pages cost %zu\n", n, cost);
			bad_cost++;
		}
		bad_usable += pc_malloc_usable_size(p) != n * PG;
		fill(p, 0, size, p);
		live[k] = (struct blk){ p, size };
	}
	for (size_t k = 0; k < LIVE; k++) {
		if (!live[k].p)
			continue;
		bad_contents += bad_bytes(live[k].p, live[k].size, live[k].p) != 0;
		pc_free(live[k].p);
	}
	CHECK_EQ(bad_usable, 0);
	CHECK_EQ(bad_cost, 0);
	CHECK_EQ(bad_free_cost, 0);
	CHECK_EQ(bad_contents, 0);
	CHECK_EQ(pages_in_use(), base);
	CHECK(pc_page_check());
}

TEST(realloc_in_place)
{
	size_t base = pages_in_use();
	size_t moved = 0, bad_cost = 0, bad_contents = 0;
	for (size_t n = 3; n <= 600; n++) {
		unsigned char *p = pc_malloc(PC_RUN_MAX_PAGES * PG);
		REQUIRE(p != NULL);
		fill(p, 0, n * PG, p);
		/* Shrink: always in place, the tail goes back at once. */
		unsigned char *q = pc_realloc(p, n * PG);
		moved += q != p;
		bad_cost += pages_in_use() - base != n;
		/* Grow into the pages just given back, then further. */
		size_t m = n + 1 + n / 2;
		unsigned char *r = pc_realloc(q, m * PG);
		moved += r != q;
		bad_cost += pages_in_use() - base != m;
		CHECK_EQ(pc_malloc_usable_size(r), m * PG);
		fill(r, n * PG, m * PG, p);
		r = pc_realloc(r, PC_RUN_MAX_PAGES * PG);
		moved += r != p;
		bad_contents += bad_bytes(r, m * PG, p) != 0;
		/* Shrink to a medium size, then free it (to the per-CPU lists). */
		r = pc_realloc(r, 5 * PG - 100);
		moved += r != p;
		bad_cost += pages_in_use() - base != 5;
		bad_contents += bad_bytes(r, 5 * PG - 100, p) != 0;
		pc_free(r);
	}
	CHECK_EQ(moved, 0);
	CHECK_EQ(bad_cost, 0);
	CHECK_EQ(bad_contents, 0);
	CHECK_EQ(pages_in_use(), base);
	CHECK(pc_page_check());
}

TEST(grow_needs_free)
{
	size_t base = pages_in_use();
	unsigned char *p = pc_malloc(PC_RUN_MAX_PAGES * PG);
	REQUIRE(p != NULL);
	CHECK(pc_realloc(p, 101 * PG) == p); /* pages 101..1023 go back */
	/* White-box: split off its last page as a run of its own (a wall that
	 * no malloc could be asked to place there): runs are plain ranges. */
	unsigned char *wall = p + 100 * PG;
	pc_page_of(p)->aux = 100;
	pc_pg_set_state(pc_page_of(wall), PC_PG_ALLOC);
	fill(p, 0, 100 * PG, p);
	unsigned char *q = pc_realloc(p, 150 * PG);
	REQUIRE(q != NULL);
	CHECK(q != p); /* its next page is taken: it moved */
	CHECK_EQ(bad_bytes(q, 100 * PG, p), 0);
	pc_free(q);
	pc_free_run(wall, 1);
	pc_page_drain_all();
	/* Without a wall, the same block grows in place. */
	q = pc_malloc(PC_RUN_MAX_PAGES * PG);
	REQUIRE(q != NULL);
	CHECK(pc_realloc(q, 100 * PG) == q);
	fill(q, 0, 100 * PG, q);
	CHECK(pc_realloc(q, 150 * PG) == q);
	CHECK_EQ(bad_bytes(q, 100 * PG, q), 0);
	pc_free(q);
	CHECK_EQ(pages_in_use(), base);
	CHECK(pc_page_check());
}

#define THREADS 4
#define STEPS   3000

static void *thread_main(void *arg)
{
	uint64_t s = (uint64_t)(uintptr_t)arg * 7919 + 1;
	struct blk live[16] = { { 0 } };
	size_t bad = 0;
	for (int step = 0; step < STEPS; step++) {
		struct blk *b = &live[test_rand(&s) % 16];
		if (b->p && bad_bytes(b->p, b->size, b->p) != 0)
			bad++;
		size_t size = (3 + (size_t)(test_rand(&s) % 598)) * PG - (size_t)(test_rand(&s) % PG);
		if (b->p && test_rand(&s) % 3 == 0) {
			unsigned char *q = pc_realloc(b->p, size);
			if (!q) {
				bad++;
				continue;
			}
			size_t keep = PC_MIN(size, b->size);
			/* keep the old pattern's key: re-fill all under the new one */
			if (bad_bytes(q, keep, b->p) != 0)
				bad++;
			fill(q, 0, size, q);
			*b = (struct blk){ q, size };
			continue;
		}
		pc_free(b->p);
		b->p = pc_malloc(size);
		if (!b->p) {
			bad++;
			continue;
		}
		b->size = size;
		fill(b->p, 0, size, b->p);
	}
	for (int k = 0; k < 16; k++) {
		if (live[k].p && bad_bytes(live[k].p, live[k].size, live[k].p) != 0)
			bad++;
		pc_free(live[k].p);
	}
	return (void *)(uintptr_t)bad;
}

TEST(threads)
{
	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		REQUIRE(pthread_create(&t[i], NULL, thread_main, (void *)i) == 0);
	size_t bad = 0;
	for (int i = 0; i < THREADS; i++) {
		void *r;
		pthread_join(t[i], &r);
		bad += (size_t)(uintptr_t)r;
	}
	CHECK_EQ(bad, 0);
	CHECK(pc_page_check());
}

int main(void)
{
	RUN(every_count);
	RUN(realloc_in_place);
	RUN(grow_needs_free);
	RUN(threads);
	return test_report();
}
/* PC_TEST_LABELS: tsan */
