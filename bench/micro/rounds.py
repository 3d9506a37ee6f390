#!/usr/bin/env python3
"""bench/micro/rounds.py - seed 002's Tests A, B and D per round, several
allocator libraries interleaved (docs/sheaves.md, "2026-11-24 night, helper
slabbulk").

    rounds.py PROCESSES "BENCH ARGS" NAME=LIB ...

Runs bench_tests_af --rounds 1 BENCH ARGS once per library per process
(LD_PRELOAD=LIB, nice -n 5), the order of the libraries rotated by one each
process, and reads the per-round lines it prints on stderr ("A 4096 r3 63
cyc 0 flt (B 79, 0 flt)", "D 1024 r5 55 cyc ..."). The first SKIP rounds
of each size (default 3: their page faults and first touches) are dropped;
for each test and size it prints, per library, the minimum, median and 25th
percentile of the remaining rounds' cycles per operation over all
processes, and the load average at the end. Per-round numbers of many
rounds say more than the benchmark's median of 5 on a loaded machine.
BENCH=path/to/bench_tests_af (default build/bench/bench_tests_af).
Example:

    bench/micro/rounds.py 5 "--threads 1 --tests AB --sizes 512,4096 --reps 12" \\
        base=/tmp/base.so new=build/libpcmalloc.so mi=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2
"""
import collections
import os
import re
import statistics
import subprocess
import sys

LINE = re.compile(r"(\w) (\d+) r(\d+) (\d+) cyc ")
B_PART = re.compile(r"\(B (\d+),")


def setup(usage, extra=()):
    """Parse PROCESSES "BENCH ARGS" NAME=LIB ... (exit with usage if short);
    return the libraries [(name, lib)], SKIP, and a generator of (name,
    stderr line) over the interleaved processes, each run with `extra` before
    BENCH ARGS (shared with bench/micro/rounds_ab.py)."""
    if len(sys.argv) < 4:
        sys.exit(usage)
    procs, args = int(sys.argv[1]), sys.argv[2].split()
    libs = [a.split("=", 1) for a in sys.argv[3:]]
    skip = int(os.environ.get("SKIP", "3"))
    bench = os.environ.get("BENCH", "build/bench/bench_tests_af")

    def lines():
        for p in range(procs):
            for name, lib in libs[p % len(libs):] + libs[:p % len(libs)]:
                env = dict(os.environ, LD_PRELOAD=lib)
                err = subprocess.run(["nice", "-n", "5", bench, "--rounds", "1"] + list(extra) + args,
                                     env=env, capture_output=True, text=True).stderr
                for line in err.splitlines():
                    yield name, line

    return libs, skip, lines()


def main():
    libs, skip, lines = setup(__doc__)
    data = collections.defaultdict(lambda: collections.defaultdict(list))
    for name, line in lines:
        m = LINE.match(line)
        if not m or int(m.group(3)) < skip:
            continue
        size = int(m.group(2))
        data[(m.group(1), size)][name].append(int(m.group(4)))
        mb = B_PART.search(line)
        if mb:
            data[("B", size)][name].append(int(mb.group(1)))
    print("load", " ".join(open("/proc/loadavg").read().split()[:3]))
    print("test  size " + " ".join("%24s" % n for n, _ in libs))
    for key in sorted(data):
        row = []
        for n, _ in libs:
            v = sorted(data[key][n])
            row.append("min %d med %g p25 %d" % (v[0], statistics.median(v), v[len(v) // 4])
                       if v else "-")
        print("%s %6d " % key + " ".join("%24s" % r for r in row))


if __name__ == "__main__":
    main()
