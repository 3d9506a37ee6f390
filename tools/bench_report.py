"""Outputs of tools/bench.py: CSV, JSON, the Markdown tables, PNG plots."""
import csv
import json
import os
import sys

from bench_core import median
import bench_experiments as ex


def write_outputs(out, plans, results, meta, plots=True):
    runs = []
    for name, plan in plans:
        for r in results[name]:
            p = r["point"]
            runs.append({"experiment": p.experiment, "benchmark": p.benchmark, "allocator": p.allocator,
                         "argv": [str(a) for a in p.argv], "env": p.env, "params": p.params,
                         "elapsed": round(r["elapsed"], 6), "rss": r["rss"], "user": round(r["user"], 4),
                         "sys": round(r["sys"], 4), "rc": r["rc"], "lines": r["lines"]})
    with open(os.path.join(out, "bench.json"), "w") as f:
        json.dump({"meta": meta, "runs": runs}, f, indent=1)
    with open(os.path.join(out, "bench.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["benchmark", "allocator", "elapsed", "rss", "user", "sys", "experiment", "params", "rc"])
        for r in runs:
            w.writerow([r["benchmark"], r["allocator"], r["elapsed"], r["rss"], r["user"], r["sys"],
                        r["experiment"], json.dumps(r["params"], sort_keys=True), r["rc"]])
    with open(os.path.join(out, "tables.md"), "w") as f:
        f.write("Run of %s on %d CPUs (%s), kernel %s; allocators %s; %.0f s (the benchmarks' own CPU time: "
                "%.0f s); load average at the start %s, at the end %s.\n\n" % (
                    meta["date"], meta["host_cpus"], meta["cpu_model"], meta["kernel"],
                    ", ".join(meta["allocators"]), meta["elapsed_s"], meta["children_cpu_s"],
                    meta["loadavg_at_start"], meta["loadavg_at_end"]))
        f.write("Seconds per experiment: %s.\n\n" % ", ".join("%s %.0f" % kv for kv in meta["experiment_s"].items()))
        for name, plan in plans:
            f.write(plan.tables(results[name]) + "\n")
    if plots:
        draw(out, results)


def draw(out, results):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("warning: matplotlib missing (Debian: python3-matplotlib): no plots", file=sys.stderr)
        return
    made = []
    for name, fn in (("peers", plot_peers), ("mmap1", plot_mmap1), ("idle", plot_idle), ("pcp", plot_pcp),
                     ("locks", plot_locks), ("slab", plot_slab), ("zones", plot_zones)):
        if name in results and results[name]:
            path = os.path.join(out, name + ".png")
            fig = fn(plt, results[name])
            if fig is not None:
                fig.tight_layout()
                fig.savefig(path, dpi=90)
                plt.close(fig)
                made.append(path)
    print("plots: %s" % ", ".join(made))


def lines_by(results, key_fn, val_fn):
    """{series: {x: median of values}}"""
    acc = {}
    for r in results:
        if r["rc"] != 0:
            continue
        k = key_fn(r)
        if k is None:
            continue
        series, x = k
        acc.setdefault(series, {}).setdefault(x, []).append(val_fn(r))
    return {s: {x: median(v) for x, v in d.items()} for s, d in acc.items()}


def plot_peers(plt, results):
    names = [w[0] for w in ex.PEER_WORKLOADS]
    fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3.6))
    for ax, name in zip(axes, names):
        rs = ex.select(results, benchmark=name)
        d = lines_by(rs, lambda r: (r["point"].allocator, r["point"].params["threads"]),
                     lambda r: ex.main_line(r).get("ops", 0) / r["elapsed"])
        for a, pts in d.items():
            xs = sorted(pts)
            ax.plot(xs, [pts[x] for x in xs], marker="o", label=a)
        ax.set_title(name)
        ax.set_xlabel("threads")
        ax.set_xscale("log", base=2)
        ax.set_ylabel("operations / s (wall)")
    axes[0].legend(fontsize=8)
    return fig


def plot_mmap1(plt, results):
    rs = ex.select(results, benchmark="mmap1")
    d = lines_by(rs, lambda r: (r["point"].allocator, r["point"].params["threads"]),
                 lambda r: ex.main_line(r).get("per_thread_ops"))
    fig, ax = plt.subplots(figsize=(6, 4))
    for a, pts in d.items():
        xs = sorted(pts)
        ax.plot(xs, [pts[x] for x in xs], marker="o", label=a)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("threads")
    ax.set_ylabel("per-thread operations / s")
    ax.set_title("mmap1-like (seed 000)")
    ax.legend(fontsize=8)
    return fig


def plot_idle(plt, results):
    fig, ax = plt.subplots(figsize=(6, 4))
    for r in results:
        m = ex.main_line(r)
        if not m:
            continue
        s = m["samples"]
        ax.plot([t / 1000 for t, _ in s], [kb / 1024 for _, kb in s], label=r["point"].allocator)
    ax.set_xlabel("seconds after freeing 1 GB")
    ax.set_ylabel("RSS MB")
    ax.set_yscale("symlog")
    ax.set_title("allocate 1 GB, free, idle")
    ax.legend(fontsize=8)
    return fig


def plot_pcp(plt, results):
    fig, axes = plt.subplots(2, 7, figsize=(21, 6.4), sharey="row")
    for s in range(7):
        rs = ex.select(results, scale=s)
        for row, (what, key) in enumerate((("refill", "refill_hist"), ("drain", "drain_hist"))):
            ax = axes[row][s]
            h = ex.zone_hist(rs, key)
            ax.bar(range(len(h)), h)
            ax.set_yscale("symlog")
            ax.set_title("%s, pcp_batch_scale_max=%d" % (what, s), fontsize=9)
            ax.set_xlabel("log2(%s ns)" % what)
        axes[0][0].set_ylabel("refills")
        axes[1][0].set_ylabel("drains")
    return fig


def plot_locks(plt, results):
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    for k in ex.LOCK_KINDS:
        rs = ex.select(results, kind=k)
        thr = lines_by([r for r in rs if r["point"].benchmark == "mmap1"],
                       lambda r: ("x", r["point"].params["over"]), lambda r: ex.main_line(r).get("mops_per_s"))
        wait = lines_by([r for r in rs if r["point"].benchmark == "mmap1-wb"],
                        lambda r: ("x", r["point"].params["over"]), lambda r: ex.lock_share(r, "list_lock"))
        for ax, d in ((a1, thr), (a2, wait)):
            pts = d.get("x", {})
            xs = sorted(pts)
            ax.plot(xs, [pts[x] for x in xs], marker="o", label=k)
    for ax, yl in ((a1, "Mops/s"), (a2, "list_lock wait share")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("oversubscription (threads / CPUs)")
        ax.set_ylabel(yl)
        ax.legend(fontsize=8)
    a1.set_title("mmap1-like throughput per lock.kind")
    a2.set_title("wait share per lock.kind")
    return fig


def plot_slab(plt, results):
    wb = [r for r in results if r["point"].benchmark == "mmap1-wb"]
    levels = []
    for r in wb:
        lv = r["point"].params["level"]
        if lv not in levels:
            levels.append(lv)
    configs = []
    for r in wb:
        c = r["point"].params["config"]
        if c not in configs:
            configs.append(c)
    fig, ax = plt.subplots(figsize=(10, 4))
    width = 0.8 / max(1, len(levels))
    for i, lv in enumerate(levels):
        vals = []
        for c in configs:
            rs = ex.select(wb, config=c, level=lv)
            vals.append(ex.lock_share(rs[0], "list_lock") or 0 if rs else 0)
        ax.bar([j + i * width for j in range(len(configs))], vals, width, label="mmap1 %s" % lv)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(configs))])
    ax.set_xticklabels(configs, rotation=20, ha="right", fontsize=7)
    ax.set_ylabel("list_lock wait share")
    ax.set_title("slab settings (seed 000)")
    ax.legend(fontsize=8)
    return fig


def plot_zones(plt, results):
    fig, ax = plt.subplots(figsize=(6, 4))
    for pcp in ("default", "off"):
        d = lines_by(ex.select(results, pcp=pcp), lambda r: ("x", r["point"].params["zones"]),
                     lambda r: ex.lock_share(r, "zone"))
        pts = d.get("x", {})
        xs = sorted(pts)
        ax.plot(xs, [pts[x] for x in xs], marker="o", label="per-CPU lists " + ("on" if pcp == "default" else "off"))
    ax.set_xlabel("zone instances")
    ax.set_ylabel("zone-lock wait share")
    ax.set_title("zone split (seed 003)")
    ax.legend(fontsize=8)
    return fig
