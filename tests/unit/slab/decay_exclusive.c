/*
 * tests/unit/slab/decay_exclusive.c - a decay pass never overlaps a cache
 * walker (pc_cache_check) or a pc_cache_destroy (slab.h, "Locks": each
 * holds slab_mutex throughout). Before, the background release thread's
 * decay (vm.release_thread=1, through the page layer's hook) or a slow
 * path's could flush a cache's idle sheaves, or shrink its slabs, while
 * the walker at pc_cache_destroy (PC_DEBUG=3) walked it: objects in a
 * detached sheaf looked allocated, and destroy could keep a cache with
 * nothing allocated. Runs with rseq, on the per-thread fallback
 * (_norseq) and under ThreadSanitizer.
 *
 * Every interleaving is forced, never waited for with a sleep: the walker
 * or destroy is held where it holds the exclusion
 * (pc_slab_exclusive_test_hook), or a decay pass as it begins on the cache
 * (pc_slab_decay_test_hook); the other party is started in a thread
 * marked `waiter`, and the test goes on at whichever comes first of: the
 * waiter is committed to a contended mutex wait (pc_mutex_spin_hook, the
 * lock layer's seam), it reaches the held party's cache (overlap: the
 * bug), or it returns (it did not wait). Only the first is correct.
 *
 *  walker_holds_off_decay   a walker held inside its walk; a decay pass
 *                           (pc_slab_decay_pass, what the release thread's
 *                           pc_slab_decay runs when due) must wait; both
 *                           finish; the walk counts exactly the objects
 *                           still allocated.
 *  decay_holds_off_walker   a pass held as it begins on the cache; a walker
 *                           must wait; the walk is exact after the pass.
 *  destroy_holds_off_decay  a destroy held between its shrink and its
 *                           count; a pass must wait, and neither it nor a
 *                           later pass ever reaches the destroyed cache.
 *  check_in_foreach         a pc_cache_foreach callback (slab_mutex held)
 *                           may still call pc_cache_check (which then does
 *                           not take it again), as tests/unit/malloc/faults.c
 *                           does.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "slab/slab.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <pthread.h>

#define HOUR_MS 3600000L
#define ALLOC   100
#define KEEP    40

enum { EV_HELD = 1, EV_CONTENDED = 2, EV_REACHED = 4, EV_DONE = 8 };

static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ev_cond = PTHREAD_COND_INITIALIZER;
static unsigned events;             /* EV_*, under ev_lock */
static bool go;                     /* the held party may go on, under ev_lock */
static struct pc_cache *target;     /* the cache under test */
static bool hold_walker, hold_decay; /* which party the hooks hold */
static bool decay_saw_target;       /* a pass began on target (ever) */
static __thread bool waiter;        /* this thread is the party that must wait */

static void post(unsigned ev)
{
	pthread_mutex_lock(&ev_lock);
	events |= ev;
	pthread_cond_broadcast(&ev_cond);
	pthread_mutex_unlock(&ev_lock);
}

/* Wait until one of `any` has happened; returns every event so far. */
static unsigned wait_any(unsigned any)
{
	pthread_mutex_lock(&ev_lock);
	while (!(events & any))
		pthread_cond_wait(&ev_cond, &ev_lock);
	unsigned ev = events;
	pthread_mutex_unlock(&ev_lock);
	return ev;
}

/* The held party, the first time it gets here in a test: say so, then
 * wait for go. */
static void hold_here(void)
{
	pthread_mutex_lock(&ev_lock);
	if (!(events & EV_HELD)) {
		events |= EV_HELD;
		pthread_cond_broadcast(&ev_cond);
		while (!go)
			pthread_cond_wait(&ev_cond, &ev_lock);
	}
	pthread_mutex_unlock(&ev_lock);
}

static void release_held(void)
{
	pthread_mutex_lock(&ev_lock);
	go = true;
	pthread_cond_broadcast(&ev_cond);
	pthread_mutex_unlock(&ev_lock);
}

/* pc_cache_check or pc_cache_destroy, holding the exclusion. */
static void exclusive_hook(struct pc_cache *s)
{
	if (s != target)
		return;
	if (waiter)
		post(EV_REACHED); /* a walker got in while a pass was held */
	else if (hold_walker)
		hold_here();
}

/* A decay pass begins on s (slab_mutex held, in the fixed code). */
static void decay_hook(struct pc_cache *s)
{
	if (s != target)
		return;
	decay_saw_target = true;
	if (waiter)
		post(EV_REACHED); /* a pass got in while the walker was held */
	else if (hold_decay)
		hold_here();
}

/* The waiter is committed to a contended mutex wait. */
static uint32_t spin_hook(struct pc_mutex *m, enum pc_mutex_spin_point at, uint32_t budget)
{
	(void)m;
	(void)at;
	if (waiter)
		post(EV_CONTENDED);
	return budget;
}

static void setup(const char *name)
{
	events = 0;
	go = false;
	hold_walker = hold_decay = false;
	decay_saw_target = false;
	target = pc_cache_create(name, 64, 0, NULL);
	REQUIRE(target != NULL);
}

/* ALLOC objects of target, all but KEEP freed (into the sheaves), in *keep;
 * then a first decay pass, which only looks: the next finds them idle. */
static void fill(void **keep)
{
	void *v[ALLOC];
	for (int i = 0; i < ALLOC; i++)
		REQUIRE((v[i] = pc_cache_alloc(target)) != NULL);
	for (int i = KEEP; i < ALLOC; i++)
		pc_cache_free(target, v[i]);
	for (int i = 0; i < KEEP; i++)
		keep[i] = v[i];
	pc_slab_decay_pass();
}

static void *run_decay(void *arg)
{
	waiter = arg != NULL;
	pc_slab_decay_pass();
	if (waiter)
		post(EV_DONE);
	return NULL;
}

static long check_result;
static void *run_check(void *arg)
{
	waiter = arg != NULL;
	check_result = pc_cache_check(target);
	if (waiter)
		post(EV_DONE);
	return NULL;
}

static size_t destroy_result;
static void *run_destroy(void *arg)
{
	(void)arg;
	destroy_result = pc_cache_destroy(target);
	return NULL;
}

/* Start the held party (body, unmarked) and wait until it is held; then the
 * waiter (body2, marked) and wait for its first event. Returns it. */
static unsigned interleave(void *(*held)(void *), pthread_t *th, void *(*other)(void *),
			   pthread_t *tw)
{
	REQUIRE(pthread_create(th, NULL, held, NULL) == 0);
	wait_any(EV_HELD);
	REQUIRE(pthread_create(tw, NULL, other, (void *)1) == 0);
	unsigned ev = wait_any(EV_CONTENDED | EV_REACHED | EV_DONE);
	release_held();
	return ev;
}

TEST(walker_holds_off_decay)
{
	setup("dx-walker");
	void *keep[KEEP];
	fill(keep);
	hold_walker = true;
	pthread_t th, tw;
	unsigned ev = interleave(run_check, &th, run_decay, &tw);
	CHECK(ev & EV_CONTENDED);  /* the pass waited for the walker */
	CHECK(!(ev & EV_REACHED)); /* and never ran beside it */
	CHECK(!(ev & EV_DONE));
	pthread_join(th, NULL);
	pthread_join(tw, NULL);
	CHECK_EQ(check_result, KEEP);
	for (int i = 0; i < KEEP; i++)
		pc_cache_free(target, keep[i]);
	CHECK_EQ(pc_cache_destroy(target), 0);
}

TEST(decay_holds_off_walker)
{
	setup("dx-decay");
	void *keep[KEEP];
	fill(keep);
	hold_decay = true;
	pthread_t th, tw;
	unsigned ev = interleave(run_decay, &th, run_check, &tw);
	CHECK(ev & EV_CONTENDED);  /* the walker waited for the pass */
	CHECK(!(ev & EV_REACHED));
	CHECK(!(ev & EV_DONE));
	pthread_join(th, NULL);
	pthread_join(tw, NULL);
	CHECK_EQ(check_result, KEEP);
	for (int i = 0; i < KEEP; i++)
		pc_cache_free(target, keep[i]);
	CHECK_EQ(pc_cache_destroy(target), 0);
}

TEST(destroy_holds_off_decay)
{
	setup("dx-destroy");
	void *keep[KEEP];
	fill(keep);
	for (int i = 0; i < KEEP; i++)
		pc_cache_free(target, keep[i]); /* nothing allocated: it can go */
	hold_walker = true;
	decay_saw_target = false;
	pthread_t th, tw;
	unsigned ev = interleave(run_destroy, &th, run_decay, &tw);
	CHECK(ev & EV_CONTENDED); /* the pass waited for destroy */
	CHECK(!(ev & EV_REACHED));
	CHECK(!(ev & EV_DONE));
	pthread_join(th, NULL);
	pthread_join(tw, NULL);
	CHECK_EQ(destroy_result, 0);
	CHECK(!decay_saw_target); /* the waiting pass found it unlinked */
	pc_slab_decay_pass();
	CHECK(!decay_saw_target); /* and so does any later one */
}

static void check_one(struct pc_cache *s, void *arg)
{
	if (s == target)
		*(long *)arg = pc_cache_check(s);
}

TEST(check_in_foreach)
{
	setup("dx-foreach");
	void *keep[KEEP];
	fill(keep);
	long got = -2;
	pc_cache_foreach(check_one, &got);
	CHECK_EQ(got, KEEP);
	for (int i = 0; i < KEEP; i++)
		pc_cache_free(target, keep[i]);
	CHECK_EQ(pc_cache_destroy(target), 0);
}

int main(void)
{
	watchdog_install("decay_exclusive: watchdog: the test hangs\n");
	alarm(300);
	pc_page_init();
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, HOUR_MS); /* passes only when forced */
	pc_store_relaxed(&pc_mutex_spin_pauses, PC_MUTEX_SPIN_PAUSES); /* waits spin first */
	pc_slab_exclusive_test_hook = exclusive_hook;
	pc_slab_decay_test_hook = decay_hook;
	pc_mutex_spin_hook = spin_hook;
	RUN(walker_holds_off_decay);
	RUN(decay_holds_off_walker);
	RUN(destroy_holds_off_decay);
	RUN(check_in_foreach);
	return test_report();
}
