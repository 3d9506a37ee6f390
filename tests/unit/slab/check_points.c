/*
 * tests/unit/slab/check_points.c - the invariant walkers at the points where
 * the structures must be consistent, in expensive-assert builds (PC_DEBUG >=
 * 3, the debug build of `make test`): slab.h and page.h, "_check_at".
 *  - legitimate use passes every point: pc_page_trim, pc_cache_shrink and
 *    pc_cache_destroy of a used cache, and a fork (the child checks the page
 *    allocator and every node partial list, then exits 0);
 *  - a planted corruption is caught at the next point, in a child (death
 *    test): the walker's message, pcmalloc's fatal line naming the point,
 *    and SIGABRT:
 *      zone free_pages off by one         -> "after trim" (pc_page_trim)
 *      zone free_pages off by one, fork() -> "in a fork child" (the
 *                                            grandchild aborts; its parent
 *                                            reports how it died)
 *      node nr_partial off by one         -> "after shrink" (pc_cache_shrink)
 *      a CPU's slabs_made off by one      -> "at destroy" (pc_cache_destroy)
 * Each corruption is planted under the lock that guards the field (the
 * slab counts are atomic, changed under no lock). In other
 * builds the points compile to nothing: the test says so and checks only
 * that legitimate use still works.
 */
#define _GNU_SOURCE
#include "slab/slab.h"
#include "test.h"

#define N_OBJECTS 500

static char err[4096];

/* A cache with N_OBJECTS allocated and half of them freed again: partial
 * slabs on its node list, objects in sheaves. */
static struct pc_cache *used_cache(const char *name)
{
	static void *objs[N_OBJECTS];
	struct pc_cache *c = pc_cache_create(name, 136, 0, NULL);
	REQUIRE(c != NULL);
	for (int i = 0; i < N_OBJECTS; i++)
		REQUIRE((objs[i] = pc_cache_alloc(c)) != NULL);
	for (int i = 0; i < N_OBJECTS; i += 2)
		pc_cache_free(c, objs[i]);
	return c;
}

static void free_pages_off_by_one(void)
{
	REQUIRE(pc_page_try_init());
	struct pc_zone *z = pc_zone_get(0);
	pc_lock_acquire(&z->lock);
	z->free_pages++;
	pc_lock_release(&z->lock);
}

/* ---- the bodies, each run in a child ------------------------------------------- */
static void legitimate(void *arg)
{
	(void)arg;
	struct pc_cache *c = used_cache("check-ok");
	pc_cache_shrink(c);
	pc_page_trim();
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(0); /* the fork child's checks ran before this */
	int status;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	REQUIRE(test_exited_ok(status));
	struct pc_cache *empty = pc_cache_create("check-empty", 64, 0, NULL);
	REQUIRE(empty != NULL);
	void *o = pc_cache_alloc(empty);
	pc_cache_free(empty, o);
	REQUIRE(pc_cache_destroy(empty) == 0);
	REQUIRE(pc_cache_destroy(c) > 0); /* objects still allocated: kept */
	REQUIRE(pc_page_check());
}

static void corrupt_then_trim(void *arg)
{
	(void)arg;
	free_pages_off_by_one();
	pc_page_trim();
}

/* The fork child aborts in its check; this process exits 42 if it did. */
static void corrupt_then_fork(void *arg)
{
	(void)arg;
	free_pages_off_by_one();
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(0); /* not reached when the check caught it */
	int status;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	_exit(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT ? 42 : 1);
}

static void corrupt_then_shrink(void *arg)
{
	(void)arg;
	struct pc_cache *c = used_cache("check-shrink");
	struct pc_cache_node *n = c->node[0];
	pc_lock_acquire(&n->list_lock);
	pc_add_relaxed(&n->nr_partial, 1);
	pc_lock_release(&n->list_lock);
	pc_cache_shrink(c);
}

static void corrupt_then_destroy(void *arg)
{
	(void)arg;
	struct pc_cache *c = used_cache("check-destroy");
	pc_add_relaxed(&c->cpu[0].slabs_made, 1);
	pc_cache_destroy(c);
}

TEST(legitimate_use_passes_every_point)
{
	int st = test_in_child(legitimate, NULL, err, sizeof(err));
	CHECK(test_exited_ok(st));
	if (!test_exited_ok(st))
		fprintf(stderr, "  status %#x, stderr <<%s>>\n", st, err);
}

TEST(corruption_caught_after_trim)
{
	int st = test_in_child(corrupt_then_trim, NULL, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "pcmalloc: fatal: page allocator invariants broken after trim"));
	CHECK(strstr(err, "free_pages") != NULL); /* the walker's own message */
}

TEST(corruption_caught_in_fork_child)
{
	int st = test_in_child(corrupt_then_fork, NULL, err, sizeof(err));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 42);
	CHECK(strstr(err, "pcmalloc: fatal: page allocator invariants broken in a fork child"));
	CHECK(strstr(err, "free_pages") != NULL);
}

TEST(corruption_caught_after_shrink)
{
	int st = test_in_child(corrupt_then_shrink, NULL, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "cache check-shrink: node partial list broken after shrink"));
	CHECK(strstr(err, "nr_partial") != NULL);
}

TEST(corruption_caught_at_destroy)
{
	int st = test_in_child(corrupt_then_destroy, NULL, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "cache check-destroy: invariants broken at destroy"));
	CHECK(strstr(err, "counts say") != NULL);
}

int main(void)
{
	alarm(300);
	RUN(legitimate_use_passes_every_point);
#if PC_DEBUG >= 3
	RUN(corruption_caught_after_trim);
	RUN(corruption_caught_in_fork_child);
	RUN(corruption_caught_after_shrink);
	RUN(corruption_caught_at_destroy);
#else
	fprintf(stderr, "PC_DEBUG < 3: no walkers at the check points in this build; "
			"only legitimate use checked\n");
	(void)test_corruption_caught_after_trim;
	(void)test_corruption_caught_in_fork_child;
	(void)test_corruption_caught_after_shrink;
	(void)test_corruption_caught_at_destroy;
#endif
	return test_report();
}
