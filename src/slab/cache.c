/*
 * slab/cache.c - creating, tuning, shrinking and destroying caches, the slab
 * order calculation, and the cache list.
 *
 * slab_mutex protects the cache list and serialises tunable changes. The
 * per-cache tunables (oo, min_partial, cpu_partial, sheaf_capacity) are
 * relaxed atomics: a
 * change applies to the next slab made or the next list decision, and every
 * slab records its own order and object count, so existing slabs stay valid.
 */
#include "slab.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../memcheck.h"

const char *const pc_slab_stat_names[PC_SLAB_STAT_COUNT] = {
#define PC_SLAB_STAT_NAME(name) #name,
	PC_SLAB_STATS(PC_SLAB_STAT_NAME)
#undef PC_SLAB_STAT_NAME
};

static struct pc_mutex slab_mutex;
static struct pc_list cache_list = { &cache_list, &cache_list };

void (*_Atomic pc_slab_exclusive_test_hook)(struct pc_cache *s);
struct pc_hist pc_slab_alloc_slow_ns, pc_sheaf_alloc_slow_ns;

/* Whether this thread holds slab_mutex (every acquisition goes through the
 * wrappers below, fork's included): lets pc_cache_check run from a
 * pc_cache_foreach callback, which already holds it. A hold counts in
 * sheaf_depth (sheaf_enter before the lock, sheaf_leave after it): a signal
 * handler that allocates meanwhile takes no lock, not even the first
 * allocation of a size class, which takes slab_mutex (slab.h, "Re-entry"). */
static __thread bool slab_mutex_mine __attribute__((tls_model("initial-exec")));

void slab_mutex_lock(void)
{
	sheaf_enter();
	pc_mutex_lock(&slab_mutex);
	slab_mutex_mine = true;
}

bool slab_mutex_trylock(void)
{
	/* A thread that holds it already (a decay pass from a slow path under
	 * pc_cache_foreach's callback) must not take it twice. */
	if (slab_mutex_mine)
		return false;
	sheaf_enter();
	if (!pc_mutex_trylock(&slab_mutex)) {
		sheaf_leave();
		return false;
	}
	slab_mutex_mine = true;
	return true;
}

void slab_mutex_unlock(void)
{
	slab_mutex_mine = false;
	pc_mutex_unlock(&slab_mutex);
	sheaf_leave();
}

bool slab_mutex_held(void) { return slab_mutex_mine; }

void slab_mutex_assert_held(void)
{
	pc_assert_internal(slab_mutex_mine);
}

void slab_exclusive_test_hook(struct pc_cache *s)
{
	void (*hook)(struct pc_cache *) = pc_load_relaxed(&pc_slab_exclusive_test_hook);
	if (pc_unlikely(hook != NULL))
		hook(s);
}

void slab_cache_foreach_locked(void (*fn)(struct pc_cache *s, void *arg), void *arg)
{
	slab_mutex_assert_held();
	struct pc_list *it;
	pc_list_for_each(it, &cache_list)
		fn(pc_list_entry(it, struct pc_cache, link), arg);
}

unsigned slab_cpu_partial(const struct pc_cache *s) { return pc_load_relaxed(&s->cpu_partial); }
unsigned slab_min_partial(const struct pc_cache *s) { return pc_load_relaxed(&s->min_partial); }

static unsigned fls_u(unsigned x) { return x ? pc_log2(x) + 1 : 0; }

static unsigned max_order_tunable(void)
{
	long v = pc_option(PC_OPT_SLUB_MAX_ORDER);
	return v >= 0 ? (unsigned)v : (os_cpu_count() >= 32 ? 4 : 3);
}

/* Computed defaults of the slub.* tunables (also shown by help). */
static long max_order_resolved(void) { return (long)max_order_tunable(); }
static long min_objects_resolved(void)
{
	long opt = pc_option(PC_OPT_SLUB_MIN_OBJECTS);
	return opt > 0 ? opt : 4L * (fls_u(os_cpu_count()) + 1);
}
static long sheaf_mode_resolved(void) { return sheaf_mode_get(); }
static long max_partial_resolved(void)
{
	long hi = pc_option(PC_OPT_SLUB_MAX_PARTIAL);
	return hi >= 0 ? hi : 10L * PC_MAX(1L, (long)os_cpu_count() / 16);
}

/* First order in [min_order, max_order] wasting at most 1/fract of a slab;
 * max_order + 1 if none does. */
static unsigned calc_slab_order(size_t size, unsigned min_order, unsigned max_order, unsigned fract)
{
	unsigned order;
	for (order = min_order; order <= max_order; order++) {
		size_t slab_size = PC_PAGE_SIZE << order;
		if (slab_size % size <= slab_size / fract)
			break;
	}
	return order;
}

/*
 * The objects a slab of size should hold: slub.min_objects when set; by
 * default SLUB's 4 * (fls(CPUs) + 1), but at least one full sheaf of the
 * class (slub.sheaf_capacity, or its default; none with sheaves off, nor
 * for a cache that has none: the sheaf caches and slub_debug caches). A
 * sheaf refill (slab_alloc_bulk) takes a slab's objects; with slabs
 * smaller than a sheaf each refill made and retired 2-4 slabs (256 B:
 * 16 per slab, 64 per sheaf), and each of those went back to the page
 * allocator once its objects were freed: seed 002's Tests A and D paid
 * a page allocation, slab_new and a discard every 16 objects
 * (docs/sheaves.md, "Slabs that hold a sheaf").
 */
static size_t min_objects_for(size_t size, bool sheaves)
{
	long opt = pc_option(PC_OPT_SLUB_MIN_OBJECTS);
	if (opt > 0)
		return (size_t)opt;
	if (!sheaves)
		return (size_t)min_objects_resolved();
	long cap = pc_option(PC_OPT_SLUB_SHEAF_CAPACITY);
	size_t sheaf = cap < 0 ? sheaf_default_capacity(size) : (size_t)cap;
	return PC_MAX((size_t)min_objects_resolved(), sheaf);
}

/*
 * SLUB's calculate_order: aim for at least min_objects objects per slab
 * (min_objects_for: more CPUs, bigger slabs, fewer trips to list_lock,
 * which is seed 000's first cure), accept waste up to 1/16 of the slab,
 * then 1/8, 1/4, 1/2, and never go above slub.max_order unless a single
 * object needs it.
 */
static unsigned calculate_order(size_t size, size_t min_objects, unsigned *objects)
{
	unsigned max_order = max_order_tunable();
	size_t max_objects = (PC_PAGE_SIZE << max_order) / size;
	min_objects = PC_MAX((size_t)1, PC_MIN(min_objects, max_objects));
	unsigned min_order = pc_slab_order_for_bytes(min_objects * size);
	unsigned order = max_order + 1;

	for (unsigned fract = 16; fract > 1 && order > max_order; fract /= 2)
		order = calc_slab_order(size, min_order, max_order, fract);
	if (order > max_order)
		order = pc_slab_order_for_bytes(size);
	size_t n = (PC_PAGE_SIZE << order) / size;
	*objects = (unsigned)PC_MIN(n, (size_t)0xffffff);
	return order;
}

unsigned pc_slab_calculate_order(size_t size, unsigned *objects)
{
	return calculate_order(size, min_objects_for(size, true), objects);
}

/* Recompute a cache's tunables from the options (under slab_mutex). */
static void cache_retune(struct pc_cache *s)
{
	/* The sheaf caches and slub_debug caches have no sheaves (below). */
	bool sheaves = !s->internal && !s->debug;
	unsigned objects, order = calculate_order(s->size, min_objects_for(s->size, sheaves), &objects);
	pc_store_relaxed(&s->oo, (uint64_t)order << 32 | objects);
	unsigned objects_per_slab = objects;
	long lo = pc_option(PC_OPT_SLUB_MIN_PARTIAL), hi = max_partial_resolved();
	long minp = PC_MAX(lo, PC_MIN(hi, (long)pc_log2(s->size) / 2));
	pc_store_relaxed(&s->min_partial, (unsigned)minp);

	long cp = pc_option(PC_OPT_SLUB_CPU_PARTIAL);
	if (cp < 0) { /* SLUB's set_cpu_partial, doubled on 32+ CPUs (seed 000) */
		unsigned nr_objects = s->size >= PC_PAGE_SIZE ? 2 : s->size >= 1024 ? 6 :
				      s->size >= 256 ? 13 : 30;
		if (os_cpu_count() >= 32)
			nr_objects *= 2;
		cp = (long)((nr_objects * 2 + objects_per_slab - 1) / objects_per_slab);
	}
	pc_store_relaxed(&s->cpu_partial, (unsigned)cp);

	/* slub.sheaf_capacity set: that capacity, fixed. By default the
	 * capacity starts at a small byte budget and grows with demand up to
	 * the default (sheaf_capacity_grow); a retune keeps what it grew to. */
	long max = pc_option(PC_OPT_SLUB_SHEAF_CAPACITY), cap = max, top = max;
	if (max < 0) {
		max = sheaf_default_capacity(s->size);
		cap = PC_MAX((long)sheaf_start_capacity(s->size, (unsigned)max),
			     PC_MIN((long)pc_load_relaxed(&s->sheaf_capacity), max));
		/* past the default with demand: rseq mode only (sheaf.c) */
		top = sheaf_mode_get() == PC_SHEAF_MODE_RSEQ ?
			      (long)sheaf_top_capacity(s->size, (unsigned)max) : max;
	}
	/* Debug caches have no sheaves: every allocation and free is checked. */
	if (s->internal || s->debug)
		max = cap = top = 0;
	sheaf_past_release(s); /* a capacity grown past the default: back to it */
	pc_store_relaxed(&s->sheaf_capacity_max, (uint32_t)max);
	pc_store_relaxed(&s->sheaf_capacity_top, (uint32_t)top);
	pc_store_relaxed(&s->sheaf_capacity, (uint32_t)cap);
}

static void retune_all(long value)
{
	(void)value;
	slab_mutex_lock();
	struct pc_list *it;
	pc_list_for_each(it, &cache_list)
		cache_retune(pc_list_entry(it, struct pc_cache, link));
	slab_mutex_unlock();
}

static void slab_prefork(void);
static void slab_postfork_parent(void);
static void slab_postfork_child(void);

static void flush_one(struct pc_cache *s, void *arg)
{
	(void)arg;
	sheaf_flush_cache(s);
}

/* slub.sheaf_capacity changed: new capacities, then every sheaf of the old
 * capacity goes (in thread mode other threads' sheaves go when they reach
 * a barn, which refuses a capacity that is not the current one). */
static void capacity_changed(long value)
{
	retune_all(value);
	pc_cache_foreach(flush_one, NULL);
}

static bool slab_init(void)
{
	static const enum pc_option tunables[] = {
		PC_OPT_SLUB_MIN_OBJECTS, PC_OPT_SLUB_MAX_ORDER, PC_OPT_SLUB_CPU_PARTIAL,
		PC_OPT_SLUB_MIN_PARTIAL, PC_OPT_SLUB_MAX_PARTIAL,
	};
	static const struct pc_life slab_life = {
		.name = "slab", .rank = PC_LIFE_RANK_SLAB,
		.prefork = slab_prefork, .postfork_parent = slab_postfork_parent,
		.postfork_child = slab_postfork_child, .thread_exit = sheaf_thread_exit,
	};
	pc_mutex_set_rank(&slab_mutex, PC_LOCK_RANK_SLAB_MUTEX);
	for (size_t i = 0; i < PC_ARRAY_SIZE(tunables); i++)
		pc_option_on_change(tunables[i], retune_all);
	pc_option_on_change(PC_OPT_SLUB_SHEAF_CAPACITY, capacity_changed);
	pc_option_on_resolve(PC_OPT_SLUB_MAX_ORDER, max_order_resolved);
	pc_option_on_resolve(PC_OPT_SLUB_MIN_OBJECTS, min_objects_resolved);
	pc_option_on_resolve(PC_OPT_SLUB_MAX_PARTIAL, max_partial_resolved);
	pc_option_on_resolve(PC_OPT_SLUB_SHEAF_MODE, sheaf_mode_resolved);
	pc_option_on_resolve(PC_OPT_SLUB_BARN_MAX_KB, barn_max_kb_resolved);
	/* In a fork child, once the fork window is closed (the witness's
	 * entry, debug builds) and locks may be taken again in rank order. */
	static const struct pc_life orphans_life = {
		.name = "slab-orphans", .rank = PC_LIFE_RANK_SLAB_CHILD,
		.postfork_child = sheaf_threads_fork_orphans,
	};
	sheaf_init();
	pc_life_register(&slab_life);
	pc_life_register(&orphans_life);
	slab_check_register(); /* debug builds: the fork-child walk */
	sheaf_decay_init(); /* the page layer's release thread runs the decay */
	return true;
}

static void slab_init_once(void)
{
	static _Atomic uint32_t state;
	pc_once(&state, slab_init);
}

int pc_sheaf_mode(void)
{
	if (!pc_page_try_init())
		return PC_SHEAF_MODE_THREAD; /* not started: what it would fall back to */
	slab_init_once();
	return sheaf_mode_get();
}

/* Slot geometry; false for a bad size or alignment. s->debug set: the
 * debug layout (debug.c). */
static bool cache_geometry(struct pc_cache *s, size_t size, size_t align, bool ctor)
{
	if (size == 0 || size > (PC_PAGE_SIZE << PC_MAX_ORDER) / 2)
		return false;
	if (align == 0)
		align = size >= 16 ? 16 : sizeof(void *);
	if (!pc_is_pow2(align) || align > PC_PAGE_SIZE)
		return false;
	align = PC_MAX(align, sizeof(void *));
	s->object_size = size;
	/* With a constructor the free pointer must not clobber constructed
	 * state, so it goes after the object, as in SLUB. */
	s->offset = ctor ? pc_align_up(size, sizeof(void *)) : 0;
	s->size = pc_align_up(ctor ? s->offset + sizeof(void *) : PC_MAX(size, sizeof(void *)), align);
	if (s->debug)
		slab_debug_geometry(s, align);
	/* The inverse of the odd part by Newton's iteration: each step doubles
	 * the correct low bits, and odd * odd == 1 (mod 8) gives the first 3. */
	s->slot_shift = (unsigned)__builtin_ctzll(s->size);
	uint64_t odd = s->size >> s->slot_shift, inv = odd;
	for (int i = 0; i < 5; i++)
		inv *= 2 - odd * inv;
	s->slot_inverse = inv;
	return true;
}

/* One block per cache: the cache and its per-CPU array, then per node a
 * struct pc_cache_node and a barn, then the two arrays of pointers to them
 * (s->node, s->barn), then the sheaf slots (rseq mode); a multiple of the
 * slots' alignment (64 bytes), so that blocks cut one after the other from
 * a chunk all start so aligned. */
static size_t cache_bytes(void)
{
	size_t bytes = sizeof(struct pc_cache) + os_cpu_count() * sizeof(struct pc_cache_cpu) +
		       pc_node_count() * (sizeof(struct pc_cache_node) + sizeof(struct pc_barn) +
					  sizeof(struct pc_cache_node *) + sizeof(struct pc_barn *));
	bytes = pc_align_up(bytes, 1 << OS_RSEQ_SLOT_SHIFT);
	return bytes + os_cpu_count() * sizeof(struct pc_sheaf_slot);
}

/* And one cold block per cache: what only statistics write (each CPU's
 * slab counters, each node's list_lock and barn lock statistics), in chunks
 * of their own, so that the pages of a cache's block that its creation and
 * its slow paths write hold none of it: with stats.enable off (the
 * default) the cold chunks stay untouched, never resident (their reads map
 * the zero page). They were 1.3 KiB of a 3 KiB cache on 2 CPUs. */
static size_t cold_bytes(void)
{
	return os_cpu_count() * PC_SLAB_STAT_COUNT * sizeof(uint64_t) +
	       pc_node_count() * 2 * sizeof(struct pc_lock_stats);
}

/*
 * Caches are cut one after the other from chunks mapped from the OS (a
 * mapping per cache, as before, cost a page each, most of it unused on a
 * small machine, and a system call). A chunk is CACHE_CHUNK bytes (or one
 * cache, if that is more); its pages are faulted in only as caches are
 * cut from them. Caches are never freed (pc_cache_destroy keeps their
 * memory: the lock registry points into it), so a bump pointer is enough.
 * Cold blocks come from chunks of their own the same way. Under slab_mutex.
 */
#define CACHE_CHUNK (64 * 1024)
struct cache_chunk {
	char *next, *end;
};
static struct cache_chunk hot_chunk, cold_chunk;

static void *chunk_cut_locked(struct cache_chunk *ch, size_t bytes)
{
	slab_mutex_assert_held();
	if ((size_t)(ch->end - ch->next) < bytes) {
		size_t size = pc_align_up(PC_MAX(bytes, (size_t)CACHE_CHUNK), PC_PAGE_SIZE);
		char *p = os_map(size, PC_PAGE_SIZE); /* zeroed */
		if (!p)
			return NULL;
		ch->next = p;
		ch->end = p + size;
	}
	void *block = ch->next;
	ch->next += bytes;
	return block;
}

/* A zeroed cache block and cold block, or NULL (out of memory; a cold
 * block cut before a failure is lost: a few hundred bytes, once). */
static struct pc_cache *cache_block(void **cold)
{
	slab_mutex_lock();
	struct pc_cache *s = chunk_cut_locked(&hot_chunk, cache_bytes());
	*cold = s ? chunk_cut_locked(&cold_chunk, cold_bytes()) : NULL;
	slab_mutex_unlock();
	return *cold ? s : NULL;
}

static void cache_init_parts(struct pc_cache *s, void *cold)
{
	enum pc_lock_kind kind = (enum pc_lock_kind)pc_option(PC_OPT_LOCK_KIND);
	_Atomic uint64_t *counters = cold;
	for (unsigned c = 0; c < os_cpu_count(); c++) {
		pc_spin_init(&s->cpu[c].lock);
		pc_spin_set_rank(&s->cpu[c].lock, PC_LOCK_RANK_CPU_SLAB);
		s->cpu[c].stats = counters + (size_t)c * PC_SLAB_STAT_COUNT;
	}
	struct pc_lock_stats *lock_stats =
		(struct pc_lock_stats *)(void *)(counters + (size_t)os_cpu_count() * PC_SLAB_STAT_COUNT);
	struct pc_cache_node *node_array = (struct pc_cache_node *)(void *)&s->cpu[os_cpu_count()];
	struct pc_barn *barns = (struct pc_barn *)(void *)&node_array[pc_node_count()];
	s->node = (struct pc_cache_node **)(void *)&barns[pc_node_count()];
	s->barn = (struct pc_barn **)(void *)&s->node[pc_node_count()];
	for (unsigned i = 0; i < pc_node_count(); i++) {
		struct pc_cache_node *n = &node_array[i];
		n->lock_stats = &lock_stats[2 * i];
		pc_lock_init(&n->list_lock, "list_lock", kind);
		pc_lock_set_rank(&n->list_lock, PC_LOCK_RANK_LIST);
		pc_lock_register(&n->list_lock, n->lock_stats);
		pc_list_init(&n->partial);
		s->node[i] = n;
		barns[i].lock_stats = &lock_stats[2 * i + 1];
		pc_lock_init(&barns[i].lock, "barn", kind);
		pc_lock_set_rank(&barns[i].lock, PC_LOCK_RANK_BARN);
		pc_lock_register(&barns[i].lock, barns[i].lock_stats);
		s->barn[i] = &barns[i];
	}
	uintptr_t slots = pc_align_up((uintptr_t)&s->barn[pc_node_count()], 1 << OS_RSEQ_SLOT_SHIFT);
	s->slots = s->internal ? NULL : (struct pc_sheaf_slot *)slots;
	/* The same for every cache (each starts 64-byte aligned, cache_bytes,
	 * and the CPU and node counts are fixed): every creator stores the
	 * same value, before the cache is published. */
	pc_store_relaxed(&pc_sheaf_slots_offset, (size_t)(slots - (uintptr_t)s));
}

_Atomic size_t pc_sheaf_slots_offset;

static struct pc_cache *cache_create(const char *name, size_t size, size_t align,
				     void (*ctor)(void *), bool internal)
{
	struct pc_cache geometry = { .debug = 0 };
	if (!cache_geometry(&geometry, size, align, ctor != NULL)) {
		errno = EINVAL;
		return NULL;
	}
	if (!pc_page_try_init())
		return NULL;
	slab_init_once();
	/* slub.debug (start-up only, so read once the options are in): a debug
	 * cache's slots are laid out again around its objects. */
	geometry.debug = internal ? 0 : pc_slub_debug_flags(name ? name : "unnamed");
	if (ctor)
		geometry.debug &= ~PC_SLUB_DEBUG_P; /* constructed state is never poisoned */
	if (geometry.debug)
		cache_geometry(&geometry, size, align, ctor != NULL);
	static _Atomic uint32_t sheaf_caches_state;
	if (!internal && !pc_once(&sheaf_caches_state, sheaf_caches_init))
		return NULL;
	void *cold;
	struct pc_cache *s = cache_block(&cold); /* zeroed */
	if (!s)
		return NULL;
	s->object_size = geometry.object_size;
	s->size = geometry.size;
	s->offset = geometry.offset;
	s->slot_inverse = geometry.slot_inverse;
	s->slot_shift = geometry.slot_shift;
	s->debug = geometry.debug;
	s->inuse = geometry.inuse;
	s->track_offset = geometry.track_offset;
	s->ctor = ctor;
	s->internal = internal;
	/* A bounded copy, not snprintf (os_format_u in os.h says why). */
	const char *src = name ? name : "unnamed";
	size_t len = strnlen(src, sizeof(s->name) - 1);
	memcpy(s->name, src, len);
	s->name[len] = '\0';
	cache_init_parts(s, cold);
	slab_mutex_lock();
	sheaf_cache_setup(s);
	cache_retune(s);
	pc_list_add_tail(&s->link, &cache_list);
	slab_mutex_unlock();
	return s;
}

struct pc_cache *pc_cache_create(const char *name, size_t size, size_t align, void (*ctor)(void *))
{
	return cache_create(name, size, align, ctor, false);
}

struct pc_cache *slab_cache_create_internal(const char *name, size_t size)
{
	return cache_create(name, size, 0, NULL, true);
}

void *pc_cache_alloc(struct pc_cache *s)
{
	pc_vg_enter();
	void *obj = pc_cache_alloc_inline(s);
	pc_vg_leave();
	/* With a constructor, an object keeps its constructed state: defined. */
	return pc_vg_alloc(obj, s->object_size, s->ctor != NULL);
}

static PC_COLD void bad_cache_free(struct pc_cache *s, const void *obj, struct pc_page *slab)
{
	pc_slab_debug_bad_pointer("pc_cache_free", obj); /* a debug cache's: SLUB's report */
	if (slab && slab->owner == s)
		pc_fatal("pc_cache_free(%s, %p): not the start of an object", s->name, obj);
	pc_fatal("pc_cache_free(%s, %p): the object belongs to %s", s->name, obj,
		 slab ? ((struct pc_cache *)slab->owner)->name : "no cache");
}

void pc_cache_free(struct pc_cache *s, void *obj)
{
	if (pc_unlikely(!obj))
		return;
	pc_vg_enter();
	pc_vg_free(obj);
	struct pc_page *slab = pc_slab_of(obj);
	if (pc_unlikely(!slab || slab->owner != s || !pc_slab_is_slot(s, slab, obj)))
		bad_cache_free(s, obj, slab);
	pc_cache_free_inline(s, slab, obj);
	pc_vg_leave();
}

struct pc_cache *pc_slab_cache_of(const void *p)
{
	struct pc_page *slab = pc_slab_of(p);
	return slab ? slab->owner : NULL;
}

/* Take every empty slab off node n's partial list and free it. */
static size_t shrink_node(struct pc_cache *s, struct pc_cache_node *n)
{
	struct pc_page *discard = NULL;
	size_t freed = 0;
	pc_lock_acquire(&n->list_lock);
	struct pc_list *it = n->partial.next;
	while (it != &n->partial) {
		struct pc_page *slab = pc_list_entry(it, struct pc_page, list);
		it = it->next;
		/* Unfrozen and empty: no free can race (nothing is in use) and
		 * no allocation (that needs list_lock). */
		if (PC_SLAB_INUSE(pc_load_relaxed(&slab_word(slab)->word)) != 0)
			continue;
		slab_partial_del(n, slab);
		slab->list.next = (struct pc_list *)(void *)discard;
		discard = slab;
		freed++;
	}
	slab_node_check_at_locked(s, n, "after shrink");
	pc_lock_release(&n->list_lock);
	slab_discard_chain(s, discard);
	return freed;
}

size_t slab_shrink_slabs(struct pc_cache *s)
{
	size_t freed = 0;
	for (unsigned c = 0; c < os_cpu_count(); c++) {
		pc_spin_lock(&s->cpu[c].lock);
		slab_flush_cpu(s, &s->cpu[c]);
		pc_spin_unlock(&s->cpu[c].lock);
	}
	for (unsigned i = 0; i < pc_node_count(); i++)
		freed += shrink_node(s, s->node[i]);
	return freed;
}

/* Counted in sheaf_depth, as every path here that holds slab_mutex, a
 * c->lock or a list_lock outside a sheaf slow path: a signal handler that
 * allocates meanwhile takes no lock (slab.h, "Re-entry"). */
size_t pc_cache_shrink(struct pc_cache *s)
{
	pc_slab_reentry_drain(); /* what a handler freed: in s too, perhaps */
	pc_vg_enter(); /* flushing writes free pointers into free objects */
	sheaf_enter();
	sheaf_flush_cache(s);
	size_t freed = slab_shrink_slabs(s);
	sheaf_leave();
	pc_vg_leave();
	return freed;
}

/*
 * Destroy holds slab_mutex from its first flush to the unlinking, so that no
 * decay pass (which holds it while it looks at any cache, sheaf_decay.c)
 * flushes or shrinks s meanwhile: a pass's detached sheaves, in flight to
 * the slabs, would look like allocated objects to the walker and to the
 * count below ("keeping it" with nothing allocated). A pass that starts
 * after the unlinking no longer finds s; the mapping is never unmapped
 * anyway (below), so no pointer to s can ever dangle.
 */
size_t pc_cache_destroy(struct pc_cache *s)
{
	pc_slab_reentry_drain(); /* objects of s a handler freed are freed first */
	slab_mutex_lock();
	pc_cache_shrink(s);
	pc_cache_check_at(s, "at destroy"); /* nobody else uses it now */
	slab_exclusive_test_hook(s);
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	if (info.slabs > 0) {
		slab_mutex_unlock();
		pc_message("cache %s destroyed with %ld objects still allocated in %ld slabs; "
			   "keeping it", s->name, info.active_objects, info.slabs);
		return (size_t)PC_MAX(info.active_objects, 1L);
	}
	sheaf_past_release(s);
	pc_store_relaxed(&s->sheaf_capacity_top, 0); /* no growth for a dead cache */
	pc_list_del(&s->link);
	slab_mutex_unlock();
	/* The list_locks stay in the lock layer's registry for the life of the
	 * process (it never removes entries): unmapping them would leave the
	 * registry dangling, and a new cache mapped at the same address would
	 * register the same lock twice (a cycle). Keep the mapping; hide the
	 * dead locks from pc_lock_foreach. */
	for (unsigned i = 0; i < pc_node_count(); i++) {
		s->node[i]->list_lock.stats = NULL;
		s->barn[i]->lock.stats = NULL;
	}
	return 0;
}

/* Free slots of one slab: not in use (its own freelist, and its fresh
 * objects, which it adds to info->fresh_objects). */
static long slab_free_slots(struct pc_page *slab, struct pc_cache_info *info)
{
	uint64_t w = pc_load_relaxed(&slab_word(slab)->word);
	info->fresh_objects += PC_SLAB_FRESH(w);
	return (long)PC_SLAB_OBJECTS(w) - (long)PC_SLAB_INUSE(w);
}

/* Free objects CPU c holds (CPU freelist, its slab's and its partial slabs'
 * own freelists and fresh objects), under c->lock; counts its slabs into
 * info. */
static long cpu_free_objects(struct pc_cache *s, struct pc_cache_cpu *c,
			     struct pc_cache_info *info)
{
	long n = 0;
	pc_spin_lock(&c->lock);
	struct pc_page *slab = pc_load_relaxed(&c->slab);
	if (slab) {
		info->cpu_slabs++;
		n += slab_cpu_freelist_count(s, c) + slab_free_slots(slab, info);
	}
	for (struct pc_page *p = c->partial; p; p = (struct pc_page *)(void *)p->list.next) {
		info->cpu_partial_slabs++;
		n += slab_free_slots(p, info);
	}
	pc_spin_unlock(&c->lock);
	return n;
}

void pc_cache_info(struct pc_cache *s, struct pc_cache_info *info)
{
	memset(info, 0, sizeof(*info));
	uint64_t oo = pc_load_relaxed(&s->oo);
	info->name = s->name;
	info->object_size = s->object_size;
	info->size = s->size;
	info->order = (unsigned)(oo >> 32);
	info->objects_per_slab = (unsigned)oo;
	info->min_partial = slab_min_partial(s);
	info->cpu_partial = slab_cpu_partial(s);
	info->sheaf_capacity = pc_load_relaxed(&s->sheaf_capacity);
	info->sheaf_objects = sheaf_count_objects(s);
	slab_counts(s, &info->slabs, &info->total_objects); /* slab_alloc.c */
	long free_on_partial = 0;
	for (unsigned i = 0; i < pc_node_count(); i++) {
		struct pc_cache_node *n = s->node[i];
		pc_lock_acquire(&n->list_lock);
		struct pc_list *it;
		pc_list_for_each(it, &n->partial)
			free_on_partial += slab_free_slots(pc_list_entry(it, struct pc_page, list), info);
		info->partial_slabs += (long)pc_load_relaxed(&n->nr_partial);
		pc_lock_release(&n->list_lock);
		pc_lock_stats_merge(&info->list_lock, n->lock_stats);
		pc_lock_stats_merge(&info->barn_lock, s->barn[i]->lock_stats);
		info->barn_limit = PC_MAX(info->barn_limit, barn_limit(s, i));
	}
	long free_on_cpus = 0;
	for (unsigned c = 0; c < os_cpu_count(); c++) {
		free_on_cpus += cpu_free_objects(s, &s->cpu[c], info);
		for (int k = 0; k < PC_SLAB_STAT_COUNT; k++)
			info->stats[k] += pc_load_relaxed(&s->cpu[c].stats[k]);
	}
	/* Objects in sheaves and barns were taken from the slabs (in use there)
	 * but are free to the program. */
	info->active_objects = info->total_objects - free_on_partial - free_on_cpus -
			       info->sheaf_objects;
}

void pc_cache_foreach(void (*fn)(struct pc_cache *s, void *arg), void *arg)
{
	slab_mutex_lock();
	struct pc_list *it;
	pc_list_for_each(it, &cache_list)
		fn(pc_list_entry(it, struct pc_cache, link), arg);
	slab_mutex_unlock();
}

/* The cache at position i of cache_list, or NULL past its end. Under
 * slab_mutex. */
static struct pc_cache *cache_at(unsigned i)
{
	slab_mutex_assert_held();
	struct pc_list *it;
	pc_list_for_each(it, &cache_list)
		if (i-- == 0)
			return pc_list_entry(it, struct pc_cache, link);
	return NULL;
}

/* One cache of a trim, under slab_mutex: as pc_cache_shrink, but in thread
 * mode without the live threads' sheaves, which pc_slab_reclaim gave back
 * just before (every cache's at once): flushing them again here would wait
 * for their fast paths holding slab_mutex, which a fork's prefork takes
 * first. What they took since stays with them, as after any trim. */
static void reclaim_one(struct pc_cache *s)
{
	if (s->slots || s->tindex == 0 || s->internal) {
		pc_cache_shrink(s);
		return;
	}
	pc_vg_enter(); /* as pc_cache_shrink */
	sheaf_enter();
	for (unsigned i = 0; i < pc_node_count(); i++)
		barn_drain(s, i);
	slab_shrink_slabs(s);
	sheaf_leave();
	pc_vg_leave();
}

/*
 * A trim (pc_trim, malloc_trim, the out-of-memory retry). Thread mode first
 * flushes every live thread's sheaves, holding no slab lock (threads_lock
 * only, dropped while it waits for another thread's fast path). Then each
 * cache, taking slab_mutex for that cache alone: a fork (or a cache
 * creation, a decay pass) waits for one cache's shrink at most, never for
 * the whole trim, nor for a wait on another thread. A cache destroyed
 * between two steps shifts the positions: the trim may skip one cache
 * (it frees nothing wrong; a later trim gets it). None is made or destroyed
 * in a steady program.
 */
void pc_slab_reclaim(void)
{
	if (pc_slab_reentered()) /* a signal handler inside our slow path */
		return;
	sheaf_enter(); /* slab_mutex, then each cache's locks (reclaim_one) */
	sheaf_flush_threads(); /* thread mode: every cache's at once, one fence per batch */
	for (unsigned i = 0;; i++) {
		slab_mutex_lock();
		struct pc_cache *s = cache_at(i);
		if (s)
			reclaim_one(s);
		slab_mutex_unlock();
		if (!s)
			break;
	}
	sheaf_leave();
}

/* fork(): slab_mutex, the thread-sheaf registry lock, then every slot lock of every cache, every barn lock,
 * every c->lock, every list_lock (four passes in cache-list order, so that
 * ranks never decrease: the witness, lock.h, allows only equal ranks to nest
 * here); the parent releases, the child resets. Sheaves are plain memory:
 * the child keeps them all; the other threads' per-thread sheaves go back to
 * the slabs there (sheaf_threads_fork_orphans, from its own entry). Registered with the lifecycle registry
 * (os.h) by slab_init.
 * Why this cannot deadlock: outside fork no path holds locks of two caches
 * but a sheaf slow path (slot lock of one cache, then c->lock of a sheaf
 * cache, which has no slot locks), and every path takes a cache's locks in
 * rank order; a thread that holds some waits only for higher ranks, which
 * fork takes after it has all of the lower ones. */
static void slab_prefork(void)
{
	slab_mutex_lock();
	sheaf_threads_prefork();
	struct pc_list *it;
	pc_list_for_each(it, &cache_list) {
		struct pc_cache *s = pc_list_entry(it, struct pc_cache, link);
		for (unsigned c = 0; s->slots && c < os_cpu_count(); c++)
			pc_spin_lock(&s->slots[c].lock);
	}
	pc_list_for_each(it, &cache_list) {
		struct pc_cache *s = pc_list_entry(it, struct pc_cache, link);
		for (unsigned i = 0; i < pc_node_count(); i++)
			pc_lock_acquire_for_fork(&s->barn[i]->lock);
	}
	pc_list_for_each(it, &cache_list) {
		struct pc_cache *s = pc_list_entry(it, struct pc_cache, link);
		for (unsigned c = 0; c < os_cpu_count(); c++)
			pc_spin_lock(&s->cpu[c].lock);
	}
	pc_list_for_each(it, &cache_list) {
		struct pc_cache *s = pc_list_entry(it, struct pc_cache, link);
		for (unsigned i = 0; i < pc_node_count(); i++)
			pc_lock_acquire_for_fork(&s->node[i]->list_lock);
	}
}

static void slab_postfork_parent(void)
{
	struct pc_list *it;
	for (it = cache_list.prev; it != &cache_list; it = it->prev) {
		struct pc_cache *s = pc_list_entry(it, struct pc_cache, link);
		for (unsigned i = pc_node_count(); i-- > 0;)
			pc_lock_release(&s->node[i]->list_lock);
		for (unsigned c = os_cpu_count(); c-- > 0;)
			pc_spin_unlock(&s->cpu[c].lock);
	}
	for (it = cache_list.prev; it != &cache_list; it = it->prev) {
		struct pc_cache *s = pc_list_entry(it, struct pc_cache, link);
		for (unsigned i = pc_node_count(); i-- > 0;)
			pc_lock_release(&s->barn[i]->lock);
		for (unsigned c = os_cpu_count(); s->slots && c-- > 0;)
			pc_spin_unlock(&s->slots[c].lock);
	}
	sheaf_threads_postfork_parent();
	slab_mutex_unlock();
}

static void slab_postfork_child(void)
{
	struct pc_list *it;
	pc_list_for_each(it, &cache_list) {
		struct pc_cache *s = pc_list_entry(it, struct pc_cache, link);
		for (unsigned c = 0; c < os_cpu_count(); c++)
			pc_spin_reinit(&s->cpu[c].lock);
		for (unsigned i = 0; i < pc_node_count(); i++) {
			pc_lock_reinit(&s->node[i]->list_lock);
			pc_lock_reinit(&s->barn[i]->lock);
		}
		for (unsigned c = 0; s->slots && c < os_cpu_count(); c++)
			pc_spin_reinit(&s->slots[c].lock);
	}
	sheaf_threads_postfork_child();
	pc_mutex_reinit(&slab_mutex);
	slab_mutex_mine = false;
	sheaf_leave(); /* prefork's slab_mutex_lock */
}
