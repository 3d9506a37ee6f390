/*
 * stats/stats.h - the statistics layer: the top of the include graph. It
 * reads every layer below (caches, zones, per-CPU page lists, locks, huge
 * blocks) into a snapshot and turns that into the text, JSON and XML
 * reports, the named values of pcmalloc_ctl_get, and the shared-memory
 * export read by pcmalloc-top and pcmalloc-ctl. No layer below calls into
 * it; it registers what it offers (ctl.c's statistics reader) at start-up.
 *
 * One list: every counter is named once below, in an X-macro with a one-line
 * comment. The snapshot structs, the JSON fields, the SLUB counter lines of
 * the text report and the pcmalloc_ctl_get names ("stats.<total>",
 * "stats.cache.<cache>.<field>", "stats.lock.<row>.<field>",
 * "stats.zone.<n>.<field>", "stats.hist.<name>.<count|sum|avg>") are all
 * generated from it (docs/statistics.md lists them).
 *
 * Locks: it takes the locks of the layers below only through their own
 * walkers (pc_cache_foreach, pc_cache_info, pc_lock_foreach) and holds none
 * of its own across them; a snapshot is a private copy, so formatting it
 * takes no lock at all. Memory: snapshots and report buffers come from
 * os_map, never from malloc, so that reporting does not change what it
 * reports.
 */
#ifndef PC_STATS_H
#define PC_STATS_H

#include "../malloc/malloc.h"

#define PC_STATS_VERSION 1 /* of the JSON schema and the export layout */

/* Process totals: X(name, comment). Bytes unless the name says otherwise. */
#define PC_STATS_TOTALS(X)                                                     \
	X(allocated)      /* bytes in objects and blocks handed to the program */\
	X(active)         /* bytes in pages handed out: slabs, large, huge */    \
	X(resident)       /* bytes mapped, less free memory known not resident */\
	X(mapped)         /* bytes of zone regions and huge blocks mapped */     \
	X(released)       /* bytes given back to the OS (madvise), cumulative */ \
	X(rss)            /* resident set of the whole process (/proc) */        \
	X(pcp_bytes)      /* bytes cached on per-CPU page lists */              \
	X(huge_blocks)    /* huge blocks (own mapping each) live */             \
	X(huge_bytes)     /* bytes mapped for them, header pages included */    \
	X(huge_cached)    /* freed huge mappings kept (mapped; part resident) */\
	X(medium_cached)  /* free medium blocks on malloc's per-CPU stacks */   \
	X(medium_bound)   /* the CPUs' medium-cache bounds now, summed (rseq) */ \
	X(barn_charged)   /* bytes of raised barn bounds (<= slub.barn_max_kb) */\
	X(thread_ns)      /* thread time since statistics went on (wait share) */

/* Per cache: the slabinfo 2.1 columns first, then the rest. */
#define PC_STATS_CACHE(X)                                                      \
	X(active_objs)    /* objects handed out */                               \
	X(num_objs)       /* slots in all slabs */                               \
	X(objsize)        /* slot size in bytes */                               \
	X(objperslab)     /* slots per slab (new slabs) */                       \
	X(pagesperslab)   /* pages per slab (new slabs) */                       \
	X(active_slabs)   /* slabs (slabinfo shows all of them as active) */     \
	X(num_slabs)      /* slabs */                                            \
	X(object_size)    /* object size asked for */                            \
	X(partial_slabs)  /* slabs on node partial lists */                      \
	X(cpu_slabs)      /* CPU slabs */                                        \
	X(cpu_partial_slabs) /* slabs on CPU partial lists */                    \
	X(min_partial)    /* empty slabs a node keeps */                         \
	X(cpu_partial)    /* partial slabs a CPU keeps */                        \
	X(sheaf_capacity) /* objects per new sheaf; 0 = sheaves off */           \
	X(sheaf_objects)  /* free objects in sheaves and barns (not active) */  \
	X(barn_limit)     /* full sheaves a barn may hold now (most over nodes) */

/* Per lock row (a zone lock, a zone's pcp locks, a cache's list_lock or barn
 * lock, or a whole class):
 * /proc/lock_stat's columns, times in ns, then the wait share. */
#define PC_STATS_LOCK(X)                                                       \
	X(con_bounces)    /* contended acquisitions on another CPU than last */ \
	X(contentions)    /* acquisitions that waited */                         \
	X(waittime_min)   /* shortest wait, ns */                                \
	X(waittime_max)   /* longest wait, ns */                                 \
	X(waittime_total) /* all waits, ns */                                    \
	X(waittime_avg)   /* waittime_total / contentions, ns */                 \
	X(acq_bounces)    /* acquisitions on another CPU than last */            \
	X(acquisitions)   /* acquisitions */                                     \
	X(holdtime_min)   /* shortest hold, ns */                                \
	X(holdtime_max)   /* longest hold, ns */                                 \
	X(holdtime_total) /* all holds, ns */                                    \
	X(holdtime_avg)   /* holdtime_total / acquisitions, ns */                \
	X(wait_share_ppm) /* waittime_total / thread_ns, parts per million */

/* Per zone instance. */
#define PC_STATS_ZONE(X)                                                       \
	X(node)           /* NUMA node */                                        \
	X(managed_pages)  /* pages in its regions */                             \
	X(free_pages)     /* pages on its buddy lists */                         \
	X(dirty_pages)    /* free pages that may be resident */                  \
	X(pcp_pages)      /* pages on its per-CPU lists */                       \
	X(run_free_pages) /* pages in free runs inside chunks (run heap) */      \
	X(run_dirty_pages) /* ... of them, those that may be resident */         \
	X(alloc_calls)    /* page allocations that started here */              \
	X(free_calls)     /* page frees into it */                               \
	X(pcp_hits)       /* allocations served by a per-CPU list */             \
	X(pcp_frees)      /* frees taken by a per-CPU list */                    \
	X(pcp_busy)       /* per-CPU list try-lock failed: went to the zone */   \
	X(refills)        /* batches zone -> per-CPU list */                     \
	X(refill_pages)   /* pages in them */                                    \
	X(drains)         /* batches per-CPU list -> zone */                     \
	X(drain_pages)    /* pages in them */                                    \
	X(fallbacks)      /* allocations served for another zone */              \
	X(regions_mapped) /* 64 MiB regions mapped */                            \
	X(map_failures)   /* regions the OS refused */                           \
	X(released_pages) /* pages given back to the OS */                       \
	X(release_calls)  /* blocks given back */

/* Histograms: X(name, unit, comment), funclatency's layout in the text. */
#define PC_STATS_HISTS(X)                                                      \
	X(pcp_refill, "nsecs")       /* refill of a per-CPU list from the zone */\
	X(pcp_refill_batch, "pages") /* pages moved by each refill */            \
	X(pcp_drain, "nsecs")        /* drain of a per-CPU list to the zone */   \
	X(pcp_drain_batch, "pages")  /* pages moved by each drain */             \
	X(slab_alloc_slow, "nsecs")  /* slab allocation slow path */             \
	X(sheaf_alloc_slow, "nsecs") /* sheaf allocation slow path (refill) */   \
	X(list_lock_wait, "nsecs")   /* contended list_lock acquisitions */      \
	X(zone_lock_wait, "nsecs")   /* contended zone lock acquisitions */

#define PC_STATS_FIELD(name) uint64_t name;

struct pc_stats_totals { PC_STATS_TOTALS(PC_STATS_FIELD) };
struct pc_stats_cache {
	char name[32];
	PC_STATS_CACHE(PC_STATS_FIELD)
	uint64_t slub[PC_SLAB_STAT_COUNT]; /* SLUB's counters (slab.h) */
};
struct pc_stats_lock {
	char name[48];  /* "zone/0", "pcp/0", "kmalloc-64/list_lock", "kmalloc-64/barn", or the class */
	char cls[24];   /* the class: "zone", "list_lock", "pcp", "barn", ... */
	bool is_class;  /* a class total (all instances) */
	PC_STATS_LOCK(PC_STATS_FIELD)
	uint64_t wait_hist[PC_LOCK_HIST_BUCKETS];
};
struct pc_stats_zone { PC_STATS_ZONE(PC_STATS_FIELD) };
struct pc_stats_hist {
	const char *name, *unit;
	uint64_t count, sum;
	uint64_t bucket[PC_LOCK_HIST_BUCKETS]; /* [2^i, 2^(i+1)); 0 and 1 in 0 */
};
enum pc_stats_hist_id {
#define PC_STATS_HIST_ENUM(name, unit) PC_STATS_HIST_##name,
	PC_STATS_HISTS(PC_STATS_HIST_ENUM)
#undef PC_STATS_HIST_ENUM
	PC_STATS_HIST_COUNT
};

#define PC_STATS_MAX_CACHES 256
#define PC_STATS_MAX_LOCKS  (2 * PC_STATS_MAX_CACHES + 2 * PC_STATS_MAX_ZONES + 16) /* list_lock and barn per cache, zone and pcp per zone, classes */
#define PC_STATS_MAX_ZONES  64

struct pc_stats_snapshot {
	uint64_t time_ns, pid;
	bool enabled;        /* stats.enable at the snapshot */
	unsigned nr_caches, nr_locks, nr_zones;
	bool truncated;      /* more caches, locks or zones than fit */
	struct pc_stats_totals totals;
	struct pc_stats_hist hist[PC_STATS_HIST_COUNT];
	struct pc_stats_zone zones[PC_STATS_MAX_ZONES];
	struct pc_stats_cache caches[PC_STATS_MAX_CACHES];
	struct pc_stats_lock locks[PC_STATS_MAX_LOCKS];
};

/* "snapshot.c": a snapshot in memory from os_map (NULL: ENOMEM); free it
 * with pc_stats_snapshot_free. Safe from any thread holding no allocator
 * lock. */
struct pc_stats_snapshot *pc_stats_snapshot_take(void);
void pc_stats_snapshot_free(struct pc_stats_snapshot *s);
/* Remember the process's CPU time as the start of thread_ns (stats on). */
void pc_stats_clock_start(void);

/* "out.c": a growing text buffer in os_map memory. */
struct pc_out {
	char *buf;
	size_t len, cap;
	bool failed; /* out of memory: text cut */
};
__attribute__((format(printf, 2, 3))) void pc_out_printf(struct pc_out *o, const char *fmt, ...);
void pc_out_free(struct pc_out *o);
/* ns as microseconds with two decimals, like /proc/lock_stat ("12.34"). */
void pc_out_usec(char *buf, size_t size, uint64_t ns);

/* "text.c", "json.c", "xml.c": one snapshot in each format. */
void pc_stats_text(struct pc_out *o, const struct pc_stats_snapshot *s);
void pc_stats_json(struct pc_out *o, const struct pc_stats_snapshot *s);
void pc_stats_xml(struct pc_out *o, const struct pc_stats_snapshot *s);
/* "report.c": format by name ("text", "json", "xml"); false: unknown. */
bool pc_stats_report(struct pc_out *o, const char *format);
/* Print the report stats.print asks for (exit handler). */
void pc_stats_print_at_exit(void);

/* "names.c": pcmalloc_ctl_get of a statistic (ctl.c's reader). */
int pc_stats_read(const char *name, long *value);
/* Look a name up in a snapshot: 0, or -1 (no such statistic). */
int pc_stats_lookup(const struct pc_stats_snapshot *s, const char *name, uint64_t *value);

/* "export.c": the shared-memory export (stats.export=1). */
void pc_stats_export_start(void);
void pc_stats_export_stop(void);

/* "start.c": start-up (help, exit report, export), run from a constructor
 * after the malloc layer's. */
void pc_stats_start(void);

#endif /* PC_STATS_H */
