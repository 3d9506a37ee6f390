/*
 * tests/malloc/test_double_free.c - the default double-free check of small
 * objects (src/slab/slab.h, "Double frees"): a second free of a small block
 * stops the program with
 *     pcmalloc: fatal: free(0x...): double free detected (cache ...)
 * and SIGABRT, as glibc's "free(): double free detected in tcache 2", instead
 * of handing the block out twice:
 *  - free(a); free(a) and free(a); free(b); free(a), for blocks of several
 *    size classes, through free and realloc(a, 0);
 *  - the same with sheaves off (slub.sheaf_capacity=0: the slab freelist
 *    checks), and through pc_cache_free of an object cache;
 *  - the legitimate patterns around it are not refused: free, malloc of the
 *    same block again, free; frees of many blocks in any order.
 * Each case runs in a forked child pinned to the CPU it starts on (so that
 * both frees reach the same per-CPU sheaf in rseq mode; in the fallback the
 * sheaves are the thread's), with its stderr on a pipe; the parent checks
 * that it died of SIGABRT with the message. a and b are allocated right
 * before the frees, so their sheaf has room for both (nothing falls to a
 * slow path between the frees).
 */
#define _GNU_SOURCE
#include "malloc_test.h"

#include <sched.h>
#include <stdbool.h>

typedef int (*ctl_set_fn)(const char *, long);
typedef void *(*cache_create_fn)(const char *, size_t, size_t, void (*)(void *));
typedef void *(*cache_alloc_fn)(void *);
typedef void (*cache_free_fn)(void *, void *);

static size_t block_size;  /* set by the parent before each fork */
static bool sheaves_off;   /* likewise */

/* In the child: the options the case asks for (the API through dlsym, as the
 * _preload build does not link pcmalloc). */
static void child_setup(void)
{
	test_pin_here();
	if (sheaves_off) {
		ctl_set_fn set = (ctl_set_fn)dlsym(RTLD_DEFAULT, "pcmalloc_ctl_set");
		REQUIRE(set && set("slub.sheaf_capacity", 0) == 0);
	}
}

static void child_run(void *body)
{
	child_setup();
	(*(void (**)(void))body)();
}

/* Runs body() in a child; true if it died of SIGABRT with the message. When
 * expect_abort is false: true if it exited 0 instead. */
static bool run_child(void (*body)(void), const char *what, bool expect_abort)
{
	char buf[1024];
	int status = test_in_child(child_run, &body, buf, sizeof(buf));
	bool ok = expect_abort ? test_aborted_with(status, buf, "pcmalloc: fatal: free(") &&
					 strstr(buf, "double free detected")
			       : test_exited_ok(status);
	if (!ok)
		fprintf(stderr, "  %s (size %zu%s): status %#x, stderr <<%s>>\n", what, block_size,
			sheaves_off ? ", sheaves off" : "", status, buf);
	return ok;
}

/* ---- the double frees ---------------------------------------------------------- */
static void free_twice(void)
{
	void *a = p_malloc(block_size);
	p_free(a);
	p_free(a);
}

static void free_a_b_a(void)
{
	void *a = p_malloc(block_size);
	void *b = p_malloc(block_size);
	p_free(a);
	p_free(b);
	p_free(a);
}

static void realloc_zero_then_free(void)
{
	void *a = p_malloc(block_size);
	void *q = p_realloc(a, 0); /* frees a (glibc's behaviour; returns NULL) */
	(void)q;
	p_free(a);
}

static void cache_free_twice(void)
{
	cache_create_fn create = (cache_create_fn)dlsym(RTLD_DEFAULT, "pc_cache_create");
	cache_alloc_fn alloc = (cache_alloc_fn)dlsym(RTLD_DEFAULT, "pc_cache_alloc");
	cache_free_fn cfree_ = (cache_free_fn)dlsym(RTLD_DEFAULT, "pc_cache_free");
	REQUIRE(create && alloc && cfree_);
	void *cache = create("double-free", block_size, 0, NULL);
	REQUIRE(cache != NULL);
	void *a = alloc(cache), *b = alloc(cache);
	cfree_(cache, a);
	cfree_(cache, b);
	cfree_(cache, a);
}

/* ---- what must still work -------------------------------------------------------- */
static void legitimate(void)
{
	void *a = p_malloc(block_size);
	p_free(a);
	void *again = p_malloc(block_size); /* most likely a itself */
	p_free(again);
	void *ps[300];
	for (int i = 0; i < 300; i++)
		ps[i] = p_malloc(block_size);
	for (int i = 0; i < 300; i += 2) /* every other, then the rest backwards */
		p_free(ps[i]);
	for (int i = 299; i > 0; i -= 2)
		p_free(ps[i]);
	for (int i = 0; i < 1000; i++) { /* the same block over and over */
		void *p = p_malloc(block_size);
		p_free(p);
	}
}

static const size_t sizes[] = { 8, 16, 48, 100, 512, 1000, 3000, 8192 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

TEST(free_twice)
{
	for (int off = 0; off <= 1; off++) {
		sheaves_off = off;
		for (size_t i = 0; i < NSIZES; i++) {
			block_size = sizes[i];
			CHECK(run_child(free_twice, "free(a); free(a)", true));
			CHECK(run_child(free_a_b_a, "free(a); free(b); free(a)", true));
			CHECK(run_child(realloc_zero_then_free, "realloc(a, 0); free(a)", true));
		}
	}
	sheaves_off = false;
}

TEST(cache_free_twice)
{
	for (int off = 0; off <= 1; off++) {
		sheaves_off = off;
		block_size = 200;
		CHECK(run_child(cache_free_twice, "pc_cache_free a, b, a", true));
	}
	sheaves_off = false;
}

TEST(legitimate_frees_pass)
{
	for (int off = 0; off <= 1; off++) {
		sheaves_off = off;
		for (size_t i = 0; i < NSIZES; i++) {
			block_size = sizes[i];
			CHECK(run_child(legitimate, "legitimate frees", false));
		}
	}
	sheaves_off = false;
}

int main(void)
{
	RUN(malloc_interposed);
	RUN(free_twice);
	RUN(cache_free_twice);
	RUN(legitimate_frees_pass);
	return test_report();
}
