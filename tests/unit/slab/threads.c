/*
 * tests/unit/slab/threads.c - many threads on few CPUs: remote frees, CPU
 * structures shared by threads that migrate, and a concurrent shrink.
 *
 * PC_TEST_LABELS: tsan
 *
 * Phase 1, producer/consumer (16, 32 and 64 threads): producers pinned to one
 * CPU allocate objects, stamp them (address, sequence number, CPU) and fill
 * them with a pattern, and publish them in a shared slot array (compare-and-
 * swap from NULL); consumers pinned to the other CPU take them (exchange to
 * NULL), check the stamp and pattern and free them: every free is a free of
 * an object of another CPU's slab. The next round swaps the CPUs.
 * Phase 2, mixed: every thread, unpinned, allocates and frees at random and
 * hands half of what it frees to others through the slots (they check it and
 * free it or keep it for a while); one thread also shrinks the caches and
 * reads their info while the others run.
 * Phase 3, forced: each cross-CPU path made certain (see forced_cross_cpu_paths).
 * After each phase (threads joined): every object freed, pc_cache_check()
 * returns 0, a shrink leaves at most nodes x min_partial slabs (all empty
 * slabs went back), and pc_page_check() holds.
 *
 * Worker threads never CHECK (the harness counters are not thread-safe):
 * they count errors in atomics that the main thread checks after the join.
 */
#define _GNU_SOURCE
#include "slab/slab.h"
#include "test.h"

#include <pthread.h>
#include <sched.h>

#if defined(__SANITIZE_THREAD__)
#define SCALE 12 /* ThreadSanitizer: ~10x slower, fewer operations */
#else
#define SCALE 1
#endif

#define NCACHES    3
#define NSLOTS     512
#define PC_ITEMS   (1000000 / SCALE) /* objects through the slots per round */
#define MIX_OPS    (5000000 / SCALE) /* operations per round, all threads */
#define LOCAL_MAX  64
#define MAX_THREADS 64

static const size_t cache_sizes[NCACHES] = { 48, 1000, 9000 };
static struct pc_cache *caches[NCACHES];

static void *_Atomic slots[NSLOTS];
static _Atomic unsigned long errors_stamp, errors_pattern, errors_cache, errors_alloc;
static _Atomic unsigned long remote_frees, consumed, produced, pin_refused;
static _Atomic long live; /* objects allocated and not yet freed */

/* What a stamped object starts with; the rest is pattern. */
struct stamp {
	uint64_t tag; /* address hash: a wrong or stale object shows */
	uint64_t seq;
	uint32_t cpu; /* CPU at allocation */
	uint32_t cache;
};

static uint64_t tag_of(const void *p, uint64_t seq)
{
	uint64_t x = (uintptr_t)p * 0x9E3779B97F4A7C15ULL ^ seq * 0xD6E8FEB86659FD93ULL;
	return x ^ (x >> 31);
}

/* Pattern: every byte for the small caches; every 64th word plus the last
 * word for the big one (it is 9000 bytes; the stamp is checked fully). */
static void stamp_fill(void *p, unsigned cache, uint64_t seq)
{
	struct stamp *st = p;
	size_t size = cache_sizes[cache];
	st->tag = tag_of(p, seq);
	st->seq = seq;
	st->cpu = os_cpu_current();
	st->cache = cache;
	uint64_t *w = p;
	size_t nw = size / 8, step = size > 2048 ? 64 : 1;
	for (size_t i = sizeof(*st) / 8; i < nw; i += step)
		w[i] = st->tag + i;
	w[nw - 1] = st->tag + nw - 1;
}

/* Check an object received from anywhere; false if it is damaged. */
static bool stamp_ok(void *p, unsigned cache)
{
	struct stamp *st = p;
	if (st->cache != cache || st->tag != tag_of(p, st->seq)) {
		pc_add_relaxed(&errors_stamp, 1);
		return false;
	}
	size_t size = cache_sizes[cache];
	const uint64_t *w = p;
	size_t nw = size / 8, step = size > 2048 ? 64 : 1;
	for (size_t i = sizeof(*st) / 8; i < nw; i += step)
		if (w[i] != st->tag + i) {
			pc_add_relaxed(&errors_pattern, 1);
			return false;
		}
	if (w[nw - 1] != st->tag + nw - 1) {
		pc_add_relaxed(&errors_pattern, 1);
		return false;
	}
	if (pc_slab_cache_of(p) != caches[cache]) {
		pc_add_relaxed(&errors_cache, 1);
		return false;
	}
	return true;
}

static void *obj_alloc(unsigned cache, uint64_t seq)
{
	void *p = pc_cache_alloc(caches[cache]);
	if (!p) {
		pc_add_relaxed(&errors_alloc, 1);
		return NULL;
	}
	pc_add_relaxed(&live, 1);
	stamp_fill(p, cache, seq);
	return p;
}

static void obj_free(void *p)
{
	struct stamp *st = p;
	unsigned cache = st->cache;
	if (stamp_ok(p, cache)) {
		if (st->cpu != os_cpu_current())
			pc_add_relaxed(&remote_frees, 1);
		st->tag = ~st->tag; /* a second free or a stale use would show */
		pc_cache_free(caches[cache], p);
		pc_add_relaxed(&live, -1);
	}
	/* a damaged object is leaked: freeing it could crash the run */
}

static bool pin_cpu(unsigned cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu % os_cpu_count(), &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

/* ---- phase 1: producers and consumers ------------------------------------------ */
struct pc_arg {
	unsigned id, cpu;
	bool producer;
	unsigned long quota; /* producers: objects to make */
	uint64_t rng;
};

/* Publish p in a free slot; yields while every slot is full. */
static void slot_put(void *p, uint64_t *rng)
{
	unsigned start = (unsigned)(test_rand(rng) % NSLOTS);
	for (;;) {
		for (unsigned k = 0; k < NSLOTS; k++) {
			void *_Atomic *slot = &slots[(start + k) % NSLOTS];
			void *expected = NULL;
			/* acq_rel: the stamp and pattern written before are
			 * visible to the taker (acquire side of its exchange). */
			if (pc_load_relaxed(slot) == NULL && pc_cas_strong_acq_rel(slot, &expected, p))
				return;
		}
		sched_yield();
	}
}

/* Take an object from some slot, or NULL after one empty sweep. */
static void *slot_take(uint64_t *rng)
{
	unsigned start = (unsigned)(test_rand(rng) % NSLOTS);
	for (unsigned k = 0; k < NSLOTS; k++) {
		void *_Atomic *slot = &slots[(start + k) % NSLOTS];
		if (pc_load_relaxed(slot) != NULL) {
			void *p = pc_xchg_acq_rel(slot, NULL); /* pairs with slot_put */
			if (p)
				return p;
		}
	}
	return NULL;
}

static void *pc_thread(void *argp)
{
	struct pc_arg *a = argp;
	if (!pin_cpu(a->cpu)) /* e.g. a cpuset without that CPU */
		pc_add_relaxed(&pin_refused, 1);
	if (a->producer) {
		for (unsigned long i = 0; i < a->quota; i++) {
			unsigned cache = (unsigned)(test_rand(&a->rng) % NCACHES);
			void *p = obj_alloc(cache, ((uint64_t)a->id << 40) | i);
			if (!p) { /* counted in errors_alloc; let the consumers end */
				pc_add_relaxed(&consumed, a->quota - i);
				break;
			}
			slot_put(p, &a->rng);
			pc_add_relaxed(&produced, 1);
		}
	} else {
		for (;;) {
			void *p = slot_take(&a->rng);
			if (p) {
				obj_free(p);
				pc_add_relaxed(&consumed, 1);
				continue;
			}
			if (pc_load_relaxed(&consumed) >= PC_ITEMS) /* a count; the objects came through the slots */
				break;
			sched_yield();
		}
	}
	return NULL;
}

static void drain_slots(void)
{
	for (unsigned k = 0; k < NSLOTS; k++) {
		void *p = pc_xchg_acq_rel(&slots[k], NULL);
		if (p)
			obj_free(p);
	}
}

/* After the threads are joined: counts, shrink, page allocator. */
static void check_quiet(const char *when)
{
	drain_slots();
	CHECK_EQ(pc_load_relaxed(&live), 0);
	CHECK_EQ(pc_load_relaxed(&errors_stamp), 0);
	CHECK_EQ(pc_load_relaxed(&errors_pattern), 0);
	CHECK_EQ(pc_load_relaxed(&errors_cache), 0);
	CHECK_EQ(pc_load_relaxed(&errors_alloc), 0);
	for (unsigned c = 0; c < NCACHES; c++) {
		long n = pc_cache_check(caches[c]);
		if (n != 0)
			fprintf(stderr, "%s: cache %zu: pc_cache_check %ld\n", when, cache_sizes[c], n);
		CHECK_EQ(n, 0);
		pc_cache_shrink(caches[c]);
		struct pc_cache_info info;
		pc_cache_info(caches[c], &info);
		CHECK(info.slabs <= (long)(pc_node_count() * info.min_partial));
		CHECK_EQ(info.slabs, 0); /* shrink frees every empty slab */
		CHECK_EQ(info.cpu_slabs, 0);
		CHECK_EQ(info.active_objects, 0);
		CHECK_EQ(pc_cache_check(caches[c]), 0);
	}
	CHECK(pc_page_check());
}

static void run_producer_consumer(unsigned nthreads, unsigned prod_cpu)
{
	pthread_t tids[MAX_THREADS];
	struct pc_arg args[MAX_THREADS];
	unsigned nprod = nthreads / 2;
	pc_store_relaxed(&consumed, 0);
	pc_store_relaxed(&produced, 0);
	pc_store_relaxed(&remote_frees, 0);
	pc_store_relaxed(&pin_refused, 0);
	for (unsigned i = 0; i < nthreads; i++) {
		args[i] = (struct pc_arg){
			.id = i,
			.producer = i < nprod,
			.cpu = i < nprod ? prod_cpu : prod_cpu + 1,
			.quota = PC_ITEMS / nprod + (i < PC_ITEMS % nprod),
			.rng = 0x1234567ULL * (i + 1) + nthreads,
		};
		REQUIRE(pthread_create(&tids[i], NULL, pc_thread, &args[i]) == 0);
	}
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(tids[i], NULL);
	CHECK_EQ(pc_load_relaxed(&produced), PC_ITEMS);
	CHECK_EQ(pc_load_relaxed(&consumed), PC_ITEMS);
	/* Producers and consumers sit on different CPUs: nearly every free is
	 * of an object made on the other CPU (pinning may lag at start-up).
	 * Only where every thread could be pinned: in a cpuset of one CPU
	 * (a container) os_cpu_count() still counts two, the pinning to the
	 * other is refused and both sides share a CPU. */
	if (os_cpu_count() > 1 && pc_load_relaxed(&pin_refused) == 0)
		CHECK(pc_load_relaxed(&remote_frees) > PC_ITEMS / 2);
	else
		fprintf(stderr, "producer/consumer %u threads: %lu threads could not be pinned: "
			"remote frees not checked\n", nthreads, pc_load_relaxed(&pin_refused));
	char when[64];
	snprintf(when, sizeof(when), "producer/consumer %u threads", nthreads);
	check_quiet(when);
}

TEST(producer_consumer_16) { run_producer_consumer(16, 0); }
TEST(producer_consumer_32) { run_producer_consumer(32, 1); }
TEST(producer_consumer_64) { run_producer_consumer(64, 0); }

/* ---- phase 2: mixed --------------------------------------------------------------- */
struct mix_arg {
	unsigned id;
	unsigned long ops;
	uint64_t rng;
	bool shrinker;
};

static void *mix_thread(void *argp)
{
	struct mix_arg *a = argp;
	void *local[LOCAL_MAX];
	unsigned n = 0;
	uint64_t seq = (uint64_t)a->id << 40;
	for (unsigned long op = 0; op < a->ops; op++) {
		uint64_t r = test_rand(&a->rng);
		unsigned what = (unsigned)(r % 100);
		if (a->shrinker && op % 500 == 250) {
			unsigned c = (unsigned)((r >> 8) % NCACHES);
			pc_cache_shrink(caches[c]);
			struct pc_cache_info info;
			pc_cache_info(caches[c], &info);
			if (info.slabs < 0 || info.active_objects > info.total_objects)
				pc_add_relaxed(&errors_stamp, 1);
		}
		if (what < 45 && n < LOCAL_MAX) {
			/* small objects mostly: they share slabs and CPU freelists */
			unsigned c = (r >> 8) % 8 < 5 ? 0 : (r >> 8) % 8 < 7 ? 1 : 2;
			void *p = obj_alloc(c, seq++);
			if (p)
				local[n++] = p;
		} else if (what < 85 && n > 0) {
			unsigned i = (unsigned)((r >> 16) % n);
			void *p = local[i];
			local[i] = local[--n];
			if ((r >> 32) & 1) {
				/* hand it to someone else; free it if no slot is free */
				unsigned k = (unsigned)((r >> 40) % NSLOTS);
				void *expected = NULL;
				if (!pc_cas_strong_acq_rel(&slots[k], &expected, p)) /* pairs with the taker */
					obj_free(p);
			} else {
				obj_free(p);
			}
		} else {
			void *p = slot_take(&a->rng);
			if (p) {
				if (((r >> 24) & 1) && n < LOCAL_MAX)
					local[n++] = p; /* adopt: freed later */
				else
					obj_free(p);
			}
		}
		if (op % 64 == 0)
			sched_yield(); /* more interleavings on 2 CPUs */
	}
	while (n > 0)
		obj_free(local[--n]);
	return NULL;
}

static void run_mixed(unsigned nthreads)
{
	pthread_t tids[MAX_THREADS];
	struct mix_arg args[MAX_THREADS];
	for (unsigned i = 0; i < nthreads; i++) {
		args[i] = (struct mix_arg){
			.id = i,
			.ops = MIX_OPS / nthreads,
			.rng = 0xABCDEF12345ULL * (i + 3) + nthreads,
			.shrinker = i == 0,
		};
		REQUIRE(pthread_create(&tids[i], NULL, mix_thread, &args[i]) == 0);
	}
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(tids[i], NULL);
	char when[64];
	snprintf(when, sizeof(when), "mixed %u threads", nthreads);
	check_quiet(when);
}

/* ---- forced cross-CPU paths -------------------------------------------------------------
 * The stress above goes through the remote and frozen free paths and the
 * refill paths only as the scheduler has it, so it only prints how often.
 * Here each is made certain, with no concurrency at all: main, pinned to CPU
 * 0, allocates 3 slabs' worth of objects (so the first ones sit in full
 * slabs that are no CPU's, the last in CPU 0's frozen CPU slab); a thread
 * pinned to CPU 1 frees three of them and is joined; then main goes on:
 *   free of the last object   -> remote (not CPU 1's slab), frozen (CPU 0's);
 *   free of objects 0 and n   -> remote, and each full slab goes frozen onto
 *                                CPU 1's partial list (cpu_partial_free);
 *   main allocates n more     -> CPU 0's freelist runs dry while its CPU slab
 *                                holds the object freed remotely (alloc_refill);
 *   shrink, then one alloc    -> no CPU slab and no CPU partial slab, but the
 *                                two flushed slabs, still in use, wait on the
 *                                node partial list (alloc_from_partial). */
struct cpu1_frees {
	void *obj[3];
	bool pinned;
};

static void *free_on_cpu1(void *arg)
{
	struct cpu1_frees *f = arg;
	f->pinned = pin_cpu(1);
	if (f->pinned && os_cpu_current() == 1)
		for (unsigned i = 0; i < 3; i++)
			obj_free(f->obj[i]);
	else
		f->pinned = false;
	return NULL;
}

static void stats_sum(struct pc_cache *s, uint64_t *st)
{
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	memcpy(st, info.stats, sizeof(info.stats));
}

TEST(forced_cross_cpu_paths)
{
	/* Pinning to CPU 1 first: a cpuset without it (a container of one
	 * CPU) refuses, and the test is skipped rather than failed. */
	if (os_cpu_count() < 2 || !pin_cpu(1) || !pin_cpu(0) || os_cpu_current() != 0) {
		fprintf(stderr, "needs two CPUs and pinning: skipped\n");
		return;
	}
	/* These are paths of the slab layer beneath the sheaves: turn sheaves
	 * off (this flushes them) so that every call reaches it. */
	REQUIRE(pc_option_set(PC_OPT_SLUB_SHEAF_CAPACITY, 0, false) == 0);
	struct pc_cache *s = caches[0];
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	unsigned n = info.objects_per_slab, total = 4 * n + 1;
	void **a = malloc(total * sizeof(void *));
	REQUIRE(a);
	uint64_t before[PC_SLAB_STAT_COUNT], after[PC_SLAB_STAT_COUNT];
	stats_sum(s, before);
	for (unsigned i = 0; i < 3 * n; i++)
		REQUIRE((a[i] = obj_alloc(0, i)) != NULL);
	struct cpu1_frees f = { .obj = { a[3 * n - 1], a[0], a[n] } };
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, free_on_cpu1, &f) == 0);
	pthread_join(t, NULL);
	REQUIRE(f.pinned);
	a[3 * n - 1] = a[0] = a[n] = NULL;
	for (unsigned i = 3 * n; i < 4 * n; i++)
		REQUIRE((a[i] = obj_alloc(0, i)) != NULL);
	pc_cache_shrink(s);
	REQUIRE((a[4 * n] = obj_alloc(0, 4 * n)) != NULL);
	stats_sum(s, after);
	for (unsigned i = 0; i < total; i++)
		if (a[i])
			obj_free(a[i]);
	free(a);
	static const enum pc_slab_stat must[] = {
		PC_SLAB_STAT_free_remote, PC_SLAB_STAT_free_frozen, PC_SLAB_STAT_cpu_partial_free,
		PC_SLAB_STAT_alloc_refill, PC_SLAB_STAT_alloc_from_partial,
	};
	for (size_t i = 0; i < PC_ARRAY_SIZE(must); i++) {
		if (after[must[i]] <= before[must[i]])
			fprintf(stderr, "path %s not taken\n", pc_slab_stat_names[must[i]]);
		CHECK(after[must[i]] > before[must[i]]);
	}
	check_quiet("forced cross-CPU paths");
	REQUIRE(pc_option_set(PC_OPT_SLUB_SHEAF_CAPACITY, -1, false) == 0);
}

TEST(mixed_16) { run_mixed(16); }
TEST(mixed_32) { run_mixed(32); }
TEST(mixed_64) { run_mixed(64); }

int main(void)
{
	REQUIRE(pc_option_set(PC_OPT_STATS_ENABLE, 1, true) == 0);
	pc_page_init();
	for (unsigned c = 0; c < NCACHES; c++) {
		char name[32];
		snprintf(name, sizeof(name), "threads-%zu", cache_sizes[c]);
		caches[c] = pc_cache_create(name, cache_sizes[c], 0, NULL);
		REQUIRE(caches[c]);
	}
	RUN(producer_consumer_16);
	RUN(producer_consumer_32);
	RUN(producer_consumer_64);
	RUN(mixed_16);
	RUN(mixed_32);
	RUN(mixed_64);
	/* How often the stress runs took each path depends on the scheduler,
	 * so it is printed; forced_cross_cpu_paths makes each one certain. */
	RUN(forced_cross_cpu_paths);
	uint64_t st[PC_SLAB_STAT_COUNT] = { 0 };
	for (unsigned c = 0; c < NCACHES; c++) {
		struct pc_cache_info info;
		pc_cache_info(caches[c], &info);
		for (int k = 0; k < PC_SLAB_STAT_COUNT; k++)
			st[k] += info.stats[k];
	}
	fprintf(stderr, "stats:");
	for (int k = 0; k < PC_SLAB_STAT_COUNT; k++)
		fprintf(stderr, " %s=%" PRIu64, pc_slab_stat_names[k], st[k]);
	fprintf(stderr, "\n");
	for (unsigned c = 0; c < NCACHES; c++)
		CHECK_EQ(pc_cache_destroy(caches[c]), 0);
	return test_report();
}
