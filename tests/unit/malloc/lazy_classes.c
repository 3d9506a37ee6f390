/*
 * tests/unit/malloc/lazy_classes.c - each size class's cache is made at the
 * first allocation of the class, not at start-up (malloc/init.c,
 * docs/footprint.md). White-box: links the static library, so malloc here
 * is pcmalloc. The classes used below (5120, 6144, 7168 bytes) are ones
 * nothing but this test allocates before it looks. In thread mode (the
 * _norseq run) every class is made at start-up, as before: there the test
 * checks that they all exist. Runs under ThreadSanitizer too.
 *
 *  made_at_first_use     a class nobody used has the stand-in; the first
 *                        malloc of it makes "kmalloc-7168", which the block
 *                        comes from.
 *  racing_first_use      8 threads released at once all make their first
 *                        allocation of one class: one cache, every block
 *                        from it (however the race goes).
 *  refused_on_reentry    a malloc of a class not yet made, from inside a
 *                        sheaf slow path (the place of a signal handler that
 *                        interrupted one: it may take no lock, and making a
 *                        cache takes slab_mutex) fails with ENOMEM and makes
 *                        nothing; the same malloc afterwards works.
 *  every_class_on_demand pc_malloc_classes_create (what a statistics
 *                        snapshot calls, so that every kmalloc-N can be read
 *                        by name) makes every class.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "test.h"

#include "malloc/malloc.h"

#include <errno.h>
#include <pthread.h>

static bool thread_mode;

static bool made(unsigned cls)
{
	return pc_load_acquire(&pc_class_cache[cls]) != &pc_malloc_unready;
}

static unsigned class_of(size_t size)
{
	unsigned c = pc_size_class(size);
	REQUIRE(pc_class_size[c] == size);
	return c;
}

TEST(made_at_first_use)
{
	unsigned c = class_of(7168);
	CHECK(made(c) == thread_mode);
	void *p = pc_malloc(7000);
	REQUIRE(p != NULL);
	REQUIRE(made(c));
	struct pc_cache *s = pc_class_cache[c];
	CHECK(strcmp(s->name, "kmalloc-7168") == 0);
	CHECK(pc_slab_cache_of(p) == s);
	pc_free(p);
}

#define RACERS 8
static pthread_barrier_t start;
static void *got[RACERS];

static void *racer(void *arg)
{
	pthread_barrier_wait(&start);
	got[(uintptr_t)arg] = pc_malloc(6000);
	return NULL;
}

static void count_named(struct pc_cache *s, void *arg)
{
	if (strcmp(s->name, "kmalloc-6144") == 0)
		++*(int *)arg;
}

TEST(racing_first_use)
{
	unsigned c = class_of(6144);
	CHECK(made(c) == thread_mode);
	pthread_t t[RACERS];
	REQUIRE(pthread_barrier_init(&start, NULL, RACERS) == 0);
	for (uintptr_t i = 0; i < RACERS; i++)
		REQUIRE(pthread_create(&t[i], NULL, racer, (void *)i) == 0);
	for (int i = 0; i < RACERS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&start);
	int named = 0;
	pc_cache_foreach(count_named, &named);
	CHECK_EQ(named, 1);
	for (int i = 0; i < RACERS; i++) {
		REQUIRE(got[i] != NULL);
		CHECK(pc_slab_cache_of(got[i]) == pc_class_cache[c]);
		pc_free(got[i]);
	}
}

static void *inner;
static int inner_errno;
static bool inner_ran;

/* Runs inside a sheaf slow path (its locks held, sheaf_depth raised). */
static void inside_slow_path(struct pc_cache *s)
{
	(void)s;
	if (inner_ran)
		return;
	inner_ran = true;
	errno = 0;
	inner = pc_malloc(5000);
	inner_errno = errno;
}

TEST(refused_on_reentry)
{
	unsigned c = class_of(5120);
	CHECK(made(c) == thread_mode);
	struct pc_cache *own = pc_cache_create("lazy-own", 64, 0, NULL);
	REQUIRE(own != NULL);
	pc_store_relaxed(&pc_sheaf_test_hook, inside_slow_path);
	void *o = pc_cache_alloc(own); /* an empty sheaf: the slow path */
	pc_store_relaxed(&pc_sheaf_test_hook, NULL);
	REQUIRE(o != NULL);
	REQUIRE(inner_ran);
	if (!thread_mode) {
		CHECK(inner == NULL);
		CHECK_EQ(inner_errno, ENOMEM);
		CHECK(!made(c)); /* nothing half made */
	}
	pc_free(inner);
	void *p = pc_malloc(5000); /* outside: made now */
	REQUIRE(p != NULL);
	CHECK(made(c));
	pc_free(p);
	pc_cache_free(own, o);
	CHECK_EQ(pc_cache_destroy(own), 0);
}

TEST(every_class_on_demand)
{
	pc_malloc_classes_create();
	for (unsigned c = 0; c < PC_NR_CLASSES; c++)
		CHECK(made(c));
}

int main(void)
{
	REQUIRE(pc_malloc_init());
	thread_mode = pc_sheaf_mode() == PC_SHEAF_MODE_THREAD;
	RUN(made_at_first_use);
	RUN(racing_first_use);
	RUN(refused_on_reentry);
	RUN(every_class_on_demand);
	return test_report();
}
