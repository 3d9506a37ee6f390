/*
 * malloc/override.c - the C library's allocation names, so that pcmalloc
 * replaces malloc when preloaded or linked first: malloc, free, calloc,
 * realloc, reallocarray, posix_memalign, aligned_alloc, memalign, valloc,
 * pvalloc, malloc_usable_size, malloc_trim, mallinfo/mallinfo2, mallopt,
 * malloc_stats, malloc_info, cfree, and the __libc_* aliases some programs
 * call directly.
 *
 * malloc and free expand the inline fast paths of malloc.h themselves; the
 * others forward to the prefixed API through its hidden names (malloc.h,
 * pc_calloc_local, ...): a direct jump, not one through the GOT (the pc_
 * names are exported, and -fno-semantic-interposition binds only calls
 * within one translation unit).
 */
#include "malloc.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#define PC_ALIAS(name) __attribute__((alias(#name), visibility("default")))

/* The whole fast path in each (malloc.h), not a jump to pc_malloc/pc_free. */
PC_API void *malloc(size_t size) { return pc_malloc_inline(size); }
PC_API void free(void *p) { pc_free_inline(p); }
PC_API void *calloc(size_t n, size_t size) { return pc_calloc_local(n, size); }
PC_API void *realloc(void *p, size_t size) { return pc_realloc_local(p, size); }
PC_API void *reallocarray(void *p, size_t n, size_t size) { return pc_reallocarray_local(p, n, size); }
PC_API int posix_memalign(void **memptr, size_t align, size_t size)
{
	return pc_posix_memalign_local(memptr, align, size);
}
PC_API void *aligned_alloc(size_t align, size_t size) { return pc_aligned_alloc_local(align, size); }
PC_API void *memalign(size_t align, size_t size) { return pc_memalign_local(align, size); }
PC_API void *valloc(size_t size) { return pc_memalign_local(PC_PAGE_SIZE, size); }
PC_API void *pvalloc(size_t size)
{
	if (size > PC_REQUEST_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	return pc_memalign_local(PC_PAGE_SIZE, size ? pc_align_up(size, PC_PAGE_SIZE) : PC_PAGE_SIZE);
}
PC_API size_t malloc_usable_size(void *p) { return pc_malloc_usable_size_local(p); }
/* glibc removed cfree from its headers in 2.26 but old binaries call it. */
PC_API void cfree(void *p);
PC_API void cfree(void *p) { pc_free_inline(p); }

/* glibc: 1 if memory was released to the OS, else 0. `pad` is ignored: we
 * keep no heap top to pad. */
PC_API int malloc_trim(size_t pad)
{
	(void)pad;
	return pc_trim_local() > 0;
}

/* glibc names with a documented mapping to pcmalloc tunables; the others
 * (arenas, mmap threshold, top pad, perturb, ...) have no counterpart and
 * return 0, which glibc documents as "error / not done". */
PC_API int mallopt(int param, int value)
{
	switch (param) {
	case M_TRIM_THRESHOLD:
		if (value < 0 || pcmalloc_ctl_set("vm.release_watermark_kb", value / 1024) != 0)
			return 0;
		pc_page_release_due(); /* the new bound applies at once */
		return 1;
	default:
		return 0;
	}
}

static size_t zone_bytes(bool free_only)
{
	size_t pages = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		/* the lock-free copies of the counters: a snapshot */
		pages += pc_load_relaxed(free_only ? &z->free_hint : &z->managed_hint);
	}
	return pages << PC_PAGE_SHIFT;
}

/*
 * arena: bytes in page allocator regions; hblks/hblkhd: huge blocks and
 * their bytes; fordblks: free bytes in the zones; uordblks: bytes in use or
 * cached in per-CPU lists and slabs (arena - fordblks); keepcost: 0.
 * Racy counters: a snapshot, as glibc's is under a lock per arena only.
 */
PC_API struct mallinfo2 mallinfo2(void)
{
	struct mallinfo2 mi = { 0 };
	if (pc_load_acquire(&pc_malloc_ready) != 2) /* pairs with pc_once: zones exist */
		return mi;
	mi.arena = zone_bytes(false);
	mi.fordblks = zone_bytes(true);
	mi.uordblks = mi.arena - PC_MIN(mi.arena, mi.fordblks);
	mi.hblks = huge_count();
	mi.hblkhd = huge_bytes_mapped();
	mi.ordblks = 1;
	return mi;
}

PC_API struct mallinfo mallinfo(void)
{
	struct mallinfo2 m = mallinfo2();
	struct mallinfo mi = {
		.arena = (int)m.arena, .ordblks = (int)m.ordblks, .hblks = (int)m.hblks,
		.hblkhd = (int)m.hblkhd, .uordblks = (int)m.uordblks, .fordblks = (int)m.fordblks,
	};
	return mi;
}

/* glibc's report calls, answered by the statistics layer through the public
 * API (docs/statistics.md): malloc_stats prints the text report (slabinfo,
 * lock_stat, histograms, totals) to stats.file if set, else stderr;
 * malloc_info writes glibc's XML layout to fp (options must be 0). */
PC_API void malloc_stats(void)
{
	int saved = errno;
	(void)pcmalloc_stats_print("text");
	errno = saved;
}

PC_API int malloc_info(int options, FILE *fp)
{
	if (options != 0 || fp == NULL) {
		errno = EINVAL;
		return -1;
	}
	/* Measure, then format; retry if the report grew in between. */
	for (size_t need = pcmalloc_stats_format("xml", NULL, 0); need > 0;) {
		char *buf = pc_malloc_local(need + 1);
		if (!buf)
			return -1;
		size_t len = pcmalloc_stats_format("xml", buf, need + 1);
		if (len <= need) {
			size_t written = fwrite(buf, 1, len, fp);
			pc_free_local(buf);
			return written == len ? 0 : -1;
		}
		pc_free_local(buf);
		need = len;
	}
	return -1;
}

/* The aliases repeat the targets' contracts; glibc's headers put attributes
 * (malloc, alloc_size, ...) on the targets that the alias declarations here
 * need not restate. */
#pragma GCC diagnostic ignored "-Wmissing-attributes"
PC_API void *__libc_malloc(size_t size) PC_ALIAS(malloc);
PC_API void __libc_free(void *p) PC_ALIAS(free);
PC_API void *__libc_calloc(size_t n, size_t size) PC_ALIAS(calloc);
PC_API void *__libc_realloc(void *p, size_t size) PC_ALIAS(realloc);
PC_API void *__libc_memalign(size_t align, size_t size) PC_ALIAS(memalign);
PC_API void *__libc_valloc(size_t size) PC_ALIAS(valloc);
PC_API void *__libc_pvalloc(size_t size) PC_ALIAS(pvalloc);
PC_API int __posix_memalign(void **memptr, size_t align, size_t size) PC_ALIAS(posix_memalign);
