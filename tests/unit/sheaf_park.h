/*
 * tests/unit/sheaf_park.h - a thread "inside a sheaf fast path" for the
 * tests of flushes that wait for one (slab/sheaf_thread.c,
 * wait_fast_paths): slab/flush_drop.c and malloc/fork_trim.c.
 *
 * park_in_fast_path() sets the calling thread's busy flag as a thread-mode
 * fast path does, says so through *ready, stays there (yielding) until
 * *release is set, then clears the flag as the fast path's end does.
 */
#ifndef PC_TEST_SHEAF_PARK_H
#define PC_TEST_SHEAF_PARK_H

#include "slab/slab.h"

#include <sched.h>
#include <stdatomic.h>

static inline void park_in_fast_path(_Atomic int *ready, _Atomic int *release)
{
	__atomic_store_n(&pc_thread_sheaf_busy, 1, __ATOMIC_RELAXED); /* a fast path begins */
	atomic_store(ready, 1);
	while (!atomic_load(release))
		sched_yield();
	__atomic_store_n(&pc_thread_sheaf_busy, 0, __ATOMIC_RELEASE); /* and ends */
}

#endif
