#!/usr/bin/env python3
"""bench/micro/perf_split.py - split a perf profile by the function on each
sample's stack, e.g. the timed loops of bench_tests_af.

    perf record -F 20000 -e cpu-clock --call-graph dwarf -o perf.data \\
        build/bench/bench_tests_af --threads 16 --tests D --sizes 256 --reps 60
    bench/micro/perf_split.py perf.data loop_alloc loop_free

For each FUNCTION given: how many samples have it on their stack, then the
functions those samples were in (self) and the functions on their stacks
(inclusive), as percentages of those samples, most first. Reads `perf
script -F ip,sym` (needs call graphs: --call-graph dwarf or -g).
"""
import collections
import subprocess
import sys


def samples(path):
    out = subprocess.run(["perf", "script", "-i", path, "-F", "ip,sym", "--no-demangle"],
                         capture_output=True, text=True).stdout
    cur = []
    for line in out.splitlines():
        if not line.strip():
            if cur:
                yield cur
            cur = []
            continue
        parts = line.split(None, 1)
        cur.append((parts[1] if len(parts) > 1 else "?").split("+")[0].strip())
    if cur:
        yield cur


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    stacks = list(samples(sys.argv[1]))
    for fn in sys.argv[2:]:
        sel = [s for s in stacks if fn in s]
        print("== %s: %d of %d samples" % (fn, len(sel), len(stacks)))
        if not sel:
            continue
        own = collections.Counter(s[0] for s in sel)
        inc = collections.Counter(f for s in sel for f in set(s))
        fmt = lambda c, k: ", ".join("%s %.1f%%" % (f, 100.0 * v / len(sel)) for f, v in c.most_common(k))
        print(" self: " + fmt(own, 18))
        print(" incl: " + fmt(inc, 30))


if __name__ == "__main__":
    main()
