/*
 * stats/names.c - statistics by name, for pcmalloc_ctl_get (registered with
 * ctl.c at start-up). Names come from the X-macro lists of stats.h:
 *   stats.<total>                     stats.allocated, stats.resident, ...
 *   stats.cache.<cache>.<field>       a PC_STATS_CACHE field or SLUB counter
 *   stats.lock.<row>.<field>          a PC_STATS_LOCK field; rows "zone/0",
 *                                     "kmalloc-64/list_lock",
 *                                     "kmalloc-64/barn", or a class
 *   stats.zone.<n>.<field>            a PC_STATS_ZONE field
 *   stats.hist.<name>.<count|sum|avg> a PC_STATS_HISTS histogram
 * The field is what follows the last '.', so row and cache names may hold
 * dots. Each read takes a snapshot (it walks every cache and zone).
 */
#include "stats.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Split "<object>.<field>" at the last dot into obj (a copy) and field. */
static bool split_last(const char *rest, char *obj, size_t size, const char **field)
{
	const char *dot = strrchr(rest, '.');
	if (!dot || dot == rest || (size_t)(dot - rest) >= size)
		return false;
	memcpy(obj, rest, (size_t)(dot - rest));
	obj[dot - rest] = '\0';
	*field = dot + 1;
	return true;
}

static int lookup_cache(const struct pc_stats_snapshot *s, const char *rest, uint64_t *v)
{
	char obj[64];
	const char *f;
	if (!split_last(rest, obj, sizeof(obj), &f))
		return -1;
	for (unsigned i = 0; i < s->nr_caches; i++) {
		const struct pc_stats_cache *c = &s->caches[i];
		if (strcmp(c->name, obj) != 0)
			continue;
#define PC_STATS_NAME_CACHE(n) if (strcmp(f, #n) == 0) { *v = c->n; return 0; }
		PC_STATS_CACHE(PC_STATS_NAME_CACHE)
#undef PC_STATS_NAME_CACHE
		for (int k = 0; k < PC_SLAB_STAT_COUNT; k++)
			if (strcmp(f, pc_slab_stat_names[k]) == 0) {
				*v = c->slub[k];
				return 0;
			}
	}
	return -1;
}

static int lookup_lock(const struct pc_stats_snapshot *s, const char *rest, uint64_t *v)
{
	char obj[64];
	const char *f;
	if (!split_last(rest, obj, sizeof(obj), &f))
		return -1;
	for (unsigned i = 0; i < s->nr_locks; i++) {
		const struct pc_stats_lock *r = &s->locks[i];
		if (strcmp(r->name, obj) != 0)
			continue;
#define PC_STATS_NAME_LOCK(n) if (strcmp(f, #n) == 0) { *v = r->n; return 0; }
		PC_STATS_LOCK(PC_STATS_NAME_LOCK)
#undef PC_STATS_NAME_LOCK
	}
	return -1;
}

static int lookup_zone(const struct pc_stats_snapshot *s, const char *rest, uint64_t *v)
{
	char obj[16], *end;
	const char *f;
	if (!split_last(rest, obj, sizeof(obj), &f))
		return -1;
	unsigned long n = strtoul(obj, &end, 10);
	if (*end != '\0' || end == obj || n >= s->nr_zones)
		return -1;
	const struct pc_stats_zone *z = &s->zones[n];
#define PC_STATS_NAME_ZONE(x) if (strcmp(f, #x) == 0) { *v = z->x; return 0; }
	PC_STATS_ZONE(PC_STATS_NAME_ZONE)
#undef PC_STATS_NAME_ZONE
	return -1;
}

static int lookup_hist(const struct pc_stats_snapshot *s, const char *rest, uint64_t *v)
{
	char obj[64];
	const char *f;
	if (!split_last(rest, obj, sizeof(obj), &f))
		return -1;
	for (int i = 0; i < PC_STATS_HIST_COUNT; i++) {
		const struct pc_stats_hist *h = &s->hist[i];
		if (strcmp(h->name, obj) != 0)
			continue;
		if (strcmp(f, "count") == 0)
			*v = h->count;
		else if (strcmp(f, "sum") == 0)
			*v = h->sum;
		else if (strcmp(f, "avg") == 0)
			*v = h->count ? h->sum / h->count : 0;
		else
			return -1;
		return 0;
	}
	return -1;
}

int pc_stats_lookup(const struct pc_stats_snapshot *s, const char *name, uint64_t *v)
{
	if (strncmp(name, "stats.", 6) != 0)
		return -1;
	const char *rest = name + 6;
#define PC_STATS_NAME_TOTAL(n) if (strcmp(rest, #n) == 0) { *v = s->totals.n; return 0; }
	PC_STATS_TOTALS(PC_STATS_NAME_TOTAL)
#undef PC_STATS_NAME_TOTAL
	if (strncmp(rest, "cache.", 6) == 0)
		return lookup_cache(s, rest + 6, v);
	if (strncmp(rest, "lock.", 5) == 0)
		return lookup_lock(s, rest + 5, v);
	if (strncmp(rest, "zone.", 5) == 0)
		return lookup_zone(s, rest + 5, v);
	if (strncmp(rest, "hist.", 5) == 0)
		return lookup_hist(s, rest + 5, v);
	return -1;
}

int pc_stats_read(const char *name, long *value)
{
	if (strncmp(name, "stats.", 6) != 0) {
		errno = ENOENT;
		return -1;
	}
	struct pc_stats_snapshot *s = pc_stats_snapshot_take();
	if (!s) {
		errno = ENOMEM;
		return -1;
	}
	uint64_t v = 0;
	int rc = pc_stats_lookup(s, name, &v);
	pc_stats_snapshot_free(s);
	if (rc != 0) {
		errno = ENOENT;
		return -1;
	}
	*value = (long)PC_MIN(v, (uint64_t)LONG_MAX);
	return 0;
}
