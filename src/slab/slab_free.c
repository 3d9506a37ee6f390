/*
 * slab/slab_free.c - the free slow path: an object goes back onto its slab's
 * own freelist with one 16-byte compare-and-swap of (freelist, counters), as
 * SLUB's __slab_free. No lock in the common cases:
 *   - the slab is frozen (some CPU owns it): push, done;
 *   - the slab is on a node partial list and does not become empty: push;
 *   - the slab was full: freeze it and put it on this CPU's partial list
 *     (c->lock, per CPU, not the node's list_lock).
 * list_lock is taken only when an unfrozen slab becomes empty (it may go back
 * to the page allocator) or a full slab must be listed because CPU partial
 * lists are off (slub.cpu_partial = 0). It is taken before the
 * compare-and-swap, so the list state we then change matches the counters.
 * A slab with fresh objects (slab.h, the counters word) is not full, even
 * with an empty freelist: only one with neither is.
 */
#include "slab.h"

/* Add a frozen slab to this CPU's partial list; if the list is now longer
 * than cpu_partial, move the whole list to the node partial lists. */
static void put_cpu_partial(struct pc_cache *s, struct pc_page *slab)
{
	struct pc_cache_cpu *c = &s->cpu[os_cpu_current()];
	struct pc_page *drain = NULL;
	pc_spin_lock(&c->lock);
	slab->list.next = (struct pc_list *)(void *)c->partial;
	c->partial = slab;
	if (++c->nr_partial > slab_cpu_partial(s)) {
		drain = c->partial;
		c->partial = NULL;
		c->nr_partial = 0;
		slab_stat(c, PC_SLAB_STAT_cpu_partial_drain);
	}
	slab_stat(c, PC_SLAB_STAT_cpu_partial_free);
	/* Unfreezing takes list_lock: c->lock -> list_lock is the lock order. */
	slab_unfreeze_partials(s, drain);
	pc_spin_unlock(&c->lock);
}

/* Called with list_lock held, after the compare-and-swap: list or discard
 * an unfrozen slab whose free made it empty or took it out of the full
 * state; releases list_lock (hence _unlock: it drops the lock it was
 * handed, before a discard reaches the page allocator). */
static void settle_slab_unlock(struct pc_cache *s, struct pc_cache_node *n,
			       struct pc_page *slab, uint32_t inuse)
{
	pc_lock_assert_held(&n->list_lock);
	struct pc_cache_cpu *c = &s->cpu[os_cpu_current()];
	bool listed = slab->flags & PC_SLAB_ON_PARTIAL;
	if (inuse == 0 && pc_load_relaxed(&n->nr_partial) >= slab_min_partial(s)) {
		if (listed)
			slab_partial_del(n, slab);
		pc_lock_release(&n->list_lock);
		slab_stat(c, PC_SLAB_STAT_free_remove_partial);
		slab_discard(s, slab);
		return;
	}
	if (!listed) {
		slab_partial_add(n, slab);
		slab_stat(c, PC_SLAB_STAT_free_add_partial);
	}
	pc_lock_release(&n->list_lock);
}

void slab_double_free_report(const struct pc_cache *s, const void *obj)
{
	pc_slab_double_free(s, obj);
}

/*
 * The free of k objects of one slab, chained head -> ... -> tail through
 * their free pointers (tail's is overwritten): one compare-and-swap of the
 * slab word for all of them, as the kernel's __slab_free with a detached
 * freelist. The state changes are those of a single free whose inuse drops
 * by k: frozen, push; full, freeze onto this CPU's partial list; empty or
 * full with CPU partial lists off, under list_lock. slab_free_slow is the
 * case k == 1 (head == tail), compiled from the same body.
 */
PC_INLINE void free_chain(struct pc_cache *s, struct pc_page *slab, void *head, void *tail,
			  uint32_t k)
{
	pc_assert_internal(!s->debug); /* debug caches never reach the CPU slabs */
	struct pc_dword *w = slab_word(slab);
	struct pc_cache_node *n = NULL;
	uint64_t cnt;
	uint32_t inuse;
	bool freeze;

	for (;;) {
		void *prior = pc_load_relaxed(&w->ptr);
		cnt = pc_load_relaxed(&w->word);
		/* head already heads the freelist, fewer objects in use than
		 * we free, or head is fresh (never handed out, so free): a
		 * double free (slab.h, "Double frees"). */
		if (pc_unlikely(prior == head || PC_SLAB_INUSE(cnt) < k ||
				slab_is_fresh(slab, cnt, head)))
			pc_slab_double_free(s, head);
		inuse = PC_SLAB_INUSE(cnt) - k;
		bool was_full = !prior && PC_SLAB_FRESH(cnt) == 0;
		freeze = false;
		if (!PC_SLAB_FROZEN(cnt) && (inuse == 0 || was_full)) {
			if (was_full && inuse > 0 && slab_cpu_partial(s) > 0) {
				freeze = true;
			} else if (!n) {
				n = slab_node(s, slab);
				pc_lock_acquire(&n->list_lock);
				continue; /* re-read under the lock */
			}
		}
		slab_set_next(s, tail, prior);
		uint64_t updated = (cnt - k) | (freeze ? PC_SLAB_COUNTERS(0, 0, 1) : 0);
		if (pc_dcas(w, prior, cnt, head, updated))
			break;
		slab_stat(&s->cpu[os_cpu_current()], PC_SLAB_STAT_cmpxchg_slab_fail);
	}

	struct pc_cache_cpu *c = &s->cpu[os_cpu_current()];
	slab_stat_add(c, PC_SLAB_STAT_free_slowpath, k);
	if (pc_load_relaxed(&c->slab) != slab)
		slab_stat_add(c, PC_SLAB_STAT_free_remote, k);
	if (PC_SLAB_FROZEN(cnt)) {
		slab_stat_add(c, PC_SLAB_STAT_free_frozen, k);
		if (n) /* it was frozen by someone else after we locked */
			pc_lock_release(&n->list_lock);
		return;
	}
	if (freeze) {
		if (n)
			pc_lock_release(&n->list_lock);
		put_cpu_partial(s, slab);
	} else if (n) {
		settle_slab_unlock(s, n, slab, inuse);
	}
}

void slab_free_slow(struct pc_cache *s, struct pc_page *slab, void *obj)
{
	free_chain(s, slab, obj, obj, 1);
}

/*
 * Whole slabs (slab_free_whole): a flushed chain that holds every object in
 * use of a full slab on no list (seed 002's Test B: a burst of frees in
 * allocation order empties slab after slab; barn.c counts such chains
 * instead of linking them). Nobody else can reach such a slab: it is on no
 * list and no CPU's, and every object that could come back to it is in the
 * caller's hands, so its objects need no free pointer (each a store into
 * memory the program last touched, and a TLB miss per object at 4-8 KiB,
 * that the locked instructions which follow waited for) and no list_lock is
 * taken: one compare-and-swap checks the word atomically (slab_full_with's
 * two loads are a guess) and leaves it as a new slab's (every object fresh,
 * none in use), and the slab goes onto *discard, for the page allocator
 * (slab_discard_chain, after the flush: the counts added once). A node that
 * keeps fewer than min_partial slabs gets it through the ordinary path
 * (free_chain lists it). A double free that free_chain would catch (a chain
 * longer than the objects in use) makes the word differ, and takes that
 * path.
 */
SLAB_TEXT_WITH(slab_free_bulk) bool
slab_free_whole(struct pc_cache *s, struct pc_page *slab, uint32_t k, struct pc_page **discard)
{
	pc_assert_internal(!s->debug);
	struct pc_dword *w = slab_word(slab);
	uint64_t cnt = pc_load_relaxed(&w->word);
	uint32_t objects = PC_SLAB_OBJECTS(cnt);
	/* nr_partial read without list_lock (free_chain decides it under the
	 * lock): a race only lets the node keep one slab more or fewer than
	 * min_partial. */
	if (!slab_full_with(slab, k) ||
	    pc_load_relaxed(&slab_node(s, slab)->nr_partial) < slab_min_partial(s))
		return false;
	uint64_t empty = PC_SLAB_COUNTERS(0, objects, 0) | PC_SLAB_FRESH_WORD(objects);
	if (!pc_dcas(w, NULL, PC_SLAB_COUNTERS(k, objects, 0), NULL, empty))
		return false;
	struct pc_cache_cpu *c = &s->cpu[os_cpu_current()];
	slab_stat(c, PC_SLAB_STAT_free_bulk);
	slab_stat_add(c, PC_SLAB_STAT_free_slowpath, k);
	slab_stat_add(c, PC_SLAB_STAT_free_remote, k);
	slab_stat(c, PC_SLAB_STAT_free_remove_partial);
	slab->list.next = (struct pc_list *)(void *)*discard;
	*discard = slab;
	return true;
}

void slab_free_bulk(struct pc_cache *s, struct pc_page *slab, void *head, void *tail, uint32_t k)
{
	slab_stat(&s->cpu[os_cpu_current()], PC_SLAB_STAT_free_bulk);
	free_chain(s, slab, head, tail, k);
}
