/*
 * tests/unit/page/grow_wait.c - an allocation that finds its zone empty
 * while a release pass holds the zone's free blocks waits for them and maps
 * no region (issue 9).
 *
 * A release pass takes a batch of free blocks off the lists and madvises
 * them with the zone lock dropped. An allocation that came then found the
 * zone empty and grew it by a whole 64 MiB region, which stayed free once
 * the batch was back (tests/unit/malloc/medium_idle.c, 8 of 240 loaded
 * runs). The interleaving is forced by the page layer's test hook, no
 * timing. CPU 0's zone is filled with blocks of order PC_MAX_ORDER until it
 * has none left (an hour's delay, a 1 GiB watermark: frees stay dirty);
 *  (a) blocks_held: NFREE of the blocks freed, the zone's only ones of that
 *      order; a trim's pass holds them in one batch; the other thread asks
 *      for a block of that order;
 *  (b) runs_held: before the fill, a chunk cut into runs of RUN_PAGES
 *      (above the per-CPU lists' longest), one freed: the run heap's only
 *      free run; the clock moved past the delay, a timed pass
 *      (pc_page_release_due) holds it in run.c's batch; the other thread
 *      asks for a run of RUN_PAGES.
 * At the batch (PC_PAGE_TEST_RELEASE_TAKEN, the zone's dirty hint for
 * blocks, or runs, 0) the other thread, also on CPU 0, allocates; the hook
 * waits until that thread waits for the batch (PC_PAGE_TEST_GROW_WAIT: it
 * is then held there until the pass has returned), has grown the zone
 * (regions_mapped moved) or has finished, then lets the pass go on.
 * With the wait: no region mapped, and the allocation served. Without it:
 * the other thread grows the zone while the pass holds the batch (both
 * cases fail so). Once the pass is over and while the other thread is
 * still held in its wait (counted in zone->growing), a fork: the child,
 * where that thread does not exist, must count none (else unmap.c never
 * unmaps a region of the zone there; review of growwait, item 1: fails
 * without the reset in pc_page_postfork_child).
 *  (c) wait_bounded: as (a), but the pass keeps its batch until the
 *      allocation has returned (the hook waits for it): the wait must end
 *      by its bound (page_alloc.c, GROW_WAIT_NS) and the zone grow, one
 *      region, rather than the allocation wait for ever (a hang is this
 *      case's failure, caught by ctest's timeout).
 *  (d) no_wait_when_held_too_small: as (b), but the other thread asks for a
 *      block of the top order, 4 times the run the batch holds: that batch
 *      cannot serve it, so the allocation must grow the zone (one region)
 *      without waiting (the hook at PC_PAGE_TEST_GROW_WAIT never runs;
 *      review of growwait, item 3: it waited for any work in flight).
 *  (e) no_wait_for_small_pieces: as (d), but one run freed in each of 4
 *      chunks (4 x 256 pages held, as many as the block asked for, none of
 *      them a piece that can serve it): no wait, one region (review of
 *      waitfix, item 1: a sum of held pages waited for it).
 * What the held pieces give once back, exactly (2026-11-25, helper
 * pagesrss; with the counts by order of waitfix, (f)-(h) and (j) grow):
 *  (f) wait_for_run_past_its_order: a held run of 384 pages, a run of 320
 *      asked for (counted by order, 384 was below the 512 that 320 rounds
 *      up to): it waits, no region;
 *  (g) wait_for_merged_runs: a held run of 256; the other thread first
 *      frees its neighbour (256, next to it in the chunk), then asks for
 *      512: the two merge once the held one is back: it waits;
 *  (h) wait_for_merged_chunk: the other three runs of the chunk freed
 *      first, a top-order block asked for: the chunk is wholly free once
 *      back (a block for the buddy lists): it waits;
 *  (i) no_wait_when_merged_too_small: as (h) with two of them: 768 pages
 *      once back, no chunk: no wait, one region;
 *  (j) wait_for_merged_blocks: a trim holds half of a top-order block (a
 *      block of PC_MAX_ORDER - 1); the other thread frees the other half,
 *      then asks for a top-order block, which the halves make once merged:
 *      it waits;
 *  (k) no_wait_when_merged_blocks_too_small: as (j), but the half freed is
 *      one of another top-order block (as many pages, not its buddy): no
 *      wait, one region.
 * (With a wait for anything held, (d), (e), (i) and (k) fail.)
 * Review of pagesrss, item 1 (each fails with the mutant named):
 *  (l) wait_for_merged_held_runs: runs 0 and 2 of a chunk held in one
 *      batch, run 1 freed first, 768 pages asked for: the three merge
 *      (held runs never merging with each other sees 512: grows);
 *  (m) wait_for_block_as_chunk: as (a), but a run of RUN_PAGES asked for
 *      with no free run in the heap: a held top-order block is its next
 *      chunk (a held block never serving a run request: grows);
 *  (n) wait_for_merged_quarters: quarters 0 and 2 of a top-order block
 *      held in one batch, 1 and 3 freed first, a top-order block asked
 *      for (a look that finds only the first held block: grows).
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <pthread.h>
#include <sched.h>

#define BLOCK_PAGES ((size_t)1 << PC_MAX_ORDER)
#define MAX_BLOCKS 256 /* 1 GiB: more than the zone holds after the cases that grow it */
#define NFREE 8

#define RUN_PAGES 256 /* off the per-CPU lists: the zone's run heap */

static struct pc_zone *zone;
static bool pass_runs; /* (b), (d)-(i): the pass holds runs, not blocks */
static size_t want_pages; /* the other thread asks for a run of this; 0: a top-order block */
static void *give[3];  /* what the other thread frees first: runs of give_pages, */
static size_t ngive, give_pages; /* or with give_pages 0 blocks of give_order */
static unsigned give_order;
static bool expect_wait; /* (a)-(c): the allocation waits for the batch */
static bool hold_pass; /* (c): the batch held until the allocation returned */
static char *blocks[MAX_BLOCKS];
static size_t nblocks;

static _Atomic int hook_fired;  /* the hook acted (once) */
static _Atomic int waiting;     /* the other thread reached the grow wait */
static _Atomic int pass_over;   /* the trim returned: the waiter may go on */
static _Atomic int alloc_done;  /* the other thread's allocation returned */
static uint64_t mapped_before;  /* zone->stats.regions_mapped before the pass */
static void *got;               /* the other thread's block */

/* Whether the zone has a free block of the top order (on its lists, or a
 * chunk of its newest region not yet seeded). */
static bool zone_has_top_block(void)
{
	pc_lock_acquire(&zone->lock);
	bool has = zone->free_area[PC_MAX_ORDER].nr_free != 0 || zone->seed_pages != 0;
	pc_lock_release(&zone->lock);
	return has;
}

static void *alloc_one(void *arg)
{
	(void)arg;
	REQUIRE(pin_cpu(0)); /* the same preferred zone as the pass's */
	for (size_t i = 0; i < ngive; i++) /* next to what the pass holds, or not */
		give_pages ? pc_free_run(give[i], give_pages) : pc_free_pages(give[i], give_order);
	got = want_pages ? pc_alloc_run(want_pages) : pc_alloc_pages(PC_MAX_ORDER);
	pc_store_release(&alloc_done, 1);
	return NULL;
}

static bool other_thread_there(void)
{
	return pc_load_acquire(&waiting) || pc_load_acquire(&alloc_done) ||
	       pc_load_relaxed(&zone->stats.regions_mapped) != mapped_before;
}

static pthread_t other;

static void hook(enum pc_page_test_point at)
{
	if (at == PC_PAGE_TEST_GROW_WAIT) {
		/* The other thread, before its first wait: hold it until the
		 * pass has given its batch back, so that its next look and take
		 * follow that, whatever the machine's load. */
		pc_store_release(&waiting, 1);
		while (!hold_pass && !pc_load_acquire(&pass_over))
			sched_yield();
		return;
	}
	if (at != PC_PAGE_TEST_RELEASE_TAKEN)
		return;
	/* Our zone's batch: every block (run) of it held, nothing dirty left. */
	_Atomic size_t *dirty = pass_runs ? &zone->run_dirty_hint : &zone->dirty_hint;
	if (pc_load_relaxed(dirty) != 0 || pc_load_relaxed(&hook_fired))
		return;
	pc_store_relaxed(&hook_fired, 1);
	REQUIRE(pthread_create(&other, NULL, alloc_one, NULL) == 0);
	while (hold_pass ? !pc_load_acquire(&alloc_done) : !other_thread_there())
		sched_yield(); /* no bound: a hang is the verdict's stand-in */
}

static void setup(void)
{
	REQUIRE(pin_cpu(0));
	set_opt(PC_OPT_VM_RELEASE_THREAD, 0);
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, 3600000);     /* nothing due by age */
	set_opt(PC_OPT_VM_RELEASE_WATERMARK_KB, 1 << 20); /* frees keep everything dirty */
	pc_page_trim();
	pc_store_relaxed(&hook_fired, 0);
	pc_store_relaxed(&waiting, 0);
	pc_store_relaxed(&pass_over, 0);
	pc_store_relaxed(&alloc_done, 0);
	got = NULL;
	nblocks = 0;
	ngive = give_pages = 0;
	give_order = PC_MAX_ORDER - 1;
}

/* Take every block of the top order CPU 0's zone has (zone set by the
 * first). */
static void fill_zone(void)
{
	blocks[nblocks] = pc_alloc_pages(PC_MAX_ORDER);
	REQUIRE(blocks[nblocks] != NULL);
	zone = zone_of(blocks[nblocks++]);
	while (zone_has_top_block()) {
		REQUIRE(nblocks < MAX_BLOCKS);
		blocks[nblocks] = pc_alloc_pages(PC_MAX_ORDER);
		REQUIRE(blocks[nblocks] != NULL);
		REQUIRE(zone_of(blocks[nblocks++]) == zone);
	}
	/* No sibling instance has a quarter region free (the slow path would
	 * take from it first). */
	for (unsigned i = 0; i < pc_zone_count(); i++)
		if (pc_zone_get(i) != zone && pc_zone_get(i)->node == zone->node)
			REQUIRE(pc_load_relaxed(&pc_zone_get(i)->free_hint) < PC_REGION_PAGES / 4);
}

/* A fork while the other thread is held in its wait: the child's count of
 * threads in the slow path, or -1 if the child did not exit. */
static int growing_in_fork_child(void)
{
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(pc_load_relaxed(&zone->growing) == 0 ? 0 : 1);
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Run the pass with the hook set, then the verdict. */
static void pass_and_check(void (*pass)(void), int held)
{
	mapped_before = pc_load_relaxed(&zone->stats.regions_mapped);
	pc_store_relaxed(&pc_page_test_hook, hook);
	pass();
	if (!hold_pass && pc_load_acquire(&waiting)) { /* held in its wait until pass_over */
		CHECK(pc_load_relaxed(&zone->growing) > 0);
		CHECK_EQ(growing_in_fork_child(), 0);
	}
	pc_store_release(&pass_over, 1);
	REQUIRE(pc_load_relaxed(&hook_fired));
	REQUIRE(pthread_join(other, NULL) == 0);
	pc_store_relaxed(&pc_page_test_hook, NULL);

	uint64_t mapped = pc_load_relaxed(&zone->stats.regions_mapped);
	CHECK(got != NULL);
	/* (a)-(c): it waited for the batch; (d): it did not */
	CHECK_EQ(pc_load_relaxed(&waiting), (int)expect_wait);
	/* and mapped nothing; (c): one region, once the wait ran out; (d): one,
	 * at once */
	uint64_t grew = hold_pass || !expect_wait;
	CHECK_EQ(mapped - mapped_before, grew);
	if (mapped - mapped_before != grew)
		fprintf(stderr, "  %llu region(s) mapped while the pass held %d free %s\n",
			(unsigned long long)(mapped - mapped_before), held, pass_runs ? "run(s)" : "blocks");
	CHECK(got == NULL || zone_of(got) == zone);
	CHECK(pc_page_check());
}

static void trim_pass(void)
{
	pc_page_trim();
}

static void due_pass(void)
{
	pc_page_release_due();
}

/* (a) a trim's batch of buddy blocks; the other thread wants a block.
 * (c) with hold set: the batch stays out until the allocation returns. */
static void blocks_case(bool hold, size_t want)
{
	setup();
	pass_runs = false;
	want_pages = want;
	hold_pass = hold;
	expect_wait = true;
	fill_zone();
	REQUIRE(nblocks > NFREE);
	pc_lock_acquire(&zone->lock);
	size_t run_free = zone->run_free_pages;
	pc_lock_release(&zone->lock);
	REQUIRE(run_free == 0); /* (m): no free run; a run needs a top-order block */
	for (size_t i = 0; i < NFREE; i++) {
		memset(blocks[i], 0x5a, PC_PAGE_SIZE); /* resident, as a dirty block is */
		pc_free_pages(blocks[i], PC_MAX_ORDER);
	}
	CHECK(pc_load_relaxed(&zone->dirty_hint) >= NFREE * BLOCK_PAGES);
	pass_and_check(trim_pass, NFREE); /* one batch of the NFREE blocks */
	if (got && want)
		pc_free_run(got, want);
	else if (got)
		pc_free_pages(got, PC_MAX_ORDER);
	for (size_t i = NFREE; i < nblocks; i++)
		pc_free_pages(blocks[i], PC_MAX_ORDER);
	pc_page_trim();
}

TEST(no_region_while_blocks_held)
{
	blocks_case(false, 0);
}

TEST(wait_bounded)
{
	blocks_case(true, 0);
}

/* (m) a run asked for while the batch holds top-order blocks: one of them
 * is the run heap's next chunk */
TEST(wait_for_block_as_chunk)
{
	blocks_case(false, RUN_PAGES);
}

/* (j) a trim's batch holds one half of a top-order block (a block of
 * PC_MAX_ORDER - 1); the other thread frees the other half (its buddy:
 * buddy set) or a half of another top-order block (not: as many pages, no
 * merge), then asks for a top-order block. */
static void merged_blocks_case(bool buddy)
{
	enum { HALVES = 4 };
	void *half[HALVES];
	setup();
	pass_runs = false;
	want_pages = 0;
	hold_pass = false;
	expect_wait = buddy;
	fill_zone();
	REQUIRE(nblocks > 2);
	pc_free_pages(blocks[0], PC_MAX_ORDER); /* two top-order blocks, in halves */
	pc_free_pages(blocks[1], PC_MAX_ORDER);
	for (size_t i = 0; i < HALVES; i++) {
		half[i] = pc_alloc_pages(PC_MAX_ORDER - 1);
		REQUIRE(half[i] != NULL && zone_of(half[i]) == zone);
		memset(half[i], 0x5a, PC_PAGE_SIZE);
	}
	/* half[0] held; its buddy, or a half that is not, given */
	size_t held = 0, given = HALVES;
	for (size_t i = 1; i < HALVES; i++) {
		bool is_buddy = ((uintptr_t)half[i] ^ (uintptr_t)half[0]) == BLOCK_PAGES / 2 * PC_PAGE_SIZE;
		if (is_buddy == buddy && given == HALVES)
			given = i;
	}
	REQUIRE(given < HALVES);
	pc_free_pages(half[held], PC_MAX_ORDER - 1);
	give[0] = half[given];
	ngive = 1;
	CHECK(pc_load_relaxed(&zone->dirty_hint) == BLOCK_PAGES / 2); /* the only dirty block */
	pass_and_check(trim_pass, 1);
	if (got)
		pc_free_pages(got, PC_MAX_ORDER);
	for (size_t i = 1; i < HALVES; i++)
		if (i != given)
			pc_free_pages(half[i], PC_MAX_ORDER - 1);
	for (size_t i = 2; i < nblocks; i++)
		pc_free_pages(blocks[i], PC_MAX_ORDER);
	pc_page_trim();
}

TEST(wait_for_merged_blocks)
{
	merged_blocks_case(true);
}

TEST(no_wait_when_merged_blocks_too_small)
{
	merged_blocks_case(false);
}

/* (n) a trim's batch holds quarters 0 and 2 of a top-order block (blocks
 * of PC_MAX_ORDER - 2); the other thread frees quarters 1 and 3, then asks
 * for a top-order block: both held quarters count (a look that found only
 * one of them on the held list would see half the block). */
TEST(wait_for_merged_quarters)
{
	enum { QUARTERS = 4 };
	const size_t qbytes = BLOCK_PAGES / QUARTERS * PC_PAGE_SIZE;
	char *q[QUARTERS];
	setup();
	pass_runs = false;
	want_pages = 0;
	hold_pass = false;
	expect_wait = true;
	fill_zone();
	REQUIRE(nblocks > 1);
	pc_free_pages(blocks[0], PC_MAX_ORDER); /* the zone's only free block: cut in quarters */
	for (size_t i = 0; i < QUARTERS; i++) {
		q[i] = pc_alloc_pages(PC_MAX_ORDER - 2);
		REQUIRE(q[i] != NULL && zone_of(q[i]) == zone);
		memset(q[i], 0x5a, PC_PAGE_SIZE);
	}
	for (size_t i = 1; i < QUARTERS; i++) /* in address order */
		for (size_t k = i; k > 0 && q[k] < q[k - 1]; k--) {
			char *t = q[k];
			q[k] = q[k - 1];
			q[k - 1] = t;
		}
	for (size_t i = 0; i < QUARTERS; i++)
		REQUIRE(q[i] == q[0] + i * qbytes && (uintptr_t)q[0] % (BLOCK_PAGES * PC_PAGE_SIZE) == 0);
	pc_free_pages(q[0], PC_MAX_ORDER - 2);
	pc_free_pages(q[2], PC_MAX_ORDER - 2);
	give[0] = q[1];
	give[1] = q[3];
	ngive = 2;
	give_order = PC_MAX_ORDER - 2;
	CHECK(pc_load_relaxed(&zone->dirty_hint) == BLOCK_PAGES / 2); /* the only dirty blocks */
	pass_and_check(trim_pass, 2);
	if (got)
		pc_free_pages(got, PC_MAX_ORDER);
	for (size_t i = 1; i < nblocks; i++)
		pc_free_pages(blocks[i], PC_MAX_ORDER);
	pc_page_trim();
}

/* (b) a timed pass's batch of free runs (run.c, inside a chunk still partly
 * used); the other thread wants a run that only the held one can serve:
 * `chunks` chunks cut into runs of `cut` pages (and one of the rest), the
 * first run of each freed (dirty): the heap's only free runs; every
 * top-order block of the zone taken, the clock moved past the delay. The
 * other thread first frees the `give` runs after the held one in its chunk
 * (not due: freed after the clock moved), then asks for a run of `want`
 * pages (0: a top-order block). Cases: the file's header. */
#define CHUNKS_MAX 4
#define RUNS_MAX (BLOCK_PAGES / RUN_PAGES * CHUNKS_MAX)
struct runs_spec {
	size_t cut, chunks, give, want;
	size_t also; /* (l): run `also` of the first chunk freed too (0: none) */
	bool wait; /* expected: the allocation waits for the batch */
};

static void runs_case(struct runs_spec sp)
{
	void *runs[RUNS_MAX];
	size_t len[RUNS_MAX], nruns = 0, nfreed = 0;
	bool freed[RUNS_MAX] = { false };
	uintptr_t chunk_of[CHUNKS_MAX];
	REQUIRE(sp.chunks <= CHUNKS_MAX && sp.cut >= RUN_PAGES && sp.give < BLOCK_PAGES / sp.cut);
	setup();
	pass_runs = true;
	want_pages = sp.want;
	hold_pass = false;
	expect_wait = sp.wait;
	for (size_t c = 0; c < sp.chunks; c++) /* each chunk: runs of cut, then the rest */
		for (size_t used = 0; used < BLOCK_PAGES; used += len[nruns++]) {
			len[nruns] = PC_MIN(sp.cut, BLOCK_PAGES - used);
			runs[nruns] = pc_alloc_run(len[nruns]);
			REQUIRE(runs[nruns] != NULL);
			memset(runs[nruns], 0x5a, PC_PAGE_SIZE);
		}
	fill_zone();
	/* The first run of each chunk freed (chunks are 4 MiB aligned); the
	 * give runs after the first one, adjacent in its chunk, for the other
	 * thread. */
	for (size_t i = 0; i < nruns && nfreed < sp.chunks; i++) {
		uintptr_t c = (uintptr_t)runs[i] / (BLOCK_PAGES * PC_PAGE_SIZE);
		bool seen = false;
		for (size_t k = 0; k < nfreed; k++)
			seen = seen || chunk_of[k] == c;
		if (seen)
			continue;
		REQUIRE(zone_of(runs[i]) == zone);
		if (nfreed == 0)
			for (size_t g = 0; g < sp.give; g++) {
				REQUIRE((char *)runs[i + g + 1] ==
					(char *)runs[i + g] + len[i + g] * PC_PAGE_SIZE);
				give[g] = runs[i + g + 1];
				give_pages = len[i + g + 1];
				freed[i + g + 1] = true;
			}
		if (nfreed == 0 && sp.also) {
			REQUIRE(sp.also > sp.give && i + sp.also < nruns &&
				(uintptr_t)runs[i + sp.also] / (BLOCK_PAGES * PC_PAGE_SIZE) == c);
			pc_free_run(runs[i + sp.also], len[i + sp.also]);
			freed[i + sp.also] = true;
		}
		chunk_of[nfreed++] = c;
		pc_free_run(runs[i], len[i]);
		freed[i] = true;
	}
	ngive = sp.give;
	REQUIRE(nfreed == sp.chunks);
	pc_lock_acquire(&zone->lock);
	size_t run_free = zone->run_free_pages, run_dirty = zone->run_dirty_pages;
	pc_lock_release(&zone->lock);
	size_t held = sp.chunks + (sp.also != 0);
	REQUIRE(run_free == held * sp.cut); /* the only free runs: those freed */
	REQUIRE(run_dirty == held * sp.cut);
	pc_page_clock_advance(2 * 3600000000000ull); /* the runs are due */
	pass_and_check(due_pass, (int)held); /* one batch of them */
	if (got && !sp.want)
		pc_free_pages(got, PC_MAX_ORDER);
	else if (got)
		pc_free_run(got, sp.want);
	for (size_t i = 0; i < nruns; i++)
		if (!freed[i])
			pc_free_run(runs[i], len[i]);
	for (size_t i = 0; i < nblocks; i++)
		pc_free_pages(blocks[i], PC_MAX_ORDER);
	pc_page_trim();
}

TEST(no_region_while_runs_held)
{
	runs_case((struct runs_spec){ .cut = RUN_PAGES, .chunks = 1, .want = RUN_PAGES, .wait = true });
}

TEST(no_wait_when_held_too_small)
{
	runs_case((struct runs_spec){ .cut = RUN_PAGES, .chunks = 1, .want = 0, .wait = false });
}

TEST(no_wait_for_small_pieces)
{
	runs_case((struct runs_spec){ .cut = RUN_PAGES, .chunks = CHUNKS_MAX, .want = 0, .wait = false });
}

/* (f) a held run of 384 pages, a request of 320: above the held run's
 * power of two, within its length */
TEST(wait_for_run_past_its_order)
{
	runs_case((struct runs_spec){ .cut = 384, .chunks = 1, .want = 320, .wait = true });
}

/* (g) a held run of 256 pages and its free neighbour of 256: a request of
 * 512, which they make once merged */
TEST(wait_for_merged_runs)
{
	runs_case((struct runs_spec){ .cut = RUN_PAGES, .chunks = 1, .give = 1, .want = 2 * RUN_PAGES,
				      .wait = true });
}

/* (h) the rest of the held run's chunk freed: a whole chunk once back, a
 * top-order block for the buddy lists */
TEST(wait_for_merged_chunk)
{
	runs_case((struct runs_spec){ .cut = RUN_PAGES, .chunks = 1, .give = 3, .want = 0, .wait = true });
}

/* (l) runs 0 and 2 of a chunk held (one batch), run 1 freed by the other
 * thread, 768 pages asked for: the three merge once both are back (each
 * held run alone, with run 1, makes 512) */
TEST(wait_for_merged_held_runs)
{
	runs_case((struct runs_spec){ .cut = RUN_PAGES, .chunks = 1, .also = 2, .give = 1,
				      .want = 3 * RUN_PAGES, .wait = true });
}

/* (i) one merged neighbour too few: 768 pages once back, not the chunk */
TEST(no_wait_when_merged_too_small)
{
	runs_case((struct runs_spec){ .cut = RUN_PAGES, .chunks = 1, .give = 2, .want = 0, .wait = false });
}

int main(void)
{
	pc_page_init();
	RUN(no_region_while_blocks_held);
	RUN(no_region_while_runs_held);
	RUN(wait_bounded);
	RUN(no_wait_when_held_too_small);
	RUN(no_wait_for_small_pieces);
	RUN(wait_for_run_past_its_order);
	RUN(wait_for_merged_runs);
	RUN(wait_for_merged_chunk);
	RUN(no_wait_when_merged_too_small);
	RUN(wait_for_merged_blocks);
	RUN(no_wait_when_merged_blocks_too_small);
	RUN(wait_for_merged_held_runs);
	RUN(wait_for_block_as_chunk);
	RUN(wait_for_merged_quarters);
	return test_report();
}
