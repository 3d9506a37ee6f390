/*
 * os/symbol.c - code addresses for slub_debug's owner tracking (slab/debug.c):
 * the first caller of the stack outside pcmalloc's own object, and the
 * "symbol+0xoff" of an address: glibc's backtrace(), dl_iterate_phdr and
 * dladdr (all in libc: libpcmalloc.so needs no libgcc_s; backtrace()
 * loads it at its first call).
 *
 * The caller is the first frame whose address is not in the executable
 * segments of the shared library that holds pcmalloc's code (found once).
 * So it is the program's call of malloc, free, pc_cache_alloc... when
 * pcmalloc is a shared library (LD_PRELOAD, -lpcmalloc); linked into the
 * program (libpcmalloc.a, pcmalloc.o), every frame of the program is in
 * that object, so no walk is made and the caller is unknown (0). At most
 * SYMBOL_MAX_FRAMES frames are walked, so the cost does not grow with the
 * program's stack depth. The first backtrace() loads libgcc_s, which
 * allocates: callers hold no allocator lock, and a thread-local guard
 * (set before anything else) makes a call made meanwhile from this thread
 * (that allocation, or a signal handler's) return 0 at once instead of
 * recursing or waiting for itself.
 *
 * Owns: the guard (per thread) and the object's executable ranges (written
 * once, under pc_once, which publishes them).
 */
#define _GNU_SOURCE
#include "os.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <stdio.h>

static __thread bool symbol_in_backtrace __attribute__((tls_model("initial-exec")));

/* The executable segments of the object that holds pcmalloc's code, found
 * once (dl_iterate_phdr): frames are then tested with two compares each
 * instead of a dladdr (a walk of the loaded objects) per frame. */
#define SYMBOL_MAX_RANGES 4
/* Frames walked: pcmalloc's own are fewer than 12 on every path (malloc ->
 * malloc_slow -> malloc_aligned -> sheaf_alloc_slow -> slab_debug_alloc -> here;
 * realloc and operator new a few more). */
#define SYMBOL_MAX_FRAMES 24
static uintptr_t symbol_lo[SYMBOL_MAX_RANGES], symbol_hi[SYMBOL_MAX_RANGES];
static int symbol_ranges; /* written once, inside pc_once */

static int symbol_find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uintptr_t self = (uintptr_t)arg;
	int n = 0;
	bool mine = false;
	for (int i = 0; i < info->dlpi_phnum && n < SYMBOL_MAX_RANGES; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		symbol_lo[n] = lo;
		symbol_hi[n++] = lo + ph->p_memsz;
		mine |= self >= lo && self < lo + ph->p_memsz;
	}
	if (!mine)
		return 0;
	/* pcmalloc linked into the program (whose name is ""): every frame of
	 * the program is "self", the caller cannot be told apart; no walk. */
	symbol_ranges = info->dlpi_name && info->dlpi_name[0] ? n : 0;
	return 1;
}

static bool symbol_init(void)
{
	dl_iterate_phdr(symbol_find_self, (void *)(uintptr_t)os_caller_outside_self);
	return true;
}

static bool symbol_in_self(uintptr_t pc, int ranges)
{
	for (int i = 0; i < ranges; i++)
		if (pc >= symbol_lo[i] && pc < symbol_hi[i])
			return true;
	return false;
}

uintptr_t os_caller_outside_self(void)
{
	static _Atomic uint32_t once;
	void *frames[SYMBOL_MAX_FRAMES];
	/* The guard first: a signal handler that allocates while this thread
	 * is inside pc_once or the walk returns here at once. */
	if (symbol_in_backtrace)
		return 0;
	symbol_in_backtrace = true;
	uintptr_t caller = 0;
	if (pc_once(&once, symbol_init) && symbol_ranges > 0) {
		int n = backtrace(frames, SYMBOL_MAX_FRAMES);
		for (int i = 1; i < n; i++) {
			if (!symbol_in_self((uintptr_t)frames[i], symbol_ranges)) {
				caller = (uintptr_t)frames[i];
				break;
			}
		}
	}
	symbol_in_backtrace = false;
	return caller;
}

void os_symbolize(uintptr_t addr, char *buf, size_t size)
{
	Dl_info info = { 0 };
	bool found = addr && dladdr((void *)addr, &info);
	if (!addr)
		snprintf(buf, size, "?");
	else if (found && info.dli_sname)
		snprintf(buf, size, "%s+0x%zx", info.dli_sname, (size_t)(addr - (uintptr_t)info.dli_saddr));
	else if (found && info.dli_fname)
		snprintf(buf, size, "0x%zx (%s+0x%zx)", (size_t)addr, info.dli_fname,
			 (size_t)(addr - (uintptr_t)info.dli_fbase));
	else
		snprintf(buf, size, "0x%zx", (size_t)addr);
}
