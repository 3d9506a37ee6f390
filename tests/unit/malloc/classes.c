/*
 * tests/unit/malloc/classes.c - size classes and block kinds of the malloc
 * layer (white-box: links the static library, so malloc here is pcmalloc).
 */
#include "test.h"

#include "malloc/malloc.h"

TEST(smallest_class_holds_every_size)
{
	REQUIRE(pc_malloc_init());
	for (size_t size = 0; size <= PC_SMALL_MAX; size++) {
		unsigned c = pc_size_class(size);
		REQUIRE(c < PC_NR_CLASSES);
		CHECK(pc_class_size[c] >= size);
		if (c > 0)
			CHECK(pc_class_size[c - 1] < size);
		if (size >= 16)
			CHECK(pc_class_size[c] % 16 == 0);
	}
}

TEST(worst_case_waste)
{
	/* Above 128 bytes no class wastes more than 20% (docs/size-classes.md). */
	for (unsigned c = 9; c < PC_NR_CLASSES; c++) {
		size_t smallest = pc_class_size[c - 1] + 1u;
		CHECK((pc_class_size[c] - smallest) * 5 <= pc_class_size[c]);
	}
}

TEST(small_blocks_come_from_their_class_cache)
{
	for (size_t size = 1; size <= PC_SMALL_MAX; size = size * 3 / 2 + 1) {
		void *p = pc_malloc(size);
		REQUIRE(p);
		CHECK(pc_slab_cache_of(p) == pc_class_cache[pc_size_class(size)]);
		CHECK_EQ(pc_malloc_usable_size(p), pc_class_size[pc_size_class(size)]);
		pc_free(p);
	}
}

/* Medium and large blocks are runs of exactly the pages asked for. */
static size_t large_usable_expected(size_t size)
{
	return pc_align_up(size, PC_PAGE_SIZE);
}

TEST(large_blocks_are_exact_page_counts)
{
	for (size_t size = PC_SMALL_MAX + 1; size <= PC_LARGE_MAX; size = size * 5 / 4) {
		char *p = pc_malloc(size);
		REQUIRE(p);
		CHECK(pc_page_of(p)->state == PC_PG_LARGE);
		CHECK_EQ(pc_malloc_usable_size(p), large_usable_expected(size));
		memset(p, 0x5a, size);
		pc_free(p);
	}
	CHECK(pc_page_check());
}

TEST(huge_blocks_have_their_own_mapping)
{
	size_t size = PC_LARGE_MAX + 12345;
	char *p = pc_malloc(size);
	REQUIRE(p);
	CHECK(pc_page_of(p) == NULL);
	CHECK(huge_header(p) != NULL);
	CHECK(pc_malloc_usable_size(p) >= size);
	size_t before = huge_count();
	p[size - 1] = 1;
	pc_free(p);
	CHECK_EQ(huge_count(), before - 1);
}

TEST(realloc_shrinks_large_in_place)
{
	char *p = pc_malloc(128 * PC_PAGE_SIZE);
	REQUIRE(p);
	memset(p, 7, 128 * PC_PAGE_SIZE);
	char *q = pc_realloc(p, 80 * PC_PAGE_SIZE);
	CHECK(q == p);
	CHECK_EQ(pc_malloc_usable_size(q), 80 * PC_PAGE_SIZE);
	CHECK(q[80 * PC_PAGE_SIZE - 1] == 7);
	pc_free(q);
	CHECK(pc_page_check());
}

/* A medium block shrinks in place too, to the exact page count, contents
 * kept. */
TEST(realloc_medium)
{
	char *p = pc_malloc(64 * PC_PAGE_SIZE);
	REQUIRE(p);
	memset(p, 9, 64 * PC_PAGE_SIZE);
	char *q = pc_realloc(p, 40 * PC_PAGE_SIZE);
	CHECK(q == p);
	CHECK_EQ(pc_malloc_usable_size(q), 40 * PC_PAGE_SIZE);
	char *r = pc_realloc(q, 20 * PC_PAGE_SIZE);
	REQUIRE(r);
	CHECK(r == q);
	CHECK_EQ(pc_malloc_usable_size(r), 20 * PC_PAGE_SIZE);
	size_t bad = 0;
	for (size_t i = 0; i < 20 * PC_PAGE_SIZE; i++)
		bad += r[i] != 9;
	CHECK_EQ(bad, 0);
	pc_free(r);
	CHECK(pc_page_check());
}

int main(void)
{
	RUN(smallest_class_holds_every_size);
	RUN(worst_case_waste);
	RUN(small_blocks_come_from_their_class_cache);
	RUN(large_blocks_are_exact_page_counts);
	RUN(huge_blocks_have_their_own_mapping);
	RUN(realloc_shrinks_large_in_place);
	RUN(realloc_medium);
	return test_report();
}
