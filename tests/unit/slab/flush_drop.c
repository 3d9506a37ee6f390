/*
 * tests/unit/slab/flush_drop.c - thread mode: every flush of other live
 * threads' sheaves lets threads_lock go while it waits for a thread inside a
 * fast path (slab/sheaf_thread.c, wait_fast_paths), a flush of one cache
 * and the decay's included, not only a trim (tests/unit/malloc/fork_trim.c):
 * a thread that starts or exits (it joins or leaves the registry under that
 * lock) does not wait for a preempted thread through the flusher.
 *
 * Thread B holds a sheaf of cache x, then sets its busy flag as a fast path
 * does and stays "inside" until told. Thread T flushes: it takes B's sheaf
 * and waits for B. The test hook (pc_sheaf_flush_wait_test_hook, false:
 * called by a flusher that waits with the lock dropped) holds T there;
 * meanwhile thread C makes its first allocation of cache y (it joins the
 * registry) and exits (it leaves it), and the main thread joins C. Then T
 * and B are let go, and every object of x is back in its slabs.
 *
 *  shrink_drops_lock  T calls pc_cache_shrink(x) (a flush of one cache).
 *  decay_drops_lock   T runs the decay's second pass: the first (the main
 *                     thread's) noted B's entry, the second finds it idle.
 *  decay_resumes_record  the decay's walk, started again after such a
 *                     wait, resumes a record after the last entry it looked
 *                     at: thread D holds sheaves of 34 caches; after the
 *                     first pass D changes the entry of the first (K); the
 *                     second pass (T) looks at K (changed: kept), takes the
 *                     idle ones until its batch of 32 is full and waits
 *                     for B. Walked again from D's first entry, K would
 *                     get a second look in the same pass and be taken as
 *                     idle (checked: with the walk restarted at entry 1 it
 *                     is); K must keep its sheaf.
 *
 * Until 2026-11-25 both held threads_lock through the wait: the hook was
 * never called, T never returned, and the alarm failed the test (checked).
 * Each step waits for a state; the alarm only turns a hang into a failure.
 * In rseq mode (no thread sheaves) there is nothing to test: the test says
 * so; the _norseq run and ThreadSanitizer run it.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "slab/slab.h"
#include "test.h"
#include "unit/sheaf_park.h"
#include "unit/unit_helpers.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#define ALARM_S 300

static struct pc_cache *x_cache, *y_cache;
static _Atomic int b_ready, b_release, t_done, waits, go;

/* Thread B: a sheaf of x, then "inside a fast path" until b_release. */
static void *inside_fast_path(void *arg)
{
	(void)arg;
	void *o[8];
	for (int i = 0; i < 8; i++)
		REQUIRE((o[i] = pc_cache_alloc(x_cache)) != NULL);
	for (int i = 0; i < 8; i++)
		pc_cache_free(x_cache, o[i]);
	park_in_fast_path(&b_ready, &b_release);
	return NULL;
}

/* The flusher, waiting for B with threads_lock dropped: held here until go. */
static void on_wait(bool for_flushes)
{
	if (for_flushes)
		return;
	atomic_fetch_add(&waits, 1);
	while (!atomic_load(&go))
		sched_yield();
}

static void *shrinker(void *arg)
{
	(void)arg;
	pc_cache_shrink(x_cache);
	atomic_store(&t_done, 1);
	return NULL;
}

static void *decayer(void *arg)
{
	(void)arg;
	pc_slab_decay_pass();
	atomic_store(&t_done, 1);
	return NULL;
}

/* Thread C: joins the registry (its first slow path) and leaves it (exit). */
static void *newcomer(void *arg)
{
	(void)arg;
	void *p = pc_cache_alloc(y_cache);
	REQUIRE(p != NULL);
	pc_cache_free(y_cache, p);
	return NULL;
}

/* B parks; first() (the decay's first look, or nothing) runs; T runs
 * flusher and is held waiting for B; C starts and exits; all let go.
 * False where flushes take no other thread's sheaves (no membarrier). */
static bool run_case(void *(*flusher)(void *), void (*first)(void))
{
	atomic_store(&b_ready, 0);
	atomic_store(&b_release, 0);
	atomic_store(&t_done, 0);
	atomic_store(&waits, 0);
	atomic_store(&go, 0);
	alarm(ALARM_S);
	pthread_t b, t, c;
	REQUIRE(pthread_create(&b, NULL, inside_fast_path, NULL) == 0);
	while (!atomic_load(&b_ready))
		sched_yield();
	if (first)
		first();
	REQUIRE(pthread_create(&t, NULL, flusher, NULL) == 0);
	/* T takes B's sheaf and waits for B, the lock dropped (before the
	 * change: held, no hook, T never done: the alarm). */
	while (atomic_load(&waits) == 0 && !atomic_load(&t_done))
		sched_yield();
	bool fenced = !atomic_load(&t_done);
	REQUIRE(pthread_create(&c, NULL, newcomer, NULL) == 0);
	REQUIRE(pthread_join(c, NULL) == 0); /* its join and leave took threads_lock */
	CHECK(!atomic_load(&t_done) || !fenced); /* T still waits for B */
	atomic_store(&go, 1);
	atomic_store(&b_release, 1);
	REQUIRE(pthread_join(t, NULL) == 0);
	REQUIRE(pthread_join(b, NULL) == 0);
	alarm(0);
	if (!fenced)
		fprintf(stderr, "  no membarrier here: flushes take no other thread's sheaves\n");
	else
		CHECK(atomic_load(&waits) >= 1);
	CHECK_EQ(pc_cache_check(x_cache), 0); /* every object of x back in the slabs */
	return fenced;
}

static void decay_first_look(void)
{
	pc_slab_decay_pass(); /* notes B's entry; the next pass finds it idle */
}

TEST(shrink_drops_lock)
{
	run_case(shrinker, NULL);
}

TEST(decay_drops_lock)
{
	run_case(decayer, decay_first_look);
}

/* ---- decay_resumes_record ---------------------------------------------------- */
#define D_CACHES 34 /* K and 33 idle: the batch (32) fills inside D's record */
static struct pc_cache *d_caches[D_CACHES];
static pc_sheaf_entry *_Atomic d_entries;
static _Atomic int d_step; /* 1: sheaves made; 2: change K (main); 3: changed; 4: end */
static void *d_kept;

static void *holder_of_many(void *arg)
{
	(void)arg;
	for (int k = 0; k < D_CACHES; k++) {
		void *o[2];
		for (int i = 0; i < 2; i++)
			REQUIRE((o[i] = pc_cache_alloc(d_caches[k])) != NULL);
		for (int i = 0; i < 2; i++)
			pc_cache_free(d_caches[k], o[i]);
	}
	atomic_store(&d_entries, pc_thread_sheaves);
	atomic_store(&d_step, 1);
	while (atomic_load(&d_step) != 2)
		sched_yield();
	REQUIRE((d_kept = pc_cache_alloc(d_caches[0])) != NULL); /* K's entry changes */
	atomic_store(&d_step, 3);
	while (atomic_load(&d_step) != 4)
		sched_yield();
	pc_cache_free(d_caches[0], d_kept);
	return NULL;
}

TEST(decay_resumes_record)
{
	char name[32];
	for (int k = 0; k < D_CACHES; k++) {
		snprintf(name, sizeof(name), "flush-drop-d%d", k);
		REQUIRE((d_caches[k] = pc_cache_create(name, 64 + 16 * (size_t)k, 0, NULL)) != NULL);
		if (d_caches[k]->tindex == 0) {
			fprintf(stderr, "  no thread-sheaf index left: skipped\n");
			return;
		}
		REQUIRE(k == 0 || d_caches[k]->tindex > d_caches[0]->tindex); /* K looked at first */
	}
	atomic_store(&d_step, 0);
	pthread_t d;
	REQUIRE(pthread_create(&d, NULL, holder_of_many, NULL) == 0);
	while (atomic_load(&d_step) != 1)
		sched_yield();
	pc_slab_decay_pass(); /* the first look at D's entries */
	atomic_store(&d_step, 2);
	while (atomic_load(&d_step) != 3)
		sched_yield();
	pc_sheaf_entry *k_entry = &atomic_load(&d_entries)[d_caches[0]->tindex];
	REQUIRE(__atomic_load_n(k_entry, __ATOMIC_ACQUIRE) != &pc_sheaf_none);
	if (run_case(decayer, NULL)) { /* the second pass, held in its wait for B */
		CHECK(__atomic_load_n(k_entry, __ATOMIC_ACQUIRE) != &pc_sheaf_none); /* K kept */
		unsigned taken = 0;
		for (int k = 1; k < D_CACHES; k++)
			taken += __atomic_load_n(&atomic_load(&d_entries)[d_caches[k]->tindex],
						 __ATOMIC_ACQUIRE) == &pc_sheaf_none;
		CHECK_EQ(taken, D_CACHES - 1); /* the idle ones all taken */
	}
	atomic_store(&d_step, 4);
	REQUIRE(pthread_join(d, NULL) == 0);
	for (int k = 0; k < D_CACHES; k++) {
		CHECK_EQ(pc_cache_check(d_caches[k]), 0);
		CHECK_EQ(pc_cache_destroy(d_caches[k]), 0);
	}
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "flush_drop: a flusher held threads_lock while it waited\n";
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(2);
}

int main(void)
{
	pc_page_init();
	if (pc_sheaf_mode() != PC_SHEAF_MODE_THREAD) {
		fprintf(stderr, "rseq mode: no thread sheaves; the _norseq run tests this\n");
		return 0;
	}
	/* No pass but the test's: no release thread, the next due in an hour. */
	set_opt(PC_OPT_VM_RELEASE_THREAD, 0);
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, 3600000);
	pc_slab_decay_pass();
	x_cache = pc_cache_create("flush-drop-x", 64, 0, NULL);
	y_cache = pc_cache_create("flush-drop-y", 96, 0, NULL);
	REQUIRE(x_cache != NULL && y_cache != NULL);
	if (x_cache->tindex == 0 || y_cache->tindex == 0) {
		fprintf(stderr, "no thread-sheaf index left for the test's caches: skipped\n");
		return 0;
	}
	signal(SIGALRM, on_alarm);
	atomic_store(&pc_sheaf_flush_wait_test_hook, on_wait);
	RUN(shrink_drops_lock);
	RUN(decay_drops_lock);
	RUN(decay_resumes_record);
	atomic_store(&pc_sheaf_flush_wait_test_hook, NULL);
	CHECK_EQ(pc_cache_destroy(x_cache), 0);
	CHECK_EQ(pc_cache_destroy(y_cache), 0);
	return test_report();
}
