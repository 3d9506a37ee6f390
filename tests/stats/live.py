#!/usr/bin/python3
"""tests/stats/live.py - pcmalloc-top and pcmalloc-ctl against live processes,
and the report formats parsed back.

    live.py TARGET TOOLS_DIR

TARGET is tests/stats/live_target.c built against libpcmalloc (its commands
are listed there); TOOLS_DIR holds pcmalloc-top and pcmalloc-ctl. Checks:
  - PCMALLOC_OPTIONS=help in a real program lists every tunable of the JSON
    snapshot, and says which are runtime;
  - every tunable through pcmalloc-ctl: read back as in the snapshot, set to
    its own value (accepted if runtime, refused "start-up" otherwise), one
    past its range (refused, the range in the message), a bad name;
  - pcmalloc-top --once and --json on a live process; its cache table
    without the internal sheaf-N caches by default, with them under --all,
    and only the matching ones under --caches GLOB;
  - vm.pcp_batch_scale_max=0 set while it runs: before, refills grew past 16
    pages (batches scale while a CPU keeps allocating: the target is pinned
    to one CPU and never frees, so each refill doubles up to 16 << 5); after,
    every new refill moves at most 16 pages (vm.pcp_batch);
  - the text report parsed back against the JSON of the same moment:
    slabinfo 2.1 lines, lock_stat rows (13 columns), funclatency sections
    whose buckets sum to their count;
  - stats.print=json with stats.file at exit;
  - a process that does not export, one that vanished (SIGKILL: its file is
    left over), one that exited (file removed), one that is stopped (no
    answer: the tool times out, exit 3): a message and a non-zero exit each.
Every wait on the target has a timeout. Prints "N passed, N failed".
"""
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time

TARGET, TOOLS = sys.argv[1], sys.argv[2]
TOP = os.path.join(TOOLS, "pcmalloc-top")
CTL = os.path.join(TOOLS, "pcmalloc-ctl")
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAILED: %s" % what, flush=True)


class Target:
    def __init__(self, env_extra, pin=True):
        env = dict(os.environ)
        env.update(env_extra)
        pre = (lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})) if pin else None
        self.p = subprocess.Popen([TARGET], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env, preexec_fn=pre, text=True)
        line = self.read_line()
        assert line.startswith("ready "), line
        self.pid = int(line.split()[1])

    def read_line(self, timeout=60):
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        if not r:
            raise RuntimeError("target did not answer in %d s" % timeout)
        return self.p.stdout.readline().strip()

    def cmd(self, text):
        self.p.stdin.write(text + "\n")
        self.p.stdin.flush()
        check(self.read_line() == "done", "target command %r" % text)

    def exit(self):
        self.p.stdin.write("exit\n")
        self.p.stdin.flush()
        out, err = self.p.communicate(timeout=60)
        return self.p.returncode, err


def tool(*args, timeout=30):
    r = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def snapshot(pid):
    rc, out, err = tool(TOP, str(pid), "--json")
    check(rc == 0, "pcmalloc-top --json: %s" % err)
    return json.loads(out)


def help_table():
    """Tunable -> 'runtime' | 'start-up', from PCMALLOC_OPTIONS=help."""
    env = dict(os.environ, PCMALLOC_OPTIONS="help")
    r = subprocess.run([TARGET], input="exit\n", capture_output=True, text=True, env=env,
                       timeout=60)
    table = {}
    for line in r.stderr.splitlines():
        f = line.split()
        if len(f) >= 6 and f[4] in ("runtime", "start-up"):
            table[f[0]] = f[4]
    return table


def test_tunables(t, snap, help_rt):
    for name, value in snap["tunables"].items():
        check(name in help_rt, "help lists %s" % name)
        rc, out, err = tool(CTL, str(t.pid), name)
        check(rc == 0 and out.strip() == str(value), "ctl get %s: %r %r" % (name, out, value))
        if value == "":  # a text tunable that is unset: a valid text of its own
            value = "-" if name == "slub.debug" else "/tmp/x"
        rc, out, err = tool(CTL, str(t.pid), "%s=%s" % (name, value))
        if help_rt.get(name) == "runtime":
            check(rc == 0, "ctl set %s to its value: %s" % (name, err))
        else:
            check(rc == 1 and "start-up" in err and name in err,
                  "ctl set start-up %s refused: %s" % (name, err))
        if name in ("stats.file",):
            continue
        rc, out, err = tool(CTL, str(t.pid), "%s=99999999999999" % name)
        check(rc == 1 and name in err and "accepted" in err,
              "ctl out of range %s refused with the range: %s" % (name, err))
    rc, out, err = tool(CTL, str(t.pid), "vm.pcp_batch_scale_max=9")
    check(rc == 1 and "accepted: 0..6" in err, "scale_max=9 refused: %s" % err)
    rc, out, err = tool(CTL, str(t.pid), "no.such=1")
    check(rc == 1 and "unknown tunable" in err, "bad name: %s" % err)
    rc, out, err = tool(CTL, str(t.pid), "no.such")
    check(rc == 1 and "no such" in err, "bad name read: %s" % err)


def batch_buckets(snap):
    return {(b["low"], b["high"]): b["count"]
            for b in snap["histograms"]["pcp_refill_batch"]["buckets"]}


def top_cache_names(*args):
    """The NAME column of pcmalloc-top --once's cache table."""
    rc, out, err = tool(TOP, *args, "--once")
    check(rc == 0, "pcmalloc-top %r: %s" % (args, err))
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.split()[:2] == ["OBJS", "ACTIVE"])
    names = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        names.append(line.split()[-1])
    return names


def test_top_filter(t):
    caches = [c["name"] for c in snapshot(t.pid)["caches"]]
    internal = [n for n in caches if re.match(r"^sheaf-\d+$", n)]
    default = top_cache_names(str(t.pid))
    check(not any(n.startswith("sheaf-") for n in default)
          and sorted(default) == sorted(n for n in caches if n not in internal),
          "top hides the sheaf-N caches by default: %r" % default)
    every = top_cache_names(str(t.pid), "--all")
    check(sorted(every) == sorted(caches), "top --all lists every cache: %r" % every)
    check(len(internal) > 0, "the target has sheaf-N caches (sheaves on): %r" % caches)
    some = top_cache_names(str(t.pid), "--caches", "kmalloc-1*")
    check(some and all(n.startswith("kmalloc-1") for n in some)
          and sorted(some) == sorted(n for n in caches if n.startswith("kmalloc-1")),
          "top --caches kmalloc-1* lists only those: %r" % some)
    inner = top_cache_names(str(t.pid), "--caches", "sheaf-*", "--all")
    check(sorted(inner) == sorted(internal), "--caches sheaf-* --all: %r" % inner)
    check(top_cache_names(str(t.pid), "--caches", "sheaf-*") == [],
          "--caches sheaf-* without --all lists none")
    rc, out, err = tool(TOP, str(t.pid), "--once", "--caches")
    check(rc == 64, "--caches without a pattern is a usage error")


def test_batch_scale(t):
    t.cmd("alloc 3000")
    rc, out, err = tool(TOP, str(t.pid), "--once")
    check(rc == 0 and "kmalloc-16" in out and "LOCK CLASS" in out and "pcp_refill" in out,
          "pcmalloc-top --once: %s" % err)
    rc, out, err = tool(TOP, str(t.pid), "--once", "--sort", "objects")
    check(rc == 0, "pcmalloc-top --sort objects")
    before = snapshot(t.pid)
    b0 = batch_buckets(before)
    check(any(low > 16 and n > 0 for (low, high), n in b0.items()),
          "refills grew past 16 pages: %r" % b0)
    rc, out, err = tool(CTL, str(t.pid), "vm.pcp_batch_scale_max")
    check(rc == 0 and out.strip() == "5", "scale_max reads 5: %r" % out)
    rc, out, err = tool(CTL, str(t.pid), "vm.pcp_batch_scale_max=0")
    check(rc == 0, "set scale_max=0: %s" % err)
    rc, out, err = tool(CTL, str(t.pid), "vm.pcp_batch_scale_max")
    check(out.strip() == "0", "scale_max reads 0")
    t.cmd("alloc 3000")
    after = snapshot(t.pid)
    b1 = batch_buckets(after)
    delta = {k: b1.get(k, 0) - b0.get(k, 0) for k in b1}
    check(sum(delta.values()) > 0, "refills after the change: %r" % delta)
    check(all(low <= 16 for (low, high), n in delta.items() if n > 0),
          "every refill after the change moved <= 16 pages: %r" % delta)
    check(after["histograms"]["pcp_refill_batch"]["count"] -
          before["histograms"]["pcp_refill_batch"]["count"] == sum(delta.values()),
          "refill count matches the buckets")


LOCK_ROW = re.compile(r"^\s*(\S+):\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)"
                      r"\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$")


def test_formats(t, tmp):
    tp, jp = os.path.join(tmp, "r.txt"), os.path.join(tmp, "r.json")
    t.cmd("report %s %s" % (tp, jp))
    text = open(tp).read()
    snap = json.load(open(jp))
    lines = text.splitlines()
    i = lines.index("slabinfo - version: 2.1")
    check(lines[i + 1].startswith("# name            <active_objs> <num_objs> <objsize> "
                                  "<objperslab> <pagesperslab> : tunables <limit> "
                                  "<batchcount> <sharedfactor> : slabdata <active_slabs> "
                                  "<num_slabs> <sharedavail>"), "slabinfo header")
    slab = {}
    for line in lines[i + 2:]:
        f = line.split()
        if len(f) != 16 or f[6] != ":" or f[7] != "tunables" or f[11] != ":":
            break
        slab[f[0]] = [int(x) for x in f[1:6]] + [int(f[13]), int(f[14])]
    check(len(slab) == len(snap["caches"]), "one slabinfo line per cache")
    for c in snap["caches"]:
        want = [c[k] for k in ("active_objs", "num_objs", "objsize", "objperslab",
                               "pagesperslab", "active_slabs", "num_slabs")]
        check(slab.get(c["name"]) == want, "slabinfo %s %r == json %r"
              % (c["name"], slab.get(c["name"]), want))
    check("lock_stat version 0.4" in lines, "lock_stat header")
    hdr = [l for l in lines if l.strip().startswith("class name")]
    check(len(hdr) == 1 and len(hdr[0].split()) == 14, "lock_stat column header")
    rows = {}
    for line in lines:
        m = LOCK_ROW.match(line)
        if m:
            rows[m.group(1)] = m.groups()
    # The JSON snapshot was taken just after the text one: the only change
    # in between is the text snapshot's own acquisition of each list_lock.
    for l in snap["locks"]:
        r = rows.get(l["name"])
        check(r is not None and int(r[2]) == l["contentions"] and int(r[1]) == l["con_bounces"]
              and 0 <= l["acquisitions"] - int(r[8]) <= (1 if not l["is_class"] else 1000),
              "lock_stat row %s" % l["name"])
    check("pcp" in rows and "zone" in rows and "list_lock" in rows, "lock classes present")
    sections = re.findall(r"\n# (\w+)\n\s+(\w+)\s+: count     distribution\n((?:.*\|\n)*)\n"
                          r"avg = (\d+) \w+, total: (\d+) \w+, count: (\d+)\n", text)
    check(len(sections) == len(snap["histograms"]), "one funclatency section per histogram")
    for name, unit, body, avg, total, count in sections:
        counts = [int(l.split(":")[1].split("|")[0]) for l in body.splitlines()]
        h = snap["histograms"][name]
        check(sum(counts) == int(count) == h["count"] and int(total) == h["sum"]
              and unit == h["unit"], "histogram %s sums to its count" % name)
    for k, v in snap["totals"].items():
        m = re.search(r"^%s\s+(\d+)$" % k, text, re.M)
        check(m is not None, "total %s in the text" % k)


def test_gone_and_unexported(tmp):
    t = Target({"PCMALLOC_STATS_EXPORT": "0"})
    rc, out, err = tool(CTL, str(t.pid), "stats.allocated")
    check(rc == 2 and "does not export" in err, "unexported pid: %s" % err)
    rc, out, err = tool(TOP, str(t.pid), "--once")
    check(rc == 2 and "does not export" in err, "top on unexported pid: %s" % err)
    t.exit()
    # vanished: killed, so its export file is left over
    t = Target({"PCMALLOC_STATS_EXPORT": "1"})
    path = "/dev/shm/pcmalloc-%d" % t.pid
    st = os.stat(path)
    check(st.st_mode & 0o777 == 0o600 and st.st_uid == os.geteuid(), "export file 0600, ours")
    t.p.kill()
    t.p.wait(timeout=60)
    rc, out, err = tool(CTL, str(t.pid), "stats.allocated")
    check(rc == 2 and "has exited" in err, "vanished pid: %s" % err)
    check(not os.path.exists(path), "left-over export file removed")
    # stopped: cannot answer, the tool times out instead of hanging
    t = Target({"PCMALLOC_STATS_EXPORT": "1"})
    os.kill(t.pid, signal.SIGSTOP)
    start = time.monotonic()
    rc, out, err = tool(CTL, str(t.pid), "stats.allocated")
    check(rc == 3 and "no answer" in err and time.monotonic() - start < 60,
          "stopped pid: %s" % err)
    os.kill(t.pid, signal.SIGCONT)
    # exit: the file goes, and the pid is gone
    rc, _ = t.exit()
    check(rc == 0 and not os.path.exists("/dev/shm/pcmalloc-%d" % t.pid), "file removed at exit")
    rc, out, err = tool(CTL, str(t.pid), "stats.allocated")
    check(rc == 2 and ("no process" in err or "does not export" in err), "exited pid: %s" % err)
    rc, out, err = tool(CTL, "x")
    check(rc == 64, "usage")


def test_print_at_exit(tmp):
    path = os.path.join(tmp, "exit.json")
    t = Target({"PCMALLOC_STATS_PRINT": "json", "PCMALLOC_STATS_FILE": path,
                "PCMALLOC_STATS_ENABLE": "1"})
    t.cmd("alloc 10")
    rc, err = t.exit()
    check(rc == 0, "exit")
    snap = json.load(open(path))
    check(snap["pid"] == t.pid and snap["stats_enabled"], "stats.print=json at exit")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        t = Target({"PCMALLOC_STATS_EXPORT": "1", "PCMALLOC_STATS_ENABLE": "1"})
        try:
            snap = snapshot(t.pid)
            check(snap["version"] == 1 and snap["pid"] == t.pid, "snapshot header")
            test_tunables(t, snap, help_table())
            test_batch_scale(t)
            test_top_filter(t)
            test_formats(t, tmp)
        finally:
            rc, err = t.exit()
            check(rc == 0, "target exit: %s" % err)
        test_print_at_exit(tmp)
        test_gone_and_unexported(tmp)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
