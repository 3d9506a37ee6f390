/*
 * tests/malloc/malloc_test.h - helpers shared by the malloc front end's tests:
 * the allocation functions behind volatile pointers, size classes, fill
 * patterns that tell one block from another, and the resident set size.
 *
 * Every test here runs on any malloc: linked against libpcmalloc.so, under
 * LD_PRELOAD of it, or on the C library's own (which is how the tests were
 * checked before the malloc layer existed). Include after defining
 * _GNU_SOURCE, as the first include of the file.
 *
 * Why volatile function pointers: GCC knows malloc and may fold a
 * malloc/free pair away, or assume malloc(SIZE_MAX) fails without calling
 * it. Loading the pointer from a volatile object forces a real call (the
 * tests are also built with -fno-builtin).
 */
#ifndef PC_MALLOC_TEST_H
#define PC_MALLOC_TEST_H

#include "test.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MT_UNUSED __attribute__((unused))

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

/* The size classes of the spec: small <= 8 KiB < large <= 4 MiB < huge. */
#define MT_SMALL_MAX (8 * KiB)
#define MT_LARGE_MAX (4 * MiB)

static void *(*volatile p_malloc)(size_t) MT_UNUSED = malloc;
static void (*volatile p_free)(void *) MT_UNUSED = free;
static void *(*volatile p_calloc)(size_t, size_t) MT_UNUSED = calloc;
static void *(*volatile p_realloc)(void *, size_t) MT_UNUSED = realloc;
static void *(*volatile p_reallocarray)(void *, size_t, size_t) MT_UNUSED = reallocarray;
static int (*volatile p_posix_memalign)(void **, size_t, size_t) MT_UNUSED = posix_memalign;
static void *(*volatile p_aligned_alloc)(size_t, size_t) MT_UNUSED = aligned_alloc;
static void *(*volatile p_memalign)(size_t, size_t) MT_UNUSED = memalign;
static void *(*volatile p_valloc)(size_t) MT_UNUSED = valloc;
static void *(*volatile p_pvalloc)(size_t) MT_UNUSED = pvalloc;
static size_t (*volatile p_usable)(void *) MT_UNUSED = malloc_usable_size;
static int (*volatile p_malloc_trim)(size_t) MT_UNUSED = malloc_trim;

static inline int is_aligned(const void *p, size_t alignment)
{
	return ((uintptr_t)p & (alignment - 1)) == 0;
}

/* The alignment a block of n bytes must have: 16 for n >= 16, else the
 * largest power of two <= n (what an object of that size can need). */
static inline size_t min_alignment(size_t n)
{
	size_t a = 1;
	while (a < 16 && a * 2 <= n)
		a *= 2;
	return a;
}

/* ---- random sizes over all classes ---------------------------------------
 * Log-uniform within each class, so that every size class of the allocator
 * is hit about equally often. large_pm and huge_pm are per mille. */
static inline size_t random_small(uint64_t *rng)
{
	size_t base = (size_t)1 << (test_rand(rng) % 13); /* 2^0 .. 2^12 */
	return base + (size_t)(test_rand(rng) % (base + 1)); /* 1 .. 8 KiB */
}

static inline size_t random_large(uint64_t *rng)
{
	size_t base = (size_t)1 << (13 + test_rand(rng) % 9); /* 2^13 .. 2^21 */
	return base + 1 + (size_t)(test_rand(rng) % base); /* 8 KiB + 1 .. 4 MiB */
}

/* 4 MiB + 1 .. max */
static inline size_t random_huge(uint64_t *rng, size_t max)
{
	return MT_LARGE_MAX + 1 + (size_t)(test_rand(rng) % (max - MT_LARGE_MAX));
}

static inline size_t random_size(uint64_t *rng, unsigned large_pm, unsigned huge_pm,
				 size_t huge_max)
{
	unsigned u = (unsigned)(test_rand(rng) % 1000);
	if (u < huge_pm)
		return random_huge(rng, huge_max);
	if (u < huge_pm + large_pm)
		return random_large(rng);
	return random_small(rng);
}

/* ---- fill patterns ---------------------------------------------------------
 * Word i of a block holds key + i, the key being derived from the block's
 * address and size; the bytes past the last whole word hold the key's bytes.
 * A block written through another block, or handed out twice, shows up as a
 * wrong word. Blocks over 64 KiB are filled sparsely (the first 4 KiB, one
 * word per 4 KiB page, and the last word) to keep the tests fast.
 *
 * A block of 16 bytes or more can carry its own size ("object"): word 0 is
 * the size and word 1 the size xor the key, so a block taken from a shared
 * slot can be checked without knowing its size beforehand. */
#define MT_DENSE_WORDS 8192 /* 64 KiB */

static inline uint64_t pattern_key(const void *p, size_t size)
{
	uint64_t k = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
	return k ^ ((uint64_t)size * 0xD6E8FEB86659FD93ull) ^ (k >> 29);
}

/* The word after word i that the pattern covers, in a block of nwords words
 * (nwords when none is left). */
static inline size_t pattern_next(size_t i, size_t nwords)
{
	if (nwords <= MT_DENSE_WORDS || i < 511)
		return i + 1;
	size_t page = (i | 511) + 1; /* the first word of the next 4 KiB */
	if (page < nwords - 1)
		return page;
	return i < nwords - 1 ? nwords - 1 : nwords;
}

static inline void pattern_fill_from(void *p, size_t size, uint64_t key, size_t first_word)
{
	uint64_t *w = p;
	size_t nwords = size / 8;
	for (size_t i = first_word; i < nwords; i = pattern_next(i, nwords))
		w[i] = key + i;
	unsigned char *b = (unsigned char *)p + nwords * 8;
	for (size_t j = 0; j < size % 8; j++)
		b[j] = (unsigned char)(key >> (8 * j)) ^ 0x5a;
}

/* Checks the first limit bytes of a block of size bytes filled with key.
 * Returns 1 when intact. */
static inline int pattern_check_from(const void *p, size_t size, size_t limit, uint64_t key,
				     size_t first_word)
{
	const uint64_t *w = p;
	size_t nwords = size / 8;
	size_t end = limit / 8 < nwords ? limit / 8 : nwords;
	for (size_t i = first_word; i < end; i = pattern_next(i, nwords))
		if (w[i] != key + i)
			return 0;
	if (limit >= size) {
		const unsigned char *b = (const unsigned char *)p + nwords * 8;
		for (size_t j = 0; j < size % 8; j++)
			if (b[j] != ((unsigned char)(key >> (8 * j)) ^ 0x5a))
				return 0;
	}
	return 1;
}

static inline void pattern_fill(void *p, size_t size)
{
	pattern_fill_from(p, size, pattern_key(p, size), 0);
}

static inline int pattern_check(const void *p, size_t size)
{
	return pattern_check_from(p, size, size, pattern_key(p, size), 0);
}

/* A self-describing block of size >= 16. */
static inline void object_fill(void *p, size_t size)
{
	uint64_t key = pattern_key(p, size);
	uint64_t *w = p;
	w[0] = size;
	w[1] = size ^ key;
	pattern_fill_from(p, size, key, 2);
}

/* Returns the object's size, or 0 when it is damaged. */
static inline size_t object_check(const void *p)
{
	const uint64_t *w = p;
	size_t size = (size_t)w[0];
	if (size < 16 || size > ((size_t)1 << 40))
		return 0;
	uint64_t key = pattern_key(p, size);
	if (w[1] != (size ^ key))
		return 0;
	return pattern_check_from(p, size, size, key, 2) ? size : 0;
}

/* ---- process measurements ------------------------------------------------- */
static inline size_t statm_field(int field)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long v[2] = { 0, 0 };
	if (f) {
		if (fscanf(f, "%lu %lu", &v[0], &v[1]) != 2)
			v[0] = v[1] = 0;
		fclose(f);
	}
	return (size_t)v[field] * (size_t)sysconf(_SC_PAGESIZE);
}

/* Resident set size and virtual size, in bytes. */
static inline size_t rss_bytes(void) { return statm_field(1); }
static inline size_t vm_bytes(void) { return statm_field(0); }

static inline double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- which malloc is under test -------------------------------------------
 * PCMALLOC_EXPECT_ALL=1 (set by CTest for every run on pcmalloc) says that
 * everything pcmalloc promises must be there, starting with malloc itself:
 * a preload that failed to load (ld.so only warns) would otherwise test
 * glibc's malloc and pass. Each test RUNs malloc_interposed first. */
static inline int expect_all(void)
{
	const char *e = getenv("PCMALLOC_EXPECT_ALL");
	return e && strcmp(e, "1") == 0;
}

TEST(malloc_interposed)
{
	Dl_info info;
	const char *who = "?";
	if (dladdr((void *)p_malloc, &info) && info.dli_fname)
		who = info.dli_fname;
	printf("malloc comes from %s\n", who);
	if (expect_all())
		CHECK(strstr(who, "/libc.so") == NULL); /* not the C library's */
}

/* Minor page faults of this process so far (getrusage). */
static inline long minor_faults(void)
{
	struct rusage ru;
	REQUIRE(getrusage(RUSAGE_SELF, &ru) == 0);
	return ru.ru_minflt;
}

/* Threads of this process, from /proc/self/status (-1 if not found). */
static inline int thread_count(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	REQUIRE(f != NULL);
	char line[256];
	int n = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* Runs fn(out, arg) in a forked child, which sends the len bytes at out
 * back through a pipe: 1 if they came back whole and the child exited 0
 * (out then holds the child's bytes), else 0 and a line on stderr. */
static inline int run_in_child(void (*fn)(void *out, const void *arg), const void *arg, void *out,
			       size_t len)
{
	int fd[2];
	REQUIRE(pipe(fd) == 0);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		close(fd[0]);
		fn(out, arg);
		ssize_t w = write(fd[1], out, len);
		_exit(w == (ssize_t)len ? 0 : 1);
	}
	close(fd[1]);
	ssize_t got = read(fd[0], out, len);
	close(fd[0]);
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	int ok = got == (ssize_t)len && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if (!ok)
		fprintf(stderr, "  measuring child failed (status %#x)\n", status);
	return ok;
}

#endif /* PC_MALLOC_TEST_H */
