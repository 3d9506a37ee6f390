/*
 * tests/malloc/test_sizes.c - medium and large blocks of every size in a
 * range, through malloc and realloc, contents checked.
 *
 * For every page count from 2 to 160 (8 KiB .. 640 KiB, across the medium
 * limit of 256 KiB) and a few byte offsets around each page boundary: malloc,
 * fill with a pattern keyed by the block, then realloc down (to a third, to
 * just below, to 3/4) and up (to just above, to twice, to four times), and
 * check after each step that the bytes kept are the bytes written. Blocks of
 * the previous sizes stay alive meanwhile (a window of 8), so that realloc
 * meets both free and busy neighbours. Runs on any malloc.
 */
#define _GNU_SOURCE
#include "malloc_test.h"

#define WINDOW 8

static char *live[WINDOW];
static size_t live_size[WINDOW];

static void fill(char *p, size_t n, unsigned key)
{
	for (size_t i = 0; i + 1 < n; i += 61)
		p[i] = (char)(key + i / 61);
	p[n - 1] = (char)(key ^ 0x5a);
}

/* Bytes [0, n) of a block filled for m >= n bytes with key: 1 if intact
 * (the last byte of the m only when n == m). */
static int check(const char *p, size_t n, size_t m, unsigned key)
{
	for (size_t i = 0; i + 1 < n; i += 61)
		if (p[i] != (char)(key + i / 61))
			return 0;
	return n < m || p[n - 1] == (char)(key ^ 0x5a);
}

/* realloc p (filled for *size bytes with key) to n bytes; check and refill. */
static char *resize(char *p, size_t *size, size_t n, unsigned key, long *damaged)
{
	char *q = p_realloc(p, n);
	REQUIRE(q != NULL);
	if (!check(q, (*size < n ? *size : n), *size, key))
		(*damaged)++;
	CHECK(p_usable(q) >= n);
	fill(q, n, key);
	*size = n;
	return q;
}

TEST(every_size_with_realloc)
{
	long damaged = 0, blocks = 0;
	unsigned key = 1;
	for (size_t pages = 2; pages <= 160; pages++) {
		static const long offsets[] = { -1, 0, 1, 100 };
		for (size_t k = 0; k < sizeof(offsets) / sizeof(offsets[0]); k++, key++) {
			size_t n = (size_t)((long)(pages * 4096) + offsets[k]);
			char *p = p_malloc(n);
			REQUIRE(p != NULL);
			CHECK(p_usable(p) >= n);
			fill(p, n, key);
			size_t size = n;
			size_t steps[] = { n / 3 + 8193, n - 4096, n * 3 / 4, n + 1, n * 2, n * 4, n };
			for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++)
				p = resize(p, &size, steps[s], key, &damaged);
			unsigned slot = key % WINDOW;
			if (live[slot] && !check(live[slot], live_size[slot], live_size[slot], key - WINDOW))
				damaged++;
			p_free(live[slot]);
			live[slot] = p;
			live_size[slot] = size;
			blocks++;
		}
	}
	for (unsigned i = 0; i < WINDOW; i++)
		p_free(live[i]);
	CHECK_EQ(damaged, 0);
	printf("sizes: %ld blocks, each through 7 reallocs, %ld damaged\n", blocks, damaged);
}

int main(void)
{
	RUN(malloc_interposed);
	RUN(every_size_with_realloc);
	return test_report();
}
