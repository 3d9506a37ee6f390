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
#    pc_class_of8 and pc_class_size are in it.
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
bss=$(readelf -SW "$lib" | sed -n 's/.* \.bss  *NOBITS  *\([0-9a-f]*\) .*/\1/p')
if [ -n "$bss" ] && [ $((0x$bss)) -ge "$hend" ]; then ok; else bad ".bss.pc_hot is not before .bss"; fi
syms=$(nm -S --defined-only "$lib" | awk 'NF == 4 && $3 ~ /^[bBdDrR]$/ { print $4, $1, $2 }')
lo= hi= arrays=0 found=0
for pat in $(sed -n 's/^ *\*(\.bss\.\([^ )]*\))$/\1/p' "$script"); do
	[ "$pat" = nodes ] && arrays=1
	# A name, or NAME.* for the numbered statics (state.0, started.0).
	places=$(echo "$syms" | awk -v p="$pat" '{ n = $1; if (p ~ /\.\*$/) { sub(/\.[0-9]+$/, "", n); n = n ".*" } }
		n == p { print $2 ":" $3 }')
	if [ -z "$places" ]; then
		echo "library_layout: cmake/hot-text.ld places .bss.$pat, which $lib does not define (rerun tools/hot_text.py)" >&2
		continue
	fi
	found=$((found + 1))
	for place in $places; do
		a=$((0x${place%%:*})) z=$((0x${place#*:}))
		if [ "$a" -lt "$hstart" ] || [ $((a + z)) -gt "$hend" ]; then
			bad ".bss.$pat ($(printf 0x%x "$a")) is not in .bss.pc_hot"
			continue
		fi
		ok
		[ "$arrays" = 1 ] && continue
		[ -z "$lo" ] || [ "$a" -lt "$lo" ] && lo=$a
		[ -z "$hi" ] || [ $((a + z)) -gt "$hi" ] && hi=$((a + z))
	done
done
if [ "$found" -gt 0 ]; then ok; else bad "none of cmake/hot-text.ld's .bss names is in $lib"; fi
if [ -n "$lo" ] && [ $((hi - lo)) -le 4096 ]; then ok; else
	bad "the written .bss scalars span $(printf 0x%x "${lo:-0}")-$(printf 0x%x "${hi:-0}"): more than 4 KiB"
fi
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
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
