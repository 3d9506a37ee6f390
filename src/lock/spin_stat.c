/*
 * lock/spin_stat.c - struct pc_spin_stat: a pc_spin with the statistics of
 * a generic lock (lock.h). It adds no locking of its own: the embedded
 * pc_spin orders the critical sections, and last_cpu and acquired_ns are
 * written only by the holder inside them, so the spin orders those too. The
 * counters are relaxed atomics (statistics, never synchronisation).
 *
 * Cost: while pc_lock_stats_enabled is false, an acquisition adds one
 * predicted branch on that read-mostly global and a release one on the
 * holder-only acquired_ns; no clock is read. On, an uncontended acquisition
 * reads the clock once and the release once; a contended one also times its
 * wait (from before the wait to the acquiring exchange).
 */
#include "lock.h"

#include "../os/os.h"

void (*_Atomic pc_spin_contended_hook)(struct pc_spin_stat *l);

void pc_spin_stat_init(struct pc_spin_stat *l, enum pc_lock_rank r, struct pc_lock_stats *stats)
{
	pc_spin_init(&l->spin);
	pc_spin_set_rank(&l->spin, r);
	l->last_cpu = 0;
	l->acquired_ns = 0;
	l->stats = stats;
	pc_lock_stats_reset(stats);
}

PC_INLINE bool spin_stats_on(void)
{
	return pc_unlikely(pc_load_relaxed(&pc_lock_stats_enabled));
}

/* The inline try got the lock with statistics on: count it, start the hold. */
PC_NOINLINE void pc_spin_stat_acquired(struct pc_spin_stat *l)
{
	pc_lock_stats_acquired(l->stats, &l->last_cpu, &l->acquired_ns, os_now_ns(), false);
}

/* The holder releases a measured hold (acquired_ns != 0). */
PC_NOINLINE void pc_spin_stat_released(struct pc_spin_stat *l)
{
	uint64_t since = l->acquired_ns;
	l->acquired_ns = 0; /* before the release: the next holder owns it */
	pc_lock_stats_held(l->stats, since);
}

/* The exchange failed: wait on the spin, timing the wait when stats are on. */
static PC_NOINLINE void spin_stat_lock_slow(struct pc_spin_stat *l)
{
	bool on = spin_stats_on();
	uint64_t start = on ? os_now_ns() : 0;
	void (*hook)(struct pc_spin_stat *) = pc_load_relaxed(&pc_spin_contended_hook);
	if (pc_unlikely(hook != NULL))
		hook(l);
	pc_spin_lock_contended(&l->spin);
	if (!on)
		return;
	uint64_t now = os_now_ns();
	pc_add_relaxed(&l->stats->contended, 1);
	pc_lock_stats_add_wait(l->stats, now - start);
	pc_lock_stats_acquired(l->stats, &l->last_cpu, &l->acquired_ns, now, true);
}

void pc_spin_stat_lock(struct pc_spin_stat *l)
{
	PC_WITNESS_ACQUIRE(&l->spin, l->spin.rank, true); /* checked before we wait */
	/* acquire: pairs with the release store of the unlock. */
	if (pc_likely(pc_xchg_acquire(&l->spin.locked, 1) == 0)) {
		if (spin_stats_on())
			pc_spin_stat_acquired(l);
		return;
	}
	spin_stat_lock_slow(l);
}
