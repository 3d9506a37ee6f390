/*
 * os/lifecycle.c - the once-init primitive and the registry of fork and
 * thread-exit handlers (see os.h, "lifecycle").
 *
 * Owns:
 *  - life_table[life_count]: the registered layers, sorted by rank (lowest
 *    first), under life_lock. Entries are never removed.
 *  - life_lock: a leaf test-and-set lock of this file (the lock layer sits
 *    above os/, so it cannot be used here). The forking thread holds it from
 *    prefork to postfork, so the handlers that run after fork() are exactly
 *    those that ran before it, and a registration waits for the fork.
 *  - life_key: one pthread key whose destructor runs the thread_exit
 *    handlers; life_armed (per thread) says whether this thread's value is set.
 *  - once_running, once_forks: how many once-inits run now, and how many
 *    fork()s wait for them to finish (see "once and fork" below);
 *    once_depth (per thread): nesting of the inits this thread runs.
 *  - atfork_state: whether the fork handlers are handed to pthread_atfork
 *    (see "registering the fork handlers" below).
 * pthread_atfork is called once, by the first pc_once_slow of the process or
 * by a library constructor that runs before other libraries' (priority 101),
 * whichever comes first: prepare handlers run in reverse order of
 * registration, so ours runs last and other libraries' may still allocate.
 * Nothing here allocates through malloc.
 * Signals: the forking thread blocks every signal from the start of
 * life_prefork to the end of each postfork handler (life_fork_mask, per
 * thread, holds its mask meanwhile; the child inherits the copy): from the
 * first prefork handler to the last postfork one it holds every allocator
 * lock at no re-entry depth, so a signal handler that allocated there would
 * wait for its own thread's lock (page.h, "Re-entry"). A signal that comes
 * meanwhile is delivered when the mask is restored, every lock released
 * (in the child, POSIX clears what was pending).
 */
#define _GNU_SOURCE
#include "os.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>

/* States of a once: 0 not done, 1 running, 2 done. */
#define PC_ONCE_RUNNING 1u

void (*_Atomic pc_once_test_hook)(_Atomic uint32_t *state, enum pc_once_event event) PC_STARTUP_DATA;

static void once_event(_Atomic uint32_t *state, enum pc_once_event event)
{
	void (*hook)(_Atomic uint32_t *, enum pc_once_event) = pc_load_relaxed(&pc_once_test_hook);
	if (pc_unlikely(hook != NULL))
		hook(state, event);
}

/*
 * Once and fork. Only the forking thread exists in the child, so an init
 * that another thread was running at fork() would stay RUNNING there forever
 * and the child's first call would wait for it without end. So fork() waits
 * for the running inits to finish and no new one starts meanwhile: a reader-
 * writer gate, the inits readers (once_running), life_prefork the writer
 * (once_forks). Both sides announce themselves, then look at the other (a
 * store then a load, sequentially consistent: of an init that starts and a
 * fork that begins at once, at least one sees the other; an init that sees
 * the fork steps back and waits for it). An init nested in one this thread
 * runs already (once_depth > 0) is part of it and never waits, or the fork
 * waiting for the outer one and the inner one waiting for the fork would
 * deadlock. The prefork waits before it takes life_lock, which an init may
 * take (pc_life_register).
 */
static _Atomic uint32_t once_running PC_STARTUP_DATA, once_forks PC_STARTUP_DATA;
static __thread unsigned once_depth __attribute__((tls_model("initial-exec")));
/* This thread runs fork's handlers (life_prefork to the end of a postfork
 * one). An init it starts there (a lock's first slow path enrolls the
 * thread, which makes the thread-exit key once) must not wait for its own
 * fork: it runs in the thread that goes on in parent and child, so the child
 * never finds it half done. */
static __thread bool life_forking __attribute__((tls_model("initial-exec")));

static void once_enter(void)
{
	if (once_depth++ > 0)
		return;
	for (;;) {
		atomic_fetch_add(&once_running, 1); /* seq_cst: see above */
		if (atomic_load(&once_forks) == 0 || life_forking)
			return;
		atomic_fetch_sub(&once_running, 1); /* a fork waits: let it go first */
		while (atomic_load(&once_forks) != 0)
			sched_yield();
	}
}

static void once_leave(void)
{
	if (--once_depth == 0)
		atomic_fetch_sub(&once_running, 1);
}

/*
 * Registering the fork handlers. They must be registered before any thread
 * takes an allocator lock: a fork that runs no prefork handler copies a lock
 * another thread holds, held for ever in the child. A library constructor of
 * ours is not early enough: another library's constructor may run first,
 * start threads that allocate and fork. So the first pc_once_slow of the
 * process registers them, before any init has run (no allocator lock is
 * taken before some init has run, though static ones exist; the layers
 * without an init of their own, lock/, register their entries from the
 * page layer's init), and the constructor does it if no allocation came
 * first.
 *
 * Why no interleaving hangs. pthread_atfork takes the C library's atfork
 * lock, which a forking thread may hold from its first prepare handler to
 * its last parent one (older glibc; 2.36 drops it around each handler), and
 * a registering thread holds while it grows its list, which may call
 * malloc. So a thread that waited in pthread_atfork, or for a
 * thread inside it, could close a cycle: a fork whose prepare handler (of
 * another library) allocates would wait for it while it waits for the fork.
 * Hence a claim, not a lock: the thread that wins atfork_state's CAS from
 * NONE calls pthread_atfork, holding no allocator lock and running no init
 * (it has not entered one yet), so nothing any fork handler or allocation
 * waits for; every other thread, and the claimer itself when
 * pthread_atfork allocates, sees the claim and goes on at once, never
 * waiting for the registration. So the claimer waits for the atfork lock
 * alone, whose holder never waits for the claimer, and nobody waits for the
 * claimer: no cycle, unless the holder is the claimer itself: a first
 * allocation made inside another library's prepare handler, where the C
 * library holds its atfork lock across the handlers (glibc before 2.36),
 * or in a signal handler that interrupted fork or pthread_atfork, would
 * wait for its own thread's lock. Where pcmalloc is the process's malloc
 * that cannot be the first allocation: glibc takes that lock only for a
 * fork of a multi-threaded process, and pthread_create allocates (the new
 * thread's DTV) before a second thread exists. A program that keeps the C
 * library's malloc and calls pc_malloc first from a prepare handler, on
 * such a glibc, would hang there: accepted. (A fork child that inherits a claim whose thread is not
 * there is single-threaded and needs no handler; its own children are
 * protected only once something registers, which nothing then does: such a
 * child, forked in the few instructions between the claim and the
 * registration, forks unprotected, as every fork before the first
 * allocation does anyway.)
 * What a non-waiting claim gives up: a fork that took the atfork lock before
 * the registration finishes runs none of our handlers (the same holds of
 * one whose prepare phase started before the first allocation), so a thread
 * that allocates beside that fork, before the registration is done, may
 * leave a lock held in the child. That needs three threads at once at the
 * process's first allocation: one forking, one allocating for the first time
 * and one more allocating right after it. Waiting instead would turn that
 * into a hang of the parent, as above. The first allocation usually comes
 * before any thread starts (pthread_create itself allocates), where no fork
 * can be under way.
 */
#define ATFORK_NONE 0u
#define ATFORK_CLAIMED 1u
#define ATFORK_DONE 2u
static _Atomic uint32_t atfork_state PC_STARTUP_DATA;

static void life_prefork(void);
static void life_postfork_parent(void);
static void life_postfork_child(void);
static _Atomic uint32_t life_key_state PC_STARTUP_DATA; /* pc_once */
static bool life_key_create(void);

static PC_NOINLINE void life_atfork_claim(void)
{
	uint32_t s = ATFORK_NONE;
	if (!pc_cas_strong_acq_rel(&atfork_state, &s, ATFORK_CLAIMED))
		return; /* claimed (or done) by another call: never wait for it */
	once_event(NULL, PC_ONCE_EVENT_ATFORK);
	/* The thread-exit key too (a low index, made before the program makes
	 * many; nested pc_once_slow calls see the claim and go on). */
	pc_once(&life_key_state, life_key_create);
	if (pthread_atfork(life_prefork, life_postfork_parent, life_postfork_child) != 0)
		pc_message("no memory to register the fork handlers: fork() will not be safe");
	/* Release: for pc_life_fork_handlers_registered (tests); nobody waits. */
	pc_store_release(&atfork_state, ATFORK_DONE);
}

static inline void life_atfork_ensure(void)
{
	/* Relaxed: a stale NONE only costs the CAS, which decides. */
	if (pc_unlikely(pc_load_relaxed(&atfork_state) == ATFORK_NONE))
		life_atfork_claim();
}

bool pc_life_fork_handlers_registered(void)
{
	return pc_load_acquire(&atfork_state) == ATFORK_DONE;
}

bool pc_once_slow(_Atomic uint32_t *state, bool (*init)(void))
{
	life_atfork_ensure(); /* first: before any init, holding nothing */
	for (;;) {
		/* Acquire: pairs with the release below, so what init() wrote is
		 * visible to every caller that sees DONE. */
		uint32_t s = pc_load_acquire(state);
		if (s == PC_ONCE_DONE)
			return true;
		if (s == PC_ONCE_INIT) {
			once_enter();
			if (!pc_cas_strong_acquire(state, &s, PC_ONCE_RUNNING)) {
				once_leave();
				continue;
			}
			once_event(state, PC_ONCE_EVENT_RUN);
			bool ok = init();
			/* Release: publishes init()'s writes with the state. */
			pc_store_release(state, ok ? PC_ONCE_DONE : PC_ONCE_INIT);
			once_leave();
			return ok;
		}
		once_event(state, PC_ONCE_EVENT_WAIT);
		while (pc_load_acquire(state) == PC_ONCE_RUNNING) /* acquire: as above */
			sched_yield();
		if (pc_load_acquire(state) == PC_ONCE_INIT)
			return false; /* the initialiser failed; a later call retries */
	}
}

/* ---- the registry ------------------------------------------------------------ */
static const struct pc_life *life_table[PC_LIFE_MAX] PC_STARTUP_DATA;
static _Atomic unsigned life_count PC_STARTUP_DATA; /* written under life_lock */
static _Atomic uint32_t life_lock PC_STARTUP_DATA;

static void life_lock_take(void)
{
	/* Acquire: the table as the previous holder left it. */
	while (pc_xchg_acquire(&life_lock, 1) != 0)
		sched_yield();
}

static void life_lock_drop(void)
{
	pc_store_release(&life_lock, 0); /* release: our table writes go with it */
}

void pc_life_register(const struct pc_life *life)
{
	life_lock_take();
	unsigned n = pc_load_relaxed(&life_count);
	if (n == PC_LIFE_MAX)
		pc_fatal("more than %d layers registered fork and thread-exit handlers",
			 PC_LIFE_MAX);
	unsigned i = n;
	for (; i > 0 && life_table[i - 1]->rank > life->rank; i--)
		life_table[i] = life_table[i - 1]; /* insertion keeps ranks sorted */
	life_table[i] = life;
	/* Release: the table entries before the count (for life_thread_exit). */
	pc_store_release(&life_count, n + 1);
	life_lock_drop();
}

bool pc_life_is_registered(const char *name)
{
	life_lock_take();
	bool found = false;
	for (unsigned i = 0; i < pc_load_relaxed(&life_count) && !found; i++)
		found = strcmp(life_table[i]->name, name) == 0;
	life_lock_drop();
	return found;
}

/* prefork: no init running (see "once and fork"), then outer layers (high
 * rank) first, the registry lock held throughout. */
static __thread sigset_t life_fork_mask __attribute__((tls_model("initial-exec")));

static void life_prefork(void)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &life_fork_mask); /* see the top */
	life_forking = true;
	/* An init of this thread that forks (against the rules) counts itself. */
	uint32_t own = once_depth > 0;
	atomic_fetch_add(&once_forks, 1); /* seq_cst: see "once and fork" */
	if (atomic_load(&once_running) != own) {
		once_event(NULL, PC_ONCE_EVENT_FORK_WAIT);
		while (atomic_load(&once_running) != own)
			sched_yield();
	}
	life_lock_take();
	for (unsigned i = pc_load_relaxed(&life_count); i-- > 0;)
		if (life_table[i]->prefork)
			life_table[i]->prefork();
}

static void life_postfork_parent(void)
{
	for (unsigned i = 0; i < pc_load_relaxed(&life_count); i++)
		if (life_table[i]->postfork_parent)
			life_table[i]->postfork_parent();
	life_lock_drop();
	atomic_fetch_sub(&once_forks, 1); /* inits may start again */
	life_forking = false;
	pthread_sigmask(SIG_SETMASK, &life_fork_mask, NULL); /* last: every lock is free */
}

static void life_postfork_child(void)
{
	for (unsigned i = 0; i < pc_load_relaxed(&life_count); i++)
		if (life_table[i]->postfork_child)
			life_table[i]->postfork_child();
	pc_store_relaxed(&life_lock, 0); /* the child is single-threaded */
	/* Other threads' inits were waited for; only this thread's may run
	 * here, and no other fork exists. */
	pc_store_relaxed(&once_running, once_depth > 0);
	pc_store_relaxed(&once_forks, 0);
	life_forking = false;
	pthread_sigmask(SIG_SETMASK, &life_fork_mask, NULL); /* last: every lock is free */
}

/* ---- thread exit ---------------------------------------------------------------- */
/* glibc stores the values of keys below this index in the thread descriptor
 * itself; larger keys need a block it allocates with calloc. */
#define LIFE_KEY_INLINE 32u

static pthread_key_t life_key PC_STARTUP_DATA;
static bool life_key_inline PC_STARTUP_DATA; /* set by the once, read-only afterwards */
static __thread bool life_armed __attribute__((tls_model("initial-exec")));

/* The key's destructor: the thread exits. Handlers run highest rank first.
 * The lock is not taken (a thread exiting while another forks must not wait
 * for the fork): the acquire load of the count sees the entries written
 * before it. A registration racing with this walk shifts entries and may
 * make this thread skip or repeat one layer's handler once; layers register
 * at start-up, long before threads exit, so this stays theoretical, and
 * thread_exit handlers tolerate being called when there is nothing to do. */
static void life_thread_exit(void *arg)
{
	(void)arg;
	life_armed = false; /* first: a handler that enrolls again re-arms */
	for (unsigned i = pc_load_acquire(&life_count); i-- > 0;)
		if (life_table[i]->thread_exit)
			life_table[i]->thread_exit();
}

static bool life_key_create(void)
{
	if (pthread_key_create(&life_key, life_thread_exit) != 0)
		return false;
	life_key_inline = (unsigned)life_key < LIFE_KEY_INLINE;
	return true;
}

static PC_NOINLINE bool life_enroll_slow(void)
{
	if (!pc_once(&life_key_state, life_key_create) || !life_key_inline)
		return false;
	if (pthread_setspecific(life_key, (void *)1) != 0)
		return false;
	life_armed = true;
	return true;
}

bool pc_life_thread_enroll(void)
{
	return pc_likely(life_armed) || life_enroll_slow();
}

__attribute__((constructor(101))) static void life_constructor(void)
{
	/* Make the key now, before the program makes many: a low index. */
	pc_once(&life_key_state, life_key_create); /* which registers the fork
						    * handlers, unless an
						    * allocation did already */
	life_atfork_ensure();
}
