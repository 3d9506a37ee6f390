#!/bin/sh
# tests/valgrind/check.sh PROGRAM - run tests/valgrind/planted.c under
# memcheck and check that it reports the three planted errors, at their
# lines, and nothing else (a fourth error would be a false report caused by
# the allocator). somalloc=nouserintercepts: memcheck must not replace the
# malloc linked into the program (pcmalloc's) with its own.
prog=$1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
valgrind --tool=memcheck --soname-synonyms=somalloc=nouserintercepts \
	--leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite \
	"$prog" >"$log" 2>&1
status=0
check() {
	if [ "$1" -gt 0 ]; then echo "ok: $2"; else echo "MISSING: $2"; status=1; fi
}
# An invalid read reported at a line: the error line, then "at ...(planted.c:N)".
at_line() { grep -A1 "Invalid read of size 1" "$log" | grep -c "main (planted.c:$1)"; }
check "$(at_line 58)" "read one byte past a 3000-byte block (line 58)"
check "$(grep -c "0 bytes after a .*block of size 3,000 alloc'd" "$log")" "... described as past the block"
check "$(at_line 63)" "read of a freed 32-byte block (line 63)"
check "$(grep -A2 "Invalid read of size 1" "$log" | grep -A1 "planted.c:63" | grep -c "free'd")" "... described as freed"
check "$(grep -c "definitely lost: 100 bytes in 1 blocks" "$log")" "the leaked 100-byte block"
check "$(grep -A2 "100 bytes in 1 blocks are definitely lost" "$log" | grep -c "planted.c:64")" "... allocated at line 64"
check "$(grep -c "planted: done" "$log")" "the program ran to its end"
check "$(grep -c "ERROR SUMMARY: 3 errors from 3 contexts" "$log")" "no other error"
[ $status -eq 0 ] || cat "$log"
exit $status
