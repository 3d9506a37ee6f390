/*
 * tests/unit/lock/mutex.c - the futex mutex and its spin queue (OSQ):
 *  - no lost wake-up: many threads, short critical sections, then a phase in
 *    which the holder sleeps (usleep) so that waiters go to the futex; the test
 *    must finish (a watchdog alarm fails it if it hangs) with an exact count;
 *  - OSQ unqueue, forced: through the test seam pc_mutex_spin_hook, the head
 *    of the spin queue is held at a gate while main holds the mutex, and the
 *    threads queued behind it get a spin budget of 0: each one must leave the
 *    queue (steps A/B/C), from the tail, from the middle, or two neighbours at
 *    once, whatever the scheduler does; then the head's budget is spent, so it
 *    times out and sleeps. Counts are exact;
 *  - load phases (many threads, 1 ms holds, long budgets) whose verdict is
 *    exclusion, exact totals and an empty queue at the end, never how often
 *    a path was taken (that depends on the scheduler, so it is only printed);
 *  - a pc_lock of kind mutex does the same through the generic interface.
 * Every "it happened" check is on a situation the test forces: main holds
 * the mutex while a waiter is certain to reach the counted point, and main
 * waits for that counter (a wait for a certain event, bounded by the
 * watchdog), never for a chance one.
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
		test_progress();
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

static void print_counters(const char *what, struct pc_mutex_spin_counters b,
			   struct pc_mutex_spin_counters a)
{
	fprintf(stderr, "  %s: spin_acquired %llu, spin_timeout %llu, unqueued %llu, "
		"no_node %llu, sleeps %llu\n", what,
		(unsigned long long)(a.spin_acquired - b.spin_acquired),
		(unsigned long long)(a.spin_timeout - b.spin_timeout),
		(unsigned long long)(a.unqueued - b.unqueued),
		(unsigned long long)(a.no_node - b.no_node),
		(unsigned long long)(a.sleeps - b.sleeps));
}

/* ---- forced situations ---------------------------------------------------------------
 * The test mutex `forced` is held by main throughout a scenario, so every
 * waiter is certainly contended. Each waiter thread sets its own gate (a
 * thread-local pointer) before it locks; the hook below, called by the mutex
 * at the two OSQ decision points, waits at the thread's gate until main opens
 * it and then returns the budget main chose for that point. A thread without
 * a gate keeps its budget. */
struct gate {
	_Atomic int at_head, at_queued; /* 1 once the thread reached that point */
	_Atomic int open;               /* main lets the thread go on */
	uint32_t head_budget, queued_budget;
	pthread_t thread;
};
static __thread struct gate *my_gate;
static struct pc_mutex forced;

static uint32_t gate_hook(struct pc_mutex *m, enum pc_mutex_spin_point at, uint32_t budget)
{
	struct gate *g = my_gate;
	if (g == NULL || m != &forced)
		return budget;
	pc_store_release(at == PC_MUTEX_SPIN_HEAD ? &g->at_head : &g->at_queued, 1);
	while (!pc_load_acquire(&g->open)) /* pairs with gate_open */
		sched_yield();
	return at == PC_MUTEX_SPIN_HEAD ? g->head_budget : g->queued_budget;
}

static void *gate_waiter(void *arg)
{
	my_gate = arg;
	pc_mutex_lock(&forced);
	pc_mutex_unlock(&forced);
	pc_lock_thread_exit();
	return NULL;
}

static void gate_start(struct gate *g, uint32_t head_budget, uint32_t queued_budget)
{
	memset(g, 0, sizeof(*g));
	g->head_budget = head_budget;
	g->queued_budget = queued_budget;
	REQUIRE(pthread_create(&g->thread, NULL, gate_waiter, g) == 0);
}

static void gate_open(struct gate *g) { pc_store_release(&g->open, 1); }

/* Wait for an event the scenario makes certain (the watchdog bounds it). */
static void wait_flag(_Atomic int *flag)
{
	while (!pc_load_acquire(flag))
		sched_yield();
}

static uint64_t counter_of(size_t offset)
{
	struct pc_mutex_spin_counters c = counters_now();
	return *(uint64_t *)(void *)((char *)&c + offset);
}
#define WAIT_COUNTER(field, value)                                                      \
	do {                                                                            \
		while (counter_of(offsetof(struct pc_mutex_spin_counters, field)) < (value)) \
			sched_yield();                                                  \
	} while (0)

/* Main holds `forced`; one thread with spinning off is certainly contended
 * and must sleep on the futex; main's unlock must wake it (no lost wake-up). */
static void force_one_sleeper(void)
{
	struct pc_mutex_spin_counters before = counters_now();
	pc_mutex_init(&forced);
	pc_mutex_lock(&forced);
	struct gate g;
	gate_start(&g, 0, 0);
	WAIT_COUNTER(sleeps, before.sleeps + 1);
	pc_mutex_unlock(&forced);
	pthread_join(g.thread, NULL);
	CHECK_EQ(pc_load_relaxed(&forced.state), 0);
	CHECK_EQ(pc_load_relaxed(&forced.spinq.tail), 0);
}

/* Short sections: spinning and sleeping mixed; then sleeping holders. The
 * load phases check exclusion and totals; the futex path is forced. */
TEST(no_lost_wakeup)
{
	watchdog_arm(120);
	struct pc_mutex_spin_counters before = counters_now();
	run_phase(false, 32, scaled(20000, 4), 0, 0);
	run_phase(false, 64, scaled(5000, 4), 0, 0);
	/* Holder sleeps 200 us every 50th time: waiters mostly use the futex. */
	run_phase(false, 32, scaled(400, 4), 50, 200);
	/* Every section sleeps: a hand-off chain through futex wakes. */
	run_phase(false, 16, scaled(40, 4), 1, 100);
	print_counters("load", before, counters_now());
	pc_store_relaxed(&pc_mutex_spin_pauses, 0);
	force_one_sleeper();
	pc_store_relaxed(&pc_mutex_spin_pauses, PC_MUTEX_SPIN_PAUSES);
	struct pc_mutex_spin_counters after = counters_now();
	CHECK(after.sleeps > before.sleeps);
	watchdog_arm(0);
}

/*
 * Forced unqueue. Main holds `forced`. Thread H becomes head of the spin
 * queue and stops at its gate (it cannot leave the queue or hand the head on
 * until main opens it). Then the others queue behind it one by one (main
 * waits until each has linked in, so the queue order is H, Q[0], Q[1], ...)
 * and stop at their gates. Main opens the gates of `leave` (a set of queued
 * threads) at once: each gets budget 0 and, since nobody can make it head, it
 * must leave the queue, whatever the interleaving of neighbours leaving
 * together. Each sleeps on the futex afterwards (main still holds). Then main
 * opens the rest: the queued ones leave too, and H gets budget 0 as head, so
 * its spin times out and it sleeps. Main unlocks: the futex hands the mutex
 * down the chain. Exact counts follow.
 */
#define MAX_QUEUED 4
static void forced_unqueue(unsigned nqueued, const bool *leave_first, const char *what)
{
	struct pc_mutex_spin_counters before = counters_now();
	struct gate head, q[MAX_QUEUED];
	pc_mutex_init(&forced);
	pc_store_relaxed(&pc_mutex_spin_pauses, UINT32_MAX); /* budgets come from the gates */
	pc_store_relaxed(&pc_mutex_spin_hook, gate_hook);
	pc_mutex_lock(&forced);
	gate_start(&head, 0, 0);
	wait_flag(&head.at_head);
	for (unsigned i = 0; i < nqueued; i++) {
		gate_start(&q[i], 0, 0);
		wait_flag(&q[i].at_queued);
	}
	unsigned first = 0;
	for (unsigned i = 0; i < nqueued; i++)
		first += leave_first[i];
	for (unsigned i = 0; i < nqueued; i++)
		if (leave_first[i])
			gate_open(&q[i]);
	WAIT_COUNTER(unqueued, before.unqueued + first);
	WAIT_COUNTER(sleeps, before.sleeps + first);
	CHECK_EQ(counters_now().spin_timeout, before.spin_timeout); /* the head is still gated */
	for (unsigned i = 0; i < nqueued; i++)
		if (!leave_first[i])
			gate_open(&q[i]);
	WAIT_COUNTER(unqueued, before.unqueued + nqueued);
	gate_open(&head);
	WAIT_COUNTER(spin_timeout, before.spin_timeout + 1);
	WAIT_COUNTER(sleeps, before.sleeps + nqueued + 1);
	pc_mutex_unlock(&forced);
	pthread_join(head.thread, NULL);
	for (unsigned i = 0; i < nqueued; i++)
		pthread_join(q[i].thread, NULL);
	pc_store_relaxed(&pc_mutex_spin_hook, NULL);
	pc_store_relaxed(&pc_mutex_spin_pauses, PC_MUTEX_SPIN_PAUSES);
	struct pc_mutex_spin_counters after = counters_now();
	print_counters(what, before, after);
	CHECK_EQ(after.unqueued, before.unqueued + nqueued);
	CHECK_EQ(after.spin_timeout, before.spin_timeout + 1);
	CHECK_EQ(after.spin_acquired, before.spin_acquired);
	CHECK_EQ(after.no_node, before.no_node);
	CHECK(after.sleeps >= before.sleeps + nqueued + 1);
	CHECK_EQ(pc_load_relaxed(&forced.state), 0);
	CHECK_EQ(pc_load_relaxed(&forced.spinq.tail), 0);
}

/* One spinner queued behind the head runs out of budget and leaves (the
 * case that used to be left to the scheduler). */
TEST(osq_unqueue)
{
	watchdog_arm(120);
	static const bool tail[1] = { true };
	forced_unqueue(1, tail, "tail leaves");
	watchdog_arm(0);
}

/* Leaving from the middle (step C relinks the successor to the predecessor),
 * two neighbours leaving at once (steps A/B/C against each other), and the
 * whole queue at once. */
TEST(osq_unqueue_middle_and_neighbours)
{
	watchdog_arm(120);
	static const bool middle[3] = { false, true, false };
	static const bool neighbours[4] = { false, true, true, false };
	static const bool all[4] = { true, true, true, true };
	forced_unqueue(3, middle, "middle leaves");
	forced_unqueue(4, neighbours, "two neighbours leave");
	forced_unqueue(4, all, "all leave at once");
	watchdog_arm(0);
}

/* A long spin budget (~100 us) and 1 ms holds: spinners queue up behind a
 * head and leave from the middle of the queue, next to neighbours that leave
 * too, as the scheduler has it. The verdict is exclusion, exact totals and
 * an empty queue (run_phase); how many left is only printed. */
TEST(osq_unqueue_stress)
{
	watchdog_arm(120);
	struct pc_mutex_spin_counters before = counters_now();
	pc_store_relaxed(&pc_mutex_spin_pauses, 4000);
	run_phase(false, 32, scaled(24, 4), 2, 1000);
	run_phase(false, 64, scaled(400, 4), 8, 50);
	/* Budget longer than a time slice: spinners get preempted inside the
	 * queue, so others queue behind them and leave from the middle. */
	pc_store_relaxed(&pc_mutex_spin_pauses, 200000);
	run_phase(false, 16, scaled(20, 4), 2, 1000);
	pc_store_relaxed(&pc_mutex_spin_pauses, PC_MUTEX_SPIN_PAUSES);
	print_counters("stress", before, counters_now());
	watchdog_arm(0);
}

/* Spinning off: straight to the futex. No contended lock may spin or queue;
 * the futex path itself is forced once. */
TEST(no_spin)
{
	watchdog_arm(120);
	struct pc_mutex_spin_counters before = counters_now();
	pc_store_relaxed(&pc_mutex_spin_pauses, 0);
	run_phase(false, 32, scaled(2000, 4), 16, 20);
	force_one_sleeper();
	pc_store_relaxed(&pc_mutex_spin_pauses, PC_MUTEX_SPIN_PAUSES);
	struct pc_mutex_spin_counters after = counters_now();
	CHECK_EQ(after.spin_acquired, before.spin_acquired);
	CHECK_EQ(after.spin_timeout, before.spin_timeout);
	CHECK_EQ(after.unqueued, before.unqueued);
	CHECK(after.sleeps > before.sleeps);
	watchdog_arm(0);
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
	watchdog_arm(120);
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
	watchdog_arm(0);
}

/* Many short sections: spinners mostly win as OSQ head, some give up. How
 * many win depends on scheduling, so the counts are only printed; run_phase
 * checks exclusion and the totals. */
TEST(osq_spin_mixed)
{
	watchdog_arm(120);
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
	watchdog_arm(0); /* run_phase checked exclusion and counts */
}

TEST(generic_mutex)
{
	watchdog_arm(120);
	run_phase(true, 32, scaled(10000, 4), 0, 0);
	run_phase(true, 32, scaled(16, 4), 4, 1000);
	watchdog_arm(0);
}

int main(void)
{
	watchdog_install("mutex: watchdog: the test hangs (lost wake-up?)\n");
	RUN(no_lost_wakeup);
	RUN(osq_unqueue);
	RUN(osq_unqueue_middle_and_neighbours);
	RUN(osq_unqueue_stress);
	RUN(no_spin);
	RUN(spinner_takes_released_mutex);
	RUN(osq_spin_mixed);
	RUN(generic_mutex);
	return test_report();
}
