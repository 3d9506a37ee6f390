/*
 * lock/spin.c - the test-and-test-and-set spinlock (struct pc_spin) and the
 * bounded waiting helpers every spinning lock kind here uses.
 *
 * Owns: nothing shared; a pc_spin is one word, 0 free, 1 held.
 * Memory ordering: the lock is taken by an exchange with acquire order (it
 * reads the 0 that the previous holder stored with release order, so the
 * previous critical section happens-before ours) and released by a store with
 * release order. Every other access is a relaxed read used only as a hint
 * ("test" before "test-and-set"), never trusted without the exchange.
 */
#include "lock.h"

#include "../os/os.h"

/* ---- waiting helpers ------------------------------------------------------------ */
/*
 * One round of exponential backoff: pause `backoff` times and double it up to
 * PC_SPIN_BACKOFF_MAX. Once PC_SPIN_YIELD_PAUSES pauses are spent, each round
 * is a yield instead: with more threads than CPUs the holder may be waiting
 * for our CPU, and spinning on would only delay it.
 */
void pc_spinwait_backoff(struct pc_spinwait *w)
{
	if (w->pauses >= PC_SPIN_YIELD_PAUSES) {
		os_yield();
		return;
	}
	for (uint32_t i = 0; i < w->backoff; i++)
		pc_cpu_relax();
	w->pauses += w->backoff;
	if (w->backoff < PC_SPIN_BACKOFF_MAX)
		w->backoff *= 2;
}

/* One round of local spinning: a single pause, or a yield past the bound. */
void pc_spinwait_pause(struct pc_spinwait *w)
{
	if (w->pauses >= PC_SPIN_YIELD_PAUSES) {
		os_yield();
		return;
	}
	pc_cpu_relax();
	w->pauses++;
}

/* ---- pc_spin ------------------------------------------------------------------------ */
void pc_spin_init(struct pc_spin *l)
{
	pc_store_relaxed(&l->locked, 0);
	l->rank = PC_LOCK_RANK_NONE;
}

/* Never waits. Reads first so that a held lock's line stays shared. */
bool pc_spin_trylock(struct pc_spin *l)
{
	/* acquire (exchange): pairs with the release store in pc_spin_unlock. */
	bool got = pc_load_relaxed(&l->locked) == 0 && pc_xchg_acquire(&l->locked, 1) == 0;
	if (got)
		PC_WITNESS_ACQUIRE(l, l->rank, false);
	return got;
}

/*
 * Contended acquire: wait with relaxed reads (the line stays shared among
 * waiters while held) and backoff, then retry the exchange only when the word
 * reads 0. Exponential backoff spreads the waiters' exchanges after a release.
 */
PC_NOINLINE void pc_spin_lock_contended(struct pc_spin *l)
{
	struct pc_spinwait w;
	pc_spinwait_init(&w);
	do {
		while (pc_load_relaxed(&l->locked) != 0)
			pc_spinwait_backoff(&w);
		/* acquire: pairs with the release store in pc_spin_unlock. */
	} while (pc_xchg_acquire(&l->locked, 1) != 0);
}

/* Fast path: one exchange when free; otherwise the slow path above. */
void pc_spin_lock(struct pc_spin *l)
{
	PC_WITNESS_ACQUIRE(l, l->rank, true); /* checked before we wait */
	/* acquire: pairs with the release store in pc_spin_unlock. */
	if (pc_likely(pc_xchg_acquire(&l->locked, 1) == 0))
		return;
	pc_spin_lock_contended(l);
}

void pc_spin_unlock(struct pc_spin *l)
{
	pc_assert(pc_load_relaxed(&l->locked) == 1);
	PC_WITNESS_RELEASE(l, l->rank);
	/* release: publishes the critical section to the next exchange. */
	pc_store_release(&l->locked, 0);
}
