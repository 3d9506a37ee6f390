/*
 * tests/unit/lock/exclusion.c - mutual exclusion of every lock kind, raw and
 * through the generic pc_lock, with 16, 32 and 64 threads on however few
 * CPUs: each thread does N increments of a plain (non-atomic) counter inside
 * the lock and checks that no other thread is inside; the total must be
 * exact. Also: generic MCS locks nested and released out of order by many
 * threads at once.
 *
 * Workers only record (atomics, the plain counter); main checks.
 * Iterations shrink under ThreadSanitizer and with PC_TEST_SCALE=<percent>.
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

/* What a worker locks: one of the raw kinds, or the generic lock. */
enum impl { RAW_SPIN, RAW_TICKET, RAW_MCS, RAW_MUTEX, GENERIC };
static const char *const impl_names[] = { "spin", "ticket", "mcs", "mutex", "generic" };

struct shared {
	enum impl impl;
	struct pc_spin spin;
	struct pc_ticket ticket;
	struct pc_mcs mcs;
	struct pc_mutex mutex;
	struct pc_lock lock;
	unsigned iters;
	pthread_barrier_t start;
	unsigned long counter;       /* plain: only ever touched under the lock */
	_Atomic int inside;          /* 1 while some thread is in the section */
	_Atomic unsigned violations; /* entries that found inside == 1 */
};

static void shared_lock(struct shared *s, struct pc_mcs_node *node)
{
	switch (s->impl) {
	case RAW_SPIN: pc_spin_lock(&s->spin); break;
	case RAW_TICKET: pc_ticket_lock(&s->ticket); break;
	case RAW_MCS: pc_mcs_lock(&s->mcs, node); break;
	case RAW_MUTEX: pc_mutex_lock(&s->mutex); break;
	case GENERIC: pc_lock_acquire(&s->lock); break;
	}
}

static void shared_unlock(struct shared *s, struct pc_mcs_node *node)
{
	switch (s->impl) {
	case RAW_SPIN: pc_spin_unlock(&s->spin); break;
	case RAW_TICKET: pc_ticket_unlock(&s->ticket); break;
	case RAW_MCS: pc_mcs_unlock(&s->mcs, node); break;
	case RAW_MUTEX: pc_mutex_unlock(&s->mutex); break;
	case GENERIC: pc_lock_release(&s->lock); break;
	}
}

/* Every YIELD_IN_EVERY-th section yields the CPU while holding the lock, and
 * every YIELD_OUT_EVERY-th iteration yields outside it: threads interleave
 * even though each section is short, and waiters pile up behind a holder
 * that is off the CPU (the hard case for spinning and FIFO locks). */
#define YIELD_IN_EVERY 256
#define YIELD_OUT_EVERY 16

static void critical_section(struct shared *s, unsigned i)
{
	if (atomic_exchange_explicit(&s->inside, 1, memory_order_relaxed) != 0)
		pc_add_relaxed(&s->violations, 1);
	s->counter++;
	if (i % YIELD_IN_EVERY == YIELD_IN_EVERY - 1)
		sched_yield();
	pc_store_relaxed(&s->inside, 0);
}

static void *exclusion_worker(void *arg)
{
	struct shared *s = arg;
	struct pc_mcs_node node;
	pthread_barrier_wait(&s->start);
	for (unsigned i = 0; i < s->iters; i++) {
		if (i % 64 == 0)
			test_progress();
		shared_lock(s, &node);
		critical_section(s, i);
		shared_unlock(s, &node);
		if (i % YIELD_OUT_EVERY == YIELD_OUT_EVERY - 1)
			sched_yield();
	}
	pc_lock_thread_exit();
	return NULL;
}

/* nthreads threads, iters increments each; kind only for GENERIC. */
static void run_exclusion(enum impl impl, enum pc_lock_kind kind, unsigned nthreads, unsigned iters)
{
	static struct shared s;
	pthread_t tid[64];
	REQUIRE(nthreads <= PC_ARRAY_SIZE(tid));
	memset(&s, 0, sizeof(s));
	s.impl = impl;
	s.iters = iters;
	pc_spin_init(&s.spin);
	pc_ticket_init(&s.ticket);
	pc_mcs_init(&s.mcs);
	pc_mutex_init(&s.mutex);
	pc_lock_init(&s.lock, "exclusion", kind);
	REQUIRE(pthread_barrier_init(&s.start, NULL, nthreads) == 0);
	double t0 = now_ms();
	for (unsigned i = 0; i < nthreads; i++)
		REQUIRE(pthread_create(&tid[i], NULL, exclusion_worker, &s) == 0);
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&s.start);
	fprintf(stderr, "  %s%s%s: %u threads x %u: %.0f ms\n", impl_names[impl],
		impl == GENERIC ? "/" : "", impl == GENERIC ? pc_lock_kind_name(kind) : "",
		nthreads, iters, now_ms() - t0);
	if (s.counter != (unsigned long)nthreads * iters || pc_load_relaxed(&s.violations) != 0)
		fprintf(stderr, "  %s/%s, %u threads: counter %lu of %lu, %u violations\n",
			impl_names[impl], impl == GENERIC ? pc_lock_kind_name(kind) : "-",
			nthreads, s.counter, (unsigned long)nthreads * iters,
			pc_load_relaxed(&s.violations));
	CHECK_EQ(s.counter, (unsigned long)nthreads * iters);
	CHECK_EQ(pc_load_relaxed(&s.violations), 0);
	CHECK(!pc_lock_is_locked(&s.lock));
}

/* Per kind, iterations per thread at 16 threads; halved per doubling.
 * Sized for the cost of a hand-off, not for speed: with more runnable threads
 * than CPUs (as when four CPU hogs run beside the lock tests on 2 cores: see
 * README.md, "Tests"), every section that yields while holding the lock, and every
 * hand-off to a preempted FIFO waiter, costs a scheduler time slice, so a run
 * costs slices, not instructions. 4000 (spin, mutex) and 400 (ticket, MCS)
 * still give each phase thousands of contended hand-offs and, for the
 * non-FIFO kinds, hundreds of holders preempted inside the section. */
static void run_all_counts(enum impl impl, enum pc_lock_kind kind, unsigned iters16)
{
	watchdog_arm(120);
	run_exclusion(impl, kind, 16, scaled(iters16, 5));
	run_exclusion(impl, kind, 32, scaled(iters16 / 2, 5));
	run_exclusion(impl, kind, 64, scaled(iters16 / 4, 5));
	watchdog_arm(0);
}

TEST(spin) { run_all_counts(RAW_SPIN, PC_LOCK_SPIN, 4000); }
TEST(ticket) { run_all_counts(RAW_TICKET, PC_LOCK_SPIN, 400); }
TEST(mcs) { run_all_counts(RAW_MCS, PC_LOCK_SPIN, 400); }
TEST(mutex) { run_all_counts(RAW_MUTEX, PC_LOCK_SPIN, 4000); }
TEST(generic_spin) { run_all_counts(GENERIC, PC_LOCK_SPIN, 4000); }
TEST(generic_ticket) { run_all_counts(GENERIC, PC_LOCK_TICKET, 400); }
TEST(generic_mcs) { run_all_counts(GENERIC, PC_LOCK_MCS, 400); }
TEST(generic_mutex) { run_all_counts(GENERIC, PC_LOCK_MUTEX, 4000); }

/* ---- generic locks nested, released out of order, by many threads ---------- */
struct nested {
	struct pc_lock a, b, c; /* always acquired in the order a, b, c */
	unsigned iters;
	unsigned long count_a, count_b, count_c; /* plain, each under its lock */
};

static void *nested_worker(void *arg)
{
	struct nested *n = arg;
	uint64_t rnd = (uint64_t)(uintptr_t)&rnd | 1;
	for (unsigned i = 0; i < n->iters; i++) {
		if (i % 64 == 0)
			test_progress();
		pc_lock_acquire(&n->a);
		pc_lock_acquire(&n->b);
		n->count_a++;
		n->count_b++;
		pc_lock_release(&n->a); /* out of order: a before b */
		pc_lock_acquire(&n->c);
		n->count_b++;
		n->count_c++;
		bool b_first = test_rand(&rnd) & 1;
		pc_lock_release(b_first ? &n->b : &n->c);
		pc_lock_release(b_first ? &n->c : &n->b);
	}
	pc_lock_thread_exit();
	return NULL;
}

static void run_nested(enum pc_lock_kind kind, unsigned nthreads, unsigned iters)
{
	static struct nested n;
	pthread_t tid[32];
	memset(&n, 0, sizeof(n));
	pc_lock_init(&n.a, "a", kind);
	pc_lock_init(&n.b, "b", kind);
	pc_lock_init(&n.c, "c", kind);
	n.iters = iters;
	for (unsigned i = 0; i < nthreads; i++)
		REQUIRE(pthread_create(&tid[i], NULL, nested_worker, &n) == 0);
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(tid[i], NULL);
	CHECK_EQ(n.count_a, (unsigned long)nthreads * iters);
	CHECK_EQ(n.count_b, 2ul * nthreads * iters);
	CHECK_EQ(n.count_c, (unsigned long)nthreads * iters);
	CHECK(!pc_lock_is_locked(&n.a) && !pc_lock_is_locked(&n.b) && !pc_lock_is_locked(&n.c));
}

TEST(generic_nested_out_of_order)
{
	watchdog_arm(120);
	run_nested(PC_LOCK_MCS, 16, scaled(1000, 5));
	run_nested(PC_LOCK_MUTEX, 16, scaled(5000, 5));
	watchdog_arm(0);
}

int main(void)
{
	watchdog_install("exclusion: watchdog: the test hangs\n");
	RUN(spin);
	RUN(ticket);
	RUN(mcs);
	RUN(mutex);
	RUN(generic_spin);
	RUN(generic_ticket);
	RUN(generic_mcs);
	RUN(generic_mutex);
	RUN(generic_nested_out_of_order);
	return test_report();
}
