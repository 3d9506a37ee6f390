#!/usr/bin/python3
"""bench/check-whitebox.py - a white-box benchmark's statistics line, read as
tools/bench.py reads it.

    check-whitebox.py TOOLS_DIR PROGRAM [ARGS...]

Runs PROGRAM (a bench_<name>_wb build), expands its one "stat":"pcmalloc"
line (bench/whitebox.c: the public JSON snapshot) with
tools/bench_core.whitebox_lines, and checks the derived lines the
experiments use: a "lock" line for the zone and list_lock classes with
every field, a "zones" line whose refill and drain histogram counts sum to its
refills and drains, and "cache" lines (if any) with their geometry."""
import json
import subprocess
import sys

sys.path.insert(0, sys.argv[1])
import bench_core  # noqa: E402

out = subprocess.run(sys.argv[2:], stdout=subprocess.PIPE, text=True, check=True, timeout=120).stdout
raw = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
wb = [r for r in raw if r.get("stat") == "pcmalloc"]
assert len(wb) == 1, "expected one statistics line, got %d" % len(wb)
assert wb[0]["snapshot"]["version"] == 1 and wb[0]["snapshot"]["stats_enabled"]
lines = bench_core.whitebox_lines(wb[0])
locks = {x["lock"]: x for x in lines if x["stat"] == "lock"}
for cls in ("zone", "list_lock", "barn"):
    assert cls in locks, "no lock line for class %s" % cls
    for k in ("acquisitions", "contended", "wait_ns", "wait_ns_max", "hold_ns", "wait_share",
              "hold_share", "wait_hist"):
        assert k in locks[cls], (cls, k)
    assert sum(locks[cls]["wait_hist"]) == locks[cls]["contended"], cls
assert locks["zone"]["acquisitions"] > 0
zones = [x for x in lines if x["stat"] == "zones"]
assert len(zones) == 1 and zones[0]["zones"] >= 1
assert zones[0]["refills"] > 0 and sum(zones[0]["refill_hist"]) == zones[0]["refills"], zones[0]
assert sum(zones[0]["drain_hist"]) == zones[0]["drains"], zones[0]
for c in (x for x in lines if x["stat"] == "cache"):
    assert c["size"] > 0 and c["objects_per_slab"] > 0 and c["list_lock_acquisitions"] > 1, c
print("ok: %d derived lines" % len(lines))
