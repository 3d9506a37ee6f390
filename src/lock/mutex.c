/*
 * lock/mutex.c - the sleeping mutex (struct pc_mutex): a futex word in the
 * style of Drepper's "Futexes Are Tricky" mutex 2, plus bounded optimistic
 * spinning whose spinners queue in an OSQ, the cancellable MCS queue of
 * seed 004 (Linux kernel/locking/osq_lock.c). Written from the algorithm's
 * description; the kernel's code was not copied.
 *
 * Owns: the OSQ node pool (osq_pool, never freed; a node is assigned to one
 * thread at a time) with its free list under osq_pool_lock, the spin
 * counters and the spin budget tunable (relaxed atomics). Lock order:
 * osq_pool_lock is a leaf, taken with no mutex held by this file.
 *
 * The mutex word: 0 free, 1 held, 2 held and a thread may sleep on it.
 *   lock:   CAS 0 -> 1; else spin (bounded, OSQ head only), then
 *           while (xchg(state, 2) != 0) futex_wait(state, 2);
 *   unlock: if (xchg(state, 0) == 2) futex_wake(state, 1).
 * No lost wake-up: a thread sleeps only while the word is 2 (the kernel
 * compares atomically), and the word leaves 2 only through an unlock that
 * then wakes one sleeper; a woken thread always stores 2 again before it
 * sleeps, so "someone may sleep" is never forgotten while someone does.
 * A spinner's CAS 0 -> 1 may pass sleepers (as the kernel's spinners do);
 * that only costs the woken sleeper one more round.
 *
 * Memory ordering (mutex word): every successful take (CAS 0 -> 1, or the
 * exchange to 2 that reads 0) is acquire and reads the release exchange of the
 * last unlock; so critical sections are ordered. The OSQ orders nothing but
 * itself: it only decides who may spin on the word; its orders are given at
 * each call site.
 */
#include "lock.h"

#include "../os/os.h"

/* ---- the OSQ node pool ------------------------------------------------------------- */
/*
 * Spin queue node. Nodes are never freed, so a stale pointer to one (held by
 * a thread that is unqueuing next to it) only ever reads or fails a CAS on a
 * live node, as in the kernel where the nodes are per-CPU.
 */
struct osq_node {
	_Atomic(struct osq_node *) next; /* successor in the queue, or NULL */
	_Atomic(struct osq_node *) prev; /* predecessor, while queued */
	_Atomic uint32_t locked;         /* 1: the predecessor made us the head */
} PC_CACHE_ALIGNED;

#define OSQ_NO_NODE UINT32_MAX /* osq_self_id: the pool was empty */

static struct osq_node osq_pool[PC_OSQ_POOL_SIZE];
static struct pc_spin osq_pool_lock;          /* protects the three below */
static uint32_t osq_pool_fresh;               /* ids 1..fresh were handed out */
static uint32_t osq_free_ids[PC_OSQ_POOL_SIZE]; /* ids given back, a stack */
static uint32_t osq_free_count;
/* This thread's node: pool index + 1, 0 none yet, OSQ_NO_NODE none left. */
static __thread uint32_t osq_self_id __attribute__((tls_model("initial-exec")));

_Atomic uint32_t pc_mutex_spin_pauses = PC_MUTEX_SPIN_PAUSES;

static struct {
	_Atomic uint64_t spin_acquired, spin_timeout, unqueued, no_node, sleeps;
} mutex_counters PC_CACHE_ALIGNED;

/* The tail encodes a node as its pool index + 1, so 0 means "empty". */
PC_INLINE uint32_t osq_id(const struct osq_node *n) { return (uint32_t)(n - osq_pool) + 1; }
PC_INLINE struct osq_node *osq_node_of(uint32_t id) { return &osq_pool[id - 1]; }

/* First contended lock of this thread: take a node from the pool. */
static PC_NOINLINE struct osq_node *osq_node_assign(void)
{
	uint32_t id = OSQ_NO_NODE;
	pc_spin_lock(&osq_pool_lock);
	if (osq_free_count > 0)
		id = osq_free_ids[--osq_free_count];
	else if (osq_pool_fresh < PC_OSQ_POOL_SIZE)
		id = ++osq_pool_fresh;
	pc_spin_unlock(&osq_pool_lock);
	osq_self_id = id;
	/* The node goes back at thread exit (pc_lock_thread_exit); enrolling is
	 * safe here, under the caller's locks: it never allocates. If it cannot
	 * be armed the node stays taken, and a full pool only stops spinning. */
	if (id != OSQ_NO_NODE)
		pc_life_thread_enroll();
	return id == OSQ_NO_NODE ? NULL : osq_node_of(id);
}

/* The calling thread's node, or NULL when the pool is exhausted. */
PC_INLINE struct osq_node *osq_node_self(void)
{
	uint32_t id = osq_self_id;
	if (pc_likely(id != 0))
		return id == OSQ_NO_NODE ? NULL : osq_node_of(id);
	return osq_node_assign();
}

void pc_mutex_thread_exit(void)
{
	uint32_t id = osq_self_id;
	osq_self_id = 0;
	if (id == 0 || id == OSQ_NO_NODE)
		return;
	pc_spin_lock(&osq_pool_lock);
	osq_free_ids[osq_free_count++] = id;
	pc_spin_unlock(&osq_pool_lock);
}

void pc_mutex_fork_child(void)
{
	uint32_t self = osq_self_id;
	pc_spin_init(&osq_pool_lock); /* its holder may not exist in the child */
	osq_free_count = 0;
	for (uint32_t id = 1; id <= osq_pool_fresh; id++)
		if (id != self)
			osq_free_ids[osq_free_count++] = id;
}

void pc_mutex_spin_counters(struct pc_mutex_spin_counters *out)
{
	out->spin_acquired = pc_load_relaxed(&mutex_counters.spin_acquired);
	out->spin_timeout = pc_load_relaxed(&mutex_counters.spin_timeout);
	out->unqueued = pc_load_relaxed(&mutex_counters.unqueued);
	out->no_node = pc_load_relaxed(&mutex_counters.no_node);
	out->sleeps = pc_load_relaxed(&mutex_counters.sleeps);
}

/* ---- the OSQ ------------------------------------------------------------------------ */
/*
 * The OSQ is an MCS queue of would-be spinners whose members may leave
 * before their turn. Its head is the one thread allowed to spin on the mutex
 * word; everyone behind it spins on its own node's `locked`, so a release of
 * the mutex is fought over by one spinner, not by all (seed 004). tail holds
 * the pool id (index + 1) of the last node, 0 when empty, as the kernel
 * stores CPU numbers. A thread owns one node and is in at most one queue at
 * a time: it queues only inside pc_mutex_lock, which never nests.
 *   join:   swap our id into tail; an empty queue makes us head at once,
 *           otherwise link behind prev (node->prev, then prev->next) and spin
 *           until prev hands us the head (locked = 1) or the budget runs out;
 *   leave:  as head, osq_unlock passes the head to our successor or empties
 *           the queue; before the head, osq_unqueue unlinks us (steps A-C).
 * Both ways of leaving may race with a neighbour leaving at the same time;
 * osq_wait_next is where they meet: whoever swaps a node's next to NULL owns
 * that link, and a node is out of the queue only once its successor (or the
 * tail) no longer points to it.
 */
/*
 * Wait until the node behind us links in, or until we are the tail: then
 * swing the tail back to `to_prev` (our predecessor, or NULL when we are the
 * head leaving), which takes us out of the queue. Returns our successor, now
 * detached from us (node->next reset to NULL), or NULL if we were the last.
 */
static struct osq_node *osq_wait_next(struct pc_osq *q, struct osq_node *node,
				      struct osq_node *to_prev)
{
	uint32_t self = osq_id(node), to = to_prev ? osq_id(to_prev) : 0;
	struct pc_spinwait w;
	pc_spinwait_init(&w);
	for (;;) {
		uint32_t cur = self;
		/* acq_rel: release our earlier unlink (prev->next = NULL) before the
		 * next enqueuer, which swaps tail, can link to prev. */
		if (pc_load_relaxed(&q->tail) == self && pc_cas_strong_acq_rel(&q->tail, &cur, to))
			return NULL;
		if (pc_load_relaxed(&node->next) != NULL) {
			/* acq_rel: acquire the successor's node->prev written before its
			 * release link; the swap claims it against its own unqueue. */
			struct osq_node *next = pc_xchg_acq_rel(&node->next, NULL);
			if (next != NULL)
				return next;
		}
		pc_spinwait_pause(&w);
	}
}

/* Spin on our own node until made head; false once the budget is spent. */
static bool osq_wait_head(struct osq_node *node, uint32_t *budget)
{
	/* acquire: pairs with the release hand-off in osq_unlock. */
	while (pc_load_acquire(&node->locked) == 0) {
		if (*budget == 0)
			return false;
		(*budget)--;
		pc_cpu_relax();
	}
	return true;
}

/*
 * Leave the queue before reaching its head (the spin budget is spent).
 *  A: unlink from prev: CAS prev->next from us to NULL. It fails only while
 *     prev hands the head to us (then node->locked becomes 1: we are head
 *     after all, return true) or while prev itself unqueues (its step C gives
 *     us a new node->prev: re-read it and retry).
 *  B: stabilise next: osq_wait_next either swings tail back to prev (we were
 *     last) or detaches our successor.
 *  C: link our successor to prev: next->prev first, then prev->next, so that
 *     prev, once it sees next, may unqueue and rewrite next->prev itself.
 */
static bool osq_unqueue(struct pc_osq *q, struct osq_node *node, struct osq_node *prev)
{
	struct pc_spinwait w;
	pc_spinwait_init(&w);
	for (;;) { /* step A */
		struct osq_node *expected = node;
		/* acq_rel: orders our unlink with prev's swap of prev->next. */
		if (pc_load_relaxed(&prev->next) == node &&
		    pc_cas_strong_acq_rel(&prev->next, &expected, NULL))
			break;
		/* acquire: pairs with the release hand-off in osq_unlock. */
		if (pc_load_acquire(&node->locked))
			return true;
		pc_spinwait_pause(&w);
		/* relaxed: we need no data behind the new prev, only its atomics. */
		prev = pc_load_relaxed(&node->prev);
	}
	struct osq_node *next = osq_wait_next(q, node, prev); /* step B */
	if (next == NULL)
		return false;
	pc_store_relaxed(&next->prev, prev); /* step C */
	/* release: next->prev = prev is visible before prev can see next. */
	pc_store_release(&prev->next, next);
	return false;
}

uint32_t (*_Atomic pc_mutex_spin_hook)(struct pc_mutex *m, enum pc_mutex_spin_point at,
				       uint32_t budget);

/* The budget to use from point `at` on: the test seam's choice, if set. */
PC_INLINE uint32_t mutex_spin_budget(struct pc_mutex *m, enum pc_mutex_spin_point at,
				     uint32_t budget)
{
	uint32_t (*hook)(struct pc_mutex *, enum pc_mutex_spin_point, uint32_t) =
		pc_load_relaxed(&pc_mutex_spin_hook);
	return pc_unlikely(hook != NULL) ? hook(m, at, budget) : budget;
}

/*
 * Join the spin queue; true when we are its head (the only thread that spins
 * on the mutex word), false when the budget ran out and we left the queue.
 */
static bool osq_lock(struct pc_osq *q, struct osq_node *node, uint32_t *budget)
{
	pc_store_relaxed(&node->locked, 0);
	pc_store_relaxed(&node->next, NULL);
	/* acq_rel: release our reset node to the successor that reads our id
	 * from tail; acquire prev's reset node before we write prev->next. */
	uint32_t old = pc_xchg_acq_rel(&q->tail, osq_id(node));
	if (old == 0)
		return true;
	struct osq_node *prev = osq_node_of(old);
	pc_store_relaxed(&node->prev, prev);
	/* release: node->prev is stored before prev can see us, and so before
	 * prev's own unqueue (step C) may overwrite it. */
	pc_store_release(&prev->next, node);
	*budget = mutex_spin_budget(PC_CONTAINER_OF(q, struct pc_mutex, spinq),
				    PC_MUTEX_SPIN_QUEUED, *budget);
	if (osq_wait_head(node, budget))
		return true;
	return osq_unqueue(q, node, prev);
}

/* Give up the head of the queue: to our successor, or empty the queue. */
static void osq_unlock(struct pc_osq *q, struct osq_node *node)
{
	uint32_t cur = osq_id(node);
	/* release: our use of the queue ends before the next enqueuer starts. */
	if (pc_likely(pc_cas_strong_release(&q->tail, &cur, 0)))
		return;
	/* acq_rel: claims the successor against its own unqueue (step A). */
	struct osq_node *next = pc_xchg_acq_rel(&node->next, NULL);
	if (next == NULL)
		next = osq_wait_next(q, node, NULL);
	/* release: the head role passes to next (pairs with osq_wait_head). */
	if (next != NULL)
		pc_store_release(&next->locked, 1);
}

/* ---- the mutex ------------------------------------------------------------------------ */
void pc_mutex_reinit(struct pc_mutex *m)
{
	pc_store_relaxed(&m->state, 0);
	pc_store_relaxed(&m->spinq.tail, 0);
}

void pc_mutex_init(struct pc_mutex *m)
{
	pc_mutex_reinit(m);
	m->rank = PC_LOCK_RANK_NONE;
}

bool pc_mutex_trylock(struct pc_mutex *m)
{
	uint32_t expected = 0;
	/* acquire: pairs with the release exchange in pc_mutex_unlock. */
	bool got = pc_load_relaxed(&m->state) == 0 &&
		   pc_cas_strong_acquire(&m->state, &expected, 1);
	if (got)
		PC_WITNESS_ACQUIRE(m, m->rank, false);
	return got;
}

/* As head of the spin queue: take the word when it reads 0, within budget. */
static bool mutex_spin_on_word(struct pc_mutex *m, uint32_t budget)
{
	for (;;) {
		uint32_t s = pc_load_relaxed(&m->state);
		/* acquire: pairs with the release exchange in pc_mutex_unlock. */
		if (s == 0 && pc_cas_strong_acquire(&m->state, &s, 1))
			return true;
		if (budget == 0)
			return false;
		budget--;
		pc_cpu_relax();
	}
}

/* Bounded optimistic spinning; true if it took the mutex. */
static bool mutex_optimistic_spin(struct pc_mutex *m)
{
	uint32_t budget = pc_load_relaxed(&pc_mutex_spin_pauses);
	if (budget == 0)
		return false;
	struct osq_node *node = osq_node_self();
	if (node == NULL) {
		pc_add_relaxed(&mutex_counters.no_node, 1);
		return false;
	}
	if (!osq_lock(&m->spinq, node, &budget)) {
		pc_add_relaxed(&mutex_counters.unqueued, 1);
		return false;
	}
	budget = mutex_spin_budget(m, PC_MUTEX_SPIN_HEAD, budget);
	bool got = mutex_spin_on_word(m, budget);
	osq_unlock(&m->spinq, node);
	pc_add_relaxed(got ? &mutex_counters.spin_acquired : &mutex_counters.spin_timeout, 1);
	return got;
}

/* Drepper's mutex 2 slow path: mark "sleepers" (2) and sleep until we
 * exchange a 0 out, i.e. take the mutex (with the mark still set). */
static PC_NOINLINE void mutex_lock_slow(struct pc_mutex *m)
{
	if (mutex_optimistic_spin(m))
		return;
	/* acquire: reading 0 takes the mutex released by pc_mutex_unlock. */
	while (pc_xchg_acquire(&m->state, 2) != 0) {
		pc_add_relaxed(&mutex_counters.sleeps, 1);
		os_futex_wait(&m->state, 2);
	}
}

void pc_mutex_lock(struct pc_mutex *m)
{
	PC_WITNESS_ACQUIRE(m, m->rank, true); /* checked before we wait */
	uint32_t expected = 0;
	/* acquire: pairs with the release exchange in pc_mutex_unlock. */
	if (pc_likely(pc_cas_strong_acquire(&m->state, &expected, 1)))
		return;
	mutex_lock_slow(m);
}

static PC_NOINLINE void mutex_wake(struct pc_mutex *m)
{
	os_futex_wake(&m->state, 1);
}

void pc_mutex_unlock(struct pc_mutex *m)
{
	PC_WITNESS_RELEASE(m, m->rank);
	/* release: publishes the critical section to the next taker. */
	uint32_t old = pc_xchg_release(&m->state, 0);
	pc_assert(old != 0);
	if (pc_unlikely(old == 2))
		mutex_wake(m);
}
