#!/bin/sh
# tests/unit/slab/dcas.sh - the slab fast paths need a lock-free 16-byte
# compare-and-swap: the shared library must contain cmpxchg16b and must not
# call libatomic's 16-byte helpers (__atomic_compare_exchange_16 takes a lock
# in libatomic on many builds, and __sync_val_compare_and_swap_16 is its
# legacy twin), neither as a direct call nor through the PLT, nor import them.
#
# Usage: dcas.sh <path to libpcmalloc.so>   (CMake: $<TARGET_FILE:pcmalloc>)
# Exit: 0 pass, 1 fail, 77 skipped (no objdump, or a ThreadSanitizer build,
# where pc_dcas uses the __atomic builtin on purpose so that TSan sees it).
set -u

lib="${1:-}"
if [ -z "$lib" ] || [ ! -f "$lib" ]; then
	echo "dcas.sh: usage: dcas.sh <libpcmalloc.so> (got '${lib}')" >&2
	exit 1
fi
OBJDUMP="${OBJDUMP:-objdump}"
NM="${NM:-nm}"
if ! command -v "$OBJDUMP" >/dev/null 2>&1; then
	echo "dcas.sh: $OBJDUMP not found; skipped"
	exit 77
fi

tmp="${TMPDIR:-/tmp}/dcas.$$"
trap 'rm -f "$tmp"' EXIT INT TERM
if ! "$OBJDUMP" -d --no-show-raw-insn "$lib" >"$tmp" 2>/dev/null; then
	echo "dcas.sh: $OBJDUMP -d $lib failed" >&2
	exit 1
fi

# ThreadSanitizer builds use __atomic_compare_exchange_n on purpose.
if grep -q '__tsan_' "$tmp"; then
	echo "dcas.sh: ThreadSanitizer build; skipped"
	exit 77
fi

fail=0
count=$(grep -c 'cmpxchg16b' "$tmp")
if [ "$count" -eq 0 ]; then
	echo "FAIL: no cmpxchg16b instruction in $lib" >&2
	fail=1
else
	echo "ok: $count cmpxchg16b instructions"
fi

# Calls or tail jumps to the libatomic helpers (direct or via the PLT).
bad=$(grep -E '(call|jmp)[a-z]*[[:space:]].*<(__atomic_compare_exchange_16|__sync_val_compare_and_swap_16|__sync_bool_compare_and_swap_16)(@plt)?>' "$tmp")
if [ -n "$bad" ]; then
	echo "FAIL: $lib calls a 16-byte compare-and-swap helper:" >&2
	echo "$bad" | head -5 >&2
	fail=1
else
	echo "ok: no call to __atomic_compare_exchange_16 / __sync_*_compare_and_swap_16"
fi

# Nor may the library import them (a call through a function pointer would
# not show above).
if command -v "$NM" >/dev/null 2>&1; then
	imp=$("$NM" -D --undefined-only "$lib" 2>/dev/null |
		grep -E '__atomic_compare_exchange_16|__sync_(val|bool)_compare_and_swap_16')
	if [ -n "$imp" ]; then
		echo "FAIL: $lib imports:" >&2
		echo "$imp" >&2
		fail=1
	else
		echo "ok: no 16-byte compare-and-swap helper imported"
	fi
fi

if [ "$fail" -ne 0 ]; then
	exit 1
fi
echo "dcas.sh: pass"
exit 0
