/*
 * tests/unit/page/reentry.c - a signal handler that calls the page allocator
 * while its own thread is inside it, holding a zone lock or a pcp lock
 * (page.h, "Re-entry"; reentry.c). Forced: the test hook raises SIGUSR1 at
 * PC_PAGE_TEST_ZONE_LOCKED / PC_PAGE_TEST_PCP_LOCKED, and the signal is
 * delivered before raise() returns, with the lock held.
 *
 * The handler allocates a page and a run of 100 pages, borrows a range, grows
 * a run, frees a page, a run of 100 pages (the zone's run heap), a run of 8
 * pages (a per-CPU list) and the tail of a shrunk run, and asks for a trim,
 * a drain of every per-CPU list, an unmapping and a release pass. Each
 * allocation must return NULL with errno ENOMEM, the maintenance calls 0,
 * and every free must be deferred (counted), then done by the interrupted
 * call on its way out: after it returns the deferred count equals the done
 * count, the free pages are what they were before the freed blocks were
 * taken (nothing lost, nothing freed twice) and pc_page_check() holds.
 *
 *  zone_locked_alloc  the interrupted call is an allocation of a 100-page
 *                     run (the zone lock held: its run heap);
 *  zone_locked_free   the free of such a run (the zone lock held);
 *  pcp_locked_alloc   a page allocation through the pcp (its lock held);
 *  pcp_locked_free    a page free to the pcp (its lock held).
 * Without the re-entry check each of them hangs: the handler's allocation
 * waits for the zone lock its own thread holds, or its drain or trim for
 * that pcp lock; the watchdog (alarm) turns the hang into a failure. No
 * verdict depends on timing.
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"
#include "unit/page/reentry_hook.h"

#include <errno.h>
#include <signal.h>
#include <unistd.h>

#define HOUR_MS 3600000L

/* What the handler frees, set up by each test. */
static void *victim_page, *victim_run100, *victim_run8, *victim_shrunk;
/* What the handler saw. */
static struct {
	int reentered, nulls, enomem, zeros, grow_refused;
} seen;

static void handler(int sig)
{
	(void)sig;
	int saved = errno;
	seen.reentered = pc_page_reentered();
	errno = 0;
	void *a = pc_alloc_pages(0);
	seen.enomem += errno == ENOMEM;
	errno = 0;
	void *b = pc_alloc_run(100);
	seen.enomem += errno == ENOMEM;
	errno = 0;
	bool fresh;
	void *c = pc_page_lend(16, &fresh);
	seen.enomem += errno == ENOMEM;
	seen.nulls = (a == NULL) + (b == NULL) + (c == NULL);
	seen.grow_refused = !pc_run_grow(victim_shrunk, 16, 17);
	pc_free_pages(victim_page, 0);
	pc_free_run(victim_run100, 100);
	pc_free_run(victim_run8, 8);
	pc_run_shrink(victim_shrunk, 16, 4); /* its tail of 12 pages */
	pc_page_drain_all();
	seen.zeros = (pc_page_trim() == 0) + (pc_page_unmap_free() == 0) + (pc_page_release_due() == 0);
	errno = saved;
}

/* Take the blocks the handler frees; returns the free pages before. */
static size_t take_victims(void)
{
	size_t before = free_total();
	victim_page = pc_alloc_pages(0);
	victim_run100 = pc_alloc_run(100);
	victim_run8 = pc_alloc_run(8);
	victim_shrunk = pc_alloc_run(16);
	REQUIRE(victim_page && victim_run100 && victim_run8 && victim_shrunk);
	memset(&seen, 0, sizeof(seen));
	pc_store_relaxed(&fired, 0);
	return before;
}

/* Run `call` with the hook armed at `at`, then check what the handler saw
 * and that its frees were done: `held` pages are still in use by the test
 * afterwards (the interrupted call's block, and the shrunk run's head). */
static void run_armed(enum pc_page_test_point at, void (*call)(void), size_t before, size_t held)
{
	struct pc_page_reentry_counts c0, c1;
	pc_page_reentry_counts(&c0);
	pc_store_relaxed(&armed, (int)at);
	alarm(60);
	call();
	alarm(0);
	pc_store_relaxed(&armed, -1);
	pc_page_reentry_counts(&c1);
	CHECK_EQ(pc_load_relaxed(&fired), 1);
	CHECK_EQ(seen.reentered, 1);
	CHECK_EQ(seen.nulls, 3);
	CHECK_EQ(seen.enomem, 3);
	CHECK_EQ(seen.grow_refused, 1);
	CHECK_EQ(seen.zeros, 3);
	CHECK_EQ(c1.refused - c0.refused, 8); /* 3 allocations, a grow, 4 maintenance */
	CHECK_EQ(c1.deferred - c0.deferred, 4);
	CHECK_EQ(c1.drained - c0.drained, 4); /* done by the interrupted call */
	CHECK(!pc_page_reentered());
	CHECK_EQ(free_total(), before - held);
	CHECK(pc_page_check());
}

static void *block; /* the interrupted call's */

static void alloc_run100(void) { block = pc_alloc_run(100); }
static void free_run100(void) { pc_free_run(block, 100); }
static void alloc_page(void) { block = pc_alloc_pages(0); }
static void free_page(void) { pc_free_pages(block, 0); }

TEST(zone_locked_alloc)
{
	size_t before = take_victims();
	run_armed(PC_PAGE_TEST_ZONE_LOCKED, alloc_run100, before, 100 + 4);
	REQUIRE(block);
	memset(block, 0x5a, 100 * PC_PAGE_SIZE); /* a real block */
	pc_free_run(block, 100);
	pc_free_run(victim_shrunk, 4);
	CHECK_EQ(free_total(), before);
}

TEST(zone_locked_free)
{
	block = pc_alloc_run(100);
	REQUIRE(block);
	size_t before = take_victims() + 100;
	run_armed(PC_PAGE_TEST_ZONE_LOCKED, free_run100, before, 4);
	pc_free_run(victim_shrunk, 4);
	CHECK_EQ(free_total(), before);
}

TEST(pcp_locked_alloc)
{
	size_t before = take_victims();
	run_armed(PC_PAGE_TEST_PCP_LOCKED, alloc_page, before, 1 + 4);
	REQUIRE(block);
	memset(block, 0x5a, PC_PAGE_SIZE);
	pc_free_pages(block, 0);
	pc_free_run(victim_shrunk, 4);
	CHECK_EQ(free_total(), before);
}

TEST(pcp_locked_free)
{
	block = pc_alloc_pages(0);
	REQUIRE(block);
	size_t before = take_victims() + 1;
	run_armed(PC_PAGE_TEST_PCP_LOCKED, free_page, before, 4);
	pc_free_run(victim_shrunk, 4);
	CHECK_EQ(free_total(), before);
}

int main(void)
{
	pc_page_init();
	/* Nothing released or unmapped on its own: the free totals compare. */
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, HOUR_MS);
	set_opt(PC_OPT_VM_RELEASE_WATERMARK_KB, 1L << 20);
	REQUIRE(pin_cpu(0)); /* one pcp throughout */
	signal(SIGALRM, on_alarm);
	signal(SIGUSR1, handler);
	void *warm = pc_alloc_run(200); /* the run heap has a chunk, the pcp pages */
	void *warm_page = pc_alloc_pages(0);
	pc_free_run(warm, 200);
	pc_free_pages(warm_page, 0);
	pc_store_relaxed(&pc_page_test_hook, hook);
	RUN(zone_locked_alloc);
	RUN(zone_locked_free);
	RUN(pcp_locked_alloc);
	RUN(pcp_locked_free);
	pc_store_relaxed(&pc_page_test_hook, NULL);
	return test_report();
}
