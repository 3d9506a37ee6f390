/*
 * tests/unit/lock/fifo.c - the FIFO kinds serve waiters in arrival order.
 *
 * Main holds the lock, then starts waiters one at a time and waits until each
 * is definitely queued before starting the next (ticket: next has advanced
 * past its ticket; MCS: tail is its node). Then main releases, and the order
 * in which the waiters entered must equal the order in which they arrived.
 * Checked for pc_ticket, pc_mcs and the generic lock of both kinds.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "lock/lock.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#define WAITERS 12
#define ROUNDS 3

enum impl { RAW_TICKET, RAW_MCS, GENERIC };

struct fifo {
	enum impl impl;
	struct pc_ticket ticket;
	struct pc_mcs mcs;
	struct pc_lock lock;
	struct pc_mcs_node nodes[WAITERS]; /* RAW_MCS: waiter i queues nodes[i] */
	unsigned order[WAITERS];           /* plain, written under the lock */
	unsigned entered;                  /* plain, under the lock */
};

struct waiter {
	struct fifo *f;
	unsigned id;
};

static void *fifo_waiter(void *arg)
{
	struct waiter *w = arg;
	struct fifo *f = w->f;
	switch (f->impl) {
	case RAW_TICKET: pc_ticket_lock(&f->ticket); break;
	case RAW_MCS: pc_mcs_lock(&f->mcs, &f->nodes[w->id]); break;
	case GENERIC: pc_lock_acquire(&f->lock); break;
	}
	f->order[f->entered++] = w->id;
	switch (f->impl) {
	case RAW_TICKET: pc_ticket_unlock(&f->ticket); break;
	case RAW_MCS: pc_mcs_unlock(&f->mcs, &f->nodes[w->id]); break;
	case GENERIC: pc_lock_release(&f->lock); break;
	}
	pc_lock_thread_exit();
	return NULL;
}

/* The lock's queue word: ticket next, or the MCS tail. */
static uintptr_t queue_word(struct fifo *f)
{
	switch (f->impl) {
	case RAW_TICKET: return pc_load_relaxed(&f->ticket.next);
	case RAW_MCS: return (uintptr_t)pc_load_relaxed(&f->mcs.tail);
	default:
		if (f->lock.kind == PC_LOCK_TICKET)
			return pc_load_relaxed(&f->lock.u.ticket.next);
		return (uintptr_t)pc_load_relaxed(&f->lock.u.mcs.tail);
	}
}

/* Wait until waiter i is queued: the queue word moved from `before`. For the
 * raw MCS lock it must be exactly that waiter's node. */
static void wait_queued(struct fifo *f, unsigned i, uintptr_t before)
{
	for (;;) {
		uintptr_t now = queue_word(f);
		if (f->impl == RAW_MCS ? now == (uintptr_t)&f->nodes[i] : now != before)
			return;
		sched_yield();
	}
}

static void main_lock(struct fifo *f, bool lock)
{
	static struct pc_mcs_node main_node;
	switch (f->impl) {
	case RAW_TICKET: lock ? pc_ticket_lock(&f->ticket) : pc_ticket_unlock(&f->ticket); break;
	case RAW_MCS: lock ? pc_mcs_lock(&f->mcs, &main_node) : pc_mcs_unlock(&f->mcs, &main_node); break;
	case GENERIC: lock ? pc_lock_acquire(&f->lock) : pc_lock_release(&f->lock); break;
	}
}

static void run_fifo(enum impl impl, enum pc_lock_kind kind)
{
	static struct fifo f;
	pthread_t tid[WAITERS];
	struct waiter w[WAITERS];
	memset(&f, 0, sizeof(f));
	f.impl = impl;
	pc_ticket_init(&f.ticket);
	pc_mcs_init(&f.mcs);
	pc_lock_init(&f.lock, "fifo", kind);
	main_lock(&f, true);
	for (unsigned i = 0; i < WAITERS; i++) {
		uintptr_t before = queue_word(&f);
		w[i] = (struct waiter){ &f, i };
		REQUIRE(pthread_create(&tid[i], NULL, fifo_waiter, &w[i]) == 0);
		wait_queued(&f, i, before);
	}
	CHECK_EQ(f.entered, 0); /* nobody got in while main held the lock */
	main_lock(&f, false);
	for (unsigned i = 0; i < WAITERS; i++)
		pthread_join(tid[i], NULL);
	CHECK_EQ(f.entered, WAITERS);
	for (unsigned i = 0; i < WAITERS; i++)
		CHECK_EQ(f.order[i], i);
}

TEST(ticket_fifo)
{
	for (int r = 0; r < ROUNDS; r++)
		run_fifo(RAW_TICKET, PC_LOCK_TICKET);
}

TEST(mcs_fifo)
{
	for (int r = 0; r < ROUNDS; r++)
		run_fifo(RAW_MCS, PC_LOCK_MCS);
}

TEST(generic_ticket_fifo)
{
	for (int r = 0; r < ROUNDS; r++)
		run_fifo(GENERIC, PC_LOCK_TICKET);
}

TEST(generic_mcs_fifo)
{
	for (int r = 0; r < ROUNDS; r++)
		run_fifo(GENERIC, PC_LOCK_MCS);
}

int main(void)
{
	watchdog_install("fifo: watchdog: the test hangs\n");
	watchdog_arm(60);
	RUN(ticket_fifo);
	RUN(mcs_fifo);
	RUN(generic_ticket_fifo);
	RUN(generic_mcs_fifo);
	return test_report();
}
