/*
 * stats/text.c - the text report, in layouts that existing tools parse:
 *  1. caches as /proc/slabinfo version 2.1 (both header lines; SLUB's
 *     values: tunables 0 0 0, active_slabs = num_slabs, sharedavail 0),
 *     then SLUB's counters per cache, one "name counter value" line each;
 *  2. locks in /proc/lock_stat's columns (version 0.4 layout; times in
 *     microseconds with two decimals), instance rows then class rows, then
 *     the share of thread time each class spent waiting;
 *  3. log2 histograms in BCC funclatency's layout;
 *  4. the totals.
 * docs/statistics.md shows a sample and how each column is defined.
 */
#include "stats.h"

static void text_slabinfo(struct pc_out *o, const struct pc_stats_snapshot *s)
{
	pc_out_printf(o, "slabinfo - version: 2.1\n");
	pc_out_printf(o, "# name            <active_objs> <num_objs> <objsize> <objperslab> "
		      "<pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : "
		      "slabdata <active_slabs> <num_slabs> <sharedavail>\n");
	for (unsigned i = 0; i < s->nr_caches; i++) {
		const struct pc_stats_cache *c = &s->caches[i];
		pc_out_printf(o, "%-17s %6llu %6llu %6llu %4llu %4llu : tunables %4u %4u %4u : "
			      "slabdata %6llu %6llu %6u\n", c->name,
			      (unsigned long long)c->active_objs, (unsigned long long)c->num_objs,
			      (unsigned long long)c->objsize, (unsigned long long)c->objperslab,
			      (unsigned long long)c->pagesperslab, 0u, 0u, 0u,
			      (unsigned long long)c->active_slabs, (unsigned long long)c->num_slabs, 0u);
	}
}

static void text_slub_counters(struct pc_out *o, const struct pc_stats_snapshot *s)
{
	pc_out_printf(o, "\n# SLUB counters (/sys/kernel/slab/<cache>/<counter>): cache counter value\n");
	for (unsigned i = 0; i < s->nr_caches; i++) {
		const struct pc_stats_cache *c = &s->caches[i];
		for (int k = 0; k < PC_SLAB_STAT_COUNT; k++)
			pc_out_printf(o, "%s %s %llu\n", c->name, pc_slab_stat_names[k],
				      (unsigned long long)c->slub[k]);
#define PC_STATS_CACHE_LINE(f) pc_out_printf(o, "%s %s %llu\n", c->name, #f, \
					     (unsigned long long)c->f);
		PC_STATS_CACHE(PC_STATS_CACHE_LINE)
#undef PC_STATS_CACHE_LINE
	}
}

#define LOCK_STAT_WIDTH (40 + 1 + 12 * (14 + 1))

static void dashes(struct pc_out *o, char c)
{
	char line[LOCK_STAT_WIDTH + 2];
	for (int i = 0; i < LOCK_STAT_WIDTH; i++)
		line[i] = c;
	line[LOCK_STAT_WIDTH] = '\n';
	line[LOCK_STAT_WIDTH + 1] = '\0';
	pc_out_printf(o, "%s", line);
}

static void lock_row(struct pc_out *o, const struct pc_stats_lock *r)
{
	char t[8][24];
	pc_out_usec(t[0], sizeof(t[0]), r->waittime_min);
	pc_out_usec(t[1], sizeof(t[1]), r->waittime_max);
	pc_out_usec(t[2], sizeof(t[2]), r->waittime_total);
	pc_out_usec(t[3], sizeof(t[3]), r->waittime_avg);
	pc_out_usec(t[4], sizeof(t[4]), r->holdtime_min);
	pc_out_usec(t[5], sizeof(t[5]), r->holdtime_max);
	pc_out_usec(t[6], sizeof(t[6]), r->holdtime_total);
	pc_out_usec(t[7], sizeof(t[7]), r->holdtime_avg);
	pc_out_printf(o, "%40s:%14llu %14llu %14s %14s %14s %14s %14llu %14llu %14s %14s %14s %14s\n",
		      r->name, (unsigned long long)r->con_bounces,
		      (unsigned long long)r->contentions, t[0], t[1], t[2], t[3],
		      (unsigned long long)r->acq_bounces, (unsigned long long)r->acquisitions,
		      t[4], t[5], t[6], t[7]);
}

static void text_lock_stat(struct pc_out *o, const struct pc_stats_snapshot *s)
{
	pc_out_printf(o, "\nlock_stat version 0.4\n");
	dashes(o, '-');
	pc_out_printf(o, "%40s %14s %14s %14s %14s %14s %14s %14s %14s %14s %14s %14s %14s\n",
		      "class name", "con-bounces", "contentions", "waittime-min", "waittime-max",
		      "waittime-total", "waittime-avg", "acq-bounces", "acquisitions",
		      "holdtime-min", "holdtime-max", "holdtime-total", "holdtime-avg");
	dashes(o, '-');
	pc_out_printf(o, "\n");
	for (int pass = 0; pass < 2; pass++) /* instances, then class totals */
		for (unsigned i = 0; i < s->nr_locks; i++)
			if (s->locks[i].is_class == (pass == 1))
				lock_row(o, &s->locks[i]);
	pc_out_printf(o, "\n# share of thread time spent waiting (thread time %llu ns)\n",
		      (unsigned long long)s->totals.thread_ns);
	pc_out_printf(o, "%-24s %14s\n", "class", "wait-share");
	for (unsigned i = 0; i < s->nr_locks; i++)
		if (s->locks[i].is_class)
			pc_out_printf(o, "%-24s %9llu.%04llu%%\n", s->locks[i].name,
				      (unsigned long long)(s->locks[i].wait_share_ppm / 10000),
				      (unsigned long long)(s->locks[i].wait_share_ppm % 10000));
}

/* BCC's star bar: floor(width * val / max) stars. */
static void stars(char *buf, uint64_t val, uint64_t max, int width)
{
	int n = max ? (int)((unsigned __int128)val * (unsigned)width / max) : 0;
	for (int i = 0; i < width; i++)
		buf[i] = i < n ? '*' : ' ';
	buf[width] = '\0';
}

/* One histogram as funclatency prints it: rows from 0 -> 1 up to the last
 * non-empty bucket, then avg, total and count. */
static void text_hist(struct pc_out *o, const struct pc_stats_hist *h)
{
	int last = -1;
	uint64_t max = 0;
	for (int i = 0; i < PC_LOCK_HIST_BUCKETS; i++) {
		if (h->bucket[i])
			last = i;
		max = PC_MAX(max, h->bucket[i]);
	}
	pc_out_printf(o, "\n# %s\n", h->name);
	pc_out_printf(o, "     %-19s : count     distribution\n", h->unit);
	for (int i = 0; i <= last; i++) {
		/* bucket i holds [2^i, 2^(i+1)); funclatency's row i+1 is
		 * [2^i, 2^(i+1) - 1], and its first row is "0 -> 1". */
		unsigned long long low = i == 0 ? 0 : 1ull << i, high = (2ull << i) - 1;
		char bar[41];
		stars(bar, h->bucket[i], max, 40);
		pc_out_printf(o, "%10llu -> %-10llu : %-8llu |%s|\n", low, high,
			      (unsigned long long)h->bucket[i], bar);
	}
	pc_out_printf(o, "\navg = %llu %s, total: %llu %s, count: %llu\n",
		      (unsigned long long)(h->count ? h->sum / h->count : 0), h->unit,
		      (unsigned long long)h->sum, h->unit, (unsigned long long)h->count);
}

static void text_totals(struct pc_out *o, const struct pc_stats_snapshot *s)
{
	pc_out_printf(o, "\n# totals (bytes)\n");
#define PC_STATS_TOTAL_LINE(f) pc_out_printf(o, "%-12s %llu\n", #f, \
					     (unsigned long long)s->totals.f);
	PC_STATS_TOTALS(PC_STATS_TOTAL_LINE)
#undef PC_STATS_TOTAL_LINE
}

void pc_stats_text(struct pc_out *o, const struct pc_stats_snapshot *s)
{
	pc_out_printf(o, "# pcmalloc statistics, pid %llu, stats.enable=%d%s\n",
		      (unsigned long long)s->pid, s->enabled ? 1 : 0,
		      s->truncated ? " (truncated: too many caches or locks)" : "");
	text_slabinfo(o, s);
	text_slub_counters(o, s);
	text_lock_stat(o, s);
	pc_out_printf(o, "\n# histograms (BCC funclatency layout)\n");
	for (int i = 0; i < PC_STATS_HIST_COUNT; i++)
		text_hist(o, &s->hist[i]);
	text_totals(o, s);
}
