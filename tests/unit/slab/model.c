/*
 * tests/unit/slab/model.c - random allocation and free sequences checked
 * against a reference model.
 *
 * The model keeps, per cache, the array of live objects. Every object is
 * filled with a pattern derived from its address and its cache, checked in
 * full when it is freed, so an object handed out twice, two overlapping
 * objects, or a free pointer written into a live object shows up as a
 * corrupted pattern. Every CHECK_EVERY operations:
 *   - pc_cache_check(s) must return exactly the model's live count for every
 *     cache (-1 means a broken invariant inside the slab layer);
 *   - all live objects of all caches, sorted by address, must not overlap;
 *   - every live object still has pattern, pc_slab_cache_of(obj) == s, and
 *     lies in a slot of its slab.
 * The thread moves between CPUs every few thousand operations (affinity), so
 * that objects allocated on one CPU are freed on another (remote frees,
 * several CPU slabs and CPU partial lists per cache). The run is split into
 * phases with different tunables (set at run time between operations), and
 * the operation mix drifts between growing and shrinking so that slabs fill
 * up, empty out and go back to the page allocator.
 */
#define _GNU_SOURCE
#include "slab/slab.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <sched.h>

#define OPS         300000
#define CHECK_EVERY 5000
#define NCACHES     9

static const size_t cache_sizes[NCACHES] = { 8, 24, 64, 100, 256, 1000, 4096, 9000, 32768 };

struct model {
	struct pc_cache *s;
	size_t size;
	size_t cap;    /* most live objects at once */
	size_t nlive;
	void **live;
	uint64_t allocs, frees;
};

static struct model models[NCACHES];
static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static inline uint64_t pattern_word(const void *obj, size_t i, unsigned cache)
{
	uint64_t x = (uintptr_t)obj * 0x9E3779B97F4A7C15ULL + i * 0xBF58476D1CE4E5B9ULL + cache;
	return x ^ (x >> 29);
}

/* Words for whole words, bytes for the tail (sizes that are not multiples of 8). */
static void fill(void *obj, size_t size, unsigned cache)
{
	uint64_t *w = obj;
	size_t n = size / 8;
	for (size_t i = 0; i < n; i++)
		w[i] = pattern_word(obj, i, cache);
	for (size_t i = n * 8; i < size; i++)
		((uint8_t *)obj)[i] = (uint8_t)pattern_word(obj, i, cache);
}

static bool intact(const void *obj, size_t size, unsigned cache)
{
	const uint64_t *w = obj;
	size_t n = size / 8;
	for (size_t i = 0; i < n; i++)
		if (w[i] != pattern_word(obj, i, cache))
			return false;
	for (size_t i = n * 8; i < size; i++)
		if (((const uint8_t *)obj)[i] != (uint8_t)pattern_word(obj, i, cache))
			return false;
	return true;
}

/* The object lies in a slot of a slab of s. */
static bool in_slot(struct pc_cache *s, const void *obj)
{
	struct pc_page *slab = pc_slab_of(obj);
	if (!slab || slab->owner != s)
		return false;
	char *base = pc_page_address(slab);
	size_t off = (size_t)((const char *)obj - base);
	uint32_t objects = PC_SLAB_OBJECTS(pc_load_relaxed(&slab_word(slab)->word));
	return (const char *)obj >= base && off % s->size == 0 && off / s->size < objects &&
	       off + s->size <= PC_PAGE_SIZE << slab->order;
}

static unsigned long corrupt, misplaced;

static void do_alloc(unsigned k)
{
	struct model *m = &models[k];
	if (m->nlive == m->cap)
		return;
	void *p = pc_cache_alloc(m->s);
	REQUIRE(p != NULL);
	if (pc_slab_cache_of(p) != m->s || !in_slot(m->s, p)) {
		if (misplaced++ < 10)
			fprintf(stderr, "cache %zu: object %p is not in a slot of the cache\n", m->size, p);
	}
	fill(p, m->size, k);
	m->live[m->nlive++] = p;
	m->allocs++;
}

static void do_free(unsigned k, size_t idx)
{
	struct model *m = &models[k];
	void *p = m->live[idx];
	if (!intact(p, m->size, k)) {
		if (corrupt++ < 10)
			fprintf(stderr, "cache %zu: object %p corrupted before its free\n", m->size, p);
	}
	m->live[idx] = m->live[--m->nlive];
	pc_cache_free(m->s, p);
	m->frees++;
}

struct span {
	uintptr_t lo, hi;
	unsigned cache;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The full check: counts, slots, patterns, no overlap. */
static void check_all(const char *when)
{
	size_t total = 0;
	for (unsigned k = 0; k < NCACHES; k++)
		total += models[k].nlive;
	struct span *spans = malloc((total + 1) * sizeof(*spans));
	REQUIRE(spans);
	size_t n = 0;
	bool counts_ok = true;
	for (unsigned k = 0; k < NCACHES; k++) {
		struct model *m = &models[k];
		long got = pc_cache_check(m->s);
		if (got != (long)m->nlive) {
			fprintf(stderr, "%s: cache %zu: pc_cache_check %ld, model %zu\n", when, m->size,
				got, m->nlive);
			counts_ok = false;
		}
		for (size_t i = 0; i < m->nlive; i++) {
			void *p = m->live[i];
			if (pc_slab_cache_of(p) != m->s || !in_slot(m->s, p))
				misplaced++;
			if (!intact(p, m->size, k)) {
				if (corrupt++ < 10)
					fprintf(stderr, "%s: cache %zu: live object %p corrupted\n", when,
						m->size, p);
			}
			spans[n++] = (struct span){ (uintptr_t)p, (uintptr_t)p + m->size, k };
		}
	}
	CHECK(counts_ok);
	qsort(spans, n, sizeof(*spans), span_cmp);
	unsigned long overlaps = 0;
	for (size_t i = 1; i < n; i++)
		if (spans[i].lo < spans[i - 1].hi)
			overlaps++;
	if (overlaps)
		fprintf(stderr, "%s: %lu overlapping live objects\n", when, overlaps);
	CHECK_EQ(overlaps, 0);
	CHECK_EQ(corrupt, 0);
	CHECK_EQ(misplaced, 0);
	free(spans);
}

/* Tunables per phase: the run switches among them at run time. */
struct phase {
	const char *name;
	long max_order, cpu_partial, min_partial, max_partial, min_objects;
};
static const struct phase phases[] = {
	{ "defaults", -1, -1, 5, -1, -1 },
	{ "no cpu partial, keep nothing", -1, 0, 0, 0, -1 },
	{ "order 0, 1 cpu partial", 0, 1, 0, 2, -1 },
	{ "big slabs, long partial lists", 4, 30, 64, 64, 64 },
	{ "order 1, 2 cpu partial", 1, 2, 5, -1, 4 },
	{ "defaults again", -1, -1, 5, -1, -1 },
};

static void apply_phase(const struct phase *p)
{
	set_opt(PC_OPT_SLUB_MAX_ORDER, p->max_order);
	set_opt(PC_OPT_SLUB_CPU_PARTIAL, p->cpu_partial);
	set_opt(PC_OPT_SLUB_MIN_PARTIAL, p->min_partial);
	set_opt(PC_OPT_SLUB_MAX_PARTIAL, p->max_partial);
	set_opt(PC_OPT_SLUB_MIN_OBJECTS, p->min_objects);
}

TEST(random_model)
{
	for (unsigned k = 0; k < NCACHES; k++) {
		char name[32];
		snprintf(name, sizeof(name), "model-%zu", cache_sizes[k]);
		struct model *m = &models[k];
		m->s = pc_cache_create(name, cache_sizes[k], 0, NULL);
		REQUIRE(m->s);
		m->size = cache_sizes[k];
		/* about 8 MiB of live objects per cache at most */
		m->cap = PC_MIN((size_t)20000, ((size_t)8 << 20) / m->size);
		m->live = malloc(m->cap * sizeof(void *));
		REQUIRE(m->live);
	}
	set_opt(PC_OPT_STATS_ENABLE, 1);
	bool can_pin = pin_cpu(0);
	if (!can_pin)
		fprintf(stderr, "cannot pin: CPU changes left to the scheduler\n");
	size_t nphases = PC_ARRAY_SIZE(phases);
	unsigned cpu = 0;
	for (long op = 0; op < OPS; op++) {
		if (op % (OPS / (long)nphases) == 0 && op / (OPS / (long)nphases) < (long)nphases)
			apply_phase(&phases[op / (OPS / (long)nphases)]);
		if (can_pin && op % 3000 == 1500 && test_cpus() > 1) { /* another allowed CPU */
			cpu = (cpu + 1 + (unsigned)(test_rand(&rng) % (test_cpus() - 1))) % test_cpus();
			pin_cpu(cpu);
		}
		/* The free share drifts: 30% .. 70% in a 40k-op wave, so that
		 * the live set grows to its caps and falls back to near zero. */
		long w = op % 40000;
		unsigned free_pct = w < 20000 ? 30 + (unsigned)(w * 40 / 20000)
					      : 70 - (unsigned)((w - 20000) * 40 / 20000);
		uint64_t r = test_rand(&rng);
		unsigned k = (unsigned)(r % NCACHES);
		struct model *m = &models[k];
		unsigned roll = (unsigned)((r >> 8) % 1000);
		if (roll == 999) {
			pc_cache_shrink(m->s);
		} else if (roll < free_pct * 10 && m->nlive > 0) {
			/* Mostly recent objects (LIFO, hits the CPU freelist),
			 * sometimes any object. */
			size_t idx = (r >> 20) & 1 ? m->nlive - 1 - (size_t)((r >> 24) % PC_MIN(m->nlive, (size_t)8))
						   : (size_t)((r >> 24) % m->nlive);
			do_free(k, idx);
		} else {
			/* Bursts: several allocations at once fill slabs faster. */
			unsigned burst = 1 + (unsigned)((r >> 40) % 4);
			for (unsigned b = 0; b < burst; b++)
				do_alloc(k);
		}
		if ((op + 1) % CHECK_EVERY == 0) {
			char when[64];
			snprintf(when, sizeof(when), "op %ld", op + 1);
			check_all(when);
			if (test_current_failed)
				break; /* the first report is the useful one */
		}
	}
	check_all("end of run");
	uint64_t allocs = 0;
	for (unsigned k = 0; k < NCACHES; k++)
		allocs += models[k].allocs;
	fprintf(stderr, "%" PRIu64 " allocations\n", allocs);

	/* The run went through every path of the slow paths (stats.enable
	 * is on for the whole run). */
	uint64_t st[PC_SLAB_STAT_COUNT] = { 0 };
	for (unsigned k = 0; k < NCACHES; k++) {
		struct pc_cache_info info;
		pc_cache_info(models[k].s, &info);
		for (int i = 0; i < PC_SLAB_STAT_COUNT; i++)
			st[i] += info.stats[i];
	}
	static const enum pc_slab_stat must[] = {
		PC_SLAB_STAT_alloc_fastpath, PC_SLAB_STAT_alloc_slowpath, PC_SLAB_STAT_free_fastpath,
		PC_SLAB_STAT_free_slowpath, PC_SLAB_STAT_free_remote, PC_SLAB_STAT_free_frozen,
		PC_SLAB_STAT_free_add_partial, PC_SLAB_STAT_free_remove_partial,
		PC_SLAB_STAT_alloc_refill, PC_SLAB_STAT_alloc_from_partial,
		PC_SLAB_STAT_cpu_partial_alloc, PC_SLAB_STAT_cpu_partial_free,
		PC_SLAB_STAT_cpu_partial_drain, PC_SLAB_STAT_slab_alloc,
		PC_SLAB_STAT_deactivate_full, PC_SLAB_STAT_deactivate_partial,
		PC_SLAB_STAT_deactivate_empty,
	};
	for (size_t i = 0; i < PC_ARRAY_SIZE(must); i++) {
		if (st[must[i]] == 0) {
			fprintf(stderr, "path %s never taken\n", pc_slab_stat_names[must[i]]);
			CHECK(st[must[i]] > 0);
		}
	}
	fprintf(stderr, "stats:");
	for (int i = 0; i < PC_SLAB_STAT_COUNT; i++)
		fprintf(stderr, " %s=%" PRIu64, pc_slab_stat_names[i], st[i]);
	fprintf(stderr, "\n");

	/* Free everything, oldest first; all counts go to zero and shrink
	 * returns every slab. */
	for (unsigned k = 0; k < NCACHES; k++) {
		struct model *m = &models[k];
		while (m->nlive)
			do_free(k, 0);
	}
	check_all("all freed");
	for (unsigned k = 0; k < NCACHES; k++) {
		struct model *m = &models[k];
		pc_cache_shrink(m->s);
		struct pc_cache_info info;
		pc_cache_info(m->s, &info);
		CHECK_EQ(info.slabs, 0);
		CHECK_EQ(info.total_objects, 0);
		CHECK_EQ(pc_cache_check(m->s), 0);
		CHECK_EQ(pc_cache_destroy(m->s), 0);
		free(m->live);
	}
	CHECK(pc_page_check());
	apply_phase(&phases[0]);
}

int main(void)
{
	/* White-box tests of the slab layer beneath the sheaves (whose own
	 * tests are slab/sheaves*): without sheaves, every call reaches it. */
	REQUIRE(pc_option_set(PC_OPT_SLUB_SHEAF_CAPACITY, 0, true) == 0);
	pc_page_init();
	RUN(random_model);
	return test_report();
}
