/*
 * tests/malloc/test_delay.c - freed pages stay for reuse, then go back to
 * the OS: through the C API, as a program sees it.
 *
 * The test runs with vm.release_delay_ms = an hour and the bound raised to
 * 1 GiB (ENV in tests/CMakeLists.txt), so that nothing is released on its
 * own while it runs: no verdict depends on timing. Blocks are 1 MiB (large:
 * whole pages from the page allocator).
 *
 *   reuse_no_faults  64 MiB touched and freed: RSS stays; the same amount
 *                    allocated and touched again takes (almost) no minor
 *                    page faults (getrusage).
 *   trim_at_once     malloc_trim(0) then returns 1 and RSS falls by most of
 *                    the 64 MiB at once.
 *   delay_live       vm.release_delay_ms set to 0 with pcmalloc_ctl_set:
 *                    the next frees give the pages back without a trim.
 *   thread_live      vm.release_thread=1: the next malloc slow path starts
 *                    one more thread in the process (/proc/self/status);
 *                    back to 0, the thread leaves (the test waits for it
 *                    without a time limit: how long it takes is no verdict).
 * On another malloc (no pcmalloc_ctl_set) only the first two run, with the
 * RSS checks skipped (glibc returns large blocks at free).
 */
#define _GNU_SOURCE
#include "malloc_test.h"

#define NBLOCKS 64
#define BLOCK MiB

static char *blocks[NBLOCKS];
static int (*ctl_set)(const char *, long);

static void alloc_touch(int pattern)
{
	for (int i = 0; i < NBLOCKS; i++) {
		blocks[i] = p_malloc(BLOCK);
		REQUIRE(blocks[i] != NULL);
		memset(blocks[i], pattern, BLOCK);
	}
}

static void free_all(void)
{
	for (int i = 0; i < NBLOCKS; i++)
		p_free(blocks[i]);
}

TEST(reuse_no_faults)
{
	alloc_touch(0x11);
	size_t r1 = rss_bytes();
	free_all();
	if (ctl_set)
		CHECK(rss_bytes() + 8 * MiB >= r1); /* kept for reuse */
	long f0 = minor_faults();
	alloc_touch(0x22);
	long faults = minor_faults() - f0;
	if (ctl_set)
		CHECK(faults < (long)(NBLOCKS * BLOCK / 4096) / 16);
	printf("delay: %ld minor faults reusing %d MiB\n", faults, NBLOCKS);
	free_all();
}

TEST(trim_at_once)
{
	alloc_touch(0x33);
	free_all();
	size_t r1 = rss_bytes();
	int rc = p_malloc_trim(0);
	size_t r2 = rss_bytes();
	printf("delay: malloc_trim -> %d, RSS %zu -> %zu MiB\n", rc, r1 / MiB, r2 / MiB);
	if (!ctl_set)
		return;
	CHECK_EQ(rc, 1);
	CHECK(r2 + 48 * MiB <= r1);
}

TEST(delay_live)
{
	alloc_touch(0x44);
	size_t r1 = rss_bytes();
	REQUIRE(ctl_set("vm.release_delay_ms", 0) == 0);
	free_all();
	size_t r2 = rss_bytes();
	CHECK(r2 + 48 * MiB <= r1);
	REQUIRE(ctl_set("vm.release_delay_ms", 3600000) == 0);
}

TEST(thread_live)
{
	int t0 = thread_count();
	REQUIRE(ctl_set("vm.release_thread", 1) == 0);
	p_free(p_malloc(BLOCK)); /* a slow path: starts the thread */
	CHECK_EQ(thread_count(), t0 + 1);
	REQUIRE(ctl_set("vm.release_thread", 0) == 0);
	while (thread_count() != t0)
		usleep(1000);
}

int main(void)
{
	*(void **)&ctl_set = dlsym(RTLD_DEFAULT, "pcmalloc_ctl_set");
	if (expect_all())
		REQUIRE(ctl_set != NULL);
	RUN(malloc_interposed);
	RUN(reuse_no_faults);
	RUN(trim_at_once);
	if (ctl_set) {
		RUN(delay_live);
		RUN(thread_live);
	}
	return test_report();
}
