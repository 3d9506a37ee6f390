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
 * An idle cache also gives its slabs back: when, after the pass, no CPU or
 * live thread holds a sheaf of it and its barns are empty (everything was
 * idle and went, or it had none: sheaves off, or every object in use), the
 * pass empties its CPU slabs and CPU partial lists into the node and frees
 * the empty slabs (slab_shrink_slabs, pc_cache_shrink without the sheaves);
 * then, at the end of the pass, the sheaf caches' empty slabs go too (the
 * sheaves freed by the pass). So an idle program's objects come back as
 * pages, which the page allocator releases vm.release_delay_ms later. A
 * cache that looks idle but is not (a steady count, or sheaves off) pays a
 * CPU slab refill per pass.
 *
 * Who runs passes: the sheaf slow paths (every 64th of a thread, when one
 * is due; with no lock held), pc_slab_decay() when due, and
 * pc_slab_decay_pass() at once (tests). The page layer's background release
 * thread (vm.release_thread=1) calls pc_slab_decay at the start of each of
 * its passes, through the hook sheaf_decay_init registers
 * (pc_page_release_hook_add, page.h: the page layer does not call up), so
 * that a process that stops allocating altogether decays too: its sheaves
 * go within two decay intervals of their last use, their slabs with them,
 * and the pages vm.release_delay_ms after that. Without the thread such a
 * process keeps them until its next slow path, or pc_trim.
 *
 * Owns: next_pass_ns (page-clock time of the next due pass; claimed with a
 * compare-and-swap, so that one thread runs each due pass) and, per thread,
 * decay_tick. A pass holds slab_mutex (tried, never waited for, from the
 * slow paths) from start to end, so that it never overlaps a cache walker
 * or a pc_cache_destroy (check.c); under it, the thread registry lock,
 * then each cache's slot and barn locks, one at a time, and for the shrink of an idle
 * cache its c->locks and list_locks (as pc_cache_shrink); all with the
 * thread's sheaf_depth raised (sheaf_enter), so that a signal handler that
 * allocates meanwhile takes no lock.
 */
#include "slab.h"
#include "../memcheck.h"

static _Atomic uint64_t next_pass_ns;
static __thread unsigned decay_tick __attribute__((tls_model("initial-exec")));

static uint64_t decay_interval_ns(void)
{
	uint64_t ms = (uint64_t)pc_option(PC_OPT_VM_RELEASE_DELAY_MS);
	return PC_MAX(ms, (uint64_t)1000) * 1000000u; /* a pass walks every cache and CPU */
}

void (*_Atomic pc_slab_decay_test_hook)(struct pc_cache *s);

static void decay_one(struct pc_cache *s, void *arg)
{
	if (s->internal)
		return; /* after the others: they free sheaves into it */
	void (*hook)(struct pc_cache *) = pc_load_relaxed(&pc_slab_decay_test_hook);
	if (pc_unlikely(hook != NULL))
		hook(s); /* tests: a pass that has begun on s */
	*(unsigned long *)arg += sheaf_decay_cache(s);
	if (!sheaf_cache_holds(s))
		slab_shrink_slabs(s);
}

static void shrink_internal(struct pc_cache *s, void *arg)
{
	(void)arg;
	if (s->internal)
		slab_shrink_slabs(s);
}

/*
 * One pass; `wait`: block on slab_mutex (else skip the pass when it is
 * busy). The whole pass holds slab_mutex, the thread registry's part too,
 * so that it never overlaps a walker (pc_cache_check) or a
 * pc_cache_destroy, which hold it: those must find every object of their
 * cache either allocated or in a slab, never in a sheaf the decay has
 * detached and is still flushing, nor slabs the decay's shrink is moving.
 */
static unsigned long decay_pass(bool wait)
{
	unsigned long n = 0;
	pc_vg_enter(); /* flushing writes free pointers into free objects */
	sheaf_enter(); /* a signal handler that allocates now takes no lock */
	if (wait)
		slab_mutex_lock();
	if (wait || slab_mutex_trylock()) {
		n = sheaf_decay_threads();
		slab_cache_foreach_locked(decay_one, &n);
		slab_cache_foreach_locked(shrink_internal, NULL);
		slab_mutex_unlock();
	}
	sheaf_leave();
	pc_vg_leave();
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

static void release_thread_hook(void)
{
	pc_slab_decay();
}

void sheaf_decay_init(void)
{
	pc_page_release_hook_add(release_thread_hook);
}
