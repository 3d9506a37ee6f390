#!/bin/sh
# tests/hot-text.sh - libpcmalloc.so is linked for a small footprint
# (docs/footprint.md, "Start-up and the library's own pages"):
#  - the functions programs enter come first, in the output section
#    .text.pc_hot that cmake/hot-text.ld makes (malloc, free, calloc,
#    realloc and the start-up are checked by name);
#  - every function cmake/hot-text.ld names still exists: a renamed or
#    removed function would silently drop out of the hot section (rerun
#    tools/hot_text.py);
#  - with relr=1 (the linker took -z pack-relative-relocs), the relative
#    relocations are packed (DT_RELR).
#
# Usage: hot-text.sh LIBPCMALLOC_SO HOT_TEXT_LD relr=0|1
# Prints "N passed, N failed"; exits 1 when any check fails.
set -u
lib=${1:?usage: hot-text.sh LIB HOT_TEXT_LD relr=0|1}
script=${2:?usage: hot-text.sh LIB HOT_TEXT_LD relr=0|1}
relr=${3:-relr=0}
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "hot-text: $*" >&2; fail=$((fail + 1)); }

# The hot section: start and size, in hex.
set -- $(readelf -SW "$lib" | sed -n 's/.*\.text\.pc_hot *PROGBITS *\([0-9a-f]*\) [0-9a-f]* \([0-9a-f]*\).*/\1 \2/p')
if [ $# -eq 2 ]; then ok; else bad "$lib has no .text.pc_hot section"; fi
start=$((0x${1:-0})) end=$((0x${1:-0} + 0x${2:-0}))

funcs=$(nm --defined-only "$lib" | awk '$2 ~ /^[tTwW]$/ { print $3, $1 }')
for f in malloc free calloc realloc pc_malloc_init pc_once_slow life_constructor; do
	addr=$(echo "$funcs" | awk -v f="$f" '$1 == f { print $2; exit }')
	if [ -z "$addr" ]; then
		bad "$f is not in $lib"
	elif [ $((0x$addr)) -ge "$start" ] && [ $((0x$addr)) -lt "$end" ]; then
		ok
	else
		bad "$f (0x$addr) is not in .text.pc_hot"
	fi
done

# Every function the script names, or one of its clones (NAME.part.0, ...);
# .text.startup and .text.exit are GCC's sections of constructors and
# destructors, not names.
names=$(echo "$funcs" | awk '{ sub(/\..*/, "", $1); print $1 }' | sort -u)
for n in $(sed -n 's/^ *\*(\.text\.\([A-Za-z0-9_]*\) .*/\1/p' "$script" | grep -vxE 'startup|exit'); do
	if echo "$names" | grep -qxF "$n"; then ok; else
		bad "cmake/hot-text.ld names $n, which $lib does not define (rerun tools/hot_text.py)"
	fi
done

if [ "$relr" = relr=1 ]; then
	if readelf -dW "$lib" | grep -q '(RELR)'; then ok; else bad "$lib has no DT_RELR"; fi
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
