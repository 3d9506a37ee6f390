/*
 * tests/unit/slab/bulk_free.c - the free side's bulk paths behind the
 * sheaves (docs/sheaves.md, "2026-11-25, helper slabfree"):
 *
 *  - whole_slabs: a flushed sheaf that holds every object of two full slabs
 *    and half of a third, interleaved (barn.c, "Whole slabs"): the two
 *    whole ones go back to the page allocator with no free pointer written
 *    (their objects' bytes still the program's: read before the page
 *    layer could reuse them, vm.release_delay_ms an hour) and no list, the
 *    third is linked as before (one chain, frozen onto the CPU partial
 *    list, its other objects untouched); the walker's count, the slab count
 *    and the chains (free_bulk) exact. With slub.min_partial 1 and the
 *    node keeping none, the whole-slab path declines: the first emptied
 *    slab goes the ordinary way, listed on the node (its objects linked),
 *    the second goes back whole.
 *
 *  - carry: with a barn that keeps no full sheaf (slub.barn_sheaves and
 *    slub.barn_max_kb 0), a sheaf of the first halves of two full slabs
 *    given to barn_put is not flushed but kept as the barn's carry (barn.c,
 *    "The carry"): its objects counted with the barn's (the walker counts
 *    only the program's), nothing linked, the slabs still full; the next
 *    sheaf, the second halves, goes back with the carry as one run: both
 *    slabs whole, back to the page allocator unwritten, no carry left. A
 *    carry is flushed by a shrink (barn_drain) and by a decay pass.
 *    carry_then_others: the carry's next flush with other slabs' objects,
 *    one slab not full among them: the carried chains go back linked, the
 *    new carry is exactly the new kept chains' objects.
 *    evicted_chain_not_carried: a kept chain whose slab gave back an
 *    evicted chain earlier in the run carries its own objects only (a
 *    test hook plays another CPU's refill; review of slabfree, item 1).
 *
 * Pinned to the first CPU of the process's mask (the CPU structures
 * checked are that CPU's; unit_helpers.h), skipped where it cannot pin.
 * Runs with rseq and in the fallback (_norseq): the slab layer is the same
 * in both. Also under ThreadSanitizer (one thread: the flush and barn code
 * as the other builds run it):
 * PC_TEST_LABELS: tsan
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

static uint64_t stat_of(struct pc_cache *s, enum pc_slab_stat k)
{
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	return info.stats[k];
}

static long slabs_of(struct pc_cache *s)
{
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	return info.slabs;
}

/* Objects 1.. of slab j (out[j * per ..]) still hold the pattern written
 * (the first one is left out: the page layer may keep a free block's link
 * in its first bytes). Returns how many differ. */
static int pattern_lost(struct pc_cache *s, unsigned per, unsigned j, unsigned salt)
{
	int bad = 0;
	for (unsigned i = 1; i < per; i++)
		for (size_t b = 0; b < s->object_size; b++)
			bad += ((unsigned char *)out[j * per + i])[b] != ((j * per + i + salt) & 0xff);
	return bad;
}

static void whole_slabs(unsigned cpu, unsigned min_partial)
{
	set_opt(PC_OPT_STATS_ENABLE, 1);
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 0); /* the test's sheaf only */
	set_opt(PC_OPT_SLUB_MIN_PARTIAL, min_partial);
	set_opt(PC_OPT_SLUB_MAX_PARTIAL, min_partial); /* min_partial exactly */
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, 3600L * 1000);
	struct pc_cache *s = pc_cache_create("bulk-whole-free", 256, 0, NULL);
	REQUIRE(s);
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	unsigned per = info.objects_per_slab;
	REQUIRE(per >= 4 && 3 * per <= MAX);
	REQUIRE(info.cpu_partial >= 1);
	REQUIRE(info.min_partial == min_partial);
	/* Three slabs' worth, each taken whole: out[j * per ..] is slab j's,
	 * full and on no list. */
	REQUIRE(slab_alloc_bulk(s, out, 3 * per) == 3 * per);
	struct pc_page *slab[3];
	for (unsigned j = 0; j < 3; j++) {
		slab[j] = pc_slab_of(out[j * per]);
		for (unsigned i = 1; i < per; i++)
			REQUIRE(pc_slab_of(out[j * per + i]) == slab[j]);
	}
	write_and_check(s, out, 3 * per, 3);
	CHECK_EQ(slabs_of(s), 3);

	/* Slabs 0 and 2 whole, slab 1 half, interleaved. */
	unsigned half = per / 2;
	struct pc_sheaf *sh = sheaf_new(s, 2 * per + half);
	REQUIRE(sh);
	for (unsigned i = 0; i < per; i++) {
		sh->objects[sh->count++] = out[i];
		if (i < half)
			sh->objects[sh->count++] = out[per + i];
		sh->objects[sh->count++] = out[2 * per + i];
	}
	uint64_t bulk = stat_of(s, PC_SLAB_STAT_free_bulk);
	sheaf_flush_objects(s, sh);
	CHECK_EQ(sh->count, 0);
	CHECK_EQ(stat_of(s, PC_SLAB_STAT_free_bulk) - bulk, 3);
	CHECK_EQ(pc_cache_check(s), per - half);
	if (min_partial == 0) {
		/* Both whole slabs gone, their objects never written. */
		CHECK_EQ(slabs_of(s), 1);
		CHECK_EQ(pattern_lost(s, per, 0, 3), 0);
		CHECK_EQ(pattern_lost(s, per, 2, 3), 0);
	} else {
		/* The node kept none: slab 0 went the ordinary way (listed,
		 * empty, its objects on its freelist), slab 2 back whole. */
		CHECK_EQ(slabs_of(s), 2);
		CHECK(slab[0]->flags & PC_SLAB_ON_PARTIAL);
		uint64_t w = pc_load_relaxed(&slab_word(slab[0])->word);
		CHECK_EQ(PC_SLAB_INUSE(w), 0);
		CHECK_EQ(PC_SLAB_FROZEN(w), 0);
		CHECK(pc_load_relaxed(&slab_word(slab[0])->ptr) != NULL);
		CHECK_EQ(pattern_lost(s, per, 2, 3), 0);
	}
	/* Slab 1: one chain, frozen onto this CPU's partial list, the rest of
	 * its objects untouched. */
	uint64_t w1 = pc_load_relaxed(&slab_word(slab[1])->word);
	CHECK_EQ(PC_SLAB_INUSE(w1), per - half);
	CHECK_EQ(PC_SLAB_FROZEN(w1), 1);
	CHECK(s->cpu[cpu].partial == slab[1]);
	int bad = 0;
	for (unsigned i = half; i < per; i++)
		for (size_t b = 0; b < s->object_size; b++)
			bad += ((unsigned char *)out[per + i])[b] != ((per + i + 3) & 0xff);
	CHECK_EQ(bad, 0);
	sheaf_free(sh);
	for (unsigned i = half; i < per; i++)
		pc_cache_free(s, out[per + i]);
	CHECK_EQ(pc_cache_check(s), 0);
	set_opt(PC_OPT_SLUB_MIN_PARTIAL, 5);
	set_opt(PC_OPT_SLUB_MAX_PARTIAL, -1);
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, 1000);
	check_drained_and_destroy(s);
}

/* The carry's tests start here: pinned to the first CPU allowed (NULL,
 * the test skipped, where it cannot be), its node in *node; options: the
 * test's sheaves of `cap`, a barn that keeps none full (every full sheaf
 * refused), no slab kept empty. */
static struct pc_cache *carry_cache(unsigned cap, unsigned *per, unsigned *node)
{
	if (!pin_cpu0_or_skip())
		return NULL;
	*node = pc_cpu_node((unsigned)test_cpu(0));
	set_opt(PC_OPT_STATS_ENABLE, 1);
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, cap);
	set_opt(PC_OPT_SLUB_BARN_SHEAVES, 0);
	set_opt(PC_OPT_SLUB_BARN_MAX_KB, 0);
	set_opt(PC_OPT_SLUB_MIN_PARTIAL, 0);
	set_opt(PC_OPT_SLUB_MAX_PARTIAL, 0);
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, 3600L * 1000);
	struct pc_cache *s = pc_cache_create("bulk-carry", 1024, 0, NULL);
	REQUIRE(s);
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	*per = info.objects_per_slab;
	REQUIRE(*per >= 4 && *per <= 32 && 2 * *per <= MAX);
	REQUIRE(info.min_partial == 0);
	REQUIRE(pc_load_relaxed(&s->sheaf_capacity) == cap);
	return s;
}

static void carry_cache_done(struct pc_cache *s)
{
	set_opt(PC_OPT_SLUB_BARN_SHEAVES, 8);
	set_opt(PC_OPT_SLUB_BARN_MAX_KB, -1);
	set_opt(PC_OPT_SLUB_CPU_PARTIAL, -1);
	set_opt(PC_OPT_SLUB_MIN_PARTIAL, 5);
	set_opt(PC_OPT_SLUB_MAX_PARTIAL, -1);
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, 1000);
	check_drained_and_destroy(s);
}

/* Two slabs' worth taken whole (out[0..per) slab 0's, out[per..2 per)
 * slab 1's), written; then a sheaf of capacity `per` of the first halves
 * of both, put to the barn: the carry. */
static struct pc_sheaf *carry_first_halves(struct pc_cache *s, unsigned per, unsigned node,
					   struct pc_page **slab)
{
	REQUIRE(slab_alloc_bulk(s, out, 2 * per) == 2 * per);
	for (unsigned j = 0; j < 2; j++)
		slab[j] = pc_slab_of(out[j * per]);
	write_and_check(s, out, 2 * per, 3);
	struct pc_barn *b = s->barn[node];
	unsigned half = per / 2;
	struct pc_sheaf *sh = sheaf_new(s, per);
	REQUIRE(sh);
	for (unsigned i = 0; i < half; i++) {
		sh->objects[sh->count++] = out[i];
		sh->objects[sh->count++] = out[per + i];
	}
	uint64_t flushes = stat_of(s, PC_SLAB_STAT_sheaf_flush);
	uint64_t chains = stat_of(s, PC_SLAB_STAT_free_bulk);
	barn_put(s, node, sh);
	CHECK_EQ(stat_of(s, PC_SLAB_STAT_sheaf_flush) - flushes, 1);
	CHECK_EQ(stat_of(s, PC_SLAB_STAT_free_bulk) - chains, 0); /* nothing went back */
	REQUIRE(pc_load_relaxed(&b->carry) == sh); /* else sh is gone: stop here */
	CHECK_EQ(sh->count, 2 * half);
	CHECK_EQ(barn_count_objects(s, node), 2 * half);
	/* (The walker would flush the barn, carry and all: counted after.) */
	for (unsigned j = 0; j < 2; j++) {
		uint64_t w = pc_load_relaxed(&slab_word(slab[j])->word);
		CHECK_EQ(PC_SLAB_INUSE(w), per);
		CHECK_EQ(PC_SLAB_FROZEN(w), 0);
		CHECK(pc_load_relaxed(&slab_word(slab[j])->ptr) == NULL);
	}
	CHECK_EQ(pattern_lost(s, per, 0, 3) + pattern_lost(s, per, 1, 3), 0);
	return sh;
}

static void shrink_one(struct pc_cache *s)
{
	pc_cache_shrink(s);
}

static void decay_all(struct pc_cache *s)
{
	(void)s;
	pc_slab_decay_pass();
}

/* A carry made again (carry_first_halves) and flushed by flush(): nothing
 * left in the barn, the first halves back on their slabs as chains; then
 * the second halves freed. */
static void carry_flushed_by(struct pc_cache *s, unsigned per, unsigned node, struct pc_page **slab,
			     void (*flush)(struct pc_cache *))
{
	unsigned half = per / 2;
	struct pc_barn *b = s->barn[node];
	carry_first_halves(s, per, node, slab);
	flush(s);
	CHECK(pc_load_relaxed(&b->carry) == NULL);
	CHECK_EQ(barn_count_objects(s, node), 0);
	for (unsigned j = 0; j < 2; j++)
		CHECK_EQ(PC_SLAB_INUSE(pc_load_relaxed(&slab_word(slab[j])->word)), per - half);
	CHECK_EQ(pc_cache_check(s), 2 * (per - half));
	for (unsigned j = 0; j < 2; j++)
		for (unsigned i = half; i < per; i++)
			pc_cache_free(s, out[j * per + i]);
	CHECK_EQ(pc_cache_check(s), 0);
}

TEST(carry)
{
	unsigned per, node;
	struct pc_cache *s = carry_cache(32, &per, &node);
	if (!s)
		return;
	REQUIRE(per <= 32);
	struct pc_page *slab[2];
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, (long)per);
	carry_first_halves(s, per, node, slab);
	struct pc_barn *b = s->barn[node];

	/* The second halves: both slabs whole, back unwritten. */
	unsigned half = per / 2;
	struct pc_sheaf *sh = sheaf_new(s, per);
	REQUIRE(sh);
	for (unsigned i = half; i < per; i++) {
		sh->objects[sh->count++] = out[per + i];
		sh->objects[sh->count++] = out[i];
	}
	barn_put(s, node, sh);
	CHECK(pc_load_relaxed(&b->carry) == NULL);
	CHECK_EQ(barn_count_objects(s, node), 0);
	CHECK_EQ(pc_cache_check(s), 0);
	CHECK_EQ(stat_of(s, PC_SLAB_STAT_free_bulk), 2);
	CHECK_EQ(stat_of(s, PC_SLAB_STAT_free_remove_partial), 2);
	CHECK_EQ(slabs_of(s), 0);
	CHECK_EQ(pattern_lost(s, per, 0, 3) + pattern_lost(s, per, 1, 3), 0);

	/* A carry flushed by a shrink, and by a decay pass: the halves back
	 * as chains (linked). */
	carry_flushed_by(s, per, node, slab, shrink_one);
	carry_flushed_by(s, per, node, slab, decay_all);
	carry_cache_done(s);
}

/* The carry's next flush: the carried halves of slabs 0 and 1 (out[0..2
 * per)) run first, then a sheaf of q objects each of two full slabs C and
 * D, interleaved with objects of a slab E that is not full (one object
 * freed), E's also after them. The carried chains go back linked (not
 * carried twice: they opened in the carry's part), E's as a chain, and the
 * new carry is exactly C's and D's objects, in the run's order. */
static void carry_next_flush(struct pc_cache *s, unsigned per, unsigned node)
{
	struct pc_page *slab[2];
	struct pc_barn *b = s->barn[node];
	carry_first_halves(s, per, node, slab);
	unsigned half = per / 2, q = per / 4;
	void **c = out + 2 * per, **d = out + 3 * per, **e = out + 4 * per;
	REQUIRE(slab_alloc_bulk(s, c, 3 * per) == 3 * per);
	struct pc_page *sc = pc_slab_of(c[0]), *sd = pc_slab_of(d[0]), *se = pc_slab_of(e[0]);
	REQUIRE(sc != sd && sd != se && pc_slab_of(c[per - 1]) == sc && pc_slab_of(e[per - 1]) == se);
	slab_free_bulk(s, se, e[per - 1], e[per - 1], 1); /* E: not full */
	struct pc_sheaf *sh = sheaf_new(s, per);
	REQUIRE(sh);
	for (unsigned i = 0; i < q; i++) {
		sh->objects[sh->count++] = c[i];
		sh->objects[sh->count++] = e[i];
		sh->objects[sh->count++] = d[i];
	}
	for (unsigned i = q; i < 2 * q; i++)
		sh->objects[sh->count++] = e[i];
	REQUIRE(sh->count <= per);
	barn_put(s, node, sh);
	struct pc_sheaf *carry = pc_load_relaxed(&b->carry);
	REQUIRE(carry == sh);
	CHECK_EQ(carry->count, 2 * q);
	unsigned in_order = 0;
	for (unsigned i = 0; i < q && 2 * i + 1 < carry->count; i++)
		in_order += (carry->objects[2 * i] == c[i]) + (carry->objects[2 * i + 1] == d[i]);
	CHECK_EQ(in_order, 2 * q);
	CHECK_EQ(barn_count_objects(s, node), 2 * q);
	for (unsigned j = 0; j < 2; j++) /* the carried halves: back, linked */
		CHECK_EQ(PC_SLAB_INUSE(pc_load_relaxed(&slab_word(slab[j])->word)), per - half);
	CHECK_EQ(PC_SLAB_INUSE(pc_load_relaxed(&slab_word(sc)->word)), per);
	CHECK_EQ(PC_SLAB_INUSE(pc_load_relaxed(&slab_word(sd)->word)), per);
	CHECK_EQ(PC_SLAB_INUSE(pc_load_relaxed(&slab_word(se)->word)), per - 1 - 2 * q);
	/* The walker flushes the carry: what the test holds is in use. */
	CHECK_EQ(pc_cache_check(s), 2 * (per - half) + 2 * (per - q) + per - 1 - 2 * q);
	for (unsigned j = 0; j < 2; j++)
		for (unsigned i = half; i < per; i++)
			pc_cache_free(s, out[j * per + i]);
	for (unsigned i = q; i < per; i++) {
		pc_cache_free(s, c[i]);
		pc_cache_free(s, d[i]);
	}
	for (unsigned i = 2 * q; i < per - 1; i++)
		pc_cache_free(s, e[i]);
	CHECK_EQ(pc_cache_check(s), 0);
}

TEST(carry_then_others)
{
	unsigned per, node;
	struct pc_cache *s = carry_cache(32, &per, &node);
	if (!s)
		return;
	REQUIRE(per >= 8);
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, (long)per);
	carry_next_flush(s, per, node);
	carry_cache_done(s);
}

/*
 * A kept chain whose slab had an earlier chain in the same run (closed by
 * eviction, linked and given back), full again because another CPU's
 * refill took those objects back meanwhile: only the kept chain's own
 * objects are carried (review of slabfree, item 1, the reviewer's
 * reproduction: before the fix the carry held one object that the other
 * CPU had taken, a double free at the next flush). The other CPU is a test
 * hook (pc_slab_flush_test_hook) run when the flush opens the chain at
 * index 6. Slabs: Y (out[0..]), P (not full), Q, K, R; the sheaf is
 * Y0 P0 Q0 K0 Y1 R0 Y2: Y's first chain {Y0, Y1} is evicted by R0.
 */
static struct pc_page *evict_y;
static void *evict_taken[64];
static unsigned evict_ntaken;

static void evict_hook(struct pc_cache *s, uint32_t i)
{
	if (i != 6)
		return;
	struct pc_cache_node *n = slab_node(s, evict_y);
	pc_lock_acquire(&n->list_lock);
	REQUIRE(evict_y->flags & PC_SLAB_ON_PARTIAL);
	slab_partial_del(n, evict_y);
	struct pc_dword *w = slab_word(evict_y);
	void *fl = pc_load_relaxed(&w->ptr);
	uint64_t cnt = pc_load_relaxed(&w->word);
	unsigned k = 0;
	for (void *p = fl; p && k < 64; p = slab_next(s, p))
		evict_taken[k++] = p;
	REQUIRE(pc_dcas(w, fl, cnt, NULL, cnt + k)); /* as a refill: all in use again */
	pc_lock_release(&n->list_lock);
	evict_ntaken = k;
}

TEST(evicted_chain_not_carried)
{
	unsigned per, node;
	struct pc_cache *s = carry_cache(8, &per, &node);
	if (!s)
		return;
	set_opt(PC_OPT_SLUB_CPU_PARTIAL, 0); /* Y's first chain lists it on the node */
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 8);
	REQUIRE(5 * per <= MAX);
	REQUIRE(slab_alloc_bulk(s, out, 5 * per) == 5 * per);
	evict_y = pc_slab_of(out[0]);
	void *p1 = out[per + 1];
	slab_free_bulk(s, pc_slab_of(p1), p1, p1, 1); /* P: not full */
	struct pc_sheaf *sh = sheaf_new(s, 8);
	REQUIRE(sh);
	void *seq[7] = { out[0], out[per], out[2 * per], out[3 * per], out[1], out[4 * per], out[2] };
	for (unsigned i = 0; i < 7; i++)
		sh->objects[sh->count++] = seq[i];
	evict_ntaken = 0;
	pc_store_relaxed(&pc_slab_flush_test_hook, evict_hook);
	barn_put(s, node, sh);
	pc_store_relaxed(&pc_slab_flush_test_hook, NULL);
	CHECK_EQ(evict_ntaken, 2); /* Y0 and Y1, given back by the evicted chain */
	struct pc_sheaf *carry = pc_load_relaxed(&s->barn[node]->carry);
	REQUIRE(carry == sh);
	/* Q0, K0, R0, Y2: the kept chains' own objects, none of those taken. */
	CHECK_EQ(carry->count, 4);
	int dup = 0;
	for (unsigned i = 0; i < carry->count; i++)
		for (unsigned t = 0; t < evict_ntaken; t++)
			dup += carry->objects[i] == evict_taken[t];
	CHECK_EQ(dup, 0);
	/* Everything back: Y0 and Y1 (taken again, so in use) and the rest. */
	for (unsigned i = 0; i < 5 * per; i++) {
		bool in_sheaf = false;
		for (unsigned j = 0; j < 7; j++)
			in_sheaf |= out[i] == seq[j] && out[i] != out[0] && out[i] != out[1];
		if (!in_sheaf && out[i] != p1)
			pc_cache_free(s, out[i]);
	}
	CHECK_EQ(pc_cache_check(s), 0);
	carry_cache_done(s);
}

TEST(whole_slabs)
{
	if (!pin_cpu0_or_skip())
		return;
	unsigned cpu = (unsigned)test_cpu(0); /* pinned to it */
	whole_slabs(cpu, 0);
	whole_slabs(cpu, 1);
}

int main(void)
{
	RUN(whole_slabs);
	RUN(carry);
	RUN(carry_then_others);
	RUN(evicted_chain_not_carried);
	return test_report();
}
