/*
 * tests/malloc/test_rounds.c - with the default options, memory freed in one
 * round is reused without new page faults in the next (issue 9 item 1;
 * seed 002's Tests A and D: allocate many objects, free them all, again),
 * in a process that has more than one thread.
 *
 * Default options but the delay, an hour (ENV in tests/CMakeLists.txt), so
 * that nothing is released by age while the test runs and no verdict
 * depends on timing. vm.release_thread is auto (2): the background thread
 * starts only once a zone's free pool outgrows its floor
 * (vm.release_watermark_kb, 64 MiB), only in a process that has had a
 * second thread, and from then on the pool may keep what the recent peak of
 * use allows. The rounds run pinned to one CPU (so in one zone's lists).
 *
 *   single_threaded  in a child forked before any thread: three rounds of
 *                    128 MiB of 1 MiB blocks start no thread
 *                    (/proc/self/status): its pool is the floor alone.
 *   small_no_thread  16 MiB of 4 KiB blocks, twice: no thread is started.
 *   small_rounds     (the process now has had a second thread) three rounds
 *                    of 128 MiB of 8 KiB blocks (slab objects), each page
 *                    written, all freed: a malloc slow path of these small
 *                    blocks starts exactly one thread, and the third round
 *                    takes fewer than 1/16 of its pages in minor faults
 *                    (getrusage).
 *   large_rounds     two rounds of 128 MiB of 1 MiB blocks: the second
 *                    reuses the pool likewise.
 *   trim_at_once     malloc_trim(0) still gives the pool back at once.
 * On another malloc (no pcmalloc_ctl_set) the rounds run without checks.
 */
#define _GNU_SOURCE
#include "malloc_test.h"

#include <pthread.h>
#include <sched.h>

#define POOL (128 * MiB)
#define MAX_PTRS (POOL / (4 * KiB))

static void *ptrs[MAX_PTRS];
static int (*ctl_set)(const char *, long);

/* One round: `bytes` in blocks of `size`, every page written, all freed.
 * Returns the minor faults it took. */
static long round_of(size_t bytes, size_t size, int pattern)
{
	size_t n = bytes / size;
	REQUIRE(n <= MAX_PTRS);
	long f0 = minor_faults();
	for (size_t i = 0; i < n; i++) {
		char *p = p_malloc(size);
		REQUIRE(p != NULL);
		for (size_t off = 0; off < size; off += 4096)
			p[off] = (char)pattern;
		ptrs[i] = p;
	}
	for (size_t i = 0; i < n; i++)
		p_free(ptrs[i]);
	return minor_faults() - f0;
}

/* The child of single_threaded: three rounds, its thread count before and
 * after them. */
static void single_threaded_rounds(void *out, const void *arg)
{
	(void)arg;
	int *counts = out;
	counts[0] = thread_count();
	for (int r = 0; r < 3; r++)
		round_of(POOL, MiB, 0x10 + r);
	counts[1] = thread_count();
}

TEST(single_threaded)
{
	int counts[2] = { -1, -1 };
	CHECK(run_in_child(single_threaded_rounds, NULL, counts, sizeof(counts)));
	printf("rounds: single-threaded child: threads %d -> %d\n", counts[0], counts[1]);
	if (ctl_set)
		CHECK_EQ(counts[1], counts[0]);
}

static int t0;

TEST(small_no_thread)
{
	t0 = thread_count();
	long f1 = round_of(16 * MiB, 4 * KiB, 1);
	long f2 = round_of(16 * MiB, 4 * KiB, 2);
	printf("rounds: 16 MiB of 4 KiB: %ld, %ld minor faults; threads %d -> %d\n", f1, f2, t0,
	       thread_count());
	if (ctl_set)
		CHECK_EQ(thread_count(), t0);
}

TEST(small_rounds)
{
	long f[3];
	for (int r = 0; r < 3; r++)
		f[r] = round_of(POOL, 8 * KiB, 0x20 + r);
	printf("rounds: 128 MiB of 8 KiB: %ld, %ld, %ld minor faults; threads %d -> %d\n", f[0], f[1],
	       f[2], t0, thread_count());
	if (!ctl_set)
		return;
	CHECK_EQ(thread_count(), t0 + 1); /* auto: started once the pool outgrew the floor */
	CHECK(f[2] < (long)(POOL / 4096) / 16);
}

TEST(large_rounds)
{
	long f[2];
	for (int r = 0; r < 2; r++)
		f[r] = round_of(POOL, MiB, 0x30 + r);
	printf("rounds: 128 MiB of 1 MiB: %ld, %ld minor faults\n", f[0], f[1]);
	if (!ctl_set)
		return;
	CHECK(f[1] < (long)(POOL / 4096) / 16);
	CHECK_EQ(thread_count(), t0 + 1); /* still the one thread */
}

TEST(trim_at_once)
{
	for (size_t i = 0; i < POOL / MiB; i++) {
		ptrs[i] = p_malloc(MiB);
		REQUIRE(ptrs[i] != NULL);
		memset(ptrs[i], 0x33, MiB);
	}
	for (size_t i = 0; i < POOL / MiB; i++)
		p_free(ptrs[i]);
	size_t r1 = rss_bytes();
	int rc = p_malloc_trim(0);
	size_t r2 = rss_bytes();
	printf("rounds: malloc_trim -> %d, RSS %zu -> %zu MiB\n", rc, r1 / MiB, r2 / MiB);
	if (!ctl_set)
		return;
	CHECK_EQ(rc, 1);
	CHECK(r2 + 100 * MiB <= r1);
}

static void *nothing(void *arg)
{
	return arg;
}

/* Under a seccomp filter (a container) auto starts no thread: the checks
 * that need it are left out. */
static int seccomp_filtered(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return 1;
	char line[256];
	int mode = 1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Seccomp: %d", &mode) == 1)
			break;
	fclose(f);
	return mode != 0;
}

int main(void)
{
	*(void **)&ctl_set = dlsym(RTLD_DEFAULT, "pcmalloc_ctl_set");
	if (expect_all())
		REQUIRE(ctl_set != NULL);
	RUN(malloc_interposed);
	RUN(single_threaded);
	/* A second thread, joined: the process is multi-threaded from now on. */
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, nothing, NULL) == 0);
	REQUIRE(pthread_join(t, NULL) == 0);
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
	(void)sched_setaffinity(0, sizeof(one), &one); /* best effort: one CPU, one zone */
	RUN(small_no_thread);
	if (seccomp_filtered()) {
		printf("rounds: under a seccomp filter: no release thread, rounds not checked\n");
		ctl_set = NULL;
	}
	RUN(small_rounds);
	RUN(large_rounds);
	RUN(trim_at_once);
	return test_report();
}
