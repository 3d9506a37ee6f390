/*
 * tests/unit/malloc/huge_thp.c - huge mappings for transparent huge pages
 * (vm.huge_thp, malloc/huge.c map_new).
 *
 * Whether the kernel really backs a range with huge pages depends on the
 * machine (its THP setting, free 2 MiB pages), so that is not checked here;
 * what pcmalloc does is:
 *
 *  aligned          vm.huge_thp=1: a new huge block's mapping (its header
 *                   page) starts on a 2 MiB boundary and carries
 *                   MADV_HUGEPAGE ("hg" in its VmFlags in /proc/self/smaps,
 *                   where the kernel has THP); the block is usable to its
 *                   last byte.
 *  first_extent     vm.huge_thp=1: the advice comes before the header is
 *                   written, so the block's first 2 MiB (header page
 *                   included) may get a huge page like the next 2 MiB: after
 *                   touching a new block, the kernel mapping (VMA) cut at
 *                   2 MiB (MADV_DONTFORK on the second 2 MiB) shows
 *                   AnonHugePages in the first part wherever it shows it in
 *                   the second. Where the kernel gives no huge page to the
 *                   second (THP off, or no free 2 MiB page) the check is
 *                   skipped; a first part without one beside a second with
 *                   one is tried once more on a new mapping (the kernel may
 *                   have found no free 2 MiB page for the first fault only).
 *  off              vm.huge_thp=0: blocks still work (any page alignment),
 *                   without the advice.
 *  slack_refused    in a child under RLIMIT_AS that leaves room for the
 *                   block but not for the 2 MiB of alignment slack: the
 *                   mapping is tried again without it and malloc succeeds.
 */
#define _GNU_SOURCE
#include "test.h"
#include "unit/unit_helpers.h"

#include "malloc/malloc.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)
#define THP (2 * MiB)

static const struct pc_huge_header *header_of(void *p)
{
	return huge_header(p);
}

/* Whether the mapping holding p carries VM_HUGEPAGE (MADV_HUGEPAGE was
 * applied): "hg" in its VmFlags line in /proc/self/smaps. */
static bool advised_hugepage(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	REQUIRE(f != NULL);
	char line[512];
	bool inside = false, found = false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			continue;
		}
		if (inside && strncmp(line, "VmFlags:", 8) == 0) {
			found = strstr(line, " hg") != NULL;
			break;
		}
	}
	fclose(f);
	return found;
}

TEST(aligned)
{
	bool thp_kernel = access("/sys/kernel/mm/transparent_hugepage", F_OK) == 0;
	REQUIRE(pc_malloc_init());
	REQUIRE(pc_option_set(PC_OPT_VM_HUGE_THP, 1, false) == 0);
	pc_trim(); /* nothing cached: the blocks below are new mappings */
	for (size_t mb = 5; mb <= 40; mb += 7) {
		char *p = pc_malloc(mb * MiB + 123);
		REQUIRE(p != NULL);
		const struct pc_huge_header *h = header_of(p);
		REQUIRE(h != NULL);
		CHECK_EQ((uintptr_t)h->map_base % THP, 0);
		CHECK(p == (char *)h->map_base + PC_PAGE_SIZE);
		if (thp_kernel) /* a kernel without THP refuses the advice */
			CHECK(advised_hugepage(p));
		p[0] = 1;
		p[mb * MiB + 122] = 2;
		CHECK(pc_malloc_usable_size(p) >= mb * MiB + 123);
		pc_free(p);
		pc_trim();
	}
}

/* AnonHugePages (kB) of the kernel mapping holding p, in /proc/self/smaps. */
static long anon_huge_kb(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	REQUIRE(f != NULL);
	char line[512];
	bool inside = false;
	long kb = -1;
	while (kb < 0 && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
		else if (inside && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

/* A new block's first and second 2 MiB: AnonHugePages (kB) of each, after
 * touching it and cutting its mapping between them. */
static void huge_kb_of_new_block(long *first, long *second)
{
	pc_trim(); /* a new mapping */
	char *p = pc_malloc(4 * MiB + 2 * PC_PAGE_SIZE);
	REQUIRE(p != NULL);
	char *base = (char *)header_of(p)->map_base;
	REQUIRE((uintptr_t)base % THP == 0);
	memset(p, 3, 4 * MiB);
	REQUIRE(madvise(base + THP, THP, MADV_DONTFORK) == 0); /* cut at 2 MiB */
	*first = anon_huge_kb(p);
	*second = anon_huge_kb(base + THP);
	REQUIRE(madvise(base + THP, THP, MADV_DOFORK) == 0);
	pc_free(p);
	pc_trim();
}

TEST(first_extent)
{
	REQUIRE(pc_option_set(PC_OPT_VM_HUGE_THP, 1, false) == 0);
	long first = -1, second = -1;
	huge_kb_of_new_block(&first, &second);
	if (first == 0 && second > 0) /* once more: a fault the kernel found no page for */
		huge_kb_of_new_block(&first, &second);
	CHECK(first >= 0 && second >= 0);
	if (second == 0) {
		fprintf(stderr, "first_extent: SKIP, the kernel gave no huge page\n");
		return;
	}
	CHECK(first >= second); /* 2048 and 2048 */
}

TEST(off)
{
	REQUIRE(pc_option_set(PC_OPT_VM_HUGE_THP, 0, false) == 0);
	char *p = pc_malloc(9 * MiB);
	REQUIRE(p != NULL);
	memset(p, 5, 9 * MiB);
	CHECK_EQ(p[9 * MiB - 1], 5);
	CHECK(!advised_hugepage(p));
	pc_free(p);
	pc_trim();
	REQUIRE(pc_option_set(PC_OPT_VM_HUGE_THP, 1, false) == 0);
}

/* In a child: it sets a limit on address space. Nonzero: the step that failed. */
static int slack_refused_child(void)
{
	pc_trim();
	size_t block = 64 * MiB;
	/* Room for the block and its header page plus 1 MiB: not for
	 * the 2 MiB of slack an aligned mapping maps first. */
	struct rlimit rl = { mapped_bytes() + block + PC_PAGE_SIZE + MiB, 0 };
	rl.rlim_max = rl.rlim_cur;
	if (setrlimit(RLIMIT_AS, &rl) != 0)
		return 3;
	char *p = pc_malloc(block);
	if (!p)
		return 4;
	p[0] = p[block - 1] = 1;
	pc_free(p);
	return 0;
}

TEST(slack_refused)
{
	check_in_child(slack_refused_child);
}

int main(void)
{
	RUN(aligned);
	RUN(first_extent);
	RUN(off);
	RUN(slack_refused);
	return test_report();
}
