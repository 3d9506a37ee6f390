/*
 * lock/ticket.c - the ticket lock (struct pc_ticket): strict FIFO.
 *
 * Invariant: owner <= next (mod 2^32); next - owner = the holder plus the
 * waiters; the lock is free iff next == owner. A thread takes the ticket
 * `next` (fetch-and-add) and owns the lock while owner == its ticket.
 * Only the holder writes owner.
 *
 * Memory ordering: the holder's critical section is published by the release
 * store of owner + 1 in pc_ticket_unlock; a waiter enters only after an
 * acquire load of owner that reads its own ticket, which synchronises with
 * that store. Taking a ticket needs no ordering of its own (relaxed): it
 * orders nothing, it only reserves a place in the line. (Tickets wrap after
 * 2^32 acquisitions; with fewer than 2^32 waiters that is harmless.)
 */
#include "lock.h"

void pc_ticket_init(struct pc_ticket *l)
{
	pc_store_relaxed(&l->next, 0);
	pc_store_relaxed(&l->owner, 0);
}

/*
 * Never waits: take the next ticket only if it is the one being served, i.e.
 * the lock is free and nobody queues, so trying never jumps the line.
 */
bool pc_ticket_trylock(struct pc_ticket *l)
{
	/* acquire: pairs with the release store of owner in pc_ticket_unlock. */
	uint32_t owner = pc_load_acquire(&l->owner);
	uint32_t want = owner;
	/* Succeeds only while next == owner: no ticket is out, so nobody else can
	 * move owner before our unlock. (Its acquire adds nothing to the load's.) */
	return pc_cas_strong_acquire(&l->next, &want, owner + 1);
}

/* Wait for our turn: everyone reads owner; only our turn's store ends it. */
static PC_NOINLINE void ticket_lock_slow(struct pc_ticket *l, uint32_t ticket)
{
	struct pc_spinwait w;
	pc_spinwait_init(&w);
	/* acquire: pairs with the release store of owner in pc_ticket_unlock. */
	while (pc_load_acquire(&l->owner) != ticket)
		pc_spinwait_pause(&w);
}

void pc_ticket_lock(struct pc_ticket *l)
{
	uint32_t ticket = pc_add_relaxed(&l->next, 1);
	/* acquire: pairs with the release store of owner in pc_ticket_unlock. */
	if (pc_likely(pc_load_acquire(&l->owner) == ticket))
		return;
	ticket_lock_slow(l, ticket);
}

void pc_ticket_unlock(struct pc_ticket *l)
{
	/* Only the holder writes owner, so a relaxed read of it is exact. */
	uint32_t owner = pc_load_relaxed(&l->owner);
	pc_assert(pc_load_relaxed(&l->next) != owner);
	/* release: publishes the critical section to the next ticket's holder. */
	pc_store_release(&l->owner, owner + 1);
}
