/*
 * tests/unit/os/map_first.c - os_map's aligned mappings (os/linux.c,
 * os_mmap_aligned; docs/footprint.md, "2026-11-24 night, helper startup"):
 *
 *  first_over_maps      the process's first aligned mapping maps size +
 *                       alignment at once: exactly one mmap(2) (then the
 *                       head and tail are unmapped); the next tries the
 *                       size alone first: one mmap(2), or two when that one
 *                       is not aligned.
 *  first_under_limit    in a fresh child whose address space limit
 *                       (RLIMIT_AS) leaves room for the size but not for
 *                       size + alignment: the over-map is refused and the
 *                       size alone is tried (at least two mmap(2) calls, at
 *                       most four with the two exact places); whatever comes
 *                       back is aligned (NULL when every place was taken).
 *
 * Runs first thing in main: nothing before it maps with an alignment.
 */
#define _GNU_SOURCE
#include "os/os.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <sys/resource.h>

#define MiB ((size_t)1 << 20)

static bool aligned(const void *p, size_t align)
{
	return ((uintptr_t)p & (align - 1)) == 0;
}

/* Forked before first_over_maps: no aligned mapping made in it yet. */
static int under_limit_child(void)
{
	size_t size = 4 * MiB, align = 4 * MiB;
	char buf[256];
	unsigned long vm_pages = 0;
	if (os_read_file("/proc/self/statm", buf, sizeof(buf)) <= 0 ||
	    sscanf(buf, "%lu", &vm_pages) != 1)
		return 10;
	/* Room for size and 64 pages more (stacks, the kernel's rounding), not
	 * for size + align - page. Only the soft limit: a hard one set lower
	 * already (ulimit -v) cannot be raised, and then there is nothing to
	 * test here. */
	struct rlimit lim;
	if (getrlimit(RLIMIT_AS, &lim) != 0)
		return 11;
	rlim_t want = vm_pages * PC_PAGE_SIZE + size + 64 * PC_PAGE_SIZE;
	if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < want) {
		fprintf(stderr, "note: RLIMIT_AS hard limit below %lu: first_under_limit skipped\n",
			(unsigned long)want);
		return 0;
	}
	lim.rlim_cur = want;
	if (setrlimit(RLIMIT_AS, &lim) != 0)
		return 11;
	unsigned long before = os_maps_made();
	void *p = os_map(size, align);
	unsigned long made = os_maps_made() - before;
	if (made < 2 || made > 4)
		return 12;
	if (p != NULL && !aligned(p, align))
		return 13;
	return 0;
}

TEST(first_under_limit)
{
	check_in_child(under_limit_child); /* its CHECK_EQ prints a failed step */
}

TEST(first_over_maps)
{
	size_t size = 4 * MiB, align = 4 * MiB;
	unsigned long before = os_maps_made();
	char *p = os_map(size, align);
	REQUIRE(p != NULL);
	CHECK(aligned(p, align));
	CHECK_EQ(os_maps_made() - before, 1);
	p[0] = p[size - 1] = 1;
	before = os_maps_made();
	char *q = os_map(size, align);
	REQUIRE(q != NULL);
	CHECK(aligned(q, align));
	unsigned long made = os_maps_made() - before;
	CHECK(made == 1 || made == 2);
	os_unmap(q, size);
	os_unmap(p, size);
}

int main(void)
{
	RUN(first_under_limit); /* a child: before any aligned mapping here */
	RUN(first_over_maps);
	return test_report();
}
