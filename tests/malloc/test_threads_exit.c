/*
 * tests/malloc/test_threads_exit.c - threads that exit leave nothing
 * stranded.
 *
 * BATCHES batches of BATCH short-lived threads (5000 in all). Each thread
 * allocates and frees a few hundred blocks of various sizes (a few alive at
 * a time, so that the footprint stays small next to RSS_SLACK), frees the
 * blocks that the thread of the previous batch in the same place left
 * behind, and itself leaves a few for the next batch: memory freed by a
 * thread other than the one that allocated it, after that one has exited.
 *
 * Whatever per-thread state the allocator keeps (caches, heaps, remote-free
 * lists) must be returned or reused when a thread exits: the resident set
 * after the last batch must not exceed the one after the first batch by
 * more than RSS_SLACK.
 */
#define _GNU_SOURCE
#include "malloc_test.h"

#include <pthread.h>

#define BATCHES 100
#define BATCH 50
#define OBJECTS 300 /* allocated by each thread */
#define WINDOW 16   /* of which at most this many are alive at once */
#define LEFT 8      /* left behind by each thread for the next batch */
#define HUGE_SIZE (40 * MiB) /* above glibc's largest mmap threshold */
#define RSS_SLACK (32 * MiB)

/* left[t] holds what thread t of the previous batch left (objects). */
static void *left[BATCH][LEFT];
static atomic_long n_alloc, n_free, n_damaged, n_null;

struct job {
	int batch, index;
};

/* Mostly small, 5% large up to 256 KiB. Not larger: glibc's arenas keep
 * bigger freed blocks in fragments, and RSS would measure that instead. */
static size_t object_size(uint64_t *rng)
{
	if (test_rand(rng) % 1000 < 50) {
		size_t base = (size_t)1 << (13 + test_rand(rng) % 5); /* 8 .. 128 KiB */
		return base + 1 + (size_t)(test_rand(rng) % base);
	}
	size_t n = random_small(rng);
	return n < 16 ? 16 : n;
}

static void *object_new(size_t n)
{
	void *p = p_malloc(n);
	if (!p) {
		atomic_fetch_add(&n_null, 1);
		return NULL;
	}
	atomic_fetch_add_explicit(&n_alloc, 1, memory_order_relaxed);
	object_fill(p, n);
	return p;
}

static void object_free(void *p)
{
	if (!p)
		return;
	if (!object_check(p))
		atomic_fetch_add(&n_damaged, 1);
	p_free(p);
	atomic_fetch_add_explicit(&n_free, 1, memory_order_relaxed);
}

static void *short_lived(void *arg)
{
	struct job *j = arg;
	uint64_t rng = (uint64_t)j->batch * 100003 + (uint64_t)j->index + 1;
	void *ring[WINDOW] = { NULL };
	for (int i = 0; i < OBJECTS; i++) {
		int k = (int)(test_rand(&rng) % WINDOW);
		object_free(ring[k]);
		ring[k] = object_new(object_size(&rng));
	}
	/* One thread every fourth batch takes a huge block too. */
	if (j->index == 0 && j->batch % 4 == 0)
		object_free(object_new(HUGE_SIZE));
	/* What the previous batch's thread in this place left behind. */
	for (int i = 0; i < LEFT; i++)
		object_free(left[j->index][i]);
	/* Leave half of the window to the next batch, free the rest. */
	for (int i = 0; i < WINDOW; i++) {
		if (i < LEFT)
			left[j->index][i] = ring[i];
		else
			object_free(ring[i]);
	}
	return NULL;
}

static void run_batch(int batch, pthread_attr_t *attr, int *create_failed)
{
	pthread_t th[BATCH];
	struct job jobs[BATCH];
	for (int t = 0; t < BATCH; t++) {
		jobs[t] = (struct job){ batch, t };
		if (pthread_create(&th[t], attr, short_lived, &jobs[t]) != 0) {
			(*create_failed)++;
			short_lived(&jobs[t]); /* keep the hand-over chain whole */
			th[t] = 0;
		}
	}
	for (int t = 0; t < BATCH; t++)
		if (th[t])
			pthread_join(th[t], NULL);
}

TEST(threads_exit_leave_nothing)
{
	double t0 = now_seconds();
	alarm(150); /* a deadlock ends the test (SIGALRM) */
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * KiB);
	int create_failed = 0;
	size_t rss_first = 0, rss_max = 0, rss_last = 0;
	for (int b = 0; b < BATCHES; b++) {
		run_batch(b, &attr, &create_failed);
		rss_last = rss_bytes();
		if (b == 0)
			rss_first = rss_last;
		if (rss_last > rss_max)
			rss_max = rss_last;
	}
	pthread_attr_destroy(&attr);
	alarm(0);
	for (int t = 0; t < BATCH; t++)
		for (int i = 0; i < LEFT; i++)
			object_free(left[t][i]);
	printf("threads_exit: %d threads, %ld blocks in %.1f s; RSS after batch 1 %zu MiB, "
	       "max %zu MiB, after the last %zu MiB\n",
	       BATCHES * BATCH, atomic_load(&n_alloc), now_seconds() - t0, rss_first / MiB,
	       rss_max / MiB, rss_last / MiB);
	CHECK_EQ(create_failed, 0);
	CHECK_EQ(atomic_load(&n_null), 0);
	CHECK_EQ(atomic_load(&n_damaged), 0);
	CHECK_EQ(atomic_load(&n_alloc), atomic_load(&n_free));
	CHECK(rss_last <= rss_first + RSS_SLACK); /* nothing stranded by exited threads */
}

int main(void)
{
	RUN(malloc_interposed);
	RUN(threads_exit_leave_nothing);
	return test_report();
}
