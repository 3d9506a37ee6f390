/*
 * tests/malloc/test_sheaves.c - the sheaf fast paths under the situations
 * that break per-CPU caches (issue 8), through the public malloc API. Run
 * with rseq (frontend/sheaves) and without (frontend/sheaves_norseq, the
 * per-thread fallback); every block is filled with a self-describing
 * pattern when allocated and checked when freed, so a block handed out
 * twice or a sheaf slot overwritten shows up as damage.
 *
 *  - many_threads: 48 threads on however few CPUs, frees to other threads
 *    through a shared array (most frees are of objects from other slabs and
 *    other CPUs' sheaves);
 *  - migration_and_signals: workers move themselves between CPUs with
 *    sched_setaffinity every few operations while the main thread sends
 *    them signals without pause; the handler allocates, checks and frees
 *    (forcing: every migration and most signals land inside or next to a
 *    critical section, since the workers do nothing else; an rseq abort or
 *    the busy marker of the fallback is then what keeps the sheaf whole).
 *    A worker that is done waits until its handler has run at least once,
 *    and main signals until every worker is done, so that each thread's
 *    handler certainly runs (before, a main thread preempted while the
 *    workers ran their 400 rounds sent its signals to finished threads);
 *  - fork_during_allocation: the main thread forks while workers allocate;
 *    the child allocates, checks, frees and trims (a remote flush there);
 *  - thread_churn: 400 short threads, each leaving blocks for the next;
 *  - capacity_live: slub.sheaf_capacity changes (0 = off, 1, 16, default)
 *    while threads churn (each change flushes every CPU's sheaves).
 * Not a benchmark: nothing here is timed.
 */
#define _GNU_SOURCE
#include "malloc_test.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHARED 1024
static void *_Atomic shared[SHARED];
static atomic_long damaged, nulls, handler_runs;
static atomic_bool stop;

static void *obj_new(uint64_t *rng)
{
	size_t n = 16 + test_rand(rng) % 1024;
	void *p = p_malloc(n);
	if (!p) {
		atomic_fetch_add(&nulls, 1);
		return NULL;
	}
	object_fill(p, n);
	return p;
}

static void obj_free(void *p)
{
	if (p && object_check(p) == 0)
		atomic_fetch_add(&damaged, 1);
	p_free(p);
}

/* Allocate, swap with a random shared slot, free what came out. */
static void churn(uint64_t *rng, long ops)
{
	for (long i = 0; i < ops; i++) {
		void *p = obj_new(rng);
		void *old = atomic_exchange(&shared[test_rand(rng) % SHARED], p);
		obj_free(old);
		if (i % 3 == 0) { /* and a local pair */
			void *q = obj_new(rng);
			obj_free(q);
		}
	}
}

static void drain_shared(void)
{
	for (int i = 0; i < SHARED; i++)
		obj_free(atomic_exchange(&shared[i], NULL));
}

static void *churn_thread(void *arg)
{
	uint64_t rng = (uintptr_t)arg * 0x9E3779B97F4A7C15ULL + 1;
	churn(&rng, 20000);
	return NULL;
}

static void run_threads(int n, void *(*fn)(void *))
{
	pthread_t t[64];
	for (int i = 0; i < n; i++)
		REQUIRE(pthread_create(&t[i], NULL, fn, (void *)(uintptr_t)(i + 1)) == 0);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

TEST(many_threads)
{
	run_threads(48, churn_thread);
	drain_shared();
	CHECK_EQ(atomic_load(&damaged), 0);
	CHECK_EQ(atomic_load(&nulls), 0);
}

/* ---- migration and signals ------------------------------------------------- */
/* Handler runs in this thread (static TLS of the executable: safe in a
 * handler). */
static _Thread_local volatile sig_atomic_t handled_here;
static atomic_int workers_done;

static void handler(int sig)
{
	(void)sig;
	int saved = errno;
	uint64_t rng = (uintptr_t)&rng;
	void *p = obj_new(&rng); /* may be NULL (ENOMEM) if it interrupted a slow path */
	if (!p)
		atomic_fetch_sub(&nulls, 1); /* allowed here: not counted */
	obj_free(p);
	atomic_fetch_add(&handler_runs, 1);
	handled_here = 1;
	errno = saved;
}

static void *migrating(void *arg)
{
	unsigned ncpu = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t rng = (uintptr_t)arg * 77 + 5;
	for (int round = 0; round < 400 && !atomic_load(&stop); round++) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET((unsigned)round % ncpu, &set);
		sched_setaffinity(0, sizeof(set), &set); /* may be refused: fine */
		churn(&rng, 50);
	}
	while (!handled_here) /* main signals until every worker is done */
		sched_yield();
	atomic_fetch_add(&workers_done, 1);
	return NULL;
}

TEST(migration_and_signals)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	REQUIRE(sigaction(SIGUSR1, &sa, NULL) == 0);
	enum { N = 6 };
	pthread_t t[N];
	atomic_store(&workers_done, 0);
	for (int i = 0; i < N; i++)
		REQUIRE(pthread_create(&t[i], NULL, migrating, (void *)(uintptr_t)(i + 1)) == 0);
	long sent = 0;
	/* At least 20000 signals, and on until every worker's handler ran. */
	for (int k = 0; k < 20000 || atomic_load(&workers_done) < N; k++, sent++)
		pthread_kill(t[k % N], SIGUSR1); /* a dead thread's id is never reused before join */
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	signal(SIGUSR1, SIG_IGN);
	drain_shared();
	CHECK_EQ(atomic_load(&damaged), 0);
	CHECK(atomic_load(&nulls) <= 0); /* only handler allocations may fail */
	CHECK(atomic_load(&handler_runs) >= N); /* each worker's, at least once */
	printf("migration_and_signals: %ld signals sent, %ld handler runs\n", sent,
	       atomic_load(&handler_runs));
	atomic_store(&nulls, 0);
}

/* ---- fork ---------------------------------------------------------------------- */
static void *until_stopped(void *arg)
{
	uint64_t rng = (uintptr_t)arg * 31 + 7;
	while (!atomic_load(&stop))
		churn(&rng, 100);
	return NULL;
}

static int child_work(void)
{
	uint64_t rng = 12345;
	void *v[256];
	for (int r = 0; r < 20; r++) {
		for (int i = 0; i < 256; i++)
			v[i] = obj_new(&rng);
		for (int i = 0; i < 256; i++)
			obj_free(v[i]);
		p_malloc_trim(0); /* flushes every CPU's sheaves: a fence in the child */
	}
	return atomic_load(&damaged) == 0 && atomic_load(&nulls) == 0 ? 0 : 1;
}

TEST(fork_during_allocation)
{
	enum { N = 4 };
	pthread_t t[N];
	atomic_store(&stop, false);
	for (int i = 0; i < N; i++)
		REQUIRE(pthread_create(&t[i], NULL, until_stopped, (void *)(uintptr_t)(i + 1)) == 0);
	for (int f = 0; f < 30; f++) {
		pid_t pid = fork();
		REQUIRE(pid >= 0);
		if (pid == 0)
			_exit(child_work());
		int status = 0;
		REQUIRE(waitpid(pid, &status, 0) == pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	drain_shared();
	CHECK_EQ(atomic_load(&damaged), 0);
}

/* ---- thread churn ------------------------------------------------------------------ */
static void *short_lived(void *arg)
{
	uint64_t rng = (uintptr_t)arg * 13 + 3;
	churn(&rng, 300);
	return NULL;
}

TEST(thread_churn)
{
	for (int b = 0; b < 50; b++)
		run_threads(8, short_lived);
	drain_shared();
	CHECK_EQ(atomic_load(&damaged), 0);
	CHECK_EQ(atomic_load(&nulls), 0);
}

/* ---- capacity changed live ---------------------------------------------------------- */
TEST(capacity_live)
{
	int (*ctl_set)(const char *, long) =
		(int (*)(const char *, long))dlsym(RTLD_DEFAULT, "pcmalloc_ctl_set");
	int (*ctl_get)(const char *, long *) =
		(int (*)(const char *, long *))dlsym(RTLD_DEFAULT, "pcmalloc_ctl_get");
	if (!ctl_set || !ctl_get) {
		fprintf(stderr, "  not running on pcmalloc: skipped\n");
		return;
	}
	long mode = 0;
	CHECK(ctl_get("slub.sheaf_mode", &mode) == 0);
	CHECK(mode == 1 || mode == 2);
	enum { N = 4 };
	pthread_t t[N];
	atomic_store(&stop, false);
	for (int i = 0; i < N; i++)
		REQUIRE(pthread_create(&t[i], NULL, until_stopped, (void *)(uintptr_t)(i + 9)) == 0);
	static const long caps[] = { 0, 1, 16, -1, 512, 0, -1 };
	for (int k = 0; k < 140; k++) {
		CHECK(ctl_set("slub.sheaf_capacity", caps[k % 7]) == 0);
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	drain_shared();
	CHECK_EQ(atomic_load(&damaged), 0);
	CHECK_EQ(atomic_load(&nulls), 0);
}

int main(void)
{
	RUN(malloc_interposed);
	RUN(many_threads);
	RUN(migration_and_signals);
	RUN(fork_during_allocation);
	RUN(thread_churn);
	RUN(capacity_live);
	return test_report();
}
