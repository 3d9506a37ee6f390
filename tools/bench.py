#!/usr/bin/python3.11
"""The benchmark runner behind `make bench`.

Runs the workloads of bench/ (built by `make build` into BUILD/bench/) on
pcmalloc and its peers (glibc, jemalloc, mimalloc, tcmalloc through
LD_PRELOAD), interleaved, each point repeated; prints tables in the seeds'
style; writes CSV, JSON and PNG plots under bench/results/.

    tools/bench.py                      the default run (< 10 min on 2 cores)
    tools/bench.py --full               more threads, repetitions and work
    tools/bench.py --only peers,locks   some experiments (--list names them)
    tools/bench.py --threads 2,16 --reps 5 --allocators pcmalloc,glibc

Every number comes from one run on one machine: compare within a run only.
The workloads assert nothing; this script only measures and reports.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_experiments as ex  # noqa: E402
import bench_report as rep  # noqa: E402
from bench_core import Runner, ALLOCATORS  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build", help="CMake build directory (default: build)")
    p.add_argument("--out", default="bench/results", help="output directory (default: bench/results)")
    p.add_argument("--full", action="store_true", help="the full run: more threads, repetitions and work")
    p.add_argument("--only", default="", help="comma-separated experiments to run (see --list)")
    p.add_argument("--list", action="store_true", help="list the experiments and exit")
    p.add_argument("--threads", default="", help="thread counts of the peer comparison (default 2,16)")
    p.add_argument("--reps", type=int, default=0, help="repetitions of each point (default 3, --full 5)")
    p.add_argument("--allocators", default=",".join(ALLOCATORS), help="allocators to compare")
    p.add_argument("--no-plots", action="store_true", help="do not draw PNG plots")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    if args.list:
        for name, (_, doc) in ex.EXPERIMENTS.items():
            print("%-10s %s" % (name, doc))
        return 0
    names = [n for n in args.only.split(",") if n] or list(ex.EXPERIMENTS)
    unknown = [n for n in names if n not in ex.EXPERIMENTS]
    if unknown:
        print("unknown experiment(s): %s (see --list)" % ", ".join(unknown), file=sys.stderr)
        return 2
    cfg = ex.Config(full=args.full,
                    threads=[int(t) for t in args.threads.split(",") if t] or None,
                    reps=args.reps or (5 if args.full else 3))
    runner = Runner(args.build, args.allocators.split(","))
    os.makedirs(args.out, exist_ok=True)
    plans = [(n, ex.EXPERIMENTS[n][0](cfg, runner)) for n in names]
    runner.total = sum(len(p.points) for _, p in plans)
    t0 = time.monotonic()
    results, spent = {}, {}
    for name, plan in plans:
        t1 = time.monotonic()
        results[name] = plan.run(runner)
        spent[name] = round(time.monotonic() - t1, 1)
        runner.progress_done()
        text = plan.tables(results[name])
        print(text, flush=True)
    elapsed = time.monotonic() - t0
    meta = runner.meta(elapsed, cfg)
    meta["experiment_s"] = spent
    meta["children_cpu_s"] = round(sum(r["user"] + r["sys"] for rs in results.values() for r in rs), 1)
    rep.write_outputs(args.out, plans, results, meta, plots=not args.no_plots)
    print("finished in %.0f s; results in %s/" % (elapsed, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
