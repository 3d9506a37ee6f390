/*
 * tests/unit/slab/slots.c - pc_slab_is_slot, the check behind "free() of a
 * pointer that starts no object is refused": for slot sizes of every shape
 * (powers of two, odd multiples of 8 and 16, constructor layouts, large
 * alignments), at every byte of a whole slab it must say yes exactly at the
 * slot starts below objects * size, and no inside a slot and in the slack
 * after the last one. The exact-division trick has no rounding to get wrong
 * only if this holds everywhere, so the test is exhaustive per slab. The
 * test reads its inputs from the slab's head descriptor (written by
 * slab_new) and works modulo 2^32, exact because a slab is at most 2^31
 * bytes (static assertion in slab.h): large slots (slabs of order 3 to 9)
 * are walked too, where that margin is smallest. The walker (pc_cache_check)
 * must refuse a slab whose fields are wrong. And a slab given back to the
 * page allocator leaves no page that free's fast test (malloc.h
 * small_slab, which tests no page state) would take for a slab page.
 */
#include "test.h"

#include "malloc/malloc.h" /* small_slab: free's fast test */
#include "slab/slab.h"

static void ctor(void *p) { (void)p; }

/* A new cache *s and its first object *obj; returns the object's slab. */
static struct pc_page *first_slab(const char *name, size_t size, size_t align, void (*c)(void *),
				  struct pc_cache **s, void **obj)
{
	*s = pc_cache_create(name, size, align, c);
	REQUIRE(*s != NULL);
	*obj = pc_cache_alloc(*s);
	REQUIRE(*obj != NULL);
	struct pc_page *slab = pc_slab_of(*obj);
	REQUIRE(slab != NULL);
	return slab;
}

static void check_cache(size_t size, size_t align, bool with_ctor)
{
	struct pc_cache *s;
	void *obj;
	struct pc_page *slab = first_slab("slots", size, align, with_ctor ? ctor : NULL, &s, &obj);
	char *base = pc_page_address(slab);
	size_t bytes = PC_PAGE_SIZE << pc_pg_order(slab);
	size_t objects = PC_SLAB_OBJECTS(atomic_load(&slab_word(slab)->word));
	long wrong = 0;
	for (size_t off = 0; off < bytes; off++) {
		bool expect = off % s->size == 0 && off / s->size < objects;
		/* from the head, and from the byte's own page (free's fast path) */
		struct pc_page *own = pc_page_of(base + off);
		bool from_head = pc_slab_is_slot(s, slab, base + off);
		bool from_own = pc_pg_in_slab(own) && pc_slab_head(own, base + off) == slab &&
				pc_slab_is_slot(s, own, base + off);
		if ((from_head != expect || from_own != expect) && wrong++ < 3)
			fprintf(stderr, "  size %zu (slot %zu): offset %zu says %d/%d\n", size,
				s->size, off, from_head, from_own);
	}
	CHECK_EQ(wrong, 0);
	/* The inputs of the test in every page's descriptor (the walker checks
	 * them against the cache and the slab word too). */
	for (size_t i = 0; i < bytes / PC_PAGE_SIZE; i++) {
		CHECK_EQ(slab[i].slot_objects, objects);
		CHECK_EQ(slab[i].slot_shift, s->slot_shift);
		CHECK_EQ(slab[i].slot_inverse, (uint32_t)s->slot_inverse);
		CHECK(slab[i].owner == s);
		CHECK_EQ(pc_pg_state(&slab[i]), i == 0 ? PC_PG_SLAB : PC_PG_TAIL);
	}
	CHECK_EQ(pc_cache_check(s), 1);
	pc_cache_free(s, obj);
	CHECK_EQ(pc_cache_destroy(s), 0);
}

TEST(every_byte_of_a_slab)
{
	for (size_t size = 8; size <= 8192; size += size < 256 ? 8 : size < 2048 ? 40 : 328)
		check_cache(size, 0, false);
	/* Large slots: slabs of order 3 to 9, where the 32-bit product's margin
	 * (objects <= 2^(31 - shift) / odd) is smallest. */
	static const size_t big[] = { 24576, 40000, 100000, 333333, 1 << 20, 2000000 };
	for (size_t i = 0; i < PC_ARRAY_SIZE(big); i++)
		check_cache(big[i], 0, false);
	static const size_t odd[] = { 1, 3, 5, 7, 9, 13, 17, 100, 1000, 3000, 4095, 4097, 12345 };
	for (size_t i = 0; i < PC_ARRAY_SIZE(odd); i++) {
		check_cache(odd[i], 0, false);
		check_cache(odd[i], 0, true);
		check_cache(odd[i], 64, false);
		check_cache(odd[i], 4096, false);
	}
}

/* The walker refuses a slab any of whose pages (the head, or the last tail)
 * has slot test fields, owner or mask that disagree with its cache or its
 * slab word (a wrong count would let free accept slack pointers). */
static void walker_checks_page(struct pc_cache *s, struct pc_page *pg)
{
	pg->slot_objects++;
	CHECK_EQ(pc_cache_check(s), -1);
	pg->slot_objects--;
	pg->slot_shift++;
	CHECK_EQ(pc_cache_check(s), -1);
	pg->slot_shift--;
	pg->slot_inverse += 2;
	CHECK_EQ(pc_cache_check(s), -1);
	pg->slot_inverse -= 2;
	pg->aux >>= 1;
	CHECK_EQ(pc_cache_check(s), -1);
	pg->aux = pg->aux << 1 | 1;
	void *owner = pg->owner;
	pg->owner = NULL;
	CHECK_EQ(pc_cache_check(s), -1);
	pg->owner = owner;
	CHECK_EQ(pc_cache_check(s), 1);
}

TEST(walker_checks_the_fields)
{
	struct pc_cache *s = pc_cache_create("slots-walk", 1000, 0, NULL);
	REQUIRE(s != NULL);
	void *obj = pc_cache_alloc(s);
	REQUIRE(obj != NULL);
	struct pc_page *slab = pc_slab_of(obj);
	REQUIRE(slab != NULL);
	size_t pages = (size_t)1 << pc_pg_order(slab);
	REQUIRE(pages > 1); /* a tail to plant in */
	CHECK_EQ(pc_cache_check(s), 1);
	walker_checks_page(s, slab);
	walker_checks_page(s, &slab[pages - 1]);
	pc_pg_set_state(&slab[pages - 1], PC_PG_NONE); /* a tail that is not */
	CHECK_EQ(pc_cache_check(s), -1);
	pc_pg_set_state(&slab[pages - 1], PC_PG_TAIL);
	CHECK_EQ(pc_cache_check(s), 1);
	pc_cache_free(s, obj);
	CHECK_EQ(pc_cache_destroy(s), 0);
}

/* free's fast path tests no page state: only pages of a live slab have a
 * non-zero slot_objects (page.h). Once a slab is given back to the page
 * allocator (here by pc_cache_shrink, its only object freed), every page of
 * it must read 0 there, so that free's fast test (malloc.h small_slab)
 * refuses every old slot start, on the head and on every tail page. */
static void discarded_refused(size_t size)
{
	struct pc_cache *s;
	void *obj;
	struct pc_page *slab = first_slab("slots-gone", size, 0, NULL, &s, &obj);
	char *base = pc_page_address(slab);
	size_t pages = (size_t)1 << pc_pg_order(slab);
	size_t objects = slab->slot_objects, slot = s->size;
	CHECK(small_slab(base) == slab && small_slab(base + (objects - 1) * slot) != NULL);
	CHECK(small_slab(base + 1) == NULL); /* inside a slot, as before */
	pc_cache_free(s, obj);
	REQUIRE(pc_cache_shrink(s) > 0); /* the slab went back */
	CHECK(pc_slab_of(obj) == NULL);
	long accepted = 0;
	for (size_t i = 0; i < pages; i++)
		CHECK_EQ(slab[i].slot_objects, 0);
	for (size_t i = 0; i < objects; i++)
		accepted += small_slab(base + i * slot) != NULL;
	CHECK_EQ(accepted, 0);
	CHECK_EQ(pc_cache_destroy(s), 0);
}

TEST(discarded_slab_refused)
{
	static const size_t sizes[] = { 8, 64, 1000, 3000, 8192, 40000 }; /* orders 0 to 4 */
	for (size_t i = 0; i < PC_ARRAY_SIZE(sizes); i++)
		discarded_refused(sizes[i]);
}

int main(void)
{
	pc_page_init();
	RUN(every_byte_of_a_slab);
	RUN(walker_checks_the_fields);
	RUN(discarded_slab_refused);
	return test_report();
}
