/*
 * tests/unit/lock/stats.c - lock statistics and the lock registry.
 *  - stats on: for each kind, main holds the lock while workers queue up,
 *    sleeps, then releases; acquisitions must be exact, some acquisitions
 *    contended, the histogram must sum to the contended count, the longest
 *    wait must cover main's sleep and the longest hold main's whole hold;
 *  - stats off, or a lock without stats: every counter stays 0 and the hold
 *    start (acquired_ns) is never set;
 *  - registry: registered locks with stats are found by pc_lock_foreach, once
 *    each, also when many threads register while another walks the list;
 *    a lock registered without stats is not listed.
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
#include <unistd.h>

#define WORKERS 4
#define WORKER_ITERS 200
#define SETTLE_US 5000 /* main's sleep after the workers started, held */
#define HOLD_US 20000  /* main's further sleep, held */

static struct pc_lock kind_locks[PC_LOCK_KIND_COUNT];
static struct pc_lock_stats kind_stats[PC_LOCK_KIND_COUNT];

struct contend {
	struct pc_lock *lock;
	_Atomic unsigned started;
	unsigned long counter; /* plain, under the lock */
};

/* The test seam pc_lock_contended_hook: counts the threads that failed their
 * first try on the lock under test and are about to wait (their wait's start
 * time, when measured, is already taken). */
static struct pc_lock *_Atomic waited_lock;
static _Atomic unsigned waiting;
static void count_waiter(struct pc_lock *l)
{
	if (l == pc_load_relaxed(&waited_lock))
		pc_add_relaxed(&waiting, 1);
}

static void *contend_worker(void *arg)
{
	struct contend *c = arg;
	pc_add_relaxed(&c->started, 1);
	for (unsigned i = 0; i < 1 + WORKER_ITERS; i++) {
		test_progress();
		pc_lock_acquire(c->lock);
		c->counter++;
		pc_lock_release(c->lock);
	}
	pc_lock_thread_exit();
	return NULL;
}

/* Main holds l, starts the workers, waits until every one of them is
 * committed to a contended wait on l (the contended hook has counted it: its
 * first try failed, because main holds l), holds on for SETTLE_US + HOLD_US,
 * releases, joins; then one pc_lock_try. So at least WORKERS acquisitions are
 * contended, and each of those waits covers main's sleeps, whatever the
 * scheduler does: the checks below follow from the construction. */
static void contend_once(struct pc_lock *l, bool expect_measured)
{
	struct contend c = { .lock = l };
	pthread_t tid[WORKERS];
	pc_lock_acquire(l);
	CHECK_EQ(l->acquired_ns != 0, expect_measured);
	pc_store_relaxed(&waiting, 0);
	pc_store_relaxed(&waited_lock, l);
	pc_store_relaxed(&pc_lock_contended_hook, count_waiter);
	for (unsigned i = 0; i < WORKERS; i++)
		REQUIRE(pthread_create(&tid[i], NULL, contend_worker, &c) == 0);
	while (pc_load_relaxed(&waiting) < WORKERS)
		sched_yield();
	pc_store_relaxed(&pc_lock_contended_hook, NULL);
	pc_store_relaxed(&waited_lock, NULL);
	usleep(SETTLE_US);
	usleep(HOLD_US);
	CHECK_EQ(l->acquired_ns != 0, expect_measured); /* still ours */
	pc_lock_release(l); /* from here acquired_ns belongs to the workers */
	for (unsigned i = 0; i < WORKERS; i++)
		pthread_join(tid[i], NULL);
	CHECK_EQ(c.counter, WORKERS * (1 + WORKER_ITERS));
	CHECK(pc_lock_try(l));
	CHECK_EQ(l->acquired_ns != 0, expect_measured);
	pc_lock_release(l);
	CHECK_EQ(l->acquired_ns, 0);
	CHECK(!pc_lock_is_locked(l));
}

static uint64_t hist_sum(struct pc_lock_stats *s)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < PC_LOCK_HIST_BUCKETS; i++)
		sum += pc_load_relaxed(&s->wait_hist[i]);
	return sum;
}

static void check_stats_zero(struct pc_lock_stats *s)
{
	CHECK_EQ(pc_load_relaxed(&s->acquisitions), 0);
	CHECK_EQ(pc_load_relaxed(&s->contended), 0);
	CHECK_EQ(pc_load_relaxed(&s->wait_ns_total), 0);
	CHECK_EQ(pc_load_relaxed(&s->wait_ns_max), 0);
	CHECK_EQ(pc_load_relaxed(&s->hold_ns_total), 0);
	CHECK_EQ(pc_load_relaxed(&s->hold_ns_max), 0);
	CHECK_EQ(hist_sum(s), 0);
}

static void register_kind_locks(void)
{
	static bool done;
	if (done)
		return;
	done = true;
	for (int k = 0; k < PC_LOCK_KIND_COUNT; k++) {
		pc_lock_init(&kind_locks[k], pc_lock_kind_name((enum pc_lock_kind)k),
			     (enum pc_lock_kind)k);
		pc_lock_register(&kind_locks[k], &kind_stats[k]);
		CHECK(kind_locks[k].stats == &kind_stats[k]);
	}
}

TEST(stats_on)
{
	register_kind_locks();
	pc_store_relaxed(&pc_lock_stats_enabled, true);
	for (int k = 0; k < PC_LOCK_KIND_COUNT; k++) {
		struct pc_lock_stats *s = &kind_stats[k];
		pc_lock_stats_reset(s);
		contend_once(&kind_locks[k], true);
		uint64_t acq = pc_load_relaxed(&s->acquisitions);
		uint64_t contended = pc_load_relaxed(&s->contended);
		uint64_t wait_max = pc_load_relaxed(&s->wait_ns_max);
		uint64_t hold_max = pc_load_relaxed(&s->hold_ns_max);
		fprintf(stderr, "  %s: acquisitions %llu, contended %llu, wait max %.1f ms, "
			"hold max %.1f ms\n", pc_lock_kind_name((enum pc_lock_kind)k),
			(unsigned long long)acq, (unsigned long long)contended,
			(double)wait_max / 1e6, (double)hold_max / 1e6);
		CHECK_EQ(acq, 1 + WORKERS * (1 + WORKER_ITERS) + 1);
		CHECK(contended >= WORKERS);
		CHECK(contended <= acq - 2); /* main's acquire and try were not */
		CHECK_EQ(hist_sum(s), contended);
		CHECK(wait_max >= HOLD_US * 1000ull);
		CHECK(pc_load_relaxed(&s->wait_ns_total) >= wait_max);
		CHECK(hold_max >= (SETTLE_US + HOLD_US) * 1000ull);
		CHECK(pc_load_relaxed(&s->hold_ns_total) >= hold_max);
		/* The histogram bucket of the longest wait is not empty. */
		CHECK(pc_load_relaxed(&s->wait_hist[pc_lock_hist_bucket(wait_max)]) > 0);
	}
	pc_store_relaxed(&pc_lock_stats_enabled, false);
}

TEST(stats_off)
{
	register_kind_locks();
	pc_store_relaxed(&pc_lock_stats_enabled, false);
	for (int k = 0; k < PC_LOCK_KIND_COUNT; k++) {
		pc_lock_stats_reset(&kind_stats[k]);
		contend_once(&kind_locks[k], false);
		check_stats_zero(&kind_stats[k]);
	}
}

/* Statistics on, but the lock has none: nothing measured, nothing crashes. */
TEST(stats_on_lock_without_stats)
{
	pc_store_relaxed(&pc_lock_stats_enabled, true);
	for (int k = 0; k < PC_LOCK_KIND_COUNT; k++) {
		struct pc_lock l;
		pc_lock_init(&l, "nostats", (enum pc_lock_kind)k);
		CHECK(l.stats == NULL);
		contend_once(&l, false);
	}
	pc_store_relaxed(&pc_lock_stats_enabled, false);
}

/* ---- registry ---------------------------------------------------------------- */
#define REG_THREADS 8
#define REG_PER_THREAD 16

static struct pc_lock reg_locks[REG_THREADS * REG_PER_THREAD];
static struct pc_lock_stats reg_stats[REG_THREADS * REG_PER_THREAD];
static struct pc_lock reg_nostats;

struct seen {
	unsigned kind_hits[PC_LOCK_KIND_COUNT];
	unsigned reg_hits[REG_THREADS * REG_PER_THREAD];
	unsigned total, nostats_hits, bad_names;
};

static void collect(struct pc_lock *l, void *arg)
{
	struct seen *s = arg;
	s->total++;
	if (l >= kind_locks && l < kind_locks + PC_LOCK_KIND_COUNT) {
		s->kind_hits[l - kind_locks]++;
		if (strcmp(l->name, pc_lock_kind_name(l->kind)) != 0)
			s->bad_names++;
	} else if (l >= reg_locks && l < reg_locks + PC_ARRAY_SIZE(reg_locks)) {
		s->reg_hits[l - reg_locks]++;
		if (strcmp(l->name, "reg") != 0 || l->stats != &reg_stats[l - reg_locks])
			s->bad_names++;
	} else if (l == &reg_nostats) {
		s->nostats_hits++;
	}
}

static void *register_worker(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	for (unsigned i = t * REG_PER_THREAD; i < (t + 1) * REG_PER_THREAD; i++) {
		pc_lock_init(&reg_locks[i], "reg", (enum pc_lock_kind)(i % PC_LOCK_KIND_COUNT));
		pc_lock_register(&reg_locks[i], &reg_stats[i]);
	}
	return NULL;
}

static _Atomic bool walker_stop;
static _Atomic unsigned walker_max_seen;

/* Walks the registry while others register: sizes only grow. */
static void *walker(void *arg)
{
	unsigned last = 0, backwards = 0;
	while (!pc_load_relaxed(&walker_stop)) {
		struct seen s;
		memset(&s, 0, sizeof(s));
		pc_lock_foreach(collect, &s);
		backwards += s.total < last;
		last = s.total;
		pc_store_relaxed(&walker_max_seen, s.total);
		sched_yield();
	}
	return (void *)(uintptr_t)backwards;
}

TEST(registry)
{
	register_kind_locks();
	pc_lock_init(&reg_nostats, "nostats", PC_LOCK_SPIN);
	pc_lock_register(&reg_nostats, NULL);
	pthread_t tid[REG_THREADS], walk;
	REQUIRE(pthread_create(&walk, NULL, walker, NULL) == 0);
	for (unsigned t = 0; t < REG_THREADS; t++)
		REQUIRE(pthread_create(&tid[t], NULL, register_worker, (void *)(uintptr_t)t) == 0);
	for (unsigned t = 0; t < REG_THREADS; t++)
		pthread_join(tid[t], NULL);
	pc_store_relaxed(&walker_stop, true);
	void *backwards;
	pthread_join(walk, &backwards);
	CHECK(backwards == NULL); /* the list never shrank under the walker */

	struct seen s;
	memset(&s, 0, sizeof(s));
	pc_lock_foreach(collect, &s);
	CHECK_EQ(s.total, PC_LOCK_KIND_COUNT + PC_ARRAY_SIZE(reg_locks));
	for (int k = 0; k < PC_LOCK_KIND_COUNT; k++)
		CHECK_EQ(s.kind_hits[k], 1);
	unsigned once = 0;
	for (unsigned i = 0; i < PC_ARRAY_SIZE(reg_locks); i++)
		once += s.reg_hits[i] == 1;
	CHECK_EQ(once, PC_ARRAY_SIZE(reg_locks));
	CHECK_EQ(s.nostats_hits, 0);
	CHECK_EQ(s.bad_names, 0);
	CHECK(reg_nostats.stats == NULL);
}

int main(void)
{
	watchdog_install("stats: watchdog: the test hangs\n");
	watchdog_arm(120);
	RUN(stats_on);
	RUN(stats_off);
	RUN(stats_on_lock_without_stats);
	RUN(registry);
	return test_report();
}
