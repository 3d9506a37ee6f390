/*
 * ctl/options.h - the tunables table (every knob the seeds discuss).
 *
 * A leaf of the include graph (it needs only internal.h), so every layer may
 * read options; src/README.md explains this one exception to "include only
 * the layer below". The stats half of ctl sits on top of all layers.
 *
 * Each option has a dotted name ("vm.pcp_batch_scale_max"); its environment
 * variable is PCMALLOC_ plus the name upper-cased with '.' turned into '_'
 * (PCMALLOC_VM_PCP_BATCH_SCALE_MAX=3), and PCMALLOC_OPTIONS may list several
 * as "name=value,name=value". Enum-valued options take names (lock.kind=mcs).
 *
 * Values are relaxed atomics: a reader sees either the old or the new value
 * and every layer is written to work with either. Options marked runtime may
 * be set while threads run (pcmalloc_ctl_set); the others only at start-up.
 * A layer that must act on a change registers a hook (pc_option_on_change).
 *
 * Kinds of value: numbers (strtol syntax); names for enum options (lock.kind,
 * stats.print: the number is the index of the name); text for stats.file
 * (the value is 1 when a path is set; pc_option_text reads the path) and
 * slub.debug (the value is the union of its flags; slub_debug.c parses it). A
 * default of -1 "computed" is resolved by the layer that computes it, which
 * registers a resolver (pc_option_on_resolve) so that help can show it.
 *
 * Messages: every rejected setting, from PCMALLOC_OPTIONS, a PCMALLOC_<NAME>
 * variable or pcmalloc-ctl, gets one line naming the entry and what is
 * accepted (pc_option_apply_text); the program runs on.
 */
#ifndef PC_CTL_OPTIONS_H
#define PC_CTL_OPTIONS_H

#include "../internal.h"

/* X(id, name, default, min, max, runtime, description)
 * A default of -1 means "computed at start-up" (see the layer that reads it). */
#define PC_OPTIONS(X)                                                          \
	X(VM_PCP_BATCH_SCALE_MAX, "vm.pcp_batch_scale_max", 5, 0, 6, 1,           \
	  "PCP refill/drain batches scale up to batch << this (seed 001)")         \
	X(VM_PCP_BATCH, "vm.pcp_batch", 16, 1, 4096, 1,                            \
	  "pages moved per PCP refill/drain before scaling")                       \
	X(VM_PCP_HIGH, "vm.pcp_high", 512, 0, 1 << 20, 1,                          \
	  "most pages a per-CPU list may hold (its high grows up to this)")        \
	X(VM_PCP_HIGH_MIN, "vm.pcp_high_min", 64, 0, 1 << 20, 1,                   \
	  "pages a per-CPU list may always hold; its high decays back to this")    \
	X(VM_ZONE_INSTANCES, "vm.zone_instances", -1, -1, 64, 0,                   \
	  "zone instances per node (seed 003); -1 = from CPUs and memory")         \
	X(VM_NUMA_FAKE, "vm.numa_fake", 0, 0, PC_MAX_NODES, 0,                     \
	  "split the CPUs into N fake nodes, like numa=fake; 0 = real topology")   \
	X(VM_RELEASE_WATERMARK_KB, "vm.release_watermark_kb", 65536, 0, 1L << 40, 1,\
	  "dirty free memory a zone may keep whatever its age (floor of the bound)")\
	X(VM_RELEASE_DELAY_MS, "vm.release_delay_ms", 1000, 0, 1L << 40, 1,        \
	  "free pages go back to the OS after staying free this long; 0 = at once")\
	X(VM_RELEASE_THREAD, "vm.release_thread", 2, 0, 2, 1,                      \
	  "a background thread releases free pages when the program idles: 0 = never, 1 = always, 2 = auto (once a zone's free pool outgrows vm.release_watermark_kb)")\
	X(VM_RELEASE_ADVICE, "vm.release_advice", 0, 0, 1, 1,                      \
	  "how pages go back: 0 = madvise(MADV_DONTNEED), 1 = MADV_FREE")          \
	X(VM_HUGE_CACHE_KB, "vm.huge_cache_kb", 262144, 0, 1L << 40, 1,            \
	  "freed huge mappings kept for reuse within the release delay, at most")  \
	X(VM_HUGE_THP, "vm.huge_thp", 0, 0, 1, 1,                                   \
	  "1 = huge blocks start on a 2 MiB boundary with MADV_HUGEPAGE")          \
	X(MALLOC_MEDIUM_CACHE_KB, "malloc.medium_cache_kb", 8192, 0, 1L << 30, 1, \
	  "free medium blocks (8-256 KiB) kept per CPU for reuse, at most; 0 = off") \
	X(LOCK_KIND, "lock.kind", 3, 0, 3, 0,                                      \
	  "kind of zone lock and list_lock: spin, ticket, mcs, mutex")             \
	X(STATS_ENABLE, "stats.enable", 0, 0, 1, 1,                                \
	  "keep lock, zone and slab statistics")                                   \
	X(STATS_PRINT, "stats.print", 0, 0, 2, 1,                                  \
	  "print statistics at exit: none, text, json")                            \
	X(STATS_FILE, "stats.file", 0, 0, 1, 0,                                    \
	  "file (a path) that stats.print writes to; unset = stderr")             \
	X(STATS_EXPORT, "stats.export", 0, 0, 1, 0,                                \
	  "publish statistics and a command channel in /dev/shm (pcmalloc-top)")  \
	X(SLUB_MIN_OBJECTS, "slub.min_objects", -1, -1, 1024, 1,                   \
	  "objects a slab should hold at least; -1 = 4 * (fls(cpus) + 1), "        \
	  "and a full sheaf of the class")                                        \
	X(SLUB_MAX_ORDER, "slub.max_order", -1, -1, PC_MAX_ORDER, 1,               \
	  "highest slab page order; -1 = 3, or 4 with 32+ CPUs (seed 000)")       \
	X(SLUB_CPU_PARTIAL, "slub.cpu_partial", -1, -1, 1024, 1,                   \
	  "partial slabs kept per CPU; -1 = scaled by object size and CPUs")       \
	X(SLUB_MIN_PARTIAL, "slub.min_partial", 5, 0, 4096, 1,                     \
	  "lower bound of a cache's min_partial (empty slabs a node keeps)")       \
	X(SLUB_MAX_PARTIAL, "slub.max_partial", -1, -1, 4096, 1,                   \
	  "upper bound of min_partial; -1 = 10 * max(1, CPUs / 16) (seed 000)")   \
	X(DEBUG_FAIL_MMAP, "debug.fail_mmap", 0, 0, 1L << 30, 1,                  \
	  "fault injection: every Nth mapping from the OS fails (0 = none)")      \
	X(DEBUG_FAIL_MMAP_PPM, "debug.fail_mmap_ppm", 0, 0, 1000000, 1,           \
	  "fault injection: each mapping fails with probability N / 1000000") \
	X(SLUB_SHEAF_CAPACITY, "slub.sheaf_capacity", -1, -1, 512, 1,               \
	  "objects per sheaf; -1 = by object size (16 KiB of objects, at least 32 up to 64 KiB, 4..128, from 2 KiB growing with demand); 0 = no sheaves") \
	X(SLUB_BARN_SHEAVES, "slub.barn_sheaves", 8, 0, 4096, 1,                   \
	  "full and empty sheaves a barn (per cache and node) keeps, each")        \
	X(SLUB_BARN_MAX_KB, "slub.barn_max_kb", -1, -1, 1L << 20, 1,              \
	  "KiB of full sheaves all barns together may keep beyond barn_sheaves, raised with demand; -1 = 4096 while the release thread runs, else 1024; 0 = no growth") \
	X(SLUB_SHEAF_MODE, "slub.sheaf_mode", -1, -1, 2, 0,                        \
	  "sheaf fast path: -1 = rseq if available, 2 = per-thread; then reads the mode in use (1 rseq, 2 per-thread)") \
	X(SLUB_DEBUG, "slub.debug", 0, 0, 31, 0,                                   \
	  "slub_debug mode (docs/reliability.md): FLAGS[:CACHE...][;...] of F Z P U T; none = FZPU, - = off")

enum pc_option {
#define PC_OPTION_ENUM(id, ...) PC_OPT_##id,
	PC_OPTIONS(PC_OPTION_ENUM)
#undef PC_OPTION_ENUM
	PC_OPT_COUNT
};

extern _Atomic long pc_option_values[PC_OPT_COUNT];

/* Current value: one relaxed load. */
PC_INLINE long pc_option(enum pc_option o) { return pc_load_relaxed(&pc_option_values[o]); }

/* Read the environment once; later calls do nothing. Thread-safe. */
void pc_options_init(void);
/* Index of the option called name, or -1. */
int pc_option_find(const char *name);
const char *pc_option_name(enum pc_option o);
/* Set a value. before_start: true while the allocator initialises (any option
 * may be set), false later (only runtime options). 0, or -1 with errno EINVAL
 * (out of range) or EPERM (start-up only). Runs the change hook. */
int pc_option_set(enum pc_option o, long value, bool before_start);
/* Parse "name=value" text values (numbers, or names for enum options). */
int pc_option_parse_value(enum pc_option o, const char *text, long *out);
/* Called after each successful set with the new value. Up to
 * PC_OPTION_MAX_HOOKS hooks per option (registering one twice is a no-op);
 * register during start-up, before any run-time set. */
#define PC_OPTION_MAX_HOOKS 4
void pc_option_on_change(enum pc_option o, void (*hook)(long value));

/* Options whose value is text (pc_option_text), not a number or a name. */
PC_INLINE bool pc_option_is_text(enum pc_option o)
{
	return o == PC_OPT_STATS_FILE || o == PC_OPT_SLUB_DEBUG;
}

/* "slub_debug.c": slub.debug's flags and cache lists (syntax there). */
#define PC_SLUB_DEBUG_F 0x01u /* sanity checks: slot start, already free, slab counters */
#define PC_SLUB_DEBUG_Z 0x02u /* red zone after each object */
#define PC_SLUB_DEBUG_P 0x04u /* free objects poisoned, checked at allocation */
#define PC_SLUB_DEBUG_U 0x08u /* who allocated and freed each object, and when */
#define PC_SLUB_DEBUG_T 0x10u /* trace every allocation and free on stderr */
#define PC_SLUB_DEBUG_DEFAULT 0x0fu /* no letter given: F Z P U */
/* Validate text: 0 and *flags = the union of its flags, or EINVAL and one
 * line of why. */
int pc_slub_debug_parse(const char *text, long *flags, char *why, size_t size);
void pc_slub_debug_store(const char *text); /* the accepted text (start-up) */
const char *pc_slub_debug_text(void);       /* "" when slub.debug is off */
/* The flags a cache called name gets (0: an ordinary cache). */
unsigned pc_slub_debug_flags(const char *name);

/* "describe.c": validation with messages, text values, help. */
/* The value in use: the option, or what its resolver computed when the
 * option is -1 and a resolver is registered. */
void pc_option_on_resolve(enum pc_option o, long (*resolve)(void));
long pc_option_resolved(enum pc_option o);
/* Set option `name` from text, validated as PCMALLOC_OPTIONS is. 0, or an
 * errno value (ENOENT unknown name, EINVAL bad value or out of range, EPERM
 * start-up only) with one line in msg saying which entry and what is
 * accepted. `source` prefixes the message ("PCMALLOC_OPTIONS", ...). */
int pc_option_apply_text(const char *source, const char *name, const char *text,
			 bool before_start, char *msg, size_t size);
/* The current value as text (names for enum options, the path for text). */
void pc_option_format(enum pc_option o, char *buf, size_t size);
/* The path of a text option, "" when unset. */
const char *pc_option_text(enum pc_option o);
/* PCMALLOC_OPTIONS held "help": the top layer prints pc_options_help once
 * every layer has registered its resolvers. */
bool pc_options_help_requested(void);
void pc_options_help_request(void);
/* Every tunable, one line each (no newline) passed to emit. */
void pc_options_help(void (*emit)(const char *line, void *arg), void *arg);
/* Description of option o, its range as text, and whether it is runtime. */
const char *pc_option_description(enum pc_option o);
void pc_option_range(enum pc_option o, char *buf, size_t size);
bool pc_option_runtime(enum pc_option o);
long pc_option_default(enum pc_option o);
long pc_option_min(enum pc_option o);
long pc_option_max(enum pc_option o);
/* Enum options: the name of value v (NULL if o is no enum option or v out of
 * range), and the value of a name (-1 if none). */
const char *pc_option_value_name(enum pc_option o, long v);
int pc_option_value_parse_name(enum pc_option o, const char *name);

/* "ctl.c": names pcmalloc_ctl_get does not know as tunables go to the reader
 * the statistics layer registers at start-up (0, or -1 with errno ENOENT). */
void pc_ctl_set_stat_reader(int (*reader)(const char *name, long *value));

#endif /* PC_CTL_OPTIONS_H */
