/*
 * tests/malloc/test_rounds.c - with the default options, memory freed in one
 * round is reused without new page faults in the next (issue 9 item 1;
 * seed 002's Tests A and D: allocate many objects, free them all, again).
 *
 * Default options but the delay, an hour (ENV in tests/CMakeLists.txt), so
 * that nothing is released by age while the test runs and no verdict
 * depends on timing. vm.release_thread is auto (2): the background thread
 * starts only once a zone's free pool outgrows its floor
 * (vm.release_watermark_kb, 64 MiB), and from then on the pool may keep
 * what the recent peak of use allows.
 *
 *   small_no_thread  16 MiB of 4 KiB blocks, twice: no thread is started
 *                    (/proc/self/status), a small program keeps none.
 *   large_rounds     three rounds of 128 MiB of 1 MiB blocks, each touched
 *                    and freed: the first frees go over the floor (released
 *                    at once, the thread wanted), a malloc slow path starts
 *                    one thread; the third round takes (almost) no minor
 *                    page faults (getrusage).
 *   small_rounds     the same with 128 MiB of 4 KiB blocks (slab objects):
 *                    the second round already reuses the pool.
 *   trim_at_once     malloc_trim(0) still gives the pool back at once.
 * On another malloc (no pcmalloc_ctl_set) the rounds run without checks.
 */
#define _GNU_SOURCE
#include "malloc_test.h"

#include <sys/resource.h>

#define POOL (128 * MiB)
#define MAX_PTRS (POOL / (4 * KiB))

static void *ptrs[MAX_PTRS];
static int (*ctl_set)(const char *, long);

static long minor_faults(void)
{
	struct rusage ru;
	REQUIRE(getrusage(RUSAGE_SELF, &ru) == 0);
	return ru.ru_minflt;
}

static int thread_count(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	REQUIRE(f != NULL);
	char line[256];
	int n = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

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

TEST(large_rounds)
{
	long f[3];
	for (int r = 0; r < 3; r++)
		f[r] = round_of(POOL, MiB, 0x10 + r);
	printf("rounds: 128 MiB of 1 MiB: %ld, %ld, %ld minor faults; threads %d -> %d\n", f[0], f[1],
	       f[2], t0, thread_count());
	if (!ctl_set)
		return;
	CHECK_EQ(thread_count(), t0 + 1); /* auto: started once the pool outgrew the floor */
	CHECK(f[2] < (long)(POOL / 4096) / 16);
}

TEST(small_rounds)
{
	long f[2];
	for (int r = 0; r < 2; r++)
		f[r] = round_of(POOL, 4 * KiB, 0x20 + r);
	printf("rounds: 128 MiB of 4 KiB: %ld, %ld minor faults\n", f[0], f[1]);
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

int main(void)
{
	*(void **)&ctl_set = dlsym(RTLD_DEFAULT, "pcmalloc_ctl_set");
	if (expect_all())
		REQUIRE(ctl_set != NULL);
	RUN(malloc_interposed);
	RUN(small_no_thread);
	RUN(large_rounds);
	RUN(small_rounds);
	RUN(trim_at_once);
	return test_report();
}
