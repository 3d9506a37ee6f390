/*
 * tests/unit/malloc/fork_early.c - fork() from a constructor that runs before
 * pcmalloc's own, while other threads allocate and one holds an allocator
 * lock (os/lifecycle.c, "registering the fork handlers").
 *
 * The test's constructor has priority 101, as pcmalloc's constructors, and
 * this file comes first on the link line, so it runs first: it checks that
 * the allocator has not started yet (no allocation, fork handlers not
 * registered), then allocates, starts two threads that churn malloc/free and
 * one that takes a list_lock of the test's cache and keeps it until the
 * fork's prefork begins, and forks.
 *
 * Deterministic: the lock holder lets go only when told, and only the prefork
 * of the test's own registry entry (rank above every layer's, so it runs
 * first) tells it. With the handlers registered (by the first allocation,
 * the fix), the slab layer's prefork waits for that lock, and the child
 * starts with every lock free: its pc_cache_shrink, which takes the
 * list_lock, returns. Without them (registered only by pcmalloc's
 * constructor, which has not run) fork() copies the held lock and the
 * child's pc_cache_shrink waits for it for ever: its alarm kills it, and the
 * test fails, however the threads were scheduled. The alarms only detect a
 * hang (they are far above the run time); the verdict is the child's exit.
 */
#define _GNU_SOURCE
#include "test.h"

#include "malloc/malloc.h"

#include <pthread.h>
#include <sched.h>

#define CHURNERS 2
#define CHILD_ALARM_S 30 /* a hang detector only */
#define PARENT_ALARM_S 120

static struct pc_cache *early_cache;
static _Atomic int held, release_lock, stop_churn, churned;
static pthread_t churner[CHURNERS], holder;

/* Results of the constructor, checked by main(). */
static bool started_before_us, registered_after_first, layers_after_first, made_cache,
	child_ran;
static int child_status = -1;
static _Atomic int prefork_runs;

static void *churn(void *arg)
{
	uint64_t rng = 7 + (uintptr_t)arg;
	void *slot[64] = { 0 };
	while (!atomic_load(&stop_churn)) {
		unsigned i = (unsigned)(test_rand(&rng) % 64);
		pc_free(slot[i]);
		slot[i] = pc_malloc((size_t)(test_rand(&rng) % 2048) + 1);
		atomic_fetch_add(&churned, 1);
	}
	for (unsigned i = 0; i < 64; i++)
		pc_free(slot[i]);
	return NULL;
}

static void *hold(void *arg)
{
	(void)arg;
	struct pc_lock *lock = &early_cache->node[0]->list_lock;
	pc_lock_acquire(lock);
	atomic_store(&held, 1);
	while (!atomic_load(&release_lock))
		sched_yield();
	pc_lock_release(lock);
	atomic_store(&held, 0);
	return NULL;
}

/* Runs first of every prefork handler: the fork has begun. */
static void test_prefork(void)
{
	atomic_fetch_add(&prefork_runs, 1);
	atomic_store(&release_lock, 1);
}

static const struct pc_life test_life = { "fork-early-test", 100, test_prefork, NULL, NULL,
					  NULL };

static int child_main(void)
{
	alarm(CHILD_ALARM_S);
	pc_cache_shrink(early_cache); /* takes the list_lock the holder had */
	void *p[100];
	for (int i = 0; i < 100; i++)
		p[i] = pc_malloc((size_t)i * 40 + 1);
	for (int i = 0; i < 100; i++) {
		if (!p[i])
			return 2;
		pc_free(p[i]);
	}
	void *o = pc_cache_alloc(early_cache);
	if (!o)
		return 3;
	pc_cache_free(early_cache, o);
	return 0;
}

__attribute__((constructor(101))) static void fork_early(void)
{
	alarm(PARENT_ALARM_S);
	started_before_us = pc_load_acquire(&pc_malloc_ready) != 0 ||
			    pc_life_fork_handlers_registered();
	void *first = pc_malloc(64); /* the first allocation of the process */
	registered_after_first = pc_life_fork_handlers_registered();
	/* Every layer's entry, from its init, not from a constructor that has
	 * not run yet (the debug builds' witness and fork-child walk too). */
	layers_after_first = pc_life_is_registered("lock") && pc_life_is_registered("page") &&
			     pc_life_is_registered("slab");
#if PC_DEBUG >= 3
	layers_after_first = layers_after_first && pc_life_is_registered("witness") &&
			     pc_life_is_registered("check");
#endif
	early_cache = pc_cache_create("fork-early", 64, 0, NULL);
	made_cache = first != NULL && early_cache != NULL;
	if (!made_cache)
		return;
	pc_life_register(&test_life);
	for (uintptr_t i = 0; i < CHURNERS; i++)
		REQUIRE(pthread_create(&churner[i], NULL, churn, (void *)i) == 0);
	/* The churners first, then the lock: a churner may stop in a decay
	 * pass that waits for the held list_lock (slab_mutex held), so
	 * counting their steps while the lock is held could wait for ever. */
	while (atomic_load(&churned) < 1000)
		sched_yield();
	REQUIRE(pthread_create(&holder, NULL, hold, NULL) == 0);
	while (!atomic_load(&held))
		sched_yield();
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(child_main());
	atomic_store(&release_lock, 1); /* no prefork ran (the bug): let it go now */
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	child_ran = true;
	child_status = status;
	atomic_store(&stop_churn, 1);
	for (int i = 0; i < CHURNERS; i++)
		pthread_join(churner[i], NULL);
	pthread_join(holder, NULL);
	pc_free(first);
	alarm(0);
}

TEST(fork_from_early_constructor)
{
	CHECK(!started_before_us); /* the constructor ran before pcmalloc's */
	CHECK(registered_after_first);
	CHECK(layers_after_first);
	REQUIRE(made_cache);
	REQUIRE(child_ran);
	if (WIFSIGNALED(child_status))
		fprintf(stderr, "  child killed by signal %d%s\n", WTERMSIG(child_status),
			WTERMSIG(child_status) == SIGALRM ? " (hung on a lock copied held)" : "");
	CHECK(WIFEXITED(child_status) && WEXITSTATUS(child_status) == 0);
	CHECK_EQ(atomic_load(&prefork_runs), 1);
	CHECK(pc_life_fork_handlers_registered());
}

/* Later forks, from main, with the handlers registered once (the constructor
 * that runs after the test's must not register them a second time: each
 * prefork handler would run twice, the second waiting for its own locks). */
TEST(later_fork_runs_handlers_once)
{
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(child_main());
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_EQ(atomic_load(&prefork_runs), 2);
}

int main(void)
{
	RUN(fork_from_early_constructor);
	RUN(later_fork_runs_handlers_once);
	return test_report();
}
