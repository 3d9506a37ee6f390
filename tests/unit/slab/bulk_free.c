/*
 * tests/unit/slab/bulk_free.c - the bulk paths behind the sheaves, second
 * part (docs/sheaves.md, "2026-11-25, helper slabfree"):
 *
 *  - renew_cpu_partial / renew_node_partial: a slab all of whose objects
 *    came back to its own freelist (none in use, none fresh) is taken by
 *    the next refill as a new one (slab_alloc.c, "Renewing an empty
 *    slab"): its objects handed out in address order, by index, its
 *    freelist dropped, for a slab on the CPU partial list and for one on
 *    the node partial list (kept there for min_partial; frozen by the
 *    take). The objects were freed in address order, so the old freelist
 *    (last freed first) would hand them out the other way round. A cache
 *    with a constructor keeps its freelist order (its objects are not
 *    constructed again). Objects are written and checked, the walker's
 *    count and the slab word exact at each step.
 *
 * Pinned to one CPU it may run on (the CPU structures checked are that
 * CPU's). Runs with rseq and in the fallback (_norseq): the slab layer is
 * the same in both.
 */
#define _GNU_SOURCE
#include "slab/slab.h"
#include "test.h"
#include "unit/unit_helpers.h"
#include "drained.h"

#include <string.h>

enum { MAX = 1024 };
static void *out[MAX];

/* Pin to the first CPU the thread may run on (a cpuset may lack CPU 0);
 * returns it. */
static unsigned pin_allowed_cpu(void)
{
	cpu_set_t set;
	REQUIRE(sched_getaffinity(0, sizeof(set), &set) == 0);
	for (unsigned cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set) && pin_cpu(cpu))
			return cpu;
	REQUIRE(!"no CPU to pin to");
	return 0;
}

static uint64_t word_of(void *obj)
{
	return pc_load_relaxed(&slab_word(pc_slab_of(obj))->word);
}

static void write_and_check(struct pc_cache *s, void **objs, unsigned n, unsigned salt)
{
	for (unsigned i = 0; i < n; i++)
		memset(objs[i], (int)((i + salt) & 0xff), s->object_size);
	int bad = 0;
	for (unsigned i = 0; i < n; i++)
		for (size_t b = 0; b < s->object_size; b++)
			bad += ((unsigned char *)objs[i])[b] != ((i + salt) & 0xff);
	CHECK_EQ(bad, 0);
}

static int ctor_calls;
static void count_ctor(void *obj)
{
	(void)obj;
	ctor_calls++;
}

/*
 * One slab's worth taken whole, written, freed in address order through
 * the slab layer (sheaves off): with slub.cpu_partial left alone the first
 * free freezes the slab onto this CPU's partial list; with it 0 the slab
 * goes to the node partial list and stays there empty (min_partial). Then
 * one slab's worth again: the same slab, renewed (address order) unless the
 * cache has a constructor (freelist order: the reverse).
 */
static void renew_one(bool node_partial, bool ctor)
{
	unsigned cpu = pin_allowed_cpu();
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 0); /* the test's bulk calls only */
	if (node_partial)
		set_opt(PC_OPT_SLUB_CPU_PARTIAL, 0);
	struct pc_cache *s = pc_cache_create("bulk-renew", 256, 0, ctor ? count_ctor : NULL);
	REQUIRE(s);
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	unsigned per = info.objects_per_slab;
	REQUIRE(per >= 4 && per <= MAX);
	REQUIRE(info.min_partial >= 1);
	REQUIRE(node_partial || info.cpu_partial >= 1);
	struct pc_cache_cpu *c = &s->cpu[cpu];

	REQUIRE(slab_alloc_bulk(s, out, per) == per);
	struct pc_page *slab = pc_slab_of(out[0]);
	for (unsigned i = 0; i < per; i++)
		REQUIRE(out[i] == (char *)pc_page_address(slab) + (size_t)i * s->size);
	CHECK_EQ(ctor_calls, ctor ? (int)per : 0);
	write_and_check(s, out, per, 5);
	CHECK_EQ(pc_cache_check(s), per);
	for (unsigned i = 0; i < per; i++)
		pc_cache_free(s, out[i]);
	CHECK_EQ(pc_cache_check(s), 0);
	uint64_t w = word_of(out[0]);
	CHECK_EQ(PC_SLAB_INUSE(w), 0);
	CHECK_EQ(PC_SLAB_FRESH(w), 0);
	CHECK_EQ(PC_SLAB_FROZEN(w), node_partial ? 0 : 1);
	CHECK(pc_load_relaxed(&slab_word(slab)->ptr) == out[per - 1]); /* last freed first */
	if (node_partial)
		CHECK(slab->flags & PC_SLAB_ON_PARTIAL);
	else
		CHECK(c->partial == slab);
	CHECK(pc_load_relaxed(&c->slab) == NULL);

	/* A slab's worth again: the same slab, all of it. */
	REQUIRE(slab_alloc_bulk(s, out, per) == per);
	unsigned in_order = 0, reversed = 0;
	for (unsigned i = 0; i < per; i++) {
		CHECK(pc_slab_of(out[i]) == slab);
		in_order += out[i] == (char *)pc_page_address(slab) + (size_t)i * s->size;
		reversed += out[i] == (char *)pc_page_address(slab) + (size_t)(per - 1 - i) * s->size;
	}
	CHECK_EQ(ctor ? reversed : in_order, per);
	CHECK_EQ(ctor_calls, ctor ? (int)per : 0); /* constructed once, when first handed out */
	w = word_of(out[0]);
	CHECK_EQ(PC_SLAB_INUSE(w), per);
	CHECK_EQ(PC_SLAB_FRESH(w), 0);
	CHECK_EQ(PC_SLAB_FROZEN(w), 1); /* the CPU slab now */
	CHECK(pc_load_relaxed(&slab_word(slab)->ptr) == NULL);
	CHECK(pc_load_relaxed(&c->slab) == slab);
	CHECK(!(slab->flags & PC_SLAB_ON_PARTIAL));
	write_and_check(s, out, per, 9);
	CHECK_EQ(pc_cache_check(s), per);
	pc_cache_info(s, &info);
	CHECK_EQ(info.slabs, 1);

	for (unsigned i = 0; i < per; i++)
		pc_cache_free(s, out[i]);
	ctor_calls = 0;
	if (node_partial)
		set_opt(PC_OPT_SLUB_CPU_PARTIAL, -1);
	check_drained_and_destroy(s);
}

TEST(renew_cpu_partial)
{
	renew_one(false, false);
	renew_one(false, true);
}

TEST(renew_node_partial)
{
	renew_one(true, false);
	renew_one(true, true);
}

int main(void)
{
	RUN(renew_cpu_partial);
	RUN(renew_node_partial);
	return test_report();
}
