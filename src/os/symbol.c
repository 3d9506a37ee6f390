/*
 * os/symbol.c - code addresses for slub_debug's owner tracking (slab/debug.c):
 * the first caller of the stack outside pcmalloc's own object, and the
 * "symbol+0xoff" of an address. glibc's backtrace() and dladdr().
 *
 * The caller is the first frame whose address is not in the object (shared
 * library or program) that holds pcmalloc's code. So it is the program's
 * call of malloc, free, pc_cache_alloc... when pcmalloc is a shared library
 * (LD_PRELOAD, -lpcmalloc); linked into the program (libpcmalloc.a,
 * pcmalloc.o), every frame is in that object and the caller is unknown (0).
 * The first backtrace() loads libgcc_s, which allocates: callers hold no
 * allocator lock, and a thread-local guard makes a call made from inside
 * backtrace (that allocation) return 0 at once instead of recursing.
 *
 * Owns: the guard (per thread) and the object's base (written once, racily,
 * always the same value).
 */
#define _GNU_SOURCE
#include "os.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <stdio.h>

static __thread bool symbol_in_backtrace __attribute__((tls_model("initial-exec")));

uintptr_t os_caller_outside_self(void)
{
	static void *_Atomic self_base;
	void *frames[32];
	if (symbol_in_backtrace)
		return 0;
	symbol_in_backtrace = true;
	int n = backtrace(frames, (int)PC_ARRAY_SIZE(frames));
	Dl_info info;
	void *self = pc_load_relaxed(&self_base);
	if (!self && dladdr((void *)os_caller_outside_self, &info)) {
		self = info.dli_fbase;
		pc_store_relaxed(&self_base, self);
	}
	uintptr_t caller = 0;
	for (int i = 1; i < n && self; i++) {
		if (!dladdr(frames[i], &info) || info.dli_fbase != self) {
			caller = (uintptr_t)frames[i];
			break;
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
