#!/bin/sh
# The main job: a real program (tools/workload.py on the system Python) run
# on glibc's malloc and on pcmalloc, interleaved; prints time, peak RSS and
# the program's checksum for each run, and fails if the outputs differ.
set -e
build=${1:-build}
lib="$(cd "$build" && pwd)/libpcmalloc.so"
py=/usr/bin/python3.11
[ -x "$py" ] || py=/usr/bin/python3
script="$(dirname "$0")/workload.py"
printf '%-10s %8s %10s  %s\n' allocator seconds maxrss_kb output
for round in 1 2; do
	for alloc in glibc pcmalloc; do
		pre=""
		[ "$alloc" = pcmalloc ] && pre="$lib"
		out=$( { LD_PRELOAD="$pre" /usr/bin/time -f '%e %M' "$py" "$script" >/tmp/pcmalloc-main.$$ ; } 2>&1 )
		res=$(cat /tmp/pcmalloc-main.$$)
		printf '%-10s %8s %10s  %s\n' "$alloc" $out "$res"
		echo "$res" >>/tmp/pcmalloc-main-outputs.$$
	done
done
n=$(sort -u /tmp/pcmalloc-main-outputs.$$ | wc -l)
rm -f /tmp/pcmalloc-main.$$ /tmp/pcmalloc-main-outputs.$$
[ "$n" -eq 1 ] || { echo "outputs differ between allocators" >&2; exit 1; }
