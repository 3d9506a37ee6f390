/*
 * tests/unit/malloc/medium_idle.c - a burst of medium blocks, then idle
 * (issue 9: "an idle process returns to near its live size within the
 * delay"), with the default vm.release_thread=2 (auto).
 *
 *  burst_then_sleep  in a child: a second thread allocates and touches
 *                    160 MiB of medium blocks (64 KiB), frees them all and
 *                    exits; the main thread then only sleeps. The release
 *                    thread must have been started by then (by the
 *                    burst's own mallocs: its zone grew past the floor,
 *                    vm.release_watermark_kb, in a process with a second
 *                    thread; frees never start it, and none follows), and
 *                    the burst's pages must come down to a tenth resident
 *                    (mincore; the process's RSS would count a sanitizer's
 *                    shadow of them too). Before the fix the
 *                    thread was wanted only by a release pass that found
 *                    the buddy lists' dirty memory over the floor: the
 *                    burst's free memory lies in the run heap (and a pass
 *                    runs from a slow path), so no thread started and the
 *                    RSS stayed at the peak for good.
 *  single_no_thread  in a child that never had a second thread, the same
 *                    burst starts no thread (a single-threaded program
 *                    stays so, docs/tunables.md).
 * No verdict depends on timing: the thread's start is checked once the
 * burst is over (it happens inside the burst's mallocs), and residency is
 * polled every 10 ms with no time limit but the test's watchdog (300 s; at
 * the 100 ms delay set here it falls within a second or two).
 * Where the test runs under a seccomp filter (a container), auto never
 * starts the thread: burst_then_sleep is skipped.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "test.h"
#include "unit/unit_helpers.h"

#include "malloc/malloc.h"

#include <errno.h>
#include <pthread.h>

#define KiB ((size_t)1024)
#define MiB ((size_t)1 << 20)
#define BLOCK (64 * KiB)
#define BURST (160 * MiB)
#define NBLOCKS (BURST / BLOCK)

static char *blocks[NBLOCKS];
static size_t resident_at_peak;

/* Pages of the burst's blocks resident now (mincore). Counted on the
 * blocks, not the process's RSS, which a sanitizer's shadow memory of the
 * touched pages keeps up. A block whose region the allocator unmapped
 * (page/unmap.c: a wholly free region) has none: nothing else maps
 * memory in the idle child meanwhile. */
static size_t burst_resident(void)
{
	static unsigned char vec[BLOCK >> PC_PAGE_SHIFT];
	size_t n = 0;
	for (size_t i = 0; i < NBLOCKS; i++) {
		if (mincore(blocks[i], BLOCK, vec) != 0) {
			REQUIRE(errno == ENOMEM); /* unmapped */
			continue;
		}
		for (size_t j = 0; j < sizeof(vec); j++)
			n += vec[j] & 1;
	}
	return n;
}

/* Allocate and touch the burst, note its resident pages, free it all. */
static void *burst(void *arg)
{
	(void)arg;
	for (size_t i = 0; i < NBLOCKS; i++) {
		blocks[i] = pc_malloc(BLOCK);
		REQUIRE(blocks[i] != NULL);
		touch_pages(blocks[i], BLOCK, (char)i);
	}
	resident_at_peak = burst_resident();
	for (size_t i = 0; i < NBLOCKS; i++)
		pc_free(blocks[i]);
	return NULL;
}

/* 1: the thread did not start; 3: the burst was not resident at its peak;
 * pages that stay resident end the child by the watchdog (exit 2). */
static int burst_then_sleep_child(void)
{
	watchdog_install("medium_idle: the burst's pages stayed resident (300 s)\n");
	alarm(300);
	REQUIRE(pc_malloc_init());
	REQUIRE(pc_option(PC_OPT_VM_RELEASE_THREAD) == PC_RELEASE_THREAD_AUTO);
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, 100);
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, burst, NULL) == 0);
	REQUIRE(pthread_join(t, NULL) == 0);
	/* From here on no allocator call. */
	if (!pc_page_release_thread_running())
		return 1;
	const size_t pages = BURST >> PC_PAGE_SHIFT;
	if (resident_at_peak < pages - pages / 8)
		return 3;
	while (burst_resident() > pages / 10)
		usleep(10000);
	return 0;
}

TEST(burst_then_sleep)
{
	if (os_seccomp_filtered()) {
		printf("skipped burst_then_sleep: a seccomp filter (auto starts no thread)\n");
		return;
	}
	check_in_child(burst_then_sleep_child);
}

/* 1: a thread started in a process that never had a second one. */
static int single_no_thread_child(void)
{
	if (!os_single_threaded())
		return 0; /* a runtime (a sanitizer's) started a thread before main */
	(void)burst(NULL);
	return pc_page_release_thread_running() ? 1 : 0;
}

TEST(single_no_thread)
{
	check_in_child(single_no_thread_child);
}

int main(void)
{
	RUN(single_no_thread);
	RUN(burst_then_sleep);
	return test_report();
}
