/*
 * stats/stats.h - the statistics layer: the top of the include graph. It
 * reads every layer below (caches, zones, per-CPU page lists, locks, huge
 * blocks) and turns them into the text, JSON and XML reports, the named
 * values of pcmalloc_ctl_get, and the shared-memory export read by
 * pcmalloc-top and pcmalloc-ctl. No layer below calls into it; it registers
 * what it offers (the statistics reader of ctl.c) at start-up.
 *
 * Owns: nothing that the allocator's paths read. Locks: it takes the locks of
 * the layers below only through their own walkers (pc_cache_foreach,
 * pc_cache_info, pc_lock_foreach) and holds none of its own across them.
 */
#ifndef PC_STATS_H
#define PC_STATS_H

#include "../malloc/malloc.h"

/* "start.c": start-up (help, exit report, export), run from a constructor
 * after the malloc layer's. */
void pc_stats_start(void);

#endif /* PC_STATS_H */
