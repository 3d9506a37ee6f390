/*
 * malloc/malloc.c - the prefixed allocation API (pc_malloc, ...), which the
 * C library names in override.c and the C++ operators in new.cc forward to.
 *
 * Fast paths (inline in malloc.h, so that malloc/free in override.c are
 * the whole fast path too): pc_malloc of a small size is a table lookup and
 * the sheaf pop; pc_free of a small object is a region-table lookup, the
 * slab's page descriptor, the bad-pointer test and the sheaf push (with its
 * double-free test). Everything else (start-up, large, huge, errors, out of
 * memory) is in noinline slow paths, reached by tail calls.
 *
 * Out of memory: an allocation the OS refuses is retried once after the
 * slab caches give back their empty and partial slabs; then NULL + ENOMEM,
 * with no message and no abort. free() never changes errno.
 *
 * Valgrind (PCMALLOC_VALGRIND builds only; see src/memcheck.h): each public
 * call brackets its work with pc_vg_enter/leave and announces the blocks it
 * hands out and takes back; realloc then always moves.
 */
#include "malloc.h"

#include <errno.h>
#include <string.h>

/* Give back what the caches hold so the page allocator can reuse it. */
void malloc_reclaim(void)
{
	pc_slab_reclaim();
	medium_flush(); /* before the drain: the blocks go to the per-CPU lists */
	pc_page_drain_all();
	huge_cache_flush(); /* the delayed pool goes back before we fail */
}

/* Start the page layer's release thread if it is wanted (page.h). Called at
 * the end of malloc's slow path, where this thread holds no allocator lock;
 * not from free (glibc frees under its own thread-stack lock, and a free
 * needs no thread to make progress), nor from a signal handler that
 * interrupted the allocator (pthread_create allocates and is not
 * async-signal-safe): a later malloc slow path starts it. A handler that
 * allocates while its thread is inside the C library's own thread code can
 * still get here: docs/pages.md says to set vm.release_thread=0 for such
 * programs. */
static void release_poll(void)
{
	if (pc_option(PC_OPT_VM_RELEASE_THREAD) != 0 && !pc_slab_reentered() && !medium_reentered())
		pc_page_release_thread_poll();
}

/* Small, large or huge by size and alignment (align a power of two >= 8). */
static void *alloc_any(size_t size, size_t align)
{
	if (size <= PC_SMALL_MAX && align <= PC_PAGE_SIZE) {
		size_t want = PC_MAX(pc_align_up(size, align), align <= 8 ? 1 : align);
		unsigned cls = pc_size_class(want);
		while (cls < PC_NR_CLASSES && pc_class_size[cls] % align)
			cls++;
		if (cls < PC_NR_CLASSES) {
			struct pc_cache *s = malloc_class_cache(cls); /* made at first use */
			if (pc_unlikely(!s)) {
				errno = ENOMEM;
				return NULL;
			}
			void *p = pc_cache_alloc_inline(s);
			if (pc_unlikely(s->debug) && p) /* slub_debug: the request's red zone */
				pc_slab_debug_set_size(s, p, size);
			return p;
		}
	}
	if (size <= PC_LARGE_MAX && align <= PC_LARGE_MAX)
		return large_alloc(PC_MAX(size, PC_SMALL_MAX + 1), align);
	return huge_alloc(size, align);
}

/* Everything that is not a small malloc on a started allocator. */
void *malloc_aligned(size_t align, size_t size)
{
	if (pc_unlikely(size > PC_REQUEST_MAX || !pc_malloc_init())) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = alloc_any(size, align);
	/* A signal handler that interrupted a slab or medium slow path may take
	 * no lock: its allocation fails with ENOMEM instead of reclaiming. */
	if (pc_unlikely(!p) && !pc_slab_reentered() && !medium_reentered()) {
		malloc_reclaim();
		p = alloc_any(size, align);
		if (!p)
			errno = ENOMEM;
	}
	release_poll(); /* no lock held here */
	pc_slab_reentry_drain(); /* what a signal handler freed meanwhile (malloc.h) */
	return p;
}

PC_NOINLINE void *malloc_slow(size_t size)
{
	return malloc_aligned(8, size);
}

void *pc_malloc(size_t size)
{
	return pc_malloc_inline(size);
}

static PC_COLD __attribute__((noreturn)) void bad_pointer(const char *func, const void *p)
{
	pc_slab_debug_bad_pointer(func, p); /* in a debug cache's slab: SLUB's report */
	pc_fatal("%s(%p): invalid pointer or double free", func, p);
}

/* What a pointer is: a small object (pg: its slab), a large block (pg: its
 * head page), a huge block, or none of ours (NULL included). Only the start
 * of a block counts: a pointer into a slab that starts no slot, or into a
 * large block past its first byte, or into a free page, is BLOCK_BAD, and
 * free, realloc and malloc_usable_size stop the program on it (as glibc's
 * "free(): invalid pointer") rather than mis-free the block around it. */
enum block_kind { BLOCK_BAD, BLOCK_SMALL, BLOCK_LARGE, BLOCK_HUGE };

PC_INLINE enum block_kind classify(const void *p, struct pc_page **pg_out)
{
	struct pc_page *pg = pc_page_of(p);
	if (pc_unlikely(!pg))
		return huge_header(p) ? BLOCK_HUGE : BLOCK_BAD;
	struct pc_page *slab = pc_pg_state(pg) == PC_PG_TAIL ? pc_slab_head(pg, p) : pg;
	*pg_out = slab;
	if (pc_likely(pc_pg_state(slab) == PC_PG_SLAB))
		return pc_likely(pc_slab_is_slot(slab->owner, slab, p)) ? BLOCK_SMALL : BLOCK_BAD;
	*pg_out = pg;
	if (pc_pg_state(pg) == PC_PG_HUGE) /* a huge block in a lent range (huge.c) */
		return huge_header(p) ? BLOCK_HUGE : BLOCK_BAD;
	return pc_pg_state(pg) == PC_PG_LARGE && pc_page_address(pg) == p ? BLOCK_LARGE : BLOCK_BAD;
}

/* Usable bytes of a block that classify() recognised. */
static size_t block_usable(enum block_kind kind, const struct pc_page *pg, const void *p)
{
	if (kind == BLOCK_SMALL) {
		struct pc_cache *s = pg->owner;
		return pc_unlikely(s->debug) ? pc_slab_debug_usable(s, (void *)(uintptr_t)p) : s->object_size;
	}
	return kind == BLOCK_LARGE ? large_usable(pg) : huge_usable(p);
}

/* free of anything that is not the start of a slot of a slab: large and
 * huge blocks, NULL, and bad pointers (which stop the program). */
PC_NOINLINE void free_slow(void *p)
{
	if (!p)
		return;
	int saved = errno;
	struct pc_page *pg = NULL;
	enum block_kind kind = classify(p, &pg);
	if (kind == BLOCK_SMALL) /* not reached: free's fast test is the same */
		pc_cache_free_inline(pg->owner, pg, p);
	else if (kind == BLOCK_LARGE)
		large_free(pg, p);
	else if (kind != BLOCK_HUGE || !huge_free(p))
		bad_pointer("free", p);
	pc_slab_reentry_drain(); /* what a signal handler freed meanwhile (malloc.h) */
	errno = saved;
}

void pc_free(void *p)
{
	pc_free_inline(p);
}

size_t pc_malloc_usable_size(const void *p)
{
	if (!p)
		return 0;
	pc_vg_enter();
	struct pc_page *pg = NULL;
	enum block_kind kind = classify(p, &pg);
	if (kind == BLOCK_BAD)
		bad_pointer("malloc_usable_size", p);
	size_t usable = block_usable(kind, pg, p);
	pc_vg_leave();
	return usable;
}

void *pc_calloc(size_t count, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(count, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = pc_malloc(total);
	/* A huge block from a fresh mapping was zeroed by the kernel; one
	 * from the cache of freed mappings holds old data where it is dirty. */
	if (p && total <= PC_LARGE_MAX) {
		memset(p, 0, total);
	} else if (p) {
		huge_zero(p, total);
		pc_vg_defined(p, total);
	}
	return p;
}

/* Move to a new block: allocate, copy what fits, free the old one. */
static void *realloc_move(void *p, size_t old_usable, size_t size)
{
	void *q = pc_malloc(size);
	if (!q)
		return NULL; /* errno is ENOMEM; p is untouched */
	memcpy(q, p, PC_MIN(old_usable, size));
	pc_free(p);
	return q;
}

static void *realloc_impl(void *p, size_t size)
{
	if (!p)
		return pc_malloc(size);
	if (size == 0) { /* glibc: free and return NULL */
		pc_free(p);
		return NULL;
	}
	if (size > PC_REQUEST_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	struct pc_page *pg = NULL;
	enum block_kind kind = classify(p, &pg);
	if (kind == BLOCK_BAD)
		bad_pointer("realloc", p);
	size_t usable = block_usable(kind, pg, p);
	if (pc_vg_running())
		return realloc_move(p, usable, size);
	/* A large block shrinks in place (its tail pages go back), and grows in
	 * place when the pages after it are free. */
	if (kind == BLOCK_LARGE && size > PC_SMALL_MAX && size <= usable)
		return large_shrink_in_place(pg, p, size) ? p : realloc_move(p, usable, size);
	if (kind == BLOCK_LARGE && size > usable && size <= PC_LARGE_MAX &&
	    large_grow_in_place(pg, p, size))
		return p;
	/* Otherwise the same block when the new size fits without wasting half
	 * (slub_debug: a debug cache's block shrinks its requested size). */
	if (size <= usable && size > usable / 2) {
		if (kind == BLOCK_SMALL && pc_unlikely(((struct pc_cache *)pg->owner)->debug))
			pc_slab_debug_set_size(pg->owner, p, size);
		return p;
	}
	if (kind == BLOCK_HUGE && size > PC_LARGE_MAX) {
		void *q = huge_realloc(p, size);
		if (q) {
			release_poll(); /* a growth past the floor wants the thread (huge.c) */
			return q;
		}
	}
	return realloc_move(p, usable, size);
}

void *pc_realloc(void *p, size_t size)
{
	pc_vg_enter();
	void *q = realloc_impl(p, size);
	pc_slab_reentry_drain(); /* in place, it took no slow path that does */
	pc_vg_leave();
	return q;
}

void *pc_reallocarray(void *p, size_t count, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(count, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return pc_realloc(p, total);
}

/* glibc's memalign: an alignment that is not a power of two is rounded up
 * to the next one (0 asks for none), first, so that memalign(12, 8) is 16
 * aligned; one too large to round is EINVAL. Alignments the size classes
 * give anyway (a class of 16 bytes or more is 16 aligned) go to malloc. */
void *pc_memalign(size_t align, size_t size)
{
	if (!pc_is_pow2(align)) {
		if (align > PC_REQUEST_MAX / 2) {
			errno = EINVAL;
			return NULL;
		}
		align = align ? (size_t)1 << (pc_log2(align) + 1) : 1;
	}
	if (align <= 16)
		return pc_malloc(align == 16 && size < 16 ? 16 : size);
	pc_vg_enter();
	void *p = malloc_aligned(align, size);
	pc_vg_leave();
	return pc_vg_alloc(p, size, 0);
}

void *pc_aligned_alloc(size_t align, size_t size)
{
	if (!pc_is_pow2(align)) { /* glibc 2.38: EINVAL */
		errno = EINVAL;
		return NULL;
	}
	return pc_memalign(align, size);
}

int pc_posix_memalign(void **memptr, size_t align, size_t size)
{
	if (!pc_is_pow2(align) || align < sizeof(void *))
		return EINVAL;
	int saved = errno;
	void *p = pc_memalign(align, size);
	errno = saved;
	if (!p)
		return ENOMEM;
	*memptr = p;
	return 0;
}

size_t pc_trim(void)
{
	if (pc_load_acquire(&pc_malloc_ready) != 2) /* pairs with pc_once */
		return 0;
	if (pc_slab_reentered() || medium_reentered()) /* a signal handler inside our locks */
		return 0;
	pc_vg_enter(); /* flushing slabs writes free pointers into free objects */
	pc_slab_reclaim();
	medium_flush();
	size_t released = huge_cache_flush() + pc_page_trim();
	pc_slab_reentry_drain();
	pc_vg_leave();
	return released;
}

/* The hidden names of the entry points above (malloc.h). */
#define PC_LOCAL_ALIAS(name) extern __typeof__(name) name##_local __attribute__((alias(#name)))
PC_LOCAL_ALIAS(pc_malloc);
PC_LOCAL_ALIAS(pc_free);
PC_LOCAL_ALIAS(pc_calloc);
PC_LOCAL_ALIAS(pc_realloc);
PC_LOCAL_ALIAS(pc_reallocarray);
PC_LOCAL_ALIAS(pc_memalign);
PC_LOCAL_ALIAS(pc_aligned_alloc);
PC_LOCAL_ALIAS(pc_posix_memalign);
PC_LOCAL_ALIAS(pc_malloc_usable_size);
PC_LOCAL_ALIAS(pc_trim);
