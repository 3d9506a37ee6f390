/*
 * lock/lock.c - the generic lock (struct pc_lock, kind fixed at init), its
 * statistics, the registry of locks, and the kind names.
 *
 * Owns:
 *  - pc_lock_stats_enabled, the global statistics switch (relaxed: a stale
 *    value only means one acquisition more or less is measured);
 *  - each thread's MCS nodes for generic MCS locks (lock_mcs_nodes, with a
 *    bitmask of slots in use): thread-local, so no locking;
 *  - the MCS nodes of locks held through pc_lock_acquire_for_fork: a global
 *    pool that grows in chunks mapped from the OS, under lock_fork_lock (a
 *    leaf pc_spin);
 *  - the registry: a singly linked list of registered locks, newest first.
 *    Writers serialise on lock_registry_lock (a leaf pc_spin); entries are
 *    never removed and their registry_next never changes once published, so
 *    readers walk it without a lock from an acquire load of the head.
 * Memory ordering: the lock kinds order critical sections themselves (see
 * spin.c, ticket.c, mcs.c, mutex.c). The fields mcs_owner_node and
 * acquired_ns are written only by the holder, inside the critical section,
 * so the lock orders them too. Statistics counters are relaxed atomics:
 * nothing is synchronised through them.
 */
#include "lock.h"

#include "../os/os.h"

#include <string.h>

#define PC_TLS __attribute__((tls_model("initial-exec")))

_Atomic bool pc_lock_stats_enabled = false;

static const char *const lock_kind_names[PC_LOCK_KIND_COUNT] = {
	[PC_LOCK_SPIN] = "spin",
	[PC_LOCK_TICKET] = "ticket",
	[PC_LOCK_MCS] = "mcs",
	[PC_LOCK_MUTEX] = "mutex",
};

const char *pc_lock_kind_name(enum pc_lock_kind k)
{
	return (unsigned)k < PC_LOCK_KIND_COUNT ? lock_kind_names[k] : "unknown";
}

int pc_lock_kind_parse(const char *name)
{
	for (int k = 0; name != NULL && k < PC_LOCK_KIND_COUNT; k++)
		if (strcmp(name, lock_kind_names[k]) == 0)
			return k;
	return -1;
}

/* ---- statistics ---------------------------------------------------------------------- */
unsigned pc_lock_hist_bucket(uint64_t ns)
{
	if (ns == 0)
		return 0;
	return PC_MIN(pc_log2(ns), (unsigned)PC_LOCK_HIST_BUCKETS - 1);
}

void pc_min_relaxed(_Atomic uint64_t *p, uint64_t v)
{
	v = PC_MAX(v, (uint64_t)1);
	uint64_t cur = pc_load_relaxed(p);
	while ((cur == 0 || v < cur) && !pc_cas_weak_relaxed(p, &cur, v))
		;
}

void pc_lock_stats_add_wait(struct pc_lock_stats *s, uint64_t ns)
{
	pc_add_relaxed(&s->wait_ns_total, ns);
	pc_max_relaxed(&s->wait_ns_max, ns);
	pc_min_relaxed(&s->wait_ns_min, ns);
	pc_add_relaxed(&s->wait_hist[pc_lock_hist_bucket(ns)], 1);
}

void pc_hist_add(struct pc_hist *h, uint64_t value)
{
	pc_add_relaxed(&h->count, 1);
	pc_add_relaxed(&h->sum, value);
	pc_add_relaxed(&h->bucket[pc_lock_hist_bucket(value)], 1);
}

void pc_hist_merge(struct pc_hist *dst, const struct pc_hist *src)
{
	struct pc_hist *s = (struct pc_hist *)(uintptr_t)src;
	pc_add_relaxed(&dst->count, pc_load_relaxed(&s->count));
	pc_add_relaxed(&dst->sum, pc_load_relaxed(&s->sum));
	for (unsigned i = 0; i < PC_LOCK_HIST_BUCKETS; i++)
		pc_add_relaxed(&dst->bucket[i], pc_load_relaxed(&s->bucket[i]));
}

void pc_lock_stats_merge(struct pc_lock_stats *dst, const struct pc_lock_stats *src)
{
	struct pc_lock_stats *s = (struct pc_lock_stats *)(uintptr_t)src;
	pc_add_relaxed(&dst->acquisitions, pc_load_relaxed(&s->acquisitions));
	pc_add_relaxed(&dst->contended, pc_load_relaxed(&s->contended));
	pc_add_relaxed(&dst->wait_ns_total, pc_load_relaxed(&s->wait_ns_total));
	pc_max_relaxed(&dst->wait_ns_max, pc_load_relaxed(&s->wait_ns_max));
	pc_add_relaxed(&dst->hold_ns_total, pc_load_relaxed(&s->hold_ns_total));
	pc_max_relaxed(&dst->hold_ns_max, pc_load_relaxed(&s->hold_ns_max));
	if (pc_load_relaxed(&s->wait_ns_min))
		pc_min_relaxed(&dst->wait_ns_min, pc_load_relaxed(&s->wait_ns_min));
	if (pc_load_relaxed(&s->hold_ns_min))
		pc_min_relaxed(&dst->hold_ns_min, pc_load_relaxed(&s->hold_ns_min));
	pc_add_relaxed(&dst->acq_bounces, pc_load_relaxed(&s->acq_bounces));
	pc_add_relaxed(&dst->con_bounces, pc_load_relaxed(&s->con_bounces));
	for (unsigned i = 0; i < PC_LOCK_HIST_BUCKETS; i++)
		pc_add_relaxed(&dst->wait_hist[i], pc_load_relaxed(&s->wait_hist[i]));
}

void pc_lock_stats_reset(struct pc_lock_stats *s)
{
	pc_store_relaxed(&s->acquisitions, 0);
	pc_store_relaxed(&s->contended, 0);
	pc_store_relaxed(&s->wait_ns_total, 0);
	pc_store_relaxed(&s->wait_ns_max, 0);
	pc_store_relaxed(&s->hold_ns_total, 0);
	pc_store_relaxed(&s->hold_ns_max, 0);
	pc_store_relaxed(&s->wait_ns_min, 0);
	pc_store_relaxed(&s->hold_ns_min, 0);
	pc_store_relaxed(&s->acq_bounces, 0);
	pc_store_relaxed(&s->con_bounces, 0);
	for (unsigned i = 0; i < PC_LOCK_HIST_BUCKETS; i++)
		pc_store_relaxed(&s->wait_hist[i], 0);
}

/* The stats to update for l now, or NULL (the usual case: statistics off). */
PC_INLINE struct pc_lock_stats *lock_stats_on(const struct pc_lock *l)
{
	if (pc_likely(!pc_load_relaxed(&pc_lock_stats_enabled)))
		return NULL;
	return l->stats;
}

/* Count an acquisition and start its hold time (holder only). A bounce, as
 * in /proc/lock_stat, is an acquisition on another CPU than the last one:
 * the lock's cache line moved. */
PC_NOINLINE void pc_lock_stats_acquired(struct pc_lock_stats *s, uint32_t *last_cpu,
					uint64_t *acquired_ns, uint64_t now, bool contended)
{
	uint32_t cpu = os_cpu_current() + 1; /* 0: no measured acquisition yet */
	pc_add_relaxed(&s->acquisitions, 1);
	if (*last_cpu != cpu) {
		if (*last_cpu != 0) {
			pc_add_relaxed(&s->acq_bounces, 1);
			if (contended)
				pc_add_relaxed(&s->con_bounces, 1);
		}
		*last_cpu = cpu;
	}
	*acquired_ns = now != 0 ? now : 1; /* 0 means "not measured" */
}

/* End a hold started at acquired_ns by pc_lock_stats_acquired (holder only). */
PC_NOINLINE void pc_lock_stats_held(struct pc_lock_stats *s, uint64_t acquired_ns)
{
	uint64_t held = os_now_ns() - acquired_ns;
	pc_add_relaxed(&s->hold_ns_total, held);
	pc_max_relaxed(&s->hold_ns_max, held);
	pc_min_relaxed(&s->hold_ns_min, held);
}

PC_INLINE void lock_stats_acquired(struct pc_lock *l, struct pc_lock_stats *s, uint64_t now,
				   bool contended)
{
	pc_lock_stats_acquired(s, &l->last_cpu, &l->acquired_ns, now, contended);
}

/* End the hold time started by lock_stats_acquired (holder only). */
static PC_NOINLINE void lock_stats_released(struct pc_lock *l)
{
	uint64_t since = l->acquired_ns;
	l->acquired_ns = 0;
	if (l->stats != NULL)
		pc_lock_stats_held(l->stats, since);
}

/* ---- per-thread MCS nodes of the generic lock ----------------------------------------- */
static __thread struct pc_mcs_node lock_mcs_nodes[PC_LOCK_MAX_NESTED] PC_TLS;
static __thread uint32_t lock_mcs_used PC_TLS; /* bit i: lock_mcs_nodes[i] is in use */

#define LOCK_MCS_ALL_USED ((1u << PC_LOCK_MAX_NESTED) - 1)
_Static_assert(PC_LOCK_MAX_NESTED < 32, "lock_mcs_used is a 32-bit mask");
_Static_assert(PC_LOCK_FORK_NODES % 64 == 0, "lock_fork_used is 64-bit words");

static PC_COLD __attribute__((noreturn)) void lock_mcs_overflow(void)
{
	pc_fatal("a thread holds or waits for more than %d MCS locks at once",
		 PC_LOCK_MAX_NESTED);
}

PC_INLINE struct pc_mcs_node *lock_mcs_node_get(void)
{
	uint32_t used = lock_mcs_used;
	if (pc_unlikely(used == LOCK_MCS_ALL_USED))
		lock_mcs_overflow();
	unsigned i = (unsigned)__builtin_ctz(~used);
	lock_mcs_used = used | (1u << i);
	return &lock_mcs_nodes[i];
}

/* True if n is one of the calling thread's nodes. */
PC_INLINE bool lock_mcs_node_mine(const struct pc_mcs_node *n)
{
	return n >= lock_mcs_nodes && n < lock_mcs_nodes + PC_LOCK_MAX_NESTED;
}

PC_INLINE void lock_mcs_node_put(struct pc_mcs_node *n)
{
	/* A node of another thread: released on a thread that did not acquire. */
	pc_assert(lock_mcs_node_mine(n));
	uint32_t bit = 1u << (unsigned)(n - lock_mcs_nodes);
	pc_assert(lock_mcs_used & bit);
	lock_mcs_used &= ~bit;
}

static bool lock_mcs_try(struct pc_lock *l)
{
	struct pc_mcs_node *n = lock_mcs_node_get();
	if (pc_mcs_trylock(&l->u.mcs, n)) {
		l->mcs_owner_node = n;
		return true;
	}
	lock_mcs_node_put(n);
	return false;
}

static void lock_mcs_acquire(struct pc_lock *l)
{
	struct pc_mcs_node *n = lock_mcs_node_get();
	pc_mcs_lock(&l->u.mcs, n);
	l->mcs_owner_node = n;
}

/* ---- MCS nodes for pc_lock_acquire_for_fork ------------------------------------------- */
/*
 * A prefork handler holds every lock of a class at once (all zones; every
 * list_lock of every cache on every node, which caches x nodes can take to
 * many thousands), more than PC_LOCK_MAX_NESTED, so those MCS nodes come from
 * a global pool that grows: chunks of PC_LOCK_FORK_NODES nodes, the first
 * static, more mapped from the OS when a fork needs them and kept for the
 * next fork. A bit per node in its chunk's used map; the chunk list and the
 * maps are under lock_fork_lock (a leaf). Only forking threads use it.
 */
struct lock_fork_chunk {
	struct lock_fork_chunk *next;
	uint64_t used[PC_LOCK_FORK_NODES / 64];
	struct pc_mcs_node nodes[PC_LOCK_FORK_NODES];
};
static struct lock_fork_chunk lock_fork_first;
static struct pc_spin lock_fork_lock;

/* A free node of chunk c, marked used, or NULL. Under lock_fork_lock. */
static struct pc_mcs_node *lock_fork_chunk_take(struct lock_fork_chunk *c)
{
	for (unsigned w = 0; w < PC_ARRAY_SIZE(c->used); w++) {
		if (c->used[w] == UINT64_MAX)
			continue;
		unsigned b = (unsigned)__builtin_ctzll(~c->used[w]);
		c->used[w] |= 1ull << b;
		return &c->nodes[w * 64 + b];
	}
	return NULL;
}

static struct pc_mcs_node *lock_fork_node_get(void)
{
	pc_spin_lock(&lock_fork_lock);
	struct lock_fork_chunk *c = &lock_fork_first;
	struct pc_mcs_node *n;
	while (!(n = lock_fork_chunk_take(c))) {
		if (!c->next) {
			/* zeroed by the OS: every node free */
			c->next = os_map(pc_align_up(sizeof(*c), PC_PAGE_SIZE), PC_PAGE_SIZE);
			if (!c->next)
				pc_fatal("out of memory for the MCS nodes of a fork");
		}
		c = c->next;
	}
	pc_spin_unlock(&lock_fork_lock);
	return n;
}

/* Give back n if it is a fork node; false if it is none (then it is some
 * thread's own node). */
static bool lock_fork_node_put(struct pc_mcs_node *n)
{
	pc_spin_lock(&lock_fork_lock);
	for (struct lock_fork_chunk *c = &lock_fork_first; c; c = c->next) {
		if (n < c->nodes || n >= c->nodes + PC_LOCK_FORK_NODES)
			continue;
		size_t i = (size_t)(n - c->nodes);
		pc_assert(c->used[i / 64] & (1ull << (i % 64)));
		c->used[i / 64] &= ~(1ull << (i % 64));
		pc_spin_unlock(&lock_fork_lock);
		return true;
	}
	pc_spin_unlock(&lock_fork_lock);
	return false;
}

static void lock_mcs_release(struct pc_lock *l)
{
	/* Read and clear before unlocking: the next holder writes it. */
	struct pc_mcs_node *n = l->mcs_owner_node;
	l->mcs_owner_node = NULL;
	pc_mcs_unlock(&l->u.mcs, n);
	if (pc_likely(lock_mcs_node_mine(n)))
		lock_mcs_node_put(n);
	else if (!lock_fork_node_put(n))
		lock_mcs_node_put(n); /* another thread's: asserts */
}

/* ---- dispatch on the kind ------------------------------------------------------------- */
PC_INLINE bool lock_try_kind(struct pc_lock *l)
{
	switch (l->kind) {
	case PC_LOCK_SPIN: return pc_spin_trylock(&l->u.spin);
	case PC_LOCK_TICKET: return pc_ticket_trylock(&l->u.ticket);
	case PC_LOCK_MCS: return lock_mcs_try(l);
	default: return pc_mutex_trylock(&l->u.mutex);
	}
}

static void lock_wait_kind(struct pc_lock *l)
{
	switch (l->kind) {
	case PC_LOCK_SPIN: pc_spin_lock(&l->u.spin); break;
	case PC_LOCK_TICKET: pc_ticket_lock(&l->u.ticket); break;
	case PC_LOCK_MCS: lock_mcs_acquire(l); break;
	default: pc_mutex_lock(&l->u.mutex); break;
	}
}

PC_INLINE void lock_release_kind(struct pc_lock *l)
{
	switch (l->kind) {
	case PC_LOCK_SPIN: pc_spin_unlock(&l->u.spin); break;
	case PC_LOCK_TICKET: pc_ticket_unlock(&l->u.ticket); break;
	case PC_LOCK_MCS: lock_mcs_release(l); break;
	default: pc_mutex_unlock(&l->u.mutex); break;
	}
}

/* ---- the generic lock ----------------------------------------------------------------- */
void pc_lock_init(struct pc_lock *l, const char *name, enum pc_lock_kind kind)
{
	pc_assert((unsigned)kind < PC_LOCK_KIND_COUNT);
	memset(l, 0, sizeof(*l));
	l->kind = (uint8_t)kind;
	l->name = name;
	pc_lock_reinit(l);
}

void pc_lock_reinit(struct pc_lock *l)
{
	switch (l->kind) {
	case PC_LOCK_SPIN: pc_spin_init(&l->u.spin); break;
	case PC_LOCK_TICKET: pc_ticket_init(&l->u.ticket); break;
	case PC_LOCK_MCS: pc_mcs_init(&l->u.mcs); break;
	default: pc_mutex_init(&l->u.mutex); break;
	}
	/* After fork the surviving thread may have held l: free its node. */
	struct pc_mcs_node *n = l->mcs_owner_node;
	if (n != NULL && lock_mcs_node_mine(n))
		lock_mcs_used &= ~(1u << (unsigned)(n - lock_mcs_nodes));
	else if (n != NULL)
		lock_fork_node_put(n);
	l->mcs_owner_node = NULL;
	l->acquired_ns = 0;
}

void (*_Atomic pc_lock_contended_hook)(struct pc_lock *l);

/* Contended: wait, measuring the wait when statistics are on. */
static PC_NOINLINE void lock_acquire_slow(struct pc_lock *l)
{
	struct pc_lock_stats *s = lock_stats_on(l);
	uint64_t start = s != NULL ? os_now_ns() : 0;
	void (*hook)(struct pc_lock *) = pc_load_relaxed(&pc_lock_contended_hook);
	if (pc_unlikely(hook != NULL))
		hook(l);
	lock_wait_kind(l);
	if (s == NULL)
		return;
	uint64_t now = os_now_ns();
	pc_add_relaxed(&s->contended, 1);
	pc_lock_stats_add_wait(s, now - start);
	lock_stats_acquired(l, s, now, true);
}

/* Fast path: one try (uncontended); stats cost one branch when off. */
void pc_lock_acquire(struct pc_lock *l)
{
	PC_WITNESS_ACQUIRE(l, l->rank, true); /* checked before we wait */
	if (pc_likely(lock_try_kind(l))) {
		struct pc_lock_stats *s = lock_stats_on(l);
		if (pc_unlikely(s != NULL))
			lock_stats_acquired(l, s, os_now_ns(), false);
		return;
	}
	lock_acquire_slow(l);
}

void pc_lock_acquire_for_fork(struct pc_lock *l)
{
	PC_WITNESS_ACQUIRE(l, l->rank, true); /* in fork mode (witness.c) */
	if (l->kind != PC_LOCK_MCS) {
		lock_wait_kind(l);
		return;
	}
	struct pc_mcs_node *n = lock_fork_node_get();
	pc_mcs_lock(&l->u.mcs, n);
	l->mcs_owner_node = n;
}

bool pc_lock_try(struct pc_lock *l)
{
	if (!lock_try_kind(l))
		return false;
	PC_WITNESS_ACQUIRE(l, l->rank, false);
	struct pc_lock_stats *s = lock_stats_on(l);
	if (pc_unlikely(s != NULL))
		lock_stats_acquired(l, s, os_now_ns(), false);
	return true;
}

void pc_lock_release(struct pc_lock *l)
{
	PC_WITNESS_RELEASE(l, l->rank);
	if (pc_unlikely(l->acquired_ns != 0))
		lock_stats_released(l);
	lock_release_kind(l);
}

bool pc_lock_is_locked(const struct pc_lock *l)
{
	/* Racy by contract (assertions only): relaxed loads. */
	switch (l->kind) {
	case PC_LOCK_SPIN: return pc_load_relaxed(&l->u.spin.locked) != 0;
	case PC_LOCK_TICKET:
		return pc_load_relaxed(&l->u.ticket.next) != pc_load_relaxed(&l->u.ticket.owner);
	case PC_LOCK_MCS: return pc_load_relaxed(&l->u.mcs.tail) != NULL;
	default: return pc_load_relaxed(&l->u.mutex.state) != 0;
	}
}

void pc_lock_thread_exit(void)
{
	pc_assert(lock_mcs_used == 0); /* exiting while holding a generic MCS lock */
	pc_mutex_thread_exit();
}

/* ---- registry ------------------------------------------------------------------------- */
static struct pc_spin lock_registry_lock;
static _Atomic(struct pc_lock *) lock_registry_head;

/* O(n) check that l is not registered yet (registry lock held). */
static PC_UNUSED bool lock_registry_contains(const struct pc_lock *l)
{
	for (const struct pc_lock *p = pc_load_relaxed(&lock_registry_head); p; p = p->registry_next)
		if (p == l)
			return true;
	return false;
}

void pc_lock_register(struct pc_lock *l, struct pc_lock_stats *stats)
{
	l->stats = stats;
	pc_spin_lock(&lock_registry_lock);
	pc_assert_expensive(!lock_registry_contains(l));
	l->registry_next = pc_load_relaxed(&lock_registry_head);
	/* release: l's name, stats and registry_next reach pc_lock_foreach. */
	pc_store_release(&lock_registry_head, l);
	pc_spin_unlock(&lock_registry_lock);
}

void pc_lock_foreach(void (*fn)(struct pc_lock *l, void *arg), void *arg)
{
	/* acquire: pairs with the release store in pc_lock_register. */
	for (struct pc_lock *l = pc_load_acquire(&lock_registry_head); l; l = l->registry_next)
		if (l->stats != NULL)
			fn(l, arg);
}

void pc_lock_fork_child(void)
{
	pc_spin_init(&lock_registry_lock);
	pc_spin_init(&lock_fork_lock);
	pc_mutex_fork_child();
}

/* The lock layer's lifecycle. The layer has no init of its own (locks are
 * zero-initialised or pc_lock_init'ed by the layers above), so the entries
 * (and the witness's, in debug builds) are registered by
 * pc_lock_layer_start: from the page layer's init, which every allocation
 * runs before it takes any allocator lock, so that a fork made before this
 * library's constructors ran finds them too (os/lifecycle.c, "registering
 * the fork handlers"), and from a constructor, for programs of the lower
 * layers alone. */
static const struct pc_life lock_life = {
	.name = "lock",
	.rank = PC_LIFE_RANK_LOCK,
	.postfork_child = pc_lock_fork_child,
	.thread_exit = pc_lock_thread_exit,
};

static _Atomic uint32_t lock_layer_state;
static bool lock_layer_start_once(void)
{
	pc_life_register(&lock_life);
#if PC_DEBUG >= 2
	pc_witness_register();
#endif
	return true;
}
void pc_lock_layer_start(void)
{
	pc_once(&lock_layer_state, lock_layer_start_once);
}

__attribute__((constructor(101))) static void lock_life_register(void)
{
	pc_lock_layer_start();
}
