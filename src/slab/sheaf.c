/*
 * slab/sheaf.c - the sheaf slow paths in both modes, flushing sheaves, the
 * choice of mode, thread exit and signal-handler re-entry. The fast paths
 * are inline in slab.h, the barns and sheaf memory in barn.c; the design,
 * the locks and why a fast path can never commit to a sheaf that a slow path
 * has taken are explained in slab.h, "Sheaves".
 *
 * Owns: sheaf_mode (written once by sheaf_init, inside slab_init's pc_once);
 * thread_caches[] (index -> cache for thread mode, written under slab_mutex
 * before the cache is published, read by exiting threads and flushers);
 * and per thread: pc_thread_sheaves[] (an entry may be detached by a
 * flusher of another thread, see sheaf_thread.c), pc_thread_sheaf_busy
 * (read by flushers), sheaf_depth, pc_sheaf_deferred, sheaf_thread_done;
 * sheaves_charged (the grown capacities' charge: written under slab_mutex,
 * read relaxed by tests; "Past the default" below).
 */
#include "slab.h"

#include <errno.h>
#include <string.h>

#define PC_TLS __attribute__((tls_model("initial-exec")))

struct pc_sheaf pc_sheaf_none; /* count 0, capacity 0 */

__thread struct pc_thread_sheaf_state pc_thread_sheaf PC_TLS = {
	.entries = { [0 ... PC_THREAD_SHEAVES - 1] = &pc_sheaf_none },
};

static int sheaf_mode;
static struct pc_cache *_Atomic thread_caches[PC_THREAD_SHEAVES];
static unsigned thread_next = 1; /* under slab_mutex */

/* > 0 while this thread runs a sheaf slow path or flush: a signal handler
 * that allocates then must not take the locks it may hold. */
static __thread unsigned sheaf_depth PC_TLS;
/* Objects freed by such a handler (or by one that interrupted the page
 * allocator: pc_page_reentered), chained through their free pointer. */
__thread void *_Atomic pc_sheaf_deferred PC_TLS;
/* Thread mode: this thread's exit handler ran; no new sheaves for it. */
static __thread bool sheaf_thread_done PC_TLS;

void (*_Atomic pc_sheaf_test_hook)(struct pc_cache *s);

/* Tests only: run the hook where a slow path holds its locks (slot lock, or
 * the thread's busy flag). One relaxed load otherwise. */
static void test_hook(struct pc_cache *s)
{
	void (*hook)(struct pc_cache *) = pc_load_relaxed(&pc_sheaf_test_hook);
	if (pc_unlikely(hook != NULL))
		hook(s);
}

/* ---- the mode ------------------------------------------------------------------- */
bool sheaf_init(void)
{
	long want = pc_option(PC_OPT_SLUB_SHEAF_MODE);
	sheaf_mode = PC_SHEAF_MODE_THREAD;
#if !defined(__SANITIZE_THREAD__) /* TSan cannot see the assembly's accesses */
	if (want != PC_SHEAF_MODE_THREAD && os_rseq_setup())
		sheaf_mode = PC_SHEAF_MODE_RSEQ;
#else
	(void)want;
#endif
	if (sheaf_mode == PC_SHEAF_MODE_THREAD)
		sheaf_threads_init();
	pc_option_set(PC_OPT_SLUB_SHEAF_MODE, sheaf_mode, true); /* report it */
	return true;
}

int sheaf_mode_get(void) { return sheaf_mode; }

struct pc_cache *sheaf_thread_cache(unsigned i)
{
	return pc_load_relaxed(&thread_caches[i]);
}

/* 16 KiB of objects, but at least 32 objects up to 64 KiB of them (1 KiB:
 * 32, not 16; 2 KiB: 32, not 8; 4 KiB: 16; 8 KiB: 8), clamped to 4..128.
 * Classes up to 512 B keep 16 KiB. Every slow path serves one sheaf of a
 * class, so a program that allocates (frees) many objects of 1-8 KiB paid
 * one per 4-8 objects: seed 002's Tests D and F at 16 threads, 2-8 KiB,
 * took 1.4-3x the cycles (docs/sheaves.md, "Test D at 16 threads"). */
unsigned sheaf_default_capacity(size_t size)
{
	size_t n = PC_MAX(16384 / size, PC_MIN((size_t)32, 65536 / size));
	return (unsigned)PC_MAX((size_t)4, PC_MIN(n, (size_t)128));
}

/*
 * Sheaf capacity. The default (slub.sheaf_capacity = -1) is 16 KiB of
 * objects (4..128), but a sheaf only starts at SHEAF_START_BYTES of them
 * (at least 2, at most the default): the first refill of a CPU's sheaf
 * takes a whole sheaf's worth of objects from the slabs, so a class with
 * a few dozen objects live held 16 KiB of them, and its slabs, which
 * slab_new then wrote whole (bench_small: one refill of 128 objects for
 * each of a dozen classes with about 36 live; docs/footprint.md). The
 * capacity then doubles with demand (sheaf_capacity_grow, below), and a
 * sheaf of an older capacity goes back to the slabs when it reaches a barn
 * (barn_put refuses it), or instead of becoming the spare (install,
 * empty_sheaf).
 *
 * Thread mode (the fallback) starts at the default: its thread has one
 * sheaf per class and no spare, so a steady loop of k allocations and k
 * frees that finds its sheaf within k of an end (as a sheaf that has just
 * grown does) trades it with the barn twice a round for as long as it runs
 * (1 KiB objects in bursts of 4: 6.6 -> 21 ns per operation); a sheaf
 * made at the default capacity starts full and stays clear of that.
 */
#ifndef SHEAF_START_BYTES
#define SHEAF_START_BYTES 2048
#endif

unsigned sheaf_start_capacity(size_t size, unsigned max)
{
	if (sheaf_mode == PC_SHEAF_MODE_THREAD)
		return max;
	size_t n = PC_MAX((size_t)2, SHEAF_START_BYTES / size);
	return (unsigned)PC_MIN(n, (size_t)max);
}

/* Demand is counted in slow paths: a refill from the slabs (that got a
 * whole sheaf) or a new sheaf for a free (that got one: out of memory is no
 * demand) counts SHEAF_GROW_REFILL, any other sheaf slow path (a move or
 * swap between main and spare, an exchange with the barn) counts 1, and
 * SHEAF_GROW_EVERY refills' worth doubles the capacity: a class whose
 * sheaves only now and then run empty or full (a few dozen live objects
 * wandering up and down) keeps small sheaves; one in real use reaches the
 * default within a few dozen refills. The exchanges count too, because a
 * steady loop of k allocations and k frees with k above a small capacity is
 * served by them alone, without a refill: counting only refills left such a
 * class at 2-8 objects for good, a slow path every few operations (1 KiB
 * objects in bursts of 4: 2.8 -> 11-19 ns per operation; review of the
 * footprint change). The count is racy (relaxed, per cache): a lost or doubled count
 * moves a doubling by a slow path. The doubling is a compare-and-swap, so
 * that a tunable change that stored a new capacity meanwhile is not undone;
 * against a change that stores the very value we read, it may stand until
 * the next change, at most the maximum we read (never above PC_SHEAF_MAX). */
#define SHEAF_GROW_EVERY 4
#define SHEAF_GROW_REFILL 16

static void sheaf_demand_add(struct pc_cache *s, uint32_t weight)
{
	uint32_t cap = pc_load_relaxed(&s->sheaf_capacity);
	uint32_t max = pc_load_relaxed(&s->sheaf_capacity_max);
	if (cap == 0 || cap >= max ||
	    pc_add_relaxed(&s->sheaf_demand, weight) + weight < SHEAF_GROW_EVERY * SHEAF_GROW_REFILL)
		return;
	pc_store_relaxed(&s->sheaf_demand, 0);
	/* a spurious failure: no growth this time */
	pc_cas_weak_relaxed(&s->sheaf_capacity, &cap, PC_MIN(cap * 2, max));
}

/*
 * Past the default. In rseq mode a default capacity may grow above the
 * default (s->sheaf_capacity_max) up to s->sheaf_capacity_top
 * (sheaf_top_capacity: 4x the default where that is at most 64 KiB of
 * objects, 8 - 512 B; top == max where it may not: larger classes, a set
 * capacity, thread mode, caches without sheaves), for a cache that keeps
 * trading sheaves with its slabs: seed 002's Test D at 16 threads refills a sheaf of 256 B objects
 * from the slabs every 64 allocations, and each such slow path waits for
 * the program's stores into the objects it handed out before (the slot
 * lock's locked instruction drains the store buffer) on top of the barn,
 * c->lock and slab_new; a fixed capacity of 512 took it from 60 to 38
 * cycles per malloc (docs/sheaves.md, "2026-11-24 evening"). A fixed 32
 * KiB of objects for every class cost the small program 9% of its peak RSS
 * (a class with a few dozen live objects held more free ones), which is why
 * it goes by demand, as tcmalloc resizes the per-CPU caches that miss most:
 *   - s->sheaf_refills counts the refills from the slabs and the new sheaves
 *     for a free (sheaf_capacity_grow) made while the capacity is at or
 *     above the default; PC_SHEAF_PAST_REFILLS of them since the capacity last
 *     changed or the decay last looked double it (at most to top) if the
 *     budget has room;
 *   - the budget is the process's, slub.barn_max_kb (the same KiB as the
 *     barns' raised bounds, counted apart: sheaves_charged), and a grown
 *     capacity is charged what the main and spare of every CPU that has
 *     used the cache could hold above the default: 2 * CPUs * (capacity -
 *     default) slots and pointers (past_bytes; the CPUs counted when a
 *     slot gets its first sheaf, s->sheaf_cpus, and the charge kept in
 *     s->past_charged, set again at each change and decay pass: counting
 *     every CPU of the machine stopped a class at 2x on 16 CPUs with the
 *     default budget, however few used it). A barn's base bound of full sheaves shrinks by the same
 *     factor (barn.c, barn_bound), so the barns keep the bytes they kept;
 *   - each decay pass halves a grown capacity (not below the default) whose
 *     cache made fewer than PC_SHEAF_PAST_REFILLS refills since the previous
 *     look, or every one while the charge is above the budget (lowered at
 *     run time), and gives the difference back; a retune (a tunable change)
 *     and pc_cache_destroy give a cache's whole charge back.
 * Every change of a capacity above the default holds slab_mutex (growth
 * tries it from the slow path, under the slot lock: a try never waits), so
 * sheaves_charged is always the sum of s->past_charged over the caches. Sheaves
 * of the old capacity serve until a slow path retires them, as after a
 * growth below the default.
 */
#define SHEAF_PAST_BYTES 65536
#define SHEAF_PAST_FACTOR 4

/* Bytes charged for grown capacities, all caches (written under slab_mutex;
 * atomic for the unlocked reads of tests and reports). */
static _Atomic size_t sheaves_charged;

size_t pc_slab_sheaf_charged(void)
{
	return pc_load_relaxed(&sheaves_charged);
}

/* 4x the default, for the classes whose 4x fits in 64 KiB of objects and
 * PC_SHEAF_MAX (8 - 512 B); the others keep the default: 1 KiB objects in
 * sheaves of 64 (2x) made seed 002's Test A slower, 15 -> 19-23 cycles per
 * malloc in four interleaved runs, where 128-512 B at 4x gained. */
unsigned sheaf_top_capacity(size_t size, unsigned def)
{
	size_t top = (size_t)def * SHEAF_PAST_FACTOR;
	return top * size <= SHEAF_PAST_BYTES && top <= PC_SHEAF_MAX ? (unsigned)top : def;
}

/* What a capacity of cap costs s above its default (see above), for the
 * CPUs that have had a sheaf of s (s->sheaf_cpus; at least one): a cache
 * used on a few CPUs of many is charged for those only. */
static size_t past_bytes(struct pc_cache *s, uint32_t cap)
{
	uint32_t max = pc_load_relaxed(&s->sheaf_capacity_max);
	size_t cpus = PC_MAX(pc_load_relaxed(&s->sheaf_cpus), 1u);
	return cap > max ? 2 * cpus * (cap - max) * (s->size + sizeof(void *)) : 0;
}

/* Move s's capacity (above its default) to cap, charged for the CPUs that
 * have used s so far; slab_mutex held. The charge is kept in
 * s->past_charged: what it gives back when it changes again, whatever the
 * CPUs count then. */
static void past_set_locked(struct pc_cache *s, uint32_t cap)
{
	pc_sub_relaxed(&sheaves_charged, s->past_charged);
	s->past_charged = past_bytes(s, cap);
	pc_add_relaxed(&sheaves_charged, s->past_charged);
	pc_store_relaxed(&s->sheaf_capacity, cap);
	pc_store_relaxed(&s->sheaf_refills, 0);
}

/* Double s's capacity if it is still due and the budget has room. */
static void past_grow_locked(struct pc_cache *s)
{
	slab_mutex_assert_held();
	uint32_t cap = pc_load_relaxed(&s->sheaf_capacity);
	uint32_t max = pc_load_relaxed(&s->sheaf_capacity_max);
	uint32_t top = pc_load_relaxed(&s->sheaf_capacity_top);
	if (cap < max || cap >= top || pc_load_relaxed(&s->sheaf_refills) < PC_SHEAF_PAST_REFILLS)
		return; /* changed meanwhile */
	uint32_t next = PC_MIN(cap * 2, top);
	if (pc_load_relaxed(&sheaves_charged) - s->past_charged + past_bytes(s, next) >
	    barn_budget_bytes()) {
		pc_store_relaxed(&s->sheaf_refills, 0); /* count again before the next try */
		return;
	}
	past_set_locked(s, next);
}

/* A refill or new sheaf made at capacity cap (read before
 * sheaf_demand_add could double it to the default: only refills at or
 * above the default count). Racy count: a lost one moves a doubling by a
 * refill. */
static void past_demand(struct pc_cache *s, uint32_t cap)
{
	if (cap < pc_load_relaxed(&s->sheaf_capacity_max) ||
	    pc_load_relaxed(&s->sheaf_capacity_top) <= pc_load_relaxed(&s->sheaf_capacity_max))
		return;
	uint32_t n = pc_add_relaxed(&s->sheaf_refills, 1) + 1;
	if (n < PC_SHEAF_PAST_REFILLS || cap >= pc_load_relaxed(&s->sheaf_capacity_top))
		return; /* still counted: the decay keeps a capacity in use */
	if (!slab_mutex_trylock())
		return; /* a pass or a creation holds it: the next refill tries */
	past_grow_locked(s);
	slab_mutex_unlock();
}

void sheaf_past_decay(struct pc_cache *s)
{
	slab_mutex_assert_held();
	uint32_t cap = pc_load_relaxed(&s->sheaf_capacity);
	uint32_t max = pc_load_relaxed(&s->sheaf_capacity_max);
	uint32_t n = pc_load_relaxed(&s->sheaf_refills);
	pc_store_relaxed(&s->sheaf_refills, 0);
	if (cap <= max)
		return;
	/* CPUs that took up s since its charge was set are charged now: the
	 * capacity kept while the total stays within the budget. */
	size_t charged = pc_load_relaxed(&sheaves_charged) - s->past_charged + past_bytes(s, cap);
	past_set_locked(s, n >= PC_SHEAF_PAST_REFILLS && charged <= barn_budget_bytes() ?
				   cap : PC_MAX(cap / 2, max));
}

void sheaf_past_release(struct pc_cache *s)
{
	pc_sub_relaxed(&sheaves_charged, s->past_charged);
	s->past_charged = 0;
	pc_store_relaxed(&s->sheaf_refills, 0);
}

/* A refill or new sheaf: SHEAF_GROW_REFILL, less the 1 that every slow path
 * that ends with an object placed counts (sheaf_alloc_slow, sheaf_free_slow);
 * and past the default, one refill. */
void sheaf_capacity_grow(struct pc_cache *s)
{
	uint32_t cap = pc_load_relaxed(&s->sheaf_capacity);
	sheaf_demand_add(s, SHEAF_GROW_REFILL - 1);
	past_demand(s, cap);
}

/* Under slab_mutex, before s is published. */
void sheaf_cache_setup(struct pc_cache *s)
{
	if (s->internal)
		return;
	if (sheaf_mode == PC_SHEAF_MODE_RSEQ) {
		for (unsigned c = 0; c < os_cpu_count(); c++) {
			pc_store_relaxed(&s->slots[c].main, &pc_sheaf_none);
			pc_spin_init(&s->slots[c].lock);
			pc_spin_set_rank(&s->slots[c].lock, PC_LOCK_RANK_SHEAF_SLOT);
		}
		return;
	}
	s->slots = NULL;
	if (thread_next < PC_THREAD_SHEAVES && !s->debug) { /* debug caches: no sheaves */
		s->tindex = thread_next++;
		pc_store_relaxed(&thread_caches[s->tindex], s);
	}
}

static unsigned capacity_of(struct pc_cache *s)
{
	return pc_load_relaxed(&s->sheaf_capacity);
}

static void stat_here(struct pc_cache *s, enum pc_slab_stat item)
{
	slab_stat(&s->cpu[os_cpu_current()], item);
}

/* ---- re-entry from signal handlers -------------------------------------------------- */
bool pc_slab_reentered(void)
{
	return sheaf_depth != 0 || pc_page_reentered();
}

void sheaf_enter(void)
{
	sheaf_depth++;
	atomic_signal_fence(memory_order_seq_cst); /* before any lock is taken */
}

static PC_NOINLINE void drain_deferred(void)
{
	/* An exchange, so that a handler's push cannot be lost between our load
	 * and store (same thread: the order needs no fence beyond this). */
	void *list = pc_xchg_acquire(&pc_sheaf_deferred, NULL);
	while (list) {
		struct pc_page *slab = pc_slab_of(list);
		struct pc_cache *s = slab->owner;
		void *next = slab_next(s, list);
		pc_cache_free_inline(s, slab, list);
		list = next;
	}
}

void sheaf_leave(void)
{
	atomic_signal_fence(memory_order_seq_cst); /* after every lock is released */
	if (--sheaf_depth == 0 && pc_unlikely(pc_load_relaxed(&pc_sheaf_deferred) != NULL))
		drain_deferred();
}

/* Objects deferred by a handler that interrupted the page allocator outside
 * any sheaf slow path: freed by the next sheaf slow path of this thread, or
 * here, from the malloc layer's slow paths (pc_slab_reentry_drain) and
 * thread exit, once neither depth is raised. */
void pc_slab_drain_deferred(void)
{
	if (sheaf_depth == 0 && !pc_page_reentered()) {
		int saved = errno; /* a caller's ENOMEM stays */
		drain_deferred();
		errno = saved;
	}
}

/* A handler interrupted this thread's slow path: no lock may be taken. The
 * slab fast path is lock-free; when it cannot serve, fail (ENOMEM). */
static PC_NOINLINE void *reentrant_alloc(struct pc_cache *s)
{
	struct pc_cache_cpu *c = &s->cpu[os_cpu_current()];
	slab_stat(c, PC_SLAB_STAT_sheaf_reentrant);
	for (int attempt = 0; attempt < 4; attempt++) {
		/* Acquire: as in slab_alloc_fast. */
		uint64_t tid = pc_load_acquire(&c->fl.word);
		void *obj = pc_load_relaxed(&c->fl.ptr);
		if (!obj || (tid & 1))
			break;
		if (pc_dcas(&c->fl, obj, tid, slab_next_racy(s, obj), tid + 2))
			return obj;
	}
	errno = ENOMEM;
	return NULL;
}

/* ... and its frees wait on a per-thread list for the slow path's end. */
static PC_NOINLINE void reentrant_free(struct pc_cache *s, void *obj)
{
	stat_here(s, PC_SLAB_STAT_sheaf_reentrant);
	void *head = pc_load_relaxed(&pc_sheaf_deferred);
	do /* a compare-and-swap: a nested handler may push meanwhile */
		slab_set_next(s, obj, head);
	while (!pc_cas_weak_relaxed(&pc_sheaf_deferred, &head, obj));
}

/* ---- bypass: straight to the slabs ---------------------------------------------------- */
static void *bypass_alloc(struct pc_cache *s)
{
	if (!s->internal)
		stat_here(s, PC_SLAB_STAT_sheaf_bypass);
	return slab_alloc_fast(s);
}

static void bypass_free(struct pc_cache *s, struct pc_page *slab, void *obj)
{
	if (!s->internal)
		stat_here(s, PC_SLAB_STAT_sheaf_bypass);
	slab_free_fast(s, slab, obj);
}

/* ---- rseq mode: per-CPU sheaves --------------------------------------------------------- */
/*
 * Make `fresh` (the caller's alone) CPU cpu's main sheaf in place of `old`,
 * with the rseq compare-and-store run on cpu; slot->lock held, so only a
 * migration of the caller can make it fail. The sheaf that is left over
 * (old, or fresh if we moved) becomes the spare if there is none, else goes
 * to the barn.
 */
static void install(struct pc_cache *s, struct pc_sheaf_slot *slot, unsigned cpu,
		    unsigned node, struct pc_sheaf *old, struct pc_sheaf *fresh)
{
	if (pc_unlikely(!slot->used)) { /* s's first sheaf on this CPU (past_bytes) */
		slot->used = true;
		pc_add_relaxed(&s->sheaf_cpus, 1);
	}
	struct pc_sheaf *left = os_rseq_slot_cas(s->slots, cpu, old, fresh) ? old : fresh;
	if (left == &pc_sheaf_none)
		return;
	if (!slot->spare && left->capacity == capacity_of(s))
		slot->spare = left;
	else
		barn_put(s, node, left);
}

/* An empty sheaf of the current capacity for CPU slot (spare, barn, new). */
static struct pc_sheaf *empty_sheaf(struct pc_cache *s, struct pc_sheaf_slot *slot,
				    unsigned node, unsigned cap)
{
	struct pc_sheaf *sh = slot->spare;
	slot->spare = NULL;
	if (sh && (sh->capacity != cap || sh->count != 0)) {
		barn_put(s, node, sh);
		sh = NULL;
	}
	if (!sh)
		sh = barn_take_empty(s, node);
	return sh ? sh : sheaf_new(s, cap);
}

/*
 * Main and spare share their objects instead of trading places. A whole-sheaf
 * swap leaves main at the opposite end (full after an empty one, empty after
 * a full one), so a program whose number of live objects of a class wavers
 * around that point (larson: thousands of swaps per class and second, one
 * slow path every 60 operations of the class) pays a slow path at each
 * turn. Instead, with slot->lock held:
 *   move_from_spare  main empty, spare not: half a sheaf of the spare's top
 *                    objects pushed onto the current CPU's main (one rseq
 *                    section, os_rseq_push_many), then the pop;
 *   move_to_spare    main full, spare with room: half a sheaf of main's top
 *                    objects moved into the spare (os_rseq_pop_many), then
 *                    the push (checked as the fast path's).
 * Either leaves main half full, so the next slow path is half a sheaf of
 * net allocations or frees away. Both work on the CPU the caller runs on,
 * which may no longer be the locked slot's: the objects only move between
 * sheaves of the cache, and the spare is the locked slot's. When the rseq
 * step finds nothing to do (the current CPU's main, the locked slot's or
 * another after a migration, is full for the move from the spare / empty
 * for the move to it, or pc_sheaf_none), or the pop / push after the move
 * fails (another thread of that CPU emptied / filled it meanwhile), they
 * return NULL / 0 and the caller trades sheaves as before, with the spare
 * as the move left it (tests/unit/slab/sheaves.c move_after_migration).
 */
static unsigned move_batch(unsigned cap)
{
	return cap / 2 ? cap / 2 : 1;
}

static void *move_from_spare(struct pc_cache *s, struct pc_sheaf *spare, unsigned cap)
{
	unsigned k = PC_MIN(spare->count, move_batch(cap));
	if (k == 0)
		return NULL;
	void **from = &spare->objects[spare->count - k];
	unsigned moved = os_rseq_push_many(s->slots, from, k);
	if (moved == 0)
		return NULL;
	/* the first `moved` of from[] went: close the gap */
	memmove(from, from + moved, (k - moved) * sizeof(void *));
	spare->count -= moved;
	slab_stat(&s->cpu[os_cpu_current()], PC_SLAB_STAT_sheaf_move);
	return os_rseq_pop(s->slots);
}

/* 1 pushed, 0 not (trade sheaves), -1 obj is free already (double free). */
static int move_to_spare(struct pc_cache *s, struct pc_sheaf *spare, unsigned cap, void *obj)
{
	if (spare->capacity != cap || spare->count >= cap)
		return 0;
	unsigned k = PC_MIN(cap - spare->count, move_batch(cap));
	unsigned moved = os_rseq_pop_many(s->slots, &spare->objects[spare->count], k);
	if (moved == 0)
		return 0;
	spare->count += moved;
	slab_stat(&s->cpu[os_cpu_current()], PC_SLAB_STAT_sheaf_move);
	return os_rseq_push(s->slots, obj);
}

static void *cpu_alloc(struct pc_cache *s)
{
	unsigned cap = capacity_of(s);
	int32_t cpu = os_rseq_cpu_id();
	if (cap == 0 || cpu < 0) /* sheaves off, or this thread has no rseq */
		return bypass_alloc(s);
	struct pc_sheaf_slot *slot = &s->slots[cpu];
	unsigned node = pc_cpu_node((unsigned)cpu);
	void *obj = NULL;
	pc_spin_lock(&slot->lock);
	test_hook(s);
	if (slot->spare && (obj = move_from_spare(s, slot->spare, cap)) != NULL) {
		pc_spin_unlock(&slot->lock);
		return obj;
	}
	struct pc_sheaf *main = pc_load_relaxed(&slot->main), *fresh = slot->spare;
	if (fresh && fresh->count > 0) {
		slot->spare = NULL;
		slab_stat(&s->cpu[cpu], PC_SLAB_STAT_sheaf_swap);
	} else if ((fresh = barn_take_full(s, node)) == NULL &&
		   (fresh = empty_sheaf(s, slot, node, cap)) != NULL) {
		fresh->count = slab_alloc_bulk(s, fresh->objects, fresh->capacity);
		slab_stat(&s->cpu[cpu], PC_SLAB_STAT_sheaf_refill);
		if (fresh->count == fresh->capacity) /* not out of memory */
			sheaf_capacity_grow(s);
	}
	if (fresh && fresh->count > 0) {
		obj = fresh->objects[--fresh->count];
		install(s, slot, (unsigned)cpu, node, main, fresh);
	} else if (fresh) {
		barn_put(s, node, fresh); /* the slabs had nothing: out of memory */
	}
	pc_spin_unlock(&slot->lock);
	return fresh ? obj : bypass_alloc(s);
}

static void cpu_free(struct pc_cache *s, struct pc_page *slab, void *obj)
{
	unsigned cap = capacity_of(s);
	int32_t cpu = os_rseq_cpu_id();
	if (cap == 0 || cpu < 0) {
		bypass_free(s, slab, obj);
		return;
	}
	struct pc_sheaf_slot *slot = &s->slots[cpu];
	unsigned node = pc_cpu_node((unsigned)cpu);
	pc_spin_lock(&slot->lock);
	test_hook(s);
	int moved = slot->spare ? move_to_spare(s, slot->spare, cap, obj) : 0;
	if (moved != 0) {
		pc_spin_unlock(&slot->lock);
		if (pc_unlikely(moved < 0))
			pc_slab_double_free(s, obj);
		return;
	}
	struct pc_sheaf *main = pc_load_relaxed(&slot->main), *fresh = slot->spare;
	if (fresh && fresh->count < fresh->capacity && fresh->capacity == cap) {
		slot->spare = NULL;
		slab_stat(&s->cpu[cpu], PC_SLAB_STAT_sheaf_swap);
	} else {
		fresh = barn_take_empty(s, node);
		if (!fresh) {
			if ((fresh = sheaf_new(s, cap)) != NULL)
				sheaf_capacity_grow(s);
		}
	}
	if (fresh) {
		fresh->objects[fresh->count++] = obj;
		install(s, slot, (unsigned)cpu, node, main, fresh);
	}
	pc_spin_unlock(&slot->lock);
	if (!fresh) /* no memory for a sheaf */
		bypass_free(s, slab, obj);
}

/* ---- thread mode: per-thread sheaves ----------------------------------------------------- */
/*
 * The slow paths work under the thread's busy flag (a signal handler then
 * leaves the sheaves alone), take their entry's sheaf with sheaf_entry_take
 * (a compare-and-swap: a flusher of another thread may detach it at any
 * moment), so that it is theirs alone, and publish the next one with a
 * release store into the entry, which holds none then (flushers never
 * change none).
 */

/* Whether this thread may keep a sheaf of s (joining the registry of
 * threads that do, once); if not, its current one goes. Before the busy
 * flag is set: joining takes threads_lock. */
static bool thread_may_keep(struct pc_cache *s, pc_sheaf_entry *entry, unsigned cap)
{
	if (s->tindex != 0 && cap != 0 && !sheaf_thread_done && pc_life_thread_enroll() &&
	    sheaf_thread_join())
		return true;
	struct pc_sheaf *cur = sheaf_entry_take(entry);
	if (cur != &pc_sheaf_none)
		barn_put(s, pc_cpu_node(os_cpu_current()), cur);
	return false;
}

static bool thread_busy(void)
{
	return __atomic_load_n(&pc_thread_sheaf_busy, __ATOMIC_RELAXED) != 0;
}

static void thread_busy_set(void)
{
	/* Relaxed: a handler now leaves the sheaves alone; flushers wait. */
	__atomic_store_n(&pc_thread_sheaf_busy, 1, __ATOMIC_RELAXED);
	atomic_signal_fence(memory_order_seq_cst);
}

static void thread_busy_clear(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	/* Release: a flusher that sees it clear sees our sheaf writes. */
	__atomic_store_n(&pc_thread_sheaf_busy, 0, __ATOMIC_RELEASE);
}

static void *thread_alloc(struct pc_cache *s)
{
	pc_sheaf_entry *entry = &pc_thread_sheaves[s->tindex];
	unsigned cap = capacity_of(s);
	/* busy: we interrupted this thread's fast path (we are a signal
	 * handler); it holds no lock, so the slabs are safe to use. */
	if (thread_busy() || !thread_may_keep(s, entry, cap))
		return bypass_alloc(s);
	thread_busy_set();
	struct pc_sheaf *cur = sheaf_entry_take(entry), *fresh = cur;
	if (cur->count == 0) { /* else a handler refilled it meanwhile */
		unsigned node = pc_cpu_node(os_cpu_current());
		test_hook(s);
		if ((fresh = barn_take_full(s, node)) == NULL) {
			fresh = cur != &pc_sheaf_none && cur->capacity == cap ? cur : NULL;
			if (!fresh && (fresh = barn_take_empty(s, node)) == NULL)
				fresh = sheaf_new(s, cap);
			if (fresh) {
				fresh->count = slab_alloc_bulk(s, fresh->objects, fresh->capacity);
				stat_here(s, PC_SLAB_STAT_sheaf_refill);
				if (fresh->count == fresh->capacity)
					sheaf_capacity_grow(s);
			}
		}
		if (cur != &pc_sheaf_none && cur != fresh)
			barn_put(s, node, cur);
	}
	void *obj = fresh && fresh->count > 0 ? fresh->objects[--fresh->count] : NULL;
	if (fresh)
		__atomic_store_n(entry, fresh, __ATOMIC_RELEASE); /* its contents go with it */
	thread_busy_clear();
	return fresh ? obj : bypass_alloc(s);
}

static void thread_free(struct pc_cache *s, struct pc_page *slab, void *obj)
{
	pc_sheaf_entry *entry = &pc_thread_sheaves[s->tindex];
	unsigned cap = capacity_of(s);
	if (thread_busy() || !thread_may_keep(s, entry, cap)) {
		bypass_free(s, slab, obj);
		return;
	}
	thread_busy_set();
	struct pc_sheaf *cur = sheaf_entry_take(entry), *fresh = cur;
	if (cur->count >= cur->capacity) { /* else a handler made room meanwhile */
		unsigned node = pc_cpu_node(os_cpu_current());
		test_hook(s);
		if ((fresh = barn_take_empty(s, node)) == NULL) {
			if ((fresh = sheaf_new(s, cap)) != NULL)
				sheaf_capacity_grow(s);
		}
		if (cur != &pc_sheaf_none)
			barn_put(s, node, cur);
	}
	if (fresh) {
		fresh->objects[fresh->count++] = obj;
		__atomic_store_n(entry, fresh, __ATOMIC_RELEASE); /* its contents go with it */
	}
	thread_busy_clear();
	if (!fresh)
		bypass_free(s, slab, obj);
}

/* Thread exit (lifecycle): this thread leaves the registry, and its sheaves
 * go to the barns. */
void sheaf_thread_exit(void)
{
	pc_slab_reentry_drain(); /* while its sheaves still take frees */
	sheaf_thread_done = true;
	if (sheaf_mode != PC_SHEAF_MODE_THREAD)
		return;
	sheaf_enter();
	sheaf_thread_leave();
	unsigned node = pc_cpu_node(os_cpu_current());
	for (unsigned i = 1; i < PC_THREAD_SHEAVES; i++) {
		struct pc_sheaf *cur = sheaf_entry_take(&pc_thread_sheaves[i]);
		if (cur != &pc_sheaf_none)
			barn_put(sheaf_thread_cache(i), node, cur);
	}
	sheaf_leave();
}

/* ---- the slow paths --------------------------------------------------------------------- */
void *sheaf_alloc_slow(struct pc_cache *s)
{
	if (pc_unlikely(sheaf_depth != 0 || pc_page_reentered()))
		return reentrant_alloc(s);
	if (pc_unlikely(s->debug)) /* no sheaves: checked under list_lock */
		return slab_debug_alloc(s);
	uint64_t t0 = pc_stats_clock();
	sheaf_enter();
	void *obj = s->slots ? cpu_alloc(s) : thread_alloc(s);
	if (obj)
		sheaf_demand_add(s, 1);
	sheaf_leave();
	sheaf_decay_poll();
	pc_hist_add_since(&pc_sheaf_alloc_slow_ns, t0);
	if (!obj)
		errno = ENOMEM;
	return obj;
}

void sheaf_free_slow(struct pc_cache *s, struct pc_page *slab, void *obj)
{
	if (pc_pg_state(slab) == PC_PG_TAIL) /* obj's own page (free's fast path) */
		slab = pc_slab_head(slab, obj);
	if (pc_unlikely(sheaf_depth != 0 || pc_page_reentered())) {
		reentrant_free(s, obj);
		return;
	}
	if (pc_unlikely(s->debug)) {
		slab_debug_free(s, slab, obj);
		return;
	}
	sheaf_enter();
	if (s->slots)
		cpu_free(s, slab, obj);
	else
		thread_free(s, slab, obj);
	sheaf_demand_add(s, 1);
	sheaf_leave();
	sheaf_decay_poll();
}

void pc_slab_double_free(const struct pc_cache *s, const void *obj)
{
	pc_fatal("free(%p): double free detected (cache %s)", obj, s->name);
}

/* ---- flushing ------------------------------------------------------------------------- */
/* The decay's look at a slot (under its lock): which sheaves it holds and how
 * full main is (a racy read, as in sheaf_count_objects); 0 for none. */
static uint64_t slot_signature(struct pc_sheaf_slot *slot)
{
	struct pc_sheaf *main = pc_load_relaxed(&slot->main);
	if (main == &pc_sheaf_none && !slot->spare)
		return 0;
	uint64_t h = (uintptr_t)main * 31u + *(volatile uint32_t *)&main->count;
	return (h * 31u + (uintptr_t)slot->spare) | 1u;
}

/* rseq mode: detach every CPU's main and spare (the mains by a plain store
 * of pc_sheaf_none), fence once, then flush what was detached. With
 * idle_only (the decay), only the slots whose signature has not changed
 * since the previous decay pass; the others get their signature recorded. */
static unsigned flush_cpus(struct pc_cache *s, bool idle_only)
{
	struct pc_sheaf *detached = NULL;
	bool fence = false;
	unsigned n = 0;
	for (unsigned c = 0; c < os_cpu_count(); c++) {
		struct pc_sheaf_slot *slot = &s->slots[c];
		pc_spin_lock(&slot->lock);
		uint64_t sig = idle_only ? slot_signature(slot) : 0;
		if (idle_only && (sig == 0 || sig != slot->decay_sig)) {
			slot->decay_sig = sig; /* seen in use: look again next pass */
			pc_spin_unlock(&slot->lock);
			continue;
		}
		slot->decay_sig = 0;
		struct pc_sheaf *main = pc_load_relaxed(&slot->main);
		if (main != &pc_sheaf_none) {
			pc_store_relaxed(&slot->main, &pc_sheaf_none); /* ordered by the fence */
			main->next = detached; /* link: fast paths never touch it */
			detached = main;
			fence = true;
		}
		if (slot->spare) {
			slot->spare->next = detached;
			detached = slot->spare;
			slot->spare = NULL;
		}
		pc_spin_unlock(&slot->lock);
	}
	if (fence)
		os_rseq_fence(); /* now no fast path can commit to a detached main */
	while (detached) {
		struct pc_sheaf *next = detached->next;
		sheaf_flush_objects(s, detached);
		sheaf_free(detached);
		detached = next;
		n++;
	}
	return n;
}

void sheaf_flush_cache(struct pc_cache *s)
{
	if (s->internal)
		return;
	sheaf_enter();
	if (s->slots)
		flush_cpus(s, false);
	else if (s->tindex != 0)
		sheaf_threads_flush(s);
	for (unsigned i = 0; i < pc_node_count(); i++)
		barn_drain(s, i);
	stat_here(s, PC_SLAB_STAT_sheaf_flush_all);
	sheaf_leave();
}

unsigned sheaf_decay_cache(struct pc_cache *s)
{
	if (s->internal)
		return 0;
	unsigned n = 0;
	sheaf_enter();
	if (s->slots)
		n += flush_cpus(s, true);
	for (unsigned i = 0; i < pc_node_count(); i++)
		n += barn_decay(s, i);
	sheaf_past_decay(s);
	sheaf_leave();
	return n;
}

unsigned sheaf_decay_threads(void)
{
	if (sheaf_mode != PC_SHEAF_MODE_THREAD)
		return 0;
	sheaf_enter();
	unsigned n = sheaf_threads_decay();
	sheaf_leave();
	return n;
}

void sheaf_flush_threads(void)
{
	if (sheaf_mode != PC_SHEAF_MODE_THREAD)
		return;
	sheaf_enter();
	sheaf_threads_flush(NULL);
	sheaf_leave();
}

long sheaf_count_objects(struct pc_cache *s)
{
	long n = 0;
	if (s->internal)
		return 0;
	for (unsigned c = 0; s->slots && c < os_cpu_count(); c++) {
		struct pc_sheaf_slot *slot = &s->slots[c];
		pc_spin_lock(&slot->lock);
		/* Racy read of a live main's count: a statistic. */
		n += *(volatile uint32_t *)&pc_load_relaxed(&slot->main)->count;
		n += slot->spare ? slot->spare->count : 0;
		pc_spin_unlock(&slot->lock);
	}
	/* Thread mode: every live thread's (racy reads, see sheaf_thread.c). */
	if (!s->slots && s->tindex != 0 && sheaf_mode == PC_SHEAF_MODE_THREAD)
		n += sheaf_threads_count(s);
	for (unsigned i = 0; i < pc_node_count(); i++)
		n += barn_count_objects(s, i);
	return n;
}

bool sheaf_cache_holds(struct pc_cache *s)
{
	for (unsigned c = 0; s->slots && c < os_cpu_count(); c++) {
		struct pc_sheaf_slot *slot = &s->slots[c];
		pc_spin_lock(&slot->lock);
		bool held = pc_load_relaxed(&slot->main) != &pc_sheaf_none || slot->spare != NULL;
		pc_spin_unlock(&slot->lock);
		if (held)
			return true;
	}
	if (!s->slots && s->tindex != 0 && sheaf_mode == PC_SHEAF_MODE_THREAD &&
	    sheaf_threads_hold(s))
		return true;
	for (unsigned i = 0; i < pc_node_count(); i++)
		if (pc_load_relaxed(&s->barn[i]->nr_full) + pc_load_relaxed(&s->barn[i]->nr_empty) != 0 ||
		    pc_load_relaxed(&s->barn[i]->carry) != NULL)
			return true;
	return false;
}
