/*
 * os/symbol.c - code addresses for slub_debug's owner tracking (slab/debug.c):
 * the first caller of the stack outside pcmalloc's own object, and the
 * "symbol+0xoff" of an address: the unwinder's _Unwind_Backtrace (libgcc,
 * which glibc's backtrace() uses too), dl_iterate_phdr and dladdr.
 *
 * The caller is the first frame whose address is not in the object (shared
 * library or program) that holds pcmalloc's code. So it is the program's
 * call of malloc, free, pc_cache_alloc... when pcmalloc is a shared library
 * (LD_PRELOAD, -lpcmalloc); linked into the program (libpcmalloc.a,
 * pcmalloc.o), every frame is in that object and the caller is unknown (0).
 * The walk stops at that frame, so its cost does not grow with the depth
 * of the program's stack. libgcc_s is linked in (no dlopen at the first
 * call, as glibc's backtrace() would do, which allocates); the unwinder
 * allocates nothing in a dynamically linked program, and a thread-local
 * guard makes a call made from inside the walk return 0 at once instead of
 * recursing, in case it ever does.
 *
 * Owns: the guard (per thread) and the object's executable ranges (written
 * once, under pc_once, which publishes them).
 */
#define _GNU_SOURCE
#include "os.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <unwind.h>

static __thread bool symbol_in_backtrace __attribute__((tls_model("initial-exec")));

/* The executable segments of the object that holds pcmalloc's code, found
 * once (dl_iterate_phdr): frames are then tested with two compares each
 * instead of a dladdr (a walk of the loaded objects) per frame. */
#define SYMBOL_MAX_RANGES 4
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
	symbol_ranges = n;
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

/* One step of the stack walk: skip our own frames, stop at the first
 * other one. */
struct symbol_walk {
	int ranges, depth;
	uintptr_t caller;
};

static _Unwind_Reason_Code symbol_step(struct _Unwind_Context *ctx, void *arg)
{
	struct symbol_walk *w = arg;
	uintptr_t pc = (uintptr_t)_Unwind_GetIP(ctx);
	if (pc == 0 || ++w->depth > 64)
		return _URC_END_OF_STACK;
	if (symbol_in_self(pc, w->ranges))
		return _URC_NO_REASON;
	w->caller = pc;
	return _URC_END_OF_STACK;
}

uintptr_t os_caller_outside_self(void)
{
	static _Atomic uint32_t once;
	if (symbol_in_backtrace || !pc_once(&once, symbol_init) || symbol_ranges == 0)
		return 0;
	symbol_in_backtrace = true;
	struct symbol_walk w = { .ranges = symbol_ranges };
	_Unwind_Backtrace(symbol_step, &w);
	symbol_in_backtrace = false;
	return w.caller;
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
