/*
 * lock/mcs.c - the MCS queued lock (struct pc_mcs, Mellor-Crummey & Scott
 * 1991): strict FIFO, and each waiter spins on its own node, so a release
 * writes one waiter's cache line only.
 *
 * Invariant: tail is NULL (free) or the last node of the queue; the head of
 * the queue holds the lock; each node's next is NULL until its successor links
 * in. A node belongs to its caller from lock until unlock returns; after it is
 * handed off (next->locked = 1) the releaser never touches next again.
 *
 * Memory ordering, in one sentence per edge (each call site repeats it):
 *  - swapping ourselves into tail is acq_rel: acquire so that, on a free lock,
 *    we see the critical section the last releaser published by its release
 *    CAS of tail to NULL; release so that our node's initialisation reaches the
 *    successor that reads our node from tail and writes our node->next;
 *  - linking (prev->next = node) is release and the reader's load acquire, so
 *    the releaser sees our initialised node before it writes node->locked;
 *  - the hand-off (next->locked = 1) is release and the waiter's load of its
 *    locked is acquire: the critical section passes from holder to holder.
 */
#include "lock.h"

void pc_mcs_init(struct pc_mcs *l)
{
	pc_store_relaxed(&l->tail, NULL);
}

PC_INLINE void mcs_node_init(struct pc_mcs_node *node)
{
	pc_store_relaxed(&node->next, NULL);
	pc_store_relaxed(&node->locked, 0);
}

/* Never waits: take a free lock (tail NULL -> node), never join a queue. */
bool pc_mcs_trylock(struct pc_mcs *l, struct pc_mcs_node *node)
{
	struct pc_mcs_node *expected = NULL;
	mcs_node_init(node);
	/* acq_rel: acquire the last release's critical section; release our node
	 * init to the successor that will read it from tail. */
	return pc_cas_strong_acq_rel(&l->tail, &expected, node);
}

/* Queue behind prev and spin on our own node until prev hands over. */
static PC_NOINLINE void mcs_lock_slow(struct pc_mcs_node *prev, struct pc_mcs_node *node)
{
	struct pc_spinwait w;
	/* release: our initialised node (next = NULL, locked = 0) reaches prev's
	 * holder before it can write node->locked. */
	pc_store_release(&prev->next, node);
	pc_spinwait_init(&w);
	/* acquire: pairs with the release hand-off in pc_mcs_unlock. */
	while (pc_load_acquire(&node->locked) == 0)
		pc_spinwait_pause(&w);
}

void pc_mcs_lock(struct pc_mcs *l, struct pc_mcs_node *node)
{
	mcs_node_init(node);
	/* acq_rel: acquire a free lock's last critical section; release our node
	 * init to the successor that reads our node from tail. */
	struct pc_mcs_node *prev = pc_xchg_acq_rel(&l->tail, node);
	if (pc_likely(prev == NULL))
		return;
	mcs_lock_slow(prev, node);
}

/* A successor swapped tail but has not linked in yet: wait for its link. */
static PC_NOINLINE struct pc_mcs_node *mcs_wait_successor(struct pc_mcs_node *node)
{
	struct pc_mcs_node *next;
	struct pc_spinwait w;
	pc_spinwait_init(&w);
	/* acquire: pairs with the successor's release link in mcs_lock_slow. */
	while ((next = pc_load_acquire(&node->next)) == NULL)
		pc_spinwait_pause(&w);
	return next;
}

void pc_mcs_unlock(struct pc_mcs *l, struct pc_mcs_node *node)
{
	pc_assert(pc_load_relaxed(&l->tail) != NULL);
	/* acquire: pairs with the successor's release link in mcs_lock_slow. */
	struct pc_mcs_node *next = pc_load_acquire(&node->next);
	if (next == NULL) {
		struct pc_mcs_node *expected = node;
		/* release: publishes the critical section to the next locker, whose
		 * acq_rel swap of tail reads this NULL. */
		if (pc_likely(pc_cas_strong_release(&l->tail, &expected, NULL)))
			return;
		next = mcs_wait_successor(node);
	}
	/* release: hands the lock and our critical section to next. */
	pc_store_release(&next->locked, 1);
}
