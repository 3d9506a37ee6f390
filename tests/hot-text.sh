#!/bin/sh
# tests/hot-text.sh - libpcmalloc.so is linked for a small footprint
# (docs/footprint.md, "Cut: the functions programs enter first, relocations
# packed"):
#  - the start-up, malloc, free, calloc, realloc and their common slow paths
#    (the first region's mapping included: zone_spare_remap, os_map_at)
#    are in .text.pc_hot (made by cmake/hot-text.ld) and, with window=1 (an
#    optimised build: the list was made from one), all but realloc within
#    the first 64 KiB of the text mapping: the window that the first fault
#    maps whole (the kernel's fault-around), so a small program needs no
#    other; so is everything the script lists before its "small programs:
#    end" marker (the benchmarks do not call realloc: it comes after);
#  - cmake/hot-text.ld still describes the library: at most 10 of the
#    functions it names are gone (renamed, inlined); each one gone is
#    reported (rerun tools/hot_text.py), but a few only cost pages;
#  - with relr=1 (the linker took -z pack-relative-relocs), the relative
#    relocations are packed (DT_RELR);
#  - the start-up's variables marked PC_STARTUP_DATA (src/os/os.h) lie in
#    .data, each on pages that a dynamic relocation writes (the loader's
#    writes fault them in anyway, so they cost no fault of their own;
#    docs/footprint.md, "2026-11-24 night, helper startup", item 5): their
#    names are the objects of section .data.pc_startup in libpcmalloc.a
#    beside the library, their places the library's symbols, the pages the
#    offsets `readelf -r` lists (.rela.dyn and, decoded, .relr.dyn).
#
# Usage: hot-text.sh LIBPCMALLOC_SO HOT_TEXT_LD relr=0|1 window=0|1
# Prints "N passed, N failed"; exits 1 when any check fails.
set -u
lib=${1:?usage: hot-text.sh LIB HOT_TEXT_LD relr=0|1}
script=${2:?usage: hot-text.sh LIB HOT_TEXT_LD relr=0|1}
relr=${3:-relr=0}
inwindow=${4:-window=0}
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "hot-text: $*" >&2; fail=$((fail + 1)); }

# The hot section: start and size, in hex.
set -- $(readelf -SW "$lib" | sed -n 's/.*\.text\.pc_hot *PROGBITS *\([0-9a-f]*\) [0-9a-f]* \([0-9a-f]*\).*/\1 \2/p')
if [ $# -eq 2 ]; then ok; else bad "$lib has no .text.pc_hot section"; fi
start=$((0x${1:-0})) end=$((0x${1:-0} + 0x${2:-0}))

# The first fault in the text maps the 64 KiB from the start of its
# mapping (the R+X segment's first page).
text=$(readelf -lW "$lib" | awk '$1 == "LOAD" && $8 == "E" { print $3; exit }')
window=$((${text:-0} / 4096 * 4096 + 65536))

funcs=$(nm --defined-only "$lib" | awk '$2 ~ /^[tTwW]$/ { print $3, $1 }')
for f in malloc free calloc realloc pc_malloc_init pc_once_slow life_constructor \
	 malloc_slow free_slow sheaf_alloc_slow sheaf_free_slow slab_alloc_slow zone_grow \
	 zone_spare_remap os_map_at; do
	addr=$(echo "$funcs" | awk -v f="$f" '$1 == f { print $2; exit }')
	if [ -z "$addr" ]; then
		bad "$f is not in $lib"
	elif [ $((0x$addr)) -lt "$start" ] || [ $((0x$addr)) -ge "$end" ]; then
		bad "$f (0x$addr) is not in .text.pc_hot"
	elif [ "$inwindow" = window=1 ] && [ "$f" != realloc ] && [ $((0x$addr)) -ge "$window" ]; then
		bad "$f (0x$addr) is not in the text's first 64 KiB (below $(printf 0x%x "$window")): .text.pc_hot grew; move rarer functions after it (tools/hot_text.py)"
	else
		ok
	fi
done

# With window=1: everything the script lists before "small programs: end"
# (the empty program's, malloc(1)'s, bench_small's and bench_larson's
# functions, and what is placed with them) lies in the first window: the
# names after the marker, placed after it, start below the window's end.
if [ "$inwindow" = window=1 ]; then
	after=$(sed -n '/small programs: end/,$ s/^ *\*(\.text\.\([A-Za-z0-9_]*\) .*/\1/p' "$script")
	first=$(for n in $after; do echo "$funcs" | awk -v n="$n" '$1 == n { print $2; exit }'; done |
		while read -r a; do if [ $((0x$a)) -ge "$start" ] && [ $((0x$a)) -lt "$end" ]; then echo $((0x$a)); fi; done |
		sort -n | head -1)
	if ! grep -q 'small programs: end' "$script"; then
		bad "cmake/hot-text.ld has no 'small programs: end' marker (rerun tools/hot_text.py)"
	elif [ -n "$first" ] && [ "$first" -le "$window" ]; then ok; else
		bad "the small programs' functions end at $(printf 0x%x "${first:-0}"), past the text's first 64 KiB ($(printf 0x%x "$window")): move rarer functions after the marker (tools/hot_text.py)"
	fi
fi

# Every function the script names, or one of its clones (NAME.part.0, ...);
# .text.startup and .text.exit are GCC's sections of constructors and
# destructors, not names.
names=$(echo "$funcs" | awk '{ sub(/\..*/, "", $1); print $1 }' | sort -u)
gone=0
for n in $(sed -n 's/^ *\*(\.text\.\([A-Za-z0-9_]*\) .*/\1/p' "$script" | grep -vxE 'startup|exit'); do
	if ! echo "$names" | grep -qxF "$n"; then
		echo "hot-text: cmake/hot-text.ld names $n, which $lib does not define" >&2
		gone=$((gone + 1))
	fi
done
if [ "$gone" -le 10 ]; then ok; else
	bad "$gone functions of cmake/hot-text.ld are gone: rerun tools/hot_text.py"
fi

# PC_STARTUP_DATA: in .data, on pages that relocations write.
archive=$(dirname "$lib")/libpcmalloc.a
names=$(objdump -t "$archive" 2>/dev/null | awk '/ O \.data\.pc_startup\t/ { print $NF }' | sort -u)
if [ -n "$names" ]; then ok; else bad "no PC_STARTUP_DATA variable in $archive (objdump -t)"; fi
set -- $(readelf -SW "$lib" | sed -n 's/.* \.data  *PROGBITS  *\([0-9a-f]*\) [0-9a-f]* \([0-9a-f]*\).*/\1 \2/p')
dstart=$((0x${1:-0})) dend=$((0x${1:-0} + 0x${2:-0}))
# 4 KiB pages holding a relocation's target: the offsets less their last
# three hex digits, leading zeroes dropped. The offset is the first field
# of a .rela.dyn line and of binutils 2.40's .relr.dyn lines (one address
# each), the third of binutils 2.42's indexed .relr.dyn rows ("0001:
# <bitmap> <address> ...", their continuations an address first); never
# another field (r_info, symbol values).
relpages=$(readelf -rW "$lib" |
	   awk '$1 ~ /^[0-9a-f]+:$/ { a = $3 } $1 ~ /^[0-9a-f]+$/ && length($1) >= 8 { a = $1 }
		a ~ /^[0-9a-f]+$/ && length(a) >= 8 { print substr(a, 1, length(a) - 3) } { a = "" }' |
	   sed 's/^0*//' | sort -u)
syms=$(nm -S --defined-only "$lib")
for n in $names; do
	places=$(echo "$syms" | awk -v n="$n" 'NF == 4 && $4 == n { print $1 ":" $2 }')
	[ -n "$places" ] || bad "PC_STARTUP_DATA $n is not in $lib"
	for place in $places; do
		a=$((0x${place%%:*})) z=$((0x${place#*:}))
		if [ "$a" -lt "$dstart" ] || [ $((a + z)) -gt "$dend" ]; then
			bad "PC_STARTUP_DATA $n ($(printf 0x%x "$a")) is not in .data"
			continue
		fi
		p=$((a >> 12)) written=1
		while [ "$p" -le $(((a + z - 1) >> 12)) ]; do
			if ! echo "$relpages" | grep -qx "$(printf %x "$p")"; then
				bad "PC_STARTUP_DATA $n ($(printf 0x%x "$a")) is on a page no relocation writes ($(printf 0x%x $((p << 12)))): it costs a fault of its own (src/os/os.h)"
				written=0
			fi
			p=$((p + 1))
		done
		[ "$written" = 0 ] || ok
	done
done

if [ "$relr" = relr=1 ]; then
	if readelf -dW "$lib" | grep -q '(RELR)'; then ok; else bad "$lib has no DT_RELR"; fi
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
