/*
 * tests/unit/stats/report.c - the statistics layer against known sequences,
 * with statistics on (also under ThreadSanitizer):
 *  - N objects allocated from one cache give exactly N active objects in its
 *    slabinfo 2.1 line (whose columns are parsed back) and through
 *    pcmalloc_ctl_get, whatever the sheaves took from the slabs beyond them
 *    (sheaf_objects, counted free); freeing them gives 0 active, the freed
 *    objects now in sheaves and barns, and the cache's barn lock has its
 *    lock_stat row (instance and class);
 *  - a forced contention on that cache's list_lock (this thread holds it
 *    until the other thread is asleep on it: the mutex word reads 2, so the
 *    other acquisition waits, whatever the scheduler does) shows
 *    contentions > 0 in its lock_stat row and a wait share > 0 for the
 *    list_lock class;
 *  - every funclatency histogram of the text report has bucket counts that
 *    sum to its count line; the lock_stat header and rows have their 13
 *    columns;
 *  - the totals by name; a freed huge block kept for reuse shows in
 *    huge_cached (and mapped) until pc_trim;
 *  - a barn's raised bound (barn_limit) and the process's charge for it
 *    (barn_charged) by name, as the slab layer counts them;
 *  - a large block freed inside a chunk that other blocks keep (a free
 *    run of the run heap) leaves allocated and active at once, exactly
 *    its pages, and shows in the zones' free pages (it was counted as
 *    allocated until 2026-11-24); its neighbour grown over it in place by
 *    realloc comes back into both at once;
 *  - the medium cache's bounds by name (medium_bound): the CPUs' bounds
 *    summed, as the malloc layer reports them (256 KiB each at first), 0
 *    in thread mode;
 *  - reports taken while other threads allocate and free (TSan checks the
 *    snapshot's reads).
 * Links every layer but the C library's names (pcmalloc_prefixed).
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "stats/stats.h"
#include "test.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#define N_OBJECTS 1000
#define REPORT_MAX (4 << 20)

static char report[REPORT_MAX];

static void take_text(void)
{
	size_t len = pcmalloc_stats_format("text", report, sizeof(report));
	REQUIRE(len > 0 && len < sizeof(report));
}

/* The slabinfo 2.1 line of cache `name`: its columns, or false. */
static bool slabinfo_line(const char *name, unsigned long col[6])
{
	char want[64];
	snprintf(want, sizeof(want), "\n%s ", name);
	const char *p = strstr(report, want);
	if (!p)
		return false;
	char got[64], tun[16], sd[16];
	unsigned long t0, t1, t2, s0, s1, s2;
	int n = sscanf(p + 1, "%63s %lu %lu %lu %lu %lu : %15s %lu %lu %lu : %15s %lu %lu %lu",
		       got, &col[0], &col[1], &col[2], &col[3], &col[4], tun, &t0, &t1, &t2, sd,
		       &s0, &s1, &s2);
	col[5] = s1;
	return n == 14 && strcmp(tun, "tunables") == 0 && strcmp(sd, "slabdata") == 0 &&
	       s0 == s1 && t0 == 0 && s2 == 0;
}

static long lock_stat_contentions(const char *name);

TEST(slabinfo_counts_objects)
{
	CHECK(strncmp(report, "# pcmalloc", 10) == 0);
	struct pc_cache *c = pc_cache_create("probe-200", 200, 0, NULL);
	REQUIRE(c != NULL);
	static void *objs[N_OBJECTS];
	for (int i = 0; i < N_OBJECTS; i++)
		REQUIRE((objs[i] = pc_cache_alloc(c)) != NULL);
	take_text();
	CHECK(strstr(report, "slabinfo - version: 2.1\n# name            <active_objs> "
			     "<num_objs> <objsize> <objperslab> <pagesperslab> : tunables "
			     "<limit> <batchcount> <sharedfactor> : slabdata <active_slabs> "
			     "<num_slabs> <sharedavail>\n") != NULL);
	unsigned long col[6];
	CHECK(slabinfo_line("probe-200", col));
	CHECK_EQ(col[0], N_OBJECTS);            /* active_objs */
	CHECK(col[1] >= N_OBJECTS);             /* num_objs */
	CHECK_EQ(col[2], c->size);              /* objsize */
	CHECK_EQ(col[1], col[3] * col[5]);      /* objperslab * num_slabs */
	long v = -1;
	CHECK_EQ(pcmalloc_ctl_get("stats.cache.probe-200.active_objs", &v), 0);
	CHECK_EQ(v, N_OBJECTS);
	CHECK_EQ(pcmalloc_ctl_get("stats.cache.probe-200.slab_alloc", &v), 0);
	CHECK(v > 0); /* new slabs: a SLUB counter by name */
	errno = 0;
	CHECK_EQ(pcmalloc_ctl_get("stats.cache.no-such-cache.active_objs", &v), -1);
	CHECK_EQ(errno, ENOENT);
	for (int i = 0; i < N_OBJECTS; i++)
		pc_cache_free(c, objs[i]);
	take_text();
	CHECK(slabinfo_line("probe-200", col));
	CHECK_EQ(col[0], 0);
	long cap = 0, held = 0;
	CHECK_EQ(pcmalloc_ctl_get("stats.cache.probe-200.sheaf_capacity", &cap), 0);
	CHECK_EQ(pcmalloc_ctl_get("stats.cache.probe-200.sheaf_objects", &held), 0);
	if (cap > 0) { /* the frees went to sheaves (and full ones to the barn) */
		CHECK(held > 0);
		CHECK(lock_stat_contentions("probe-200/barn") >= 0); /* its row */
		CHECK(lock_stat_contentions("barn") >= 0);           /* the class */
		CHECK_EQ(pcmalloc_ctl_get("stats.lock.probe-200/barn.acquisitions", &v), 0);
		CHECK(v > 0);
	}
	CHECK_EQ(pc_cache_check(c), 0); /* flushes the sheaves */
	CHECK_EQ(pcmalloc_ctl_get("stats.cache.probe-200.sheaf_objects", &held), 0);
	CHECK_EQ(held, 0);
	take_text();
	CHECK(slabinfo_line("probe-200", col));
	CHECK_EQ(col[0], 0);
}

/* ---- forced contention on a list_lock ------------------------------------------ */
static void *contender(void *arg)
{
	struct pc_lock *l = arg;
	pc_lock_acquire(l); /* waits: the main thread holds l */
	pc_lock_release(l);
	pc_lock_thread_exit();
	return NULL;
}

/* The lock_stat row called name: contentions (column 2), or -1. */
static long lock_stat_contentions(const char *name)
{
	char want[80];
	snprintf(want, sizeof(want), "%40s:", name);
	const char *p = strstr(report, want);
	if (!p)
		return -1;
	unsigned long con_b, con;
	double f[4];
	unsigned long acq_b, acq;
	double g[4];
	int n = sscanf(p + strlen(want), "%lu %lu %lf %lf %lf %lf %lu %lu %lf %lf %lf %lf", &con_b,
		       &con, &f[0], &f[1], &f[2], &f[3], &acq_b, &acq, &g[0], &g[1], &g[2], &g[3]);
	return n == 12 ? (long)con : -1;
}

TEST(forced_contention)
{
	struct pc_cache *c = pc_cache_create("probe-contend", 72, 0, NULL);
	REQUIRE(c != NULL);
	struct pc_lock *l = &c->node[0]->list_lock;
	REQUIRE(l->kind == PC_LOCK_MUTEX); /* the default lock.kind */
	pc_lock_acquire(l);
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, contender, l) == 0);
	/* 2: the contender is asleep on the mutex word, so it waits for sure. */
	while (pc_load_relaxed(&l->u.mutex.state) != 2)
		sched_yield();
	usleep(2000); /* a wait long enough to be a visible share */
	pc_lock_release(l);
	pthread_join(t, NULL);
	take_text();
	CHECK(strstr(report, "lock_stat version 0.4\n") != NULL);
	CHECK(lock_stat_contentions("probe-contend/list_lock") >= 1);
	CHECK(lock_stat_contentions("list_lock") >= 1); /* the class row */
	long v = 0;
	CHECK_EQ(pcmalloc_ctl_get("stats.lock.probe-contend/list_lock.contentions", &v), 0);
	CHECK(v >= 1);
	CHECK_EQ(pcmalloc_ctl_get("stats.lock.list_lock.wait_share_ppm", &v), 0);
	CHECK(v > 0);
	CHECK_EQ(pcmalloc_ctl_get("stats.lock.probe-contend/list_lock.waittime_max", &v), 0);
	CHECK(v >= 2000000);
	CHECK_EQ(pcmalloc_ctl_get("stats.hist.list_lock_wait.count", &v), 0);
	CHECK(v >= 1);
	/* the share table lists the class with a non-zero share */
	const char *share = strstr(report, "\nlist_lock ");
	CHECK(share != NULL && strstr(share, "%") != NULL);
}

/* Every histogram: bucket counts sum to "count: N" of its avg line. */
TEST(funclatency_buckets_sum_to_count)
{
	take_text();
	int seen = 0;
	const char *p = report;
	while ((p = strstr(p, " : count     distribution\n")) != NULL) {
		p = strchr(p, '\n') + 1;
		unsigned long long sum = 0, lo, hi, n, avg, total, count, prev_hi = 0;
		bool first = true;
		while (sscanf(p, " %llu -> %llu : %llu |", &lo, &hi, &n) == 3) {
			CHECK(first ? lo == 0 && hi == 1 : lo == prev_hi + 1);
			CHECK(hi == 2 * lo - 1 || (lo == 0 && hi == 1));
			prev_hi = hi;
			first = false;
			sum += n;
			p = strchr(p, '\n') + 1;
		}
		char unit[16], unit2[16];
		CHECK_EQ(sscanf(p, "\navg = %llu %15s total: %llu %15s count: %llu", &avg, unit,
				&total, unit2, &count), 5);
		CHECK_EQ(sum, count);
		CHECK(count == 0 || avg == total / count);
		seen++;
	}
	CHECK_EQ(seen, PC_STATS_HIST_COUNT);
	long v = 0;
	CHECK_EQ(pcmalloc_ctl_get("stats.hist.slab_alloc_slow.count", &v), 0);
	CHECK(v > 0); /* the probe caches took the slow path */
	long cap = 0;
	CHECK_EQ(pcmalloc_ctl_get("stats.cache.probe-200.sheaf_capacity", &cap), 0);
	CHECK_EQ(pcmalloc_ctl_get("stats.hist.sheaf_alloc_slow.count", &v), 0);
	CHECK(cap == 0 || v > 0); /* with sheaves, 1000 allocations refilled some */
}

TEST(totals_and_api)
{
	long alloc = 0, mapped = 0, resident = 0, active = 0, released = -1;
	void *p = pc_malloc(100000); /* large */
	REQUIRE(p);
	CHECK_EQ(pcmalloc_ctl_get("stats.allocated", &alloc), 0);
	CHECK_EQ(pcmalloc_ctl_get("stats.active", &active), 0);
	CHECK_EQ(pcmalloc_ctl_get("stats.mapped", &mapped), 0);
	CHECK_EQ(pcmalloc_ctl_get("stats.resident", &resident), 0);
	CHECK_EQ(pcmalloc_ctl_get("stats.released", &released), 0);
	CHECK(alloc >= 100000 && alloc <= active && active <= mapped && resident <= mapped);
	CHECK(released >= 0);
	pc_free(p);
	/* A freed huge block kept for reuse is mapped, not allocated: with a
	 * release delay no test outlives, it stays cached until pc_trim. */
	long delay = 0, cached = -1, mapped2 = 0;
	CHECK_EQ(pcmalloc_ctl_get("vm.release_delay_ms", &delay), 0);
	CHECK_EQ(pcmalloc_ctl_set("vm.release_delay_ms", 1L << 30), 0);
	size_t huge = PC_LARGE_MAX * 2;
	void *h = pc_malloc(huge);
	REQUIRE(h);
	pc_free(h);
	CHECK_EQ(pcmalloc_ctl_get("stats.huge_cached", &cached), 0);
	CHECK_EQ(pcmalloc_ctl_get("stats.mapped", &mapped2), 0);
	CHECK(cached >= (long)huge && mapped2 >= cached);
	pc_trim();
	CHECK_EQ(pcmalloc_ctl_get("stats.huge_cached", &cached), 0);
	CHECK_EQ(cached, 0);
	CHECK_EQ(pcmalloc_ctl_set("vm.release_delay_ms", delay), 0);
	char *json = pcmalloc_stats_json();
	REQUIRE(json != NULL);
	CHECK(json[0] == '{' && strstr(json, "\"version\":1") && strstr(json, "\"probe-200\""));
	pc_free(json);
	errno = 0;
	CHECK_EQ(pcmalloc_stats_format("yaml", report, sizeof(report)), 0);
	CHECK_EQ(errno, EINVAL);
	CHECK(pcmalloc_stats_format("xml", report, sizeof(report)) > 0);
	CHECK(strncmp(report, "<malloc version=\"1\">", 20) == 0);
}

/* The barn's bound that follows demand (slab/barn.c, "The bound") by name:
 * rounds of "allocate 400, free them all" on a cache of 4-object sheaves
 * whose barns keep 2 full ones make the barn refuse full sheaves and then
 * miss, which raises its bound within slub.barn_max_kb; the statistics give
 * the slab layer's own bound and charge. No decay pass runs (a release delay
 * no test outlives), so the raise stays until the destroy gives it back. */
TEST(barn_bound_by_name)
{
	long delay = 0, cap = 0, base = 0, budget = 0;
	CHECK_EQ(pcmalloc_ctl_get("vm.release_delay_ms", &delay), 0);
	CHECK_EQ(pcmalloc_ctl_get("slub.sheaf_capacity", &cap), 0);
	CHECK_EQ(pcmalloc_ctl_get("slub.barn_sheaves", &base), 0);
	CHECK_EQ(pcmalloc_ctl_get("slub.barn_max_kb", &budget), 0);
	CHECK_EQ(pcmalloc_ctl_set("vm.release_delay_ms", 1L << 30), 0);
	CHECK_EQ(pcmalloc_ctl_set("slub.sheaf_capacity", 4), 0);
	CHECK_EQ(pcmalloc_ctl_set("slub.barn_sheaves", 2), 0);
	CHECK_EQ(pcmalloc_ctl_set("slub.barn_max_kb", 1024), 0);
	struct pc_cache *c = pc_cache_create("probe-barn", 64, 0, NULL);
	REQUIRE(c != NULL);
	static void *objs[400];
	struct pc_cache_info info;
	for (int round = 0; round < 8; round++) {
		for (int i = 0; i < 400; i++)
			REQUIRE((objs[i] = pc_cache_alloc(c)) != NULL);
		for (int i = 0; i < 400; i++)
			pc_cache_free(c, objs[i]);
	}
	pc_cache_info(c, &info);
	REQUIRE(info.barn_limit > 2); /* raised: what the names must show */
	long v = -1;
	CHECK_EQ(pcmalloc_ctl_get("stats.cache.probe-barn.barn_limit", &v), 0);
	CHECK_EQ(v, (long)info.barn_limit);
	CHECK_EQ(pcmalloc_ctl_get("stats.barn_charged", &v), 0);
	CHECK(v > 0);
	CHECK_EQ(v, (long)pc_slab_barn_charged());
	CHECK_EQ(pc_cache_destroy(c), 0);
	CHECK_EQ(pcmalloc_ctl_get("stats.barn_charged", &v), 0);
	CHECK_EQ(v, 0); /* the destroy gave its charge back */
	CHECK_EQ(pcmalloc_ctl_set("slub.barn_max_kb", budget), 0);
	CHECK_EQ(pcmalloc_ctl_set("slub.barn_sheaves", base), 0);
	CHECK_EQ(pcmalloc_ctl_set("slub.sheaf_capacity", cap), 0);
	CHECK_EQ(pcmalloc_ctl_set("vm.release_delay_ms", delay), 0);
}

static long total(const char *name)
{
	long v = -1;
	CHECK_EQ(pcmalloc_ctl_get(name, &v), 0);
	return v;
}

/* Pages on the buddy lists and in free runs, all zones. */
static long zone_free_pages(void)
{
	long pages = 0;
	for (unsigned z = 0; z < pc_zone_count(); z++) {
		char name[64];
		snprintf(name, sizeof(name), "stats.zone.%u.free_pages", z);
		pages += total(name);
		snprintf(name, sizeof(name), "stats.zone.%u.run_free_pages", z);
		pages += total(name);
	}
	return pages;
}

TEST(free_runs_not_allocated)
{
	/* No release pass takes free runs off the heap meanwhile (a release
	 * delay no test outlives; the bound's passes need 8 MiB dirty). */
	long delay = 0;
	CHECK_EQ(pcmalloc_ctl_get("vm.release_delay_ms", &delay), 0);
	CHECK_EQ(pcmalloc_ctl_set("vm.release_delay_ms", 1L << 30), 0);
	/* 75 pages: above the medium cache's and the per-CPU run lists'
	 * longest runs (64 pages), so the free goes to the run heap. */
	/* The layout by construction: one block of 225 pages shrunk in place
	 * to 75 leaves a free run of 150 pages right after it (the run heap
	 * keeps it: a free run inside a chunk the block keeps). */
	const long page = (long)PC_PAGE_SIZE, size = 75 * page;
	char *a = pc_malloc((size_t)(225 * page));
	REQUIRE(a != NULL);
	a[0] = 1;
	long alloc = total("stats.allocated"), active = total("stats.active"), free = zone_free_pages();
	char *s = pc_realloc(a, (size_t)size);
	CHECK(s == a);
	CHECK_EQ(total("stats.allocated"), alloc - 150 * page);
	CHECK_EQ(total("stats.active"), active - 150 * page);
	CHECK(zone_free_pages() >= free + 150); /* more if a per-CPU list decayed meanwhile */
	/* Grown in place over 65 of those pages: the statistics see the free
	 * run it took at once. */
	char *g = pc_realloc(a, (size_t)(140 * page));
	CHECK(g == a);
	CHECK_EQ(total("stats.allocated"), alloc - 85 * page);
	CHECK_EQ(total("stats.active"), active - 85 * page);
	CHECK(zone_free_pages() >= free + 85 && zone_free_pages() < free + 150);
	pc_free(g);
	CHECK_EQ(pcmalloc_ctl_set("vm.release_delay_ms", delay), 0);
}

TEST(medium_bound_by_name)
{
	REQUIRE(pc_malloc_init());
	pc_trim(); /* every CPU's raise reset: each at its base bound */
	size_t sum = 0;
	for (unsigned c = 0; c < os_cpu_count(); c++)
		sum += medium_bound_bytes(c);
	long v = -1;
	CHECK_EQ(pcmalloc_ctl_get("stats.medium_bound", &v), 0);
	CHECK_EQ((size_t)v, sum);
	if (pc_load_relaxed(&pc_medium_slots))
		CHECK(sum >= os_cpu_count() * PC_MIN((size_t)256 << 10, (size_t)pc_option(PC_OPT_MALLOC_MEDIUM_CACHE_KB) << 10));
	else
		CHECK_EQ(v, 0); /* thread mode: a fixed bound per thread */
}

/* ---- reports while other threads allocate ---------------------------------------- */
static _Atomic bool churn_stop;

static void *churn(void *arg)
{
	uint64_t seed = (uintptr_t)arg;
	void *slots[64] = { 0 };
	while (!pc_load_relaxed(&churn_stop)) {
		unsigned i = (unsigned)(test_rand(&seed) % 64);
		pc_free(slots[i]);
		slots[i] = pc_malloc(1 + test_rand(&seed) % 20000);
	}
	for (unsigned i = 0; i < 64; i++)
		pc_free(slots[i]);
	pc_lock_thread_exit();
	return NULL;
}

TEST(reports_under_churn)
{
	pthread_t t[3];
	for (uintptr_t i = 0; i < 3; i++)
		REQUIRE(pthread_create(&t[i], NULL, churn, (void *)(i + 1)) == 0);
	for (int r = 0; r < 20; r++) {
		CHECK(pcmalloc_stats_format(r % 2 ? "json" : "text", report, sizeof(report)) > 0);
		long v;
		CHECK_EQ(pcmalloc_ctl_get("stats.allocated", &v), 0);
	}
	pc_store_relaxed(&churn_stop, true);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
}

int main(void)
{
	alarm(300);
	pc_stats_start();
	REQUIRE(pcmalloc_ctl_set("stats.enable", 1) == 0);
	take_text();
	RUN(slabinfo_counts_objects);
	RUN(forced_contention);
	RUN(funclatency_buckets_sum_to_count);
	RUN(totals_and_api);
	RUN(barn_bound_by_name);
	RUN(free_runs_not_allocated);
	RUN(medium_bound_by_name);
	RUN(reports_under_churn);
	return test_report();
}
