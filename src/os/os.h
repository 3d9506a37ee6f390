/*
 * os/os.h - the platform layer: every call into the kernel lives behind this
 * header (mmap, madvise, mbind, futex, getcpu, clock, /sys reads, stderr).
 * No other file includes <sys/mman.h> or issues a system call.
 *
 * Owns: nothing shared but read-mostly facts (CPU count, NUMA map, rseq
 * area) set once by os_init() and never changed afterwards, plus the fault
 * injection counters used by tests.
 * Locking: none. Every function here is thread-safe and never allocates
 * through malloc (so it may run inside malloc itself).
 *
 * Error convention: functions that can fail return NULL / -1 and leave errno
 * as the kernel set it; they never print and never abort.
 */
#ifndef PC_OS_H
#define PC_OS_H

#include "../internal.h"

#include <sys/rseq.h>

/* ---- start-up ------------------------------------------------------------ */
/* Read CPU count and NUMA topology. Idempotent; cheap after the first call. */
void os_init(void);

/* ---- memory ---------------------------------------------------------------- */
/* Map size bytes (a multiple of the page size) of anonymous read-write memory,
 * aligned to align (a power of two >= page size). Returns NULL on failure
 * (including an injected failure), with errno = ENOMEM. */
void *os_map(size_t size, size_t align);
/* Map size bytes (a page multiple) of anonymous read-write memory exactly
 * at `at` (page aligned), replacing nothing. NULL with errno EEXIST when
 * something is mapped in that range (or the kernel put it elsewhere), ENOMEM
 * when refused (injected failures included: it counts as an os_map call). */
void *os_map_at(void *at, size_t size);
/* Unmap a range returned by os_map or os_map_at (or a page-aligned part of one). */
void os_unmap(void *p, size_t size);
/* Resize a mapping from os_map (mremap, may move it; contents kept). NULL
 * with errno ENOMEM on failure (injected failures included), the old mapping
 * then untouched. */
void *os_remap(void *p, size_t old_size, size_t new_size);
/* Give the physical pages of [p, p+size) back to the kernel. The mapping
 * stays valid; the next touch faults in a zero page. Returns 0 or -1. */
int os_release(void *p, size_t size);
/* Same, lazily (MADV_FREE): the kernel takes the pages only under memory
 * pressure; until then they stay resident and a touch costs no fault, but
 * their contents are undefined (old data or zeroes). Falls back to
 * os_release where the kernel lacks MADV_FREE. Returns 0 or -1. */
int os_release_lazy(void *p, size_t size);
/* Ask for transparent huge pages on [p, p+size) (madvise MADV_HUGEPAGE;
 * the kernel backs 2 MiB-aligned parts with huge pages where it can when
 * THP is "madvise" or "always"). Returns 0 or -1 (EINVAL: no THP). */
int os_advise_hugepage(void *p, size_t size);
/* Bind [p, p+size) to NUMA node `node` (mbind MPOL_PREFERRED). 0 or -1. */
int os_bind_node(void *p, size_t size, unsigned node);
/* Physical memory of the machine in bytes (sysconf). */
size_t os_physical_memory(void);
/* Resident bytes of this process (from /proc/self/statm). 0 if unknown. */
size_t os_resident_bytes(void);

/* Fault injection, for tests: the next `skip` calls to os_map succeed, then
 * the following `fail` calls fail as if the kernel refused. (0, 0) clears. */
void os_inject_map_failures(unsigned skip, unsigned fail);
/* The debug.fail_mmap tunables (set through the options table, which calls
 * these): from now on every nth call to os_map or os_remap fails (n = 0:
 * none), and each call fails with probability ppm / 1000000 (0: none) from a
 * fixed-seed generator, so that a single-threaded program fails the same
 * calls on every run. Failures look like the kernel's: NULL, errno ENOMEM. */
void os_fail_map_every(unsigned long n);
void os_fail_map_ppm(unsigned long ppm);
/* Number of os_map/os_remap calls failed by injection so far (all kinds). */
unsigned long os_injected_failures(void);

/* ---- CPUs and NUMA ------------------------------------------------------- */
/* Number of possible CPUs (from /sys/devices/system/cpu/possible, else
 * sysconf). CPU numbers returned by os_cpu_current() are < this. */
extern unsigned os_ncpus; /* set by os_init(); read-only afterwards */
PC_INLINE unsigned os_cpu_count(void) { return os_ncpus; }
/* Number of NUMA nodes known to the OS (>= 1) and the node of each CPU. */
unsigned os_numa_node_count(void);
unsigned os_cpu_to_node(unsigned cpu);
/* Nonzero when glibc registered an rseq area for this thread. */
bool os_rseq_active(void);
/* Slow path of os_cpu_current(): sched_getcpu(), clamped to the count. */
unsigned os_cpu_current_slow(void);

/*
 * The CPU this thread runs on now. It may be stale by the time the caller
 * uses it (the thread can migrate at any instant): callers use it only to
 * choose which per-CPU structure to work on, and make that work safe for any
 * thread (locks or compare-and-swap), never assume exclusivity.
 * Fast path: one load from glibc's rseq area (struct rseq.cpu_id, kept by the
 * kernel). Slow path when rseq is not registered (valgrind, or
 * GLIBC_TUNABLES=glibc.pthread.rseq=0): sched_getcpu().
 */
/* The cpu_id field of this thread's rseq area (negative while unregistered);
 * only when __rseq_size != 0. The kernel writes it on every return to user
 * space; a plain volatile read is all rseq promises and all we need. */
PC_INLINE int32_t os_rseq_cpu_id(void)
{
	const struct rseq *rs = (const struct rseq *)(void *)
		((char *)__builtin_thread_pointer() + __rseq_offset);
	return (int32_t)*(volatile const uint32_t *)&rs->cpu_id;
}

PC_INLINE unsigned os_cpu_current(void)
{
	if (pc_likely(__rseq_size != 0)) {
		int32_t cpu = os_rseq_cpu_id();
		if (pc_likely(cpu >= 0 && (unsigned)cpu < os_cpu_count()))
			return (unsigned)cpu;
	}
	return os_cpu_current_slow();
}

/* ---- per-CPU stacks on rseq ("rseq.c", "rseq_x86_64.h") ------------------ */
/*
 * Restartable sequences on glibc's rseq registration, for per-CPU arrays of
 * pointers that any thread may push to and pop from without a lock or an
 * atomic read-modify-write. The caller lays out, for each possible CPU i, a
 * 64-byte slot at base + (i << OS_RSEQ_SLOT_SHIFT) whose first word points
 * to a struct os_rseq_stack (never NULL: an empty stack of capacity 0 makes
 * every push and pop fail).
 *
 * os_rseq_setup() must have returned true before any other call here. It
 * checks that glibc registered rseq (__rseq_size covers rseq_cs) and that
 * this thread is registered, and registers the process for
 * MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ. False (and nothing done) when any
 * of it is unavailable: valgrind, GLIBC_TUNABLES=glibc.pthread.rseq=0, old
 * kernels; the caller then uses another fast path.
 *
 * A push or pop on the current CPU's stack commits with one store (count)
 * and is aborted and retried if the thread is preempted, migrated or
 * signalled before it: a stack is changed only by code running on its CPU,
 * one section at a time. The slot's pointer is changed only by
 *   - os_rseq_slot_cas() run on the slot's CPU (it fails elsewhere): every
 *     section of that CPU that read the old pointer is aborted by the fact
 *     that the caller ran there; or
 *   - a plain store from any CPU followed by os_rseq_fence(): when the fence
 *     returns, every section that could have read the old pointer has been
 *     aborted or has committed, and the old stack is the caller's alone.
 * Callers serialise pointer changes of one slot among themselves (a lock).
 */
struct os_rseq_stack {
	uint32_t capacity; /* objects[] has room for this many (first: see push) */
	uint32_t count;    /* objects[0 .. count) hold pointers */
	void *link;        /* the owner's (lists of stacks); unused here */
	void *objects[];
};
bool os_rseq_setup(void);
/* The sequences, inline (rseq_x86_64.h, OS_RSEQ_SLOT_SHIFT there):
 *   void *os_rseq_pop(void *base): the top of the current CPU's stack,
 *     popped; NULL if empty or this thread has no rseq registration.
 *   int os_rseq_push(void *base, void *obj): push obj onto the current
 *     CPU's stack: 1 if pushed; 0 if full or not registered; -1 if obj
 *     already is one of the stack's two topmost objects (then nothing is
 *     pushed: the caller's double-free check). Checked even when the stack
 *     is full. Contract: obj is never NULL, never a value the stack's
 *     link word can hold (NULL or another stack) and never equal to the
 *     stack's capacity (true of any object: capacities here are <= 512 and
 *     no mapping lies that low), since with count < 2 the comparisons read
 *     the link word and the word of capacity and count, which is then the
 *     capacity alone (capacity comes first for this reason).
 *   unsigned os_rseq_pop_many(void *base, void **out, unsigned want): move
 *     up to want objects from the top of the current CPU's stack to out[],
 *     in order; how many (0 if empty or not registered).
 *   unsigned os_rseq_push_many(void *base, void *const *in, unsigned want):
 *     push in[0..k) (k: the most of want that fits), no double-free test;
 *     how many (0 if full or not registered). Both for slow paths.
 *   bool os_rseq_slot_cas(void *base, unsigned cpu, void *old, void *new):
 *     on CPU cpu only: if slot cpu holds old, store new; true if stored,
 *     false if the caller runs elsewhere or the slot changed.
 *   bool os_rseq_stack_resize(void *base, unsigned cpu, stack, old, new):
 *     on CPU cpu only: if slot cpu holds stack, its capacity is old and its
 *     count <= new, set its capacity to new (malloc's medium cache grows
 *     and shrinks a stack in place this way, malloc/medium.c). */
#include "rseq_x86_64.h"
/* membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ): abort or wait out every
 * running rseq critical section of the process (a full barrier on each CPU
 * that runs one of its threads). Fatal if it fails after a successful
 * os_rseq_setup (the kernel promised it). */
void os_rseq_fence(void);

/* ---- process-wide barrier ("membarrier.c") --------------------------------- */
/*
 * os_membarrier_fence(): when it returns, every thread of the process that was
 * running has executed a full memory barrier, and threads that were not
 * running will execute one (a context switch) before they run again; so a
 * store the caller made before the call, and a load another thread makes
 * after its barrier, are ordered as if that thread had run an mfence between
 * its own earlier stores and later loads (the asymmetric Dekker of userspace
 * RCU: the other thread pays only a compiler barrier). os_membarrier_setup()
 * (once, before any os_membarrier_fence) registers the process for
 * MEMBARRIER_CMD_PRIVATE_EXPEDITED, else falls back to MEMBARRIER_CMD_GLOBAL
 * (much slower, same guarantee), and says which; with OS_MEMBARRIER_NONE the
 * caller must not call os_membarrier_fence (fatal if it does, or if the call fails).
 */
enum { OS_MEMBARRIER_NONE = 0, OS_MEMBARRIER_PRIVATE = 1, OS_MEMBARRIER_GLOBAL = 2 };
int os_membarrier_setup(void);
/* What the last os_membarrier_setup() found (OS_MEMBARRIER_NONE before any):
 * for a second user of the barrier, after the slab layer's setup. */
int os_membarrier_mode(void);
void os_membarrier_fence(void);

/* ---- futex ----------------------------------------------------------------- */
/* Sleep while *word == expected (private futex). Spurious wake-ups happen. */
void os_futex_wait(_Atomic uint32_t *word, uint32_t expected);
/* Same, for at most ns nanoseconds. */
void os_futex_wait_timeout(_Atomic uint32_t *word, uint32_t expected, uint64_t ns);
/* Wake up to n sleepers on word. Returns the number woken. */
int os_futex_wake(_Atomic uint32_t *word, int n);

/* ---- time, threads, environment ------------------------------------------ */
/* CLOCK_MONOTONIC in nanoseconds (vDSO; no system call). */
uint64_t os_now_ns(void);
/* Give up the CPU (sched_yield). */
void os_yield(void);
/* Start a detached thread running fn(arg) with every signal blocked (so the
 * program's signals go to its own threads) and a small stack. 0, or -1 with
 * errno set. pthread_create allocates: call with no allocator lock held. */
int os_thread_start(void *(*fn)(void *), void *arg);
/* Name the calling thread (prctl PR_SET_NAME; at most 15 characters shown
 * in ps -L, top -H, /proc/PID/task/TID/comm). */
void os_thread_set_name(const char *name);
/* True while the C library knows the process has never had a second thread
 * (glibc's __libc_single_threaded, 2.32 and later; false where unknown). A
 * single-threaded process may rely on staying so (seccomp filters without
 * clone, unshare(CLONE_NEWUSER), the C library's unlocked stdio), so the
 * allocator starts no thread of its own there unless asked to. True where
 * the C library does not say (the safe answer). */
bool os_single_threaded(void);
/* True if a seccomp filter (or strict mode) may restrict this process's
 * system calls ("Seccomp:" of /proc/self/status is not 0), or if that cannot
 * be read: a filter without clone would kill the process at its next thread
 * start, so the allocator starts none of its own then unless asked to.
 * A filter seen once is remembered (none can be taken off); until then the
 * file is read on each call (a filter may come at any time): call rarely. A
 * filter that kills on open would kill at that read. */
bool os_seccomp_filtered(void);
/* Kernel thread id of the caller. */
uint32_t os_thread_id(void);
/* "symbol.c": the return address of the first frame of the calling stack
 * outside the object (library or program) that holds pcmalloc, 0 if none
 * or unknown (pcmalloc linked into the program). Walks the stack with the
 * unwinder: call with no allocator lock held. */
uintptr_t os_caller_outside_self(void);
/* "symbol+0xoff" (exported symbols), "0xADDR (object+0xoff)" or "?" for 0. */
void os_symbolize(uintptr_t addr, char *buf, size_t size);
/* getenv() that is safe before libc is fully initialised; NULL if unset. */
const char *os_getenv(const char *name);
/* Whether some variable of the environment starts with prefix (len bytes):
 * one pass over environ, so that start-up can skip looking up each of its
 * names when none is set. Inline (into options_init_once) so that it needs
 * no line of its own in cmake/hot-text.ld, which keeps start-up code in the
 * first 64 KiB of text; environ is therefore declared here. */
extern char **environ;
PC_INLINE bool os_env_has_prefix(const char *prefix, size_t len)
{
	for (char **e = environ; e != NULL && *e != NULL; e++) {
		size_t i = 0;
		while (i < len && (*e)[i] == prefix[i])
			i++;
		if (i == len)
			return true;
	}
	return false;
}
/* buf = prefix, value in decimal, suffix (cut to size, always terminated;
 * size > 0). For the names start-up makes ("kmalloc-64", a /sys path):
 * not snprintf, whose formatting code and tables would otherwise be all of
 * libc's printf pages a small program touches (docs/footprint.md). */
void os_format_u(char *buf, size_t size, const char *prefix, unsigned value, const char *suffix);
/* Write all of buf to stderr, retrying short writes; never allocates. */
void os_write_stderr(const char *buf, size_t len);

/* ---- lifecycle: once-init, fork and thread exit ("lifecycle.c") ----------- */
/*
 * One once-init primitive and one registry of fork and thread-exit handlers
 * for every layer, so that no layer calls up and none keeps its own scheme.
 *
 * pc_once(state, init): run init() once, process-wide. The first caller runs
 * it; concurrent callers wait (yielding) for its result. When init() returns
 * false the state goes back to "not done" and a later call tries again (a
 * start-up the OS refused memory for). Returns whether init has succeeded.
 * *state starts at 0 (PC_ONCE_INIT) and is 2 (PC_ONCE_DONE) once done; a
 * reader that sees DONE with pc_once_done() sees everything init() wrote.
 * init() must not call pc_once on the same state (it would wait for itself).
 * fork() waits for the inits that other threads are running to finish, and
 * none starts while a fork is under way but the forking thread's own, from
 * a fork handler (lifecycle.c, "once and fork"), so
 * the child never finds an init RUNNING that no thread of it will finish:
 * init() must not fork, nor wait for a thread that is forking.
 * The first pc_once_slow of the process (before it runs any init) also
 * hands the fork handlers to pthread_atfork, so that a fork made before
 * this library's constructors ran (from another library's constructor whose
 * threads allocate) runs them too; a racing pc_once_slow never waits for
 * that registration (lifecycle.c, "registering the fork handlers", says why
 * no interleaving hangs, and what a fork racing with the very first
 * allocation still misses).
 */
#define PC_ONCE_INIT 0u
#define PC_ONCE_DONE 2u
bool pc_once_slow(_Atomic uint32_t *state, bool (*init)(void));
/* Test seam (tests/unit/os/once_fork.c, tests/unit/ctl/options_race.c,
 * tests/unit/malloc/fork_claim.c): called, when set, with the once's state
 * as a caller is about to run its init (RUN) and as a caller starts waiting
 * for another's (WAIT), with NULL as fork() starts waiting for running inits
 * (FORK_WAIT) and as the first pc_once_slow of the process is about to
 * register the fork handlers (ATFORK, see below). The hook may
 * block, holding that thread at that point. NULL in production: one relaxed
 * load on these slow paths only. */
enum pc_once_event {
	PC_ONCE_EVENT_RUN,
	PC_ONCE_EVENT_WAIT,
	PC_ONCE_EVENT_FORK_WAIT,
	PC_ONCE_EVENT_ATFORK, /* NULL: the claimer is about to call pthread_atfork */
};
extern void (*_Atomic pc_once_test_hook)(_Atomic uint32_t *state, enum pc_once_event event);
PC_INLINE bool pc_once_done(_Atomic uint32_t *state)
{
	/* Acquire: pairs with pc_once_slow's release, which publishes init(). */
	return pc_load_acquire(state) == PC_ONCE_DONE;
}
PC_INLINE bool pc_once(_Atomic uint32_t *state, bool (*init)(void))
{
	return pc_likely(pc_once_done(state)) || pc_once_slow(state, init);
}

/*
 * The registry. A layer fills a struct pc_life (static storage, any handler
 * may be NULL) and registers it once, when the state its handlers touch
 * exists (typically at the end of its once-init), holding no lock. Ranks
 * follow the global lock order of src/README.md: a layer whose locks are
 * taken first (outer) has the higher rank.
 *   prefork          highest rank first: every layer takes its locks, outer
 *                    layers before inner ones, so fork() copies no lock held
 *                    by another thread;
 *   postfork_parent  lowest rank first (the reverse): release them;
 *   postfork_child   lowest rank first: reset them (only the forking thread
 *                    exists in the child; inner layers are usable first);
 *   thread_exit      highest rank first, for an enrolled thread at its exit
 *                    (outer layers may still use inner ones' locks).
 * A registration that races with fork() waits for the fork to finish; the
 * postfork handlers run for exactly the layers whose prefork ran.
 */
enum pc_life_rank {
	PC_LIFE_RANK_LOCK = 10,    /* lock/: node pools, the lock registry */
	PC_LIFE_RANK_PAGE = 20,    /* page/: zone, pcp and grow locks */
	PC_LIFE_RANK_SLAB = 30,    /* slab/: slab_mutex, per-CPU locks, barns */
	PC_LIFE_RANK_MALLOC = 40,  /* malloc/ and above */
	PC_LIFE_RANK_STATS = 50,
	PC_LIFE_RANK_WITNESS = 90, /* lock/witness.c (debug builds): brackets fork */
	PC_LIFE_RANK_SLAB_CHILD = 92, /* slab/: a fork child's orphaned thread
				      sheaves back to the slabs, once every
				      lock is usable again */
	PC_LIFE_RANK_CHECK = 95,   /* slab/check.c (PC_DEBUG >= 3): walkers in a fork
				      child, once every lock is usable again */
};
struct pc_life {
	const char *name;
	int rank; /* enum pc_life_rank */
	void (*prefork)(void);
	void (*postfork_parent)(void);
	void (*postfork_child)(void);
	void (*thread_exit)(void);
};
#define PC_LIFE_MAX 16 /* registrations in all; more is fatal */
void pc_life_register(const struct pc_life *life);
/*
 * The calling thread now holds per-thread state: run the thread_exit
 * handlers when it exits. Safe anywhere, with any lock held, and never
 * allocates: it arms a pthread key only when glibc can store its value
 * without allocating (the key's index is below 32, which holds unless 32
 * keys were made before this library's constructor ran). Returns false when
 * the handlers cannot be armed for this thread: the caller must then keep no
 * per-thread state that only a thread_exit handler could give back. Cheap
 * (one TLS load) once armed. A handler that takes per-thread state again
 * re-arms it; glibc then calls the handlers again, at most 4 rounds.
 */
bool pc_life_thread_enroll(void);
/* Whether the fork handlers are registered with pthread_atfork (tests). */
bool pc_life_fork_handlers_registered(void);
/* Whether an entry of that name is in the registry (tests). */
bool pc_life_is_registered(const char *name);

/* ---- helpers shared by the os/ files (usable by any layer) ---------------- */
/*
 * PC_STARTUP_DATA: a zero-initialised variable that every process's
 * start-up reads or writes, placed in .data rather than .bss. In
 * libpcmalloc.so today the loader's relocations write every page of .data:
 * the table pc_class_cache_of8 (8 KiB of pointers, malloc/init.c) spans
 * all of its three pages, so such a variable costs no page fault of its
 * own, where in .bss the first read of an untouched page maps the zero
 * page and the first write faults again, two faults and a page of RSS for
 * a few bytes (docs/footprint.md, "2026-11-24 night, helper startup").
 * That is a fact of the layout, checked by tests/hot-text.sh (each
 * .data.pc_startup variable in .data, on a page that a relocation
 * writes): should .data grow past the table, that check fails. Small
 * scalars only: what is added here moves the .bss behind it. A
 * zero-initialised variable that start-up writes, in any layer, goes in
 * the .bss instead, named in tools/hot_text.py's HOT_BSS (rerun it): the
 * linker script puts those right after .data (.bss.pc_hot). PC_STARTUP_DATA
 * is for the few that must lie on a page the relocations write.
 */
#define PC_STARTUP_DATA __attribute__((section(".data.pc_startup")))

/* Read up to cap-1 bytes of a small file (/proc, /sys) into buf and
 * NUL-terminate it. Returns the length, or -1 with errno set. cap >= 1. */
long os_read_file(const char *path, char *buf, size_t cap);
/* The same for a file of one line (a /sys attribute such as a CPU list,
 * which the kernel hands out whole): a read(2) that ends the line and
 * leaves room in buf is the last, so one read instead of two. A longer file
 * may be cut at a line's end: only for files of one line. */
long os_read_line(const char *path, char *buf, size_t cap);
/* For tests: how many files os_read_file/os_read_line have opened (or
 * tried to), how many read(2) calls they made, and how many mmap(2) calls
 * os_map and os_map_at made, in this process. */
unsigned long os_files_opened(void);
unsigned long os_file_reads(void);
unsigned long os_maps_made(void);
/*
 * Parse a kernel CPU/node list such as "0-3,8-11\n" (empty means none).
 * Sets bit i of mask (nbits bits, zeroed first) for every listed i < nbits;
 * listed numbers >= nbits are counted but not stored. Returns the highest
 * listed number + 1 (0 for an empty list), or -1 if s is malformed.
 */
long os_parse_cpulist(const char *s, uint64_t *mask, unsigned nbits);
/* One decimal number at *s, at most max, advancing *s past it; false (and *s
 * unmoved) if there is none or it is larger. */
bool os_parse_number(const char **s, unsigned long max, unsigned long *out);

/* ---- for the statistics layer ("export.c") ---------------------------------- */
/* CPU time of the whole process (all threads, user + system), ns; 0 if unknown. */
uint64_t os_process_cpu_ns(void);
int os_getpid(void);
/* Open (create 0644) a report file for appending; fd or -1 with errno. */
int os_file_open_append(const char *path);
/* Write all of buf to fd, retrying short writes; 0 or -1 with errno. */
int os_write_all(int fd, const void *buf, size_t len);
void os_close(int fd);
/* Create the file at path (in /dev/shm) exclusively with mode 0600, owned by
 * the caller, `size` bytes of zeroes, and map it shared. A stale file of our
 * own at path is replaced; someone else's is left alone (NULL). NULL with
 * errno on failure. */
void *os_shm_create(const char *path, size_t size);
/* Unmap (map may be NULL) and unlink. */
void os_shm_remove(const char *path, void *map, size_t size);
/* Futex on shared memory (other processes may wake it): sleep while *word ==
 * expected, at most timeout_ns. 0 woken, -1 with errno (ETIMEDOUT, EAGAIN). */
int os_futex_wait_shared(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns);
void os_futex_wake_shared(_Atomic uint32_t *word);

#endif /* PC_OS_H */
