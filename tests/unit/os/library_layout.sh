#!/bin/sh
# tests/unit/os/library_layout.sh - the layout of libpcmalloc.so that keeps
# a small program's pages of it few (docs/footprint.md, "2026-11-25, helper
# footprint"); tests/hot-text.sh checks the rest:
#  - with window=1 (an optimised build: cmake/hot-text.ld was made from one),
#    the slow paths that bench_larson and bench_small --threads 2 take under
#    contention lie in the 64 KiB from the start of the text mapping, which
#    the text's first fault (the loader calls _init, at that start) maps
#    whole; tools/hot_text.py puts them there (the names kept from the
#    previous list come right after the benchmarks'). A name the library no
#    longer has is reported, not failed (renamed or inlined: make the list
#    again);
#  - .eh_frame and .eh_frame_hdr are not in .rodata's segment: the script
#    puts them after .text, so that reading .rodata does not map the unwind
#    tables (one fault-around window held both);
#  - the .bss variables that small programs write (cmake/hot-text.ld's
#    .bss.pc_hot list, tools/hot_text.py HOT_BSS) lie in .bss.pc_hot, before
#    the rest of the .bss, and its scalars (the names before nodes, the first
#    array) within 4 KiB of each other: on the page where .data ends (the
#    relocations write it anyway) and the next, not spread over the 17 MB of
#    .bss (docs/footprint.md, "2026-11-25 morning, helper footprint2"). A
#    listed name the library does not define is reported, not failed;
#  - .rodata.pc_hot (the read-only data small programs read: the size class
#    tables, the strings of the functions in the text's list, the compiler's
#    constants) lies in the first segment, which the loader reads (resident
#    whole), so that the .rodata segment stays out of a small program's RSS;
#    pc_class_of8 and pc_class_size are in it; with window=1, no code of
#    .text.pc_hot refers to the .rodata segment (objdump: a literal or
#    constant of a hot function left there maps the segment again);
#  - pc_sheaf_slots_offset (malloc's and free's fast paths read it) and
#    slab_mutex (written while the program runs) on different cache lines,
#    nodes (read on every page allocation) and medium_threads_lock too;
#  - with window=1, at run time: a program that calls malloc and free writes
#    no page of the library's .bss but .data's last page, the next two and
#    the region table's own (present and exclusively mapped in pagemap),
#    with rseq and in thread mode; a start-up variable missing from the list
#    adds a page. A page count, no timing; skipped (said in the last line)
#    with THP "always" (a huge page would back the .bss), on more than one
#    node and without a C compiler.
#
# Usage: library_layout.sh LIBPCMALLOC_SO window=0|1
# Prints "N passed, N failed"; exits 1 when any check fails.
set -u
lib=${1:?usage: library_layout.sh LIB window=0|1}
inwindow=${2:-window=0}
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "library_layout: $*" >&2; fail=$((fail + 1)); }

text=$(readelf -lW "$lib" | awk '$1 == "LOAD" && $NF ~ /^0x/ && $(NF - 1) == "E" { print $3; exit }')
if [ -n "$text" ]; then ok; else bad "$lib has no R+X segment"; fi
window=$((${text:-0} / 4096 * 4096 + 65536))
if [ "$inwindow" = window=1 ]; then
	funcs=$(nm --defined-only "$lib" | awk '$2 ~ /^[tTwW]$/ { print $3, $1 }')
	found=0
	for f in barn_grow_locked pcp_over_high pc_spin_lock_contended lock_acquire_slow; do
		addr=$(echo "$funcs" | awk -v f="$f" '$1 == f { print $2; exit }')
		[ -n "$addr" ] && found=$((found + 1))
		if [ -z "$addr" ]; then
			echo "library_layout: $f is not in $lib (renamed? rerun tools/hot_text.py and update this list)" >&2
		elif [ $((0x$addr)) -ge "$window" ]; then
			bad "$f (0x$addr) is not in the text's first 64 KiB (below $(printf 0x%x "$window")): rerun tools/hot_text.py"
		else
			ok
		fi
	done
	if [ "$found" -eq 0 ]; then bad "none of the slow paths checked is in $lib: update this list"; fi
fi

# The segment that holds .rodata must not hold the unwind tables.
if readelf -lW "$lib" | awk '/Segment Sections/ { s = 1; next }
	s && / \.rodata / && /\.eh_frame/ { f = 1 } END { exit !f }'; then
	bad ".eh_frame is in .rodata's segment (cmake/hot-text.ld: EH_FRAME_AFTER_TEXT)"
else
	ok
fi
# The written .bss variables, first and together.
script=$(dirname "$0")/../../../cmake/hot-text.ld
set -- $(readelf -SW "$lib" | sed -n 's/.* \.bss\.pc_hot  *NOBITS  *\([0-9a-f]*\) [0-9a-f]* \([0-9a-f]*\).*/\1 \2/p')
if [ $# -eq 2 ]; then ok; else bad "$lib has no .bss.pc_hot section (cmake/hot-text.ld: tools/hot_text.py HOT_BSS)"; fi
hstart=$((0x${1:-0})) hend=$((0x${1:-0} + 0x${2:-0}))
set -- $(readelf -SW "$lib" | sed -n 's/.* \.bss  *NOBITS  *\([0-9a-f]*\) [0-9a-f]* \([0-9a-f]*\).*/\1 \2/p')
if [ $# -eq 2 ] && [ $((0x$1)) -ge "$hend" ]; then ok; else bad ".bss.pc_hot is not before .bss"; fi
bend=$((0x${1:-0} + 0x${2:-0}))
syms=$(nm -S --defined-only "$lib" | awk 'NF == 4 { print $4, $1, $2, $3 }')
bsyms=$(echo "$syms" | awk '$4 ~ /^[bB]$/')
# Each entry: [*OBJECT](.bss.NAME) (NAME.* for the numbered statics:
# state.0, started.0). Unqualified, every .bss symbol of that name must be
# in .bss.pc_hot; qualified (a name other objects may use too), one of them.
lo= hi= arrays=0 found=0
entries=$(sed -n 's/^ *\(\*[^ ]*(\.bss\.[^ )]*)\)$/\1/p; s|^ *\(/\* arrays \*/\)$|\1|p' "$script")
while read -r line; do
	case "$line" in
	"/* arrays */") arrays=1; continue ;;
	"*("*) qual=0 ;;
	*) qual=1 ;;
	esac
	pat=${line#*(.bss.}
	pat=${pat%)}
	places=$(echo "$bsyms" | awk -v p="$pat" '{ n = $1; if (p ~ /\.\*$/) { sub(/\.[0-9]+$/, "", n); n = n ".*" } }
		n == p { print $2 ":" $3 }')
	if [ -z "$places" ]; then
		echo "library_layout: cmake/hot-text.ld places .bss.$pat, which $lib does not define (rerun tools/hot_text.py)" >&2
		continue
	fi
	found=$((found + 1)) inside=0 outside=
	for place in $places; do
		a=$((0x${place%%:*})) z=$((0x${place#*:}))
		if [ "$a" -lt "$hstart" ] || [ $((a + z)) -gt "$hend" ]; then
			outside="$outside $(printf 0x%x "$a")"
			continue
		fi
		inside=$((inside + 1))
		[ "$arrays" = 1 ] && continue
		[ -z "$lo" ] || [ "$a" -lt "$lo" ] && lo=$a
		[ -z "$hi" ] || [ $((a + z)) -gt "$hi" ] && hi=$((a + z))
	done
	if [ "$inside" -gt 0 ] && { [ "$qual" = 1 ] || [ -z "$outside" ]; }; then ok; else
		bad ".bss.$pat is not in .bss.pc_hot (at$outside)"
	fi
done <<ENTRIES
$entries
ENTRIES
if [ "$found" -gt 0 ]; then ok; else bad "none of cmake/hot-text.ld's .bss names is in $lib"; fi
if [ -n "$lo" ] && [ $((hi - lo)) -le 4096 ]; then ok; else
	bad "the written .bss scalars span $(printf 0x%x "${lo:-0}")-$(printf 0x%x "${hi:-0}"): more than 4 KiB"
fi
# What fast paths read and what a running program writes, on
# different cache lines (the script's ALIGN(64) before and after the
# written group): pc_sheaf_slots_offset and slab_mutex, nodes (nodes[0] is
# read on every page allocation) and medium_threads_lock.
for pair in pc_sheaf_slots_offset:slab_mutex nodes:medium_threads_lock; do
	x=$(echo "$bsyms" | awk -v n="${pair%%:*}" '$1 == n { print $2; exit }')
	y=$(echo "$bsyms" | awk -v n="${pair#*:}" '$1 == n { print $2; exit }')
	if [ -n "$x" ] && [ -n "$y" ] && [ $((0x$x / 64)) -ne $((0x$y / 64)) ]; then ok; else
		bad "${pair%%:*} (0x${x:-?}) and ${pair#*:} (0x${y:-?}) share a cache line"
	fi
done
# The hot read-only data, in the first segment.
first=$(readelf -lW "$lib" | awk '$1 == "LOAD" && $2 == "0x000000" { print $5; exit }')
set -- $(readelf -SW "$lib" | sed -n 's/.* \.rodata\.pc_hot  *PROGBITS  *\([0-9a-f]*\) [0-9a-f]* \([0-9a-f]*\).*/\1 \2/p')
if [ $# -eq 2 ] && [ -n "$first" ] && [ $((0x$1 + 0x$2)) -le $((first)) ]; then ok; else
	bad ".rodata.pc_hot is missing or not in the first segment (cmake/hot-text.ld: tools/hot_text.py HOT_RODATA)"
fi
rstart=$((0x${1:-0})) rend=$((0x${1:-0} + 0x${2:-0}))
for n in pc_class_of8 pc_class_size; do
	a=$(echo "$syms" | awk -v n="$n" '$1 == n { print $2; exit }')
	if [ -n "$a" ] && [ $((0x$a)) -ge "$rstart" ] && [ $((0x$a)) -lt "$rend" ]; then ok; else
		bad "$n (0x${a:-?}) is not in .rodata.pc_hot"
	fi
done
if [ "$inwindow" = window=1 ]; then
	# No code of .text.pc_hot refers to the .rodata segment (the third
	# LOAD, read-only): a string or constant of a hot function left there
	# maps the whole segment (tools/hot_text.py, HOT_RODATA_STRINGS).
	set -- $(readelf -lW "$lib" | awk '$1 == "LOAD" && $7 == "R" && $8 ~ /^0x/ && $2 != "0x000000" { print $3, $5; exit }')
	ro=$((${1:-0})) roend=$((${1:-0} + ${2:-0}))
	refs=$(objdump -d --no-show-raw-insn -j .text.pc_hot "$lib" |
	       awk '/^[0-9a-f]+ <.*>:$/ { f = $2 } /# [0-9a-f]+ </ { for (i = 1; i < NF; i++) if ($i == "#") print f, $(i + 1) }' |
	       while read -r f a; do
		       if [ $((0x$a)) -ge "$ro" ] && [ $((0x$a)) -lt "$roend" ]; then echo "$f 0x$a"; fi
	       done | sort -u)
	if [ "$ro" -gt 0 ] && [ -z "$refs" ]; then ok; else
		bad "code of .text.pc_hot reads the .rodata segment: $(echo $refs) (list the literal's section in tools/hot_text.py)"
	fi
	# At run time: a program that calls malloc and free writes no page of
	# the library's .bss but .data's last page, the next two and the region
	# table's entry (pagemap: present and exclusively mapped), with rseq and
	# in thread mode. Skipped where a huge page could back the .bss (THP
	# "always"), on more than one node (NUMA start-up writes more) and
	# without a C compiler.
	thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
	nodes=$(cat /sys/devices/system/node/possible 2>/dev/null || echo 0)
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	cat > "$tmp/w.c" <<'CEOF'
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* Prints how many pages of [lo, hi) (offsets from libpcmalloc's first
 * mapping) are written, those wholly in [rlo, rhi) apart, and whether the
 * library was found. */
int main(int argc, char **argv)
{
	void *volatile p = malloc(16);
	free(p);
	if (argc != 5)
		return 2;
	unsigned long lo = strtoul(argv[1], 0, 16), hi = strtoul(argv[2], 0, 16);
	unsigned long rlo = strtoul(argv[3], 0, 16), rhi = strtoul(argv[4], 0, 16);
	FILE *m = fopen("/proc/self/maps", "r"), *pm = fopen("/proc/self/pagemap", "rb");
	char line[512];
	unsigned long base = 0, a, b, off, in = 0, rt = 0;
	while (m && pm && fgets(line, sizeof(line), m)) {
		if (sscanf(line, "%lx-%lx %*s %lx", &a, &b, &off) != 3)
			continue;
		if (!base && strstr(line, "libpcmalloc") && off == 0)
			base = a;
		for (unsigned long q = a; base && q < b; q += 4096) {
			uint64_t v = 0;
			if (q < base + lo || q >= base + hi)
				continue;
			if (fseek(pm, (long)(q / 4096 * 8), SEEK_SET) != 0 || fread(&v, 8, 1, pm) != 1)
				continue;
			if (!(v >> 63) || !((v >> 56) & 1)) /* not present, or the zero page */
				continue;
			if (q >= base + rlo && q + 4096 <= base + rhi) /* the table's own pages */
				rt++;
			else
				in++;
		}
	}
	printf("%lu %lu %d\n", in, rt, base != 0);
	return 0;
}
CEOF
	if echo "$thp" | grep -q '\[always\]' || [ "$nodes" != 0 ] || ! ${CC:-cc} -O1 -o "$tmp/w" "$tmp/w.c" 2>/dev/null; then
		echo "library_layout: the run-time check of written .bss pages skipped (THP: $thp; nodes: $nodes; or no C compiler)" >&2
		skipped=" (the run-time page count skipped)"
	else
		set -- $(echo "$syms" | awk '$1 == "pc_region_table" { print $2, $3; exit }')
		rlo=${1:-0} rhi=$(printf %x $((0x${1:-0} + 0x${2:-0})))
		for tun in "" glibc.pthread.rseq=0; do
			set -- $(env -i PATH="$PATH" GLIBC_TUNABLES="$tun" LD_PRELOAD="$lib" "$tmp/w" \
				 "$(printf %x $((hstart / 4096 * 4096)))" "$(printf %x "$bend")" "$rlo" "$rhi")
			if [ "${3:-0}" = 1 ] && [ "$1" -le 3 ] && [ "$2" -le 2 ]; then ok; else
				bad "a malloc and a free (GLIBC_TUNABLES=$tun) wrote ${1:-?} pages of the library's .bss besides the region table's ${2:-?} (at most 3 and 2: .data's last page and the next two; a start-up variable is missing from tools/hot_text.py HOT_BSS)"
			fi
		done
	fi
fi
echo "$pass passed, $fail failed${skipped:-}"
[ "$fail" -eq 0 ]
