/*
 * tests/unit/malloc/huge_reuse.c - what the huge cache keeps of a range
 * (malloc/huge_cache.c, huge_dirty.c): resident and released parts joined,
 * calloc clearing only the dirty pages, a range mremap cannot grow kept,
 * the resident bound following recent frees, and the tail of a shrinking
 * realloc cached.
 *
 * The delay is an hour and the page clock is moved on (pc_page_clock_advance)
 * where a test wants time to pass; the bound counts one CPU
 * (pc_huge_cache_test_cpus), so which range is released is decided by the
 * order of the frees alone. No verdict depends on timing. Residency is read
 * with mincore (exact, and blind to a sanitizer's shadow memory).
 *
 *  extents           the dirty-extent list itself: joins past
 *                    PC_HUGE_DIRTY_MAX squeeze to a superset, split divides.
 *  mixed_merge       a block freed next to a released range joins it: the
 *                    40 MiB block they made comes back at the same address
 *                    (the resident part alone would have been grown by
 *                    mremap, and moved).
 *  calloc_mixed      calloc of that joined range clears the resident part
 *                    (reads zero) and faults in none of the released one.
 *  calloc_released   calloc of a wholly released range: nothing resident
 *                    after it, and it reads zero.
 *  place_resident    a range released at both ends and resident in the
 *                    middle (the bound forced, pc_huge_cache_test_bound):
 *                    a block the middle's size is placed there, not at the
 *                    front, and finds its pages resident.
 *  remap_refused     mremap refused (injected) while a resident cached range
 *                    is grown for a larger block: the range stays cached,
 *                    and the block is a released range large enough (not a
 *                    new mapping).
 *  remap_two_vmas    a cached range split into several mappings by the
 *                    kernel (MADV_DONTFORK on its middle): mremap cannot grow
 *                    it (EFAULT), the range stays cached and is reused whole
 *                    (ThreadSanitizer grows by map + copy: no failure there).
 *  bound_decays      the resident bound halves per delay passed without a
 *                    free as large, down to the block freed now.
 *  bound_per_cpu     the bound is one largest block per CPU but one, at
 *                    least one block.
 *  most_resident     a malloc takes the range whose resident pages it
 *                    reuses most (a larger, wholly resident one), not the
 *                    smallest fit with a few resident pages: no fault.
 *  grows_resident    a smaller range with just over an eighth of the
 *                    request resident is grown for it (not skipped by both
 *                    selectors, and a new block mapped beside it).
 *  shed_after_take   a free over the bound keeps the block it frees (in
 *                    transit); the next malloc takes the older range whole
 *                    (no fault: the free released none of it), and only
 *                    then is the resident excess released, down to the
 *                    bound.
 *  realloc_shrink    realloc to a third keeps the block in place and caches
 *                    the tail (resident); freeing the block joins them again.
 *  realloc_grow      realloc growing a block into the cached range right
 *                    after it (the tail a shrink cached): in place, no
 *                    mremap (which would move it: the range is mapped),
 *                    no fault, the excess beyond an eighth cached again.
 *  put_evicts        the address-space bound full of released ranges: a
 *                    block freed resident is kept, the oldest released range
 *                    unmapped for it (it was the block that went).
 *  tail_keeps_time   a tail split off a cached range keeps the range's
 *                    time: it expires a delay after the range was freed,
 *                    not after the split.
 *  threads_mixed     4 threads, bound of 1 CPU (ranges joined, split, placed,
 *                    released in part all the time): malloc, calloc (reads
 *                    zero), realloc down and up (contents kept); every
 *                    block's pattern intact when freed.
 *
 * PC_TEST_LABELS: tsan (os_remap is map + copy + unmap there)
 */
#define _GNU_SOURCE
#include "test.h"
#include "unit/unit_helpers.h"

#include "malloc/malloc.h"

#include <pthread.h>
#include <sys/mman.h>

#define MiB ((size_t)1 << 20)
#define DELAY_NS ((uint64_t)3600000 * 1000000u)

#if defined(__SANITIZE_THREAD__)
#define TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TEST_TSAN 1
#endif
#endif

/* Bytes of [p, p + n) that are not v, one every `step`. */
static size_t count_not(const char *p, size_t n, char v, size_t step)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i += step)
		bad += p[i] != v;
	return bad;
}

/* Empty cache, one CPU in the bound, and the largest recent size forgotten
 * (the next free sets it). */
static void fresh_cache(void)
{
	REQUIRE(pc_malloc_init());
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_DELAY_MS, 3600000, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_HUGE_THP, 0, false) == 0);
	pc_store_relaxed(&pc_huge_cache_test_cpus, 1);
	pc_trim();
	pc_page_clock_advance(100 * DELAY_NS);
	CHECK_EQ(huge_cache_bytes(), 0);
}

/* Pages of address space mapped right before and after huge block p's
 * mapping where they are free (MAP_FIXED_NOREPLACE), so that no block
 * mapped later becomes its neighbour (neighbours are joined in the cache:
 * the tests decide which ranges are). Unmapped by unguard(). */
static void *guards[16];
static unsigned nr_guards;

static void guard(char *p)
{
	const struct pc_huge_header *h = huge_header(p);
	REQUIRE(h != NULL);
	char *side[2] = { (char *)h->map_base - PC_PAGE_SIZE, (char *)h->map_base + h->map_size };
	for (int i = 0; i < 2; i++) {
		void *g = mmap(side[i], PC_PAGE_SIZE, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (g == side[i] && nr_guards < 16)
			guards[nr_guards++] = g;
		else if (g != MAP_FAILED) /* an old kernel took it as a hint */
			munmap(g, PC_PAGE_SIZE);
	}
}

/* A huge block that must exist, guarded as above. */
static char *guarded_malloc(size_t size)
{
	char *p = pc_malloc(size);
	REQUIRE(p != NULL);
	guard(p);
	return p;
}

static void unguard(void)
{
	while (nr_guards)
		munmap(guards[--nr_guards], PC_PAGE_SIZE);
}

/* A header on the heap, for the extent list alone. */
static struct pc_huge_header *header(size_t map_size)
{
	struct pc_huge_header *h = calloc(1, sizeof(*h));
	REQUIRE(h != NULL);
	h->map_size = map_size;
	return h;
}

/* The invariants of malloc.h: sorted, disjoint, not touching, inside. */
static void check_extents(const struct pc_huge_header *h)
{
	CHECK(huge_dirty_valid(h));
	CHECK(h->nr_dirty <= PC_HUGE_DIRTY_MAX);
	for (unsigned i = 0; i < h->nr_dirty; i++) {
		const struct pc_huge_extent *e = &h->dirty[i];
		CHECK(e->len > 0 && e->off >= PC_PAGE_SIZE && e->off + e->len <= h->map_size);
		if (i > 0)
			CHECK(h->dirty[i - 1].off + h->dirty[i - 1].len < e->off);
	}
}

static bool dirty_at(const struct pc_huge_header *h, size_t off)
{
	for (unsigned i = 0; i < h->nr_dirty; i++)
		if (off >= h->dirty[i].off && off < h->dirty[i].off + h->dirty[i].len)
			return true;
	return false;
}

TEST(extents)
{
	const size_t P = PC_PAGE_SIZE;
	struct pc_huge_header *lo = header(2 * P), *hi = header(3 * P);
	huge_dirty_all(lo);
	CHECK_EQ(lo->nr_dirty, 1);
	CHECK_EQ(huge_dirty_bytes(lo), P);
	/* 100 ranges of 3 pages with no dirty data: each adds its header page,
	 * two pages apart from the last; past the limit the closest merge. */
	for (int i = 0; i < 100; i++) {
		size_t at = lo->map_size;
		huge_dirty_join(lo, hi);
		lo->map_size += hi->map_size;
		check_extents(lo);
		CHECK(dirty_at(lo, at)); /* every header page stays dirty */
	}
	CHECK_EQ(lo->nr_dirty, PC_HUGE_DIRTY_MAX);
	for (size_t at = 2 * P; at < lo->map_size; at += 3 * P)
		CHECK(dirty_at(lo, at));
	size_t before = huge_dirty_bytes(lo);
	/* Split at the 50th joined range: its header page becomes the tail's. */
	size_t at = 2 * P + 50 * 3 * P;
	struct pc_huge_header *tail = header(lo->map_size - at);
	huge_dirty_split(lo, at, tail);
	lo->map_size = at;
	check_extents(lo);
	check_extents(tail);
	CHECK_EQ(huge_dirty_bytes(lo) + huge_dirty_bytes(tail) + P, before);
	for (size_t o = 3 * P; o < tail->map_size; o += 3 * P)
		CHECK(dirty_at(tail, o));
	free(lo);
	free(hi);
	free(tail);
}

/*
 * The joined range, made deterministic: p (40 MiB) shrunk to 8 MiB by
 * realloc (its 32 MiB tail cached, resident: a put keeps the range it puts);
 * the tail released (the bound forced to a page, then settled, as the next
 * take would leave it); then p freed next to it. Returns p: a 40 MiB range,
 * resident in its first 8 MiB (touched with 'm'), released in the rest.
 */
static char *mixed_range(void)
{
	fresh_cache();
	char *p = guarded_malloc(40 * MiB);
	touch_pages(p, 40 * MiB, 'm');
	REQUIRE(pc_realloc(p, 8 * MiB) == p);
	CHECK_EQ(huge_cache_resident(), 32 * MiB);
	CHECK_EQ(huge_cache_resident_bound(), 32 * MiB);
	pc_store_relaxed(&pc_huge_cache_test_bound, PC_PAGE_SIZE);
	huge_cache_settle();
	pc_store_relaxed(&pc_huge_cache_test_bound, 0);
	CHECK_EQ(resident_pages(p + 8 * MiB + PC_PAGE_SIZE, 31 * MiB / PC_PAGE_SIZE), 0);
	CHECK_EQ(huge_cache_resident(), 0);
	pc_free(p);
	CHECK_EQ(huge_cache_bytes(), 40 * MiB + PC_PAGE_SIZE);
	CHECK(huge_cache_resident() >= 8 * MiB); /* p's pages */
	CHECK(huge_cache_resident() <= 8 * MiB + 2 * PC_PAGE_SIZE);
	unguard();
	return p;
}

TEST(mixed_merge)
{
	char *p = mixed_range();
	char *r = pc_malloc(40 * MiB);
	CHECK(r == p); /* one range again, not 8 MiB grown elsewhere */
	REQUIRE(r != NULL);
	CHECK_EQ(count_not(r, 8 * MiB, 'm', PC_PAGE_SIZE), 0); /* the resident part kept */
	pc_free(r);
	pc_trim();
}

TEST(calloc_mixed)
{
	char *p = mixed_range();
	char *r = pc_calloc(1, 40 * MiB);
	REQUIRE(r != NULL);
	CHECK(r == p);
	/* Cleared: the resident 8 MiB (and the tail's header page); not
	 * faulted in: the released 32 MiB. */
	CHECK(resident_pages(r, 40 * MiB / PC_PAGE_SIZE) <= 8 * MiB / PC_PAGE_SIZE + 4);
	CHECK_EQ(count_not(r, 40 * MiB, 0, 512), 0);
	pc_free(r);
	pc_trim();
}

TEST(calloc_released)
{
	fresh_cache();
	char *q = guarded_malloc(20 * MiB);
	char *p = guarded_malloc(20 * MiB);
	touch_pages(p, 20 * MiB, 'p');
	touch_pages(q, 20 * MiB, 'q');
	pc_free(p);
	pc_free(q); /* two blocks over a bound of one: q kept (in transit) */
	CHECK_EQ(resident_pages(p, 20 * MiB / PC_PAGE_SIZE), 20 * MiB / PC_PAGE_SIZE);
	huge_cache_settle(); /* as a take leaves it: p's range released */
	CHECK_EQ(resident_pages(p, 20 * MiB / PC_PAGE_SIZE), 0);
	char *m = pc_malloc(20 * MiB); /* a resident range first: q's */
	CHECK(m == q);
	char *c = pc_calloc(1, 20 * MiB);
	CHECK(c == p);
	REQUIRE(c && m);
	CHECK_EQ(resident_pages(c, 20 * MiB / PC_PAGE_SIZE), 0); /* no memset */
	CHECK_EQ(count_not(c, 20 * MiB, 0, 512), 0);
	pc_free(c);
	pc_free(m);
	unguard();
	pc_trim();
}

TEST(place_resident)
{
	fresh_cache();
	char *p = guarded_malloc(40 * MiB);
	touch_pages(p, 40 * MiB, 1);
	pc_free(p);
	/* One mapping cut in four: [w 8 MiB][y 8 MiB][x 16 MiB][rest]. */
	char *w = pc_malloc(8 * MiB), *y = pc_malloc(8 * MiB), *x = pc_malloc(16 * MiB);
	REQUIRE(w && y && x);
	CHECK(w == p && y == w + 8 * MiB + PC_PAGE_SIZE && x == y + 8 * MiB + PC_PAGE_SIZE);
	pc_store_relaxed(&pc_huge_cache_test_bound, PC_PAGE_SIZE);
	pc_free(y); /* the rest released, y kept (in transit) */
	CHECK_EQ(resident_pages(y, 8 * MiB / PC_PAGE_SIZE), 8 * MiB / PC_PAGE_SIZE);
	huge_cache_settle(); /* and y */
	CHECK_EQ(huge_cache_resident(), 0);
	pc_store_relaxed(&pc_huge_cache_test_bound, 0);
	touch_pages(x, 16 * MiB, 'x');
	pc_free(x); /* joined with both: released, resident, released */
	CHECK(huge_cache_resident() >= 16 * MiB);
	char *r = pc_malloc(16 * MiB);
	CHECK(r == x);
	REQUIRE(r != NULL);
	CHECK_EQ(resident_pages(r, 16 * MiB / PC_PAGE_SIZE), 16 * MiB / PC_PAGE_SIZE);
	CHECK_EQ(count_not(r, 16 * MiB, 'x', PC_PAGE_SIZE), 0);
	char *f = pc_malloc(8 * MiB); /* the front, cached on its own */
	CHECK(f == y);
	pc_free(f);
	pc_free(r);
	pc_free(w);
	unguard();
	pc_trim();
}

TEST(remap_refused)
{
	fresh_cache();
	char *x = guarded_malloc(32 * MiB);
	char *p = guarded_malloc(20 * MiB);
	touch_pages(p, 20 * MiB, 1);
	pc_store_relaxed(&pc_huge_cache_test_bound, PC_PAGE_SIZE);
	pc_free(x);
	huge_cache_settle(); /* released */
	pc_store_relaxed(&pc_huge_cache_test_bound, 0);
	pc_free(p); /* resident: the bound is x's size */
	CHECK_EQ(huge_cache_resident(), 20 * MiB + PC_PAGE_SIZE);
	unsigned long injected = os_injected_failures();
	os_inject_map_failures(0, 1); /* the mremap growing p's range */
	char *q = pc_malloc(30 * MiB);
	os_inject_map_failures(0, 0);
	CHECK_EQ(os_injected_failures(), injected + 1);
	CHECK(q == x); /* the released range, not a new mapping */
	REQUIRE(q != NULL);
	touch_pages(q, 30 * MiB, 1);
	CHECK_EQ(huge_cache_bytes(), 20 * MiB + PC_PAGE_SIZE); /* p's kept, not unmapped */
	char *r = pc_malloc(20 * MiB);
	CHECK(r == p);
	pc_free(r);
	pc_free(q);
	unguard();
	pc_trim();
}

TEST(remap_two_vmas)
{
	fresh_cache();
	char *p = pc_malloc(20 * MiB);
	REQUIRE(p != NULL);
	touch_pages(p, 20 * MiB, 1);
	pc_free(p);
	/* Two kernel mappings under one cached range, as when two mmaps with
	 * different flags or anon_vma were joined. */
	REQUIRE(madvise(p + 8 * MiB, 4 * MiB, MADV_DONTFORK) == 0);
	char *q = pc_malloc(30 * MiB);
	REQUIRE(q != NULL);
	touch_pages(q, 30 * MiB, 2);
	CHECK_EQ(count_not(q, 30 * MiB, 2, PC_PAGE_SIZE), 0);
#if !defined(TEST_TSAN)
	CHECK_EQ(huge_cache_bytes(), 20 * MiB + PC_PAGE_SIZE); /* kept */
	char *r = pc_malloc(20 * MiB);
	CHECK(r == p);
	pc_free(r);
#endif
	pc_free(q);
	pc_trim();
}

TEST(bound_decays)
{
	fresh_cache();
	char *p = pc_malloc(40 * MiB);
	REQUIRE(p != NULL);
	pc_free(p);
	CHECK_EQ(huge_cache_resident_bound(), 40 * MiB + PC_PAGE_SIZE);
	pc_trim();
	char *q = pc_malloc(5 * MiB);
	REQUIRE(q != NULL);
	pc_free(q); /* within the delay: the 40 MiB stays the largest */
	CHECK_EQ(huge_cache_resident_bound(), 40 * MiB + PC_PAGE_SIZE);
	pc_page_clock_advance(DELAY_NS + 1000000);
	q = pc_malloc(5 * MiB);
	REQUIRE(q != NULL);
	pc_free(q); /* one delay later: halved */
	CHECK_EQ(huge_cache_resident_bound(), (40 * MiB + PC_PAGE_SIZE) / 2);
	pc_page_clock_advance(3 * DELAY_NS + 1000000);
	q = pc_malloc(5 * MiB);
	REQUIRE(q != NULL);
	pc_free(q); /* three more: an eighth of that is below 5 MiB */
	CHECK_EQ(huge_cache_resident_bound(), 5 * MiB + PC_PAGE_SIZE);
	p = pc_malloc(30 * MiB);
	REQUIRE(p != NULL);
	pc_free(p); /* a larger one counts at once */
	CHECK_EQ(huge_cache_resident_bound(), 30 * MiB + PC_PAGE_SIZE);
	pc_trim();
}

TEST(bound_per_cpu)
{
	fresh_cache();
	char *p = pc_malloc(10 * MiB);
	REQUIRE(p != NULL);
	pc_free(p);
	size_t block = 10 * MiB + PC_PAGE_SIZE;
	CHECK_EQ(huge_cache_resident_bound(), block); /* 1 CPU: one block */
	pc_store_relaxed(&pc_huge_cache_test_cpus, 2);
	CHECK_EQ(huge_cache_resident_bound(), block); /* the other CPU's */
	pc_store_relaxed(&pc_huge_cache_test_cpus, 4);
	CHECK_EQ(huge_cache_resident_bound(), 3 * block);
	pc_store_relaxed(&pc_huge_cache_test_cpus, 1);
	pc_trim();
}

TEST(most_resident)
{
	fresh_cache();
	pc_store_relaxed(&pc_huge_cache_test_cpus, 2); /* no release at b's free, whatever the rule */
	char *a = guarded_malloc(24 * MiB);
	char *b = guarded_malloc(32 * MiB);
	touch_pages(a, 24 * MiB, 'a');
	touch_pages(b, 32 * MiB, 'b');
	pc_free(a);
	pc_store_relaxed(&pc_huge_cache_test_bound, 4 * MiB);
	huge_cache_settle(); /* a's range keeps its first 4 MiB resident */
	pc_store_relaxed(&pc_huge_cache_test_bound, 0);
	CHECK_EQ(huge_cache_resident(), 4 * MiB);
	pc_free(b); /* resident whole */
	CHECK_EQ(huge_cache_resident(), 36 * MiB + PC_PAGE_SIZE);
	long f0 = minor_faults();
	char *r = pc_malloc(20 * MiB); /* a's range fits better, b's has the pages */
	CHECK(r == b);
	REQUIRE(r != NULL);
	touch_pages(r, 20 * MiB, 'r');
	CHECK(minor_faults() - f0 < 16);
	pc_free(r);
	unguard();
	pc_store_relaxed(&pc_huge_cache_test_cpus, 1);
	pc_trim();
}

TEST(grows_resident)
{
	fresh_cache();
	char *p = pc_malloc(20 * MiB);
	REQUIRE(p != NULL);
	touch_pages(p, 20 * MiB, 'p');
	pc_free(p);
	pc_store_relaxed(&pc_huge_cache_test_bound, 3 * MiB + MiB / 2);
	huge_cache_settle(); /* its first 3.5 MiB resident: over 24 MiB / 8 */
	pc_store_relaxed(&pc_huge_cache_test_bound, 0);
	char *r = pc_malloc(24 * MiB);
	REQUIRE(r != NULL);
	CHECK_EQ(huge_cache_bytes(), 0); /* the range was grown */
	CHECK_EQ(count_not(r, 3 * MiB, 'p', PC_PAGE_SIZE), 0); /* with its pages */
	pc_free(r);
	pc_trim();
}

TEST(shed_after_take)
{
	fresh_cache();
	char *p = guarded_malloc(24 * MiB);
	char *q = guarded_malloc(16 * MiB);
	touch_pages(p, 24 * MiB, 'p');
	touch_pages(q, 16 * MiB, 'q');
	pc_free(p);
	CHECK_EQ(huge_cache_resident_bound(), 24 * MiB + PC_PAGE_SIZE); /* one block */
	pc_free(q); /* over the bound by q: nothing released yet */
	CHECK_EQ(huge_cache_resident(), 40 * MiB + 2 * PC_PAGE_SIZE);
	long f0 = minor_faults();
	char *r = pc_malloc(24 * MiB);
	CHECK(r == p);
	REQUIRE(r != NULL);
	CHECK_EQ(count_not(r, 24 * MiB, 'p', PC_PAGE_SIZE), 0);
	CHECK(minor_faults() - f0 < 16); /* p's range whole */
	CHECK_EQ(huge_cache_resident(), 16 * MiB + PC_PAGE_SIZE); /* q: within the bound */
	pc_free(r);
	char *s = pc_malloc(5 * MiB); /* from q's range (the smaller): its tail cached */
	CHECK(s == q);
	REQUIRE(s != NULL);
	CHECK_EQ(huge_cache_resident(), huge_cache_resident_bound()); /* the excess went */
	CHECK_EQ(resident_pages(p, 24 * MiB / PC_PAGE_SIZE), 24 * MiB / PC_PAGE_SIZE);
	pc_free(s);
	unguard();
	pc_trim();
}

TEST(realloc_shrink)
{
	fresh_cache();
	pc_store_relaxed(&pc_huge_cache_test_cpus, 3); /* two blocks: the block and its tail */
	char *p = pc_malloc(24 * MiB);
	REQUIRE(p != NULL);
	touch_pages(p, 24 * MiB, 's');
	char *q = pc_realloc(p, 8 * MiB);
	CHECK(q == p);
	REQUIRE(q != NULL);
	CHECK_EQ(pc_malloc_usable_size(q), 8 * MiB);
	CHECK_EQ(huge_cache_bytes(), 16 * MiB);    /* the tail, cached */
	CHECK_EQ(huge_cache_resident(), 16 * MiB); /* with its pages */
	CHECK_EQ(count_not(q, 8 * MiB, 's', PC_PAGE_SIZE), 0);
	pc_free(q);
	CHECK_EQ(huge_cache_bytes(), 24 * MiB + PC_PAGE_SIZE); /* joined */
	long f0 = minor_faults();
	char *r = pc_malloc(24 * MiB);
	CHECK(r == p);
	REQUIRE(r != NULL);
	touch_pages(r, 24 * MiB, 't');
	CHECK(minor_faults() - f0 < 16); /* the tail's pages were kept */
	pc_free(r);
	pc_trim();
}

TEST(realloc_grow)
{
	fresh_cache();
	pc_store_relaxed(&pc_huge_cache_test_cpus, 3); /* two blocks */
	char *p = pc_malloc(24 * MiB);
	REQUIRE(p != NULL);
	touch_pages(p, 24 * MiB, 'g');
	REQUIRE(pc_realloc(p, 8 * MiB) == p);
	CHECK_EQ(huge_cache_bytes(), 16 * MiB); /* the tail */
	long f0 = minor_faults();
	char *q = pc_realloc(p, 12 * MiB); /* into the tail: 12 MiB left, cached */
	CHECK(q == p);
	REQUIRE(q != NULL);
	CHECK_EQ(pc_malloc_usable_size(q), 12 * MiB);
	CHECK_EQ(huge_cache_bytes(), 12 * MiB);
	q = pc_realloc(q, 24 * MiB); /* the rest, whole (the excess under an eighth) */
	CHECK(q == p);
	REQUIRE(q != NULL);
	CHECK_EQ(huge_cache_bytes(), 0);
	touch_pages(q, 24 * MiB, 'h');
	CHECK(minor_faults() - f0 < 16); /* every page was resident */
	CHECK_EQ(count_not(q, 24 * MiB, 'h', PC_PAGE_SIZE), 0);
	pc_free(q);
	pc_trim();
}

TEST(put_evicts)
{
	fresh_cache();
	REQUIRE(pc_option_set(PC_OPT_VM_HUGE_CACHE_KB, 40 * 1024, false) == 0);
	char *x = guarded_malloc(20 * MiB);
	char *y = guarded_malloc(20 * MiB);
	touch_pages(y, 20 * MiB, 'y');
	pc_store_relaxed(&pc_huge_cache_test_bound, PC_PAGE_SIZE);
	pc_free(x);
	huge_cache_settle(); /* released */
	pc_store_relaxed(&pc_huge_cache_test_bound, 0);
	CHECK_EQ(huge_cache_resident(), 0);
	pc_free(y); /* 40 MiB + 2 pages do not fit 40 MiB: x's range goes */
	CHECK_EQ(huge_cache_bytes(), 20 * MiB + PC_PAGE_SIZE);
	CHECK_EQ(huge_cache_resident(), 20 * MiB + PC_PAGE_SIZE);
	char *r = pc_malloc(20 * MiB);
	CHECK(r == y);
	pc_free(r);
	unguard();
	pc_trim();
	REQUIRE(pc_option_set(PC_OPT_VM_HUGE_CACHE_KB, 262144, false) == 0);
}

TEST(tail_keeps_time)
{
	fresh_cache();
	char *p = pc_malloc(24 * MiB);
	REQUIRE(p != NULL);
	pc_free(p);
	pc_page_clock_advance(DELAY_NS / 2);
	char *a = pc_malloc(8 * MiB); /* split: the 16 MiB tail cached */
	CHECK(a == p);
	REQUIRE(a != NULL);
	CHECK_EQ(huge_cache_bytes(), 16 * MiB);
	pc_page_clock_advance(DELAY_NS / 2 + 1000000);
	CHECK_EQ(huge_cache_expire(), 16 * MiB); /* a delay after the free */
	CHECK_EQ(huge_cache_bytes(), 0);
	pc_free(a);
	pc_trim();
}

/* One thread of threads_mixed: nonzero is the check that failed. */
static void *mixed_worker(void *arg)
{
	uint64_t x = (uintptr_t)arg * 0x9e3779b97f4a7c15ULL + 7;
	for (int i = 0; i < 16; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		size_t n = 5 * MiB + (size_t)(x % (20 * MiB));
		bool zeroed = x & 1;
		char *p = zeroed ? pc_calloc(1, n) : pc_malloc(n);
		if (!p)
			return (void *)1;
		if (zeroed) /* every page, where a pattern or a header would be */
			for (size_t o = 0; o < n; o += PC_PAGE_SIZE)
				if (p[o] != 0 || p[o + 8 < n ? o + 8 : o] != 0 ||
				    p[o + 512 < n ? o + 512 : o] != 0)
					return (void *)2;
		char v = (char)(x >> 40 | 1);
		for (size_t o = 0; o < n; o += PC_PAGE_SIZE)
			p[o] = v;
		size_t m = n / 3 > 5 * MiB ? n / 3 : 5 * MiB;
		if (x & 2) { /* shrink (the tail cached), then grow back */
			char *q = pc_realloc(p, m);
			if (!q)
				return (void *)3;
			p = pc_realloc(q, n);
			if (!p)
				return (void *)4;
			for (size_t o = 0; o < m; o += PC_PAGE_SIZE)
				if (p[o] != v)
					return (void *)5;
			for (size_t o = pc_align_up(m, PC_PAGE_SIZE); o < n; o += PC_PAGE_SIZE)
				p[o] = v; /* the pages grown */
		}
		for (size_t o = 0; o < n; o += PC_PAGE_SIZE)
			if (p[o] != v)
				return (void *)6;
		pc_free(p);
	}
	return NULL;
}

TEST(threads_mixed)
{
	fresh_cache();
	pthread_t t[4];
	for (uintptr_t i = 0; i < 4; i++)
		REQUIRE(pthread_create(&t[i], NULL, mixed_worker, (void *)(i + 1)) == 0);
	for (int i = 0; i < 4; i++) {
		void *rc = NULL;
		REQUIRE(pthread_join(t[i], &rc) == 0);
		CHECK_EQ((uintptr_t)rc, 0);
	}
	CHECK(huge_cache_resident() <= huge_cache_bytes());
	pc_trim();
	CHECK_EQ(huge_cache_bytes(), 0);
	CHECK_EQ(huge_cache_resident(), 0);
}

int main(void)
{
	RUN(extents);
	RUN(mixed_merge);
	RUN(calloc_mixed);
	RUN(calloc_released);
	RUN(place_resident);
	RUN(remap_refused);
	RUN(remap_two_vmas);
	RUN(bound_decays);
	RUN(bound_per_cpu);
	RUN(most_resident);
	RUN(grows_resident);
	RUN(shed_after_take);
	RUN(realloc_shrink);
	RUN(realloc_grow);
	RUN(put_evicts);
	RUN(tail_keeps_time);
	RUN(threads_mixed);
	pc_store_relaxed(&pc_huge_cache_test_cpus, 0);
	return test_report();
}
