#!/bin/sh
# Runs the micro-benchmarks of bench/ and writes their JSON lines to
# bench/results/<name>.json (one object per line). Not tests: they assert
# nothing; compare numbers only from one run on one machine.
set -e
build=${1:-build}
out="$(dirname "$0")/../bench/results"
mkdir -p "$out"
for b in "$build"/bench/bench_*; do
	name=$(basename "$b" | sed 's/^bench_//')
	echo "== $name" >&2
	"$b" | tee "$out/$name.json"
done
