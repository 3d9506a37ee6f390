/*
 * tests/unit/slab/sheaf_past.c - a default sheaf capacity grows past the
 * default with demand, within the process's budget, and the decay takes
 * it back (sheaf.c, "Past the default"). Runs with rseq, pinned to CPU 0
 * (one CPU's sheaves and one barn in play), and on the per-thread fallback
 * (sheaf_past_norseq), where the capacity never passes the default.
 * Deterministic: vm.release_delay_ms is an hour (no pass runs by itself),
 * passes are forced (pc_slab_decay_pass), and a thread that only allocates
 * refills one sheaf from the slabs every `capacity` allocations.
 *
 *  grows_by_refills    a thread that keeps allocating 256-byte objects
 *                      doubles the capacity past the default after
 *                      PC_SHEAF_PAST_REFILLS refills at each step, up to the
 *                      top (4x the default where that is at most 64 KiB of
 *                      objects; 1 KiB keeps the default), where it stays;
 *                      the charge is exactly 2 * CPUs used * (capacity -
 *                      default) slots and pointers, and the barn's base
 *                      bound of full sheaves is scaled down by the factor.
 *  barn_counts_default_sheaves  the barn of a grown cache keeps what it
 *                      kept at the default: its bounds (the full list's
 *                      raised part included) scaled down by the growth,
 *                      each raise charged as a default sheaf.
 *  bounded_by_budget   a budget (slub.barn_max_kb) with room for one
 *                      doubling: the capacity stops there, the charge
 *                      within the budget; a budget of 0: no growth.
 *  decay_takes_back    refills between two passes keep the capacity; a
 *                      pass after none halves it, the next one brings it to
 *                      the default with no charge left; a budget lowered
 *                      below the charge halves it at each pass, in use or
 *                      not.
 *  retune_and_destroy  a tunable change (a retune) puts a grown capacity
 *                      back at the default and gives its charge back; so
 *                      does pc_cache_destroy.
 *  charged_for_cpus_used  the charge counts the CPUs that have used the
 *                      cache (one, then two), not every CPU of the machine.
 *  Every test ends with no charge left (pc_slab_sheaf_charged() == 0).
 */
#define _GNU_SOURCE
#include "slab/slab.h"
#include "test.h"
#include "unit/unit_helpers.h"

#define HOUR_MS 3600000L
#define MAX_HELD 60000

static void *held[MAX_HELD];
static unsigned nheld;

static bool rseq_mode(void)
{
	return pc_sheaf_mode() == PC_SHEAF_MODE_RSEQ;
}

static unsigned cap_of(struct pc_cache *s)
{
	return pc_load_relaxed(&s->sheaf_capacity);
}

static unsigned def_of(struct pc_cache *s)
{
	return sheaf_default_capacity(s->size);
}

/* The CPUs whose slot has had a sheaf of s (the test runs on CPU 0: one). */
static size_t cpus_used(struct pc_cache *s)
{
	size_t n = 0;
	for (unsigned c = 0; s->slots && c < os_cpu_count(); c++)
		n += s->slots[c].used;
	CHECK_EQ(n, pc_load_relaxed(&s->sheaf_cpus));
	return PC_MAX(n, (size_t)1);
}

/* What a capacity of cap is charged (sheaf.c, past_bytes): for the CPUs
 * that have used s, not every CPU of the machine. */
static size_t charge_for(struct pc_cache *s, unsigned cap)
{
	unsigned def = def_of(s);
	return cap > def ? 2 * cpus_used(s) * (cap - def) * (s->size + sizeof(void *)) : 0;
}

/* Allocate (and hold) until the capacity differs from what it was, or
 * `most` objects; returns how many were allocated. */
static unsigned alloc_until_change(struct pc_cache *s, unsigned most)
{
	unsigned cap = cap_of(s), n = 0;
	while (n < most && cap_of(s) == cap) {
		REQUIRE(nheld < MAX_HELD);
		REQUIRE((held[nheld++] = pc_cache_alloc(s)) != NULL);
		n++;
	}
	return n;
}

static struct pc_cache *make(const char *name)
{
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, -1);
	struct pc_cache *s = pc_cache_create(name, 256, 0, NULL);
	REQUIRE(s);
	return s;
}

/* Grow s to the default (demand below it: sheaf_demand_add). */
static void to_default(struct pc_cache *s)
{
	while (cap_of(s) < def_of(s))
		REQUIRE(alloc_until_change(s, 100000) < 100000);
}

static void finish(struct pc_cache *s)
{
	while (nheld)
		pc_cache_free(s, held[--nheld]);
	CHECK_EQ(pc_cache_check(s), 0);
	CHECK_EQ(pc_cache_destroy(s), 0);
	CHECK_EQ(pc_slab_sheaf_charged(), 0);
	set_opt(PC_OPT_SLUB_BARN_MAX_KB, -1);
}

TEST(grows_by_refills)
{
	set_opt(PC_OPT_SLUB_BARN_MAX_KB, 1L << 20); /* room for any CPU count */
	struct pc_cache *s = make("past-grow");
	unsigned def = def_of(s), top = pc_load_relaxed(&s->sheaf_capacity_top);
	to_default(s);
	CHECK_EQ(cap_of(s), def);
	if (!rseq_mode()) { /* the fallback: no growth past the default */
		CHECK_EQ(top, def);
		CHECK_EQ(alloc_until_change(s, 64 * def), 64 * def);
		CHECK_EQ(cap_of(s), def);
		finish(s);
		return;
	}
	CHECK_EQ(def, 64u);
	CHECK_EQ(top, 256u);
	CHECK_EQ(sheaf_top_capacity(s->size, def), top);
	/* 4x within 64 KiB of objects: 8 - 512 B; 1 KiB (2x at most) keeps it */
	CHECK_EQ(sheaf_top_capacity(8, 128), 512u);
	CHECK_EQ(sheaf_top_capacity(512, 32), 128u);
	CHECK_EQ(sheaf_top_capacity(1024, sheaf_default_capacity(1024)), sheaf_default_capacity(1024));
	for (unsigned cap = def; cap < top; cap *= 2) {
		/* PC_SHEAF_PAST_REFILLS refills of cap objects, give or take
		 * the sheaf that was being used when the count started */
		unsigned n = alloc_until_change(s, 100000);
		CHECK(n >= (PC_SHEAF_PAST_REFILLS - 1) * cap);
		CHECK(n <= (PC_SHEAF_PAST_REFILLS + 1) * cap);
		CHECK_EQ(cap_of(s), 2 * cap);
		CHECK_EQ(pc_slab_sheaf_charged(), charge_for(s, 2 * cap));
		struct pc_cache_info info;
		pc_cache_info(s, &info);
		unsigned base = (unsigned)pc_option(PC_OPT_SLUB_BARN_SHEAVES);
		CHECK_EQ(info.barn_limit, (base * def + 2 * cap - 1) / (2 * cap));
		CHECK_EQ(info.sheaf_capacity, 2 * cap);
	}
	/* at the top: it stays */
	CHECK_EQ(alloc_until_change(s, 2 * PC_SHEAF_PAST_REFILLS * top), 2 * PC_SHEAF_PAST_REFILLS * top);
	CHECK_EQ(cap_of(s), top);
	finish(s);
}

/*
 * A barn of a grown cache keeps the objects it kept at the default: its
 * bound, raised part included, counts default sheaves (scaled down by the
 * growth), and each raise is charged as a default sheaf.
 */
TEST(barn_counts_default_sheaves)
{
	if (!rseq_mode())
		return;
	set_opt(PC_OPT_SLUB_BARN_MAX_KB, 1L << 20);
	struct pc_cache *s = make("past-barn");
	unsigned def = def_of(s), top = pc_load_relaxed(&s->sheaf_capacity_top);
	to_default(s);
	while (cap_of(s) < top)
		REQUIRE(alloc_until_change(s, 100000) < 100000);
	/* a round of frees (full sheaves refused at the bound) and one of
	 * allocations (misses that raise it) */
	for (int round = 0; round < 2; round++) {
		unsigned n = nheld;
		while (nheld)
			pc_cache_free(s, held[--nheld]);
		for (unsigned i = 0; i < n; i++)
			REQUIRE((held[nheld++] = pc_cache_alloc(s)) != NULL);
	}
	REQUIRE(cap_of(s) == top);
	struct pc_barn *b = s->barn[0];
	unsigned extra = pc_load_relaxed(&b->extra);
	CHECK(extra > 0);
	CHECK_EQ(pc_slab_barn_charged(),
		 extra * (sizeof(struct pc_sheaf) + def * (s->size + sizeof(void *))));
	unsigned base = (unsigned)pc_option(PC_OPT_SLUB_BARN_SHEAVES);
	CHECK_EQ(barn_limit(s, 0), ((base + extra) * def + top - 1) / top);
	/* the empty list too: at most base default sheaves' pointer arrays */
	CHECK(pc_load_relaxed(&b->nr_empty) > 0);
	CHECK(pc_load_relaxed(&b->nr_empty) <= (base * def + top - 1) / top);
	finish(s);
	CHECK_EQ(pc_slab_barn_charged(), 0);
}

TEST(bounded_by_budget)
{
	if (!rseq_mode())
		return;
	struct pc_cache *s = make("past-budget");
	unsigned def = def_of(s);
	/* room for one doubling, not for the next */
	long kb = (long)((charge_for(s, 2 * def) + 1023) / 1024);
	REQUIRE((size_t)kb * 1024 < charge_for(s, 4 * def));
	set_opt(PC_OPT_SLUB_BARN_MAX_KB, kb);
	to_default(s);
	CHECK(alloc_until_change(s, 100000) < 100000);
	CHECK_EQ(cap_of(s), 2 * def);
	CHECK_EQ(alloc_until_change(s, 4 * PC_SHEAF_PAST_REFILLS * 2 * def),
		 4 * PC_SHEAF_PAST_REFILLS * 2 * def);
	CHECK_EQ(cap_of(s), 2 * def);
	CHECK_EQ(pc_slab_sheaf_charged(), charge_for(s, 2 * def));
	CHECK(pc_slab_sheaf_charged() <= (size_t)kb * 1024);
	finish(s);

	set_opt(PC_OPT_SLUB_BARN_MAX_KB, 0); /* no budget: no growth */
	s = make("past-none");
	to_default(s);
	CHECK_EQ(alloc_until_change(s, 4 * PC_SHEAF_PAST_REFILLS * def),
		 4 * PC_SHEAF_PAST_REFILLS * def);
	CHECK_EQ(cap_of(s), def);
	finish(s);
}

TEST(decay_takes_back)
{
	if (!rseq_mode())
		return;
	set_opt(PC_OPT_SLUB_BARN_MAX_KB, 1L << 20);
	struct pc_cache *s = make("past-decay");
	unsigned def = def_of(s);
	to_default(s);
	CHECK(alloc_until_change(s, 100000) < 100000);
	CHECK(alloc_until_change(s, 100000) < 100000);
	CHECK_EQ(cap_of(s), 4 * def);
	pc_slab_decay_pass(); /* refills since the growth: fewer than due */
	CHECK_EQ(cap_of(s), 2 * def);
	CHECK_EQ(pc_slab_sheaf_charged(), charge_for(s, 2 * def));
	/* in use: PC_SHEAF_PAST_REFILLS refills at 2 * def grow it again... */
	CHECK(alloc_until_change(s, 100000) < 100000);
	CHECK_EQ(cap_of(s), 4 * def);
	/* ...and as many at the top keep it there through a pass */
	CHECK_EQ(alloc_until_change(s, (PC_SHEAF_PAST_REFILLS + 1) * 4 * def),
		 (PC_SHEAF_PAST_REFILLS + 1) * 4 * def);
	pc_slab_decay_pass();
	CHECK_EQ(cap_of(s), 4 * def);
	pc_slab_decay_pass(); /* none since */
	CHECK_EQ(cap_of(s), 2 * def);
	pc_slab_decay_pass();
	CHECK_EQ(cap_of(s), def);
	CHECK_EQ(pc_slab_sheaf_charged(), 0);
	pc_slab_decay_pass(); /* never below the default */
	CHECK_EQ(cap_of(s), def);
	/* A budget lowered below the charge: each pass halves it, in use or
	 * not (the refills that would keep it are there). */
	CHECK(alloc_until_change(s, 100000) < 100000);
	CHECK(alloc_until_change(s, 100000) < 100000);
	CHECK_EQ(cap_of(s), 4 * def);
	CHECK_EQ(alloc_until_change(s, (PC_SHEAF_PAST_REFILLS + 1) * 4 * def),
		 (PC_SHEAF_PAST_REFILLS + 1) * 4 * def);
	set_opt(PC_OPT_SLUB_BARN_MAX_KB, 1);
	pc_slab_decay_pass();
	CHECK_EQ(cap_of(s), 2 * def);
	CHECK_EQ(pc_slab_sheaf_charged(), charge_for(s, 2 * def));
	pc_slab_decay_pass();
	CHECK_EQ(cap_of(s), def);
	CHECK_EQ(pc_slab_sheaf_charged(), 0);
	finish(s);
}

TEST(retune_and_destroy)
{
	if (!rseq_mode())
		return;
	set_opt(PC_OPT_SLUB_BARN_MAX_KB, 1L << 20);
	struct pc_cache *s = make("past-retune");
	unsigned def = def_of(s);
	to_default(s);
	CHECK(alloc_until_change(s, 100000) < 100000);
	CHECK_EQ(cap_of(s), 2 * def);
	CHECK(pc_slab_sheaf_charged() > 0);
	long minp = pc_option(PC_OPT_SLUB_MIN_PARTIAL);
	set_opt(PC_OPT_SLUB_MIN_PARTIAL, minp + 1); /* any retune */
	set_opt(PC_OPT_SLUB_MIN_PARTIAL, minp);
	CHECK_EQ(cap_of(s), def);
	CHECK_EQ(pc_slab_sheaf_charged(), 0);
	CHECK(alloc_until_change(s, 100000) < 100000);
	CHECK_EQ(cap_of(s), 2 * def);
	while (nheld)
		pc_cache_free(s, held[--nheld]);
	CHECK_EQ(pc_cache_destroy(s), 0); /* gives its charge back */
	CHECK_EQ(pc_slab_sheaf_charged(), 0);
	set_opt(PC_OPT_SLUB_BARN_MAX_KB, -1);
}

/* A grown capacity is charged for the CPUs that have used the cache: one
 * while only CPU 0 has, two once CPU 1 has had a sheaf of it too (from the
 * next change or decay pass on); the pass keeps the charge exact. (CPU 0
 * and 1: the process's first two, pin_cpu(0) and pin_cpu(1).) */
TEST(charged_for_cpus_used)
{
	if (!rseq_mode() || !pin_cpu(1) || !pin_cpu(0)) {
		fprintf(stderr, "  needs rseq and two CPUs: skipped\n");
		return;
	}
	set_opt(PC_OPT_SLUB_BARN_MAX_KB, 1L << 20);
	struct pc_cache *s = make("past-cpus");
	unsigned def = def_of(s);
	to_default(s);
	alloc_until_change(s, 64 * def);
	CHECK_EQ(cap_of(s), 2 * def);
	CHECK_EQ(pc_load_relaxed(&s->sheaf_cpus), 1);
	CHECK_EQ(pc_slab_sheaf_charged(), 2 * 1 * (size_t)def * (s->size + sizeof(void *)));
	REQUIRE(pin_cpu(1));
	for (unsigned i = 0; i < PC_SHEAF_PAST_REFILLS * 4 * def; i++) {
		REQUIRE(nheld < MAX_HELD);
		REQUIRE((held[nheld++] = pc_cache_alloc(s)) != NULL);
	}
	CHECK_EQ(pc_load_relaxed(&s->sheaf_cpus), 2);
	pc_slab_decay_pass();
	CHECK(cap_of(s) > def); /* refills since the last look: kept */
	CHECK_EQ(pc_slab_sheaf_charged(), charge_for(s, cap_of(s)));
	CHECK_EQ(pc_slab_sheaf_charged(),
		 2 * 2 * (size_t)(cap_of(s) - def) * (s->size + sizeof(void *)));
	REQUIRE(pin_cpu(0));
	finish(s);
}

int main(void)
{
	watchdog_install("sheaf_past: watchdog: the test hangs\n");
	watchdog_arm(120);
	pc_page_init();
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, HOUR_MS);
	REQUIRE(pin_cpu(0));
	pc_slab_decay_pass(); /* the next one is due in an hour: none by itself */
	RUN(grows_by_refills);
	RUN(barn_counts_default_sheaves);
	RUN(bounded_by_budget);
	RUN(decay_takes_back);
	RUN(retune_and_destroy);
	RUN(charged_for_cpus_used);
	return test_report();
}
