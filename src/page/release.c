/*
 * page/release.c - giving free memory back to the OS, after a delay.
 *
 * Why a delay: a program that frees memory usually allocates again soon.
 * Releasing at once (madvise) and faulting the same pages straight back in
 * costs a system call, a TLB shootdown and a zeroed page per 4 KiB, which is
 * what dominated the mixed-size workload of issue 9. So a free block that
 * may be resident (mem DIRTY) carries the page-clock time it was freed, and
 * goes back only after it has stayed free for vm.release_delay_ms (jemalloc
 * waits dirty_decay_ms, mimalloc purge_delay, for the same reason). 0 means
 * at once.
 *
 * When: timed passes run from the zone's slow paths (a free into the zone, a
 * pcp drain or refill), at most every delay/4 per zone, so that no fast path
 * reads the clock (a zone over its bound, below, runs an untimed pass at
 * once); and from the background thread for programs that go idle
 * (vm.release_thread: 1 = from the first malloc slow path on; 2 = auto,
 * the default: once a pass finds a zone's free resident memory over the
 * floor of its bound, a zone grows past the floor or a fork child
 * inherits one that did (zone_release_note_grown), or malloc's live huge
 * blocks pass it (pc_page_release_note_held), or the option is set to auto
 * or the delay from 0 live while some of these are past it
 * (zone_release_note_all), with no thread running, the
 * next malloc slow path starts it if the process already has a second
 * thread; it sleeps without periodic wake-ups after PC_RELEASE_IDLE_PASSES
 * passes that found every zone clean, and leaves only when set to 0; so a
 * program that never holds more than the floor, or has one thread, never
 * gets one).
 * Each of the thread's passes first calls the hooks the layers above
 * registered (pc_page_release_hook_add: the slab layer's decay of idle
 * sheaves and slabs, malloc's huge and medium caches), so an idle
 * program's objects come back as pages that then age here; the page layer
 * never calls up otherwise. A pass releases every block freed more than the
 * delay ago, oldest first, and, whatever its age, what exceeds the bound
 * (bound_pages: max(vm.release_watermark_kb, a quarter of the zone's memory
 * in use, and, while the background thread does the passes, or in auto
 * mode without the thread for RELEASE_REUSE_DELAYS delays after reuse was
 * seen ("Reuse without the thread" below), its recent
 * peak of use (the last one to two delays) less the use now)), so that the
 * pool of free resident memory never lifts the footprint above a recent
 * peak.
 *
 * Each timed pass also lets the per-CPU lists of the zone decay (pcp_decay
 * in pcp.c, which frees what it drains with the pcp lock dropped), so that
 * what a CPU no longer cycles reaches the zone and ages here; every pass
 * releases the free runs of the run heap that are due (run.c: free
 * runs inside chunks still partly used never reach the buddy lists). Those
 * go by age only; the bound on dirty memory counts the buddy lists only.
 *
 * How: blocks are taken off the free lists a batch at a time under the zone
 * lock, released with the lock dropped (madvise is slow; others keep
 * allocating), and freed back as RELEASED. MADV_DONTNEED (the default) drops
 * the pages at once, so RSS falls and the next touch faults in a zero page;
 * MADV_FREE (vm.release_advice=1) lets the kernel take them only under
 * memory pressure, so a page reused before that costs no fault, but RSS does
 * not fall until the kernel needs the memory (see docs/pages.md).
 *
 * Locking: zone->lock around list changes; the passes of a zone are
 * serialised by zone->releasing (a try-flag: a second releaser just leaves).
 * The background thread, its state and the pass hooks: release_thread.c.
 */
#define _GNU_SOURCE
#include "page.h"

#include <errno.h>

/* ---- the page clock --------------------------------------------------- */
/* Added to CLOCK_MONOTONIC; only tests move it (relaxed: a reader that
 * misses an advance sees the time a moment earlier, as if it had run then). */
static _Atomic uint64_t clock_offset_ns;

uint64_t pc_page_clock_ns(void)
{
	return os_now_ns() + pc_load_relaxed(&clock_offset_ns);
}

void pc_page_clock_advance(uint64_t ns)
{
	pc_add_relaxed(&clock_offset_ns, ns);
}

/* Time from `since` to `now`; 0 if since is later (a racing writer took a
 * later clock reading than this caller's). */
static uint64_t elapsed_ns(uint64_t now, uint64_t since)
{
	return now > since ? now - since : 0;
}

static uint64_t delay_ns(void)
{
	return (uint64_t)pc_option(PC_OPT_VM_RELEASE_DELAY_MS) * 1000000u;
}

/* vm.release_watermark_kb in pages: the floor of the bound. */
static size_t watermark_pages(void)
{
	return (size_t)pc_option(PC_OPT_VM_RELEASE_WATERMARK_KB) * 1024u >> PC_PAGE_SHIFT;
}

/* The floor of the bound: the watermark, or a quarter of the memory in use
 * (a big program's free pool in proportion to it). */
static size_t floor_pages(size_t used_pages)
{
	return PC_MAX(watermark_pages(), used_pages / 4);
}

static bool zone_keeps_peak(const struct pc_zone *z);

/*
 * The bound: dirty pages a zone may keep whatever their age. At least the
 * watermark and a quarter of the memory in use (a big program's free pool in
 * proportion to it), and as much as keeps the zone's footprint (used + dirty)
 * within the most it had in use in the last one to two delays (peak_hint,
 * rolled by zone_roll_peak_locked). So a program that frees most of its memory and
 * allocates it again within the delay (seed 002's Test A: 10000 blocks, free
 * all, again) reuses its pages without faulting them back in, as it would
 * on jemalloc or mimalloc; what it keeps costs no peak RSS, since the pages
 * were resident at the peak. Free memory that cannot be reused (fragments
 * too small for what is asked next) still goes at once as soon as new memory
 * is taken beside it: the footprint then passes the peak. Memory that stays
 * free goes after the delay, by age. The peak's part counts only while the
 * background thread does the passes (pc_page_release_thread_active:
 * vm.release_thread=1, or auto with the thread started): without it a
 * program that frees at its peak and then makes no call would keep all of
 * it (no pass ever runs), so the bound is then the watermark and the
 * quarter alone, and what exceeds them goes at once. In auto mode that
 * moment (dirty memory over the floor, no thread) is what starts the
 * thread (zone_release_pass tells release_thread.c), so a program that cycles
 * more than the floor faults its excess back in once, not every round; a
 * program that gets no thread (one that never had a second thread) gets
 * the peak's part once it is seen reusing what the floor gave back
 * (zone_keeps_peak, "Reuse without the thread" below).
 */
static size_t bound_pages(const struct pc_zone *z, size_t used_pages)
{
	size_t floor = floor_pages(used_pages);
	if (!zone_keeps_peak(z))
		return floor; /* nothing would release the peak's part in an idle program */
	size_t peak = pc_load_relaxed(&((struct pc_zone *)(uintptr_t)z)->peak_hint);
	return PC_MAX(floor, peak > used_pages ? peak - used_pages : 0);
}

/*
 * Roll the peak's window: a window lasts at least the delay (it rolls at the
 * first timed pass after that), and the bound reads the peak of the current
 * one and the one before, so a peak counts for at least the delay (up to
 * two): memory freed at a peak, while the footprint stays within it, is
 * kept until it has stayed free for the delay and then goes by age, as
 * issue 9 asks ("reused without new page faults within the delay"). Until
 * 2026-11-24 a window lasted a quarter of the delay, so a peak counted for a
 * quarter to half of it, and memory freed at a peak above the floor went
 * after half the delay whatever its use: a program whose rounds come more
 * than half a delay apart (seed 002's Test D under load, or any delay short
 * against its rounds) faulted it back in every round (docs/pages.md, "Rounds
 * slower than half the delay"). What an idle program freed goes by age
 * either way, so it gives back as soon as before. Under zone->lock; from a
 * pass.
 */
static void zone_roll_peak_locked(struct pc_zone *z, uint64_t now)
{
	/* The window's start, and the delay now: a delay shortened live ends
	 * the window already open by its new length (a window's end computed
	 * at its start kept the old, longer one: review item G). */
	if (elapsed_ns(now, z->peak_window_ns) < delay_ns())
		return;
	size_t used = zone_used_locked(z);
	z->peak_used[1] = z->peak_used[0];
	z->peak_used[0] = used;
	z->peak_window_ns = now;
	pc_store_relaxed(&z->peak_hint, PC_MAX(used, z->peak_used[1]));
}

/* For tests: forget every zone's recent peak, as two rolls with nothing in
 * between would (the peak becomes the use now). With windows of a delay,
 * two rolls by the clock also age every dirty block past the delay; tests
 * of the bound alone (release_bound.c) need the peak gone while what they
 * freed is not due. */
void pc_page_release_forget_peak(void)
{
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		pc_lock_acquire(&z->lock);
		size_t used = zone_used_locked(z);
		z->peak_used[0] = z->peak_used[1] = used;
		pc_store_relaxed(&z->peak_hint, used);
		pc_lock_release(&z->lock);
	}
}

/* ---- reuse without the thread -------------------------------------------- */
/*
 * In auto mode a program that never had a second thread gets no release
 * thread (release_thread.c says why), so its bound was the floor alone: a
 * single-threaded program that frees more than the floor and allocates it
 * again (seed 002's Test A from 8 KiB up: 80-320 MB per round) gave the
 * excess back at each free and faulted it in again at each round. The
 * peak's part cannot simply count there: such a program, idle, runs no
 * pass, and would keep what it freed at its peak until its next call
 * (bench_idle: 1 GB allocated, freed, then a sleep). So the zone counts it
 * once the program has shown that it reuses such memory:
 *
 *  - a slow path that finds the free pool (buddy lists and free runs) over
 *    the floor notes the use then plus the floor (reuse_mark; a lower use
 *    lowers it, so it ends at the lowest use of a round of frees plus the
 *    floor): a use past it needs more than the floor alone could keep;
 *  - when the use climbs past the mark within the delay (checked after
 *    each allocation from the zone and each pcp refill: one relaxed load
 *    while no mark is set), memory the floor gave back, or would have, was
 *    needed again: the bound counts the recent peak's part for
 *    RELEASE_REUSE_DELAYS delays from then (keep_peak), renewed by each
 *    such climb (every round of a program that cycles).
 *
 * So the first round over the floor faults its excess back in once, and
 * the later ones do not; a program that frees a peak and goes idle without
 * having cycled gives back what exceeds the floor at once, as before; one
 * that cycled and then goes idle keeps up to its recent peak until its
 * next slow path after the delay (a timed pass then releases by age), or
 * for good if it makes no further call: the price, in programs that have
 * no thread to do it (docs/pages.md, "2026-11-24 evening, helper
 * release3"). vm.release_thread=0 keeps the floor alone.
 */
#define RELEASE_REUSE_DELAYS 4

/* Whether the bound counts the recent peak's part: while the thread does the
 * passes, or, in auto mode without it, while reuse was seen lately. */
static bool zone_keeps_peak(const struct pc_zone *z)
{
	if (pc_page_release_thread_active())
		return true;
	return pc_load_relaxed(&((struct pc_zone *)(uintptr_t)z)->keep_peak) &&
	       pc_option(PC_OPT_VM_RELEASE_THREAD) == PC_RELEASE_THREAD_AUTO;
}

/* Whether reuse is tracked: auto mode, no thread doing the passes. */
static bool reuse_tracked(void)
{
	return pc_option(PC_OPT_VM_RELEASE_THREAD) == PC_RELEASE_THREAD_AUTO &&
	       !pc_page_release_thread_active();
}

/* A slow path found resident_free pages free and maybe resident, with `used`
 * in use: over the floor, note the mark (lowered, or renewed when older
 * than the delay). Relaxed, no lock: a racing update loses a mark at most. */
static void reuse_note_low(struct pc_zone *z, size_t used, size_t resident_free, uint64_t now)
{
	uint64_t delay = delay_ns();
	if (delay == 0 || !reuse_tracked())
		return;
	size_t floor = floor_pages(used);
	if (resident_free <= floor)
		return;
	size_t mark = used + floor, old = pc_load_relaxed(&z->reuse_mark);
	if (old != 0 && mark >= old && elapsed_ns(now, pc_load_relaxed(&z->reuse_mark_ns)) < delay)
		return; /* a lower mark of the last delay stands */
	pc_store_relaxed(&z->reuse_mark_ns, now);
	pc_store_relaxed(&z->reuse_mark, mark);
}

/* A mark is set: if the use climbed past it within the delay, reuse is
 * seen; the mark goes either way once passed. */
static PC_NOINLINE void reuse_check_climb(struct pc_zone *z, size_t mark)
{
	size_t used = zone_used_hint(z);
	if (used <= mark)
		return;
	pc_store_relaxed(&z->reuse_mark, 0);
	uint64_t now = pc_page_clock_ns(), delay = delay_ns();
	if (!reuse_tracked() || elapsed_ns(now, pc_load_relaxed(&z->reuse_mark_ns)) >= delay)
		return; /* no longer tracked, or not within the delay: no reuse seen */
	pc_store_relaxed(&z->keep_peak_since_ns, now);
	pc_store_relaxed(&z->keep_peak, true);
}

static inline void zone_check_reuse(struct pc_zone *z)
{
	size_t mark = pc_load_relaxed(&z->reuse_mark);
	if (pc_unlikely(mark != 0))
		reuse_check_climb(z, mark);
}

/* At a pass: the peak's part without the thread ends RELEASE_REUSE_DELAYS
 * delays (the delay now) after the last reuse seen. */
static void reuse_expire(struct pc_zone *z, uint64_t now)
{
	if (pc_load_relaxed(&z->keep_peak) &&
	    elapsed_ns(now, pc_load_relaxed(&z->keep_peak_since_ns)) >= RELEASE_REUSE_DELAYS * delay_ns())
		pc_store_relaxed(&z->keep_peak, false);
}

/* ---- one release pass --------------------------------------------------- */
#define RELEASE_BATCH 32 /* blocks per zone-lock hold */

int page_release_memory(void *p, size_t bytes)
{
	if (pc_option(PC_OPT_VM_RELEASE_ADVICE) == 1)
		return os_release_lazy(p, bytes);
	return os_release(p, bytes);
}

/* What a pass releases: every dirty block freed before due_before, and,
 * oldest first whatever its age, more while the zone keeps more dirty pages
 * than keep_pages; or, with `bounded`, than its bound (bound_pages) as it is
 * when each block is taken. */
struct release_goal {
	uint64_t due_before;
	size_t keep_pages;
	bool bounded;
};

/* The dirty pages z may keep now: the goal's number, or the bound of the
 * use now (the pages this pass holds are no use). Under zone->lock. */
static size_t goal_keep_locked(const struct pc_zone *z, const struct release_goal *g)
{
	if (!g->bounded)
		return g->keep_pages;
	return bound_pages(z, zone_used_locked(z));
}

/*
 * Take up to RELEASE_BATCH blocks: the oldest dirty ones while the zone is
 * above what it may keep, then those freed before due_before. The bound is
 * read again at each block (and each batch), not once per pass: the madvise
 * runs with the lock dropped, and while it runs other threads free into the
 * zone, which raises the dirty count and the bound (its peak part) alike.
 * With a bound fixed at the pass's start, a pass that began a few hundred
 * pages over went on releasing everything freed meanwhile (Test D at 16
 * threads: 25,000-30,000 pages of 80,000 in some rounds, faulted back in at
 * the next; docs/pages.md, "Test D at 16 threads"). The blocks taken count
 * in z->release_held until they are freed back: not use, so that neither
 * the bound here nor the peak of use (zone_publish_hints_locked, run by
 * any free into the zone meanwhile) counts them; counted as use, a batch
 * in flight (up to 32 blocks of 4 MiB) raised the peak, and the bound's
 * peak part with it, by its size. Under zone->lock.
 */
static unsigned take_batch(struct pc_zone *z, const struct release_goal *g,
			   struct pc_page **pages, unsigned *orders)
{
	unsigned n = 0;
	pc_lock_assert_held(&z->lock);
	while (n < RELEASE_BATCH) {
		size_t keep = goal_keep_locked(z, g);
		uint64_t before = z->dirty_pages > keep ? PC_NS_NEVER : g->due_before;
		struct pc_page *pg = zone_take_oldest_dirty_locked(z, before, &orders[n]);
		if (!pg)
			break;
		z->release_held += (size_t)1 << orders[n];
		pc_list_add(&pg->list, &z->release_held_blocks); /* order kept: the grow wait */
		pages[n++] = pg;
	}
	return n;
}

/*
 * Release the dirty free blocks of z that the goal names, oldest first.
 * Returns the bytes released. Stops at the first madvise failure (mlocked
 * memory).
 */
static size_t zone_release_until(struct pc_zone *z, const struct release_goal *g)
{
	struct pc_page *pages[RELEASE_BATCH];
	unsigned orders[RELEASE_BATCH];
	size_t released = 0;
	int saved = errno; /* free() never changes errno */
	bool ok = true;
	while (ok && !page_fork_pending()) { /* a fork waits for one batch at most */
		pc_lock_acquire(&z->lock);
		unsigned n = take_batch(z, g, pages, orders);
		z->in_flight += n > 0; /* on no list until freed back: fork waits */
		zone_publish_hints_locked(z);
		pc_lock_release(&z->lock);
		if (n == 0)
			break;
		pc_page_test_point(PC_PAGE_TEST_RELEASE_TAKEN);
		bool done[RELEASE_BATCH];
		for (unsigned i = 0; i < n; i++) {
			done[i] = ok && page_release_memory(pc_page_address(pages[i]), PC_PAGE_SIZE << orders[i]) == 0;
			ok = done[i];
			released += done[i] ? PC_PAGE_SIZE << orders[i] : 0;
		}
		pc_lock_acquire(&z->lock);
		for (unsigned i = 0; i < n; i++) {
			pc_list_del(&pages[i]->list); /* off release_held_blocks */
			z->release_held -= (size_t)1 << orders[i];
			zone_free_block_locked(z, pages[i], orders[i], done[i] ? PC_MEM_RELEASED : PC_MEM_DIRTY);
		}
		z->in_flight--;
		zone_publish_hints_locked(z);
		pc_lock_release(&z->lock);
	}
	pc_add_relaxed(&z->stats.released_pages, released >> PC_PAGE_SHIFT);
	pc_add_relaxed(&z->stats.release_calls, released != 0);
	errno = saved;
	return released;
}

/* Release until at most keep_pages of the zone's free pages may be resident,
 * whatever their age (pc_page_trim passes 0). Returns the bytes released. */
size_t zone_release(struct pc_zone *z, size_t keep_pages)
{
	struct release_goal g = { .due_before = PC_NS_NEVER, .keep_pages = keep_pages };
	return zone_release_until(z, &g);
}

/*
 * A pass: what is due, and what exceeds the bound. A timed pass (its time
 * came, or a forced one: pc_page_release_due) also lets the per-CPU lists
 * decay and sets the next pass time; a pass that runs only because the zone
 * is over its bound does neither, so that high loses an eighth per timed
 * pass, not per allocation that finds the zone over (review of medium,
 * item 5).
 */
static size_t zone_release_pass(struct pc_zone *z, uint64_t now, bool timed)
{
	/* Acquire/release: the flag orders nothing but itself (the lists are
	 * under the zone lock); the orders just make the hand-over explicit. */
	if (pc_xchg_acquire(&z->releasing, 1))
		return 0;
	uint64_t delay = delay_ns();
	uint64_t due_before = now > delay ? now - delay + 1 : 0;
	if (timed) {
		pcp_decay(z); /* per-CPU lists shrink towards their floor first */
		pc_store_relaxed(&z->next_pass_ns, now + delay / 4);
	}
	pc_lock_acquire(&z->lock);
	zone_roll_peak_locked(z, now);
	pc_lock_release(&z->lock);
	reuse_expire(z, now);
	size_t used = zone_used_hint(z);
	/* Over the floor: in auto mode the next poll starts the thread (not
	 * with no delay: it would keep nothing and wake every 10 ms), and the
	 * peak's part counts from then on. The free runs count here too: a
	 * burst of medium blocks leaves its free memory in the run heap, not
	 * on the buddy lists (docs/pages.md, "The release thread after a
	 * burst"). The floor, not the bound: a peak's part kept for reuse
	 * seen without the thread (above) must not hide the need for one. */
	size_t resident_free = pc_load_relaxed(&z->dirty_hint) + pc_load_relaxed(&z->run_dirty_hint);
	if (resident_free > floor_pages(used) && delay != 0)
		release_thread_note_over_floor();
	struct release_goal g = { .due_before = due_before, .bounded = true };
	size_t released = zone_release_until(z, &g);
	/* free runs in chunks still partly used: by age only (run.c) */
	released += zone_run_release_due(z, due_before);
	zone_unmap_maybe(z); /* whole regions given back: their address space */
	pc_store_release(&z->releasing, 0);
	return released;
}

/*
 * Called after a block is taken from the zone itself (not a per-CPU list),
 * with no lock held: run a pass if the zone's dirty memory is over the
 * bound, which a footprint that grew past its recent peak lowers (new
 * memory taken while free pieces that could not serve it stay dirty). No
 * clock read unless over: two relaxed loads when nothing is dirty.
 */
void zone_release_if_over(struct pc_zone *z)
{
	zone_check_reuse(z); /* the use climbs here: reuse seen? */
	size_t dirty = pc_load_relaxed(&z->dirty_hint);
	if (pc_likely(dirty == 0))
		return;
	size_t used = zone_used_hint(z);
	if (pc_likely(dirty <= bound_pages(z, used)))
		return;
	uint64_t now = pc_page_clock_ns();
	zone_release_pass(z, now, now >= pc_load_relaxed(&z->next_pass_ns));
}

/*
 * Called after frees into the zone and after pcp refills, with no lock held:
 * run a pass when one is due or the zone holds more dirty memory than its
 * bound. Two relaxed loads when nothing is dirty; a stale hint costs one
 * pass too early or one call too late.
 */
void zone_maybe_release(struct pc_zone *z)
{
	zone_check_reuse(z); /* after a refill the use climbs: reuse seen? */
	size_t dirty = pc_load_relaxed(&z->dirty_hint);
	size_t run_dirty = pc_load_relaxed(&z->run_dirty_hint);
	if (pc_likely(dirty == 0) && pc_likely(run_dirty == 0))
		return;
	release_thread_work(); /* a sleeping release thread has work again */
	size_t used = zone_used_hint(z);
	uint64_t now = pc_page_clock_ns();
	reuse_note_low(z, used, dirty + run_dirty, now);
	bool timed = now >= pc_load_relaxed(&z->next_pass_ns);
	if (!timed && dirty <= bound_pages(z, used))
		return;
	zone_release_pass(z, now, timed);
}

/*
 * Called by zone_grow after it mapped a region, no lock held. Auto mode:
 * once the zone manages more than the floor (vm.release_watermark_kb), its
 * frees alone could leave more free memory than the floor, resident, in a
 * program that then makes no call: no pass and no malloc slow path would
 * run to start the thread (frees never start it), so it is wanted now,
 * while the program still allocates (the malloc that grew the zone polls
 * at its end). A zone that fits in the floor never needs it. Not with no
 * delay (everything goes at once).
 */
static void note_if_past_floor(size_t pages)
{
	if (pages > watermark_pages() && delay_ns() != 0)
		release_thread_note_over_floor();
}

void zone_release_note_grown(struct pc_zone *z)
{
	note_if_past_floor(pc_load_relaxed(&z->managed_hint));
}

/* The bytes malloc's live huge blocks hold, as last told (relaxed: a grow
 * and a shrink that race may leave the older total here until the next
 * huge call; only zone_release_note_all reads it, so a stale value at most
 * wants the thread when it is not needed, or not when it would be). */
static _Atomic size_t held_bytes;

void pc_page_release_note_held(size_t bytes)
{
	pc_store_relaxed(&held_bytes, bytes);
	note_if_past_floor(bytes >> PC_PAGE_SHIFT);
}

/*
 * Auto mode, with no thread running: want it again for every zone grown
 * past the floor and for live huge blocks past it, as their growth did.
 * For when the thread would otherwise be wanted by nothing that still
 * happens: vm.release_thread set to auto live (thread_mode_changed), a
 * delay set from 0 live (note_if_past_floor skipped every growth while it
 * was 0), a fork child (zone_release_fork_child), and a thread that left
 * while the option went 0 and back to auto (release_thread_main's exit:
 * the set to auto found it still running and wanted nothing).
 */
void zone_release_note_all(void)
{
	for (unsigned i = 0; i < pc_zone_count(); i++) /* none yet at start-up */
		zone_release_note_grown(pc_zone_get(i));
	note_if_past_floor(pc_load_relaxed(&held_bytes) >> PC_PAGE_SHIFT);
}

size_t page_release_due(void)
{
	size_t released = 0;
	if (!pc_page_try_init())
		return 0;
	uint64_t now = pc_page_clock_ns();
	for (unsigned i = 0; i < pc_zone_count(); i++)
		released += zone_release_pass(pc_zone_get(i), now, true);
	return released;
}

/* A new delay: every zone's next pass is due now (a shorter delay must not
 * wait for a pass planned under the longer one), and the thread wakes. */
static void delay_changed(long value)
{
	for (unsigned i = 0; i < pc_zone_count(); i++) /* none yet at start-up */
		pc_store_relaxed(&pc_zone_get(i)->next_pass_ns, 0);
	(void)value;
	zone_release_note_all(); /* from 0: growths meanwhile wanted nothing */
	release_thread_wake();
}

/*
 * vm.release_thread changed live (release_thread.c's own hook wakes the
 * thread and, at 0, forgets that one was wanted). Set to auto, what is
 * already past the floor wants the thread again, as its growth did
 * (zone_release_note_all): no further growth, and perhaps no pass over the
 * floor, would ask again (a gap found by the review of pagesidle). The
 * next poll starts it, under the usual rules (a second thread, no seccomp
 * filter).
 */
static void thread_mode_changed(long value)
{
	if (value == PC_RELEASE_THREAD_AUTO) {
		/* Between the option's store (before the hooks) and the reads of
		 * thread_state below: a thread leaving meanwhile sees auto, or
		 * is seen gone (release_thread.c, exit_order_point). */
		release_thread_exit_order();
		zone_release_note_all();
	}
}

void zone_release_init(void)
{
	release_thread_init();
	pc_option_on_change(PC_OPT_VM_RELEASE_DELAY_MS, delay_changed);
	pc_option_on_change(PC_OPT_VM_RELEASE_THREAD, thread_mode_changed);
}

/* In a fork child: no thread, no releaser of the parent exists there. A
 * zone the child inherits already grown past the floor wants the thread
 * again (zone_release_note_grown): the child's frees could pass the floor
 * in memory it never has to grow for (a pre-forking server's workers), and
 * its poll still starts none while it has no second thread. */
void zone_release_fork_child(void)
{
	release_thread_fork_child();
	for (unsigned i = 0; i < pc_zone_count(); i++)
		pc_store_relaxed(&pc_zone_get(i)->releasing, 0);
	zone_release_note_all();
}
