/*
 * tests/unit/page/pcp_unlocked.c - allocation and free never wait for the
 * zone lock with their per-CPU list's lock held (pcp.c: a refill takes its
 * batch from the zone with the pcp lock dropped, a drain detaches its batch
 * and frees it after dropping it), so that the other threads of the CPU
 * keep using the list meanwhile.
 *
 *  drain_waits_unlocked  a holder thread takes the zone lock; a worker
 *                        pinned to the first allowed CPU frees pages past
 *                        the list's high.
 *                        The main thread then sees the worker's drain
 *                        counted (pcp->drains, read under the pcp lock) and
 *                        takes the pcp lock again and again while the
 *                        worker, stuck on the zone lock, has not finished.
 *                        Before the change the drain was counted only after
 *                        the zone work, under the pcp lock: the main thread
 *                        could never see it before the holder let go, and
 *                        the watchdog failed the test. Once the holder lets
 *                        go, the batch reaches the zone: the list is back
 *                        under its high and the invariants hold.
 *  refill_waits_unlocked the same for a refill: with the zone lock held, a
 *                        worker's allocation from an empty list sizes its
 *                        refill (a batch in flight: pcp->in_flight, read
 *                        without a lock) and waits for the zone lock with
 *                        the pcp lock free, which the main thread then
 *                        takes; the
 *                        allocation counts as a pcp hit (served through
 *                        the list's refill), as before the change.
 *
 * Nothing here depends on timing: each step waits for a state, and the
 * watchdog (alarm) only turns a hang into a failure. One interleaving could
 * hide the state waited for: the main thread preempted while it holds the
 * pcp lock for a read, so that the worker (same CPU) finds it busy and
 * bypasses the list. The zone's pcp_busy counter shows it; that attempt is
 * then undone and run again (up to ATTEMPTS; one undisturbed is needed).
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"
#include "unit/page/zone_holder.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#define HIGH 8
#define NPAGES 64

static struct pc_zone *zone;
static struct pc_pcp *pcp;
static char *pages[NPAGES];
static atomic_bool worker_done;

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "test_page_pcp_unlocked: watchdog: the pcp lock stayed held "
				  "while the zone lock was waited for\n";
	ssize_t r = write(2, msg, sizeof(msg) - 1);
	(void)r;
	_exit(2);
}

static void *free_worker(void *arg)
{
	(void)arg;
	REQUIRE(pin_cpu(0));
	for (int i = 0; i < NPAGES; i++)
		pc_free_pages(pages[i], 0);
	atomic_store(&worker_done, true);
	return NULL;
}

static void *alloc_worker(void *arg)
{
	(void)arg;
	REQUIRE(pin_cpu(0));
	pages[0] = pc_alloc_pages(0);
	atomic_store(&worker_done, true);
	return NULL;
}

/* The pcp's field read under its lock (the main thread holds no other). */
static uint64_t pcp_read(const uint64_t *field)
{
	pc_spin_stat_lock(&pcp->lock);
	uint64_t v = *field;
	pc_spin_stat_unlock(&pcp->lock);
	return v;
}

static void hold_zone(struct zone_holder *holder)
{
	atomic_store(&worker_done, false);
	zone_hold(holder, zone);
}

/*
 * Whether the worker found its pcp lock busy since busy0. The only other
 * user of that lock is the main thread reading a field under it; preempted
 * there, it leaves the worker (same CPU) to fail its try-lock and bypass the
 * list straight to the held zone lock, so the attempt can show nothing. It
 * is then undone and run again (see the tests).
 */
static bool disturbed(uint64_t busy0)
{
	return atomic_load(&zone->stats.pcp_busy) != busy0;
}

#define ATTEMPTS 5

/* One attempt; false if it was disturbed before the drain was seen. */
static bool drain_attempt(void)
{
	REQUIRE(pin_cpu(0));
	for (int i = 0; i < NPAGES; i++) {
		pages[i] = pc_alloc_pages(0);
		REQUIRE(pages[i] != NULL);
	}
	pc_page_drain_all();
	uint64_t drains0 = pcp_read(&pcp->drains);
	uint64_t busy0 = atomic_load(&zone->stats.pcp_busy);
	struct zone_holder holder;
	pthread_t worker;
	hold_zone(&holder);
	REQUIRE(pthread_create(&worker, NULL, free_worker, NULL) == 0);
	alarm(60);
	bool seen;
	while (!(seen = pcp_read(&pcp->drains) != drains0) && !disturbed(busy0))
		sched_yield(); /* until the worker detached a batch */
	if (seen) {
		/* ...and dropped the pcp lock (we just took it), though the zone
		 * lock it waits for is still held: */
		CHECK(!atomic_load(&worker_done));
		for (int i = 0; i < 100; i++)
			CHECK(pcp_read(&pcp->drains) >= drains0 + 1);
	}
	alarm(0);
	zone_let_go(&holder);
	pthread_join(worker, NULL);
	CHECK(atomic_load(&worker_done));
	pc_spin_stat_lock(&pcp->lock);
	int count = pcp->count, high = pcp->high;
	pc_spin_stat_unlock(&pcp->lock);
	CHECK(count <= high);
	CHECK(pc_page_check());
	return seen;
}

TEST(drain_waits_unlocked)
{
	int tries = 0;
	while (tries < ATTEMPTS && !drain_attempt())
		tries++;
	CHECK(tries < ATTEMPTS); /* one undisturbed attempt at least */
}

/* One attempt; false if it was disturbed before the refill was sized. */
static bool refill_attempt(void)
{
	pc_page_drain_all(); /* the order-0 list is empty: the next allocation refills */
	uint64_t hits0 = atomic_load(&zone->stats.pcp_hits);
	uint64_t busy0 = atomic_load(&zone->stats.pcp_busy);
	struct zone_holder holder;
	pthread_t worker;
	hold_zone(&holder);
	REQUIRE(pthread_create(&worker, NULL, alloc_worker, NULL) == 0);
	alarm(60);
	bool seen;
	/* until the worker sized its refill (pcp.c: a refill in flight; read
	 * without the pcp lock, which the worker may still hold) */
	while (!(seen = atomic_load(&pcp->in_flight) != 0) && !disturbed(busy0))
		sched_yield();
	if (seen) {
		/* ...and it waits for the zone lock with the pcp lock free: */
		pc_spin_stat_lock(&pcp->lock);
		pc_spin_stat_unlock(&pcp->lock);
		CHECK(!atomic_load(&worker_done));
	}
	alarm(0);
	zone_let_go(&holder);
	pthread_join(worker, NULL);
	CHECK(pages[0] != NULL);
	if (seen)
		CHECK_EQ(atomic_load(&zone->stats.pcp_hits), hits0 + 1); /* served by the refill */
	if (pages[0]) {
		CHECK_EQ(pc_pg_state(pc_page_of(pages[0])), PC_PG_ALLOC);
		pc_free_pages(pages[0], 0);
	}
	pc_page_drain_all();
	CHECK(pc_page_check());
	return seen;
}

TEST(refill_waits_unlocked)
{
	int tries = 0;
	while (tries < ATTEMPTS && !refill_attempt())
		tries++;
	CHECK(tries < ATTEMPTS); /* one undisturbed attempt at least */
}

int main(void)
{
	pc_page_init();
	REQUIRE(pc_option_set(PC_OPT_VM_PCP_HIGH, HIGH, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_PCP_HIGH_MIN, HIGH, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_PCP_BATCH, 4, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_PCP_BATCH_SCALE_MAX, 3, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_STATS_ENABLE, 1, false) == 0);
	zone = pc_zone_preferred((unsigned)test_cpu(0));
	pcp = &zone->pcp[test_cpu(0)];
	signal(SIGALRM, on_alarm);
	RUN(drain_waits_unlocked);
	RUN(refill_waits_unlocked);
	return test_report();
}
