"""Running one benchmark point: the allocators, the child process and its
resource usage, the progress line. Used by tools/bench.py."""
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time

LIBDIR = "/usr/lib/x86_64-linux-gnu"
# name -> library to LD_PRELOAD (None: the C library's own malloc). pcmalloc's
# path is relative to the build directory.
ALLOCATORS = {
    "pcmalloc": "libpcmalloc.so",
    "glibc": None,
    "jemalloc": LIBDIR + "/libjemalloc.so.2",
    "mimalloc": LIBDIR + "/libmimalloc.so.2",
    "tcmalloc": LIBDIR + "/libtcmalloc_minimal.so.4",
}
# Debian packages of the peers (installed by .ci/deps.sh).
PACKAGES = {"jemalloc": "libjemalloc2", "mimalloc": "libmimalloc2.0", "tcmalloc": "libtcmalloc-minimal4"}


def whitebox_lines(line):
    """The lines that bench/whitebox.c's one statistics line stands for,
    derived from its JSON snapshot (docs/statistics.md, version 1): per lock
    class (stat "lock"), the zones summed (stat "zones", with the funclatency histograms of per-CPU
    list refills and drains), and each cache whose
    list_lock the workload took (stat "cache"). wait_share and hold_share are
    shares of the workload threads' time, threads * elapsed."""
    bench, snap = line["bench"], line["snapshot"]
    thread_ns = max(line["threads"] * line["elapsed_ns"], 1.0)
    out = []
    for lk in snap["locks"]:
        if lk["is_class"]:
            out.append({"bench": bench, "stat": "lock", "lock": lk["name"],
                        "acquisitions": lk["acquisitions"], "contended": lk["contentions"],
                        "wait_ns": lk["waittime_total"], "wait_ns_max": lk["waittime_max"],
                        "hold_ns": lk["holdtime_total"],
                        "wait_share": lk["waittime_total"] / thread_ns,
                        "hold_share": lk["holdtime_total"] / thread_ns,
                        "wait_hist": [b["count"] for b in lk["wait_hist"]]})
    zones = snap["zones"]
    z = {"bench": bench, "stat": "zones", "zones": len(zones)}
    for k in ("refills", "refill_pages", "drains", "drain_pages"):
        z[k] = sum(x[k] for x in zones)
    z["refill_hist"] = [b["count"] for b in snap["histograms"]["pcp_refill"]["buckets"]]
    z["drain_hist"] = [b["count"] for b in snap["histograms"]["pcp_drain"]["buckets"]]
    out.append(z)
    rows = {lk["name"]: lk for lk in snap["locks"]}
    for c in snap["caches"]:
        ll = rows.get(c["name"] + "/list_lock")
        if not ll or ll["acquisitions"] <= 1:  # the snapshot itself took it once
            continue
        out.append({"bench": bench, "stat": "cache", "name": c["name"], "size": c["objsize"],
                    "order": c["pagesperslab"].bit_length() - 1, "objects_per_slab": c["objperslab"],
                    "min_partial": c["min_partial"], "cpu_partial": c["cpu_partial"],
                    "list_lock_acquisitions": ll["acquisitions"],
                    "list_lock_wait_ns": ll["waittime_total"]})
    return out


class Point:
    """One run of one program: experiment, the benchmark label the tables and
    the CSV use, allocator, arguments (argv[0] is a program of BUILD/bench),
    extra environment, and the parameters the tables group by."""

    def __init__(self, experiment, benchmark, allocator, argv, env=None, **params):
        self.experiment = experiment
        self.benchmark = benchmark
        self.allocator = allocator
        self.argv = argv
        self.env = env or {}
        self.params = params
        self.preload = True  # False: the program links pcmalloc itself
        self.wrapper = []  # a command to run the program under (valgrind ...)

    def label(self):
        extra = " ".join("%s=%s" % kv for kv in self.params.items() if kv[0] != "rep")
        return "%s %s %s" % (self.benchmark, self.allocator, extra)


def interleave(groups, allocators, reps):
    """Points in run order: every repetition runs every group on every
    allocator, the allocator order rotated each repetition so that none
    always runs first (or right after the slowest). groups: list of
    functions allocator -> list of points (or None to skip)."""
    out = []
    for r in range(reps):
        order = allocators[r % len(allocators):] + allocators[:r % len(allocators)]
        for g in groups:
            for a in order:
                pts = g(a)
                for p in pts or []:
                    p.params["rep"] = r
                    out.append(p)
    return out


class Runner:
    def __init__(self, build, allocators):
        self.build = os.path.abspath(build)
        self.bench_dir = os.path.join(self.build, "bench")
        self.allocators = []
        self.libs = {}
        for a in allocators:
            if a not in ALLOCATORS:
                raise SystemExit("unknown allocator %r (known: %s)" % (a, ", ".join(ALLOCATORS)))
            lib = ALLOCATORS[a]
            if lib and not lib.startswith("/"):
                lib = os.path.join(self.build, lib)
            if lib and not os.path.exists(lib):
                hint = PACKAGES.get(a, "make build")
                print("warning: %s not found (%s): skipping %s" % (lib, hint, a), file=sys.stderr)
                continue
            self.allocators.append(a)
            self.libs[a] = lib
        self.total = 0
        self.done = 0
        self.t0 = time.monotonic()
        self.load_at_start = [round(x, 2) for x in os.getloadavg()]
        self.tty = sys.stderr.isatty()
        self.last_print = 0.0

    def cpus(self):
        return os.cpu_count() or 1

    def run(self, point, timeout=300, quiet=False):
        """Run a point; returns a dict with elapsed (s, wall), rss (KiB,
        the child's peak RSS from wait4), user and sys (s), rc and the JSON
        lines the program printed."""
        if not quiet:
            self.progress(point)
        env = dict(os.environ)
        env.update(point.env)
        lib = self.libs.get(point.allocator) if point.preload else None
        if lib:
            env["LD_PRELOAD"] = lib
        else:
            env.pop("LD_PRELOAD", None)
        argv = point.wrapper + [os.path.join(self.bench_dir, "bench_" + point.argv[0])] + \
            [str(a) for a in point.argv[1:]]
        with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
            t0 = time.monotonic()
            proc = subprocess.Popen(argv, stdout=fo, stderr=fe, env=env)
            killer = threading.Timer(timeout, proc.kill)
            killer.start()
            _, status, ru = os.wait4(proc.pid, 0)
            elapsed = time.monotonic() - t0
            killer.cancel()
            proc.returncode = os.waitstatus_to_exitcode(status)
            fo.seek(0)
            fe.seek(0)
            out = fo.read().decode(errors="replace")
            err = fe.read().decode(errors="replace")
        lines = []
        for line in out.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    obj = __import__("json").loads(line)
                except ValueError:
                    continue
                lines.extend(whitebox_lines(obj) if obj.get("stat") == "pcmalloc" else [obj])
        if proc.returncode != 0:
            print("\nwarning: %s exited %d: %s" % (point.label(), proc.returncode, err.strip()[-300:]),
                  file=sys.stderr)
        if not quiet:
            self.done += 1
        # The child's ru_maxrss counts the memory of this Python process too
        # (Linux keeps the larger of the pre-exec and post-exec peaks), so a
        # workload's own VmHWM (peak_rss_kb) is preferred when it prints one.
        rss = ru.ru_maxrss
        for line in lines:
            if "stat" not in line and line.get("peak_rss_kb", -1) > 0:
                rss = line["peak_rss_kb"]
                break
        return {"elapsed": elapsed, "rss": rss, "user": ru.ru_utime, "sys": ru.ru_stime,
                "rc": proc.returncode, "lines": lines, "stderr": err}

    def progress(self, point):
        now = time.monotonic()
        spent = now - self.t0
        left = spent / self.done * (self.total - self.done) if self.done else 0
        msg = "[%3d/%d] %3.0fs, ~%3.0fs left  %s" % (self.done + 1, self.total, spent, left, point.label())
        if self.tty:
            sys.stderr.write("\r\033[K" + msg[:150])
            sys.stderr.flush()
        elif now - self.last_print > 10:
            print(msg, file=sys.stderr, flush=True)
            self.last_print = now

    def progress_done(self):
        if self.tty:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()

    def meta(self, elapsed, cfg):
        load = os.getloadavg()
        return {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "host_cpus": self.cpus(),
                "cpu_model": cpu_model(), "kernel": platform.release(), "allocators": self.allocators,
                "elapsed_s": round(elapsed, 1), "loadavg_at_start": self.load_at_start,
                "loadavg_at_end": [round(x, 2) for x in load],
                "full": cfg.full, "reps": cfg.reps}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def spread(xs):
    """(max - min) / median, as a percentage: how much the repetitions agree."""
    xs = [x for x in xs if x is not None]
    if len(xs) < 2 or not statistics.median(xs):
        return 0.0
    return 100.0 * (max(xs) - min(xs)) / statistics.median(xs)
