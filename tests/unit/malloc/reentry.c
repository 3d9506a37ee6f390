/*
 * tests/unit/malloc/reentry.c - malloc, free, calloc, realloc, memalign and
 * malloc_trim from a signal handler that interrupted its own thread inside
 * the page allocator, a zone or pcp lock held (page.h and malloc.h,
 * "Re-entry"). Forced: the page layer's test hook raises SIGUSR1 at
 * PC_PAGE_TEST_ZONE_LOCKED or PC_PAGE_TEST_PCP_LOCKED, and the signal is
 * delivered before raise() returns, with the lock held.
 *
 * The handler allocates small blocks (a class whose sheaves it empties, and
 * a class not made yet), a medium block, a large block (1 MiB), a huge block
 * (8 MiB), a large calloc and a 64 KiB-aligned memalign; grows one large
 * block with realloc and shrinks another; frees a large, a medium, a huge
 * block and small ones; and calls pc_trim. Every call must return: an
 * allocation either NULL with errno ENOMEM or a block whose contents are
 * checked (the huge one must succeed: a fresh mapping takes no lock; the
 * large ones, which need the zone, must fail); the realloc that cannot grow
 * in place fails with the block intact, the shrink keeps the block; frees are
 * deferred (page layer: counted; slab layer: pc_sheaf_deferred) and done by
 * the interrupted call on its way out (counts equal, list empty), and
 * pc_page_check() holds.
 *
 *  large_malloc   interrupted: malloc of 1 MiB (a run from the zone's run
 *                 heap, the zone lock held);
 *  large_free     interrupted: the free of such a block (the zone lock held);
 *  slab_refill    interrupted: a small malloc whose sheaves, barn, slabs and
 *                 pcp are empty: the slab's pages, a pcp refill taking its
 *                 batch from the zone (the zone lock held);
 *  medium_malloc  interrupted: a medium malloc that misses malloc's cache,
 *                 a run taken through the pcp (its lock held).
 *  fork_locks     a signal raised at the end of the page layer's prefork
 *                 handler (every page lock held, at depth 0): it must wait
 *                 until fork has released them (the lifecycle blocks
 *                 signals across fork), then its 1 MiB malloc succeeds; the
 *                 child does not run it.
 *  slab_mutex     a signal raised while pc_cache_destroy holds slab_mutex
 *                 (pc_slab_exclusive_test_hook): the handler's first malloc
 *                 of a size class (which would take slab_mutex) fails with
 *                 ENOMEM, its frees past the sheaf wait for the unlock.
 * Both sheaf modes: the suite runs this once more without rseq
 * (malloc/reentry_norseq). Without the re-entry checks each hangs: the
 * handler waits for a lock its own thread holds (the large malloc for the
 * zone lock; in medium_malloc, malloc_trim's drain for the pcp lock; in
 * fork_locks, the zone lock prefork holds; in slab_mutex, slab_mutex),
 * except slab_mutex in the fallback mode, where every class is made at
 * start-up: there the handler's allocation takes the class's locks and the
 * ENOMEM check fails. The watchdog (alarm) turns a hang into a failure. No
 * verdict depends on timing.
 */
#define _GNU_SOURCE
#include "test.h"
#include "unit/unit_helpers.h"

#include "malloc/malloc.h"
#include "unit/page/reentry_hook.h"

#include <errno.h>
#include <string.h>
#include <sys/wait.h>

#define KiB ((size_t)1024)
#define MiB ((size_t)1 << 20)
#define SMALL 2000 /* a class the handler empties */
#define FRESH 5000 /* a class nobody used: not made yet when the handler runs */
#define NSMALL 64

static void fill(char *p, size_t n, int v) { memset(p, v, n); }

static bool filled(const char *p, size_t n, int v)
{
	for (size_t i = 0; i < n; i += 512)
		if (p[i] != (char)v)
			return false;
	return p[n - 1] == (char)v;
}

/* What the handler frees or resizes, set up by each test. */
static char *v_large, *v_medium, *v_huge, *v_grow, *v_shrink;
static char *v_small[8];
/* What the handler saw: calls that returned a checked block, calls that
 * failed with ENOMEM, anything else (a failure without ENOMEM, a bad block). */
static struct {
	int reentered, ok, enomem, bad, large_null, huge_ok, grow_kept, shrink_kept, trim_zero;
} seen;

/* One allocation's verdict: NULL with ENOMEM, or a block we can fill. */
static void judge(void *p, size_t n)
{
	if (p) {
		fill(p, n, 0x3c);
		seen.ok += filled(p, n, 0x3c);
		seen.bad += !filled(p, n, 0x3c);
	} else {
		seen.enomem += errno == ENOMEM;
		seen.bad += errno != ENOMEM;
	}
}

static void handler(int sig)
{
	(void)sig;
	int saved = errno;
	seen.reentered = pc_page_reentered();
	void *small[NSMALL];
	for (int i = 0; i < NSMALL; i++) { /* past what the sheaves hold */
		errno = 0;
		small[i] = pc_malloc(SMALL);
		judge(small[i], SMALL);
	}
	errno = 0;
	void *fresh = pc_malloc(FRESH);
	judge(fresh, FRESH);
	errno = 0;
	void *medium = pc_malloc(20 * KiB);
	judge(medium, 20 * KiB);
	errno = 0;
	void *large = pc_malloc(MiB);
	seen.large_null = large == NULL && errno == ENOMEM;
	errno = 0;
	void *zeroed = pc_calloc(1, MiB);
	judge(zeroed, MiB);
	errno = 0;
	void *aligned = pc_memalign(64 * KiB, 100 * KiB);
	judge(aligned, 100 * KiB);
	errno = 0;
	char *huge = pc_malloc(8 * MiB);
	seen.huge_ok = huge != NULL;
	if (huge) {
		fill(huge, 8 * MiB, 0x77);
		seen.huge_ok = filled(huge, 8 * MiB, 0x77);
	}
	/* Grow in place needs the zone: refused, so realloc moves, and the
	 * move's malloc fails: NULL, the block untouched. */
	errno = 0;
	void *grown = pc_realloc(v_grow, 2 * MiB);
	seen.grow_kept = grown == NULL && errno == ENOMEM && filled(v_grow, MiB, 0x11);
	void *shrunk = pc_realloc(v_shrink, 300 * KiB); /* its tail deferred */
	seen.shrink_kept = shrunk == v_shrink && filled(v_shrink, 300 * KiB, 0x22);
	seen.trim_zero = pc_trim() == 0;
	for (int i = 0; i < NSMALL; i++)
		pc_free(small[i]);
	pc_free(fresh);
	pc_free(medium);
	pc_free(large);
	pc_free(zeroed);
	pc_free(aligned);
	pc_free(huge);
	pc_free(v_large);
	pc_free(v_medium);
	pc_free(v_huge);
	for (int i = 0; i < 8; i++)
		pc_free(v_small[i]);
	errno = saved;
}

static void setup(void)
{
	v_large = pc_malloc(MiB);
	v_medium = pc_malloc(20 * KiB);
	v_huge = pc_malloc(8 * MiB);
	v_grow = pc_malloc(MiB);
	v_shrink = pc_malloc(MiB);
	REQUIRE(v_large && v_medium && v_huge && v_grow && v_shrink);
	fill(v_grow, MiB, 0x11);
	fill(v_shrink, MiB, 0x22);
	for (int i = 0; i < 8; i++)
		REQUIRE((v_small[i] = pc_malloc(SMALL)) != NULL);
	memset(&seen, 0, sizeof(seen));
	pc_store_relaxed(&fired, 0);
}

static struct pc_page_reentry_counts c0;

static void arm(enum pc_page_test_point at)
{
	pc_page_reentry_counts(&c0);
	pc_store_relaxed(&armed, (int)at);
	alarm(60);
}

static void disarm_and_check(void)
{
	alarm(0);
	pc_store_relaxed(&armed, -1);
	struct pc_page_reentry_counts c1;
	pc_page_reentry_counts(&c1);
	CHECK_EQ(pc_load_relaxed(&fired), 1);
	CHECK_EQ(seen.reentered, 1);
	CHECK_EQ(seen.bad, 0);
	CHECK_EQ(seen.ok + seen.enomem, NSMALL + 4); /* small, fresh, medium, calloc, memalign */
	CHECK(seen.enomem >= 3);                    /* fresh (no class), calloc, memalign: the zone */
	CHECK_EQ(seen.large_null, 1);
	CHECK_EQ(seen.huge_ok, 1);
	CHECK_EQ(seen.grow_kept, 1);
	CHECK_EQ(seen.shrink_kept, 1);
	CHECK_EQ(seen.trim_zero, 1);
	CHECK(c1.deferred - c0.deferred >= 2);          /* v_large, v_shrink's tail */
	CHECK_EQ(c1.drained - c0.drained, c1.deferred - c0.deferred); /* all done since */
	CHECK(pc_load_relaxed(&pc_sheaf_deferred) == NULL);
	CHECK(!pc_page_reentered());
	CHECK(filled(v_grow, MiB, 0x11));
	CHECK(filled(v_shrink, 300 * KiB, 0x22));
	pc_free(v_grow);
	pc_free(v_shrink);
	CHECK(pc_page_check());
}

TEST(large_malloc)
{
	setup();
	arm(PC_PAGE_TEST_ZONE_LOCKED);
	char *p = pc_malloc(MiB);
	disarm_and_check();
	REQUIRE(p);
	fill(p, MiB, 0x44);
	CHECK(filled(p, MiB, 0x44));
	pc_free(p);
}

TEST(large_free)
{
	char *p = pc_malloc(MiB);
	REQUIRE(p);
	setup();
	arm(PC_PAGE_TEST_ZONE_LOCKED);
	pc_free(p);
	disarm_and_check();
}

TEST(slab_refill)
{
	void *warm = pc_malloc(3000); /* its class made, then everything back */
	REQUIRE(warm);
	pc_free(warm);
	setup();
	pc_trim(); /* sheaves, barns, slabs of every class and the pcps empty */
	arm(PC_PAGE_TEST_ZONE_LOCKED);
	void *p = pc_malloc(3000); /* a new slab: the pcp refilled from the zone */
	disarm_and_check();
	REQUIRE(p);
	fill(p, 3000, 0x55);
	CHECK(filled(p, 3000, 0x55));
	pc_free(p);
}

TEST(medium_malloc)
{
	setup();
	pc_trim(); /* the medium cache empty */
	arm(PC_PAGE_TEST_PCP_LOCKED);
	char *p = pc_malloc(40 * KiB); /* a miss: a run through the pcp */
	disarm_and_check();
	REQUIRE(p);
	fill(p, 40 * KiB, 0x66);
	CHECK(filled(p, 40 * KiB, 0x66));
	pc_free(p);
}

/* ---- fork and slab_mutex: their own handlers ---------------------------------- */
static _Atomic int plain_calls, plain_ok, plain_reentered;

static void fork_handler(int sig)
{
	(void)sig;
	int saved = errno;
	pc_add_relaxed(&plain_calls, 1);
	pc_store_relaxed(&plain_reentered, pc_page_reentered());
	char *p = pc_malloc(MiB); /* the zone's lock: must be free now */
	if (p) {
		fill(p, MiB, 0x12);
		pc_store_relaxed(&plain_ok, filled(p, MiB, 0x12));
	}
	pc_free(p);
	errno = saved;
}

TEST(fork_locks)
{
	pc_store_relaxed(&plain_calls, 0);
	pc_store_relaxed(&plain_ok, 0);
	signal(SIGUSR1, fork_handler);
	pc_store_relaxed(&fired, 0);
	arm(PC_PAGE_TEST_FORK_LOCKED);
	pid_t pid = fork();
	if (pid == 0) /* the child: the signal was the parent's, pending there */
		_exit(pc_load_relaxed(&plain_calls) == 0 ? 0 : 3);
	alarm(0);
	pc_store_relaxed(&armed, -1);
	signal(SIGUSR1, handler);
	REQUIRE(pid > 0);
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_EQ(pc_load_relaxed(&fired), 1);
	CHECK_EQ(pc_load_relaxed(&plain_calls), 1); /* delivered once fork was done */
	CHECK_EQ(pc_load_relaxed(&plain_reentered), 0);
	CHECK_EQ(pc_load_relaxed(&plain_ok), 1);
	CHECK(pc_page_check());
}

#define FRESH2 7000 /* another class nobody used */
static char *slab_objs[NSMALL];
static _Atomic int class_enomem;

static void slab_mutex_handler(int sig)
{
	(void)sig;
	int saved = errno;
	pc_add_relaxed(&plain_calls, 1);
	errno = 0;
	void *p = pc_malloc(FRESH2); /* its cache would be made under slab_mutex */
	pc_store_relaxed(&class_enomem, p == NULL && errno == ENOMEM);
	pc_free(p);
	for (int i = 0; i < NSMALL; i++) /* past the sheaf: frees deferred */
		pc_free(slab_objs[i]);
	errno = saved;
}

static void raise_in_exclusive(struct pc_cache *s)
{
	(void)s;
	if (pc_load_relaxed(&fired) == 0) {
		pc_store_relaxed(&fired, 1);
		raise(SIGUSR1); /* delivered before raise returns: slab_mutex held */
	}
}

TEST(slab_mutex)
{
	struct pc_cache *c = pc_cache_create("reentry-destroy", 200, 0, NULL);
	REQUIRE(c);
	void *o = pc_cache_alloc(c);
	REQUIRE(o);
	pc_cache_free(c, o);
	for (int i = 0; i < NSMALL; i++)
		REQUIRE((slab_objs[i] = pc_malloc(SMALL)) != NULL);
	pc_store_relaxed(&plain_calls, 0);
	pc_store_relaxed(&fired, 0);
	signal(SIGUSR1, slab_mutex_handler);
	pc_store_relaxed(&pc_slab_exclusive_test_hook, raise_in_exclusive);
	alarm(60);
	size_t left = pc_cache_destroy(c);
	alarm(0);
	pc_store_relaxed(&pc_slab_exclusive_test_hook, NULL);
	signal(SIGUSR1, handler);
	CHECK_EQ(left, 0);
	CHECK_EQ(pc_load_relaxed(&plain_calls), 1);
	CHECK_EQ(pc_load_relaxed(&class_enomem), 1);
	CHECK(pc_load_relaxed(&pc_sheaf_deferred) == NULL); /* freed at the unlock */
	void *p = pc_malloc(FRESH2); /* now the class is made */
	CHECK(p != NULL);
	pc_free(p);
	CHECK(pc_page_check());
}

int main(void)
{
	REQUIRE(pc_malloc_init());
	/* Nothing released or unmapped on its own meanwhile. */
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, 3600000L);
	REQUIRE(pin_cpu(0));
	signal(SIGALRM, on_alarm);
	signal(SIGUSR1, handler);
	pc_store_relaxed(&pc_page_test_hook, hook);
	RUN(large_malloc);
	RUN(large_free);
	RUN(slab_refill);
	RUN(medium_malloc);
	RUN(fork_locks);
	RUN(slab_mutex);
	pc_store_relaxed(&pc_page_test_hook, NULL);
	return test_report();
}
