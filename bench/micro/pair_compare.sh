#!/bin/bash
# bench/micro/pair_compare.sh - compare malloc+free pairs of several
# allocator libraries (two pcmalloc builds, peers), interleaved.
#
#   pair_compare.sh [-r ROUNDS] [-n ITERS] [-s SIZES] [-a API] [-i] [-c] NAME=LIB[:fb] ...
#
# LIB is a shared library for LD_PRELOAD ("glibc": none); ":fb" runs it with
# GLIBC_TUNABLES=glibc.pthread.rseq=0 (pcmalloc's per-thread fallback).
# Each round runs every NAME once (bench_malloc_pair --iters ITERS --sizes
# SIZES), so load changes hit every allocator alike; prints the median and
# the minimum over the rounds of ns per pair, per size (-c: the thread's CPU
# time per pair instead of wall time: on a shared machine it leaves out the
# time spent waiting for a CPU, not the caches other jobs disturb). -i adds callgrind
# instructions per malloc(64)+free pair: runs of 100000 and 300000 pairs,
# the difference / 200000 (rounded), less the benchmark loop's own 8 instructions
# (valgrind has no rseq, so pcmalloc runs its fallback there).
# -a: the pair of bench_malloc_pair --api (malloc, calloc, realloc,
# posix_memalign, aligned_alloc, new; default malloc; -i's "less 8" is the
# malloc loop's: the others' wrappers add their own few).
# BENCH=path/to/bench_malloc_pair (default: build/bench/bench_malloc_pair).
# Not a test: it asserts nothing about speed.
set -eu
rounds=5 iters=5000000 sizes=16,64,256 instr=0 field=ns_per_pair api=malloc
while getopts r:n:s:a:ic opt; do
	case $opt in
	r) rounds=$OPTARG ;; n) iters=$OPTARG ;; s) sizes=$OPTARG ;; a) api=$OPTARG ;; i) instr=1 ;;
	c) field=cpu_ns_per_pair ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
bench=${BENCH:-build/bench/bench_malloc_pair}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() { # spec, then bench arguments
	local lib=${1#*=} fb=
	shift
	case $lib in *:fb) fb=1 lib=${lib%:fb} ;; esac
	local env=()
	[ "$lib" != glibc ] && env+=("LD_PRELOAD=$lib")
	[ -n "$fb" ] && env+=("GLIBC_TUNABLES=glibc.pthread.rseq=0")
	env ${env[@]+"${env[@]}"} "$@"
}

for r in $(seq "$rounds"); do
	for spec in "$@"; do
		run "$spec" "$bench" --iters "$iters" --sizes "$sizes" --api "$api" |
			sed -n 's/.*"size":\([0-9]*\),.*"'$field'":\([0-9.]*\).*/\1 \2/p' >> "$out/${spec%%=*}"
	done
done
for spec in "$@"; do
	name=${spec%%=*}
	line=$(python3 - "$out/$name" <<'EOF'
import sys, statistics, collections
by = collections.OrderedDict()
for l in open(sys.argv[1]):
    size, ns = l.split()
    by.setdefault(size, []).append(float(ns))
print("  ".join("%s B: %.2f (min %.2f)" % (s, statistics.median(v), min(v)) for s, v in by.items()))
EOF
)
	if [ "$instr" = 1 ]; then
		ir() { run "$spec" valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bench" \
			--iters "$1" --sizes 64 --api "$api" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'; }
		a=$(ir 100000) b=$(ir 300000)
		line="$line  instructions: $(( (b - a + 100000) / 200000 - 8 ))"
	fi
	printf '%-16s %s\n' "$name" "$line"
done
