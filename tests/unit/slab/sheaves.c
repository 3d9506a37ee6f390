/*
 * tests/unit/slab/sheaves.c - the sheaves in front of the slabs, white-box.
 * Runs with rseq (slab/sheaves) and on the per-thread fallback
 * (slab/sheaves_norseq: glibc registers no rseq area), and under
 * ThreadSanitizer (always the fallback there).
 *
 *  - the mode is reported by pc_sheaf_mode and pcmalloc_ctl_get;
 *  - frees go to the sheaf whatever slab the object is in, and the next
 *    allocation takes the last freed object back (LIFO, no slab involved);
 *  - pc_cache_shrink and pc_cache_check give every sheaf object back
 *    (sheaf_objects 0, check exact), also for sheaves of another CPU that
 *    a pinned thread filled (rseq: the membarrier flush);
 *  - slub.sheaf_capacity = 0 empties the sheaves at once and later calls
 *    bypass them; a new capacity applies to new sheaves;
 *  - the default capacity starts small (a cache's first allocation makes
 *    one slab, not a 16 KiB sheaf's worth) and doubles with demand up to
 *    the default; a capacity that is set stays fixed;
 *  - by default a slab holds a full sheaf of its class (up to max_order),
 *    so a refill at the default capacity makes one slab at most;
 *  - the barn keeps at most slub.barn_sheaves full sheaves when its bound
 *    may not grow (slub.barn_max_kb = 0; growth: barn_bound.c);
 *  - a constructor runs once per slot, never again for a recycled object;
 *  - re-entry: a signal raised (by the test hook) while a slow path holds
 *    its locks, whose handler allocates and frees from the same cache, does
 *    not deadlock; the handler's allocation is an object or NULL with
 *    ENOMEM, and its free is done when the slow path returns (check exact);
 *  - re-entry into a fast path (thread mode): a handler that runs while the
 *    thread's busy flag is set (forced: the test sets the flag as the
 *    interrupted fast path would, then raises the signal) leaves the
 *    thread's sheaf exactly as it was (count and top) and is served by the
 *    slabs (sheaf_bypass counts it); cleared, the sheaf serves again.
 *  - flushing a sheaf frees its objects one chain per slab (free_bulk
 *    counts the compare-and-swaps: one per slab when the objects of up to
 *    four slabs are interleaved, more when more slabs alternate), every
 *    object back on its slab (check exact, slabs given back by shrink).
 *  - free's guess of its object's cache (rseq: the cache of the thread's
 *    last malloc, when the object is the one it returned; slab.h,
 *    sheaf_free_slots) is only a guess: forced wrong (the object malloc
 *    returned, but another cache named), the free still goes to the
 *    object's own cache's sheaf, and the other cache's sheaf is untouched;
 *    forced right, the same.
 *  - rseq: main and spare share objects at main's slow paths (half a sheaf
 *    moves, main is left half full, no whole-sheaf trade), LIFO kept and
 *    every object accounted for; also when the thread moves to another
 *    CPU with the slot lock held (forced by the test hook).
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "slab/slab.h"
#include "test.h"
#include "unit/unit_helpers.h"
#include "drained.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>

/* The process's first and second CPUs (pin_cpu(0), pin_cpu(1)): "CPU 0"
 * and "CPU 1" below, whatever their numbers (a cpuset without CPU 0). */
#define CPU0 ((unsigned)test_cpu(0))
#define CPU1 ((unsigned)test_cpu(1))

static long sheaf_objects(struct pc_cache *s)
{
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	return info.sheaf_objects;
}

static uint64_t stat_of(struct pc_cache *s, enum pc_slab_stat k)
{
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	return info.stats[k];
}

TEST(mode_reported)
{
	int mode = pc_sheaf_mode();
	CHECK(mode == PC_SHEAF_MODE_RSEQ || mode == PC_SHEAF_MODE_THREAD);
	long v = 0;
	CHECK(pcmalloc_ctl_get("slub.sheaf_mode", &v) == 0);
	CHECK_EQ(v, mode);
	CHECK(pcmalloc_ctl_set("slub.sheaf_mode", 1) != 0); /* start-up only */
#if defined(__SANITIZE_THREAD__)
	CHECK_EQ(mode, PC_SHEAF_MODE_THREAD);
#endif
}

TEST(free_to_sheaf_any_slab)
{
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 32);
	struct pc_cache *s = pc_cache_create("sheaf-lifo", 64, 0, NULL);
	REQUIRE(s);
	enum { N = 300 }; /* several slabs */
	void *v[N];
	for (int i = 0; i < N; i++)
		REQUIRE((v[i] = pc_cache_alloc(s)) != NULL);
	CHECK_EQ(pc_cache_check(s), N);
	/* Frees in an order that hops between slabs; the last freed comes back
	 * first. Pinned, so that one CPU's sheaf sees it all (rseq). */
	bool pinned = pin_cpu(0);
	for (int i = 0; i < N; i += 7)
		pc_cache_free(s, v[i]);
	if (pinned || pc_sheaf_mode() == PC_SHEAF_MODE_THREAD) {
		void *again = pc_cache_alloc(s);
		CHECK(again == v[N - 1 - (N - 1) % 7]);
		pc_cache_free(s, again);
	}
	CHECK(sheaf_objects(s) > 0);
	for (int i = 0; i < N; i++)
		if (i % 7)
			pc_cache_free(s, v[i]);
	CHECK_EQ(pc_cache_check(s), 0); /* flushes the sheaves first */
	CHECK_EQ(sheaf_objects(s), 0);
	pc_cache_shrink(s);
	CHECK_EQ(pc_cache_destroy(s), 0);
}

/* rseq: a thread on CPU 1 fills CPU 1's sheaves; the main thread on CPU 0
 * shrinks: CPU 1's sheaves must be flushed remotely. */
static struct pc_cache *remote_cache;
static void *fill_on_cpu1(void *arg)
{
	(void)arg;
	if (!pin_cpu(1))
		return (void *)1;
	void *v[40];
	for (int i = 0; i < 40; i++)
		v[i] = pc_cache_alloc(remote_cache);
	for (int i = 0; i < 40; i++)
		pc_cache_free(remote_cache, v[i]);
	return NULL;
}

TEST(flush_other_cpu)
{
	if (pc_sheaf_mode() != PC_SHEAF_MODE_RSEQ || os_cpu_count() < 2 || !pin_cpu(0)) {
		fprintf(stderr, "  needs rseq and two CPUs: skipped\n");
		return;
	}
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 16);
	remote_cache = pc_cache_create("sheaf-remote", 128, 0, NULL);
	REQUIRE(remote_cache);
	pthread_t t;
	void *skipped;
	REQUIRE(pthread_create(&t, NULL, fill_on_cpu1, NULL) == 0);
	pthread_join(t, &skipped);
	if (skipped) {
		fprintf(stderr, "  no second CPU: skipped\n");
		return;
	}
	CHECK(pc_load_relaxed(&remote_cache->slots[CPU1].main) != &pc_sheaf_none);
	CHECK(sheaf_objects(remote_cache) > 0);
	uint64_t before = stat_of(remote_cache, PC_SLAB_STAT_sheaf_flush_all);
	pc_cache_shrink(remote_cache);
	CHECK_EQ(sheaf_objects(remote_cache), 0);
	CHECK(pc_load_relaxed(&remote_cache->slots[CPU1].main) == &pc_sheaf_none);
	CHECK(stat_of(remote_cache, PC_SLAB_STAT_sheaf_flush_all) > before);
	CHECK_EQ(pc_cache_destroy(remote_cache), 0);
}

/* Free obj (of s) with free's guess set to (last_obj, last_cache's slots); then the
 * next allocation from s on this CPU must be obj (LIFO) and other's sheaf
 * must not have grown. */
static void free_with_guess(struct pc_cache *s, struct pc_cache *other, void *obj,
			    void *last_obj, struct pc_cache *last_cache)
{
	long other_before = sheaf_objects(other);
	long s_before = sheaf_objects(s);
	pc_thread_sheaf.last_obj = last_obj;
	pc_thread_sheaf.last_slots = last_cache ? PC_SHEAF_SLOTS(last_cache) : NULL;
	pc_cache_free(s, obj);
	CHECK_EQ(sheaf_objects(s), s_before + 1);
	CHECK_EQ(sheaf_objects(other), other_before);
	CHECK(pc_cache_alloc(s) == obj);
}

TEST(free_guess_checked)
{
	if (pc_sheaf_mode() != PC_SHEAF_MODE_RSEQ || !pin_cpu(0)) {
		fprintf(stderr, "  needs rseq: skipped\n");
		return;
	}
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 16);
	struct pc_cache *a = pc_cache_create("sheaf-guess-a", 64, 0, NULL);
	struct pc_cache *b = pc_cache_create("sheaf-guess-b", 64, 0, NULL);
	REQUIRE(a && b);
	void *x = pc_cache_alloc(a), *y = pc_cache_alloc(b); /* both have CPU sheaves now */
	REQUIRE(x && y);
	free_with_guess(a, b, x, x, b);    /* the object malloc returned, the wrong cache */
	free_with_guess(a, b, x, x, a);    /* right: the guessed cache's slots */
	free_with_guess(a, b, x, y, a);    /* another object: not guessed */
	free_with_guess(b, a, y, y, NULL); /* no cache */
	pc_cache_free(a, x);
	pc_cache_free(b, y);
	CHECK_EQ(pc_cache_check(a), 0);
	CHECK_EQ(pc_cache_check(b), 0);
	CHECK_EQ(pc_cache_destroy(a), 0);
	CHECK_EQ(pc_cache_destroy(b), 0);
}

static uint32_t main_count(struct pc_cache *s, unsigned cpu)
{
	return pc_load_relaxed(&s->slots[cpu].main)->count;
}

/* rseq: a main sheaf that runs empty (full) while the spare has objects
 * (room) takes (gives) half a sheaf from (to) the spare instead of trading
 * places with it, so main is left half full (sheaf.c, move_from_spare /
 * move_to_spare), not at the other end; every object stays accounted for. */
TEST(main_and_spare_share)
{
	if (pc_sheaf_mode() != PC_SHEAF_MODE_RSEQ || !pin_cpu(0)) {
		fprintf(stderr, "  needs rseq: skipped\n");
		return;
	}
	enum { CAP = 16, N = 3 * CAP };
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, CAP);
	struct pc_cache *s = pc_cache_create("sheaf-share", 64, 0, NULL);
	REQUIRE(s);
	void *v[N];
	for (int i = 0; i < N; i++)
		REQUIRE((v[i] = pc_cache_alloc(s)) != NULL);
	pc_cache_shrink(s); /* no sheaf on any CPU now */
	REQUIRE(s->slots[CPU0].spare == NULL);
	/* CAP + 1 frees: main fills, then a fresh main takes the last one and
	 * the full one becomes the spare (no spare to share with yet). */
	for (int i = 0; i <= CAP; i++)
		pc_cache_free(s, v[i]);
	CHECK_EQ(main_count(s, CPU0), 1);
	REQUIRE(s->slots[CPU0].spare != NULL);
	CHECK_EQ(s->slots[CPU0].spare->count, CAP);
	uint64_t moves = stat_of(s, PC_SLAB_STAT_sheaf_move);
	uint64_t swaps = stat_of(s, PC_SLAB_STAT_sheaf_swap);
	/* Main runs empty: half the spare comes over, the pop takes one. */
	CHECK(pc_cache_alloc(s) == v[CAP]);
	CHECK(pc_cache_alloc(s) == v[CAP - 1]); /* the spare's top, now main's */
	CHECK_EQ(main_count(s, CPU0), CAP / 2 - 1);
	CHECK_EQ(s->slots[CPU0].spare->count, CAP / 2);
	CHECK_EQ(stat_of(s, PC_SLAB_STAT_sheaf_move), moves + 1);
	/* Main runs full: half of it goes to the spare, then the push. */
	for (int i = 0; i < CAP / 2 + 1; i++)
		pc_cache_free(s, v[CAP + 1 + i]);
	CHECK_EQ(main_count(s, CPU0), CAP);
	pc_cache_free(s, v[CAP + 2 + CAP / 2]);
	CHECK_EQ(main_count(s, CPU0), CAP / 2 + 1);
	CHECK_EQ(s->slots[CPU0].spare->count, CAP);
	CHECK_EQ(stat_of(s, PC_SLAB_STAT_sheaf_move), moves + 2);
	CHECK_EQ(stat_of(s, PC_SLAB_STAT_sheaf_swap), swaps); /* no trade */
	CHECK(pc_cache_alloc(s) == v[CAP + 2 + CAP / 2]); /* LIFO still */
	pc_cache_free(s, v[CAP + 2 + CAP / 2]);
	CHECK_EQ(sheaf_objects(s), (long)(main_count(s, CPU0) + s->slots[CPU0].spare->count));
	for (int i = CAP + 3 + CAP / 2; i < N; i++)
		pc_cache_free(s, v[i]);
	pc_cache_free(s, v[CAP - 1]);
	pc_cache_free(s, v[CAP]);
	CHECK_EQ(pc_cache_check(s), 0); /* every object back, exactly once */
	CHECK_EQ(pc_cache_destroy(s), 0);
}

static unsigned migrate_to;
static void migrate_hook(struct pc_cache *s)
{
	(void)s;
	pc_store_relaxed(&pc_sheaf_test_hook, NULL); /* once */
	REQUIRE(pin_cpu(migrate_to));
}

/* rseq: the moves run on the CPU the caller runs on, which may no longer be
 * the locked slot's (the test hook, called with slot 0's lock held, moves
 * the thread to CPU 1): an allocation whose move finds CPU 1's main full
 * falls back to the trade (whose compare-and-store fails elsewhere, so the
 * spare stays the spare); a free moves from CPU 1's main into slot 0's
 * spare and pushes onto CPU 1's main. Every object accounted for. */
TEST(move_after_migration)
{
	if (pc_sheaf_mode() != PC_SHEAF_MODE_RSEQ || os_cpu_count() < 2 || !pin_cpu(1) ||
	    !pin_cpu(0)) {
		fprintf(stderr, "  needs rseq and two CPUs: skipped\n");
		return;
	}
	enum { CAP = 16, N = 4 * CAP };
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, CAP);
	struct pc_cache *s = pc_cache_create("sheaf-migrate", 64, 0, NULL);
	REQUIRE(s);
	void *v[N];
	for (int i = 0; i < N; i++)
		REQUIRE((v[i] = pc_cache_alloc(s)) != NULL);
	pc_cache_shrink(s);
	int next = 0;
	REQUIRE(pin_cpu(1));
	for (int i = 0; i < CAP; i++)
		pc_cache_free(s, v[next++]);
	CHECK_EQ(main_count(s, CPU1), CAP);                 /* CPU 1: main full */
	REQUIRE(pin_cpu(0));
	for (int i = 0; i <= CAP; i++)
		pc_cache_free(s, v[next++]);
	REQUIRE(s->slots[CPU0].spare != NULL);
	CHECK_EQ(s->slots[CPU0].spare->count, CAP);         /* CPU 0: spare full, */
	void *a = pc_cache_alloc(s);
	CHECK_EQ(main_count(s, CPU0), 0);                   /* main empty */
	migrate_to = 1;
	pc_store_relaxed(&pc_sheaf_test_hook, migrate_hook);
	void *b = pc_cache_alloc(s);                     /* slow path, moves to CPU 1 */
	CHECK(b != NULL && b != a);
	CHECK_EQ(main_count(s, CPU1), CAP);                 /* no room there: untouched */
	CHECK_EQ(main_count(s, CPU0), 0);
	REQUIRE(s->slots[CPU0].spare != NULL);
	CHECK_EQ(s->slots[CPU0].spare->count, CAP - 1);     /* b came from it */
	void *c[CAP / 2];
	for (int i = 0; i < CAP / 2; i++)                /* on CPU 1 now */
		REQUIRE((c[i] = pc_cache_alloc(s)) != NULL);
	CHECK_EQ(main_count(s, CPU1), CAP / 2);
	REQUIRE(pin_cpu(0));
	for (int i = 0; i < CAP; i++)
		pc_cache_free(s, v[next++]);
	CHECK_EQ(main_count(s, CPU0), CAP);                 /* CPU 0: main full, spare room 1 */
	migrate_to = 1;
	pc_store_relaxed(&pc_sheaf_test_hook, migrate_hook);
	pc_cache_free(s, v[next++]);                     /* slow path, moves to CPU 1 */
	CHECK_EQ(s->slots[CPU0].spare->count, CAP);         /* one from CPU 1's main */
	CHECK_EQ(main_count(s, CPU1), CAP / 2);             /* one out, the free in */
	CHECK_EQ(main_count(s, CPU0), CAP);
	pc_cache_free(s, a);
	pc_cache_free(s, b);
	for (int i = 0; i < CAP / 2; i++)
		pc_cache_free(s, c[i]);
	while (next < N)
		pc_cache_free(s, v[next++]);
	REQUIRE(pin_cpu(0));
	CHECK_EQ(pc_cache_check(s), 0); /* every object back, exactly once */
	CHECK_EQ(pc_cache_destroy(s), 0);
}

static void grow_to_default(struct pc_cache *s);

TEST(capacity_changes)
{
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 8);
	struct pc_cache *s = pc_cache_create("sheaf-cap", 32, 0, NULL);
	REQUIRE(s);
	void *v[64];
	for (int i = 0; i < 64; i++)
		v[i] = pc_cache_alloc(s);
	for (int i = 0; i < 64; i++)
		pc_cache_free(s, v[i]);
	CHECK(sheaf_objects(s) > 0);
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 0); /* off: flushed now */
	CHECK_EQ(sheaf_objects(s), 0);
	uint64_t bypass = stat_of(s, PC_SLAB_STAT_sheaf_bypass);
	for (int i = 0; i < 64; i++)
		v[i] = pc_cache_alloc(s);
	for (int i = 0; i < 64; i++)
		pc_cache_free(s, v[i]);
	CHECK_EQ(sheaf_objects(s), 0);
	CHECK_EQ(stat_of(s, PC_SLAB_STAT_sheaf_bypass) - bypass, 128);
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 24);
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	CHECK_EQ(info.sheaf_capacity, 24);
	for (int i = 0; i < 64; i++)
		v[i] = pc_cache_alloc(s);
	for (int i = 0; i < 64; i++)
		pc_cache_free(s, v[i]);
	CHECK(sheaf_objects(s) > 0);
	CHECK_EQ(pc_cache_check(s), 0);
	/* Back to the default: the start capacity (at least what it was, 24),
	 * which demand then doubles up to the default (sheaf.c). */
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, -1);
	pc_cache_info(s, &info);
	unsigned def = sheaf_default_capacity(info.size);
	CHECK_EQ(info.sheaf_capacity, PC_MAX(sheaf_start_capacity(info.size, def), 24u));
	if (pc_sheaf_mode() == PC_SHEAF_MODE_RSEQ) /* the fallback starts at def */
		CHECK(info.sheaf_capacity < def);
	grow_to_default(s);
	CHECK_EQ(pc_cache_destroy(s), 0);
}

/*
 * The default capacity starts at a byte budget and grows with demand: a
 * cache's first allocation refills a small sheaf, so the cache makes one
 * slab, not the slabs of a whole 16 KiB sheaf (4 slabs of 96-byte objects
 * before: docs/footprint.md); repeated refills and frees double it up to
 * the default. A capacity that is set stays fixed.
 */
static void grow_to_default(struct pc_cache *s)
{
	static void *v[1024];
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	unsigned def = sheaf_default_capacity(info.size);
	for (int round = 0; round < 64 && info.sheaf_capacity < def; round++) {
		for (int i = 0; i < 1024; i++)
			REQUIRE((v[i] = pc_cache_alloc(s)) != NULL);
		for (int i = 0; i < 1024; i++)
			pc_cache_free(s, v[i]);
		pc_cache_info(s, &info);
	}
	CHECK_EQ(info.sheaf_capacity, def);
	CHECK_EQ(pc_cache_check(s), 0);
}

TEST(capacity_starts_small)
{
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, -1);
	struct pc_cache *s = pc_cache_create("sheaf-start", 96, 0, NULL);
	REQUIRE(s);
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	unsigned def = sheaf_default_capacity(info.size), start = sheaf_start_capacity(info.size, def);
	bool thread_mode = pc_sheaf_mode() == PC_SHEAF_MODE_THREAD;
	CHECK_EQ(def, 128u);
	/* The fallback starts at the default (sheaf.c, sheaf_start_capacity). */
	CHECK_EQ(start, thread_mode ? def : 2048u / 96);
	CHECK_EQ(info.sheaf_capacity, start);
	void *p = pc_cache_alloc(s);
	REQUIRE(p);
	pc_cache_info(s, &info);
	if (!thread_mode)
		CHECK_EQ(info.slabs, 1); /* one refill of `start` objects: one slab */
	CHECK_EQ(info.sheaf_objects, (long)start - 1);
	pc_cache_free(s, p);
	grow_to_default(s);
	CHECK_EQ(pc_cache_destroy(s), 0);
	/* Set: fixed, whatever the demand. */
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 16);
	s = pc_cache_create("sheaf-fixed", 96, 0, NULL);
	REQUIRE(s);
	static void *v[1024];
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < 1024; i++)
			REQUIRE((v[i] = pc_cache_alloc(s)) != NULL);
		for (int i = 0; i < 1024; i++)
			pc_cache_free(s, v[i]);
	}
	pc_cache_info(s, &info);
	CHECK_EQ(info.sheaf_capacity, 16u);
	CHECK_EQ(pc_cache_destroy(s), 0);
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, -1);
}

/* The objects per slab of size with slub.min_objects set to n (then -1 again). */
static unsigned objects_for(size_t size, unsigned n)
{
	unsigned objects;
	set_opt(PC_OPT_SLUB_MIN_OBJECTS, (long)n);
	pc_slab_calculate_order(size, &objects);
	set_opt(PC_OPT_SLUB_MIN_OBJECTS, -1);
	return objects;
}

/*
 * By default a slab holds at least one full sheaf of its class, as far as
 * slub.max_order allows (cache.c, min_objects_for): a refill at the default
 * capacity then takes the objects of one new slab, not of 2-4 (256 B: 16
 * objects per slab and 64 per sheaf before, so seed 002's Tests A and D
 * made, and gave back, a slab every 16 objects; docs/sheaves.md). A set
 * capacity, or a set slub.min_objects, gives that many; sheaves off, and
 * the sheaf caches (which have none), give SLUB's count.
 */
struct internal_list {
	struct pc_cache **caches;
	unsigned *n;
};

/* Under slab_mutex: note the sheaf caches (checked once it is released). */
static void collect_internal(struct pc_cache *s, void *arg)
{
	struct internal_list *l = arg;
	if (s->internal && *l->n < 16)
		l->caches[(*l->n)++] = s;
}

TEST(slab_holds_a_sheaf)
{
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, -1);
	static const size_t sizes[] = { 8, 64, 96, 128, 256, 512, 1024, 2048, 8192 };
	size_t max_slab = PC_PAGE_SIZE << (os_cpu_count() >= 32 ? 4 : 3); /* slub.max_order -1 */
	struct pc_cache_info info;
	for (size_t i = 0; i < PC_ARRAY_SIZE(sizes); i++) {
		struct pc_cache *s = pc_cache_create("sheaf-slab", sizes[i], 0, NULL);
		REQUIRE(s);
		pc_cache_info(s, &info);
		size_t want = PC_MIN((size_t)sheaf_default_capacity(info.size), max_slab / info.size);
		if (info.objects_per_slab < want)
			fprintf(stderr, "  size %zu: %u objects per slab, a sheaf is %zu\n", info.size,
				info.objects_per_slab, want);
		CHECK(info.objects_per_slab >= want);
		CHECK_EQ(pc_cache_destroy(s), 0);
	}
	/* At the default capacity, one new slab per refill from the slabs (no
	 * budget: a capacity grown past the default, sheaf_past.c, takes more
	 * than one slab per refill). */
	set_opt(PC_OPT_SLUB_BARN_MAX_KB, 0);
	struct pc_cache *s = pc_cache_create("sheaf-slab", 256, 0, NULL);
	REQUIRE(s);
	grow_to_default(s);
	pc_cache_shrink(s); /* no sheaf, no barn, no slab left: refills make slabs */
	pc_cache_info(s, &info);
	unsigned cap = info.sheaf_capacity;
	uint64_t made = info.stats[PC_SLAB_STAT_slab_alloc], refills = info.stats[PC_SLAB_STAT_sheaf_refill];
	static void *v[1024];
	for (int i = 0; i < 1024; i++)
		REQUIRE((v[i] = pc_cache_alloc(s)) != NULL);
	pc_cache_info(s, &info);
	made = info.stats[PC_SLAB_STAT_slab_alloc] - made;
	refills = info.stats[PC_SLAB_STAT_sheaf_refill] - refills;
	CHECK(refills >= 1024 / cap);
	if (made > refills)
		fprintf(stderr, "  %llu slabs made for %llu refills\n", (unsigned long long)made,
			(unsigned long long)refills);
	CHECK(made <= refills);
	for (int i = 0; i < 1024; i++)
		pc_cache_free(s, v[i]);
	CHECK_EQ(pc_cache_destroy(s), 0);
	set_opt(PC_OPT_SLUB_BARN_MAX_KB, -1);
	/* A set capacity: a slab holds that many, and SLUB's 4 * (fls(CPUs) + 1)
	 * at least (on 2 CPUs 12: 32 and 16 objects of 256 B). */
	unsigned slub = 4;
	for (unsigned n = os_cpu_count(); n != 0; n >>= 1)
		slub += 4;
	s = pc_cache_create("sheaf-slab", 256, 0, NULL);
	REQUIRE(s);
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 32);
	pc_cache_info(s, &info);
	CHECK_EQ(info.objects_per_slab, objects_for(256, PC_MAX(slub, 32u)));
	CHECK(info.objects_per_slab >= 32);
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 8);
	pc_cache_info(s, &info);
	CHECK_EQ(info.objects_per_slab, objects_for(256, PC_MAX(slub, 8u)));
	/* A set slub.min_objects wins over the sheaf. */
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, -1);
	set_opt(PC_OPT_SLUB_MIN_OBJECTS, (long)slub);
	pc_cache_info(s, &info);
	CHECK_EQ(info.objects_per_slab, objects_for(256, slub));
	set_opt(PC_OPT_SLUB_MIN_OBJECTS, -1);
	pc_cache_info(s, &info);
	CHECK_EQ(info.objects_per_slab, objects_for(256, PC_MAX(slub, sheaf_default_capacity(256))));
	CHECK(info.objects_per_slab >= sheaf_default_capacity(256));
	CHECK_EQ(pc_cache_destroy(s), 0);
	/* The sheaf caches have no sheaves: SLUB's count (review item 2). */
	struct pc_cache *internal[16];
	unsigned n = 0;
	pc_cache_foreach(collect_internal, &(struct internal_list){ internal, &n });
	CHECK_EQ(n, 8u); /* sheaf-4 .. sheaf-512 */
	for (unsigned i = 0; i < n; i++) {
		pc_cache_info(internal[i], &info);
		CHECK_EQ(info.objects_per_slab, objects_for(info.size, slub));
	}
}

/*
 * A steady loop of k allocations and k frees with k above a small capacity
 * is served by moves, swaps and barn exchanges, never a refill: those count
 * as demand too, so the capacity grows out of the loop's way (counting only
 * refills left 1 KiB objects in bursts of 4 at a capacity of 2-8 for good,
 * a slow path every few operations: review of the footprint change).
 */
static uint64_t slow_paths(struct pc_cache *s)
{
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	return info.stats[PC_SLAB_STAT_sheaf_move] + info.stats[PC_SLAB_STAT_sheaf_swap] +
	       info.stats[PC_SLAB_STAT_sheaf_refill] + info.stats[PC_SLAB_STAT_barn_get] +
	       info.stats[PC_SLAB_STAT_barn_put];
}

TEST(steady_loop_grows)
{
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, -1);
	struct pc_cache *s = pc_cache_create("sheaf-steady", 1024, 0, NULL);
	REQUIRE(s);
	void *v[4];
	uint64_t before = 0;
	for (int round = 0; round < 4000; round++) {
		if (round == 3000) /* after the warm-up: what the loop still costs */
			before = slow_paths(s);
		for (int i = 0; i < 4; i++)
			REQUIRE((v[i] = pc_cache_alloc(s)) != NULL);
		for (int i = 0; i < 4; i++)
			pc_cache_free(s, v[i]);
	}
	/* 8000 operations: a slow path every few of them before the fix */
	uint64_t slow = slow_paths(s) - before;
	if (slow > 20)
		fprintf(stderr, "  %llu sheaf slow paths in 1000 rounds\n", (unsigned long long)slow);
	CHECK(slow <= 20);
	CHECK_EQ(pc_cache_destroy(s), 0);
}

TEST(barn_bounded)
{
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 4);
	set_opt(PC_OPT_SLUB_BARN_SHEAVES, 2);
	set_opt(PC_OPT_SLUB_BARN_MAX_KB, 0); /* the bound may not grow */
	struct pc_cache *s = pc_cache_create("sheaf-barn", 48, 0, NULL);
	REQUIRE(s);
	enum { N = 400 };
	static void *v[N];
	for (int i = 0; i < N; i++)
		v[i] = pc_cache_alloc(s);
	for (int i = 0; i < N; i++)
		pc_cache_free(s, v[i]);
	/* main + spare per CPU (rseq) or one per thread, and 2 full per barn */
	long bound = 4L * (2 * (long)os_cpu_count() + 2 * (long)pc_node_count());
	CHECK(sheaf_objects(s) <= bound);
	CHECK(sheaf_objects(s) > 0);
	CHECK_EQ(pc_cache_check(s), 0);
	set_opt(PC_OPT_SLUB_BARN_SHEAVES, 8);
	set_opt(PC_OPT_SLUB_BARN_MAX_KB, -1);
	CHECK_EQ(pc_cache_destroy(s), 0);
}

/* A sheaf of the test's own holding objects of `nslabs` slabs (taken from
 * by[], objects grouped by slab), in round-robin order of the slabs, `per`
 * of each; flushed: returns the free_bulk count it took. */
static uint64_t flush_interleaved(struct pc_cache *s, void *(*by)[64], unsigned nslabs,
				  unsigned per)
{
	struct pc_sheaf *sh = sheaf_new(s, nslabs * per);
	REQUIRE(sh);
	for (unsigned i = 0; i < per; i++)
		for (unsigned j = 0; j < nslabs; j++)
			sh->objects[sh->count++] = by[j][i];
	uint64_t bulk = stat_of(s, PC_SLAB_STAT_free_bulk);
	uint64_t slow = stat_of(s, PC_SLAB_STAT_free_slowpath);
	sheaf_flush_objects(s, sh);
	CHECK_EQ(sh->count, 0);
	CHECK_EQ(stat_of(s, PC_SLAB_STAT_free_slowpath) - slow, nslabs * per);
	sheaf_free(sh);
	return stat_of(s, PC_SLAB_STAT_free_bulk) - bulk;
}

TEST(flush_one_chain_per_slab)
{
	set_opt(PC_OPT_STATS_ENABLE, 1);
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 0); /* the test's sheaves only */
	struct pc_cache *s = pc_cache_create("sheaf-bulk", 256, 0, NULL);
	REQUIRE(s);
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	unsigned per = info.objects_per_slab; /* 16 per 4 KiB slab, or more */
	REQUIRE(per >= 16);
	/* 16 objects of each of 10 slabs. */
	enum { SLABS = 10, EACH = 16, N = 2000 };
	static void *all[N], *by[SLABS][64];
	static struct pc_page *slab_of[SLABS];
	unsigned got[SLABS] = { 0 }, nslab = 0;
	for (int i = 0; i < N; i++) {
		REQUIRE((all[i] = pc_cache_alloc(s)) != NULL);
		struct pc_page *sl = pc_slab_of(all[i]);
		unsigned j = 0;
		while (j < nslab && slab_of[j] != sl)
			j++;
		if (j == nslab && nslab < SLABS)
			slab_of[nslab++] = sl;
		if (j < nslab && got[j] < EACH) {
			by[j][got[j]++] = all[i];
			all[i] = NULL;
		}
	}
	for (unsigned j = 0; j < SLABS; j++)
		REQUIRE(got[j] == EACH);
	long live = N - SLABS * EACH;
	/* Four slabs alternating: one chain (one compare-and-swap) each. */
	CHECK_EQ(flush_interleaved(s, by, 4, EACH), 4);
	CHECK_EQ(pc_cache_check(s), live + (SLABS - 4) * EACH);
	/* Six alternating: each object closes the oldest chain, so every
	 * object is a chain of one; still every object back. */
	CHECK_EQ(flush_interleaved(s, by + 4, 6, EACH), 6 * EACH);
	CHECK_EQ(pc_cache_check(s), live);
	for (int i = 0; i < N; i++)
		if (all[i])
			pc_cache_free(s, all[i]);
	check_drained_and_destroy(s);
}

static _Atomic uint64_t ctor_calls;
static void ctor(void *p)
{
	memset(p, 0xAB, 40);
	pc_add_relaxed(&ctor_calls, 1);
}

TEST(constructor_once_per_slot)
{
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 16);
	struct pc_cache *s = pc_cache_create("sheaf-ctor", 40, 0, ctor);
	REQUIRE(s);
	void *v[200];
	int bad = 0;
	for (int round = 0; round < 5; round++) {
		for (int i = 0; i < 200; i++) {
			v[i] = pc_cache_alloc(s);
			for (int k = 0; k < 40; k++)
				bad += ((unsigned char *)v[i])[k] != 0xAB;
		}
		for (int i = 0; i < 200; i++)
			pc_cache_free(s, v[i]); /* constructed state kept: untouched */
	}
	CHECK_EQ(bad, 0);
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	/* Once per object taken from the slabs: every object but the fresh
	 * ones, which are constructed when first taken (slab_alloc.c). */
	CHECK(info.fresh_objects >= 0 && info.fresh_objects < info.total_objects);
	CHECK_EQ(pc_load_relaxed(&ctor_calls), (uint64_t)(info.total_objects - info.fresh_objects));
	CHECK_EQ(pc_cache_check(s), 0);
	CHECK_EQ(pc_cache_destroy(s), 0);
}

/* ---- re-entry from a signal handler ---------------------------------------------------- */
static struct pc_cache *reentry_cache;
static void *held_by_handler;
static _Atomic int handler_allocs, handler_nulls, hook_fired;

static void reentry_handler(int sig)
{
	(void)sig;
	int saved = errno;
	void *p = pc_cache_alloc(reentry_cache);
	if (p) {
		pc_add_relaxed(&handler_allocs, 1);
		pc_cache_free(reentry_cache, p);
	} else {
		pc_add_relaxed(&handler_nulls, errno == ENOMEM);
	}
	if (held_by_handler) { /* a free while the slow path holds its locks */
		pc_cache_free(reentry_cache, held_by_handler);
		held_by_handler = NULL;
	}
	errno = saved;
}

static void raise_in_slow_path(struct pc_cache *s)
{
	if (s == reentry_cache && pc_load_relaxed(&hook_fired) < 4) {
		pc_add_relaxed(&hook_fired, 1);
		raise(SIGUSR1); /* delivered before raise returns, locks held */
	}
}

TEST(signal_handler_reenters_slow_path)
{
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 8);
	reentry_cache = pc_cache_create("sheaf-reentry", 96, 0, NULL);
	REQUIRE(reentry_cache);
	signal(SIGUSR1, reentry_handler);
	alarm(60); /* the watchdog fails a self-deadlock */
	void *v[64];
	for (int i = 0; i < 64; i++)
		v[i] = pc_cache_alloc(reentry_cache);
	held_by_handler = v[63];
	pc_store_relaxed(&pc_sheaf_test_hook, raise_in_slow_path);
	for (int i = 0; i < 63; i++) /* frees that fill sheaves: slow paths */
		pc_cache_free(reentry_cache, v[i]);
	for (int i = 0; i < 63; i++) /* allocations that empty them: slow paths */
		v[i] = pc_cache_alloc(reentry_cache);
	pc_store_relaxed(&pc_sheaf_test_hook, NULL);
	alarm(0);
	signal(SIGUSR1, SIG_DFL);
	CHECK_EQ(pc_load_relaxed(&hook_fired), 4);
	CHECK(held_by_handler == NULL);
	CHECK_EQ(pc_load_relaxed(&handler_allocs) + pc_load_relaxed(&handler_nulls), 4);
	for (int i = 0; i < 63; i++)
		CHECK(v[i] != NULL);
	CHECK_EQ(pc_cache_check(reentry_cache), 63); /* v[63] was freed, once */
	for (int i = 0; i < 63; i++)
		pc_cache_free(reentry_cache, v[i]);
	CHECK_EQ(pc_cache_check(reentry_cache), 0);
}

/* A handler that interrupts a thread-mode fast path, forced: the flag is set
 * by hand where the fast path would have set it, and the signal raised (it
 * is delivered before raise returns). */
static struct pc_sheaf *busy_sheaf;
static uint32_t busy_count_in_handler;
static void *busy_top_in_handler;

static void busy_handler(int sig)
{
	(void)sig;
	void *p = pc_cache_alloc(reentry_cache);
	pc_add_relaxed(&handler_allocs, p != NULL);
	pc_cache_free(reentry_cache, p);
	void *q = pc_cache_alloc(reentry_cache);
	pc_cache_free(reentry_cache, q);
	busy_count_in_handler = busy_sheaf->count;
	busy_top_in_handler = busy_sheaf->objects[busy_sheaf->count - 1];
}

TEST(signal_handler_in_thread_fast_path)
{
	if (pc_sheaf_mode() != PC_SHEAF_MODE_THREAD) {
		printf("  (skipped: the rseq mode; sheaves_norseq runs it)\n");
		return;
	}
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 8);
	reentry_cache = pc_cache_create("sheaf-busy", 96, 0, NULL);
	REQUIRE(reentry_cache);
	void *v[4];
	for (int i = 0; i < 4; i++)
		v[i] = pc_cache_alloc(reentry_cache);
	for (int i = 0; i < 4; i++)
		pc_cache_free(reentry_cache, v[i]); /* the sheaf holds v[0..3] */
	busy_sheaf = pc_thread_sheaves[reentry_cache->tindex];
	REQUIRE(busy_sheaf->count >= 1);
	uint32_t count = busy_sheaf->count;
	void *top = busy_sheaf->objects[count - 1];
	CHECK(top == v[3]);
	uint64_t bypass = stat_of(reentry_cache, PC_SLAB_STAT_sheaf_bypass);
	pc_store_relaxed(&handler_allocs, 0);
	signal(SIGUSR1, busy_handler);
	pc_thread_sheaf_busy = 1; /* as the interrupted fast path sets it */
	raise(SIGUSR1);
	pc_thread_sheaf_busy = 0;
	signal(SIGUSR1, SIG_DFL);
	CHECK_EQ(pc_load_relaxed(&handler_allocs), 1);
	CHECK_EQ(busy_count_in_handler, count); /* the handler left it alone */
	CHECK(busy_top_in_handler == top);
	CHECK(pc_thread_sheaves[reentry_cache->tindex] == busy_sheaf);
	CHECK_EQ(busy_sheaf->count, count);
	CHECK_EQ(stat_of(reentry_cache, PC_SLAB_STAT_sheaf_bypass) - bypass, 4);
	void *again = pc_cache_alloc(reentry_cache); /* flag clear: the sheaf serves */
	CHECK(again == top);
	CHECK_EQ(busy_sheaf->count, count - 1);
	pc_cache_free(reentry_cache, again);
	CHECK_EQ(pc_cache_check(reentry_cache), 0);
	CHECK_EQ(pc_cache_destroy(reentry_cache), 0);
	pc_store_relaxed(&handler_allocs, 0);
}

int main(void)
{
	watchdog_install("sheaves: watchdog: the test hangs\n");
	pc_page_init();
	set_opt(PC_OPT_STATS_ENABLE, 1); /* the checks read counters */
	RUN(mode_reported);
	RUN(signal_handler_in_thread_fast_path);
	RUN(free_to_sheaf_any_slab);
	RUN(flush_other_cpu);
	RUN(free_guess_checked);
	RUN(main_and_spare_share);
	RUN(move_after_migration);
	RUN(capacity_changes);
	RUN(capacity_starts_small);
	RUN(slab_holds_a_sheaf);
	RUN(steady_loop_grows);
	RUN(barn_bounded);
	RUN(flush_one_chain_per_slab);
	RUN(constructor_once_per_slot);
	RUN(signal_handler_reenters_slow_path);
	return test_report();
}
