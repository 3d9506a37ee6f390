/*
 * docs/pages-rounds.c - seed 002's Test A round by round: the minor page
 * faults of each round (docs/pages.md, "2026-11-24 evening, helper
 * release3"). For each size, ROUNDS rounds of OBJECTS objects: malloc each
 * and write its first byte (as bench/workloads/tests_af.c does), then free
 * them all. Prints per round the cycles per malloc, the minor faults of the
 * allocations and of the frees (getrusage), and the RSS at the round's peak
 * and after its frees (/proc/self/statm). Single-threaded.
 *
 *   cc -O2 -fno-builtin -pthread -Ibench -o /tmp/rounds docs/pages-rounds.c
 *   LD_PRELOAD=build/libpcmalloc.so /tmp/rounds 4096,8192,16384,32768 4
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <x86intrin.h>

static long minor_faults(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return u.ru_minflt;
}

static long rss_mb(void)
{
	return bench_rss_kb() / 1024;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rounds SIZE[,SIZE...] [ROUNDS (5)] [OBJECTS (10000)]\n");
		return 1;
	}
	long rounds = argc > 2 ? atol(argv[2]) : 5, n = argc > 3 ? atol(argv[3]) : 10000, total = 0;
	void **v = malloc((size_t)n * sizeof(*v));
	char *sizes = strdup(argv[1]);
	for (char *t = strtok(sizes, ","); t; t = strtok(NULL, ",")) {
		size_t size = strtoul(t, NULL, 0);
		for (long r = 0; r < rounds; r++) {
			long f0 = minor_faults();
			unsigned long long c0 = __rdtsc();
			for (long i = 0; i < n; i++) {
				v[i] = malloc(size);
				*(volatile char *)v[i] = 1;
			}
			unsigned long long c1 = __rdtsc();
			long f1 = minor_faults(), peak = rss_mb();
			for (long i = 0; i < n; i++)
				free(v[i]);
			long f2 = minor_faults();
			total += f1 - f0;
			printf("size %zu round %ld: %llu cycles/malloc, faults alloc %ld free %ld, "
			       "rss peak %ld MB after free %ld MB\n",
			       size, r, (c1 - c0) / (unsigned long long)n, f1 - f0, f2 - f1, peak, rss_mb());
		}
	}
	printf("total alloc faults %ld\n", total);
	return 0;
}
