/*
 * docs/pages-cycleidle.c - a single-threaded program that cycles, then idles
 * (docs/pages.md, "2026-11-24 evening, helper release3"): ROUNDS rounds of
 * MB MiB of 4-64 KiB blocks (log-uniform), every page written, all freed;
 * then IDLE_MS of sleep, the RSS printed every 500 ms; then one malloc of
 * 1 MiB, written and freed (a slow path), and the RSS once more. Built with
 * -fno-builtin so that GCC keeps the last malloc/free pair.
 *
 *   cc -O2 -fno-builtin -pthread -Ibench -o /tmp/cycleidle docs/pages-cycleidle.c -lm
 *   LD_PRELOAD=build/libpcmalloc.so /tmp/cycleidle 512 2 1500
 */
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long rss_mb(void)
{
	return bench_rss_kb() / 1024;
}

static unsigned long long rng = 88172645463325252ull;

static unsigned long long next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

int main(int argc, char **argv)
{
	long mb = argc > 1 ? atol(argv[1]) : 512, rounds = argc > 2 ? atol(argv[2]) : 2;
	long idle_ms = argc > 3 ? atol(argv[3]) : 2000;
	size_t cap = ((size_t)mb << 20) / 4096 + 1;
	char **v = malloc(cap * sizeof(*v));
	for (long r = 0; r < rounds; r++) {
		size_t got = 0, n = 0;
		while (got < ((size_t)mb << 20) && n < cap) {
			size_t size = (size_t)(4096.0 * pow(16.0, (double)(next() % 1000) / 1000.0));
			v[n] = malloc(size);
			for (size_t i = 0; i < size; i += 4096)
				v[n][i] = 1;
			got += size;
			n++;
		}
		long peak = rss_mb();
		for (size_t i = 0; i < n; i++)
			free(v[n - 1 - i]);
		printf("round %ld: rss at peak %ld MB, after free %ld MB\n", r, peak, rss_mb());
	}
	for (long ms = 0; ms <= idle_ms; ms += 500) {
		printf("  idle %ld ms: %ld MB\n", ms, rss_mb());
		usleep(500000);
	}
	char *p = malloc(1 << 20);
	memset(p, 1, 1 << 20);
	free(p);
	printf("  after one malloc+free of 1 MiB: %ld MB\n", rss_mb());
	return 0;
}
