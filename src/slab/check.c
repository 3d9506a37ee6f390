/*
 * slab/check.c - the invariant walker of a cache: every object is in exactly
 * one place (allocated, a CPU freelist, its slab's freelist, or fresh: the
 * slab's last `fresh` objects, never handed out), every slab's
 * counters and frozen/listed state agree with where the slab is, and the node
 * counts add up. Slow; only while no other thread uses the cache.
 *
 * The walker holds slab_mutex from its flush to its last look (destroy
 * holds it around the whole of its work), and so does every decay pass
 * (sheaf_decay.c): the decay flushes and shrinks caches that nobody uses,
 * so "no other thread uses the cache" alone would not keep it away, and a
 * pass's sheaves in flight to the slabs would look allocated, or its
 * shrink would move slabs under the walk.
 *
 * The node partial lists alone (check_node_locked) are consistent whenever
 * the node's list_lock is held. Expensive-assert builds (PC_DEBUG >= 3) run
 * that after each pc_cache_shrink pass and, for every cache, in a fork
 * child, and the whole walker at pc_cache_destroy (slab.h,
 * docs/reliability.md).
 */
#include "slab.h"

#define FAIL(...)                         \
	do {                              \
		pc_message(__VA_ARGS__);  \
		return -1;                \
	} while (0)

struct walk {
	struct pc_cache *s;
	uint8_t *seen;          /* one byte per object of the slab being walked */
	long slabs, objects, allocated;
};

/* Mark every object of a freelist chain; -1 if one is foreign or twice
 * (a fresh object, marked before, is then "twice": fresh and free). */
static long walk_chain(struct walk *w, struct pc_page *slab, void *head)
{
	char *base = pc_page_address(slab);
	unsigned objects = PC_SLAB_OBJECTS(pc_load_relaxed(&slab_word(slab)->word));
	long n = 0;
	for (char *o = head; o; o = slab_next(w->s, o), n++) {
		size_t off = (size_t)(o - base);
		if (o < base || off % w->s->size || off / w->s->size >= objects)
			FAIL("cache %s: free object %p is not a slot of its slab", w->s->name, (void *)o);
		if (w->seen[off / w->s->size]++)
			FAIL("cache %s: object %p is free twice", w->s->name, (void *)o);
	}
	return n;
}

/* Which CPU holds the slab, as CPU slab (1) or on its partial list (2). */
static int cpu_role(struct pc_cache *s, struct pc_page *slab, struct pc_cache_cpu **owner)
{
	for (unsigned c = 0; c < os_cpu_count(); c++) {
		*owner = &s->cpu[c];
		if (pc_load_relaxed(&s->cpu[c].slab) == slab)
			return 1;
		for (struct pc_page *p = s->cpu[c].partial; p; p = (struct pc_page *)(void *)p->list.next)
			if (p == slab)
				return 2;
	}
	return 0;
}

/* Every page of the slab, head and tails, holds what free's fast path reads
 * from an object's own page: the cache, the mask and the slot test's
 * inputs, as the cache and the slab word say (slab.h, pc_slab_slot_index). */
static long check_pages(struct pc_cache *s, struct pc_page *slab, unsigned objects)
{
	unsigned order = pc_pg_order(slab);
	for (size_t i = 0; i < ((size_t)1 << order); i++) {
		struct pc_page *pg = &slab[i];
		if (i != 0 && pc_pg_state(pg) != PC_PG_TAIL)
			FAIL("cache %s: page %zu of slab %p is in state %u, not a tail", s->name, i,
			     (void *)slab, pc_pg_state(pg));
		if (pg->owner != s || pg->aux != (uint32_t)((PC_PAGE_SIZE << order) - 1))
			FAIL("cache %s: page %zu of slab %p: owner %p, mask %#x", s->name, i,
			     (void *)slab, pg->owner, pg->aux);
		if (pg->slot_objects != objects || pg->slot_shift != s->slot_shift ||
		    pg->slot_inverse != (uint32_t)s->slot_inverse)
			FAIL("cache %s: page %zu of slab %p: slot test fields (%u objects, shift %u, "
			     "inverse %#x) disagree with its cache (%u, %u, %#x)", s->name, i,
			     (void *)slab, pg->slot_objects, pg->slot_shift, pg->slot_inverse,
			     objects, s->slot_shift, (uint32_t)s->slot_inverse);
	}
	return 0;
}

static long check_slab(struct walk *w, struct pc_page *slab)
{
	struct pc_cache *s = w->s;
	struct pc_cache_cpu *c = NULL;
	uint64_t cnt = pc_load_relaxed(&slab_word(slab)->word);
	void *fl = pc_load_relaxed(&slab_word(slab)->ptr);
	unsigned objects = PC_SLAB_OBJECTS(cnt);
	int role = cpu_role(s, slab, &c);

	if (check_pages(s, slab, objects) < 0)
		return -1;
	unsigned fresh = PC_SLAB_FRESH(cnt);
	if (fresh > objects)
		FAIL("cache %s: slab has %u fresh objects of %u", s->name, fresh, objects);
	for (unsigned i = 0; i < objects; i++)
		w->seen[i] = i >= PC_SLAB_FIRST_FRESH(cnt); /* fresh: on no chain */
	long on_slab = walk_chain(w, slab, fl);
	long on_cpu = role == 1 ? walk_chain(w, slab, pc_load_relaxed(&c->fl.ptr)) : 0;
	if (on_slab < 0 || on_cpu < 0)
		return -1;
	if (PC_SLAB_INUSE(cnt) != objects - on_slab - fresh)
		FAIL("cache %s: slab inuse %u but %ld of %u objects free, %u fresh", s->name,
		     PC_SLAB_INUSE(cnt), on_slab, objects, fresh);
	if (PC_SLAB_FROZEN(cnt) != (role != 0))
		FAIL("cache %s: slab frozen=%u but CPU role %d", s->name, PC_SLAB_FROZEN(cnt), role);
	bool listed = slab->flags & PC_SLAB_ON_PARTIAL;
	if (role && listed)
		FAIL("cache %s: a CPU's slab is on a node partial list", s->name);
	if (!role && !listed && (fl || fresh || PC_SLAB_INUSE(cnt) != objects))
		FAIL("cache %s: unlisted unfrozen slab is not full", s->name);
	if (listed && !fl && !fresh)
		FAIL("cache %s: node partial slab has no free object", s->name);
	w->slabs++;
	w->objects += objects;
	w->allocated += (long)objects - on_slab - on_cpu - fresh;
	return 0;
}

/*
 * Node n's partial list: every slab on it is flagged so, of this cache and
 * node, unfrozen and with a free object (on its freelist or fresh), and
 * nr_partial counts them. Holds
 * whenever n's list_lock is held (taking a slab off the list, freezing it
 * and allocating from it all need that lock; a remote free only adds free
 * objects), so it may run while other threads use the cache.
 */
static long check_node_locked(struct pc_cache *s, struct pc_cache_node *n)
{
	unsigned long count = 0;
	struct pc_list *it;
	pc_list_for_each(it, &n->partial) {
		struct pc_page *slab = pc_list_entry(it, struct pc_page, list);
		if (!(slab->flags & PC_SLAB_ON_PARTIAL) || slab->owner != s || slab_node(s, slab) != n)
			FAIL("cache %s: a node lists a slab that is not its partial slab", s->name);
		uint64_t cnt = pc_load_relaxed(&slab_word(slab)->word);
		if (PC_SLAB_FROZEN(cnt) || (!pc_load_relaxed(&slab_word(slab)->ptr) && !PC_SLAB_FRESH(cnt)))
			FAIL("cache %s: a node partial slab is frozen or has no free object", s->name);
		count++;
	}
	if (count != pc_load_relaxed(&n->nr_partial))
		FAIL("cache %s: node nr_partial %lu, list %lu", s->name,
		     pc_load_relaxed(&n->nr_partial), count);
	return 0;
}

/* Node lists: flags and counts agree; CPU partial lists: their counts. */
static long check_nodes(struct pc_cache *s)
{
	for (unsigned c = 0; c < os_cpu_count(); c++) {
		unsigned n = 0;
		for (struct pc_page *p = s->cpu[c].partial; p; p = (struct pc_page *)(void *)p->list.next)
			n++;
		if (n != s->cpu[c].nr_partial)
			FAIL("cache %s: CPU %u nr_partial %u, list %u", s->name, c, s->cpu[c].nr_partial, n);
	}
	for (unsigned i = 0; i < pc_node_count(); i++)
		if (check_node_locked(s, s->node[i]) < 0)
			return -1;
	return 0;
}

static long walk_zone(struct walk *w, struct pc_zone *z)
{
	long rc = 0;
	pc_page_reentry_enter(); /* a page lock: page.h, "Re-entry" */
	pc_lock_acquire(&z->lock); /* the region list */
	for (struct pc_region *r = z->regions; r && rc == 0; r = r->next)
		for (size_t i = 0; i < PC_REGION_PAGES && rc == 0; i++)
			if (pc_pg_state(&r->pages[i]) == PC_PG_SLAB && r->pages[i].owner == w->s)
				rc = check_slab(w, &r->pages[i]);
	pc_lock_release(&z->lock);
	pc_page_reentry_leave();
	return rc;
}

/* The walk, with slab_mutex held (no decay pass runs). */
static long cache_check_locked(struct pc_cache *s)
{
	slab_mutex_assert_held();
	struct walk w = { .s = s };
	sheaf_flush_cache(s); /* objects in sheaves are free: back to their slabs */
	slab_exclusive_test_hook(s);
	size_t scratch = pc_align_up(0x1000000, PC_PAGE_SIZE); /* objects per slab < 2^24 */
	w.seen = os_map(scratch, PC_PAGE_SIZE);
	if (!w.seen)
		FAIL("cache %s: no memory to check it", s->name);
	long rc = check_nodes(s);
	for (unsigned i = 0; rc == 0 && i < pc_zone_count(); i++)
		rc = walk_zone(&w, pc_zone_get(i));
	os_unmap(w.seen, scratch);
	if (rc < 0)
		return -1;
	long slabs, objects;
	slab_counts(s, &slabs, &objects);
	if (slabs != w.slabs || objects != w.objects)
		FAIL("cache %s: counts say %ld slabs/%ld objects, walk found %ld/%ld",
		     s->name, slabs, objects, w.slabs, w.objects);
	return w.allocated;
}

long pc_cache_check(struct pc_cache *s)
{
	bool take = !slab_mutex_held(); /* held: from a pc_cache_foreach callback */
	if (take)
		slab_mutex_lock();
	long rc = cache_check_locked(s);
	if (take)
		slab_mutex_unlock();
	return rc;
}

/* ---- the walkers at consistent points (PC_DEBUG >= 3) ------------------------------ */
#if PC_DEBUG >= 3
void slab_node_check_at_locked(struct pc_cache *s, struct pc_cache_node *n, const char *where)
{
	pc_lock_assert_held(&n->list_lock);
	if (check_node_locked(s, n) < 0)
		pc_fatal("cache %s: node partial list broken %s (see above)", s->name, where);
}

void pc_cache_check_at(struct pc_cache *s, const char *where)
{
	if (cache_check_locked(s) < 0)
		pc_fatal("cache %s: invariants broken %s (pc_cache_check: see above)", s->name, where);
}

static void check_nodes_of(struct pc_cache *s, void *where)
{
	for (unsigned i = 0; i < pc_node_count(); i++) {
		pc_lock_acquire(&s->node[i]->list_lock);
		slab_node_check_at_locked(s, s->node[i], where);
		pc_lock_release(&s->node[i]->list_lock);
	}
}

/*
 * In a fork child, after every layer's postfork handler (this entry ranks
 * above the witness's, whose fork window must be closed before locks are
 * taken again in rank order): the page allocator and every cache's node
 * partial lists, which were all frozen by the prefork handlers. Not the
 * whole caches: a free that another thread of the parent had half done
 * (its slab updated, not yet listed) is lost in the child, a leak that
 * pc_cache_check would call a broken slab.
 */
static void check_fork_child(void)
{
	pc_page_check_at("in a fork child");
	pc_cache_foreach(check_nodes_of, (void *)"in a fork child");
}

static const struct pc_life check_life = {
	.name = "check",
	.rank = PC_LIFE_RANK_CHECK,
	.postfork_child = check_fork_child,
};

static bool check_register_once(void)
{
	pc_life_register(&check_life);
	return true;
}

/* From slab_init (the first allocation may come before any constructor of
 * this library, tests/unit/malloc/fork_early.c) and from a constructor
 * (a program that forks before it allocates); registered once. */
void slab_check_register(void)
{
	static _Atomic uint32_t state;
	pc_once(&state, check_register_once);
}

__attribute__((constructor(102))) static void check_register(void)
{
	slab_check_register();
}
#endif /* PC_DEBUG >= 3 */
