#!/usr/bin/env bash
# tests/programs/python.sh - part of CPython's own regression suite under
# pcmalloc, with PYTHONMALLOC=malloc so that every Python object comes from
# malloc (not from pymalloc's arenas). Allocation-heavy tests that are quick.
# The suite is run on pcmalloc only; if it fails there, it is run again on
# glibc: failing there too means the environment, not the allocator (77).
#   python.sh /path/to/libpcmalloc.so
#   (Debian packages: python3.11, libpython3.11-testsuite)
source "$(dirname "$0")/lib.sh" "$@"

PY=/usr/bin/python3.11 # not a pyenv shim: the Debian build, with its test suite
if [[ ! -x $PY ]] || ! "$PY" -c 'import test.libregrtest, test.test_list' 2>/dev/null; then
	echo "python: skipped: $PY or its test suite (libpython3.11-testsuite) is missing" >&2
	exit 77
fi

TESTS=(
	test_list test_dict test_set test_tuple test_deque test_heapq test_bisect
	test_collections test_unicode test_bytes test_string test_array test_struct
	test_memoryview test_json test_re test_pickle test_itertools test_sort
	test_functools test_weakref test_gc test_threading test_decimal
)

PC_TIMEOUT=${PC_TIMEOUT:-280} # twice that, should glibc's run be needed, fits ctest's 600

suite() {
	PYTHONMALLOC=malloc PYTHONHASHSEED=0 "$PY" -m test -j2 --timeout 300 "${TESTS[@]}"
}

pc_check "pcmalloc can be preloaded" pc_preload_works
pc_run pcmalloc suite
if ! pc_rc_zero pcmalloc || ! grep -q 'Tests result: SUCCESS' "$WORK/pcmalloc.out"; then
	tail -40 "$WORK/pcmalloc.out" >&2
	tail -20 "$WORK/pcmalloc.err" >&2
	pc_run glibc suite
	if ! pc_rc_zero glibc; then
		echo "python: the suite fails on glibc too: skipped" >&2
		tail -20 "$WORK/glibc.out" >&2
		exit 77
	fi
	pc_check "the suite passes on pcmalloc as on glibc" false
else
	pc_check "the suite passes on pcmalloc" true
fi
pc_check "no pcmalloc messages on stderr" pc_no_messages
pc_finish
