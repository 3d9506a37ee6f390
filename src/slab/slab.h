/*
 * slab/slab.h - SLUB-style object caches (seeds 000 and 002).
 *
 * A cache hands out objects of one size. Its memory is slabs: 2^order pages
 * from the page allocator, cut into `objects` slots. The descriptor of a
 * slab is the struct pc_page of its first page (state PC_PG_SLAB); the other
 * pages are PC_PG_TAIL. Every page's descriptor, head or tail, holds the
 * cache (owner) and what free's slot test needs (aux = the slab's bytes - 1,
 * slot_inverse, slot_shift, slot_objects: pc_slab_slot_index), written once
 * by slab_new: the same in every page, slot_objects the slab word's object
 * count and the other two the cache's, for the slab's whole life
 * (pc_cache_check checks them); slab_discard sets slot_objects back to 0 on
 * every page before they go back, so that free's fast test, which reads no
 * page state (malloc.h small_slab; page.h, struct pc_page), refuses them
 * from then on. So free classifies an object from its own
 * page's descriptor, with no detour to the head; the head of a tail page is
 * found by arithmetic (pc_slab_head: the page's index in the slab is the
 * object's offset, p & aux, over the page size), and the slab of any object
 * in O(1) from the page allocator's region table.
 *
 * ---- The life of a slab -------------------------------------------------
 *   new ──> CPU slab ──(no free object left)──> full ──(a free)──> CPU partial
 *            ^   │                               │                      │
 *            │   └─(flush / deactivate, some free)──> node partial <────┘ (overflow,
 *            │                                         │    ^             unfreeze)
 *            └──────────── (get_partial) ──────────────┘    │
 *   new ──(a bulk refill takes every object: refill_new)──> full (never frozen)
 *   node partial with no object in use, beyond min_partial ──> page allocator
 *
 *   frozen = 1  the slab belongs to one CPU structure: it is that CPU's slab
 *               or on its partial list. Only the owner lists or unlists it;
 *               others may only push freed objects onto its freelist.
 *   frozen = 0  the slab is on its node's partial list (PC_SLAB_ON_PARTIAL
 *               set, under list_lock) or full and on no list.
 *
 * ---- Where a free object is --------------------------------------------
 *   exactly one of: the CPU freelist c->freelist (objects of c->slab only);
 *   the slab's own freelist (page word); the slab's fresh objects (never
 *   handed out, counters.fresh: a new slab's are all fresh); allocated to a
 *   user. counters.inuse counts objects neither on the slab's own freelist
 *   nor fresh, so for a CPU slab it includes the objects on the CPU
 *   freelist. Fresh objects are taken (slab_alloc.c, "Fresh objects") only
 *   where a slab's freelist is taken: by the CPU that has the slab frozen,
 *   under its c->lock, by the list_lock holder that freezes a node partial
 *   slab, and by a debug cache's allocation under list_lock; each takes
 *   them with the same compare-and-swap of the slab word. And by
 *   refill_new, which takes a new slab's first objects with a plain store
 *   of its word before any other thread can know the slab.
 *
 * ---- Sheaves (Linux 6.18's percpu sheaves, in user space) --------------------
 *   In front of the slabs, each CPU (rseq mode) has a main and a spare
 *   sheaf: an array of free object pointers of the cache, whatever slab each
 *   belongs to (thread mode: one main sheaf per thread, no spare). Alloc
 *   pops from the current CPU's main sheaf, free pushes onto it; when main is
 *   empty (full) the slow path moves half a sheaf from the spare onto it
 *   (from it into the spare: sheaf.c move_from_spare and move_to_spare, so
 *   that main is left half full) or, when there was nothing to move, swaps
 *   in the spare; thread mode, and rseq mode after those, trades whole sheaves
 *   with the node's barn (full and empty sheaves under barn->lock, at most
 *   its bound of each: slub.barn_sheaves, raised with demand within a
 *   budget for the process, slub.barn_max_kb, and lowered again by the
 *   decay, barn.c), and only
 *   when the barn has none refills
 *   from (flushes to) the slabs in one batch: a refill takes c->lock once,
 *   a flush gives each slab's objects back as one chain with one
 *   compare-and-swap of the slab word (barn.c, slab_free_bulk), or, when
 *   they are every object in use of a full slab on no list, the slab
 *   itself with none of them written (barn.c, "Whole slabs"; a flush from
 *   the barn keeps the chains that may become whole as its carry).
 *   Two fast paths, chosen once at start-up (slub.sheaf_mode reads it):
 *   rseq    per-CPU sheaves on glibc's rseq registration (os.h "per-CPU
 *           stacks on rseq"): push and pop are restartable sequences that
 *           commit with one store; no lock, no atomic read-modify-write.
 *           Free uses the slots of this thread's last malloc (last_slots)
 *           when its object is the one that malloc returned and the slots
 *           are its object's cache's (sheaf_free_slots: a branch in place
 *           of a chain of dependent loads).
 *   thread  where rseq is missing (valgrind, glibc.pthread.rseq=0) or under
 *           ThreadSanitizer (which cannot see the assembly): one main sheaf
 *           per thread and cache (pc_thread_sheaves), plain loads and
 *           stores; the thread's exit handler (lifecycle, os.h) gives them
 *           to the barn. A thread-mode fast path sets the thread's busy
 *           flag before it reads the sheaf and clears it after its last
 *           write, so a signal handler that allocates meanwhile goes to
 *           the slabs instead of the half-updated sheaf, and so a flusher
 *           of another thread knows (below).
 *   Changing a CPU's main sheaf: under slot->lock (slow paths only), either
 *   with os_rseq_slot_cas() run on that CPU (the slow paths), or, for
 *   another CPU (shrink, trim, destroy, out-of-memory retry, capacity
 *   change), a plain store of the empty sheaf then os_rseq_fence()
 *   (membarrier PRIVATE_EXPEDITED_RSEQ): when it returns no fast path can
 *   still commit to the old sheaf, which is then the flusher's alone. A
 *   detached sheaf (spare, barn, or being filled) is touched only by the
 *   thread that holds it.
 *   Capacities: a default capacity grows with demand (sheaf.c, "Sheaf
 *   capacity"; in rseq mode past the default too, "Past the default",
 *   and the decay halves it back, under slab_mutex) without a flush, so a
 *   main sheaf, a spare, a thread's entry or a barn list may hold a sheaf
 *   of an older capacity; it serves as it
 *   is (each sheaf carries its capacity) until a slow path retires it:
 *   install and empty_sheaf do not keep it as the spare, barn_put and
 *   barn_pop give its objects back to the slabs and free it.
 *   Flushing another thread's sheaves (thread mode; sheaf_thread.c): the
 *   asymmetric Dekker of userspace RCU, on membarrier. Each thread that
 *   keeps sheaves is on a registry (threads_lock). Its fast path
 *     (1) sets its busy flag (a plain store: the announcement),
 *     (2) reads its entry, works on that sheaf,
 *     (3) clears the flag (a plain store),
 *   with only compiler barriers between: x86-64 may let (2)'s load pass
 *   (1)'s store. Its slow paths work under the flag too, take their
 *   entry's sheaf with a compare-and-swap (sheaf_entry_take) and publish
 *   the next one with a store into the then-empty entry. A flusher,
 *   holding threads_lock,
 *     (a) swaps each entry it flushes to pc_sheaf_none (compare-and-swap,
 *         against the owner's slow path),
 *     (b) calls membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED): every thread
 *         of the process executes a full barrier B (an IPI if it runs, a
 *         context switch otherwise) before it returns,
 *     (c) waits until each other registered thread has been seen with
 *         its busy flag clear (every flush, the decay's and a one-cache
 *         flush's included, drops threads_lock while it yields, so
 *         that a fork or an exiting thread does not wait for a preempted
 *         fast path through it; sheaf_thread.c,
 *         wait_fast_paths, says why that stays sound), and then owns the
 *         detached sheaves.
 *   Why: for each fast path of a thread T, either its (1) precedes T's
 *   barrier B, so after the membarrier the flusher sees the flag set, or
 *   already cleared again, and (c) waits for exactly the fast paths that
 *   may have read the old entry; or (1) follows B, so (2) follows B and
 *   reads the entry after (a): pc_sheaf_none. Nothing on the fast path is
 *   an atomic read-modify-write or a fence; (c) is bounded (a fast path
 *   makes no call; a slow path under the flag never waits for the
 *   flusher's lock). Where membarrier is unavailable (neither
 *   PRIVATE_EXPEDITED nor GLOBAL: seccomp, kernels before 4.3), flushers
 *   take only their own thread's sheaves, the barns' and exited threads';
 *   other live threads' (one sheaf per cache each) stay until those
 *   threads exit. Statistics read every registered thread's counts racily
 *   (sheaf memory stays mapped): a statistic.
 *   Decay (sheaf_decay.c): passes at most once per vm.release_delay_ms flush
 *   the sheaves and barns unchanged since the previous pass (flush_cpus with
 *   idle_only, the registry's entries, barn_decay), and shrink the slabs of
 *   caches left with no sheaf; from the slow paths and, through the hook
 *   registered with the page layer (pc_page_release_hook_add), from each
 *   pass of the background release thread (vm.release_thread). A pass
 *   holds slab_mutex from start to end (tried from the slow paths, waited
 *   for by the release thread), as do the walker (pc_cache_check) and
 *   pc_cache_destroy: a pass never overlaps them, and one that starts after
 *   a destroy's unlinking never finds its cache.
 *   Fork: the child gives the parent's other threads' sheaves (thread mode)
 *   back to the slabs (sheaf_threads_fork_orphans, a lifecycle entry of its
 *   own that runs after every lock is usable again).
 *   Re-entry: a signal handler that allocates while its thread is inside a
 *   sheaf slow path (sheaf_depth > 0) takes no lock: its allocation tries
 *   the lock-free slab fast path and may fail with ENOMEM, its free is put
 *   on a per-thread list that the interrupted slow path frees on its way out.
 *   The same while its thread is inside the page allocator
 *   (pc_page_reentered, page.h: it may hold a zone or pcp lock, which every
 *   slab lock nests outside); the list is then freed by the thread's next
 *   sheaf slow path, by the malloc layer's slow paths
 *   (pc_slab_reentry_drain) or at thread exit. Holders of slab_mutex
 *   (slab_mutex_lock/unlock: class creation, trim, destroy, decay, the
 *   statistics walk) and pc_cache_shrink (c->lock, list_lock) count in
 *   sheaf_depth too.
 *   Constructors: sheaves store pointers only, never touch the objects, so
 *   a cache with a constructor keeps SLUB's semantics (constructed once:
 *   when the object is first taken from its slab, fresh; slab_alloc.c).
 *
 * ---- Double frees (checked by default; "free(): double free detected") -----
 *   Objects carry no state of their own (a free object's memory is the
 *   user's old data, or the free pointer), so a double free is caught where
 *   the first free left the object next to where the second one puts it:
 *   - the sheaf free fast paths (rseq and thread) compare the object with
 *     the two topmost objects of the sheaf they push onto, before testing
 *     whether it is full: free(a); free(a) and free(a); free(b); free(a) on
 *     one CPU (or thread), with nothing but frees in between. In rseq mode
 *     the comparison is inside the critical section, so it reads one
 *     consistent state of that CPU's sheaf.
 *   - the slab frees compare the object with the freelist it is pushed
 *     onto (SLUB's naive check, extended to the second entry of the CPU
 *     freelist in slab_free_fast; the head of the slab's own freelist in
 *     slab_free_slow), and slab_free_slow refuses a free to a
 *     slab none of whose objects is in use (or fewer than a flushed chain
 *     holds, or with the object, when it heads the chain, fresh: never
 *     handed out, so free already); a flushed sheaf object whose slab is
 *     gone or that is its slab's chain's latest object already, and a CPU
 *     freelist longer than its slab, are reported.
 *   None of these reads can see a legitimately allocated object as free: it
 *   has been on no free list since its allocation, which happens before the
 *   free (C11 coherence; the rseq section reads its CPU's sheaf atomically).
 *   Not caught: a double free whose first copy has been buried under more
 *   than one later free of the same cache, or moved away (sheaf swapped,
 *   moved to the spare with half of a full main, thread migrated) before
 *   the second free; those two copies may later be
 *   handed out twice. Nor the free of a fresh object (a pointer to a slot
 *   the program was never given) that goes onto a sheaf or a CPU freelist
 *   and is handed out again before a flush brings it to its slab, or that a
 *   flushed chain holds elsewhere than at its head: it is then handed out
 *   twice, and its slab's inuse counts one object too few (the slab may go
 *   back to the page allocator under a live object). slab_free_slow and a
 *   debug cache's every free refuse it. The cost: about six instructions
 *   on the free fast path (docs/reliability.md). A debug cache with F
 *   (below) catches every one.
 *
 * ---- Debug caches (slub_debug mode, slub.debug; debug.c) --------------------
 *   A cache whose name slub.debug lists has s->debug != 0 (PC_SLUB_DEBUG_*
 *   flags, fixed at creation, P dropped when it has a constructor) and:
 *   - a slot of object, right red zone (Z: the alignment slack and a word),
 *     free pointer (offset == inuse: never in the object), the requested
 *     size (Z: object_size, or malloc's request, whose tail up to
 *     object_size is red zone too), two tracks (U), padding; size a multiple of the alignment and of the largest power of
 *     two up to a page dividing object_size; objects at slot starts;
 *   - no sheaves (sheaf_capacity 0, main sheaf pc_sheaf_none, no thread
 *     sheaf index): every fast path fails, and the sheaf slow paths' first
 *     test sends it to slab_debug_alloc / slab_debug_free;
 *   - whatever its flags, a free of an object first or second on its
 *     slab's freelist, or into a slab with nothing in use, is refused as
 *     the sheaves would have (below the sheaves, "Double frees" above);
 *   - never a CPU slab, CPU freelist (NULL, tid even and unchanging) or CPU
 *     partial slab; its slabs are never frozen: a slab with a free object
 *     is on its node's partial list, a full one on no list;
 *   - every change of a debug slab's freelist, counters and list position
 *     is made under its node's list_lock (so the freelist seen there is
 *     exact and the checks race with nothing); a free object's bytes are
 *     poison (P) and its red zone 0xbb (Z), an allocated one's red zone
 *     0xcc; a fresh object's (never handed out) are untouched until its
 *     first allocation makes it free, then allocated (both with no lock
 *     held: it is the allocating thread's alone once taken). A report
 *     (debug_report.c) copies what it shows under that lock, drops it,
 *     prints and aborts; it shows nothing of a fresh object.
 *   The debug paths take list_lock alone (no c->lock, no slot lock), and
 *   call the page allocator with no slab lock held.
 *
 * ---- Locks (outermost first) -----------------------------------------------
 *   slab_mutex (global: the cache list, creation, tunable changes; held
 *               throughout by each decay pass, by pc_cache_check and by
 *               pc_cache_destroy, so that no decay pass flushes or shrinks
 *               a cache that is being walked or destroyed)
 *     -> slot->lock (per cache and CPU number: changes of its main and spare
 *                  sheaves; a spinlock held only by sheaf slow paths/flushes)
 *        or threads_lock (thread mode, sheaf_thread.c: the registry of
 *                  threads that keep sheaves; a flusher holds it from its
 *                  first detach until the detached objects are in the
 *                  slabs; the slot locks' rank)
 *     -> barn->lock (per cache and node: its two lists and its carry;
 *                  kind from lock.kind, with statistics; nothing else is
 *                  taken under it)
 *     -> c->lock  (per cache and CPU number: the CPU slab, the CPU partial
 *                  list, and every change of c->slab; a spinlock, held only
 *                  by slow paths)
 *       -> n->list_lock  (per cache and node: the node partial list,
 *                  nr_partial and the PC_SLAB_ON_PARTIAL flag; kind from
 *                  lock.kind, with statistics)
 *         -> page allocator locks (zone->grow_lock -> pcp->lock ->
 *            zone->lock; see page.h).
 *   Debug caches ("Debug caches" above) take only list_lock, no new lock.
 *   A sheaf slow path holds its cache's slot lock while it allocates a sheaf
 *   from a sheaf cache (whose c->lock it then takes), so slot locks come
 *   before every c->lock. pc_slab_prefork holds slab_mutex, then every slot
 *   lock of every cache, every barn lock, every c->lock, every list_lock
 *   (rank by rank, each pass in cache-list order): the only place locks of
 *   two caches nest but the sheaf case, and src/README.md says why that is
 *   safe. Debug builds check these ranks (lock.h, "lock ranks").
 *   slab_mutex is try-locked, never waited for, under a slot lock (or a
 *   thread-mode busy flag): a growth of a capacity past the default
 *   (sheaf.c, past_demand); a try never waits, so it cannot deadlock
 *   against prefork or a decay pass, and the witness records it without
 *   checking its rank.
 *   Lock-free: the fast paths (sheaf and slab), the slab freelist word, and
 *   the slab counts given back (c->slabs_gone, objects_gone: atomic adds
 *   by any thread on that CPU number). The counts made (c->slabs_made,
 *   objects_made) are written under c->lock (refill) with a load and a
 *   store, or, for a debug cache, with atomic adds on the current CPU:
 *   never both in one cache (s->debug is fixed). slab_counts reads a
 *   moment's sums, never below 0, exact when no slab is being made or
 *   given back, as pc_cache_check needs.
 *
 * ---- Fast path safety in user space (the kernel's this_cpu_cmpxchg_double
 * is atomic only against its own CPU; here any thread may touch any CPU's
 * structure after a migration) ------------------------------------------------
 *   c->freelist and c->tid form one 16-byte word updated only by a locked
 *   cmpxchg16b. Every successful update adds 2 to tid, so a thread that read
 *   the CPU number, was preempted or migrated, and comes back with a stale
 *   freelist head fails its compare-and-swap (no ABA) and retries. The slow
 *   path, under c->lock, first swaps the word to (NULL, tid + 1): an odd tid
 *   sends every fast path to the slow path, so c->slab can change while no
 *   fast path relies on it; it publishes (freelist, tid + 2) when done. A
 *   fast free reads tid (acquire), then c->slab, and commits only if tid is
 *   still the even value it read, so its object belongs to c->slab.
 *   The fast alloc reads the next pointer from an object that another thread
 *   may already have taken: slab memory stays mapped forever (a region
 *   that held a slab is never unmapped, see page.h), so that read sees
 *   garbage at worst, and the compare-and-swap then fails because tid
 *   moved on.
 */
#ifndef PC_SLAB_H
#define PC_SLAB_H

#include "../page/page.h"
#include "pcmalloc.h"

/*
 * SLAB_TEXT_WITH(fn): a slow-path helper placed with fn's text, out of line.
 * fn is a function that programs enter (tools/hot_text.py lists it), so
 * cmake/hot-text.ld's pattern .text.fn.* puts the helper in the text that
 * programs enter first: as a function of its own it would lie in the cold
 * text, and every program that takes the path would fault in a window of
 * that (32-48 kB of peak RSS in bench_small), while inlined into each
 * caller it would make that text longer. (tools/hot_text.py names
 * sections after symbols, so its list's line for the helper itself,
 * .text.helper, matches nothing then: harmless. The helper stays in the
 * text programs enter first even when a list is made from workloads that
 * never reached it.)
 */
#define SLAB_TEXT_WITH(fn) __attribute__((noinline, section(".text." #fn ".with")))

/* SLUB's counters, one line each (kept only while stats.enable is on). */
#define PC_SLAB_STATS(X)                                                        \
	X(alloc_fastpath)      /* allocation from the CPU freelist */          \
	X(alloc_slowpath)      /* allocation that took c->lock */              \
	X(free_fastpath)       /* free to the CPU freelist */                  \
	X(free_slowpath)       /* free to a slab's own freelist */             \
	X(free_remote)         /* ... of a slab that is not this CPU's */     \
	X(free_frozen)         /* ... of a slab owned by some CPU */          \
	X(free_add_partial)    /* a free moved a full slab to a partial list */\
	X(free_remove_partial) /* a free emptied a slab that was discarded */ \
	X(alloc_refill)        /* CPU freelist refilled from the CPU slab */   \
	X(alloc_from_partial)  /* CPU slab taken from the node partial list */\
	X(cpu_partial_alloc)   /* CPU slab taken from the CPU partial list */  \
	X(cpu_partial_free)    /* slab put on a CPU partial list */            \
	X(cpu_partial_drain)   /* CPU partial list moved to the node */        \
	X(slab_alloc)          /* new slab from the page allocator */          \
	X(slab_free)           /* slab returned to the page allocator */      \
	X(deactivate_full)     /* CPU slab retired full */                     \
	X(deactivate_partial)  /* CPU slab retired to the node partial list */\
	X(deactivate_empty)    /* CPU slab retired empty */                    \
	X(cmpxchg_cpu_fail)    /* fast path compare-and-swap retried */        \
	X(cmpxchg_slab_fail)   /* slab word compare-and-swap retried */        \
	X(sheaf_swap)          /* main sheaf replaced by the spare */          \
	X(sheaf_move)          /* half a sheaf moved between main and spare */ \
	X(sheaf_refill)        /* sheaf filled from the slabs */              \
	X(sheaf_flush)         /* sheaf emptied into the slabs */             \
	X(barn_get)            /* sheaf taken from the barn */                 \
	X(barn_put)            /* sheaf given to the barn */                   \
	X(sheaf_flush_all)     /* every CPU's sheaves flushed (fence) */       \
	X(sheaf_reentrant)     /* slow path entered from a signal handler */   \
	X(sheaf_bypass)        /* allocation or free that skipped sheaves */  \
	X(free_bulk)           /* flushed sheaf objects of one slab freed with one compare-and-swap */ \
	X(barn_grow)           /* barn bound raised: a miss after a full sheaf was refused */

enum pc_slab_stat {
#define PC_SLAB_STAT_ENUM(name) PC_SLAB_STAT_##name,
	PC_SLAB_STATS(PC_SLAB_STAT_ENUM)
#undef PC_SLAB_STAT_ENUM
	PC_SLAB_STAT_COUNT
};
extern const char *const pc_slab_stat_names[PC_SLAB_STAT_COUNT];

/* 16 bytes updated as one by cmpxchg16b: a pointer and a 64-bit word. */
struct pc_dword {
	void *_Atomic ptr;
	_Atomic uint64_t word;
} __attribute__((aligned(16)));

/* counters word of a slab: inuse (bits 0-20), objects (21-41), fresh
 * (42-62), frozen (63). Invariant: inuse + (objects on the slab's own
 * freelist) + fresh == objects. fresh counts the slab's last objects,
 * [objects - fresh, objects), which have never been handed out: nothing has
 * written them (a constructor has not run on them), they are on no list,
 * and their pages stay untouched until they are (slab_alloc.c, "Fresh
 * objects"). A slab is full when its freelist is empty and fresh is 0. */
#define PC_SLAB_FIELD_BITS 21
#define PC_SLAB_FIELD_MASK ((1u << PC_SLAB_FIELD_BITS) - 1)
#define PC_SLAB_INUSE(w)   ((uint32_t)(w) & PC_SLAB_FIELD_MASK)
#define PC_SLAB_OBJECTS(w) ((uint32_t)((w) >> PC_SLAB_FIELD_BITS) & PC_SLAB_FIELD_MASK)
#define PC_SLAB_FRESH(w)   ((uint32_t)((w) >> (2 * PC_SLAB_FIELD_BITS)) & PC_SLAB_FIELD_MASK)
#define PC_SLAB_FROZEN(w)  ((unsigned)((w) >> 63) & 1u)
#define PC_SLAB_COUNTERS(inuse, objects, frozen) \
	((uint64_t)(inuse) | ((uint64_t)(objects) << PC_SLAB_FIELD_BITS) | ((uint64_t)(frozen) << 63))
#define PC_SLAB_FRESH_WORD(fresh) ((uint64_t)(fresh) << (2 * PC_SLAB_FIELD_BITS))
/* The index of the slab's first fresh object (objects if none). */
#define PC_SLAB_FIRST_FRESH(w) (PC_SLAB_OBJECTS(w) - PC_SLAB_FRESH(w))
_Static_assert((PC_PAGE_SIZE << PC_MAX_ORDER) / sizeof(void *) <= PC_SLAB_FIELD_MASK,
	       "a slab's object count fits its counters' fields (slots are at least a word)");

#define PC_SLAB_ON_PARTIAL 0x1 /* page->flags: on the node partial list */

/* Per cache and CPU number. */
struct pc_cache_cpu {
	struct pc_dword fl;           /* ptr: CPU freelist; word: tid */
	struct pc_page *_Atomic slab; /* the CPU slab; changed under lock with tid odd */
	struct pc_page *partial;      /* CPU partial list (via list.next), under lock */
	unsigned nr_partial;          /* slabs on it, under lock */
	struct pc_spin lock;
	/* [PC_SLAB_STAT_COUNT] counters (slab_stat: written only while
	 * stats.enable is on), in the cache's cold block ("cache.c"): off
	 * the pages a cache writes at creation, so that they cost no memory
	 * while statistics are off (docs/footprint.md). */
	_Atomic uint64_t *stats;
	/* The slab counts, per CPU number so that slab_new and slab_discard
	 * write no line the other CPUs write (with SLUB's per-node counters,
	 * beside the node's list_lock, the line moved between the CPUs at
	 * every new slab: Test D at 16 threads, docs/sheaves.md). Monotone:
	 * slabs (and their slots) made under this CPU structure's lock (a
	 * refill: a load and a store; a debug cache's, by threads on this CPU
	 * number, atomic adds: slab_new), and given back by threads on this
	 * CPU number (atomic adds); a slab may be made on one CPU and given
	 * back on another, so only the sums over the CPUs mean anything (slab_counts:
	 * given back first, then made, so that a sum is never below 0). The
	 * slab counters wrap (their difference mod 2^32 is exact below 2^32
	 * slabs). Always written, so not in the cold block: 24 bytes, which
	 * take the struct from 64 to 128 bytes per CPU. */
	_Atomic uint32_t slabs_made, slabs_gone;
	_Atomic long objects_made, objects_gone;
} PC_CACHE_ALIGNED;

/* Per cache and node. */
struct pc_cache_node {
	struct pc_lock list_lock;
	struct pc_list partial;        /* under list_lock */
	_Atomic unsigned long nr_partial; /* written under list_lock, read racily */
	struct pc_lock_stats *lock_stats; /* list_lock's, in the cold block (as stats above) */
} PC_CACHE_ALIGNED;

/* A sheaf: free objects of one cache (any slabs). Laid out as os.h's
 * struct os_rseq_stack. Invariant: count <= capacity; objects[0..count)
 * are distinct free objects that are on no slab freelist. */
struct pc_sheaf {
	uint32_t capacity;
	uint32_t count;
	struct pc_sheaf *next; /* on a barn list, or a private chain */
	void *objects[];
};
_Static_assert(offsetof(struct pc_sheaf, objects) == offsetof(struct os_rseq_stack, objects) &&
	       offsetof(struct pc_sheaf, count) == offsetof(struct os_rseq_stack, count) &&
	       offsetof(struct pc_sheaf, capacity) == offsetof(struct os_rseq_stack, capacity),
	       "struct pc_sheaf is an os_rseq_stack");
#define PC_SHEAF_MAX 512 /* largest capacity (slub.sheaf_capacity) */
/* The free fast paths compare the object with objects[count - 1] and
 * objects[count - 2] (the double-free check, see "Double frees") with no
 * test of count: when count < 2 they read the next field, which holds NULL
 * or a sheaf (an object of an internal cache, never of a cache with
 * sheaves), and the word of capacity and count, which is then the capacity
 * (<= PC_SHEAF_MAX, never an object's address). */
_Static_assert(offsetof(struct pc_sheaf, next) + sizeof(void *) == offsetof(struct pc_sheaf, objects),
	       "next is the word before objects[]");
/* Count 0, capacity 0: every push and pop fails. `none` stands for "no
 * sheaf". */
extern struct pc_sheaf pc_sheaf_none PC_HIDDEN;

/* Per cache and CPU in rseq mode: one 64-byte slot, indexed by the
 * assembly (the main pointer first). */
struct pc_sheaf_slot {
	struct pc_sheaf *_Atomic main; /* never NULL; see "Changing a CPU's main sheaf" */
	struct pc_sheaf *spare;        /* under lock; NULL if none */
	struct pc_spin lock;
	uint64_t decay_sig;            /* under lock: the decay's last look */
	bool used;                     /* under lock: a sheaf was installed here (s->sheaf_cpus) */
} __attribute__((aligned(1 << OS_RSEQ_SLOT_SHIFT)));
_Static_assert(sizeof(struct pc_sheaf_slot) == 1 << OS_RSEQ_SLOT_SHIFT, "slot size");

/* s->slots - s, the same for every cache (cache.c): the fast paths compute
 * the slots' address from s and this, in parallel with the load of
 * s->slots that tells them the mode, not after it (one load less between
 * an object and its sheaf on free's fast path). */
extern _Atomic size_t pc_sheaf_slots_offset PC_HIDDEN;
#define PC_SHEAF_SLOTS(s) \
	((void *)((char *)(s) + pc_load_relaxed(&pc_sheaf_slots_offset)))

/* Per cache and node: sheaves not on any CPU. */
struct pc_barn {
	struct pc_lock lock;
	struct pc_sheaf *full, *empty; /* under lock, linked through next */
	/* Objects of slabs a flush may find whole at the next one (barn.c,
	 * "The carry"), or NULL. Changed under lock; atomic (relaxed) for a
	 * racy peek: a stale value costs a lock round trip or a carry left
	 * for the next flush or decay pass. Bound: the objects of at most
	 * FLUSH_OPEN (4) chains of slabs of at most 32 objects (barn.c), so
	 * under 128 objects and 4 slabs held per cache and node; not charged
	 * to slub.barn_max_kb, and kept with slub.barn_sheaves 0 too (a flush
	 * from the barn is what makes one, wherever the bound is). */
	struct pc_sheaf *_Atomic carry;
	/* Written under lock; each <= slub.barn_sheaves. Atomic (relaxed) so
	 * that barn_take may peek at them without the lock: a stale count only
	 * costs a lock round trip or a missed sheaf, never a wrong one. */
	_Atomic unsigned nr_full, nr_empty;
	/* Under lock: sheaves taken and given so far, and that count when the
	 * decay last looked (unchanged at its next look: the barn is idle). */
	uint64_t uses, decay_seen;
	/* The bound follows demand (barn.c, "The bound"): the full list may
	 * hold slub.barn_sheaves + extra sheaves, the empty list
	 * slub.barn_sheaves. extra grows by one for a miss
	 * (no full sheaf to hand out) while refused (full sheaves turned away
	 * at the bound since the decay's last look) is non-zero, and uses one
	 * of them up, if the process's budget (slub.barn_max_kb, shared by
	 * every barn) has room; charged: the bytes this barn took of it. The
	 * decay lowers extra by low (the fewest full sheaves held at any
	 * moment since its last look: never needed), halves it after an
	 * interval with no refusal, and resets it when the barn was not used
	 * for a whole interval. All written under lock;
	 * extra and refused atomic (relaxed) for racy peeks. */
	_Atomic unsigned extra, refused;
	unsigned low;
	size_t charged;
	struct pc_lock_stats *lock_stats; /* lock's, in the cache's cold block */
} PC_CACHE_ALIGNED;

enum pc_sheaf_mode { PC_SHEAF_MODE_RSEQ = 1, PC_SHEAF_MODE_THREAD = 2 };

/* Thread mode: each thread's main sheaf per cache (index s->tindex; entry 0
 * is always pc_sheaf_none, for caches without thread sheaves). */
#define PC_THREAD_SHEAVES 48
/* A flusher of another thread may detach an entry with a compare-and-swap
 * ("Flushing another thread's sheaves" above): every access but the owner's
 * fast path is a __atomic builtin. */
typedef struct pc_sheaf *pc_sheaf_entry;
/* Thread mode: the thread's busy flag and its entries in one TLS object, so
 * that a fast path finds both from one thread-pointer offset (one load from
 * the GOT in a shared library, where two objects cost two).
 *   busy      non-zero while this thread's fast path or thread-mode slow
 *             path works on one of its sheaves; a signal handler that finds
 *             it set leaves every sheaf of the thread alone (see
 *             thread_sheaf_pop), and a flusher of another thread waits for
 *             it to clear.
 *   entries   the main sheaf per cache (index s->tindex).
 * rseq mode uses neither, only (see sheaf_free_slots):
 *   last_obj, last_slots  the object this thread's last malloc fast path
 *             returned, and its cache's per-CPU slots (PC_SHEAF_SLOTS: one
 *             address per cache, so equal slots mean the same cache). */
struct pc_thread_sheaf_state {
	unsigned char busy;
	pc_sheaf_entry entries[PC_THREAD_SHEAVES];
	void *last_obj;
	void *last_slots;
};
extern __thread struct pc_thread_sheaf_state pc_thread_sheaf
	__attribute__((tls_model("initial-exec")));
#define pc_thread_sheaves    (pc_thread_sheaf.entries)
#define pc_thread_sheaf_busy (pc_thread_sheaf.busy)
/* The owner's fast-path accesses to its busy flag and entries: plain moves,
 * which the flushers' protocol relies on (GCC folds %fs: into plain
 * accesses but not into atomic ones, which would cost two instructions a
 * call). Formally a data race with a flusher's atomic reads, so under
 * ThreadSanitizer they are relaxed atomics, and the clear a release, which
 * tell it the order that the flusher's membarrier provides. */
#if defined(__SANITIZE_THREAD__)
#define PC_OWN_LOAD(x)     __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define PC_OWN_STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define PC_OWN_CLEAR(x)    __atomic_store_n(&(x), 0, __ATOMIC_RELEASE)
#else
#define PC_OWN_LOAD(x)     (x)
#define PC_OWN_STORE(x, v) ((x) = (v))
#define PC_OWN_CLEAR(x)    ((x) = 0)
#endif
_Static_assert(offsetof(struct pc_thread_sheaf_state, entries) >= 4,
	       "busy is followed by padding: thread_sheaf_enter sets it with a 32-bit bts");

/* Thread mode: set this thread's busy flag if it is clear and return true;
 * return false, leaving it set, if it was set (a fast path or thread-mode
 * slow path of this thread was interrupted: we are a signal handler). One
 * bts (not locked: only this thread writes the flag, and an instruction is
 * atomic against its own thread's signals) in place of a test, a branch
 * and a store. It rewrites the three padding bytes after busy with their
 * own value. Under ThreadSanitizer, atomics that it can see. */
PC_INLINE bool thread_sheaf_enter(void)
{
#if defined(__SANITIZE_THREAD__)
	if (PC_OWN_LOAD(pc_thread_sheaf_busy))
		return false;
	PC_OWN_STORE(pc_thread_sheaf_busy, 1);
	atomic_signal_fence(memory_order_seq_cst); /* busy before the sheaf is read */
	return true;
#else
	/* The memory clobber: busy is set before the sheaf is read. */
	__asm__ volatile goto("btsl $0, %0\n\t"
		     "jc %l[busy]"
		     : : "m"(*(uint32_t *)(void *)&pc_thread_sheaf_busy) : "memory", "cc" : busy);
	return true;
busy:
	return false;
#endif
}

/* Thread mode: clear the busy flag after the last access to the sheaf. */
PC_INLINE void thread_sheaf_leave(void)
{
	atomic_signal_fence(memory_order_seq_cst); /* the sheaf's accesses before not busy */
	PC_OWN_CLEAR(pc_thread_sheaf_busy);
}

struct pc_cache {
	char name[32];
	size_t object_size;   /* as asked */
	size_t size;          /* slot size: object (+ free pointer), aligned */
	size_t offset;        /* of the free pointer within a slot */
	/* size = 2^slot_shift * odd; slot_inverse = odd^-1 mod 2^64: copied
	 * (its low half) into each slab's head descriptor by slab_new, where
	 * pc_slab_slot_index reads them, and checked there by pc_cache_check */
	uint64_t slot_inverse;
	unsigned slot_shift;
	void (*ctor)(void *);
	_Atomic uint64_t oo;  /* order << 32 | objects: for new slabs */
	_Atomic unsigned min_partial;
	_Atomic unsigned cpu_partial; /* slabs */
	struct pc_list link;  /* the cache list, under slab_mutex */
	struct pc_sheaf_slot *slots; /* rseq mode: [os_cpu_count()]; NULL otherwise */
	unsigned tindex;      /* thread mode: pc_thread_sheaves index, 0 = none */
	bool internal;        /* a cache of sheaves: never has sheaves itself */
	_Atomic uint32_t sheaf_capacity; /* of new sheaves; 0 = sheaves off */
	/* What sheaf_capacity grows to with demand: by default it starts at
	 * a byte budget (sheaf_start_capacity; the default itself in thread
	 * mode) and doubles after four refills' worth of slow paths (a refill
	 * from the slabs or a new sheaf for a free counts 16, any other sheaf
	 * slow path 1: sheaf.c, sheaf_demand_add; racy, harmless: a sheaf of another capacity
	 * goes back to the slabs when it reaches a barn). Equal to it when
	 * slub.sheaf_capacity is set (fixed); sheaf_demand counts the slow
	 * paths toward the next doubling. */
	_Atomic uint32_t sheaf_capacity_max;
	_Atomic uint32_t sheaf_demand;
	/* Past the default (sheaf.c, "Past the default"): sheaf_capacity may
	 * grow above sheaf_capacity_max up to sheaf_capacity_top (== max: it
	 * may not) under slab_mutex, by refills (sheaf_refills, racy, counted
	 * since the capacity last changed or the decay last looked), within
	 * the process's budget. */
	_Atomic uint32_t sheaf_capacity_top;
	_Atomic uint32_t sheaf_refills;
	/* The CPUs whose slot has had a sheaf of this cache (rseq mode; each
	 * counted once, under its slot lock, never uncounted), and the bytes
	 * its grown capacity is charged for them (under slab_mutex): sheaf.c,
	 * "Past the default". */
	_Atomic uint32_t sheaf_cpus;
	size_t past_charged;
	/* [pc_node_count()] each, in the cache's block after the nodes and
	 * barns ("cache.c"; two arrays of PC_MAX_NODES were 1 KiB of every
	 * cache): slow paths only. */
	struct pc_barn **barn;
	struct pc_cache_node **node;
	/* slub_debug mode ("Debug caches" above): PC_SLUB_DEBUG_* flags (0:
	 * an ordinary cache), fixed at creation; inuse = the end of the
	 * object's right red zone, where the free pointer is (offset); the
	 * two tracks (U) start at track_offset. */
	unsigned debug;
	size_t inuse;
	size_t track_offset;
	struct pc_cache_cpu cpu[]; /* [os_cpu_count()] */
};

/* Latency of slab_alloc_slow and of sheaf_alloc_slow, over every cache
 * (stats on; "cache.c"). One pair for the process rather than one per
 * cache: the reports only ever showed their sum, and 672 bytes less per
 * cache is what lets two small caches share a page (docs/footprint.md). */
extern struct pc_hist pc_slab_alloc_slow_ns PC_HIDDEN;
extern struct pc_hist pc_sheaf_alloc_slow_ns PC_HIDDEN;

/* ---- API ------------------------------------------------------------------------ */
/* Create a cache of objects of `size` bytes aligned to `align` (0 = natural:
 * 8, or 16 for sizes >= 16; else a power of two up to the page size), with an
 * optional constructor run once per object, when it is first taken from its
 * slab (before its first hand-out; never again on reuse). NULL with
 * errno EINVAL (bad size or alignment) or ENOMEM. */
struct pc_cache *pc_cache_create(const char *name, size_t size, size_t align,
				 void (*ctor)(void *));
void *pc_cache_alloc(struct pc_cache *s);
void pc_cache_free(struct pc_cache *s, void *obj);
/* Flush every CPU's slabs and return empty slabs to the page allocator.
 * Returns the number of slabs freed. */
size_t pc_cache_shrink(struct pc_cache *s);
/* (pc_cache_shrink also flushes every CPU's or every live thread's sheaves
 * and the barns first; see "Flushing another thread's sheaves" for thread
 * mode without membarrier.)
 * Shrink and free the cache. If objects are still allocated, report them on
 * stderr, keep the cache alive and return their number (0 = destroyed). */
size_t pc_cache_destroy(struct pc_cache *s);
/* The cache of a slab object, or NULL if p is not in a slab. O(1). */
struct pc_cache *pc_slab_cache_of(const void *p);

/* slub_debug mode: when p lies in a slab of a debug cache (but starts no
 * object, so that func (free, realloc, pc_cache_free...) refuses it),
 * report it SLUB-style ("Invalid object pointer", with the object it points
 * into) and abort; otherwise return. For the cold paths that refuse a
 * pointer ("debug.c"). */
void pc_slab_debug_bad_pointer(const char *func, const void *p);

/* slub_debug mode, Z: obj (allocated, of debug cache s) was asked for
 * `size` bytes (malloc's request): the bytes from there to object_size
 * become red zone (checked at free; a size above the current one is
 * ignored). pc_slab_debug_usable: that size (object_size without Z). For
 * malloc's slow paths, behind a test of s->debug ("debug.c"). */
void pc_slab_debug_set_size(struct pc_cache *s, void *obj, size_t size);
size_t pc_slab_debug_usable(struct pc_cache *s, void *obj);

/* Order and objects per slab the current tunables give for a slot size, in
 * a cache with sheaves: by default SLUB's count of objects, but at least
 * one full sheaf of the class up to slub.max_order ("cache.c",
 * min_objects_for), so that one sheaf refill takes one slab. The sheaf
 * caches and slub_debug caches, which have no sheaves, keep SLUB's count. */
unsigned pc_slab_calculate_order(size_t size, unsigned *objects);

/* Smallest order whose slab holds n bytes: calculate_order's floor, and the
 * order slab_new falls back to for one object when the page allocator
 * refuses the cache's. */
static inline unsigned pc_slab_order_for_bytes(size_t n)
{
	unsigned order = 0;
	while ((PC_PAGE_SIZE << order) < n)
		order++;
	return order;
}

/* active_objects counts objects handed out: every slot but the free ones on
 * node partial lists, CPU freelists, CPU slabs and CPU partial slabs, and
 * those held in sheaves (every CPU's in rseq mode, every live thread's in
 * thread mode: every live thread's, read racily) and in barns:
 * sheaf_objects. Exact when no other thread uses the cache meanwhile. */
struct pc_cache_info {
	const char *name;
	size_t object_size, size;
	unsigned order, objects_per_slab, min_partial, cpu_partial;
	long slabs, total_objects, active_objects, partial_slabs, cpu_slabs;
	long cpu_partial_slabs; /* slabs on CPU partial lists */
	unsigned sheaf_capacity;
	unsigned barn_limit; /* full sheaves a barn may hold now (the most over nodes) */
	long sheaf_objects; /* free objects in sheaves and barns (not active), racy */
	/* fresh objects (never handed out, their memory never written by the
	 * allocator: slab_alloc.c, "Fresh objects"), free and not active; only
	 * slabs with a free object have any, so partial and CPU slabs are all
	 * counted (under their locks, as the free objects). */
	long fresh_objects;
	uint64_t stats[PC_SLAB_STAT_COUNT];
	struct pc_lock_stats list_lock; /* summed over nodes */
	struct pc_lock_stats barn_lock; /* summed over nodes */
};
/* Bytes of raised barn bounds charged now, by every cache together (at most
 * slub.barn_max_kb; barn.c, "The bound"): for tests and reports. */
size_t pc_slab_barn_charged(void);
/* Bytes charged now for sheaf capacities grown past their default, every
 * cache together (sheaf.c, "Past the default"; counted apart from the barns'
 * but against the same slub.barn_max_kb): for tests. */
size_t pc_slab_sheaf_charged(void);
/* Fill info for cache s (counts taken under list_lock, like slabinfo). */
void pc_cache_info(struct pc_cache *s, struct pc_cache_info *info);
/* Call fn for every cache, under slab_mutex. */
void pc_cache_foreach(void (*fn)(struct pc_cache *s, void *arg), void *arg);

/* Invariant walker: every object in exactly one place. Only while no other
 * thread uses the cache; it first flushes the sheaves (as pc_cache_shrink).
 * It holds slab_mutex throughout (taking it unless the caller holds it:
 * a pc_cache_foreach callback may call it), which keeps decay passes away
 * (they flush and shrink caches nobody uses): never call it with another
 * slab lock held. Returns the number of allocated objects, or -1 (and a message)
 * when an invariant is broken. */
long pc_cache_check(struct pc_cache *s);
/*
 * Expensive-assert builds (PC_DEBUG >= 3): the walkers at points where the
 * structures must be consistent; a broken invariant is fatal. Nothing in
 * other builds ("check.c"):
 *   slab_node_check_at_locked  node n's partial list (flags, owner, node,
 *       unfrozen slabs with a free object, nr_partial), with its list_lock
 *       held: after pc_cache_shrink's pass over the node, and for every node
 *       of every cache in a fork child;
 *   pc_cache_check_at  the whole cache (pc_cache_check): at
 *       pc_cache_destroy, when no other thread may use the cache; called
 *       with slab_mutex held (destroy holds it throughout).
 * slab_check_register registers the fork-child walk with the lifecycle
 * registry (slab_init calls it, so a first allocation made before this
 * library's constructors still gets it).
 */
#if PC_DEBUG >= 3
void slab_node_check_at_locked(struct pc_cache *s, struct pc_cache_node *n, const char *where);
void pc_cache_check_at(struct pc_cache *s, const char *where);
void slab_check_register(void); /* the fork-child walk's registry entry, once */
#else
#define slab_node_check_at_locked(s, n, where) ((void)0)
#define pc_cache_check_at(s, where)            ((void)0)
#define slab_check_register()                  ((void)0)
#endif

/* Give back what caches hold (flush sheaves, CPU slabs and partial lists)
 * so the page allocator can reuse it; used before failing on out-of-memory. */
void pc_slab_reclaim(void);
/* The decay ("sheaf_decay.c"): flush into the slabs the sheaves (every
 * CPU's or live thread's) and barns that have not changed since the
 * previous pass. pc_slab_decay runs a pass if one is due (passes run at most
 * once per vm.release_delay_ms on the page clock; the sheaf slow paths also
 * run due passes), pc_slab_decay_pass one now (tests, periodic callers).
 * Both return the sheaves flushed; neither may be called with a slab lock
 * held. */
unsigned long pc_slab_decay(void);
unsigned long pc_slab_decay_pass(void);
/* True while the calling thread is inside a sheaf slow path or flush, or
 * inside the page allocator (pc_page_reentered): code that runs then (a
 * signal handler) must take no allocator lock. */
bool pc_slab_reentered(void);
/* Objects a handler freed while its thread was inside the page allocator
 * but in no sheaf slow path wait on this thread's deferred list (sheaf.c)
 * for its next sheaf slow path; callers that hold no allocator lock (the
 * malloc layer's slow paths) free them sooner with this. One TLS load when
 * there are none. */
extern __thread void *_Atomic pc_sheaf_deferred __attribute__((tls_model("initial-exec"))) PC_HIDDEN;
void pc_slab_drain_deferred(void);
PC_INLINE void pc_slab_reentry_drain(void)
{
	if (pc_unlikely(pc_load_relaxed(&pc_sheaf_deferred) != NULL))
		pc_slab_drain_deferred();
}
/* The sheaf fast path in use (enum pc_sheaf_mode); starts the slab layer. */
int pc_sheaf_mode(void);


/* ---- fast paths (inline so that malloc's size classes inline them) ------------ */

/* 16-byte compare-and-swap of a pc_dword: a locked cmpxchg16b, a full barrier.
 * (GCC's __atomic on 16 bytes would call libatomic, which is not lock-free;
 * tests/unit/slab/dcas.sh checks the library holds the instruction.) Under
 * ThreadSanitizer the builtin is used so that the sanitizer sees it. */
PC_INLINE bool pc_dcas(struct pc_dword *p, void *old_ptr, uint64_t old_word,
		       void *new_ptr, uint64_t new_word)
{
#if defined(__SANITIZE_THREAD__)
	unsigned __int128 expected = ((unsigned __int128)old_word << 64) | (uintptr_t)old_ptr;
	unsigned __int128 desired = ((unsigned __int128)new_word << 64) | (uintptr_t)new_ptr;
	return __atomic_compare_exchange_n((unsigned __int128 *)(void *)p, &expected, desired,
					   false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
#else
	bool ok;
	__asm__ __volatile__("lock cmpxchg16b %[m]"
			     : "=@ccz"(ok), [m] "+m"(*(volatile unsigned __int128 *)(void *)p),
			       "+a"(old_ptr), "+d"(old_word)
			     : "b"(new_ptr), "c"(new_word)
			     : "memory");
	return ok;
#endif
}

PC_INLINE struct pc_dword *slab_word(struct pc_page *slab)
{
	return (struct pc_dword *)(void *)&slab->slab_word;
}

/*
 * The next-free pointer stored in a free object. On the allocation fast path
 * the object may already belong to another thread, which may be writing it:
 * the value is then garbage and the caller's compare-and-swap fails, because
 * tid moved on when the object was taken. The race is deliberate; the
 * sanitizer is told so.
 */
#if defined(__SANITIZE_THREAD__) /* no_sanitize is lost when inlined */
static __attribute__((noinline, unused, no_sanitize("thread"))) void *
slab_next_racy(const struct pc_cache *s, void *obj)
#else
PC_INLINE void *slab_next_racy(const struct pc_cache *s, void *obj)
#endif
{
	return *(void *volatile *)(void *)((char *)obj + s->offset);
}
PC_INLINE void *slab_next(const struct pc_cache *s, void *obj)
{
	return *(void **)(void *)((char *)obj + s->offset);
}
PC_INLINE void slab_set_next(const struct pc_cache *s, void *obj, void *next)
{
	*(void **)(void *)((char *)obj + s->offset) = next;
}

PC_INLINE void slab_stat(struct pc_cache_cpu *c, enum pc_slab_stat item)
{
	if (pc_unlikely(pc_option(PC_OPT_STATS_ENABLE)))
		pc_add_relaxed(&c->stats[item], 1);
}
PC_INLINE void slab_stat_add(struct pc_cache_cpu *c, enum pc_slab_stat item, uint64_t n)
{
	if (pc_unlikely(pc_option(PC_OPT_STATS_ENABLE)))
		pc_add_relaxed(&c->stats[item], n);
}

/* Whether pg, p's page descriptor, is a page of a slab (head or tail): one
 * compare, since PC_PG_SLAB and PC_PG_TAIL differ in their last bit only. */
_Static_assert((PC_PG_SLAB | 1) == PC_PG_TAIL && (PC_PG_SLAB & 1) == 0,
	       "PC_PG_SLAB and PC_PG_TAIL differ in bit 0 only");
PC_INLINE bool pc_pg_in_slab(const struct pc_page *pg)
{
	return (pc_pg_state(pg) | 1) == PC_PG_TAIL;
}

/* The head page of the slab that pg, a page of a slab (pc_pg_in_slab) and
 * p's own page descriptor, belongs to: p's offset in the slab (p & aux, the
 * slab being aligned to its size) over the page size is pg's index in it. */
PC_INLINE struct pc_page *pc_slab_head(struct pc_page *pg, const void *p)
{
	return pg - (((uintptr_t)p & pg->aux) >> PC_PAGE_SHIFT);
}

/* The slab (head page) holding p; NULL if p is not in a slab. */
PC_INLINE struct pc_page *pc_slab_of(const void *p)
{
	struct pc_page *pg = pc_page_of(p);
	if (pc_unlikely(!pg))
		return NULL;
	if (pc_pg_state(pg) == PC_PG_TAIL)
		pg = pc_slab_head(pg, p);
	return pc_pg_state(pg) == PC_PG_SLAB ? pg : NULL;
}

_Static_assert((PC_PAGE_SIZE << PC_MAX_ORDER) <= ((uint64_t)1 << 31),
	       "a slab's mask fits aux, and pc_slab_slot_index may work modulo 2^32");
/*
 * The number of the slot that starts at p, or a number >= the slab's object
 * count when p starts none of its slots (it points inside one, or into the
 * slack after the last). p must lie in slab, which is 2^order pages aligned
 * to its size, so p's offset in it is a mask. No division (this runs on the
 * free fast path): with size = 2^shift * odd, offset * odd^-1 (mod 2^32)
 * rotated right by shift is offset / size when size divides offset; when it
 * does not, either bits below shift rotate to the top (a number >=
 * 2^(32 - shift)), or the product's low 32 - shift bits are above
 * (2^(32 - shift) - 1) / odd (Granlund and Montgomery's exact-division test
 * modulo 2^(32 - shift)); either way above the object count, which is at
 * most 2^(31 - shift) / odd (a slab is at most 2^31 bytes: the assertion
 * above), so tests/unit/slab/slots.c's exhaustive check holds for every
 * slot size.
 *
 * Every input is in each page descriptor of the slab, head or tail (aux,
 * slot_inverse, slot_shift, slot_objects: written by slab_new from the
 * cache and the slab word; pc_cache_check checks them; an invalid free that
 * races the slab's release may read another owner's fields here, as it may
 * read a NULL owner, and is then not refused but may crash), so slab may be any
 * page of it (p's own, on free's fast path), free's test waits for one
 * descriptor load, not for the owner cache's fields behind it, and takes
 * seven instructions (mask, multiply, shift count, rotate, compare with the
 * count in memory, branch) where the 64-bit form from the cache and the
 * slab word took ten.
 */
PC_INLINE uint32_t pc_slab_slot_index(const struct pc_page *slab, const void *p)
{
	uint32_t x = ((uint32_t)(uintptr_t)p & slab->aux) * slab->slot_inverse;
	/* & 31: free's fast path runs this on any page, whose slot_shift may
	 * then be the low half of freed_ns (page.h), before its slot_objects of
	 * 0 refuses the page: the count must stay below 32 for C (x86's rotate
	 * masks it anyway, so it costs no instruction). */
	unsigned r = slab->slot_shift & 31;
	return (x >> r) | (x << ((32 - r) & 31));
}

/* Whether p is the start of a slot (free or in use) of slab, a slab of s,
 * given any page descriptor of the slab (s is only asserted: the test reads
 * the descriptor alone). */
PC_INLINE bool pc_slab_is_slot(const struct pc_cache *s, struct pc_page *slab, const void *p)
{
	pc_assert_internal(slab->owner == s);
	(void)s;
	return pc_slab_slot_index(slab, p) < slab->slot_objects;
}

/* Whether p, a slot of slab (its head), is one of its fresh objects (never
 * handed out, slab.h "the counters word"), given the slab's counters cnt. */
PC_INLINE bool slab_is_fresh(const struct pc_page *slab, uint64_t cnt, const void *p)
{
	return pc_slab_slot_index(slab, p) >= PC_SLAB_FIRST_FRESH(cnt);
}

/* "sheaf.c": report a double free of obj (an object of s) and abort
 * ("Double frees" above). */
PC_COLD __attribute__((noreturn)) void pc_slab_double_free(const struct pc_cache *s,
							    const void *obj);
/* "slab_free.c": pc_slab_double_free behind a call that the compiler may
 * make a tail call (it never makes one of a noreturn call), so that a fast
 * path whose other exits are tail calls needs no stack frame. Never returns. */
PC_COLD void slab_double_free_report(const struct pc_cache *s, const void *obj);
/* "slab_alloc.c" */
void *slab_alloc_slow(struct pc_cache *s, struct pc_cache_cpu *c);
/* "slab_free.c" */
void slab_free_slow(struct pc_cache *s, struct pc_page *slab, void *obj);

/*
 * Slab allocation fast path (below the sheaves). Preconditions: s is a live
 * cache. Exits: an object from the current CPU's freelist via one
 * cmpxchg16b, or the slow path when the freelist is empty or a slow path is
 * under way (odd tid).
 */
PC_INLINE void *slab_alloc_fast(struct pc_cache *s)
{
	struct pc_cache_cpu *c = &s->cpu[os_cpu_current()];
	for (;;) {
		/* Acquire: pairs with the slow path's publish, so a fresh tid
		 * comes with the freelist and slab it published. */
		uint64_t tid = pc_load_acquire(&c->fl.word);
		void *obj = pc_load_relaxed(&c->fl.ptr);
		if (pc_unlikely(!obj || (tid & 1)))
			return slab_alloc_slow(s, c);
		void *next = slab_next_racy(s, obj);
		if (pc_likely(pc_dcas(&c->fl, obj, tid, next, tid + 2))) {
			slab_stat(c, PC_SLAB_STAT_alloc_fastpath);
			return obj;
		}
		slab_stat(c, PC_SLAB_STAT_cmpxchg_cpu_fail);
	}
}

/*
 * The double-free check of the slab free fast path: whether obj is first or
 * second on c's freelist, whose head the caller read after tid. The head
 * itself is exact (it was free when read, and obj, if allocated, has been on
 * no freelist since). The second entry is the head's free pointer, read
 * racily: the head may have been allocated and written by its new owner
 * meanwhile, so a match counts only if tid has not moved since, which proves
 * no allocation took the head before the read (as a seqlock reader).
 */
PC_INLINE bool slab_cpu_freelist_holds(const struct pc_cache *s, struct pc_cache_cpu *c,
				       uint64_t tid, void *head, const void *obj)
{
	if (head == obj)
		return true;
	if (!head || slab_next_racy(s, head) != obj)
		return false;
	pc_fence_acquire(); /* the read above before tid's */
	return pc_load_relaxed(&c->fl.word) == tid;
}

/*
 * Slab free fast path (below the sheaves). Preconditions: obj is an
 * allocated object of s whose slab is `slab`. Exits: obj pushed on the CPU
 * freelist when its slab is the CPU slab (tid even and unchanged across the
 * check), else the slow path.
 */
PC_INLINE void slab_free_fast(struct pc_cache *s, struct pc_page *slab, void *obj)
{
	struct pc_cache_cpu *c = &s->cpu[os_cpu_current()];
	for (;;) {
		/* Acquire: c->slab is read after tid, so an unchanged even tid at
		 * the compare-and-swap proves the slab read was current. */
		uint64_t tid = pc_load_acquire(&c->fl.word);
		if (pc_unlikely((tid & 1) || pc_load_relaxed(&c->slab) != slab)) {
			slab_free_slow(s, slab, obj);
			return;
		}
		void *head = pc_load_relaxed(&c->fl.ptr);
		if (pc_unlikely(slab_cpu_freelist_holds(s, c, tid, head, obj)))
			pc_slab_double_free(s, obj);
		slab_set_next(s, obj, head);
		if (pc_likely(pc_dcas(&c->fl, head, tid, obj, tid + 2))) {
			slab_stat(c, PC_SLAB_STAT_free_fastpath);
			return;
		}
		slab_stat(c, PC_SLAB_STAT_cmpxchg_cpu_fail);
	}
}

/* "sheaf.c": the sheaf slow paths (any mode; see "Sheaves" above). For
 * sheaf_free_slow, slab is the slab's head or obj's own page (free's fast
 * path classifies obj from its own page: pc_slab_head finds the head). */
void *sheaf_alloc_slow(struct pc_cache *s);
void sheaf_free_slow(struct pc_cache *s, struct pc_page *slab, void *obj);

/*
 * Thread mode's pop. The busy flag is set before anything of the sheaf is
 * read and cleared after the last write. A signal handler that runs before
 * the flag is set may use the sheaves freely (even swap them in a slow
 * path): it returns before the interrupted code has read any of it, and
 * leaves the flag clear. One that runs while the flag is set finds it set
 * and goes to the slabs (the slow path bypasses the sheaves then). The flag
 * is also the announcement a flusher of another thread waits on ("Flushing
 * another thread's sheaves"); the release clear tells ThreadSanitizer what
 * the flusher's membarrier orders. Marking the entry itself busy, as an earlier version did,
 * left a window between reading the entry and the mark in which a
 * handler's slow path could swap the sheaf, and reads of the count before
 * the mark went stale: a handler's pop there put one object in two hands.
 */
PC_INLINE void *thread_sheaf_pop(const struct pc_cache *s)
{
	if (pc_unlikely(!thread_sheaf_enter())) /* we interrupted a fast path */
		return NULL;
	struct pc_sheaf *sh = PC_OWN_LOAD(pc_thread_sheaves[s->tindex]);
	uint32_t n = sh->count;
	if (pc_likely(n != 0)) {
		uintptr_t top = n - 1; /* no wrap; zero-extended for free */
		sh->count = (uint32_t)top;
		void *obj = sh->objects[top];
		PC_ASSUME(obj != NULL); /* sheaves never hold NULL: no second test */
		thread_sheaf_leave();
		return obj;
	}
	thread_sheaf_leave();
	return NULL;
}

/*
 * Allocation fast path. Preconditions: s is a live cache. Exits: the top of
 * the current CPU's (rseq) or thread's main sheaf, or sheaf_alloc_slow()
 * when that is empty (or the cache has no sheaves).
 */
PC_INLINE void *pc_cache_alloc_inline(struct pc_cache *s)
{
	void *obj = pc_likely(s->slots != NULL) ? os_rseq_pop(PC_SHEAF_SLOTS(s)) : thread_sheaf_pop(s);
	if (pc_likely(obj != NULL))
		return obj;
	return sheaf_alloc_slow(s);
}

/*
 * Allocation fast path only: the top of the current CPU's or thread's main
 * sheaf, or NULL when that is empty (the caller then takes a slow path that
 * ends in pc_cache_alloc_inline). Lets malloc tail-call its slow path, so
 * that its fast path needs no stack frame.
 */
PC_INLINE void *pc_cache_alloc_try(struct pc_cache *s)
{
	if (pc_likely(s->slots != NULL)) {
		void *slots = PC_SHEAF_SLOTS(s);
		void *obj = os_rseq_pop(slots);
		PC_OWN_STORE(pc_thread_sheaf.last_obj, obj); /* for free (sheaf_free_slots) */
		PC_OWN_STORE(pc_thread_sheaf.last_slots, slots);
		return obj;
	}
	return thread_sheaf_pop(s);
}

/* The word n of sh, from its start: objects[n - 2] (objects[] is word 2),
 * so that with a sheaf holding n objects, word n + 1 is the top, word n the
 * one below and word n + 2 the first free slot. */
PC_INLINE void **sheaf_word(struct pc_sheaf *sh, uintptr_t n)
{
	return (void **)(void *)((char *)sh + n * sizeof(void *));
}
_Static_assert(offsetof(struct pc_sheaf, objects) == 2 * sizeof(void *), "objects[] is word 2");

/*
 * Thread mode's push of obj onto sh (the thread's own main sheaf; its busy
 * flag set): 1 if pushed; 0 if full; -1 if obj is objects[n - 1] or
 * objects[n - 2] already (the double-free check; with n < 2 the words
 * before objects[]: the next link, NULL or a sheaf, and the capacity, a
 * small number, never an object). Checked before the capacity, so a full
 * sheaf is checked too. In assembly, each word addressed from sh and n
 * directly: what GCC made of the C (kept for ThreadSanitizer, which cannot
 * see into assembly) had two more instructions, a copy of n and an address.
 */
PC_INLINE int thread_sheaf_push(struct pc_sheaf *sh, void *obj)
{
#if defined(__SANITIZE_THREAD__)
	uint32_t n = sh->count;
	void **w = sheaf_word(sh, n);
	if (w[1] == obj || w[0] == obj)
		return -1;
	if (n >= sh->capacity)
		return 0;
	w[2] = obj; /* objects[n] */
	sh->count = n + 1;
	return 1;
#else
	uintptr_t n;
	__asm__ volatile goto(
		"movl 4(%[sh]), %k[n]\n\t"             /* n = count (zero-extended) */
		"cmpq %[obj], 8(%[sh],%[n],8)\n\t"     /* obj == objects[n - 1]? */
		"je %l[twice]\n\t"
		"cmpq %[obj], (%[sh],%[n],8)\n\t"      /* obj == objects[n - 2]? */
		"je %l[twice]\n\t"
		"cmpl (%[sh]), %k[n]\n\t"              /* n >= capacity: full */
		"jae %l[full]\n\t"
		"movq %[obj], 16(%[sh],%[n],8)\n\t"    /* objects[n] = obj */
		"addl $1, %k[n]\n\t"
		"movl %k[n], 4(%[sh])"                 /* count = n + 1 */
		: [n] "=&r"(n)
		: [sh] "r"(sh), [obj] "r"(obj)
		: "memory", "cc"
		: full, twice);
	return 1;
full:
	return 0;
twice:
	return -1;
#endif
}

/*
 * The slots that free's rseq push of obj, an object of s, uses: when obj is
 * the object this thread's last malloc returned and s that malloc's cache
 * (its slots, PC_SHEAF_SLOTS, are s's), the slots malloc used, else s's:
 * the same address either way, but not from the same value. s comes from
 * obj's page descriptor, two dependent loads after obj (region table,
 * descriptor), and obj from the pop before. In a malloc-then-free loop the
 * push's loads and stores would wait for that chain, and the next pop's
 * load of the sheaf's count for that push's store address: each pair a
 * chain of dependent loads. The tests here are branches (asm goto: never a
 * conditional move), so while they are predicted the push uses the slots
 * malloc computed from its size table, and the chain is gone
 * (docs/sheaves.md: 9.6 -> 5.3 ns CPU time per pair in one run). A free of
 * an object other than the last one malloc returned (the common case in
 * random workloads) fails the first test, which is then predicted too, and
 * goes on with s's slots, computed once for the compare and the push; no
 * guess that is right by chance (the same cache as the last malloc's: one
 * in a dozen in a larson run) mispredicts.
 */
PC_INLINE void *sheaf_free_slots(struct pc_cache *s, void *obj)
{
	void *slots = PC_SHEAF_SLOTS(s);
	/* last_obj is compared in memory and last_slots loaded only when it
	 * matched: a free that is not of the last malloc's object (larson's)
	 * costs a compare with a memory operand and a branch, two instructions
	 * fewer than with both loaded first. Only this thread writes them.
	 * (Two statements: one asm goto with the load as its output made GCC
	 * 12 jump from the failed compare back to itself, a loop. The load is
	 * volatile, so that it stays after the compare and its branch.) */
	__asm__ volatile goto("cmpq %[last_obj], %[obj]\n\t" /* the last malloc's object? */
		     "jne %l[other]"
		     : : [last_obj] "m"(pc_thread_sheaf.last_obj), [obj] "r"(obj)
		     : "cc" : other);
	void *guess;
	__asm__ volatile("movq %1, %0" : "=r"(guess) : "m"(pc_thread_sheaf.last_slots));
	__asm__ volatile goto("cmpq %[guess], %[slots]\n\t" /* the same cache as obj's? */
		     "jne %l[other]"
		     : : [guess] "r"(guess), [slots] "r"(slots)
		     : "cc" : other);
	return guess;
other:
	return slots;
}

/*
 * Free fast path. Preconditions: obj is an object of s, in slab `slab` (its
 * head page, or obj's own page of it: only the slow path needs the head).
 * Exits: obj pushed onto the current CPU's (rseq) or thread's main sheaf,
 * whatever slab it is in, or sheaf_free_slow() when that is full, or
 * slab_double_free_report() when obj is on that sheaf's top already. Every
 * exit but the push is a tail call: the caller needs no stack frame.
 */
PC_INLINE void pc_cache_free_inline(struct pc_cache *s, struct pc_page *slab, void *obj)
{
	if (pc_likely(s->slots != NULL)) {
		int pushed = os_rseq_push(sheaf_free_slots(s, obj), obj); /* inline: branches, no call */
		if (pc_likely(pushed > 0))
			return;
		if (pc_unlikely(pushed < 0)) { /* obj is on the sheaf's top already */
			slab_double_free_report(s, obj);
			return;
		}
	} else if (pc_likely(thread_sheaf_enter())) {
		/* Thread mode's push, under the busy flag as thread_sheaf_pop. */
		int pushed = thread_sheaf_push(PC_OWN_LOAD(pc_thread_sheaves[s->tindex]), obj);
		thread_sheaf_leave();
		if (pc_likely(pushed > 0))
			return;
		if (pc_unlikely(pushed < 0)) {
			slab_double_free_report(s, obj);
			return;
		}
	}
	sheaf_free_slow(s, slab, obj);
}

/* ---- layer-private ---------------------------------------------------------------- */
/* "debug.c": allocation and free of a debug cache ("Debug caches" above),
 * called by the sheaf slow paths before anything else; the layout of a
 * debug slot (from cache creation). */
void *slab_debug_alloc(struct pc_cache *s);
void slab_debug_free(struct pc_cache *s, struct pc_page *slab, void *obj);
void slab_debug_geometry(struct pc_cache *s, size_t align);
/* One object's record of who allocated or freed it (U). */
struct pc_slab_track {
	uintptr_t addr;   /* the caller outside pcmalloc, 0 if unknown */
	uint64_t when_ns; /* os_now_ns() */
	int32_t cpu;
	uint32_t tid;
};
enum { PC_TRACK_ALLOC, PC_TRACK_FREE };
/* The track of obj (U). */
struct pc_slab_track *slab_debug_track(const struct pc_cache *s, void *obj, int which);
/* "debug_report.c": the SLUB-style report of a broken object (then the
 * fatal message and abort), and the trace lines (T). The caller recorded
 * in a track is os_caller_outside_self's (os.h). */
/* slab_debug_bug: called with the list_lock of slab's node held, which
 * it drops once it has copied what it prints (naming addresses takes the
 * dynamic loader's lock: never under an allocator lock). */
PC_COLD __attribute__((noreturn)) void slab_debug_bug(const struct pc_cache *s,
	struct pc_page *slab, void *obj, const char *what, const uint8_t *first,
	const uint8_t *last, int expect);
/* The same with `held` (NULL: no lock) for a pointer passed to func (free,
 * realloc, ...) that starts no object: the fatal line also says "invalid
 * pointer", as glibc's. */
PC_COLD __attribute__((noreturn)) void slab_debug_bug_in(const struct pc_cache *s,
	struct pc_page *slab, void *p, const char *what, const uint8_t *first,
	const uint8_t *last, int expect, const char *func, struct pc_lock *held);
void slab_debug_trace(const struct pc_cache *s, struct pc_page *slab, void *obj, bool alloc);
/* "slab_alloc.c" (more below) */
/* A new slab of s on node, unfrozen, with only its page descriptors
 * written: every object fresh, none in use, the freelist empty
 * (slab_alloc.c, "Fresh objects"); NULL if out of memory. Counted on
 * locked, whose lock the caller holds (refill), with a load and a store,
 * or, NULL, on the current CPU with atomic adds (debug caches, under
 * list_lock only): never both for one cache (asserted). */
struct pc_page *slab_new(struct pc_cache *s, unsigned node, struct pc_cache_cpu *locked);
/* "slab_alloc.c" */
void slab_deactivate(struct pc_cache *s, struct pc_page *slab);
void slab_flush_cpu(struct pc_cache *s, struct pc_cache_cpu *c);
void slab_discard(struct pc_cache *s, struct pc_page *slab);
/* The slabs of s (any state) and their slots, for pc_cache_info and
 * pc_cache_check. No lock: read while slabs are made and given back, the
 * counts are never below 0 and never below the slabs that existed through
 * the whole call (at most those made during it too). */
void slab_counts(struct pc_cache *s, long *slabs, long *objects);
/* Tests only (NULL = none): called by a flush (barn.c) each time it opens
 * a chain, after closing the one it replaces, with the object's index in
 * the run; no lock held. */
extern void (*_Atomic pc_slab_flush_test_hook)(struct pc_cache *s, uint32_t i);
/* Tests only (NULL = none): called by slab_counts between its two sums
 * (the slabs given back, then those made), with no lock held. */
extern void (*_Atomic pc_slab_counts_test_hook)(struct pc_cache *s);
/* Under n->list_lock: take a slab off / put a slab on the node partial list. */
void slab_partial_del(struct pc_cache_node *n, struct pc_page *slab);
void slab_partial_add(struct pc_cache_node *n, struct pc_page *slab);
/* Discard every slab of a chain linked through list.next (their counts
 * added once). */
void slab_discard_chain(struct pc_cache *s, struct pc_page *chain);
struct pc_cache_node *slab_node(struct pc_cache *s, struct pc_page *slab);
/* Objects on CPU c's freelist, counted with the freelist taken (tid odd) so
 * that no fast path changes it meanwhile. Caller holds c->lock. */
long slab_cpu_freelist_count(struct pc_cache *s, struct pc_cache_cpu *c);
/* "slab_free.c" */
void slab_unfreeze_partials(struct pc_cache *s, struct pc_page *list);
/* Free k objects of slab, chained head -> ... -> tail through their free
 * pointers, with one compare-and-swap of the slab word (slab_free_slow's
 * state changes for k frees at once). No lock held. */
void slab_free_bulk(struct pc_cache *s, struct pc_page *slab, void *head, void *tail, uint32_t k);
/* The free of k objects that are every object in use of a full, unfrozen
 * slab (a flushed chain), with no free pointer written: when the slab is
 * still so and its node keeps min_partial slabs already, one
 * compare-and-swap takes it (nobody else can reach it) and it goes onto
 * *discard (linked through list.next), for slab_discard_chain; true then.
 * Else nothing is done (false): the caller links the chain for
 * slab_free_bulk (slab_free.c, "Whole slabs"). No lock held. */
bool slab_free_whole(struct pc_cache *s, struct pc_page *slab, uint32_t k, struct pc_page **discard);
/* Whether slab is full and unfrozen (on no list) with exactly k objects in
 * use; read racily, for a flush deciding whether to link a chain. */
PC_INLINE bool slab_full_with(struct pc_page *slab, uint32_t k)
{
	struct pc_dword *w = slab_word(slab);
	uint64_t cnt = pc_load_relaxed(&w->word);
	return !pc_load_relaxed(&w->ptr) && PC_SLAB_FRESH(cnt) == 0 && !PC_SLAB_FROZEN(cnt) &&
	       PC_SLAB_INUSE(cnt) == k;
}
/* Fill out[0..n) from the slabs under c->lock once per slab (SLUB's bulk
 * allocation); returns how many it got (fewer when out of memory). */
unsigned slab_alloc_bulk(struct pc_cache *s, void **out, unsigned n);
/* "cache.c" */
/* slab_mutex ("Locks" above), for the decay and the walker: a decay pass,
 * pc_cache_check and pc_cache_destroy each hold it throughout, so none of
 * them overlaps another. slab_cache_foreach_locked: fn for every cache,
 * slab_mutex held by the caller. */
void slab_mutex_lock(void);
bool slab_mutex_trylock(void);
void slab_mutex_unlock(void);
bool slab_mutex_held(void);        /* by the calling thread */
void slab_mutex_assert_held(void); /* PC_DEBUG >= 2; nothing otherwise */
void slab_cache_foreach_locked(void (*fn)(struct pc_cache *s, void *arg), void *arg);
/* Tests only (NULL = none): called with slab_mutex held by pc_cache_check
 * (after its flush, before it walks) and by pc_cache_destroy (after its
 * shrink and check, before it counts), so that a test holds a walker or a
 * destroy there while it starts a decay pass. slab_exclusive_test_hook
 * calls it. */
extern void (*_Atomic pc_slab_exclusive_test_hook)(struct pc_cache *s);
void slab_exclusive_test_hook(struct pc_cache *s);
/* Tests only (NULL = none), "sheaf_decay.c": called by a decay pass (with
 * slab_mutex held) as it begins on each cache that has sheaves. */
extern void (*_Atomic pc_slab_decay_test_hook)(struct pc_cache *s);
/* A cache of sheaves: no sheaves of its own, not on the thread index. */
struct pc_cache *slab_cache_create_internal(const char *name, size_t size);
unsigned slab_cpu_partial(const struct pc_cache *s);
/* pc_cache_shrink without the sheaves: every CPU slab and CPU partial list
 * to the node, then every empty node partial slab to the page allocator.
 * Returns the slabs freed. No slab lock held. */
size_t slab_shrink_slabs(struct pc_cache *s);
unsigned slab_min_partial(const struct pc_cache *s);
/* "sheaf.c" */
bool sheaf_init(void);              /* choose the mode (once, from slab_init) */
int sheaf_mode_get(void);
unsigned sheaf_default_capacity(size_t size);
/* Where a default capacity starts (at most max; "Sheaf capacity" in
 * sheaf.c), and its growth toward s->sheaf_capacity_max, counted at each
 * refill from the slabs and each new sheaf made for a free (from the sheaf
 * slow paths). */
unsigned sheaf_start_capacity(size_t size, unsigned max);
void sheaf_capacity_grow(struct pc_cache *s);
/* The largest capacity a cache of slot size `size` and default capacity
 * def may grow to past the default ("Past the default" in sheaf.c). */
unsigned sheaf_top_capacity(size_t size, unsigned def);
/* Refills at or above the default, since the capacity last changed or the
 * decay last looked, that double a capacity past the default. */
#define PC_SHEAF_PAST_REFILLS 32
/* slab_mutex held: a decay pass's look at s's capacity past the default
 * (halved toward the default when its refills stopped). */
void sheaf_past_decay(struct pc_cache *s);
/* slab_mutex held (or s not yet published): give back what s's capacity
 * past the default was charged, before a retune or a destroy. */
void sheaf_past_release(struct pc_cache *s);
void sheaf_cache_setup(struct pc_cache *s); /* at creation: slots or tindex */
void sheaf_thread_exit(void);       /* the slab layer's thread_exit handler */
/* Tests only: called by the sheaf slow paths while they hold their locks
 * (to raise a signal there deterministically). NULL = none. */
extern void (*_Atomic pc_sheaf_test_hook)(struct pc_cache *s);
/* Flush every CPU's (rseq) or every live thread's (thread mode; the calling
 * thread's only where membarrier is missing) sheaves of s, and its barns,
 * into the slabs. Takes slot locks (or the thread registry lock) and barn
 * locks. */
void sheaf_flush_cache(struct pc_cache *s);
/* The decay's parts: one cache's CPU sheaves (rseq) and barns; every live
 * thread's idle sheaves (thread mode); the slow paths' poll (no lock held).
 * Each returns the sheaves flushed. */
unsigned sheaf_decay_cache(struct pc_cache *s);
unsigned sheaf_decay_threads(void);
unsigned sheaf_threads_decay(void); /* "sheaf_thread.c" */
void sheaf_decay_poll(void);        /* "sheaf_decay.c" */
/* From slab_init: registers the decay as the page layer's release-thread
 * hook (pc_page_release_hook_add), so idle programs decay too. */
void sheaf_decay_init(void);
/* Whether any CPU (rseq) or live thread (thread mode) holds a sheaf of s, or
 * a barn of s holds one: a racy look, for the decay's "is s idle". */
bool sheaf_cache_holds(struct pc_cache *s);
/* Signal-handler re-entry bookkeeping around a slow path or flush. */
void sheaf_enter(void);
void sheaf_leave(void);
/* Thread mode: flush every live thread's sheaves of every cache (one fence
 * per batch of sheaves, where sheaf_flush_cache takes one per cache). */
void sheaf_flush_threads(void);
/* Objects in s's sheaves (every CPU's in rseq mode, every live thread's in
 * thread mode) and barns: a racy sum, for pc_cache_info. */
long sheaf_count_objects(struct pc_cache *s);
/* "sheaf_thread.c": thread mode's registry of live threads' sheaves. */
void sheaf_threads_init(void);      /* from sheaf_init in thread mode */
struct pc_cache *sheaf_thread_cache(unsigned i); /* "sheaf.c": index -> cache */
/* Take *entry's sheaf for the caller (compare-and-swap against flushers):
 * the sheaf, now the caller's alone, or pc_sheaf_none. */
struct pc_sheaf *sheaf_entry_take(pc_sheaf_entry *entry);
/* This thread joins the registry (once; its fast paths start using its
 * entries) / leaves it (its exit handler; fast paths go to the slow path). */
bool sheaf_thread_join(void);
void sheaf_thread_leave(void);
/* Flush every live thread's sheaf of `only` (NULL: of every cache) into the
 * slabs: other threads' only where a membarrier is available (and
 * pc_sheaf_test_no_fence is false), else the caller's alone. Takes
 * threads_lock, and lets it go while it waits for another thread's fast
 * path (a fork or an exiting thread never waits for that wait); a caller
 * that holds slab_mutex still makes a fork wait for it, which is why a trim
 * (pc_slab_reclaim) flushes every cache's at once before it takes that. */
void sheaf_threads_flush(struct pc_cache *only);
/* Objects in every live thread's sheaf of s: racy reads, a statistic. */
long sheaf_threads_count(struct pc_cache *s);
/* Whether a live thread holds a sheaf of s (racy reads, for the decay). */
bool sheaf_threads_hold(struct pc_cache *s);
void sheaf_threads_prefork(void);   /* from the slab layer's fork handlers */
void sheaf_threads_postfork_parent(void);
void sheaf_threads_postfork_child(void);
/* In a fork child, after the fork window (its own lifecycle entry): the
 * parent's other threads' sheaves back to the slabs. */
void sheaf_threads_fork_orphans(void);
/* Tests only: behave as if membarrier were unavailable. */
extern _Atomic bool pc_sheaf_test_no_fence;
/* Tests only: called, when set, by a flusher about to yield, threads_lock
 * dropped, while it waits for another thread's fast path (false) or for the
 * sheaves other flushes have in flight (true); it may block there. */
extern void (*_Atomic pc_sheaf_flush_wait_test_hook)(bool for_flushes);
/* "barn.c" */
struct pc_sheaf *sheaf_new(struct pc_cache *s, unsigned capacity);
void sheaf_free(struct pc_sheaf *sh);
/* Give every object of sh back to the slabs (sh is the caller's alone). */
void sheaf_flush_objects(struct pc_cache *s, struct pc_sheaf *sh);
/* A full sheaf of the cache's capacity from node's barn, or NULL. */
struct pc_sheaf *barn_take_full(struct pc_cache *s, unsigned node);
/* An empty sheaf of the cache's capacity from node's barn, or NULL. */
struct pc_sheaf *barn_take_empty(struct pc_cache *s, unsigned node);
/* Retire a sheaf the caller holds alone: to node's barn when it is full or
 * empty, has the current capacity and the barn has room; otherwise its
 * objects go to the slabs and it is freed. */
void barn_put(struct pc_cache *s, unsigned node, struct pc_sheaf *sh);
/* Empty node's barn: objects to the slabs, sheaves freed. */
void barn_drain(struct pc_cache *s, unsigned node);
/* Decay: drain node's barn when no sheaf came or went since the previous
 * look; returns the sheaves drained. */
unsigned barn_decay(struct pc_cache *s, unsigned node);
/* Objects in node's full sheaves and carry (under the barn lock). */
long barn_count_objects(struct pc_cache *s, unsigned node);
/* The budget of raised barns and, counted apart, of grown capacities
 * (slub.barn_max_kb), in bytes. */
size_t barn_budget_bytes(void);
/* What slub.barn_max_kb = -1 stands for now (the help's resolver). */
long barn_max_kb_resolved(void);
/* Full sheaves node's barn may hold now (its bound, racy). */
unsigned barn_limit(struct pc_cache *s, unsigned node);
bool sheaf_caches_init(void);       /* the caches sheaves come from (once) */

#endif /* PC_SLAB_H */
