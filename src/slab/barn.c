/*
 * slab/barn.c - sheaves as objects: where their memory comes from, giving
 * their objects back to the slabs, and the per-node barns that keep whole
 * full and empty sheaves between CPUs (or threads). See slab.h, "Sheaves".
 *
 * Sheaf memory comes from internal caches, one per power-of-two capacity
 * (4 .. PC_SHEAF_MAX), created once before the first cache with sheaves.
 * They have no sheaves themselves and are used through the slab fast path
 * directly, so making a sheaf never recurses into the sheaf slow paths.
 *
 * barn->lock protects the two lists, their counts, the bound (extra,
 * refused, low, charged) and the carry, and nothing else: no other lock
 * is taken under it, and flushing a sheaf into the slabs happens after it
 * is released.
 *
 * The bound. The full list of a barn holds at most slub.barn_sheaves +
 * extra sheaves, the empty list slub.barn_sheaves (empty sheaves are cheap
 * to make again); both counted in sheaves of the default capacity, so
 * scaled down for a capacity grown past it (barn_scale; sheaf.c, "Past the
 * default"). A program that frees many objects and then allocates
 * them again (seed 002's Test A: 10,000 objects are 78 sheaves of 128)
 * needs more full sheaves than the base bound keeps: the rest were flushed
 * to the slabs, and each round built its slabs and sheaves again. So the
 * bound follows demand, as tcmalloc sizes its transfer caches by their
 * misses: a full sheaf refused at the bound counts in `refused`, and a miss
 * (a CPU wants a full sheaf and the barn has none, so it refills from the
 * slabs) while refused is non-zero raises extra by one and uses one up: the
 * barn would have served that miss had it kept the sheaf. Each raise is
 * charged to one budget for the whole process (barn_budget: slub.barn_max_kb,
 * by default 4 MiB while the release thread runs and 1 MiB without it),
 * at a full sheaf's size (its objects' slots and its pointer array): growth
 * stops when the raised barns of all caches together would pass it, so a
 * program whose phases use many sizes keeps at most that much beyond the
 * base bounds, and a lowered budget applies at once (every raise is
 * ignored while the charge is above it). Each decay pass lowers extra by
 * `low`, the fewest full sheaves the barn held at any moment since its
 * previous look (sheaves that stayed through a whole interval were not
 * needed: the low-water mark of jemalloc's thread cache and tcmalloc's
 * transfer cache), then halves what is left if the barn refused nothing
 * in that interval (demand is over, or met: a loop that still needs it
 * raises it again at once), flushes the sheaves above the new bound, and
 * forgets refused; a barn nobody used for a whole interval is emptied and
 * its bound reset, as is every barn that barn_drain empties (trim, shrink,
 * the out-of-memory retry, a capacity change). Decay passes run from slow
 * paths or the release thread only: an idle program without the release
 * thread keeps its raises until its next slow path or trim, which is why
 * the default budget is smaller then.
 */
#include "slab.h"

#define PC_BARN_MAX_SHEAVES 65536 /* raised sheaves per barn, whatever the budget allows */
#define SHEAF_BUCKETS 8 /* capacities 4, 8, .. 512 */
_Static_assert(4u << (SHEAF_BUCKETS - 1) == PC_SHEAF_MAX, "one bucket per power of two");

static struct pc_cache *sheaf_caches[SHEAF_BUCKETS]; /* written once (pc_once) */

static unsigned sheaf_bucket(unsigned capacity)
{
	unsigned b = 0;
	while ((4u << b) < capacity)
		b++;
	return b;
}

/* Once, from pc_cache_create (no lock held). */
bool sheaf_caches_init(void)
{
	for (unsigned b = 0; b < SHEAF_BUCKETS; b++) {
		if (sheaf_caches[b])
			continue; /* made by an earlier, failed attempt */
		char name[24];
		unsigned cap = 4u << b;
		os_format_u(name, sizeof(name), "sheaf-", cap, "");
		sheaf_caches[b] = slab_cache_create_internal(name,
							     sizeof(struct pc_sheaf) + cap * sizeof(void *));
		if (!sheaf_caches[b])
			return false;
	}
	return true;
}

struct pc_sheaf *sheaf_new(struct pc_cache *s, unsigned capacity)
{
	(void)s;
	struct pc_sheaf *sh = slab_alloc_fast(sheaf_caches[sheaf_bucket(capacity)]);
	if (!sh)
		return NULL;
	sh->count = 0;
	sh->capacity = capacity;
	sh->next = NULL;
	return sh;
}

void sheaf_free(struct pc_sheaf *sh)
{
	struct pc_cache *sc = sheaf_caches[sheaf_bucket(sh->capacity)];
	slab_free_fast(sc, pc_slab_of(sh), sh);
}

/*
 * Flushing a sheaf: its objects are grouped by slab into chains linked
 * through their free pointers, and each chain goes back with one
 * compare-and-swap of its slab's word (slab_free_bulk), as the kernel's
 * __kmem_cache_free_bulk builds a detached freelist per slab; one
 * slab_free_fast per object cost a locked cmpxchg16b each. A sheaf's
 * objects come in runs of a few slabs (freed in the order they were
 * allocated, and allocated from one slab at a time), so up to FLUSH_OPEN
 * chains are open at once; an object of another slab closes the oldest.
 * A slab may then get more than one chain: correct, only slower. An object
 * is matched to an open chain by address (each slab is one range of bytes;
 * an open chain's slab keeps its objects counted in use, so it cannot go
 * back and its range be reused during the flush), with no load:
 * pc_slab_of, whose descriptor loads (two for an object on a tail page)
 * were most of the loop's time (seed 002's Test B, 512 B), runs only for
 * the first object of each chain.
 *
 * Whole slabs. A chain whose slab is full and on no list when it opens,
 * with no more objects in use than the sheaf has left, may hold every
 * object in use of it (a burst of frees in allocation order: Test B): such
 * a chain is only counted, not linked, and when it closes with all of them
 * the slab goes back without a free pointer written (slab_free_whole); one
 * that closes short is linked then, from the sheaf's array between its
 * first object and the one that closed it (the objects of its range there
 * are its own: one chain per slab is open at a time).
 */
#define FLUSH_OPEN 4
#define FLUSH_MISSES 2 /* counted chains linked after all before a flush counts no more */
#define FLUSH_WHOLE_OBJECTS 32 /* the most objects per slab for counted chains */

void (*_Atomic pc_slab_flush_test_hook)(struct pc_cache *s, uint32_t i);

struct flush_chain {
	uintptr_t base, bytes; /* the slab's range; bytes 0: not open */
	struct pc_page *slab;
	void *head, *tail; /* linked: head != NULL (a chain has an object) */
	void *last;        /* its latest object (a double free's check) */
	uint32_t first, k; /* its first object's index in the run; objects */
	bool whole;        /* counted only, not linked (yet) */
};

/* One flush: the objects a[0..na) then b[0..n - na), as one run. */
struct flush {
	struct pc_cache *s;
	void **a, **b;
	uint32_t na, n;
	bool keep;       /* b's chains short at the end may stay */
	bool counted;    /* chains may be counted (flush_counts) */
	unsigned misses; /* counted chains that closed short before the end */
	struct pc_page *discard; /* whole slabs taken, for slab_discard_chain */
	struct flush_chain open[FLUSH_OPEN];
	unsigned oldest;
};

PC_INLINE void *flush_obj(const struct flush *f, uint32_t i)
{
	return i < f->na ? f->a[i] : f->b[i - f->na];
}

PC_INLINE bool chain_has(const struct flush_chain *ch, void *obj)
{
	return (uintptr_t)obj - ch->base < ch->bytes;
}

/* Link a counted chain: the objects of its range in the run's [first, end). */
PC_INLINE void flush_chain_link(struct flush *f, struct flush_chain *ch, uint32_t end)
{
	for (uint32_t i = ch->first; i < end; i++) {
		void *obj = flush_obj(f, i);
		if (chain_has(ch, obj)) {
			slab_set_next(f->s, obj, ch->head);
			ch->head = obj;
		}
	}
	ch->tail = flush_obj(f, ch->first);
	ch->whole = false;
}

/* Close ch, open before the object at index end. */
SLAB_TEXT_WITH(sheaf_flush_objects) static void
flush_chain_close(struct flush *f, struct flush_chain *ch, uint32_t end)
{
	if (!ch->bytes)
		return;
	if (!(ch->whole && slab_free_whole(f->s, ch->slab, ch->k, &f->discard))) {
		if (ch->whole) {
			f->misses += end < f->n;
			flush_chain_link(f, ch, end);
		}
		slab_free_bulk(f->s, ch->slab, ch->head, ch->tail, ch->k);
	}
	ch->bytes = 0;
}

/* The oldest chain closed and reopened for the object at index i (once per
 * chain; flush_sheaves' four loops each call it). */
SLAB_TEXT_WITH(sheaf_flush_objects) static struct flush_chain *
flush_chain_open(struct flush *f, uint32_t i)
{
	void *obj = flush_obj(f, i);
	struct pc_page *slab = pc_slab_of(obj);
	/* A second copy of an object freed twice: its slab may have gone
	 * back to the page allocator with the first one. */
	if (pc_unlikely(!slab || slab->owner != f->s))
		pc_slab_double_free(f->s, obj);
	struct flush_chain *ch = &f->open[f->oldest];
	f->oldest = (f->oldest + 1) % FLUSH_OPEN;
	flush_chain_close(f, ch, i);
	void (*hook)(struct pc_cache *, uint32_t) = pc_load_relaxed(&pc_slab_flush_test_hook);
	if (pc_unlikely(hook != NULL))
		hook(f->s, i); /* tests: another CPU acts between two chains */
	uint32_t inuse = PC_SLAB_INUSE(pc_load_relaxed(&slab_word(slab)->word));
	*ch = (struct flush_chain){ .base = (uintptr_t)pc_page_address(slab),
				    .bytes = PC_PAGE_SIZE << pc_pg_order(slab),
				    .slab = slab,
				    .first = i,
				    .whole = f->counted && f->misses < FLUSH_MISSES &&
					     (inuse <= f->n - i || (f->keep && i >= f->na)) &&
					     slab_full_with(slab, inuse) };
	return ch;
}

/* Whether s's chains may be counted (whole slabs): slabs of few objects,
 * where the costs per slab weigh; with many (64 of 256 B), counting cost
 * more per object than it saved (Test B at 256 B). */
PC_INLINE bool flush_counts(struct pc_cache *s)
{
	return (uint32_t)pc_load_relaxed(&s->oo) <= FLUSH_WHOLE_OBJECTS;
}

/* The object at index i of the run to its chain; counted: f->counted, a
 * constant in each of flush_sheaves' loops. */
PC_INLINE void flush_add(struct flush *f, uint32_t i, void *obj, const bool counted)
{
	struct flush_chain *ch = NULL;
	for (unsigned j = 0; j < FLUSH_OPEN && !ch; j++)
		if (chain_has(&f->open[j], obj))
			ch = &f->open[j];
	if (!ch)
		ch = flush_chain_open(f, i);
	/* The first copy of an object freed twice is its chain's latest
	 * object already (a cycle otherwise). */
	if (pc_unlikely((counted ? ch->last : ch->head) == obj))
		pc_slab_double_free(f->s, obj);
	ch->k++;
	if (counted)
		ch->last = obj;
	if (!counted || !ch->whole) {
		if (!ch->head)
			ch->tail = obj;
		slab_set_next(f->s, obj, ch->head);
		ch->head = obj;
	}
}

/*
 * The carry. In a burst of frees the sheaves that reach the slabs hold
 * halves of slabs: main and spare trade half a sheaf when main fills
 * (sheaf.c, "Main and spare share"), so a full main that leaves holds the
 * bottom half of one run of frees and the top half of the next (seed 002's
 * Test B at 1 KiB: every slab came back in two chains, two flushes apart,
 * neither of them whole). So a flush from barn_put does not give back the
 * chains, opened in its own sheaf, that could still be whole but are
 * short at its end: their objects stay in that sheaf, which the barn keeps
 * as its carry, and the next such flush runs the carry's objects first
 * and its own after them, as one run, so that the rest of those slabs
 * finds them. A carried chain is given back at that next flush whole or
 * not (it is not carried twice), and every other way out of the barn
 * (barn_drain, each decay pass) flushes the carry. At most one sheaf per
 * barn, its objects counted with the barn's (barn_count_objects).
 */

/*
 * The kept chains' objects (sh's part of the run, from each chain's first
 * on) to sh's front, in their order (j <= i); sh->count set to how many.
 * Only from a chain's own first: objects of its slab's range before that
 * may have been another chain's, closed (evicted) and given back, and the
 * slab full again when the kept one opened because another CPU's refill
 * took back what that chain gave (review of slabfree, item 1: such an
 * object carried too was a double free at the next flush).
 */
PC_INLINE void flush_keep(struct flush *f, struct pc_sheaf *sh, struct flush_chain **kept,
			  unsigned nkept)
{
	uint32_t j = 0, from = f->n, want = 0;
	for (unsigned c = 0; c < nkept; c++) {
		from = PC_MIN(from, kept[c]->first);
		want += kept[c]->k;
	}
	for (uint32_t i = from - f->na; nkept && i < sh->count; i++)
		for (unsigned c = 0; c < nkept; c++)
			if (f->na + i >= kept[c]->first && chain_has(kept[c], sh->objects[i])) {
				sh->objects[j++] = sh->objects[i];
				break;
			}
	pc_assert_internal(j == want); /* exactly the kept chains' objects */
	(void)want;
	sh->count = j;
}

/*
 * Flush carry's objects (carry may be NULL) and sh's as one run. With
 * keep, the chains opened in sh's part that may be whole but are short at
 * the end stay in sh (moved to its front, sh->count set to how many);
 * everything else goes back. carry is left empty. One function for every
 * flush (inlined in both callers it made the hot text 11 kB longer).
 */
SLAB_TEXT_WITH(sheaf_flush_objects) static void
flush_sheaves(struct pc_cache *s, struct pc_sheaf *carry, struct pc_sheaf *sh, bool keep)
{
	slab_stat(&s->cpu[os_cpu_current()], PC_SLAB_STAT_sheaf_flush);
	struct flush f = { .s = s,
			   .a = carry ? carry->objects : NULL,
			   .b = sh->objects,
			   .na = carry ? carry->count : 0,
			   .keep = keep,
			   .counted = flush_counts(s) };
	f.n = f.na + sh->count;
	/* Four loops: the carry's objects, then sh's, each array walked by
	 * its own loop with its bounds in locals (f's address escapes into
	 * the chain helpers: read through f, they were loaded again after
	 * every free pointer stored; Test B at 256 B, review of slabfree,
	 * item 10), and each pair in two copies, with and without counted
	 * chains (flush_add inlined with a constant: without counts, for
	 * small objects, a cycle per object cheaper at 256 B). */
	void **a = f.a, **bo = f.b;
	uint32_t na = f.na, nb = sh->count;
	if (f.counted) {
		for (uint32_t i = 0; i < na; i++)
			flush_add(&f, i, a[i], true);
		for (uint32_t i = 0; i < nb; i++)
			flush_add(&f, na + i, bo[i], true);
	} else {
		for (uint32_t i = 0; i < na; i++)
			flush_add(&f, i, a[i], false);
		for (uint32_t i = 0; i < nb; i++)
			flush_add(&f, na + i, bo[i], false);
	}
	struct flush_chain *kept[FLUSH_OPEN];
	unsigned nkept = 0;
	for (unsigned j = 0; j < FLUSH_OPEN; j++) {
		struct flush_chain *ch = &f.open[j];
		if (keep && ch->bytes && ch->whole && ch->first >= f.na &&
		    !slab_full_with(ch->slab, ch->k))
			kept[nkept++] = ch;
		else
			flush_chain_close(&f, ch, f.n);
	}
	flush_keep(&f, sh, kept, nkept);
	if (carry)
		carry->count = 0;
	slab_discard_chain(s, f.discard);
}

void sheaf_flush_objects(struct pc_cache *s, struct pc_sheaf *sh)
{
	if (sh->count != 0)
		flush_sheaves(s, NULL, sh, false);
}

/* Swap b's carry for `next` (NULL: take it); returns the old one. */
SLAB_TEXT_WITH(barn_put) static struct pc_sheaf *
barn_carry_swap(struct pc_barn *b, struct pc_sheaf *next)
{
	if (!next && !pc_load_relaxed(&b->carry))
		return NULL; /* racy peek: no carry, no lock */
	pc_lock_acquire(&b->lock);
	struct pc_sheaf *old = pc_load_relaxed(&b->carry);
	pc_store_relaxed(&b->carry, next);
	pc_lock_release(&b->lock);
	return old;
}

/* Flush and free b's carry, if it has one. */
/* Only barn_drain and the decay run it: in the cold text. */
PC_NOINLINE static unsigned
barn_carry_drop(struct pc_cache *s, struct pc_barn *b)
{
	struct pc_sheaf *carry = barn_carry_swap(b, NULL);
	if (!carry)
		return 0;
	sheaf_flush_objects(s, carry);
	sheaf_free(carry);
	return 1;
}

/* Bytes of raised bounds charged by every barn together (each barn's
 * share in b->charged, changed under its lock): at most barn_budget_bytes(), but
 * for a budget lowered meanwhile (raises are then ignored, barn_bound, and
 * the next decay pass takes them back). Relaxed: a budget, read and
 * changed by compare-and-swap; nothing else is ordered by it. */
static _Atomic size_t barns_charged;

size_t pc_slab_barn_charged(void)
{
	return pc_load_relaxed(&barns_charged);
}

/* What one more full sheaf of s's current capacity costs: its objects'
 * slots and the sheaf itself. */
static size_t sheaf_bytes(struct pc_cache *s)
{
	/* A capacity grown past the default (sheaf.c): the bound counts
	 * default sheaves then (barn_bound), and so does the charge. */
	size_t cap = PC_MIN(pc_load_relaxed(&s->sheaf_capacity),
			    PC_MAX(pc_load_relaxed(&s->sheaf_capacity_max), 1u));
	return sizeof(struct pc_sheaf) + cap * (s->size + sizeof(void *));
}

/* slub.barn_max_kb in bytes; -1 (the default): 4 MiB while the release
 * thread does the passes (pc_page_release_thread_active: its decay passes
 * give an idle program's raises back), else 1 MiB (nothing gives them back
 * until the next slow path or trim). */
long barn_max_kb_resolved(void)
{
	return pc_page_release_thread_active() ? 4096 : 1024;
}

size_t barn_budget_bytes(void)
{
	long kb = pc_option(PC_OPT_SLUB_BARN_MAX_KB);
	return (size_t)(kb < 0 ? barn_max_kb_resolved() : kb) << 10;
}

/* Take bytes from the process's budget if it has them. */
static bool budget_take(size_t bytes)
{
	size_t cur = pc_load_relaxed(&barns_charged), most = barn_budget_bytes();
	do {
		if (cur + bytes > most)
			return false;
	} while (!pc_cas_weak_relaxed(&barns_charged, &cur, cur + bytes));
	return true;
}

/* A list's bound of n sheaves of the default capacity, in sheaves of the
 * current one: scaled down (rounded up) for a capacity grown past the
 * default (sheaf.c, "Past the default"), so that a barn keeps the bytes it
 * kept at the default: the full list's objects, its raised part included
 * (charged as default sheaves: sheaf_bytes), and the empty list's pointer
 * arrays. */
static unsigned barn_scale(struct pc_cache *s, unsigned n)
{
	uint32_t cap = pc_load_relaxed(&s->sheaf_capacity);
	uint32_t max = pc_load_relaxed(&s->sheaf_capacity_max);
	if (cap <= max || max == 0)
		return n;
	return (unsigned)(((uint64_t)n * max + cap - 1) / cap);
}

/* Sheaves b's full list (full) or empty list may hold now: slub.barn_sheaves,
 * and for the full list extra more, unless the charge is above the budget
 * (a budget lowered at run time, or 0: then the base alone, at once); both
 * scaled for a grown capacity (barn_scale). */
static unsigned barn_bound(struct pc_cache *s, struct pc_barn *b, bool full)
{
	unsigned base = (unsigned)pc_option(PC_OPT_SLUB_BARN_SHEAVES);
	if (!full || pc_load_relaxed(&barns_charged) > barn_budget_bytes() ||
	    barn_budget_bytes() == 0)
		return barn_scale(s, base);
	return barn_scale(s, base + pc_load_relaxed(&b->extra));
}

unsigned barn_limit(struct pc_cache *s, unsigned node)
{
	return barn_bound(s, s->barn[node], true);
}

/* Lower b's raised part to extra sheaves and give back the budget the rest
 * was charged, pro rata (rounded so that the barn keeps less, never more).
 * Each raise was charged at the capacity in force when it was made: a
 * tunable change empties every barn, which resets it, but a default
 * capacity that grows with demand (sheaf.c) does not, so raises made while
 * it was smaller were charged less than the sheaves the barn holds now;
 * the charge is an estimate then (at most the growth, max / start, below
 * the bytes held, for the few raises of a cache's first slow paths), and
 * it cannot drift: b->charged is given back exactly, and is 0 at a reset. */
static void barn_lower_locked(struct pc_barn *b, unsigned extra)
{
	pc_lock_assert_held(&b->lock);
	unsigned old = pc_load_relaxed(&b->extra);
	if (extra >= old)
		return;
	size_t keep = extra != 0 ? b->charged / old * extra : 0;
	pc_sub_relaxed(&barns_charged, b->charged - keep);
	b->charged = keep;
	pc_store_relaxed(&b->extra, extra);
}

/* A miss (no full sheaf for a CPU): raise the bound by one if a full sheaf
 * was refused since the decay's last look and the process's budget has
 * room for one more full sheaf. */
static void barn_grow_locked(struct pc_cache *s, struct pc_barn *b)
{
	pc_lock_assert_held(&b->lock);
	unsigned refused = pc_load_relaxed(&b->refused);
	if (refused == 0)
		return;
	pc_store_relaxed(&b->refused, refused - 1);
	unsigned extra = pc_load_relaxed(&b->extra);
	size_t bytes = sheaf_bytes(s);
	if (extra < PC_BARN_MAX_SHEAVES && budget_take(bytes)) {
		b->charged += bytes;
		pc_store_relaxed(&b->extra, extra + 1);
		slab_stat(&s->cpu[os_cpu_current()], PC_SLAB_STAT_barn_grow);
	}
}

/* A miss found without the lock (the racy peek saw no full sheaf). Racy
 * peek of refused first: with no recent refusal a miss costs no lock. */
static void barn_missed(struct pc_cache *s, struct pc_barn *b)
{
	if (pc_load_relaxed(&b->refused) == 0)
		return;
	pc_lock_acquire(&b->lock);
	barn_grow_locked(s, b);
	pc_lock_release(&b->lock);
}

/* Forget the bound's history (an emptied barn). */
static void barn_reset_locked(struct pc_barn *b)
{
	pc_lock_assert_held(&b->lock);
	barn_lower_locked(b, 0);
	pc_store_relaxed(&b->refused, 0);
	b->low = 0;
}

/* Pop the first sheaf of *list that has the cache's current capacity;
 * sheaves of an older capacity met on the way are unlinked onto *stale. */
static struct pc_sheaf *barn_pop(struct pc_sheaf **list, _Atomic unsigned *nr, unsigned capacity,
				 struct pc_sheaf **stale)
{
	while (*list) {
		struct pc_sheaf *sh = *list;
		*list = sh->next;
		pc_store_relaxed(nr, pc_load_relaxed(nr) - 1); /* under lock */
		if (sh->capacity == capacity)
			return sh;
		sh->next = *stale;
		*stale = sh;
	}
	return NULL;
}

/* Flush and free a chain of sheaves the caller holds alone. */
static void sheaf_chain_free(struct pc_cache *s, struct pc_sheaf *chain)
{
	while (chain) {
		struct pc_sheaf *next = chain->next;
		sheaf_flush_objects(s, chain);
		sheaf_free(chain);
		chain = next;
	}
}

static struct pc_sheaf *barn_take(struct pc_cache *s, unsigned node, bool full)
{
	struct pc_barn *b = s->barn[node];
	unsigned capacity = pc_load_relaxed(&s->sheaf_capacity);
	struct pc_sheaf *stale = NULL, *sh;
	/* Racy peek (see struct pc_barn): an empty barn costs no lock round trip. */
	if (pc_load_relaxed(full ? &b->nr_full : &b->nr_empty) == 0) {
		if (full)
			barn_missed(s, b);
		return NULL;
	}
	pc_lock_acquire(&b->lock);
	sh = full ? barn_pop(&b->full, &b->nr_full, capacity, &stale)
		  : barn_pop(&b->empty, &b->nr_empty, capacity, &stale);
	if (!sh && full)
		barn_grow_locked(s, b);
	if (full)
		b->low = PC_MIN(b->low, pc_load_relaxed(&b->nr_full));
	b->uses++;
	pc_lock_release(&b->lock);
	sheaf_chain_free(s, stale);
	if (sh) {
		sh->next = NULL;
		slab_stat(&s->cpu[os_cpu_current()], PC_SLAB_STAT_barn_get);
	}
	return sh;
}

struct pc_sheaf *barn_take_full(struct pc_cache *s, unsigned node)
{
	return barn_take(s, node, true);
}

struct pc_sheaf *barn_take_empty(struct pc_cache *s, unsigned node)
{
	return barn_take(s, node, false);
}

/* Push sh on a barn list if the bound allows; true if it did. A full sheaf
 * refused counts in refused (the bound's growth, above). */
static bool barn_push(struct pc_cache *s, struct pc_barn *b, struct pc_sheaf *sh, bool full)
{
	bool done = false;
	pc_lock_acquire(&b->lock);
	unsigned bound = barn_bound(s, b, full);
	_Atomic unsigned *nr = full ? &b->nr_full : &b->nr_empty;
	unsigned n = pc_load_relaxed(nr);
	if (n < bound) {
		struct pc_sheaf **list = full ? &b->full : &b->empty;
		sh->next = *list;
		*list = sh;
		pc_store_relaxed(nr, n + 1); /* under lock */
		b->uses++;
		done = true;
	} else if (full) {
		pc_store_relaxed(&b->refused, pc_load_relaxed(&b->refused) + 1);
	}
	pc_lock_release(&b->lock);
	return done;
}

/* An empty sheaf to b's empty list, or freed. */
SLAB_TEXT_WITH(barn_put) static void
barn_put_empty(struct pc_cache *s, struct pc_barn *b, struct pc_sheaf *sh)
{
	if (sh->capacity == pc_load_relaxed(&s->sheaf_capacity) && barn_push(s, b, sh, false))
		slab_stat(&s->cpu[os_cpu_current()], PC_SLAB_STAT_barn_put);
	else
		sheaf_free(sh);
}

void barn_put(struct pc_cache *s, unsigned node, struct pc_sheaf *sh)
{
	struct pc_barn *b = s->barn[node];
	if (sh->capacity != pc_load_relaxed(&s->sheaf_capacity)) {
		sheaf_flush_objects(s, sh);
		sheaf_free(sh);
		return;
	}
	if (sh->count == sh->capacity && barn_push(s, b, sh, true)) {
		slab_stat(&s->cpu[os_cpu_current()], PC_SLAB_STAT_barn_put);
		return;
	}
	if (sh->count == 0) {
		barn_put_empty(s, b, sh);
		return;
	}
	/* Partly filled, or no room for it: to the slabs, with the carry
	 * ("The carry" above). */
	struct pc_sheaf *carry = barn_carry_swap(b, NULL);
	flush_sheaves(s, carry, sh, true);
	if (sh->count != 0) {
		struct pc_sheaf *other = barn_carry_swap(b, sh);
		if (other) { /* another flush made one meanwhile: no carry of carries */
			sheaf_flush_objects(s, other);
			barn_put_empty(s, b, other);
		}
		sh = carry;
	} else if (carry) {
		barn_put_empty(s, b, carry);
	}
	if (sh)
		barn_put_empty(s, b, sh);
}

void barn_drain(struct pc_cache *s, unsigned node)
{
	struct pc_barn *b = s->barn[node];
	pc_lock_acquire(&b->lock);
	struct pc_sheaf *full = b->full, *empty = b->empty;
	b->full = b->empty = NULL;
	pc_store_relaxed(&b->nr_full, 0);
	pc_store_relaxed(&b->nr_empty, 0);
	barn_reset_locked(b);
	pc_lock_release(&b->lock);
	sheaf_chain_free(s, full);
	sheaf_chain_free(s, empty);
	barn_carry_drop(s, b);
}

/* Unlink sheaves from *list (count *nr) until it holds at most bound;
 * they go onto *out. */
static unsigned barn_cut_locked(struct pc_barn *b, struct pc_sheaf **list, _Atomic unsigned *nr,
				unsigned bound, struct pc_sheaf **out)
{
	pc_lock_assert_held(&b->lock);
	unsigned cut = 0;
	while (pc_load_relaxed(nr) > bound) {
		struct pc_sheaf *sh = *list;
		*list = sh->next;
		sh->next = *out;
		*out = sh;
		pc_store_relaxed(nr, pc_load_relaxed(nr) - 1);
		cut++;
	}
	return cut;
}

/*
 * Decay: a barn no sheaf came to or left since the previous pass (uses
 * unchanged) is emptied, if it holds any, and its bound reset (also when
 * it holds none: its raise and its share of the budget go). Else the bound
 * follows demand: extra falls by low (full sheaves that stayed the whole
 * interval), then by half if nothing was refused in the interval, and to
 * nothing while the budget is overdrawn (lowered at run time); sheaves
 * above the bounds are flushed, and refused and low start again.
 */
unsigned barn_decay(struct pc_cache *s, unsigned node)
{
	struct pc_barn *b = s->barn[node];
	struct pc_sheaf *full = NULL, *empty = NULL;
	unsigned n = 0;
	pc_lock_acquire(&b->lock);
	if (b->uses == b->decay_seen) {
		full = b->full;
		empty = b->empty;
		n = pc_load_relaxed(&b->nr_full) + pc_load_relaxed(&b->nr_empty);
		b->full = b->empty = NULL;
		pc_store_relaxed(&b->nr_full, 0);
		pc_store_relaxed(&b->nr_empty, 0);
		barn_reset_locked(b);
	} else {
		unsigned extra = pc_load_relaxed(&b->extra);
		extra -= PC_MIN(extra, b->low);
		if (pc_load_relaxed(&b->refused) == 0)
			extra /= 2;
		if (pc_load_relaxed(&barns_charged) > barn_budget_bytes())
			extra = 0;
		barn_lower_locked(b, extra);
		n += barn_cut_locked(b, &b->full, &b->nr_full, barn_bound(s, b, true), &full);
		n += barn_cut_locked(b, &b->empty, &b->nr_empty, barn_bound(s, b, false), &empty);
		pc_store_relaxed(&b->refused, 0);
		b->low = pc_load_relaxed(&b->nr_full);
	}
	b->decay_seen = b->uses;
	pc_lock_release(&b->lock);
	sheaf_chain_free(s, full);
	sheaf_chain_free(s, empty);
	return n + barn_carry_drop(s, b);
}

long barn_count_objects(struct pc_cache *s, unsigned node)
{
	struct pc_barn *b = s->barn[node];
	long n = 0;
	pc_lock_acquire(&b->lock);
	for (struct pc_sheaf *sh = b->full; sh; sh = sh->next)
		n += sh->count;
	struct pc_sheaf *carry = pc_load_relaxed(&b->carry);
	n += carry ? carry->count : 0;
	pc_lock_release(&b->lock);
	return n;
}
