/*
 * tests/unit/slab/fresh.c - slabs built lazily (slab_alloc.c, "Fresh
 * objects"): a new slab's objects are fresh (never handed out, never
 * written) until they are first taken, a batch at a time, from the front.
 *
 *  - untouched_pages: in a child process that has freed no slab memory
 *    yet, a new cache of 64-page slabs hands out one object, which the
 *    program writes; the slab's counters say that only the objects the
 *    sheaf refill took are no longer fresh, and mincore says that the
 *    object's page is the only one of the slab faulted in (before, slab_new
 *    wrote every object: every page resident). The mincore part is skipped
 *    where transparent huge pages are "always" (one touch may then fault in
 *    the whole slab).
 *    A second child checks the same without mincore: the slab's block is
 *    filled with a pattern before the page allocator hands it to the new
 *    slab, and after the first allocation every byte of it but the object
 *    the program wrote still holds the pattern.
 *  - every_object_once: every object of several slabs is handed out
 *    exactly once across freelist and fresh allocation (no duplicates, no
 *    losses: all distinct slots of the cache's slabs), with frees, a shrink
 *    in the middle (slabs leave their CPU with fresh objects left) and
 *    allocation again; the walker (pc_cache_check) agrees at each step; with
 *    sheaves (bulk refills straight into the sheaf) and without (CPU
 *    freelists built a page at a time).
 *  - constructor_once: a cache with a constructor constructs each object
 *    once, when first taken from its slab, never again on reuse: the
 *    constructor's calls equal the cache's objects that are not fresh.
 *  - fresh_free_refused: the free of a fresh object (never handed out) on
 *    the slab path is refused as a double free.
 *  - empty_fresh_slab_discarded: a slab whose handed-out objects all come
 *    back, fresh objects left, goes back to the page allocator (shrink),
 *    and the counts (pc_cache_info: slabs, active and fresh objects) agree.
 * Each runs with the sheaves on (the default) and in the fallback mode
 * (fresh_norseq: per-thread sheaves).
 */
#define _GNU_SOURCE
#include "slab/slab.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether transparent huge pages may back any anonymous mapping. */
static bool thp_always(void)
{
	char buf[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (!f)
		return false;
	bool always = fgets(buf, sizeof(buf), f) && strstr(buf, "[always]") != NULL;
	fclose(f);
	return always;
}

static uint64_t slab_counters(void *obj)
{
	return pc_load_relaxed(&slab_word(pc_slab_of(obj))->word);
}

/* ---- a new slab's untouched pages stay untouched ------------------------------------ */
static int untouched_child(void)
{
	/* 2 KiB objects in slabs of 128 (64 pages): more than the first sheaf
	 * refill takes in either mode (2 objects with rseq, 32 in thread mode). */
	set_opt(PC_OPT_SLUB_MIN_OBJECTS, 128);
	set_opt(PC_OPT_SLUB_MAX_ORDER, 6);
	struct pc_cache *s = pc_cache_create("fresh-pages", 2048, 0, NULL);
	if (!s)
		return 1;
	unsigned order = (unsigned)(pc_load_relaxed(&s->oo) >> 32);
	unsigned objects = (unsigned)pc_load_relaxed(&s->oo);
	if (order != 6 || objects != 128)
		return 2;
	char *obj = pc_cache_alloc(s);
	if (!obj)
		return 3;
	memset(obj, 0x5a, 2048); /* the program uses its object */
	struct pc_page *slab = pc_slab_of(obj);
	char *base = pc_page_address(slab);
	uint64_t cnt = slab_counters(obj);
	/* Taken: what the sheaf refill took, in address order from the slab's
	 * start (the slab's freelist is empty: nothing was freed). */
	unsigned taken = PC_SLAB_INUSE(cnt);
	if (PC_SLAB_OBJECTS(cnt) != objects || taken == 0 || taken > 32 ||
	    taken + PC_SLAB_FRESH(cnt) != objects)
		return 4;
	if (slab_is_fresh(slab, cnt, obj) || (size_t)(obj - base) / s->size >= taken)
		return 5; /* handed out from the fresh part */
	if (thp_always()) {
		printf("  (mincore part skipped: transparent huge pages are always on)\n");
		return 0;
	}
	/* Only the page the program wrote is resident: the allocator wrote
	 * none of the slab (the refill put the objects straight into the
	 * sheaf, and fresh objects are never written). */
	size_t pages = (size_t)1 << order;
	size_t resident = resident_pages(base, pages);
	size_t mine = resident_pages(base + ((size_t)(obj - base) & ~(PC_PAGE_SIZE - 1)), 1);
	if (resident != 1 || mine != 1) {
		printf("  %zu of the slab's %zu pages resident (the object's: %zu), %u objects taken\n",
		       resident, pages, mine, taken);
		return 6;
	}
	return 0;
}

/* The same without mincore (so also where transparent huge pages are
 * always on): the slab's pages are first filled with a pattern (the block
 * the page allocator hands the new slab is the one just freed: its per-CPU
 * lists are LIFO), and after the first allocation every byte of the slab
 * but the object the program wrote still holds it: the allocator wrote
 * nothing, neither the objects the refill took nor the fresh ones. */
static int untouched_bytes_child(void)
{
	set_opt(PC_OPT_SLUB_MIN_OBJECTS, 128);
	set_opt(PC_OPT_SLUB_MAX_ORDER, 6);
	/* Sheaves and sheaf-cache slabs made first, by another cache. */
	struct pc_cache *warm = pc_cache_create("fresh-warm", 2048, 0, NULL);
	void *w = warm ? pc_cache_alloc(warm) : NULL;
	if (!w)
		return 1;
	struct pc_cache *s = pc_cache_create("fresh-bytes", 2048, 0, NULL);
	if (!s || (unsigned)(pc_load_relaxed(&s->oo) >> 32) != 6)
		return 2;
	size_t bytes = PC_PAGE_SIZE << 6;
	char *blk = pc_alloc_pages_node(6, pc_cpu_node(os_cpu_current()));
	if (!blk)
		return 3;
	memset(blk, 0xAB, bytes);
	pc_free_pages(blk, 6);
	char *obj = pc_cache_alloc(s);
	if (!obj)
		return 4;
	char *base = pc_page_address(pc_slab_of(obj));
	if (base != blk) {
		printf("  the new slab is not the block just freed\n");
		return 5;
	}
	memset(obj, 0x5a, 2048);
	size_t written = 0;
	for (size_t i = 0; i < bytes; i++)
		if (base + i < obj || base + i >= obj + 2048)
			written += (unsigned char)base[i] != 0xAB;
	if (written != 0) {
		printf("  %zu bytes of the slab written besides the object\n", written);
		return 6;
	}
	return 0;
}

TEST(untouched_pages)
{
	check_in_child(untouched_child);
	check_in_child(untouched_bytes_child);
}

/* ---- every object handed out exactly once --------------------------------------------- */
#define ROUNDS_SLABS 3

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
	return x < y ? -1 : x > y;
}

/* The live objects v[0..n) are distinct slots of s's slabs. */
static void check_distinct(struct pc_cache *s, void **v, size_t n)
{
	void **sorted = malloc(n * sizeof(*sorted));
	REQUIRE(sorted != NULL);
	memcpy(sorted, v, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_ptr);
	size_t dups = 0, foreign = 0;
	for (size_t i = 0; i < n; i++) {
		dups += i > 0 && sorted[i] == sorted[i - 1];
		struct pc_page *slab = pc_slab_of(sorted[i]);
		foreign += !slab || slab->owner != s || !pc_slab_is_slot(s, slab, sorted[i]) ||
			   slab_is_fresh(slab, pc_load_relaxed(&slab_word(slab)->word), sorted[i]);
	}
	CHECK_EQ(dups, 0);
	CHECK_EQ(foreign, 0);
	free(sorted);
}

static void every_object_once_with(long capacity)
{
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, capacity);
	struct pc_cache *s = pc_cache_create("fresh-once", 96, 0, NULL);
	REQUIRE(s != NULL);
	size_t per_slab = (unsigned)pc_load_relaxed(&s->oo);
	size_t n = per_slab * ROUNDS_SLABS;
	void **v = calloc(n, sizeof(*v));
	REQUIRE(v != NULL);
	for (size_t i = 0; i < n; i++) {
		v[i] = pc_cache_alloc(s);
		REQUIRE(v[i] != NULL);
		memset(v[i], (int)(i & 0xff), 96);
	}
	check_distinct(s, v, n);
	CHECK_EQ(pc_cache_check(s), (long)n);
	/* Every other one back, then flush: slabs leave their CPU, some with
	 * fresh objects left, and go to the node lists. */
	for (size_t i = 0; i < n; i += 2)
		pc_cache_free(s, v[i]);
	pc_cache_shrink(s);
	CHECK_EQ(pc_cache_check(s), (long)(n / 2));
	/* Allocate them again and a slab more: freelists first, then fresh. */
	for (size_t i = 0; i < n; i += 2) {
		v[i] = pc_cache_alloc(s);
		REQUIRE(v[i] != NULL);
	}
	size_t more = n + per_slab;
	void **w = calloc(more, sizeof(*w));
	REQUIRE(w != NULL);
	memcpy(w, v, n * sizeof(*w));
	for (size_t i = n; i < more; i++) {
		w[i] = pc_cache_alloc(s);
		REQUIRE(w[i] != NULL);
	}
	check_distinct(s, w, more);
	CHECK_EQ(pc_cache_check(s), (long)more);
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	CHECK_EQ(info.active_objects, (long)more);
	CHECK(info.fresh_objects >= 0 && info.fresh_objects <= info.total_objects - (long)more);
	for (size_t i = 0; i < more; i++)
		pc_cache_free(s, w[i]);
	CHECK_EQ(pc_cache_check(s), 0);
	CHECK_EQ(pc_cache_destroy(s), 0);
	free(v);
	free(w);
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, -1);
}

TEST(every_object_once)
{
	every_object_once_with(-1); /* sheaves: bulk refills into the sheaf */
	every_object_once_with(0);  /* no sheaves: CPU freelists */
}

/* ---- the constructor runs once per object ------------------------------------------- */
static _Atomic long ctor_calls;
static void ctor(void *p)
{
	memset(p, 0xC7, 48);
	pc_add_relaxed(&ctor_calls, 1);
}

static void constructor_once_with(long capacity)
{
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, capacity);
	pc_store_relaxed(&ctor_calls, 0);
	struct pc_cache *s = pc_cache_create("fresh-ctor", 48, 0, ctor);
	REQUIRE(s != NULL);
	size_t per_slab = (unsigned)pc_load_relaxed(&s->oo);
	size_t n = per_slab + per_slab / 2;
	void **v = calloc(n, sizeof(*v));
	REQUIRE(v != NULL);
	struct pc_cache_info info;
	int bad = 0;
	long gone = 0; /* objects constructed in slabs given back since */
	for (int round = 0; round < 4; round++) {
		for (size_t i = 0; i < n; i++) {
			v[i] = pc_cache_alloc(s);
			REQUIRE(v[i] != NULL);
			for (int k = 0; k < 48; k++)
				bad += ((unsigned char *)v[i])[k] != 0xC7;
		}
		pc_cache_info(s, &info);
		/* Constructed: every object taken from the slabs (the live
		 * ones, those in sheaves), none of the fresh ones, plus those of
		 * the slabs given back (a new slab's are new objects). */
		CHECK_EQ(pc_load_relaxed(&ctor_calls), gone + info.total_objects - info.fresh_objects);
		for (size_t i = 0; i < n; i++)
			pc_cache_free(s, v[i]); /* state kept as the constructor left it */
		if (round == 1) {
			/* Slabs back to the node lists, the empty ones (fresh
			 * objects or not) to the page allocator. */
			pc_cache_info(s, &info);
			long before = info.total_objects - info.fresh_objects;
			pc_cache_shrink(s);
			pc_cache_info(s, &info);
			gone += before - (info.total_objects - info.fresh_objects);
		}
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(pc_cache_check(s), 0);
	CHECK_EQ(pc_cache_destroy(s), 0);
	free(v);
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, -1);
}

TEST(constructor_once)
{
	constructor_once_with(-1);
	constructor_once_with(0);
}

/* ---- the free of a fresh object ------------------------------------------------------- */
/* A slab that left its CPU (shrink) with fresh objects, and the free of
 * one of them (never handed out: free already) on the slab path (no
 * sheaves): refused as a double free (slab_free.c, free_chain). */
static void free_fresh_object(void *arg)
{
	(void)arg;
	test_pin_here();
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 0);
	/* Slabs of several pages; the first allocation chains a page's worth. */
	struct pc_cache *s = pc_cache_create("fresh-free", 512, 0, NULL);
	REQUIRE(s != NULL);
	char *a = pc_cache_alloc(s);
	REQUIRE(a != NULL);
	pc_cache_shrink(s); /* its slab to the node list, fresh objects left */
	struct pc_page *slab = pc_slab_of(a);
	uint64_t cnt = slab_counters(a);
	REQUIRE(PC_SLAB_FRESH(cnt) > 0 && !PC_SLAB_FROZEN(cnt));
	char *last = (char *)pc_page_address(slab) + (PC_SLAB_OBJECTS(cnt) - 1) * s->size;
	REQUIRE(slab_is_fresh(slab, cnt, last));
	pc_cache_free(s, last);
}

TEST(fresh_free_refused)
{
	char err[4096];
	int st = test_in_child(free_fresh_object, NULL, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "double free detected (cache fresh-free)"));
}

/* ---- an empty slab goes back ---------------------------------------------------------- */
TEST(empty_fresh_slab_discarded)
{
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, 0);
	struct pc_cache *s = pc_cache_create("fresh-empty", 512, 0, NULL);
	REQUIRE(s != NULL);
	void *a = pc_cache_alloc(s);
	REQUIRE(a != NULL);
	uint64_t cnt = slab_counters(a);
	CHECK(PC_SLAB_FRESH(cnt) > 0); /* a page's worth was chained, not more */
	CHECK_EQ(PC_SLAB_FRESH(cnt) + PC_SLAB_INUSE(cnt), PC_SLAB_OBJECTS(cnt));
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	CHECK_EQ(info.slabs, 1);
	CHECK_EQ(info.active_objects, 1);
	CHECK_EQ(info.fresh_objects, (long)PC_SLAB_FRESH(cnt));
	pc_cache_free(s, a);
	CHECK_EQ(pc_cache_check(s), 0);
	/* min_partial may keep it on the node: shrink gives it back. */
	pc_cache_shrink(s);
	pc_cache_info(s, &info);
	CHECK_EQ(info.slabs, 0);
	CHECK_EQ(info.fresh_objects, 0);
	CHECK_EQ(pc_cache_destroy(s), 0);
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, -1);
}

int main(void)
{
	pc_page_init();
	RUN(untouched_pages); /* first: the child has freed no slab memory */
	RUN(every_object_once);
	RUN(constructor_once);
	RUN(fresh_free_refused);
	RUN(empty_fresh_slab_discarded);
	CHECK(pc_page_check());
	return test_report();
}
