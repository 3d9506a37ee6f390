/*
 * slab/debug.c - slub_debug mode: the allocation and free of a debug cache,
 * with the checks of the kernel's SLUB debugging (slab.h, "Debug caches";
 * docs/reliability.md, "slub_debug mode"). Reports are in debug_report.c.
 *
 * A debug cache has no sheaves and never a CPU slab, CPU freelist or CPU
 * partial slab: its sheaf fast paths always fail (capacity 0, main sheaf
 * pc_sheaf_none, no thread sheaf ever installed), and its sheaf slow paths
 * come straight here. Every allocation and free runs under the list_lock of
 * the slab's node, where the slab's freelist is exact (no CPU holds part of
 * it), so the checks see one consistent state:
 *   alloc  the first slab of the node partial list (the local node first,
 *          then the others, then a new slab); its freelist's head is checked
 *          (poison intact, red zone inactive, free pointer a slot of the
 *          slab) and taken, or, when the freelist is empty, its next fresh
 *          object (slab.h, the counters word: never handed out, so never
 *          written) is taken, and once list_lock is dropped (it is ours
 *          alone) made free first (constructor, poison, inactive red zone,
 *          tracks cleared: what a new slab's objects got when slabs were
 *          written whole, outside the lock too); then its red zone is
 *          marked active, its track written;
 *   free   the object is not first or second on its slab's freelist and
 *          the slab has objects in use (always: the default double-free
 *          check, which the sheaves would otherwise have made), the
 *          pointer is a slot of the slab (F), the object is not on the
 *          slab's freelist, the walk of which also checks the freelist and
 *          the counters (F), it is not fresh (always: a fresh object was
 *          never handed out), its red zone is intact (Z); then its track,
 *          poison, inactive red zone, and the push; a slab that becomes
 *          empty goes back to the page allocator beyond min_partial; the
 *          slab goes first on its node's list, so the object freed last
 *          is the next one allocated there (a write after free is seen
 *          at the next allocation).
 * Slabs are never frozen; a full slab is on no list (as an ordinary one),
 * a slab with a free object is on its node's partial list. So the invariant
 * walker (check.c) applies unchanged.
 *
 * Signal handlers: the locked part runs inside sheaf_enter/sheaf_leave, so a
 * handler that allocates from the cache meanwhile fails with ENOMEM and its
 * frees wait for the end of ours (sheaf.c), as for a sheaf slow path.
 */
#include "slab.h"

#include <errno.h>
#include <string.h>

#define DEBUG_POISON_FREE   0x6b /* a free object's bytes (the kernel's POISON_FREE) */
#define DEBUG_POISON_END    0xa5 /* its last byte (POISON_END) */
#define DEBUG_RED_INACTIVE  0xbb /* the red zone of a free object (SLUB_RED_INACTIVE) */
#define DEBUG_RED_ACTIVE    0xcc /* the red zone of an allocated one (SLUB_RED_ACTIVE) */

/*
 * The slot of a debug cache (offsets from its start, which is the object's):
 *   [0, object_size)       the object
 *   [object_size, inuse)   the right red zone (Z): the alignment slack and
 *                          one more word, so an overflow of one byte lands
 *                          in it whatever the size
 *   [inuse, +8)            the free pointer (offset), never in the object,
 *                          so poison covers the whole object
 *   [inuse+8, +8)          with Z: the requested size (debug_requested):
 *                          object_size, or what malloc was asked for, so
 *                          the bytes from there to object_size are a red
 *                          zone too (the kernel's "kmalloc Redzone")
 *   [track_offset, +2*24)  the tracks of the last allocation and free (U)
 *   up to size             padding to the cache's alignment
 * Objects stay at slot starts, so the slot-start test of free
 * (pc_slab_is_slot) is that of an ordinary cache; the slot size is a
 * multiple of the cache's alignment and of the largest power of two (up to
 * a page) that divides the object size, as an ordinary cache's slot is.
 */
void slab_debug_geometry(struct pc_cache *s, size_t align)
{
	size_t end = pc_align_up(s->object_size, sizeof(void *));
	if (s->debug & PC_SLUB_DEBUG_Z)
		end += sizeof(void *);
	s->inuse = end;
	s->offset = end;
	/* With Z, the size malloc was asked for (the kmalloc red zone). */
	s->track_offset = end + sizeof(void *) + (s->debug & PC_SLUB_DEBUG_Z ? sizeof(size_t) : 0);
	end = s->track_offset;
	if (s->debug & PC_SLUB_DEBUG_U)
		end += 2 * sizeof(struct pc_slab_track);
	/* An ordinary cache's slot is its object size rounded to the alignment,
	 * so its objects are also aligned to the largest power of two dividing
	 * the size, and memalign relies on that (a size class whose size is a
	 * multiple of the alignment asked for, malloc.c). Keep it. */
	size_t natural = (size_t)1 << __builtin_ctzll(s->object_size);
	align = PC_MAX(align, PC_MIN(natural, (size_t)PC_PAGE_SIZE));
	s->size = pc_align_up(end, align);
}

struct pc_slab_track *slab_debug_track(const struct pc_cache *s, void *obj, int which)
{
	return (struct pc_slab_track *)(void *)((char *)obj + s->track_offset) + which;
}

/* With Z: where the requested size of obj is kept. */
static size_t *debug_requested(const struct pc_cache *s, void *obj)
{
	return (size_t *)(void *)((char *)obj + s->inuse + sizeof(void *));
}

/* The first byte of [p, p + n) that is not v, or NULL. */
static uint8_t *debug_find_not(uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return p + i;
	return NULL;
}

/* The last byte of [p, end] that is not v (p is one). */
static uint8_t *debug_last_not(uint8_t *p, uint8_t *end, uint8_t v)
{
	while (end > p && *end == v)
		end--;
	return end;
}

/* Check that [p, p + n) is all v; report `what` on the first difference. */
static void debug_check_bytes(const struct pc_cache *s, struct pc_page *slab, void *obj,
			      const char *what, uint8_t *p, size_t n, uint8_t v)
{
	uint8_t *bad = debug_find_not(p, n, v);
	if (pc_unlikely(bad != NULL))
		slab_debug_bug(s, slab, obj, what, bad, debug_last_not(bad, p + n - 1, v), v);
}

/* Whether p is a slot of slab (a free pointer or a freelist entry). */
static bool debug_valid_pointer(const struct pc_cache *s, struct pc_page *slab, void *p)
{
	char *base = pc_page_address(slab);
	return (char *)p >= base && (char *)p < base + (PC_PAGE_SIZE << pc_pg_order(slab)) &&
	       pc_slab_is_slot(s, slab, p);
}

/* A free object: poisoned (P, never with a constructor), red zone inactive. */
static void debug_mark_free(const struct pc_cache *s, uint8_t *obj)
{
	if (s->debug & PC_SLUB_DEBUG_P) {
		memset(obj, DEBUG_POISON_FREE, s->object_size - 1);
		obj[s->object_size - 1] = DEBUG_POISON_END;
	}
	if (s->debug & PC_SLUB_DEBUG_Z)
		memset(obj + s->object_size, DEBUG_RED_INACTIVE, s->inuse - s->object_size);
}

/* A fresh object, about to be handed out for the first time, made free as
 * every free object is (its constructor run first, as slab_alloc.c's
 * fresh_hand_out does). */
static void debug_init_fresh(struct pc_cache *s, uint8_t *obj)
{
	if (s->ctor)
		s->ctor(obj);
	debug_mark_free(s, obj);
	if (s->debug & PC_SLUB_DEBUG_U)
		memset(slab_debug_track(s, obj, PC_TRACK_ALLOC), 0, 2 * sizeof(struct pc_slab_track));
}

/* The checks of a free object before it is handed out (under list_lock). */
static void debug_check_free_object(const struct pc_cache *s, struct pc_page *slab, uint8_t *obj)
{
	if (s->debug & PC_SLUB_DEBUG_P) {
		debug_check_bytes(s, slab, obj, "Poison overwritten", obj, s->object_size - 1,
				  DEBUG_POISON_FREE);
		debug_check_bytes(s, slab, obj, "Poison overwritten", obj + s->object_size - 1, 1,
				  DEBUG_POISON_END);
	}
	if (s->debug & PC_SLUB_DEBUG_Z)
		debug_check_bytes(s, slab, obj, "Right Redzone overwritten", obj + s->object_size,
				  s->inuse - s->object_size, DEBUG_RED_INACTIVE);
	void *next = slab_next(s, obj);
	uint64_t cnt = pc_load_relaxed(&slab_word(slab)->word);
	if ((s->debug & PC_SLUB_DEBUG_F) && next &&
	    (!debug_valid_pointer(s, slab, next) || slab_is_fresh(slab, cnt, next)))
		slab_debug_bug(s, slab, obj, "Freepointer corrupt", NULL, NULL, 0);
}

/* Record who allocated or freed obj (U). */
static void debug_set_track(const struct pc_cache *s, void *obj, int which, uintptr_t caller)
{
	if (!(s->debug & PC_SLUB_DEBUG_U))
		return;
	struct pc_slab_track *t = slab_debug_track(s, obj, which);
	t->addr = caller;
	t->when_ns = os_now_ns();
	t->cpu = (int32_t)os_cpu_current();
	t->tid = os_thread_id();
}

/* The next fresh object of a partial slab whose freelist is empty, taken
 * (under list_lock) but not yet made free (debug_hand_out does that once
 * the lock is dropped: the object is the caller's alone); *cnt the
 * counters after. */
static uint8_t *debug_take_fresh(struct pc_cache *s, struct pc_page *slab, uint64_t *cnt)
{
	struct pc_dword *w = slab_word(slab);
	uint64_t old = *cnt;
	uint8_t *obj = (uint8_t *)pc_page_address(slab) + (size_t)PC_SLAB_FIRST_FRESH(old) * s->size;
	*cnt = old - PC_SLAB_FRESH_WORD(1) + 1; /* one fresh object less, one more in use */
	/* Only list_lock holders change a debug slab's word: cannot fail. */
	bool ok = pc_dcas(w, NULL, old, NULL, *cnt);
	pc_assert_internal(ok);
	(void)ok;
	return obj;
}

/* An object just taken, allocated: its red zone active, the requested
 * size, its track (U), the trace line (T). */
static void debug_activate(struct pc_cache *s, struct pc_page *slab, uint8_t *obj,
			   uintptr_t caller)
{
	if (s->debug & PC_SLUB_DEBUG_Z) {
		memset(obj + s->object_size, DEBUG_RED_ACTIVE, s->inuse - s->object_size);
		*debug_requested(s, obj) = s->object_size;
	}
	debug_set_track(s, obj, PC_TRACK_ALLOC, caller);
	if (s->debug & PC_SLUB_DEBUG_T)
		slab_debug_trace(s, slab, obj, true);
}

/* Take the head of a partial slab's freelist (checked and activated under
 * list_lock), or its next fresh object when the freelist is empty (*fresh
 * set: the caller hands it out with debug_hand_out after dropping the
 * lock, so that the constructor and the object's first writes run with no
 * slab lock held, as they did when slab_new wrote whole slabs). */
static void *debug_take(struct pc_cache *s, struct pc_cache_node *n, struct pc_page *slab,
			uintptr_t caller, bool *fresh)
{
	pc_lock_assert_held(&n->list_lock);
	struct pc_dword *w = slab_word(slab);
	uint8_t *obj = pc_load_relaxed(&w->ptr);
	uint64_t cnt = pc_load_relaxed(&w->word);
	/* A partial slab: a free object on its freelist (a slot that is not
	 * fresh, and the counts leave room for it) or, the freelist empty,
	 * fresh ones (every other object in use). */
	uint32_t held = PC_SLAB_INUSE(cnt) + PC_SLAB_FRESH(cnt), objects = PC_SLAB_OBJECTS(cnt);
	bool bad = obj ? !debug_valid_pointer(s, slab, obj) || slab_is_fresh(slab, cnt, obj) ||
			 held >= objects
		       : PC_SLAB_FRESH(cnt) == 0 || held != objects;
	if ((s->debug & PC_SLUB_DEBUG_F) && (bad || PC_SLAB_FROZEN(cnt)))
		slab_debug_bug(s, slab, obj, "Freelist or counters corrupt", NULL, NULL, 0);
	void *next = NULL;
	*fresh = !obj;
	if (obj) {
		debug_check_free_object(s, slab, obj);
		next = slab_next(s, obj);
		/* Only list_lock holders change a debug slab's word: cannot fail. */
		bool ok = pc_dcas(w, obj, cnt, next, cnt + 1);
		pc_assert_internal(ok);
		(void)ok;
		cnt += 1;
	} else {
		obj = debug_take_fresh(s, slab, &cnt);
	}
	if (!next && PC_SLAB_FRESH(cnt) == 0)
		slab_partial_del(n, slab); /* full: on no list */
	if (!*fresh)
		debug_activate(s, slab, obj, caller);
	return obj;
}

/* After debug_take, with no lock held: a fresh object made free, then
 * allocated. */
static void *debug_hand_out(struct pc_cache *s, struct pc_page *slab, uint8_t *obj, bool fresh,
			    uintptr_t caller)
{
	if (obj && fresh) {
		debug_init_fresh(s, obj);
		debug_activate(s, slab, obj, caller);
	}
	return obj;
}

/* An object from node n's partial list, or NULL. */
static void *debug_alloc_node(struct pc_cache *s, struct pc_cache_node *n, uintptr_t caller)
{
	void *obj = NULL;
	struct pc_page *slab = NULL;
	bool fresh = false;
	pc_lock_acquire(&n->list_lock);
	if (!pc_list_empty(&n->partial)) {
		slab = pc_list_first(&n->partial, struct pc_page, list);
		obj = debug_take(s, n, slab, caller, &fresh);
	}
	pc_lock_release(&n->list_lock);
	return debug_hand_out(s, slab, obj, fresh, caller);
}

/* A new slab, all of its objects free (fresh), on its node's partial list, and its
 * first object taken (under the same lock: no other thread can take them
 * all first); NULL if out of memory. */
static void *debug_grow(struct pc_cache *s, unsigned node, uintptr_t caller)
{
	struct pc_page *slab = slab_new(s, node, NULL); /* every object fresh, unfrozen */
	if (!slab)
		return NULL;
	slab_stat(&s->cpu[os_cpu_current()], PC_SLAB_STAT_slab_alloc);
	struct pc_cache_node *n = slab_node(s, slab);
	bool fresh;
	pc_lock_acquire(&n->list_lock);
	slab_partial_add(n, slab);
	void *obj = debug_take(s, n, slab, caller, &fresh);
	pc_lock_release(&n->list_lock);
	obj = debug_hand_out(s, slab, obj, fresh, caller);
	return obj;
}

void *slab_debug_alloc(struct pc_cache *s)
{
	/* Before any lock: the stack walk is the unwinder's (os/symbol.c). */
	uintptr_t caller = s->debug & PC_SLUB_DEBUG_U ? os_caller_outside_self() : 0;
	unsigned node = pc_cpu_node(os_cpu_current());
	pc_assert_internal(!pc_slab_reentered());
	sheaf_enter();
	void *obj = debug_alloc_node(s, s->node[node], caller);
	for (unsigned i = 0; !obj && i < pc_node_count(); i++)
		if (i != node)
			obj = debug_alloc_node(s, s->node[i], caller);
	if (!obj)
		obj = debug_grow(s, node, caller);
	slab_stat(&s->cpu[os_cpu_current()], PC_SLAB_STAT_alloc_slowpath);
	sheaf_leave();
	if (!obj)
		errno = ENOMEM;
	return obj;
}

/* The free checks of F (under list_lock): obj is a slot of slab, the slab
 * has objects in use, and obj is not on its freelist, which is a chain of
 * valid slots as long as the free count. */
static void debug_check_free_call(const struct pc_cache *s, struct pc_page *slab, uint8_t *obj)
{
	uint64_t cnt = pc_load_relaxed(&slab_word(slab)->word);
	uint32_t objects = PC_SLAB_OBJECTS(cnt), k = 0;
	if (slab->owner != s || !debug_valid_pointer(s, slab, obj))
		slab_debug_bug(s, slab, obj, "Invalid object pointer", NULL, NULL, 0);
	for (void *o = pc_load_relaxed(&slab_word(slab)->ptr); o; o = slab_next(s, o), k++) {
		if (o == obj)
			slab_debug_bug(s, slab, obj, "Object already free", NULL, NULL, 0);
		if (k >= objects || !debug_valid_pointer(s, slab, o) || slab_is_fresh(slab, cnt, o))
			slab_debug_bug(s, slab, obj, "Freechain corrupt", NULL, NULL, 0);
	}
	if (PC_SLAB_FROZEN(cnt) || PC_SLAB_INUSE(cnt) == 0 ||
	    k != objects - PC_SLAB_INUSE(cnt) - PC_SLAB_FRESH(cnt))
		slab_debug_bug(s, slab, obj, "Wrong object count", NULL, NULL, 0);
}

/* Whatever the flags: the double-free check every cache has by default
 * (slab.h, "Double frees"), which a debug cache would otherwise lose with
 * its sheaves: obj is not first or second on its slab's freelist (where the
 * object freed last on this node is: debug_free puts its slab first), not
 * fresh (never handed out: free), and the slab has an object in use (else
 * the counters would wrap). */
static void debug_check_free_always(const struct pc_cache *s, struct pc_page *slab, uint8_t *obj)
{
	void *head = pc_load_relaxed(&slab_word(slab)->ptr);
	uint64_t cnt = pc_load_relaxed(&slab_word(slab)->word);
	if (obj == head || (head && slab_next(s, head) == obj) || PC_SLAB_INUSE(cnt) == 0 ||
	    slab_is_fresh(slab, cnt, obj))
		slab_debug_bug(s, slab, obj, "Object already free", NULL, NULL, 0);
}

/* The red zone of an object being freed: active (Z). All inactive is a
 * second free (caught by F first when F is on). */
static void debug_check_redzone_on_free(const struct pc_cache *s, struct pc_page *slab,
					uint8_t *obj)
{
	uint8_t *zone = obj + s->object_size;
	size_t n = s->inuse - s->object_size;
	if (!debug_find_not(zone, n, DEBUG_RED_INACTIVE))
		slab_debug_bug(s, slab, obj, "Object already free", NULL, NULL, 0);
	size_t requested = *debug_requested(s, obj);
	if (requested > s->object_size)
		slab_debug_bug(s, slab, obj, "Requested size corrupt", NULL, NULL, 0);
	debug_check_bytes(s, slab, obj, "kmalloc Redzone overwritten", obj + requested,
			  s->object_size - requested, DEBUG_RED_ACTIVE);
	debug_check_bytes(s, slab, obj, "Right Redzone overwritten", zone, n, DEBUG_RED_ACTIVE);
}

void slab_debug_free(struct pc_cache *s, struct pc_page *slab, void *obj)
{
	uintptr_t caller = s->debug & PC_SLUB_DEBUG_U ? os_caller_outside_self() : 0;
	struct pc_cache_node *n = slab_node(s, slab);
	struct pc_dword *w = slab_word(slab);
	sheaf_enter();
	pc_lock_acquire(&n->list_lock);
	debug_check_free_always(s, slab, obj);
	if (s->debug & PC_SLUB_DEBUG_F)
		debug_check_free_call(s, slab, obj);
	if (s->debug & PC_SLUB_DEBUG_Z)
		debug_check_redzone_on_free(s, slab, obj);
	if (s->debug & PC_SLUB_DEBUG_T)
		slab_debug_trace(s, slab, obj, false);
	debug_set_track(s, obj, PC_TRACK_FREE, caller);
	debug_mark_free(s, obj);
	void *prior = pc_load_relaxed(&w->ptr);
	uint64_t cnt = pc_load_relaxed(&w->word);
	slab_set_next(s, obj, prior);
	bool ok = pc_dcas(w, prior, cnt, obj, cnt - 1);
	pc_assert_internal(ok);
	(void)ok;
	if (!prior && PC_SLAB_FRESH(cnt) == 0)
		slab_partial_add(n, slab); /* it was full */
	/* First on the list: the object freed last is the next one handed out
	 * on this node (LIFO, as the sheaves), so a write after free shows at
	 * the next allocation of the cache. */
	pc_list_del(&slab->list);
	pc_list_add(&slab->list, &n->partial);
	bool discard = PC_SLAB_INUSE(cnt) == 1 && pc_load_relaxed(&n->nr_partial) > slab_min_partial(s);
	if (discard)
		slab_partial_del(n, slab);
	slab_stat(&s->cpu[os_cpu_current()], PC_SLAB_STAT_free_slowpath);
	pc_lock_release(&n->list_lock);
	if (discard)
		slab_discard(s, slab);
	sheaf_leave();
}

void pc_slab_debug_bad_pointer(const char *func, const void *p)
{
	struct pc_page *slab = pc_slab_of(p);
	struct pc_cache *s = slab ? slab->owner : NULL;
	if (s && s->debug)
		slab_debug_bug_in(s, slab, (void *)(uintptr_t)p, "Invalid object pointer", NULL, NULL,
				  0, func, NULL);
}

void pc_slab_debug_set_size(struct pc_cache *s, void *obj, size_t size)
{
	if (!(s->debug & PC_SLUB_DEBUG_Z) || size > *debug_requested(s, obj))
		return;
	size_t *requested = debug_requested(s, obj);
	memset((char *)obj + size, DEBUG_RED_ACTIVE, *requested - size);
	*requested = size;
}

size_t pc_slab_debug_usable(struct pc_cache *s, void *obj)
{
	return s->debug & PC_SLUB_DEBUG_Z ? *debug_requested(s, obj) : s->object_size;
}
