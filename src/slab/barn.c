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
 * barn->lock protects the two lists and their counts and nothing else: no
 * other lock is taken under it, and flushing a sheaf into the slabs happens
 * after it is released.
 */
#include "slab.h"

#include <stdio.h>

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
		snprintf(name, sizeof(name), "sheaf-%u", cap);
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
 * A slab may then get more than one chain: correct, only slower.
 */
#define FLUSH_OPEN 4

struct flush_chain {
	struct pc_page *slab; /* NULL: not open */
	void *head, *tail;
	uint32_t k;
};

static void flush_chain_close(struct pc_cache *s, struct flush_chain *ch)
{
	if (ch->slab)
		slab_free_bulk(s, ch->slab, ch->head, ch->tail, ch->k);
	ch->slab = NULL;
}

/* The open chain of slab, or the oldest one closed and reopened for it. */
static struct flush_chain *flush_chain_of(struct pc_cache *s, struct flush_chain *open,
					  unsigned *oldest, struct pc_page *slab, void *obj)
{
	for (unsigned j = 0; j < FLUSH_OPEN; j++)
		if (open[j].slab == slab)
			return &open[j];
	struct flush_chain *ch = &open[*oldest];
	*oldest = (*oldest + 1) % FLUSH_OPEN;
	flush_chain_close(s, ch);
	*ch = (struct flush_chain){ .slab = slab, .head = NULL, .tail = obj, .k = 0 };
	return ch;
}

void sheaf_flush_objects(struct pc_cache *s, struct pc_sheaf *sh)
{
	if (sh->count == 0)
		return;
	slab_stat(&s->cpu[os_cpu_current()], PC_SLAB_STAT_sheaf_flush);
	struct flush_chain open[FLUSH_OPEN] = { { 0 } };
	unsigned oldest = 0;
	for (uint32_t i = 0; i < sh->count; i++) {
		void *obj = sh->objects[i];
		struct pc_page *slab = pc_slab_of(obj);
		/* A second copy of an object freed twice: its slab may have
		 * gone back to the page allocator with the first one; or it
		 * heads its slab's chain already (a cycle otherwise). */
		if (pc_unlikely(!slab || slab->owner != s))
			pc_slab_double_free(s, obj);
		struct flush_chain *ch = flush_chain_of(s, open, &oldest, slab, obj);
		if (pc_unlikely(ch->head == obj))
			pc_slab_double_free(s, obj);
		slab_set_next(s, obj, ch->head);
		ch->head = obj;
		ch->k++;
	}
	for (unsigned j = 0; j < FLUSH_OPEN; j++)
		flush_chain_close(s, &open[j]);
	sh->count = 0;
}

static unsigned barn_limit(void)
{
	return (unsigned)pc_option(PC_OPT_SLUB_BARN_SHEAVES);
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
	if (pc_load_relaxed(full ? &b->nr_full : &b->nr_empty) == 0)
		return NULL;
	pc_lock_acquire(&b->lock);
	sh = full ? barn_pop(&b->full, &b->nr_full, capacity, &stale)
		  : barn_pop(&b->empty, &b->nr_empty, capacity, &stale);
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

/* Push sh on a barn list if the bound allows; true if it did. */
static bool barn_push(struct pc_barn *b, struct pc_sheaf *sh, bool full)
{
	bool done = false;
	pc_lock_acquire(&b->lock);
	_Atomic unsigned *nr = full ? &b->nr_full : &b->nr_empty;
	unsigned n = pc_load_relaxed(nr);
	if (n < barn_limit()) {
		struct pc_sheaf **list = full ? &b->full : &b->empty;
		sh->next = *list;
		*list = sh;
		pc_store_relaxed(nr, n + 1); /* under lock */
		b->uses++;
		done = true;
	}
	pc_lock_release(&b->lock);
	return done;
}

void barn_put(struct pc_cache *s, unsigned node, struct pc_sheaf *sh)
{
	struct pc_barn *b = s->barn[node];
	struct pc_cache_cpu *c = &s->cpu[os_cpu_current()];
	if (sh->capacity == pc_load_relaxed(&s->sheaf_capacity)) {
		if (sh->count == sh->capacity && barn_push(b, sh, true)) {
			slab_stat(c, PC_SLAB_STAT_barn_put);
			return;
		}
		sheaf_flush_objects(s, sh); /* partly filled, or no room for it */
		if (barn_push(b, sh, false)) {
			slab_stat(c, PC_SLAB_STAT_barn_put);
			return;
		}
	}
	sheaf_flush_objects(s, sh);
	sheaf_free(sh);
}

void barn_drain(struct pc_cache *s, unsigned node)
{
	struct pc_barn *b = s->barn[node];
	pc_lock_acquire(&b->lock);
	struct pc_sheaf *full = b->full, *empty = b->empty;
	b->full = b->empty = NULL;
	pc_store_relaxed(&b->nr_full, 0);
	pc_store_relaxed(&b->nr_empty, 0);
	pc_lock_release(&b->lock);
	sheaf_chain_free(s, full);
	sheaf_chain_free(s, empty);
}

/* Decay: drain the barn if no sheaf came or went since the previous pass
 * (uses unchanged) and it holds some; else remember uses. */
unsigned barn_decay(struct pc_cache *s, unsigned node)
{
	struct pc_barn *b = s->barn[node];
	struct pc_sheaf *full = NULL, *empty = NULL;
	unsigned n = 0;
	pc_lock_acquire(&b->lock);
	if (b->uses == b->decay_seen && (b->full || b->empty)) {
		full = b->full;
		empty = b->empty;
		n = pc_load_relaxed(&b->nr_full) + pc_load_relaxed(&b->nr_empty);
		b->full = b->empty = NULL;
		pc_store_relaxed(&b->nr_full, 0);
		pc_store_relaxed(&b->nr_empty, 0);
	}
	b->decay_seen = b->uses;
	pc_lock_release(&b->lock);
	sheaf_chain_free(s, full);
	sheaf_chain_free(s, empty);
	return n;
}

long barn_count_objects(struct pc_cache *s, unsigned node)
{
	struct pc_barn *b = s->barn[node];
	long n = 0;
	pc_lock_acquire(&b->lock);
	for (struct pc_sheaf *sh = b->full; sh; sh = sh->next)
		n += sh->count;
	pc_lock_release(&b->lock);
	return n;
}
