#!/usr/bin/env python3
"""tools/hot_text.py - list the functions of libpcmalloc.so that programs
enter, and write them as the linker script cmake/hot-text.ld.

Why: a read fault on a file mapping maps the whole aligned 64 KiB around it
(the kernel's fault-around), so every 64 KiB window of the library's text
that a program enters once is resident whole. Linking the functions that
ordinary programs enter first (start-up, malloc/free/calloc/realloc and
their slow paths) keeps the windows of the rest (statistics reports, debug
checks, huge blocks, control) out of a small program's RSS
(docs/footprint.md, "Cut: the functions programs enter first").

How: an uprobe on the first instruction of every function of the library
(tracefs, needs root), each workload run once with the library preloaded,
the probes that fired collected. The functions are written in the order
the workloads first enter them (the empty program's first; those a
workload adds in address order), so that the code every program needs
comes first and the rarer functions after it; the functions of the
previous list that this run did not enter but the library still has (some
slow paths run only under contention) go after the benchmarks' and before
ls's, python's and a fork's, so that the list only grows. A comment before
each workload's names gives the size of the list so far: the benchmarks'
part must stay below 64 KiB less .init and .plt, which come first. The
first fault in the text (the loader calls _init, at the mapping's start)
maps the 16 pages from the start of the mapping (the fault-around window
is clamped to the mapping, not cut at the 64 KiB boundary), so that is
the part a small program has resident, while the page cache holds the
library in 4 KiB folios (as the linker writes it, or read back from
disk); a copy just written by cp or install sits in 64 KiB folios, and a
fault maps each whole folio it meets: two windows of text whatever the
order (docs/footprint.md, "2026-11-25, helper footprint").

    sudo python3 tools/hot_text.py --build build [--out cmake/hot-text.ld]
    python3 tools/hot_text.py --build build --check

--check (no root) reports instead how much of the library's text each
workload has resident at exit (/proc/self/pagemap, read by a preloaded
destructor), the library first dropped from the page cache so that it is
read back as an installed one is: 64 kB is the first window alone; more
means a function the programs enter is missing from the list (make it
again). Not a test: the number depends on the kernel's fault-around size
and on the folio sizes in the page cache.

A stale list only costs pages, never correctness: a name the linker does
not find is skipped (tests/hot-text.sh reports such names).

The script also places, from fixed lists below: the unwind tables after
the text (EH_FRAME_AFTER_TEXT), the read-only data small programs read in
the first segment (HOT_RODATA, with the listed functions' strings) and the
.bss variables they write right after .data (HOT_BSS); docs/footprint.md,
"2026-11-25 morning, helper footprint2", says how those lists were found.
"""
import argparse
import os
import subprocess
import sys
import tempfile

TRACEFS = "/sys/kernel/tracing"
GROUP = "pchot"


def functions(lib):
    """(address, names) of every function with code; aliases (malloc and
    __libc_malloc) share an address, and the section is named after one."""
    out = subprocess.run(["nm", "-S", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    names = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tTwW" and int(f[1], 16) > 0:
            names.setdefault(int(f[0], 16), []).append(f[3])
    return sorted(names.items())


def section_name(sym):
    """The input section -ffunction-sections gives a symbol: .text.NAME for
    NAME and its clones (NAME.part.0, NAME.constprop.0). A NAME.cold part
    (GCC's split of a function's unlikely blocks) is in .text.unlikely.NAME,
    which the script leaves in the cold text even when a workload enters it:
    those blocks are the rare ones (the pagemap measurements found none
    entered). A function placed in another's section (slab.h's
    SLAB_TEXT_WITH(fn): .text.fn.with) goes with that one: OWNER, read from
    the objects of libpcmalloc.a beside the library (sections_from_archive)."""
    base = sym.split(".")[0]
    return OWNER.get(base, base)


# Function -> the function whose .text.NAME.* section holds it, where the
# two differ (SLAB_TEXT_WITH).
OWNER = {}


def sections_from_archive(archive):
    """Fill OWNER from `objdump -t` of the static library (same sources and
    flags as the shared one): a function symbol in section .text.F.with
    belongs to F's place in the list."""
    if not os.path.exists(archive):
        return
    out = subprocess.run(["objdump", "-t", archive], capture_output=True, text=True).stdout
    for line in out.splitlines():
        w = line.split()
        if len(w) >= 6 and w[-4] == "F" and w[-3].startswith(".text.") and w[-3].endswith(".with"):
            owner, name = w[-3][len(".text."):-len(".with")], w[-1].split(".")[0]
            if owner != name:
                OWNER[name] = owner


# The unwind tables after the cold text, in the R+X segment, where the
# default script puts them into the read-only data's segment: a small
# program reads .rodata (the size class table, the options' names) but
# never unwinds, and the whole segment (50 kB: .rodata 16, .eh_frame_hdr 5,
# .eh_frame 28) lies in one fault-around window, so every program had all
# 13 pages resident for the 5 it reads. The unwinder finds them through
# PT_GNU_EH_FRAME wherever they are (backtrace(), C++ exceptions thrown
# by operator new).
EH_FRAME_AFTER_TEXT = """/* The unwind tables after the text, out of the read-only data's
 * fault-around window (tools/hot_text.py, EH_FRAME_AFTER_TEXT). */
SECTIONS
{
  .eh_frame_hdr : { *(.eh_frame_hdr) }
  .eh_frame : ONLY_IF_RO { KEEP (*(.eh_frame)) *(.eh_frame.*) }
  .gcc_except_table : ONLY_IF_RO { *(.gcc_except_table .gcc_except_table.*) }
}
INSERT AFTER .text;
"""


# The read-only data that small programs read, in the first segment (ELF
# headers, symbols, relocations: resident whole, as the loader reads it),
# after the relocations, in the last page's free part: the strings of the
# listed functions (-ffunction-sections names them .rodata.FUNCTION.str1.N),
# of HOT_RODATA_STRINGS' functions and these tables (-fdata-sections:
# .rodata.NAME). The .rodata segment (16 kB, one fault-around window) is
# then read by no small program and stays out of its RSS; a read of
# something not listed maps it whole, as before. A literal that several
# functions of an object use is emitted once, in the section of the first
# function that uses it (pc_slub_debug_flags reads "" from
# pc_slub_debug_text's): tests/unit/os/library_layout.sh fails when code of
# .text.pc_hot refers to the .rodata segment; name the owner below.
HOT_RODATA = ["pc_class_of8", "pc_class_size", "tunables.*"]
HOT_RODATA_STRINGS = ["pc_slub_debug_text"]


def rodata_block(functions):
    """The linker script's part that places the hot read-only data first."""
    lines = ["/* The read-only data small programs read, in the first segment",
             " * (tools/hot_text.py, HOT_RODATA): the .rodata segment stays cold. */",
             "SECTIONS", "{", "  .rodata.pc_hot : {"]
    lines += [f"    *(.rodata.{n})" for n in HOT_RODATA]
    # Constants the compiler emits (SSE operands: zone_alloc_block_locked's
    # paddq), merged per object; the reports' and checkers' stay cold.
    lines += ["    *(EXCLUDE_FILE(*/stats/* *check.c.o *describe.c.o) .rodata.cst*)"]
    lines += [f"    *(.rodata.{n}.*)" for n in HOT_RODATA_STRINGS + functions]
    lines += ["  }", "}", "INSERT AFTER .rela.plt;", ""]
    return "\n".join(lines)


# The .bss variables that small programs write (an empty program, one
# malloc, bench_small with 1 and 2 threads, bench_larson with 2; each with
# rseq and in thread mode, GLIBC_TUNABLES=glibc.pthread.rseq=0), first in
# the .bss, right after .data, whose last page the loader's relocations
# write anyway; the sources are compiled with -fdata-sections, so each is an
# input section .bss.NAME. By default the .bss follows the objects' order,
# and these few hundred bytes lay between megabytes of tables on four pages
# besides the region table's entry; here on .data's last page and the next
# two (docs/footprint.md, "2026-11-25 morning, helper footprint2"). Found by
# linking each .bss variable on a page of its own and reading which pages
# the workloads wrote (present and exclusively mapped in /proc/self/pagemap:
# a page only read maps the shared zero page). First the scalars read on
# fast paths or often and written once, then, on cache lines of their own
# (ALIGN(64) before and after), those a running program writes (locks,
# counters), then the arrays whose first entries are written, smallest first, zone_table (32
# KiB, one entry per zone) last. pc_region_table (16 MiB) stays out: the
# entry written depends on the region's address. An entry is NAME or
# (OBJECT, NAME) for a name other objects could use too. A name the linker
# does not find is skipped, as in the text's list; crt's completed.0,
# written at exit, stays first.
HOT_BSS = [
    "pc_sheaf_slots_offset", "pc_malloc_ready", "sheaf_mode", "sheaf_caches_state.*",
    "lock_layer_state", "pc_lock_stats_enabled", "ctl_stat_reader",
    ("page/release_thread.c.o", "hook_count"), ("page/topology.c.o", "init_state"),
    ("stats/start.c.o", "started.*"), ("ctl/options.c.o", "state.*"),
    ("slab/cache.c.o", "state.*"), "nr_nodes", "nr_zones", "numa_bind", "medium_ncpus",
    "medium_once", "medium_budget", "pc_medium_slots", "pc_medium_stride", "medium_cpus",
    "medium_stacks", "cold_chunk", "hot_chunk", "sheaf_caches", "release_hooks",
    "class_once", "option_resolvers",
    # thread mode's (sheaf_thread.c, medium_thread.c)
    "fence_mode", "medium_thread_on", "pc_medium_thread_budget", "thread_caches",
]
HOT_BSS_WRITTEN = [
    "slab_mutex", "sheaves_charged", "next_pass_ns", "medium_decay_lock",
    "lock_registry_head", "lock_registry_lock", "threads_lock", "walk_seq",
    "medium_threads_lock",
]
HOT_BSS_ARRAYS = [("page/topology.c.o", "nodes"), "cpu_node", "cpu_zone", "zone_table"]


def bss_entry(e):
    obj, name = e if isinstance(e, tuple) else ("", e)
    return f"    *{obj}(.bss.{name})"


def bss_block():
    """The linker script's part that places HOT_BSS before the .bss."""
    lines = ["/* The .bss variables small programs write, first (tools/hot_text.py,",
             " * HOT_BSS): on .data's last page and the next two. */",
             "SECTIONS", "{", "  .bss.pc_hot : {", "    *crtbegin*.o(.bss .bss.*)"]
    lines += [bss_entry(e) for e in HOT_BSS]
    lines += ["    . = ALIGN(64); /* written while the program runs */"]
    lines += [bss_entry(e) for e in HOT_BSS_WRITTEN]
    lines += ["    . = ALIGN(64); /* nodes[0] is read on every page allocation */"]
    lines += ["    /* arrays */"]
    lines += [bss_entry(e) for e in HOT_BSS_ARRAYS]
    lines += ["  }", "}", "INSERT BEFORE .bss;", ""]
    return "\n".join(lines)


# tests/hot-text.sh's list: start-up, malloc, free, calloc, realloc and
# their common slow paths must lie in the first window; so must the
# contention slow paths that tests/unit/os/library_layout.sh checks (put
# first too, so that growth elsewhere in the list cannot push them out).
# realloc and pc_realloc (1.8 kB) are not among them since main a86c69a:
# the benchmarks do not call them, and with them the benchmarks' part no
# longer fit the window; they come with ls's tier, right after it.
REQUIRED_FIRST = ["malloc", "free", "calloc", "pc_malloc", "pc_free", "pc_calloc",
                  "pc_malloc_init", "pc_once_slow", "life_constructor",
                  "malloc_slow", "free_slow", "sheaf_alloc_slow", "sheaf_free_slow",
                  "slab_alloc_slow", "zone_grow", "zone_spare_remap", "os_map_at",
                  "barn_grow_locked", "pcp_over_high", "pc_spin_lock_contended",
                  "lock_acquire_slow"]


def hot_section_offset(lib):
    """Bytes from the start of the R+X segment to .text.pc_hot (.init and
    .plt), or None if the library has no such section."""
    out = subprocess.run(["readelf", "-lSW", lib], check=True, capture_output=True, text=True).stdout
    hot = text = None
    for line in out.splitlines():
        w = line.replace("[ ", "[").split()
        if len(w) > 3 and w[1] == ".text.pc_hot":
            hot = int(w[3], 16)
        if len(w) > 7 and w[0] == "LOAD" and w[-2] == "E" and text is None:
            text = int(w[2], 16)
    return hot - text if hot is not None and text is not None else None


def function_sizes(lib):
    """Bytes of each input section .text.NAME (its symbols, each rounded
    to the 16-byte alignment of functions), for the size comments."""
    out = subprocess.run(["nm", "-S", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    sizes = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tTwW" and ".cold" not in f[3]:
            n = section_name(f[3])
            sizes[n] = sizes.get(n, 0) + (int(f[1], 16) + 15) // 16 * 16
    return sizes


def probe_hits():
    """Hits of each of our probes so far (tracefs uprobe_profile)."""
    hits = {}
    with open(os.path.join(TRACEFS, "uprobe_profile")) as f:
        for line in f:
            w = line.split()
            if len(w) >= 3 and w[1].startswith("f") and w[1][1:].isdigit():
                hits[int(w[1][1:])] = int(w[2])
    return hits


def trace_workloads(lib, funcs, workloads):
    """For each workload, the indices (into funcs) of the functions it
    entered: an uprobe on every function, counted in uprobe_profile (the
    trace buffer itself is not read, so a long run loses nothing)."""
    inst = os.path.join(TRACEFS, "instances", GROUP)
    events = os.open(os.path.join(TRACEFS, "uprobe_events"), os.O_WRONLY | os.O_APPEND)
    for i, (addr, _) in enumerate(funcs):  # one probe a write(2)
        os.write(events, f"p:{GROUP}/f{i} {lib}:0x{addr:x}\n".encode())
    os.makedirs(inst, exist_ok=True)
    entered = []
    try:
        with open(os.path.join(inst, "buffer_size_kb"), "w") as f:
            f.write("64")
        with open(os.path.join(inst, "events", GROUP, "enable"), "w") as f:
            f.write("1")
        for argv in workloads:
            before = probe_hits()
            env = dict(os.environ, LD_PRELOAD=lib)
            subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
            after = probe_hits()
            fired = [i for i, n in after.items() if n > before.get(i, 0)]
            entered.append(fired)
            print(f"{' '.join(argv)}: {len(fired)} functions", file=sys.stderr)
    finally:
        with open(os.path.join(inst, "events", GROUP, "enable"), "w") as f:
            f.write("0")
        os.rmdir(inst)
        for i in range(len(funcs)):
            os.write(events, f"-:{GROUP}/f{i}\n".encode())
        os.close(events)
    return entered


TEXT_RESIDENT_C = r"""
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static char maps[1 << 20];
__attribute__((destructor)) static void text_resident(void)
{
	int m = open("/proc/self/maps", O_RDONLY), pm = open("/proc/self/pagemap", O_RDONLY);
	long n, t = 0;
	while ((n = read(m, maps + t, sizeof(maps) - 1 - t)) > 0)
		t += n;
	maps[t] = 0;
	for (char *l = maps; l && *l;) {
		char *e = strchr(l, '\n');
		if (e)
			*e = 0;
		unsigned long a, b;
		char perm[8];
		if (strstr(l, "libpcmalloc") && sscanf(l, "%lx-%lx %4s", &a, &b, perm) == 3 && perm[2] == 'x') {
			unsigned long on = 0;
			for (unsigned long p = a; p < b; p += 4096) {
				uint64_t v = 0;
				if (pread(pm, &v, 8, (off_t)(p / 4096 * 8)) == 8 && v >> 63)
					on++;
			}
			/* A file, not stderr: ls closes stderr before the destructors. */
			int out = open(getenv("PC_TEXT_RESIDENT_OUT"), O_WRONLY | O_APPEND | O_CREAT, 0644);
			dprintf(out, "text-resident %lu %lu\n", on * 4, (b - a) / 1024);
			close(out);
		}
		l = e ? e + 1 : 0;
	}
}
"""


def check(lib, workloads, tmp):
    """Resident text of the library at exit of each workload."""
    src = os.path.join(tmp, "text_resident.c")
    so = os.path.join(tmp, "text_resident.so")
    with open(src, "w") as f:
        f.write(TEXT_RESIDENT_C)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", so, src], check=True)
    fd = os.open(lib, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # read back as installed
    os.close(fd)
    out = os.path.join(tmp, "text_resident.out")
    for argv in workloads:
        if os.path.exists(out):
            os.unlink(out)
        env = dict(os.environ, LD_PRELOAD=lib + ":" + so, PC_TEXT_RESIDENT_OUT=out)
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out if os.path.exists(out) else os.devnull) as f:
            res = [l.split()[1:] for l in f if l.startswith("text-resident ")]
        kb = f"{res[-1][0]} of {res[-1][1]} kB" if res else "?"
        print(f"{kb:>16}  {' '.join(os.path.basename(a) if i == 0 else a for i, a in enumerate(argv))}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="cmake/hot-text.ld")
    ap.add_argument("--check", action="store_true",
                    help="report the text each workload keeps resident (no root, writes nothing)")
    args = ap.parse_args()
    lib = os.path.realpath(os.path.join(args.build, "libpcmalloc.so"))
    bench = os.path.join(args.build, "bench")
    with tempfile.TemporaryDirectory() as tmp:
        empty = os.path.join(tmp, "empty")
        once = os.path.join(tmp, "once")
        for exe, body in ((empty, "return 0;"),
                          (once, "void *p = malloc(16); __asm__ volatile(\"\" :: \"r\"(p) : \"memory\");"
                                 " free(p); return 0;")):
            src = exe + ".c"
            with open(src, "w") as f:
                f.write("#include <stdlib.h>\nint main(void) { " + body + " }\n")
            subprocess.run(["cc", "-O2", "-o", exe, src], check=True)
        # Most common first: no allocation, one, the small and larson
        # benchmarks (one and two threads; twice, as some slow paths depend
        # on where the threads run), ordinary programs, one that forks.
        small = os.path.join(bench, "bench_small")
        larson = os.path.join(bench, "bench_larson")
        bench = [[empty], [once]] + 2 * [[small, "--threads", "1"], [small, "--threads", "2"],
                                         [larson, "--threads", "2", "--steps", "200000"]]
        others = [["ls", "-la", "/usr/lib"],
                  [sys.executable, "-c", "import json; print(json.dumps(list(range(1000))))"],
                  [sys.executable, "-c", "import os\nif os.fork() == 0: os._exit(0)\nos.wait()"]]
        workloads = bench + others
        if args.check:
            check(lib, bench[:5] + others[:2], tmp)  # each program once, not the fork
            return
        sections_from_archive(os.path.join(args.build, "libpcmalloc.a"))
        funcs = functions(lib)
        entered = trace_workloads(lib, funcs, workloads)
    tiers, seen = [], set()
    for fired in entered:
        tier = []
        for i in sorted(set(fired), key=lambda i: funcs[i][0]):  # address order within a tier
            for name in map(section_name, funcs[i][1]):
                if name not in seen:
                    seen.add(name)
                    tier.append(name)
        tiers.append(tier)
    # Some slow paths run only in some runs (contention, where threads
    # run): keep the names of the previous list that this run did not see
    # but the library still defines, before the last tier (the fork's,
    # which only forking programs need).
    defined = {section_name(n) for _, ns in funcs for n in ns}
    kept = []
    if os.path.exists(args.out):
        with open(args.out) as f:
            for line in f:
                w = line.split()
                if w and w[0].startswith("*(.text.") and len(w) == 2:
                    name = w[0][len("*(.text."):]
                    if name in defined and name not in seen:
                        seen.add(name)
                        kept.append(name)
    # The benchmarks' tiers, ls's, then the kept names (slow paths some runs
    # take), then python's and the fork's: a small program's functions lie
    # in the text's first 64 KiB (see --check).
    nbench = len(bench)
    labels = [" ".join([os.path.basename(w[0])] + w[1:3]).split("\n")[0].replace("*/", "")
              for w in workloads]
    order = list(zip(labels[:nbench + 1], tiers[:nbench + 1])) + [("kept from the previous list", kept)]
    order += list(zip(labels[nbench + 1:], tiers[nbench + 1:]))
    # The functions tests/hot-text.sh requires in the first window go first
    # whatever the workloads saw (ls's tier held realloc and pc_free), so
    # that growth of the list pushes out the rarest names, not these.
    required = [n for n in REQUIRED_FIRST if n in defined]
    order = [(label, [n for n in tier if n not in required]) for label, tier in order]
    order[0] = (order[0][0], required + order[0][1])
    names = [n for _, tier in order for n in tier]
    sizes = function_sizes(lib)
    # The benchmarks' part must fit the window that the
    # text's first fault maps: 64 KiB from the start of the R+X segment,
    # which .init and .plt open. Sizes from nm (the library was linked with
    # the previous list, so the estimate is the new list's within alignment).
    head = hot_section_offset(lib)
    bench_bytes = sum(sizes.get(n, 0) for _, tier in order[:nbench] for n in tier)
    if head is not None and head + bench_bytes > 0x10000:
        print(f"warning: the benchmarks' functions take {bench_bytes / 1024:.1f} kB after "
              f"{head} bytes of .init and .plt: beyond the first 64 KiB window "
              "(docs/footprint.md, \"2026-11-25, helper footprint\")", file=sys.stderr)
        sys.exit(1)  # before writing: the old list stays
    with open(args.out, "w") as out:
        out.write("/* cmake/hot-text.ld - the functions of libpcmalloc.so that programs enter,\n"
                  " * linked first, in the order tools/hot_text.py found them (the\n"
                  " * start-up and the paths an empty program, malloc(16), bench_small,\n"
                  " * bench_larson, ls, python3 and a fork enter). Generated; rerun the tool after\n"
                  " * large changes (docs/footprint.md, \"Cut: the functions programs enter first\").\n"
                  " * A name the linker does not find is skipped: a stale list costs pages,\n"
                  " * never correctness. */\n")
        out.write("SECTIONS\n{\n  .text.pc_hot : {\n")
        # Constructors and destructors (GCC's .text.startup and .text.exit);
        # atexit and pthread_atfork, libc's static stubs, called at start-up;
        # _fini, run at exit; the rseq abort handlers (rseq_x86_64.h).
        out.write("    *(.text.startup .text.startup.*)\n")
        out.write("    *(.text.exit .text.exit.*)\n")
        out.write("    *crtbegin*.o(.text .text.*)\n")  # frame_dummy, __do_global_dtors_aux
        out.write("    *libc_nonshared.a:*(.text .text.*)\n")
        out.write("    KEEP (*(SORT_NONE(.fini)))\n")
        out.write("    *(__rseq_failure)\n")
        total = 0
        for i, (label, tier) in enumerate(order):
            if i == nbench:  # tests/hot-text.sh: what is above, in the first window
                out.write("    /* small programs: end */\n")
            total += sum(sizes.get(n, 0) for n in tier)
            out.write(f"    /* {label}: {len(tier)} new, {total / 1024:.1f} kB in all */\n")
            for n in tier:
                out.write(f"    *(.text.{n} .text.{n}.*)\n")
        out.write("  }\n}\nINSERT BEFORE .text;\n")
        out.write(EH_FRAME_AFTER_TEXT)
        out.write(rodata_block(names))
        out.write(bss_block())
    print(f"{len(names)} functions -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
