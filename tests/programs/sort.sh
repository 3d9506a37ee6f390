#!/usr/bin/env bash
# tests/programs/sort.sh - GNU sort --parallel=4 under pcmalloc on a ~50 MB
# generated file: in memory, and with a small buffer (temporary files and
# merges), by whole line and by keys, unique; checksums compared with glibc's.
#   sort.sh /path/to/libpcmalloc.so      (Debian package: coreutils)
source "$(dirname "$0")/lib.sh" "$@"
pc_need sort perl sha256sum

# ~1.5 million lines, ~50 MB, deterministic (an LCG in exact integers).
perl -e '
	my $x = 12345;
	my $w = "qwertyuiopasdfghjklzxcvbnmmnbvcxzlkjhgfdsapoiuytrewq";
	for my $i (1 .. 1500000) {
		$x = ($x * 1103515245 + 12345) % 2147483648;
		my $y = ($x * 69069 + 1) % 4294967296;
		printf "%010d %s %d %x\n", $x % 1000000007, substr($w, $x % 40, 1 + $y % 12), $y % 100000, $y;
	}' >"$WORK/input.txt"

workload() {
	local in=$WORK/input.txt
	sort --parallel=4 -S 256M "$in" | sha256sum
	sort --parallel=4 -S 4M -T "$1" -k2,2 -k3,3n "$in" | sha256sum
	sort --parallel=4 -S 64M -u -r -t ' ' -k4,4 "$in" | sha256sum
}

pc_check "input generated" test -s "$WORK/input.txt"
pc_check "pcmalloc can be preloaded" pc_preload_works
pc_run_both workload
pc_check_runs
pc_check "three checksums" test "$(wc -l <"$WORK/pcmalloc.out")" -eq 3
pc_finish
