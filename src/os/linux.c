/*
 * os/linux.c - the Linux system calls behind os.h: anonymous mappings
 * (mmap, munmap, madvise, mbind), map fault injection, futexes, the clock,
 * threads (ids, one helper thread), the environment, small-file reads and
 * stderr.
 * CPU and NUMA discovery live in os/topology.c, messages in os/message.c.
 *
 * Owns: the fault injection state (one packed atomic word, the two rates of
 * the debug.fail_mmap tunables, and counters).
 * Locking: none; every function is thread-safe.
 * Never calls malloc or buffered stdio: this code runs inside malloc.
 * errno: a call that succeeds leaves errno as it found it; one that fails
 * leaves the kernel's errno (os_map: always ENOMEM).
 */
#ifndef __linux__
#error "os/linux.c is the Linux platform layer"
#endif
#define _GNU_SOURCE
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define OS_HAVE_SINGLE_THREADED 1
#endif
#include <time.h>
#include <unistd.h>

/* From <linux/mempolicy.h>; spelled here to avoid libnuma and its headers. */
#define OS_MPOL_PREFERRED 1

/* ---- fault injection ------------------------------------------------------- */
/*
 * Pending injection, packed so that (skip, fail) always change together:
 * bits 63..32 = calls still to let through, bits 31..0 = calls to fail after
 * them. 0 means no injection; the os_map fast path is one relaxed load.
 */
static _Atomic uint64_t os_inject_word PC_STARTUP_DATA; /* read by every os_map */
static _Atomic unsigned long os_inject_count; /* injected failures so far */

void os_inject_map_failures(unsigned skip, unsigned fail)
{
	uint64_t w = fail ? ((uint64_t)skip << 32 | fail) : 0;
	/* relaxed: a test arms this from one thread before the calls it means
	 * to fail; calls racing with the store may see either value. */
	pc_store_relaxed(&os_inject_word, w);
}

unsigned long os_injected_failures(void)
{
	return pc_load_relaxed(&os_inject_count);
}

/*
 * The debug.fail_mmap tunables (see os.h): every Nth call, or each call with
 * a probability drawn from a counter-based generator (splitmix64 of the call
 * number), so that a single-threaded run fails the same calls every time.
 * Both counters restart when the rate is set.
 */
static _Atomic unsigned long os_fail_every PC_STARTUP_DATA, os_fail_every_calls;
static _Atomic unsigned long os_fail_ppm PC_STARTUP_DATA, os_fail_ppm_calls;

void os_fail_map_every(unsigned long n)
{
	/* relaxed: like os_inject_map_failures, set by a test or at start-up;
	 * a call racing with the change may follow the old or the new rate. */
	pc_store_relaxed(&os_fail_every_calls, 0);
	pc_store_relaxed(&os_fail_every, n);
}

void os_fail_map_ppm(unsigned long ppm)
{
	pc_store_relaxed(&os_fail_ppm_calls, 0);
	pc_store_relaxed(&os_fail_ppm, ppm);
}

static uint64_t os_splitmix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

/* One os_map/os_remap call against the tunable rates; true = fail it. */
static bool os_map_fail_by_rate(void)
{
	unsigned long every = pc_load_relaxed(&os_fail_every);
	if (every != 0 && (pc_add_relaxed(&os_fail_every_calls, 1) + 1) % every == 0)
		return true;
	unsigned long ppm = pc_load_relaxed(&os_fail_ppm);
	if (ppm == 0)
		return false;
	uint64_t n = pc_add_relaxed(&os_fail_ppm_calls, 1);
	return os_splitmix64(n) % 1000000u < ppm;
}

/* Consume one os_map call from the injection window or the rates; true =
 * fail this one. */
static bool os_map_inject_now(void)
{
	if (pc_unlikely(pc_load_relaxed(&os_fail_every) | pc_load_relaxed(&os_fail_ppm)) &&
	    os_map_fail_by_rate()) {
		pc_add_relaxed(&os_inject_count, 1);
		return true;
	}
	uint64_t w = pc_load_relaxed(&os_inject_word);
	while (pc_unlikely(w != 0)) {
		bool fail = (w >> 32) == 0;
		uint64_t next = fail ? w - 1 : w - ((uint64_t)1 << 32);
		/* relaxed: the word orders nothing but itself; the CAS makes each
		 * call consume exactly one slot. */
		if (pc_cas_weak_relaxed(&os_inject_word, &w, next)) {
			if (fail)
				pc_add_relaxed(&os_inject_count, 1);
			return fail;
		}
	}
	return false;
}

/* ---- memory ------------------------------------------------------------------ */
static _Atomic unsigned long os_maps_count PC_STARTUP_DATA; /* mmap(2) calls, for tests */

unsigned long os_maps_made(void)
{
	return pc_load_relaxed(&os_maps_count);
}

static void *os_mmap_anon_at(void *hint, size_t size)
{
	pc_add_relaxed(&os_maps_count, 1); /* relaxed: a count, ordered with nothing */
	void *p = mmap(hint, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void *os_mmap_anon(size_t size)
{
	return os_mmap_anon_at(NULL, size);
}

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000 /* Linux 4.17; older kernels take it as a hint */
#endif
/* A mapping of size bytes exactly at `at`, replacing nothing, or NULL with
 * errno EEXIST (something is mapped there) or ENOMEM (refused). With
 * MAP_FIXED_NOREPLACE a taken range fails at once; a kernel older than 4.17
 * takes the flag as a hint and may put the mapping elsewhere: then it is
 * unmapped and the answer is EEXIST too. */
static void *os_mmap_exactly_at(char *at, size_t size)
{
	pc_add_relaxed(&os_maps_count, 1);
	char *p = mmap(at, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED) {
		if (errno != EEXIST)
			errno = ENOMEM;
		return NULL;
	}
	if (p != at) {
		munmap(p, size);
		errno = EEXIST;
		return NULL;
	}
	return p;
}

/*
 * Aligned mapping. First size bytes alone: the kernel places mappings top
 * down, next to the previous one, so after an aligned mapping of the same
 * size the next one is often aligned already; and under a limit on address
 * space (RLIMIT_AS) there may be no room for more (the allocator unmaps
 * regions to make room and then maps them again). If that one is not
 * aligned: map size + align - page bytes, which always contains an aligned
 * block of size bytes, then unmap the unaligned head and the tail; if even
 * that does not fit, try the aligned addresses just above and below the
 * first one. The process's first aligned mapping (the first region, at
 * start-up) goes to the larger mapping at once: nothing aligned was placed
 * before it, so the first try would almost never be aligned (five system
 * calls instead of three); it tries size bytes alone only when the larger
 * one is refused.
 */
static _Atomic uint8_t os_aligned_made PC_STARTUP_DATA; /* an aligned mapping was made before */

/* size bytes alone: true when that is the answer (*first aligned, or NULL:
 * refused); false with *first the unaligned place, already unmapped. */
static bool os_mmap_exact_first(size_t size, size_t align, char **first)
{
	*first = os_mmap_anon(size);
	if (*first == NULL || ((uintptr_t)*first & (align - 1)) == 0)
		return true;
	munmap(*first, size);
	return false;
}

static void *os_mmap_aligned(size_t size, size_t align)
{
	size_t over = size + align - PC_PAGE_SIZE;
	if (over < size)
		return NULL; /* overflow */
	char *first = NULL;
	/* relaxed: a guess at where the kernel will place the mapping; a
	 * stale value costs system calls, never correctness. */
	bool tried = pc_load_relaxed(&os_aligned_made) != 0;
	if (tried && os_mmap_exact_first(size, align, &first))
		return first;
	char *raw = os_mmap_anon(over);
	if (raw == NULL) {
		if (!tried && os_mmap_exact_first(size, align, &first))
			return first;
		char *up = (char *)pc_align_up((uintptr_t)first, align);
		char *p = os_mmap_exactly_at(up, size);
		return p ? p : os_mmap_exactly_at(up - align, size);
	}
	char *p = (char *)pc_align_up((uintptr_t)raw, align);
	size_t head = (size_t)(p - raw), tail = over - head - size;
	if (head != 0)
		munmap(raw, head);
	if (tail != 0)
		munmap(p + size, tail);
	pc_store_relaxed(&os_aligned_made, 1);
	return p;
}

void *os_map(size_t size, size_t align)
{
	pc_assert(size != 0 && size % PC_PAGE_SIZE == 0);
	pc_assert(pc_is_pow2(align));
	if (os_map_inject_now()) {
		errno = ENOMEM;
		return NULL;
	}
	int saved = errno;
	void *p = align <= PC_PAGE_SIZE ? os_mmap_anon(size) : os_mmap_aligned(size, align);
	errno = p != NULL ? saved : ENOMEM;
	return p;
}

void *os_map_at(void *at, size_t size)
{
	pc_assert(size != 0 && size % PC_PAGE_SIZE == 0 && ((uintptr_t)at & (PC_PAGE_SIZE - 1)) == 0);
	if (os_map_inject_now()) {
		errno = ENOMEM;
		return NULL;
	}
	int saved = errno;
	void *p = os_mmap_exactly_at(at, size);
	if (p)
		errno = saved;
	return p;
}

void os_unmap(void *p, size_t size)
{
	pc_assert(((uintptr_t)p & (PC_PAGE_SIZE - 1)) == 0);
	int saved = errno;
	/* Can fail only for a bad range (a caller bug) or when splitting a
	 * mapping exceeds vm.max_map_count; the range then stays mapped, which
	 * wastes address space but is safe. */
	munmap(p, size);
	errno = saved;
}

#if defined(__SANITIZE_THREAD__)
#define OS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define OS_TSAN 1
#endif
#endif

#ifdef OS_TSAN
/* ThreadSanitizer does not intercept mremap (google/sanitizers#1099): pages
 * it moves or adds keep the shadow of whatever was at their new address
 * before, which it then reports as races with the new owner. So in TSan
 * builds a mapping grows by a new mapping (whose shadow mmap's interceptor
 * resets), a copy and an unmap; it always moves. */
static void *remap_grow_copy(void *p, size_t old_size, size_t new_size)
{
	void *q = mmap(NULL, new_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (q == MAP_FAILED)
		return MAP_FAILED;
	memcpy(q, p, old_size);
	munmap(p, old_size);
	return q;
}
#endif

void *os_remap(void *p, size_t old_size, size_t new_size)
{
	pc_assert(((uintptr_t)p & (PC_PAGE_SIZE - 1)) == 0);
	if (os_map_inject_now()) {
		errno = ENOMEM;
		return NULL;
	}
	int saved = errno;
#ifdef OS_TSAN
	void *q = new_size > old_size ? remap_grow_copy(p, old_size, new_size)
				      : mremap(p, old_size, new_size, MREMAP_MAYMOVE);
#else
	void *q = mremap(p, old_size, new_size, MREMAP_MAYMOVE);
#endif
	if (q == MAP_FAILED) {
		errno = ENOMEM;
		return NULL;
	}
	errno = saved;
	return q;
}

int os_release(void *p, size_t size)
{
	pc_assert(((uintptr_t)p & (PC_PAGE_SIZE - 1)) == 0);
	return madvise(p, size, MADV_DONTNEED);
}

int os_release_lazy(void *p, size_t size)
{
	pc_assert(((uintptr_t)p & (PC_PAGE_SIZE - 1)) == 0);
	int saved = errno;
	if (madvise(p, size, MADV_FREE) == 0)
		return 0;
	if (errno != EINVAL) /* EINVAL: a kernel before 4.5 */
		return -1;
	errno = saved;
	return madvise(p, size, MADV_DONTNEED);
}

int os_advise_hugepage(void *p, size_t size)
{
	pc_assert(((uintptr_t)p & (PC_PAGE_SIZE - 1)) == 0);
	return madvise(p, size, MADV_HUGEPAGE);
}

/*
 * mbind(MPOL_PREFERRED) with a one-word node mask. The kernel drops one bit
 * of maxnode (a historical off-by-one kept for compatibility), so a 64-bit
 * mask is passed as maxnode = 65.
 */
int os_bind_node(void *p, size_t size, unsigned node)
{
	if (node >= os_numa_node_count() || node >= 64) {
		errno = EINVAL;
		return -1;
	}
	unsigned long mask = 1UL << node;
	long rc = syscall(SYS_mbind, p, size, OS_MPOL_PREFERRED, &mask,
			  sizeof(mask) * 8 + 1, 0);
	return rc == 0 ? 0 : -1;
}

/* /proc/self/statm is "size resident shared text lib data dt", in pages. */
size_t os_resident_bytes(void)
{
	char buf[128];
	unsigned long size, resident;
	int saved = errno;
	long n = os_read_file("/proc/self/statm", buf, sizeof(buf));
	errno = saved;
	const char *s = buf;
	if (n <= 0 || !os_parse_number(&s, ULONG_MAX, &size) || *s++ != ' ' ||
	    !os_parse_number(&s, ULONG_MAX, &resident))
		return 0;
	long page = sysconf(_SC_PAGESIZE);
	return (size_t)resident * (size_t)(page > 0 ? page : (long)PC_PAGE_SIZE);
}

/* ---- files and stderr ------------------------------------------------------------ */
/* Counts for tests (relaxed: ordered with nothing). */
static _Atomic unsigned long os_files_opened_count PC_STARTUP_DATA;
static _Atomic unsigned long os_file_reads_count PC_STARTUP_DATA;

unsigned long os_files_opened(void)
{
	return pc_load_relaxed(&os_files_opened_count);
}

unsigned long os_file_reads(void)
{
	return pc_load_relaxed(&os_file_reads_count);
}

/* one_line: a read(2) that ends a line and leaves room ends the file. */
static inline __attribute__((always_inline)) long os_read_small(const char *path, char *buf,
								 size_t cap, bool one_line)
{
	size_t len = 0;
	int fd;
	pc_add_relaxed(&os_files_opened_count, 1);
	do
		fd = open(path, O_RDONLY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return -1;
	while (len + 1 < cap) {
		pc_add_relaxed(&os_file_reads_count, 1);
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n > 0) {
			len += (size_t)n;
			if (one_line && len + 1 < cap && buf[len - 1] == '\n')
				break;
		} else if (n == 0) {
			break;
		} else if (errno != EINTR) {
			int err = errno;
			close(fd);
			errno = err;
			return -1;
		}
	}
	close(fd);
	buf[len] = '\0';
	return (long)len;
}

long os_read_file(const char *path, char *buf, size_t cap)
{
	return os_read_small(path, buf, cap, false);
}

long os_read_line(const char *path, char *buf, size_t cap)
{
	return os_read_small(path, buf, cap, true);
}

void os_write_stderr(const char *buf, size_t len)
{
	int saved = errno;
	while (len > 0) {
		ssize_t n = write(STDERR_FILENO, buf, len);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else {
			break; /* stderr closed or broken: nothing better to do */
		}
	}
	errno = saved;
}

/* ---- futex --------------------------------------------------------------------- */
void os_futex_wait(_Atomic uint32_t *word, uint32_t expected)
{
	int saved = errno;
	/* EAGAIN (word already changed) and EINTR are both plain returns: the
	 * caller re-checks its condition in a loop. */
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected,
		NULL, NULL, 0);
	errno = saved;
}

void os_futex_wait_timeout(_Atomic uint32_t *word, uint32_t expected, uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u) };
	int saved = errno;
	/* A relative timeout; EAGAIN, EINTR and ETIMEDOUT are plain returns. */
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, &ts, NULL, 0);
	errno = saved;
}

int os_futex_wake(_Atomic uint32_t *word, int n)
{
	int saved = errno;
	long rc = syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, n,
			  NULL, NULL, 0);
	errno = saved;
	return rc < 0 ? 0 : (int)rc;
}

/* ---- time, threads, environment ------------------------------------------------ */
uint64_t os_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void os_yield(void)
{
	sched_yield();
}

int os_thread_start(void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int rc = pthread_attr_init(&attr);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, (size_t)256 << 10);
	sigfillset(&all);
	pthread_t t;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
	/* The new thread's mask only: the caller's stays as it is, so a caller
	 * that got stuck in pthread_create can still be stopped by a signal. */
	(void)old;
	if (pthread_attr_setsigmask_np(&attr, &all) == 0) {
		rc = pthread_create(&t, &attr, fn, arg);
		pthread_attr_destroy(&attr);
		if (rc != 0) {
			errno = rc;
			return -1;
		}
		return 0;
	}
#endif
	pthread_sigmask(SIG_SETMASK, &all, &old); /* the new thread inherits it */
	rc = pthread_create(&t, &attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	return 0;
}

void os_thread_set_name(const char *name)
{
	(void)prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}

bool os_single_threaded(void)
{
#ifdef OS_HAVE_SINGLE_THREADED
	return __libc_single_threaded != 0;
#else
	return true; /* unknown: the safe answer (no thread of our own) */
#endif
}

/* The "Seccomp:" line of /proc/self/status is not 0; *known: it was read. */
static bool os_seccomp_read(bool *known)
{
	char buf[4096];
	int saved = errno;
	long n = os_read_file("/proc/self/status", buf, sizeof(buf));
	errno = saved;
	const char *s = n > 0 ? strstr(buf, "\nSeccomp:") : NULL;
	*known = s != NULL;
	if (!s)
		return true; /* unreadable, or cut short before the line: assume the worst */
	s += sizeof("\nSeccomp:") - 1;
	while (*s == ' ' || *s == '\t')
		s++;
	return *s != '0';
}

/* A filter can never be taken off (and a fork child inherits it): once seen,
 * the answer stays (relaxed: a stale false only costs one more read). */
static _Atomic bool seccomp_seen;

bool os_seccomp_filtered(void)
{
	if (pc_load_relaxed(&seccomp_seen))
		return true;
	bool known, filtered = os_seccomp_read(&known);
	if (filtered && known)
		pc_store_relaxed(&seccomp_seen, true);
	return filtered;
}

/* Not cached: a cached id would be wrong in the child after fork(). */
uint32_t os_thread_id(void)
{
	return (uint32_t)gettid();
}

/* glibc's getenv only scans environ (NULL before libc set it up): it never
 * allocates, so it is safe inside malloc. */
const char *os_getenv(const char *name)
{
	return getenv(name);
}

static size_t format_put(char *buf, size_t size, size_t at, const char *s)
{
	while (*s && at + 1 < size)
		buf[at++] = *s++;
	return at;
}

void os_format_u(char *buf, size_t size, const char *prefix, unsigned value, const char *suffix)
{
	char digits[12]; /* 4294967295 */
	size_t nd = sizeof(digits) - 1;
	digits[nd] = '\0';
	do {
		digits[--nd] = (char)('0' + value % 10);
		value /= 10;
	} while (value);
	size_t at = format_put(buf, size, 0, prefix);
	at = format_put(buf, size, at, digits + nd);
	at = format_put(buf, size, at, suffix);
	buf[at] = '\0';
}
