# tests/programs/lib.sh - shared by the real-program tests; sourced, not run.
#
#   source "$(dirname "$0")/lib.sh" "$@"     # $1: path of libpcmalloc.so
#
# Each test runs a workload twice, once on the C library's malloc and once
# with LD_PRELOAD=libpcmalloc.so, and compares what the two printed. Exit
# status: 0 passed, 1 failed, 77 skipped (the program is not installed).
#
# Helpers:
#   pc_need CMD...        skip (77) unless every CMD is on PATH
#   pc_run WHICH FUNC     run FUNC DIR in DIR=$WORK/WHICH (glibc or pcmalloc,
#                         the latter with LD_PRELOAD), stdout to
#                         $WORK/WHICH.out, stderr to $WORK/WHICH.err, exit
#                         status to $WORK/WHICH.rc; killed after PC_TIMEOUT s
#   pc_run_both FUNC      pc_run glibc FUNC, then pc_run pcmalloc FUNC
#   pc_check NAME CMD...  a named check: passes when CMD succeeds
#   pc_check_runs         the standard checks after pc_run_both
#   pc_finish             prints "N passed, N failed" and exits

set -u
export LC_ALL=C

PC_TEST=$(basename "$0" .sh)
if [[ $# -lt 1 || ! -f $1 ]]; then
	echo "usage: $0 /path/to/libpcmalloc.so (got: ${1:-nothing})" >&2
	echo "0 passed, 1 failed"
	exit 1
fi
PC_LIB=$(readlink -f "$1")
PC_PASSED=0
PC_FAILED=0
PC_T0=$SECONDS

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pcmalloc-$PC_TEST.XXXXXX")
# PC_KEEP=1 in the environment keeps the work directory for a look.
trap 'rc=$?; if [[ -n ${PC_KEEP:-} ]]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi; exit $rc' EXIT

pc_need() {
	local cmd
	for cmd in "$@"; do
		if ! command -v "$cmd" >/dev/null 2>&1; then
			echo "$PC_TEST: skipped: $cmd is not installed" >&2
			exit 77
		fi
	done
}

pc_check() {
	local name=$1
	shift
	if "$@"; then
		PC_PASSED=$((PC_PASSED + 1))
		echo "ok   $PC_TEST: $name"
	else
		PC_FAILED=$((PC_FAILED + 1))
		echo "FAIL $PC_TEST: $name" >&2
	fi
}

pc_finish() {
	echo "$PC_TEST: $((SECONDS - PC_T0)) s"
	echo "$PC_PASSED passed, $PC_FAILED failed"
	[[ $PC_FAILED -eq 0 ]] && exit 0
	exit 1
}

# Runs "$@" with pcmalloc preloaded.
pc_preloaded() {
	LD_PRELOAD="$PC_LIB${LD_PRELOAD:+:$LD_PRELOAD}" "$@"
}

# The library really is loaded into a preloaded program (a library that
# cannot be preloaded is skipped by ld.so with only a warning).
pc_preload_works() {
	pc_preloaded cat /proc/self/maps 2>"$WORK/preload.err" | grep -qF "$PC_LIB" &&
		! grep -q 'cannot be preloaded' "$WORK/preload.err"
}

# pc_run WHICH FUNC: runs FUNC DIR in DIR=$WORK/WHICH, with pcmalloc
# preloaded when WHICH is "pcmalloc", under a watchdog of PC_TIMEOUT seconds
# that kills the run's whole process group (servers included); whatever is
# left in that group when the run ends is killed too.
pc_run() {
	local which=$1 fn=$2 t0=$SECONDS job dog rc
	mkdir -p "$WORK/$which"
	set -m # background jobs get process groups of their own
	(
		[[ $which == pcmalloc ]] && export LD_PRELOAD="$PC_LIB${LD_PRELOAD:+:$LD_PRELOAD}"
		cd "$WORK/$which" && "$fn" "$WORK/$which"
	) >"$WORK/$which.out" 2>"$WORK/$which.err" &
	job=$!
	(
		sleep "${PC_TIMEOUT:-240}"
		echo "$PC_TEST: the $which run took over ${PC_TIMEOUT:-240} s: killed" >&2
		kill -KILL -- "-$job"
	) &
	dog=$!
	wait "$job"
	rc=$?
	kill -KILL -- "-$job" 2>/dev/null # whatever the run left behind
	kill -KILL -- "-$dog" 2>/dev/null
	wait "$dog" 2>/dev/null
	set +m
	echo "$rc" >"$WORK/$which.rc"
	echo "$PC_TEST: $which run: $((SECONDS - t0)) s, exit $rc"
}

pc_run_both() {
	pc_run glibc "$1"
	pc_run pcmalloc "$1"
}

pc_rc_zero() { [[ $(cat "$WORK/$1.rc") == 0 ]]; }

pc_same_output() {
	if cmp -s "$WORK/glibc.out" "$WORK/pcmalloc.out"; then
		return 0
	fi
	echo "--- output on glibc vs. pcmalloc:" >&2
	diff "$WORK/glibc.out" "$WORK/pcmalloc.out" | head -20 >&2
	return 1
}

# pcmalloc reports trouble on stderr with a "pcmalloc: " prefix.
pc_no_messages() {
	if grep -q 'pcmalloc: ' "$WORK/pcmalloc.err"; then
		grep 'pcmalloc: ' "$WORK/pcmalloc.err" | head -5 >&2
		return 1
	fi
	return 0
}

pc_show_err() {
	local which=$1
	if ! pc_rc_zero "$which"; then
		echo "--- tail of stderr of the $which run:" >&2
		tail -20 "$WORK/$which.err" >&2
	fi
}

pc_check_runs() {
	pc_show_err glibc
	pc_show_err pcmalloc
	pc_check "reference run on glibc succeeded" pc_rc_zero glibc
	pc_check "run on pcmalloc succeeded" pc_rc_zero pcmalloc
	pc_check "same output as on glibc" pc_same_output
	pc_check "no pcmalloc messages on stderr" pc_no_messages
}
