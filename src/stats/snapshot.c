/*
 * stats/snapshot.c - read every layer into a struct pc_stats_snapshot.
 *
 * Sources: caches through pc_cache_foreach + pc_cache_info (which takes each
 * list_lock and CPU lock briefly, as reading /proc/slabinfo takes the
 * kernel's); zones and their per-CPU lists (each pcp lock taken briefly, the
 * zone counters read from their relaxed hints, never the zone lock; those
 * pcp lock acquisitions are not counted in the pcp locks' own statistics);
 * the lock registry for lock classes; huge-block counters. The totals are
 * derived from those, as docs/statistics.md defines them.
 */
#include "stats.h"

#include <stdio.h>
#include <string.h>

static _Atomic uint64_t stats_clock_base; /* process CPU ns when stats went on */

void pc_stats_clock_start(void)
{
	pc_store_relaxed(&stats_clock_base, os_process_cpu_ns());
}

static void copy_name(char *dst, size_t size, const char *src)
{
	size_t n = PC_MIN(strlen(src), size - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* ---- locks --------------------------------------------------------------------- */
static void lock_row_fill(struct pc_stats_lock *r, const struct pc_lock_stats *st)
{
	struct pc_lock_stats *s = (struct pc_lock_stats *)(uintptr_t)st;
	r->con_bounces += pc_load_relaxed(&s->con_bounces);
	r->contentions += pc_load_relaxed(&s->contended);
	uint64_t wmin = pc_load_relaxed(&s->wait_ns_min), hmin = pc_load_relaxed(&s->hold_ns_min);
	if (wmin && (r->waittime_min == 0 || wmin < r->waittime_min))
		r->waittime_min = wmin;
	if (hmin && (r->holdtime_min == 0 || hmin < r->holdtime_min))
		r->holdtime_min = hmin;
	r->waittime_max = PC_MAX(r->waittime_max, pc_load_relaxed(&s->wait_ns_max));
	r->waittime_total += pc_load_relaxed(&s->wait_ns_total);
	r->acq_bounces += pc_load_relaxed(&s->acq_bounces);
	r->acquisitions += pc_load_relaxed(&s->acquisitions);
	r->holdtime_max = PC_MAX(r->holdtime_max, pc_load_relaxed(&s->hold_ns_max));
	r->holdtime_total += pc_load_relaxed(&s->hold_ns_total);
	for (unsigned i = 0; i < PC_LOCK_HIST_BUCKETS; i++)
		r->wait_hist[i] += pc_load_relaxed(&s->wait_hist[i]);
}

static struct pc_stats_lock *lock_row_new(struct pc_stats_snapshot *s, const char *name,
					  const char *cls, bool is_class)
{
	if (s->nr_locks == PC_STATS_MAX_LOCKS) {
		s->truncated = true;
		return NULL;
	}
	struct pc_stats_lock *r = &s->locks[s->nr_locks++];
	copy_name(r->name, sizeof(r->name), name);
	copy_name(r->cls, sizeof(r->cls), cls);
	r->is_class = is_class;
	return r;
}

/* The class row called cls, made on first use. */
static struct pc_stats_lock *lock_class_row(struct pc_stats_snapshot *s, const char *cls)
{
	for (unsigned i = 0; i < s->nr_locks; i++)
		if (s->locks[i].is_class && strcmp(s->locks[i].cls, cls) == 0)
			return &s->locks[i];
	return lock_row_new(s, cls, cls, true);
}

static void collect_class(struct pc_lock *l, void *arg)
{
	struct pc_stats_lock *r = lock_class_row(arg, l->name);
	if (r)
		lock_row_fill(r, l->stats);
}

/* Averages and wait shares, once every row is summed. */
static void lock_rows_finish(struct pc_stats_snapshot *s)
{
	uint64_t thread_ns = s->totals.thread_ns;
	for (unsigned i = 0; i < s->nr_locks; i++) {
		struct pc_stats_lock *r = &s->locks[i];
		r->waittime_avg = r->contentions ? r->waittime_total / r->contentions : 0;
		r->holdtime_avg = r->acquisitions ? r->holdtime_total / r->acquisitions : 0;
		r->wait_share_ppm = thread_ns ? (uint64_t)((unsigned __int128)r->waittime_total *
							   1000000u / thread_ns) : 0;
	}
}

/* Add a layer's histogram (relaxed reads) into a snapshot's. */
static void hist_add(struct pc_stats_hist *h, struct pc_hist *src)
{
	h->count += pc_load_relaxed(&src->count);
	h->sum += pc_load_relaxed(&src->sum);
	for (unsigned i = 0; i < PC_LOCK_HIST_BUCKETS; i++)
		h->bucket[i] += pc_load_relaxed(&src->bucket[i]);
}

/* ---- caches --------------------------------------------------------------------- */
static void collect_cache(struct pc_cache *c, void *arg)
{
	struct pc_stats_snapshot *s = arg;
	if (s->nr_caches == PC_STATS_MAX_CACHES) {
		s->truncated = true;
		return;
	}
	struct pc_cache_info info;
	pc_cache_info(c, &info);
	struct pc_stats_cache *r = &s->caches[s->nr_caches++];
	copy_name(r->name, sizeof(r->name), info.name);
	r->active_objs = (uint64_t)PC_MAX(info.active_objects, 0L);
	r->num_objs = (uint64_t)info.total_objects;
	r->objsize = info.size;
	r->objperslab = info.objects_per_slab;
	r->pagesperslab = 1u << info.order;
	r->active_slabs = r->num_slabs = (uint64_t)info.slabs;
	r->object_size = info.object_size;
	r->partial_slabs = (uint64_t)info.partial_slabs;
	r->cpu_slabs = (uint64_t)info.cpu_slabs;
	r->cpu_partial_slabs = (uint64_t)info.cpu_partial_slabs;
	r->min_partial = info.min_partial;
	r->cpu_partial = info.cpu_partial;
	r->sheaf_capacity = info.sheaf_capacity;
	r->sheaf_objects = (uint64_t)PC_MAX(info.sheaf_objects, 0L);
	r->barn_limit = info.barn_limit;
	memcpy(r->slub, info.stats, sizeof(r->slub));
	char name[48];
	snprintf(name, sizeof(name), "%.31s/list_lock", info.name);
	struct pc_stats_lock *l = lock_row_new(s, name, "list_lock", false);
	if (l)
		lock_row_fill(l, &info.list_lock);
	snprintf(name, sizeof(name), "%.31s/barn", info.name);
	if ((l = lock_row_new(s, name, "barn", false)) != NULL)
		lock_row_fill(l, &info.barn_lock);
	for (unsigned i = 0; i < PC_LOCK_HIST_BUCKETS; i++) {
		s->hist[PC_STATS_HIST_list_lock_wait].bucket[i] += info.list_lock.wait_hist[i];
	}
	s->hist[PC_STATS_HIST_list_lock_wait].count += info.list_lock.contended;
	s->hist[PC_STATS_HIST_list_lock_wait].sum += info.list_lock.wait_ns_total;
}

/* ---- zones ---------------------------------------------------------------------- */

/* Pages on the per-CPU lists of z (each pcp lock taken briefly). */
static uint64_t zone_pcp_pages(struct pc_zone *z)
{
	uint64_t pages = 0;
	pc_page_reentry_enter(); /* page locks: page.h, "Re-entry" */
	for (unsigned c = 0; c < os_cpu_count(); c++) {
		pc_spin_lock(&z->pcp[c].lock.spin); /* not counted */
		pages += (uint64_t)z->pcp[c].count;
		pc_spin_unlock(&z->pcp[c].lock.spin);
	}
	pc_page_reentry_leave();
	return pages;
}

/* The per-CPU list locks of z (pc_spin_stat, lock.h): one row per zone,
 * "pcp/<zone>", summed over CPUs (a row per CPU would make zones x CPUs rows,
 * unreadable on a large machine, and which CPU waited says little), and the
 * "pcp" class row. A failed try is no acquisition: the zone's pcp_busy. */
static void collect_zone_pcp_locks(struct pc_stats_snapshot *s, struct pc_zone *z, unsigned id)
{
	char name[48];
	snprintf(name, sizeof(name), "pcp/%u", id);
	struct pc_stats_lock *r = lock_row_new(s, name, "pcp", false);
	struct pc_stats_lock *cls = lock_class_row(s, "pcp");
	for (unsigned c = 0; c < os_cpu_count(); c++) {
		if (r)
			lock_row_fill(r, z->pcp[c].lock.stats);
		if (cls)
			lock_row_fill(cls, z->pcp[c].lock.stats);
	}
}

static void collect_zone(struct pc_stats_snapshot *s, struct pc_zone *z)
{
	struct pc_zone_stats *st = &z->stats;
	struct pc_stats_zone *r = &s->zones[s->nr_zones];
	char name[48];
	r->node = z->node;
	/* managed_pages is under the zone lock; its copy for lock-free looks
	 * (regions are mapped and unmapped, so the mapped count is not it). */
	r->managed_pages = pc_load_relaxed(&z->managed_hint);
	r->free_pages = pc_load_relaxed(&z->free_hint);
	r->dirty_pages = pc_load_relaxed(&z->dirty_hint);
	r->pcp_pages = zone_pcp_pages(z);
	/* From the sum published in one word, so that free + run_free (the
	 * totals' free memory) is of one moment; the split may be a moment off. */
	size_t all_free = pc_load_relaxed(&z->all_free_hint);
	r->run_free_pages = all_free - PC_MIN(all_free, r->free_pages);
	r->run_dirty_pages = pc_load_relaxed(&z->run_dirty_hint);
#define ZONE_COUNTER(f) r->f = pc_load_relaxed(&st->f);
	ZONE_COUNTER(alloc_calls) ZONE_COUNTER(free_calls) ZONE_COUNTER(pcp_hits)
	ZONE_COUNTER(pcp_frees) ZONE_COUNTER(pcp_busy) ZONE_COUNTER(refills)
	ZONE_COUNTER(refill_pages) ZONE_COUNTER(drains) ZONE_COUNTER(drain_pages)
	ZONE_COUNTER(fallbacks) ZONE_COUNTER(regions_mapped) ZONE_COUNTER(map_failures)
	ZONE_COUNTER(released_pages) ZONE_COUNTER(release_calls)
#undef ZONE_COUNTER
	hist_add(&s->hist[PC_STATS_HIST_pcp_refill], &st->refill_ns);
	hist_add(&s->hist[PC_STATS_HIST_pcp_refill_batch], &st->refill_batch);
	hist_add(&s->hist[PC_STATS_HIST_pcp_drain], &st->drain_ns);
	hist_add(&s->hist[PC_STATS_HIST_pcp_drain_batch], &st->drain_batch);
	struct pc_stats_hist *w = &s->hist[PC_STATS_HIST_zone_lock_wait];
	for (unsigned i = 0; i < PC_LOCK_HIST_BUCKETS; i++)
		w->bucket[i] += pc_load_relaxed(&z->lock_stats.wait_hist[i]);
	w->count += pc_load_relaxed(&z->lock_stats.contended);
	w->sum += pc_load_relaxed(&z->lock_stats.wait_ns_total);
	snprintf(name, sizeof(name), "zone/%u", s->nr_zones);
	struct pc_stats_lock *l = lock_row_new(s, name, "zone", false);
	if (l)
		lock_row_fill(l, &z->lock_stats);
	collect_zone_pcp_locks(s, z, s->nr_zones);
	s->nr_zones++;
}

/* ---- totals ---------------------------------------------------------------------- */
static void collect_totals(struct pc_stats_snapshot *s)
{
	struct pc_stats_totals *t = &s->totals;
	uint64_t managed = 0, free = 0, dirty = 0, pcp = 0, released = 0, slab_pages = 0, small = 0;
	for (unsigned i = 0; i < s->nr_zones; i++) {
		managed += s->zones[i].managed_pages;
		/* Free runs inside the run heap's chunks are free memory of
		 * the zone as the buddy lists' blocks are (page/run.c). */
		free += s->zones[i].free_pages + s->zones[i].run_free_pages;
		dirty += s->zones[i].dirty_pages + s->zones[i].run_dirty_pages;
		pcp += s->zones[i].pcp_pages;
		released += s->zones[i].released_pages;
	}
	for (unsigned i = 0; i < s->nr_caches; i++) {
		slab_pages += s->caches[i].num_slabs * s->caches[i].pagesperslab;
		small += s->caches[i].active_objs * s->caches[i].object_size;
	}
	uint64_t huge = huge_bytes_mapped(), huge_n = huge_count(), cached = huge_cache_bytes();
	uint64_t medium = medium_cached_bytes(); /* in use for the page layer, free for us */
	uint64_t used_pages = managed - PC_MIN(managed, free + pcp);
	uint64_t large_pages = used_pages - PC_MIN(used_pages, slab_pages);
	t->huge_blocks = huge_n;
	t->huge_bytes = huge;
	/* Freed huge mappings kept for reuse: all still mapped, only
	 * huge_cache_resident() of them resident (the rest released). */
	t->huge_cached = cached;
	t->mapped = (managed << PC_PAGE_SHIFT) + huge + cached;
	t->active = (used_pages << PC_PAGE_SHIFT) + huge;
	t->medium_cached = medium;
	t->medium_bound = 0; /* 0 in thread mode: a fixed bound per thread */
	for (unsigned c = 0; c < os_cpu_count(); c++)
		t->medium_bound += medium_bound_bytes(c);
	t->barn_charged = pc_slab_barn_charged();
	t->allocated = small + (large_pages << PC_PAGE_SHIFT) - PC_MIN(medium, large_pages << PC_PAGE_SHIFT) +
		       (huge - huge_n * PC_PAGE_SIZE);
	t->resident = t->mapped - (PC_MIN(free - PC_MIN(free, dirty), managed) << PC_PAGE_SHIFT) -
		      (cached - PC_MIN(cached, huge_cache_resident()));
	t->released = released << PC_PAGE_SHIFT;
	t->pcp_bytes = pcp << PC_PAGE_SHIFT;
	t->rss = os_resident_bytes();
	/* Thread time: CPU time since stats went on, plus the lock waits (a
	 * thread asleep on a lock uses no CPU; see docs/statistics.md). */
	uint64_t waits = 0;
	for (unsigned i = 0; i < s->nr_locks; i++)
		if (s->locks[i].is_class)
			waits += s->locks[i].waittime_total;
	uint64_t cpu = os_process_cpu_ns(), base = pc_load_relaxed(&stats_clock_base);
	t->thread_ns = (cpu > base ? cpu - base : 0) + waits;
}

struct pc_stats_snapshot *pc_stats_snapshot_take(void)
{
	size_t bytes = pc_align_up(sizeof(struct pc_stats_snapshot), PC_PAGE_SIZE);
	struct pc_stats_snapshot *s = os_map(bytes, PC_PAGE_SIZE); /* zeroed */
	if (!s || !pc_malloc_init()) {
		if (s)
			os_unmap(s, bytes);
		return NULL;
	}
	pc_malloc_classes_create(); /* every size class listed, used or not */
	s->time_ns = os_now_ns();
	s->pid = (uint64_t)os_getpid();
	s->enabled = pc_option(PC_OPT_STATS_ENABLE) != 0;
#define PC_STATS_HIST_NAME(n, u) s->hist[PC_STATS_HIST_##n].name = #n; \
	s->hist[PC_STATS_HIST_##n].unit = u;
	PC_STATS_HISTS(PC_STATS_HIST_NAME)
#undef PC_STATS_HIST_NAME
	pc_lock_foreach(collect_class, s); /* class rows first */
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		if (s->nr_zones == PC_STATS_MAX_ZONES) {
			s->truncated = true;
			break;
		}
		collect_zone(s, pc_zone_get(i));
	}
	pc_cache_foreach(collect_cache, s);
	hist_add(&s->hist[PC_STATS_HIST_slab_alloc_slow], &pc_slab_alloc_slow_ns);
	hist_add(&s->hist[PC_STATS_HIST_sheaf_alloc_slow], &pc_sheaf_alloc_slow_ns);
	collect_totals(s);
	lock_rows_finish(s);
	return s;
}

void pc_stats_snapshot_free(struct pc_stats_snapshot *s)
{
	if (s)
		os_unmap(s, pc_align_up(sizeof(struct pc_stats_snapshot), PC_PAGE_SIZE));
}
