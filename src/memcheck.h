/*
 * memcheck.h - valgrind memcheck client requests, so that memcheck sees
 * pcmalloc's blocks as it sees glibc's: invalid reads and writes, use after
 * free, uninitialised reads and leaks are reported for them.
 *
 * Only in a build with -DPCMALLOC_VALGRIND=ON (PC_VALGRIND=1, needs
 * <valgrind/memcheck.h>); otherwise every helper here compiles to nothing,
 * so the fast paths keep no trace of it. Like internal.h, a leaf: it
 * includes only system headers, and any layer may use it.
 *
 * The scheme:
 *   - the public entry points (pc_malloc, pc_free, ..., pc_cache_*) bracket
 *     their work with pc_vg_enter/pc_vg_leave, which stop memcheck reporting
 *     errors from this thread meanwhile: the allocator itself reads and
 *     writes free objects (free pointers) that the program must not touch;
 *   - a block handed out is announced with pc_vg_alloc (MALLOCLIKE: its
 *     bytes addressable, undefined unless zeroed), a block taken back with
 *     pc_vg_free (FREELIKE: no longer addressable) before the allocator
 *     reuses it;
 *   - a new slab is made unaddressable whole (pc_vg_noaccess), so that a
 *     read past an object into its neighbour's slot is reported too.
 */
#ifndef PC_MEMCHECK_H
#define PC_MEMCHECK_H

#include <stddef.h>

#ifndef PC_VALGRIND
#define PC_VALGRIND 0
#endif

#if PC_VALGRIND
#include <valgrind/memcheck.h>

static inline void pc_vg_enter(void) { VALGRIND_DISABLE_ERROR_REPORTING; }
static inline void pc_vg_leave(void) { VALGRIND_ENABLE_ERROR_REPORTING; }
static inline void *pc_vg_alloc(void *p, size_t size, int zeroed)
{
	if (p)
		VALGRIND_MALLOCLIKE_BLOCK(p, size, 0, zeroed);
	return p;
}
static inline void pc_vg_free(const void *p)
{
	if (p)
		VALGRIND_FREELIKE_BLOCK(p, 0);
}
static inline void pc_vg_noaccess(const void *p, size_t size) { VALGRIND_MAKE_MEM_NOACCESS(p, size); }
static inline void pc_vg_defined(const void *p, size_t size) { VALGRIND_MAKE_MEM_DEFINED(p, size); }
/* Nonzero when running under valgrind (then realloc always moves, so
 * that memcheck's record of each block's size stays exact). */
static inline int pc_vg_running(void) { return RUNNING_ON_VALGRIND; }
#else
static inline void pc_vg_enter(void) {}
static inline void pc_vg_leave(void) {}
static inline void *pc_vg_alloc(void *p, size_t size, int zeroed) { (void)size; (void)zeroed; return p; }
static inline void pc_vg_free(const void *p) { (void)p; }
static inline void pc_vg_noaccess(const void *p, size_t size) { (void)p; (void)size; }
static inline void pc_vg_defined(const void *p, size_t size) { (void)p; (void)size; }
static inline int pc_vg_running(void) { return 0; }
#endif

#endif /* PC_MEMCHECK_H */
