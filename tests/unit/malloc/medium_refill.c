/*
 * tests/unit/malloc/medium_refill.c - a medium malloc that misses the
 * per-CPU cache refills its stack in one page call (medium.c,
 * medium_refill; pc_alloc_runs): up to the room frees have made in the
 * stack, so that the misses of a run of mallocs take the per-CPU list's
 * lock (and the zone lock) once per batch, not once per block.
 *
 * rseq mode only (the per-CPU stacks; thread mode does not batch): pinned
 * to the process's first CPU, no release thread, statistics on (the zone's page calls and
 * its lock's acquisitions are counted). Nothing is timed.
 *
 *  alloc_only_keeps_none  after pc_trim (capacities 0), 40 mallocs of 16
 *                         KiB make 40 page calls and no page free, and
 *                         cache nothing: a class that frees have not grown
 *                         fetches only the caller's block;
 *  misses_batch           freed, the blocks grow the class's capacity C
 *                         (within the bound) and refuse the rest (the
 *                         batch count back to 0); once the C cached blocks
 *                         are taken again, a run of 64 more mallocs misses
 *                         with batches of 0, 1, 2, 4, ... blocks up to C:
 *                         at most 12 of the 64 make a page call (64
 *                         before), each with at most one zone-lock hold;
 *                         the cache never holds more than C; the blocks
 *                         come in address order (a batch is one free run
 *                         cut upwards: most neighbours follow each other);
 *  refusal_resets         after a free the stack could not keep, the next
 *                         miss fetches the caller's block alone;
 *  other_class_resets     so does the next miss after a miss of another
 *                         class (3 misses of 16 KiB, one of 20 KiB, then
 *                         16 KiB: one block, nothing cached).
 * Each fails with medium_refill returning NULL (misses_batch: 64 page
 * calls) or fetching the whole room at every miss (refusal_resets).
 */
#define _GNU_SOURCE
#include "test.h"
#include "unit/unit_helpers.h"

#include "malloc/malloc.h"

#include <string.h>

/* "CPU 0" below: the process's first CPU, which pin_cpu(0) pins to
 * (unit_helpers.h; another number in a cpuset without CPU 0). */
#define CPU0 ((unsigned)test_cpu(0))
#define KiB ((size_t)1024)
#define N 40

static char *blocks[N + 64 + PC_MEDIUM_STACK_MAX];
static struct pc_zone *zone;

static uint64_t page_calls(void)
{
	return pc_load_relaxed(&zone->stats.alloc_calls);
}

/* Runs given back to the page allocator: a refill that fetched more than
 * its stack could take gives the rest back (pc_free_run). */
static uint64_t page_frees(void)
{
	return pc_load_relaxed(&zone->stats.free_calls);
}

TEST(alloc_only_keeps_none)
{
	pc_trim();
	CHECK_EQ(medium_capacity_bytes(CPU0), 0);
	uint64_t calls = page_calls(), frees = page_frees();
	for (int i = 0; i < N; i++) {
		REQUIRE((blocks[i] = pc_malloc(16 * KiB)) != NULL);
		memset(blocks[i], i, 16 * KiB);
	}
	CHECK_EQ(medium_cached_bytes(), 0);
	CHECK_EQ(page_calls() - calls, N); /* one call a malloc, nothing fetched ahead */
	CHECK_EQ(page_frees() - frees, 0); /* and nothing fetched and given back */
}

#define RUN_LEN 64

/* Take the cached blocks of the class (hits) into blocks[from..]; how many. */
static size_t take_cached(size_t from)
{
	size_t n = 0;
	while (medium_cached_bytes() != 0)
		REQUIRE((blocks[from + n++] = pc_malloc(16 * KiB)) != NULL);
	return n;
}

static size_t cap_blocks;

TEST(misses_batch)
{
	for (int i = 0; i < N; i++)
		pc_free(blocks[i]);
	cap_blocks = medium_capacity_bytes(CPU0) / (16 * KiB);
	CHECK(cap_blocks >= 4 && cap_blocks < N); /* the bound: 256 KiB at first */
	CHECK_EQ(medium_cached_bytes(), cap_blocks * 16 * KiB);
	size_t hits = take_cached(0);
	CHECK_EQ(hits, cap_blocks);
	size_t calls_made = 0, over = 0, locks_over = 0;
	uint64_t frees = page_frees();
	for (size_t i = hits; i < hits + RUN_LEN; i++) {
		uint64_t calls = page_calls(), locks = pc_load_relaxed(&zone->lock_stats.acquisitions);
		REQUIRE((blocks[i] = pc_malloc(16 * KiB)) != NULL);
		memset(blocks[i], (int)i, 16 * KiB);
		calls_made += page_calls() != calls;
		locks_over += pc_load_relaxed(&zone->lock_stats.acquisitions) - locks > 1;
		over += medium_cached_bytes() > cap_blocks * 16 * KiB;
	}
	CHECK(calls_made <= 12);
	CHECK_EQ(locks_over, 0);
	CHECK_EQ(page_frees() - frees, 0); /* each batch within the stack's room */
	CHECK_EQ(over, 0);                 /* (a sanity check: pushes stop at the capacity) */
	/* A batch is cut upwards from one free run and handed out in that
	 * order: most neighbours in the run of mallocs follow each other in
	 * memory (pushed first-first, the pops went downwards: 0 of them). */
	size_t upwards = 0;
	for (size_t i = hits; i + 1 < hits + RUN_LEN; i++)
		upwards += blocks[i + 1] == blocks[i] + 16 * KiB;
	CHECK(upwards >= RUN_LEN / 2);
	for (size_t i = 0; i < hits + RUN_LEN; i++)
		pc_free(blocks[i]); /* the last ones refused: the batch back to 0 */
	CHECK(pc_page_check());
}

TEST(refusal_resets)
{
	size_t cap = medium_capacity_bytes(CPU0), hits = take_cached(0);
	CHECK(hits >= cap_blocks); /* misses raised the bound since */
	CHECK_EQ(hits * 16 * KiB, cap);
	REQUIRE((blocks[hits] = pc_malloc(16 * KiB)) != NULL); /* a miss: the caller's block alone */
	CHECK_EQ(medium_cached_bytes(), 0);
	for (size_t i = 0; i <= hits; i++)
		pc_free(blocks[i]);
	pc_trim();
	CHECK(pc_page_check());
}

/* A miss of another class ends a thread's run of misses: the next miss of
 * the first class fetches the caller's block alone. */
TEST(other_class_resets)
{
	static char *v[PC_MEDIUM_STACK_MAX + 8];
	size_t n = 0;
	for (; n < 8; n++) /* room in the 16 KiB stack, as after frees */
		REQUIRE((v[n] = pc_malloc(16 * KiB)) != NULL);
	for (size_t i = 0; i < n; i++)
		pc_free(v[i]);
	n = take_cached(0);
	REQUIRE(n >= 4 && medium_cached_bytes() == 0);
	for (int i = 0; i < 3; i++) { /* 3 misses: the next would fetch 4 more */
		REQUIRE((v[n] = pc_malloc(16 * KiB)) != NULL);
		n++;
		while (medium_cached_bytes() != 0)
			REQUIRE((v[n++] = pc_malloc(16 * KiB)) != NULL);
	}
	char *other = pc_malloc(20 * KiB); /* a miss of another class */
	REQUIRE(other != NULL);
	uint64_t calls = page_calls();
	REQUIRE((v[n++] = pc_malloc(16 * KiB)) != NULL);
	CHECK_EQ(page_calls() - calls, 1);
	CHECK_EQ(medium_cached_bytes(), 0); /* the caller's block alone */
	pc_free(other);
	for (size_t i = 0; i < n; i++)
		pc_free(v[i]);
	pc_trim();
	CHECK(pc_page_check());
}

int main(void)
{
	REQUIRE(pc_malloc_init());
	medium_start(); /* started now, not by the first test's first miss */
	if (pc_load_relaxed(&pc_medium_slots) == NULL) {
		fprintf(stderr, "no per-CPU medium cache (thread mode): skipped\n");
		return 0;
	}
	if (!pin_cpu0_or_skip())
		return 0;
	set_opt(PC_OPT_VM_RELEASE_THREAD, 0);
	set_opt(PC_OPT_STATS_ENABLE, 1);
	zone = pc_zone_preferred(0);
	RUN(alloc_only_keeps_none);
	RUN(misses_batch);
	RUN(refusal_resets);
	RUN(other_class_resets);
	return test_report();
}
