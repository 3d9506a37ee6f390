"""The experiments of `make bench`: which programs run with which parameters,
and how their results become the seeds' tables. Used by tools/bench.py.

Each experiment is a function (cfg, runner) -> Plan. A Plan holds its points
in run order (interleaved across allocators and settings), runs them, and
renders Markdown tables from the results; bench_report.py draws its plots.
"""
import os
import shutil

from bench_core import Point, interleave, median, spread


class Config:
    def __init__(self, full=False, threads=None, reps=3):
        self.full = full
        self.threads = threads or ([1, 2, 4, 8, 16, 32] if full else [2, 16])
        self.reps = reps

    def scale(self, default, full):
        return full if self.full else default


class Plan:
    """points: list of Point; title; render(results) -> Markdown."""

    def __init__(self, name, title, points, render, plot=None):
        self.name = name
        self.title = title
        self.points = points
        self.render = render
        self.plot = plot

    def run(self, runner):
        return [dict(runner.run(p), point=p) for p in self.points]

    def tables(self, results):
        return "## %s\n\n%s" % (self.title, self.render(results))


# ---- helpers -------------------------------------------------------------------------
def main_line(r):
    """The workload's result line (the one without a "stat" key)."""
    for line in r["lines"]:
        if "stat" not in line:
            return line
    return {}


def stat_lines(r, stat):
    return [line for line in r["lines"] if line.get("stat") == stat]


def lock_share(r, lock):
    """Wait share of one lock class in a white-box run (None if absent)."""
    for line in stat_lines(r, "lock"):
        if line.get("lock") == lock:
            return line["wait_share"]
    return None


def lock_per_kop(r, lock):
    """Acquisitions of one lock class per 1000 operations of the workload."""
    ops = main_line(r).get("ops")
    for line in stat_lines(r, "lock"):
        if line.get("lock") == lock and ops:
            return 1000.0 * line["acquisitions"] / ops
    return None


def select(results, **kw):
    out = []
    for r in results:
        p = r["point"]
        if all(p.params.get(k, getattr(p, k, None)) == v for k, v in kw.items()):
            out.append(r)
    return out


def metric(results, key, **kw):
    """Median over repetitions of a field of the result line, and its spread."""
    vals = [main_line(r).get(key) for r in select(results, **kw) if r["rc"] == 0]
    return median(vals), spread(vals)


def fmt(x, digits=2):
    if x is None:
        return "-"
    if isinstance(x, float) and (abs(x) >= 1000 or x == int(x) and abs(x) >= 100):
        return "{:,.0f}".format(x)
    return ("%%.%df" % digits) % x


def pct(x):
    return "-" if x is None else "%.2f%%" % (100.0 * x)


def change(base, new):
    if base in (None, 0) or new is None:
        return "-"
    return "%+.1f%%" % (100.0 * (new - base) / base)


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if i else "---" for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out) + "\n"


def cpu_points(cpus, fractions):
    """Thread counts for fractions of the CPUs (at least 1 thread), labelled."""
    out = []
    for f in fractions:
        out.append(("%d%%" % round(100 * f), max(1, int(round(cpus * f)))))
    return out


def command(p, runner):
    """The shell command that reproduces a point (for the tables)."""
    env = " ".join("%s=%s" % kv for kv in sorted(p.env.items()))
    lib = runner.libs.get(p.allocator) if p.preload else None
    if lib and lib.startswith(runner.build):
        lib = "build/" + os.path.basename(lib)
    pre = "LD_PRELOAD=%s " % lib if lib else ""
    return "%s%s%s %s" % (env + " " if env else "", pre, "build/bench/bench_" + p.argv[0],
                          " ".join(str(a) for a in p.argv[1:]))


# ---- peers: the workloads of issues 8 and 9 on every allocator ------------------------
# name -> (program, per-thread-split work parameter, default total, full total, extra args)
PEER_WORKLOADS = [
    ("larson", "larson", "steps", 4000000, 16000000, []),
    ("prodcons", "prodcons", "messages", 2000000, 8000000, []),
    ("mixed", "mixed", "steps", 160000, 800000, []),
    ("large", "large", "steps", 1000, 4000, []),
    ("huge", "huge", "steps", 40, 200, []),
]


def target_row(name, t, vals):
    """One row of the targets table: pcmalloc against the fastest peer and the
    peer with the lowest peak RSS (None without pcmalloc or peers)."""
    pc = vals.get("pcmalloc")
    peers = {a: v for a, v in vals.items() if a != "pcmalloc"}
    if not pc or pc[0] is None or not peers:
        return None
    fast = min((a for a in peers if peers[a][0] is not None), key=lambda a: peers[a][0], default=None)
    low = min((a for a in peers if peers[a][1]), key=lambda a: peers[a][1], default=None)
    if fast is None or low is None:
        return None
    tr, rr = pc[0] / peers[fast][0], pc[1] / peers[low][1]
    speed = "met" if tr <= 1.0 else "missed (%.0f%% slower)" % (100 * (tr - 1))
    rss = "met" if rr <= 1.10 else "missed (+%.0f%% over it)" % (100 * (rr - 1))
    return [name, t, "%s %s s" % (fast, fmt(peers[fast][0], 3)), "%.2f" % tr, speed,
            "%s %s MB" % (low, fmt(peers[low][1] / 1024, 1)), "%.2f" % rr, rss]


def exp_peers(cfg, runner):
    groups = []
    for name, prog, key, total, total_full, extra in PEER_WORKLOADS:
        for t in cfg.threads:
            per = max(1, cfg.scale(total, total_full) // t)
            if name == "prodcons":  # per pair
                per = max(1, cfg.scale(total, total_full) // max(1, t // 2))
            argv = [prog, "--threads", t, "--" + key, per] + extra
            groups.append(lambda a, argv=argv, name=name, t=t:
                          [Point("peers", name, a, argv, threads=t)])
    for t in (1, 2):  # the small short program: its footprint, not its speed
        argv = ["small", "--threads", t]
        groups.append(lambda a, argv=argv, t=t: [Point("peers", "small", a, argv, threads=t)])
    points = interleave(groups, runner.allocators, cfg.reps)

    def cells(results, name, t):
        """allocator -> (median wall s, median peak RSS KiB, spread %)"""
        vals = {}
        for a in runner.allocators:
            rs = [r for r in select(results, benchmark=name, allocator=a, threads=t)]
            ok = [r for r in rs if r["rc"] == 0]
            vals[a] = (median([r["elapsed"] for r in ok]), median([r["rss"] for r in ok]),
                       spread([r["elapsed"] for r in rs]))
        return vals

    def render(results):
        out = []
        names = [w[0] for w in PEER_WORKLOADS] + ["small"]
        allocs = runner.allocators
        verdicts = []
        for name in names:
            rows = []
            ts = sorted({r["point"].params["threads"] for r in select(results, benchmark=name)})
            for t in ts:
                vals = cells(results, name, t)
                best = min((v[0] for v in vals.values() if v[0] is not None), default=None)
                row = ["%d" % t]
                for a in allocs:
                    el, rss, sp = vals[a]
                    mark = "**" if el is not None and el == best else ""
                    row.append("%s%s s%s ±%.0f%%, %s MB" % (mark, fmt(el, 3), mark, sp / 2,
                                                            fmt(rss / 1024 if rss else None, 1)))
                rows.append(row)
                verdicts.append(target_row(name, t, vals))
            example = select(results, benchmark=name, allocator="pcmalloc") or select(results, benchmark=name)
            out.append("### %s\n\n`%s` (per thread count; `LD_PRELOAD` selects the allocator)\n\n" %
                       (name, command(example[0]["point"], runner) if example else name))
            out.append(table(["threads"] + allocs, rows))
            out.append("\nwall time (median of %d, ± half the spread) and peak RSS; fastest in bold.\n\n" %
                       cfg.reps)
        verdicts = [v for v in verdicts if v]
        if verdicts:
            out.append("### Targets of issues 8 and 9\n\nAt least as fast as the fastest peer; peak RSS within 10%% "
                       "of the lowest peer's (peers: %s). Ratios are pcmalloc / peer, from the medians above; "
                       "the spreads above say how far to trust them.\n\n" %
                       ", ".join(a for a in allocs if a != "pcmalloc"))
            out.append(table(["workload", "threads", "fastest peer", "time ratio", "speed", "lowest-RSS peer",
                              "RSS ratio", "RSS"], verdicts) + "\n")
        return "".join(out)
    return Plan("peers", "Peer comparison: the workloads of issues 8 and 9", points, render)


# ---- idle: allocate 1 GB, free it, idle ---------------------------------------------------
def exp_idle(cfg, runner):
    argv = ["idle", "--mb", cfg.scale(1024, 1024), "--idle-ms", cfg.scale(3000, 12000)]
    points = interleave([lambda a: [Point("idle", "idle", a, argv)]], runner.allocators, 1)

    def render(results):
        rows = []
        for r in results:
            m = main_line(r)
            if not m:
                continue
            s = m["samples"]
            back = next((t for t, kb in s if kb <= 0.1 * m["peak_rss_kb"]), None)
            rows.append([r["point"].allocator, fmt(m["peak_rss_kb"] / 1024, 0), fmt(m["after_free_kb"] / 1024, 1),
                         fmt(m["final_kb"] / 1024, 1), "-" if back is None else "%d ms" % back])
        cmd = command(points[0], runner) if points else ""
        return ("`%s`\n\n" % cmd + table(["allocator", "peak MB", "RSS right after free, MB",
                                            "RSS at end of idle, MB", "under 10% of peak after"], rows) + "\n")
    return Plan("idle", "Allocate 1 GB, free it, idle: RSS over time (issue 9)", points, render)


# ---- seed 002: Tests A-F ------------------------------------------------------------------
def exp_tests_af(cfg, runner):
    """Tests A-C (one thread) once per allocator, D-F at each thread count
    of the peer comparison (2 at least)."""
    counts = sorted({max(2, t) for t in cfg.threads})
    groups = []
    for i, t in enumerate(counts):
        argv = ["tests_af", "--reps", cfg.reps, "--threads", t] + ([] if i == 0 else ["--tests", "DEF"])
        groups.append(lambda a, argv=argv, t=t: [Point("tests_af", "tests_af", a, argv, threads=t)])
    points = interleave(groups, runner.allocators, 1)

    def render(results):
        out = ["`%s` (per allocator; D-F also with `--threads %s --tests DEF`); time-stamp-counter cycles per "
               "operation, median of %d runs of 10000 operations per thread (ns in the JSON)\n\n" %
               (command(points[0], runner), ",".join(str(t) for t in counts[1:]) or "-", cfg.reps)]
        allocs = runner.allocators
        titles = {"A": "Test A: single-thread malloc", "B": "Test B: single-thread free",
                  "C": "Test C: malloc and immediate free (one thread)",
                  "D": "Test D: concurrent malloc on %d threads",
                  "E": "Test E: concurrent malloc and immediate free on %d threads",
                  "F": "Test F: remote free (objects allocated on the %d other threads)"}
        for test in "ABCDEF":
            for t in (counts[:1] if test in "ABC" else counts):
                sizes, cell = [], {}
                for r in select(results, threads=t):
                    for line in r["lines"]:
                        if line.get("test") == test:
                            if line["size"] not in sizes:
                                sizes.append(line["size"])
                            cell[(r["point"].allocator, line["size"])] = line["cycles_per_op"]
                rows = []
                for sz in sizes:
                    vals = [cell.get((a, sz)) for a in allocs]
                    best = min(v for v in vals if v is not None)
                    rows.append([sz] + [("**%s**" if v == best else "%s") % fmt(v, 0) for v in vals])
                title = titles[test] % (t - 1 if test == "F" else t) if test in "DEF" else titles[test]
                title = title.replace("the 1 other threads", "the other thread")
                out.append("### %s\n\n" % title + table(["size"] + allocs, rows) + "\n")
        return "".join(out)
    return Plan("tests_af", "Seed 002: Tests A-F (cycles per operation)", points, render)


# ---- issue 8: one malloc+free pair, with rseq and in the fallback ----------------------
FALLBACK_ENV = {"GLIBC_TUNABLES": "glibc.pthread.rseq=0"}  # glibc does not register rseq: per-thread sheaves
PAIR_LOOP_INSTRUCTIONS = 8  # the benchmark's own loop per pair (docs/sheaves.md)


def callgrind_instructions(r):
    """Instructions callgrind counted ("Collected : N" on stderr), or None."""
    for line in r.get("stderr", "").splitlines():
        if "Collected :" in line:
            return int(line.split(":")[-1].split()[0])
    return None


def exp_pair(cfg, runner):
    """ns per malloc+free pair (bench/micro/malloc_pair.c) on every allocator
    and on pcmalloc in the fallback mode; instructions per pair under
    callgrind (valgrind has no rseq: pcmalloc runs its fallback there) as the
    difference of two runs, when valgrind is installed."""
    iters = cfg.scale(5000000, 20000000)
    sizes = "16,64,256"

    def modes(a):
        return [("rseq" if a == "pcmalloc" else "-", {})] + ([("fallback", FALLBACK_ENV)] if a == "pcmalloc" else [])

    def timed(a):
        return [Point("pair", "malloc_pair", a, ["malloc_pair", "--iters", iters, "--sizes", sizes], dict(env),
                      mode=m) for m, env in modes(a)]
    points = interleave([timed], runner.allocators, cfg.reps)
    valgrind = shutil.which("valgrind")
    if valgrind:
        for a in runner.allocators:
            for m, env in modes(a):
                for n in (100000, 300000):
                    p = Point("pair", "malloc_pair-callgrind", a, ["malloc_pair", "--iters", n, "--sizes", 64],
                              dict(env), mode=m, iters=n, rep=0)
                    p.wrapper = [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null"]
                    points.append(p)

    def render(results):
        rows = []
        for a in runner.allocators:
            for m, _ in modes(a):
                row = ["%s%s" % (a, "" if m == "-" else " (%s)" % m)]
                for sz in (16, 64, 256):
                    vals = [line["ns_per_pair"] for r in select(results, benchmark="malloc_pair", allocator=a, mode=m)
                            if r["rc"] == 0 for line in r["lines"] if line.get("size") == sz]
                    row.append("%s ±%.0f%% (min %s)" % (fmt(median(vals), 1), spread(vals) / 2,
                                                         fmt(min(vals) if vals else None, 1)))
                ir = {r["point"].params["iters"]: callgrind_instructions(r)
                      for r in select(results, benchmark="malloc_pair-callgrind", allocator=a, mode=m)}
                if ir.get(100000) is not None and ir.get(300000) is not None:
                    row.append("%.0f" % ((ir[300000] - ir[100000]) / 200000.0 - PAIR_LOOP_INSTRUCTIONS))
                else:
                    row.append("-")
                rows.append(row)
        return ("`%s` (`GLIBC_TUNABLES=glibc.pthread.rseq=0` for the fallback); ns per pair, median of %d "
                "interleaved runs (± half the spread; the minimum, least disturbed by other load, in "
                "brackets). Instructions per malloc(64)+free pair: `valgrind --tool=callgrind` runs with "
                "`--iters 100000` and `300000`, the difference / 200000, less the loop's own %d (valgrind "
                "has no rseq: pcmalloc's row is its fallback either way). Targets (issue 8): at most 5 ns "
                "with rseq, at most 67 instructions in the fallback.\n\n" %
                (command(points[0], runner), cfg.reps, PAIR_LOOP_INSTRUCTIONS) +
                table(["allocator", "16 B ns", "64 B ns", "256 B ns", "instructions (64 B)"], rows) + "\n")
    return Plan("pair", "Issue 8: one malloc+free pair, rseq and fallback", points, render)


# ---- seed 000: mmap1 scaling and hackbench on every allocator --------------------------
MMAP1_FRACTIONS = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]


def mmap1_argv(threads, total):
    return ["mmap1", "--threads", threads, "--ops", max(1000, total // threads)]


def whitebox(p):
    """The same point run on the white-box build (statistics on; pcmalloc
    linked in, so nothing is preloaded)."""
    p.argv = [p.argv[0] + "_wb"] + p.argv[1:]
    p.benchmark += "-wb"
    p.preload = False
    return p


def exp_mmap1(cfg, runner):
    total = cfg.scale(2000000, 8000000)
    levels = cpu_points(runner.cpus(), MMAP1_FRACTIONS)
    groups = [lambda a, t=t, lab=lab: [Point("mmap1", "mmap1", a, mmap1_argv(t, total), threads=t, level=lab)]
              for lab, t in levels]
    points = interleave(groups, runner.allocators, cfg.reps)
    if "pcmalloc" in runner.allocators:  # one white-box run per level: list_lock wait share
        for lab, t in levels:
            points.append(whitebox(Point("mmap1", "mmap1", "pcmalloc", mmap1_argv(t, total), threads=t, level=lab,
                                         rep=0)))

    def render(results):
        allocs = runner.allocators
        rows = []
        for lab, t in levels:
            row = ["wis-mmap1-%s" % lab, t]
            for a in allocs:
                v, sp = metric(results, "per_thread_ops", benchmark="mmap1", allocator=a, level=lab)
                row.append(fmt(v, 0))
            wb = select(results, benchmark="mmap1-wb", level=lab)
            for lock in ("list_lock", "barn", "zone"):
                row.append(pct(lock_share(wb[0], lock)) if wb else "-")
            row.append(fmt(lock_per_kop(wb[0], "list_lock"), 2) if wb else "-")
            rows.append(row)
        return ("`%s` (ops split over the threads; per_thread_ops = operations per second per thread, "
                "median of %d)\n\n" % (command(points[0], runner), cfg.reps) +
                table(["level", "threads"] + allocs + ["pcmalloc list_lock wait", "barn wait", "zone wait",
                                                    "list_lock per 1k ops"], rows) +
                "\n")
    return Plan("mmap1", "Seed 000: mmap1-like scaling (per-thread ops/s)", points, render)


def hackbench_argv(cfg):
    return ["hackbench", "--groups", cfg.scale(2, 4), "--fds", 10, "--loops", cfg.scale(500, 2000)]


def exp_hackbench(cfg, runner):
    argv = hackbench_argv(cfg)
    points = interleave([lambda a: [Point("hackbench", "hackbench", a, argv)]], runner.allocators, cfg.reps)
    if "pcmalloc" in runner.allocators:
        points.append(whitebox(Point("hackbench", "hackbench", "pcmalloc", list(argv), rep=0)))

    def render(results):
        rows = []
        for a in runner.allocators:
            v, sp = metric(results, "throughput", benchmark="hackbench", allocator=a)
            rss = median([r["rss"] for r in select(results, benchmark="hackbench", allocator=a)])
            rows.append([a, fmt(v, 0), "%.0f%%" % sp, fmt(rss / 1024 if rss else None, 1)])
        wb = select(results, benchmark="hackbench-wb")
        note = ""
        if wb:
            note = "\npcmalloc (white-box run, statistics on): list_lock wait share %s, barn %s, zone %s\n" % (
                pct(lock_share(wb[0], "list_lock")), pct(lock_share(wb[0], "barn")), pct(lock_share(wb[0], "zone")))
        return ("`%s` (%d threads; messages per second, median of %d)\n\n" %
                (command(points[0], runner), main_line(results[0]).get("threads", 0) if results else 0, cfg.reps) +
                table(["allocator", "hackbench.throughput", "spread", "peak RSS MB"], rows) + note + "\n")
    return Plan("hackbench", "Seed 000: hackbench-like over socketpairs", points, render)


# ---- seed 000: slab tunables ---------------------------------------------------------------
def probe_cpu_partial(runner):
    """cpu_partial of kmalloc-256 (mmap1's maple nodes) under the defaults."""
    p = Point("probe", "probe", "pcmalloc", ["mmap1_wb", "--smoke"])
    p.preload = False
    r = runner.run(p, quiet=True)
    for line in stat_lines(r, "cache"):
        if line.get("size") == 256:
            return line["cpu_partial"]
    return 2


def slab_configs(cp):
    big = {"slub.max_order": 4, "slub.min_objects": 64}
    part = {"slub.min_partial": 64, "slub.max_partial": 128}
    return [
        ("base", {}),
        ("1: max_order 4", {"slub.max_order": 4}),
        ("1': max_order 4 + min_objects 64", big),
        ("2: cpu_partial x2 (%d)" % (2 * cp), {"slub.cpu_partial": 2 * cp}),
        ("2: cpu_partial x4 (%d)" % (4 * cp), {"slub.cpu_partial": 4 * cp}),
        ("3: min/max partial 64/128", part),
        ("3+1'", dict(part, **big)),
        ("3+1'+2 (x2)", dict(part, **big, **{"slub.cpu_partial": 2 * cp})),
    ]


def options_env(opts):
    return {"PCMALLOC_OPTIONS": ",".join("%s=%s" % kv for kv in opts.items())} if opts else {}


def exp_slab(cfg, runner):
    if "pcmalloc" not in runner.allocators:
        return Plan("slab", "Seed 000: slab tunables", [], lambda r: "(pcmalloc not selected)\n")
    cp = probe_cpu_partial(runner)
    configs = slab_configs(cp)
    total = cfg.scale(2000000, 8000000)
    levels = cpu_points(runner.cpus(), [0.25, 0.5, 1.0, 4.0])
    groups = []
    for name, opts in configs:
        env = options_env(opts)
        for lab, t in levels:
            groups.append(lambda a, t=t, lab=lab, env=env, name=name:
                          [Point("slab", "mmap1", a, mmap1_argv(t, total), env, config=name, level=lab, threads=t)])
        groups.append(lambda a, env=env, name=name:
                      [Point("slab", "hackbench", a, hackbench_argv(cfg), env, config=name, level="-")])
    points = interleave(groups, ["pcmalloc"], cfg.reps)
    for name, opts in configs:
        env = options_env(opts)
        for lab, t in levels:
            points.append(whitebox(Point("slab", "mmap1", "pcmalloc", mmap1_argv(t, total), env, config=name,
                                         level=lab, threads=t, rep=0)))
        points.append(whitebox(Point("slab", "hackbench", "pcmalloc", hackbench_argv(cfg), env, config=name,
                                     level="-", rep=0)))

    def render(results):
        out = ["Throughput from `build/bench/bench_mmap1` / `bench_hackbench` under "
               "`LD_PRELOAD=build/libpcmalloc.so` with `PCMALLOC_OPTIONS=<setting>` (median of %d); `list_lock` "
               "wait share from one run of the white-box build (`mmap1_wb`, statistics on). Default "
               "`cpu_partial` of kmalloc-256 here: %d.\n\n"
               % (cfg.reps, cp)]
        rows = []
        for lab, t in levels:
            base, _ = metric(results, "per_thread_ops", benchmark="mmap1", config="base", level=lab)
            for name, _ in configs:
                v, sp = metric(results, "per_thread_ops", benchmark="mmap1", config=name, level=lab)
                wb = select(results, benchmark="mmap1-wb", config=name, level=lab)
                rows.append(["wis-mmap1-%s (%d thr)" % (lab, t), name, fmt(base, 0),
                             change(base, v) if name != "base" else "", fmt(v, 0), "%.0f%%" % sp,
                             pct(lock_share(wb[0], "list_lock")) if wb else "-",
                             fmt(lock_per_kop(wb[0], "list_lock"), 2) if wb else "-"])
        base, _ = metric(results, "throughput", benchmark="hackbench", config="base")
        for name, _ in configs:
            v, sp = metric(results, "throughput", benchmark="hackbench", config=name)
            wb = select(results, benchmark="hackbench-wb", config=name)
            rows.append(["hackbench", name, fmt(base, 0), change(base, v) if name != "base" else "", fmt(v, 0),
                         "%.0f%%" % sp, pct(lock_share(wb[0], "list_lock")) if wb else "-",
                         fmt(lock_per_kop(wb[0], "list_lock"), 2) if wb else "-"])
        out.append(table(["workload", "setting", "base", "change", "new", "spread", "list_lock wait",
                          "list_lock per 1k ops"], rows))
        orders = {}
        for r in select(results, benchmark="mmap1-wb", level=levels[0][0]):
            for line in stat_lines(r, "cache"):
                if line["size"] in (192, 256):
                    orders.setdefault(r["point"].params["config"], []).append(
                        "%s order %d (%d objects), cpu_partial %d, min_partial %d" % (
                            line["name"], line["order"], line["objects_per_slab"], line["cpu_partial"],
                            line["min_partial"]))
        out.append("\nWhat each setting did to mmap1's caches:\n\n")
        for name, _ in configs:
            out.append("- %s: %s\n" % (name, "; ".join(orders.get(name, ["-"]))))
        return "".join(out) + "\n"
    return Plan("slab", "Seed 000: slab tunables (order, cpu_partial, min/max partial)", points, render)


# ---- seed 001: refill latency per vm.pcp_batch_scale_max ---------------------------------
def pages_point(*args, **kw):
    """bench_pages links pcmalloc itself: nothing to preload."""
    p = Point(*args, **kw)
    p.preload = False
    return p


def pages_argv(cfg, runner, threads=None):
    return ["pages", "--threads", threads or 2 * runner.cpus(), "--pages", cfg.scale(8192, 16384),
            "--rounds", cfg.scale(20, 80)]


def hist_avg(h):
    """Mean of a log2 histogram, each bucket [2^i, 2^(i+1)) counted at 1.5 * 2^i."""
    n = sum(h)
    return sum(c * 1.5 * 2 ** i for i, c in enumerate(h)) / n if n else None


def hist_max(h):
    """Upper bound of the highest non-empty bucket."""
    top = max((i for i, c in enumerate(h) if c), default=None)
    return None if top is None else 2 ** (top + 1)


def merge_hists(hs):
    n = max((len(h) for h in hs), default=0)
    return [sum(h[i] for h in hs if i < len(h)) for i in range(n)]


def zone_hist(results, key):
    """A zone histogram (refill_hist or drain_hist) summed over runs."""
    return merge_hists([z[key] for r in results if r["rc"] == 0 for z in stat_lines(r, "zones")])


def zone_median(results, key):
    return median([stat_lines(r, "zones")[0][key] for r in results if r["rc"] == 0 and stat_lines(r, "zones")])


def exp_pcp(cfg, runner):
    if "pcmalloc" not in runner.allocators:
        return Plan("pcp", "Seed 001", [], lambda r: "(pcmalloc not selected)\n")
    # The per-CPU lists' high starts at vm.pcp_high_min and a refill never
    # fills past it, so with the default (64 pages) batches stop growing at
    # about 128 pages whatever the scale; the seed's machine had a high of
    # thousands of pages. Start at vm.pcp_high (2048 here, the default is
    # 512) so that the scale alone decides.
    env = {"PCMALLOC_VM_PCP_HIGH": "2048", "PCMALLOC_VM_PCP_HIGH_MIN": "2048"}
    groups = [lambda a, s=s: [pages_point("pcp", "pages", a, pages_argv(cfg, runner),
                                    dict(env, PCMALLOC_VM_PCP_BATCH_SCALE_MAX=str(s)), scale=s)]
              for s in range(7)]
    points = interleave(groups, ["pcmalloc"], cfg.reps)

    def render(results):
        rows = []
        for s in range(7):
            rs = select(results, scale=s)
            hr, hd = zone_hist(rs, "refill_hist"), zone_hist(rs, "drain_hist")
            thr, sp = metric(results, "mpages_per_s", scale=s)
            refills, pages = zone_median(rs, "refills"), zone_median(rs, "refill_pages")
            drains, dpages = zone_median(rs, "drains"), zone_median(rs, "drain_pages")
            rows.append([s, fmt(refills, 0), fmt(pages / refills if refills else None, 1),
                         fmt(hist_avg(hr), 0), "< %s" % fmt(hist_max(hr), 0) if hist_max(hr) else "-",
                         fmt(drains, 0), fmt(dpages / drains if drains else None, 1),
                         fmt(hist_avg(hd), 0), "< %s" % fmt(hist_max(hd), 0) if hist_max(hd) else "-",
                         fmt(thr, 2), "%.0f%%" % sp,
                         pct(median([lock_share(r, "zone") for r in rs if r["rc"] == 0]))])
        out = ["`%s` with `PCMALLOC_VM_PCP_BATCH_SCALE_MAX=0..6` (`vm.pcp_high_min=2048`: the lists' high starts at "
               "its maximum, so that refills are not cut to the room under a small high; median of %d; the "
               "histograms (the statistics' `pcp_refill` and `pcp_drain`, ns) and their averages and maxima are "
               "over all runs of a setting)\n\n" % (command(points[0], runner), cfg.reps)]
        out.append(table(["pcp_batch_scale_max", "refills", "pages per refill", "refill avg ns", "refill max ns",
                          "drains", "pages per drain", "drain avg ns", "drain max ns", "Mpages/s", "spread",
                          "zone wait share"], rows))
        for s in (5, 0):
            rs = select(results, scale=s)
            for what, key in (("Refill", "refill_hist"), ("Drain", "drain_hist")):
                out.append("\n%s latency, `vm.pcp_batch_scale_max=%d` (funclatency style):\n\n```\n%s```\n" %
                           (what, s, funclatency(zone_hist(rs, key))))
        return "".join(out) + "\n"
    return Plan("pcp", "Seed 001: per-CPU list refill and drain latency vs vm.pcp_batch_scale_max", points, render)


def funclatency(h):
    n = max(h) if h else 0
    lines = ["%20s : %-8s %s" % ("nsecs", "count", "distribution")]
    first = next((i for i, c in enumerate(h) if c), 0)
    for i in range(first, len(h)):
        bar = "*" * int(round(40.0 * h[i] / n)) if n else ""
        lines.append("%10d -> %-10d: %-8d |%-40s|" % (2 ** i, 2 ** (i + 1) - 1, h[i], bar))
    return "\n".join(lines) + "\n"


# ---- seed 003: zone instances --------------------------------------------------------------
def exp_zones(cfg, runner):
    if "pcmalloc" not in runner.allocators:
        return Plan("zones", "Seed 003", [], lambda r: "(pcmalloc not selected)\n")
    groups = []
    for pcp in ("default", "off"):
        for z in (1, 2, 4):
            env = {"PCMALLOC_VM_ZONE_INSTANCES": str(z)}
            if pcp == "off":
                env["PCMALLOC_VM_PCP_HIGH"] = "0"
            groups.append(lambda a, env=env, z=z, pcp=pcp:
                          [pages_point("zones", "pages", a, pages_argv(cfg, runner), env, zones=z, pcp=pcp)])
    points = interleave(groups, ["pcmalloc"], cfg.reps)

    def render(results):
        rows = []
        for pcp in ("default", "off"):
            base = None
            for z in (1, 2, 4):
                rs = [r for r in select(results, zones=z, pcp=pcp) if r["rc"] == 0]
                thr, sp = metric(results, "mpages_per_s", zones=z, pcp=pcp)
                base = thr if z == 1 else base
                used = median([main_line(r).get("zones") for r in rs])
                rows.append(["per-CPU lists %s" % ("on" if pcp == "default" else "off (vm.pcp_high=0)"), z,
                             fmt(used, 0), fmt(thr, 2), change(base, thr) if z > 1 else "", "%.0f%%" % sp,
                             pct(median([lock_share(r, "zone") for r in rs]))])
        return ("`%s` with `PCMALLOC_VM_ZONE_INSTANCES=1,2,4` (and `PCMALLOC_VM_PCP_HIGH=0`: every free to the "
                "zone); median of %d\n\n" % (command(points[0], runner), cfg.reps) +
                table(["per-CPU lists", "zone instances", "zones made", "Mpages/s", "change", "spread",
                       "zone-lock wait share"], rows) + "\n")
    return Plan("zones", "Seed 003: zone split (1, 2, 4 instances)", points, render)


# ---- seed 004: lock kinds under oversubscription ------------------------------------------
LOCK_KINDS = ["spin", "ticket", "mcs", "mutex"]


def exp_locks(cfg, runner):
    if "pcmalloc" not in runner.allocators:
        return Plan("locks", "Seed 004", [], lambda r: "(pcmalloc not selected)\n")
    total = cfg.scale(2000000, 8000000)
    overs = [1, 2, 4, 8, 16]
    cpus = runner.cpus()
    groups = []
    for k in LOCK_KINDS:
        for o in overs:
            env = {"PCMALLOC_LOCK_KIND": k}
            groups.append(lambda a, env=env, k=k, o=o:
                          [Point("locks", "mmap1", a, mmap1_argv(o * cpus, total), env, kind=k, over=o)])
    points = interleave(groups, ["pcmalloc"], cfg.reps)
    for k in LOCK_KINDS:
        for o in overs:
            points.append(whitebox(Point("locks", "mmap1", "pcmalloc", mmap1_argv(o * cpus, total),
                                         {"PCMALLOC_LOCK_KIND": k}, kind=k, over=o, rep=0)))

    def render(results):
        rows = []
        for o in overs:
            row = ["%dx (%d threads)" % (o, o * cpus)]
            for k in LOCK_KINDS:
                v, sp = metric(results, "mops_per_s", benchmark="mmap1", kind=k, over=o)
                wb = select(results, benchmark="mmap1-wb", kind=k, over=o)
                row.append("%s Mops/s, wait %s" % (fmt(v, 2), pct(lock_share(wb[0], "list_lock")) if wb else "-"))
            rows.append(row)
        return ("mmap1-like with `PCMALLOC_LOCK_KIND=<kind>` (the kind of every zone lock and `list_lock`), "
                "%d operations split over the threads; throughput median of %d, `list_lock` wait share from one "
                "white-box run\n\n" % (total, cfg.reps) + table(["oversubscription"] + LOCK_KINDS, rows) + "\n")
    return Plan("locks", "Seed 004: lock kinds under oversubscription", points, render)


# ---- the contention model: inputs at 1 thread, check at 2, predict 224 -----------------
def exp_model(cfg, runner):
    import contention_model
    if "pcmalloc" not in runner.allocators:
        return Plan("model", "Contention model", [], lambda r: "(pcmalloc not selected)\n")
    total = cfg.scale(2000000, 8000000)
    groups = []
    for t in (1, 2):
        groups.append(lambda a, t=t: [whitebox(Point("model", "mmap1", a, mmap1_argv(t, total), threads=t))])
        groups.append(lambda a, t=t: [pages_point("model", "pages-model", a, pages_argv(cfg, runner, t),
                                                  {"PCMALLOC_VM_PCP_HIGH": "0"}, threads=t)])
    points = interleave(groups, ["pcmalloc"], cfg.reps)
    for p in points:
        if p.benchmark == "mmap1-wb":
            p.benchmark = "mmap1-model"

    def render(results):
        runs = [{"benchmark": r["point"].benchmark, "params": r["point"].params, "lines": r["lines"]}
                for r in results if r["rc"] == 0]
        return ("Inputs from white-box runs at 1 thread (`bench_mmap1_wb --threads 1`, `bench_pages --threads 1` "
                "with `PCMALLOC_VM_PCP_HIGH=0`), checked against the same at 2 threads (medians of %d); model and "
                "assumptions in `tools/contention_model.py`.\n\n" % cfg.reps + contention_model.report(runs) + "\n")
    return Plan("model", "Contention model: wait share at N CPUs", points, render)


EXPERIMENTS = {
    "peers": (exp_peers, "larson, producer/consumer, mixed+realloc, large, huge, small on every allocator"),
    "pair": (exp_pair, "ns per malloc+free pair (rseq and fallback) and callgrind instructions, every allocator"),
    "idle": (exp_idle, "allocate 1 GB, free, idle: RSS over time on every allocator"),
    "tests_af": (exp_tests_af, "seed 002 Tests A-F, 8 B - 16 KiB, cycles per op, every allocator"),
    "mmap1": (exp_mmap1, "seed 000 mmap1-like at 25..800% of the CPUs, every allocator"),
    "hackbench": (exp_hackbench, "seed 000 hackbench-like over socketpairs, every allocator"),
    "slab": (exp_slab, "seed 000 slab tunables: order, cpu_partial, min/max partial (pcmalloc)"),
    "pcp": (exp_pcp, "seed 001 refill latency per vm.pcp_batch_scale_max 0..6 (pcmalloc)"),
    "zones": (exp_zones, "seed 003 zone instances 1/2/4 (pcmalloc)"),
    "locks": (exp_locks, "seed 004 lock.kind spin/ticket/mcs/mutex at 1x-16x oversubscription (pcmalloc)"),
    "model": (exp_model, "queueing model of lock wait share: 1-thread inputs, 2-thread check, 224-CPU prediction"),
}

