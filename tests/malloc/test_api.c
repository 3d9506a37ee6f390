/*
 * tests/malloc/test_api.c - the malloc API as glibc 2.38+ documents it, one
 * TEST per function or promise and one named CHECK per sub-point.
 *
 * Runs linked against libpcmalloc.so, against libpcmalloc.a, and as a plain
 * program under LD_PRELOAD. With PCMALLOC_EXPECT_ALL=1 in the environment
 * the optional symbols (cfree) must exist too.
 *
 * Checks that fail on glibc 2.36 (the reference at the time of writing)
 * because glibc itself deviates from the spec are marked "glibc < 2.38
 * deviates" next to their TEST.
 */
#define _GNU_SOURCE
#include "malloc_test.h"

#include <stdbool.h>

/* glibc 2.26 took cfree out of its headers; it is looked up with dlsym. */
extern void cfree(void *);

/* Sizes on and around every class boundary. */
static const size_t sizes[] = {
	1, 2, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 48, 63, 64, 65, 96, 127, 128,
	129, 200, 255, 256, 257, 511, 512, 513, 1000, 1023, 1024, 1025, 2047, 2048,
	2049, 3000, 4095, 4096, 4097, 6000, 8191, 8192, 8193, 12288, 16384, 16385,
	65535, 65536, 65537, 100000, 262144, 262145, 1048575, 1048576, 1048577,
	MT_LARGE_MAX - 1, MT_LARGE_MAX, MT_LARGE_MAX + 1, 6 * MiB, 16 * MiB + 3,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Requests that cannot be met on any 64-bit machine. */
static const size_t too_large[] = {
	SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 4096, SIZE_MAX - 16 * MiB,
	(size_t)PTRDIFF_MAX + 1, (size_t)PTRDIFF_MAX, (size_t)1 << 62, (size_t)1 << 48,
};
#define NTOO_LARGE (sizeof(too_large) / sizeof(too_large[0]))

/* A failed allocation must be NULL with errno ENOMEM. */
static void check_enomem(const char *what, size_t n, void *p, int err, int line)
{
	if (p != NULL || err != ENOMEM) {
		fprintf(stderr, "%s:%d: %s: %s(%zu) gave %p errno %d, want NULL/ENOMEM\n",
			__FILE__, line, test_current, what, n, p, err);
		test_current_failed = 1;
	}
	if (p)
		p_free(p);
}
#define CHECK_ENOMEM(what, n, call)                                            \
	do {                                                                   \
		errno = 0;                                                     \
		void *r_ = (call);                                             \
		check_enomem(what, n, r_, errno, __LINE__);                    \
	} while (0)

/* Every byte of [p, p + n) readable and writable, and aligned as n needs. */
static bool block_ok(void *p, size_t n)
{
	if (!p || !is_aligned(p, min_alignment(n)))
		return false;
	if (p_usable(p) < n)
		return false;
	memset(p, 0xa5, n);
	return ((unsigned char *)p)[n - 1] == 0xa5;
}

TEST(malloc_sizes)
{
	void *ps[NSIZES];
	for (size_t i = 0; i < NSIZES; i++) {
		ps[i] = p_malloc(sizes[i]);
		CHECK(ps[i] != NULL);
		if (!ps[i])
			continue;
		bool fundamental = is_aligned(ps[i], min_alignment(sizes[i]));
		CHECK(fundamental); /* what an object of this size may need */
		if (sizes[i] >= 16)
			CHECK(is_aligned(ps[i], 16)); /* 16 bytes for every size >= 16 */
		CHECK(p_usable(ps[i]) >= sizes[i]);
		pattern_fill(ps[i], sizes[i]);
	}
	/* All alive at once: none overlaps another. */
	for (size_t i = 0; i < NSIZES; i++) {
		if (ps[i]) {
			bool intact = pattern_check(ps[i], sizes[i]);
			CHECK(intact);
			if (!intact)
				fprintf(stderr, "  block of %zu bytes damaged\n", sizes[i]);
		}
		p_free(ps[i]);
	}
}

TEST(malloc_random)
{
	enum { N = 20000 };
	static void *ps[N];
	static size_t ns[N];
	uint64_t rng = 42;
	int bad_align = 0, bad_usable = 0, nulls = 0, damaged = 0;
	for (int i = 0; i < N; i++) {
		ns[i] = random_size(&rng, 20, 1, 8 * MiB);
		ps[i] = p_malloc(ns[i]);
		if (!ps[i]) {
			nulls++;
			continue;
		}
		bad_align += !is_aligned(ps[i], min_alignment(ns[i]));
		bad_usable += p_usable(ps[i]) < ns[i];
		pattern_fill(ps[i], ns[i]);
		/* Free a random earlier one now and then, so blocks are reused. */
		int j = (int)(test_rand(&rng) % (uint64_t)(i + 1));
		if (j != i && ps[j] && test_rand(&rng) % 3 == 0) {
			damaged += !pattern_check(ps[j], ns[j]);
			p_free(ps[j]);
			ps[j] = NULL;
		}
	}
	for (int i = 0; i < N; i++) {
		if (ps[i]) {
			damaged += !pattern_check(ps[i], ns[i]);
			p_free(ps[i]);
		}
	}
	CHECK_EQ(nulls, 0);
	CHECK_EQ(bad_align, 0);
	CHECK_EQ(bad_usable, 0);
	CHECK_EQ(damaged, 0);
}

TEST(malloc_zero)
{
	enum { N = 64 };
	void *ps[N];
	for (int i = 0; i < N; i++) {
		ps[i] = p_malloc(0);
		CHECK(ps[i] != NULL);
	}
	int dup = 0;
	for (int i = 0; i < N; i++)
		for (int j = i + 1; j < N; j++)
			dup += ps[i] && ps[i] == ps[j];
	CHECK_EQ(dup, 0); /* distinct pointers */
	for (int i = 0; i < N; i++)
		p_free(ps[i]);
}

TEST(too_large)
{
	for (size_t i = 0; i < NTOO_LARGE; i++) {
		size_t n = too_large[i];
		CHECK_ENOMEM("malloc", n, p_malloc(n));
		CHECK_ENOMEM("calloc(1, n)", n, p_calloc(1, n));
		CHECK_ENOMEM("calloc(n, 1)", n, p_calloc(n, 1));
		CHECK_ENOMEM("realloc(NULL, n)", n, p_realloc(NULL, n));
		CHECK_ENOMEM("reallocarray(NULL, n, 1)", n, p_reallocarray(NULL, n, 1));
		CHECK_ENOMEM("memalign(64, n)", n, p_memalign(64, n));
		CHECK_ENOMEM("memalign(4096, n)", n, p_memalign(4096, n));
		CHECK_ENOMEM("aligned_alloc(64, n)", n, p_aligned_alloc(64, n));
		CHECK_ENOMEM("valloc", n, p_valloc(n));
		CHECK_ENOMEM("pvalloc", n, p_pvalloc(n));
		void *sentinel = (void *)0x1234, *mp = sentinel;
		int rc = p_posix_memalign(&mp, 64, n);
		CHECK_EQ(rc, ENOMEM);
		CHECK(mp == sentinel); /* *memptr untouched */
	}
}

TEST(free_keeps_errno)
{
	static const size_t ns[] = { 16, 1000, 8192, 100000, 4 * MiB, 4 * MiB + 1, 64 * MiB };
	errno = 1234;
	p_free(NULL);
	CHECK_EQ(errno, 1234);
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		void *p = p_malloc(ns[i]);
		CHECK(p != NULL);
		memset(p, 1, ns[i]);
		errno = 1234;
		p_free(p);
		CHECK_EQ(errno, 1234);
	}
	/* Many frees in a row, so that whatever free does now and then (a
	 * flush, a trim, an munmap) happens under a set errno too. */
	enum { N = 4096 };
	static void *ps[N];
	uint64_t rng = 7;
	for (int i = 0; i < N; i++)
		ps[i] = p_malloc(random_size(&rng, 50, 2, 8 * MiB));
	int changed = 0;
	for (int i = 0; i < N; i++) {
		errno = 4321;
		p_free(ps[i]);
		changed += errno != 4321;
	}
	CHECK_EQ(changed, 0);
}

TEST(calloc)
{
	/* Dirty blocks of each size, free them, calloc the same sizes: the
	 * recycled memory must come back zeroed. */
	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		void *dirty[4];
		for (int k = 0; k < 4; k++) {
			dirty[k] = p_malloc(n);
			if (dirty[k])
				memset(dirty[k], 0xee, p_usable(dirty[k]));
		}
		for (int k = 0; k < 4; k++)
			p_free(dirty[k]);
		for (int k = 0; k < 4; k++) {
			unsigned char *c = p_calloc(1, n);
			CHECK(c != NULL);
			if (!c)
				continue;
			size_t nonzero = 0;
			for (size_t b = 0; b < n; b++)
				nonzero += c[b] != 0;
			CHECK_EQ(nonzero, 0);
			if (nonzero)
				fprintf(stderr, "  calloc(1, %zu): %zu bytes not zero\n", n, nonzero);
			dirty[k] = c;
		}
		for (int k = 0; k < 4; k++)
			p_free(dirty[k]);
	}
	/* n * m split both ways. */
	unsigned char *c = p_calloc(1000, 1000);
	CHECK(c != NULL);
	if (c) {
		size_t nonzero = 0;
		for (size_t b = 0; b < 1000 * 1000; b++)
			nonzero += c[b] != 0;
		CHECK_EQ(nonzero, 0);
		p_free(c);
	}
	void *z1 = p_calloc(0, 16), *z2 = p_calloc(16, 0), *z3 = p_calloc(0, 0);
	CHECK(z1 != NULL && z2 != NULL && z3 != NULL); /* like malloc(0) */
	p_free(z1);
	p_free(z2);
	p_free(z3);
	/* n * m overflows size_t */
	CHECK_ENOMEM("calloc(2^32, 2^32)", (size_t)1 << 32, p_calloc((size_t)1 << 32, (size_t)1 << 32));
	CHECK_ENOMEM("calloc(SIZE_MAX/2+1, 2)", SIZE_MAX / 2 + 1, p_calloc(SIZE_MAX / 2 + 1, 2));
	CHECK_ENOMEM("calloc(SIZE_MAX, SIZE_MAX)", SIZE_MAX, p_calloc(SIZE_MAX, SIZE_MAX));
	CHECK_ENOMEM("calloc(3, SIZE_MAX/3+1)", SIZE_MAX / 3 + 1, p_calloc(3, SIZE_MAX / 3 + 1));
	CHECK_ENOMEM("calloc(65537, 65537*65537)", (size_t)65537 * 65537,
		     p_calloc(65537, (size_t)65537 * 65537 * 65537));
}

/* Grows a block through every class and back down, checking that the
 * bytes both sizes share survive each step. */
static int realloc_walk(const size_t *walk, size_t n)
{
	int lost = 0;
	size_t have = walk[0];
	unsigned char *p = p_malloc(have);
	if (!p)
		return 1;
	pattern_fill(p, have);
	for (size_t i = 1; i < n; i++) {
		size_t want = walk[i];
		uint64_t key = pattern_key(p, have);
		unsigned char *q = p_realloc(p, want);
		if (!q) {
			p_free(p);
			return lost + 1;
		}
		size_t keep = have < want ? have : want;
		if (!pattern_check_from(q, have, keep, key, 0)) {
			fprintf(stderr, "  realloc %zu -> %zu lost contents\n", have, want);
			lost++;
		}
		pattern_fill(q, want);
		p = q;
		have = want;
	}
	p_free(p);
	return lost;
}

TEST(realloc)
{
	/* realloc(NULL, n) is malloc(n). */
	void *p = p_realloc(NULL, 100);
	CHECK(p != NULL && p_usable(p) >= 100);
	p_free(p);
	p = p_realloc(NULL, 0);
	CHECK(p != NULL); /* realloc(NULL, 0) is malloc(0) */
	p_free(p);

	/* Contents kept across small <-> large and large <-> huge. */
	static const size_t up_down[] = {
		1, 15, 16, 100, 1000, 8191, 8192, 8193, 65536, 1 * MiB, MT_LARGE_MAX,
		MT_LARGE_MAX + 1, 16 * MiB, 64 * MiB + 7, 16 * MiB, MT_LARGE_MAX + 1,
		MT_LARGE_MAX, 100000, 8193, 8192, 8191, 100, 16, 1,
	};
	CHECK_EQ(realloc_walk(up_down, sizeof(up_down) / sizeof(up_down[0])), 0);
	static const size_t jumps[] = {
		10, 20 * MiB, 10, 3 * MiB, 12000, 8 * MiB, 5000, 9000, 30, 4 * MiB + 1, 4 * MiB,
	};
	CHECK_EQ(realloc_walk(jumps, sizeof(jumps) / sizeof(jumps[0])), 0);
	size_t walk[2000];
	uint64_t rng = 99;
	for (int i = 0; i < 2000; i++)
		walk[i] = random_size(&rng, 150, 10, 12 * MiB);
	CHECK_EQ(realloc_walk(walk, 2000), 0);

	/* In place: same size, or any size up to the usable size, keeps the
	 * block where it is. */
	static const size_t inplace[] = { 24, 5000, 100000, MT_LARGE_MAX, 10 * MiB };
	for (size_t i = 0; i < sizeof(inplace) / sizeof(inplace[0]); i++) {
		void *a = p_malloc(inplace[i]);
		CHECK(a != NULL);
		void *b = p_realloc(a, inplace[i]);
		CHECK(b == a); /* same size: in place */
		size_t u = p_usable(b);
		void *c = p_realloc(b, u);
		CHECK(c == b); /* up to the usable size: in place */
		p_free(c);
	}

	/* realloc(p, 0) frees p and returns NULL, as glibc does. */
	p = p_malloc(100);
	CHECK(p != NULL);
	void *r = p_realloc(p, 0);
	CHECK(r == NULL);
	if (r)
		p_free(r);
	p = p_malloc(5 * MiB);
	r = p_realloc(p, 0);
	CHECK(r == NULL);
	if (r)
		p_free(r);

	/* A failed realloc returns NULL + ENOMEM and leaves the block intact. */
	static const size_t keep[] = { 10, 4000, 8192, 9000, 300000, 6 * MiB };
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		size_t n = keep[i];
		void *a = p_malloc(n);
		CHECK(a != NULL);
		if (!a)
			continue;
		pattern_fill(a, n);
		for (size_t j = 0; j < NTOO_LARGE; j++)
			CHECK_ENOMEM("realloc(p, n)", too_large[j], p_realloc(a, too_large[j]));
		CHECK(pattern_check(a, n)); /* block intact after failed realloc */
		void *b = p_realloc(a, n * 2); /* and still usable */
		CHECK(b != NULL);
		if (b) {
			CHECK(pattern_check_from(b, n, n, pattern_key(a, n), 0));
			p_free(b);
		} else {
			p_free(a);
		}
	}
}

TEST(reallocarray)
{
	int *a = p_reallocarray(NULL, 100, sizeof(int));
	CHECK(a != NULL);
	if (!a)
		return;
	for (int i = 0; i < 100; i++)
		a[i] = i;
	int *b = p_reallocarray(a, 1000000, sizeof(int)); /* small -> large */
	CHECK(b != NULL);
	if (!b) {
		p_free(a);
		return;
	}
	int bad = 0;
	for (int i = 0; i < 100; i++)
		bad += b[i] != i;
	CHECK_EQ(bad, 0);
	/* nmemb * size overflows: NULL + ENOMEM, block intact */
	errno = 0;
	void *c = p_reallocarray(b, SIZE_MAX / 2, 3);
	CHECK(c == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	c = p_reallocarray(b, (size_t)1 << 33, (size_t)1 << 33);
	CHECK(c == NULL);
	CHECK_EQ(errno, ENOMEM);
	bad = 0;
	for (int i = 0; i < 100; i++)
		bad += b[i] != i;
	CHECK_EQ(bad, 0);
	CHECK_ENOMEM("reallocarray(NULL, SIZE_MAX, 2)", SIZE_MAX, p_reallocarray(NULL, SIZE_MAX, 2));
	p_free(b);
}

TEST(posix_memalign)
{
	static const size_t ns[] = { 0, 1, 8, 16, 100, 4096, 8192, 8193, 100000, 5 * MiB };
	for (size_t a = sizeof(void *); a <= 1 * MiB; a *= 2) {
		for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
			void *p = (void *)0x1234;
			int rc = p_posix_memalign(&p, a, ns[i]);
			CHECK_EQ(rc, 0);
			if (rc != 0)
				continue;
			CHECK(p != (void *)0x1234);
			CHECK(is_aligned(p, a));
			if (p && ns[i]) {
				CHECK(block_ok(p, ns[i]));
			}
			p_free(p);
		}
	}
	/* EINVAL for 0, non-powers of two and alignments below sizeof(void *),
	 * *memptr untouched. */
	static const size_t bad[] = { 0, 1, 2, 4, 3, 12, 24, 48, 100, 4097, (size_t)1 << 20 | 8,
				      SIZE_MAX, SIZE_MAX - 7 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		void *sentinel = (void *)0x1234, *p = sentinel;
		int rc = p_posix_memalign(&p, bad[i], 64);
		CHECK_EQ(rc, EINVAL);
		CHECK(p == sentinel);
		if (rc != EINVAL)
			fprintf(stderr, "  posix_memalign(alignment %zu) gave %d\n", bad[i], rc);
		if (rc == 0 && p != sentinel)
			p_free(p);
	}
	/* An alignment no memory can satisfy fails (ENOMEM or EINVAL), still
	 * without touching *memptr. */
	void *sentinel = (void *)0x1234, *p = sentinel;
	int rc = p_posix_memalign(&p, (size_t)1 << 62, 64);
	CHECK(rc == ENOMEM || rc == EINVAL);
	CHECK(p == sentinel);
	if (rc == 0)
		p_free(p);
}

TEST(aligned_alloc)
{
	static const size_t ns[] = { 1, 16, 100, 4096, 8193, 100000, 5 * MiB };
	for (size_t a = 1; a <= 1 * MiB; a *= 2) {
		for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
			void *p = p_aligned_alloc(a, ns[i]);
			CHECK(p != NULL);
			CHECK(is_aligned(p, a));
			CHECK(block_ok(p, ns[i]));
			p_free(p);
		}
	}
	/* Size not a multiple of the alignment: allowed since C17 (DR 460). */
	void *p = p_aligned_alloc(64, 100);
	CHECK(p != NULL && is_aligned(p, 64));
	p_free(p);
}

/* glibc < 2.38 deviates: its aligned_alloc is memalign and accepts any
 * alignment, rounding it up to a power of two (0 meaning "any"). */
TEST(aligned_alloc_bad_alignment)
{
	static const size_t bad[] = { 0, 3, 24, 48, 100, 4097, SIZE_MAX };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		void *p = p_aligned_alloc(bad[i], 64);
		int err = errno;
		CHECK(p == NULL);
		CHECK_EQ(err, EINVAL);
		if (p || err != EINVAL)
			fprintf(stderr, "  aligned_alloc(%zu, 64) gave %p errno %d\n", bad[i], p, err);
		if (p)
			p_free(p);
	}
}

TEST(memalign)
{
	static const size_t ns[] = { 1, 16, 100, 4096, 8193, 100000, 5 * MiB };
	for (size_t a = 1; a <= 1 * MiB; a *= 2) {
		for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
			void *p = p_memalign(a, ns[i]);
			CHECK(p != NULL);
			CHECK(is_aligned(p, a));
			CHECK(block_ok(p, ns[i]));
			p_free(p);
		}
	}
	/* A non-power of two is either refused (EINVAL) or, as glibc
	 * documents, rounded up to the next power of two. */
	static const size_t odd[] = { 3, 24, 48, 100, 4097 };
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		size_t next = 1;
		while (next < odd[i])
			next *= 2;
		errno = 0;
		void *p = p_memalign(odd[i], 64);
		int err = errno;
		CHECK((p == NULL && err == EINVAL) || (p != NULL && is_aligned(p, next)));
		p_free(p);
	}
}

TEST(valloc_pvalloc)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	static const size_t ns[] = { 1, 100, 4095, 4096, 4097, 8193, 100000, 5 * MiB + 1 };
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		void *p = p_valloc(ns[i]);
		CHECK(p != NULL);
		CHECK(is_aligned(p, page)); /* valloc: page aligned */
		CHECK(block_ok(p, ns[i]));
		p_free(p);
		size_t rounded = (ns[i] + page - 1) & ~(page - 1);
		p = p_pvalloc(ns[i]);
		CHECK(p != NULL);
		CHECK(is_aligned(p, page)); /* pvalloc: page aligned */
		CHECK(block_ok(p, rounded)); /* and rounded up to whole pages */
		p_free(p);
	}
	void *p = p_valloc(0);
	p_free(p);
	CHECK_ENOMEM("pvalloc(SIZE_MAX - page)", SIZE_MAX - page, p_pvalloc(SIZE_MAX - page));
	CHECK_ENOMEM("pvalloc(SIZE_MAX - 100)", SIZE_MAX - 100, p_pvalloc(SIZE_MAX - 100));
}

/* Alignments up to 64 MiB from each aligned allocator, several blocks
 * alive at once (each written in full, none overlapping another). */
TEST(big_alignments)
{
	enum { MAXB = 64 };
	void *ps[MAXB];
	size_t ns[MAXB];
	int n = 0;
	static const size_t sz[] = { 16, 5000, 1 * MiB + 5 };
	for (size_t a = 2 * MiB; a <= 64 * MiB; a *= 2) {
		for (size_t i = 0; i < 3; i++) {
			void *p1 = NULL;
			int rc = p_posix_memalign(&p1, a, sz[i]);
			CHECK_EQ(rc, 0);
			void *p2 = p_aligned_alloc(a, sz[i]);
			void *p3 = p_memalign(a, sz[i]);
			void *trio[3] = { rc == 0 ? p1 : NULL, p2, p3 };
			for (int k = 0; k < 3; k++) {
				CHECK(trio[k] != NULL);
				CHECK(is_aligned(trio[k], a));
				if (trio[k] && n < MAXB) {
					CHECK(block_ok(trio[k], sz[i]));
					pattern_fill(trio[k], sz[i]);
					ps[n] = trio[k];
					ns[n++] = sz[i];
				} else {
					p_free(trio[k]);
				}
			}
		}
	}
	int damaged = 0;
	for (int i = 0; i < n; i++) {
		damaged += !pattern_check(ps[i], ns[i]);
		p_free(ps[i]);
	}
	CHECK_EQ(damaged, 0);
	/* Many mixed aligned blocks, freed in random order with plain ones. */
	enum { N = 3000 };
	static void *qs[N];
	static size_t qn[N];
	uint64_t rng = 5;
	int misaligned = 0, nulls = 0;
	for (int i = 0; i < N; i++) {
		size_t a = (size_t)1 << (test_rand(&rng) % 17); /* 1 .. 64 KiB */
		qn[i] = random_size(&rng, 30, 1, 6 * MiB);
		qs[i] = (i & 1) ? p_aligned_alloc(a, qn[i]) : p_malloc(qn[i]);
		if (!qs[i]) {
			nulls++;
			continue;
		}
		misaligned += !is_aligned(qs[i], (i & 1) ? a : min_alignment(qn[i]));
		pattern_fill(qs[i], qn[i]);
	}
	damaged = 0;
	for (int i = 0; i < N; i++) {
		int j = (int)(test_rand(&rng) % N);
		void *t = qs[i];
		size_t tn = qn[i];
		qs[i] = qs[j];
		qn[i] = qn[j];
		qs[j] = t;
		qn[j] = tn;
	}
	for (int i = 0; i < N; i++) {
		if (qs[i])
			damaged += !pattern_check(qs[i], qn[i]);
		p_free(qs[i]);
	}
	CHECK_EQ(nulls, 0);
	CHECK_EQ(misaligned, 0);
	CHECK_EQ(damaged, 0);
}

TEST(usable_size)
{
	CHECK_EQ(p_usable(NULL), 0); /* 0 for NULL */
	/* >= the request, and every usable byte writable without touching a
	 * neighbour: write all of each block's usable size, then check the
	 * requested part of every other block. */
	enum { N = 2 * NSIZES };
	void *ps[N];
	size_t ns[N];
	for (size_t i = 0; i < N; i++) {
		ns[i] = sizes[i % NSIZES] + (i >= NSIZES ? 3 : 0);
		ps[i] = p_malloc(ns[i]);
		CHECK(ps[i] != NULL);
	}
	int short_usable = 0, damaged = 0;
	for (size_t i = 0; i < N; i++) {
		if (!ps[i])
			continue;
		size_t u = p_usable(ps[i]);
		short_usable += u < ns[i];
		memset(ps[i], 0xcc, u);
	}
	for (size_t i = 0; i < N; i++)
		if (ps[i])
			pattern_fill(ps[i], ns[i]);
	for (size_t i = 0; i < N; i++) {
		if (!ps[i])
			continue;
		size_t u = p_usable(ps[i]);
		/* writing the slack of block i leaves every other block alone */
		memset((char *)ps[i] + ns[i], 0x33, u - ns[i]);
	}
	for (size_t i = 0; i < N; i++) {
		if (ps[i])
			damaged += !pattern_check(ps[i], ns[i]);
		p_free(ps[i]);
	}
	CHECK_EQ(short_usable, 0);
	CHECK_EQ(damaged, 0);
	/* Aligned blocks and calloc'd ones too. */
	void *a = p_memalign(4096, 10);
	CHECK(a != NULL && p_usable(a) >= 10);
	p_free(a);
	void *c = p_calloc(3, 7);
	CHECK(c != NULL && p_usable(c) >= 21);
	p_free(c);
	void *z = p_malloc(0);
	CHECK(z != NULL);
	p_free(z);
}

TEST(malloc_trim)
{
	/* Free a lot, trim; the return value is 0 or 1 and malloc works on. */
	enum { N = 20000 };
	static void *ps[N];
	uint64_t rng = 3;
	for (int i = 0; i < N; i++)
		ps[i] = p_malloc(random_size(&rng, 20, 0, 0));
	for (int i = 0; i < N; i++)
		p_free(ps[i]);
	int r0 = p_malloc_trim(0);
	CHECK(r0 == 0 || r0 == 1);
	int r1 = p_malloc_trim(1 * MiB);
	CHECK(r1 == 0 || r1 == 1);
	void *p = p_malloc(1000);
	CHECK(p != NULL && block_ok(p, 1000));
	p_free(p);
}

TEST(mallinfo2)
{
	/* uordblks ("bytes in use") + hblkhd ("bytes in mmapped blocks") grow
	 * by at least half of what is allocated, and fall back when freed. */
	enum { N = 4096 };
	static void *ps[N];
	struct mallinfo2 m0 = mallinfo2();
	for (int i = 0; i < N; i++) {
		ps[i] = p_malloc(8000);
		if (ps[i])
			memset(ps[i], 1, 8000);
	}
	void *huge = p_malloc(16 * MiB);
	struct mallinfo2 m1 = mallinfo2();
	size_t used0 = m0.uordblks + m0.hblkhd, used1 = m1.uordblks + m1.hblkhd;
	size_t want = ((size_t)N * 8000 + 16 * MiB) / 2;
	CHECK(used1 >= used0 + want); /* allocated bytes are counted */
	for (int i = 0; i < N; i++)
		p_free(ps[i]);
	p_free(huge);
	struct mallinfo2 m2 = mallinfo2();
	size_t used2 = m2.uordblks + m2.hblkhd;
	CHECK(used2 + want <= used1); /* freed bytes are no longer counted */
	if (used1 < used0 + want || used2 + want > used1)
		fprintf(stderr, "  in use before %zu, allocated %zu, freed %zu\n", used0, used1, used2);
}

/* cfree is free under an old name; it may be missing (glibc 2.26+ keeps
 * only a compat symbol), unless PCMALLOC_EXPECT_ALL=1 says it must exist. */
TEST(cfree)
{
	bool required = expect_all();
	__typeof__(&cfree) fn = (__typeof__(&cfree))dlsym(RTLD_DEFAULT, "cfree");
	if (required)
		CHECK(fn != NULL);
	if (!fn) {
		fprintf(stderr, "  cfree not found%s\n", required ? "" : " (allowed)");
		return;
	}
	for (size_t i = 0; i < NSIZES; i++) {
		void *p = p_malloc(sizes[i]);
		CHECK(p != NULL);
		errno = 77;
		fn(p);
		CHECK_EQ(errno, 77);
	}
	fn(NULL);
}

/* The __libc_* aliases are the allocator's own functions: memory from one
 * may be released by the other. */
TEST(libc_aliases)
{
	static const char *const names[] = {
		"__libc_malloc", "__libc_free", "__libc_calloc", "__libc_realloc",
		"__libc_memalign", "__libc_valloc", "__libc_pvalloc",
	};
	enum { NN = sizeof(names) / sizeof(names[0]) };
	void *fn[NN];
	Dl_info self;
	bool have_self = dladdr((void *)p_malloc, &self) != 0;
	CHECK(have_self);
	bool all_same = have_self;
	for (int i = 0; i < NN; i++) {
		fn[i] = dlsym(RTLD_DEFAULT, names[i]);
		CHECK(fn[i] != NULL);
		Dl_info info;
		bool same = fn[i] && have_self && dladdr(fn[i], &info) &&
			    info.dli_fbase == self.dli_fbase;
		if (!same) {
			fprintf(stderr, "  %s is %s, not in malloc's object %s\n", names[i],
				fn[i] ? "elsewhere" : "missing", have_self ? self.dli_fname : "?");
		}
		CHECK(same); /* defined beside malloc */
		all_same = all_same && same;
	}
	if (!all_same)
		return; /* mixing a foreign allocator's blocks would crash */

	void *(*l_malloc)(size_t) = (void *(*)(size_t))fn[0];
	void (*l_free)(void *) = (void (*)(void *))fn[1];
	void *(*l_calloc)(size_t, size_t) = (void *(*)(size_t, size_t))fn[2];
	void *(*l_realloc)(void *, size_t) = (void *(*)(void *, size_t))fn[3];
	void *(*l_memalign)(size_t, size_t) = (void *(*)(size_t, size_t))fn[4];
	void *(*l_valloc)(size_t) = (void *(*)(size_t))fn[5];
	void *(*l_pvalloc)(size_t) = (void *(*)(size_t))fn[6];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		void *p = l_malloc(n); /* __libc_malloc, then free */
		CHECK(block_ok(p, n));
		p_free(p);
		p = p_malloc(n); /* malloc, then __libc_free */
		CHECK(p != NULL);
		l_free(p);
		unsigned char *c = l_calloc(1, n); /* __libc_calloc zeroes */
		CHECK(c != NULL && c[0] == 0 && c[n - 1] == 0);
		pattern_fill(c, n);
		unsigned char *r = l_realloc(c, n + 10000); /* __libc_realloc keeps */
		CHECK(r != NULL && pattern_check_from(r, n, n, pattern_key(c, n), 0));
		p_free(r);
		p = l_memalign(256, n); /* __libc_memalign aligns */
		CHECK(p != NULL && is_aligned(p, 256) && block_ok(p, n));
		l_free(p);
		p = l_valloc(n);
		CHECK(p != NULL && is_aligned(p, page) && block_ok(p, n));
		p_free(p);
		p = l_pvalloc(n);
		CHECK(p != NULL && is_aligned(p, page));
		p_free(p);
	}
	l_free(NULL);
	errno = 0;
	void *x = l_malloc(SIZE_MAX);
	CHECK(x == NULL && errno == ENOMEM);
}

/* mallopt returns 1 when it applies a parameter and 0 when it does not
 * (glibc documents only these two values). M_TRIM_THRESHOLD must be applied;
 * the glibc-specific knobs may be refused. malloc works on after it. Runs
 * last: it may change the allocator's behaviour. */
TEST(mallopt)
{
	CHECK_EQ(mallopt(M_TRIM_THRESHOLD, 128 * 1024), 1);
	static const int others[] = { M_TOP_PAD, M_MMAP_THRESHOLD, M_MMAP_MAX, M_ARENA_MAX,
				      M_ARENA_TEST, M_MXFAST, M_CHECK_ACTION };
	static const int values[] = { 128 * 1024, 128 * 1024, 65536, 8, 8, 64, 3 };
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		int r = mallopt(others[i], values[i]);
		CHECK(r == 0 || r == 1);
	}
	void *p = p_malloc(300 * 1024);
	CHECK(block_ok(p, 300 * 1024));
	p_free(p);
	p = p_malloc(64);
	CHECK(block_ok(p, 64));
	p_free(p);
}

int main(void)
{
	RUN(malloc_interposed);
	RUN(malloc_sizes);
	RUN(malloc_random);
	RUN(malloc_zero);
	RUN(too_large);
	RUN(free_keeps_errno);
	RUN(calloc);
	RUN(realloc);
	RUN(reallocarray);
	RUN(posix_memalign);
	RUN(aligned_alloc);
	RUN(aligned_alloc_bad_alignment);
	RUN(memalign);
	RUN(valloc_pvalloc);
	RUN(big_alignments);
	RUN(usable_size);
	RUN(malloc_trim);
	RUN(mallinfo2);
	RUN(cfree);
	RUN(libc_aliases);
	RUN(mallopt);
	return test_report();
}
