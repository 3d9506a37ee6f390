/*
 * tests/malloc/test_fork_locks.c - fork() works whatever the number of locks
 * the fork handlers must hold. Run with lock.kind=mcs and vm.numa_fake=64
 * (tests/CMakeLists.txt): with 40 object caches, each with a list_lock per
 * node, the prefork handler holds 64 x (33 size classes + 40) MCS locks at
 * once, more than one pool of PC_LOCK_FORK_NODES (4096) nodes, which once
 * stopped fork with "fatal: more than 4096 MCS locks held for fork at once".
 * The parent forks three times (the second and later forks reuse the nodes
 * the first needed); each child allocates and frees in every cache and
 * through malloc and exits 0.
 */
#define _GNU_SOURCE
#include "malloc_test.h"

#include <sys/wait.h>

typedef struct pc_cache pc_cache_t; /* as in pcmalloc.h, which the _preload build lacks */

#define CACHES 40

typedef int (*ctl_get_fn)(const char *, long *);
typedef pc_cache_t *(*create_fn)(const char *, size_t, size_t, void (*)(void *));
typedef void *(*alloc_fn)(pc_cache_t *);
typedef void (*free_fn)(pc_cache_t *, void *);

static pc_cache_t *caches[CACHES];
static alloc_fn cache_alloc;
static free_fn cache_free;

/* Everything the child does must work; 0 when it did. */
static int child_work(void)
{
	for (int i = 0; i < CACHES; i++) {
		void *o = cache_alloc(caches[i]);
		if (!o)
			return 1;
		memset(o, i, 16);
		cache_free(caches[i], o);
	}
	for (size_t n = 1; n <= 8 * MiB; n *= 3) {
		void *p = p_malloc(n);
		if (!p)
			return 2;
		memset(p, 1, n);
		p_free(p);
	}
	return 0;
}

TEST(fork_with_thousands_of_mcs_locks)
{
	/* The API through dlsym: the _preload build does not link pcmalloc. */
	ctl_get_fn ctl_get = (ctl_get_fn)dlsym(RTLD_DEFAULT, "pcmalloc_ctl_get");
	create_fn create = (create_fn)dlsym(RTLD_DEFAULT, "pc_cache_create");
	cache_alloc = (alloc_fn)dlsym(RTLD_DEFAULT, "pc_cache_alloc");
	cache_free = (free_fn)dlsym(RTLD_DEFAULT, "pc_cache_free");
	REQUIRE(ctl_get && create && cache_alloc && cache_free);
	long kind = -1, nodes = -1;
	CHECK(ctl_get("lock.kind", &kind) == 0 && kind == 2); /* mcs */
	CHECK(ctl_get("vm.numa_fake", &nodes) == 0 && nodes == 64);
	for (int i = 0; i < CACHES; i++) {
		caches[i] = create("fork-locks", 16 + 8 * (size_t)i, 0, NULL);
		REQUIRE(caches[i] != NULL);
		cache_free(caches[i], cache_alloc(caches[i]));
	}
	for (int round = 0; round < 3; round++) {
		fflush(NULL);
		pid_t pid = fork();
		REQUIRE(pid >= 0);
		if (pid == 0)
			_exit(child_work());
		int status = 0;
		REQUIRE(waitpid(pid, &status, 0) == pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			fprintf(stderr, "  fork %d: child status %#x\n", round, status);
		CHECK_EQ(child_work(), 0); /* and the parent goes on */
	}
}

int main(void)
{
	RUN(malloc_interposed);
	RUN(fork_with_thousands_of_mcs_locks);
	return test_report();
}
