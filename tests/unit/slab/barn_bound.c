/*
 * tests/unit/slab/barn_bound.c - the barn's bound follows demand (barn.c,
 * "The bound"; slub.barn_sheaves, slub.barn_max_kb). Runs with rseq
 * (pinned to CPU 0, so one CPU's sheaves and one barn are in play), on the
 * per-thread fallback (barn_bound_norseq) and under ThreadSanitizer.
 * vm.release_delay_ms is an hour, so no decay pass runs but those the test
 * forces (pc_slab_decay_pass): no verdict depends on timing.
 *
 *  grows_with_demand   rounds of "allocate N objects, free them all" (seed
 *                      002's Test A): the first rounds refill from the slabs
 *                      and the barn refuses full sheaves at slub.barn_sheaves;
 *                      the misses that follow raise its bound (barn_grow),
 *                      until a round takes nothing from the slabs and flushes
 *                      nothing to them; the bound never passes what
 *                      slub.barn_max_kb allows.
 *  no_growth_at_zero   slub.barn_max_kb = 0: the bound stays at
 *                      slub.barn_sheaves and every round refills.
 *  bounded_by_kb       a small slub.barn_max_kb (the process's budget):
 *                      the bound stops at slub.barn_sheaves plus the full
 *                      sheaves that fit in it, and the objects sheaves hold
 *                      stay within that; a second cache finds the budget
 *                      spent and does not grow until the first gives its
 *                      share back (shrink), then grows.
 *  trim_resets         pc_cache_shrink and the out-of-memory reclaim
 *                      (pc_slab_reclaim) empty a grown barn and reset its
 *                      bound to slub.barn_sheaves.
 *  decay_follows_demand after growth, rounds that need fewer sheaves leave
 *                      full sheaves in the barn a whole interval and refuse
 *                      none: the next pass lowers the bound (by them, then by
 *                      half) and flushes what is above it; more demand raises
 *                      it again; a barn unused for a whole interval is emptied
 *                      and its bound reset, its charge given back.
 *  idle_empty_resets   a raised barn whose full sheaves were all taken (it
 *                      holds none) and that is then left alone: the pass
 *                      resets its bound and gives its charge back all the same.
 *  lowered_live        slub.barn_max_kb lowered while barns are raised: 0 or
 *                      a smaller budget puts every bound back at
 *                      slub.barn_sheaves at once, and the next pass gives the
 *                      charge back and cuts what the barn holds above it.
 *  threads_live        many more threads than CPUs allocate and free rounds
 *                      of objects with contents checked on every free while
 *                      the main thread changes slub.barn_max_kb and
 *                      slub.barn_sheaves, forces decay passes and shrinks the
 *                      cache; every object is back at the end (check exact)
 *                      and no charge is left once the cache is destroyed.
 *  Every test ends with no charge left (pc_slab_barn_charged() == 0).
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "slab/slab.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <pthread.h>

#define HOUR_MS 3600000L
#define CAP 4    /* objects per sheaf: small, so that few objects make many sheaves */
#define BASE 2   /* slub.barn_sheaves */
#define N 200    /* objects per round: 50 sheaves */

static struct pc_cache_info info_of(struct pc_cache *s)
{
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	return info;
}

static uint64_t stat_of(struct pc_cache *s, enum pc_slab_stat k)
{
	return info_of(s).stats[k];
}

/* Full sheaves of capacity CAP of s that fit in kb KiB (barn.c's
 * sheaf_bytes: the objects' slots and the sheaf). */
static size_t per_sheaf(struct pc_cache *s)
{
	return sizeof(struct pc_sheaf) + CAP * (info_of(s).size + sizeof(void *));
}

static unsigned fit(struct pc_cache *s, long kb)
{
	return (unsigned)(((size_t)kb << 10) / per_sheaf(s));
}

static void *v[4096];

/* One round: n objects allocated, each written, then all freed. Returns
 * the sheaf refills and flushes it took (from the slab statistics). */
static uint64_t round_refills(struct pc_cache *s, int n, uint64_t *flushes)
{
	uint64_t r0 = stat_of(s, PC_SLAB_STAT_sheaf_refill), f0 = stat_of(s, PC_SLAB_STAT_sheaf_flush);
	for (int i = 0; i < n; i++) {
		REQUIRE((v[i] = pc_cache_alloc(s)) != NULL);
		memset(v[i], i & 0xff, 8);
	}
	for (int i = 0; i < n; i++)
		pc_cache_free(s, v[i]);
	test_progress();
	if (flushes)
		*flushes = stat_of(s, PC_SLAB_STAT_sheaf_flush) - f0;
	return stat_of(s, PC_SLAB_STAT_sheaf_refill) - r0;
}

/* rseq mode: stay on one CPU (one CPU's sheaves, the barn of its node):
 * the first CPU the process may run on (unit_helpers.h). */
static bool settle(void)
{
	if (pc_sheaf_mode() != PC_SHEAF_MODE_RSEQ)
		return true;
	return pin_cpu(0);
}

static struct pc_cache *make(const char *name, long kb)
{
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, CAP);
	set_opt(PC_OPT_SLUB_BARN_SHEAVES, BASE);
	set_opt(PC_OPT_SLUB_BARN_MAX_KB, kb);
	struct pc_cache *s = pc_cache_create(name, 64, 0, NULL);
	REQUIRE(s != NULL);
	return s;
}

static void finish(struct pc_cache *s)
{
	CHECK_EQ(pc_cache_check(s), 0);
	CHECK_EQ(pc_cache_destroy(s), 0);
	CHECK_EQ(pc_slab_barn_charged(), 0); /* the destroy gave its charge back */
	set_opt(PC_OPT_SLUB_BARN_MAX_KB, -1);
	set_opt(PC_OPT_SLUB_BARN_SHEAVES, 8);
}

/* Rounds until one takes no refill (at most `most`); returns how many ran,
 * or most + 1 if none did. */
static int rounds_until_served(struct pc_cache *s, int most, uint64_t *flushes)
{
	for (int r = 1; r <= most; r++)
		if (round_refills(s, N, flushes) == 0)
			return r;
	return most + 1;
}

TEST(grows_with_demand)
{
	if (!settle())
		return;
	struct pc_cache *s = make("bb-grow", 1024);
	CHECK_EQ(info_of(s).barn_limit, BASE);
	uint64_t flushes = 0;
	int r = rounds_until_served(s, 6, &flushes);
	CHECK(r >= 2 && r <= 4); /* the first round always refills */
	CHECK_EQ(flushes, 0);     /* that round gave nothing to the slabs */
	CHECK(stat_of(s, PC_SLAB_STAT_barn_grow) > 0);
	unsigned bound = info_of(s).barn_limit;
	CHECK(bound > BASE);
	CHECK(bound <= BASE + fit(s, 1024));
	CHECK_EQ(pc_slab_barn_charged(), (bound - BASE) * per_sheaf(s));
	/* N objects in sheaves: the barn held most of them (N / CAP sheaves,
	 * less main and spare). */
	CHECK(bound >= N / CAP - 3);
	CHECK(info_of(s).sheaf_objects >= N);
	/* Steady: more rounds neither refill nor flush, nor grow further. */
	uint64_t grow = stat_of(s, PC_SLAB_STAT_barn_grow);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(round_refills(s, N, &flushes), 0);
		CHECK_EQ(flushes, 0);
	}
	CHECK_EQ(stat_of(s, PC_SLAB_STAT_barn_grow), grow);
	CHECK_EQ(info_of(s).barn_limit, bound);
	finish(s);
}

TEST(no_growth_at_zero)
{
	if (!settle())
		return;
	struct pc_cache *s = make("bb-zero", 0);
	CHECK_EQ(rounds_until_served(s, 5, NULL), 6); /* every round refilled */
	CHECK_EQ(stat_of(s, PC_SLAB_STAT_barn_grow), 0);
	CHECK_EQ(info_of(s).barn_limit, BASE);
	finish(s);
}

TEST(bounded_by_kb)
{
	if (!settle())
		return;
	struct pc_cache *s = make("bb-kb", 4);
	unsigned most = fit(s, 4);
	REQUIRE(most > 2 && most < N / CAP / 2);
	for (int i = 0; i < 6; i++)
		round_refills(s, N, NULL);
	CHECK_EQ(info_of(s).barn_limit, BASE + most);
	CHECK_EQ(pc_slab_barn_charged(), most * per_sheaf(s));
	CHECK(stat_of(s, PC_SLAB_STAT_barn_grow) > 0);
	/* Full sheaves in the barn, main and spare of this CPU or thread. */
	CHECK(info_of(s).sheaf_objects <= (long)CAP * (BASE + most + 2));
	/* The base bound raised at run time: the raise comes on top. */
	set_opt(PC_OPT_SLUB_BARN_SHEAVES, BASE + 5);
	CHECK_EQ(info_of(s).barn_limit, BASE + 5 + most);
	set_opt(PC_OPT_SLUB_BARN_SHEAVES, BASE);
	/* A second cache: the budget is spent, it stays at the base. */
	struct pc_cache *t = pc_cache_create("bb-kb2", 64, 0, NULL);
	REQUIRE(t != NULL);
	CHECK_EQ(rounds_until_served(t, 4, NULL), 5);
	CHECK_EQ(stat_of(t, PC_SLAB_STAT_barn_grow), 0);
	CHECK_EQ(info_of(t).barn_limit, BASE);
	/* The first gives its share back: the second grows. */
	pc_cache_shrink(s);
	CHECK_EQ(info_of(s).barn_limit, BASE);
	for (int i = 0; i < 4; i++)
		round_refills(t, N, NULL);
	CHECK_EQ(info_of(t).barn_limit, BASE + most);
	CHECK_EQ(pc_cache_check(t), 0);
	CHECK_EQ(pc_cache_destroy(t), 0);
	finish(s);
}

/* Grow s's barn (rounds of N) and check that it grew. */
static void grow(struct pc_cache *s)
{
	for (int i = 0; i < 4; i++)
		round_refills(s, N, NULL);
	CHECK(info_of(s).barn_limit > BASE + 10);
}

TEST(trim_resets)
{
	if (!settle())
		return;
	struct pc_cache *s = make("bb-trim", 1024);
	grow(s);
	pc_cache_shrink(s);
	CHECK_EQ(info_of(s).sheaf_objects, 0);
	CHECK_EQ(info_of(s).barn_limit, BASE);
	CHECK_EQ(pc_slab_barn_charged(), 0);
	grow(s);
	pc_slab_reclaim(); /* the out-of-memory retry */
	CHECK_EQ(info_of(s).sheaf_objects, 0);
	CHECK_EQ(info_of(s).barn_limit, BASE);
	CHECK_EQ(pc_slab_barn_charged(), 0);
	/* It grows again from there, with fresh demand. */
	grow(s);
	finish(s);
}

TEST(decay_follows_demand)
{
	if (!settle())
		return;
	struct pc_cache *s = make("bb-decay", 1024);
	grow(s);
	round_refills(s, N + 40, NULL); /* more than the bound holds: refusals */
	unsigned before = info_of(s).barn_limit;
	/* Refusals in the interval and no full sheaf left idle through it
	 * (a new barn's low-water mark is 0): the bound stays. */
	pc_slab_decay_pass();
	CHECK_EQ(info_of(s).barn_limit, before);
	/* Rounds of N: nothing refused, and about 10 full sheaves stay in the
	 * barn throughout: lowered by them, then halved. */
	round_refills(s, N, NULL);
	round_refills(s, N, NULL);
	pc_slab_decay_pass();
	unsigned lowered = info_of(s).barn_limit;
	CHECK(lowered <= BASE + (before - BASE) / 2);
	CHECK(lowered >= BASE);
	CHECK(info_of(s).sheaf_objects <= (long)CAP * (lowered + 2));
	CHECK_EQ(pc_slab_barn_charged(), (lowered - BASE) * per_sheaf(s));
	/* More demand raises it again. */
	grow(s);
	/* Unused over a whole interval: emptied, bound reset, charge back. */
	pc_slab_decay_pass();
	pc_slab_decay_pass();
	CHECK_EQ(info_of(s).barn_limit, BASE);
	CHECK_EQ(info_of(s).sheaf_objects, 0);
	CHECK_EQ(pc_slab_barn_charged(), 0);
	finish(s);
}

TEST(idle_empty_resets)
{
	if (!settle())
		return;
	struct pc_cache *s = make("bb-empty", 1024);
	grow(s);
	/* No empty sheaf kept, and every object the sheaves hold taken: the
	 * barn gives all its full sheaves away and holds none. */
	set_opt(PC_OPT_SLUB_BARN_SHEAVES, 0);
	long m = info_of(s).sheaf_objects;
	REQUIRE(m >= N && m <= 4096);
	for (long i = 0; i < m; i++)
		REQUIRE((v[i] = pc_cache_alloc(s)) != NULL);
	CHECK_EQ(info_of(s).sheaf_objects, 0);
	CHECK(info_of(s).barn_limit > 10);
	pc_slab_decay_pass(); /* used since the last look */
	pc_slab_decay_pass(); /* unused, holds no sheaf: reset all the same */
	CHECK_EQ(info_of(s).barn_limit, 0);
	CHECK_EQ(pc_slab_barn_charged(), 0);
	for (long i = 0; i < m; i++)
		pc_cache_free(s, v[i]);
	finish(s);
}

TEST(lowered_live)
{
	if (!settle())
		return;
	struct pc_cache *s = make("bb-lower", 1024);
	grow(s);
	long held = info_of(s).sheaf_objects;
	CHECK(held >= N);
	/* A smaller budget than the charge: the base bound at once. */
	set_opt(PC_OPT_SLUB_BARN_MAX_KB, 4);
	CHECK_EQ(info_of(s).barn_limit, BASE);
	round_refills(s, 8, NULL); /* in use: the pass cuts, not drains */
	pc_slab_decay_pass();
	CHECK_EQ(pc_slab_barn_charged(), 0);
	CHECK(info_of(s).sheaf_objects <= (long)CAP * (BASE + 2));
	/* Within the new budget it grows again, to what 4 KiB allow. */
	for (int i = 0; i < 6; i++)
		round_refills(s, N, NULL);
	CHECK_EQ(info_of(s).barn_limit, BASE + fit(s, 4));
	/* 0: the base at once, and the charge back at the next pass. */
	set_opt(PC_OPT_SLUB_BARN_MAX_KB, 0);
	CHECK_EQ(info_of(s).barn_limit, BASE);
	round_refills(s, 8, NULL);
	pc_slab_decay_pass();
	CHECK_EQ(pc_slab_barn_charged(), 0);
	CHECK(info_of(s).sheaf_objects <= (long)CAP * (BASE + 2));
	finish(s);
}

/* ---- many threads, tunables changed live ---------------------------------------- */
#define THREADS 16
#define OBJS 300

static struct pc_cache *live;
static _Atomic int live_done;

static void *live_body(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	void *mine[OBJS];
	unsigned rounds = scaled(40, 4);
	for (unsigned r = 0; r < rounds; r++) {
		int n = 1 + (int)((id * 131 + r * 71) % OBJS);
		for (int i = 0; i < n; i++) {
			REQUIRE((mine[i] = pc_cache_alloc(live)) != NULL);
			memset(mine[i], (int)((id + (uintptr_t)i) & 0xff), 64);
		}
		for (int i = 0; i < n; i++) {
			unsigned char *p = mine[i];
			for (int k = 0; k < 64; k++)
				if (p[k] != (unsigned char)((id + (uintptr_t)i) & 0xff)) {
					CHECK(!"object contents changed while allocated");
					break;
				}
			pc_cache_free(live, mine[i]);
		}
		test_progress();
	}
	atomic_fetch_add(&live_done, 1);
	return NULL;
}

TEST(threads_live)
{
	unpin_cpus(); /* the threads may run anywhere (the tests above pinned us) */
	live = make("bb-live", 1024);
	pthread_t t[THREADS];
	for (uintptr_t i = 0; i < THREADS; i++)
		REQUIRE(pthread_create(&t[i], NULL, live_body, (void *)i) == 0);
	static const long kb[] = { 0, 1, 16, 1024, 4 };
	static const long base[] = { 0, 1, 8, 2 };
	/* Until every thread is done (no time limit: the watchdog catches a hang). */
	for (unsigned k = 0; atomic_load(&live_done) < THREADS; k++) {
		set_opt(PC_OPT_SLUB_BARN_MAX_KB, kb[k % 5]);
		set_opt(PC_OPT_SLUB_BARN_SHEAVES, base[k % 4]);
		if (k % 3 == 0)
			pc_slab_decay_pass();
		if (k % 7 == 0)
			pc_cache_shrink(live);
		test_progress();
		sched_yield();
	}
	for (int i = 0; i < THREADS; i++)
		REQUIRE(pthread_join(t[i], NULL) == 0);
	set_opt(PC_OPT_SLUB_BARN_SHEAVES, BASE);
	finish(live); /* every object back, no charge left */
}

int main(void)
{
	watchdog_install("barn_bound: watchdog: the test hangs\n");
	watchdog_arm(60);
	pc_page_init();
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, HOUR_MS);
	set_opt(PC_OPT_STATS_ENABLE, 1);
	RUN(grows_with_demand);
	RUN(no_growth_at_zero);
	RUN(bounded_by_kb);
	RUN(trim_resets);
	RUN(decay_follows_demand);
	RUN(idle_empty_resets);
	RUN(lowered_live);
	RUN(threads_live);
	return test_report();
}
