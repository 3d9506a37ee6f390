#!/usr/bin/python3
"""tools/startup/hwm.py - the peak RSS of docs/footprint.md, "2026-11-25,
helper footprint", read inside the process instead of from ru_maxrss.

    python3 tools/startup/hwm.py N CPU|- LIB... -- PROGRAM ARGS

PROGRAM has tools/startup/resident.c linked in. Each LIB ('-': the C
library's malloc) runs N times, the order rotated each time, pinned to CPU
unless '-'; printed, each a median (range): VmHWM from /proc/self/status at
exit, the resident kB that pagemap lists at exit, those of libc's mappings,
of the preloaded library's and of the anonymous ones (the heap's included).

Why not ru_maxrss: on Linux 6.2+ the RSS counters are per-CPU, and the peak
the kernel keeps for ru_maxrss is taken from their global part, which lags
each CPU's share by up to 31 pages (percpu_counter batching); the same
library file gave ru_maxrss 1248, 1312 or 1432 kB for an empty program from
run to run. /proc/self/status sums the counters.
"""
import os
import statistics
import subprocess
import sys


def load(text):
    """[(lo, hi, perm, offset, path, resident pages, [(first, end), ...])]"""
    L = text.split('\n'); res = []
    for i in range(len(L) - 1):
        if L[i + 1].startswith('R '):
            p = L[i].split(); w = L[i + 1].split()
            lo, hi = [int(x, 16) for x in p[0].split('-')]
            runs = [tuple(int(y) for y in x.split('-')) for x in w[2:]]
            res.append((lo, hi, p[1], int(p[2], 16), p[5] if len(p) > 5 else '', int(w[1]), runs))
    return res

n = int(sys.argv[1]); cpu = sys.argv[2]
i = sys.argv.index('--'); libs = sys.argv[3:i]; prog = sys.argv[i + 1:]
res = {l: ([], [], [], [], []) for l in libs}
for r in range(n):
    for l in libs[r % len(libs):] + libs[:r % len(libs)]:
        env = dict(os.environ)
        if l != '-': env['LD_PRELOAD'] = l
        argv = (['taskset', '-c', cpu] if cpu != '-' else []) + prog
        p = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        ms = load(p.stderr)
        pages = sum(m[5] for m in ms) * 4
        libc = sum(m[5] for m in ms if 'libc.so' in m[4]) * 4
        lib = os.path.basename(os.path.realpath(l)).split('.so')[0] + '.so'
        pc = sum(m[5] for m in ms if l != '-' and lib in m[4]) * 4
        anon = sum(m[5] for m in ms if m[4] in ('', '[heap]')) * 4
        hwm = [int(x.split()[1]) for x in p.stderr.split('\n') if x.startswith('VmHWM')][0]
        for a, v in zip(res[l], (hwm, pages, libc, pc, anon)):
            a.append(v)
print('load %.1f %.1f %.1f' % os.getloadavg(), ' '.join(prog), 'cpu', cpu, 'n', n)
for l in libs:
    cols = [(k, statistics.median(v), min(v), max(v)) for k, v in zip(("VmHWM", "pagemap", "libc", "lib", "anon"), res[l])]
    print('  %-28s' % l[-28:], '  '.join('%s %d (%d-%d)' % c for c in cols))
