/*
 * page/page.h - the page allocator: nodes, zones split into instances, buddy
 * free lists and per-CPU page lists (seeds 001 and 003).
 *
 * Memory comes from the OS in regions of PC_REGION_SIZE bytes, aligned to
 * their size; each region belongs to one zone and carries one struct pc_page
 * per 4 KiB page in a metadata mapping right below its span (struct
 * pc_region), so the descriptor's address is computed from the page's. A
 * global region table says in O(1) whether an address lies in a region (and
 * which), so pc_page_of() finds the descriptor of any page we own without
 * searching. Free memory goes back to the OS with
 * madvise (release.c); a wholly free region may also be unmapped (unmap.c),
 * under the rule below.
 *
 * Which memory lock-free readers may touch after it was freed (issue 9,
 * item 5), and therefore what may be unmapped:
 *   - slab memory: the slab alloc fast path reads the next pointer of an
 *     object that another thread may have taken, emptied its slab with and
 *     freed back to the zone (its cmpxchg16b then fails, but the read
 *     happened); statistics read the count of a sheaf (a slab object) that
 *     its thread may have freed. No such reader announces itself (no epoch,
 *     no hazard pointer), so no moment is known at which nobody reads a
 *     page that once held a slab. Slabs are the only users of
 *     pc_alloc_pages; so a region any of whose pages was ever handed out by
 *     pc_alloc_pages (its keep_mapped flag, set at the hand-out under the
 *     zone lock and never cleared) is never unmapped.
 *   - the region table and the descriptors: pc_page_of() on any pointer
 *     handed to free (a foreign, stale or doubly freed one included), the
 *     double-free check and malloc's classify() read the table entry and
 *     then the page's descriptor without a lock. So the descriptor mapping
 *     of a region is never unmapped: an unmapped region's table entry is
 *     cleared first (a reader then sees no region, or the old one), its
 *     descriptors are zeroed (a stale reader sees PC_PG_NONE: not a block,
 *     the pointer is reported as invalid) and the mapping, which lies right
 *     below the span (struct pc_region), stays where it is, on its zone's
 *     spare list, until a region is mapped at the same address again.
 *   - runs (malloc's medium and large blocks) and lent ranges (huge
 *     blocks) are read only by their owner; a free of a stale pointer into
 *     them reads descriptors only (above). So the span of a region that
 *     never held a pc_alloc_pages block may be unmapped once every page of
 *     it is free on the buddy lists: by pc_page_trim; by pc_page_unmap_free,
 *     which malloc calls when the OS refuses a huge block its mapping,
 *     before borrowing; and by release passes, once a zone holds a whole
 *     region of free memory already given back (clean), keeping one region
 *     per zone; never while a thread is in the zone's allocation slow path
 *     (zone->growing: the region it has just mapped is wholly free until it
 *     takes from it). A huge block may then be mapped at the old address:
 *     the table entry was cleared before the munmap, so pc_page_of() on it
 *     says "no region".
 *
 * Lending (lend.c): when the OS refuses a huge block a mapping of its own
 * even then, a range of free buddy pages, still mapped, still in the table,
 * is handed to the huge block; a stale read of it sees the huge block's
 * data, as it would see any other block's that reused the page, and the
 * huge block never unmaps or remaps it (it goes back to the buddy lists on
 * free).
 *
 * Delayed release (release.c): a dirty free block carries the page-clock time
 * it was freed (freed_ns); it goes back to the OS only once it has stayed
 * free for vm.release_delay_ms, in batches, from the slow paths of the zone
 * (frees into the zone, pcp refills and drains) or from the background
 * thread (vm.release_thread: 1 always, 2 = auto, the default: started once
 * a zone's dirty memory outgrows the floor below). The dirty free memory of
 * a zone is also bounded, so that it never lifts the zone's footprint (in
 * use + dirty free) above the most it had in use in the last two windows of
 * a delay each (release.c, bound_pages; so memory freed at a peak is kept
 * for the delay, then goes by age): above
 * max(vm.release_watermark_kb, a quarter of the memory in use (the floor),
 * and, only while the thread does the passes
 * (pc_page_release_thread_active), or, in auto mode without the thread,
 * for a few delays after the zone's use climbed back by more than the
 * floor within a delay of its free pool passing the floor (reuse seen:
 * zone->keep_peak), that recent peak of use less the use
 * now) the oldest blocks go at once. Without the thread an idle program runs
 * no pass, so the peak's part would keep its memory until its next call:
 * only a program seen reusing what it freed gets it then.
 * pc_page_trim releases all.
 * Free runs of the run heap (below) are released by the same passes once
 * they have stayed free for the delay (by age only, run.c).
 *
 * Runs (run.c): malloc's medium and large blocks are runs of exactly the
 * pages asked for, cut best-fit from chunks (PC_MAX_ORDER buddy blocks) that
 * a zone hands to its run heap, coalesced at once, the chunk going back to
 * the buddy lists when wholly free. Runs never share a chunk with buddy
 * blocks handed out by pc_alloc_pages (slabs), so neither fragments the
 * other. Runs of up to PC_PCP_MAX_RUN pages are cached per CPU by length.
 *
 * Topology: a node has one zone type split into node->nr_zones instances; a
 * CPU prefers instance (its index within its node) % nr_zones. When that one
 * is empty it falls back to a sibling instance of its node that has plenty
 * free (a quarter region), else grows its own instance with a new region
 * (bound to the node), and only when the OS refuses takes any free memory of
 * its node, then of other nodes, then drains every per-CPU list. Before it
 * grows, a slow path that finds its zone's release batches holding memory
 * that can serve the request once back, alone or merged with its free
 * neighbours and the other held pieces (zone->release_held_blocks,
 * release_held_runs: free blocks or free runs being madvised, on no list
 * meanwhile) waits for them to come back, 50 ms at most for the whole slow
 * path, and takes again (page_alloc.c, take_after_release): the zone has
 * that memory, and a region mapped for want of it stayed wholly free
 * (issue 9).
 * Callers may hold locks of the layers above through the wait; the bound
 * also keeps their hold short.
 *
 * Lock order (outermost first):  zone->grow_lock -> pcp->lock -> zone->lock
 * (the slab layer's list_lock sits before pcp->lock; grow_lock is never taken
 * with a pcp lock held, so in practice it nests only outside zone->lock).
 *   pcp->lock   a spinlock only ever try-locked by allocation and free: if it
 *               is busy (another thread on the same CPU number, or one that
 *               migrated) the caller goes straight to the zone. The drains
 *               (pc_page_drain_all, trim), pc_page_check and the fork
 *               handlers take it blocking, never with a zone lock held.
 *               Allocation and free never wait for the zone lock with it
 *               held: refills, drains and the decay of release passes
 *               move their batch between the two with it dropped (pcp.c,
 *               "in flight"; each pcp counts its batches in flight in
 *               in_flight, an atomic changed under its lock up, without it
 *               down).
 *               A pc_spin_stat: it keeps lock_stat statistics (per CPU,
 *               summed per zone by the statistics layer; the reader and
 *               fork take it uncounted). Protects the pcp lists, count
 *               and scaling factors.
 *   fork        pc_page_prefork takes every zone's grow_lock, then every
 *               pcp lock, then every zone->lock (rank by rank, in zone
 *               order): the only place two zones' locks nest. It keeps a
 *               zone lock only once no work of that zone is in flight (a
 *               pcp batch, a release batch, an unmapping: each needs only
 *               that zone's lock to finish), else drops it and tries again,
 *               so a child never inherits memory that is on no list there.
 *               Debug builds check the ranks (lock.h, "lock ranks").
 *   zone->lock  the generic lock (kind from lock.kind). Protects the free
 *               areas, free/dirty counters and the state/order/dirty fields of
 *               every free block head of the zone, and the run heap (bins,
 *               bitmap, run counters, the RUN/RUN_END descriptors).
 *   zone->grow_lock  serialises mapping new regions for the zone, so that
 *               concurrent misses map one region, not one each; the mmap
 *               itself runs with zone->lock not held.
 *
 * Re-entry (reentry.c): a signal handler may call malloc and free while its
 * thread is inside the page allocator, holding a zone, pcp or grow lock or
 * with a batch in flight. Every entry point above that may take a page lock
 * counts itself in this thread's pc_page_depth (a TLS byte, slow paths only),
 * and a call that finds it raised takes no lock at all: an allocation
 * returns NULL with errno ENOMEM (pc_run_grow false, pc_page_lend NULL); a
 * free (pc_free_pages, pc_free_run, pc_page_unlend, pc_run_shrink's tail)
 * goes on a per-thread list, linked through the block, that the interrupted
 * call frees on its way out (the depth back at 0, no page lock held); trim,
 * drains, unmapping and release passes do nothing. The layers above read
 * the depth with pc_page_reentered() and keep such a handler off their own
 * locks too, since each of them nests outside the page locks (another
 * thread may hold one while it waits for the zone lock this one holds).
 * Fork runs its handlers with every signal blocked (os/lifecycle.c): the
 * page locks prefork holds are at depth 0. Not supported: fork() or thread
 * exit from a handler that interrupted the allocator (prefork would wait
 * for the locks its own thread holds).
 *
 * Invariants (checked by pc_page_check()):
 *   - a page has state PC_PG_BUDDY iff it heads a free block of its zone that
 *     is on free_area[order]; the block is 2^order pages, aligned to its size;
 *   - no free block's buddy is a free block of the same order (coalescing is
 *     complete);
 *   - zone->free_pages == sum over orders of nr_free[order] << order, plus
 *     seed_pages (the chunks of the newest region not yet seeded: the last
 *     seed_pages pages of seed_region, a multiple of a chunk, none of them
 *     a free head), plus the pages of the carve chunk not yet carved
 *     (PC_RUN_MAX_PAGES - carve_next, none of them a free head; the carve
 *     chunk's region is keep_mapped, and the carve ends, its rest going on
 *     the lists, as soon as everything carved from it is free);
 *   - zone->dirty_pages == sum of the sizes of free blocks with mem DIRTY;
 *     a block is on free_area[order].dirty iff its mem is DIRTY, and along
 *     that list freed_ns mostly falls from head to tail (a block split off a
 *     larger one keeps the larger one's time, and a refill's block that goes
 *     back unused keeps its own, so either may sit nearer the head than its
 *     age says: it is then released later, never earlier);
 *   - pcp->count == sum over its lists of 2^order pages plus the lengths of
 *     the runs on its run lists; refills are sized within the room the
 *     lists and the refills in flight leave under high, a minimum batch at
 *     least, so concurrent refills of one CPU pass high by a minimum batch
 *     each at most (frees meanwhile may add to it; the next free drains);
 *   - in flight (pcp.c): an entry of a batch between a pcp and its zone has
 *     state PC_PG_NONE, is on no list and counts as in use; pcp->in_flight
 *     counts those batches (>= 0) and pcp->refill_pages the pages their
 *     refills plan to put on the lists (>= 0, 0 when in_flight is 0); a
 *     block or run between two zone-lock holds of a release pass or an
 *     unmapping is counted in zone->in_flight; the pages of a release
 *     pass's buddy blocks also in zone->release_held (0 when no pass holds
 *     any; not use for the peak and the release bound) and on
 *     zone->release_held_blocks, its free runs on zone->release_held_runs
 *     (what the grow wait looks at; free runs count as use, held or not);
 *     a held head has state PC_PG_NONE, a held run lies in one chunk; both
 *     lists are empty when nothing is in flight; a fork child has none; a
 *     bit of pcp->used is set iff its list is not empty; every head on them has
 *     state PC_PG_PCP, aux = its length and order = floor(log2(length))
 *     (so the lock-free double-free check, which trusts a free head's
 *     order, never claims a page beyond a run) and mem DIRTY if it was
 *     handed out since it left the zone, else the mem it had there;
 *   - run heap: a free run of n pages is on run_bins[n] (its dirty list iff
 *     its mem is DIRTY) with state PC_PG_RUN
 *     and aux n, its last page (n >= 2) has state PC_PG_RUN_END and aux n,
 *     unless the run ends at its chunk's end (then PC_PG_NONE: run.c);
 *     it lies inside one chunk and no two free runs touch (coalescing is
 *     complete); run_free_pages is their sum, run_dirty_pages the sum of
 *     those with mem DIRTY (a free run's head carries mem and freed_ns as a
 *     free block's does); bit n of run_bitmap is set iff either list of
 *     run_bins[n] is not empty; no free run is a whole chunk (that goes back
 *     to the buddy lists).
 *   - a page with state PC_PG_LENT heads a lent range of aux pages inside
 *     its region, and no free block, pcp entry or free run overlaps it.
 *   - zone->unkept_regions == the regions on zone->regions without
 *     keep_mapped; managed_pages == PC_REGION_PAGES times the regions on it.
 *   - every region and spare r of a zone lies right above its metadata:
 *     r->base == (char *)(r + 1) (struct pc_region); a spare's table entry
 *     is NULL.
 */
#ifndef PC_PAGE_H
#define PC_PAGE_H

#include "../ctl/options.h"
#include "../lock/lock.h"
#include "../os/os.h"

#define PC_REGION_SHIFT  26 /* 64 MiB regions */
#define PC_REGION_SIZE   ((size_t)1 << PC_REGION_SHIFT)
#define PC_REGION_PAGES  (PC_REGION_SIZE >> PC_PAGE_SHIFT)
#define PC_REGION_TABLE_BITS (47 - PC_REGION_SHIFT) /* user space is 47 bits */
#define PC_PCP_MAX_ORDER 6 /* orders 0..6 (up to 256 KiB) go through the per-CPU lists */
#define PC_PCP_MAX_RUN   64 /* and runs of up to 64 pages */
#define PC_RUN_MAX_PAGES ((size_t)1 << PC_MAX_ORDER) /* longest run: one chunk */
#define PC_NS_NEVER      UINT64_MAX /* a page-clock time that never comes */

enum pc_page_state {
	PC_PG_NONE = 0, /* inside a block, or not handed out */
	PC_PG_BUDDY,    /* head of a free block on a buddy free list */
	PC_PG_PCP,      /* head of a block on a per-CPU list */
	PC_PG_ALLOC,    /* head of a block handed out by pc_alloc_pages */
	PC_PG_SLAB,     /* head of a slab (set by the slab layer) */
	PC_PG_TAIL,     /* a non-head page of a slab (the slab layer's fields) */
	PC_PG_LARGE,    /* head of a large malloc block (set by malloc) */
	PC_PG_RUN,      /* head of a free run in its zone's run heap (run.c) */
	PC_PG_RUN_END,  /* last page of a free run of 2 pages or more */
	PC_PG_LENT,     /* first page of a range lent by pc_page_lend: aux = its length */
	PC_PG_HUGE,     /* first data page of a huge block in a lent range (set by malloc) */
};

/* What backs a free block, in merge order (a merged block takes the max):
 * never touched since mapped, given back to the OS, or possibly resident. */
enum pc_mem { PC_MEM_FRESH = 0, PC_MEM_RELEASED = 1, PC_MEM_DIRTY = 2 };

/*
 * One per 4 KiB page, 64 bytes. Fields other than list/state/order/dirty are
 * the owner's: the slab layer uses slab_word (freelist + counters, updated by
 * a 16-byte compare-and-swap) and flags on a slab's head page, and on every
 * page of a slab (PC_PG_SLAB and PC_PG_TAIL) owner, aux, slot_inverse,
 * slot_objects and slot_shift (slot_shift shares its bytes with freed_ns,
 * which the page layer writes only once the page is free again).
 * One rule for every owner: slot_objects is 0 on every page that is not
 * of a live slab. free's fast path (malloc.h small_slab) tests no state: a
 * page whose slot_objects is not 0 is taken for a slab page and its owner
 * followed. The slab layer sets it in slab_new and clears it in
 * slab_discard before the pages go back; descriptors start zeroed and an
 * unmapped region's are zeroed (unmap.c); no other owner writes it.
 * (pc_page_check does not walk it; debug builds assert it on every free
 * that passes the fast test.)
 */
struct pc_page {
	struct pc_list list;   /* free list, pcp list, or slab partial list */
	_Alignas(16) unsigned __int128 slab_word;
	void *owner;           /* slab: its cache */
	uint32_t slot_inverse; /* slab pages: free's slot test (slab.h, */
	uint32_t slot_objects; /* pc_slab_slot_index), the owner's;
				  slot_objects is 0 on every page that is not
				  of a live slab (slab_new sets it, slab_discard
				  clears it; descriptors start zeroed): free's
				  fast path tests no state (malloc.h) */
	_Atomic uint8_t state; /* enum pc_page_state: use pc_pg_state/_set_state */
	_Atomic uint8_t order; /* valid for heads: use pc_pg_order/_set_order */
	uint8_t mem;           /* heads of free blocks, free runs and pcp entries:
				  enum pc_mem, what backs them */
	uint8_t flags;         /* owner's */
	uint32_t aux;          /* owner's; RUN, RUN_END and PCP heads: length in pages;
				  slab heads: the slab's size in bytes - 1 */
	union {
		uint64_t freed_ns; /* PC_PG_BUDDY + DIRTY: page-clock time it was freed */
		uint32_t slot_shift; /* slab pages: free's slot test, the owner's */
	};
} PC_CACHE_ALIGNED;

/*
 * The state of a page is written by the block's owner without the zone lock
 * (on allocation and free) while zone-lock holders read the states of the
 * pages around it (coalescing). Relaxed atomics: a reader only needs some
 * recent value, and an owner never writes PC_PG_BUDDY, the one state the
 * readers act on, outside the zone lock. Plain byte moves on x86.
 */
PC_INLINE unsigned pc_pg_state(const struct pc_page *pg)
{
	return pc_load_relaxed(&((struct pc_page *)(uintptr_t)pg)->state);
}
/* Release: a page becomes a free head (BUDDY, PCP) only after its order is
 * written, so that the lock-free double-free check, which loads the state
 * with acquire and then the order, never pairs a free state with a stale
 * (larger) order. Still a plain byte store on x86. */
PC_INLINE void pc_pg_set_state(struct pc_page *pg, unsigned state)
{
	pc_store_release(&pg->state, (uint8_t)state);
}
PC_INLINE unsigned pc_pg_state_acquire(const struct pc_page *pg)
{
	return pc_load_acquire(&((struct pc_page *)(uintptr_t)pg)->state);
}

/* The order, likewise: the double-free check reads it without a lock. */
PC_INLINE unsigned pc_pg_order(const struct pc_page *pg)
{
	return pc_load_relaxed(&((struct pc_page *)(uintptr_t)pg)->order);
}
PC_INLINE void pc_pg_set_order(struct pc_page *pg, unsigned order)
{
	pc_store_relaxed(&pg->order, (uint8_t)order);
}

struct pc_zone;

/*
 * A 64 MiB span of address space and the descriptors of its pages. The
 * struct is the region's metadata mapping and lies right below the span:
 * a page for the header, then the descriptors, the last of which ends
 * where the span begins (r->pages + PC_REGION_PAGES == r->base). So the
 * descriptor of any address of a region is computed from the address
 * (pc_page_desc: no load), and the table entry, which says whether a
 * region is there at all, can be loaded beside it, not before it (free's
 * fast path: one dependent load less). The metadata stays mapped when the
 * span is unmapped (top of the file) and serves again only a region mapped
 * at the same address (unmap.c, zone_spare_remap): the mapping below the
 * span is what keeps any other region from being placed there.
 */
struct pc_region {
	char *base;             /* PC_REGION_SIZE aligned; (char *)(r + 1) */
	struct pc_zone *zone;
	/* zone->regions or zone->spare_regions, under zone->lock (or, while
	 * zone_spare_remap has taken the spare list whole, under grow_lock,
	 * that thread's alone) */
	struct pc_region *next;
	/* Some page of it was handed out by pc_alloc_pages (maybe a slab): never
	 * unmapped (top of the file). Set under zone->lock, never cleared while
	 * the region is mapped; written only when false (a read-mostly line). */
	bool keep_mapped;
	struct pc_page pages[PC_REGION_PAGES] __attribute__((aligned(4096)));
};
/* Bytes of a region's descriptors (1 MiB): they end at the span's start. */
#define PC_REGION_DESC_BYTES ((size_t)PC_REGION_PAGES * 64)
_Static_assert(sizeof(struct pc_region) == PC_PAGE_SIZE + PC_REGION_DESC_BYTES,
	       "struct pc_region: one header page, then the descriptors, up to the span");

/* Free blocks of one order: dirty ones (maybe resident, newest at the head,
 * so the oldest, next to release, at the tail) and clean ones. */
struct pc_free_area {
	struct pc_list dirty, clean;
	size_t nr_free;      /* blocks on both lists */
};

/* Free runs of one length (run.c): dirty ones (maybe resident, newest at
 * the head) and the others (released or never touched). */
struct pc_run_bin {
	struct pc_list dirty, clean;
};

/* Per-CPU page lists of one zone (one per possible CPU). */
struct pc_pcp {
	struct pc_spin_stat lock; /* a spinlock with statistics (lock.h) */
	int count;               /* pages on the lists */
	int high;                /* drain above this; in [high_min, vm.pcp_high] */
	uint64_t refills_at_drain; /* refills when it last drained */
	uint8_t alloc_factor;    /* refill batch = batch << factor (<= scale_max) */
	uint8_t free_factor;     /* drain batch = batch << factor (<= scale_max) */
	struct pc_list lists[PC_PCP_MAX_ORDER + 1]; /* buddy blocks by order */
	struct pc_list runs[PC_PCP_MAX_RUN + 1];    /* runs by length ([0] unused) */
	/* Bit i set iff list i is not empty, i = an order, or PC_PCP_MAX_ORDER
	 * + a run length (pcp.c, pcp_list_at): drains visit only those. */
	uint64_t used[(PC_PCP_MAX_ORDER + 1 + PC_PCP_MAX_RUN + 63) / 64];
	/* Batches of this pcp in flight (pcp.c): detached from its lists or
	 * taken from the zone for them, on their way with no lock held.
	 * Incremented under lock, decremented without it; fork waits for 0
	 * (pc_page_prefork). */
	_Atomic int in_flight;
	/* Pages that refills in flight mean to put on the lists: a refill
	 * sized meanwhile leaves them room (pcp.c, refill_blocks). Changed
	 * as in_flight is. */
	_Atomic int refill_pages;
	uint64_t refills, drains; /* under lock; statistics */
	uint32_t last_refill;     /* pages moved by the last refill */
	uint32_t last_drain;      /* pages moved by the last drain */
	struct pc_lock_stats lock_stats; /* lock's statistics: last, off its hot lines */
} PC_CACHE_ALIGNED;

struct pc_zone_stats {
	_Atomic uint64_t alloc_calls, free_calls;     /* pc_alloc/free_pages */
	_Atomic uint64_t pcp_hits, pcp_busy;          /* pcp served / pcp lock busy */
	_Atomic uint64_t refills, refill_pages;       /* bulk moves zone -> pcp */
	_Atomic uint64_t drains, drain_pages;         /* bulk moves pcp -> zone */
	_Atomic uint64_t fallbacks;                   /* served by another zone */
	_Atomic uint64_t regions_mapped, map_failures;
	_Atomic uint64_t regions_unmapped;            /* unmap.c, always kept */
	_Atomic uint64_t released_pages, release_calls;
	_Atomic uint64_t pcp_frees;                   /* frees taken by the pcp */
	_Atomic uint64_t lent_pages;                  /* pages lent now (lend.c), always kept */
	struct pc_hist refill_ns, refill_batch;       /* refill time; pages moved */
	struct pc_hist drain_ns, drain_batch;         /* drain time; pages moved */
};

struct pc_zone {
	struct pc_lock lock;
	struct pc_free_area free_area[PC_MAX_ORDER + 1];
	size_t free_pages;     /* under lock */
	size_t dirty_pages;    /* under lock */
	_Atomic size_t free_hint;  /* copies of free_pages and dirty_pages for */
	_Atomic size_t dirty_hint; /* lock-free looks (fallback, release) */
	/* Page-clock time of the next release pass (relaxed: a hint; a stale
	 * value runs one pass early or one call late). */
	_Atomic uint64_t next_pass_ns;
	_Atomic size_t managed_hint; /* copy of managed_pages, for the bound */
	/* The most pages in use (managed - free - release_held) seen in the
	 * current and the previous window (the release delay or more;
	 * release.c, bound_pages): under lock; peak_hint is the max of
	 * the two, for lock-free looks. */
	size_t peak_used[2];
	/* Under lock: when the current window began; it rolls at the first
	 * pass a delay later, the delay read then (a delay shortened live
	 * shortens the window already open). */
	uint64_t peak_window_ns;
	_Atomic size_t peak_hint;
	/* Reuse seen without the release thread (auto mode; release.c,
	 * "Reuse without the thread"). reuse_mark: 0, or the use (pages) past
	 * which a climb means that memory freed over the floor is needed again:
	 * the lowest use seen since the free pool went over the floor, plus
	 * the floor; reuse_mark_ns: when it was set. keep_peak: the bound
	 * counts the recent peak's part without the thread, since
	 * keep_peak_since_ns (page clock: the last reuse seen) for a few
	 * delays (read at each pass). All relaxed hints, no lock: a lost
	 * update costs one round of faults, or the peak's part a pass longer. */
	_Atomic size_t reuse_mark;
	_Atomic uint64_t reuse_mark_ns;
	_Atomic uint64_t keep_peak_since_ns;
	_Atomic bool keep_peak;
	_Atomic uint32_t releasing;  /* a release pass runs (release.c) */
	_Atomic uint32_t growing;    /* threads in alloc_slow: no unmapping (unmap.c) */
	/* Under lock: work on this zone's memory between two holds of its lock,
	 * with it dropped: release batches being madvised (release.c), regions
	 * being unmapped (unmap.c). Fork waits for 0 (pc_page_prefork). */
	unsigned in_flight;
	/* Under lock: pages a release pass has taken off the free lists and not
	 * yet freed back (release.c). Off the lists, so outside free_pages, but
	 * no use: the peak of use and the bound leave them out. */
	size_t release_held;
	/* Under lock: the pieces release passes hold off the lists, linked
	 * through their heads' list: buddy blocks (release.c; state
	 * PC_PG_NONE, order = theirs; their pages sum to release_held) and
	 * free runs (run.c; state PC_PG_NONE, aux = length). What an
	 * allocation's slow path may wait for, with what they would merge
	 * into once back (page_alloc.c, take_after_release). */
	struct pc_list release_held_blocks;
	struct pc_list release_held_runs;
	size_t managed_pages;  /* under lock: pages in all regions */
	/* Under lock: the chunks of the newest region not yet on the free lists
	 * (buddy.c, "seeding"): its last seed_pages pages, FRESH, counted in
	 * free_pages. */
	struct pc_region *seed_region;
	size_t seed_pages;
	/* Under lock: the chunk small blocks are carved from (buddy.c,
	 * "carving"), or NULL: its first carve_next pages are handed out or
	 * on the lists, the rest FRESH, counted in free_pages, on no list. */
	struct pc_page *carve;
	size_t carve_next;
	/* The run heap (run.c), under lock: free runs by exact length, a bit
	 * per non-empty length, pages in free runs, pages of chunks it holds. */
	struct pc_run_bin run_bins[PC_RUN_MAX_PAGES + 1];
	uint64_t run_bitmap[PC_RUN_MAX_PAGES / 64 + 1];
	size_t run_free_pages;
	size_t run_chunk_pages;
	size_t run_dirty_pages;       /* in free runs that may be resident */
	_Atomic size_t run_dirty_hint; /* its copy for lock-free looks */
	/* free_pages + run_free_pages, one word (statistics: a chunk that goes
	 * whole from the run heap to the buddy lists moves between the two). */
	_Atomic size_t all_free_hint;
	struct pc_region *regions;
	/* Under lock: metadata of regions unmapped (unmap.c), zeroed, kept
	 * mapped below their old spans; zone_grow maps a span there again
	 * first, if that address is free (zone_spare_remap, which says what
	 * bounds the list). */
	struct pc_region *spare_regions;
	size_t unkept_regions; /* under lock: regions without keep_mapped */
	struct pc_mutex grow_lock;
	unsigned node, instance, id;
	struct pc_pcp *pcp;    /* [os_cpu_count()] */
	struct pc_lock_stats lock_stats;
	struct pc_zone_stats stats;
} PC_CACHE_ALIGNED;

struct pc_node {
	unsigned id;
	unsigned nr_zones;
	struct pc_zone *zones; /* [nr_zones] */
	unsigned nr_cpus;      /* CPUs of this node */
};

/* ---- API ---------------------------------------------------------------- */
/* Initialise (idempotent, thread-safe): options, topology, zones. The try
 * form returns false (errno ENOMEM) when the OS refuses the metadata; the
 * plain form then aborts with a message (for tests and tools). */
bool pc_page_try_init(void);
void pc_page_init(void);
/* 2^order pages, aligned to their size, or NULL (errno = ENOMEM) when the OS
 * refuses memory. order <= PC_MAX_ORDER. */
void *pc_alloc_pages(unsigned order);
/* Same, preferring the zones of `node` (< pc_node_count()). */
void *pc_alloc_pages_node(unsigned order, unsigned node);
/* Free a block from pc_alloc_pages with the same order. A double free or a
 * pointer we do not own is reported and aborts. */
void pc_free_pages(void *p, unsigned order);
/*
 * Runs (run.c): exactly `pages` pages (1 <= pages <= PC_RUN_MAX_PAGES), page
 * aligned, or aligned to `align_pages` (a power of two <= PC_RUN_MAX_PAGES)
 * with the _aligned form, so that a block of n pages costs n pages, not the
 * next power of two. Runs are cut from chunks (buddy blocks of PC_MAX_ORDER)
 * kept apart from the blocks of pc_alloc_pages. Runs of up to PC_PCP_MAX_RUN
 * pages are cached per CPU by length. pc_free_run takes the current length;
 * it aborts on a page it does not manage, a bad length or alignment, and a
 * head still marked free (on a per-CPU list or heading a free run). It cannot
 * tell the middle of a free run (a run already merged into a larger free
 * one) from a run in use, so callers must not rely on it for double frees:
 * malloc's pointer check refuses a large block freed twice before this.
 */
void *pc_alloc_run(size_t pages);
void *pc_alloc_run_aligned(size_t pages, size_t align_pages);
void pc_free_run(void *p, size_t pages);
/* Up to n (at most PC_ALLOC_RUNS_MAX) runs of `pages` (<= PC_PCP_MAX_RUN)
 * into out[], with one per-CPU list hold and at most one zone-lock hold
 * (pcp.c, pcp_take_runs); how many. 0 if the zone has none, or when
 * re-entered: the caller then takes pc_alloc_run, which grows the zone. */
#define PC_ALLOC_RUNS_MAX 64
unsigned pc_alloc_runs(size_t pages, void **out, unsigned n);
/* Lengthen a run of `pages` to `to` pages in place if the pages after it are
 * a free run of its zone (not on a per-CPU list): false, nothing changed,
 * if not. */
bool pc_run_grow(void *p, size_t pages, size_t to);
/* Shorten a run of `pages` to `to` (1 <= to <= pages) pages: the tail goes
 * back to the zone's run heap. */
void pc_run_shrink(void *p, size_t pages, size_t to);
/*
 * Lending (lend.c): `pages` contiguous free pages of one region, page
 * aligned, for a block the caller manages itself (malloc's huge blocks, when
 * the OS refuses them a mapping of their own: the address space of free
 * regions is reused rather than left reserved). The range stays mapped and
 * in the region table; its first page has state PC_PG_LENT (aux = pages).
 * The caller must never unmap or remap any of it. *fresh tells whether all
 * of it was never touched (reads zero). NULL if no region has such a range
 * on its buddy lists (per-CPU lists and the run heap are not searched: drain
 * and reclaim first; and a wholly free region is better unmapped:
 * pc_page_unmap_free). pc_page_unlend gives it back (the same pages count);
 * it aborts on anything that is not a lent range.
 */
void *pc_page_lend(size_t pages, bool *fresh);
void pc_page_unlend(void *p, size_t pages);
/* Re-entry (top of the file): whether this thread is inside the page
 * allocator, so that this call comes from a signal handler that interrupted
 * it. One TLS load. The counters say how many re-entered calls were
 * refused (allocations, maintenance), deferred (frees) and how many
 * deferred frees were done since (relaxed, for tests and statistics). */
extern __thread unsigned char pc_page_depth __attribute__((tls_model("initial-exec"))) PC_HIDDEN;
PC_INLINE bool pc_page_reentered(void)
{
	return pc_page_depth != 0;
}
/* For the layers above that take a page lock themselves (the slab walker's
 * zone lock, the statistics' pcp locks): count the hold in the depth, as
 * the page allocator's own entry points do; leave drains what a handler
 * freed meanwhile. */
void pc_page_reentry_enter(void);
void pc_page_reentry_leave(void);
struct pc_page_reentry_counts {
	uint64_t refused, deferred, drained;
};
void pc_page_reentry_counts(struct pc_page_reentry_counts *out);
/* Drain every per-CPU list and return all free memory to the OS, then unmap
 * the regions that may be (pc_page_unmap_free). Returns the bytes released. */
size_t pc_page_trim(void);
/* Unmap every region of every zone that is wholly free on the buddy lists
 * and never held a block of pc_alloc_pages (top of the file says why that
 * is the rule), giving its address space back to the OS. Does not drain the
 * per-CPU lists. Returns the number of regions unmapped. Call with no page
 * lock held. */
size_t pc_page_unmap_free(void);
/* Drain the per-CPU lists of every zone for every CPU. */
void pc_page_drain_all(void);
/* Release, in every zone, the free memory that has stayed free longer than
 * vm.release_delay_ms (and what exceeds the bound). Returns bytes released.
 * Called by the release thread; tests call it to force a pass. */
size_t pc_page_release_due(void);
/* vm.release_thread's values (release_thread.c). */
enum pc_release_thread_mode {
	PC_RELEASE_THREAD_NEVER = 0,
	PC_RELEASE_THREAD_ALWAYS = 1, /* from the first malloc slow path on */
	PC_RELEASE_THREAD_AUTO = 2,   /* the default: on demand (pc_page_release_thread_poll) */
};
/* Start the background release thread if vm.release_thread asks for one and
 * none runs (1; or 2, auto, when a pass wanted one and the process already
 * has had a second thread, os_single_threaded, and in a fork child a
 * thread other than the one that forked has polled; and no seccomp
 * filter). Call
 * only with no allocator lock held (it may create a thread, and
 * pthread_create allocates): the malloc layer calls it from its allocation
 * slow path. Cheap when nothing is to be done. */
void pc_page_release_thread_poll(void);
/* Auto mode: the layer above holds `bytes` outside the zones (malloc's huge
 * blocks, live; told at each change, up or down) whose frees could leave
 * that much free and resident in a program that then makes no call. More
 * than the floor
 * (vm.release_watermark_kb) wants the thread, as a zone grown past it does
 * (release.c, zone_release_note_grown); the next poll starts it. Not with
 * a delay of 0. Cheap: two option reads. */
void pc_page_release_note_held(size_t bytes);
/* Whether the background release thread is running, and how many passes it
 * has finished (for tests: a pass that starts after a change sees it). */
bool pc_page_release_thread_running(void);
/* Whether release passes are the background thread's business: with
 * vm.release_thread=1 (even before the thread starts), or in auto mode (2,
 * the default) once the thread has been started. The zones' bound counts
 * the recent peak only then, and the layers above leave their decay to the
 * thread's hooks only then (else they tick it from their slow paths). */
bool pc_page_release_thread_active(void);
/* Auto mode: a release pass found a zone's free resident memory (buddy
 * lists and run heap) over its floor, or a zone grew past the floor
 * (zone_release_note_grown: its frees alone could then pass it), or the
 * layer above holds more than the floor outside the zones
 * (pc_page_release_note_held: huge blocks), or, for what is past the floor
 * already, the option was set to auto or the delay from 0 live
 * (zone_release_note_all), with no thread running, so the
 * next pc_page_release_thread_poll starts one
 * (cleared in a fork child, when the thread exits, when the option is set
 * to 0, and when a seccomp filter keeps it from starting). For tests. */
bool pc_page_release_thread_wanted(void);
/* Whether the thread sleeps without its periodic wake-ups (every zone clean
 * for a while; release_thread.c): the next slow path that finds dirty
 * memory in a zone wakes it. For tests. */
bool pc_page_release_thread_sleeping(void);
uint64_t pc_page_release_thread_passes(void);
/* How many times the thread has gone to sleep without its periodic
 * wake-ups (for tests). It does after PC_RELEASE_IDLE_PASSES passes in a row
 * that found every zone clean and saw no kick (release_thread.c). */
uint64_t pc_page_release_thread_sleeps(void);
#define PC_RELEASE_IDLE_PASSES 16
/* A layer above has cached resident memory that only the thread's pass
 * hooks give back (malloc's huge cache after a free): wake the thread if
 * it sleeps, so that the memory goes within the delay and not at the
 * sleep's 60 s backstop. One relaxed load when it does not sleep. */
void pc_page_release_thread_kick(void);
/* The release thread's pass hooks: functions of the layers above (the slab
 * layer's decay, sheaf_decay.c; malloc's expiry of cached huge mappings,
 * malloc/init.c) that each pass of the background thread calls first, in
 * the order they were added, with no lock held, so that an idle program's
 * sheaves, empty slabs and cached huge blocks come back to the page
 * allocator or the OS, where the same passes then release them after the
 * delay. The page layer never calls up but through these pointers. Each
 * layer adds its hook once, at start-up; false when all
 * PC_PAGE_RELEASE_HOOKS slots are taken. */
#define PC_PAGE_RELEASE_HOOKS 4
bool pc_page_release_hook_add(void (*hook)(void));
/* One pass of the release thread's loop: the hook, then pc_page_release_due.
 * Returns the bytes released. Tests call it to drive the thread's work
 * without the thread (and without sleeps). */
size_t pc_page_release_thread_pass(void);

/* The page clock: CLOCK_MONOTONIC in ns plus an offset that only tests move
 * (pc_page_clock_advance), so that a test sees "the delay has passed"
 * without sleeping. Every release decision reads this clock. */
uint64_t pc_page_clock_ns(void);
void pc_page_clock_advance(uint64_t ns);
/* For tests: forget every zone's recent peak of use (release.c), as two
 * window rolls with nothing in use between would, without the clock. */
void pc_page_release_forget_peak(void);

unsigned pc_node_count(void);
unsigned pc_cpu_node(unsigned cpu);
struct pc_node *pc_node_get(unsigned node);
/* Zone instance a CPU prefers. */
struct pc_zone *pc_zone_preferred(unsigned cpu);
/* Number of zones across all nodes, and zone i of that flat list. */
unsigned pc_zone_count(void);
struct pc_zone *pc_zone_get(unsigned i);

/* Walk every structure and check the invariants above; on failure print what
 * broke and return false. Takes every zone lock and pcp lock in turn. */
bool pc_page_check(void);
/* Expensive-assert builds (PC_DEBUG >= 3): pc_page_check at a point where the
 * page allocator must be consistent (after trim, in a fork child); a broken
 * invariant is fatal ("page allocator invariants broken <where>"). Takes the
 * locks pc_page_check takes: call it with no page lock held. Nothing in
 * other builds. */
#if PC_DEBUG >= 3
void pc_page_check_at(const char *where);
#else
#define pc_page_check_at(where) ((void)0)
#endif

/* fork(): take every page lock (pcp then zone), release, or reset in the child.
 * Registered with the lifecycle registry (os.h) by the page layer's init.
 * Prefork keeps a zone's lock only once no work of the zone is in flight
 * with it dropped (pcp batches, release batches, unmappings: the lock order
 * block above). */
void pc_page_prefork(void);
void pc_page_postfork_parent(void);
void pc_page_postfork_child(void);

/* Tests only (NULL = none): called at these points, so that a test holds a
 * thread there and forces an interleaving (tests/unit/page/pcp_inflight.c).
 * One relaxed load on slow paths only. */
enum pc_page_test_point {
	PC_PAGE_TEST_REFILL_TAKEN, /* pcp_refill: its batch taken from the zone, no lock held */
	PC_PAGE_TEST_PREFORK_WAIT, /* pc_page_prefork: every pcp lock held, a batch still in
				      flight (once per look at it) */
	PC_PAGE_TEST_THREAD_SLEEP, /* the release thread, its idle passes done, about to
				      say it sleeps (release_thread.c), no lock held */
	PC_PAGE_TEST_RELEASE_TAKEN, /* zone_release_until, zone_run_release_due: a batch off
				       the lists, before its madvise, no lock held */
	PC_PAGE_TEST_ZONE_LOCKED, /* an allocation from the zone (zone_alloc_req), a pcp
				     refill's batch taken from it (refill_take), a run
				     freed to it (pc_free_run): the zone lock held */
	PC_PAGE_TEST_PCP_LOCKED,  /* an allocation or a page free through a pcp
				     (zone_take, pc_free_pages): the pcp lock held */
	PC_PAGE_TEST_FORK_LOCKED, /* the end of pc_page_prefork: every page lock held */
	PC_PAGE_TEST_GROW_WAIT,   /* an allocation's slow path, about to wait for a release
				     batch of its zone before growing it (page_alloc.c,
				     take_after_release), no lock held */
};
extern void (*_Atomic pc_page_test_hook)(enum pc_page_test_point at);
PC_INLINE void pc_page_test_point(enum pc_page_test_point at)
{
	void (*hook)(enum pc_page_test_point) = pc_load_relaxed(&pc_page_test_hook);
	if (pc_unlikely(hook != NULL))
		hook(at);
}

/* ---- descriptor lookup ------------------------------------------------------ */
extern struct pc_region *_Atomic pc_region_table[(size_t)1 << PC_REGION_TABLE_BITS] PC_HIDDEN;

PC_INLINE struct pc_region *pc_region_of(const void *p)
{
	uintptr_t i = (uintptr_t)p >> PC_REGION_SHIFT;
	if (pc_unlikely(i >= ((uintptr_t)1 << PC_REGION_TABLE_BITS)))
		return NULL;
	/* Acquire pairs with the release that publishes a region: its base and
	 * zone are visible before the pointer is. */
	return pc_load_acquire(&pc_region_table[i]);
}
/* Whether p lies in a region's span: a table load that nothing waits on
 * but a branch (the descriptor's address does not come from it). */
PC_INLINE bool pc_region_mapped(const void *p)
{
	return pc_region_of(p) != NULL;
}
/* The descriptor of p's page if p lies in a region (pc_region_mapped):
 * computed, no load (struct pc_region: the descriptors end at the span's
 * base, 64 bytes a page). For any other p an address that must not be
 * read. */
PC_INLINE struct pc_page *pc_page_desc(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	uintptr_t base = a & ~(uintptr_t)(PC_REGION_SIZE - 1);
	uintptr_t offset = (a >> (PC_PAGE_SHIFT - 6)) & (PC_REGION_DESC_BYTES - 64);
	/* GCC sees that base and offset share no bit and joins them with an
	 * `or`, then subtracts: one instruction more than the `lea` with a
	 * displacement it emits when it cannot tell (the empty asm). */
	__asm__("" : "+r"(offset));
	/* In integers: for a p below the first region the sum wraps (never
	 * read), which pointer arithmetic must not. */
	return (struct pc_page *)(base + offset - PC_REGION_DESC_BYTES);
}
/* Descriptor of the page holding p, or NULL if p is not in any region. */
PC_INLINE struct pc_page *pc_page_of(const void *p)
{
	return pc_region_mapped(p) ? pc_page_desc(p) : NULL;
}
_Static_assert(sizeof(struct pc_page) == 64, "pc_page_of: a descriptor is 64 bytes");
/* Descriptor of a page known to be ours (from pc_alloc_pages). */
PC_INLINE struct pc_page *pc_page_of_owned(const void *p)
{
	return pc_page_desc(p);
}
/* The region of a descriptor, and the span's base: the next region
 * boundary above the descriptor (no load). */
PC_INLINE uintptr_t pc_page_base(const struct pc_page *pg)
{
	return ((uintptr_t)pg + PC_REGION_DESC_BYTES) & ~(uintptr_t)(PC_REGION_SIZE - 1);
}
PC_INLINE struct pc_region *pc_page_region(const struct pc_page *pg)
{
	return (struct pc_region *)(pc_page_base(pg) - sizeof(struct pc_region));
}
PC_INLINE void *pc_page_address(const struct pc_page *pg)
{
	/* The descriptors start on a 1 MiB boundary: pg's index is its offset
	 * from there over 64. */
	uintptr_t index = ((uintptr_t)pg & (PC_REGION_DESC_BYTES - 1)) >> 6;
	return (void *)(pc_page_base(pg) + (index << PC_PAGE_SHIFT));
}

/* ---- layer-private: shared between the files of src/page/ ------------------ */
/* The entry points' work, without the re-entry check (reentry.c wraps each
 * pc_ name around its page_ one): page_alloc.c, lend.c, unmap.c, release.c.
 * Page code calls these, never the pc_ names of maintenance, which a call
 * from inside the layer would find re-entered. */
void *page_alloc_pages(unsigned order);
void *page_alloc_pages_node(unsigned order, unsigned node);
void *page_alloc_run_aligned(size_t pages, size_t align_pages);
unsigned page_alloc_runs(size_t pages, void **out, unsigned n); /* pcp.c */
void page_free_pages(void *p, unsigned order);
void page_free_run(void *p, size_t pages);
bool page_run_grow(void *p, size_t pages, size_t to);
void page_run_shrink(void *p, size_t pages, size_t to);
void *page_lend(size_t pages, bool *fresh);
void page_unlend(void *p, size_t pages);
size_t page_trim(void);
void page_drain_all(void);
size_t page_unmap_free(void);
size_t page_release_due(void);
/* The checkers (check.c, run.c): report a broken invariant and fail. */
#define PC_PAGE_CHECK(cond, ...)                 \
	do {                                     \
		if (!(cond)) {                   \
			pc_message(__VA_ARGS__); \
			return false;            \
		}                                \
	} while (0)
/* Pages of z in use, under its lock: neither free nor on their way to the
 * OS in a release pass (release.c). What the peak of use and the release
 * bound count. */
PC_INLINE size_t zone_used_locked(const struct pc_zone *z)
{
	return z->managed_pages - z->free_pages - z->release_held;
}
/* The same from the lock-free hints (no lock): 0 rather than a wrapped
 * value when a growth published free_hint before managed_hint (buddy.c,
 * zone_publish_counts_locked, stores them in that order). */
PC_INLINE size_t zone_used_hint(struct pc_zone *z)
{
	size_t managed = pc_load_relaxed(&z->managed_hint), free = pc_load_relaxed(&z->free_hint);
	return managed > free ? managed - free : 0;
}
/* "buddy.c" */
struct pc_page *zone_alloc_block_locked(struct pc_zone *z, unsigned order, bool kept);
void zone_free_block_locked(struct pc_zone *z, struct pc_page *pg, unsigned order, enum pc_mem mem);
void zone_free_block_at_locked(struct pc_zone *z, struct pc_page *pg, unsigned order, enum pc_mem mem,
			       uint64_t freed_ns);
void zone_free(struct pc_zone *z, struct pc_page *pg, unsigned order);
bool zone_grow(struct pc_zone *z);
bool page_stats_on(void);
void zone_publish_hints_locked(struct pc_zone *z);
void zone_publish_counts_locked(struct pc_zone *z);
void zone_take_block_locked(struct pc_zone *z, struct pc_page *pg, unsigned order);
void zone_seed_all_locked(struct pc_zone *z);
bool zone_carve_check_locked(struct pc_zone *z);
struct pc_page *zone_take_oldest_dirty_locked(struct pc_zone *z, uint64_t due_before, unsigned *order);
bool zone_held_blocks_serve_locked(struct pc_zone *z, unsigned order);
/* "page_alloc.c": a fork is taking the zone locks (pc_page_prefork; relaxed:
 * a stale value costs one more batch or one batch less). Loops that take a
 * zone's memory off its lists batch after batch with the lock dropped in
 * between (release passes, run releases, unmapping) stop before the next
 * batch while it is set, so fork waits for one batch, not a whole pass. */
extern _Atomic bool page_forking;
PC_INLINE bool page_fork_pending(void)
{
	return pc_load_relaxed(&page_forking);
}
/* "release.c" */
size_t zone_release(struct pc_zone *z, size_t keep_pages);
int page_release_memory(void *p, size_t bytes);
void zone_maybe_release(struct pc_zone *z);
void zone_release_if_over(struct pc_zone *z);
void zone_release_note_grown(struct pc_zone *z);
void zone_release_note_all(void);
void zone_release_fork_child(void);
void zone_release_init(void);
/* "release_thread.c" */
void release_thread_note_over_floor(void);
/* vm.release_thread set to auto: the order point between the option's store
 * and the hook's reads of thread_state (release_thread.c, exit_order_point). */
void release_thread_exit_order(void);
void release_thread_wake(void);
void release_thread_init(void);
void release_thread_fork_child(void);
void release_thread_work(void);
/* "pcp.c" */
/* Entries taken off a pcp, on their way to the zone with no lock held
 * (pcp_detach_locked, pcp_batch_free): buddy blocks (order in their head)
 * and runs (length in aux), state PC_PG_NONE; in flight from `from` (set
 * by the first detach, NULL while empty). */
struct pcp_batch {
	struct pc_list blocks, runs;
	int pages;
	struct pc_pcp *from;
};
/* A refill in flight (pcp_refill_plan under the pcp lock, then pcp_refill
 * without it): up to `want` entries of `pages` pages, buddy blocks of
 * `order` (run == 0) or runs of `run` pages. */
struct pcp_refill {
	unsigned order, run;
	int pages, want, got;
	int mine;             /* the first `mine` entries are the caller's (1; pc_alloc_runs more) */
	int reserved;         /* pages announced in refill_pages for the list */
	bool grow;            /* a full batch: alloc_factor rises when it lands */
	bool landed;          /* pcp_refill: the pcp lock was free to land it (counted) */
	uint64_t t0;          /* statistics clock at the start */
	struct pc_list batch; /* taken from the zone, not landed */
};
struct pc_page *pcp_take(struct pc_pcp *pcp, unsigned order, unsigned run);
void pcp_refill_plan(struct pc_pcp *pcp, unsigned order, unsigned run, struct pcp_refill *r);
struct pc_page *pcp_refill(struct pc_zone *z, struct pc_pcp *pcp, struct pcp_refill *r);
bool pcp_free(struct pc_pcp *pcp, struct pc_page *pg, unsigned order, struct pcp_batch *out);
bool pcp_free_run(struct pc_pcp *pcp, struct pc_page *pg, size_t pages, struct pcp_batch *out);
void pcp_batch_init(struct pcp_batch *b);
void pcp_detach_locked(struct pc_pcp *pcp, int pages, struct pcp_batch *b);
void pcp_batch_free(struct pc_zone *z, struct pcp_batch *b);
void pcp_drain_locked(struct pc_zone *z, struct pc_pcp *pcp, int pages);
void pcp_init(struct pc_pcp *pcp);
void pcp_decay(struct pc_zone *z);
/* "unmap.c" */
size_t zone_unmap_free(struct pc_zone *z, bool clean_only, size_t keep_regions);
void zone_unmap_maybe(struct pc_zone *z);
struct pc_region *zone_spare_remap(struct pc_zone *z, bool *refused);
/* "topology.c" */
bool page_numa_bind(void);
/* "run.c" */
void zone_run_init(struct pc_zone *z);
struct pc_page *zone_run_alloc_locked(struct pc_zone *z, size_t pages, size_t align_pages);
unsigned zone_run_alloc_many_locked(struct pc_zone *z, size_t pages, unsigned n, struct pc_list *out);
void zone_run_free_locked(struct pc_zone *z, struct pc_page *pg, size_t pages);
void zone_run_free_at_locked(struct pc_zone *z, struct pc_page *pg, size_t pages, uint64_t now);
void zone_run_free_mem_locked(struct pc_zone *z, struct pc_page *pg, size_t pages, enum pc_mem mem,
			      uint64_t freed_ns);
bool zone_run_claim_locked(struct pc_zone *z, struct pc_page *pg, size_t pages, size_t to);
size_t zone_run_release_locked(struct pc_zone *z);
size_t zone_run_release_due(struct pc_zone *z, uint64_t due_before);
bool zone_run_check_locked(struct pc_zone *z, size_t *listed);
bool zone_held_runs_serve_locked(struct pc_zone *z, size_t need);

#endif /* PC_PAGE_H */
