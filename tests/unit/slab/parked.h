/*
 * tests/unit/slab/parked.h - a thread that keeps sheaves and stays alive:
 * it allocates `fill` objects of a cache, frees them all (so its sheaf, or
 * its CPU's, and maybe the barn hold them) and parks on a semaphore until
 * parked_finish. parked_start returns once the objects are freed, so a test
 * looks at a settled state: no verdict depends on timing. Used by the sheaf
 * decay, idle release and thread-sheaf statistics tests. Include after
 * test.h and the slab header.
 */
#ifndef PC_TEST_PARKED_H
#define PC_TEST_PARKED_H

#include <pthread.h>
#include <semaphore.h>

#define PARKED_MAX_FILL 512

struct parked {
	pthread_t thread;
	sem_t ready, go;
	struct pc_cache *cache;
	int fill;
};

static void *parked_body(void *arg)
{
	struct parked *p = arg;
	void *v[PARKED_MAX_FILL];
	for (int i = 0; i < p->fill; i++)
		REQUIRE((v[i] = pc_cache_alloc(p->cache)) != NULL);
	for (int i = 0; i < p->fill; i++)
		pc_cache_free(p->cache, v[i]);
	sem_post(&p->ready);
	while (sem_wait(&p->go) != 0)
		;
	return NULL;
}

/* Start the thread on cache and wait until it has freed its objects. */
static inline void parked_start(struct parked *p, struct pc_cache *cache, int fill)
{
	REQUIRE(fill > 0 && fill <= PARKED_MAX_FILL);
	p->cache = cache;
	p->fill = fill;
	REQUIRE(sem_init(&p->ready, 0, 0) == 0 && sem_init(&p->go, 0, 0) == 0);
	REQUIRE(pthread_create(&p->thread, NULL, parked_body, p) == 0);
	while (sem_wait(&p->ready) != 0)
		;
}

/* Let the thread exit and join it. */
static inline void parked_finish(struct parked *p)
{
	sem_post(&p->go);
	REQUIRE(pthread_join(p->thread, NULL) == 0);
	sem_destroy(&p->ready);
	sem_destroy(&p->go);
}

#endif /* PC_TEST_PARKED_H */
