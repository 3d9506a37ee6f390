/*
 * tests/malloc/test_slub_debug.c - slub_debug mode through malloc (slab.h
 * "Debug caches", docs/reliability.md). Run with
 *     PCMALLOC_SLUB_DEBUG='-:kmalloc-96;FZPU:kmalloc-*'
 * (tests/CMakeLists.txt): every size class is a debug cache but kmalloc-96.
 *  - the option reads back, kmalloc-64 has no sheaves and kmalloc-96 keeps
 *    them (stats.cache.<name>.sheaf_capacity);
 *  - every class keeps malloc's alignment, and memalign its own (8..4096),
 *    with whole blocks written; malloc_usable_size of a debug cache's block
 *    is the size asked for (also after realloc), of kmalloc-96's the class;
 *  - the owner tracks (U) name the functions of this test that allocated
 *    and freed the broken block ("INFO: Allocated in
 *    slub_debug_test_allocate+0x..."; the program exports its symbols so
 *    that dladdr names them);
 *  - death tests: a one-byte overflow past the class size and past the
 *    request (also after an in-place realloc), a write after free (seen by the next
 *    malloc of that block, which is forced: freed last, first taken), a
 *    double free under 99 other frees, free of an interior pointer, each
 *    a SLUB report, pcmalloc's fatal line and SIGABRT;
 *  - fork: a child frees and allocates the parent's blocks and exits 0.
 * Each child is pinned to its CPU.
 */
#define _GNU_SOURCE
#include "malloc_test.h"

#include <sched.h>
#include <sys/wait.h>

typedef int (*ctl_get_fn)(const char *, long *);

static char err[16384];

static long ctl(const char *name)
{
	ctl_get_fn get = (ctl_get_fn)dlsym(RTLD_DEFAULT, "pcmalloc_ctl_get");
	long v = -1;
	REQUIRE(get != NULL && get(name, &v) == 0);
	return v;
}

/* Exported (the program is linked with -rdynamic): the report names them. */
__attribute__((noinline)) void *slub_debug_test_allocate(size_t n);
__attribute__((noinline)) void slub_debug_test_free(void *p);
__attribute__((noinline)) void *slub_debug_test_allocate(size_t n)
{
	void *p = p_malloc(n);
	__asm__ volatile("" ::: "memory"); /* no tail call: our frame stays */
	return p;
}
__attribute__((noinline)) void slub_debug_test_free(void *p)
{
	p_free(p);
	__asm__ volatile("" ::: "memory");
}

TEST(which_caches)
{
	p_free(p_malloc(64)); /* started */
	CHECK_EQ(ctl("slub.debug"), 15);
	CHECK_EQ(ctl("stats.cache.kmalloc-64.sheaf_capacity"), 0);
	CHECK(ctl("stats.cache.kmalloc-96.sheaf_capacity") > 0);
}

TEST(alignment_of_every_class)
{
	for (size_t n = 1; n <= MT_SMALL_MAX; n += n < 256 ? 1 : 61) {
		unsigned char *p = p_malloc(n);
		REQUIRE(p != NULL);
		CHECK(is_aligned(p, min_alignment(n)));
		memset(p, 0x5a, n);
		CHECK(p_usable(p) >= n);
		p_free(p);
	}
	for (size_t align = 8; align <= 4096; align *= 2) {
		size_t sizes[] = { 1, 24, 100, 1000, 3000 };
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			void *p = p_memalign(align, sizes[i]);
			REQUIRE(p != NULL);
			CHECK(is_aligned(p, align));
			memset(p, 0x5a, sizes[i]);
			p_free(p);
		}
	}
}

TEST(usable_size_is_the_request)
{
	void *p = p_malloc(24), *q = p_malloc(90);
	CHECK_EQ(p_usable(p), (size_t)24);  /* kmalloc-32, a debug cache */
	CHECK_EQ(p_usable(q), (size_t)96);  /* kmalloc-96, ordinary */
	void *r = p_realloc(p, 20);         /* in place: fits, not half empty */
	CHECK(r == p);
	CHECK_EQ(p_usable(r), (size_t)20);
	r = p_realloc(r, 30);               /* above the request: moves */
	CHECK_EQ(p_usable(r), (size_t)30);
	p_free(r);
	p_free(q);
}

/* ---- death tests ------------------------------------------------------------------ */
static void overflow_of_the_request(void *arg)
{
	(void)arg;
	test_pin_here();
	char *volatile p = p_malloc(24); /* kmalloc-32 */
	p[24] = 'x';
	p_free(p);
}

static void overflow_after_realloc(void *arg)
{
	(void)arg;
	test_pin_here();
	char *volatile p = p_malloc(60);
	p = p_realloc(p, 40); /* in place */
	p[45] = 'x';
	p_free(p);
}

static void overflow_one_byte(void *arg)
{
	(void)arg;
	test_pin_here();
	char *volatile p = slub_debug_test_allocate(64);
	p[64] = 'x';
	p_free(p);
}

static void write_after_free(void *arg)
{
	(void)arg;
	test_pin_here();
	char *volatile p = slub_debug_test_allocate(64);
	slub_debug_test_free(p); /* now the head of its slab's freelist */
	p[10] = 'x';
	p_malloc(64); /* takes p again (the first partial slab's head): checked */
}

static void buried_double_free(void *arg)
{
	(void)arg;
	test_pin_here();
	void *p[100];
	for (int i = 0; i < 100; i++)
		p[i] = p_malloc(64);
	for (int i = 0; i < 100; i++)
		p_free(p[i]);
	p_free(p[0]);
}

static void interior_pointer(void *arg)
{
	(void)arg;
	test_pin_here();
	char *p = p_malloc(64);
	p_free(p + 16);
}

TEST(overflow_reported_with_owner)
{
	int st = test_in_child(overflow_one_byte, NULL, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "BUG kmalloc-64: Right Redzone overwritten"));
	CHECK(strstr(err, "@offset=64. First byte 0x78 instead of 0xcc") != NULL);
	CHECK(strstr(err, "INFO: Allocated in slub_debug_test_allocate+0x") != NULL);
	CHECK(strstr(err, "pcmalloc: fatal: slub_debug: Right Redzone overwritten in cache kmalloc-64") != NULL);
}

TEST(overflow_of_the_request_reported)
{
	int st = test_in_child(overflow_of_the_request, NULL, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "BUG kmalloc-32: kmalloc Redzone overwritten"));
	CHECK(strstr(err, "@offset=24. First byte 0x78 instead of 0xcc") != NULL);
	CHECK(strstr(err, "requested=24") != NULL);
	st = test_in_child(overflow_after_realloc, NULL, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "BUG kmalloc-64: kmalloc Redzone overwritten"));
	CHECK(strstr(err, "@offset=45. First byte 0x78 instead of 0xcc") != NULL);
}

TEST(write_after_free_reported_with_owners)
{
	int st = test_in_child(write_after_free, NULL, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "BUG kmalloc-64: Poison overwritten"));
	CHECK(strstr(err, "@offset=10. First byte 0x78 instead of 0x6b") != NULL);
	CHECK(strstr(err, "INFO: Allocated in slub_debug_test_allocate+0x") != NULL);
	CHECK(strstr(err, "INFO: Freed in slub_debug_test_free+0x") != NULL);
}

TEST(buried_double_free_reported)
{
	int st = test_in_child(buried_double_free, NULL, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "BUG kmalloc-64: Object already free"));
	CHECK(strstr(err, "pcmalloc: fatal: free(") != NULL && strstr(err, "double free detected") != NULL);
}

TEST(interior_pointer_reported)
{
	int st = test_in_child(interior_pointer, NULL, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "BUG kmalloc-64: Invalid object pointer"));
	CHECK(strstr(err, "pcmalloc: fatal: free(") != NULL && strstr(err, "invalid pointer") != NULL);
	CHECK(strstr(err, "bytes into object") != NULL);
}

TEST(fork_with_debug_caches)
{
	void *p[64];
	for (int i = 0; i < 64; i++) {
		p[i] = p_malloc((size_t)(i + 1) * 8);
		REQUIRE(p[i] != NULL);
		memset(p[i], i, (size_t)(i + 1) * 8);
	}
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		int bad = 0;
		for (int i = 0; i < 64; i++) {
			for (size_t k = 0; k < (size_t)(i + 1) * 8; k++)
				bad |= ((unsigned char *)p[i])[k] != (unsigned char)i;
			p_free(p[i]);
			p[i] = p_malloc(100);
			bad |= p[i] == NULL;
		}
		for (int i = 0; i < 64; i++)
			p_free(p[i]);
		_exit(bad);
	}
	int status;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(test_exited_ok(status));
	for (int i = 0; i < 64; i++)
		p_free(p[i]);
}

int main(void)
{
	RUN(malloc_interposed);
	RUN(which_caches);
	RUN(alignment_of_every_class);
	RUN(usable_size_is_the_request);
	RUN(overflow_reported_with_owner);
	RUN(overflow_of_the_request_reported);
	RUN(write_after_free_reported_with_owners);
	RUN(buried_double_free_reported);
	RUN(interior_pointer_reported);
	RUN(fork_with_debug_caches);
	return test_report();
}
