#!/usr/bin/env python3
"""bench/micro/larson_small.py - bench_larson (2 and 16 threads) and
bench_small (1 and 2 threads) with several allocator libraries interleaved:
per round, each workload runs once per library (LD_PRELOAD, nice -n 5, the
order rotated each round); prints per workload and library the median and
minimum of the child's CPU seconds (user + system: less disturbed by the
other load of a shared machine than the elapsed time), the median elapsed
seconds, and the median and largest peak RSS the benchmark reported (docs/sheaves.md,
"2026-11-25, helper slabfree").

    larson_small.py ROUNDS NAME=LIB ...

BUILD=path (default build): where bench/bench_larson and bench/bench_small are.
"""
import collections
import json
import os
import resource
import statistics
import subprocess
import sys

WORKLOADS = [
    ("larson-2", ["bench_larson", "--threads", "2", "--steps", "2000000"]),
    ("larson-16", ["bench_larson", "--threads", "16", "--steps", "2000000"]),
    ("small-1", ["bench_small", "--threads", "1"]),
    ("small-2", ["bench_small", "--threads", "2"]),
]


def run(cmd, lib):
    env = dict(os.environ, LD_PRELOAD=lib)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(["nice", "-n", "5"] + cmd, env=env, capture_output=True, text=True).stdout
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    rec = [json.loads(l) for l in out.splitlines() if l.startswith("{")][-1]
    return cpu, rec["elapsed_s"], rec["peak_rss_kb"]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rounds = int(sys.argv[1])
    libs = [a.split("=", 1) for a in sys.argv[2:]]
    build = os.environ.get("BUILD", "build")
    data = collections.defaultdict(list)
    for r in range(rounds):
        for name, cmd in WORKLOADS:
            for lname, lib in libs[r % len(libs):] + libs[:r % len(libs)]:
                data[(name, lname)].append(run([os.path.join(build, "bench", cmd[0])] + cmd[1:], lib))
    print("load", " ".join(open("/proc/loadavg").read().split()[:3]))
    print("%-10s %-8s %10s %10s %10s %10s %10s" % ("workload", "lib", "cpu_med", "cpu_min", "wall_med",
                                                "rss_med", "rss_max"))
    for name, _ in WORKLOADS:
        for lname, _ in libs:
            v = data[(name, lname)]
            cpu = [x[0] for x in v]
            print("%-10s %-8s %10.4f %10.4f %10.4f %10d %10d" % (
                name, lname, statistics.median(cpu), min(cpu), statistics.median([x[1] for x in v]),
                statistics.median([x[2] for x in v]), max(x[2] for x in v)))


if __name__ == "__main__":
    main()
