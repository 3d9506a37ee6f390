/*
 * lock/witness.c - lock ranks checked at run time in debug builds
 * (PC_DEBUG >= 2), as Linux's lockdep and jemalloc's witness do; the rules
 * are in lock.h, "lock ranks".
 *
 * Owns, per thread: the ranked locks it holds (witness_held, a small stack;
 * released in any order), and whether it is between prefork and postfork
 * (witness_nesting, with the highest rank taken meanwhile). Nothing shared:
 * no locking, no atomics. The fork window comes from the witness's own
 * lifecycle entry, ranked above every layer: its prefork runs first and its
 * postfork handlers last.
 */
#include "lock.h"

#include "../os/os.h"

static const char *const rank_names[] = {
	[PC_LOCK_RANK_SLAB_MUTEX / 10] = "slab_mutex",
	[PC_LOCK_RANK_SHEAF_SLOT / 10] = "slot->lock",
	[PC_LOCK_RANK_BARN / 10] = "barn->lock",
	[PC_LOCK_RANK_CPU_SLAB / 10] = "c->lock",
	[PC_LOCK_RANK_LIST / 10] = "n->list_lock",
	[PC_LOCK_RANK_ZONE_GROW / 10] = "zone->grow_lock",
	[PC_LOCK_RANK_PCP / 10] = "pcp->lock",
	[PC_LOCK_RANK_ZONE / 10] = "zone->lock",
};

const char *pc_lock_rank_name(unsigned rank)
{
	unsigned i = rank / 10;
	return rank % 10 == 0 && i < PC_ARRAY_SIZE(rank_names) && rank_names[i] ? rank_names[i]
										: "unranked";
}

#if PC_DEBUG >= 2
#define PC_TLS __attribute__((tls_model("initial-exec")))
#define WITNESS_MAX 16 /* ranked locks one thread holds at once, outside fork */

struct witness_entry {
	const void *lock;
	unsigned rank;
};
static __thread struct witness_entry witness_held[WITNESS_MAX] PC_TLS;
static __thread unsigned witness_count PC_TLS;
static __thread unsigned witness_nesting PC_TLS; /* depth of pc_lock_nesting_begin */
static __thread unsigned witness_nest_rank PC_TLS; /* highest taken while nesting */

/* The highest rank this thread holds, and the lock that has it. */
static unsigned witness_top(const void **lock)
{
	unsigned top = witness_nesting ? witness_nest_rank : 0;
	*lock = NULL;
	for (unsigned i = 0; i < witness_count; i++)
		if (witness_held[i].rank >= top) {
			top = witness_held[i].rank;
			*lock = witness_held[i].lock;
		}
	return top;
}

void pc_witness_acquire(const void *lock, unsigned rank, bool blocking)
{
	const void *holder;
	unsigned top = witness_top(&holder);
	/* Ranks only increase; while nesting, equal ranks may. */
	if (blocking && (rank < top || (rank == top && !witness_nesting)))
		pc_fatal("lock order violation: %s %p (rank %u) taken while holding %s %p (rank %u)",
			 pc_lock_rank_name(rank), lock, rank, pc_lock_rank_name(top), holder, top);
	if (witness_nesting) {
		witness_nest_rank = PC_MAX(witness_nest_rank, rank);
		return;
	}
	if (witness_count == WITNESS_MAX)
		pc_fatal("more than %d ranked locks held at once", WITNESS_MAX);
	witness_held[witness_count++] = (struct witness_entry){ lock, rank };
}

void pc_witness_release(const void *lock, unsigned rank)
{
	for (unsigned i = witness_count; i-- > 0;) {
		if (witness_held[i].lock != lock)
			continue;
		witness_held[i] = witness_held[--witness_count];
		return;
	}
	/* Taken while nesting (not recorded), or released by another thread
	 * than the one that took it (a broken rule). */
	if (!witness_nesting)
		pc_fatal("release of %s %p (rank %u), which this thread does not hold",
			 pc_lock_rank_name(rank), lock, rank);
}

bool pc_witness_holds(const void *lock, unsigned rank)
{
	if (rank == PC_LOCK_RANK_NONE || witness_nesting)
		return true;
	for (unsigned i = 0; i < witness_count; i++)
		if (witness_held[i].lock == lock)
			return true;
	return false;
}

void pc_lock_nesting_begin(void)
{
	if (witness_nesting++ == 0) {
		const void *holder;
		witness_nest_rank = 0;
		witness_nest_rank = witness_top(&holder);
	}
}

void pc_lock_nesting_end(void)
{
	if (--witness_nesting == 0)
		witness_nest_rank = 0;
}

static void witness_fork_begin(void) { pc_lock_nesting_begin(); }
/* In the child only this thread exists, and it ran the prefork. */
static void witness_fork_end(void) { pc_lock_nesting_end(); }

/* Above every layer's rank: prefork first, postfork handlers last. */
static const struct pc_life witness_life = {
	.name = "witness",
	.rank = PC_LIFE_RANK_WITNESS,
	.prefork = witness_fork_begin,
	.postfork_parent = witness_fork_end,
	.postfork_child = witness_fork_end,
};

void pc_witness_register(void)
{
	pc_life_register(&witness_life);
}
#endif /* PC_DEBUG >= 2 */
