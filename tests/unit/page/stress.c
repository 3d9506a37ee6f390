/*
 * tests/unit/page/stress.c - many threads (16, 32, 64 on a 2-core machine:
 * oversubscribed, so lock holders get preempted) allocating and freeing
 * pages of random orders, with content checks, handing blocks to each other
 * through a shared array of atomic slots (exchange), so that a block is often
 * freed by another thread, on another CPU, than the one that allocated it.
 *
 * Every block is filled completely with a byte derived from the thread that
 * allocated it and its address, and checked completely when freed: a block
 * handed out twice, or memory released to the OS while live, shows up.
 * One round runs while another thread flips vm.pcp_batch_scale_max between 0
 * and 6 and vm.pcp_high between 0 and 4096; during another the main thread
 * runs pc_page_check() again and again (it takes every lock, so the workers'
 * pcp try-locks fail and they go to the zones).
 *
 * At the end of each round everything is freed and drained: pc_page_check()
 * holds and every zone has coalesced back into whole top-order blocks.
 * Per-thread seeds are fixed and every round does a fixed number of
 * operations (ROUND_OPS, or PC_STRESS_OPS), split over its threads: a round
 * ends when its work is done, never after a time, so no verdict depends on
 * how fast the machine or the scheduler is. In particular hand-offs are
 * certain: were no block ever taken from a slot, every thread would run as
 * if alone (its choices depend only on its seed and on what it takes), and
 * the threads' own puts into slots, computable from the seeds, far exceed
 * the NSLOTS slots; so some put block must be taken. The option flipper
 * flips once before the workers start, and keeps flipping until they end.
 * Workers record failures in atomics; only the main thread calls CHECK.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_THREAD__)
#define STRESS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STRESS_TSAN 1
#endif
#endif
#ifndef STRESS_TSAN
#define STRESS_TSAN 0
#endif

#if STRESS_TSAN
#define ROUND_OPS 200000ul /* operations per round, all threads */
#define TOP_ORDER_PERMILLE 2 /* big blocks are slow to fill under TSan */
#else
#define ROUND_OPS 1000000ul
#define TOP_ORDER_PERMILLE 10
#endif

#define MAX_THREADS 64
#define LOCAL_MAX   32   /* blocks a thread holds at most */
#define NSLOTS      256  /* shared exchange slots */
#define TID_BITS    7
#define ORDER_BITS  4

/* A block in flight: page-aligned address | owner tid << 4 | order. */
typedef uintptr_t blockref;
static blockref ref_make(void *p, unsigned tid, unsigned order)
{
	return (uintptr_t)p | (uintptr_t)tid << ORDER_BITS | order;
}
static char *ref_ptr(blockref r) { return (char *)(r & ~(PC_PAGE_SIZE - 1)); }
static unsigned ref_order(blockref r) { return (unsigned)(r & ((1u << ORDER_BITS) - 1)); }
static unsigned ref_tid(blockref r) { return (unsigned)((r >> ORDER_BITS) & ((1u << TID_BITS) - 1)); }

static uint8_t fill_byte(unsigned tid, const void *p)
{
	uint8_t b = (uint8_t)(tid * 37u + (unsigned)((uintptr_t)p >> PC_PAGE_SHIFT) * 11u + 1u);
	return b ? b : 0xa5; /* never 0: a page released to the OS reads 0 */
}

static _Atomic blockref slots[NSLOTS];
static _Atomic int stop, go;
static _Atomic unsigned long bad_content, null_allocs, bad_align, bad_state, total_ops, handoffs;
static _Atomic unsigned finished;

/* Whole-block check, 8 bytes at a time. */
static bool block_ok(blockref r)
{
	char *p = ref_ptr(r);
	size_t n = PC_PAGE_SIZE << ref_order(r);
	uint64_t want = 0x0101010101010101ULL * fill_byte(ref_tid(r), p);
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v;
		memcpy(&v, p + i, 8);
		if (v != want)
			return false;
	}
	return true;
}

static void release_block(blockref r)
{
	if (!block_ok(r))
		atomic_fetch_add(&bad_content, 1);
	pc_free_pages(ref_ptr(r), ref_order(r));
}

/* Orders 0..3 (the pcp path) most of the time, 4..6 sometimes, up to 10 rarely. */
static unsigned pick_order(uint64_t *s)
{
	unsigned r = (unsigned)(test_rand(s) % 1000);
	if (r < TOP_ORDER_PERMILLE)
		return 7 + (unsigned)(test_rand(s) % 4);
	if (r < 100)
		return 4 + (unsigned)(test_rand(s) % 3);
	return (unsigned)(test_rand(s) % 4);
}

struct worker {
	pthread_t thread;
	unsigned tid;
	uint64_t seed;
	unsigned long ops; /* to do */
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	blockref local[LOCAL_MAX];
	int nlocal = 0;
	uint64_t s = w->seed;
	unsigned long ops = 0;

	while (!atomic_load(&go))
		sched_yield();
	while (ops < w->ops) {
		unsigned r = (unsigned)(test_rand(&s) % 100);
		ops++;
		if (r < 45 && nlocal < LOCAL_MAX) {
			unsigned order = pick_order(&s);
			char *p = pc_alloc_pages(order);
			if (!p) {
				atomic_fetch_add(&null_allocs, 1);
				continue;
			}
			if ((uintptr_t)p & ((PC_PAGE_SIZE << order) - 1))
				atomic_fetch_add(&bad_align, 1);
			struct pc_page *pg = pc_page_of(p);
			if (!pg || pg->order != order)
				atomic_fetch_add(&bad_state, 1);
			memset(p, fill_byte(w->tid, p), PC_PAGE_SIZE << order);
			local[nlocal++] = ref_make(p, w->tid, order);
		} else if (r < 85 && nlocal > 0) {
			int k = (int)(test_rand(&s) % (uint64_t)nlocal);
			blockref b = local[k];
			local[k] = local[--nlocal];
			release_block(b);
		} else {
			/* Swap one of ours (or nothing) with a random slot. */
			blockref mine = 0;
			if (nlocal > 0 && (test_rand(&s) & 1)) {
				int k = (int)(test_rand(&s) % (uint64_t)nlocal);
				mine = local[k];
				local[k] = local[--nlocal];
			}
			/* seq_cst exchange: the filler's writes happen before our checks. */
			blockref got = atomic_exchange(&slots[test_rand(&s) % NSLOTS], mine);
			if (got) {
				atomic_fetch_add_explicit(&handoffs, 1, memory_order_relaxed);
				if (nlocal < LOCAL_MAX)
					local[nlocal++] = got;
				else
					release_block(got);
			}
		}
	}
	while (nlocal > 0)
		release_block(local[--nlocal]);
	atomic_fetch_add(&total_ops, ops);
	atomic_fetch_add(&finished, 1);
	return NULL;
}

/* Flips the batch scale cap and the pcp high mark while the workers run. */
static _Atomic unsigned long flips, flip_errors, flips_done;
static void *flipper_main(void *arg)
{
	(void)arg;
	unsigned long n = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (pc_option_set(PC_OPT_VM_PCP_BATCH_SCALE_MAX, (n & 1) ? 6 : 0, false) != 0)
			atomic_fetch_add(&flip_errors, 1);
		if (pc_option_set(PC_OPT_VM_PCP_HIGH, (n & 2) ? 4096 : 0, false) != 0)
			atomic_fetch_add(&flip_errors, 1);
		n++;
		atomic_store(&flips_done, n);
		if ((n & 15) == 0)
			sched_yield();
	}
	atomic_store(&flips, n);
	return NULL;
}

static unsigned long round_ops(void)
{
	const char *e = getenv("PC_STRESS_OPS");
	unsigned long n = e ? strtoul(e, NULL, 10) : 0;
	return n > 0 ? n : ROUND_OPS;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum { ROUND_PLAIN, ROUND_FLIP, ROUND_CHECKER };

static void round_run(unsigned nthreads, uint64_t seed, int mode)
{
	static struct worker w[MAX_THREADS];
	pthread_t flipper;
	atomic_store(&stop, 0);
	atomic_store(&go, 0);
	atomic_store(&bad_content, 0);
	atomic_store(&null_allocs, 0);
	atomic_store(&bad_align, 0);
	atomic_store(&bad_state, 0);
	atomic_store(&total_ops, 0);
	atomic_store(&handoffs, 0);
	atomic_store(&finished, 0);
	atomic_store(&flips, 0);
	atomic_store(&flips_done, 0);
	atomic_store(&flip_errors, 0);

	double t0 = now_s();
	unsigned long per_thread = round_ops() / nthreads;
	for (unsigned i = 0; i < nthreads; i++) {
		w[i].tid = i;
		w[i].seed = (seed + i) * 0x9E3779B97F4A7C15ULL | 1;
		w[i].ops = per_thread;
		REQUIRE(pthread_create(&w[i].thread, NULL, worker_main, &w[i]) == 0);
	}
	if (mode == ROUND_FLIP) {
		REQUIRE(pthread_create(&flipper, NULL, flipper_main, NULL) == 0);
		while (atomic_load(&flips_done) == 0) /* certain: it flips first */
			sched_yield();
	}
	atomic_store(&go, 1);

	/* The checker runs until the workers are done (at least once). */
	unsigned checks = 0, check_failures = 0;
	do {
		if (mode == ROUND_CHECKER) {
			checks++;
			check_failures += !pc_page_check();
		}
		usleep(mode == ROUND_CHECKER ? 20000 : 50000);
	} while (atomic_load(&finished) < nthreads);
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(w[i].thread, NULL);
	atomic_store(&stop, 1);
	if (mode == ROUND_FLIP) {
		pthread_join(flipper, NULL);
		CHECK(atomic_load(&flips) > 0);
		CHECK_EQ(atomic_load(&flip_errors), 0);
		REQUIRE(pc_option_set(PC_OPT_VM_PCP_BATCH_SCALE_MAX, 5, false) == 0);
		REQUIRE(pc_option_set(PC_OPT_VM_PCP_HIGH, 2048, false) == 0);
	}
	if (mode == ROUND_CHECKER) {
		CHECK(checks > 0);
		CHECK_EQ(check_failures, 0);
	}

	/* Blocks still parked in the slots. */
	for (unsigned i = 0; i < NSLOTS; i++) {
		blockref b = atomic_exchange(&slots[i], 0);
		if (b)
			release_block(b);
	}
	CHECK_EQ(atomic_load(&bad_content), 0);
	CHECK_EQ(atomic_load(&null_allocs), 0);
	CHECK_EQ(atomic_load(&bad_align), 0);
	CHECK_EQ(atomic_load(&bad_state), 0);
	CHECK_EQ(atomic_load(&total_ops), nthreads * per_thread);
	CHECK(atomic_load(&handoffs) > 0);
	fprintf(stderr, "  %u threads: %lu ops, %lu hand-offs, %.1f s\n", nthreads,
		atomic_load(&total_ops), atomic_load(&handoffs), now_s() - t0);

	pc_page_drain_all();
	check_coalesced_locked(false);
}

TEST(threads_16) { round_run(16, 1000, ROUND_PLAIN); }
TEST(threads_32_stats_checker)
{
	REQUIRE(pc_option_set(PC_OPT_STATS_ENABLE, 1, false) == 0);
	round_run(32, 2000, ROUND_CHECKER);
	REQUIRE(pc_option_set(PC_OPT_STATS_ENABLE, 0, false) == 0);
}
TEST(threads_64) { round_run(64, 3000, ROUND_PLAIN); }
TEST(threads_32_flipping_options) { round_run(32, 4000, ROUND_FLIP); }

int main(void)
{
	pc_page_init();
	RUN(threads_16);
	RUN(threads_32_stats_checker);
	RUN(threads_64);
	RUN(threads_32_flipping_options);
	return test_report();
}
