/*
 * malloc/init.c - size classes, start-up of the malloc layer, and fork.
 *
 * pc_malloc_init() runs at the first allocation (from any thread, even
 * before main or in a constructor). It calls nothing that allocates: caches
 * and page metadata come from the OS layer. Concurrent first callers wait
 * for the one that initialises. Memory in transit in another thread at a
 * fork (a slab being frozen onto a CPU partial list, a block being released
 * to the OS) stays unlisted in the child: a leak there, never memory handed
 * out twice.
 */
#include "malloc.h"

#include <errno.h>
#include <stdio.h>

const uint16_t pc_class_size[] = {
	8, 16, 32, 48, 64, 80, 96, 112, 128,
	160, 192, 224, 256, 320, 384, 448, 512,
	640, 768, 896, 1024, 1280, 1536, 1792, 2048,
	2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192,
};
_Static_assert(sizeof(pc_class_size) / sizeof(pc_class_size[0]) == PC_NR_CLASSES &&
	       PC_SMALL_MAX == 8192, "size class table and PC_NR_CLASSES disagree");
uint8_t pc_class_of16[PC_SMALL_MAX / 16 + 1];
struct pc_cache *pc_class_cache[PC_NR_CLASSES];
_Atomic uint32_t pc_malloc_ready; /* pc_once: 2 when ready */

static void build_class_table(void)
{
	unsigned cls = 0;
	for (size_t i = 0; i <= PC_SMALL_MAX / 16; i++) {
		while (pc_class_size[cls] < i * 16)
			cls++;
		pc_class_of16[i] = (uint8_t)cls;
	}
}

static bool create_caches(void)
{
	for (unsigned i = 0; i < PC_NR_CLASSES; i++) {
		if (pc_class_cache[i])
			continue; /* made by an earlier, failed start */
		char name[24];
		snprintf(name, sizeof(name), "kmalloc-%u", pc_class_size[i]);
		pc_class_cache[i] = pc_cache_create(name, pc_class_size[i], 0, NULL);
		if (!pc_class_cache[i])
			return false;
	}
	return true;
}

static bool malloc_init_once(void)
{
	int saved = errno;
	build_class_table();
	bool ok = pc_page_try_init() && create_caches();
	errno = ok ? saved : ENOMEM;
	return ok;
}

/* Once; a start-up the OS refused memory for is retried by a later call. */
bool pc_malloc_init(void)
{
	if (pc_likely(pc_load_acquire(&pc_malloc_ready) == 2)) /* pairs with pc_once */
		return true;
	return pc_once(&pc_malloc_ready, malloc_init_once);
}

/* Start the allocator early, from a library constructor. Fork and thread
 * exit are handled by each layer's handlers in the lifecycle registry
 * (os.h), which os/lifecycle.c hands to pthread_atfork and a pthread key. */
__attribute__((constructor(101))) static void pc_malloc_constructor(void)
{
	pc_malloc_init();
}
