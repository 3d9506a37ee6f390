/*
 * tests/unit/malloc/faults.c - every allocation path through refused
 * mappings (the debug.fail_mmap tunables, set through pcmalloc_ctl_set as a
 * user would). White-box: links the static library, so the pc_* calls are
 * pcmalloc's, and the test reads the layers' own counters to prove that
 * nothing was lost.
 *
 *  - exhausted: with every mapping refused (debug.fail_mmap=1), take all the
 *    memory the allocator already has (large blocks, then smaller and
 *    smaller ones down to every small class and an object cache); then every
 *    path (small, large, huge, aligned, calloc, realloc, object caches,
 *    creating a cache: its block may come from a chunk mapped before, then
 *    its allocation) returns NULL with errno ENOMEM, realloc leaves its
 *    block intact, and nothing crashes;
 *  - every_nth and random: a mixed workload (all kinds, realloc chains,
 *    aligned blocks, cache objects) runs while every Nth mapping, or a
 *    random share of them, is refused: each NULL comes with ENOMEM, every
 *    surviving block keeps its contents, and failures did happen (the
 *    workload maps huge blocks, so some calls are always refused; how many
 *    varies from run to run, see run_workload);
 *  - sheaf_and_barn_refills: frees and allocations of an object cache
 *    when no sheaf can be made (sheaf refill refused: straight to the
 *    slabs) and when full sheaves go through the barn, all under refused
 *    mappings (see the test);
 * after each part, with injection off again: all blocks freed, the totals
 * balance (objects in use per cache, pages held outside slabs, huge blocks)
 * against the start, the walkers pass, and every path allocates again.
 *
 * The thread is pinned to one CPU so that the run does the same mappings
 * every time (no verdict depends on scheduling).
 */
#define _GNU_SOURCE
#include "test.h"
#include "unit/unit_helpers.h"

#include "malloc/malloc.h"

#include <errno.h>

#define MAX_CACHES 64

/* What the allocator holds for the program, from its own counters. */
struct totals {
	unsigned caches;
	long in_use[MAX_CACHES];   /* allocated objects per cache (walker) */
	size_t slab_pages;         /* pages in slabs, all caches */
	size_t used_pages;         /* pages not free in any zone or pcp */
	size_t huge_blocks, huge_bytes;
};

static void add_cache(struct pc_cache *s, void *arg)
{
	struct totals *t = arg;
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	REQUIRE(t->caches < MAX_CACHES);
	t->in_use[t->caches++] = pc_cache_check(s);
	t->slab_pages += (size_t)info.slabs << info.order;
}

/* Only with injection off (the walker maps scratch memory). */
static struct totals take_totals(void)
{
	struct totals t;
	memset(&t, 0, sizeof(t));
	pc_slab_reclaim();
	medium_flush(); /* free medium blocks kept per CPU back to the pages */
	pc_cache_foreach(add_cache, &t);
	size_t managed = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++)
		managed += pc_zone_get(i)->managed_pages;
	t.used_pages = managed - free_total();
	t.huge_blocks = huge_count();
	t.huge_bytes = huge_bytes_mapped();
	return t;
}

/* Nothing lost: the same objects in use in every cache that existed at the
 * start, the same pages outside slabs (large blocks), the same huge blocks. */
static void check_balance(const struct totals *before)
{
	struct totals now = take_totals();
	CHECK(now.caches >= before->caches);
	for (unsigned i = 0; i < before->caches; i++)
		CHECK_EQ(now.in_use[i], before->in_use[i]);
	for (unsigned i = before->caches; i < now.caches; i++)
		CHECK_EQ(now.in_use[i], 0);
	CHECK_EQ(now.used_pages - now.slab_pages, before->used_pages - before->slab_pages);
	CHECK_EQ(now.huge_blocks, before->huge_blocks);
	CHECK_EQ(now.huge_bytes, before->huge_bytes);
	CHECK(pc_page_check());
}

static void set_fail(long every, long ppm)
{
	REQUIRE(pcmalloc_ctl_set("debug.fail_mmap", every) == 0);
	REQUIRE(pcmalloc_ctl_set("debug.fail_mmap_ppm", ppm) == 0);
}

/* ---- blocks: linked through word 0, word 1 holds a check value --------------- */
struct block {
	struct block *next;
	uint64_t check;
};

static uint64_t check_of(const void *p, size_t size)
{
	return (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull ^ size;
}

/* Keep p (>= 16 bytes) on *list, stamped with its size: word 1, and the
 * last byte when it lies beyond word 1. */
static void keep(struct block **list, void *p, size_t size)
{
	struct block *b = p;
	b->next = *list;
	b->check = check_of(p, size);
	if (size > sizeof(*b))
		((unsigned char *)p)[size - 1] = (unsigned char)size;
	*list = b;
}

static bool stamp_ok(const void *p, size_t size)
{
	return size <= sizeof(struct block) || ((const unsigned char *)p)[size - 1] == (unsigned char)size;
}

static long damaged;

static void drop_all(struct block **list, size_t size, pc_cache_t *cache)
{
	while (*list) {
		struct block *b = *list;
		*list = b->next;
		damaged += b->check != check_of(b, size) || !stamp_ok(b, size);
		if (cache)
			pc_cache_free(cache, b);
		else
			pc_free(b);
	}
}

/* Allocate blocks of `size` until one fails; every failure must say ENOMEM.
 * Returns the blocks taken. */
static long take_until_null(struct block **list, size_t size, size_t align, pc_cache_t *cache)
{
	long n = 0;
	for (;;) {
		errno = 0;
		void *p = cache ? pc_cache_alloc(cache) : align ? pc_memalign(align, size) : pc_malloc(size);
		if (!p) {
			CHECK_EQ(errno, ENOMEM);
			return n;
		}
		keep(list, p, size);
		n++;
	}
}

/* ---- exhausted ----------------------------------------------------------------- */
/* Sizes from the largest block down to the smallest class, so that each step
 * takes what the one before left over: large blocks, then every small class
 * from the largest (filled in by main). */
#define NR_LARGE 5
#define NR_EXHAUST (NR_LARGE + PC_NR_CLASSES - 1) /* class 0 (8 bytes) holds no block */
static size_t exhaust_sizes[NR_EXHAUST] = {
	PC_LARGE_MAX, 1 << 20, 64 << 10, 3 * 4096 + 1, PC_SMALL_MAX + 1,
};

static void fill_exhaust_sizes(void)
{
	for (unsigned c = PC_NR_CLASSES - 1; c >= 1; c--)
		exhaust_sizes[NR_LARGE + PC_NR_CLASSES - 1 - c] = pc_class_size[c];
}

static pc_cache_t *exhausted_fresh;

static void check_every_path_fails(pc_cache_t *cache)
{
	static const size_t sizes[] = { 16, 100, 5000, PC_SMALL_MAX + 1, 100 << 10,
					PC_LARGE_MAX, PC_LARGE_MAX + 1, 64 << 20 };
	/* The cache first: a failed malloc's retry flushes every sheaf, and
	 * the slabs of sheaves it frees go back to the zone, where a cache
	 * allocation (which retries nothing itself) may find them. */
	errno = 0;
	CHECK(pc_cache_alloc(cache) == NULL);
	CHECK_EQ(errno, ENOMEM);
	for (size_t i = 0; i < PC_ARRAY_SIZE(sizes); i++) {
		errno = 0;
		CHECK(pc_malloc(sizes[i]) == NULL);
		CHECK_EQ(errno, ENOMEM);
		errno = 0;
		CHECK(pc_calloc(1, sizes[i]) == NULL);
		CHECK_EQ(errno, ENOMEM);
		errno = 0;
		CHECK(pc_aligned_alloc(4096, sizes[i]) == NULL);
		CHECK_EQ(errno, ENOMEM);
		void *p = (void *)1;
		CHECK_EQ(pc_posix_memalign(&p, 1 << 16, sizes[i]), ENOMEM);
		CHECK(p == (void *)1);
	}
	/* A new cache: NULL with ENOMEM, or, when its block could be cut from
	 * a chunk mapped before (slab/cache.c: about 80 caches a chunk), a
	 * cache whose allocation fails so. */
	errno = 0;
	pc_cache_t *fresh = pc_cache_create("faults-new", 40, 0, NULL);
	if (fresh) {
		errno = 0;
		CHECK(pc_cache_alloc(fresh) == NULL);
		CHECK_EQ(errno, ENOMEM);
		exhausted_fresh = fresh; /* destroyed once memory is back (its
					  * check needs some in debug builds) */
	} else {
		CHECK_EQ(errno, ENOMEM);
	}
}

/* realloc of a small live block to every larger kind fails and leaves it
 * intact. */
static void check_realloc_fails(struct block *b, size_t size)
{
	static const size_t sizes[] = { 5000, 100 << 10, PC_LARGE_MAX + 1, 64 << 20 };
	for (size_t i = 0; i < PC_ARRAY_SIZE(sizes); i++) {
		errno = 0;
		CHECK(pc_realloc(b, sizes[i]) == NULL);
		CHECK_EQ(errno, ENOMEM);
		CHECK(b->check == check_of(b, size));
	}
}

TEST(exhausted)
{
	REQUIRE(pin_cpu(0));
	pc_cache_t *cache = pc_cache_create("faults", 24, 0, NULL);
	REQUIRE(cache != NULL);
	/* Give the zones free memory to hand out first: 64 MiB of large blocks,
	 * freed again (freed pages stay in their zone). */
	void *warm[16];
	for (int i = 0; i < 16; i++)
		REQUIRE((warm[i] = pc_malloc(PC_LARGE_MAX)) != NULL);
	for (int i = 0; i < 16; i++)
		pc_free(warm[i]);
	struct totals before = take_totals();
	struct block *lists[NR_EXHAUST] = { NULL }, *cached = NULL, *victim = NULL;
	void *v = pc_malloc(16); /* for realloc */
	REQUIRE(v != NULL);
	keep(&victim, v, 16);

	set_fail(1, 0);
	long taken = 0;
	for (size_t i = 0; i < NR_EXHAUST; i++)
		taken += take_until_null(&lists[i], exhaust_sizes[i], 0, NULL);
	taken += take_until_null(&cached, 24, 0, cache);
	CHECK(taken > 0);
	/* Small sizes and the cache again after the cache took the last
	 * pages, until a whole pass takes nothing (each failure's retry
	 * flushes every sheaf and gives empty slabs back, which the next size
	 * may take: how many depends on the sheaves' capacities), then every
	 * path: all must fail now. */
	long again;
	do {
		again = 0;
		for (size_t i = NR_LARGE; i < NR_EXHAUST; i++)
			again += take_until_null(&lists[i], exhaust_sizes[i], 0, NULL);
		/* Last: what the failures' retries gave back (the cache's own
		 * failures retry nothing). */
		again += take_until_null(&cached, 24, 0, cache);
	} while (again > 0);
	check_every_path_fails(cache);
	check_realloc_fails(victim, 16);
	CHECK(os_injected_failures() > 0);

	for (size_t i = 0; i < NR_EXHAUST; i++)
		drop_all(&lists[i], exhaust_sizes[i], NULL);
	drop_all(&cached, 24, cache);
	drop_all(&victim, 16, NULL);
	CHECK_EQ(damaged, 0);
	set_fail(0, 0);
	if (exhausted_fresh) {
		CHECK_EQ(pc_cache_destroy(exhausted_fresh), 0);
		exhausted_fresh = NULL;
	}
	check_balance(&before);
	CHECK_EQ(pc_cache_destroy(cache), 0);
}

/* ---- every_nth and random: a mixed workload under failures -------------------- */
#define SLOTS 256

struct slot {
	void *p;
	size_t size;
	bool cached;
};

static struct slot slots[SLOTS];
static long nulls, bad_errno;

static void slot_release(struct slot *s, pc_cache_t *cache)
{
	if (!s->p)
		return;
	struct block *b = s->p;
	damaged += b->check != check_of(b, s->size) || !stamp_ok(b, s->size);
	if (s->cached)
		pc_cache_free(cache, b);
	else
		pc_free(b);
	s->p = NULL;
}

static void note_null(void)
{
	nulls++;
	bad_errno += errno != ENOMEM;
}

/* One step on slot s: allocate (any kind), reallocate, or free. */
static void step(struct slot *s, uint64_t *rng, pc_cache_t *cache)
{
	unsigned op = (unsigned)(test_rand(rng) % 8);
	if (s->p && op < 3) {
		slot_release(s, cache);
		return;
	}
	size_t size = 16 + (size_t)(test_rand(rng) % 6000);
	unsigned kind = (unsigned)(test_rand(rng) % 10);
	if (kind >= 8)
		size = PC_LARGE_MAX + 1 + (size_t)(test_rand(rng) % (8u << 20)); /* huge */
	else if (kind >= 5)
		size = PC_SMALL_MAX + 1 + (size_t)(test_rand(rng) % (2u << 20)); /* large */
	errno = 0;
	if (s->p && !s->cached && op < 5) {
		void *q = pc_realloc(s->p, size);
		if (!q) {
			note_null(); /* the old block must be intact: checked at release */
			return;
		}
		struct block *b = q;
		damaged += b->check != check_of(s->p, s->size) ||
			   (size >= s->size && !stamp_ok(q, s->size));
		s->p = NULL;
		keep((struct block **)&s->p, q, size);
		s->size = size;
		return;
	}
	slot_release(s, cache);
	void *p;
	bool cached = false;
	if (op == 5) {
		p = pc_cache_alloc(cache);
		size = 24;
		cached = true;
	} else if (op == 6) {
		p = pc_memalign((size_t)1 << (4 + test_rand(rng) % 14), size);
	} else {
		p = pc_calloc(1, size);
		if (p && ((unsigned char *)p)[size - 1] != 0)
			damaged++;
	}
	if (!p) {
		note_null();
		return;
	}
	s->p = NULL;
	keep((struct block **)&s->p, p, size);
	s->size = size;
	s->cached = cached;
}

/* Every NULL says ENOMEM, no block is damaged, mappings were refused, and
 * nothing is lost. A refused huge mapping is retried once by malloc, so
 * with every Nth (N > 1) refused the program may see no NULL at all:
 * expect_nulls only for the random rate, which refuses runs of calls.
 * The mapping calls the workload makes are not the same in every run (the
 * same seed made 353-365 refused calls in three runs, and the same count
 * every time under setarch -R: huge blocks' reuse and mremap depend on
 * where the kernel places mappings), so the rate must
 * make a NULL certain, not likely: at 25% a run saw 2-5 NULLs here and
 * none once in CI; at 50% each of five runs saw 97-114. */
static void run_workload(long every, long ppm, uint64_t seed, bool expect_nulls)
{
	pc_cache_t *cache = pc_cache_create("faults-mix", 24, 0, NULL);
	REQUIRE(cache != NULL);
	struct totals before = take_totals();
	unsigned long injected = os_injected_failures();
	uint64_t rng = seed;
	nulls = bad_errno = damaged = 0;
	set_fail(every, ppm);
	for (int i = 0; i < 20000; i++)
		step(&slots[test_rand(&rng) % SLOTS], &rng, cache);
	set_fail(0, 0);
	CHECK(os_injected_failures() > injected);
	if (expect_nulls)
		CHECK(nulls > 0);
	CHECK_EQ(bad_errno, 0);
	for (int i = 0; i < SLOTS; i++)
		slot_release(&slots[i], cache);
	CHECK_EQ(damaged, 0);
	check_balance(&before);
	CHECK_EQ(pc_cache_destroy(cache), 0);
}

TEST(every_nth)
{
	run_workload(2, 0, 11, false);
	run_workload(5, 0, 12, false);
}

TEST(random)
{
	run_workload(0, 500000, 13, true);
}

/* ---- sheaf and barn refills under refused mappings ------------------------------ */
static uint64_t cache_stat(pc_cache_t *cache, enum pc_slab_stat item)
{
	struct pc_cache_info info;
	pc_cache_info(cache, &info);
	return info.stats[item];
}

/* Free every block of *list to cache; returns how many. */
static long free_list(struct block **list, pc_cache_t *cache)
{
	long n = 0;
	for (struct block *b = *list; b; b = b->next)
		n++;
	drop_all(list, 24, cache);
	return n;
}

/*
 * Where a sheaf slow path needs memory while the OS refuses it. With every
 * mapping refused and the zones drained (as in `exhausted`), the sheaf
 * caches are emptied too (sheaf_new until NULL, white-box; three sheaves
 * made beforehand are held back), so no sheaf can be made:
 *  - frees of a full or missing sheaf go straight to the slabs (sheaf_bypass
 *    counts each), and allocations take exactly those objects back from the
 *    slabs, then fail with ENOMEM (the sheaf refill and the slab refill
 *    both refused);
 *  - with three sheaves given back, frees fill them and retire full ones
 *    to the barn (barn_put), the rest bypass; allocations empty the sheaves
 *    and take the full one back from the barn (barn_get), again exactly
 *    what was freed, then ENOMEM.
 * The thread is pinned (rseq mode: one CPU's sheaves; the _norseq run: the
 * thread's), so each step is deterministic. Afterwards the totals balance.
 */
TEST(sheaf_and_barn_refills)
{
	REQUIRE(pin_cpu(0));
	REQUIRE(pcmalloc_ctl_set("stats.enable", 1) == 0);
	/* A fixed capacity (the default one grows with demand, and the barn
	 * takes only sheaves of the current one: the three made below must
	 * stay of it). */
	REQUIRE(pcmalloc_ctl_set("slub.sheaf_capacity", 128) == 0);
	pc_cache_t *cache = pc_cache_create("faults-sheaf", 24, 0, NULL);
	REQUIRE(cache != NULL);
	unsigned cap = pc_load_relaxed(&cache->sheaf_capacity);
	REQUIRE(cap > 0);
	void *warm[16];
	for (int i = 0; i < 16; i++)
		REQUIRE((warm[i] = pc_malloc(PC_LARGE_MAX)) != NULL);
	for (int i = 0; i < 16; i++)
		pc_free(warm[i]);
	struct totals before = take_totals();
	struct block *objs = NULL, *lists[NR_EXHAUST] = { NULL };
	struct pc_sheaf *reserve[3], *stolen = NULL, *sh;
	for (unsigned i = 0; i < 4 * cap; i++) { /* made while mapping works */
		void *p = pc_cache_alloc(cache);
		REQUIRE(p != NULL);
		keep(&objs, p, 24);
	}
	for (int i = 0; i < 3; i++) /* sheaves to give back later */
		REQUIRE((reserve[i] = sheaf_new(cache, cap)) != NULL);

	set_fail(1, 0);
	for (size_t i = 0; i < NR_EXHAUST; i++)
		take_until_null(&lists[i], exhaust_sizes[i], 0, NULL);
	take_until_null(&objs, 24, 0, cache); /* the cache's slabs are full */
	sheaf_flush_cache(cache);             /* no sheaf left: main none, barn empty */
	while ((sh = sheaf_new(cache, cap)) != NULL) {
		sh->next = stolen;
		stolen = sh;
	}
	/* No sheaf to be had: every free bypasses, every allocation too. */
	uint64_t bypass = cache_stat(cache, PC_SLAB_STAT_sheaf_bypass);
	long freed = free_list(&objs, cache);
	CHECK(freed >= 4 * (long)cap);
	CHECK_EQ(cache_stat(cache, PC_SLAB_STAT_sheaf_bypass) - bypass, (uint64_t)freed);
	CHECK_EQ(take_until_null(&objs, 24, 0, cache), freed);

	/* Three sheaves back: two fill and one goes to the barn full. */
	for (int i = 0; i < 3; i++)
		sheaf_free(reserve[i]);
	uint64_t puts = cache_stat(cache, PC_SLAB_STAT_barn_put);
	uint64_t gets = cache_stat(cache, PC_SLAB_STAT_barn_get);
	freed = free_list(&objs, cache);
	CHECK(cache_stat(cache, PC_SLAB_STAT_barn_put) > puts);
	CHECK_EQ(take_until_null(&objs, 24, 0, cache), freed);
	CHECK(cache_stat(cache, PC_SLAB_STAT_barn_get) > gets);
	CHECK(os_injected_failures() > 0);

	while (stolen) {
		sh = stolen;
		stolen = sh->next;
		sheaf_free(sh);
	}
	drop_all(&objs, 24, cache);
	for (size_t i = 0; i < NR_EXHAUST; i++)
		drop_all(&lists[i], exhaust_sizes[i], NULL);
	CHECK_EQ(damaged, 0);
	set_fail(0, 0);
	check_balance(&before);
	CHECK_EQ(pc_cache_destroy(cache), 0);
	REQUIRE(pcmalloc_ctl_set("slub.sheaf_capacity", -1) == 0);
	REQUIRE(pcmalloc_ctl_set("stats.enable", 0) == 0);
}

/* With injection off, every path works again. */
TEST(recovered)
{
	static const size_t sizes[] = { 8, 100, 5000, PC_SMALL_MAX + 1, PC_LARGE_MAX + 1 };
	for (size_t i = 0; i < PC_ARRAY_SIZE(sizes); i++) {
		void *p = pc_malloc(sizes[i]);
		CHECK(p != NULL);
		void *q = pc_realloc(p, sizes[i] * 2);
		CHECK(q != NULL);
		pc_free(q);
		p = pc_memalign(1 << 16, sizes[i]);
		CHECK(p != NULL && ((uintptr_t)p & 0xffff) == 0);
		pc_free(p);
		p = pc_calloc(sizes[i], 1);
		CHECK(p != NULL);
		pc_free(p);
	}
	pc_cache_t *cache = pc_cache_create("faults-after", 40, 0, NULL);
	CHECK(cache != NULL);
	if (cache) {
		void *o = pc_cache_alloc(cache);
		CHECK(o != NULL);
		pc_cache_free(cache, o);
		CHECK_EQ(pc_cache_destroy(cache), 0);
	}
}

TEST(tunables_reject_bad_values)
{
	errno = 0;
	CHECK_EQ(pcmalloc_ctl_set("debug.fail_mmap", -1), -1);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(pcmalloc_ctl_set("debug.fail_mmap_ppm", 1000001), -1);
	CHECK_EQ(errno, EINVAL);
	long v = -1;
	CHECK_EQ(pcmalloc_ctl_get("debug.fail_mmap", &v), 0);
	CHECK_EQ(v, 0);
}

int main(void)
{
	REQUIRE(pc_malloc_init());
	/* No timed pass in the middle of a step: the sheaves' decay and the
	 * release passes run from slow paths once the delay (at least 1 s) has
	 * passed, so with the default a loaded machine saw one flush a barn's
	 * sheaf between a free and the allocations counting it
	 * (sheaf_and_barn_refills: 384 != 512) or change which calls the random
	 * rate refused (random: no NULL), about 1 run in 50. */
	REQUIRE(pcmalloc_ctl_set("vm.release_delay_ms", 3600000) == 0);
	fill_exhaust_sizes();
	RUN(exhausted);
	RUN(every_nth);
	RUN(random);
	RUN(sheaf_and_barn_refills);
	RUN(recovered);
	RUN(tunables_reject_bad_values);
	return test_report();
}
