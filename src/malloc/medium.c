/*
 * malloc/medium.c - a per-CPU cache of medium blocks (runs of 3 to
 * PC_PCP_MAX_RUN pages: 8 KiB < size <= 256 KiB) in front of the page
 * allocator, so that a medium malloc or free takes no lock and no atomic
 * read-modify-write when the cache can serve it (docs/pages-medium.md).
 *
 * Owns: one region (os_map) with, for each run length n (a class, k = n -
 * 3) and each CPU c, a 64-byte slot whose first word points to a stack of
 * free blocks of n pages (struct os_rseq_stack, os.h), and one struct
 * medium_cpu per CPU. The fast paths (malloc.h, medium_cache_pop/push) are
 * the os layer's rseq pop and push on the current CPU's stack of the
 * block's class: one restartable sequence each, no lock.
 *
 * Bound: every stack of CPU c has a capacity (its objects[] has room for
 * PC_MEDIUM_STACK_MAX), and sum over k of capacity(k, c) * n(k) pages is at
 * most c's bound: 256 KiB at first, raised by demand and lowered by decay
 * passes within malloc.medium_cache_kb (the ceiling; "The bound's demand"
 * below). Capacities start at 0 and change only
 *   - in a free's slow path (the stack was full): under c's lock, on CPU c,
 *     with os_rseq_stack_resize (an rseq store that fails unless it runs on
 *     c, and only lowers a capacity to >= the count): the class grows by
 *     half again within the budget, after taking back the unused capacity
 *     (capacity - count) of other classes of c, then their blocks (evicted
 *     to the page allocator), when the budget has not enough left;
 *   - in a flush (below), which sets them to 0, or a decay pass's trim of a
 *     CPU above its lowered bound (below), which sets them to the counts
 *     it leaves, within the bound.
 * So the bytes a CPU's stacks hold never exceed its bound, but between a
 * decay pass's halving of its raise and the trim the same pass then does:
 * a push commits only below the capacity it read in its section, and a
 * lowered capacity aborts every section of that CPU that read the old one.
 *
 * Flush (medium_flush: pc_trim, the out-of-memory retry, a lower budget;
 * medium_decay: the release thread's passes, or without the thread the
 * cache's slow paths (medium_decay_tick), for CPUs whose stacks did not
 * change since the last pass) and trim (medium_decay, for a busy CPU above
 * its bound): under each such CPU's lock, store a pointer to an empty
 * stack (capacity 0) into each of its slots, then one os_rseq_fence
 * (membarrier RSEQ): every section that read an old pointer has then been
 * aborted or has committed, so the old stacks are the flusher's. A flush
 * gives all their blocks back to the page allocator (pc_free_run) and sets
 * capacities and counts to 0; a trim gives back some (medium_trim_cpu) and
 * sets each capacity to its count; then the slots get them back (release
 * store).
 *
 * Re-entry: every path here that holds one of these locks counts itself in
 * pc_medium_depth (medium_enter/leave, malloc.h); a signal handler that
 * interrupted one takes none of them (no decay tick; malloc.c and huge.c
 * skip the flush of their out-of-memory paths).
 *
 * Locks, outermost first: medium_decay_lock -> cpu->lock (every CPU's, in
 * CPU order) -> the page layer's pcp->lock -> zone->lock (pc_free_run under
 * a CPU lock). cpu->lock (a pc_spin per CPU, rank none, so the witness
 * checks neither) serialises capacity changes and flushes of one CPU; slow
 * paths only try it (busy: the block goes to the page allocator). Flushers
 * and the fork handlers take them blocking in CPU order; none is taken with
 * a slab or page lock held.
 *
 * Fork: prefork takes every CPU lock; a stack is consistent at any instant
 * (a section commits with one store), so the child finds every stack whole
 * and resets the locks. A block popped by a thread that the child does not
 * have is lost in the child, like any block such a thread held.
 *
 * Rseq mode (the slab layer's PC_SHEAF_MODE_RSEQ), started by the first
 * medium miss (medium_start; NULL slots before: medium blocks go to and come
 * from the page allocator directly); without rseq,
 * pc_medium_slots stays NULL and medium_thread.c keeps per-thread arrays
 * instead (medium_flush, medium_decay and medium_cached_bytes cover both).
 *
 * Blocks enter the cache by frees (a push) and by the refill of a miss
 * (medium_refill: the caller's block and a batch in one page call, pushed
 * onto the stack within the room frees made).
 *
 * A block in the cache has state PC_PG_NONE (free() of it is an invalid
 * pointer, as after pc_free_run) and keeps aux = its page count; it is
 * still in use in the page allocator's view (counted by
 * medium_cached_bytes, which the statistics subtract from "allocated").
 */
#include "malloc.h"

#include <string.h>

_Atomic(char *) pc_medium_slots;
__thread unsigned char pc_medium_depth PC_MEDIUM_TLS;
size_t pc_medium_stride;

/* Stack bytes: header + PC_MEDIUM_STACK_MAX pointers, a multiple of 64. */
#define MEDIUM_STACK_BYTES pc_align_up(sizeof(struct os_rseq_stack) + PC_MEDIUM_STACK_MAX * sizeof(void *), 64)

struct PC_CACHE_ALIGNED medium_cpu { /* one per CPU: no shared lines */
	struct pc_spin lock;
	/* Sum of capacity * pages over this CPU's stacks (written under lock;
	 * read racily by the slow path's test before it takes the lock). */
	_Atomic uint32_t used;
	uint32_t cursor; /* next class to take unused capacity from (lock) */
	/* Set by each decay pass (medium_decay_lock): each class's count and top
	 * block as one word (medium_class_sig), the classes holding blocks that
	 * did not change since the pass before (bit k), what the pass does. */
	uint32_t sig[PC_MEDIUM_CLASSES];
	uint64_t stale;
	uint8_t action; /* MEDIUM_KEEP, MEDIUM_FLUSH or MEDIUM_TRIM */
	/* Frees of each class that found the budget used up since its last
	 * look at other classes (relaxed, racy: a rate, not a count). */
	_Atomic uint8_t miss[PC_MEDIUM_CLASSES];
	/* The bound that follows demand ("The bound's demand", below): pages
	 * raised above MEDIUM_BASE_PAGES (relaxed atomics, changed by
	 * compare-and-swap: a miss's raise and a decay pass's
	 * halving (under the lock) never undo each other); refused[k]: blocks
	 * of class k that went to the pages at the bound and no miss used up
	 * yet (saturating); refusing: one did since the last decay pass
	 * (relaxed, racy, plain stores). */
	_Atomic uint32_t raise;
	_Atomic uint8_t refusing;
	_Atomic uint8_t refused[PC_MEDIUM_CLASSES];
};

static char *medium_stacks;                 /* [cpu][class] stacks of MEDIUM_STACK_BYTES */
static struct medium_cpu *medium_cpus;      /* [cpu] */
static unsigned medium_ncpus;
static _Atomic uint32_t medium_budget; /* malloc.medium_cache_kb in pages */
/* The empty stack flushes point slots to (capacity 0, count 0). */
static struct os_rseq_stack medium_empty __attribute__((aligned(64)));
/* Serialises decay passes (sig, stale, action): the release thread's and tests'. */
static struct pc_spin medium_decay_lock;
/* This thread's run of misses of one class (medium_refill): the class + 1
 * (0: none) and the blocks its next miss fetches beside the caller's. */
static __thread unsigned char medium_run_class PC_MEDIUM_TLS, medium_run_ramp PC_MEDIUM_TLS;

/* ---- the bound's demand ---------------------------------------------------------- */
/*
 * malloc.medium_cache_kb is a ceiling, not what every CPU keeps: a CPU's
 * bound starts at MEDIUM_BASE_PAGES (256 KiB, or the ceiling if lower) and
 * follows demand, as the slab layer's barn bound does (slab/barn.c, "The
 * bound"). A free that finds the bound used up gives its block to the pages
 * and counts a refusal in its class; a later malloc of that class that the
 * cache cannot serve (a miss) uses one up and raises the CPU's bound by
 * MEDIUM_RAISE_PAGES: the cache would have served that miss had the bound
 * been higher. The raise is a fixed quantum, not the block's size: a hit
 * saves one trip to the page allocator whatever the block's size, so a
 * program that calls often (bench_mixed) grows the bound fast and one that
 * touches big blocks between rare calls (bench_large) slowly: there a
 * 2 MiB cache per CPU bought no time and cost about 4 MB of peak RSS at 2
 * threads (docs/pages-medium.md). Each decay
 * pass halves the raise of a CPU that refused nothing since the previous
 * pass (its demand is met or over; a loop that still needs it raises it
 * again), under the CPU's lock; every pass forgets the refusals. A busy CPU
 * whose capacities are then above its bound is trimmed to it in the same
 * pass (medium_trim_cpu): its classes that did not change since the
 * previous pass (stale: count and top block the same, as for a size the
 * program stopped using, or one used in pairs that leave the stack as they
 * found it) give all their
 * blocks back, then the classes holding the most give their bottom blocks
 * (the least recently pushed; a steady demand reuses the top ones) until
 * the rest fits. So a steady demand loses only what exceeds the halved
 * bound, not its whole cache (until 2026-11-24 the halving flushed the
 * CPU, every other pass), and a demand that dropped gives its excess back
 * within a few passes. An idle CPU (no class changed) is flushed whole. A
 * flush of a CPU (idle decay, pc_trim, out of memory, a lower ceiling)
 * resets its raise. Thread mode (medium_thread.c) keeps its fixed bound.
 *
 * Without the release thread (pc_page_release_thread_active false:
 * vm.release_thread=0, or auto before it starts, single-threaded and
 * sandboxed programs) no decay pass runs in a program that stops calling,
 * so what the bound allows stays cached for good: the ceiling is then at
 * most MEDIUM_UNDECAYED_PAGES (2 MiB per CPU; docs/pages-medium.md, "The
 * ceiling without the release thread"). The raise still follows demand up
 * to malloc.medium_cache_kb, so a thread that starts later finds the bound
 * the demand asked for.
 */
#define MEDIUM_BASE_PAGES  64u /* 256 KiB */
#define MEDIUM_RAISE_PAGES 1u  /* 4 KiB per miss the cache would have served */
#define MEDIUM_UNDECAYED_PAGES 512u /* 2 MiB: the ceiling while no thread decays */
_Static_assert(PC_MEDIUM_STACK_MAX <= 255 && PC_MEDIUM_CLASSES <= 64, "rates in bytes, classes in a mask");
enum { MEDIUM_KEEP, MEDIUM_FLUSH, MEDIUM_TRIM }; /* a decay pass's choice per CPU */

/* The CPU's bound in pages: base + raise, within the ceiling (at most
 * MEDIUM_UNDECAYED_PAGES while no release thread runs the decay). */
static uint32_t medium_bound(struct medium_cpu *mc)
{
	uint32_t ceiling = pc_load_relaxed(&medium_budget);
	if (!pc_page_release_thread_active())
		ceiling = PC_MIN(ceiling, MEDIUM_UNDECAYED_PAGES);
	return PC_MIN(ceiling, MEDIUM_BASE_PAGES + pc_load_relaxed(&mc->raise));
}

static void medium_note_refused(struct medium_cpu *mc, unsigned k)
{
	uint8_t n = pc_load_relaxed(&mc->refused[k]);
	if (n < UINT8_MAX)
		pc_store_relaxed(&mc->refused[k], (uint8_t)(n + 1));
	if (!pc_load_relaxed(&mc->refusing))
		pc_store_relaxed(&mc->refusing, 1);
}

static struct os_rseq_stack *medium_stack_of(unsigned cpu, unsigned k)
{
	return (struct os_rseq_stack *)(medium_stacks + ((size_t)cpu * PC_MEDIUM_CLASSES + k) * MEDIUM_STACK_BYTES);
}

static void **medium_slot_of(unsigned cpu, unsigned k)
{
	char *slots = pc_load_acquire(&pc_medium_slots);
	return (void **)(slots + k * pc_medium_stride + ((size_t)cpu << OS_RSEQ_SLOT_SHIFT));
}

/* The stack fields the fast paths write inside rseq sections, read here
 * racily (the owner CPU may commit meanwhile; callers re-check under rseq):
 * a relaxed load. */
static uint32_t medium_load_relaxed_u32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* ---- growing a class on this CPU (slow path of a free) ------------------------ */

/* Lower the capacity of class k of `cpu` to its count, after popping
 * blocks (given to the page allocator) while evict and the capacity freed
 * would be less than `want` pages. Returns the pages taken from the
 * budget. Called with the CPU's lock held, on (presumably) `cpu`: a resize
 * run elsewhere fails and takes nothing (a pop run elsewhere takes a block
 * of that CPU's stack, which is harmless). */
static uint32_t medium_shrink_class(unsigned cpu, unsigned k, uint32_t want, bool evict)
{
	struct os_rseq_stack *st = medium_stack_of(cpu, k);
	void *base = pc_load_acquire(&pc_medium_slots) + k * pc_medium_stride;
	uint32_t pages = k + PC_MEDIUM_MIN_PAGES, cap = medium_load_relaxed_u32(&st->capacity);
	for (uint32_t i = 0; evict && i < cap && os_rseq_cpu_id() == (int32_t)cpu; i++) {
		uint32_t count = medium_load_relaxed_u32(&st->count);
		if (count == 0 || (cap - PC_MIN(cap, count)) * pages >= want)
			break;
		void *p = os_rseq_pop(base);
		if (!p)
			break;
		pc_free_run(p, pages);
	}
	uint32_t count = medium_load_relaxed_u32(&st->count);
	if (count >= cap || !os_rseq_stack_resize(base, cpu, st, cap, count))
		return 0;
	return (cap - count) * pages;
}

/* Give the budget `want` pages back from classes of `cpu` other than
 * `keep`: first their unused capacity (capacity - count), then, if that is
 * not enough, their blocks (evicted, newest first). Called with mc->lock. */
static void medium_take_budget(struct medium_cpu *mc, unsigned cpu, unsigned keep, uint32_t want)
{
	uint32_t got = 0;
	for (int evict = 0; evict < 2 && got < want; evict++)
		for (unsigned i = 0; i < PC_MEDIUM_CLASSES && got < want; i++) {
			unsigned k = (mc->cursor + i) % PC_MEDIUM_CLASSES;
			if (k != keep)
				got += medium_shrink_class(cpu, k, want - got, evict);
		}
	uint32_t used = pc_load_relaxed(&mc->used);
	pc_store_relaxed(&mc->used, used - PC_MIN(got, used));
	mc->cursor = (mc->cursor + 1) % PC_MEDIUM_CLASSES;
}

/* Whether a free that found its stack full should look for room: not when
 * the stack is at its full room; not when the budget is used up and only
 * this class holds it; and, when the budget is used up by other classes
 * too, only every MEDIUM_MISS_RATE-th time, so that classes do not evict
 * each other on every free (racy reads, no lock: a wrong answer costs one
 * block's trip to the page allocator, or one slow path). */
#define MEDIUM_MISS_RATE 16
static bool medium_worth_growing(struct medium_cpu *mc, struct os_rseq_stack *st, unsigned k, unsigned pages)
{
	uint32_t cap = medium_load_relaxed_u32(&st->capacity), used = pc_load_relaxed(&mc->used);
	if (cap >= PC_MEDIUM_STACK_MAX)
		return false;
	if (used + pages <= medium_bound(mc))
		return true; /* room in the budget */
	if (used <= cap * pages)
		return false; /* nothing elsewhere to take back */
	uint8_t miss = pc_load_relaxed(&mc->miss[k]);
	pc_store_relaxed(&mc->miss[k], (uint8_t)((miss + 1) % MEDIUM_MISS_RATE));
	return miss + 1 == MEDIUM_MISS_RATE;
}

/* Raise the capacity of the class of `pages` on the CPU we run on, within
 * the budget: true if it grew (a push may then succeed). The budget is read
 * under the CPU's lock: a lower budget's flush takes that lock after
 * storing it, so no capacity granted under the old budget outlives the
 * flush. */
static bool medium_grow(unsigned pages)
{
	int32_t cpu = os_rseq_cpu_id();
	if (cpu < 0 || (unsigned)cpu >= medium_ncpus)
		return false;
	struct medium_cpu *mc = &medium_cpus[cpu];
	unsigned k = pages - PC_MEDIUM_MIN_PAGES;
	struct os_rseq_stack *st = medium_stack_of((unsigned)cpu, k);
	if (!medium_worth_growing(mc, st, k, pages))
		return false;
	medium_enter();
	if (!pc_spin_trylock(&mc->lock)) {
		medium_leave();
		return false; /* a flusher or another slow path: go to the pages */
	}
	uint32_t budget = medium_bound(mc);
	uint32_t cap = medium_load_relaxed_u32(&st->capacity);
	/* Grow by half again (at least one block), up to the stack's room. */
	uint32_t to = PC_MIN(PC_MEDIUM_STACK_MAX, cap + PC_MAX(1u, cap / 2));
	uint32_t want = (to - cap) * pages;
	if (budget >= pages && to > cap && pc_load_relaxed(&mc->used) + want > budget &&
	    pc_load_relaxed(&mc->used) > cap * pages)
		medium_take_budget(mc, (unsigned)cpu, k, pc_load_relaxed(&mc->used) + want - budget);
	uint32_t used = pc_load_relaxed(&mc->used);
	if (used + want > budget) /* what the budget has left */
		to = cap + (budget > used ? (budget - used) / pages : 0);
	bool grown = to > cap && os_rseq_stack_resize(medium_slot_of(0, k), (unsigned)cpu, st, cap, to);
	if (grown)
		pc_store_relaxed(&mc->used, used + (to - cap) * pages);
	pc_spin_unlock(&mc->lock);
	medium_leave();
	return grown;
}


PC_NOINLINE void medium_cache_free_slow(void *p, unsigned pages)
{
	medium_decay_tick();
	if (medium_grow(pages) && os_rseq_push(medium_slot_of(0, pages - PC_MEDIUM_MIN_PAGES), p) == 1)
		return;
	medium_run_class = 0; /* a free the stack could not keep ends a run of misses */
	/* Refused at the bound (not at the stack's room, not a busy lock). */
	int32_t cpu = os_rseq_cpu_id();
	if (cpu >= 0 && (unsigned)cpu < medium_ncpus) {
		struct medium_cpu *mc = &medium_cpus[cpu];
		struct os_rseq_stack *st = medium_stack_of((unsigned)cpu, pages - PC_MEDIUM_MIN_PAGES);
		if (medium_load_relaxed_u32(&st->capacity) < PC_MEDIUM_STACK_MAX &&
		    pc_load_relaxed(&mc->used) + pages > medium_bound(mc))
			medium_note_refused(mc, pages - PC_MEDIUM_MIN_PAGES);
	}
	pc_free_run(p, pages);
}

/*
 * The refill of a miss (rseq mode): the caller's block and up to the room
 * its stack has left (capacity - count, at most MEDIUM_REFILL_MAX) more,
 * from the page allocator in one call (pc_alloc_runs: one hold of the
 * per-CPU list's lock, at most one of the zone lock), the extra ones
 * pushed onto the stack of the CPU we run on then. Only the room that
 * frees have made (a stack grows at its frees, within the bound): a class
 * that frees have not shown to be reused fetches no more than the call,
 * so a program that only allocates keeps nothing cached. And only as many
 * as a run of misses asks for: a thread's miss of the class it missed last
 * fetches twice what that one did (0, 1, 2, 4, ... MEDIUM_REFILL_MAX), a
 * miss of another class starts again from 0, and so does a free that its
 * stack cannot keep (full, and not grown). Filling the room at every miss
 * cost bench_mixed at 2 threads about 2 MB (2.5%) of peak RSS: misses of
 * many classes each parked cold blocks under the warm ones frees bring
 * back. One page call per miss took the per-CPU list's lock once per
 * medium malloc: with 8 threads per CPU, a holder preempted in it sent its
 * CPU's other threads to the zone lock one block each (Test D at 16
 * threads; docs/pages-medium.md, "2026-11-24 evening, helper medium3").
 * NULL: nothing to batch (no room, thread mode, a re-entered call, the
 * zone empty): the caller takes pc_alloc_run.
 */
#define MEDIUM_REFILL_MAX 32
_Static_assert(MEDIUM_REFILL_MAX < PC_ALLOC_RUNS_MAX, "the caller's block and the batch in one call");
static void *medium_refill(size_t pages)
{
	char *slots = pc_load_acquire(&pc_medium_slots); /* as in medium_cache_miss */
	int32_t cpu = os_rseq_cpu_id();
	if (!slots || cpu < 0 || (unsigned)cpu >= medium_ncpus || medium_reentered())
		return NULL;
	unsigned k = (unsigned)pages - PC_MEDIUM_MIN_PAGES;
	struct os_rseq_stack *st = medium_stack_of((unsigned)cpu, k);
	unsigned ramp = medium_run_class == k + 1 ? medium_run_ramp : 0;
	medium_run_class = (unsigned char)(k + 1);
	medium_run_ramp = (unsigned char)PC_MIN(ramp ? 2 * ramp : 1, MEDIUM_REFILL_MAX);
	uint32_t cap = medium_load_relaxed_u32(&st->capacity), count = medium_load_relaxed_u32(&st->count);
	uint32_t room = cap > count ? PC_MIN(cap - count, ramp) : 0;
	if (room == 0)
		return NULL;
	void *blocks[MEDIUM_REFILL_MAX + 1];
	unsigned got = pc_alloc_runs(pages, blocks, room + 1);
	if (got == 0)
		return NULL;
	/* Pushed last first, so that the pops hand them out in the order the
	 * page allocator gave them (a batch is cut upwards from one free run:
	 * the blocks of a run of mallocs then follow each other in memory, as
	 * one at a time from the per-CPU list did). */
	void *rev[MEDIUM_REFILL_MAX];
	for (unsigned i = 1; i < got; i++) { /* cached: state NONE, aux its pages (the file's header) */
		struct pc_page *pg = pc_page_of_owned(blocks[i]);
		pg->aux = (uint32_t)pages;
		pc_pg_set_state(pg, PC_PG_NONE);
		rev[got - 1 - i] = blocks[i];
	}
	/* When only part fits (a push on this CPU since the room was read, or
	 * we moved to a fuller stack: rare), the farthest are kept and the
	 * nearest go back: the order is a matter of speed, not of correctness. */
	unsigned pushed = got > 1 ? os_rseq_push_many(slots + k * pc_medium_stride, rev, got - 1) : 0;
	for (unsigned i = pushed; i + 1 < got; i++)
		pc_free_run(rev[i], pages);
	return blocks[0];
}

/*
 * A refused start (medium_init_once: the OS refused its mapping, as under
 * `ulimit -v` or a memory cgroup at its limit) is not tried again at every
 * miss, or such a program would pay a failed mmap per medium malloc: the
 * next PC_MEDIUM_START_BACKOFF misses only count down, and a decay pass
 * (medium_decay: the release thread's) ends the wait early. Relaxed load
 * and store, no read-modify-write, so racing misses can lose decrements
 * (a later try) or store a stale count over the back-off a failed try just
 * set (an earlier one), and threads that read 0 together each call
 * medium_start (pc_once hands a running mapping's failure to those that
 * arrive meanwhile; one that comes after maps again): a few more tries per
 * thread and per back-off, each one mmap, never one per miss.
 */
static _Atomic uint32_t medium_start_wait; /* misses left before the next try */

static PC_NOINLINE void medium_start_missed(void)
{
	uint32_t wait = pc_load_relaxed(&medium_start_wait);
	if (wait != 0)
		pc_store_relaxed(&medium_start_wait, wait - 1);
	else
		medium_start();
}

/* A medium malloc the cache could not serve (large.c): raise the bound of
 * this CPU if its class was refused since its last miss; then the decay's
 * tick; then the refill (medium_refill), whose first block is the caller's
 * (NULL: the caller takes pc_alloc_run). Racy refusal counts (a lost one is
 * one quantum less); the raise by compare-and-swap, so that a decay pass's
 * halving is not undone. */
PC_NOINLINE void *medium_cache_miss(size_t pages)
{
	/* The process's first medium miss starts the cache; a start that
	 * the OS refused is tried again after a back-off (medium_start_missed).
	 * Acquire: pairs with medium_init_once's release (medium_ncpus,
	 * medium_cpus). */
	if (pc_unlikely(!pc_load_acquire(&pc_medium_slots)) && pc_sheaf_mode() == PC_SHEAF_MODE_RSEQ)
		medium_start_missed();
	int32_t cpu = os_rseq_cpu_id();
	if (pc_load_acquire(&pc_medium_slots) && cpu >= 0 && (unsigned)cpu < medium_ncpus) {
		struct medium_cpu *mc = &medium_cpus[cpu];
		unsigned k = (unsigned)pages - PC_MEDIUM_MIN_PAGES;
		uint8_t refused = pc_load_relaxed(&mc->refused[k]);
		if (refused) {
			pc_store_relaxed(&mc->refused[k], (uint8_t)(refused - 1));
			uint32_t raise = pc_load_relaxed(&mc->raise);
			while (MEDIUM_BASE_PAGES + raise < pc_load_relaxed(&medium_budget) &&
			       !pc_cas_weak_relaxed(&mc->raise, &raise, raise + MEDIUM_RAISE_PAGES))
				;
		}
	}
	medium_decay_tick();
	return medium_refill(pages);
}

PC_NOINLINE PC_COLD __attribute__((noreturn)) void medium_cache_twice(void *p)
{
	pc_fatal("free(%p): invalid pointer or double free", p);
}

/* ---- flushing ----------------------------------------------------------------- */

/* Give every block of `cpu`'s stacks back; capacities, used and the raise to
 * 0. Called with the CPU's lock held and its stacks taken (slots pointing at
 * medium_empty, fenced). Returns the pages given back. */
static size_t medium_empty_cpu(unsigned cpu)
{
	size_t pages = 0;
	for (unsigned k = 0; k < PC_MEDIUM_CLASSES; k++) {
		struct os_rseq_stack *st = medium_stack_of(cpu, k);
		unsigned n = k + PC_MEDIUM_MIN_PAGES;
		for (uint32_t i = 0; i < st->count; i++)
			pc_free_run(st->objects[i], n);
		pages += (size_t)st->count * n;
		st->count = 0;
		st->capacity = 0;
	}
	pc_store_relaxed(&medium_cpus[cpu].used, 0);
	pc_store_relaxed(&medium_cpus[cpu].raise, 0);
	return pages;
}

/* Trim a busy CPU above its bound down to it: first its stale classes
 * (unchanged since the previous pass: mc->stale) give all their blocks
 * back, then, while the blocks left exceed the bound, the class holding the
 * most pages gives its bottom block (the least recently pushed: a steady
 * demand reuses the top ones); every capacity is set to its count (a free
 * grows it again within the bound). Same conditions as medium_empty_cpu.
 * Returns the pages given back. */
static size_t medium_trim_cpu(unsigned cpu)
{
	struct medium_cpu *mc = &medium_cpus[cpu];
	uint32_t bound = medium_bound(mc);
	if (pc_load_relaxed(&mc->used) <= bound)
		return 0; /* a flush or a lower capacity came first */
	size_t pages = 0, held = 0;
	for (unsigned k = 0; k < PC_MEDIUM_CLASSES; k++) {
		struct os_rseq_stack *st = medium_stack_of(cpu, k);
		unsigned n = k + PC_MEDIUM_MIN_PAGES;
		if ((mc->stale >> k) & 1) {
			for (uint32_t i = 0; i < st->count; i++)
				pc_free_run(st->objects[i], n);
			pages += (size_t)st->count * n;
			st->count = 0;
		}
		held += (size_t)st->count * n;
	}
	while (held > bound) {
		unsigned most = 0;
		for (unsigned k = 1; k < PC_MEDIUM_CLASSES; k++)
			if ((size_t)medium_stack_of(cpu, k)->count * (k + PC_MEDIUM_MIN_PAGES) >
			    (size_t)medium_stack_of(cpu, most)->count * (most + PC_MEDIUM_MIN_PAGES))
				most = k;
		struct os_rseq_stack *st = medium_stack_of(cpu, most);
		unsigned n = most + PC_MEDIUM_MIN_PAGES;
		void *bottom = st->objects[0];
		memmove(&st->objects[0], &st->objects[1], (st->count - 1) * sizeof(void *));
		st->count--;
		pc_free_run(bottom, n);
		pages += n;
		held -= n;
	}
	for (unsigned k = 0; k < PC_MEDIUM_CLASSES; k++) {
		struct os_rseq_stack *st = medium_stack_of(cpu, k);
		st->capacity = st->count;
	}
	pc_store_relaxed(&mc->used, (uint32_t)held);
	return pages;
}

/* Flush (empty) every CPU (all), or act on each CPU as its `action` says
 * (a decay pass's choice: MEDIUM_FLUSH empties it, MEDIUM_TRIM trims it to
 * its bound). Takes their locks blocking, in CPU order; no other lock of
 * ours is held. Returns the bytes given back to the page allocator. */
static size_t medium_flush_cpus_entered(bool all)
{
	bool any = false;
	for (unsigned c = 0; c < medium_ncpus; c++) {
		if (!all && medium_cpus[c].action == MEDIUM_KEEP)
			continue;
		pc_spin_lock(&medium_cpus[c].lock);
		for (unsigned k = 0; k < PC_MEDIUM_CLASSES; k++)
			pc_store_release((void *_Atomic *)medium_slot_of(c, k), (void *)&medium_empty);
		any = true;
	}
	if (!any)
		return 0;
	/* Every section that read an old slot pointer is now aborted or done. */
	os_rseq_fence();
	size_t pages = 0;
	for (unsigned c = 0; c < medium_ncpus; c++) {
		if (!all && medium_cpus[c].action == MEDIUM_KEEP)
			continue;
		if (all || medium_cpus[c].action == MEDIUM_FLUSH)
			pages += medium_empty_cpu(c);
		else
			pages += medium_trim_cpu(c);
		/* Release: the stacks as left above before the pointers to them. */
		for (unsigned k = 0; k < PC_MEDIUM_CLASSES; k++)
			pc_store_release((void *_Atomic *)medium_slot_of(c, k), (void *)medium_stack_of(c, k));
		pc_spin_unlock(&medium_cpus[c].lock);
	}
	return pages << PC_PAGE_SHIFT;
}

static size_t medium_flush_cpus(bool all)
{
	/* Acquire: pairs with medium_init_once's release (stacks, cpus, ncpus). */
	if (!pc_load_acquire(&pc_medium_slots))
		return 0;
	medium_enter();
	size_t bytes = medium_flush_cpus_entered(all);
	medium_leave();
	return bytes;
}

size_t medium_flush(void)
{
	return medium_flush_cpus(true) + medium_thread_flush(false);
}

/* A class's count and top block as one word (racy reads: a statistic). The
 * top block too: a CPU that frees and allocates in pairs keeps its counts
 * but not (as a rule) its top blocks. */
static uint32_t medium_class_sig(unsigned c, unsigned k, uint32_t *count)
{
	struct os_rseq_stack *st = medium_stack_of(c, k);
	uint32_t n = medium_load_relaxed_u32(&st->count);
	uintptr_t top = n ? (uintptr_t)__atomic_load_n(&st->objects[PC_MIN(n, PC_MEDIUM_STACK_MAX) - 1],
						       __ATOMIC_RELAXED) : 0;
	uint64_t h = (uint64_t)top * 0x9E3779B97F4A7C15ULL + n;
	*count = n;
	return (uint32_t)(h ^ (h >> 32));
}

/* The bound's decay for CPU c: no refusal since the last pass halves the
 * raise. Under the CPU's lock, so that no grow runs between the halving and
 * its own read of the bound; by compare-and-swap against a miss's raise. */
static void medium_decay_bound(struct medium_cpu *mc, bool idle)
{
	bool refusing = pc_load_relaxed(&mc->refusing) != 0;
	pc_store_relaxed(&mc->refusing, 0);
	for (unsigned k = 0; k < PC_MEDIUM_CLASSES; k++)
		if (pc_load_relaxed(&mc->refused[k]))
			pc_store_relaxed(&mc->refused[k], 0);
	if (refusing || idle || pc_load_relaxed(&mc->raise) == 0)
		return; /* an idle CPU's flush resets it */
	pc_spin_lock(&mc->lock);
	uint32_t raise = pc_load_relaxed(&mc->raise);
	while (!pc_cas_weak_relaxed(&mc->raise, &raise, raise / 2))
		;
	pc_spin_unlock(&mc->lock);
}

/* One pass of the decay (the release thread's hook, or the ticks): a CPU
 * whose stacks hold blocks and did not change since the previous pass is
 * flushed; the others that refused nothing since it have their raise
 * halved, and one whose capacities are then above its bound is trimmed to
 * it (medium_trim_cpu: its classes unchanged since the previous pass
 * first). Called with medium_decay_lock. Returns the bytes given back. */
static size_t medium_decay_locked(void)
{
	for (unsigned c = 0; c < medium_ncpus; c++) {
		struct medium_cpu *mc = &medium_cpus[c];
		bool holds = false, changed = false;
		uint64_t stale = 0;
		for (unsigned k = 0; k < PC_MEDIUM_CLASSES; k++) {
			uint32_t n, sig = medium_class_sig(c, k, &n);
			if (sig != mc->sig[k])
				changed = true;
			else if (n)
				stale |= (uint64_t)1 << k;
			holds |= n != 0;
			mc->sig[k] = sig;
		}
		bool idle = holds && !changed;
		medium_decay_bound(mc, idle);
		mc->stale = stale;
		/* Racy read of used: medium_trim_cpu checks it again under the lock. */
		mc->action = idle ? MEDIUM_FLUSH
			   : pc_load_relaxed(&mc->used) > medium_bound(mc) ? MEDIUM_TRIM : MEDIUM_KEEP;
	}
	return medium_flush_cpus(false);
}

size_t medium_decay(void)
{
	if (!pc_load_acquire(&pc_medium_slots)) { /* as in medium_flush_cpus */
		if (pc_load_relaxed(&medium_start_wait) != 0)
			pc_store_relaxed(&medium_start_wait, 0); /* a refused start: the next miss tries */
		return medium_thread_flush(true);
	}
	medium_enter();
	pc_spin_lock(&medium_decay_lock);
	size_t bytes = medium_decay_locked();
	pc_spin_unlock(&medium_decay_lock);
	medium_leave();
	return bytes;
}

/* ---- decay without the release thread --------------------------------------- */
/*
 * Without the release thread (vm.release_thread=0, or auto before it
 * starts: pc_page_release_thread_active) no pass calls medium_decay, so the
 * slow paths do:
 * every MEDIUM_TICK_EVERY-th tick of a thread reads the page clock, and the
 * one that finds the due time passed and moves it on (compare-and-swap:
 * one winner) runs a pass, unless its thread holds a medium lock (a signal
 * handler) or another pass runs (try-lock). Passes are then at least
 * vm.release_delay_ms apart, so a CPU's blocks go back within about two
 * delays after its stacks stop changing, as long as some thread still
 * takes a medium slow path; an idle program keeps them until pc_trim, the
 * release thread or its next medium call.
 */
#define MEDIUM_TICK_EVERY 16
static _Atomic uint64_t medium_tick_due_ns; /* page-clock time of the next pass */
static __thread unsigned char medium_ticks PC_MEDIUM_TLS;

PC_NOINLINE void medium_decay_tick(void)
{
	if (++medium_ticks % MEDIUM_TICK_EVERY != 0 || medium_reentered() ||
	    pc_page_release_thread_active()) /* the thread's passes do it */
		return;
	uint64_t now = pc_page_clock_ns(), due = pc_load_relaxed(&medium_tick_due_ns);
	uint64_t next = now + (uint64_t)pc_option(PC_OPT_VM_RELEASE_DELAY_MS) * 1000000u;
	/* Relaxed: the word only elects this pass; the locks below order the
	 * rest. A spurious failure skips one tick. */
	if (now < due || !pc_cas_weak_relaxed(&medium_tick_due_ns, &due, next))
		return;
	if (!pc_load_acquire(&pc_medium_slots)) { /* as in medium_flush_cpus */
		medium_thread_flush(true);
		return;
	}
	medium_enter();
	if (pc_spin_trylock(&medium_decay_lock)) {
		medium_decay_locked();
		pc_spin_unlock(&medium_decay_lock);
	}
	medium_leave();
}

/* A CPU's bound now (its raise and the ceiling; racy: for tests and statistics). */
size_t medium_bound_bytes(unsigned cpu)
{
	if (!pc_load_acquire(&pc_medium_slots) || cpu >= medium_ncpus)
		return 0;
	return (size_t)medium_bound(&medium_cpus[cpu]) << PC_PAGE_SHIFT;
}

size_t medium_cached_bytes(void)
{
	if (!pc_load_acquire(&pc_medium_slots)) /* as in medium_flush_cpus */
		return medium_thread_cached_bytes();
	size_t pages = 0;
	for (unsigned c = 0; c < medium_ncpus; c++)
		for (unsigned k = 0; k < PC_MEDIUM_CLASSES; k++)
			pages += (size_t)medium_load_relaxed_u32(&medium_stack_of(c, k)->count) * (k + PC_MEDIUM_MIN_PAGES);
	return pages << PC_PAGE_SHIFT;
}

/* Under the CPU's lock, so that the sum is of one moment (capacities move
 * between classes under it). */
size_t medium_capacity_bytes(unsigned cpu)
{
	if (!pc_load_acquire(&pc_medium_slots) || cpu >= medium_ncpus)
		return 0;
	size_t pages = 0;
	pc_spin_lock(&medium_cpus[cpu].lock);
	for (unsigned k = 0; k < PC_MEDIUM_CLASSES; k++)
		pages += (size_t)medium_load_relaxed_u32(&medium_stack_of(cpu, k)->capacity) * (k + PC_MEDIUM_MIN_PAGES);
	pc_spin_unlock(&medium_cpus[cpu].lock);
	return pages << PC_PAGE_SHIFT;
}

/* ---- tunable, fork, start-up -------------------------------------------------- */

static uint32_t medium_kb_to_pages(long kb)
{
	uint64_t pages = (uint64_t)kb / (PC_PAGE_SIZE >> 10);
	return (uint32_t)PC_MIN(pages, (uint64_t)UINT32_MAX / 2);
}

/* malloc.medium_cache_kb changed: a lower budget empties the cache (the
 * capacities grow again within the new one); 0 keeps it empty. */
static void medium_budget_changed(long kb)
{
	uint32_t old = pc_load_relaxed(&medium_budget), now = medium_kb_to_pages(kb);
	pc_store_relaxed(&medium_budget, now);
	if (now < old)
		medium_flush();
}

/* Until the cache has started (NULL slots) there is nothing to lock. The
 * pointer cannot change during a fork: it is published inside a pc_once,
 * and fork() waits for running inits and starts none (os.h). */
static void medium_prefork(void)
{
	medium_enter(); /* left in both postfork handlers */
	if (!pc_load_acquire(&pc_medium_slots))
		return;
	pc_spin_lock(&medium_decay_lock);
	for (unsigned c = 0; c < medium_ncpus; c++)
		pc_spin_lock(&medium_cpus[c].lock);
}

static void medium_postfork_parent(void)
{
	if (pc_load_acquire(&pc_medium_slots)) {
		for (unsigned c = medium_ncpus; c-- > 0;)
			pc_spin_unlock(&medium_cpus[c].lock);
		pc_spin_unlock(&medium_decay_lock);
	}
	medium_leave();
}

static void medium_postfork_child(void)
{
	if (pc_load_acquire(&pc_medium_slots)) {
		for (unsigned c = 0; c < medium_ncpus; c++)
			pc_spin_reinit(&medium_cpus[c].lock);
		pc_spin_reinit(&medium_decay_lock);
	}
	medium_leave();
}

static const struct pc_life medium_life = {
	.name = "malloc-medium",
	.rank = PC_LIFE_RANK_MALLOC,
	.prefork = medium_prefork,
	.postfork_parent = medium_postfork_parent,
	.postfork_child = medium_postfork_child,
};

/* At start-up, in rseq mode: the budget, its change hook and the fork
 * handlers, which cost no memory, so that the budget follows the tunable
 * from the start and nothing is registered later, when a signal handler
 * may have interrupted a registration of its own thread. */
void medium_init(void)
{
	pc_store_relaxed(&medium_budget, medium_kb_to_pages(pc_option(PC_OPT_MALLOC_MEDIUM_CACHE_KB)));
	pc_option_on_change(PC_OPT_MALLOC_MEDIUM_CACHE_KB, medium_budget_changed);
	pc_life_register(&medium_life);
}

/* Once, at the first medium miss in rseq mode (medium_start): map the slots,
 * medium_stacks and per-CPU records, point every slot at its (empty,
 * zero-filled) stack, then publish the slots. False if the OS refused the
 * memory (the cache stays off until a later miss starts it, after the
 * back-off: medium_start_missed). */
static bool medium_init_once(void)
{
	medium_ncpus = os_cpu_count();
	pc_medium_stride = (size_t)medium_ncpus << OS_RSEQ_SLOT_SHIFT;
	size_t slot_bytes = PC_MEDIUM_CLASSES * pc_medium_stride;
	size_t stack_bytes = (size_t)medium_ncpus * PC_MEDIUM_CLASSES * MEDIUM_STACK_BYTES;
	size_t cpu_bytes = (size_t)medium_ncpus * sizeof(struct medium_cpu);
	size_t total = pc_align_up(slot_bytes + stack_bytes + cpu_bytes, PC_PAGE_SIZE);
	char *mem = os_map(total, PC_PAGE_SIZE); /* zeroed: capacities and counts 0 */
	if (!mem) { /* refused: the misses wait before they try again */
		pc_store_relaxed(&medium_start_wait, PC_MEDIUM_START_BACKOFF);
		return false;
	}
	medium_stacks = mem + slot_bytes;
	medium_cpus = (struct medium_cpu *)(void *)(medium_stacks + stack_bytes);
	for (unsigned c = 0; c < medium_ncpus; c++)
		pc_spin_init(&medium_cpus[c].lock);
	pc_spin_init(&medium_decay_lock);
	for (unsigned k = 0; k < PC_MEDIUM_CLASSES; k++)
		for (unsigned c = 0; c < medium_ncpus; c++)
			*(void **)(mem + k * pc_medium_stride + ((size_t)c << OS_RSEQ_SLOT_SHIFT)) = medium_stack_of(c, k);
	/* Release: the slots, medium_stacks, medium_cpus, medium_ncpus and the
	 * stride before the pointer; every load of it that goes on to use them
	 * (the fast paths in malloc.h, the slow paths here) is an acquire,
	 * which on x86-64 is a plain load. */
	pc_store_release(&pc_medium_slots, mem);
	return true;
}

/*
 * Start the per-CPU cache: in rseq mode, once, at the process's first medium
 * miss (medium_cache_miss), not at start-up: its slots and per-CPU records
 * are written when they are made (62 classes x 64 bytes per CPU: 8 KiB on 2
 * CPUs, 248 KiB on 64), a cost that a program which never allocates 8-256
 * KiB blocks should not pay (docs/footprint.md, "2026-11-24 night, helper
 * startup"). Until then a medium block takes and frees pages directly, as
 * with the cache off. True when the cache is on. A signal handler that
 * interrupted a medium or sheaf path of its own thread (the start
 * included) starts nothing: the start takes locks that thread may hold.
 * Tries now; the misses go through medium_start_missed, which waits
 * PC_MEDIUM_START_BACKOFF misses after a refusal.
 */
static _Atomic uint32_t medium_once; /* pc_once */

bool medium_start(void)
{
	if (pc_likely(pc_once_done(&medium_once)))
		return true;
	if (pc_sheaf_mode() != PC_SHEAF_MODE_RSEQ || medium_reentered() || pc_slab_reentered())
		return false;
	medium_enter();
	bool ok = pc_once(&medium_once, medium_init_once);
	medium_leave();
	return ok;
}
