/*
 * slab/sheaf_thread.c - thread mode's registry of live threads' sheaves:
 * flushing another live thread's sheaves (pc_trim, malloc_trim,
 * pc_cache_shrink/destroy, the out-of-memory retry, capacity changes) and
 * counting them for the statistics. The per-thread fast paths are in slab.h,
 * the slow paths in sheaf.c; why a flush is sound without any atomic
 * read-modify-write on the fast path: slab.h, "Flushing another thread's
 * sheaves".
 *
 * Owns: threads (the registry list) and threads_lock, a pc_mutex that
 * protects the list and the records' flusher fields (settled, walked,
 * decay_sig, decay_at, decay_next, fence_seq, walk_seq), held by a flusher
 * whenever it looks at a record (so a record cannot leave, nor its thread's
 * memory go, meanwhile) but dropped by every flush while it waits for
 * another thread's fast path (wait_fast_paths: a fork's prefork, which takes
 * threads_lock, must not wait for a preempted thread, nor for a whole trim;
 * nor must a thread that starts or exits, which joins or leaves under it);
 * fence_mode, written
 * once by sheaf_threads_init (inside slab_init's pc_once); per thread: self,
 * this thread's record, linked while it keeps sheaves.
 * Lock order: threads_lock has the slot locks' rank (it stands for them in
 * thread mode, and never nests with one but in fork's prefork); under it a
 * flusher takes what flushing objects takes (c->lock, list_lock, page
 * locks), never a barn lock. Nothing takes it with a slab lock held: a
 * thread joins from the start of a slow path and leaves from its exit
 * handler, and never takes it under its busy flag (it joins before it sets
 * the flag), so a thread inside a fast path never waits for a flusher;
 * and no flusher waits for a busy flag holding it (wait_fast_paths drops
 * it), so neither waits for the other through it.
 */
#include "slab.h"

#define PC_TLS __attribute__((tls_model("initial-exec")))

/* A thread that keeps sheaves: where its entries and its busy flag are. */
struct sheaf_thread {
	struct pc_list link;            /* on threads, under threads_lock */
	pc_sheaf_entry *entries;        /* its pc_thread_sheaves */
	unsigned char *busy;            /* its pc_thread_sheaf_busy */
	bool linked;                    /* owner only (and fork's child) */
	/* Under threads_lock: the decay's last look at each entry (its sheaf
	 * and count; 0 for none); the decay walk (walk_seq) that looked at its
	 * entries below decay_next (written by the decay only, one at a time
	 * under slab_mutex: a decay walk that starts again after a drop
	 * resumes there, so that no entry gets two looks in one pass). */
	uint64_t decay_sig[PC_THREAD_SHEAVES];
	uint64_t decay_at;
	unsigned decay_next;
	/* Under threads_lock: the last fence (fence_seq) after which a flusher
	 * saw this thread's busy flag clear, and the last flush (walk_seq)
	 * that walked all of its entries. 0 in a new thread's record. */
	uint64_t settled, walked;
};

static struct pc_mutex threads_lock;
static struct pc_list threads = { &threads, &threads };
static int fence_mode; /* OS_MEMBARRIER_*, or NONE in rseq mode */
static uint64_t fence_seq, walk_seq; /* under threads_lock */
/* Under threads_lock: flushers waiting with the lock dropped, their
 * detached sheaves in flight to the slabs, and their batches (on their
 * stacks; a fork child takes them over, see sheaf_threads_postfork_child). */
static unsigned flushes_in_flight;
static struct pc_list parked = { &parked, &parked };
/* How many of them are this thread's (a signal handler's flush that
 * interrupted one must not wait for it: a count, as the handler's own flush
 * may be in flight for a while too). */
static __thread unsigned flushes_in_flight_mine PC_TLS;
static __thread struct sheaf_thread self PC_TLS;

_Atomic bool pc_sheaf_test_no_fence;
void (*_Atomic pc_sheaf_flush_wait_test_hook)(bool for_flushes);

/* Test seam (slab.h): a flusher about to yield, threads_lock dropped, while
 * it waits for another thread's fast path (false) or for other flushes'
 * sheaves in flight (true). */
static void flush_wait_test_hook(bool for_flushes)
{
	void (*hook)(bool) = pc_load_relaxed(&pc_sheaf_flush_wait_test_hook);
	if (pc_unlikely(hook != NULL))
		hook(for_flushes);
}

void sheaf_threads_init(void)
{
	pc_mutex_set_rank(&threads_lock, PC_LOCK_RANK_SHEAF_SLOT);
	fence_mode = os_membarrier_setup();
}

/* Whether flushers may take other live threads' sheaves here. */
static bool can_fence(void)
{
	return fence_mode != OS_MEMBARRIER_NONE && !pc_load_relaxed(&pc_sheaf_test_no_fence);
}

struct pc_sheaf *sheaf_entry_take(pc_sheaf_entry *entry)
{
	struct pc_sheaf *sh = __atomic_load_n(entry, __ATOMIC_RELAXED);
	/* Acquire: what the owner wrote into the sheaf before it stored the
	 * entry (release) is ours to read. A failure means a flusher took it
	 * (flushers only ever change an entry to none). */
	if (sh != &pc_sheaf_none &&
	    !__atomic_compare_exchange_n(entry, &sh, &pc_sheaf_none, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		sh = &pc_sheaf_none;
	return sh;
}

bool sheaf_thread_join(void)
{
	if (pc_likely(self.linked))
		return true;
	self.entries = pc_thread_sheaves;
	self.busy = &pc_thread_sheaf_busy;
	pc_mutex_lock(&threads_lock);
	pc_list_add(&self.link, &threads);
	self.linked = true;
	pc_mutex_unlock(&threads_lock);
	return true;
}

void sheaf_thread_leave(void)
{
	if (!self.linked)
		return;
	pc_mutex_lock(&threads_lock); /* waits for a flusher that looks at us */
	pc_list_del(&self.link);
	self.linked = false;
	pc_mutex_unlock(&threads_lock);
}

/* A live thread's sheaf may be swapped and freed while we read its count:
 * sheaf memory stays mapped (slab memory is never unmapped), so the read is
 * safe and at worst stale or garbage, which the clamp bounds. A statistic. */
#if defined(__SANITIZE_THREAD__)
static __attribute__((noinline, no_sanitize("thread"))) uint32_t
#else
static uint32_t
#endif
racy_count(const struct pc_sheaf *sh)
{
	uint32_t n = *(const volatile uint32_t *)&sh->count;
	return n <= PC_SHEAF_MAX ? n : 0;
}

/* ---- flushing ----------------------------------------------------------------------- */
#define FLUSH_BATCH 32 /* sheaves detached per fence */

struct flush_batch {
	struct pc_list link; /* on parked while its flusher waits, lock dropped */
	bool fence; /* other threads' sheaves are among them */
	unsigned n;
	struct pc_cache *cache[FLUSH_BATCH];
	struct pc_sheaf *sheaf[FLUSH_BATCH];
	struct sheaf_thread *owner[FLUSH_BATCH]; /* whose entry it was (compared only) */
};

/*
 * Wait (after the membarrier) until every other registered thread has been
 * seen with its busy flag clear: each fast path (or thread-mode slow path)
 * that may have read a detached entry has then ended. Called and returns
 * with threads_lock held; it drops the lock while it yields (b on parked
 * meanwhile), so that a fork (whose prefork takes it) or a thread that
 * starts or exits never
 * waits for another thread's fast path through us, and returns true if it
 * did (the caller's walk of the list must start again: its record may be
 * gone). Sound across the drop: a record that left belongs to a thread no
 * longer in a fast path; one that joined meanwhile never had the entries we
 * detached (a new thread's record, even at a reused address, starts at
 * settled 0 and is merely waited for too); and a record another flusher
 * marked settled with a later fence_seq was seen clear after that fence,
 * so after ours.
 */
static bool wait_fast_paths(struct flush_batch *b)
{
	uint64_t seq = ++fence_seq;
	bool dropped = false;
	struct pc_list *it;
again:
	pc_list_for_each(it, &threads) {
		struct sheaf_thread *t = pc_list_entry(it, struct sheaf_thread, link);
		if (t == &self || t->settled >= seq)
			continue;
		/* Acquire: pairs with the release that clears the flag, so the
		 * thread's last writes to the sheaf are seen. Bounded: a fast
		 * path makes no call, and a slow path under the flag takes only
		 * locks that a flusher does not hold while it waits (barn,
		 * c->lock, list_lock, page locks); only preemption (or a signal
		 * handler that blocks, against POSIX) makes it last. */
		if (__atomic_load_n(t->busy, __ATOMIC_ACQUIRE) != 0) {
			flushes_in_flight++;
			flushes_in_flight_mine++;
			pc_list_add(&b->link, &parked);
			pc_mutex_unlock(&threads_lock);
			flush_wait_test_hook(false);
			os_yield();
			pc_mutex_lock(&threads_lock);
			pc_list_del(&b->link);
			flushes_in_flight_mine--;
			flushes_in_flight--;
			dropped = true;
			goto again;
		}
		t->settled = seq;
	}
	return dropped;
}

/*
 * The detached sheaves are the flusher's once no fast path can still use
 * them: after a membarrier, only a fast path that announced itself before
 * its thread's barrier can have read a detached entry, and it is still
 * announced (slab.h, "Flushing another thread's sheaves"); wait for those.
 * Then give their objects back to the slabs. Under threads_lock; returns
 * whether the wait dropped it meanwhile.
 */
static bool batch_settle(struct flush_batch *b)
{
	bool dropped = false;
	if (b->n == 0)
		return false;
	if (b->fence) {
		os_membarrier_fence();
		dropped = wait_fast_paths(b);
	}
	for (unsigned i = 0; i < b->n; i++) {
		sheaf_flush_objects(b->cache[i], b->sheaf[i]);
		sheaf_free(b->sheaf[i]);
	}
	b->n = 0;
	return dropped;
}

/* Detach thread t's sheaf of cache s (index i) into the batch; *dropped
 * says whether a full batch's settling dropped threads_lock. */
static unsigned detach_one(struct flush_batch *b, struct sheaf_thread *t, struct pc_cache *s,
			   unsigned i, bool *dropped)
{
	struct pc_sheaf *sh = sheaf_entry_take(&t->entries[i]);
	if (sh == &pc_sheaf_none)
		return 0;
	b->cache[b->n] = s;
	b->owner[b->n] = t;
	b->sheaf[b->n++] = sh;
	if (b->n == FLUSH_BATCH)
		*dropped = batch_settle(b);
	return 1;
}

/* Whether the decay takes t's entry i: unchanged (and not none) since its
 * previous look, which it records otherwise. */
static bool entry_idle(struct sheaf_thread *t, unsigned i)
{
	struct pc_sheaf *sh = __atomic_load_n(&t->entries[i], __ATOMIC_ACQUIRE);
	uint64_t sig = sh == &pc_sheaf_none ? 0 : ((uintptr_t)sh * 31u + racy_count(sh)) | 1u;
	bool idle = sig != 0 && sig == t->decay_sig[i];
	t->decay_sig[i] = idle ? 0 : sig;
	return idle;
}

/* Detach (and flush) every live thread's sheaf of `only` (NULL: every
 * cache); with idle_only, only the entries the decay finds idle. Returns
 * the sheaves flushed. Every flush (a trim, the out-of-memory retry, the
 * decay, a flush of one cache) lets threads_lock go while it waits for fast
 * paths (wait_fast_paths); its walk then starts again from the head,
 * skipping the records it walked whole (walked == this flush's walk_seq):
 * entries it took already read none, so a record walked again in part
 * gives up nothing twice. The decay resumes a record after the last entry
 * it looked at (decay_at, decay_next: its own, since a trim running
 * meanwhile rewrites walked) instead: looked at twice in one pass, an
 * entry unchanged only for the length of the wait would be taken as idle
 * (entry_idle: two looks a pass apart). A flush of
 * one cache (pc_cache_shrink, destroy, a capacity change) then also waits,
 * the lock dropped, until no other flush that dropped it has sheaves in
 * flight: a destroy finds every object of its cache back in the slabs, as
 * when threads_lock was held through every wait. */
static unsigned threads_flush(struct pc_cache *only, bool idle_only)
{
	if (sheaf_mode_get() != PC_SHEAF_MODE_THREAD)
		return 0;
	/* A signal handler that interrupted this thread's own fast or slow
	 * path must not take the sheaf that path holds, nor wait for it. */
	bool own = __atomic_load_n(&pc_thread_sheaf_busy, __ATOMIC_RELAXED) == 0;
	bool others = can_fence();
	struct flush_batch b = { .fence = others, .n = 0 };
	unsigned flushed = 0;
	bool dropped = false;
	pc_mutex_lock(&threads_lock);
	uint64_t walk = ++walk_seq;
	struct pc_list *it;
again:
	pc_list_for_each(it, &threads) {
		struct sheaf_thread *t = pc_list_entry(it, struct sheaf_thread, link);
		if ((t == &self ? !own : !others) || t->walked == walk)
			continue;
		for (unsigned i = idle_only && t->decay_at == walk ? t->decay_next : 1;
		     i < PC_THREAD_SHEAVES; i++) {
			struct pc_cache *s = sheaf_thread_cache(i);
			if (idle_only) { /* entry i looked at: after a drop, resume past it */
				t->decay_at = walk;
				t->decay_next = i + 1;
			}
			if (s && (!only || s == only) && (!idle_only || entry_idle(t, i)))
				flushed += detach_one(&b, t, s, i, &dropped);
			if (dropped) { /* t may be gone: start again */
				dropped = false;
				goto again;
			}
		}
		t->walked = walk;
	}
	batch_settle(&b); /* without others' sheaves no fence is needed */
	while (only && flushes_in_flight > flushes_in_flight_mine) {
		pc_mutex_unlock(&threads_lock);
		flush_wait_test_hook(true);
		os_yield();
		pc_mutex_lock(&threads_lock);
	}
	pc_mutex_unlock(&threads_lock);
	return flushed;
}

void sheaf_threads_flush(struct pc_cache *only)
{
	threads_flush(only, false);
}

unsigned sheaf_threads_decay(void)
{
	return threads_flush(NULL, true);
}

long sheaf_threads_count(struct pc_cache *s)
{
	long n = 0;
	pc_mutex_lock(&threads_lock);
	struct pc_list *it;
	pc_list_for_each(it, &threads) {
		struct sheaf_thread *t = pc_list_entry(it, struct sheaf_thread, link);
		n += racy_count(__atomic_load_n(&t->entries[s->tindex], __ATOMIC_ACQUIRE));
	}
	pc_mutex_unlock(&threads_lock);
	return n;
}

bool sheaf_threads_hold(struct pc_cache *s)
{
	bool held = false;
	pc_mutex_lock(&threads_lock);
	struct pc_list *it;
	pc_list_for_each(it, &threads) {
		struct sheaf_thread *t = pc_list_entry(it, struct sheaf_thread, link);
		held |= __atomic_load_n(&t->entries[s->tindex], __ATOMIC_RELAXED) != &pc_sheaf_none;
	}
	pc_mutex_unlock(&threads_lock);
	return held;
}

/* ---- fork ----------------------------------------------------------------------------- */
void sheaf_threads_prefork(void) { pc_mutex_lock(&threads_lock); }
void sheaf_threads_postfork_parent(void) { pc_mutex_unlock(&threads_lock); }

/*
 * Only this thread exists in the child. The others' records (in their TLS,
 * memory the C library keeps mapped and reuses for the child's new threads)
 * leave the registry for the orphans list, whose sheaves
 * sheaf_threads_fork_orphans gives back to the slabs at the end of the same
 * fork() (before the child can start a thread): nothing else in the child
 * could ever reach them. A record's entries and counts are as of one
 * instant of its thread's program order, consistent whenever its busy flag
 * is clear (a fast path commits with its count store, a slow path publishes
 * with its entry store); a thread that was inside a fast or slow path at
 * the fork (flag set) may have left a sheaf half written, so its sheaves
 * are left alone (lost in the child: a leak, never a reuse).
 * The batches of flushers that waited with threads_lock dropped (parked)
 * are the child's too (their stacks are mapped here; their threads are
 * gone): each sheaf goes back to the slabs with the orphans', unless its
 * owner was registered with its busy flag set at the fork (that fast path
 * may have been using it: left alone, a leak). And no flush is in flight
 * any more, or the child's first flush of one cache would wait for ever.
 */
static struct pc_list orphans = { &orphans, &orphans }; /* fork child only */
static struct pc_list orphan_batches = { &orphan_batches, &orphan_batches }; /* fork child only */

static bool busy_at_fork(const struct sheaf_thread *owner)
{
	struct pc_list *it;
	pc_list_for_each(it, &threads) /* compared only: a gone owner's record may be freed */
		if (pc_list_entry(it, struct sheaf_thread, link) == owner)
			return owner != &self && *owner->busy != 0;
	return false; /* left the registry: its thread was in no fast path */
}

void sheaf_threads_postfork_child(void)
{
	pc_mutex_reinit(&threads_lock);
	pc_list_init(&orphan_batches);
	while (parked.next != &parked) {
		struct flush_batch *b = pc_list_entry(parked.next, struct flush_batch, link);
		pc_list_del(&b->link);
		for (unsigned i = 0; i < b->n; i++)
			if (busy_at_fork(b->owner[i]))
				b->sheaf[i] = NULL;
		pc_list_add(&b->link, &orphan_batches);
	}
	flushes_in_flight = 0;
	flushes_in_flight_mine = 0;
	pc_list_init(&orphans);
	while (threads.next != &threads) {
		struct sheaf_thread *t = pc_list_entry(threads.next, struct sheaf_thread, link);
		pc_list_del(&t->link);
		if (t != &self && *t->busy == 0)
			pc_list_add(&t->link, &orphans);
	}
	if (self.linked)
		pc_list_add(&self.link, &threads);
}

/* After the fork window (every lock usable again; lifecycle rank
 * PC_LIFE_RANK_SLAB_CHILD): flush the orphans' sheaves, and the parked
 * batches'. */
void sheaf_threads_fork_orphans(void)
{
	sheaf_enter();
	while (orphan_batches.next != &orphan_batches) {
		struct flush_batch *b = pc_list_entry(orphan_batches.next, struct flush_batch, link);
		pc_list_del(&b->link);
		for (unsigned i = 0; i < b->n; i++) {
			if (!b->sheaf[i])
				continue;
			sheaf_flush_objects(b->cache[i], b->sheaf[i]);
			sheaf_free(b->sheaf[i]);
		}
	}
	while (orphans.next != &orphans) {
		struct sheaf_thread *t = pc_list_entry(orphans.next, struct sheaf_thread, link);
		pc_list_del(&t->link);
		for (unsigned i = 1; i < PC_THREAD_SHEAVES; i++) {
			struct pc_cache *s = sheaf_thread_cache(i);
			struct pc_sheaf *sh = t->entries[i];
			if (!s || sh == &pc_sheaf_none)
				continue;
			t->entries[i] = &pc_sheaf_none;
			sheaf_flush_objects(s, sh);
			sheaf_free(sh);
		}
	}
	sheaf_leave();
}
