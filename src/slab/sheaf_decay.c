/*
 * slab/sheaf_decay.c - the decay of sheaves and barns (issue 8 item 6):
 * what nobody has touched for a while goes back to the slabs, so that the
 * objects an idle CPU or thread keeps (and their slabs' pages, which the
 * page allocator then releases after vm.release_delay_ms) return.
 *
 * A decay pass looks at every CPU's sheaves (rseq mode), every live
 * thread's (thread mode) and every barn, and flushes into the slabs those
 * that have not changed since the previous pass: the same sheaves with the
 * same count (a racy read), or a barn no sheaf came to or left. Passes run
 * at most once per vm.release_delay_ms (and at least a second apart: a pass
 * walks every cache and CPU), on the page clock (pc_page_clock_ns, which
 * tests move), so a sheaf goes one to two intervals after its last use.
 * Nothing is added to the fast paths: a CPU that cycles alloc/free pairs
 * on a steady count looks idle and pays one refill per pass, and a sheaf
 * used between two passes but left as it was stays one pass longer.
 *
 * Who runs passes: the sheaf slow paths (every 64th of a thread, when one
 * is due; with no lock held), pc_slab_decay() when due, and
 * pc_slab_decay_pass() at once (tests; the hook for a periodic caller).
 * A process that stops allocating altogether runs no slow path: its sheaves
 * stay until the next one, or pc_trim (the page layer's release thread,
 * vm.release_thread, does not call up into the slab layer).
 *
 * Owns: next_pass_ns (page-clock time of the next due pass; claimed with a
 * compare-and-swap, so that one thread runs each due pass) and, per thread,
 * decay_tick. A pass holds slab_mutex (tried, never waited for, from the
 * slow paths) while it walks the caches, then their slot and barn locks, or
 * the thread registry lock, one at a time.
 */
#include "slab.h"

static _Atomic uint64_t next_pass_ns;
static __thread unsigned decay_tick __attribute__((tls_model("initial-exec")));

static uint64_t decay_interval_ns(void)
{
	uint64_t ms = (uint64_t)pc_option(PC_OPT_VM_RELEASE_DELAY_MS);
	return PC_MAX(ms, (uint64_t)1000) * 1000000u; /* a pass walks every cache and CPU */
}

static void decay_one(struct pc_cache *s, void *arg)
{
	*(unsigned long *)arg += sheaf_decay_cache(s);
}

/* One pass; `wait`: block on slab_mutex (else skip the caches when busy). */
static unsigned long decay_pass(bool wait)
{
	unsigned long n = sheaf_decay_threads();
	if (wait)
		pc_cache_foreach(decay_one, &n);
	else
		pc_cache_foreach_try(decay_one, &n);
	return n;
}

/* Claim the pass due at the page clock's now, if one is. */
static bool claim_due_pass(void)
{
	uint64_t next = pc_load_relaxed(&next_pass_ns), now = pc_page_clock_ns();
	/* Relaxed: the time is a hint; the compare-and-swap only makes one
	 * claimant of a due pass. */
	return now >= next &&
	       atomic_compare_exchange_strong_explicit(&next_pass_ns, &next,
						       now + decay_interval_ns(),
						       memory_order_relaxed,
						       memory_order_relaxed);
}

void sheaf_decay_poll(void)
{
	if (pc_likely((++decay_tick & 63) != 0))
		return;
	if (claim_due_pass())
		decay_pass(false);
}

unsigned long pc_slab_decay(void)
{
	if (pc_slab_reentered() || !claim_due_pass())
		return 0;
	return decay_pass(true);
}

unsigned long pc_slab_decay_pass(void)
{
	if (pc_slab_reentered())
		return 0;
	pc_store_relaxed(&next_pass_ns, pc_page_clock_ns() + decay_interval_ns());
	return decay_pass(true);
}
