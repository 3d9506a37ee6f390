/*
 * tests/unit/os/lifecycle.c - the once-init primitive and the registry of
 * fork and thread-exit handlers (os/lifecycle.c).
 *
 *  - pc_once runs init exactly once among racing threads (init blocks until
 *    every racer has arrived, so they really wait on it), and a failed init
 *    is retried by the next call;
 *  - handlers run in rank order: prefork highest first, postfork parent and
 *    child lowest first (each handler appends its letter to a log that the
 *    test compares; the child reports through its exit status);
 *  - thread_exit handlers run for an enrolled thread, highest rank first,
 *    before pthread_join returns; not for a thread that never enrolled; and
 *    again when a handler enrolls the thread once more.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "os/os.h"
#include "test.h"

#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- pc_once ------------------------------------------------------------------- */
#define RACERS 4
static _Atomic uint32_t once_state;
static _Atomic int init_runs, arrived;

static bool slow_init(void)
{
	atomic_fetch_add(&init_runs, 1);
	while (atomic_load(&arrived) < RACERS) /* every racer is past its check */
		sched_yield();
	return true;
}

static void *racer(void *arg)
{
	(void)arg;
	atomic_fetch_add(&arrived, 1);
	return (void *)(uintptr_t)pc_once(&once_state, slow_init);
}

TEST(once_runs_init_once)
{
	pthread_t t[RACERS];
	for (int i = 0; i < RACERS; i++)
		REQUIRE(pthread_create(&t[i], NULL, racer, NULL) == 0);
	for (int i = 0; i < RACERS; i++) {
		void *ok;
		pthread_join(t[i], &ok);
		CHECK(ok != NULL);
	}
	CHECK_EQ(atomic_load(&init_runs), 1);
	CHECK(pc_once_done(&once_state));
}

static int failing_runs;
static bool fail_twice(void) { return ++failing_runs > 2; }

TEST(once_retries_failed_init)
{
	static _Atomic uint32_t state;
	CHECK(!pc_once(&state, fail_twice));
	CHECK(!pc_once_done(&state));
	CHECK(!pc_once(&state, fail_twice));
	CHECK(pc_once(&state, fail_twice));
	CHECK(pc_once(&state, fail_twice)); /* done: not called again */
	CHECK_EQ(failing_runs, 3);
}

/* ---- the registry ---------------------------------------------------------------- */
static char fork_log[64];
static unsigned fork_log_len;
static void log_char(char c)
{
	if (fork_log_len + 1 < sizeof(fork_log))
		fork_log[fork_log_len++] = c;
}
static void pre_a(void) { log_char('A'); }
static void pre_b(void) { log_char('B'); }
static void parent_a(void) { log_char('a'); }
static void parent_b(void) { log_char('b'); }
static void child_a(void) { log_char('x'); }
static void child_b(void) { log_char('y'); }

static _Atomic int exit_order[4], exit_calls, reenroll_left;
static void exit_a(void) { atomic_store(&exit_order[atomic_fetch_add(&exit_calls, 1) & 3], 'a'); }
static void exit_b(void)
{
	atomic_store(&exit_order[atomic_fetch_add(&exit_calls, 1) & 3], 'b');
	if (atomic_fetch_sub(&reenroll_left, 1) > 0)
		pc_life_thread_enroll(); /* per-thread state taken again */
}

/* Ranks above every layer's, registered in the "wrong" order on purpose. */
static const struct pc_life life_a = { "test-a", 100, pre_a, parent_a, child_a, exit_a };
static const struct pc_life life_b = { "test-b", 200, pre_b, parent_b, child_b, exit_b };

TEST(fork_handlers_in_rank_order)
{
	pc_life_register(&life_a);
	pc_life_register(&life_b);
	fork_log_len = 0;
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		fork_log[fork_log_len] = '\0';
		_exit(strcmp(fork_log, "BAxy") == 0 ? 0 : 1);
	}
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	fork_log[fork_log_len] = '\0';
	CHECK(strcmp(fork_log, "BAab") == 0);
}

static void *enrolling(void *arg)
{
	if (arg)
		CHECK(pc_life_thread_enroll());
	return NULL;
}

static void run_thread(bool enroll)
{
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, enrolling, enroll ? (void *)1 : NULL) == 0);
	pthread_join(t, NULL);
}

TEST(thread_exit_handlers)
{
	atomic_store(&exit_calls, 0);
	run_thread(false);
	CHECK_EQ(atomic_load(&exit_calls), 0); /* never enrolled: not called */
	run_thread(true);
	CHECK_EQ(atomic_load(&exit_calls), 2);
	CHECK_EQ(atomic_load(&exit_order[0]), 'b'); /* highest rank first */
	CHECK_EQ(atomic_load(&exit_order[1]), 'a');
	atomic_store(&exit_calls, 0);
	atomic_store(&reenroll_left, 1);
	run_thread(true);
	CHECK_EQ(atomic_load(&exit_calls), 4); /* a second round after re-enrolling */
}

/* A fork handler that starts an init (the forking thread's first contended
 * mutex makes the thread-exit key once) must not wait for its own fork:
 * inits otherwise wait while a fork is under way ("once and fork"). The
 * prefork and the child's postfork each run a once of their own. Without
 * the forking thread's exemption the parent waits in its prefork for ever
 * (checked; every signal is blocked there, so only ctest's timeout ends
 * it). */
static _Atomic uint32_t in_prefork_state, in_child_state;
static bool in_fork_init(void) { return true; }
static void pre_init(void) { pc_once(&in_prefork_state, in_fork_init); }
static void child_init(void) { pc_once(&in_child_state, in_fork_init); }
static const struct pc_life life_init = { "test-init", 150, pre_init, NULL, child_init, NULL };

TEST(init_inside_fork_handlers)
{
	pc_life_register(&life_init);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(pc_once_done(&in_child_state) ? 0 : 1);
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(pc_once_done(&in_prefork_state));
}

int main(void)
{
	RUN(once_runs_init_once);
	RUN(once_retries_failed_init);
	RUN(fork_handlers_in_rank_order);
	RUN(thread_exit_handlers);
	RUN(init_inside_fork_handlers);
	return test_report();
}
