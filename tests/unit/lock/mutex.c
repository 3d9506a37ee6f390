/*
 * tests/unit/lock/mutex.c - the futex mutex and its spin queue (OSQ):
 *  - no lost wake-up: many threads, short critical sections, then a phase in
 *    which the holder sleeps (usleep) so that waiters go to the futex; the test
 *    must finish (a watchdog alarm fails it if it hangs) with an exact count;
 *  - OSQ unqueue: the holder holds for a millisecond while 32 threads contend,
 *    so queued spinners run out of budget and leave the queue (steps A/B/C);
 *    the mutex stays exclusive, the test ends, and unqueues did happen;
 *  - a pc_lock of kind mutex does the same through the generic interface.
 * Workers only record; main checks. After every phase the mutex word and the
 * spin queue must be back at 0.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "lock/lock.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64

struct phase {
	struct pc_mutex m;
	struct pc_lock lock;      /* used instead of m when generic */
	bool generic;
	unsigned iters;
	unsigned sleep_every;     /* 0: never; else holder sleeps every n-th time */
	unsigned sleep_us;
	unsigned outside_pauses;  /* work between sections, in pauses */
	pthread_barrier_t start;
	unsigned long counter;    /* plain, under the mutex */
	_Atomic int inside;
	_Atomic unsigned violations;
};

static void *phase_worker(void *arg)
{
	struct phase *p = arg;
	pthread_barrier_wait(&p->start);
	for (unsigned i = 1; i <= p->iters; i++) {
		p->generic ? pc_lock_acquire(&p->lock) : pc_mutex_lock(&p->m);
		if (atomic_exchange_explicit(&p->inside, 1, memory_order_relaxed) != 0)
			pc_add_relaxed(&p->violations, 1);
		p->counter++;
		if (p->sleep_every != 0 && i % p->sleep_every == 0)
			usleep(p->sleep_us);
		pc_store_relaxed(&p->inside, 0);
		p->generic ? pc_lock_release(&p->lock) : pc_mutex_unlock(&p->m);
		for (unsigned j = 0; j < p->outside_pauses; j++)
			pc_cpu_relax();
	}
	pc_lock_thread_exit();
	return NULL;
}

static unsigned outside_pauses; /* for the next run_phase */

/* Run one phase; checks exactness and that the mutex ends free. */
static void run_phase(bool generic, unsigned nthreads, unsigned iters,
		      unsigned sleep_every, unsigned sleep_us)
{
	static struct phase p;
	pthread_t tid[MAX_THREADS];
	memset(&p, 0, sizeof(p));
	pc_mutex_init(&p.m);
	pc_lock_init(&p.lock, "mutex-test", PC_LOCK_MUTEX);
	p.generic = generic;
	p.iters = iters;
	p.sleep_every = sleep_every;
	p.sleep_us = sleep_us;
	p.outside_pauses = outside_pauses;
	REQUIRE(pthread_barrier_init(&p.start, NULL, nthreads) == 0);
	double t0 = now_ms();
	for (unsigned i = 0; i < nthreads; i++)
		REQUIRE(pthread_create(&tid[i], NULL, phase_worker, &p) == 0);
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&p.start);
	fprintf(stderr, "  %s: %u threads x %u, sleep %u us every %u: %.0f ms\n",
		generic ? "pc_lock" : "pc_mutex", nthreads, iters, sleep_us, sleep_every,
		now_ms() - t0);
	CHECK_EQ(p.counter, (unsigned long)nthreads * iters);
	CHECK_EQ(pc_load_relaxed(&p.violations), 0);
	struct pc_mutex *m = generic ? &p.lock.u.mutex : &p.m;
	CHECK_EQ(pc_load_relaxed(&m->state), 0);
	CHECK_EQ(pc_load_relaxed(&m->spinq.tail), 0);
}

static struct pc_mutex_spin_counters counters_now(void)
{
	struct pc_mutex_spin_counters c;
	pc_mutex_spin_counters(&c);
	return c;
}

/* Short sections: spinning and sleeping mixed; then sleeping holders. */
TEST(no_lost_wakeup)
{
	alarm(120);
	struct pc_mutex_spin_counters before = counters_now();
	run_phase(false, 32, scaled(20000, 4), 0, 0);
	run_phase(false, 64, scaled(5000, 4), 0, 0);
	/* Holder sleeps 200 us every 50th time: waiters must use the futex. */
	run_phase(false, 32, scaled(400, 4), 50, 200);
	/* Every section sleeps: a pure hand-off chain through futex wakes. */
	run_phase(false, 16, scaled(40, 4), 1, 100);
	struct pc_mutex_spin_counters after = counters_now();
	CHECK(after.sleeps > before.sleeps);
	alarm(0);
}

/* The holder holds for 1 ms: queued spinners must leave the OSQ and sleep. */
TEST(osq_unqueue)
{
	alarm(120);
	struct pc_mutex_spin_counters before = counters_now(), after;
	double t0 = now_ms();
	do {
		run_phase(false, 32, scaled(16, 4), 4, 1000);
		after = counters_now();
	} while (after.unqueued == before.unqueued && now_ms() - t0 < 10000);
	fprintf(stderr, "  counters: spin_acquired %llu, spin_timeout %llu, unqueued %llu, "
		"no_node %llu, sleeps %llu\n",
		(unsigned long long)(after.spin_acquired - before.spin_acquired),
		(unsigned long long)(after.spin_timeout - before.spin_timeout),
		(unsigned long long)(after.unqueued - before.unqueued),
		(unsigned long long)(after.no_node - before.no_node),
		(unsigned long long)(after.sleeps - before.sleeps));
	CHECK(after.unqueued > before.unqueued);
	CHECK(after.spin_timeout > before.spin_timeout);
	CHECK(after.sleeps > before.sleeps);
	CHECK_EQ(after.no_node, before.no_node);
	alarm(0);
}

/* A long spin budget (~100 us) and 1 ms holds: most spinners queue up behind
 * a head, then leave from the middle of the queue, often next to a neighbour
 * that leaves too (steps A/B/C against each other). */
TEST(osq_unqueue_stress)
{
	alarm(120);
	struct pc_mutex_spin_counters before = counters_now();
	pc_store_relaxed(&pc_mutex_spin_pauses, 4000);
	run_phase(false, 32, scaled(24, 4), 2, 1000);
	run_phase(false, 64, scaled(400, 4), 8, 50);
	/* Budget longer than a time slice: spinners get preempted inside the
	 * queue, so others queue behind them and leave from the middle. */
	pc_store_relaxed(&pc_mutex_spin_pauses, 200000);
	run_phase(false, 16, scaled(20, 4), 2, 1000);
	pc_store_relaxed(&pc_mutex_spin_pauses, PC_MUTEX_SPIN_PAUSES);
	struct pc_mutex_spin_counters after = counters_now();
	fprintf(stderr, "  unqueued %llu\n", (unsigned long long)(after.unqueued - before.unqueued));
	CHECK(after.unqueued > before.unqueued);
	alarm(0);
}

/* Spinning off: straight to the futex. */
TEST(no_spin)
{
	alarm(120);
	struct pc_mutex_spin_counters before = counters_now();
	pc_store_relaxed(&pc_mutex_spin_pauses, 0);
	run_phase(false, 32, scaled(2000, 4), 16, 20);
	pc_store_relaxed(&pc_mutex_spin_pauses, PC_MUTEX_SPIN_PAUSES);
	struct pc_mutex_spin_counters after = counters_now();
	CHECK_EQ(after.spin_acquired, before.spin_acquired);
	CHECK_EQ(after.spin_timeout, before.spin_timeout);
	CHECK_EQ(after.unqueued, before.unqueued);
	CHECK(after.sleeps > before.sleeps);
	alarm(0);
}

/* A waiter that spins (unbounded budget) as OSQ head takes the mutex when
 * the holder releases it, without sleeping: deterministic, unlike the mixed
 * load below, whose share of spin wins depends on scheduling. */
static struct pc_mutex handoff_mutex;

static void *handoff_waiter(void *arg)
{
	(void)arg;
	pc_mutex_lock(&handoff_mutex);
	pc_mutex_unlock(&handoff_mutex);
	return NULL;
}

TEST(spinner_takes_released_mutex)
{
	alarm(120);
	pc_mutex_init(&handoff_mutex);
	struct pc_mutex_spin_counters before = counters_now();
	pc_store_relaxed(&pc_mutex_spin_pauses, UINT32_MAX);
	pc_mutex_lock(&handoff_mutex);
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, handoff_waiter, NULL) == 0);
	while (pc_load_relaxed(&handoff_mutex.spinq.tail) == 0) /* the waiter is spinning */
		sched_yield();
	pc_mutex_unlock(&handoff_mutex);
	pthread_join(t, NULL);
	pc_store_relaxed(&pc_mutex_spin_pauses, PC_MUTEX_SPIN_PAUSES);
	struct pc_mutex_spin_counters after = counters_now();
	CHECK_EQ(after.spin_acquired, before.spin_acquired + 1);
	CHECK_EQ(after.sleeps, before.sleeps);
	CHECK_EQ(pc_load_relaxed(&handoff_mutex.state), 0);
	alarm(0);
}

/* Many short sections: spinners mostly win as OSQ head, some give up. How
 * many win depends on scheduling, so the counts are only printed; run_phase
 * checks exclusion and the totals. */
TEST(osq_spin_mixed)
{
	alarm(120);
	struct pc_mutex_spin_counters before = counters_now();
	outside_pauses = 100; /* ~3 us between sections: a spinning head wins */
	run_phase(false, 2, scaled(50000, 4), 0, 0);
	run_phase(false, 8, scaled(20000, 4), 0, 0);
	outside_pauses = 0;
	run_phase(false, 32, scaled(2000, 4), 16, 20);
	struct pc_mutex_spin_counters after = counters_now();
	fprintf(stderr, "  spin_acquired %llu, spin_timeout %llu\n",
		(unsigned long long)(after.spin_acquired - before.spin_acquired),
		(unsigned long long)(after.spin_timeout - before.spin_timeout));
	alarm(0); /* run_phase checked exclusion and counts */
}

TEST(generic_mutex)
{
	alarm(120);
	run_phase(true, 32, scaled(10000, 4), 0, 0);
	run_phase(true, 32, scaled(16, 4), 4, 1000);
	alarm(0);
}

int main(void)
{
	watchdog_install("mutex: watchdog: the test hangs (lost wake-up?)\n");
	RUN(no_lost_wakeup);
	RUN(osq_unqueue);
	RUN(osq_unqueue_stress);
	RUN(no_spin);
	RUN(spinner_takes_released_mutex);
	RUN(osq_spin_mixed);
	RUN(generic_mutex);
	return test_report();
}
