/*
 * docs/pages-medium-drop.c - the medium cache after a burst (docs/pages-medium.md,
 * "The medium cache's bound: a defect fixed"): two threads allocate and free
 * 200 rounds of 400 blocks of 8-256 KiB (the cache's bound grows with the
 * demand), then keep a steady loop of two or three 20000-byte blocks; the
 * main thread prints pcmalloc's stats.medium_cached, stats.medium_bound and
 * the RSS every 500 ms for 8 s.
 *
 *   cc -O2 -pthread -o /tmp/drop docs/pages-medium-drop.c -ldl
 *   [PCMALLOC_VM_RELEASE_THREAD=1] LD_PRELOAD=build/libpcmalloc.so /tmp/drop
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static int (*ctl_get)(const char *, long *);
static volatile int stop;
static void *worker(void *arg)
{
	unsigned seed = (unsigned)(long)arg;
	static __thread char *b[400];
	for (int r = 0; r < 200; r++) {
		for (int i = 0; i < 400; i++) { size_t n = 8193 + rand_r(&seed) % (256 * 1024 - 8193); b[i] = malloc(n); b[i][0] = 1; }
		for (int i = 0; i < 400; i++) free(b[i]);
	}
	char *held = NULL;
	while (!stop) {
		for (int i = 0; i < 1000; i++) { char *x = malloc(20000), *y = malloc(20000); x[0] = y[0] = 1; free(y); free(x); }
		if (held) { free(held); held = NULL; } else held = malloc(20000);
		usleep(1000);
	}
	free(held);
	return NULL;
}
int main(void)
{
	*(void **)&ctl_get = dlsym(RTLD_DEFAULT, "pcmalloc_ctl_get");
	pthread_t t[2];
	for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	for (int s = 0; s <= 16; s++) {
		long cached = -1, bound = -1, rss = -1;
		if (ctl_get) { ctl_get("stats.medium_cached", &cached); ctl_get("stats.medium_bound", &bound); ctl_get("stats.rss", &rss); }
		printf("%4.1f s cached %6.2f MB bound %6.2f MB rss %6.1f MB\n", s * 0.5, cached / 1e6, bound / 1e6, rss / 1e6);
		fflush(stdout);
		usleep(500000);
	}
	stop = 1;
	for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
	return 0;
}
