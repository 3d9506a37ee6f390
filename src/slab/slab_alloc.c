/*
 * slab/slab_alloc.c - the allocation slow path: refilling a CPU's freelist
 * from its slab, its partial list, the node partial list or a new slab, and
 * retiring ("deactivating") CPU slabs.
 *
 * Everything here that touches a struct pc_cache_cpu runs under c->lock with
 * the CPU freelist word swapped to an odd tid (see slab.h), so no fast path
 * commits while c->slab changes.
 *
 * ---- Fresh objects ----------------------------------------------------------
 * slab_new writes a new slab's page descriptors but no byte of the slab:
 * its objects are all fresh (slab.h, the counters word), and the slab's
 * freelist is empty. Whoever takes a slab's freelist (slab_take_word: the
 * CPU that has the slab frozen, under c->lock, or the list_lock holder that
 * freezes a node partial slab; debug.c's debug_take under list_lock) takes
 * the freelist if it has objects (they were handed out before: their pages
 * are touched already), and only when it is empty the next fresh objects,
 * in address order, as many as it wants, with the same compare-and-swap of
 * the slab word (fresh -= k, inuse += k). A new slab's first objects are
 * taken by refill_new with a plain store of the word, before any other
 * thread can know the slab. Nobody else takes fresh objects
 * and nothing adds to them, so the taker knows which they are: the k from
 * objects - fresh on. Then, with no list_lock held (the objects are the
 * taker's alone: counted in use, in a slab frozen for it), each is
 * constructed (ctor; as before under c->lock, never list_lock) and either put
 * straight into a sheaf's array (slab_alloc_bulk: nothing written) or
 * chained for the CPU freelist (slab_alloc_slow: a page's worth, at least
 * FRESH_CHAIN_MIN). So an object, and the page under it, is first written
 * when it is handed out: a program that uses a few objects of a slab
 * touches the pages under those only (docs/footprint.md, "Third round").
 * A slab may leave its CPU with fresh objects left (deactivation): it is
 * then "not full" (listed on its node) exactly as if they were on its
 * freelist, and an empty one goes back to the page allocator with its
 * fresh pages never touched.
 */
#include "slab.h"

#include <errno.h>

#include "../memcheck.h"

struct pc_cache_node *slab_node(struct pc_cache *s, struct pc_page *slab)
{
	return s->node[pc_page_region(slab)->zone->node];
}

/* Take the CPU freelist and make tid odd. Returns the old list; *tid is the
 * odd tid to publish from. Caller holds c->lock (only holders make it odd). */
static void *cpu_freelist_grab(struct pc_cache_cpu *c, uint64_t *tid)
{
	for (;;) {
		uint64_t t = pc_load_relaxed(&c->fl.word);
		void *fl = pc_load_relaxed(&c->fl.ptr);
		pc_assert_internal(!(t & 1));
		if (pc_dcas(&c->fl, fl, t, NULL, t + 1)) {
			*tid = t + 1;
			return fl;
		}
	}
}

/* Publish a new CPU freelist with an even tid. Cannot fail: while tid is
 * odd no fast path commits, and we hold the lock. The full barrier of the
 * compare-and-swap orders our c->slab store before the new tid. */
static void cpu_freelist_publish(struct pc_cache_cpu *c, uint64_t tid, void *fl)
{
	bool ok = pc_dcas(&c->fl, NULL, tid, fl, tid + 1);
	pc_assert_internal(ok);
	(void)ok;
}

/* A chain of fresh objects for the CPU freelist (slab_alloc_slow): a
 * page's worth, at least this many. */
#define FRESH_CHAIN_MIN 4

/* A new slab's objects of at least this size handed out into a sheaf
 * (refill_new) are prefetched for writing (their first line): the
 * program's first store into each is a miss (a new slab's were never
 * touched, and a whole slab's objects go back unwritten, barn.c "Whole
 * slabs"), and the next slow path's locked instruction waited for those
 * stores to complete (seed 002's Test A at 1-8 KiB, docs/sheaves.md);
 * prefetched when the sheaf is filled, the misses overlap. Smaller objects
 * share lines and pages, which the hardware prefetches. Only there: in
 * fresh_hand_out, inlined four times, it made the text that programs
 * enter first too long (cmake/hot-text.ld). */
#define FRESH_PREFETCH_SIZE 1024

/* The k fresh objects of slab from index `first` on, just taken: each
 * constructed, then put into out[0..k), or, with out NULL, chained in
 * address order (the head returned). Inline, as slab_take below: with the
 * prefetch the compiler made it a function of its own, in the cold text,
 * and every program faulted a window of that in (peak RSS +40-48 kB,
 * bench_small and bench_larson). */
PC_INLINE void *fresh_hand_out(struct pc_cache *s, struct pc_page *slab, uint32_t first, uint32_t k,
			    void **out)
{
	char *obj = (char *)pc_page_address(slab) + (size_t)first * s->size;
	void *head = obj;
	for (uint32_t i = 0; i < k; i++, obj += s->size) {
		if (s->ctor)
			s->ctor(obj);
		if (out)
			out[i] = obj;
		else
			slab_set_next(s, obj, i + 1 < k ? obj + s->size : NULL);
	}
	return out ? NULL : head;
}

/* A slab's counters after k of its `fresh` fresh objects are taken (every
 * object neither fresh nor left fresh is in use), frozen or not. */
static uint64_t slab_word_taken(uint32_t objects, uint32_t fresh, uint32_t k, bool frozen)
{
	return PC_SLAB_COUNTERS(objects - (fresh - k), objects, frozen) |
	       PC_SLAB_FRESH_WORD(fresh - k);
}

/*
 * Take free objects of a slab the caller may take them from ("Fresh
 * objects" above; a frozen slab, or with freeze, a node partial slab under
 * list_lock, which this freezes), in the slab word alone: its whole
 * freelist when it has one (returned; *n set to 0), else up to *n fresh
 * objects (*n set to how many, *first to the index of the first), which
 * are the caller's from then on but not yet handed out (fresh_hand_out:
 * the constructor, the first writes, possibly page faults; a caller that
 * holds list_lock does that after dropping it). The taken objects count as
 * in use. Returns NULL with *n == 0 when the slab is full.
 */
static void *slab_take_word(struct pc_page *slab, bool freeze, unsigned *n, uint32_t *first)
{
	struct pc_dword *w = slab_word(slab);
	for (;;) {
		void *fl = pc_load_relaxed(&w->ptr);
		uint64_t cnt = pc_load_relaxed(&w->word);
		uint32_t objects = PC_SLAB_OBJECTS(cnt), fresh = PC_SLAB_FRESH(cnt);
		pc_assert_internal(freeze || PC_SLAB_FROZEN(cnt));
		if (!fl && fresh == 0) {
			/* Full: nothing to take, and nothing to change (the
			 * compare-and-swap would store what it read). Only the
			 * owner's CPU slab: a node partial slab has a free object. */
			pc_assert_internal(!freeze);
			*n = 0;
			return NULL;
		}
		uint32_t k = fl ? 0 : PC_MIN(fresh, (uint32_t)*n);
		if (!pc_dcas(w, fl, cnt, NULL, slab_word_taken(objects, fresh, k, true)))
			continue; /* a remote free came: it is on the freelist now */
		*n = k;
		*first = PC_SLAB_FIRST_FRESH(cnt);
		return fl;
	}
}

/* slab_take_word, then the fresh objects handed out: into out[], or
 * chained and returned when out is NULL. For callers that hold no
 * list_lock (c->lock only). Inline: refill's three calls would otherwise
 * make it a function of its own, outside the text that programs enter
 * first (cmake/hot-text.ld), and every program's first allocation would
 * fault in a page of the cold text for it. */
PC_INLINE void *slab_take(struct pc_cache *s, struct pc_page *slab, void **out, unsigned *n)
{
	uint32_t first;
	void *fl = slab_take_word(slab, false, n, &first);
	return *n ? fresh_hand_out(s, slab, first, *n, out) : fl;
}

/* How many fresh objects slab_alloc_slow chains for the CPU freelist. */
static unsigned fresh_chain_length(const struct pc_cache *s)
{
	return (unsigned)PC_MAX((size_t)FRESH_CHAIN_MIN, PC_PAGE_SIZE / s->size);
}

/* Freeze a node partial slab (it keeps its freelist). Under list_lock. */
static void slab_freeze(struct pc_page *slab)
{
	struct pc_dword *w = slab_word(slab);
	for (;;) {
		void *fl = pc_load_relaxed(&w->ptr);
		uint64_t cnt = pc_load_relaxed(&w->word);
		if (pc_dcas(w, fl, cnt, fl, cnt | PC_SLAB_COUNTERS(0, 0, 1)))
			return;
	}
}

void slab_partial_del(struct pc_cache_node *n, struct pc_page *slab)
{
	pc_lock_assert_held(&n->list_lock);
	pc_list_del(&slab->list);
	slab->flags &= (uint8_t)~PC_SLAB_ON_PARTIAL;
	pc_store_relaxed(&n->nr_partial, pc_load_relaxed(&n->nr_partial) - 1);
}

/*
 * Take slabs from node n's partial list: the first becomes the CPU slab (its
 * freelist returned, or fresh objects, handed out once list_lock is
 * dropped: as slab_take with out and *k), more go
 * frozen onto the CPU partial list until it holds half of cpu_partial, as
 * SLUB does. Returns false (nothing taken) if the list is empty.
 */
static bool get_partial_node(struct pc_cache *s, struct pc_cache_cpu *c, struct pc_cache_node *n,
			     void **fl, void **out, unsigned *k)
{
	struct pc_page *got = NULL;
	uint32_t first = 0;
	unsigned want = slab_cpu_partial(s) / 2;
	if (pc_load_relaxed(&n->nr_partial) == 0) /* racy peek saves a lock round trip */
		return false;
	pc_lock_acquire(&n->list_lock);
	while (!pc_list_empty(&n->partial)) {
		struct pc_page *slab = pc_list_first(&n->partial, struct pc_page, list);
		slab_partial_del(n, slab);
		if (!got) {
			/* A node partial slab has a free object (on its freelist
			 * or fresh): this takes some. */
			*fl = slab_take_word(slab, true, k, &first);
			pc_assert_internal(*fl || *k);
			pc_store_relaxed(&c->slab, slab);
			got = slab;
		} else {
			slab_freeze(slab);
			slab->list.next = (struct pc_list *)(void *)c->partial;
			c->partial = slab;
			c->nr_partial++;
		}
		if (c->nr_partial >= want)
			break;
	}
	pc_lock_release(&n->list_lock);
	/* Constructors and first writes with no list_lock held: the taken
	 * fresh objects are ours alone (frozen slab, counted in use). */
	if (got && *k)
		*fl = fresh_hand_out(s, got, first, *k, out);
	return got != NULL;
}

/* The node's own list first, then the other nodes'. */
static bool get_partial(struct pc_cache *s, struct pc_cache_cpu *c, unsigned node, void **fl,
			void **out, unsigned *k)
{
	unsigned want = *k;
	if (get_partial_node(s, c, s->node[node], fl, out, k))
		return true;
	for (unsigned i = 0; i < pc_node_count(); i++) {
		*k = want;
		if (i != node && get_partial_node(s, c, s->node[i], fl, out, k))
			return true;
	}
	*k = 0;
	return false;
}

/* Allocate a slab and write its page descriptors, not its memory: every
 * object fresh ("Fresh objects" above), the freelist empty, inuse 0,
 * unfrozen (refill_new then takes some). When the page allocator has no block of
 * the cache's order (memory fragmented and the OS refusing more), the slab
 * is made of the smallest order that holds one object instead, as SLUB
 * does: a cache's slabs may differ in order (a retune makes them so too),
 * every page carries its own slab's order, mask and object count. */
struct pc_page *slab_new(struct pc_cache *s, unsigned node, struct pc_cache_cpu *locked)
{
	uint64_t oo = pc_load_relaxed(&s->oo);
	unsigned order = (unsigned)(oo >> 32), objects = (unsigned)oo;
	char *mem = pc_alloc_pages_node(order, node);
	if (!mem) {
		unsigned min = pc_slab_order_for_bytes(s->size); /* SLUB's oo_min */
		if (min >= order || !(mem = pc_alloc_pages_node(min, node)))
			return NULL;
		order = min;
		objects = (unsigned)((PC_PAGE_SIZE << order) / s->size);
	}
	struct pc_page *slab = pc_page_of_owned(mem);
	/* Every page: what free's fast path reads from an object's own page
	 * (slab.h, the comment above pc_slab_slot_index), before the head's
	 * state (release) says it is a slab. */
	for (size_t i = 0; i < ((size_t)1 << order); i++) {
		slab[i].owner = s;
		slab[i].aux = (uint32_t)((PC_PAGE_SIZE << order) - 1); /* the slot test's mask */
		slab[i].slot_inverse = (uint32_t)s->slot_inverse; /* odd^-1 mod 2^32 */
		slab[i].slot_shift = s->slot_shift;
		slab[i].slot_objects = objects;
		if (i != 0)
			pc_pg_set_state(&slab[i], PC_PG_TAIL);
	}
	slab->flags = 0;
	pc_pg_set_order(slab, order);
	pc_pg_set_state(slab, PC_PG_SLAB); /* release: after the fields above */
	pc_vg_noaccess(mem, PC_PAGE_SIZE << order); /* until objects are handed out */
	pc_store_relaxed(&slab_word(slab)->ptr, NULL);
	pc_store_relaxed(&slab_word(slab)->word, slab_word_taken(objects, objects, 0, false));
	if (locked) {
		/* A load and a store: every slab_new of a cache without
		 * slub_debug runs under the c->lock of the CPU it counts on
		 * (refill), and a debug cache's never does (s->debug is fixed
		 * at creation); a locked add here waited for the descriptor
		 * stores above to drain (Test D: most of slab_new's samples). */
		pc_spin_assert_held(&locked->lock);
		pc_assert_internal(!s->debug);
		pc_store_relaxed(&locked->slabs_made, pc_load_relaxed(&locked->slabs_made) + 1);
		pc_store_relaxed(&locked->objects_made,
				 pc_load_relaxed(&locked->objects_made) + (long)objects);
	} else {
		pc_assert_internal(s->debug);
		struct pc_cache_cpu *c = &s->cpu[os_cpu_current()]; /* this CPU's line */
		pc_add_relaxed(&c->slabs_made, 1);
		pc_add_relaxed(&c->objects_made, (long)objects);
	}
	return slab;
}

/* An empty slab counted gone already: its pages back to the page allocator
 * (slab_discard and slab_discard_chain share it). */
SLAB_TEXT_WITH(slab_discard) static void
slab_give_back(struct pc_cache *s, struct pc_cache_cpu *c, struct pc_page *slab)
{
	unsigned order = pc_pg_order(slab);
	/* free's fast path takes a page with a non-zero slot_objects for a
	 * slab page without testing its state (malloc.h small_slab): every page
	 * goes back with 0 there, so a stale pointer into it is refused. */
	for (size_t i = 0; i < ((size_t)1 << order); i++)
		slab[i].slot_objects = 0;
	for (size_t i = 1; i < ((size_t)1 << order); i++)
		pc_pg_set_state(&slab[i], PC_PG_NONE);
	slab->owner = NULL;
	slab_stat(c, PC_SLAB_STAT_slab_free);
	pc_free_pages(pc_page_address(slab), order);
}

/* Return an empty, unlisted, unfrozen slab to the page allocator. */
void slab_discard(struct pc_cache *s, struct pc_page *slab)
{
	struct pc_cache_cpu *c = &s->cpu[os_cpu_current()];
	/* Release: a reader whose acquire load sees this slab gone sees it
	 * made (slab_new's adds happen before: the slab came here from its
	 * maker through the allocator's own release/acquire hand-overs). */
	pc_add_release(&c->objects_gone, (long)PC_SLAB_OBJECTS(pc_load_relaxed(&slab_word(slab)->word)));
	pc_add_release(&c->slabs_gone, 1);
	slab_give_back(s, c, slab);
}

void (*_Atomic pc_slab_counts_test_hook)(struct pc_cache *s);

/*
 * The sums of the per-CPU counts (struct pc_cache_cpu): every CPU's slabs
 * given back first (acquire loads), then every CPU's slabs made. A slab's
 * make happens before its give-back, so a give-back this read sees has its
 * make seen by the later loads: the difference is never below 0, and is
 * off only by the slabs made (not given back) while it ran, counted in
 * excess. Read the other way round, or per CPU as a net count, a reader
 * that slept between two CPUs' counters missed the makes of slabs that it
 * saw given back, and the sum went below 0 (review of this change).
 */
void slab_counts(struct pc_cache *s, long *slabs, long *objects)
{
	uint32_t slabs_gone = 0, slabs_made = 0;
	long objects_gone = 0, objects_made = 0;
	for (unsigned c = 0; c < os_cpu_count(); c++) {
		slabs_gone += pc_load_acquire(&s->cpu[c].slabs_gone);
		objects_gone += pc_load_acquire(&s->cpu[c].objects_gone);
	}
	void (*hook)(struct pc_cache *) = pc_load_relaxed(&pc_slab_counts_test_hook);
	if (pc_unlikely(hook != NULL))
		hook(s);
	for (unsigned c = 0; c < os_cpu_count(); c++) {
		slabs_made += pc_load_relaxed(&s->cpu[c].slabs_made);
		objects_made += pc_load_relaxed(&s->cpu[c].objects_made);
	}
	*slabs = (long)(uint32_t)(slabs_made - slabs_gone);
	*objects = objects_made - objects_gone;
}

void slab_partial_add(struct pc_cache_node *n, struct pc_page *slab)
{
	pc_lock_assert_held(&n->list_lock);
	pc_list_add_tail(&slab->list, &n->partial);
	slab->flags |= PC_SLAB_ON_PARTIAL;
	pc_store_relaxed(&n->nr_partial, pc_load_relaxed(&n->nr_partial) + 1);
}

/*
 * Unfreeze a slab taken off a CPU: a full one just leaves (no list, no lock:
 * a later free re-freezes it onto that freeing CPU); otherwise, under
 * list_lock so that frees that need the lock see it listed, it goes to the
 * node partial list, or back to the page allocator if it is empty and the
 * node already keeps min_partial slabs. Returns the stat item it counts as.
 */
static enum pc_slab_stat unfreeze(struct pc_cache *s, struct pc_page *slab, struct pc_page **discard)
{
	struct pc_dword *w = slab_word(slab);
	struct pc_cache_node *n = slab_node(s, slab);
	bool locked = false;
	for (;;) {
		void *fl = pc_load_relaxed(&w->ptr);
		uint64_t cnt = pc_load_relaxed(&w->word);
		uint64_t thawed = cnt & ~PC_SLAB_COUNTERS(0, 0, 1);
		if (!fl && PC_SLAB_FRESH(cnt) == 0 && !locked) {
			if (pc_dcas(w, fl, cnt, fl, thawed))
				return PC_SLAB_STAT_deactivate_full;
			continue;
		}
		if (!locked) {
			pc_lock_acquire(&n->list_lock);
			locked = true;
			continue;
		}
		if (!pc_dcas(w, fl, cnt, fl, thawed))
			continue;
		enum pc_slab_stat item = PC_SLAB_STAT_deactivate_partial;
		if (PC_SLAB_INUSE(cnt) == 0 && pc_load_relaxed(&n->nr_partial) >= slab_min_partial(s)) {
			slab->list.next = (struct pc_list *)(void *)*discard;
			*discard = slab;
			item = PC_SLAB_STAT_deactivate_empty;
		} else {
			slab_partial_add(n, slab);
		}
		pc_lock_release(&n->list_lock);
		return item;
	}
}

/* As slab_discard for each, the counts added once for all of them (two
 * locked adds per slab were most of slab_discard's time: Test B at 8 KiB,
 * where a flush empties two slabs). */
void slab_discard_chain(struct pc_cache *s, struct pc_page *chain)
{
	if (!chain)
		return;
	struct pc_cache_cpu *c = &s->cpu[os_cpu_current()];
	long objects = 0;
	uint32_t slabs = 0;
	for (struct pc_page *p = chain; p; p = (struct pc_page *)(void *)p->list.next, slabs++)
		objects += (long)PC_SLAB_OBJECTS(pc_load_relaxed(&slab_word(p)->word));
	/* Release, as slab_discard's: each slab is counted gone before its
	 * pages go back. */
	pc_add_release(&c->objects_gone, objects);
	pc_add_release(&c->slabs_gone, slabs);
	while (chain) {
		struct pc_page *next = (struct pc_page *)(void *)chain->list.next;
		slab_give_back(s, c, chain);
		chain = next;
	}
}

/* Unfreeze a CPU partial list (linked through list.next), or one slab. */
void slab_unfreeze_partials(struct pc_cache *s, struct pc_page *list)
{
	struct pc_page *discard = NULL;
	while (list) {
		struct pc_page *next = (struct pc_page *)(void *)list->list.next;
		slab_stat(&s->cpu[os_cpu_current()], unfreeze(s, list, &discard));
		list = next;
	}
	slab_discard_chain(s, discard);
}

void slab_deactivate(struct pc_cache *s, struct pc_page *slab)
{
	slab->list.next = NULL; /* a one-slab list */
	slab_unfreeze_partials(s, slab);
}

/*
 * A new slab for CPU c, its first *n objects taken (at most all) with a
 * plain store of its word, no compare-and-swap: nobody else knows the slab
 * until its objects are handed out. When they all go into out[]
 * (a sheaf refill that wants a slab's worth or more), the slab is left
 * full and unfrozen, on no list, as a deactivated full slab, and does not
 * become c's slab: the next refill would only find it full and deactivate
 * it (two compare-and-swaps per slab saved; a later free freezes it onto
 * the freeing CPU's partial list, or empties it, as for any full slab).
 * Otherwise it becomes c's slab, frozen, with the rest fresh. Returns as
 * refill does. Inline, as slab_take, so that it stays inside refill (the
 * text that programs enter first, cmake/hot-text.ld).
 */
PC_INLINE void *refill_new(struct pc_cache *s, struct pc_cache_cpu *c, unsigned node,
			   void **out, unsigned *n)
{
	struct pc_page *slab = slab_new(s, node, c);
	if (!slab) {
		*n = 0;
		return NULL;
	}
	slab_stat(c, PC_SLAB_STAT_slab_alloc);
	struct pc_dword *w = slab_word(slab);
	uint32_t objects = PC_SLAB_OBJECTS(pc_load_relaxed(&w->word));
	uint32_t k = PC_MIN(objects, (uint32_t)*n);
	bool whole = out && k == objects;
	pc_store_relaxed(&w->word, slab_word_taken(objects, objects, k, !whole));
	if (!whole)
		pc_store_relaxed(&c->slab, slab);
	*n = k;
	if (out && s->size >= FRESH_PREFETCH_SIZE) /* a new slab's: never touched */
		for (uint32_t i = 0; i < k; i++)
			__builtin_prefetch((char *)pc_page_address(slab) + (size_t)i * s->size, 1, 3);
	return fresh_hand_out(s, slab, 0, k, out);
}

/*
 * Find free objects for CPU c, whose freelist is empty: the CPU slab's own
 * freelist (remote frees) or fresh objects, the CPU partial list, the node
 * partial lists, a new slab. Sets c->slab (none for a new slab taken
 * whole: refill_new). Returns a chain of objects, or
 * puts *n fresh objects into out[] (slab_take: *n is then how many, at least
 * 1); NULL with *n == 0 when out of memory.
 */
static void *refill(struct pc_cache *s, struct pc_cache_cpu *c, unsigned node, void **out,
		    unsigned *n)
{
	unsigned want = *n;
	struct pc_page *slab = pc_load_relaxed(&c->slab);
	void *fl;
	if (slab) {
		if ((fl = slab_take(s, slab, out, n)) != NULL || *n) {
			slab_stat(c, PC_SLAB_STAT_alloc_refill);
			return fl;
		}
		*n = want;
		pc_store_relaxed(&c->slab, NULL);
		slab_deactivate(s, slab);
	}
	if ((slab = c->partial) != NULL) {
		c->partial = (struct pc_page *)(void *)slab->list.next;
		c->nr_partial--;
		pc_store_relaxed(&c->slab, slab);
		fl = slab_take(s, slab, out, n);
		/* A CPU partial slab had a free object when it was frozen (on
		 * its freelist or fresh), and a frozen slab's free objects only
		 * grow but for its owner's takes. */
		pc_assert_internal(fl != NULL || *n);
		slab_stat(c, PC_SLAB_STAT_cpu_partial_alloc);
		return fl;
	}
	if (get_partial(s, c, node, &fl, out, n)) {
		slab_stat(c, PC_SLAB_STAT_alloc_from_partial);
		return fl;
	}
	*n = want;
	return refill_new(s, c, node, out, n);
}

void *slab_alloc_slow(struct pc_cache *s, struct pc_cache_cpu *c)
{
	pc_assert_internal(!s->debug); /* debug caches never reach the CPU slabs */
	uint64_t tid, t0 = pc_stats_clock();
	pc_spin_lock(&c->lock);
	void *obj = cpu_freelist_grab(c, &tid);
	if (!obj) {
		unsigned n = fresh_chain_length(s);
		obj = refill(s, c, pc_cpu_node((unsigned)(c - s->cpu)), NULL, &n);
	}
	cpu_freelist_publish(c, tid, obj ? slab_next(s, obj) : NULL);
	slab_stat(c, PC_SLAB_STAT_alloc_slowpath);
	pc_spin_unlock(&c->lock);
	pc_hist_add_since(&pc_slab_alloc_slow_ns, t0);
	if (!obj)
		errno = ENOMEM;
	return obj;
}

unsigned slab_alloc_bulk(struct pc_cache *s, void **out, unsigned n)
{
	struct pc_cache_cpu *c = &s->cpu[os_cpu_current()];
	unsigned got = 0;
	uint64_t tid;
	pc_spin_lock(&c->lock);
	void *fl = cpu_freelist_grab(c, &tid);
	while (got < n) {
		if (!fl) {
			/* Fresh objects go straight into out[]: none is written. */
			unsigned k = n - got;
			fl = refill(s, c, pc_cpu_node((unsigned)(c - s->cpu)), out + got, &k);
			got += k;
			if (!fl) {
				if (k == 0)
					break; /* out of memory */
				continue;
			}
		}
		out[got++] = fl;
		fl = slab_next(s, fl);
	}
	cpu_freelist_publish(c, tid, fl);
	slab_stat(c, PC_SLAB_STAT_alloc_slowpath);
	pc_spin_unlock(&c->lock);
	return got;
}

/* Give everything CPU c holds back to the slabs and nodes. Caller holds
 * c->lock. Objects on the CPU freelist all belong to the CPU slab. */
void slab_flush_cpu(struct pc_cache *s, struct pc_cache_cpu *c)
{
	uint64_t tid;
	void *fl = cpu_freelist_grab(c, &tid);
	struct pc_page *slab = pc_load_relaxed(&c->slab);
	if (slab) {
		if (fl) {
			uint32_t k = 1, objects = PC_SLAB_OBJECTS(pc_load_relaxed(&slab_word(slab)->word));
			void *tail = fl;
			for (void *o = slab_next(s, fl); o; o = slab_next(s, o), k++) {
				if (pc_unlikely(k >= objects)) /* a cycle: an object freed twice */
					pc_slab_double_free(s, o);
				tail = o;
			}
			struct pc_dword *w = slab_word(slab);
			for (;;) {
				void *prior = pc_load_relaxed(&w->ptr);
				uint64_t cnt = pc_load_relaxed(&w->word);
				slab_set_next(s, tail, prior);
				if (pc_dcas(w, prior, cnt, fl, cnt - k))
					break;
			}
		}
		pc_store_relaxed(&c->slab, NULL);
		slab_deactivate(s, slab);
	}
	struct pc_page *partial = c->partial;
	c->partial = NULL;
	c->nr_partial = 0;
	slab_unfreeze_partials(s, partial);
	cpu_freelist_publish(c, tid, NULL);
}

long slab_cpu_freelist_count(struct pc_cache *s, struct pc_cache_cpu *c)
{
	uint64_t tid;
	void *fl = cpu_freelist_grab(c, &tid);
	long n = 0;
	for (void *o = fl; o; o = slab_next(s, o))
		n++;
	cpu_freelist_publish(c, tid, fl);
	return n;
}
