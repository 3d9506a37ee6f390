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
 */
#ifndef PC_TEST_H
#define PC_TEST_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#endif /* PC_TEST_H */
