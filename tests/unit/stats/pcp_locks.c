/*
 * tests/unit/stats/pcp_locks.c - the per-CPU page list locks in lock_stat
 * (issue 10): a pcp lock is a pc_spin_stat, summed per zone into the rows
 * "pcp/<zone>" and the class row "pcp", in the text, the JSON and the
 * pcmalloc_ctl_get names.
 *  - a known sequence: pinned to one CPU, with no release pass due, N page
 *    allocations and N frees of order 0 are exactly 2N acquisitions (one
 *    try-lock each) of the zone's pcp locks, plus one per refill (which
 *    takes its batch from the zone with the pcp lock dropped and takes it
 *    again to put the batch on the list: page/pcp.c), in its row and the
 *    class row;
 *    reading the statistics takes the pcp locks uncounted; with statistics
 *    off nothing is counted;
 *  - a forced contention: this thread holds pcp lock 0 of zone 0 while
 *    another thread drains every per-CPU list (pc_page_drain_all, which
 *    takes each pcp lock blocking); the contended hook tells when that
 *    thread is committed to the wait (its start time taken), and the holder
 *    then holds on for at least HOLD_NS by the clock, so the waiter's wait
 *    is longer than HOLD_NS whatever the scheduler does: contentions > 0,
 *    waittime > 0 and a wait share > 0 in the row and the class, in every
 *    format.
 * Links every layer but the C library's names (pcmalloc_prefixed).
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "stats/stats.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#define N_PAGES 64
#define HOLD_NS 1000000u /* the holder's least hold once the waiter waits */
#define REPORT_MAX (4 << 20)

static char report[REPORT_MAX];

static long stat_of(const char *row, const char *field)
{
	char name[128];
	long v = -1;
	snprintf(name, sizeof(name), "stats.lock.%s.%s", row, field);
	REQUIRE(pcmalloc_ctl_get(name, &v) == 0);
	return v;
}

/* The snapshot index of zone z (its row is "pcp/<index>"). */
static unsigned zone_index(const struct pc_zone *z)
{
	for (unsigned i = 0; i < pc_zone_count(); i++)
		if (pc_zone_get(i) == z)
			return i;
	REQUIRE(!"zone not found");
	return 0;
}

TEST(acquisitions_count_a_known_sequence)
{
	cpu_set_t saved;
	REQUIRE(sched_getaffinity(0, sizeof(saved), &saved) == 0);
	REQUIRE(pin_cpu(0)); /* the first CPU the process may run on */
	unsigned cpu = (unsigned)test_cpu(0);
	static void *pages[N_PAGES];
	pages[0] = pc_alloc_pages(0); /* the zone this CPU takes pages from */
	REQUIRE(pages[0] != NULL);
	struct pc_zone *z = zone_of(pages[0]);
	pc_free_pages(pages[0], 0);
	/* No release pass (whose decay try-locks every pcp of a zone) from
	 * here: the next is due in 2^38 ms, and the little this test frees
	 * stays far below the dirty bound. */
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, 1L << 40);
	pc_page_release_due();
	char row[32];
	snprintf(row, sizeof(row), "pcp/%u", zone_index(z));

	long row0 = stat_of(row, "acquisitions"), cls0 = stat_of("pcp", "acquisitions");
	CHECK_EQ(stat_of(row, "acquisitions"), row0); /* reading counts nothing */
	uint64_t refills0 = z->pcp[cpu].refills; /* only this thread uses this pcp */
	for (int i = 0; i < N_PAGES; i++)
		REQUIRE((pages[i] = pc_alloc_pages(0)) != NULL);
	for (int i = 0; i < N_PAGES; i++)
		pc_free_pages(pages[i], 0);
	long expect = 2 * N_PAGES + (long)(z->pcp[cpu].refills - refills0);
	CHECK(z->pcp[cpu].refills > refills0); /* the sequence refilled the list */
	CHECK_EQ(stat_of(row, "acquisitions") - row0, expect);
	CHECK_EQ(stat_of("pcp", "acquisitions") - cls0, expect);
	CHECK(stat_of(row, "holdtime_max") >= stat_of(row, "holdtime_min"));

	/* statistics off: the same sequence counts nothing */
	REQUIRE(pcmalloc_ctl_set("stats.enable", 0) == 0);
	for (int i = 0; i < N_PAGES; i++)
		REQUIRE((pages[i] = pc_alloc_pages(0)) != NULL);
	for (int i = 0; i < N_PAGES; i++)
		pc_free_pages(pages[i], 0);
	REQUIRE(pcmalloc_ctl_set("stats.enable", 1) == 0);
	CHECK_EQ(stat_of(row, "acquisitions") - row0, expect);
	CHECK_EQ(z->pcp[cpu].lock.acquired_ns, 0);
	REQUIRE(sched_setaffinity(0, sizeof(saved), &saved) == 0);
}

/* ---- forced contention on a pcp lock ------------------------------------------ */
static struct pc_spin_stat *_Atomic watched;
static _Atomic bool waiter_waits;

static void seen_waiting(struct pc_spin_stat *l)
{
	if (l == pc_load_relaxed(&watched))
		pc_store_relaxed(&waiter_waits, true);
}

static void *drainer(void *arg)
{
	(void)arg;
	pc_page_drain_all(); /* blocks on the pcp lock the main thread holds */
	return NULL;
}

/* The lock_stat text row called name: contentions (column 2) and waittime-
 * max in us (column 4), or false. */
static bool lock_stat_row(const char *name, unsigned long *con, double *wmax)
{
	char want[80];
	snprintf(want, sizeof(want), "%40s:", name);
	const char *p = strstr(report, want);
	if (!p)
		return false;
	unsigned long con_b, acq_b, acq;
	double f[4], g[4];
	int n = sscanf(p + strlen(want), "%lu %lu %lf %lf %lf %lf %lu %lu %lf %lf %lf %lf", &con_b,
		       con, &f[0], &f[1], &f[2], &f[3], &acq_b, &acq, &g[0], &g[1], &g[2], &g[3]);
	*wmax = f[1];
	return n == 12;
}

/* The JSON lock object called name: the number after "field": in it. */
static long json_lock_field(const char *json, const char *name, const char *field)
{
	char want[96];
	snprintf(want, sizeof(want), "{\"name\":\"%s\",\"class\":\"pcp\"", name);
	const char *p = strstr(json, want);
	if (!p)
		return -1;
	const char *end = strchr(p, '}');
	snprintf(want, sizeof(want), "\"%s\":", field);
	const char *f = strstr(p, want);
	return f && f < end ? strtol(f + strlen(want), NULL, 10) : -1;
}

TEST(forced_contention)
{
	struct pc_zone *z = pc_zone_get(0);
	struct pc_spin_stat *l = &z->pcp[0].lock;
	long con0 = stat_of("pcp/0", "contentions");
	pc_store_relaxed(&watched, l);
	pc_store_relaxed(&pc_spin_contended_hook, seen_waiting);
	pc_spin_stat_lock(l);
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, drainer, NULL) == 0);
	while (!pc_load_relaxed(&waiter_waits))
		sched_yield();
	/* The waiter took its start time before the hook ran: its wait now
	 * lasts at least until this hold ends. */
	uint64_t seen = os_now_ns();
	while (os_now_ns() - seen < HOLD_NS)
		sched_yield();
	pc_spin_stat_unlock(l);
	pthread_join(t, NULL);
	pc_store_relaxed(&pc_spin_contended_hook, NULL);

	CHECK(stat_of("pcp/0", "contentions") - con0 >= 1);
	CHECK(stat_of("pcp/0", "waittime_max") >= HOLD_NS);
	CHECK(stat_of("pcp/0", "waittime_total") >= HOLD_NS);
	CHECK(stat_of("pcp/0", "waittime_min") > 0);
	CHECK(stat_of("pcp/0", "wait_share_ppm") > 0);
	CHECK(stat_of("pcp", "contentions") >= 1);
	CHECK(stat_of("pcp", "wait_share_ppm") > 0);

	size_t len = pcmalloc_stats_format("text", report, sizeof(report));
	REQUIRE(len > 0 && len < sizeof(report));
	unsigned long con = 0;
	double wmax = 0;
	CHECK(lock_stat_row("pcp/0", &con, &wmax) && con >= 1 && wmax >= HOLD_NS / 1000.0);
	CHECK(lock_stat_row("pcp", &con, &wmax) && con >= 1 && wmax >= HOLD_NS / 1000.0);
	const char *share = strstr(report, "\npcp ");
	CHECK(share != NULL && strstr(share, "%") != NULL);
	double pct = 0;
	CHECK(share && sscanf(share + 5, " %lf%%", &pct) == 1 && pct > 0);

	char *json = pcmalloc_stats_json();
	REQUIRE(json != NULL);
	CHECK(json_lock_field(json, "pcp/0", "contentions") >= 1);
	CHECK(json_lock_field(json, "pcp/0", "waittime_max") >= HOLD_NS);
	CHECK(json_lock_field(json, "pcp", "wait_share_ppm") > 0);
	CHECK(strstr(json, "{\"name\":\"pcp\",\"class\":\"pcp\",\"is_class\":true") != NULL);
	pc_free(json);
}

int main(void)
{
	alarm(300);
	pc_stats_start();
	REQUIRE(pcmalloc_ctl_set("stats.enable", 1) == 0);
	REQUIRE(pc_page_try_init());
	RUN(acquisitions_count_a_known_sequence);
	RUN(forced_contention);
	return test_report();
}
