/*
 * slab/debug_report.c - what slub_debug mode says (debug.c does the checks):
 * the caller recorded in an object's tracks (U), the SLUB-style report of a
 * broken object, and the trace lines (T).
 *
 * The caller (U) comes from os_caller_outside_self (os/symbol.c): the
 * fast paths of malloc and pc_cache_alloc are inlined into the exported
 * functions and pass nothing down, so the slow path walks the stack to the
 * first frame outside pcmalloc's shared object: the program's call of
 * malloc, free, pc_cache_alloc, operator new... It costs nothing off debug
 * caches (every call of a debug cache is a slow path; the walk takes about
 * a microsecond). Linked into the program (libpcmalloc.a, pcmalloc.o) the
 * caller is unknown ("?"): see symbol.c.
 *
 * Reports write with pc_report (os/message.c: a stack buffer and write(2),
 * never an allocation) and end in pc_fatal, whose abort() raises SIGABRT.
 */
#include "slab.h"

#include <stdio.h>
#include <string.h>

struct pc_slab_track *slab_debug_track(const struct pc_cache *s, void *obj, int which)
{
	return (struct pc_slab_track *)(void *)((char *)obj + s->track_offset) + which;
}

uintptr_t slab_debug_caller(void)
{
	return os_caller_outside_self();
}

static void debug_print_track(const struct pc_cache *s, void *obj, int which)
{
	const struct pc_slab_track *t = slab_debug_track(s, obj, which);
	const char *what = which == PC_TRACK_ALLOC ? "Allocated" : "Freed";
	char sym[160];
	if (!t->when_ns) {
		pc_report("INFO: %s in ? (never)", what);
		return;
	}
	os_symbolize(t->addr, sym, sizeof(sym));
	unsigned long long age_ms = (unsigned long long)((os_now_ns() - t->when_ns) / 1000000u);
	pc_report("INFO: %s in %s age=%llu cpu=%d pid=%u", what, sym, age_ms, (int)t->cpu, t->tid);
}

/* Hex dump of [p, p + n), at most `limit` bytes, 16 a line. */
static void debug_dump(const char *label, const uint8_t *p, size_t n, size_t limit)
{
	for (size_t off = 0; off < PC_MIN(n, limit); off += 16) {
		char line[16 * 3 + 1];
		size_t k = 0;
		for (size_t i = off; i < PC_MIN(off + 16, n) && k + 4 <= sizeof(line); i++)
			k += (size_t)snprintf(line + k, sizeof(line) - k, " %02x", p[i]);
		line[k] = '\0';
		pc_report("%-8s %p:%s", label, (const void *)(p + off), line);
	}
	if (n > limit)
		pc_report("%-8s ... (%zu more bytes)", label, n - limit);
}

/* The object (slot start) of slab that holds p, or NULL when p is in
 * the slack after the last one or outside the slab. */
static uint8_t *debug_object_of(const struct pc_cache *s, struct pc_page *slab, const void *p)
{
	char *base = pc_page_address(slab);
	unsigned objects = PC_SLAB_OBJECTS(pc_load_relaxed(&slab_word(slab)->word));
	if ((const char *)p < base || (size_t)((const char *)p - base) / s->size >= objects)
		return NULL;
	return (uint8_t *)base + (size_t)((const char *)p - base) / s->size * s->size;
}

/* The fatal line: glibc's words where the kernel's name a case glibc
 * catches too, so that scripts matching those still match. */
static PC_COLD __attribute__((noreturn)) void debug_fatal(const struct pc_cache *s, const void *p,
							   const char *what, const char *func)
{
	if (func)
		pc_fatal("%s(%p): invalid pointer or double free (slub_debug: %s in cache %s)", func,
			 p, what, s->name);
	if (strcmp(what, "Object already free") == 0)
		pc_fatal("free(%p): double free detected (slub_debug: %s in cache %s)", p, what, s->name);
	pc_fatal("slub_debug: %s in cache %s (object %p)", what, s->name, p);
}

void slab_debug_bug_in(const struct pc_cache *s, struct pc_page *slab, void *p, const char *what,
		       const uint8_t *first, const uint8_t *last, int expect, const char *func)
{
	uint64_t cnt = pc_load_relaxed(&slab_word(slab)->word);
	uint8_t *o = debug_object_of(s, slab, p);
	pc_report("=============================================================================");
	pc_report("BUG %s: %s", s->name, what);
	pc_report("-----------------------------------------------------------------------------");
	if (first && o)
		pc_report("INFO: %p-%p @offset=%zu. First byte 0x%x instead of 0x%x", (const void *)first,
			  (const void *)last, (size_t)(first - o), *first, (unsigned)expect);
	if (o && (s->debug & PC_SLUB_DEBUG_U)) {
		debug_print_track(s, o, PC_TRACK_ALLOC);
		debug_print_track(s, o, PC_TRACK_FREE);
	}
	pc_report("INFO: Slab %p objects=%u used=%u fp=%p flags=0x%x", pc_page_address(slab),
		  PC_SLAB_OBJECTS(cnt), PC_SLAB_INUSE(cnt), pc_load_relaxed(&slab_word(slab)->ptr),
		  (unsigned)slab->flags);
	if (o && o != p)
		pc_report("INFO: Pointer %p is %zu bytes into object %p", p, (size_t)((uint8_t *)p - o),
			  (void *)o);
	if (o) {
		pc_report("INFO: Object %p @offset=%zu size=%zu requested=%zu slot=%zu", (void *)o,
			  (size_t)((char *)o - (char *)pc_page_address(slab)), s->object_size,
			  pc_slab_debug_usable((struct pc_cache *)s, o), s->size);
		debug_dump("Object", o, s->object_size, 128);
		if (s->debug & PC_SLUB_DEBUG_Z)
			debug_dump("Redzone", o + s->object_size, s->inuse - s->object_size, 64);
	}
	debug_fatal(s, p, what, func);
}

void slab_debug_bug(const struct pc_cache *s, struct pc_page *slab, void *obj, const char *what,
		    const uint8_t *first, const uint8_t *last, int expect)
{
	slab_debug_bug_in(s, slab, obj, what, first, last, expect, NULL);
}

void slab_debug_trace(const struct pc_cache *s, struct pc_page *slab, void *obj, bool alloc)
{
	uint64_t cnt = pc_load_relaxed(&slab_word(slab)->word);
	pc_report("TRACE %s %s %p inuse=%u fp=%p", s->name, alloc ? "alloc" : "free", obj,
		  PC_SLAB_INUSE(cnt), slab_next(s, obj));
}
