/*
 * tests/malloc/test_fork.c - fork while other threads allocate.
 *
 * Three threads churn malloc/free over all size classes while the main
 * thread forks FORKS times. A fork can catch a churning thread anywhere in
 * the allocator, holding any lock; the allocator's fork handlers must leave
 * the child a working heap. Each child:
 *   - checks and frees some of the blocks it inherited (from the churning
 *     threads, which do not exist in the child, and from the main thread),
 *   - allocates, starts a thread that allocates and frees (some of it
 *     inherited too), joins it,
 *   - and _exit(0)s; any damage or failure gives another status, and an
 *     alarm kills a child that hangs (a lock left held across fork).
 * The parent checks every child's exit status.
 *
 * The alarms detect hangs only: the parent's is re-armed at every fork, so
 * a loaded machine that makes each fork slow cannot fire it, and the
 * parent stops forking after FORK_BUDGET_S once MIN_FORKS children ran (a
 * debug build at load 50 on 2 cores needs more than 150 s for 300 forks).
 * How many forks ran depends on the machine; the verdict does not: every
 * child that ran must have exited 0, and at least MIN_FORKS ran.
 */
#define _GNU_SOURCE
#include "malloc_test.h"

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>

#define FORKS 300
#define MIN_FORKS 60
#define FORK_BUDGET_S 90.0 /* stop forking after this, once MIN_FORKS children ran */
#define CHURNERS 3
#define CHURN_SLOTS 128
#define MAIN_SLOTS 128
#define CHILD_ALARM_S 60 /* a hang detector only: far above a child's run time even on a loaded machine */
#define PARENT_ALARM_S 100 /* per fork: a fork or a churner that hangs ends the test */

/* Slots hold self-describing objects (malloc_test.h) or NULL. A churner
 * empties a slot before freeing its block and fills it only after writing
 * the new block, so at any fork every non-NULL slot is a whole live block. */
static _Atomic(void *) churn_slot[CHURNERS][CHURN_SLOTS];
static atomic_bool stop, paused;
static atomic_long churn_ops, churn_errors;
static void *main_slot[MAIN_SLOTS];

static void *object_new(uint64_t *rng)
{
	size_t n = random_size(rng, 30, 2, 8 * MiB);
	if (n < 16)
		n = 16;
	void *p = p_malloc(n);
	if (p)
		object_fill(p, n);
	return p;
}

static void *churn(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	uint64_t rng = 1000 + id;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (atomic_load_explicit(&paused, memory_order_relaxed)) {
			usleep(100); /* leave the cores to the child */
			continue;
		}
		_Atomic(void *) *s = &churn_slot[id][test_rand(&rng) % CHURN_SLOTS];
		void *old = atomic_exchange(s, NULL);
		if (old) {
			if (!object_check(old))
				atomic_fetch_add(&churn_errors, 1);
			p_free(old);
		}
		void *p = object_new(&rng);
		if (!p)
			atomic_fetch_add(&churn_errors, 1);
		/* release: the block's contents are written before it is seen */
		atomic_store_explicit(s, p, memory_order_release);
		atomic_fetch_add_explicit(&churn_ops, 1, memory_order_relaxed);
	}
	return NULL;
}

/* ---- the child ------------------------------------------------------------ */
struct child_work {
	uint64_t seed;
	int errors;
};

static void *child_thread(void *arg)
{
	struct child_work *w = arg;
	uint64_t rng = w->seed;
	void *mine[64];
	for (int i = 0; i < 64; i++)
		mine[i] = object_new(&rng);
	/* free some inherited churner blocks from this new thread */
	for (int i = 0; i < CHURN_SLOTS; i += 3) {
		void *p = atomic_exchange(&churn_slot[2][i], NULL);
		if (p) {
			w->errors += !object_check(p);
			p_free(p);
		}
	}
	for (int i = 0; i < 64; i++) {
		w->errors += !mine[i] || !object_check(mine[i]);
		p_free(mine[i]);
	}
	return NULL;
}

static int child_main(uint64_t seed)
{
	alarm(CHILD_ALARM_S);
	int errors = 0;
	uint64_t rng = seed;
	/* Inherited blocks: check all, free about half. */
	for (int c = 0; c < CHURNERS; c++) {
		for (int i = 0; i < CHURN_SLOTS; i++) {
			void *p = atomic_load(&churn_slot[c][i]);
			if (!p)
				continue;
			errors += !object_check(p);
			if (test_rand(&rng) & 1) {
				atomic_store(&churn_slot[c][i], NULL);
				p_free(p);
			}
		}
	}
	for (int i = 0; i < MAIN_SLOTS; i += 2) {
		errors += main_slot[i] && !object_check(main_slot[i]);
		p_free(main_slot[i]);
		main_slot[i] = NULL;
	}
	/* New blocks, and a thread that allocates too. */
	void *fresh[100];
	for (int i = 0; i < 100; i++)
		fresh[i] = object_new(&rng);
	struct child_work w = { seed * 31 + 7, 0 };
	pthread_t t;
	if (pthread_create(&t, NULL, child_thread, &w) != 0)
		return 3;
	pthread_join(t, NULL);
	errors += w.errors;
	for (int i = 0; i < 100; i++) {
		errors += !fresh[i] || !object_check(fresh[i]);
		p_free(fresh[i]);
	}
	return errors ? 2 : 0;
}

TEST(fork_while_threads_allocate)
{
	double t0 = now_seconds();
	alarm(PARENT_ALARM_S);
	uint64_t rng = 77;
	int forks = 0;
	for (int i = 0; i < MAIN_SLOTS; i++)
		main_slot[i] = object_new(&rng);
	pthread_t th[CHURNERS];
	for (uintptr_t c = 0; c < CHURNERS; c++)
		REQUIRE(pthread_create(&th[c], NULL, churn, (void *)c) == 0);
	while (atomic_load(&churn_ops) < 1000)
		sched_yield();

	int ok = 0, bad_exit = 0, killed = 0, fork_failed = 0, main_damaged = 0;
	for (int f = 0; f < FORKS; f++) {
		if (f >= MIN_FORKS && now_seconds() - t0 > FORK_BUDGET_S)
			break; /* a slow machine: enough forks ran */
		alarm(PARENT_ALARM_S); /* re-armed per fork: a hang detector, not a time limit */
		forks++;
		/* the main thread allocates between forks too */
		int k = (int)(test_rand(&rng) % MAIN_SLOTS);
		if (main_slot[k] && !object_check(main_slot[k]))
			main_damaged++;
		p_free(main_slot[k]);
		main_slot[k] = object_new(&rng);

		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0) {
			fork_failed++;
			continue;
		}
		if (pid == 0)
			_exit(child_main((uint64_t)f * 7919 + 1));
		/* The churners did their part (being anywhere at the fork); let
		 * the child run, then let them churn again before the next fork. */
		atomic_store(&paused, true);
		int status;
		pid_t w = waitpid(pid, &status, 0);
		long ops = atomic_load(&churn_ops);
		atomic_store(&paused, false);
		while (atomic_load(&churn_ops) < ops + 30)
			sched_yield();
		if (w != pid) {
			fork_failed++;
			continue;
		}
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			ok++;
		} else if (WIFEXITED(status)) {
			bad_exit++;
			fprintf(stderr, "  fork %d: child exited %d\n", f, WEXITSTATUS(status));
		} else {
			killed++;
			fprintf(stderr, "  fork %d: child killed by signal %d%s\n", f, WTERMSIG(status),
				WTERMSIG(status) == SIGALRM ? " (hung: alarm)" : "");
		}
		if (bad_exit + killed >= 5)
			break; /* enough evidence; do not wait out more hangs */
	}
	atomic_store(&stop, true);
	alarm(PARENT_ALARM_S);
	for (int c = 0; c < CHURNERS; c++)
		pthread_join(th[c], NULL);
	alarm(0);
	int damaged = 0;
	for (int c = 0; c < CHURNERS; c++)
		for (int i = 0; i < CHURN_SLOTS; i++) {
			void *p = atomic_exchange(&churn_slot[c][i], NULL);
			if (p) {
				damaged += !object_check(p);
				p_free(p);
			}
		}
	for (int i = 0; i < MAIN_SLOTS; i++) {
		damaged += main_slot[i] && !object_check(main_slot[i]);
		p_free(main_slot[i]);
	}
	printf("fork: %d of %d forks, %d children ok, %ld churn ops in %.1f s\n", forks, FORKS,
	       ok, atomic_load(&churn_ops), now_seconds() - t0);
	CHECK_EQ(fork_failed, 0);
	CHECK_EQ(bad_exit, 0); /* every child exited 0 */
	CHECK_EQ(killed, 0);   /* no child crashed or hung */
	CHECK(forks >= MIN_FORKS);
	CHECK_EQ(ok, forks);
	CHECK_EQ(atomic_load(&churn_errors), 0);
	CHECK_EQ(damaged, 0);
	CHECK_EQ(main_damaged, 0);
}

int main(void)
{
	RUN(malloc_interposed);
	RUN(fork_while_threads_allocate);
	return test_report();
}
