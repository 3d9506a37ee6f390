/*
 * tests/unit/slab/tunables.c - slub.* tunables changed at run time while
 * threads allocate and free.
 *
 * PC_TEST_LABELS: tsan
 *
 * Worker threads churn objects of several caches (allocate, stamp, hand over
 * through shared slots, check, free) while a tuner thread keeps setting
 * slub.max_order (0..4), slub.cpu_partial (0, 1, 2, 30, -1), slub.min_partial
 * (0, 5, 64) and slub.max_partial (-1, 0, 10, 100) and slub.min_objects,
 * slub.sheaf_capacity (0 = off, 1, 8, 64, -1), slub.barn_sheaves (0, 1,
 * 8) with slub.barn_max_kb (-1, 0, 4, 1024: the barns' raised bounds and
 * their budget), and now and then shrinks a cache or calls pc_slab_reclaim(). The
 * run is cut into epochs; between epochs every thread waits at a barrier and
 * the main thread checks each cache with pc_cache_check() against the number
 * of objects the threads hold (in per-thread sheaf mode each worker first
 * flushes its own sheaves, which only it can do: pc_cache_shrink in the
 * worker) (so the walker sees slabs of mixed orders on
 * CPU slabs, CPU partial lists and node lists), then the next epoch starts.
 * At the end: everything freed, pc_cache_check() == 0, and for each
 * max_order 0..4, the cache reports the order pc_slab_calculate_order()
 * gives, and after a shrink every newly allocated object lies in a slab of
 * that order with that many objects.
 */
#define _GNU_SOURCE
#include "slab/slab.h"
#include "test.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#if defined(__SANITIZE_THREAD__)
#define SCALE 10
#else
#define SCALE 1
#endif

#define NCACHES   4
#define NWORKERS  8
#define NSLOTS    256
#define EPOCHS    12
#define EPOCH_OPS (240000 / SCALE) /* per worker */
#define LOCAL_MAX 128

static const size_t cache_sizes[NCACHES] = { 16, 192, 2000, 12000 };
static struct pc_cache *caches[NCACHES];
static void *_Atomic slots[NSLOTS];
static _Atomic long held[NWORKERS][NCACHES]; /* objects each worker holds */
static _Atomic unsigned long errors, tuner_sets;
static _Atomic bool tuner_stop;
static pthread_barrier_t epoch_start, epoch_end;

struct stamp {
	uint64_t tag;
	uint32_t cache, pad;
};

static uint64_t tag_of(const void *p)
{
	uint64_t x = (uintptr_t)p * 0xD6E8FEB86659FD93ULL;
	return x ^ (x >> 32);
}

static void stamp(void *p, unsigned cache)
{
	struct stamp *st = p;
	st->tag = tag_of(p);
	st->cache = cache;
	uint64_t *w = p;
	size_t nw = cache_sizes[cache] / 8;
	if (nw > 2) /* past the stamp */
		w[nw - 1] = st->tag ^ 0x5555;
	if (nw > 4)
		w[nw / 2] = st->tag ^ 0xaaaa;
}

static bool stamp_ok(void *p, unsigned cache)
{
	struct stamp *st = p;
	const uint64_t *w = p;
	size_t nw = cache_sizes[cache] / 8;
	return st->tag == tag_of(p) && st->cache == cache && (nw <= 2 || w[nw - 1] == (st->tag ^ 0x5555)) &&
	       (nw <= 4 || w[nw / 2] == (st->tag ^ 0xaaaa)) && pc_slab_cache_of(p) == caches[cache];
}

struct worker {
	unsigned id;
	uint64_t rng;
	void *local[LOCAL_MAX];
	unsigned n;
};

static void w_free(struct worker *w, void *p)
{
	struct stamp *st = p;
	unsigned c = st->cache;
	if (c >= NCACHES || !stamp_ok(p, c)) {
		pc_add_relaxed(&errors, 1);
		return; /* leaked: the count check at the barrier will show it too */
	}
	st->tag = 0;
	pc_cache_free(caches[c], p);
	pc_add_relaxed(&held[w->id][c], -1);
}

static void churn(struct worker *w, unsigned long ops)
{
	for (unsigned long op = 0; op < ops; op++) {
		uint64_t r = test_rand(&w->rng);
		unsigned what = (unsigned)(r % 100);
		if (what < 48 && w->n < LOCAL_MAX) {
			unsigned c = (unsigned)((r >> 8) % 16);
			c = c < 7 ? 0 : c < 12 ? 1 : c < 15 ? 2 : 3;
			void *p = pc_cache_alloc(caches[c]);
			if (!p) {
				pc_add_relaxed(&errors, 1);
				continue;
			}
			pc_add_relaxed(&held[w->id][c], 1);
			stamp(p, c);
			w->local[w->n++] = p;
		} else if (what < 88 && w->n > 0) {
			unsigned i = (unsigned)((r >> 16) % w->n);
			void *p = w->local[i];
			w->local[i] = w->local[--w->n];
			if ((r >> 40) & 1) {
				/* hand over: the slot's count moves with it */
				unsigned k = (unsigned)((r >> 44) % NSLOTS);
				void *expected = NULL;
				struct stamp *st = p;
				unsigned c = st->cache;
				/* acq_rel: the stamp reaches the taker. */
				if (pc_cas_strong_acq_rel(&slots[k], &expected, p))
					pc_add_relaxed(&held[w->id][c], -1);
				else
					w_free(w, p);
			} else {
				w_free(w, p);
			}
		} else {
			unsigned k = (unsigned)((r >> 24) % NSLOTS);
			if (pc_load_relaxed(&slots[k]) == NULL)
				continue;
			void *p = pc_xchg_acq_rel(&slots[k], NULL); /* pairs with the CAS above */
			if (!p)
				continue;
			struct stamp *st = p;
			unsigned c = st->cache;
			if (c >= NCACHES) {
				pc_add_relaxed(&errors, 1);
				continue;
			}
			pc_add_relaxed(&held[w->id][c], 1);
			if (w->n < LOCAL_MAX && ((r >> 50) & 1))
				w->local[w->n++] = p;
			else
				w_free(w, p);
		}
		if (op % 128 == 0)
			sched_yield();
	}
}

static void *worker_main(void *argp)
{
	struct worker *w = argp;
	for (int e = 0;; e++) {
		pthread_barrier_wait(&epoch_start);
		if (e == EPOCHS) /* the main thread has checked the last epoch */
			break;
		churn(w, EPOCH_OPS);
		if (pc_sheaf_mode() == PC_SHEAF_MODE_THREAD) /* only we can flush ours */
			for (unsigned c = 0; c < NCACHES; c++)
				pc_cache_shrink(caches[c]);
		pthread_barrier_wait(&epoch_end);
	}
	while (w->n > 0)
		w_free(w, w->local[--w->n]);
	return NULL;
}

static void set_opt(enum pc_option o, long v)
{
	if (pc_option_set(o, v, false) != 0)
		pc_add_relaxed(&errors, 1);
}

static void *tuner_main(void *arg)
{
	uint64_t rng = 0xFEEDFACEULL;
	static const long max_order[] = { 0, 1, 2, 3, 4 };
	static const long cpu_partial[] = { 0, 1, 2, 30, -1 };
	static const long min_partial[] = { 0, 5, 64 };
	static const long max_partial[] = { -1, 0, 10, 100 };
	static const long min_objects[] = { -1, 1, 4, 32 };
	static const long sheaf_capacity[] = { 0, 1, 8, 64, -1 };
	static const long barn_sheaves[] = { 0, 1, 8 };
	static const long barn_max_kb[] = { -1, 0, 4, 1024 };
	(void)arg;
	while (!pc_load_relaxed(&tuner_stop)) {
		uint64_t r = test_rand(&rng);
		if ((r >> 32) % 16 == 0) /* and a shrink now and then, under way */
			pc_cache_shrink(caches[(r >> 36) % NCACHES]);
		else if ((r >> 32) % 64 == 1)
			pc_slab_reclaim(); /* every cache, under slab_mutex */
		switch (r % 7) {
		case 5: set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, sheaf_capacity[(r >> 8) % 5]); break;
		case 6:
			set_opt(PC_OPT_SLUB_BARN_SHEAVES, barn_sheaves[(r >> 8) % 3]);
			set_opt(PC_OPT_SLUB_BARN_MAX_KB, barn_max_kb[(r >> 12) % 4]);
			break;
		case 0: set_opt(PC_OPT_SLUB_MAX_ORDER, max_order[(r >> 8) % 5]); break;
		case 1: set_opt(PC_OPT_SLUB_CPU_PARTIAL, cpu_partial[(r >> 8) % 5]); break;
		case 2: set_opt(PC_OPT_SLUB_MIN_PARTIAL, min_partial[(r >> 8) % 3]); break;
		case 3: set_opt(PC_OPT_SLUB_MAX_PARTIAL, max_partial[(r >> 8) % 4]); break;
		default: set_opt(PC_OPT_SLUB_MIN_OBJECTS, min_objects[(r >> 8) % 4]); break;
		}
		pc_add_relaxed(&tuner_sets, 1);
		struct timespec ts = { 0, 200000 }; /* 0.2 ms */
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static long slot_count(unsigned c)
{
	long n = 0;
	for (unsigned k = 0; k < NSLOTS; k++) {
		struct stamp *st = pc_load_relaxed(&slots[k]);
		if (st && st->cache == c)
			n++;
	}
	return n;
}

TEST(churn_while_tuning)
{
	static struct worker workers[NWORKERS];
	pthread_t tids[NWORKERS], tuner;
	REQUIRE(pthread_barrier_init(&epoch_start, NULL, NWORKERS + 1) == 0);
	REQUIRE(pthread_barrier_init(&epoch_end, NULL, NWORKERS + 1) == 0);
	for (unsigned i = 0; i < NWORKERS; i++) {
		workers[i].id = i;
		workers[i].rng = 0x51ED270B27ULL * (i + 1);
		REQUIRE(pthread_create(&tids[i], NULL, worker_main, &workers[i]) == 0);
	}
	bool broken = false;
	for (int e = 0; e < EPOCHS; e++) {
		pc_store_relaxed(&tuner_stop, false);
		REQUIRE(pthread_create(&tuner, NULL, tuner_main, NULL) == 0);
		pthread_barrier_wait(&epoch_start);
		pthread_barrier_wait(&epoch_end);
		pc_store_relaxed(&tuner_stop, true);
		pthread_join(tuner, NULL);
		/* Quiet: workers wait at the next epoch_start. */
		for (unsigned c = 0; c < NCACHES && !broken; c++) {
			long want = slot_count(c);
			for (unsigned i = 0; i < NWORKERS; i++)
				want += pc_load_relaxed(&held[i][c]);
			long got = pc_cache_check(caches[c]);
			if (got != want) {
				fprintf(stderr, "epoch %d: cache %zu: pc_cache_check %ld, threads hold %ld\n",
					e, cache_sizes[c], got, want);
				CHECK_EQ(got, want);
				broken = true; /* keep running, but report once */
			}
		}
		if (e % 4 == 3) /* a shrink with live objects, every few epochs */
			for (unsigned c = 0; c < NCACHES; c++)
				pc_cache_shrink(caches[c]);
	}
	pthread_barrier_wait(&epoch_start); /* let the workers free and exit */
	for (unsigned i = 0; i < NWORKERS; i++)
		pthread_join(tids[i], NULL);
	CHECK_EQ(pc_load_relaxed(&errors), 0);
	CHECK(pc_load_relaxed(&tuner_sets) > 50);
	for (unsigned k = 0; k < NSLOTS; k++) {
		void *p = pc_xchg_acq_rel(&slots[k], NULL);
		if (p) {
			struct stamp *st = p;
			CHECK(st->cache < NCACHES && stamp_ok(p, st->cache));
			if (st->cache < NCACHES)
				pc_cache_free(caches[st->cache], p);
		}
	}
	for (unsigned c = 0; c < NCACHES; c++) {
		CHECK_EQ(pc_cache_check(caches[c]), 0);
		pc_cache_shrink(caches[c]);
		struct pc_cache_info info;
		pc_cache_info(caches[c], &info);
		CHECK_EQ(info.slabs, 0);
		CHECK_EQ(pc_cache_check(caches[c]), 0);
	}
	CHECK(pc_page_check());
	pthread_barrier_destroy(&epoch_start);
	pthread_barrier_destroy(&epoch_end);
}

/*
 * After each change of slub.max_order, new slabs have the new order: the
 * cache info says so, and objects allocated after a shrink sit in slabs of
 * that order. Objects of old slabs (another order) stay valid and free
 * correctly.
 */
TEST(new_slabs_take_new_order)
{
	REQUIRE(pc_option_set(PC_OPT_SLUB_MIN_OBJECTS, -1, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_SLUB_CPU_PARTIAL, -1, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_SLUB_MIN_PARTIAL, 5, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_SLUB_MAX_PARTIAL, -1, false) == 0);
	enum { KEEP = 40, NEW = 200 };
	void *old[NCACHES][KEEP];
	unsigned old_order[NCACHES];
	for (unsigned c = 0; c < NCACHES; c++) {
		for (int i = 0; i < KEEP; i++)
			REQUIRE((old[c][i] = pc_cache_alloc(caches[c])) != NULL);
		old_order[c] = pc_slab_of(old[c][KEEP - 1])->order;
	}
	for (long mo = 0; mo <= 4; mo++) {
		REQUIRE(pc_option_set(PC_OPT_SLUB_MAX_ORDER, mo, false) == 0);
		for (unsigned c = 0; c < NCACHES; c++) {
			struct pc_cache *s = caches[c];
			unsigned objects;
			unsigned want = pc_slab_calculate_order(s->size, &objects);
			struct pc_cache_info info;
			pc_cache_info(s, &info);
			CHECK_EQ(info.order, want);
			CHECK_EQ(info.objects_per_slab, objects);
			if (want > (unsigned)mo) /* only when one object needs it */
				CHECK((PC_PAGE_SIZE << mo) < s->size);
			pc_cache_shrink(s); /* no CPU slab, no empty slab left */
			void *p[NEW];
			bool right = true;
			for (int i = 0; i < NEW; i++) {
				REQUIRE((p[i] = pc_cache_alloc(s)) != NULL);
				struct pc_page *slab = pc_slab_of(p[i]);
				uint32_t n = PC_SLAB_OBJECTS(pc_load_relaxed(&slab_word(slab)->word));
				/* the old slabs may still have room: only slabs made
				 * after the change are checked */
				bool is_old = false;
				for (int k = 0; k < KEEP && !is_old; k++)
					is_old = pc_slab_of(old[c][k]) == slab;
				if (!is_old && (slab->order != want || n != objects)) {
					if (right)
						fprintf(stderr, "max_order %ld cache %zu: slab order %u objects %u, want %u/%u\n",
							mo, cache_sizes[c], slab->order, n, want, objects);
					right = false;
				}
			}
			CHECK(right);
			CHECK_EQ(pc_cache_check(s), KEEP + NEW);
			for (int i = 0; i < NEW; i++)
				pc_cache_free(s, p[i]);
			CHECK_EQ(pc_cache_check(s), KEEP);
		}
	}
	/* The old objects, in slabs of the old order, free fine. */
	for (unsigned c = 0; c < NCACHES; c++) {
		CHECK_EQ(pc_slab_of(old[c][0])->order, old_order[c]);
		for (int i = 0; i < KEEP; i++)
			pc_cache_free(caches[c], old[c][i]);
		CHECK_EQ(pc_cache_check(caches[c]), 0);
		pc_cache_shrink(caches[c]);
		struct pc_cache_info info;
		pc_cache_info(caches[c], &info);
		CHECK_EQ(info.slabs, 0);
	}
	CHECK(pc_page_check());
	REQUIRE(pc_option_set(PC_OPT_SLUB_MAX_ORDER, -1, false) == 0);
}

/* min_partial and cpu_partial changes re-tune existing caches. */
TEST(retune_existing_caches)
{
	struct pc_cache_info info;
	REQUIRE(pc_option_set(PC_OPT_SLUB_MIN_PARTIAL, 64, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_SLUB_CPU_PARTIAL, 7, false) == 0);
	for (unsigned c = 0; c < NCACHES; c++) {
		pc_cache_info(caches[c], &info);
		CHECK_EQ(info.min_partial, 64);
		CHECK_EQ(info.cpu_partial, 7);
	}
	REQUIRE(pc_option_set(PC_OPT_SLUB_MIN_PARTIAL, 0, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_SLUB_MAX_PARTIAL, 0, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_SLUB_CPU_PARTIAL, 0, false) == 0);
	for (unsigned c = 0; c < NCACHES; c++) {
		pc_cache_info(caches[c], &info);
		CHECK_EQ(info.min_partial, 0);
		CHECK_EQ(info.cpu_partial, 0);
	}
	/* max_partial caps the size-derived value: log2(2000)/2 = 5 */
	REQUIRE(pc_option_set(PC_OPT_SLUB_MAX_PARTIAL, 3, false) == 0);
	pc_cache_info(caches[2], &info);
	CHECK_EQ(info.min_partial, 3);
	REQUIRE(pc_option_set(PC_OPT_SLUB_MAX_PARTIAL, 100, false) == 0);
	pc_cache_info(caches[2], &info);
	CHECK_EQ(info.min_partial, 5);
	/* Out of range values are refused and change nothing. */
	CHECK(pc_option_set(PC_OPT_SLUB_MAX_ORDER, PC_MAX_ORDER + 1, false) != 0);
	CHECK(pc_option_set(PC_OPT_SLUB_CPU_PARTIAL, -2, false) != 0);
	pc_cache_info(caches[2], &info);
	CHECK_EQ(info.min_partial, 5);
	CHECK_EQ(info.cpu_partial, 0);
	REQUIRE(pc_option_set(PC_OPT_SLUB_MIN_PARTIAL, 5, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_SLUB_MAX_PARTIAL, -1, false) == 0);
	REQUIRE(pc_option_set(PC_OPT_SLUB_CPU_PARTIAL, -1, false) == 0);
}

int main(void)
{
	pc_page_init();
	for (unsigned c = 0; c < NCACHES; c++) {
		char name[32];
		snprintf(name, sizeof(name), "tune-%zu", cache_sizes[c]);
		caches[c] = pc_cache_create(name, cache_sizes[c], 0, NULL);
		REQUIRE(caches[c]);
	}
	RUN(churn_while_tuning);
	RUN(new_slabs_take_new_order);
	RUN(retune_existing_caches);
	for (unsigned c = 0; c < NCACHES; c++)
		CHECK_EQ(pc_cache_destroy(caches[c]), 0);
	return test_report();
}
