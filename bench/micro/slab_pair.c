/*
 * bench/slab_pair.c - micro-benchmark of object-cache alloc/free (issue 3).
 *
 *   same-cpu   one thread: alloc + free of one object, repeated (Test C of
 *              seed 002: the fastest sequence possible)
 *   batch      one thread: allocate N objects, then free them (Tests A/B)
 *   remote     a producer allocates, a consumer on another CPU frees (every
 *              free is a remote free into a slab that is not its CPU slab)
 *
 * Prints one JSON object per line: {"bench":..., "size":..., "ns_per_op":...}.
 * Not a test: it asserts nothing about speed. --smoke runs a few iterations.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "slab/slab.h"

static long iterations = 20000000;

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu % (int)os_cpu_count(), &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void bench_same_cpu(struct pc_cache *s, size_t size)
{
	double t0 = now_ns();
	for (long i = 0; i < iterations; i++) {
		void *p = pc_cache_alloc(s);
		*(volatile char *)p = 1;
		pc_cache_free(s, p);
	}
	double ns = (now_ns() - t0) / iterations;
	printf("{\"bench\":\"same-cpu-pair\",\"size\":%zu,\"ns_per_op\":%.2f}\n", size, ns);
}

static void bench_batch(struct pc_cache *s, size_t size)
{
	enum { N = 10000 };
	static void *objs[N];
	long rounds = iterations / N / 4 + 1;
	double ta = 0, tf = 0;
	for (long r = 0; r < rounds; r++) {
		double t0 = now_ns();
		for (int i = 0; i < N; i++)
			objs[i] = pc_cache_alloc(s);
		double t1 = now_ns();
		for (int i = 0; i < N; i++)
			pc_cache_free(s, objs[i]);
		tf += now_ns() - t1;
		ta += t1 - t0;
	}
	printf("{\"bench\":\"batch-alloc\",\"size\":%zu,\"ns_per_op\":%.2f}\n", size, ta / (rounds * N));
	printf("{\"bench\":\"batch-free\",\"size\":%zu,\"ns_per_op\":%.2f}\n", size, tf / (rounds * N));
}

#define RING 1024
static void *_Atomic ring[RING];
static struct pc_cache *remote_cache;

static void *consumer(void *arg)
{
	long n = *(long *)arg;
	pin(1);
	for (long i = 0; i < n; i++) {
		void *p;
		while (!(p = atomic_exchange(&ring[i % RING], NULL)))
			sched_yield();
		pc_cache_free(remote_cache, p);
	}
	return NULL;
}

static void bench_remote(struct pc_cache *s, size_t size)
{
	long n = iterations / 8;
	pthread_t t;
	remote_cache = s;
	pin(0);
	double t0 = now_ns();
	pthread_create(&t, NULL, consumer, &n);
	for (long i = 0; i < n; i++) {
		void *p = pc_cache_alloc(s);
		while (atomic_load(&ring[i % RING]))
			sched_yield();
		atomic_store(&ring[i % RING], p);
	}
	pthread_join(t, NULL);
	double ns = (now_ns() - t0) / n;
	printf("{\"bench\":\"remote-free\",\"size\":%zu,\"ns_per_op\":%.2f}\n", size, ns);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--smoke") == 0)
		iterations = 20000;
	pc_page_init();
	pin(0);
	static const size_t sizes[] = { 16, 64, 256, 1024, 4096 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct pc_cache *s = pc_cache_create("bench", sizes[i], 0, NULL);
		if (!s)
			return 1;
		bench_same_cpu(s, sizes[i]);
		bench_batch(s, sizes[i]);
		if (os_cpu_count() > 1)
			bench_remote(s, sizes[i]);
		pin(0);
	}
	return 0;
}
