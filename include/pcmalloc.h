/*
 * pcmalloc.h - the public interface of pcmalloc, a memory allocator built on
 * the design of the Linux kernel's page and slab allocators.
 *
 * Three ways to use it:
 *  - as the process malloc: LD_PRELOAD=libpcmalloc.so, or link libpcmalloc
 *    (shared, static, or the single object pcmalloc.o) before the C library;
 *    then malloc, free, ..., and C++ new/delete are pcmalloc's;
 *  - through the prefixed functions below, beside another malloc;
 *  - as object caches (pc_cache_*), like the kernel's kmem_cache.
 *
 * Tunables and statistics: pcmalloc_ctl_get/pcmalloc_ctl_set with the names
 * listed in docs/tunables.md (for example "vm.pcp_batch_scale_max"); the
 * same names, upper-cased with '.' turned into '_' and prefixed PCMALLOC_,
 * are read from the environment at start-up.
 */
#ifndef PCMALLOC_H
#define PCMALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PCMALLOC_EXPORT __attribute__((visibility("default")))

/* ---- malloc family, prefixed; same contracts as the C library's ---------- */
PCMALLOC_EXPORT void *pc_malloc(size_t size);
PCMALLOC_EXPORT void pc_free(void *ptr);
PCMALLOC_EXPORT void *pc_calloc(size_t count, size_t size);
PCMALLOC_EXPORT void *pc_realloc(void *ptr, size_t size);
PCMALLOC_EXPORT void *pc_reallocarray(void *ptr, size_t count, size_t size);
PCMALLOC_EXPORT void *pc_aligned_alloc(size_t alignment, size_t size);
PCMALLOC_EXPORT void *pc_memalign(size_t alignment, size_t size);
PCMALLOC_EXPORT int pc_posix_memalign(void **memptr, size_t alignment, size_t size);
PCMALLOC_EXPORT size_t pc_malloc_usable_size(const void *ptr);
/* Give free memory back to the OS now; returns the bytes released. */
PCMALLOC_EXPORT size_t pc_trim(void);

/* ---- object caches ---------------------------------------------------------- */
typedef struct pc_cache pc_cache_t;
/* A cache of objects of `size` bytes aligned to `align` (0: 8, or 16 from 16
 * bytes up; else a power of two up to 4096). `ctor`, if given, runs once per
 * object, before the object is first handed out (when it is first taken
 * from its slab), inside the allocator's slow path: it must not allocate
 * from the same cache (as with the kernel's SLUB). NULL with errno EINVAL
 * or ENOMEM. */
PCMALLOC_EXPORT pc_cache_t *pc_cache_create(const char *name, size_t size, size_t align,
					    void (*ctor)(void *));
PCMALLOC_EXPORT void *pc_cache_alloc(pc_cache_t *cache);
PCMALLOC_EXPORT void pc_cache_free(pc_cache_t *cache, void *obj);
/* Return empty slabs to the page allocator; the number of slabs freed. */
PCMALLOC_EXPORT size_t pc_cache_shrink(pc_cache_t *cache);
/* 0 when destroyed; else the objects still allocated (reported on stderr),
 * and the cache stays usable. */
PCMALLOC_EXPORT size_t pc_cache_destroy(pc_cache_t *cache);

/* ---- tunables --------------------------------------------------------------- */
/* 0, or -1 with errno ENOENT (no such name), EINVAL (out of range) or EPERM
 * (settable only at start-up). */
PCMALLOC_EXPORT int pcmalloc_ctl_get(const char *name, long *value);
PCMALLOC_EXPORT int pcmalloc_ctl_set(const char *name, long value);
/* Set a tunable from text, validated as a PCMALLOC_OPTIONS entry is: names
 * for enum values ("lock.kind", "mcs"; "stats.print", "json"), numbers in
 * strtol syntax, a path for stats.file. Errors as pcmalloc_ctl_set. */
PCMALLOC_EXPORT int pcmalloc_ctl_set_text(const char *name, const char *value);

/* ---- statistics (docs/statistics.md) ------------------------------------- */
/*
 * pcmalloc_ctl_get also reads statistics by name: "stats.allocated",
 * "stats.active", "stats.resident", "stats.mapped", "stats.released",
 * "stats.cache.<cache>.<field>", "stats.lock.<class>.<field>", ... (every
 * name is listed in docs/statistics.md). Counters other than the totals are
 * kept only while the tunable stats.enable is 1.
 *
 * format: "text" (slabinfo 2.1, lock_stat, funclatency histograms, totals),
 * "json" (the same numbers) or "xml" (malloc_info's layout).
 */
/* Print to stats.file (if set) or stderr. 0, or -1 with errno (EINVAL: bad
 * format; an error from opening or writing the file). */
PCMALLOC_EXPORT int pcmalloc_stats_print(const char *format);
/* The JSON snapshot in a buffer from malloc (release it with free), or NULL
 * with errno ENOMEM. */
PCMALLOC_EXPORT char *pcmalloc_stats_json(void);
/* Format into buf like snprintf: returns the full length (which may exceed
 * size; the text is then cut and NUL-terminated), or 0 with errno EINVAL for
 * an unknown format. */
PCMALLOC_EXPORT size_t pcmalloc_stats_format(const char *format, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* PCMALLOC_H */
