/*
 * tests/unit/page/zone_holder.h - a thread that takes a zone's lock and keeps
 * it until told to let go, so that a test can make another thread wait for
 * that lock at a point of its choosing (pcp_unlocked.c, pcp_inflight.c).
 * Include after test.h and page/page.h.
 */
#ifndef PC_TEST_ZONE_HOLDER_H
#define PC_TEST_ZONE_HOLDER_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

struct zone_holder {
	pthread_t thread;
	struct pc_zone *zone;
	atomic_int state; /* 0 start, 1 holds the zone lock, 2 told to let go */
};

static void *zone_holder_main(void *arg)
{
	struct zone_holder *h = arg;
	pc_lock_acquire(&h->zone->lock);
	atomic_store(&h->state, 1);
	while (atomic_load(&h->state) != 2)
		sched_yield();
	pc_lock_release(&h->zone->lock);
	return NULL;
}

/* Returns once the holder thread has the lock of z. */
static inline void zone_hold(struct zone_holder *h, struct pc_zone *z)
{
	h->zone = z;
	atomic_store(&h->state, 0);
	REQUIRE(pthread_create(&h->thread, NULL, zone_holder_main, h) == 0);
	while (atomic_load(&h->state) != 1)
		sched_yield();
}

/* The holder lets go of the lock and exits. */
static inline void zone_let_go(struct zone_holder *h)
{
	atomic_store(&h->state, 2);
	pthread_join(h->thread, NULL);
}

#endif
