/*
 * tests/unit/lock/osq_pool.c - the pool of spin queue nodes behind pc_mutex.
 *  - nodes come back at pc_lock_thread_exit: more than PC_OSQ_POOL_SIZE
 *    threads, each contending once, never find the pool empty;
 *  - a thread that does not call it gets its node back all the same: the
 *    lock layer's thread_exit handler (lifecycle registry, os.h) runs when
 *    the thread exits, because taking a node enrolled the thread;
 *  - in a fork child, pc_lock_fork_child gives every node back.
 * Not run under ThreadSanitizer: it needs thousands of threads, and the
 * concurrency itself is covered by mutex.c.
 */
#define _GNU_SOURCE
#include "lock/lock.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define BATCH 64

static struct pc_mutex mutex;
static unsigned long counter; /* plain, under mutex */
static bool give_back;        /* workers call pc_lock_thread_exit */

/* Contended pc_mutex_lock calls that reached the spin decision so far. */
static uint64_t spin_decisions(void)
{
	struct pc_mutex_spin_counters c;
	pc_mutex_spin_counters(&c);
	return c.spin_acquired + c.spin_timeout + c.unqueued + c.no_node;
}

static uint64_t no_node_count(void)
{
	struct pc_mutex_spin_counters c;
	pc_mutex_spin_counters(&c);
	return c.no_node;
}

static void *batch_worker(void *arg)
{
	pc_mutex_lock(&mutex);
	counter++;
	pc_mutex_unlock(&mutex);
	if (give_back)
		pc_lock_thread_exit();
	return NULL;
}

/* BATCH threads each lock once while main holds: every one of them is
 * contended, so every one asks for a node. */
static void run_batch(void)
{
	pthread_t tid[BATCH];
	pc_mutex_lock(&mutex);
	uint64_t before = spin_decisions();
	for (unsigned i = 0; i < BATCH; i++)
		REQUIRE(pthread_create(&tid[i], NULL, batch_worker, NULL) == 0);
	while (spin_decisions() < before + BATCH)
		sched_yield();
	pc_mutex_unlock(&mutex);
	for (unsigned i = 0; i < BATCH; i++)
		pthread_join(tid[i], NULL);
}

/* Enough batches to use every node of the pool, plus two. */
static unsigned long run_pool_batches(void)
{
	unsigned batches = PC_OSQ_POOL_SIZE / BATCH + 2;
	counter = 0;
	for (unsigned b = 0; b < batches; b++) {
		test_progress();
		run_batch();
	}
	return (unsigned long)batches * BATCH;
}

TEST(nodes_recycled)
{
	pc_mutex_init(&mutex);
	give_back = true;
	uint64_t before = no_node_count();
	unsigned long n = run_pool_batches();
	CHECK_EQ(counter, n);
	CHECK_EQ(no_node_count(), before);
}

TEST(nodes_recycled_at_thread_exit_then_fork)
{
	pc_mutex_init(&mutex);
	give_back = false;
	uint64_t before = no_node_count();
	unsigned long n = run_pool_batches();
	CHECK_EQ(counter, n);
	CHECK_EQ(no_node_count(), before); /* the exit handler gave them back */
	CHECK_EQ(pc_load_relaxed(&mutex.state), 0);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		pc_lock_fork_child();
		pc_mutex_init(&mutex);
		uint64_t child_before = no_node_count();
		give_back = true;
		counter = 0;
		run_batch();
		_exit(counter == BATCH && no_node_count() == child_before ? 0 : 1);
	}
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
	watchdog_install("osq_pool: watchdog: the test hangs\n");
	watchdog_arm(120);
	RUN(nodes_recycled);
	RUN(nodes_recycled_at_thread_exit_then_fork);
	return test_report();
}
