#!/usr/bin/python3
"""tools/startup/measure.py - the interleaving driver of docs/footprint.md,
"2026-11-24 night, helper startup".

    python3 tools/startup/measure.py N spec.json [LAUNCHER]

spec.json maps a row name to [LIB or "-", PROGRAM, ARGS...]. Each row runs N
times through the launcher (tools/startup/launch.c, default ./launch), the
order of the rows rotated each repetition; printed: medians of wall ms, CPU
ms, peak RSS kB and minor faults, and the RSS range. tools/startup/spec.json
holds the rows of docs/footprint.md's table (run from the repository root):
/tmp/before/libpcmalloc.so is the library built from the commit compared
against, /tmp/empty and /tmp/once are built from
    int main(void) { return 0; }
    int main(void) { void *volatile p = malloc(1); (void)p; }
"""
import json
import os
import statistics
import subprocess
import sys

n = int(sys.argv[1])
spec = json.load(open(sys.argv[2]))
launcher = sys.argv[3] if len(sys.argv) > 3 else "./launch"
names = list(spec)
res = {k: [] for k in names}
for r in range(n):
    k = r % len(names)
    for name in names[k:] + names[:k]:
        out = subprocess.run([launcher] + spec[name], capture_output=True, text=True).stdout.split()
        res[name].append([int(x) for x in out])
print("load", os.getloadavg())
print("%-28s %8s %7s %7s %6s  %s" % ("name", "wall ms", "cpu ms", "rss kB", "minflt", "rss range"))
for name in names:
    rows = res[name]
    med = [statistics.median(col) for col in zip(*rows)]
    rss = [x[2] for x in rows]
    bad = [x[4] for x in rows if x[4] != 0]
    print("%-28s %8.2f %7.2f %7.0f %6.0f  %d-%d%s" % (name, med[0] / 1000, med[1] / 1000, med[2], med[3],
                                                     min(rss), max(rss), " FAIL %s" % bad if bad else ""))
