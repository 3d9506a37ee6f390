/*
 * tests/unit/malloc/huge_split.c - the huge cache splits, merges and bounds
 * what stays resident (malloc/huge_cache.c).
 *
 * The delay is an hour, so nothing expires during a test; no verdict
 * depends on timing. Fault counts (getrusage) are only compared where they
 * are deterministic: pages of a range the cache kept resident do not fault.
 *
 *  split_and_merge   20 MiB touched and freed; 6 MiB comes from its front
 *                    and the tail stays cached, resident; freeing the 6 MiB
 *                    joins them again, and 20 MiB comes back whole, at the
 *                    same address, without faulting its pages in again.
 *  tail_reused       the split-off tail serves a second block while the
 *                    first is live; contents of both intact.
 *  resident_bounded  more blocks freed than the resident bound holds (the
 *                    bound counts 3 CPUs, pc_huge_cache_test_cpus, so that
 *                    12 blocks exceed it on any machine): the
 *                    cache keeps all of their address space, resident
 *                    bytes stay within one largest block per other CPU
 *                    after each malloc, and that plus the block freed
 *                    after each free; pc_trim unmaps it all.
 *  threads_cycle     4 threads cycling 5-25 MiB blocks (split, merged,
 *                    grown, released concurrently): each block's pattern is
 *                    intact when freed (PC_TEST_LABELS: tsan).
 */
#define _GNU_SOURCE
#include "test.h"
#include "unit/unit_helpers.h"

#include "malloc/malloc.h"

#include <pthread.h>

#define MiB ((size_t)1 << 20)

static size_t count_not(const char *p, size_t n, char v)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i += 4096)
		bad += p[i] != v;
	return bad;
}

TEST(split_and_merge)
{
	REQUIRE(pc_malloc_init());
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_DELAY_MS, 3600000, false) == 0);
	pc_trim();
	char *p = pc_malloc(20 * MiB);
	REQUIRE(p != NULL);
	touch_pages(p, 20 * MiB, 1);
	pc_free(p);
	char *q = pc_malloc(6 * MiB);
	REQUIRE(q != NULL);
	CHECK(q == p);
	CHECK_EQ(huge_cache_bytes(), 14 * MiB);      /* the tail, still mapped */
	CHECK_EQ(huge_cache_resident(), 14 * MiB);   /* and resident */
	pc_free(q);
	CHECK_EQ(huge_cache_bytes(), 20 * MiB + PC_PAGE_SIZE); /* joined */
	long f0 = minor_faults();
	char *r = pc_malloc(20 * MiB);
	REQUIRE(r != NULL);
	CHECK(r == p);
	touch_pages(r, 20 * MiB, 2);
	CHECK(minor_faults() - f0 < 16); /* the header pages at most */
	CHECK_EQ(huge_cache_bytes(), 0);
	pc_free(r);
	pc_trim();
}

TEST(tail_reused)
{
	char *p = pc_malloc(24 * MiB);
	REQUIRE(p != NULL);
	pc_free(p);
	char *a = pc_malloc(8 * MiB);
	char *b = pc_malloc(12 * MiB);
	REQUIRE(a && b);
	CHECK(a == p);
	CHECK(b == a + 8 * MiB + PC_PAGE_SIZE); /* the tail's header page first */
	touch_pages(a, 8 * MiB, 3);
	touch_pages(b, 12 * MiB, 4);
	CHECK_EQ(count_not(a, 8 * MiB, 3), 0);
	CHECK_EQ(count_not(b, 12 * MiB, 4), 0);
	CHECK_EQ(pc_malloc_usable_size(a), 8 * MiB);
	CHECK_EQ(pc_malloc_usable_size(b), 12 * MiB);
	pc_free(b);
	pc_free(a);
	CHECK_EQ(huge_cache_bytes(), 24 * MiB + PC_PAGE_SIZE); /* whole again */
	pc_trim();
}

TEST(resident_bounded)
{
	enum { N = 12 };
	char *b[N];
	size_t size = 5 * MiB;
	pc_store_relaxed(&pc_huge_cache_test_cpus, 3);
	for (int i = 0; i < N; i++) {
		b[i] = pc_malloc(size);
		REQUIRE(b[i] != NULL);
		touch_pages(b[i], size, (char)i);
	}
	for (int i = 0; i < N; i++) {
		pc_free(b[i]); /* the block freed may pass the bound */
		CHECK(huge_cache_resident() <= huge_cache_resident_bound() + size + PC_PAGE_SIZE);
	}
	CHECK_EQ(huge_cache_bytes(), N * (size + PC_PAGE_SIZE)); /* address space kept */
	CHECK(huge_cache_resident_bound() < huge_cache_bytes());
	CHECK(huge_cache_resident() < huge_cache_bytes()); /* some released */
	for (int i = 0; i < N; i++) { /* every range is usable again */
		b[i] = pc_malloc(size);
		REQUIRE(b[i] != NULL);
		CHECK(huge_cache_resident() <= huge_cache_resident_bound()); /* after a take */
		touch_pages(b[i], size, (char)(i + 1));
		CHECK_EQ(count_not(b[i], size, (char)(i + 1)), 0);
	}
	for (int i = 0; i < N; i++)
		pc_free(b[i]);
	CHECK(pc_trim() >= N * size);
	CHECK_EQ(huge_cache_bytes(), 0);
	CHECK_EQ(huge_cache_resident(), 0);
	pc_store_relaxed(&pc_huge_cache_test_cpus, 0);
}

static void *cycle(void *arg)
{
	uint64_t x = (uintptr_t)arg * 0x9e3779b97f4a7c15ULL + 1;
	for (int i = 0; i < 24; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		size_t n = 5 * MiB + (size_t)(x % (20 * MiB));
		char *p = pc_malloc(n);
		if (!p)
			return (void *)1;
		char v = (char)(x >> 32 | 1);
		for (size_t o = 0; o < n; o += 64 * 1024)
			p[o] = v;
		p[n - 1] = v;
		for (size_t o = 0; o < n; o += 64 * 1024)
			if (p[o] != v)
				return (void *)2;
		if (p[n - 1] != v || pc_malloc_usable_size(p) < n)
			return (void *)3;
		pc_free(p);
	}
	return NULL;
}

TEST(threads_cycle)
{
	pthread_t t[4];
	for (uintptr_t i = 0; i < 4; i++)
		REQUIRE(pthread_create(&t[i], NULL, cycle, (void *)(i + 1)) == 0);
	for (int i = 0; i < 4; i++) {
		void *rc = NULL;
		REQUIRE(pthread_join(t[i], &rc) == 0);
		CHECK(rc == NULL);
	}
	CHECK(huge_cache_resident() <= huge_cache_bytes());
	pc_trim();
	CHECK_EQ(huge_cache_bytes(), 0);
	CHECK_EQ(huge_cache_resident(), 0);
}

int main(void)
{
	RUN(split_and_merge);
	RUN(tail_reused);
	RUN(resident_bounded);
	RUN(threads_cycle);
	return test_report();
}
