/*
 * tests/unit/malloc/huge_cache.c - freed huge mappings are reused within the
 * release delay, then go back; the cache is bounded and gives way before an
 * allocation fails.
 *
 * The delay is an hour (real time never reaches it here) and the page clock
 * is moved past it (pc_page_clock_advance) where the test wants "expired":
 * no verdict depends on timing.
 *
 *  reuse_no_faults   20 MiB touched and freed, then 18 MiB: the same mapping
 *                    comes back whole (2 MiB over is within 1/8), and
 *                    touching it takes (almost) no minor faults (getrusage).
 *  calloc_clears     calloc of a recycled mapping reads zero.
 *  expires           past the delay the next huge free unmaps what is cached.
 *  expires_idle      past the delay one pass of the release thread
 *                    (pc_page_release_thread_pass, what the thread runs)
 *                    unmaps what is cached, with no huge malloc or free
 *                    after it: an idle program gives its huge blocks back.
 *  bounded           vm.huge_cache_kb below the block: it is unmapped at free.
 *  trim_flushes      pc_trim unmaps everything cached.
 *  oom_flushes       in a child under RLIMIT_AS (its address space + 128 MiB),
 *                    three 40 MiB blocks freed into the cache, then a 100 MiB
 *                    malloc: it only fits once the cache is given back, and
 *                    it succeeds.
 */
#define _GNU_SOURCE
#include "test.h"
#include "unit/unit_helpers.h"

#include "malloc/malloc.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)

TEST(reuse_no_faults)
{
	REQUIRE(pc_malloc_init());
	REQUIRE(pc_option_set(PC_OPT_VM_RELEASE_DELAY_MS, 3600000, false) == 0);
	pc_trim();
	char *p = pc_malloc(20 * MiB);
	REQUIRE(p != NULL);
	touch_pages(p, 20 * MiB, 1);
	pc_free(p);
	CHECK(huge_cache_bytes() >= 20 * MiB);
	long f0 = minor_faults();
	char *q = pc_malloc(18 * MiB);
	REQUIRE(q != NULL);
	touch_pages(q, 18 * MiB, 2);
	long faults = minor_faults() - f0;
	CHECK(q == p);
	CHECK(faults < (long)(18 * MiB / 4096) / 16);
	CHECK_EQ(huge_cache_bytes(), 0);
	pc_free(q);
}

TEST(calloc_clears)
{
	char *p = pc_malloc(12 * MiB);
	REQUIRE(p != NULL);
	memset(p, 0x77, 12 * MiB);
	pc_free(p);
	char *q = pc_calloc(1, 12 * MiB);
	REQUIRE(q != NULL);
	size_t bad = 0;
	for (size_t i = 0; i < 12 * MiB; i += 512)
		bad += q[i] != 0;
	CHECK_EQ(bad, 0);
	pc_free(q);
}

TEST(expires)
{
	char *a = pc_malloc(10 * MiB), *b = pc_malloc(10 * MiB);
	REQUIRE(a && b);
	pc_free(a);
	CHECK(huge_cache_bytes() >= 10 * MiB);
	pc_page_clock_advance((uint64_t)3600000 * 1000000u + 1000000);
	pc_free(b); /* cached, then everything older than the delay expires */
	CHECK_EQ(huge_cache_bytes(), 10 * MiB + PC_PAGE_SIZE); /* b alone */
	pc_trim();
}

TEST(expires_idle)
{
	char *a = pc_malloc(10 * MiB);
	REQUIRE(a);
	touch_pages(a, 10 * MiB, 7);
	pc_free(a);
	CHECK(huge_cache_bytes() >= 10 * MiB);
	pc_page_release_thread_pass(); /* not yet due: kept */
	CHECK(huge_cache_bytes() >= 10 * MiB);
	pc_page_clock_advance((uint64_t)3600000 * 1000000u + 1000000);
	pc_page_release_thread_pass();
	CHECK_EQ(huge_cache_bytes(), 0);
	pc_trim();
}

TEST(bounded)
{
	REQUIRE(pc_option_set(PC_OPT_VM_HUGE_CACHE_KB, 16 * 1024, false) == 0);
	char *p = pc_malloc(20 * MiB);
	REQUIRE(p != NULL);
	pc_free(p);
	CHECK_EQ(huge_cache_bytes(), 0);
	REQUIRE(pc_option_set(PC_OPT_VM_HUGE_CACHE_KB, 262144, false) == 0);
}

TEST(trim_flushes)
{
	char *p = pc_malloc(8 * MiB);
	REQUIRE(p != NULL);
	pc_free(p);
	CHECK(huge_cache_bytes() > 0);
	CHECK(pc_trim() >= 8 * MiB);
	CHECK_EQ(huge_cache_bytes(), 0);
}

/* In a child: it sets a limit on address space. Nonzero: the step that failed. */
static int oom_flushes_child(void)
{
	char *b[3];
	for (int i = 0; i < 3; i++)
		b[i] = pc_malloc(40 * MiB);
	struct rlimit rl = { mapped_bytes() - 3 * (40 * MiB + PC_PAGE_SIZE) + 128 * MiB, RLIM_INFINITY };
	rl.rlim_max = rl.rlim_cur;
	if (!b[0] || !b[1] || !b[2] || setrlimit(RLIMIT_AS, &rl) != 0)
		return 3;
	for (int i = 0; i < 3; i++)
		pc_free(b[i]);
	if (huge_cache_bytes() < 120 * MiB)
		return 4;
	char *p = pc_malloc(100 * MiB);
	return p != NULL ? 0 : 5;
}

TEST(oom_flushes)
{
	check_in_child(oom_flushes_child);
}

int main(void)
{
	RUN(reuse_no_faults);
	RUN(calloc_clears);
	RUN(expires);
	RUN(expires_idle);
	RUN(bounded);
	RUN(trim_flushes);
	RUN(oom_flushes);
	return test_report();
}
