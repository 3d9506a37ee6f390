#!/usr/bin/env python3
"""bench/micro/tests_af_compare.py - seed 002's Tests A-F (bench_tests_af) on
several allocator libraries, interleaved.

    tests_af_compare.py ROUNDS "BENCH ARGS" NAME=LIB[:fb] ...

LIB is a shared library for LD_PRELOAD (empty: the C library's malloc);
":fb" after NAME runs it with GLIBC_TUNABLES=glibc.pthread.rseq=0 (pcmalloc's
per-thread fallback). Each round runs the benchmark once per library, the
order rotated by one each round, so that load changes hit every library
alike; prints, per test, size and thread count, the median [min-max] over
the rounds of the benchmark's cycles_per_op, and the load average at the
end. BENCH=path/to/bench_tests_af (default build/bench/bench_tests_af).
Example (docs/sheaves.md, "2026-11-24 evening, helper small"):

    bench/micro/tests_af_compare.py 7 "--threads 16 --tests D --sizes 256,512 --reps 5" \\
        base=/tmp/base.so new=build/libpcmalloc.so mi=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2
"""
import collections
import json
import os
import statistics
import subprocess
import sys


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rounds, args = int(sys.argv[1]), sys.argv[2].split()
    libs = [a.split("=", 1) for a in sys.argv[3:]]
    bench = os.environ.get("BENCH", "build/bench/bench_tests_af")
    cycles = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in range(rounds):
        for name, lib in libs[r % len(libs):] + libs[:r % len(libs)]:
            env = dict(os.environ)
            if lib:
                env["LD_PRELOAD"] = lib
            if name.endswith(":fb"):
                env["GLIBC_TUNABLES"] = "glibc.pthread.rseq=0"
            out = subprocess.run([bench] + args, capture_output=True, text=True, env=env).stdout
            for line in out.splitlines():
                if line.startswith('{"bench":"tests_af"'):
                    d = json.loads(line)
                    cycles[(d["test"], d["size"], d["threads"])][name].append(d["cycles_per_op"])
    names = [n for n, _ in libs]
    print("load %.1f %.1f %.1f" % os.getloadavg())
    print("%-14s" % "test size thr" + "".join("%20s" % n for n in names))
    for key in sorted(cycles):
        row = "%-14s" % ("%s %d %d" % key)
        for n in names:
            v = cycles[key][n]
            row += "%20s" % ("%.0f [%.0f-%.0f]" % (statistics.median(v), min(v), max(v)) if v else "-")
        print(row)


if __name__ == "__main__":
    main()
