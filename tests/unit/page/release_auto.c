/*
 * tests/unit/page/release_auto.c - vm.release_thread=2 (auto, the default):
 * the background thread starts only once a zone's free pool outgrows its
 * floor or the zone grows past it (tests/unit/malloc/medium_idle.c and
 * huge_idle.c have the growth's and huge blocks' cases), only in a
 * process that already has a second thread (and no
 * seccomp filter), the bound's peak part counts while it runs, and it
 * sleeps without periodic passes once every zone stays clean.
 * Where the test itself runs under a seccomp filter (a container), auto
 * never starts the thread: the tests that need it are skipped.
 *
 *  small_pool_no_thread  a pool under the floor (16 MiB freed, watermark
 *                        64 MiB): no thread wanted, a poll starts none.
 *  single_threaded_never 256 MiB of touched blocks freed (watermark 8 MiB,
 *                        delay an hour): the excess goes at once (as with
 *                        vm.release_thread=0) and the thread is wanted, but
 *                        a poll in this still single-threaded process starts
 *                        none; a fork child (its zones inherited grown
 *                        past the floor) wants one again, but its poll
 *                        starts none while it is single-threaded too.
 *  thread_keeps_peak     (the process now has had a second thread) the poll
 *                        starts the thread; 256 MiB allocated and freed is
 *                        then kept (the recent peak), through passes three
 *                        quarters of the delay later, and then reused with
 *                        fewer than 1/16 of its pages in new minor faults
 *                        (getrusage); set to 0, the thread leaves (waited
 *                        for without a time limit), is no longer wanted, and
 *                        a forced pass releases down to the floor (the peak
 *                        part went with the thread).
 *  idle_thread_sleeps    auto again, the thread started the same way; with
 *                        everything trimmed it goes to sleep (no periodic
 *                        passes) after RELEASE_IDLE_PASSES clean passes
 *                        (waited for without a time limit; the delay set to
 *                        40 ms so its passes come every 10 ms); a free that
 *                        leaves dirty memory in a zone wakes it, and its
 *                        passes release that memory; set to 0, the
 *                        sleeping thread leaves.
 *  live_auto_wants_again the thread off and not wanted, the zones grown
 *                        past the floor long ago: set to auto live, the
 *                        thread is wanted at once and the next poll starts
 *                        it; with the floor above every zone, not wanted;
 *                        with a delay of 0, not wanted, and wanted again
 *                        when the delay is set back live.
 *  fork_child_single     (review of pagesidle, item 14) the child of this
 *                        multi-threaded process inherits zones past the
 *                        floor: it wants the thread, but a poll from its
 *                        only thread (the one that forked) starts none
 *                        (glibc still calls such a child multi-threaded);
 *                        a poll from a second thread it creates does
 *                        (skipped under ThreadSanitizer: it stops such a
 *                        child at its pthread_create, and reports the
 *                        child's fork handlers against the stopped
 *                        release thread's exit handlers).
 * No verdict depends on timing: the delay is an hour while memory is
 * checked (a peak window lasts as long), so the thread's own passes
 * release nothing by age meanwhile, and a window they roll keeps the peak
 * in the one before; the page clock moves only by the test. The
 * time-driven expiry of the peak is tested in release.c
 * (fragments_released_past_peak, the same bound).
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <pthread.h>
#include <sys/wait.h>

#define MiB ((size_t)1 << 20)
#define BLOCK (PC_PAGE_SIZE << PC_MAX_ORDER)
#define MAX_BLOCKS 128
#define FLOOR_PAGES 2048 /* vm.release_watermark_kb = 8 MiB */
#define HOUR_NS (3600ull * 1000000000u) /* the delay while memory is checked */

static char *blocks[MAX_BLOCKS];
static size_t nblocks;

static void alloc_touch(size_t bytes, int pattern)
{
	for (size_t done = 0; done < bytes; done += BLOCK) {
		REQUIRE(nblocks < MAX_BLOCKS);
		char *p = pc_alloc_pages(PC_MAX_ORDER);
		REQUIRE(p != NULL);
		touch_pages(p, BLOCK, (char)pattern);
		blocks[nblocks++] = p;
	}
}

static void free_blocks(void)
{
	while (nblocks > 0)
		pc_free_pages(blocks[--nblocks], PC_MAX_ORDER);
}

static void wait_thread_gone(void)
{
	while (pc_page_release_thread_running())
		usleep(1000);
}

TEST(small_pool_no_thread)
{
	REQUIRE(pc_option(PC_OPT_VM_RELEASE_THREAD) == 2); /* the default */
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_DELAY_MS, 3600000, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_WATERMARK_KB, 65536, false) == 0);
	alloc_touch(16 * MiB, 0x11);
	free_blocks();
	pc_page_release_due();
	CHECK(!pc_page_release_thread_wanted());
	pc_page_release_thread_poll();
	CHECK(!pc_page_release_thread_running());
	CHECK(!pc_page_release_thread_active());
	CHECK(dirty_pages_total(false) >= (16 * MiB >> PC_PAGE_SHIFT)); /* under the floor: kept */
	pc_page_trim();
}

TEST(single_threaded_never)
{
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_WATERMARK_KB, 8192, false) == 0);
	size_t r0 = os_resident_bytes();
	alloc_touch(256 * MiB, 0x22);
	size_t r1 = os_resident_bytes();
	CHECK(r1 >= r0 + 250 * MiB);
	free_blocks();
	/* No thread: the frees released down to the floor at once. */
	CHECK(dirty_pages_total(false) <= FLOOR_PAGES + (BLOCK >> PC_PAGE_SHIFT));
	CHECK(os_resident_bytes() + 200 * MiB <= r1);
	CHECK(pc_page_release_thread_wanted());
	if (os_single_threaded()) {
		pc_page_release_thread_poll(); /* one thread in the process: none started */
		CHECK(!pc_page_release_thread_running());
	} else { /* a runtime (a sanitizer's) started a thread before main */
		fprintf(stderr, "  not single-threaded at start: the poll is not tried here\n");
	}
	CHECK(!pc_page_release_thread_active());
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) { /* wanted again (the zones inherited are past the floor), not started */
		if (!pc_page_release_thread_wanted())
			_exit(1);
		if (os_single_threaded())
			pc_page_release_thread_poll();
		_exit(pc_page_release_thread_running() ? 2 : 0);
	}
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(pc_page_check());
}

static void *nothing(void *arg)
{
	return arg;
}

/* A second thread, joined: the C library then knows the process as
 * multi-threaded for good (os_single_threaded turns false). */
static void make_multi_threaded(void)
{
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, nothing, NULL) == 0);
	REQUIRE(pthread_join(t, NULL) == 0);
	REQUIRE(!os_single_threaded());
}

TEST(thread_keeps_peak)
{
	CHECK(pc_page_release_thread_wanted()); /* still, from the test before */
	pc_page_release_thread_poll();
	CHECK(pc_page_release_thread_running());
	CHECK(pc_page_release_thread_active());
	alloc_touch(256 * MiB, 0x33);
	size_t r1 = os_resident_bytes();
	free_blocks();
	/* The peak part: all of it kept, resident, also by passes three
	 * quarters of the delay on (the peak's windows last a delay; the
	 * thread's own passes roll them too, whenever they run, and find
	 * nothing due by age before the delay). */
	CHECK(dirty_pages_total(false) >= (248 * MiB >> PC_PAGE_SHIFT));
	CHECK(os_resident_bytes() + 16 * MiB >= r1);
	for (int q = 1; q <= 3; q++) {
		pc_page_clock_advance(HOUR_NS / 4 + 1000000);
		pc_page_release_due();
	}
	CHECK(dirty_pages_total(false) >= (248 * MiB >> PC_PAGE_SHIFT));
	long f0 = minor_faults();
	alloc_touch(256 * MiB, 0x44); /* the next round reuses it */
	long faults = minor_faults() - f0;
	CHECK(faults < (long)((256 * MiB) >> PC_PAGE_SHIFT) / 16);
	if (faults >= (long)((256 * MiB) >> PC_PAGE_SHIFT) / 16)
		fprintf(stderr, "  %ld minor faults reusing 256 MiB\n", faults);
	free_blocks();
	CHECK(dirty_pages_total(false) >= (248 * MiB >> PC_PAGE_SHIFT));
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_THREAD, 0, false) == 0);
	wait_thread_gone();
	CHECK(!pc_page_release_thread_wanted());
	CHECK(!pc_page_release_thread_active());
	pc_page_release_thread_poll();
	CHECK(!pc_page_release_thread_running());
	pc_page_release_due(); /* no peak part without the thread */
	CHECK(dirty_pages_total(false) <= FLOOR_PAGES);
	CHECK(os_resident_bytes() + 200 * MiB <= r1);
	CHECK(pc_page_check());
}

TEST(idle_thread_sleeps)
{
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_THREAD, 2, false) == 0);
	alloc_touch(256 * MiB, 0x55);
	free_blocks(); /* over the floor, no thread: wanted */
	CHECK(pc_page_release_thread_wanted());
	pc_page_release_thread_poll();
	CHECK(pc_page_release_thread_running());
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_DELAY_MS, 40, false) == 0); /* passes every 10 ms */
	pc_page_trim();
	while (!pc_page_release_thread_sleeping()) /* every zone clean, pass after pass */
		usleep(1000);
	CHECK(pc_page_release_thread_running());
	uint64_t p0 = pc_page_release_thread_passes();
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_WATERMARK_KB, 65536, false) == 0);
	/* Dirty memory in a zone again: the free's slow path wakes it. */
	alloc_touch(16 * MiB, 0x66);
	free_blocks();
	/* Under the floor (64 MiB), so only age releases it, and only the
	 * thread's passes look at ages here: woken, they release it once due
	 * (waited for without a time limit; a thread left asleep would hang
	 * the test until ctest's limit). */
	while (dirty_pages_total(false) != 0)
		usleep(1000);
	CHECK(pc_page_release_thread_passes() > p0);
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_THREAD, 0, false) == 0);
	wait_thread_gone(); /* a sleeping thread leaves too */
	CHECK(!pc_page_release_thread_sleeping());
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_DELAY_MS, 3600000, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_WATERMARK_KB, 8192, false) == 0);
	CHECK(pc_page_check());
	pc_page_trim();
}

/* The thread is off, nothing wanted, and the zones have long been grown
 * past the floor (8 MiB here). Set to auto live, those zones want the
 * thread again, as their growth did: no new growth or pass over the floor
 * is needed (before, only one of those, or pc_trim, asked again). */
TEST(live_auto_wants_again)
{
	REQUIRE(pc_option(PC_OPT_VM_RELEASE_THREAD) == 0);
	CHECK(!pc_page_release_thread_running());
	CHECK(!pc_page_release_thread_wanted());
	size_t managed = 0; /* the most of one zone: the hook looks per zone */
	for (unsigned i = 0; i < pc_zone_count(); i++)
		managed = PC_MAX(managed, (size_t)pc_load_relaxed(&pc_zone_get(i)->managed_hint));
	REQUIRE(managed > FLOOR_PAGES);
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_THREAD, 2, false) == 0);
	CHECK(pc_page_release_thread_wanted());
	pc_page_release_thread_poll(); /* the process has had a second thread */
	CHECK(pc_page_release_thread_running());
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_THREAD, 0, false) == 0);
	wait_thread_gone();
	CHECK(!pc_page_release_thread_wanted());
	/* Set to auto again with every zone under the floor: not wanted. */
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_WATERMARK_KB, 4000000, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_THREAD, 2, false) == 0);
	CHECK(!pc_page_release_thread_wanted());
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_THREAD, 0, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_WATERMARK_KB, 8192, false) == 0);
	/* With a delay of 0 nothing is kept, so nothing wants the thread; the
	 * delay set back live, the zones past the floor want it again. */
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_DELAY_MS, 0, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_THREAD, 2, false) == 0);
	CHECK(!pc_page_release_thread_wanted());
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_DELAY_MS, 3600000, false) == 0);
	CHECK(pc_page_release_thread_wanted());
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_THREAD, 0, false) == 0);
	CHECK(!pc_page_release_thread_wanted());
}

#if !defined(__SANITIZE_THREAD__)
static void *poll_thread(void *arg)
{
	pc_page_release_thread_poll(); /* a second thread of the child polls */
	return arg;
}
#endif

/* In the fork child: 1 not wanted, 2 the forking thread's poll started a
 * thread, 3 a second thread's poll did not. */
static int fork_child_single_child(void)
{
	if (!pc_page_release_thread_wanted())
		return 1;
	pc_page_release_thread_poll(); /* the child's only thread */
	if (pc_page_release_thread_running())
		return 2;
#if defined(__SANITIZE_THREAD__)
	return 0;
#else
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, poll_thread, NULL) == 0);
	REQUIRE(pthread_join(t, NULL) == 0);
	return pc_page_release_thread_running() ? 0 : 3;
#endif
}

TEST(fork_child_single)
{
#if defined(__SANITIZE_THREAD__)
	/* ThreadSanitizer stops a child of a multi-threaded process that
	 * starts a thread, and reports the child's fork handlers (lock/mutex.c)
	 * against the exit handlers of the release thread the tests before
	 * stopped (it does not see the prefork locks order them): skipped;
	 * the release, debug and ASan builds run it. */
	printf("skipped fork_child_single: ThreadSanitizer\n");
	return;
#endif
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_THREAD, 2, false) == 0);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(fork_child_single_child());
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
		fprintf(stderr, "  child exit %d\n", WEXITSTATUS(status));
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_THREAD, 0, false) == 0);
}

int main(void)
{
	pc_page_init();
	RUN(small_pool_no_thread);
	RUN(single_threaded_never);
	make_multi_threaded();
	if (os_seccomp_filtered()) {
		printf("skipped thread_keeps_peak, idle_thread_sleeps: a seccomp filter (auto starts no thread)\n");
		return test_report();
	}
	RUN(thread_keeps_peak);
	RUN(idle_thread_sleeps);
	RUN(live_auto_wants_again);
	RUN(fork_child_single);
	return test_report();
}
