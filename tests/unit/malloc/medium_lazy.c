/*
 * tests/unit/malloc/medium_lazy.c - the per-CPU medium cache (rseq mode) is
 * started by the first medium miss, not at start-up (malloc/medium.c,
 * medium_start; docs/footprint.md, "2026-11-24 night, helper startup"): a
 * program that never allocates an 8-256 KiB block maps and writes none of
 * its per-CPU slots. White-box: links the static library, so malloc here is
 * pcmalloc. In thread mode (the _norseq run) the per-CPU cache never
 * starts and the per-thread arrays work as before.
 *
 *  not_at_start_up     after start-up and small blocks (up to 8 KiB, the
 *                      largest size class) the cache is not started.
 *  reentered_no_start  a medium malloc from inside a medium path of this
 *                      thread (the place of a signal handler that
 *                      interrupted one: the start takes locks it may hold)
 *                      starts nothing and still gets its block.
 *  first_miss_starts   the first medium malloc starts it; its block, freed,
 *                      is kept on this CPU's stack and handed out again.
 *  racing_first_miss   8 threads released at once make their first medium
 *                      malloc: one start, every block usable.
 *  refused_start_retried  every mapping refused (injected, as under
 *                      `ulimit -v`): the mallocs still get their blocks,
 *                      the cache stays off, and the start is tried at the
 *                      first miss, then once per PC_MEDIUM_START_BACKOFF
 *                      misses (counted: the injected failures), not at
 *                      every miss; a decay pass ends the wait; with memory
 *                      again, the next try starts the cache.
 */
#define _GNU_SOURCE
#include "test.h"
#include "unit/unit_helpers.h"

#include "malloc/malloc.h"

#include <pthread.h>
#include <string.h>

#define KiB ((size_t)1024)

static bool rseq_mode(void)
{
	return pc_sheaf_mode() == PC_SHEAF_MODE_RSEQ;
}

static bool started(void)
{
	return pc_load_acquire(&pc_medium_slots) != NULL;
}

TEST(not_at_start_up)
{
	REQUIRE(pc_malloc_init());
	void *p[4] = { pc_malloc(16), pc_malloc(512), pc_malloc(4096), pc_malloc(PC_SMALL_MAX) };
	for (int i = 0; i < 4; i++) {
		CHECK(p[i] != NULL);
		pc_free(p[i]);
	}
	CHECK(!started());
	CHECK_EQ(medium_cached_bytes(), 0);
}

TEST(reentered_no_start)
{
	REQUIRE(!started()); /* (not_at_start_up failed: the rest means nothing) */
	medium_enter();
	CHECK(!medium_start());
	char *p = pc_malloc(16 * KiB);
	CHECK(!started());
	medium_leave();
	REQUIRE(p != NULL);
	memset(p, 1, 16 * KiB);
	pc_free(p);
	CHECK(!started());
}

TEST(first_miss_starts)
{
	char *p = pc_malloc(16 * KiB);
	REQUIRE(p != NULL);
	CHECK_EQ(started(), rseq_mode());
	memset(p, 2, 16 * KiB);
	pc_free(p);
	/* Kept by this CPU's stack (rseq) or this thread's arrays: the next
	 * malloc of the class gets it back. */
	CHECK_EQ(medium_cached_bytes(), 16 * KiB);
	char *q = pc_malloc(16 * KiB);
	CHECK(q == p);
	CHECK_EQ(medium_cached_bytes(), 0);
	pc_free(q);
	CHECK_EQ(medium_start(), rseq_mode());
}

#define RACERS 8
static pthread_barrier_t racers_go;

static void *racer(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&racers_go);
	char *p = pc_malloc(40 * KiB);
	if (p) {
		memset(p, 3, 40 * KiB);
		pc_free(p);
	}
	return p;
}

/* Runs in a child, where nothing has started the cache yet. */
static int racing_body(void)
{
	pthread_t t[RACERS];
	void *got[RACERS];
	pthread_barrier_init(&racers_go, NULL, RACERS);
	for (int i = 0; i < RACERS; i++)
		if (pthread_create(&t[i], NULL, racer, NULL) != 0)
			return 2;
	for (int i = 0; i < RACERS; i++)
		pthread_join(t[i], &got[i]);
	for (int i = 0; i < RACERS; i++)
		if (got[i] == NULL)
			return 3;
	if (started() != rseq_mode())
		return 4;
	pc_trim();
	return pc_page_check() ? 0 : 5;
}

/* A malloc and free of a medium block (16 KiB, a miss while the cache is
 * off): false if the malloc failed. */
static bool medium_pair(void)
{
	char *p = pc_malloc(16 * KiB);
	if (p == NULL)
		return false;
	memset(p, 4, 16 * KiB);
	pc_free(p);
	return true;
}

/* Runs in a child, where nothing has started the cache yet (rseq mode:
 * thread mode never maps one). No release thread and an hour's delay: no
 * decay pass but the test's. The zone gets free pages first (a 2 MiB block,
 * not medium, freed), so that with every mapping refused the only mappings
 * tried are the start's, each one an injected failure. Tries at misses 1,
 * B + 2 and 2B + 3 (B = PC_MEDIUM_START_BACKOFF): 3 in 2B + 3 misses, where
 * a try per miss made 2B + 3. */
static int refused_body(void)
{
	if (!rseq_mode())
		return 0;
	if (pc_option_set(PC_OPT_VM_RELEASE_THREAD, 0, false) != 0 ||
	    pc_option_set(PC_OPT_VM_RELEASE_DELAY_MS, 3600000, false) != 0)
		return 2;
	char *warm = pc_malloc(2048 * KiB);
	if (warm == NULL)
		return 3;
	memset(warm, 5, 2048 * KiB);
	pc_free(warm);
	unsigned long before = os_injected_failures();
	os_inject_map_failures(0, 1000000);
	for (unsigned i = 0; i < 2 * PC_MEDIUM_START_BACKOFF + 3; i++)
		if (!medium_pair())
			return 4;
	if (started() || os_injected_failures() - before != 3)
		return 5;
	medium_decay(); /* a decay pass: the next miss tries again */
	if (!medium_pair() || os_injected_failures() - before != 4)
		return 6;
	os_inject_map_failures(0, 0); /* memory again: the wait still holds */
	if (!medium_pair() || started())
		return 7;
	medium_decay();
	if (!medium_pair() || !started() || os_injected_failures() - before != 4)
		return 8;
	return pc_page_check() ? 0 : 9;
}

TEST(refused_start_retried)
{
	check_in_child(refused_body);
}

TEST(racing_first_miss)
{
	check_in_child(racing_body);
}

int main(void)
{
	RUN(not_at_start_up); /* first: nothing has made a medium block yet */
	RUN(reentered_no_start);
	RUN(racing_first_miss); /* a child of a process where it has not started */
	RUN(refused_start_retried); /* the same */
	if (!pin_cpu0_or_skip())
		return test_report();
	/* No decay pass between a free and the malloc after it: no release
	 * thread, and an hour between the slow paths' passes. */
	set_opt(PC_OPT_VM_RELEASE_THREAD, 0);
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, 3600000);
	RUN(first_miss_starts);
	return test_report();
}
