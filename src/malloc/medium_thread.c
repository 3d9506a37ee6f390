/*
 * malloc/medium_thread.c - the medium cache without rseq (thread mode:
 * valgrind, GLIBC_TUNABLES=glibc.pthread.rseq=0, ThreadSanitizer builds):
 * per-thread arrays of free medium blocks, at most PC_MEDIUM_THREAD_MAX
 * per class and malloc.medium_cache_kb / 4 (at most 512 KiB) in all per thread, handed back
 * when the thread exits. The fast paths are in malloc.h
 * (medium_thread_pop/push): plain loads and stores under the thread's busy
 * flag, no lock, no atomic read-modify-write.
 *
 * Owns: medium_threads (the registry of threads that keep a record) and
 * medium_threads_lock, a pc_mutex (rank none) held by a flusher from its
 * first stop until the arrays it stopped are back in the page allocator,
 * by a thread that joins or leaves, and by fork's prefork; medium_records,
 * the records of exited threads for reuse (same lock); per thread
 * pc_medium_self, its record (NULL until its first medium free).
 *
 * Flushing another live thread's arrays (pc_trim, the out-of-memory retry,
 * a lower budget, the release thread's decay) is the slab layer's
 * asymmetric Dekker (docs/sheaves.md, "Flushing another live thread's
 * sheaves"): under medium_threads_lock the flusher sets each record's
 * `stopped`, calls os_membarrier_fence, waits while the record's busy flag
 * is set, and then owns the arrays until it clears `stopped` (release).
 * A fast path sets busy before it reads `stopped` (the membarrier orders
 * the two for the CPU; a compiler barrier for the compiler), so either the
 * flusher sees busy and waits, or the fast path sees stopped and leaves.
 * Where membarrier is missing, a flush takes only the calling thread's
 * arrays and those of exited threads (all of them were given back at exit).
 * Nothing in this file runs with a slab or page lock held; a flusher frees
 * blocks (page locks) under medium_threads_lock.
 *
 * Fork: prefork takes medium_threads_lock; the child gives back the arrays
 * of the threads it does not have, unless one was inside a fast path at the
 * fork (busy set: its arrays may be half written; they are left, a leak).
 */
#include "malloc.h"

__thread struct medium_thread *pc_medium_self PC_MEDIUM_TLS;
_Atomic uint32_t pc_medium_thread_budget;

static struct pc_mutex medium_threads_lock;
static struct pc_list medium_threads = { &medium_threads, &medium_threads };
static struct pc_list medium_records = { &medium_records, &medium_records };
static bool medium_thread_on; /* written once by medium_thread_init */
/* This thread's exit handler ran: no record again (a free from a later
 * destructor would join the registry with nothing left to give it back). */
static __thread bool medium_thread_done PC_MEDIUM_TLS;

#define RECORD_BYTES pc_align_up(sizeof(struct medium_thread), PC_PAGE_SIZE)

/* Give every block of t back to the page allocator and empty it. Called by
 * whoever owns t's arrays: its thread (busy clear, or exiting), or a flusher
 * that stopped it and waited for its busy flag. Returns the pages. */
static size_t record_empty(struct medium_thread *t)
{
	size_t pages = 0;
	for (unsigned k = 0; k < PC_MEDIUM_CLASSES; k++) {
		unsigned n = k + PC_MEDIUM_MIN_PAGES;
		for (uint32_t i = 0; i < t->count[k]; i++)
			pc_free_run(t->blocks[k][i], n);
		pages += (size_t)t->count[k] * n;
		t->count[k] = 0;
	}
	pc_store_relaxed(&t->used, 0);
	return pages;
}

/* ---- joining and leaving -------------------------------------------------------- */

/* Give the calling thread a record (from an exited thread's, or new) on the
 * registry. False when the thread cannot be enrolled for its exit handler
 * or the OS refuses the memory. */
static bool medium_thread_join(void)
{
	if (!pc_life_thread_enroll())
		return false;
	struct medium_thread *t = NULL;
	medium_enter();
	pc_mutex_lock(&medium_threads_lock);
	if (medium_records.next != &medium_records) {
		t = pc_list_first(&medium_records, struct medium_thread, link);
		pc_list_del(&t->link);
	} else {
		t = os_map(RECORD_BYTES, PC_PAGE_SIZE); /* zeroed: empty */
	}
	if (t)
		pc_list_add(&t->link, &medium_threads);
	pc_mutex_unlock(&medium_threads_lock);
	medium_leave();
	pc_medium_self = t;
	return t != NULL;
}

/* Thread exit: leave the registry (no flusher looks at t once we hold the
 * lock: a flusher holds it from start to end), give the blocks back. */
static void medium_thread_exit(void)
{
	struct medium_thread *t = pc_medium_self;
	medium_thread_done = true;
	if (!t)
		return;
	pc_medium_self = NULL; /* later frees of this thread go to the pages */
	medium_thread_done = true;
	medium_enter();
	pc_mutex_lock(&medium_threads_lock);
	pc_list_del(&t->link);
	record_empty(t);
	t->sig = 0;
	pc_list_add(&t->link, &medium_records);
	pc_mutex_unlock(&medium_threads_lock);
	medium_leave();
}

/* ---- the slow path of a free ---------------------------------------------------- */

/* Make room for `pages` in the calling thread's budget by evicting blocks of
 * other classes (newest first), under its own busy flag; then push. */
static bool evict_and_push(struct medium_thread *t, void *p, unsigned pages)
{
	void *out[PC_MEDIUM_THREAD_MAX];
	unsigned out_pages[PC_MEDIUM_THREAD_MAX], nout = 0;
	if (!medium_thread_enter(t))
		return false;
	uint32_t budget = pc_load_relaxed(&pc_medium_thread_budget), used = pc_load_relaxed(&t->used);
	uint32_t mine = t->count[pages - PC_MEDIUM_MIN_PAGES];
	/* The class is full, or no other class holds anything to evict. */
	if (mine >= PC_MEDIUM_THREAD_MAX || used <= mine * pages) {
		pc_store_release(&t->busy, 0);
		return false;
	}
	for (unsigned k = 0; k < PC_MEDIUM_CLASSES && used + pages > budget && nout < PC_MEDIUM_THREAD_MAX; k++) {
		unsigned n = k + PC_MEDIUM_MIN_PAGES;
		while (t->count[k] && n != pages && used + pages > budget && nout < PC_MEDIUM_THREAD_MAX) {
			out_pages[nout] = n;
			out[nout++] = t->blocks[k][--t->count[k]];
			used -= n;
		}
	}
	pc_store_relaxed(&t->used, used);
	pc_store_release(&t->busy, 0);
	for (unsigned i = 0; i < nout; i++)
		pc_free_run(out[i], out_pages[i]);
	return medium_thread_push(p, pages);
}

PC_NOINLINE void medium_thread_free_slow(void *p, unsigned pages)
{
	struct medium_thread *t = pc_medium_self;
	bool pushed = false;
	if (medium_thread_on && pages <= pc_load_relaxed(&pc_medium_thread_budget)) {
		if (!t)
			pushed = !medium_thread_done && !medium_reentered() && medium_thread_join() &&
				 medium_thread_push(p, pages);
		else /* if the budget, not the class, was full */
			pushed = evict_and_push(t, p, pages);
	}
	if (!pushed)
		pc_free_run(p, pages);
	medium_decay_tick();
}

/* ---- flushing ------------------------------------------------------------------- */

/* Flush every registered thread's arrays, or (idle_only) those whose held
 * pages did not change since the previous decay pass. Returns bytes. */
size_t medium_thread_flush(bool idle_only)
{
	if (!medium_thread_on)
		return 0;
	bool fence = os_membarrier_mode() != OS_MEMBARRIER_NONE, others = false;
	struct pc_list *it;
	medium_enter();
	pc_mutex_lock(&medium_threads_lock);
	pc_list_for_each(it, &medium_threads) {
		struct medium_thread *t = pc_list_entry(it, struct medium_thread, link);
		uint32_t used = pc_load_relaxed(&t->used);
		/* Our own record only if this is not a signal handler that
		 * interrupted our own fast path (busy set): that path holds
		 * values read from the arrays and will write them back. */
		bool own = t == pc_medium_self;
		t->chosen = (own ? pc_load_relaxed(&t->busy) == 0 : fence) && used != 0 &&
			    (!idle_only || t->sig == used);
		t->sig = used;
		if (t->chosen) {
			pc_store_relaxed(&t->stopped, 1);
			others |= t != pc_medium_self;
		}
	}
	/* Every fast path that began before it has set busy visibly; any that
	 * begins after it sees stopped. */
	if (others)
		os_membarrier_fence();
	size_t pages = 0;
	pc_list_for_each(it, &medium_threads) {
		struct medium_thread *t = pc_list_entry(it, struct medium_thread, link);
		if (!t->chosen)
			continue;
		/* Acquire: pairs with the owner's release of busy, so its last
		 * writes to the arrays are seen. Bounded: a fast path makes no
		 * call (only preemption makes this last). */
		while (t != pc_medium_self && pc_load_acquire(&t->busy) != 0)
			os_yield();
		pages += record_empty(t);
		t->sig = 0;
		pc_store_release(&t->stopped, 0); /* the emptied arrays before the reopening */
	}
	pc_mutex_unlock(&medium_threads_lock);
	medium_leave();
	return pages << PC_PAGE_SHIFT;
}

size_t medium_thread_cached_bytes(void)
{
	if (!medium_thread_on)
		return 0;
	size_t pages = 0;
	struct pc_list *it;
	medium_enter();
	pc_mutex_lock(&medium_threads_lock);
	pc_list_for_each(it, &medium_threads)
		pages += pc_load_relaxed(&pc_list_entry(it, struct medium_thread, link)->used);
	pc_mutex_unlock(&medium_threads_lock);
	medium_leave();
	return pages << PC_PAGE_SHIFT;
}

/* ---- tunable, fork, start-up ------------------------------------------------------ */

/* A quarter of the ceiling per thread, at most MEDIUM_THREAD_KB_MAX: thread
 * mode has no demand bound and no bound in all, so it keeps the 512 KiB per
 * thread it had under the former 2 MiB default (docs/pages-medium.md). */
#define MEDIUM_THREAD_KB_MAX 512
static void medium_thread_budget_changed(long kb)
{
	uint32_t old = pc_load_relaxed(&pc_medium_thread_budget);
	uint64_t quarter = PC_MIN((uint64_t)kb / 4, (uint64_t)MEDIUM_THREAD_KB_MAX);
	uint32_t now = (uint32_t)(quarter / (PC_PAGE_SIZE >> 10));
	pc_store_relaxed(&pc_medium_thread_budget, now);
	if (now < old)
		medium_thread_flush(false);
}

static void medium_thread_prefork(void)
{
	medium_enter();
	pc_mutex_lock(&medium_threads_lock);
}

static void medium_thread_postfork_parent(void)
{
	pc_mutex_unlock(&medium_threads_lock);
	medium_leave();
}

/* Only the forking thread exists here: the other records' arrays go back,
 * unless their thread was inside a fast path (busy) at the fork. */
static void medium_thread_postfork_child(void)
{
	pc_mutex_reinit(&medium_threads_lock);
	medium_leave(); /* prefork's enter */
	struct pc_list *it = medium_threads.next;
	while (it != &medium_threads) {
		struct medium_thread *t = pc_list_entry(it, struct medium_thread, link);
		it = it->next;
		if (t == pc_medium_self)
			continue;
		pc_list_del(&t->link);
		if (pc_load_relaxed(&t->busy) == 0) {
			record_empty(t);
			t->sig = 0;
			pc_list_add(&t->link, &medium_records);
		}
	}
}

static const struct pc_life medium_thread_life = {
	.name = "malloc-medium-thread",
	.rank = PC_LIFE_RANK_MALLOC,
	.prefork = medium_thread_prefork,
	.postfork_parent = medium_thread_postfork_parent,
	.postfork_child = medium_thread_postfork_child,
	.thread_exit = medium_thread_exit,
};

/* Once, from malloc's start-up, in thread mode (after the slab layer set up
 * the membarrier). */
void medium_thread_init(void)
{
	pc_mutex_init(&medium_threads_lock);
	medium_thread_budget_changed(pc_option(PC_OPT_MALLOC_MEDIUM_CACHE_KB));
	pc_option_on_change(PC_OPT_MALLOC_MEDIUM_CACHE_KB, medium_thread_budget_changed);
	pc_life_register(&medium_thread_life);
	medium_thread_on = true;
}
