/* tools/large_seeds.c (helper pagesrss, e1577b9; landed by helper pagerss): bench_large's worker with a seed.
 * large_seeds SEED STEPS [THREADS]: each thread keeps 8 blocks of 64 KiB-4 MiB (log-uniform, as
 * bench_log_uniform), STEPS times frees one and allocates another, one byte a page; prints VmHWM.
 * Thread i is seeded with SEED * 1000 + i; rSEED seeds it with SEED + i (r1: bench_large's own).
 * THREADS is 1..MAX_THREADS.  cc -O2 -pthread tools/large_seeds.c -o large_seeds (docs/pages.md). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define MAX_THREADS 64
static long steps, live = 8;
static uint64_t seed0;
static uint64_t rnd(uint64_t *s) { uint64_t x = *s; x ^= x >> 12; x ^= x << 25; x ^= x >> 27; *s = x; return x * 0x2545F4914F6CDD1DULL; }
static size_t logu(uint64_t *s, size_t lo, size_t hi)
{
	int blo = 63 - __builtin_clzll(lo), bhi = 63 - __builtin_clzll(hi);
	int b = blo + (int)(rnd(s) % (uint64_t)(bhi - blo + 1));
	size_t base = (size_t)1 << b, v = base + (size_t)(rnd(s) % base);
	return v < lo ? lo : v > hi ? hi : v;
}
static void *worker(void *arg)
{
	uint64_t s = (0x9E3779B97F4A7C15ULL * (seed0 + (uint64_t)(uintptr_t)arg)) | 1;
	char *blk[8] = { 0 };
	for (long i = 0; i < steps; i++) {
		long k = (long)(rnd(&s) % (uint64_t)live);
		free(blk[k]);
		size_t n = logu(&s, 65536, 4194304);
		blk[k] = malloc(n);
		if (!blk[k]) {
			perror("malloc");
			exit(1);
		}
		for (size_t j = 0; j < n; j += 4096) ((volatile char *)blk[k])[j] = 1;
	}
	for (int k = 0; k < 8; k++) free(blk[k]);
	return NULL;
}
int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: large_seeds SEED|rSEED STEPS [THREADS]\n");
		return 2;
	}
	seed0 = argv[1][0] == 'r' ? strtoull(argv[1] + 1, 0, 0) : strtoull(argv[1], 0, 0) * 1000; steps = atol(argv[2]);
	int t = argc > 3 ? atoi(argv[3]) : 1;
	if (t < 1 || t > MAX_THREADS) {
		fprintf(stderr, "large_seeds: THREADS must be 1..%d\n", MAX_THREADS);
		return 2;
	}
	pthread_t th[MAX_THREADS];
	for (int i = 0; i < t; i++) pthread_create(&th[i], 0, worker, (void *)(uintptr_t)i);
	for (int i = 0; i < t; i++) pthread_join(th[i], 0);
	FILE *f = fopen("/proc/self/status", "r"); char line[256];
	while (fgets(line, sizeof line, f)) if (!strncmp(line, "VmHWM", 5)) fputs(line, stdout);
	return 0;
}
