/*
 * tests/unit/malloc/huge_lend.c - after a peak of small and medium blocks,
 * the address space they leave free serves huge blocks under a limit on
 * address space (issue 9, item 5: regions are never unmapped, so huge
 * blocks borrow their free ranges: page/lend.c).
 *
 * In a forked child (the limit must not touch the test itself):
 *  1. FREED bytes of blocks of 4..64 KiB (a fixed pseudo-random sequence);
 *  2. RLIMIT_AS set to the child's address space + HEADROOM, so that at most
 *     one new 8 MiB mapping fits;
 *  3. everything freed, then 8 MiB mallocs until one fails: together they
 *     must hold at least 3/4 of FREED (without lending: one block); every
 *     page of each is written with its number and read back after all are
 *     allocated (no two overlap); the page allocator's invariants hold;
 *  4. calloc of 8 MiB after a free reads zero (the range lent is dirty),
 *     realloc of a lent block moves it with its contents;
 *  5. all freed: nothing stays lent, and FREED bytes of small and medium
 *     blocks fit again.
 * No verdict depends on timing: the release delay is an hour, so no page
 * is released behind the test's back (release does not change address
 * space anyway), and a single thread allocates.
 */
#define _GNU_SOURCE
#include "test.h"
#include "unit/unit_helpers.h"

#include "malloc/malloc.h"

#include <stdlib.h>
#include <string.h>

#define MiB ((size_t)1 << 20)
#define FREED (256 * MiB)
#define HEADROOM (16 * MiB)
#define HUGE (8 * MiB)
#define MAX_SMALL 20000
#define MAX_HUGE 256

static void *small[MAX_SMALL];
static char *huge[MAX_HUGE];

/* FREED bytes of 4..64 KiB blocks; the count, or 0 if one failed. */
static size_t fill_small(void)
{
	uint64_t rng = 42;
	size_t n = 0, bytes = 0;
	while (bytes < FREED && n < MAX_SMALL) {
		rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
		size_t size = 4096 + (size_t)(rng >> 33) % (60 * 1024);
		char *p = pc_malloc(size);
		if (!p)
			return 0;
		p[0] = 1;
		p[size - 1] = 2;
		small[n++] = p;
		bytes += size;
	}
	return n;
}

static size_t lent_pages(void)
{
	size_t n = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++)
		n += pc_load_relaxed(&pc_zone_get(i)->stats.lent_pages);
	return n;
}

static void stamp(char *p, size_t bytes, uint64_t v)
{
	for (size_t off = 0; off < bytes; off += PC_PAGE_SIZE)
		memcpy(p + off, &v, sizeof v);
}

static bool stamped(const char *p, size_t bytes, uint64_t v)
{
	for (size_t off = 0; off < bytes; off += PC_PAGE_SIZE)
		if (memcmp(p + off, &v, sizeof v) != 0)
			return false;
	return true;
}

/* The child: exit codes say which step failed. */
static int child(void)
{
	if (!pc_malloc_init() || pc_option_set(PC_OPT_VM_RELEASE_DELAY_MS, 3600000, false) != 0)
		return 2;
	/* One huge block first, so that the table of huge blocks is mapped
	 * before the limit (it is mapped on the first huge malloc). */
	void *first = pc_malloc(HUGE);
	if (!first)
		return 3;
	pc_free(first);
	pc_trim();
	size_t n = fill_small();
	if (n == 0)
		return 4;
	struct rlimit rl = { mapped_bytes() + HEADROOM, 0 };
	rl.rlim_max = rl.rlim_cur;
	if (rl.rlim_cur == HEADROOM || setrlimit(RLIMIT_AS, &rl) != 0)
		return 5;
	for (size_t i = 0; i < n; i++)
		pc_free(small[i]);

	size_t k = 0;
	while (k < MAX_HUGE && (huge[k] = pc_malloc(HUGE)) != NULL) {
		stamp(huge[k], HUGE, k + 1);
		k++;
	}
	if (k * HUGE < FREED / 4 * 3) {
		fprintf(stderr, "huge_lend: %zu blocks of 8 MiB after freeing %zu MiB\n", k, FREED / MiB);
		return 6;
	}
	for (size_t i = 0; i < k; i++)
		if (!stamped(huge[i], HUGE, i + 1))
			return 7;
	if (lent_pages() == 0 || !pc_page_check())
		return 8;

	/* calloc of a dirty lent range reads zero. */
	pc_free(huge[k - 1]);
	char *z = pc_calloc(1, HUGE);
	if (!z)
		return 9;
	for (size_t i = 0; i < HUGE; i++)
		if (z[i] != 0)
			return 10;
	huge[k - 1] = z;
	stamp(z, HUGE, k);

	/* realloc of a lent block (to a large size) moves it, contents kept. */
	pc_free(huge[0]);
	char *r = pc_realloc(huge[1], 2 * MiB);
	if (!r || !stamped(r, 2 * MiB, 2))
		return 11;
	huge[0] = NULL;
	huge[1] = r;

	for (size_t i = 0; i < k; i++)
		pc_free(huge[i]);
	if (lent_pages() != 0 || !pc_page_check())
		return 12;
	/* What was lent came back: the small and medium blocks fit again. */
	n = fill_small();
	if (n == 0)
		return 13;
	for (size_t i = 0; i < n; i++)
		pc_free(small[i]);
	return pc_page_check() ? 0 : 14;
}

TEST(freed_space_serves_huge_blocks)
{
	check_in_child(child);
}

int main(void)
{
	RUN(freed_space_serves_huge_blocks);
	return test_report();
}
