/*
 * tests/fuzz/fuzz_api.c - libFuzzer harness: the input is a program of calls
 * to the whole API (malloc, calloc, realloc, reallocarray, free,
 * memalign, aligned_alloc, posix_memalign, malloc_usable_size, object
 * caches, frees from a second thread), run against a model that knows every
 * live block. After every call it checks what any correct malloc must give:
 *   - a new block is aligned (16 from 16 bytes, or as asked) and
 *     malloc_usable_size is at least the request;
 *   - no live block overlaps another;
 *   - every block still holds the bytes written into it (checked before
 *     each realloc and free, and on all blocks at the end of the input);
 *   - realloc keeps the old contents up to the smaller size; calloc is zero.
 * A broken rule calls abort() with a message, which libFuzzer reports as a
 * crash and saves the input. All blocks are freed at the end of each input.
 *
 * Built by tests/fuzz/CMakeLists.txt with clang -fsanitize=fuzzer from the
 * single-file library (src/unity.c, instrumented too, with internal
 * assertions, PC_DEBUG=2), so malloc in this program is pcmalloc's. Run
 * (see docs/reliability.md):
 *   build/tests/fuzz/fuzz_api -max_total_time=3600 tests/fuzz/corpus
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcmalloc.h"

#define SLOTS 64
#define CHECK_SPAN 256 /* bytes checked at each end of a block, and every 4 KiB */

struct slot {
	unsigned char *p;
	size_t size;        /* bytes asked for (0 allowed) */
	unsigned char seed; /* fill: byte i holds seed + i */
	int cache;          /* -1: malloc family, else the cache index */
};

static struct slot slots[SLOTS];
static pc_cache_t *caches[3];
static const size_t cache_sizes[3] = { 24, 200, 3000 };

/* ---- input reader ---------------------------------------------------------- */
struct input {
	const uint8_t *data;
	size_t left;
};

static unsigned take(struct input *in, unsigned bytes)
{
	unsigned v = 0;
	for (unsigned i = 0; i < bytes; i++) {
		v = v << 8 | (in->left ? *in->data : 0);
		if (in->left) {
			in->data++;
			in->left--;
		}
	}
	return v;
}

/* A size in one of the kinds: tiny, small, large, and (rarely) huge. */
static size_t take_size(struct input *in)
{
	unsigned kind = take(in, 1), v = take(in, 3);
	switch (kind % 16) {
	case 0: return v % 17;                                  /* 0..16 */
	case 1: case 2: case 3: case 4: case 5: case 6: return v % 257;
	case 7: case 8: case 9: return v % 8193;                 /* every class */
	case 10: return 8192 - 16 + v % 33;                      /* the small/large edge */
	case 11: case 12: return 8193 + v % (256 << 10);         /* large */
	case 13: return (4 << 20) - 8 + v % 17;                  /* the large/huge edge */
	case 14: return 8193 + v % (4 << 20);                    /* any large */
	default: return (4 << 20) + 1 + v % (4 << 20);           /* huge */
	}
}

/* ---- model checks ----------------------------------------------------------- */
static void fail(const char *what, const struct slot *s)
{
	fprintf(stderr, "fuzz_api: %s (block %p, %zu bytes)\n", what, (void *)s->p, s->size);
	abort();
}

/* The bytes written and checked: the first and last CHECK_SPAN of a block
 * and one per 4 KiB between them (a huge block is not touched whole). */
static size_t next_checked(size_t i, size_t size)
{
	if (size <= 3 * CHECK_SPAN || i + 1 < CHECK_SPAN || i + 1 >= size - CHECK_SPAN)
		return i + 1;
	size_t next = (i + 4096) & ~(size_t)4095;
	return next < size - CHECK_SPAN ? next : size - CHECK_SPAN;
}

static void fill(struct slot *s)
{
	for (size_t i = 0; i < s->size; i = next_checked(i, s->size))
		s->p[i] = (unsigned char)(s->seed + i);
}

/* The first `upto` bytes still hold what fill() wrote (upto <= s->size). */
static void verify(const struct slot *s, size_t upto)
{
	for (size_t i = 0; i < upto; i = next_checked(i, s->size))
		if (s->p[i] != (unsigned char)(s->seed + i))
			fail("contents changed", s);
}

static void check_new(struct slot *s, size_t align)
{
	size_t want = align ? align : s->size >= 16 ? 16 : 8;
	if ((uintptr_t)s->p % want)
		fail("misaligned", s);
	if (s->cache < 0 && pc_malloc_usable_size(s->p) < s->size)
		fail("usable size below the request", s);
	size_t len = s->size ? s->size : 1;
	for (int i = 0; i < SLOTS; i++) {
		const struct slot *o = &slots[i];
		if (o == s || !o->p)
			continue;
		size_t olen = o->size ? o->size : 1;
		if (s->p < o->p + olen && o->p < s->p + len)
			fail("overlaps another live block", s);
	}
}

/* ---- the second thread: frees what it is handed ------------------------------ */
static sem_t to_remote, from_remote;
static void *remote_block;
static int remote_cache = -1;

/* sem_wait fails with EINTR when a signal handler runs (libFuzzer's
 * -timeout timer sends SIGALRM every few seconds), whatever SA_RESTART says:
 * retry, or the two threads fall out of step and the remote thread frees a
 * block twice (which pcmalloc's double-free check then reports). */
static void sem_wait_all(sem_t *sem)
{
	while (sem_wait(sem) != 0)
		;
}

static void *remote_thread(void *arg)
{
	(void)arg;
	for (;;) {
		sem_wait_all(&to_remote);
		if (remote_cache >= 0)
			pc_cache_free(caches[remote_cache], remote_block);
		else
			pc_free(remote_block);
		sem_post(&from_remote);
	}
	return NULL;
}

static void ctor(void *p) { memset(p, 0, cache_sizes[2]); }

static void setup(void)
{
	caches[0] = pc_cache_create("fuzz-24", cache_sizes[0], 0, NULL);
	caches[1] = pc_cache_create("fuzz-200-a64", cache_sizes[1], 64, NULL);
	caches[2] = pc_cache_create("fuzz-3000-ctor", cache_sizes[2], 0, ctor);
	pthread_t t;
	if (!caches[0] || !caches[1] || !caches[2] || sem_init(&to_remote, 0, 0) ||
	    sem_init(&from_remote, 0, 0) || pthread_create(&t, NULL, remote_thread, NULL))
		abort();
}

/* ---- operations ------------------------------------------------------------------ */
static void release(struct slot *s, bool remote)
{
	if (!s->p)
		return;
	verify(s, s->size);
	if (remote) {
		remote_block = s->p;
		remote_cache = s->cache;
		sem_post(&to_remote);
		sem_wait_all(&from_remote);
	} else if (s->cache >= 0) {
		pc_cache_free(caches[s->cache], s->p);
	} else {
		pc_free(s->p);
	}
	s->p = NULL;
}

static void place(struct slot *s, void *p, size_t size, unsigned char seed, int cache, size_t align)
{
	if (!p)
		return; /* out of memory is allowed; nothing to check */
	s->p = p;
	s->size = size;
	s->seed = seed;
	s->cache = cache;
	check_new(s, align);
	fill(s);
}

static void do_realloc(struct slot *s, size_t size, unsigned char seed, bool array)
{
	verify(s, s->size);
	unsigned char *q = array ? pc_reallocarray(s->p, 1, size) : pc_realloc(s->p, size);
	if (size == 0) {
		s->p = NULL; /* realloc(p, 0) frees p and returns NULL, as glibc */
		if (q)
			fail("realloc(p, 0) returned a block", s);
		return;
	}
	if (!q)
		return; /* p is untouched */
	struct slot moved = { q, s->size, s->seed, -1 };
	s->p = NULL;
	verify(&moved, size < moved.size ? size : moved.size); /* the old contents came along */
	place(s, q, size, seed, -1, 0);
}

static void step(struct input *in)
{
	unsigned op = take(in, 1);
	struct slot *s = &slots[take(in, 1) % SLOTS];
	unsigned char seed = (unsigned char)take(in, 1);
	size_t size;
	switch (op % 12) {
	case 0: case 1:
		release(s, false);
		size = take_size(in);
		place(s, pc_malloc(size), size, seed, -1, 0);
		break;
	case 2: {
		release(s, false);
		size_t n = take(in, 1) % 8 + 1;
		size = take_size(in) / n;
		unsigned char *p = pc_calloc(n, size);
		for (size_t i = 0; p && i < n * size; i += (i < 4096 ? 1 : 4096))
			if (p[i])
				fail("calloc memory is not zero", s);
		place(s, p, n * size, seed, -1, 0);
		break;
	}
	case 3: case 4:
		size = take_size(in);
		if (s->p && s->cache < 0)
			do_realloc(s, size, seed, op % 12 == 4);
		break;
	case 5: case 6:
		release(s, op % 12 == 6);
		break;
	case 7: {
		release(s, false);
		size_t align = (size_t)1 << (take(in, 1) % 24); /* up to 8 MiB */
		unsigned how = take(in, 1) % 3;
		size = take_size(in);
		void *p = NULL;
		if (how == 0)
			p = pc_memalign(align, size);
		else if (how == 1)
			p = pc_aligned_alloc(align, size);
		else if (pc_posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size))
			p = NULL;
		place(s, p, size, seed, -1, align);
		break;
	}
	case 8: case 9: {
		release(s, false);
		int c = (int)(take(in, 1) % 3);
		unsigned char *p = pc_cache_alloc(caches[c]);
		place(s, p, cache_sizes[c], seed, c, c == 1 ? 64 : 0);
		break;
	}
	case 10:
		if (s->p && s->cache < 0 && pc_malloc_usable_size(s->p) < s->size)
			fail("usable size shrank", s);
		break;
	default:
		release(s, true);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	if (!ready) {
		setup();
		ready = true;
	}
	struct input in = { data, size };
	while (in.left)
		step(&in);
	for (int i = 0; i < SLOTS; i++)
		release(&slots[i], false);
	return 0;
}
