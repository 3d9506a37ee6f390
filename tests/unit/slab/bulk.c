/*
 * tests/unit/slab/bulk.c - the bulk paths behind the sheaves (slab_alloc.c
 * refill_new; docs/sheaves.md, "2026-11-24 night, helper slabbulk"):
 *
 *  - new_slab_taken_whole: a bulk refill that wants a slab's worth or more
 *    takes each new slab whole, with no compare-and-swap: the slab is left
 *    full and unfrozen, on no list, and is not the CPU's slab; a refill of
 *    fewer objects makes the new slab the CPU slab, frozen, with the rest
 *    fresh; a refill that finds the CPU slab full deactivates it (full,
 *    unfrozen) and takes the next new slab whole. Every
 *    object is distinct, written with its own pattern and read back, and
 *    the walker (pc_cache_check) counts exactly the objects out at each
 *    step, none at the end, after which a shrink leaves no slab; the
 *    cache's slab counts are exact (that they are written under c->lock,
 *    where slab_new counts them with a load and a store, is asserted there).
 *
 *  - flush_by_slab: a sheaf of objects of three slabs, interleaved, goes
 *    back as one chain per slab (barn.c, sheaf_flush_objects: matched by
 *    address), at 256 B and at two pages (objects on tail pages), the
 *    objects still in use untouched, the walker's count exact.
 *
 * Pinned to CPU 0 (the CPU slab checked is that CPU's); skipped where it
 * cannot pin. Runs with rseq and in the fallback (bulk_norseq): the slab
 * layer is the same in both.
 */
#define _GNU_SOURCE
#include "slab/slab.h"
#include "test.h"
#include "unit/unit_helpers.h"
#include "drained.h"
#include "patterns.h"

#include <string.h>

enum { MAX = 1024 };
static void *out[MAX];

static uint64_t word_of(void *obj)
{
	return pc_load_relaxed(&slab_word(pc_slab_of(obj))->word);
}

TEST(new_slab_taken_whole)
{
	if (!pin_cpu0_or_skip())
		return;
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 0); /* the test's bulk calls only */
	struct pc_cache *s = pc_cache_create("bulk-whole", 512, 0, NULL);
	REQUIRE(s);
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	unsigned per = info.objects_per_slab;
	REQUIRE(per >= 2 && 4 * per <= MAX);
	struct pc_cache_cpu *c = &s->cpu[test_cpu(0)];

	/* Two slabs' worth: two new slabs, each taken whole. */
	CHECK_EQ(slab_alloc_bulk(s, out, 2 * per), 2 * per);
	CHECK(pc_load_relaxed(&c->slab) == NULL);
	for (unsigned i = 0; i < 2 * per; i++) {
		uint64_t w = word_of(out[i]);
		CHECK_EQ(PC_SLAB_INUSE(w), per);
		CHECK_EQ(PC_SLAB_FRESH(w), 0);
		CHECK_EQ(PC_SLAB_FROZEN(w), 0);
		CHECK(!(pc_slab_of(out[i])->flags & PC_SLAB_ON_PARTIAL));
		CHECK(pc_load_relaxed(&slab_word(pc_slab_of(out[i]))->ptr) == NULL);
	}
	CHECK(pc_slab_of(out[0]) != pc_slab_of(out[per]));
	write_and_check(s, out, 2 * per, 1);
	CHECK_EQ(pc_cache_check(s), 2 * per);

	/* Half a slab: a new CPU slab, frozen, the rest fresh. */
	unsigned half = per / 2;
	CHECK_EQ(slab_alloc_bulk(s, out + 2 * per, half), half);
	struct pc_page *cpu_slab = pc_load_relaxed(&c->slab);
	CHECK(cpu_slab != NULL && cpu_slab == pc_slab_of(out[2 * per]));
	uint64_t w = word_of(out[2 * per]);
	CHECK_EQ(PC_SLAB_INUSE(w), half);
	CHECK_EQ(PC_SLAB_FRESH(w), per - half);
	CHECK_EQ(PC_SLAB_FROZEN(w), 1);
	CHECK_EQ(pc_cache_check(s), 2 * per + half);

	/* The rest of it, then more: the CPU slab is full, deactivated (it
	 * leaves: full, unfrozen), and the next slab is new and taken whole. */
	unsigned rest = per - half;
	CHECK_EQ(slab_alloc_bulk(s, out + 2 * per + half, rest), rest);
	CHECK(pc_load_relaxed(&c->slab) == cpu_slab);
	CHECK_EQ(PC_SLAB_INUSE(word_of(out[2 * per])), per);
	CHECK_EQ(slab_alloc_bulk(s, out + 3 * per, per), per);
	CHECK(pc_load_relaxed(&c->slab) == NULL);
	w = word_of(out[2 * per]);
	CHECK_EQ(PC_SLAB_INUSE(w), per);
	CHECK_EQ(PC_SLAB_FROZEN(w), 0);
	w = word_of(out[3 * per]);
	CHECK_EQ(PC_SLAB_INUSE(w), per);
	CHECK_EQ(PC_SLAB_FRESH(w), 0);
	CHECK_EQ(PC_SLAB_FROZEN(w), 0);
	CHECK(pc_slab_of(out[3 * per]) != cpu_slab);
	write_and_check(s, out, 4 * per, 7);
	CHECK_EQ(pc_cache_check(s), 4 * per);
	/* slab_new's counts (plain adds under c->lock): four slabs, exact. */
	pc_cache_info(s, &info);
	CHECK_EQ(info.slabs, 4);
	CHECK_EQ(info.total_objects, 4 * per);

	for (unsigned i = 0; i < 4 * per; i++)
		pc_cache_free(s, out[i]);
	CHECK_EQ(pc_cache_check(s), 0);
	pc_cache_shrink(s);
	pc_cache_info(s, &info);
	CHECK_EQ(info.slabs, 0);
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, -1);
	CHECK_EQ(pc_cache_destroy(s), 0);
}

static uint64_t stat_of(struct pc_cache *s, enum pc_slab_stat k)
{
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	return info.stats[k];
}

/* A sheaf holding `each` objects of each of three slabs, interleaved (one
 * of each slab in turn), flushed: one chain per slab (three free_bulk), the
 * slabs' other objects, still in use, untouched, and every count exact. For
 * objects smaller than a page and of two pages (on tail pages too). */
static void flush_three_slabs(size_t size)
{
	set_opt(PC_OPT_STATS_ENABLE, 1);
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 0); /* the test's sheaf only */
	struct pc_cache *s = pc_cache_create("bulk-flush", size, 0, NULL);
	REQUIRE(s);
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	unsigned per = info.objects_per_slab;
	REQUIRE(per >= 4 && 3 * per <= MAX);
	/* Three slabs' worth, each taken whole: out[j * per ..] is slab j's. */
	REQUIRE(slab_alloc_bulk(s, out, 3 * per) == 3 * per);
	for (unsigned j = 0; j < 3; j++)
		for (unsigned i = 1; i < per; i++)
			REQUIRE(pc_slab_of(out[j * per + i]) == pc_slab_of(out[j * per]));
	write_and_check(s, out, 3 * per, 3);
	unsigned each = per / 2;
	struct pc_sheaf *sh = sheaf_new(s, 3 * each);
	REQUIRE(sh);
	for (unsigned i = 0; i < each; i++)
		for (unsigned j = 0; j < 3; j++)
			sh->objects[sh->count++] = out[j * per + i];
	uint64_t bulk = stat_of(s, PC_SLAB_STAT_free_bulk);
	sheaf_flush_objects(s, sh);
	CHECK_EQ(sh->count, 0);
	CHECK_EQ(stat_of(s, PC_SLAB_STAT_free_bulk) - bulk, 3);
	CHECK_EQ(pc_cache_check(s), 3 * (per - each));
	/* The objects still in use kept their contents. */
	int bad = 0;
	for (unsigned j = 0; j < 3; j++)
		for (unsigned i = each; i < per; i++)
			for (size_t b = 0; b < size; b++)
				bad += ((unsigned char *)out[j * per + i])[b] != ((j * per + i + 3) & 0xff);
	CHECK_EQ(bad, 0);
	sheaf_free(sh);
	for (unsigned j = 0; j < 3; j++)
		for (unsigned i = each; i < per; i++)
			pc_cache_free(s, out[j * per + i]);
	check_drained_and_destroy(s);
}

TEST(flush_by_slab)
{
	flush_three_slabs(256);
	flush_three_slabs(2 * PC_PAGE_SIZE);
}

int main(void)
{
	RUN(new_slab_taken_whole);
	RUN(flush_by_slab);
	return test_report();
}
