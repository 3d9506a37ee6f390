#!/usr/bin/python3
"""docs/pages-interleave.py - run benchmark commands under several allocators
or settings, interleaved (each repetition runs every command once under every
configuration, the configurations' order rotated per repetition), each under
`nice -n 19 /usr/bin/time`, and print medians: wall time (the benchmark's own
elapsed_s when it prints its JSON line, else /usr/bin/time's), CPU time
(user + sys) and peak RSS (the benchmark's peak_rss_kb, else %M), in MB.

    python3 docs/pages-interleave.py REPS config.json

config.json: {"cmds": {"name": "command line"}, "cfgs": {"name": {"env": {"LD_PRELOAD": "..."}}}}
(docs/pages-medium.md, "Where bench_mixed's peak is, attributed").
"""
import json, os, subprocess, sys, statistics
reps = int(sys.argv[1]); cfg = json.load(open(sys.argv[2]))
res = {}
start = open('/proc/loadavg').read().split()[:3]
for r in range(reps):
    rot = r % len(cfg["cfgs"])
    for c in cfg["cmds"]:
        ks = list(cfg["cfgs"]); ks = ks[rot:] + ks[:rot]
        for k in ks:
            env = dict(os.environ); env.update(cfg["cfgs"][k].get("env", {}))
            out = subprocess.run(["nice", "-n", "19", "/usr/bin/time", "-f", "TIME %e %U %S %M"] + cfg["cmds"][c].split(),
                                 env=env, capture_output=True, text=True)
            line = [l for l in out.stderr.splitlines() if l.startswith("TIME")]
            if not line:
                print("FAIL", c, k, out.stderr[-300:]); continue
            _, e, u, s, m = line[-1].split()
            js = [l for l in out.stdout.splitlines() if l.startswith('{')]
            if js:
                j = json.loads(js[-1]); e = j["elapsed_s"]; m = j.get("peak_rss_kb", m)
            res.setdefault((c, k), []).append((float(e), float(u) + float(s), int(m) / 1024.0 * 1.048576))
end = open('/proc/loadavg').read().split()[:3]
print("load start", start, "end", end)
for c in cfg["cmds"]:
    print("##", cfg["cmds"][c])
    for k in cfg["cfgs"]:
        v = res.get((c, k), [])
        if not v: continue
        w = statistics.median(x[0] for x in v); cpu = statistics.median(x[1] for x in v); m = statistics.median(x[2] for x in v)
        print(f"  {k:14s} wall {w:.3f} s  cpu {cpu:.3f} s  peak {m:.1f} MB  (MB {min(x[2] for x in v):.1f}-{max(x[2] for x in v):.1f}, n={len(v)})")
