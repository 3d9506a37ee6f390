/*
 * page/release_thread.c - the background release thread (vm.release_thread)
 * and the pass hooks of the layers above.
 *
 * The thread runs pc_page_release_thread_pass every delay/4 (10 ms .. 1 s):
 * the hooks first (the slab layer's decay of idle sheaves and slabs,
 * malloc's huge and medium caches), so an idle program's objects come back
 * as pages, then a release pass of every zone (release.c). While it does
 * the passes (pc_page_release_thread_active) the zones' bound keeps the
 * recent peak's part (release.c, bound_pages; in auto mode without the
 * thread, also for RELEASE_REUSE_DELAYS delays after reuse was seen:
 * release.c, "Reuse without the thread") and the layers above leave
 * their decay to its hooks.
 *
 * Modes (enum pc_release_thread_mode, page.h): never; always, from the first
 * malloc slow path on; auto (the default): only once a release pass found a
 * zone's free resident memory over the floor of its bound, or a zone grew
 * past the floor, or malloc's live huge blocks did
 * (release_thread_note_over_floor: release.c says when), only in a
 * process that already has had a second thread (os_single_threaded: a
 * single-threaded program may count on staying so) and has no seccomp
 * filter (os_seccomp_filtered). In any
 * mode the thread sleeps without its periodic wake-ups once every zone has
 * stayed clean for PC_RELEASE_IDLE_PASSES passes, until a slow path finds
 * dirty memory again (release_thread_work).
 *
 * Started lazily from malloc's allocation slow path
 * (pc_page_release_thread_poll, no allocator lock held: pthread_create
 * allocates), never from an option hook (hooks run inside start-up too).
 * All signals blocked in the thread; named pcmalloc-rel.
 *
 * Locking: none; the state words are atomics described where declared.
 */
#include "page.h"

/*
 * vm.release_thread: 0 never a thread, 1 a thread from the first malloc slow
 * path on, 2 (auto, the default) a thread only once a zone's free pool has
 * outgrown its floor or the zone grew past it (below), only in a process
 * that already has a second thread (os_single_threaded) and no seccomp
 * filter: small, single-threaded and sandboxed programs never get one.
 * thread_state: 0 no thread, 1 one runs (or is being started). Set to 1 by
 * the poll that wins the compare-and-swap, back to 0 by the thread as it
 * exits (or by the poll whose start failed, or in a fork child, where the
 * thread does not exist). thread_wanted (auto): set by a pass that found its
 * zone's free resident memory over the floor, by a zone's growth past the
 * floor (and in a fork child for the zones it inherits so), or by live
 * huge blocks past it, or, for what is past it already, by the option set
 * to auto or the delay set from 0 live and by a thread that left while the
 * option went back to auto (release.c, zone_release_note_all), with no
 * thread running; the next poll (a malloc
 * slow path, no lock held) starts the thread. Cleared in a fork child
 * first, when the thread exits and when the option is set to 0.
 * retry_ns: after a failed start, no new try before this page-clock time.
 * thread_wake: a futex word the thread sleeps on, bumped when an option it
 * reads changes, so that it notices at once. All relaxed but where the
 * thread's exit is handed over (acquire / release on thread_state); the
 * flags order no other data.
 */
static _Atomic uint32_t thread_state;
static _Atomic bool thread_wanted;
static _Atomic uint64_t retry_ns;
static _Atomic uint32_t thread_wake;
static _Atomic uint64_t thread_passes; /* passes the thread has finished */

/*
 * A fork child is single-threaded, but glibc leaves __libc_single_threaded
 * false in the child of a multi-threaded parent (glibc 2.36), so
 * os_single_threaded cannot tell. The child's postfork handler runs on its
 * only thread, the one that forked: it marks that thread (forker_in_child,
 * thread-local) and clears child_other_thread. A poll from a thread not so
 * marked proves a second thread exists and sets child_other_thread; until
 * then the forker's polls count the process as single-threaded (a child
 * that sets itself up and calls unshare(CLONE_NEWUSER) or installs a
 * seccomp filter without clone, then execs, keeps working: review of
 * pagesidle, item 14). In a process that never forked nothing is marked.
 * Relaxed: a stale false costs one poll that starts nothing.
 */
static __thread bool forker_in_child __attribute__((tls_model("initial-exec")));
static _Atomic bool child_other_thread;

/* Whether this process has had a second thread, as far as the poll knows. */
static bool had_second_thread(void)
{
	if (os_single_threaded())
		return false;
	if (!forker_in_child) {
		if (!pc_load_relaxed(&child_other_thread))
			pc_store_relaxed(&child_other_thread, true);
		return true;
	}
	return pc_load_relaxed(&child_other_thread);
}

bool pc_page_release_thread_active(void)
{
	long mode = pc_option(PC_OPT_VM_RELEASE_THREAD);
	return mode == PC_RELEASE_THREAD_ALWAYS ||
	       (mode == PC_RELEASE_THREAD_AUTO && pc_load_relaxed(&thread_state) != 0);
}

bool pc_page_release_thread_wanted(void)
{
	return pc_load_relaxed(&thread_wanted);
}

/* Called by release passes (release.c) that found a zone's free resident
 * memory over the floor of its bound, and by zone_grow once a zone manages
 * more than the floor (zone_release_note_grown): in auto mode with no
 * thread running, the next poll starts one. */
void release_thread_note_over_floor(void)
{
	if (pc_option(PC_OPT_VM_RELEASE_THREAD) == PC_RELEASE_THREAD_AUTO &&
	    pc_load_relaxed(&thread_state) == 0)
		pc_store_relaxed(&thread_wanted, true);
}

/* The pass hooks of the layers above (pc_page_release_hook_add), in the
 * order they were added. An adder claims a slot by compare-and-swap of
 * hook_count, then publishes the pointer with a release store: a pass
 * (acquire) that sees it sees the layer's state set up before it added the
 * hook; a claimed slot whose pointer is not written yet reads NULL and is
 * skipped this pass. */
static void (*_Atomic release_hooks[PC_PAGE_RELEASE_HOOKS])(void);
static _Atomic unsigned hook_count;

bool pc_page_release_hook_add(void (*hook)(void))
{
	unsigned n = pc_load_relaxed(&hook_count);
	do {
		if (n >= PC_PAGE_RELEASE_HOOKS)
			return false;
	} while (!pc_cas_weak_relaxed(&hook_count, &n, n + 1)); /* the slot only: the store below publishes */
	pc_store_release(&release_hooks[n], hook);
	return true;
}

size_t pc_page_release_thread_pass(void)
{
	unsigned n = PC_MIN(pc_load_relaxed(&hook_count), (unsigned)PC_PAGE_RELEASE_HOOKS);
	for (unsigned i = 0; i < n; i++) {
		void (*hook)(void) = pc_load_acquire(&release_hooks[i]);
		if (hook)
			hook(); /* first: what it gives back ages from this pass on */
	}
	return pc_page_release_due();
}

/* Sleep between passes: a quarter of the delay, within [10 ms, 1 s]. */
static uint64_t thread_interval_ns(void)
{
	uint64_t delay_ns = (uint64_t)pc_option(PC_OPT_VM_RELEASE_DELAY_MS) * 1000000u;
	return PC_MIN(PC_MAX(delay_ns / 4, (uint64_t)10000000u), (uint64_t)1000000000u);
}

/* Whether no zone holds free memory that may still be resident (buddy
 * blocks or runs): a pass would have nothing to release. Relaxed hints. */
static bool zones_clean(void)
{
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		if (pc_load_relaxed(&z->dirty_hint) != 0 || pc_load_relaxed(&z->run_dirty_hint) != 0)
			return false;
	}
	return true;
}

/*
 * Sleeping: after PC_RELEASE_IDLE_PASSES (page.h) passes in a row that
 * ended with every zone clean and saw no kick (4 s at the default delay;
 * the layers above have had their hooks run as often, so their idle
 * caches came back as pages and went), the thread stops waking every
 * delay/4: it says it sleeps (IDLE_SLEEPING) and waits until a slow path
 * finds dirty memory in a zone (release_thread_work, from
 * zone_maybe_release), a layer kicks it, or an option changes. The zones'
 * waker looks with a relaxed load (no fence on the zones' slow paths), so
 * a free racing with the thread's last look at the zones could miss it:
 * the wait has a backstop of RELEASE_SLEEP_NS for that case only. Memory
 * cached above the page layer wakes it only where a layer asks
 * (pc_page_release_thread_kick: malloc's huge cache, which can hold blocks
 * of many MiB resident); the sheaves' and the medium cache's, bounded per
 * CPU, wait for the next slow path's decay, pc_trim or the backstop.
 *
 * A kick is never missed. A kick while the thread is awake (counting idle
 * passes, a huge block freed during the last passes before it sleeps)
 * starts the count again, so the thread passes for PC_RELEASE_IDLE_PASSES
 * more (past the delay) before it sleeps, and the block goes by age
 * instead of waiting for the backstop (review of midfaults, S1: huge_idle
 * waited 60 s); a kick while it sleeps wakes it. The kicker and the
 * thread about to sleep each write one thing and then read what the other
 * wrote: with two words (a kicked flag, a sleeping flag) that is the
 * store-load pattern, where acquire/release orders allow both reads to
 * miss the other's write (C11 needs seq_cst on all four accesses, or a
 * seq_cst fence on each side; it worked on x86 only because both writes
 * were locked exchanges: review item E). So both flags share one word,
 * thread_idle, changed only by compare-and-swap, each side looking at the
 * value it replaced: the changes of one word are totally ordered, so
 * whichever comes second sees the first (the thread sees the kick and
 * stays awake, or the kicker sees it asleep and wakes it).
 */
#define RELEASE_SLEEP_NS (60ull * 1000000000u)
#define IDLE_SLEEPING 1u /* the thread sleeps, or is about to decide to */
#define IDLE_KICKED 2u   /* a kick the thread has not yet taken */
static _Atomic uint32_t thread_idle;
static _Atomic uint64_t thread_sleeps; /* sleeps begun (tests) */

/* Set the bits `set`, clear the bits `clear`; returns the word before.
 * Acquire/release: the word orders nothing but itself (the futex word
 * carries the wake-up). */
static uint32_t idle_change(uint32_t set, uint32_t clear)
{
	uint32_t old = pc_load_relaxed(&thread_idle);
	while (!pc_cas_strong_acq_rel(&thread_idle, &old, (old | set) & ~clear))
		;
	return old;
}

void release_thread_work(void)
{
	/* The change elects one waker; the relaxed look first keeps the zones'
	 * slow paths off the word while the thread is awake. */
	if (pc_unlikely(pc_load_relaxed(&thread_idle) & IDLE_SLEEPING) &&
	    (idle_change(0, IDLE_SLEEPING) & IDLE_SLEEPING))
		release_thread_wake();
}

void pc_page_release_thread_kick(void)
{
	if (idle_change(IDLE_KICKED, IDLE_SLEEPING) & IDLE_SLEEPING)
		release_thread_wake();
}

bool pc_page_release_thread_sleeping(void)
{
	return (pc_load_relaxed(&thread_idle) & IDLE_SLEEPING) != 0;
}

uint64_t pc_page_release_thread_sleeps(void)
{
	return pc_load_relaxed(&thread_sleeps);
}

/* The thread, its idle passes done: say it sleeps, then look once more
 * (a kick taken before the change keeps it awake; one after wakes it) and
 * wait. Called and left with IDLE_SLEEPING clear. */
static void idle_sleep(uint32_t seen)
{
	pc_page_test_point(PC_PAGE_TEST_THREAD_SLEEP);
	uint32_t before = idle_change(IDLE_SLEEPING, 0);
	if (!(before & IDLE_KICKED) && zones_clean()) {
		pc_add_relaxed(&thread_sleeps, 1);
		os_futex_wait_timeout(&thread_wake, seen, RELEASE_SLEEP_NS);
	}
	idle_change(0, IDLE_SLEEPING);
}

/*
 * The thread's exit against vm.release_thread set back to auto (the
 * store-load pattern again, review item E): the thread says it is gone
 * (thread_state 0) and then reads the option; the setter stores the option
 * and then (release.c's hook, thread_mode_changed, through
 * release_thread_exit_order) reads thread_state. Without more, both reads may
 * miss the other's write: the thread leaves seeing 0, the setter sees it
 * running, and nothing wants a new one. Each side passes here between its
 * write and its read: an exchange of one word, so the one that passes
 * second reads the first one's write (release/acquire through the word)
 * and so sees its earlier store: the thread sees auto and wants itself
 * again (zone_release_note_all), or the setter sees it gone and wants a
 * new one. Rare: an exit, or the option set to auto.
 */
static _Atomic uint32_t exit_order;

static void exit_order_point(void)
{
	pc_xchg_acq_rel(&exit_order, 0);
}

/* The setter's side, called by the hook that then reads thread_state
 * (release.c, thread_mode_changed), so the order holds whatever the order
 * the hooks run in. */
void release_thread_exit_order(void)
{
	exit_order_point();
}

static void *release_thread_main(void *arg)
{
	(void)arg;
	os_thread_set_name("pcmalloc-rel");
	unsigned idle = 0;
	while (pc_option(PC_OPT_VM_RELEASE_THREAD) != PC_RELEASE_THREAD_NEVER) {
		/* Relaxed: the futex compares the word itself, so a wake between
		 * this load and the wait makes the wait return at once. */
		uint32_t seen = pc_load_relaxed(&thread_wake);
		pc_page_release_thread_pass();
		pc_add_relaxed(&thread_passes, 1);
		bool kicked = idle_change(0, IDLE_KICKED) & IDLE_KICKED; /* taken */
		idle = zones_clean() && !kicked ? idle + 1 : 0;
		if (pc_option(PC_OPT_VM_RELEASE_THREAD) == PC_RELEASE_THREAD_NEVER)
			break;
		if (idle < PC_RELEASE_IDLE_PASSES) {
			os_futex_wait_timeout(&thread_wake, seen, thread_interval_ns());
			continue;
		}
		idle_sleep(seen);
		idle = 0;
	}
	/* off: a new one when wanted again */
	pc_store_relaxed(&thread_wanted, false);
	/* Release: a poll that sees 0 may start a new thread at once. */
	pc_store_release(&thread_state, 0);
	/* Set back to auto while this thread was leaving: that set may have
	 * seen it running and wanted nothing (review of midfaults, item 1);
	 * the order point makes one of the two see the other (above). */
	exit_order_point();
	if (pc_option(PC_OPT_VM_RELEASE_THREAD) == PC_RELEASE_THREAD_AUTO)
		zone_release_note_all();
	return NULL;
}

/* Wake the thread so that it re-reads the options (the delay) at once. */
void release_thread_wake(void)
{
	pc_add_relaxed(&thread_wake, 1); /* relaxed: see release_thread_main */
	os_futex_wake(&thread_wake, 1);
}

/* vm.release_thread's hook: wake the thread so it re-reads the mode or
 * exits. Never start it here: hooks also run inside start-up, where a
 * thread (and the malloc inside pthread_create) would deadlock on the
 * once-init. */
static void mode_changed(long value)
{
	if (value == PC_RELEASE_THREAD_NEVER) /* off: a later auto starts one only when wanted again */
		pc_store_relaxed(&thread_wanted, false);
	release_thread_wake();
}

void release_thread_init(void)
{
	pc_option_on_change(PC_OPT_VM_RELEASE_THREAD, mode_changed);
}

void pc_page_release_thread_poll(void)
{
	long mode = pc_option(PC_OPT_VM_RELEASE_THREAD);
	if (pc_likely(mode == PC_RELEASE_THREAD_NEVER))
		return;
	if (pc_likely(pc_load_relaxed(&thread_state) != 0))
		return;
	/* Auto: only when wanted, and never in a process that has had no second
	 * thread (os.h, os_single_threaded: seccomp filters, user namespaces,
	 * the C library's unlocked stdio all count on it), nor under a seccomp
	 * filter; there the floor alone bounds the pool, as with 0. */
	if (pc_likely(mode == PC_RELEASE_THREAD_AUTO) &&
	    (pc_likely(!pc_load_relaxed(&thread_wanted)) || !had_second_thread()))
		return;
	if (pc_page_clock_ns() < pc_load_relaxed(&retry_ns))
		return;
	/* Auto, under a seccomp filter (which may kill a clone): never; the
	 * flag goes (os_seccomp_filtered remembers a filter it has seen). */
	if (mode == PC_RELEASE_THREAD_AUTO && os_seccomp_filtered()) {
		pc_store_relaxed(&thread_wanted, false);
		return;
	}
	uint32_t expected = 0;
	/* Acquire: pairs with the exiting thread's release store. */
	if (!pc_cas_strong_acquire(&thread_state, &expected, 1))
		return;
	if (os_thread_start(release_thread_main, NULL) != 0) {
		pc_store_relaxed(&retry_ns, pc_page_clock_ns() + 1000000000u);
		pc_store_release(&thread_state, 0);
	}
}

uint64_t pc_page_release_thread_passes(void)
{
	return pc_load_relaxed(&thread_passes);
}

bool pc_page_release_thread_running(void)
{
	return pc_load_acquire(&thread_state) != 0; /* pairs with the thread's exit */
}

/* In a fork child: the parent's thread does not exist there. */
void release_thread_fork_child(void)
{
	pc_store_relaxed(&thread_state, 0);
	pc_store_relaxed(&thread_idle, 0);
	pc_store_relaxed(&thread_wanted, false); /* auto: wanted again by zone_release_fork_child if the zones ask */
	forker_in_child = true; /* this thread: the child's only one */
	pc_store_relaxed(&child_other_thread, false);
}
