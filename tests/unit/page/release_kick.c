/*
 * tests/unit/page/release_kick.c - a kick (pc_page_release_thread_kick: a
 * layer above cached resident memory that only the thread's pass hooks give
 * back) is never missed by the background release thread (release_thread.c,
 * "Sleeping"; review item E). The thread is held at two points while this
 * thread kicks, with no timing in any verdict:
 *
 *  kick_in_idle_passes  a pass hook (pc_page_release_hook_add) holds the
 *                       thread at the start of a pass while it counts idle
 *                       passes (every zone clean, at least three passes
 *                       since the last kick; tried again if this thread
 *                       lagged so that fewer went by); kicked there, it
 *                       counts again from that pass: its next sleep comes
 *                       no sooner than PC_RELEASE_IDLE_PASSES passes after
 *                       it.
 *  kick_as_it_sleeps    the page layer's test hook holds the thread at
 *                       PC_PAGE_TEST_THREAD_SLEEP (its idle passes done,
 *                       about to say it sleeps); kicked there (the kicker
 *                       sees it awake and wakes nothing), it must not
 *                       sleep: at its next sleep point it has slept no
 *                       time since, and has passed PC_RELEASE_IDLE_PASSES
 *                       more times.
 * The delay is 40 ms, so the thread passes every 10 ms; the waits have no
 * time limit but the watchdog's.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"


/* The pass hook: holds the thread at the start of the first pass that
 * begins with at least `hold_after` passes finished (0: none), until `go`;
 * held_at: the passes finished then (this thread may have been descheduled
 * for some passes after it chose hold_after: review of release3, item 1). */
static _Atomic uint64_t hold_after, held_at;
static _Atomic bool held, go;

static void wait_flag(_Atomic bool *flag)
{
	while (!pc_load_acquire(flag))
		usleep(1000);
}

static void on_pass(void)
{
	uint64_t after = pc_load_acquire(&hold_after);
	uint64_t passes = pc_page_release_thread_passes();
	if (after == 0 || passes < after)
		return;
	pc_store_release(&hold_after, 0);
	pc_store_relaxed(&held_at, passes);
	pc_store_release(&held, true); /* publishes held_at */
	wait_flag(&go);
}

/* The page test hook at the sleep point: records the passes finished and
 * the sleeps begun there (point_seq counts the points), and, if asked,
 * holds the thread the first time until `go`. */
static _Atomic bool hold_at_sleep;
static _Atomic uint64_t point_seq, point_passes, point_sleeps;

static void at_point(enum pc_page_test_point at)
{
	if (at != PC_PAGE_TEST_THREAD_SLEEP)
		return;
	pc_store_relaxed(&point_passes, pc_page_release_thread_passes());
	pc_store_relaxed(&point_sleeps, pc_page_release_thread_sleeps());
	pc_add_release(&point_seq, 1); /* publishes the two above */
	if (pc_xchg_acq_rel(&hold_at_sleep, false)) {
		pc_store_release(&held, true);
		wait_flag(&go);
	}
}

/* Wait for the next sleep point after `seq` points; returns its passes. */
static uint64_t wait_point(uint64_t seq)
{
	while (pc_load_acquire(&point_seq) == seq)
		usleep(1000);
	return pc_load_relaxed(&point_passes);
}

static void start(void)
{
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, 40); /* passes every 10 ms */
	set_opt(PC_OPT_VM_RELEASE_THREAD, PC_RELEASE_THREAD_ALWAYS);
	pc_page_trim(); /* every zone clean: each pass is idle unless kicked */
	pc_store_release(&pc_page_test_hook, at_point);
	pc_page_release_thread_poll();
	REQUIRE(pc_page_release_thread_running());
}

TEST(kick_in_idle_passes)
{
	start();
	uint64_t h = 0, p1 = 0;
	for (;;) {
		pc_store_release(&go, false);
		pc_store_release(&held, false);
		/* Armed before the kick: the kick keeps the thread passing (16
		 * passes at least before it may sleep), so it reaches the pass
		 * held whatever this thread's delays. */
		pc_store_release(&hold_after, pc_page_release_thread_passes() + 4);
		pc_page_release_thread_kick(); /* taken by pass p1 + 1 at the latest */
		p1 = pc_page_release_thread_passes();
		wait_flag(&held);
		h = pc_load_relaxed(&held_at);
		if (h >= p1 + 4)
			break; /* held after three idle passes at least: the case tested */
		pc_store_release(&go, true); /* this thread lagged: again */
		while (pc_load_acquire(&held) && pc_page_release_thread_passes() == h)
			usleep(1000); /* the held pass has ended */
	}
	uint64_t seq = pc_load_acquire(&point_seq);
	pc_page_release_thread_kick(); /* taken at the end of pass h + 1 */
	pc_store_release(&go, true);
	uint64_t slept_at = wait_point(seq);
	CHECK(slept_at >= h + 1 + PC_RELEASE_IDLE_PASSES);
	if (slept_at < h + 1 + PC_RELEASE_IDLE_PASSES)
		fprintf(stderr, "  kicked in pass %llu, sleep point after pass %llu\n",
			(unsigned long long)(h + 1), (unsigned long long)slept_at);
}

TEST(kick_as_it_sleeps)
{
	start();
	pc_store_release(&go, false);
	pc_store_release(&held, false);
	pc_store_release(&hold_at_sleep, true);
	pc_page_release_thread_kick(); /* awake, whatever it did */
	wait_flag(&held); /* at the sleep point, not yet saying it sleeps */
	uint64_t seq = pc_load_acquire(&point_seq);
	uint64_t sleeps = pc_page_release_thread_sleeps();
	uint64_t q = pc_page_release_thread_passes();
	CHECK(!pc_page_release_thread_sleeping());
	pc_page_release_thread_kick(); /* sees it awake: wakes nothing */
	pc_store_release(&go, true);
	uint64_t next = wait_point(seq);
	/* It did not sleep on the kick it saw, and counted its idle passes
	 * again (the kick taken by pass q + 1). */
	CHECK_EQ(pc_load_relaxed(&point_sleeps), sleeps);
	CHECK(next >= q + 1 + PC_RELEASE_IDLE_PASSES);
	if (next < q + 1 + PC_RELEASE_IDLE_PASSES)
		fprintf(stderr, "  held after pass %llu, next sleep point after pass %llu\n",
			(unsigned long long)q, (unsigned long long)next);
}

static void stop(void)
{
	set_opt(PC_OPT_VM_RELEASE_THREAD, PC_RELEASE_THREAD_NEVER);
	while (pc_page_release_thread_running())
		usleep(1000);
	pc_store_release(&pc_page_test_hook, NULL);
}

int main(void)
{
	pc_page_init();
	watchdog_install("release_kick: the thread never reached the point waited for\n");
	watchdog_arm(300);
	REQUIRE(pc_page_release_hook_add(on_pass));
	RUN(kick_in_idle_passes);
	RUN(kick_as_it_sleeps);
	stop();
	return test_report();
}
