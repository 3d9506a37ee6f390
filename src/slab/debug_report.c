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
 * a microsecond or two). Linked into the program (libpcmalloc.a, pcmalloc.o) the
 * caller is unknown ("?"): see symbol.c.
 *
 * Reports write with pc_report (os/message.c: a stack buffer and write(2),
 * never an allocation) and end in pc_fatal, whose abort() raises SIGABRT.
 */
#include "slab.h"

#include <stdio.h>
#include <string.h>

/* What a report prints, copied under list_lock: the lock is then dropped
 * before anything is printed, since naming an address (dladdr) takes the
 * dynamic loader's lock, which a thread inside dlopen may hold while it
 * allocates and waits for this list_lock. */
#define DEBUG_DUMP_OBJECT 128
#define DEBUG_DUMP_ZONE 64
struct debug_snapshot {
	uint64_t counters;
	void *freelist;
	unsigned flags;
	bool fresh; /* the object is fresh (never handed out): nothing of it is shown */
	uint8_t first_byte;
	size_t requested;
	struct pc_slab_track track[2];
	uint8_t object[DEBUG_DUMP_OBJECT], zone[DEBUG_DUMP_ZONE];
};

static void debug_print_track(const struct pc_slab_track *t, int which)
{
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

/* Hex dump of the n bytes at `at`, copied to `bytes` (at most `limit`), 16
 * a line. */
static void debug_dump(const char *label, const uint8_t *at, const uint8_t *bytes, size_t n,
		       size_t limit)
{
	for (size_t off = 0; off < PC_MIN(n, limit); off += 16) {
		char line[16 * 3 + 1];
		size_t k = 0;
		for (size_t i = off; i < PC_MIN(off + 16, PC_MIN(n, limit)) && k + 4 <= sizeof(line); i++)
			k += (size_t)snprintf(line + k, sizeof(line) - k, " %02x", bytes[i]);
		line[k] = '\0';
		pc_report("%-8s %p:%s", label, (const void *)(at + off), line);
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

/* Copy what the report shows of object o (NULL: none) of slab. */
static void debug_snap(const struct pc_cache *s, struct pc_page *slab, uint8_t *o,
		       const uint8_t *first, struct debug_snapshot *snap)
{
	snap->counters = pc_load_relaxed(&slab_word(slab)->word);
	snap->freelist = pc_load_relaxed(&slab_word(slab)->ptr);
	snap->flags = slab->flags;
	snap->first_byte = first ? *first : 0;
	/* A fresh object's bytes, tracks and requested size are whatever the
	 * page held before (slab.h, the counters word): not the cache's. */
	snap->fresh = o && slab_is_fresh(slab, snap->counters, o);
	if (!o || snap->fresh)
		return;
	snap->requested = pc_slab_debug_usable((struct pc_cache *)s, o);
	if (s->debug & PC_SLUB_DEBUG_U)
		memcpy(snap->track, slab_debug_track(s, o, PC_TRACK_ALLOC), sizeof(snap->track));
	memcpy(snap->object, o, PC_MIN(s->object_size, (size_t)DEBUG_DUMP_OBJECT));
	memcpy(snap->zone, o + s->object_size, PC_MIN(s->inuse - s->object_size, (size_t)DEBUG_DUMP_ZONE));
}

void slab_debug_bug_in(const struct pc_cache *s, struct pc_page *slab, void *p, const char *what,
		       const uint8_t *first, const uint8_t *last, int expect, const char *func,
		       struct pc_lock *held)
{
	uint8_t *o = debug_object_of(s, slab, p);
	struct debug_snapshot snap;
	debug_snap(s, slab, o, first, &snap);
	if (held)
		pc_lock_release(held);
	pc_report("=============================================================================");
	pc_report("BUG %s: %s", s->name, what);
	pc_report("-----------------------------------------------------------------------------");
	if (snap.fresh) /* shown as no object: its memory means nothing */
		o = NULL;
	if (first && o)
		pc_report("INFO: %p-%p @offset=%zu. First byte 0x%x instead of 0x%x", (const void *)first,
			  (const void *)last, (size_t)(first - o), snap.first_byte, (unsigned)expect);
	if (o && (s->debug & PC_SLUB_DEBUG_U)) {
		debug_print_track(&snap.track[PC_TRACK_ALLOC], PC_TRACK_ALLOC);
		debug_print_track(&snap.track[PC_TRACK_FREE], PC_TRACK_FREE);
	}
	pc_report("INFO: Slab %p objects=%u used=%u fresh=%u fp=%p flags=0x%x",
		  pc_page_address(slab), PC_SLAB_OBJECTS(snap.counters), PC_SLAB_INUSE(snap.counters),
		  PC_SLAB_FRESH(snap.counters), snap.freelist, snap.flags);
	if (snap.fresh)
		pc_report("INFO: Object %p is fresh (never allocated)",
			  (void *)debug_object_of(s, slab, p));
	if (o && o != p)
		pc_report("INFO: Pointer %p is %zu bytes into object %p", p, (size_t)((uint8_t *)p - o),
			  (void *)o);
	if (o) {
		pc_report("INFO: Object %p @offset=%zu size=%zu requested=%zu slot=%zu", (void *)o,
			  (size_t)((char *)o - (char *)pc_page_address(slab)), s->object_size,
			  snap.requested, s->size);
		debug_dump("Object", o, snap.object, s->object_size, DEBUG_DUMP_OBJECT);
		if (s->debug & PC_SLUB_DEBUG_Z)
			debug_dump("Redzone", o + s->object_size, snap.zone, s->inuse - s->object_size,
				   DEBUG_DUMP_ZONE);
	}
	debug_fatal(s, p, what, func);
}

void slab_debug_bug(const struct pc_cache *s, struct pc_page *slab, void *obj, const char *what,
		    const uint8_t *first, const uint8_t *last, int expect)
{
	slab_debug_bug_in(s, slab, obj, what, first, last, expect, NULL,
			  &slab_node((struct pc_cache *)s, slab)->list_lock);
}

void slab_debug_trace(const struct pc_cache *s, struct pc_page *slab, void *obj, bool alloc)
{
	uint64_t cnt = pc_load_relaxed(&slab_word(slab)->word);
	pc_report("TRACE %s %s %p inuse=%u fp=%p", s->name, alloc ? "alloc" : "free", obj,
		  PC_SLAB_INUSE(cnt), slab_next(s, obj));
}
