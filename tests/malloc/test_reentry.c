/*
 * tests/malloc/test_reentry.c - malloc re-entered from inside the allocator
 * must not deadlock, and free must not change errno.
 *
 * reentry: run with a preloaded library that uses up the first 32 pthread
 * keys. A thread's first wait on an allocator mutex arranges its thread-exit
 * cleanup with pthread_setspecific, which then allocates. This must happen
 * where the allocator holds no lock (it once ran under the CPU slab lock and
 * the nested malloc of the same size class spun on that lock forever).
 * errno_mlock: madvise fails on mlocked memory; frees that release memory to
 * the OS must still leave errno alone.
 */
#define _GNU_SOURCE
#include "malloc_test.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

/* Batches of 512-byte-class objects (the class of glibc's calloc(32, 16))
 * allocated and freed by fresh threads: slab slow paths that wait on
 * list_lock, each thread for the first time. */
static void *churn(void *arg)
{
	(void)arg;
	void *v[256];
	for (int r = 0; r < 300; r++) {
		for (int i = 0; i < 256; i++)
			v[i] = p_malloc(500);
		for (int i = 0; i < 256; i++)
			p_free(v[i]);
	}
	return NULL;
}

static void watchdog(int sig)
{
	(void)sig;
	static const char msg[] = "reentry: deadlock (watchdog fired)\n";
	write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

TEST(no_deadlock_when_libc_allocates_in_hooks)
{
	signal(SIGALRM, watchdog);
	alarm(120);
	for (int round = 0; round < 20; round++) {
		pthread_t t[8];
		for (int i = 0; i < 8; i++)
			REQUIRE(pthread_create(&t[i], NULL, churn, NULL) == 0);
		for (int i = 0; i < 8; i++)
			pthread_join(t[i], NULL);
	}
	alarm(0);
	CHECK(1); /* reaching here is the check: the watchdog fails a hang */
}

TEST(free_keeps_errno_when_release_fails)
{
	enum { N = 4000 };
	static void *v[N];
	char *locked = p_malloc(1 << 20);
	REQUIRE(locked);
	memset(locked, 1, 1 << 20);
	if (mlock(locked, 1 << 20) != 0) {
		fprintf(stderr, "  mlock not permitted here: skipped\n");
		p_free(locked);
		return;
	}
	p_free(locked); /* its pages stay locked: madvise on them fails */
	for (int i = 0; i < N; i++) { /* reuses the locked pages among others */
		v[i] = p_malloc(4096);
		REQUIRE(v[i]);
		memset(v[i], 1, 4096);
	}
	int bad = 0;
	for (int i = 0; i < N; i++) {
		errno = 12345;
		p_free(v[i]);
		bad += errno != 12345;
	}
	CHECK_EQ(bad, 0);
	munlockall();
}

int main(void)
{
	RUN(malloc_interposed);
	RUN(no_deadlock_when_libc_allocates_in_hooks);
	RUN(free_keeps_errno_when_release_fails);
	return test_report();
}
