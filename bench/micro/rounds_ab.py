#!/usr/bin/env python3
"""bench/micro/rounds_ab.py - seed 002's Tests A and B per round and their
sum, several allocator libraries interleaved (docs/sheaves.md, "2026-11-25,
helper slabfree").

    rounds_ab.py PROCESSES "BENCH ARGS" NAME=LIB ...

As bench/micro/rounds.py (bench_tests_af --rounds 1 once per library per
process, the order rotated, each size's first SKIP rounds dropped, default
3), for Tests A and B only, and with a third row per size: A + B of the same
round. A change that makes B's frees touch less memory moves cache misses
into the next round's A (its first stores), so B alone can improve while
the pair does not: the sum is what a burst of allocations and frees costs.
Prints, per library, the minimum, 25th percentile and median of the
remaining rounds' cycles per operation over all processes (the minimum and
the 25th percentile say most on a loaded machine), and the load average.
BENCH=path/to/bench_tests_af (default build/bench/bench_tests_af).
"""
import collections
import re
import statistics

from rounds import setup  # the same directory: the runs, interleaved

LINE = re.compile(r"A (\d+) r(\d+) (\d+) cyc .*\(B (\d+),")


def main():
    libs, skip, lines = setup(__doc__, ["--tests", "AB"])
    data = collections.defaultdict(lambda: collections.defaultdict(list))
    for name, line in lines:
        m = LINE.match(line)
        if not m or int(m.group(2)) < skip:
            continue
        size, a, b = int(m.group(1)), int(m.group(3)), int(m.group(4))
        data[(size, "A")][name].append(a)
        data[(size, "B")][name].append(b)
        data[(size, "A+B")][name].append(a + b)
    print("load", " ".join(open("/proc/loadavg").read().split()[:3]))
    print("size test " + " ".join("%24s" % n for n, _ in libs))
    for key in sorted(data):
        row = []
        for n, _ in libs:
            v = sorted(data[key][n])
            row.append("%d / %d / %g" % (v[0], v[len(v) // 4], statistics.median(v)) if v else "-")
        print("%5d %-4s" % key + " ".join("%24s" % r for r in row))
    print("(min / p25 / median cycles per operation)")


if __name__ == "__main__":
    main()
