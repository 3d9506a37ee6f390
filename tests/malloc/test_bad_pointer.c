/*
 * tests/malloc/test_bad_pointer.c - pointers that malloc never returned are
 * refused, by default, with pcmalloc's fatal message and an abort (as glibc
 * does for "free(): invalid pointer"), never a segfault or a silent mis-free:
 *  - interior pointers of small objects (the slot's second byte, its
 *    middle; tests/unit/slab/slots.c checks every byte of a slab), of large blocks
 *    (inside the first page and on a later page) and of huge blocks;
 *  - a double free of a large block, a free of a slot of a slab that went
 *    back to the page allocator (malloc_trim);
 *  - a double free of a huge block;
 *  - a stack pointer, a pointer into a foreign mapping, a pointer into
 *    unmapped memory, a page-aligned pointer with nothing mapped below it;
 *  - pointers into pcmalloc's own metadata right below a region (its last
 *    descriptor page and its header page: page.h, struct pc_region), which
 *    is mapped but no region's span;
 * through free, realloc and malloc_usable_size. Each case runs in a forked
 * child with its stderr on a pipe; the parent checks that the child died of
 * SIGABRT and wrote "pcmalloc: fatal: <function>(" ... "invalid pointer".
 * Page-aligned foreign pointers and freed huge blocks rely on the table of
 * live huge blocks (malloc.h), which never reads memory pcmalloc did not map.
 */
#define _GNU_SOURCE
#include "malloc_test.h"

#include <stdbool.h>
#include <sys/mman.h>

enum call { CALL_FREE, CALL_REALLOC, CALL_USABLE };
static const char *const call_name[] = { "free", "realloc", "malloc_usable_size" };

static void do_call(enum call c, void *p)
{
	if (c == CALL_FREE) {
		p_free(p);
	} else if (c == CALL_REALLOC) {
		void *q = p_realloc(p, 100);
		(void)q;
	} else {
		size_t n = p_usable(p);
		(void)n;
	}
}

struct bad_call {
	enum call c;
	void *(*setup)(void);
};

static void bad_call_run(void *arg)
{
	struct bad_call *b = arg;
	do_call(b->c, b->setup());
}

/* Runs setup() then the call on what it returns, in a child; true if the
 * child aborted with pcmalloc's message for that call. */
static bool refused(enum call c, void *(*setup)(void), const char *what)
{
	char buf[1024], expect[64];
	struct bad_call b = { c, setup };
	int status = test_in_child(bad_call_run, &b, buf, sizeof(buf)); /* exits 0: accepted */
	snprintf(expect, sizeof(expect), "pcmalloc: fatal: %s(", call_name[c]);
	bool ok = test_aborted_with(status, buf, expect) && strstr(buf, "invalid pointer");
	if (!ok)
		fprintf(stderr, "  %s(%s): status %#x, stderr <<%s>>\n", call_name[c], what, status, buf);
	return ok;
}

/* ---- the bad pointers -------------------------------------------------------- */
static size_t small_size; /* set by the parent before each fork */

static void *small_plus_1(void) { return (char *)p_malloc(small_size) + 1; }
static void *small_middle(void) { return (char *)p_malloc(small_size) + small_size / 2; }
/* The 5000-byte block of the issue: q + 64 lies inside its 5120-byte slot. */
static void *small_5000_plus_64(void) { return (char *)p_malloc(5000) + 64; }
static void *large_plus_64(void) { return (char *)p_malloc(100 * KiB) + 64; }
static void *large_next_page(void) { return (char *)p_malloc(100 * KiB) + 4096; }
static void *large_freed(void)
{
	void *p = p_malloc(100 * KiB);
	p_free(p);
	return p;
}
/* A slot start of a slab that went back to the page allocator: 64 blocks
 * of a class this fresh child uses for nothing else, all freed, then
 * malloc_trim, which flushes the sheaves and gives every empty slab back.
 * free's fast path tests no page state (malloc.h small_slab): it must find
 * slot_objects cleared on those pages (slab_discard). */
static void *small_freed_slab(void)
{
	void *ps[64];
	for (int i = 0; i < 64; i++)
		ps[i] = p_malloc(3000);
	for (int i = 0; i < 64; i++)
		p_free(ps[i]);
	p_malloc_trim(0);
	return ps[0];
}
static void *huge_plus_64(void) { return (char *)p_malloc(8 * MiB) + 64; }
static void *huge_next_page(void) { return (char *)p_malloc(8 * MiB) + 4096; }
static void *stack_pointer(void)
{
	static volatile char *keep;
	char local[64];
	keep = local;
	return (void *)((uintptr_t)keep | 8); /* not page aligned */
}
static void *foreign_mapping(void)
{
	char *m = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(m != MAP_FAILED);
	return m + 4096 + 16;
}
static void *unmapped(void) { return (void *)(uintptr_t)0x10; }
/* Page aligned, with nothing mapped in the page before it: the case that once
 * made free() read a huge-block header that was not there (a segfault). */
static void *foreign_page_aligned(void)
{
	char *m = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(m != MAP_FAILED);
	munmap(m, 4096);
	return m + 4096;
}
/* A region is 64 MiB, aligned to its size (page.h PC_REGION_SIZE); its
 * metadata ends at its base: 1 MiB of descriptors, a header page below. */
#define REGION_BYTES ((uintptr_t)64 << 20)
static char *region_base_of_small(void)
{
	return (char *)((uintptr_t)p_malloc(64) & ~(REGION_BYTES - 1));
}
static void *region_descriptors(void) { return region_base_of_small() - 4096 + 64; }
static void *region_header(void) { return region_base_of_small() - (1 << 20) - 4096 + 64; }
static void *huge_freed(void)
{
	void *p = p_malloc(8 * MiB);
	p_free(p);
	return p;
}

TEST(interior_small)
{
	static const size_t sizes[] = { 16, 24, 48, 100, 512, 1000, 3000, 8192 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		small_size = sizes[i];
		for (int c = CALL_FREE; c <= CALL_USABLE; c++) {
			CHECK(refused((enum call)c, small_plus_1, "small + 1"));
			CHECK(refused((enum call)c, small_middle, "small + size/2"));
		}
	}
	for (int c = CALL_FREE; c <= CALL_USABLE; c++) {
		CHECK(refused((enum call)c, small_5000_plus_64, "malloc(5000) + 64"));
	}
}

TEST(interior_large_and_huge)
{
	for (int c = CALL_FREE; c <= CALL_USABLE; c++) {
		CHECK(refused((enum call)c, large_plus_64, "large + 64"));
		CHECK(refused((enum call)c, large_next_page, "large + 4096"));
		CHECK(refused((enum call)c, large_freed, "freed large"));
		CHECK(refused((enum call)c, small_freed_slab, "slot of a slab given back"));
		CHECK(refused((enum call)c, huge_plus_64, "huge + 64"));
		CHECK(refused((enum call)c, huge_next_page, "huge + 4096"));
	}
}

TEST(foreign)
{
	for (int c = CALL_FREE; c <= CALL_USABLE; c++) {
		CHECK(refused((enum call)c, stack_pointer, "stack"));
		CHECK(refused((enum call)c, foreign_mapping, "foreign mapping"));
		CHECK(refused((enum call)c, unmapped, "unmapped"));
		CHECK(refused((enum call)c, foreign_page_aligned, "page aligned, nothing below"));
		CHECK(refused((enum call)c, huge_freed, "freed huge"));
		CHECK(refused((enum call)c, region_descriptors, "a region's descriptors"));
		CHECK(refused((enum call)c, region_header, "a region's header page"));
	}
}

/* The check refuses only bad pointers: every slot of a slab is accepted. */
TEST(every_slot_accepted)
{
	for (size_t n = 16; n <= MT_SMALL_MAX; n += n < 256 ? 16 : 256) {
		void *ps[64];
		for (int i = 0; i < 64; i++) {
			ps[i] = p_malloc(n);
			CHECK(ps[i] != NULL && p_usable(ps[i]) >= n);
		}
		for (int i = 0; i < 64; i++)
			p_free(ps[i]);
	}
}

int main(void)
{
	RUN(malloc_interposed);
	RUN(interior_small);
	RUN(interior_large_and_huge);
	RUN(foreign);
	RUN(every_slot_accepted);
	return test_report();
}
