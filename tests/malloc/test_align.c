/*
 * tests/malloc/test_align.c - the alignment edge cases of the aligned
 * allocators, as glibc gives them:
 *  - memalign with an alignment that is not a power of two rounds it up
 *    first: memalign(12, 8) is 16 aligned (the regression: the "16 or less"
 *    shortcut once ran before the rounding and gave an 8-byte class);
 *  - memalign(0, n) is malloc(n); an alignment too large to round is EINVAL;
 *  - every power of two up to 8 KiB with every size around the small
 *    classes, from memalign, aligned_alloc and posix_memalign: aligned,
 *    usable size at least the request, the whole block writable;
 *  - aligned_alloc and posix_memalign refuse 0 and non-powers of two
 *    (EINVAL), posix_memalign also alignments below sizeof(void *).
 */
#define _GNU_SOURCE
#include "malloc_test.h"

#include <stdbool.h>

static size_t next_pow2(size_t a)
{
	size_t p = 1;
	while (p < a)
		p *= 2;
	return p;
}

/* p is aligned to a, holds n usable bytes, and every one is writable. */
static bool good_block(void *p, size_t a, size_t n)
{
	if (!p || !is_aligned(p, a) || p_usable(p) < n)
		return false;
	memset(p, 0x5a, n);
	return true;
}

TEST(memalign_rounds_before_the_small_shortcut)
{
	/* Several blocks held at once: a freed block comes straight back, and
	 * one 16-byte-aligned slot must not hide the 8-byte-aligned ones. */
	void *held[4];
	for (int k = 0; k < 4; k++) {
		held[k] = p_memalign(12, 8);
		CHECK(held[k] != NULL && is_aligned(held[k], 16));
	}
	for (int k = 0; k < 4; k++)
		p_free(held[k]);
	int bad = 0;
	for (size_t a = 1; a <= 8192 + 1; a++) {
		if ((a & (a - 1)) == 0)
			continue;
		static const size_t ns[] = { 0, 1, 7, 8, 9, 15, 16, 24, 100 };
		for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
			for (int k = 0; k < 4; k++) {
				held[k] = p_memalign(a, ns[i]);
				if (!good_block(held[k], next_pow2(a), ns[i]) && bad++ < 5)
					fprintf(stderr, "  memalign(%zu, %zu) = %p\n", a, ns[i], held[k]);
			}
			for (int k = 0; k < 4; k++)
				p_free(held[k]);
		}
	}
	CHECK_EQ(bad, 0);
}

TEST(memalign_zero_and_too_large)
{
	void *p = p_memalign(0, 10);
	CHECK(good_block(p, 8, 10));
	p_free(p);
	errno = 0;
	CHECK(p_memalign(SIZE_MAX, 10) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(p_memalign(SIZE_MAX / 2 + 2, 10) == NULL);
	CHECK_EQ(errno, EINVAL);
}

TEST(every_power_every_small_size)
{
	int bad = 0;
	for (size_t a = 1; a <= 8192; a *= 2) {
		for (size_t n = 0; n <= 8200; n += n < 300 ? 1 : 97) {
			void *p = p_memalign(a, n);
			bad += !good_block(p, a, n);
			p_free(p);
			p = p_aligned_alloc(a, n);
			bad += !good_block(p, a, n);
			p_free(p);
			if (a >= sizeof(void *)) {
				p = NULL;
				bad += p_posix_memalign(&p, a, n) != 0 || !good_block(p, a, n);
				p_free(p);
			}
		}
	}
	CHECK_EQ(bad, 0);
}

TEST(refused_alignments)
{
	static const size_t bad[] = { 0, 3, 12, 24, 4097, SIZE_MAX };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		CHECK(p_aligned_alloc(bad[i], 64) == NULL);
		CHECK_EQ(errno, EINVAL);
		void *p = (void *)1;
		CHECK_EQ(p_posix_memalign(&p, bad[i], 64), EINVAL);
		CHECK(p == (void *)1);
	}
	void *p = (void *)1;
	CHECK_EQ(p_posix_memalign(&p, 4, 64), EINVAL);
	CHECK(p == (void *)1);
}

int main(void)
{
	RUN(malloc_interposed);
	RUN(memalign_rounds_before_the_small_shortcut);
	RUN(memalign_zero_and_too_large);
	RUN(every_power_every_small_size);
	RUN(refused_alignments);
	return test_report();
}
