/*
 * tests/unit/malloc/huge_lookup.c - telling huge blocks from foreign
 * pointers never reads memory pcmalloc did not map.
 *
 *  foreign_pointer   a page-aligned pointer whose previous page is not
 *                    mapped at all: huge_header() says "not huge" (before
 *                    the table of live huge blocks, it read that page and
 *                    died of SIGSEGV); free() of it, in a child, aborts
 *                    with the allocator's message (SIGABRT), not SIGSEGV.
 *  live_and_freed    a huge block is found while live and not once freed
 *                    (its mapping is gone: the look-up must not touch it).
 *  realloc_moves     realloc of a huge block (mremap) to 4x its size: the
 *                    table follows the block wherever mremap put it.
 *  double_free       a second free of a huge block aborts (child).
 */
#define _GNU_SOURCE
#include "test.h"

#include "malloc/malloc.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs fn in a child with stderr silenced; returns the signal it died of
 * (0 if it exited). */
static int child_signal(void (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		if (fd >= 0)
			dup2(fd, 2);
		fn(arg);
		_exit(0);
	}
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

static void free_it(void *p)
{
	pc_free(p);
}

static void free_twice(void *p)
{
	pc_free(p);
	pc_free(p);
}

TEST(foreign_pointer)
{
	REQUIRE(pc_malloc_init());
	char *m = mmap(NULL, 2 * PC_PAGE_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	REQUIRE(m != MAP_FAILED);
	REQUIRE(munmap(m, PC_PAGE_SIZE) == 0); /* nothing mapped before p */
	char *p = m + PC_PAGE_SIZE;
	CHECK(pc_page_of(p) == NULL);
	CHECK(huge_header(p) == NULL);
	CHECK_EQ(child_signal(free_it, p), SIGABRT);
	munmap(p, PC_PAGE_SIZE);
}

TEST(live_and_freed)
{
	size_t size = PC_LARGE_MAX + 3 * PC_PAGE_SIZE + 5;
	char *p = pc_malloc(size);
	REQUIRE(p != NULL);
	CHECK(huge_header(p) != NULL);
	CHECK(huge_table_contains(p));
	p[size - 1] = 1;
	pc_free(p);
	CHECK(!huge_table_contains(p));
	CHECK(huge_header(p) == NULL);
}

TEST(realloc_moves)
{
	size_t size = PC_LARGE_MAX * 2;
	char *p = pc_malloc(size);
	REQUIRE(p != NULL);
	memset(p, 0x3c, size);
	char *guard = pc_malloc(size); /* makes growing in place less likely */
	REQUIRE(guard != NULL);
	char *q = pc_realloc(p, 4 * size);
	REQUIRE(q != NULL);
	CHECK(huge_header(q) != NULL);
	if (q != p)
		CHECK(!huge_table_contains(p));
	size_t bad = 0;
	for (size_t i = 0; i < size; i += 4096)
		bad += q[i] != 0x3c;
	CHECK_EQ(bad, 0);
	pc_free(q);
	pc_free(guard);
	CHECK(huge_header(q) == NULL);
}

TEST(double_free)
{
	char *p = pc_malloc(PC_LARGE_MAX * 2);
	REQUIRE(p != NULL);
	CHECK_EQ(child_signal(free_twice, p), SIGABRT);
	pc_free(p);
}

int main(void)
{
	RUN(foreign_pointer);
	RUN(live_and_freed);
	RUN(realloc_moves);
	RUN(double_free);
	return test_report();
}
