/*
 * malloc/malloc.h - the malloc front end: size classes over slab caches,
 * large blocks from the page allocator, huge blocks from the OS.
 *
 *   small  size <= PC_SMALL_MAX (8 KiB): one slab cache per size class;
 *   large  up to PC_LARGE_MAX (4 MiB, the largest buddy block): a run of
 *          exactly the pages asked for from the page allocator (pc_alloc_run),
 *          as SLUB passes page-sized kmalloc through to the page allocator
 *          (seed 002); realloc shrinks it in place, and grows it in place
 *          when the pages after it are free; medium blocks (3-64 pages) are
 *          kept on per-CPU rseq stacks when freed and reused from them
 *          first (medium.c), so that most medium calls take no lock;
 *   huge   beyond: a mapping of its own with one header page in front
 *          (on a 2 MiB boundary, with MADV_HUGEPAGE, if vm.huge_thp = 1),
 *          cached for reuse after free (under the release delay, bounded
 *          in bytes; the range with the most resident pages to reuse,
 *          split and merged, resident up to one recent block per other
 *          CPU after each malloc, the rest kept as address space), then
 *          unmapped;
 *          grown with mremap, shrunk in place (the tail cached). When the OS
 *          refuses the mapping, a range of free pages of a region, lent by
 *          the page allocator (same layout; never unmapped or remapped).
 *
 * Which kind a pointer is: its page descriptor (pc_page_of) says SLAB/TAIL
 * (small) or LARGE, or HUGE for a huge block in a lent range; a pointer in
 * no region (or on a HUGE page) is huge only if the table of live huge blocks
 * (huge_table.c) holds it. huge_header() is the safe lookup: it
 * never reads memory we did not map (a foreign page-aligned pointer gets
 * NULL without its "header page" being touched), and it is lock-free, so it
 * may be called from any context, fork handlers and signal handlers
 * included. huge_table_remove() is the claim of a free: of two frees of
 * one block exactly one gets true.
 *
 * Locks: none of its own on the fast paths (huge blocks keep relaxed atomic
 * counters; medium.c has a spinlock per CPU for its slow paths and
 * flushes); the layers below do the locking.
 *
 * Re-entry: a signal handler may call the API while its thread is inside
 * the allocator. Each layer below counts its locked slow paths in a
 * per-thread depth (slab.h sheaf_depth, page.h pc_page_depth) and so does
 * medium.c (pc_medium_depth); pc_slab_reentered() and medium_reentered()
 * say whether any of them is raised. A handler that finds one raised takes
 * no allocator lock: what the lock-free caches hold serves it (sheaves, the
 * CPU slab's freelist, the medium cache, the huge cache, a fresh mapping),
 * anything else fails with ENOMEM, without the out-of-memory retry; its
 * frees wait on the layers' per-thread lists for the interrupted call (the
 * slab's list also for this layer's slow paths: pc_slab_reentry_drain at
 * the end of malloc_aligned and free_slow); malloc_trim returns 0.
 * docs/reliability.md, "Signal handlers that allocate", has the details.
 *
 * Start-up: pc_malloc_init() starts the page allocator once, and
 * each size class's cache is made at the first allocation of the class, both
 * with no call to malloc (all metadata comes from the OS layer), so it is
 * safe from the first malloc of the process, in constructors and in threads.
 */
#ifndef PC_MALLOC_H
#define PC_MALLOC_H

#include "../memcheck.h"
#include "../slab/slab.h"

#define PC_SMALL_MAX   8192
#define PC_LARGE_MAX   (PC_PAGE_SIZE << PC_MAX_ORDER)
#define PC_HUGE_MAGIC  0x70636d616c6c6f63ULL /* "pcmalloc" */
/* Largest request we accept: beyond it NULL + ENOMEM (glibc: PTRDIFF_MAX). */
#define PC_REQUEST_MAX ((size_t)PTRDIFF_MAX - 2 * PC_LARGE_MAX)

#define PC_NR_CLASSES  33

/* Size classes: 8, then steps of 16 up to 128, then four per power of two
 * (worst-case internal waste 20%, see docs/size-classes.md). */
extern const uint16_t pc_class_size[PC_NR_CLASSES];
/* (size + 7) / 8 -> class, for sizes 0..PC_SMALL_MAX (constant). */
extern const uint8_t pc_class_of8[PC_SMALL_MAX / 8 + 1] PC_HIDDEN;
/* The cache of each class; until the class's first allocation (and while
 * its cache is being made) a stand-in whose fast paths always fail
 * (init.c), never NULL. */
extern struct pc_cache *_Atomic pc_class_cache[PC_NR_CLASSES] PC_HIDDEN;
extern struct pc_cache pc_malloc_unready PC_HIDDEN; /* the stand-in */
/* The same by (size + 7) / 8: malloc's fast path, one load from the size. */
extern struct pc_cache *_Atomic pc_class_cache_of8[PC_SMALL_MAX / 8 + 1] PC_HIDDEN;
extern _Atomic uint32_t pc_malloc_ready PC_HIDDEN;

PC_INLINE unsigned pc_size_class(size_t size)
{
	return pc_class_of8[(size + 7) >> 3];
}

/* A run of pages of a huge range that may hold data: bytes from the
 * header, both page multiples (huge_dirty.c). */
struct pc_huge_extent {
	size_t off, len;
};
#define PC_HUGE_DIRTY_MAX 64

/* Header in the page before a huge block's first byte. The dirty extents
 * describe a cached range (and a block taken from the cache, until calloc
 * has read them): sorted, disjoint, not touching, inside
 * [PC_PAGE_SIZE, map_size); every data page outside them reads zero (never
 * touched, or given back with MADV_DONTNEED: never MADV_FREE, whose pages
 * may come back with their old data), which calloc relies on. Not resident
 * there is a best effort only (a squeezed gap counts as dirty; khugepaged
 * may fill a huge page around a resident page). */
struct pc_huge_header {
	uint64_t magic;
	void *map_base;      /* start of the mapping (the header page or before) */
	size_t map_size;     /* bytes mapped */
	size_t align;        /* alignment asked for (PC_PAGE_SIZE if none) */
	bool recycled;       /* not a fresh mapping: the dirty extents are valid */
	bool lent;           /* a range lent by the page allocator (huge.c) */
	unsigned nr_dirty;   /* dirty extents in use */
	struct pc_huge_extent dirty[PC_HUGE_DIRTY_MAX];
};

/* "init.c" */
bool pc_malloc_init(void);
/* The cache of size class cls, made at its first use (init.c); NULL when
 * it cannot be made now (out of memory, or a signal handler that
 * interrupted a sheaf slow path). */
struct pc_cache *malloc_class_cache_slow(unsigned cls);
PC_INLINE struct pc_cache *malloc_class_cache(unsigned cls)
{
	/* Acquire: pairs with the release that published the cache. */
	struct pc_cache *s = pc_load_acquire(&pc_class_cache[cls]);
	return pc_likely(s != &pc_malloc_unready) ? s : malloc_class_cache_slow(cls);
}
/* Make every size class's cache now (statistics: every class is listed). */
void pc_malloc_classes_create(void);
/* "large.c": align is a power of two <= PC_LARGE_MAX */
void *large_alloc(size_t size, size_t align);
void large_free(struct pc_page *pg, void *p);
size_t large_usable(const struct pc_page *pg);
bool large_shrink_in_place(struct pc_page *pg, void *p, size_t new_size);
bool large_grow_in_place(struct pc_page *pg, void *p, size_t new_size);
/* "medium.c": the per-CPU cache of medium blocks (rseq mode; see the file).
 * Classes: runs of PC_MEDIUM_MIN_PAGES .. PC_PCP_MAX_RUN pages. */
#define PC_MEDIUM_MIN_PAGES ((PC_SMALL_MAX >> PC_PAGE_SHIFT) + 1)
#define PC_MEDIUM_CLASSES   (PC_PCP_MAX_RUN - PC_MEDIUM_MIN_PAGES + 1)
#define PC_MEDIUM_TLS __attribute__((tls_model("initial-exec")))
#define PC_MEDIUM_STACK_MAX 64 /* blocks a stack (one class, one CPU) can hold */
/* The slots of class k for every CPU start at pc_medium_slots + k *
 * pc_medium_stride; NULL while the cache is off (no rseq, not started). */
extern _Atomic(char *) pc_medium_slots PC_HIDDEN;
extern size_t pc_medium_stride PC_HIDDEN;
void medium_init(void);
bool medium_start(void); /* the per-CPU cache itself, at the first miss (medium.c) */
#define PC_MEDIUM_START_BACKOFF 256 /* misses between tries of a refused start (medium.c) */
size_t medium_flush(void);            /* every CPU's blocks to the pages; bytes */
size_t medium_decay(void);            /* those of CPUs idle since the last call */
size_t medium_cached_bytes(void);     /* bytes held by the cache (racy sum) */
size_t medium_capacity_bytes(unsigned cpu); /* a CPU's stacks' capacities (its lock) */
size_t medium_bound_bytes(unsigned cpu);    /* a CPU's bound now: base + raise, <= the ceiling */
void medium_cache_free_slow(void *p, unsigned pages);
/* A medium malloc the cache could not serve: the bound's raise (a class
 * refused since its last miss), the decay's tick, and a refill of the
 * stack in one page call, whose first block it returns (NULL: none, take
 * pc_alloc_run; medium.c). */
void *medium_cache_miss(size_t pages);
/* The decay without the release thread: called by a medium malloc the cache
 * could not serve (large.c) and by free's slow paths; every
 * MEDIUM_TICK_EVERY-th call of a thread reads the page clock (medium.c). */
void medium_decay_tick(void);
/* Medium slow paths that hold a medium lock (a CPU's, the decay lock, the
 * thread registry's) count themselves in pc_medium_depth: a signal handler
 * that interrupted one of its thread's must take none of them (no flush, no
 * decay, no out-of-memory reclaim: its allocation fails with ENOMEM). The
 * same for one that interrupted the page allocator (pc_page_reentered): a
 * medium lock nests outside the page locks its thread may hold. */
extern __thread unsigned char pc_medium_depth PC_MEDIUM_TLS PC_HIDDEN;
PC_INLINE void medium_enter(void)
{
	pc_medium_depth++;
	atomic_signal_fence(memory_order_seq_cst); /* before any lock is taken */
}
PC_INLINE void medium_leave(void)
{
	atomic_signal_fence(memory_order_seq_cst); /* after every lock is dropped */
	pc_medium_depth--;
}
PC_INLINE bool medium_reentered(void)
{
	return pc_medium_depth != 0 || pc_page_reentered();
}
PC_COLD __attribute__((noreturn)) void medium_cache_twice(void *p);
/* "medium_thread.c": the same without rseq (thread mode): per-thread arrays
 * of at most PC_MEDIUM_THREAD_MAX blocks per class, and malloc.medium_cache_kb
 * / 4 (at most 512 KiB) in all, per thread. A thread's record; its fast paths (below) run
 * with busy set; a flusher owns the arrays while stopped is set (the
 * protocol: medium_thread.c). */
#define PC_MEDIUM_THREAD_MAX 8
struct medium_thread {
	_Atomic unsigned char busy;    /* the owner's fast path runs (owner writes) */
	_Atomic unsigned char stopped; /* a flusher owns the arrays */
	bool chosen;                   /* a flush takes it (medium_threads_lock) */
	_Atomic uint32_t used;         /* pages held (owner, or its flusher) */
	uint32_t sig;                  /* used at the last flush pass (the lock) */
	struct pc_list link;           /* registry or free records (the lock) */
	uint32_t count[PC_MEDIUM_CLASSES];
	void *blocks[PC_MEDIUM_CLASSES][PC_MEDIUM_THREAD_MAX];
};
extern __thread struct medium_thread *pc_medium_self PC_MEDIUM_TLS PC_HIDDEN;
extern _Atomic uint32_t pc_medium_thread_budget PC_HIDDEN; /* pages per thread */
void medium_thread_init(void);
size_t medium_thread_flush(bool idle_only);
size_t medium_thread_cached_bytes(void);
void medium_thread_free_slow(void *p, unsigned pages);

/* Start a fast path on t: false (nothing to do) when the thread has no
 * record, when this is a signal handler that interrupted a fast path of its
 * thread (busy already set), or when a flusher owns the arrays. */
PC_INLINE bool medium_thread_enter(struct medium_thread *t)
{
	if (pc_unlikely(t == NULL || pc_load_relaxed(&t->busy) != 0))
		return false;
	pc_store_relaxed(&t->busy, 1);
	/* For the compiler: busy before the reads below. For the CPU the
	 * flusher's membarrier orders them (medium_thread.c). */
	atomic_signal_fence(memory_order_seq_cst);
	if (pc_load_acquire(&t->stopped) == 0) /* pairs with the flusher's release */
		return true;
	pc_store_release(&t->busy, 0);
	return false;
}

PC_INLINE void *medium_thread_pop(size_t pages)
{
	struct medium_thread *t = pc_medium_self;
	if (!medium_thread_enter(t))
		return NULL;
	unsigned k = (unsigned)pages - PC_MEDIUM_MIN_PAGES;
	uint32_t n = t->count[k];
	void *p = NULL;
	if (n != 0) {
		p = t->blocks[k][n - 1];
		t->count[k] = n - 1;
		pc_store_relaxed(&t->used, pc_load_relaxed(&t->used) - (uint32_t)pages);
	}
	/* Release: a flusher that reads busy clear sees our writes. */
	pc_store_release(&t->busy, 0);
	return p;
}

PC_INLINE bool medium_thread_push(void *p, size_t pages)
{
	struct medium_thread *t = pc_medium_self;
	if (!medium_thread_enter(t))
		return false;
	unsigned k = (unsigned)pages - PC_MEDIUM_MIN_PAGES;
	uint32_t n = t->count[k], used = pc_load_relaxed(&t->used);
	bool ok = n < PC_MEDIUM_THREAD_MAX && used + pages <= pc_load_relaxed(&pc_medium_thread_budget);
	if (ok) {
		t->blocks[k][n] = p;
		t->count[k] = n + 1;
		pc_store_relaxed(&t->used, used + (uint32_t)pages);
	}
	pc_store_release(&t->busy, 0);
	return ok;
}

/* A cached block of `pages` pages (PC_MEDIUM_MIN_PAGES..PC_PCP_MAX_RUN) from
 * this CPU's stack (one rseq pop, no lock), or in thread mode from this
 * thread's array; NULL if none. */
PC_INLINE void *medium_cache_pop(size_t pages)
{
	char *slots = pc_load_acquire(&pc_medium_slots); /* medium.c: medium_init_once's release */
	if (pc_likely(slots != NULL))
		return os_rseq_pop(slots + (pages - PC_MEDIUM_MIN_PAGES) * pc_medium_stride);
	return medium_thread_pop(pages);
}
/* Keep a free block of `pages` pages on this CPU's stack (one rseq push, no
 * lock), or in thread mode in this thread's array; when full, the slow path
 * grows the stack (makes room in the array) within the budget or gives the
 * block to the page allocator. */
PC_INLINE void medium_cache_push(void *p, size_t pages)
{
	char *slots = pc_load_acquire(&pc_medium_slots); /* as in medium_cache_pop */
	if (pc_unlikely(slots == NULL)) {
		if (!medium_thread_push(p, pages))
			medium_thread_free_slow(p, (unsigned)pages);
		return;
	}
	int pushed = os_rseq_push(slots + (pages - PC_MEDIUM_MIN_PAGES) * pc_medium_stride, p);
	if (pc_likely(pushed > 0))
		return;
	if (pushed < 0)
		medium_cache_twice(p);
	medium_cache_free_slow(p, (unsigned)pages);
}
/* "huge.c" */
void *huge_alloc(size_t size, size_t align);
/* false if p was not (or no longer) a live huge block: a double free. */
bool huge_free(void *p);
size_t huge_usable(const void *p);
void *huge_realloc(void *p, size_t size);
const struct pc_huge_header *huge_header(const void *p);
size_t huge_bytes_mapped(void);
size_t huge_count(void);
/* calloc's clearing of a huge block of `size` bytes: only the pages that
 * may hold data (none for a fresh mapping). */
void huge_zero(void *p, size_t size);
/* "huge_cache.c": freed mappings kept for reuse (see the file). put is
 * false when the caller must unmap h itself; take returns a mapping of
 * `need` to need + need/8 bytes, its header's dirty extents valid (the rest
 * of the header the caller's to write), or NULL. bytes: address space
 * cached; resident: the part of it not released; bound: the most resident
 * after a take (a put may leave the block it put on top of it). */
bool huge_cache_put(struct pc_huge_header *h);
struct pc_huge_header *huge_cache_take(size_t need);
/* Grow live block h in place to `total` bytes with the cached range right
 * after it; false if there is none large enough. */
bool huge_cache_grow(struct pc_huge_header *h, size_t total);
size_t huge_cache_expire(void);
void huge_cache_settle(void); /* resident down to the bound, as after a take */
size_t huge_cache_flush(void);
size_t huge_cache_bytes(void);
size_t huge_cache_resident(void);
size_t huge_cache_resident_bound(void);
extern _Atomic unsigned pc_huge_cache_test_cpus PC_HIDDEN; /* tests only: 0 = os_cpu_count() */
extern _Atomic size_t pc_huge_cache_test_bound PC_HIDDEN;  /* tests only: 0 = computed */
/* "huge_dirty.c": the dirty extents of a range (struct pc_huge_header).
 * all: every data page; bytes: their sum; join: append the range hi,
 * which starts lo->map_size bytes after lo (before lo's size grows), its
 * header page included; split: move what lies beyond `at` (where tail's
 * header page starts) to tail; release: give back (MADV_DONTNEED) the last
 * `want` bytes of them (SIZE_MAX: all), returns the bytes given back; zero:
 * clear them below `limit` bytes from the header. */
bool huge_dirty_valid(const struct pc_huge_header *h); /* the invariants above */
void huge_dirty_all(struct pc_huge_header *h);
size_t huge_dirty_bytes(const struct pc_huge_header *h);
void huge_dirty_join(struct pc_huge_header *lo, const struct pc_huge_header *hi);
void huge_dirty_split(struct pc_huge_header *h, size_t at, struct pc_huge_header *tail);
size_t huge_dirty_release(struct pc_huge_header *h, size_t want);
void huge_dirty_zero(struct pc_huge_header *h, size_t limit);
/* "huge_table.c": the set of live huge blocks (user pointers). insert fails
 * when the table cannot be mapped or is locally full. */
bool huge_table_insert(const void *p);
bool huge_table_contains(const void *p);
bool huge_table_remove(const void *p);
/* "malloc.c" */
/* The exported pc_ entry points under hidden names (aliases defined in
 * malloc.c), for the files that forward to them (override.c, new.cc): a
 * direct jump or call. A call to the exported name from another file goes
 * through the GOT (an indirect jump): -fno-semantic-interposition binds
 * only calls within one translation unit. new.cc declares its own. */
void *pc_malloc_local(size_t size) PC_HIDDEN;
void pc_free_local(void *p) PC_HIDDEN;
void *pc_calloc_local(size_t count, size_t size) PC_HIDDEN;
void *pc_realloc_local(void *p, size_t size) PC_HIDDEN;
void *pc_reallocarray_local(void *p, size_t count, size_t size) PC_HIDDEN;
void *pc_memalign_local(size_t align, size_t size) PC_HIDDEN;
void *pc_aligned_alloc_local(size_t align, size_t size) PC_HIDDEN;
int pc_posix_memalign_local(void **memptr, size_t align, size_t size) PC_HIDDEN;
size_t pc_malloc_usable_size_local(const void *p) PC_HIDDEN;
size_t pc_trim_local(void) PC_HIDDEN;
void *malloc_aligned(size_t align, size_t size);
void malloc_reclaim(void);
/* malloc's and free's slow paths (everything but a small block from or to
 * a sheaf): noinline, reached by a tail call from the fast paths below. */
void *malloc_slow(size_t size);
void free_slow(void *p);

/* ---- the fast paths of malloc and free ---------------------------------------- */
/* Inline here so that pc_malloc/pc_free (malloc.c) and the C library's
 * malloc/free (override.c) are each the whole fast path, with no jump from
 * one exported function to the other. */

/*
 * malloc's fast path: a table by size gives the class's cache, and the
 * sheaf fast path of that cache an object. Before start-up the class's cache is a
 * stand-in whose sheaf is always empty (init.c), so the first call goes to
 * the slow path, which starts the allocator: no readiness test here.
 */
PC_INLINE void *malloc_fast(size_t size)
{
	if (pc_likely(size <= PC_SMALL_MAX)) {
		/* Acquire: pairs with the release that published the cache. */
		struct pc_cache *s = pc_load_acquire(&pc_class_cache_of8[(size + 7) >> 3]);
		void *p = pc_cache_alloc_try(s);
		if (pc_likely(p != NULL))
			return p;
	}
	return malloc_slow(size);
}

PC_INLINE void *pc_malloc_inline(size_t size)
{
	pc_vg_enter();
	void *p = malloc_fast(size);
	pc_vg_leave();
	return pc_vg_alloc(p, size, 0);
}

/* free's test for a small block: p's own page descriptor when p is the
 * start of a slot of a slab, else NULL (classify() in malloc.c says why the
 * start). Every page of a slab, head or tail, holds the owner and the slot
 * test's inputs (slab.h), and only pages of a live slab have a non-zero
 * slot_objects (page.h, struct pc_page: slab_new writes it, slab_discard
 * clears it before the pages go back), so the slot test alone refuses every
 * other page (no slot number is below a count of 0): no test of the page's
 * state (four instructions fewer; classify() on the slow paths still tests
 * it). Debug builds check that rule on every free that passes. */
PC_INLINE struct pc_page *small_slab(const void *p)
{
	/* The descriptor's address is computed from p; the table entry is
	 * tested, not followed, so the descriptor's loads need not wait for it
	 * (page.h, struct pc_region). */
	struct pc_page *pg = pc_page_desc(p);
	if (pc_unlikely(!pc_region_mapped(p)))
		return NULL;
	if (pc_likely(pc_slab_slot_index(pg, p) < pg->slot_objects)) {
		pc_assert_internal(pc_pg_in_slab(pg)); /* the rule above */
		return pg;
	}
	return NULL;
}

/* free's fast path: a slab object goes onto the sheaf (its checks: the
 * bad-pointer test above, the double-free test of the sheaf push);
 * everything else is a tail call to free_slow, so no register is saved. */
PC_INLINE void pc_free_inline(void *p)
{
	pc_vg_enter();
	pc_vg_free(p); /* before the allocator may hand p out again */
	struct pc_page *slab = small_slab(p);
	if (pc_likely(slab != NULL))
		pc_cache_free_inline(slab->owner, slab, p);
	else
		free_slow(p);
	pc_vg_leave();
}

#endif /* PC_MALLOC_H */
