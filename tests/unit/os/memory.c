/*
 * tests/unit/os/memory.c - os_map / os_map_at / os_unmap / os_release /
 * os_bind_node / os_resident_bytes and map fault injection.
 *
 * Mapping sizes are measured with /proc/self/statm (total and resident
 * pages), so a test sees exactly what the kernel mapped: aligned mappings
 * must have their head and tail trimmed. Worker threads record results in
 * atomics; only the main thread calls CHECK.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "os/os.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)

static bool is_mapped(const void *p)
{
	unsigned char v;
	return mincore((void *)((uintptr_t)p & ~(PC_PAGE_SIZE - 1)), PC_PAGE_SIZE, &v) == 0;
}

/* Map, check alignment, writability, errno and the exact size mapped. */
static void check_map(size_t size, size_t align)
{
	size_t before = mapped_bytes();
	errno = 4242;
	char *p = os_map(size, align);
	int err = errno;
	size_t after = mapped_bytes();
	CHECK(p != NULL);
	if (p == NULL)
		return;
	CHECK_EQ(err, 4242);
	CHECK_EQ((uintptr_t)p % align, 0);
	CHECK_EQ(after - before, size); /* head and tail trimmed */
	CHECK(p[0] == 0 && p[size - 1] == 0);
	p[0] = 1;
	p[size / 2] = 2;
	p[size - 1] = 3;
	CHECK(p[0] == 1 && p[size / 2] == 2 && p[size - 1] == 3);
	errno = 4343;
	os_unmap(p, size);
	CHECK_EQ(errno, 4343);
	CHECK(!is_mapped(p) && !is_mapped(p + size - 1));
	CHECK_EQ(mapped_bytes(), before);
}

TEST(map_aligned)
{
	check_map(PC_PAGE_SIZE, PC_PAGE_SIZE);
	check_map(PC_PAGE_SIZE, 1); /* below a page: page aligned */
	check_map(3 * PC_PAGE_SIZE, 64 * 1024);
	check_map(2 * MiB, 2 * MiB);
	check_map(4 * MiB, 4 * MiB);
	check_map(12 * MiB, 4 * MiB);
	check_map(64 * MiB, 64 * MiB);
	check_map(PC_PAGE_SIZE, 64 * MiB);
}

TEST(map_too_large)
{
	errno = 0;
	CHECK(os_map((size_t)1 << 62, PC_PAGE_SIZE) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(os_map(SIZE_MAX - PC_PAGE_SIZE + 1, 4 * MiB) == NULL); /* overflow */
	CHECK_EQ(errno, ENOMEM);
}

/* os_map_at: exactly there when the range is free (errno kept); EEXIST,
 * the mapping there untouched and nothing new mapped, when any page of it
 * is taken; ENOMEM when injected (one call of the window). */
TEST(map_at)
{
	char *hole = os_map(4 * MiB, MiB);
	REQUIRE(hole != NULL);
	os_unmap(hole, 4 * MiB);
	errno = 4242;
	char *p = os_map_at(hole + MiB, MiB);
	CHECK(p == hole + MiB);
	CHECK_EQ(errno, 4242);
	if (p == NULL)
		return;
	p[0] = 1;
	p[MiB - 1] = 2;
	size_t before = mapped_bytes();
	CHECK(os_map_at(hole + MiB, MiB) == NULL); /* the same range */
	CHECK_EQ(errno, EEXIST);
	CHECK(os_map_at(hole, 2 * MiB) == NULL);   /* overlaps its first half */
	CHECK_EQ(errno, EEXIST);
	CHECK_EQ(mapped_bytes(), before);
	CHECK(p[0] == 1 && p[MiB - 1] == 2);
	os_inject_map_failures(0, 1);
	CHECK(os_map_at(hole, MiB) == NULL);      /* free, but refused */
	CHECK_EQ(errno, ENOMEM);
	os_inject_map_failures(0, 0);
	CHECK(!is_mapped(hole));
	os_unmap(p, MiB);
}

TEST(unmap_part)
{
	char *p = os_map(4 * PC_PAGE_SIZE, PC_PAGE_SIZE);
	REQUIRE(p != NULL);
	os_unmap(p + PC_PAGE_SIZE, PC_PAGE_SIZE);
	CHECK(is_mapped(p) && !is_mapped(p + PC_PAGE_SIZE) && is_mapped(p + 2 * PC_PAGE_SIZE));
	p[3 * PC_PAGE_SIZE] = 1;
	os_unmap(p, PC_PAGE_SIZE);
	os_unmap(p + 2 * PC_PAGE_SIZE, 2 * PC_PAGE_SIZE);
	CHECK(!is_mapped(p) && !is_mapped(p + 3 * PC_PAGE_SIZE));
}

/* ---- fault injection ---------------------------------------------------------------- */
TEST(inject_window)
{
	void *p[6];
	unsigned long base = os_injected_failures();
	os_inject_map_failures(2, 3);
	for (int i = 0; i < 6; i++) {
		errno = 77;
		p[i] = os_map(PC_PAGE_SIZE, PC_PAGE_SIZE);
		if (i < 2 || i == 5) {
			CHECK(p[i] != NULL);
			CHECK_EQ(errno, 77);
		} else {
			CHECK(p[i] == NULL);
			CHECK_EQ(errno, ENOMEM);
		}
	}
	CHECK_EQ(os_injected_failures() - base, 3);
	for (int i = 0; i < 6; i++)
		if (p[i] != NULL)
			os_unmap(p[i], PC_PAGE_SIZE);
	/* (0, n) fails the very next call; (0, 0) clears a pending window. */
	os_inject_map_failures(0, 1);
	CHECK(os_map(PC_PAGE_SIZE, 4 * MiB) == NULL);
	os_inject_map_failures(0, 5);
	os_inject_map_failures(0, 0);
	void *q = os_map(PC_PAGE_SIZE, PC_PAGE_SIZE);
	CHECK(q != NULL);
	if (q != NULL)
		os_unmap(q, PC_PAGE_SIZE);
	CHECK_EQ(os_injected_failures() - base, 4);
}

#define INJ_THREADS 4
#define INJ_CALLS   600
#define INJ_SKIP    300
#define INJ_FAIL    1000
static _Atomic unsigned inj_null, inj_errno_bad;

static void *inject_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < INJ_CALLS; i++) {
		void *p = os_map(PC_PAGE_SIZE, PC_PAGE_SIZE);
		if (p == NULL) {
			atomic_fetch_add(&inj_null, 1);
			if (errno != ENOMEM)
				atomic_fetch_add(&inj_errno_bad, 1);
		} else {
			os_unmap(p, PC_PAGE_SIZE);
		}
	}
	return NULL;
}

/* Every call consumes exactly one slot, whichever thread makes it. */
TEST(inject_threads)
{
	pthread_t t[INJ_THREADS];
	unsigned long base = os_injected_failures();
	os_inject_map_failures(INJ_SKIP, INJ_FAIL);
	for (int i = 0; i < INJ_THREADS; i++)
		REQUIRE(pthread_create(&t[i], NULL, inject_thread, NULL) == 0);
	for (int i = 0; i < INJ_THREADS; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(atomic_load(&inj_null), INJ_FAIL);
	CHECK_EQ(atomic_load(&inj_errno_bad), 0);
	CHECK_EQ(os_injected_failures() - base, INJ_FAIL);
	void *p = os_map(PC_PAGE_SIZE, PC_PAGE_SIZE); /* window used up */
	CHECK(p != NULL);
	if (p != NULL)
		os_unmap(p, PC_PAGE_SIZE);
}

/* ---- release and resident size ------------------------------------------------------ */
TEST(release)
{
	size_t size = 64 * MiB;
	unsigned char *p = os_map(size, 2 * MiB);
	REQUIRE(p != NULL);
	size_t r0 = os_resident_bytes();
	memset(p, 0xab, size);
	size_t r1 = os_resident_bytes();
	errno = 99;
	CHECK_EQ(os_release(p, size), 0);
	CHECK_EQ(errno, 99);
	size_t r2 = os_resident_bytes();
	CHECK(r0 > 0);
	CHECK(r1 >= r0 + 32 * MiB);
	CHECK(r2 + 32 * MiB <= r1);
	size_t nonzero = 0;
	for (size_t i = 0; i < size; i += 8)
		nonzero += *(uint64_t *)(p + i) != 0;
	CHECK_EQ(nonzero, 0);
	p[12345] = 7; /* still mapped and writable */
	CHECK_EQ(p[12345], 7);
	os_unmap(p, size);
	/* An unmapped range fails with the kernel's errno. */
	errno = 0;
	CHECK_EQ(os_release(p, size), -1);
	CHECK_EQ(errno, ENOMEM);
}

TEST(resident_bytes)
{
	size_t r = os_resident_bytes();
	CHECK(r > 0);
	CHECK_EQ(r % (size_t)sysconf(_SC_PAGESIZE), 0);
	CHECK(r < mapped_bytes() + PC_PAGE_SIZE);
	size_t phys = os_physical_memory();
	CHECK(phys >= 16 * MiB);
	CHECK(phys >= r);
}

/* ---- NUMA binding ------------------------------------------------------------------- */
TEST(bind_node)
{
	size_t size = 4 * MiB;
	char *p = os_map(size, size);
	REQUIRE(p != NULL);
	int rc = os_bind_node(p, size, 0);
	if (rc != 0 && (errno == ENOSYS || errno == EPERM)) {
		fprintf(stderr, "note: mbind refused here (errno %d): skipped\n", errno);
	} else {
		CHECK_EQ(rc, 0);
		int mode = -1;
		unsigned long mask = 0;
		long g = syscall(SYS_get_mempolicy, &mode, &mask, sizeof(mask) * 8 + 1,
				 p, 2 /* MPOL_F_ADDR */);
		CHECK_EQ(g, 0);
		CHECK_EQ(mode, 1 /* MPOL_PREFERRED */);
		CHECK_EQ(mask, 1);
		memset(p, 1, size); /* pages fault in under the policy */
	}
	errno = 0;
	CHECK_EQ(os_bind_node(p, size, os_numa_node_count()), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(os_bind_node(p, size, 1000), -1);
	os_unmap(p, size);
}

int main(void)
{
	os_init();
	RUN(map_aligned);
	RUN(map_too_large);
	RUN(map_at);
	RUN(unmap_part);
	RUN(inject_window);
	RUN(inject_threads);
	RUN(release);
	RUN(resident_bytes);
	RUN(bind_node);
	return test_report();
}
