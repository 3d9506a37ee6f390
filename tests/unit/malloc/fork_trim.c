/*
 * tests/unit/malloc/fork_trim.c - a fork never waits for a trim that waits
 * for another thread (slab/sheaf_thread.c, wait_fast_paths; slab/cache.c,
 * pc_slab_reclaim).
 *
 * Thread mode (the fallback, the _norseq run; rseq mode has no such wait
 * and the test only says so): a trim flushes every live thread's sheaves
 * and waits, after its membarrier, for each thread seen inside a fast path
 * to leave it. Thread B allocates and frees (so it holds a kmalloc-64
 * sheaf), then sets its busy flag as a fast path does and stays "inside"
 * until told. Thread T calls pc_trim(): it detaches B's sheaf and waits for
 * B. The main thread, once B's entry is detached (T is in that flush), forks;
 * B is let go only after fork() has returned and T has been seen waiting. Before the fix the trim held
 * threads_lock while it waited, the slab prefork waited for that lock, and
 * the three waited for one another: the alarm ended the test, whatever the
 * scheduling. Now the wait drops the lock while it yields (the test hook
 * counts it), the fork completes, the child allocates and trims, and the
 * trim completes once B leaves. The alarms only detect a hang. The child
 * also shrinks cache x, whose sheaf (of thread A, alive, not busy) was in
 * the waiting trim's batch at the fork: it must not wait for that flush
 * (which is not in the child), and must get the sheaf's objects back
 * (active_objects 0), not leak them.
 * destroy_beside_waiting_trim (below): what the dropped lock must not
 * break.
 */
#define _GNU_SOURCE
#include "test.h"

#include "malloc/malloc.h"
#include "unit/sheaf_park.h"

#include <pthread.h>
#include <sched.h>

#define ALARM_S 120

static _Atomic int b_ready, b_release, trim_done, waits;
static pc_sheaf_entry *_Atomic b_entry;

static void *inside_fast_path(void *arg)
{
	(void)arg;
	void *p[8];
	for (int i = 0; i < 8; i++)
		p[i] = pc_malloc(64);
	for (int i = 0; i < 8; i++)
		pc_free(p[i]);
	struct pc_cache *s = pc_class_cache[pc_size_class(64)];
	atomic_store(&b_entry, &pc_thread_sheaves[s->tindex]);
	park_in_fast_path(&b_ready, &b_release);
	return NULL;
}

/* Thread A: holds a sheaf of cache x (not busy), alive until told. */
static struct pc_cache *x_cache;
static _Atomic int a_ready, a_release;
static pc_sheaf_entry *_Atomic a_entry;

static void *idle_holder(void *arg)
{
	(void)arg;
	void *o[8];
	for (int i = 0; i < 8; i++)
		o[i] = pc_cache_alloc(x_cache);
	for (int i = 0; i < 8; i++)
		pc_cache_free(x_cache, o[i]);
	atomic_store(&a_entry, &pc_thread_sheaves[x_cache->tindex]);
	atomic_store(&a_ready, 1);
	while (!atomic_load(&a_release))
		sched_yield();
	return NULL;
}

static void *trimmer(void *arg)
{
	(void)arg;
	pc_trim();
	atomic_store(&trim_done, 1);
	return NULL;
}

static _Atomic int flight_waits;
static void on_wait(bool for_flushes)
{
	atomic_fetch_add(for_flushes ? &flight_waits : &waits, 1);
}

static int child_main(void)
{
	alarm(ALARM_S);
	/* A's sheaf of x was in the waiting trim's batch at the fork: the child
	 * gives it back (A was in no fast path) and has no flush in flight, so
	 * a flush of one cache does not wait for one that is not here. */
	if (x_cache) {
		pc_cache_shrink(x_cache);
		struct pc_cache_info info;
		pc_cache_info(x_cache, &info);
		if (info.active_objects != 0)
			return 3;
	}
	void *p[64];
	for (int i = 0; i < 64; i++)
		p[i] = pc_malloc((size_t)i * 64 + 8);
	for (int i = 0; i < 64; i++) {
		if (!p[i])
			return 2;
		pc_free(p[i]);
	}
	pc_trim();
	return 0;
}

TEST(fork_beside_waiting_trim)
{
	void *first = pc_malloc(1); /* start the allocator */
	pc_free(first);
	if (pc_sheaf_mode() != PC_SHEAF_MODE_THREAD) {
		fprintf(stderr, "  rseq mode: trims wait for no thread; nothing to test here\n");
		return;
	}
	alarm(ALARM_S);
	atomic_store(&pc_sheaf_flush_wait_test_hook, on_wait);
	pthread_t a, b, t;
	REQUIRE(pthread_create(&b, NULL, inside_fast_path, NULL) == 0);
	while (!atomic_load(&b_ready))
		sched_yield();
	/* A joins the registry after B: the flush walks it first, so its
	 * sheaf is in the batch before any wait. */
	x_cache = pc_cache_create("fork-trim-x", 64, 0, NULL);
	REQUIRE(x_cache != NULL);
	if (x_cache->tindex == 0)
		x_cache = NULL; /* no thread-sheaf index left: that part is not tested */
	if (x_cache) {
		REQUIRE(pthread_create(&a, NULL, idle_holder, NULL) == 0);
		while (!atomic_load(&a_ready))
			sched_yield();
	}
	pc_sheaf_entry *entry = atomic_load(&b_entry);
	REQUIRE(__atomic_load_n(entry, __ATOMIC_ACQUIRE) != &pc_sheaf_none);
	REQUIRE(pthread_create(&t, NULL, trimmer, NULL) == 0);
	/* T has taken B's sheaf: it is in its flush and will wait for B. */
	while (__atomic_load_n(entry, __ATOMIC_ACQUIRE) != &pc_sheaf_none &&
	       !atomic_load(&trim_done))
		sched_yield();
	bool fenced = !atomic_load(&trim_done);
	/* And it waits, threads_lock dropped, with A's sheaf detached. */
	while (fenced && atomic_load(&waits) == 0)
		sched_yield();
	if (fenced && x_cache)
		REQUIRE(__atomic_load_n(atomic_load(&a_entry), __ATOMIC_ACQUIRE) == &pc_sheaf_none);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(child_main());
	CHECK(!atomic_load(&trim_done) || !fenced); /* the trim still waits for B */
	/* Let B go once T has been seen waiting for it, the lock dropped (so
	 * the count below is never a matter of timing). */
	while (fenced && atomic_load(&waits) == 0)
		sched_yield();
	atomic_store(&b_release, 1);
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	pthread_join(t, NULL);
	pthread_join(b, NULL);
	atomic_store(&a_release, 1);
	if (x_cache)
		pthread_join(a, NULL);
	atomic_store(&pc_sheaf_flush_wait_test_hook, NULL);
	alarm(0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
		fprintf(stderr, "  child: the trim's sheaf in flight was not given back\n");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(atomic_load(&trim_done));
	if (!fenced) {
		fprintf(stderr, "  no membarrier here: trims take no other thread's sheaves\n");
		return;
	}
	CHECK(atomic_load(&waits) >= 1); /* it waited for B, threads_lock dropped */
}

/*
 * destroy_beside_waiting_trim: the trim's dropped lock must not let a cache
 * destroy see the trim's sheaves in flight as allocated objects ("keeping
 * it"). B holds a sheaf of the test's cache and parks inside a fast path;
 * T's trim takes it and waits for B, the lock dropped; then D destroys the
 * cache. D's flush waits for the flushes in flight (test hook, true), B is
 * let go only then, and the destroy must find the cache empty (0). Without
 * that wait D returns at once, finding the objects in T's batch: non-zero.
 */
static struct pc_cache *own_cache;
static _Atomic int d_done;
static _Atomic size_t d_result;

static void *holder_of_own(void *arg)
{
	(void)arg;
	void *o[8];
	for (int i = 0; i < 8; i++)
		o[i] = pc_cache_alloc(own_cache);
	for (int i = 0; i < 8; i++)
		pc_cache_free(own_cache, o[i]);
	atomic_store(&b_entry, &pc_thread_sheaves[own_cache->tindex]);
	__atomic_store_n(&pc_thread_sheaf_busy, 1, __ATOMIC_RELAXED);
	atomic_store(&b_ready, 1);
	while (!atomic_load(&b_release))
		sched_yield();
	__atomic_store_n(&pc_thread_sheaf_busy, 0, __ATOMIC_RELEASE);
	return NULL;
}

static void *destroyer(void *arg)
{
	(void)arg;
	atomic_store(&d_result, pc_cache_destroy(own_cache));
	atomic_store(&d_done, 1);
	return NULL;
}

TEST(destroy_beside_waiting_trim)
{
	if (pc_sheaf_mode() != PC_SHEAF_MODE_THREAD)
		return; /* said above */
	own_cache = pc_cache_create("fork-trim-own", 64, 0, NULL);
	REQUIRE(own_cache != NULL);
	if (own_cache->tindex == 0) {
		fprintf(stderr, "  no thread-sheaf index left for a new cache: nothing to test\n");
		return;
	}
	alarm(ALARM_S);
	atomic_store(&b_ready, 0);
	atomic_store(&b_release, 0);
	atomic_store(&trim_done, 0);
	atomic_store(&waits, 0);
	atomic_store(&pc_sheaf_flush_wait_test_hook, on_wait);
	pthread_t b, t, d;
	REQUIRE(pthread_create(&b, NULL, holder_of_own, NULL) == 0);
	while (!atomic_load(&b_ready))
		sched_yield();
	REQUIRE(pthread_create(&t, NULL, trimmer, NULL) == 0);
	while (atomic_load(&waits) == 0 && !atomic_load(&trim_done))
		sched_yield();
	bool fenced = !atomic_load(&trim_done);
	REQUIRE(pthread_create(&d, NULL, destroyer, NULL) == 0);
	while (fenced && atomic_load(&flight_waits) == 0 && !atomic_load(&d_done))
		sched_yield();
	CHECK(!fenced || !atomic_load(&d_done)); /* D waits for T's sheaves */
	atomic_store(&b_release, 1);
	pthread_join(d, NULL);
	pthread_join(t, NULL);
	pthread_join(b, NULL);
	atomic_store(&pc_sheaf_flush_wait_test_hook, NULL);
	alarm(0);
	CHECK_EQ(atomic_load(&d_result), 0); /* every object back: destroyed */
}

int main(void)
{
	RUN(fork_beside_waiting_trim);
	RUN(destroy_beside_waiting_trim);
	return test_report();
}
