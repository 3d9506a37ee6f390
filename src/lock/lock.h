/*
 * lock/lock.h - the lock layer (seed 004): four lock kinds and a generic lock
 * whose kind is chosen at start-up, each able to keep statistics.
 *
 *   pc_spin    test-and-set spinlock, test-and-test-and-set with exponential
 *              backoff; after a bounded spin it yields the CPU (threads can
 *              outnumber CPUs in user space).
 *   pc_ticket  ticket lock: strict FIFO; waiters spin on the owner counter.
 *   pc_mcs     MCS queued lock: strict FIFO; each waiter spins on its own
 *              node, so a release touches one waiter's cache line only.
 *   pc_spin_stat  a pc_spin that keeps the statistics below (the per-CPU
 *              page list locks).
 *   pc_mutex   sleeping mutex: a futex word plus an optimistic-spin queue
 *              (an MCS-style "OSQ" whose waiters can leave the queue). Only the
 *              head of the spin queue spins on the mutex word, as seed 004's
 *              patch does; when spinning runs out (user space cannot see
 *              whether the owner is on a CPU, so spinning is bounded) the
 *              spinner leaves the queue and sleeps on the futex.
 *
 * Rules for callers:
 *  - No lock here is recursive. Release on the thread that acquired.
 *  - MCS nodes of the generic lock come from a small per-thread pool, so a
 *    thread may hold at most PC_LOCK_MAX_NESTED generic MCS locks at once
 *    (more is fatal), released in any order; pc_lock_acquire_for_fork is the
 *    exception, for prefork handlers.
 *  - Nothing here is async-signal-safe: never lock from a signal handler.
 *  - A lock may be reset with pc_lock_reinit() only when no thread can hold
 *    or wait for it (in the child after fork()).
 *
 * Statistics (like /proc/lock_stat): kept only while pc_lock_stats_enabled is
 * true and the lock has stats (pc_lock_register). When off, the cost is one
 * well-predicted branch on a read-mostly global per acquisition and one on a
 * holder-only field at release; no clock is read. Counters are relaxed
 * atomics: they are statistics, never used for synchronisation. The generic
 * acquire first tries once; only when that fails is it "contended" and its
 * wait measured. Acquisitions through pc_lock_acquire_for_fork are not
 * counted.
 */
#ifndef PC_LOCK_H
#define PC_LOCK_H

#include "../os/os.h"

#define PC_LOCK_HIST_BUCKETS 40 /* log2 buckets of nanoseconds: [2^i, 2^(i+1)) */
#define PC_LOCK_MAX_NESTED   8

enum pc_lock_kind {
	PC_LOCK_SPIN = 0,
	PC_LOCK_TICKET = 1,
	PC_LOCK_MCS = 2,
	PC_LOCK_MUTEX = 3,
	PC_LOCK_KIND_COUNT
};
/* "spin", "ticket", "mcs", "mutex"; parse returns -1 on an unknown name. */
const char *pc_lock_kind_name(enum pc_lock_kind k);
int pc_lock_kind_parse(const char *name);

/* ---- statistics ----------------------------------------------------------- */
struct pc_lock_stats {
	_Atomic uint64_t acquisitions;  /* successful acquisitions (incl. try) */
	_Atomic uint64_t contended;     /* acquisitions that had to wait */
	_Atomic uint64_t wait_ns_total; /* time waited, contended acquisitions */
	_Atomic uint64_t wait_ns_max;
	_Atomic uint64_t wait_ns_min;   /* shortest contended wait (>= 1), 0 = none */
	_Atomic uint64_t hold_ns_total; /* time held, all acquisitions */
	_Atomic uint64_t hold_ns_max;
	_Atomic uint64_t hold_ns_min;   /* shortest hold (>= 1), 0 = none */
	_Atomic uint64_t acq_bounces;   /* acquired on another CPU than last time */
	_Atomic uint64_t con_bounces;   /* ... of those, contended ones */
	_Atomic uint64_t wait_hist[PC_LOCK_HIST_BUCKETS];
};
extern _Atomic bool pc_lock_stats_enabled;
/* Lower *p to v (at least 1; 0 in *p means "none yet"). Relaxed: statistics. */
void pc_min_relaxed(_Atomic uint64_t *p, uint64_t v);

/*
 * A log2 histogram of values (nanoseconds, pages, ...) with their count and
 * sum, for the latency histograms of the statistics layer (pcp refill and
 * drain, slab slow path). Bucket i counts values in [2^i, 2^(i+1)); 0 and 1
 * go to bucket 0. Relaxed atomics: statistics only.
 *
 * The hooks in other layers are one line each, and cost one predicted
 * branch while statistics are off:
 *     uint64_t t0 = pc_stats_clock();   ...   pc_hist_add_since(&h, t0);
 */
struct pc_hist {
	_Atomic uint64_t count, sum;
	_Atomic uint64_t bucket[PC_LOCK_HIST_BUCKETS];
};
void pc_hist_add(struct pc_hist *h, uint64_t value);
/* Add every bucket, the count and the sum of src into dst. */
void pc_hist_merge(struct pc_hist *dst, const struct pc_hist *src);
/* A start time while statistics are on, else 0 (no clock read). */
PC_INLINE uint64_t pc_stats_clock(void)
{
	if (pc_likely(!pc_load_relaxed(&pc_lock_stats_enabled)))
		return 0;
	return os_now_ns() | 1; /* never 0: 0 means "not measured" */
}
/* Add the time since t0 (from pc_stats_clock) to h; nothing when t0 is 0. */
PC_INLINE void pc_hist_add_since(struct pc_hist *h, uint64_t t0)
{
	if (pc_unlikely(t0 != 0))
		pc_hist_add(h, os_now_ns() - t0);
}
/* Add value to h while statistics are on. */
PC_INLINE void pc_hist_add_if_on(struct pc_hist *h, uint64_t value)
{
	if (pc_unlikely(pc_load_relaxed(&pc_lock_stats_enabled)))
		pc_hist_add(h, value);
}
void pc_lock_stats_reset(struct pc_lock_stats *s);
/* Add every counter of src into dst (maxima: the larger). */
void pc_lock_stats_merge(struct pc_lock_stats *dst, const struct pc_lock_stats *src);
/* Add one wait time (ns) to the log2 histogram bucket and totals. */
void pc_lock_stats_add_wait(struct pc_lock_stats *s, uint64_t ns);
/* Log2 bucket index of ns, clamped to the last bucket. */
unsigned pc_lock_hist_bucket(uint64_t ns);

/* ---- waiting --------------------------------------------------------------- */
/*
 * How every spinning waiter here waits ("spin.c"). Threads can outnumber CPUs
 * (64 threads on 2 cores), and user space cannot tell whether the thread it
 * waits for is running, so each wait spins a bounded number of pauses and then
 * yields the CPU on every further round: a preempted holder gets to run.
 *   pc_spinwait_backoff  exponential backoff, 1, 2, 4 .. PC_SPIN_BACKOFF_MAX
 *                        pauses per round (for a shared word: TTAS);
 *   pc_spinwait_pause    one pause per round (for a waiter that spins on its
 *                        own node or on a counter only its turn changes).
 * Both start yielding after about PC_SPIN_YIELD_PAUSES pauses (~7 us at 27 ns
 * per pause on the AMD EPYC used for development).
 */
#define PC_SPIN_BACKOFF_MAX  64
#define PC_SPIN_YIELD_PAUSES 256
struct pc_spinwait {
	uint32_t pauses; /* pauses so far; at the limit, every round yields */
	uint32_t backoff; /* pauses in the next backoff round */
};
PC_INLINE void pc_spinwait_init(struct pc_spinwait *w) { w->pauses = 0; w->backoff = 1; }
void pc_spinwait_backoff(struct pc_spinwait *w);
void pc_spinwait_pause(struct pc_spinwait *w);

/* Register the lock layer's fork and thread-exit handlers (and the
 * witness's, PC_DEBUG >= 2) with the lifecycle registry, once: called by
 * the page layer's init (before any allocator lock exists) and by a
 * constructor. Idempotent, thread-safe. */
void pc_lock_layer_start(void);
/* ---- lock ranks, checked in debug builds ("witness.c") ----------------------- */
/*
 * Every allocator lock has a rank from the global lock order (src/README.md),
 * outermost lowest. With PC_DEBUG >= 2 each thread keeps the ranked locks it
 * holds, and every blocking acquisition checks that its rank is above the
 * rank of every lock the thread already holds (lockdep's and jemalloc's
 * witness rule), before it waits: an order violation stops the program with
 *     pcmalloc: fatal: lock order violation: <lock> (rank R) taken while
 *     holding <lock> (rank H)
 * instead of deadlocking one day. Exceptions, explicit:
 *   - try-locks never wait, so they cannot deadlock: they are recorded (the
 *     locks taken under them are checked against them) but not checked;
 *   - nesting: between pc_lock_nesting_begin() and _end() a thread may
 *     take several locks of one rank, in a fixed order that no other path
 *     reverses, but never a lower rank than one it holds; those locks are
 *     not recorded one by one (there may be thousands). Used by fork (from
 *     the first prefork handler to the last postfork one: the witness's own
 *     lifecycle entry, above every layer's; every cache's locks, then every
 *     zone's, in list order) and by pc_page_check (every pcp lock of a zone
 *     in CPU order, with no other pcp lock held by anyone but drains, which
 *     hold one at a time).
 * PC_LOCK_RANK_NONE (0) locks are not checked: the lock layer's own leaves
 * and the tests' locks. In release builds none of this exists.
 */
enum pc_lock_rank {
	PC_LOCK_RANK_NONE = 0,
	PC_LOCK_RANK_SLAB_MUTEX = 10, /* slab_mutex */
	PC_LOCK_RANK_SHEAF_SLOT = 20, /* slot->lock */
	PC_LOCK_RANK_BARN = 30,       /* barn->lock */
	PC_LOCK_RANK_CPU_SLAB = 40,   /* c->lock */
	PC_LOCK_RANK_LIST = 50,       /* n->list_lock */
	PC_LOCK_RANK_ZONE_GROW = 60,  /* zone->grow_lock */
	PC_LOCK_RANK_PCP = 70,        /* pcp->lock */
	PC_LOCK_RANK_ZONE = 80,       /* zone->lock */
};
/* The name of a rank, for messages. */
const char *pc_lock_rank_name(unsigned rank);
#if PC_DEBUG >= 2
/* lock (any kind) of rank is about to be waited for (blocking: checked and
 * recorded) or was taken by a try (recorded only). */
void pc_witness_acquire(const void *lock, unsigned rank, bool blocking);
/* The witness's lifecycle entry (from pc_lock_layer_start only). */
void pc_witness_register(void);
void pc_witness_release(const void *lock, unsigned rank);
/* Whether this thread holds lock, a recorded one (true when unsure: in
 * fork mode, or for an unranked lock). */
bool pc_witness_holds(const void *lock, unsigned rank);
void pc_lock_nesting_begin(void);
void pc_lock_nesting_end(void);
#define PC_WITNESS_ACQUIRE(l, r, b) ((r) ? pc_witness_acquire((l), (r), (b)) : (void)0)
#define PC_WITNESS_RELEASE(l, r)    ((r) ? pc_witness_release((l), (r)) : (void)0)
#else
#define PC_WITNESS_ACQUIRE(l, r, b) ((void)0)
#define PC_WITNESS_RELEASE(l, r)    ((void)0)
PC_INLINE void pc_lock_nesting_begin(void) {}
PC_INLINE void pc_lock_nesting_end(void) {}
#endif

/* ---- the four kinds --------------------------------------------------------- */
/* pc_spin and pc_mutex carry a rank (0 unless set); the generic lock's own
 * rank is in struct pc_lock (its embedded spin or mutex stays unranked). */
struct pc_spin { _Atomic uint32_t locked; uint32_t rank; };
void pc_spin_init(struct pc_spin *l);
/* Unlocked again, rank kept (in the child after fork). */
PC_INLINE void pc_spin_reinit(struct pc_spin *l) { pc_store_relaxed(&l->locked, 0); }
PC_INLINE void pc_spin_set_rank(struct pc_spin *l, enum pc_lock_rank r) { l->rank = r; }
void pc_spin_lock(struct pc_spin *l);
bool pc_spin_trylock(struct pc_spin *l);
void pc_spin_unlock(struct pc_spin *l);
/* The wait of pc_spin_lock after its exchange failed (no witness check: the
 * caller made it); for spin_stat.c. */
void pc_spin_lock_contended(struct pc_spin *l);

/*
 * A pc_spin that keeps statistics ("spin_stat.c"): the per-CPU page list
 * locks, a plain spinlock each (try-locked by allocation and free, taken
 * blocking by drains, the checker and fork) that still report in
 * /proc/lock_stat's columns. The same counters as a generic lock with stats
 * (acquisitions, bounces, contended waits with their histogram, wait and
 * hold times), kept in the struct pc_lock_stats it is given (the caller puts
 * it off the lock's hot cache line) while pc_lock_stats_enabled. Off, the
 * try and the release are inline and cost one predicted branch each (on
 * that global, and on the holder-only acquired_ns); no clock is read. A
 * failed try is not
 * an acquisition and waited for nothing: it is not counted (the caller counts
 * it if it wants, as the page layer's pcp_busy does). Acquisitions through
 * the embedded spin (pc_spin_lock(&l->spin): the statistics reader and fork)
 * are not counted.
 */
struct pc_spin_stat {
	struct pc_spin spin;
	uint32_t last_cpu;          /* holder only: CPU + 1 of the last measured acquisition */
	uint64_t acquired_ns;       /* holder only; 0 unless this hold is measured */
	struct pc_lock_stats *stats; /* the counters (set by init, never NULL) */
};
/* Unlocked, of rank r, counting into *stats (zeroed here). */
void pc_spin_stat_init(struct pc_spin_stat *l, enum pc_lock_rank r, struct pc_lock_stats *stats);
/* Unlocked again, rank and statistics kept (in the child after fork). */
PC_INLINE void pc_spin_stat_reinit(struct pc_spin_stat *l)
{
	pc_spin_reinit(&l->spin);
	l->acquired_ns = 0;
}
void pc_spin_stat_lock(struct pc_spin_stat *l);
/* spin_stat.c's slow halves of the inline try and unlock (stats on). */
void pc_spin_stat_acquired(struct pc_spin_stat *l);
void pc_spin_stat_released(struct pc_spin_stat *l);
/* Never waits: true if acquired. Inline: the page allocator's fast path. */
PC_INLINE bool pc_spin_stat_trylock(struct pc_spin_stat *l)
{
	struct pc_spin *s = &l->spin;
	/* Read first so that a held lock's line stays shared; acquire
	 * (exchange): pairs with the release store of the unlock. */
	if (pc_load_relaxed(&s->locked) != 0 || pc_xchg_acquire(&s->locked, 1) != 0)
		return false;
	PC_WITNESS_ACQUIRE(s, s->rank, false);
	if (pc_unlikely(pc_load_relaxed(&pc_lock_stats_enabled)))
		pc_spin_stat_acquired(l);
	return true;
}
PC_INLINE void pc_spin_stat_unlock(struct pc_spin_stat *l)
{
	if (pc_unlikely(l->acquired_ns != 0))
		pc_spin_stat_released(l);
	pc_assert(pc_load_relaxed(&l->spin.locked) == 1);
	PC_WITNESS_RELEASE(&l->spin, l->spin.rank);
	/* release: publishes the critical section to the next exchange. */
	pc_store_release(&l->spin.locked, 0);
}
#define pc_spin_stat_assert_held(l) pc_spin_assert_held(&(l)->spin)
/* Test seam, as pc_lock_contended_hook: called by pc_spin_stat_lock after its
 * first exchange failed, once the wait's start time is taken and before it
 * waits. NULL in production: one relaxed load on the contended path only. */
extern void (*_Atomic pc_spin_contended_hook)(struct pc_spin_stat *l);
/* For spin_stat.c: count an acquisition at `now` (bounces against *last_cpu)
 * and start the hold (*acquired_ns); end a hold started at acquired_ns. */
void pc_lock_stats_acquired(struct pc_lock_stats *s, uint32_t *last_cpu, uint64_t *acquired_ns,
			    uint64_t now, bool contended);
void pc_lock_stats_held(struct pc_lock_stats *s, uint64_t acquired_ns);

struct pc_ticket { _Atomic uint32_t next; _Atomic uint32_t owner; };
void pc_ticket_init(struct pc_ticket *l);
void pc_ticket_lock(struct pc_ticket *l);
bool pc_ticket_trylock(struct pc_ticket *l);
void pc_ticket_unlock(struct pc_ticket *l);

struct pc_mcs_node {
	_Atomic(struct pc_mcs_node *) next;
	_Atomic uint32_t locked; /* set to 1 by the predecessor on hand-off */
} PC_CACHE_ALIGNED;
struct pc_mcs { _Atomic(struct pc_mcs_node *) tail; };
void pc_mcs_init(struct pc_mcs *l);
/* The node belongs to the caller until the matching unlock returns. */
void pc_mcs_lock(struct pc_mcs *l, struct pc_mcs_node *node);
bool pc_mcs_trylock(struct pc_mcs *l, struct pc_mcs_node *node);
void pc_mcs_unlock(struct pc_mcs *l, struct pc_mcs_node *node);

/* Optimistic spin queue used by pc_mutex: nodes live in a global pool that is
 * never freed (a stale pointer to a node stays harmless), one per thread. */
struct pc_osq { _Atomic uint32_t tail; /* pool index + 1 of the last node, 0 = empty */ };

struct pc_mutex {
	_Atomic uint32_t state; /* 0 unlocked, 1 locked, 2 locked with sleepers */
	struct pc_osq spinq;
	uint32_t rank;          /* enum pc_lock_rank */
};
void pc_mutex_init(struct pc_mutex *m);
/* Unlocked again with an empty spin queue, rank kept (child after fork). */
void pc_mutex_reinit(struct pc_mutex *m);
PC_INLINE void pc_mutex_set_rank(struct pc_mutex *m, enum pc_lock_rank r) { m->rank = r; }
void pc_mutex_lock(struct pc_mutex *m);
bool pc_mutex_trylock(struct pc_mutex *m);
void pc_mutex_unlock(struct pc_mutex *m);

/* Spin queue nodes: PC_OSQ_POOL_SIZE in all, one per thread from its first
 * contended pc_mutex_lock; a thread that finds the pool empty never spins (it
 * goes straight to the futex). A contended acquire spins at most about
 * PC_MUTEX_SPIN_PAUSES pauses in all (queued, then as head; ~3.5 us at 27 ns
 * a pause) before sleeping: a pause count, not a clock, so that no clock is
 * read unless statistics are on. */
#define PC_OSQ_POOL_SIZE     4096
#define PC_MUTEX_SPIN_PAUSES 128
/* The spin budget in pauses, PC_MUTEX_SPIN_PAUSES unless changed (a tunable,
 * read relaxed at each contended acquire; 0 turns spinning off). */
extern _Atomic uint32_t pc_mutex_spin_pauses;
/* Give the calling thread's spin queue node back to the pool; call when the
 * thread exits (it must not be inside any pc_mutex call). Optional. */
void pc_mutex_thread_exit(void);
/* In the child after fork(): only the calling thread survives, so every node
 * but its own returns to the pool. A mutex's spin queue may still name nodes
 * of threads that died with the fork, so the child must re-initialise every
 * mutex it uses (pc_mutex_init, pc_lock_reinit), not merely unlock it. */
void pc_mutex_fork_child(void);
/* Process-wide counts of what contended pc_mutex_lock calls did (relaxed; for
 * tests and statistics). */
struct pc_mutex_spin_counters {
	uint64_t spin_acquired; /* got the mutex while spinning as queue head */
	uint64_t spin_timeout;  /* was head, budget ran out, went to sleep */
	uint64_t unqueued;      /* left the spin queue before reaching its head */
	uint64_t no_node;       /* pool exhausted: slept without spinning */
	uint64_t sleeps;        /* futex waits */
};
void pc_mutex_spin_counters(struct pc_mutex_spin_counters *out);

/*
 * Test seam: lets a test decide the spin budget of each contended
 * pc_mutex_lock at the two points where the OSQ's outcome is decided, so that
 * unqueue, spin timeout and hand-off happen by construction, never by the
 * scheduler's luck (tests/unit/lock/mutex.c). Called, when set, with the
 * budget left: at PC_MUTEX_SPIN_HEAD as head of the spin queue just before it
 * spins on the mutex word, and at PC_MUTEX_SPIN_QUEUED once linked behind a
 * predecessor, before it waits to become head; returns the budget to use (the
 * hook may also block, which holds that thread at that point). NULL in
 * production: one relaxed load on the contended path only.
 */
enum pc_mutex_spin_point { PC_MUTEX_SPIN_HEAD, PC_MUTEX_SPIN_QUEUED };
extern uint32_t (*_Atomic pc_mutex_spin_hook)(struct pc_mutex *m, enum pc_mutex_spin_point at,
					       uint32_t budget);

/* ---- the generic lock: kind chosen at start-up ------------------------------ */
struct pc_lock {
	uint8_t kind; /* enum pc_lock_kind, fixed by pc_lock_init */
	uint8_t rank; /* enum pc_lock_rank; 0 from pc_lock_init */
	union {
		struct pc_spin spin;
		struct pc_ticket ticket;
		struct pc_mcs mcs;
		struct pc_mutex mutex;
	} u;
	struct pc_mcs_node *mcs_owner_node; /* written by the holder only */
	uint64_t acquired_ns;               /* holder only; 0 unless stats on */
	uint32_t last_cpu;                  /* holder only: CPU of the last measured
					       acquisition (bounces) */
	const char *name;                   /* class name, e.g. "zone" */
	struct pc_lock_stats *stats;        /* NULL: this lock keeps none */
	struct pc_lock *registry_next;      /* see pc_lock_register */
};

void pc_lock_init(struct pc_lock *l, const char *name, enum pc_lock_kind kind);
PC_INLINE void pc_lock_set_rank(struct pc_lock *l, enum pc_lock_rank r) { l->rank = (uint8_t)r; }
/* Reset to unlocked (after fork, in the child). Keeps kind, name, stats. */
void pc_lock_reinit(struct pc_lock *l);
void pc_lock_acquire(struct pc_lock *l);
/*
 * Acquire in a prefork handler, which may hold any number of locks at once:
 * an MCS lock takes its node from a global pool (not from the
 * PC_LOCK_MAX_NESTED per-thread ones) that grows by PC_LOCK_FORK_NODES nodes
 * mapped from the OS as needed. Not counted in statistics.
 * Undo with pc_lock_release (parent) or pc_lock_reinit (child).
 */
#define PC_LOCK_FORK_NODES 4096
void pc_lock_acquire_for_fork(struct pc_lock *l);
/* Never waits: true if acquired. */
bool pc_lock_try(struct pc_lock *l);
void pc_lock_release(struct pc_lock *l);
/* Test seam: when set, pc_lock_acquire calls it after its first try failed,
 * once the wait's start time is taken and before it waits, so a test can tell
 * that a thread is committed to a contended wait (tests/unit/lock/stats.c).
 * NULL in production: one relaxed load on the contended path only. */
extern void (*_Atomic pc_lock_contended_hook)(struct pc_lock *l);
/* True if some thread holds l (racy; for assertions only). */
bool pc_lock_is_locked(const struct pc_lock *l);
/* First line of a function whose contract is "called with l held": with
 * PC_DEBUG >= 2, l is locked, and (ranked locks) locked by this thread. */
#if PC_DEBUG >= 2
#define pc_lock_assert_held(l) \
	pc_assert_internal(pc_lock_is_locked(l) && pc_witness_holds((l), (l)->rank))
#define pc_spin_assert_held(l) \
	pc_assert_internal(pc_load_relaxed(&(l)->locked) != 0 && pc_witness_holds((l), (l)->rank))
#else
#define pc_lock_assert_held(l) ((void)0)
#define pc_spin_assert_held(l) ((void)0)
#endif

/*
 * Registry for observability: a registered lock with stats != NULL appears in
 * pc_lock_foreach() under its name. Registration is append-only (locks live as
 * long as the process) and thread-safe. Register a lock once, after
 * pc_lock_init and before other threads use it (it sets l->stats).
 */
void pc_lock_register(struct pc_lock *l, struct pc_lock_stats *stats);
void pc_lock_foreach(void (*fn)(struct pc_lock *l, void *arg), void *arg);

/* The calling thread exits: give back its per-thread lock resources (its
 * pc_mutex spin queue node). It must hold no lock. The lock layer registers
 * it as its thread_exit handler with the lifecycle registry (os.h) and
 * enrolls a thread when it takes a node; tests may call it directly. */
void pc_lock_thread_exit(void);
/* In the child after fork(), before any lock is used: reset the registry's
 * lock and the spin queue node pool (pc_mutex_fork_child). Each lock the
 * child uses still needs pc_lock_reinit(). Registered as the lock layer's
 * postfork_child handler (the lowest rank: it runs before every other). */
void pc_lock_fork_child(void);

#endif /* PC_LOCK_H */
