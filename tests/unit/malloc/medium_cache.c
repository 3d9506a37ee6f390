/*
 * tests/unit/malloc/medium_cache.c - malloc's per-CPU cache of medium blocks
 * (malloc/medium.c): reuse without the page allocator, the bound in bytes
 * per CPU, every way it is emptied, and contents under threads, migration,
 * fork and thread churn (PC_TEST_LABELS: tsan).
 *
 * In rseq mode the cache is per CPU; in the fallback (thread mode, and
 * ThreadSanitizer builds) per thread (malloc/medium_thread.c), and the same
 * tests run there, with the bounds of that mode. No verdict depends
 * on timing: the CPU a block goes to is forced by pinning (pin_cpu), decay
 * passes are called directly, and the flush before an allocation fails is
 * forced under RLIMIT_AS in a child.
 *
 *  reuse             pinned: a freed 16 KiB block is cached and the next
 *                    malloc of that size returns it; 12 KiB does not.
 *  double_free       in a child, freeing a cached block again is fatal
 *                    (SIGABRT: its state says free, classify() stops it).
 *  bounded           a budget of 256 KiB: 100 frees of 16 KiB, then of 64
 *                    KiB: the capacities and the contents of CPU 0 never
 *                    exceed it, and the second class takes the budget over
 *                    from the first (its blocks evicted).
 *  trim_empties      pc_trim leaves nothing cached.
 *  decay             a decay pass flushes a CPU unchanged since the last
 *                    pass (the second through the release thread's pass),
 *                    and keeps one that changed.
 *  mode              per-CPU stacks exactly in rseq mode; the default
 *                    ceiling (8 MiB); thread mode's per-thread budget is a
 *                    quarter of it, at most 512 KiB.
 *  bound_follows_demand  rseq: CPU 0's bound starts at 256 KiB (64 frees
 *                    of 16 KiB keep 256 KiB), grows with misses that follow
 *                    refusals until a round keeps all 64, halves
 *                    its raise in a decay pass that follows one without
 *                    refusals and trims the busy CPU to it (not flushed
 *                    whole: the bound's worth stays cached), is back at
 *                    256 KiB after more passes with 256 KiB cached; an idle
 *                    CPU is flushed whole (decay passes called directly;
 *                    the ticks' passes held off by the depth).
 *  ceiling_without_thread  rseq, vm.release_thread=0 (no decay pass runs
 *                    in an idle program): rounds of 64 blocks each of 16,
 *                    20 and 24 KiB (3.75 MiB) never take CPU 0's bound or
 *                    cache above 2 MiB, though
 *                    the bound reaches it; with the thread's mode on (1)
 *                    the same CPU's bound is above 2 MiB at once (the raise
 *                    followed the demand to the 8 MiB ceiling).
 *  demand_drops      rseq (review of mixedrss, repro A): after a burst of
 *                    64 x 16 KiB, the demand drops to 2-3 blocks of that
 *                    class; the class keeps changing, yet after 40 passes
 *                    what is cached is within the bound again (256 KiB).
 *  stale_class       rseq (repro B): 56 x 16 KiB cached, then a steady loop
 *                    of 20 KiB blocks; the 16 KiB class, unchanged between
 *                    passes on a CPU above its bound, is flushed whole
 *                    while the 20 KiB blocks stay cached.
 *  decay_ticks       without the release thread, medium misses run the
 *                    decay (every 16th, once the page clock passed the
 *                    delay, moved by hand): a CPU unchanged for two passes
 *                    is flushed; with a medium lock held (a signal handler's
 *                    view, depth set by hand) no pass runs.
 *  reentered_no_reclaim  in a child under RLIMIT_AS, with a medium lock
 *                    held (depth set by hand) a refused malloc fails
 *                    without flushing the cache (the out-of-memory retry and
 *                    the huge path's would take that lock); without it, the
 *                    same refusal flushes it.
 *  tunable_live      while threads allocate and free, malloc.medium_cache_kb
 *                    = 0 empties the cache and keeps it empty; raised
 *                    again, blocks are cached again; contents checked.
 *  threads_migrate   32 threads on all CPUs, each moving itself between
 *                    CPUs (sched_setaffinity) every few blocks, every size
 *                    3..64 pages, contents checked at every free.
 *  fork_during       threads allocate and free while the main thread forks;
 *                    each child uses every size, trims, checks the page
 *                    allocator and exits 0.
 *  thread_churn      200 short threads; afterwards the cache is within its
 *                    bound on every CPU (rseq) or empty (the threads' arrays
 *                    went back at their exit), and trim empties it.
 *  self_busy_kept    thread mode: a flush from a signal handler that
 *                    interrupted its thread's fast path (busy set by hand)
 *                    leaves that thread's array alone.
 *  free_after_exit   a key destructor that frees a medium block after the
 *                    allocator's exit handler: no record is made again
 *                    (thread mode: nothing cached once the threads are gone).
 *  oom_flushes       in a child under RLIMIT_AS, 2 MiB of 256 KiB blocks
 *                    cached (the most without the release thread; thread
 *                    mode: what a thread's budget holds),
 *                    then 12 KiB blocks until malloc fails: by then
 *                    the cache is empty and its pages were reused; after
 *                    freeing, malloc works again.
 */
#define _GNU_SOURCE
#include "test.h"
#include "unit/unit_helpers.h"

#include "malloc/malloc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* "CPU 0" below: the process's first CPU, which pin_cpu(0) pins to
 * (unit_helpers.h; another number in a cpuset without CPU 0). */
#define CPU0 ((unsigned)test_cpu(0))
#define KiB ((size_t)1024)
#define MiB ((size_t)1 << 20)

static bool rseq_mode(void)
{
	return pc_load_relaxed(&pc_medium_slots) != NULL;
}

/* Per-CPU stacks (rseq) or per-thread arrays (the fallback). */
static bool cache_on(void)
{
	return rseq_mode() || pc_sheaf_mode() == PC_SHEAF_MODE_THREAD;
}

/* Each block carries its owner's stamp in its first and last word. */
static void stamp(char *p, size_t size, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
	memcpy(p + size - sizeof(v), &v, sizeof(v));
	p[size / 2] = (char)v;
}

static bool stamped(const char *p, size_t size, uint64_t v)
{
	uint64_t a, b;
	memcpy(&a, p, sizeof(a));
	memcpy(&b, p + size - sizeof(b), sizeof(b));
	return a == v && b == v && p[size / 2] == (char)v;
}

TEST(mode)
{
	REQUIRE(pc_malloc_init());
	/* Per-CPU stacks exactly in rseq mode, started by the first medium
	 * miss or here (medium_start; malloc/medium_lazy tests the start). */
	CHECK_EQ(medium_start(), pc_sheaf_mode() == PC_SHEAF_MODE_RSEQ);
	CHECK_EQ(rseq_mode(), pc_sheaf_mode() == PC_SHEAF_MODE_RSEQ);
	/* The default ceiling is 8 MiB per CPU; thread mode keeps a quarter
	 * of it per thread, at most 512 KiB (128 pages). */
	CHECK_EQ(pc_option(PC_OPT_MALLOC_MEDIUM_CACHE_KB), 8192);
	if (!rseq_mode())
		CHECK_EQ(pc_load_relaxed(&pc_medium_thread_budget), 512 * KiB / PC_PAGE_SIZE);
	set_opt(PC_OPT_MALLOC_MEDIUM_CACHE_KB, 1024);
	if (!rseq_mode())
		CHECK_EQ(pc_load_relaxed(&pc_medium_thread_budget), 256 * KiB / PC_PAGE_SIZE);
	set_opt(PC_OPT_MALLOC_MEDIUM_CACHE_KB, 8192); /* the default, tested below */
}

TEST(reuse)
{
	REQUIRE(pin_cpu(0));
	pc_trim();
	CHECK_EQ(medium_cached_bytes(), 0);
	char *p = pc_malloc(16 * KiB);
	REQUIRE(p != NULL);
	stamp(p, 16 * KiB, 1);
	pc_free(p);
	if (!cache_on()) {
		CHECK_EQ(medium_cached_bytes(), 0);
		return;
	}
	CHECK_EQ(medium_cached_bytes(), 16 * KiB);
	char *r = pc_malloc(12 * KiB); /* another class: not that block */
	CHECK(r != p);
	char *q = pc_malloc(16 * KiB - 100);
	CHECK(q == p);
	CHECK_EQ(pc_malloc_usable_size(q), 16 * KiB);
	CHECK_EQ(medium_cached_bytes(), 0);
	pc_free(q);
	pc_free(r);
	CHECK_EQ(medium_cached_bytes(), 28 * KiB);
	pc_trim();
}

static int double_free_child(void)
{
	pin_cpu(0);
	char *p = pc_malloc(20 * KiB);
	if (!p)
		return 2;
	pc_free(p);
	if (medium_cached_bytes() != 20 * KiB)
		return 3;
	pc_free(p); /* fatal: p is cached, not allocated */
	return 0;
}

TEST(double_free)
{
	if (!cache_on())
		return;
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY); /* the fatal message */
		if (fd >= 0)
			dup2(fd, 2);
		_exit(double_free_child());
	}
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT); /* pc_fatal */
}

TEST(bounded)
{
	REQUIRE(pin_cpu(0));
	pc_trim();
	set_opt(PC_OPT_MALLOC_MEDIUM_CACHE_KB, 256);
	static char *b[100];
	const size_t sizes[2] = { 16 * KiB, 64 * KiB };
	for (int s = 0; s < 2; s++) {
		for (int i = 0; i < 100; i++)
			REQUIRE((b[i] = pc_malloc(sizes[s])) != NULL);
		for (int i = 0; i < 100; i++) {
			pc_free(b[i]);
			CHECK(medium_capacity_bytes(CPU0) <= 256 * KiB);
			CHECK(medium_cached_bytes() <= 256 * KiB);
		}
		if (rseq_mode()) /* the class got (almost) all of it */
			CHECK(medium_cached_bytes() >= 256 * KiB - sizes[s] - 16 * KiB);
	}
	set_opt(PC_OPT_MALLOC_MEDIUM_CACHE_KB, 8192);
	pc_trim();
}

TEST(trim_empties)
{
	REQUIRE(pin_cpu(0));
	static char *b[64];
	for (unsigned i = 0; i < 62; i++)
		REQUIRE((b[i] = pc_malloc((i + 3) * PC_PAGE_SIZE)) != NULL);
	for (unsigned i = 0; i < 62; i++)
		pc_free(b[i]);
	if (cache_on())
		CHECK(medium_cached_bytes() > 0);
	pc_trim();
	CHECK_EQ(medium_cached_bytes(), 0);
	CHECK_EQ(medium_capacity_bytes(CPU0), 0);
	CHECK(pc_page_check());
}

TEST(decay)
{
	REQUIRE(pin_cpu(0));
	/* No background pass between the two below (a stray environment). */
	set_opt(PC_OPT_VM_RELEASE_THREAD, 0);
	pc_trim();
	char *p = pc_malloc(40 * KiB), *q = pc_malloc(40 * KiB);
	REQUIRE(p && q);
	pc_free(p);
	medium_decay(); /* records CPU 0's counts */
	pc_free(q);     /* changes them */
	medium_decay(); /* so CPU 0 is kept */
	if (cache_on())
		CHECK_EQ(medium_cached_bytes(), 80 * KiB);
	/* Unchanged since: the release thread's pass (its hook) flushes it. */
	pc_page_release_thread_pass();
	CHECK_EQ(medium_cached_bytes(), 0);
}

/* A change of CPU 0's stacks that refuses nothing: two cached 16 KiB blocks
 * (or two misses) out, back in the other order (the top differs). */
static void touch_cpu0(void)
{
	char *p = pc_malloc(16 * KiB), *q = pc_malloc(16 * KiB);
	REQUIRE(p && q);
	pc_free(p);
	pc_free(q);
}

TEST(bound_follows_demand)
{
	if (!rseq_mode())
		return; /* thread mode keeps its fixed bound */
	REQUIRE(pin_cpu(0));
	set_opt(PC_OPT_VM_RELEASE_THREAD, 0);
	pc_trim();
	const size_t base = 256 * KiB;
	/* Starts small: 64 frees of 16 KiB keep 256 KiB, not 2 MiB. */
	CHECK_EQ(medium_bound_bytes(CPU0), base);
	/* No decay pass but those called below (a signal handler's depth
	 * stops the ticks' passes, whatever the clock says). */
	pc_medium_depth++;
	static char *b[64];
	for (int round = 0; round < 64; round++) {
		for (int i = 0; i < 64; i++)
			REQUIRE((b[i] = pc_malloc(16 * KiB)) != NULL);
		for (int i = 0; i < 64; i++) {
			pc_free(b[i]);
			CHECK(medium_cached_bytes() <= medium_bound_bytes(CPU0));
			CHECK(medium_capacity_bytes(CPU0) <= medium_bound_bytes(CPU0));
		}
		if (round == 0)
			CHECK_EQ(medium_cached_bytes(), base);
		if (medium_cached_bytes() == 64 * 16 * KiB)
			break;
	}
	/* Grows with demand: each miss after a refusal raised it by a page,
	 * until a round keeps all 64 blocks. */
	CHECK(medium_bound_bytes(CPU0) >= 64 * 16 * KiB);
	CHECK_EQ(medium_cached_bytes(), 64 * 16 * KiB);
	/* Decays when demand stops: a pass forgets the refusals, the next
	 * (nothing refused since) halves the raise and trims the CPU to its
	 * bound; the stacks change before each pass (not idle, no stale
	 * class), so what stays is the bound's worth of the top blocks, not
	 * nothing (a steady demand is not flushed whole). */
	touch_cpu0();
	medium_decay();
	size_t raised = medium_bound_bytes(CPU0);
	CHECK(raised > base);
	touch_cpu0();
	medium_decay();
	size_t halved = base + (raised - base) / 2 / PC_PAGE_SIZE * PC_PAGE_SIZE;
	CHECK_EQ(medium_bound_bytes(CPU0), halved);
	CHECK_EQ(medium_cached_bytes(), halved / (16 * KiB) * (16 * KiB));
	CHECK_EQ(medium_capacity_bytes(CPU0), medium_cached_bytes());
	for (int pass = 0; pass < 32; pass++) {
		touch_cpu0();
		medium_decay();
		CHECK(medium_cached_bytes() <= medium_bound_bytes(CPU0));
	}
	CHECK_EQ(medium_bound_bytes(CPU0), base);
	CHECK_EQ(medium_cached_bytes(), base);
	CHECK_EQ(medium_capacity_bytes(CPU0), base);
	/* Idle (unchanged since the previous pass): flushed whole, raise reset. */
	medium_decay();
	medium_decay();
	CHECK_EQ(medium_cached_bytes(), 0);
	CHECK_EQ(medium_bound_bytes(CPU0), base);
	pc_medium_depth--;
	pc_trim();
	CHECK_EQ(medium_cached_bytes(), 0);
}

TEST(ceiling_without_thread)
{
	if (!rseq_mode())
		return; /* thread mode keeps its fixed bound */
	REQUIRE(pin_cpu(0));
	set_opt(PC_OPT_VM_RELEASE_THREAD, 0);
	pc_trim();
	pc_medium_depth++; /* no tick's decay pass (as in bound_follows_demand) */
	static char *b[3 * PC_MEDIUM_STACK_MAX]; /* a stack holds 64 blocks: three classes */
	const size_t n = 3 * PC_MEDIUM_STACK_MAX;
	for (int round = 0; round < 64; round++) {
		for (size_t i = 0; i < n; i++)
			REQUIRE((b[i] = pc_malloc((16 + 4 * (i % 3)) * KiB)) != NULL);
		for (size_t i = 0; i < n; i++) {
			pc_free(b[i]);
			CHECK(medium_cached_bytes() <= 2 * MiB);
			CHECK(medium_bound_bytes(CPU0) <= 2 * MiB);
		}
	}
	CHECK_EQ(medium_bound_bytes(CPU0), 2 * MiB); /* the demand took it to the cap */
	CHECK(medium_cached_bytes() > 1 * MiB);
	/* vm.release_thread=1 counts as the thread's passes at once (no malloc
	 * here: the thread itself would start only at the next slow path). */
	set_opt(PC_OPT_VM_RELEASE_THREAD, 1);
	CHECK(medium_bound_bytes(CPU0) > 2 * MiB);
	set_opt(PC_OPT_VM_RELEASE_THREAD, 0);
	CHECK_EQ(medium_bound_bytes(CPU0), 2 * MiB);
	pc_medium_depth--;
	pc_trim();
	CHECK_EQ(medium_cached_bytes(), 0);
}

/* Rounds of n mallocs of `size`, then n frees, until all n stay cached on
 * CPU 0 (each miss after a refusal raises its bound by a page). */
static void cache_n(size_t size, int n)
{
	static char *blk[64];
	for (int round = 0; round < 256 && medium_cached_bytes() != (size_t)n * size; round++) {
		for (int i = 0; i < n; i++)
			REQUIRE((blk[i] = pc_malloc(size)) != NULL);
		for (int i = 0; i < n; i++)
			pc_free(blk[i]);
	}
	REQUIRE(medium_cached_bytes() == (size_t)n * size);
}

/* 40 decay passes, each after 100 rounds of two blocks of size allocated
 * and freed; one more block of size held every other pass, so that the
 * class's count changes at each pass and the CPU is never idle (a loop
 * that leaves its stack as it found it looks idle and is flushed whole).
 * never_flushed: check after each pass that something is still cached. */
static void steady_passes(size_t size, bool never_flushed)
{
	char *held = NULL;
	for (int pass = 0; pass < 40; pass++) {
		for (int i = 0; i < 100; i++) {
			char *x = pc_malloc(size), *y = pc_malloc(size);
			REQUIRE(x && y);
			pc_free(y);
			pc_free(x);
		}
		if (held) {
			pc_free(held);
			held = NULL;
		} else {
			REQUIRE((held = pc_malloc(size)) != NULL);
		}
		medium_decay();
		if (never_flushed)
			CHECK(medium_cached_bytes() > 0);
	}
	if (held)
		pc_free(held);
}

/* Review of mixedrss, repro A: a burst caches 64 blocks of a class, then the
 * demand drops to 2-3 blocks of the same class. The class changes at every
 * pass (never stale), yet the bottom blocks nobody uses go back. */
TEST(demand_drops)
{
	if (!rseq_mode())
		return;
	REQUIRE(pin_cpu(0));
	set_opt(PC_OPT_VM_RELEASE_THREAD, 0);
	pc_trim();
	pc_medium_depth++; /* only the passes called below */
	cache_n(16 * KiB, 64);
	steady_passes(16 * KiB, false);
	CHECK_EQ(medium_bound_bytes(CPU0), 256 * KiB);
	CHECK(medium_cached_bytes() <= medium_bound_bytes(CPU0));
	CHECK(medium_capacity_bytes(CPU0) <= medium_bound_bytes(CPU0));
	pc_medium_depth--;
	pc_trim();
}

/* Repro B: a class the program stops using while a steady loop of another
 * class runs within its capacity: the stale class goes back whole. */
TEST(stale_class)
{
	if (!rseq_mode())
		return;
	REQUIRE(pin_cpu(0));
	set_opt(PC_OPT_VM_RELEASE_THREAD, 0);
	pc_trim();
	pc_medium_depth++;
	cache_n(16 * KiB, 56);
	steady_passes(20 * KiB, true);
	CHECK(medium_cached_bytes() <= medium_bound_bytes(CPU0));
	/* Only the loop's 20 KiB blocks: the 56 x 16 KiB went back whole (a
	 * trim by size alone would have kept a bound's worth of them). */
	CHECK(medium_cached_bytes() <= 4 * 20 * KiB);
	CHECK(medium_cached_bytes() % (20 * KiB) == 0);
	pc_medium_depth--;
	pc_trim();
}

/* Medium mallocs the cache cannot serve: each is a tick of the decay. */
static void miss_ticks(char **keep, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		REQUIRE((keep[i] = pc_malloc(12 * KiB)) != NULL); /* none cached */
}

TEST(decay_ticks)
{
	REQUIRE(pin_cpu(0));
	set_opt(PC_OPT_VM_RELEASE_THREAD, 0);
	pc_trim();
	static char *keep[4][16];
	const uint64_t delay = (uint64_t)pc_option(PC_OPT_VM_RELEASE_DELAY_MS) * 1000000u;
	char *p = pc_malloc(40 * KiB);
	REQUIRE(p != NULL);
	pc_free(p);
	if (!cache_on())
		return;
	CHECK_EQ(medium_cached_bytes(), 40 * KiB);
	/* A thread that holds a medium lock (a signal handler interrupted it)
	 * runs no pass, however many ticks are due. */
	pc_medium_depth++;
	for (int round = 0; round < 2; round++) {
		pc_page_clock_advance(2 * delay + 1000000u);
		for (int i = 0; i < 16; i++)
			medium_decay_tick();
	}
	pc_medium_depth--;
	CHECK_EQ(medium_cached_bytes(), 40 * KiB);
	/* Two passes (one per 16 ticks, each past the due time): the first
	 * notes CPU 0's stacks, the second finds them unchanged. */
	for (int round = 0; round < 2; round++) {
		pc_page_clock_advance(2 * delay + 1000000u);
		miss_ticks(keep[round], 16);
	}
	CHECK_EQ(medium_cached_bytes(), 0);
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 16; i++)
			pc_free(keep[round][i]);
	pc_trim();
}

/* In a child (a limit on address space). Nonzero: the step that failed. */
static int reentered_child(void)
{
	if (!pin_cpu(0))
		return 2;
	char *p = pc_malloc(64 * KiB);
	if (!p)
		return 3;
	pc_free(p);
	size_t cached = medium_cached_bytes();
	if (cached != 64 * KiB)
		return 4;
	struct rlimit rl = { mapped_bytes() + MiB, 0 };
	rl.rlim_max = rl.rlim_cur;
	if (setrlimit(RLIMIT_AS, &rl) != 0)
		return 5;
	pc_medium_depth++; /* as if a handler interrupted grow() or a flush */
	void *q = pc_malloc(64 * MiB);
	pc_medium_depth--;
	if (q != NULL || errno != ENOMEM)
		return 6;
	if (medium_cached_bytes() != cached)
		return 7; /* flushed: it would have taken the lock its thread holds */
	q = pc_malloc(64 * MiB); /* not re-entered: the retry flushes */
	if (q != NULL || medium_cached_bytes() != 0)
		return 8;
	return 0;
}

TEST(reentered_no_reclaim)
{
#if defined(__SANITIZE_THREAD__)
	return; /* as oom_flushes */
#endif
	if (cache_on())
		check_in_child(reentered_child);
}

/* ---- threads ---------------------------------------------------------------- */

struct worker {
	pthread_t t;
	unsigned id, rounds;
	bool migrate;
	_Atomic bool *stop;
	long bad;
};

static size_t worker_size(uint64_t *rng)
{
	size_t pages = 3 + test_rand(rng) % 62;
	return pages * PC_PAGE_SIZE - test_rand(rng) % 4000;
}

/* Keep up to 8 blocks, freeing and allocating at random, every block
 * checked before it is freed; with migrate, move to another CPU every few
 * blocks (sched_setaffinity), so blocks are freed on other CPUs than the
 * one they came from. Runs `rounds` steps, or until *stop when rounds is 0. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = 0x9e3779b97f4a7c15ULL * (w->id + 1);
	char *live[8] = { 0 };
	size_t size[8] = { 0 };
	unsigned ncpu = test_cpus(); /* the CPUs the process may run on */
	for (unsigned i = 0; w->rounds ? i < w->rounds : !pc_load_relaxed(w->stop); i++) {
		unsigned j = (unsigned)(test_rand(&rng) % 8);
		uint64_t v = ((uint64_t)w->id << 32) | j;
		if (live[j]) {
			if (!stamped(live[j], size[j], v))
				w->bad++;
			pc_free(live[j]);
		}
		size[j] = worker_size(&rng);
		live[j] = pc_malloc(size[j]);
		if (!live[j]) {
			w->bad++;
			break;
		}
		stamp(live[j], size[j], v);
		if (w->migrate && i % 5 == 0) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET(test_cpu((w->id + i / 5) % ncpu), &set);
			sched_setaffinity(0, sizeof(set), &set);
		}
	}
	for (unsigned j = 0; j < 8; j++) {
		if (live[j] && !stamped(live[j], size[j], ((uint64_t)w->id << 32) | j))
			w->bad++;
		pc_free(live[j]);
	}
	return NULL;
}

static long run_workers(struct worker *w, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		REQUIRE(pthread_create(&w[i].t, NULL, worker_main, &w[i]) == 0);
	long bad = 0;
	for (unsigned i = 0; i < n; i++) {
		REQUIRE(pthread_join(w[i].t, NULL) == 0);
		bad += w[i].bad;
	}
	return bad;
}

static size_t bound_all_cpus(void)
{
	size_t most = 0;
	for (unsigned c = 0; c < os_cpu_count(); c++)
		most = PC_MAX(most, medium_capacity_bytes(c));
	return most;
}

TEST(threads_migrate)
{
	unpin_cpus();
	static struct worker w[32];
	unsigned n = scaled(32, 4);
	for (unsigned i = 0; i < n; i++)
		w[i] = (struct worker){ .id = i, .rounds = scaled(3000, 10), .migrate = true };
	CHECK_EQ(run_workers(w, n), 0);
	CHECK(bound_all_cpus() <= (size_t)pc_option(PC_OPT_MALLOC_MEDIUM_CACHE_KB) * KiB);
	pc_trim();
	CHECK_EQ(medium_cached_bytes(), 0);
	CHECK(pc_page_check());
}

TEST(tunable_live)
{
	unpin_cpus();
	static struct worker w[8];
	static _Atomic bool stop;
	pc_store_relaxed(&stop, false);
	for (unsigned i = 0; i < 8; i++)
		w[i] = (struct worker){ .id = 100 + i, .stop = &stop, .migrate = i % 2 };
	for (unsigned i = 0; i < 8; i++)
		REQUIRE(pthread_create(&w[i].t, NULL, worker_main, &w[i]) == 0);
	for (int round = 0; round < 3; round++) {
		set_opt(PC_OPT_MALLOC_MEDIUM_CACHE_KB, 0);
		/* Empty at once, and stays so while the workers run. */
		for (int i = 0; i < 200; i++) {
			CHECK_EQ(medium_cached_bytes(), 0);
			CHECK_EQ(bound_all_cpus(), 0);
			sched_yield();
		}
		set_opt(PC_OPT_MALLOC_MEDIUM_CACHE_KB, 128);
		for (int i = 0; i < 200; i++) {
			CHECK(bound_all_cpus() <= 128 * KiB);
			sched_yield();
		}
		set_opt(PC_OPT_MALLOC_MEDIUM_CACHE_KB, 8192);
	}
	pc_store_relaxed(&stop, true);
	long bad = 0;
	for (unsigned i = 0; i < 8; i++) {
		REQUIRE(pthread_join(w[i].t, NULL) == 0);
		bad += w[i].bad;
	}
	CHECK_EQ(bad, 0);
	pc_trim();
	CHECK_EQ(medium_cached_bytes(), 0);
}

/* In a child of a fork taken while workers ran: every size, contents,
 * trim, the page allocator's invariants. Nonzero: the step that failed. */
static int fork_child(void)
{
	static char *b[62];
	for (unsigned i = 0; i < 62; i++) {
		size_t size = (i + 3) * PC_PAGE_SIZE;
		if (!(b[i] = pc_malloc(size)))
			return 2;
		stamp(b[i], size, i);
	}
	for (unsigned i = 0; i < 62; i++) {
		if (!stamped(b[i], (i + 3) * PC_PAGE_SIZE, i))
			return 3;
		pc_free(b[i]);
	}
	for (unsigned i = 0; i < 62; i++) /* again, from the cache */
		if (!(b[i] = pc_malloc((i + 3) * PC_PAGE_SIZE)))
			return 4;
	for (unsigned i = 0; i < 62; i++)
		pc_free(b[i]);
	pc_trim();
	if (medium_cached_bytes() != 0)
		return 5;
	return pc_page_check() ? 0 : 6;
}

TEST(fork_during)
{
	unpin_cpus();
	static struct worker w[6];
	static _Atomic bool stop;
	pc_store_relaxed(&stop, false);
	for (unsigned i = 0; i < 6; i++)
		w[i] = (struct worker){ .id = 200 + i, .stop = &stop, .migrate = true };
	for (unsigned i = 0; i < 6; i++)
		REQUIRE(pthread_create(&w[i].t, NULL, worker_main, &w[i]) == 0);
	for (unsigned i = 0; i < scaled(20, 4); i++) {
		check_in_child(fork_child);
		/* A decay pass and a flush beside the workers, in the parent too. */
		medium_decay();
		if (i % 4 == 0)
			medium_flush();
	}
	pc_store_relaxed(&stop, true);
	long bad = 0;
	for (unsigned i = 0; i < 6; i++) {
		REQUIRE(pthread_join(w[i].t, NULL) == 0);
		bad += w[i].bad;
	}
	CHECK_EQ(bad, 0);
}

TEST(thread_churn)
{
	unpin_cpus();
	pc_trim();
	for (unsigned round = 0; round < scaled(50, 5); round++) {
		struct worker w[4];
		for (unsigned i = 0; i < 4; i++)
			w[i] = (struct worker){ .id = 300 + round * 4 + i, .rounds = 50 };
		CHECK_EQ(run_workers(w, 4), 0);
	}
	CHECK(bound_all_cpus() <= (size_t)pc_option(PC_OPT_MALLOC_MEDIUM_CACHE_KB) * KiB);
	if (!rseq_mode()) /* every thread gave its array back at exit */
		CHECK_EQ(medium_cached_bytes(), 0);
	pc_trim();
	CHECK_EQ(medium_cached_bytes(), 0);
	CHECK(pc_page_check());
}

/* Thread mode: a flush that runs in a signal handler which interrupted its
 * own thread's fast path (forced here: busy set by hand, then a flush from
 * the same thread) leaves that thread's array alone. */
TEST(self_busy_kept)
{
	if (rseq_mode() || !cache_on())
		return; /* rseq: the handler's signal aborts the section */
	pc_trim();
	char *p = pc_malloc(16 * KiB);
	REQUIRE(p != NULL);
	pc_free(p);
	struct medium_thread *t = pc_medium_self;
	REQUIRE(t != NULL);
	pc_store_relaxed(&t->busy, 1);
	medium_flush();
	CHECK_EQ(medium_cached_bytes(), 16 * KiB);
	pc_store_release(&t->busy, 0);
	medium_flush();
	CHECK_EQ(medium_cached_bytes(), 0);
}

/* A medium block freed by a thread-specific-data destructor in every
 * round glibc runs (PTHREAD_DESTRUCTOR_ITERATIONS, 4): each round frees one
 * and sets a new one, so the last frees come after the allocator's
 * thread-exit handler has run for the last time. */
static pthread_key_t late_key;
static __thread int late_rounds;

static void late_free(void *p)
{
	pc_free(p);
	if (++late_rounds < 4) {
		void *q = pc_malloc(16 * KiB);
		if (q)
			pthread_setspecific(late_key, q);
	}
}

static void *late_thread(void *arg)
{
	(void)arg;
	char *p = pc_malloc(16 * KiB), *q = pc_malloc(16 * KiB);
	if (p && q) {
		pc_free(q); /* the thread keeps a record */
		pthread_setspecific(late_key, p);
	}
	return NULL;
}

TEST(free_after_exit)
{
	unpin_cpus();
	pc_trim();
	REQUIRE(pthread_key_create(&late_key, late_free) == 0);
	for (int i = 0; i < 20; i++) {
		pthread_t t;
		REQUIRE(pthread_create(&t, NULL, late_thread, NULL) == 0);
		REQUIRE(pthread_join(t, NULL) == 0);
	}
	if (!rseq_mode()) /* no record came back for the late frees */
		CHECK_EQ(medium_cached_bytes(), 0);
	pc_trim();
	CHECK_EQ(medium_cached_bytes(), 0);
	pthread_key_delete(late_key);
}

/* ---- out of memory ------------------------------------------------------------ */

static void *small_blocks[1 << 16];

/* In a child: it sets a limit on address space. Nonzero: the step that failed. */
static int oom_child(void)
{
	if (!pin_cpu(0))
		return 2;
	set_opt(PC_OPT_MALLOC_MEDIUM_CACHE_KB, 64 * 1024);
	set_opt(PC_OPT_VM_RELEASE_THREAD, 0); /* no thread's decay meanwhile */
	static char *big[64];
	/* Rounds until the bound has grown to hold 8 of them, its most
	 * without the release thread (rseq: each miss after a refusal raises
	 * it by a page; thread mode: 8 a class at most). */
	for (int round = 0; round < 200; round++) {
		for (int i = 0; i < 64; i++)
			if (!(big[i] = pc_malloc(256 * KiB)))
				return 3;
		for (int i = 0; i < 64; i++)
			pc_free(big[i]);
		if (!rseq_mode() || medium_cached_bytes() >= 2 * MiB)
			break;
	}
	bool on = cache_on();
	/* At least 8 on CPU 0's stack; in a thread's array 8 (the most per
	 * class) or what its budget holds (512 KiB at most: 2). */
	size_t per_thread = PC_MIN(8 * 256 * KiB, (size_t)pc_load_relaxed(&pc_medium_thread_budget) * PC_PAGE_SIZE);
	per_thread -= per_thread % (256 * KiB);
	if (rseq_mode() ? medium_cached_bytes() < 2 * MiB : medium_cached_bytes() != (on ? per_thread : 0))
		return 4;
	struct rlimit rl = { mapped_bytes() + MiB, 0 };
	rl.rlim_max = rl.rlim_cur;
	if (setrlimit(RLIMIT_AS, &rl) != 0)
		return 5;
	size_t n = 0;
	while (n < (1 << 16) && (small_blocks[n] = pc_malloc(12 * KiB)) != NULL)
		n++;
	if (n == (1 << 16))
		return 6; /* never failed: the limit did not hold */
	if (medium_cached_bytes() != 0)
		return 7; /* failed with blocks still cached */
	/* The cached pages were used before malloc gave up. */
	bool reused = !on;
	for (size_t i = 0; i < n && !reused; i++)
		for (int j = 0; j < 64 && !reused; j++)
			reused = (char *)small_blocks[i] >= big[j] && (char *)small_blocks[i] < big[j] + 256 * KiB;
	if (!reused)
		return 8;
	for (size_t i = 0; i < n; i++)
		pc_free(small_blocks[i]);
	char *p = pc_malloc(256 * KiB), *q = pc_malloc(16 * KiB);
	return p && q ? 0 : 9;
}

TEST(oom_flushes)
{
#if defined(__SANITIZE_THREAD__)
	/* ThreadSanitizer maps its own memory as it goes, which a limit on
	 * address space refuses; its builds run the fallback, where the cache
	 * is off anyway. */
	return;
#endif
	check_in_child(oom_child);
}

int main(void)
{
	RUN(mode);
	RUN(reuse);
	RUN(double_free);
	RUN(bounded);
	RUN(trim_empties);
	RUN(decay);
	RUN(threads_migrate);
	RUN(decay_ticks);
	RUN(bound_follows_demand);
	RUN(ceiling_without_thread);
	RUN(demand_drops);
	RUN(stale_class);
	RUN(reentered_no_reclaim);
	RUN(tunable_live);
	RUN(fork_during);
	RUN(thread_churn);
	RUN(self_busy_kept);
	RUN(free_after_exit);
	RUN(oom_flushes);
	return test_report();
}
