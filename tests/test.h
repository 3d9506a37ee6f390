/*
 * tests/test.h - a tiny harness: named checks, a pass/fail count, and a
 * deterministic random generator. Include once per test executable.
 *
 *   TEST(name) { CHECK(x == 1); CHECK_EQ(a, b); }
 *   int main(void) { RUN(name); return test_report(); }
 *
 * A failed CHECK prints file:line and the expression, marks the current test
 * failed and goes on; test_report() prints "N passed, N failed" and returns
 * the exit status.
 *
 * Death tests: test_in_child(body, arg, out, size) runs body(arg) in a forked
 * child with its stderr captured; test_aborted_with(status, out, needle) says
 * whether it died of SIGABRT having written needle:
 *   char err[1024];
 *   int st = test_in_child(free_twice, NULL, err, sizeof(err));
 *   CHECK(test_aborted_with(st, err, "double free detected"));
 */
#ifndef PC_TEST_H
#define PC_TEST_H

#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static int test_passed, test_failed, test_current_failed;
static const char *test_current = "";

#define TEST(name) static void test_##name(void)
#define RUN(name)                                                              \
	do {                                                                   \
		test_current = #name;                                          \
		test_current_failed = 0;                                       \
		fprintf(stderr, "[ RUN  ] %s\n", #name);                       \
		test_##name();                                                 \
		if (test_current_failed) {                                     \
			test_failed++;                                         \
			fprintf(stderr, "[ FAIL ] %s\n", #name);               \
		} else {                                                       \
			test_passed++;                                         \
			fprintf(stderr, "[  OK  ] %s\n", #name);               \
		}                                                              \
	} while (0)

#define CHECK(e)                                                               \
	do {                                                                   \
		if (!(e)) {                                                    \
			fprintf(stderr, "%s:%d: %s: CHECK(%s) failed\n",       \
				__FILE__, __LINE__, test_current, #e);         \
			test_current_failed = 1;                               \
		}                                                              \
	} while (0)

#define CHECK_EQ(a, b)                                                         \
	do {                                                                   \
		long long va_ = (long long)(a), vb_ = (long long)(b);          \
		if (va_ != vb_) {                                              \
			fprintf(stderr, "%s:%d: %s: %s == %s failed: %lld != %lld\n", \
				__FILE__, __LINE__, test_current, #a, #b, va_, vb_); \
			test_current_failed = 1;                               \
		}                                                              \
	} while (0)

/* Abort the whole run: for states where going on would only crash. */
#define REQUIRE(e)                                                             \
	do {                                                                   \
		if (!(e)) {                                                    \
			fprintf(stderr, "%s:%d: %s: REQUIRE(%s) failed\n",     \
				__FILE__, __LINE__, test_current, #e);         \
			exit(1);                                               \
		}                                                              \
	} while (0)

static inline int test_report(void)
{
	printf("%d passed, %d failed\n", test_passed, test_failed);
	return test_failed ? 1 : 0;
}

/* xorshift64*: deterministic, per-thread state supplied by the caller. */
static inline uint64_t test_rand(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/*
 * Run body(arg) in a forked child (core dumps off) whose stderr goes to a
 * pipe; the child exits 0 if body returns. out gets what the child wrote on
 * stderr, cut to size - 1 bytes and NUL-terminated. Returns the child's wait
 * status (waitpid). Buffered output is flushed first, so that the child
 * does not write the parent's again.
 */
static inline int test_in_child(void (*body)(void *), void *arg, char *out, size_t size)
{
	int fds[2];
	REQUIRE(size > 0 && pipe(fds) == 0);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct rlimit no_core = { 0, 0 };
		setrlimit(RLIMIT_CORE, &no_core);
		close(fds[0]);
		dup2(fds[1], STDERR_FILENO);
		body(arg);
		_exit(0);
	}
	close(fds[1]);
	size_t len = 0;
	ssize_t n;
	while (len < size - 1 && (n = read(fds[0], out + len, size - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(fds[0]);
	int status;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	return status;
}

/* Whether a child of test_in_child died of SIGABRT with needle in its
 * stderr (out); if not, prints what it did instead. */
static inline bool test_aborted_with(int status, const char *out, const char *needle)
{
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && strstr(out, needle))
		return true;
	fprintf(stderr, "  want SIGABRT and <<%s>>: status %#x, stderr <<%s>>\n", needle, status, out);
	return false;
}

/* Whether a child of test_in_child exited 0. */
static inline bool test_exited_ok(int status)
{
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

#ifdef _GNU_SOURCE
#include <sched.h>
/* Pin the calling thread to the CPU it runs on now, so that what it frees
 * and allocates next goes through one CPU's structures (sheaves, CPU slab). */
static inline void test_pin_here(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	int cpu = sched_getcpu();
	CPU_SET(cpu < 0 ? 0 : cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}
#endif

#endif /* PC_TEST_H */
