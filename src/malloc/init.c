/*
 * malloc/init.c - size classes, start-up of the malloc layer, and fork.
 *
 * pc_malloc_init() runs at the first allocation (from any thread, even
 * before main or in a constructor): it starts the page allocator; each size
 * class's cache is made at the first allocation of that class
 * (malloc_class_cache). Neither calls anything that allocates: caches and
 * page metadata come from the OS layer. Concurrent first callers wait
 * for the one that initialises. Memory in transit in another thread at a
 * fork (a slab being frozen onto a CPU partial list, a block being released
 * to the OS) stays unlisted in the child: a leak there, never memory handed
 * out twice.
 */
#include "malloc.h"

#include <errno.h>

const uint16_t pc_class_size[] = {
	8, 16, 32, 48, 64, 80, 96, 112, 128,
	160, 192, 224, 256, 320, 384, 448, 512,
	640, 768, 896, 1024, 1280, 1536, 1792, 2048,
	2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192,
};
_Static_assert(sizeof(pc_class_size) / sizeof(pc_class_size[0]) == PC_NR_CLASSES &&
	       PC_SMALL_MAX == 8192, "size class table and PC_NR_CLASSES disagree");
/* (size + 7) / 8 -> class, as constants (so that malloc's fast path never
 * reads a table that is still being built): class c covers the sizes above
 * the previous class's, [prev / 8 + 1, size / 8] in eighths. Checked against
 * pc_class_size by check_class_table at start-up. */
#define CLASS_RANGE(prev, size, c) [(prev) / 8 + 1 ... (size) / 8] = (c)
const uint8_t pc_class_of8[PC_SMALL_MAX / 8 + 1] = {
	[0 ... 1] = 0, CLASS_RANGE(8, 16, 1), CLASS_RANGE(16, 32, 2), CLASS_RANGE(32, 48, 3),
	CLASS_RANGE(48, 64, 4), CLASS_RANGE(64, 80, 5), CLASS_RANGE(80, 96, 6),
	CLASS_RANGE(96, 112, 7), CLASS_RANGE(112, 128, 8), CLASS_RANGE(128, 160, 9),
	CLASS_RANGE(160, 192, 10), CLASS_RANGE(192, 224, 11), CLASS_RANGE(224, 256, 12),
	CLASS_RANGE(256, 320, 13), CLASS_RANGE(320, 384, 14), CLASS_RANGE(384, 448, 15),
	CLASS_RANGE(448, 512, 16), CLASS_RANGE(512, 640, 17), CLASS_RANGE(640, 768, 18),
	CLASS_RANGE(768, 896, 19), CLASS_RANGE(896, 1024, 20), CLASS_RANGE(1024, 1280, 21),
	CLASS_RANGE(1280, 1536, 22), CLASS_RANGE(1536, 1792, 23), CLASS_RANGE(1792, 2048, 24),
	CLASS_RANGE(2048, 2560, 25), CLASS_RANGE(2560, 3072, 26), CLASS_RANGE(3072, 3584, 27),
	CLASS_RANGE(3584, 4096, 28), CLASS_RANGE(4096, 5120, 29), CLASS_RANGE(5120, 6144, 30),
	CLASS_RANGE(6144, 7168, 31), CLASS_RANGE(7168, 8192, 32),
};
#undef CLASS_RANGE

/* Until its class cache exists, every class points here: a cache with no
 * sheaves and thread-sheaf index 0 (always the empty pc_sheaf_none), so
 * malloc's fast path fails and its slow path starts the allocator and makes
 * the class's cache. No readiness flag is read on the fast path. */
struct pc_cache pc_malloc_unready = { .name = "unready" };
struct pc_cache *_Atomic pc_class_cache[PC_NR_CLASSES] = {
	[0 ... PC_NR_CLASSES - 1] = &pc_malloc_unready,
};
struct pc_cache *_Atomic pc_class_cache_of8[PC_SMALL_MAX / 8 + 1] = {
	[0 ... PC_SMALL_MAX / 8] = &pc_malloc_unready,
};
_Atomic uint32_t pc_malloc_ready; /* pc_once: 2 when ready */

/* The smallest class that holds each size, computed: the table must agree.
 * In debug builds, at start-up; tests/unit/malloc/classes.c checks every
 * size in every build (1,025 entries: about 10,000 instructions that each
 * process's start-up need not spend). */
static void check_class_table(void)
{
	if (!PC_DEBUG)
		return;
	unsigned cls = 0;
	for (size_t i = 0; i <= PC_SMALL_MAX / 8; i++) {
		while (pc_class_size[cls] < i * 8)
			cls++;
		if (pc_class_of8[i] != cls)
			pc_fatal("size class table: %zu bytes -> class %u, not %u",
				 i * 8, pc_class_of8[i], cls);
	}
}

/*
 * The size classes' caches are made lazily, each at the first allocation
 * of its class (malloc_class_cache), not all at start-up: a small program
 * that uses a few classes pays for those only (each cache is a few KiB of
 * metadata that its creation writes, so a page of RSS or so, and a mapping;
 * docs/footprint.md). Each class has its own pc_once state, so a class is
 * made once however many threads want it first, racers wait, a failed
 * creation (out of memory) is retried by the next call, and fork() never
 * finds one half made (os.h). pc_once's init takes no argument: the class
 * is this thread's class_wanted, set just before (a racer that runs the
 * init after a failed try set its own to the same class first).
 */
static _Atomic uint32_t class_once[PC_NR_CLASSES];
static __thread unsigned class_wanted __attribute__((tls_model("initial-exec")));

static bool create_class(void)
{
	unsigned i = class_wanted;
	char name[24];
	os_format_u(name, sizeof(name), "kmalloc-", pc_class_size[i], "");
	struct pc_cache *s = pc_cache_create(name, pc_class_size[i], 0, NULL);
	if (!s)
		return false;
	/* Release: malloc's fast path may use the cache from now on (pairs
	 * with its acquire load of the pointer). */
	pc_store_release(&pc_class_cache[i], s);
	for (size_t j = 0; j <= PC_SMALL_MAX / 8; j++)
		if (pc_class_of8[j] == i)
			pc_store_release(&pc_class_cache_of8[j], s);
	return true;
}

static bool make_class(unsigned cls)
{
	class_wanted = cls;
	return pc_once(&class_once[cls], create_class);
}

static bool make_every_class(void)
{
	for (unsigned i = 0; i < PC_NR_CLASSES; i++)
		if (!make_class(i))
			return false;
	return true;
}

struct pc_cache *malloc_class_cache_slow(unsigned cls)
{
	/* A signal handler that interrupted a sheaf slow path or a decay pass
	 * of its own thread takes no lock (slab.h, "Re-entry"): the creation
	 * takes slab_mutex, which that thread may hold. */
	if (!pc_malloc_init() || pc_slab_reentered() || !make_class(cls))
		return NULL;
	return pc_load_acquire(&pc_class_cache[cls]);
}

void pc_malloc_classes_create(void)
{
	if (pc_malloc_init())
		make_every_class();
}

/* Each pass of the page layer's release thread (vm.release_thread) expires
 * the huge mappings cached longer than the delay, so that an idle program
 * gives them back too (a huge malloc or free does it otherwise). */
static void huge_release_hook(void)
{
	huge_cache_expire();
	medium_decay(); /* and the per-CPU medium blocks of idle CPUs */
}

static bool malloc_init_once(void)
{
	int saved = errno;
	check_class_table();
	/* Thread mode (the fallback) makes every class now, as all did before:
	 * its per-thread sheaf indices (PC_THREAD_SHEAVES, slab.h) then go to
	 * the size classes before any cache the program creates. */
	bool ok = pc_page_try_init() &&
		  (pc_sheaf_mode() != PC_SHEAF_MODE_THREAD || make_every_class());
	/* The per-CPU medium cache (rseq mode) starts at the first medium miss
	 * (medium_start), so that a program that never allocates a medium block
	 * writes none of its per-CPU slots; its budget, hook and fork handlers
	 * are set up now. Thread mode's needs nothing per CPU and starts now. */
	if (ok && pc_sheaf_mode() == PC_SHEAF_MODE_RSEQ)
		medium_init();
	else if (ok && pc_sheaf_mode() == PC_SHEAF_MODE_THREAD)
		medium_thread_init();
	if (ok && !pc_page_release_hook_add(huge_release_hook))
		pc_message("malloc: no release hook slot left; the release thread will not expire cached huge blocks");
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
