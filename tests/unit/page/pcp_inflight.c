/*
 * tests/unit/page/pcp_inflight.c - batches in flight between a per-CPU list
 * and its zone (pcp.c: a refill is taken from the zone with the pcp lock
 * dropped, a drain freed to it likewise): the review of that change (review
 * of medium, items 3-6 and 9) found what could go wrong in between.
 *
 *  concurrent_refills_bounded  thread A's refill is held in flight (its
 *                     batch of 64 pages taken, not yet on the list; hook
 *                     PC_PAGE_TEST_REFILL_TAKEN) while thread B, on the same
 *                     CPU, finds the list empty and refills too. Both land:
 *                     B sizes its refill within the room A left, a minimum
 *                     batch (16 pages) at least, not one block (a zone
 *                     round trip per allocation while A is in flight): the
 *                     list passes its high of 64 by B's batch at most (it
 *                     held 126 pages when B sized a full refill too).
 *  busy_refill_keeps_mem  a refill that finds its pcp lock taken (the main
 *                     thread holds it while the refill is held in flight)
 *                     gives its batch back to the zone as it was: clean
 *                     blocks stay clean (dirty_pages was raised by the
 *                     batch), dirty blocks keep the time they were freed
 *                     (they were stamped "now", so a pass after the delay
 *                     kept them), and the zone's peak of use does not count
 *                     the batch that came straight back.
 *  landed_unused_keeps_age  a refill lands 63 dirty pages freed 40 minutes
 *                     before; nobody uses them; drained, they keep that
 *                     time, so a pass an hour after it releases them (they
 *                     were stamped with the drain's time and kept).
 *  decay_drops_pcp_lock  a release pass decays a list above its new high
 *                     while another thread holds the zone lock: once the
 *                     pass waits for the zone lock (pc_lock_contended_hook),
 *                     the list's lock must be free (it was held across the
 *                     wait).
 *  fork_waits_in_flight  a fork while a refill's batch is in flight: the
 *                     child's zone must hold every page but the one handed
 *                     out (the batch was lost in the child: in no zone, on
 *                     no list). prefork waits for it (hook
 *                     PC_PAGE_TEST_PREFORK_WAIT tells the main thread, which
 *                     then lets the refill go on).
 *  fork_waits_release  the same for a release pass whose batch is off the
 *                     zone's lists while it is madvised (hook
 *                     PC_PAGE_TEST_RELEASE_TAKEN): the child lost it too.
 *                     And the pass stops before its next batch once a fork
 *                     waits (page_forking), so fork waits for one batch,
 *                     not the whole pass (it released all four).
 *  fork_waits_run_release  the same for the run heap's release of free runs
 *                     (the same hook): the run was lost in the child.
 *  empty_zone_keeps_factor  a refill that finds the zone empty changes
 *                     nothing on the list: a change of alloc_factor made
 *                     meanwhile (a drain halves it) stays (it was
 *                     overwritten with the value from before the refill).
 *
 * Deterministic: every step waits for a state a hook or a flag reports,
 * and the watchdog (alarm) only turns a hang into a failure. The threads
 * that use the list are pinned to the first allowed CPU c (test_cpu(0));
 * the main thread never takes pcp c's lock while one of them may try it, but where the test says so.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"
#include "unit/page/zone_holder.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#define HIGH 64
#define HOUR_MS 3600000L

static struct pc_zone *zone;
static struct pc_pcp *pcp;

/* ---- the hooks ----------------------------------------------------------- */
static _Thread_local bool stop_here; /* this thread stops at REFILL_TAKEN */
static atomic_bool in_hook, go, fork_waits;
static atomic_int zone_waits; /* contended acquisitions of zone->lock */

static atomic_int hook_stops; /* times a thread stopped at REFILL_TAKEN */

static void page_hook(enum pc_page_test_point at)
{
	if ((at == PC_PAGE_TEST_REFILL_TAKEN || at == PC_PAGE_TEST_RELEASE_TAKEN) && stop_here) {
		atomic_fetch_add(&hook_stops, 1);
		stop_here = false; /* once */
		atomic_store(&in_hook, true);
		while (!atomic_load(&go))
			sched_yield();
	}
	if (at == PC_PAGE_TEST_PREFORK_WAIT)
		atomic_store(&fork_waits, true);
}

static void lock_hook(struct pc_lock *l)
{
	if (l == &zone->lock)
		atomic_fetch_add(&zone_waits, 1);
}

static void reset_flags(void)
{
	atomic_store(&in_hook, false);
	atomic_store(&go, false);
	atomic_store(&fork_waits, false);
	atomic_store(&zone_waits, 0);
	atomic_store(&hook_stops, 0);
}

static void wait_for(atomic_bool *flag)
{
	while (!atomic_load(flag))
		sched_yield();
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "test_page_pcp_inflight: watchdog: a step never came\n";
	ssize_t r = write(2, msg, sizeof(msg) - 1);
	(void)r;
	_exit(2);
}

/* ---- threads ------------------------------------------------------------- */
struct worker {
	pthread_t t;
	bool stop;     /* stops at REFILL_TAKEN */
	void *page;    /* what its allocation got */
	atomic_bool done;
};

static void *alloc_main(void *arg)
{
	struct worker *w = arg;
	REQUIRE(pin_cpu(0));
	stop_here = w->stop;
	w->page = pc_alloc_pages(0);
	atomic_store(&w->done, true);
	return NULL;
}

static void worker_start(struct worker *w, bool stop)
{
	w->stop = stop;
	w->page = NULL;
	atomic_store(&w->done, false);
	REQUIRE(pthread_create(&w->t, NULL, alloc_main, w) == 0);
}

/* ---- helpers ------------------------------------------------------------- */
static size_t zone_read(const size_t *field)
{
	pc_lock_acquire(&zone->lock);
	size_t v = *field;
	pc_lock_release(&zone->lock);
	return v;
}

/* An empty list whose next refill takes 64 blocks (16 << 2, room 64). */
static void empty_list_full_refill(void)
{
	pc_page_drain_all();
	pc_spin_stat_lock(&pcp->lock);
	pcp->alloc_factor = 2;
	pc_spin_stat_unlock(&pcp->lock);
	REQUIRE(zone_read(&zone->free_pages) >= 128); /* the batch comes from it whole */
}

/* ---- tests --------------------------------------------------------------- */
TEST(concurrent_refills_bounded)
{
	empty_list_full_refill();
	uint64_t refills0 = pcp->refills;
	reset_flags();
	struct worker a, b;
	alarm(60);
	worker_start(&a, true);
	wait_for(&in_hook); /* A's 64 pages in flight, the list still empty */
	worker_start(&b, false);
	pthread_join(b.t, NULL); /* B found the list empty and refilled */
	atomic_store(&go, true);
	pthread_join(a.t, NULL);
	alarm(0);
	REQUIRE(a.page != NULL && b.page != NULL);
	CHECK_EQ(atomic_load(&hook_stops), 1);
	pc_spin_stat_lock(&pcp->lock);
	int count = pcp->count, high = pcp->high;
	uint64_t refills = pcp->refills;
	pc_spin_stat_unlock(&pcp->lock);
	CHECK_EQ(high, HIGH);
	CHECK(count <= high + 16 - 1); /* over by B's minimum batch at most */
	CHECK_EQ(count, 15 + 63);      /* B's batch and A's, each less the caller's */
	CHECK_EQ(refills, refills0 + 2);
	pc_free_pages(a.page, 0);
	pc_free_pages(b.page, 0);
	CHECK(pc_page_check());
}

/* Hold A's refill in flight, take pcp c's lock, let A go on: it finds the
 * lock busy and gives its batch back. Returns A's page. */
static void *refill_while_busy(void)
{
	reset_flags();
	struct worker a;
	alarm(60);
	worker_start(&a, true);
	wait_for(&in_hook);
	pc_spin_stat_lock(&pcp->lock);
	atomic_store(&go, true);
	wait_for(&a.done); /* it does not need the pcp lock */
	pc_spin_stat_unlock(&pcp->lock);
	pthread_join(a.t, NULL);
	alarm(0);
	REQUIRE(a.page != NULL);
	CHECK_EQ(atomic_load(&hook_stops), 1);
	return a.page;
}

TEST(busy_refill_keeps_mem)
{
	/* Clean: everything given back to the OS first, nothing dirty. */
	pc_page_trim();
	empty_list_full_refill();
	REQUIRE(zone_read(&zone->dirty_pages) == 0);
	pc_lock_acquire(&zone->lock);
	size_t used0 = zone->managed_pages - zone->free_pages;
	zone->peak_used[0] = zone->peak_used[1] = used0; /* a new window at the use now */
	pc_lock_release(&zone->lock);
	uint64_t hits0 = atomic_load(&zone->stats.pcp_hits), busy0 = atomic_load(&zone->stats.pcp_busy);
	void *p = refill_while_busy();
	/* a zone round trip, counted as the pcp being busy, not as a hit */
	CHECK_EQ(atomic_load(&zone->stats.pcp_hits), hits0);
	CHECK_EQ(atomic_load(&zone->stats.pcp_busy), busy0 + 1);
	CHECK_EQ(zone_read(&zone->dirty_pages), 0);
	CHECK_EQ(pcp->count, 0);
	CHECK_EQ(zone_read(&zone->peak_used[0]), used0 + 1); /* the caller's page, not the batch */
	pc_free_pages(p, 0);

	/* Dirty: 256 pages freed at t0; a refill 40 minutes later takes some
	 * of them and gives them back; 61 minutes after t0 all are due. */
	void *pages[256];
	for (int i = 0; i < 256; i++)
		REQUIRE((pages[i] = pc_alloc_pages(0)) != NULL);
	for (int i = 0; i < 256; i++)
		pc_free_pages(pages[i], 0);
	empty_list_full_refill(); /* the 256 pages to the zone, dirty, now */
	REQUIRE(zone_read(&zone->dirty_pages) >= 256);
	pc_page_clock_advance(40 * 60 * 1000000000ull);
	p = refill_while_busy();
	pc_page_clock_advance(21 * 60 * 1000000000ull);
	pc_page_release_due();
	CHECK_EQ(zone_read(&zone->dirty_pages), 0); /* the batch was not re-stamped */
	pc_free_pages(p, 0);
	CHECK(pc_page_check());
}

/* A refill that lands dirty blocks nobody then uses: drained, they keep
 * the time they were freed (they were stamped with the drain's). */
TEST(landed_unused_keeps_age)
{
	void *pages[256];
	for (int i = 0; i < 256; i++)
		REQUIRE((pages[i] = pc_alloc_pages(0)) != NULL);
	for (int i = 0; i < 256; i++)
		pc_free_pages(pages[i], 0);
	empty_list_full_refill(); /* the 256 pages to the zone, dirty, freed now */
	pc_page_clock_advance(40 * 60 * 1000000000ull);
	void *p = pc_alloc_pages(0); /* a refill lands 63 of them on the list */
	REQUIRE(p != NULL);
	REQUIRE(pcp->count == 63);
	pc_page_drain_all();
	pc_page_clock_advance(21 * 60 * 1000000000ull);
	pc_page_release_due();
	CHECK_EQ(zone_read(&zone->dirty_pages), 0); /* all were freed over an hour ago */
	pc_free_pages(p, 0);
	CHECK(pc_page_check());
}

static void *release_main(void *arg)
{
	(void)arg;
	pc_page_release_due();
	return NULL;
}

/* A release of everything dirty in the zone, held at its first batch. */
static void *release_held_main(void *arg)
{
	struct worker *w = arg;
	stop_here = true;
	zone_release(zone, 0);
	atomic_store(&w->done, true);
	return NULL;
}

TEST(decay_drops_pcp_lock)
{
	set_opt(PC_OPT_VM_PCP_HIGH_MIN, 8);
	void *pages[40];
	REQUIRE(pin_cpu(0));
	for (int i = 0; i < 40; i++)
		REQUIRE((pages[i] = pc_alloc_pages(0)) != NULL);
	pc_page_drain_all();
	for (int i = 0; i < 40; i++)
		pc_free_pages(pages[i], 0); /* 40 pages on the list, under its high */
	pc_spin_stat_lock(&pcp->lock);
	REQUIRE(pcp->count == 40);
	pcp->high = 40; /* a pass takes it to 35: 5 pages to drain */
	pc_spin_stat_unlock(&pcp->lock);
	reset_flags();
	struct zone_holder holder;
	pthread_t releaser;
	zone_hold(&holder, zone);
	atomic_store(&pc_lock_contended_hook, lock_hook);
	alarm(60);
	REQUIRE(pthread_create(&releaser, NULL, release_main, NULL) == 0);
	/* Of the zone's pcps only this CPU's holds pages: the pass's first
	 * wait for the zone lock is its drain's. */
	while (atomic_load(&zone_waits) == 0)
		sched_yield();
	bool free_lock = pc_spin_stat_trylock(&pcp->lock);
	CHECK(free_lock); /* the pcp lock is not held across the wait */
	if (free_lock)
		pc_spin_stat_unlock(&pcp->lock);
	zone_let_go(&holder);
	pthread_join(releaser, NULL);
	alarm(0);
	atomic_store(&pc_lock_contended_hook, NULL);
	pc_spin_stat_lock(&pcp->lock);
	int count = pcp->count, high = pcp->high;
	pc_spin_stat_unlock(&pcp->lock);
	CHECK_EQ(high, 35);
	CHECK_EQ(count, 35);
	set_opt(PC_OPT_VM_PCP_HIGH_MIN, HIGH);
	CHECK(pc_page_check());
}

static size_t free0;       /* the zone's free pages before */
static size_t handed_out;  /* pages handed out meanwhile */

/* In the child: every page of the zone free but those handed out. */
static int child_counts(void)
{
	pc_page_drain_all();
	size_t free_now = zone_read(&zone->free_pages) + zone_read(&zone->run_free_pages);
	if (free_now != free0 - handed_out) {
		fprintf(stderr, "child: %zu pages free, expected %zu\n", free_now, free0 - handed_out);
		return 1;
	}
	return pc_page_check() ? 0 : 2;
}

static atomic_bool forked;
static int child_status;

static void *fork_main(void *arg)
{
	(void)arg;
	pid_t pid = fork();
	if (pid == 0)
		_exit(child_counts());
	int st = -1;
	waitpid(pid, &st, 0);
	child_status = st;
	atomic_store(&forked, true);
	return NULL;
}

/* A worker is stopped in the hook with its batch in flight: fork from
 * another thread. prefork waits for the batch (holding every pcp lock): let
 * the worker go on once it does. Without that wait the fork is done first,
 * the batch still out. Then: the child exited 0, the fork waited, and the
 * hook stopped once. Ends the alarm the caller set. */
static void fork_beside(pthread_t worker)
{
	pthread_t forker;
	REQUIRE(pthread_create(&forker, NULL, fork_main, NULL) == 0);
	while (!atomic_load(&fork_waits) && !atomic_load(&forked))
		sched_yield();
	atomic_store(&go, true);
	pthread_join(forker, NULL);
	pthread_join(worker, NULL);
	alarm(0);
	CHECK(WIFEXITED(child_status) && WEXITSTATUS(child_status) == 0);
	CHECK(atomic_load(&fork_waits));
	CHECK_EQ(atomic_load(&hook_stops), 1);
}

/* A pass (main, in a worker) stops in the hook with its batch off the
 * lists; fork beside it (fork_beside). free0 is what the zone holds now. */
static void fork_beside_pass(void *(*main)(void *))
{
	free0 = zone_read(&zone->free_pages) + zone_read(&zone->run_free_pages);
	handed_out = 0;
	reset_flags();
	atomic_store(&forked, false);
	struct worker r = { .page = NULL };
	atomic_store(&r.done, false);
	alarm(60);
	REQUIRE(pthread_create(&r.t, NULL, main, &r) == 0);
	wait_for(&in_hook);
	fork_beside(r.t); /* joins r's thread */
}

TEST(fork_waits_in_flight)
{
	empty_list_full_refill();
	free0 = zone_read(&zone->free_pages) + zone_read(&zone->run_free_pages);
	handed_out = 1;
	reset_flags();
	atomic_store(&forked, false);
	struct worker a;
	alarm(60);
	worker_start(&a, true);
	wait_for(&in_hook); /* 64 pages in flight */
	fork_beside(a.t);
	REQUIRE(a.page != NULL);
	pc_free_pages(a.page, 0);
	CHECK(pc_page_check());
}

/* The same for a release pass: its batch is off the lists while madvised.
 * 128 single dirty pages (their buddies in use) are 4 batches of 32: the
 * pass stops after the one fork waited for. */
TEST(fork_waits_release)
{
	static void *pages[256];
	pc_page_trim(); /* nothing else dirty */
	for (int i = 0; i < 256; i++)
		REQUIRE((pages[i] = pc_alloc_pages(0)) != NULL);
	for (int i = 0; i < 256; i += 2)
		pc_free_pages(pages[i], 0);
	pc_page_drain_all(); /* dirty in the zone */
	REQUIRE(zone_read(&zone->dirty_pages) == 128);
	fork_beside_pass(release_held_main); /* a batch of dirty blocks off the lists */
	CHECK_EQ(zone_read(&zone->dirty_pages), 128 - 32); /* one batch, then the fork */
	for (int i = 1; i < 256; i += 2)
		pc_free_pages(pages[i], 0);
	CHECK(pc_page_check());
}

/* The same for the run heap: free runs off their bins while madvised. */
static void *run_release_held_main(void *arg)
{
	struct worker *w = arg;
	stop_here = true;
	zone_run_release_due(zone, PC_NS_NEVER);
	atomic_store(&w->done, true);
	return NULL;
}

TEST(fork_waits_run_release)
{
	void *a = pc_alloc_run(100), *b = pc_alloc_run(100); /* longer than a pcp run */
	REQUIRE(a != NULL && b != NULL && zone_of(a) == zone && zone_of(b) == zone);
	pc_free_run(a, 100); /* a dirty free run beside b */
	REQUIRE(zone_read(&zone->run_dirty_pages) >= 100);
	pc_page_drain_all();
	fork_beside_pass(run_release_held_main); /* dirty free runs off their bins */
	CHECK_EQ(zone_read(&zone->run_dirty_pages), 0);
	pc_free_run(b, 100);
	CHECK(pc_page_check());
}

TEST(empty_zone_keeps_factor)
{
	REQUIRE(pin_cpu(0));
	empty_list_full_refill();
	struct pcp_refill r;
	pc_spin_stat_lock(&pcp->lock);
	pcp_refill_plan(pcp, 0, 0, &r);
	REQUIRE(r.want == 64);
	pcp->alloc_factor = 1; /* a drain meanwhile halves it */
	pc_spin_stat_unlock(&pcp->lock);
	/* Empty the zone's buddy lists (the run heap serves no block). */
	struct pc_list taken;
	pc_list_init(&taken);
	pc_lock_acquire(&zone->lock);
	for (int o = PC_MAX_ORDER; o >= 0; o--)
		for (struct pc_page *pg; (pg = zone_alloc_block_locked(zone, (unsigned)o, false));)
			pc_list_add(&pg->list, &taken);
	pc_lock_release(&zone->lock);
	CHECK(pcp_refill(zone, pcp, &r) == NULL);
	CHECK_EQ(pcp->alloc_factor, 1);
	CHECK_EQ(atomic_load(&pcp->in_flight), 0);
	CHECK_EQ(atomic_load(&pcp->refill_pages), 0);
	pc_lock_acquire(&zone->lock);
	while (!pc_list_empty(&taken)) {
		struct pc_page *pg = pc_list_first(&taken, struct pc_page, list);
		pc_list_del(&pg->list);
		zone_free_block_at_locked(zone, pg, pc_pg_order(pg), (enum pc_mem)pg->mem, pg->freed_ns);
	}
	zone_publish_hints_locked(zone);
	pc_lock_release(&zone->lock);
	CHECK(pc_page_check());
}

int main(void)
{
	pc_page_init();
	set_opt(PC_OPT_VM_PCP_HIGH, HIGH);
	set_opt(PC_OPT_VM_PCP_HIGH_MIN, HIGH);
	set_opt(PC_OPT_VM_PCP_BATCH, 16);
	set_opt(PC_OPT_VM_PCP_BATCH_SCALE_MAX, 3);
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, HOUR_MS);
	set_opt(PC_OPT_VM_RELEASE_WATERMARK_KB, 4L << 20); /* 4 GiB: nothing goes by the bound */
	set_opt(PC_OPT_STATS_ENABLE, 1);
	REQUIRE(pin_cpu(0)); /* the main thread's own pages: pcp c of the same zone */
	zone = pc_zone_preferred((unsigned)test_cpu(0));
	pcp = &zone->pcp[test_cpu(0)];
	void *first = pc_alloc_pages(0); /* the zone gets its first region */
	REQUIRE(first != NULL);
	pc_free_pages(first, 0);
	REQUIRE(zone_of(first) == zone);
	atomic_store(&pc_page_test_hook, page_hook);
	signal(SIGALRM, on_alarm);
	RUN(concurrent_refills_bounded);
	RUN(busy_refill_keeps_mem);
	RUN(landed_unused_keeps_age);
	RUN(decay_drops_pcp_lock);
	RUN(fork_waits_in_flight);
	RUN(fork_waits_release);
	RUN(fork_waits_run_release);
	RUN(empty_zone_keeps_factor);
	return test_report();
}
