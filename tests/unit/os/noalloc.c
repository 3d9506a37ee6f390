/*
 * tests/unit/os/noalloc.c - the platform layer never calls malloc.
 *
 * This executable replaces malloc, calloc, realloc and free with versions
 * that count calls while `counting` is set and forward to glibc's
 * __libc_* functions. It then runs every os.h function, os_init's first call
 * included, and checks that the count stayed 0. Sanitizer builds replace
 * malloc themselves, so there the test only says it was skipped.
 */
#define _GNU_SOURCE
#include "os/os.h"
#include "test.h"

#include <errno.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NOALLOC_SKIP 1
#else
#define NOALLOC_SKIP 0

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static _Atomic int counting;
static _Atomic unsigned long alloc_calls;

static void count_call(void)
{
	if (atomic_load_explicit(&counting, memory_order_relaxed))
		atomic_fetch_add_explicit(&alloc_calls, 1, memory_order_relaxed);
}

void *malloc(size_t n)
{
	count_call();
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	count_call();
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	count_call();
	return __libc_realloc(p, n);
}

void free(void *p)
{
	count_call();
	__libc_free(p);
}
#endif

/* Every os.h entry point once; os_init first (its first call does the work). */
static void exercise_os(void)
{
	char buf[256];
	_Atomic uint32_t w = 1;
	os_init();
	os_init();
	(void)os_cpu_count();
	(void)os_numa_node_count();
	(void)os_cpu_to_node(0);
	(void)os_cpu_current();
	(void)os_cpu_current_slow();
	(void)os_rseq_active();
	void *p = os_map(4 << 20, 4 << 20);
	if (p != NULL) {
		((char *)p)[0] = 1;
		os_bind_node(p, 4 << 20, 0);
		os_release(p, 4 << 20);
		os_unmap(p, 4 << 20);
	}
	os_inject_map_failures(0, 1);
	(void)os_map(4096, 4096);
	(void)os_injected_failures();
	(void)os_resident_bytes();
	(void)os_physical_memory();
	(void)os_read_file("/proc/self/statm", buf, sizeof(buf));
	uint64_t mask[1];
	(void)os_parse_cpulist("0-3", mask, 64);
	os_futex_wait(&w, 0);
	os_futex_wake(&w, 1);
	(void)os_now_ns();
	os_yield();
	(void)os_thread_id();
	(void)os_getenv("HOME");
	os_write_stderr("noalloc: stderr write\n", 22);
	pc_message("noalloc: message %d %s %zu %p", 1, "two", (size_t)3, (void *)buf);
}

TEST(no_malloc)
{
#if NOALLOC_SKIP
	fprintf(stderr, "note: sanitizer build replaces malloc: skipped\n");
	exercise_os();
#else
	atomic_store(&counting, 1);
	exercise_os();
	atomic_store(&counting, 0);
	CHECK_EQ(atomic_load(&alloc_calls), 0);
	/* The counter works: a real malloc is seen. */
	atomic_store(&counting, 1);
	void *volatile q = malloc(16);
	atomic_store(&counting, 0);
	free(q);
	CHECK_EQ(atomic_load(&alloc_calls), 1);
#endif
}

int main(void)
{
	RUN(no_malloc); /* first: os_init must not have run yet */
	return test_report();
}
