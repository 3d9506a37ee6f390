/*
 * tests/unit/slab/idle_release.c - an idle program gives its cached objects
 * back: the page layer's release thread runs the slab layer's decay (the
 * hook of pc_page_release_hook_add), so sheaves and barns go back to the
 * slabs, the idle caches' empty slabs to the page allocator, and their pages
 * to the OS; and a fork child gets back the thread-mode sheaves of the
 * parent's other threads. Runs with rseq, on the per-thread fallback
 * (idle_release_norseq) and under ThreadSanitizer. vm.release_delay_ms is an
 * hour and the page clock is moved (pc_page_clock_advance): no verdict
 * depends on timing.
 *
 *  thread_pass_gives_back  a thread fills its sheaf and the barn and parks;
 *                          two passes of the release thread's loop body
 *                          (pc_page_release_thread_pass, clock moved an hour
 *                          before each) leave no sheaf object and no slab of
 *                          the cache (active 0); a third, the delay later,
 *                          releases the slabs' pages (vm.pcp_high 0, so they
 *                          reach the zones): no dirty page left, and at
 *                          least the slabs' pages counted as released.
 *  release_thread_runs_it  the real thread (vm.release_thread=1): its passes
 *                          empty the sheaves and free the slabs of an idle
 *                          cache (waits, with no time limit, while moving the
 *                          page clock, for what must happen).
 *  fork_child_gets_sheaves a parked thread holds freed objects in its sheaf
 *                          (thread mode: its own; rseq: its CPU's); in a fork
 *                          child, where that thread does not exist, the
 *                          cache counts only the child's own objects as
 *                          active, and once the child frees them
 *                          pc_cache_shrink frees every slab.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "slab/slab.h"
#include "test.h"
#include "unit/unit_helpers.h"
#include "unit/slab/parked.h"

#include <pthread.h>
#include <semaphore.h>

#define HOUR_MS 3600000L
#define HOUR_NS ((uint64_t)HOUR_MS * 1000000u)
#define FILL 400 /* > one sheaf: the barn gets some */

static struct pc_cache *cache;

static struct pc_cache_info info_of(struct pc_cache *s)
{
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	return info;
}

static struct parked parked;

static void start_parked(const char *name, size_t size)
{
	cache = pc_cache_create(name, size, 0, NULL);
	REQUIRE(cache != NULL);
	parked_start(&parked, cache, FILL);
}

static void finish_parked(void)
{
	parked_finish(&parked);
	CHECK_EQ(pc_cache_check(cache), 0);
	CHECK_EQ(pc_cache_destroy(cache), 0);
}

/* Dirty free pages of every zone (buddy lists and run heap), and the pages
 * released so far. */
static size_t dirty_total(void)
{
	return dirty_pages_total(false) + dirty_pages_total(true);
}

static uint64_t released_total(void)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++)
		n += pc_load_relaxed(&pc_zone_get(i)->stats.released_pages);
	return n;
}

TEST(thread_pass_gives_back)
{
	start_parked("ir-pass", 256);
	struct pc_cache_info before = info_of(cache);
	CHECK(before.sheaf_objects > 0);
	CHECK(before.slabs > 0);
	CHECK_EQ(before.active_objects, 0);
	/* Whatever earlier passes looked at, two due passes with nothing used
	 * in between take every idle sheaf and barn. */
	for (int i = 0; i < 2; i++) {
		pc_page_clock_advance(HOUR_NS);
		pc_page_release_thread_pass();
	}
	struct pc_cache_info after = info_of(cache);
	CHECK_EQ(after.sheaf_objects, 0);
	CHECK_EQ(after.active_objects, 0);
	CHECK_EQ(after.slabs, 0); /* the idle cache's empty slabs went too */
	uint64_t released = released_total();
	pc_page_clock_advance(HOUR_NS); /* the slabs' pages are due now */
	pc_page_release_thread_pass();
	CHECK_EQ(dirty_total(), 0);
	CHECK(released_total() - released >= (uint64_t)before.slabs << before.order);
	finish_parked();
}

TEST(release_thread_runs_it)
{
	start_parked("ir-thread", 128);
	CHECK(info_of(cache).sheaf_objects > 0);
	set_opt(PC_OPT_VM_RELEASE_THREAD, 1);
	pc_page_release_thread_poll();
	CHECK(pc_page_release_thread_running());
	/* No time limit: the thread's passes must get there (each wake-up
	 * below is a pass; the clock moves a decay interval each time). */
	for (;;) {
		struct pc_cache_info info = info_of(cache);
		if (info.sheaf_objects == 0 && info.slabs == 0)
			break;
		pc_page_clock_advance(HOUR_NS);
		set_opt(PC_OPT_VM_RELEASE_DELAY_MS, HOUR_MS); /* wakes the thread */
		usleep(1000);
	}
	CHECK_EQ(info_of(cache).active_objects, 0);
	set_opt(PC_OPT_VM_RELEASE_THREAD, 0);
	while (pc_page_release_thread_running())
		usleep(1000);
	finish_parked();
}

#define OWN 50
static void *own[OWN];

/* In the fork child: the exit code says which step failed. */
static int child_balances(void)
{
	if (info_of(cache).active_objects != OWN)
		return 1;
	for (int i = 0; i < OWN; i++)
		pc_cache_free(cache, own[i]);
	pc_cache_shrink(cache);
	struct pc_cache_info info = info_of(cache);
	if (info.active_objects != 0 || info.sheaf_objects != 0)
		return 2;
	if (info.slabs != 0)
		return 3;
	return pc_cache_check(cache) == 0 ? 0 : 4;
}

TEST(fork_child_gets_sheaves)
{
	start_parked("ir-fork", 64);
	for (int i = 0; i < OWN; i++)
		REQUIRE((own[i] = pc_cache_alloc(cache)) != NULL);
	check_in_child(child_balances);
	for (int i = 0; i < OWN; i++)
		pc_cache_free(cache, own[i]);
	finish_parked();
}

int main(void)
{
	watchdog_install("idle_release: watchdog: the test hangs\n");
	alarm(300);
	pc_page_init();
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, HOUR_MS);
	set_opt(PC_OPT_VM_PCP_HIGH_MIN, 0); /* freed slab pages reach the zones */
	set_opt(PC_OPT_VM_PCP_HIGH, 0);
	RUN(thread_pass_gives_back);
	RUN(fork_child_gets_sheaves);
	RUN(release_thread_runs_it);
	
	return test_report();
}
