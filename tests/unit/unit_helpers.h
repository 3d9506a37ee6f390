/*
 * tests/unit/unit_helpers.h - helpers shared by several unit tests under
 * tests/unit/<layer>/: the CPUs a test may use (ranks in the process's
 * initial affinity mask) and pinning to one, setting an option at run time,
 * zone look-ups and free-page totals, the "everything is coalesced" check,
 * the mapped size of the process, and the iteration scaling, clock and hang
 * watchdog of the lock tests. Static inline, so a test pays only for what it
 * calls. Include after test.h; the file must define _GNU_SOURCE (for
 * sched_setaffinity) before any include. Also: dirty page totals, minor
 * faults, page touches and residency (the release and huge-block tests), a
 * child process run (the tests under a limit on address space).
 */
#ifndef PC_UNIT_HELPERS_H
#define PC_UNIT_HELPERS_H

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before any include to use unit/unit_helpers.h"
#endif

#include "ctl/options.h"
#include "os/os.h"
#include "page/page.h"
#include "test.h"

#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- CPUs and options -------------------------------------------------- */

/*
 * CPUs. A test names CPUs by their rank in the process's initial affinity
 * mask (read once, before main, by test_cpus_read), not by number: in a
 * cpuset without CPU 0 (`taskset -c 1`, a container) the first CPU a test
 * may use is another. test_cpu(n) is the number of the n-th allowed CPU,
 * the index of its per-CPU structures (pcp[], cpu[], the medium cache's).
 */
static cpu_set_t test_cpus_allowed;
static unsigned test_cpus_count;

__attribute__((constructor)) static void test_cpus_read(void)
{
	CPU_ZERO(&test_cpus_allowed);
	if (sched_getaffinity(0, sizeof(test_cpus_allowed), &test_cpus_allowed) != 0)
		CPU_SET(0, &test_cpus_allowed); /* unknown: as before, CPU 0 */
	test_cpus_count = (unsigned)CPU_COUNT(&test_cpus_allowed);
}

/* The number of CPUs the process may run on (its initial mask). */
static inline unsigned test_cpus(void)
{
	return test_cpus_count;
}

/* The number of the n-th (from 0) CPU of the initial mask; -1 if fewer. */
static inline int test_cpu(unsigned n)
{
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &test_cpus_allowed) && n-- == 0)
			return c;
	return -1;
}

/* Pin the calling thread to the n-th CPU of the initial mask (test_cpu(n)),
 * and wait until os_cpu_current() says so. False when the process has no
 * such CPU (a test that needs two then skips that part) or the pin failed. */
static inline bool pin_cpu(unsigned n)
{
	int cpu = test_cpu(n);
	if (cpu < 0)
		return false;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		return false;
	for (int i = 0; i < 1000 && os_cpu_current() != (unsigned)cpu; i++)
		sched_yield();
	return os_cpu_current() == (unsigned)cpu;
}

/* Let the calling thread run on every CPU of the initial mask again (and
 * on no other: a test under `taskset -c 1` stays off the CPUs it excluded). */
static inline void unpin_cpus(void)
{
	(void)sched_setaffinity(0, sizeof(test_cpus_allowed), &test_cpus_allowed);
}

/* Pin to the first CPU of the initial mask (test_cpu(0)), or say on stderr
 * that the caller skips (the pin failed) and return false:
 * `if (!pin_cpu0_or_skip()) return ...;`. */
static inline bool pin_cpu0_or_skip(void)
{
	if (pin_cpu(0))
		return true;
	fprintf(stderr, "cannot pin to the first allowed CPU: skipped\n");
	return false;
}

/* Set option o to v at run time; it must be accepted. */
static inline void set_opt(enum pc_option o, long v)
{
	REQUIRE(pc_option_set(o, v, false) == 0);
}

/* ---- zones -------------------------------------------------------------- */

/* The start of a page-layer test that counts pages: pinned to the first
 * allowed CPU (NULL, the test skipped, where it cannot be), the page
 * allocator started, nothing released on its own while the test runs
 * (an hour's delay, a 4 GiB watermark, the next pass planned a quarter
 * hour away); returns that CPU's preferred zone. */
static inline struct pc_zone *page_test_start(void)
{
	if (!pin_cpu0_or_skip())
		return NULL;
	pc_page_init();
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, 3600000);
	set_opt(PC_OPT_VM_RELEASE_WATERMARK_KB, 4L << 20);
	pc_page_release_due(); /* plans the next pass a quarter hour away */
	return pc_zone_preferred((unsigned)test_cpu(0));
}

/* A block of 2^order pages from zone z's lists (zone_alloc_block_locked:
 * kept = from a region that stays mapped), and its way back as dirty
 * memory, each under the zone's lock. */
static inline struct pc_page *zone_take(struct pc_zone *z, unsigned order, bool kept)
{
	pc_lock_acquire(&z->lock);
	struct pc_page *pg = zone_alloc_block_locked(z, order, kept);
	pc_lock_release(&z->lock);
	return pg;
}

static inline void zone_give(struct pc_zone *z, struct pc_page *pg, unsigned order)
{
	pc_lock_acquire(&z->lock);
	zone_free_block_locked(z, pg, order, PC_MEM_DIRTY);
	pc_lock_release(&z->lock);
}

/* The zone of the page allocator memory at p (which must be some). */
static inline struct pc_zone *zone_of(const void *p)
{
	struct pc_page *pg = pc_page_of(p);
	REQUIRE(pg != NULL);
	return pc_page_region(pg)->zone;
}

/* Free pages of zone z (buddy lists and run heap, read under its lock) plus
 * pages cached on its pcps. */
static inline size_t zone_free_total(struct pc_zone *z)
{
	pc_lock_acquire(&z->lock);
	size_t n = z->free_pages + z->run_free_pages; /* buddy lists and run heap */
	pc_lock_release(&z->lock);
	for (unsigned c = 0; c < os_cpu_count(); c++)
		n += (size_t)z->pcp[c].count;
	return n;
}

/* Free pages of every zone plus pages cached on every pcp. */
static inline size_t free_total(void)
{
	size_t n = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++)
		n += zone_free_total(pc_zone_get(i));
	return n;
}

/* stats.fallbacks summed over the zones. */
static inline uint64_t fallbacks_total(void)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++)
		n += atomic_load(&pc_zone_get(i)->stats.fallbacks);
	return n;
}

/* pc_page_check() passes and every zone is back to whole PC_MAX_ORDER
 * blocks: all its pages free, counted as top-order blocks. pcp_empty: also
 * check that no pcp of any zone caches a page. Reads without the locks. */
static inline void check_coalesced(bool pcp_empty)
{
	CHECK(pc_page_check());
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		CHECK_EQ(z->free_pages, z->managed_pages);
		/* chunks of the newest region not yet seeded count as top-order blocks */
		CHECK_EQ(z->free_area[PC_MAX_ORDER].nr_free + (z->seed_pages >> PC_MAX_ORDER),
			 z->managed_pages >> PC_MAX_ORDER);
		if (pcp_empty)
			for (unsigned c = 0; c < os_cpu_count(); c++)
				CHECK_EQ(z->pcp[c].count, 0);
	}
}

/* The same, reading the zone counters under the zone lock, and always
 * checking that the pcps are empty. lower_orders_empty: also check that no
 * block of an order below PC_MAX_ORDER is free. */
static inline void check_coalesced_locked(bool lower_orders_empty)
{
	CHECK(pc_page_check());
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		pc_lock_acquire(&z->lock);
		size_t managed = z->managed_pages, free_pages = z->free_pages;
		size_t top = z->free_area[PC_MAX_ORDER].nr_free + (z->seed_pages >> PC_MAX_ORDER);
		pc_lock_release(&z->lock);
		CHECK_EQ(free_pages, managed);
		CHECK_EQ(top, managed >> PC_MAX_ORDER);
		if (lower_orders_empty)
			for (unsigned o = 0; o < PC_MAX_ORDER; o++)
				CHECK_EQ(z->free_area[o].nr_free, 0);
		for (unsigned c = 0; c < os_cpu_count(); c++)
			CHECK_EQ(z->pcp[c].count, 0);
	}
}

/* Dirty free pages of every zone, read under the zone locks: on the buddy
 * lists (dirty_pages), or in free runs of the run heaps (run_dirty_pages). */
static inline size_t dirty_pages_total(bool runs)
{
	size_t n = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		pc_lock_acquire(&z->lock);
		n += runs ? z->run_dirty_pages : z->dirty_pages;
		pc_lock_release(&z->lock);
	}
	return n;
}

/* ---- the process -------------------------------------------------------- */

/* Minor page faults of the process so far (getrusage). */
static inline long minor_faults(void)
{
	struct rusage ru;
	REQUIRE(getrusage(RUSAGE_SELF, &ru) == 0);
	return ru.ru_minflt;
}

/* Write v to the first byte of every page of [p, p + n) (p page aligned):
 * each page touched once, as a program would fault it in. */
static inline void touch_pages(char *p, size_t n, char v)
{
	for (size_t i = 0; i < n; i += PC_PAGE_SIZE)
		p[i] = v;
}

/* Pages of [p, p + pages) resident (mincore; p page aligned). */
static inline size_t resident_pages(const void *p, size_t pages)
{
	unsigned char vec[256];
	size_t n = 0;
	for (size_t done = 0; done < pages; done += sizeof vec) {
		size_t part = pages - done < sizeof vec ? pages - done : sizeof vec;
		REQUIRE(mincore((char *)(uintptr_t)p + (done << PC_PAGE_SHIFT), part << PC_PAGE_SHIFT,
				vec) == 0);
		for (size_t i = 0; i < part; i++)
			n += vec[i] & 1;
	}
	return n;
}

/* Run fn in a forked child (for what must not touch the test process, such
 * as a limit on address space) and check that it exits with 0; its nonzero
 * exit code says which step failed. */
static inline void check_in_child(int (*fn)(void))
{
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(fn());
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
}

/* In a child that never had a second thread, auto mode: burst() takes the
 * memory past the release floor. 2: it did not want the release thread; 1:
 * a thread started anyway in a process that never had a second one; 0
 * also at once where a runtime (a sanitizer's) started a thread before
 * main. For check_in_child. */
static inline int single_thread_burst(void (*burst)(void))
{
	if (!os_single_threaded())
		return 0;
	burst();
	if (!pc_page_release_thread_wanted())
		return 2;
	return pc_page_release_thread_running() ? 1 : 0;
}

/* Size of the process's address space (statm), in bytes. */
static inline size_t mapped_bytes(void)
{
	char buf[128];
	REQUIRE(os_read_file("/proc/self/statm", buf, sizeof(buf)) > 0);
	return (size_t)strtoull(buf, NULL, 10) * (size_t)sysconf(_SC_PAGESIZE);
}

/* ---- the lock tests: iterations, time, watchdog ------------------------- */

/* n scaled for the build, divided by tsan_divisor under ThreadSanitizer,
 * and by PC_TEST_SCALE=<percent>; at least 1. */
static inline unsigned scaled(unsigned n, unsigned tsan_divisor)
{
#if defined(__SANITIZE_THREAD__)
	n /= tsan_divisor;
#else
	(void)tsan_divisor;
#endif
	const char *e = getenv("PC_TEST_SCALE");
	if (e != NULL && atoi(e) > 0)
		n = (unsigned)((uint64_t)n * (unsigned)atoi(e) / 100);
	return n > 0 ? n : 1;
}

/* CLOCK_MONOTONIC in milliseconds. */
static inline double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The message the watchdog prints (set by watchdog_install). */
static inline const char **watchdog_message(void)
{
	static const char *msg;
	return &msg;
}

/*
 * The watchdog detects hangs, not slowness: a test arms it with
 * watchdog_arm(seconds) and its workers call test_progress() as they go. When
 * the alarm rings, the test fails only if no progress was made during the
 * whole interval; otherwise the alarm is re-armed. So a machine that is merely
 * slow or overloaded (the lock tests run 64 threads on 2 cores beside other
 * work) never fails a test, and a deadlock still ends it. A test that never
 * calls test_progress() gets a plain time limit, as with alarm().
 */
static _Atomic unsigned long watchdog_progress_count;
static unsigned long watchdog_progress_seen;
static unsigned watchdog_interval_s;

static inline void test_progress(void)
{
	atomic_fetch_add_explicit(&watchdog_progress_count, 1, memory_order_relaxed);
}

static inline void watchdog(int sig)
{
	(void)sig;
	unsigned long now = atomic_load_explicit(&watchdog_progress_count, memory_order_relaxed);
	if (now != watchdog_progress_seen && watchdog_interval_s != 0) {
		watchdog_progress_seen = now; /* still moving: wait another interval */
		alarm(watchdog_interval_s);
		return;
	}
	const char *msg = *watchdog_message();
	(void)!write(2, msg, strlen(msg));
	_exit(2);
}

/* On SIGALRM (arm it with watchdog_arm or alarm), unless progress was made
 * since the last ring, write msg to stderr and exit with 2. */
static inline void watchdog_install(const char *msg)
{
	*watchdog_message() = msg;
	signal(SIGALRM, watchdog);
}

/* Ring after `seconds`, and every `seconds` while progress is made. */
static inline void watchdog_arm(unsigned seconds)
{
	watchdog_interval_s = seconds;
	watchdog_progress_seen = atomic_load_explicit(&watchdog_progress_count,
						      memory_order_relaxed);
	alarm(seconds);
}

#endif /* PC_UNIT_HELPERS_H */
