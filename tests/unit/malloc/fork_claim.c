/*
 * tests/unit/malloc/fork_claim.c - the registration of the fork handlers at
 * the first allocation never waits (os/lifecycle.c, "registering the fork
 * handlers"): the interleaving that would deadlock if it did, forced.
 *
 * The test's constructor runs before pcmalloc's (priority 101, first on the
 * link line; checked). It registers a prepare handler of its own with
 * pthread_atfork (another library's), then makes the process's first
 * allocation on the main thread M. M wins the claim; at the claim's test
 * event (PC_ONCE_EVENT_ATFORK, before it calls pthread_atfork) it starts a
 * thread F that forks, and stays there until F's prepare handler has
 * returned: as if M waited in pthread_atfork for F's fork, which it does
 * where the C library holds its atfork lock across the prepare handlers.
 * (glibc 2.36, here, drops it around each handler: M's pthread_atfork
 * would not wait, so the test holds M itself, and the interleaving is the
 * same with every C library.) F's
 * prepare handler runs a once-init (of the test's: pc_once_slow surely
 * runs, whatever M's nested allocations made already) and allocates. If a
 * pc_once_slow that finds the claim taken waited for the registration, F
 * would wait for M, which waits for F: the alarm would end the test. It
 * must go on instead; F's fork completes (the child allocates too, and
 * exits 0), then M registers. The alarms only detect a hang.
 */
#define _GNU_SOURCE
#include "test.h"

#include "malloc/malloc.h"

#include <pthread.h>
#include <sched.h>

#define ALARM_S 120

static _Atomic int armed, prepare_done, prepare_allocated, claim_events;
static pthread_t forker;
static bool started_before_us, first_ok, forker_started, registered_after;
static int child_status = -1;

static _Atomic uint32_t prepare_once;
static bool prepare_init(void) { return true; }

static void other_prepare(void)
{
	if (!atomic_exchange(&armed, 0))
		return; /* later forks: nothing to do */
	/* The claim is taken, not done: an init that starts now (here one of
	 * the test's own, so that it surely starts whatever M's nested
	 * allocations made already) and an allocation go on at once. */
	bool init_ok = pc_once(&prepare_once, prepare_init);
	void *p = pc_malloc(48);
	atomic_store(&prepare_allocated, init_ok && p != NULL);
	pc_free(p);
	atomic_store(&prepare_done, 1);
}

static void *fork_now(void *arg)
{
	(void)arg;
	pid_t pid = fork();
	if (pid == 0) {
		alarm(ALARM_S);
		void *p = pc_malloc(100);
		_exit(p != NULL ? 0 : 2);
	}
	int status = -1;
	if (pid > 0 && waitpid(pid, &status, 0) == pid)
		child_status = status;
	return NULL;
}

static void hook(_Atomic uint32_t *state, enum pc_once_event event)
{
	(void)state;
	if (event != PC_ONCE_EVENT_ATFORK)
		return;
	atomic_fetch_add(&claim_events, 1);
	atomic_store(&armed, 1);
	forker_started = pthread_create(&forker, NULL, fork_now, NULL) == 0;
	/* The claimer stays claimed until F's prepare handler is through, as
	 * it would wait in pthread_atfork where the fork holds the atfork lock
	 * across the handlers. */
	while (forker_started && !atomic_load(&prepare_done))
		sched_yield();
}

__attribute__((constructor(101))) static void first_allocation(void)
{
	alarm(ALARM_S);
	started_before_us = pc_load_acquire(&pc_malloc_ready) != 0 ||
			    pc_life_fork_handlers_registered();
	pthread_atfork(other_prepare, NULL, NULL);
	atomic_store(&pc_once_test_hook, hook);
	void *p = pc_malloc(32); /* the first allocation: M claims */
	atomic_store(&pc_once_test_hook, NULL);
	first_ok = p != NULL;
	registered_after = pc_life_fork_handlers_registered();
	pc_free(p);
	if (forker_started)
		pthread_join(forker, NULL);
	alarm(0);
}

TEST(claim_never_waits)
{
	CHECK(!started_before_us);
	CHECK_EQ(atomic_load(&claim_events), 1);
	REQUIRE(forker_started);
	CHECK(first_ok);
	CHECK(atomic_load(&prepare_allocated));
	CHECK(WIFEXITED(child_status) && WEXITSTATUS(child_status) == 0);
	CHECK(registered_after);
}

/* Registered once: a later fork runs the handlers and the child is fine. */
TEST(later_fork)
{
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		alarm(ALARM_S);
		void *p = pc_malloc(100);
		_exit(p != NULL ? 0 : 2);
	}
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
	RUN(claim_never_waits);
	RUN(later_fork);
	return test_report();
}
