/*
 * tests/unit/os/once_fork.c - fork() while another thread runs a once-init
 * (os/lifecycle.c, "once and fork"): the child must not find the init
 * RUNNING with no thread left to finish it (its first pc_once would wait
 * forever). fork() waits for the running init instead, so in the child the
 * once is done and pc_once returns at once.
 *
 * Deterministic through the test seam pc_once_test_hook: the init blocks
 * until it is released, and only the forking thread's FORK_WAIT event (fork
 * has begun and sees the init running) releases it. If fork did not wait,
 * the child would see the once not done and exit 1 (never hang), and the
 * parent would release the init itself afterwards.
 */
#define _GNU_SOURCE
#include "os/os.h"
#include "test.h"

#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

static _Atomic uint32_t once_state;
static _Atomic int in_init, release_init, init_runs, fork_waits, forked;

static bool blocking_init(void)
{
	atomic_fetch_add(&init_runs, 1);
	atomic_store(&in_init, 1);
	while (!atomic_load(&release_init))
		sched_yield();
	return true;
}

static void hook(_Atomic uint32_t *state, enum pc_once_event event)
{
	(void)state;
	if (event == PC_ONCE_EVENT_FORK_WAIT) {
		atomic_fetch_add(&fork_waits, 1);
		atomic_store(&release_init, 1); /* fork waits for it: let it finish */
	}
}

/* Runs the once-init, then lives until the parent has forked: a thread that
 * had already finished at the fork would be, in the child, a finished thread
 * nobody joins, which ThreadSanitizer reports as a leak at the child's exit
 * (and the child's status would then say nothing about the once). */
static void *runner(void *arg)
{
	(void)arg;
	bool done = pc_once(&once_state, blocking_init);
	while (!atomic_load(&forked))
		sched_yield();
	return (void *)(uintptr_t)done;
}

TEST(fork_waits_for_running_init)
{
	atomic_store(&pc_once_test_hook, hook);
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, runner, NULL) == 0);
	while (!atomic_load(&in_init)) /* the other thread is inside the init */
		sched_yield();
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		/* Done already (so this cannot wait), and done for good. */
		bool done = pc_once_done(&once_state);
		_exit(done && pc_once(&once_state, blocking_init) ? 0 : 1);
	}
	atomic_store(&forked, 1);
	atomic_store(&release_init, 1); /* in case fork did not wait (the bug) */
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	void *ok = NULL;
	pthread_join(t, &ok);
	atomic_store(&pc_once_test_hook, NULL);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_EQ(atomic_load(&fork_waits), 1);
	CHECK(ok != NULL);
	CHECK_EQ(atomic_load(&init_runs), 1);
}

/* A fork with no init running does not wait (no FORK_WAIT event), and an
 * init started after the fork runs normally in parent and child. */
static _Atomic uint32_t later_state;
static bool quick_init(void) { return true; }

TEST(fork_without_running_init)
{
	atomic_store(&fork_waits, 0);
	atomic_store(&pc_once_test_hook, hook);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(pc_once(&later_state, quick_init) ? 0 : 1);
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	atomic_store(&pc_once_test_hook, NULL);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_EQ(atomic_load(&fork_waits), 0);
	CHECK(pc_once(&later_state, quick_init));
}

int main(void)
{
	RUN(fork_waits_for_running_init);
	RUN(fork_without_running_init);
	return test_report();
}
