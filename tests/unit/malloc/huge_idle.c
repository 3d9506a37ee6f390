/*
 * tests/unit/malloc/huge_idle.c - a burst of huge blocks, then idle (issue
 * 9: "an idle process returns to near its live size within the delay"),
 * with the default vm.release_thread=2 (auto). Huge blocks live outside
 * the zones, so no zone grows for them (tests/unit/malloc/medium_idle.c
 * has the zones' case); the huge cache keeps what their frees leave,
 * resident up to its bound, until a huge malloc or free, or the release
 * thread's hook, expires it.
 *
 *  burst_then_sleep  in a child: a second thread allocates and touches 5
 *                    blocks of 32 MiB (160 MiB live: past the 64 MiB
 *                    floor), frees them all and exits; the main thread
 *                    then only sleeps. The release thread must have been
 *                    started by the burst's mallocs, and the blocks' pages
 *                    must come down to a tenth resident (mincore; an
 *                    unmapped range counts as none). Before the fix
 *                    nothing wanted the thread for huge blocks, and the
 *                    cache kept one block per other CPU resident for good
 *                    (review of pagesidle, item 3: 41% of the peak).
 *  realloc_then_sleep  in a child: a second thread grows one block from
 *                    5 MiB to 165 MiB by realloc, 8 MiB at a time,
 *                    touching each new part, frees it and exits; the main
 *                    thread only sleeps: the thread was started (by the
 *                    realloc that took the block past the floor) and the
 *                    block's pages come down as above (review item 12:
 *                    before, a growth by realloc wanted no thread, and the
 *                    cache kept the whole block resident for good).
 *  held_past_sleep   in a child: the second thread holds its 5 blocks
 *                    until the release thread sleeps (every zone clean),
 *                    then frees them: the free must wake the thread (it no
 *                    longer sleeps, or it ran a pass since), and the pages
 *                    come down as above. Before, the huge cache kept its
 *                    resident blocks until the sleep's 60 s backstop
 *                    (review of pagesidle, item 15).
 *  single_no_thread  in a child that never had a second thread, the same
 *                    burst wants the thread but starts none.
 * No verdict depends on timing: the thread's start is checked once the
 * burst is over, and residency is polled every 10 ms with no time limit
 * but the watchdog (at the 100 ms delay set here it falls within a second
 * or two). The watchdog (unit_helpers.h) fires after 120 s without
 * progress, and each block or growth step of the burst is progress: the
 * burst itself may be slow (under ThreadSanitizer realloc_then_sleep's
 * growth copies the block at every step: 11-44 s alone at load 40-85, and
 * once over 120 s in a loaded ctest -j3, where a plain alarm(120) that
 * also timed the burst failed the test); what may not last is the wait
 * for the sleep or for the pages. Under a seccomp filter burst_then_sleep
 * is skipped.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "test.h"
#include "unit/unit_helpers.h"

#include "malloc/malloc.h"

#include <errno.h>
#include <pthread.h>

#define MiB ((size_t)1 << 20)
#define BLOCK (32 * MiB)
#define NBLOCKS 5

static char *blocks[NBLOCKS];
static size_t resident_at_peak;

/* Pages of the blocks resident now (mincore), a range unmapped counting as
 * none (nothing else maps memory in the idle child meanwhile). */
static size_t blocks_resident(void)
{
	static unsigned char vec[BLOCK >> PC_PAGE_SHIFT];
	size_t pages = 0;
	for (size_t i = 0; i < NBLOCKS; i++) {
		if (mincore(blocks[i], BLOCK, vec) != 0) {
			REQUIRE(errno == ENOMEM); /* unmapped */
			continue;
		}
		for (size_t j = 0; j < sizeof(vec); j++)
			pages += vec[j] & 1;
	}
	return pages;
}

static void burst_alloc(void)
{
	for (size_t i = 0; i < NBLOCKS; i++) {
		blocks[i] = pc_malloc(BLOCK);
		REQUIRE(blocks[i] != NULL);
		touch_pages(blocks[i], BLOCK, (char)i);
		test_progress(); /* for the watchdog: the burst moves */
	}
	resident_at_peak = blocks_resident();
}

static void burst_free(void)
{
	for (size_t i = 0; i < NBLOCKS; i++)
		pc_free(blocks[i]);
}

static void burst_here(void)
{
	burst_alloc();
	burst_free();
}

static void *burst(void *arg)
{
	(void)arg;
	burst_here();
	return NULL;
}

/* Whether the frees woke a sleeping release thread (burst_held; the other
 * workloads do not look). */
static bool woke_after_free = true;

/* The children's common part: `work` runs on a second thread and leaves
 * `pages` pages that `resident` counts; then the main thread makes no
 * allocator call. 1: the thread did not start; 3: the pages were not
 * resident at the peak; 4: the frees did not wake the sleeping thread;
 * pages that stay resident end the child by the watchdog (exit 2: 120 s
 * without progress, which only the burst makes). */
static int idle_after(void *(*work)(void *), size_t pages, size_t (*resident)(void))
{
	watchdog_install("huge_idle: no sleep, or the pages stayed resident (120 s)\n");
	watchdog_arm(120);
	REQUIRE(pc_malloc_init());
	REQUIRE(pc_option(PC_OPT_VM_RELEASE_THREAD) == PC_RELEASE_THREAD_AUTO);
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, 100);
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, work, NULL) == 0);
	REQUIRE(pthread_join(t, NULL) == 0);
	if (!pc_page_release_thread_running())
		return 1;
	if (resident_at_peak < pages - pages / 8)
		return 3;
	if (!woke_after_free)
		return 4;
	while (resident() > pages / 10)
		usleep(10000);
	return 0;
}

/* Auto mode starts no thread under a seccomp filter. */
static void check_idle_child(int (*child)(void))
{
	if (os_seccomp_filtered()) {
		printf("skipped: a seccomp filter (auto starts no thread)\n");
		return;
	}
	check_in_child(child);
}

static int burst_then_sleep_child(void)
{
	return idle_after(burst, NBLOCKS * (BLOCK >> PC_PAGE_SHIFT), blocks_resident);
}

TEST(burst_then_sleep)
{
	check_idle_child(burst_then_sleep_child);
}

/* The burst, with the frees only once the release thread sleeps; whether
 * the frees woke it, read right after them: it does not sleep any more, or
 * it has run a pass since (it may have fallen asleep again). */
static void *burst_held(void *arg)
{
	(void)arg;
	burst_alloc();
	while (!pc_page_release_thread_sleeping())
		usleep(10000); /* the watchdog ends a thread that never sleeps */
	uint64_t passes = pc_page_release_thread_passes();
	burst_free();
	woke_after_free = !pc_page_release_thread_sleeping() || pc_page_release_thread_passes() != passes;
	return NULL;
}

static int held_past_sleep_child(void)
{
	return idle_after(burst_held, NBLOCKS * (BLOCK >> PC_PAGE_SHIFT), blocks_resident);
}

TEST(held_past_sleep)
{
	check_idle_child(held_past_sleep_child);
}

/* One block grown by realloc past the floor, touched, freed. */
#define GROWN (165 * MiB)
static char *grown;

static void *grow_burst(void *arg)
{
	(void)arg;
	size_t size = 5 * MiB;
	char *p = pc_malloc(size);
	REQUIRE(p != NULL);
	touch_pages(p, size, 1);
	while (size < GROWN) {
		size_t next = PC_MIN(size + 8 * MiB, GROWN);
		p = pc_realloc(p, next);
		REQUIRE(p != NULL);
		touch_pages(p + size, next - size, 2);
		size = next;
		test_progress(); /* for the watchdog: the growth moves */
	}
	grown = p;
	resident_at_peak = resident_pages(p, GROWN >> PC_PAGE_SHIFT);
	pc_free(p);
	return NULL;
}

/* Pages of the grown block's range resident now, an unmapped range
 * counting as none. */
static size_t grown_resident(void)
{
	static unsigned char vec[GROWN >> PC_PAGE_SHIFT];
	if (mincore(grown, GROWN, vec) != 0) {
		REQUIRE(errno == ENOMEM);
		return 0;
	}
	size_t pages = 0;
	for (size_t j = 0; j < sizeof(vec); j++)
		pages += vec[j] & 1;
	return pages;
}

static int realloc_then_sleep_child(void)
{
	return idle_after(grow_burst, GROWN >> PC_PAGE_SHIFT, grown_resident);
}

TEST(realloc_then_sleep)
{
	check_idle_child(realloc_then_sleep_child);
}

/* The huge blocks past the floor want the thread, which starts not
 * (single_thread_burst). */
static int single_no_thread_child(void)
{
	return single_thread_burst(burst_here);
}

TEST(single_no_thread)
{
	check_in_child(single_no_thread_child);
}

int main(void)
{
	RUN(single_no_thread);
	RUN(burst_then_sleep);
	RUN(realloc_then_sleep);
	RUN(held_past_sleep);
	return test_report();
}
