#!/bin/sh
# Run a benchmark (its arguments follow) and check that it exits 0, prints at
# least one line, and that every line of its stdout is a JSON object.
# Exit 77 (skip) never: a benchmark that cannot run here is a failure.
set -e
out=$("$@")
[ -n "$out" ] || { echo "no output from $*" >&2; exit 1; }
py=/usr/bin/python3.11
[ -x "$py" ] || py=python3
printf '%s\n' "$out" | "$py" -c '
import json, sys
n = 0
for line in sys.stdin:
    obj = json.loads(line)
    assert isinstance(obj, dict) and "bench" in obj, line
    n += 1
print("%d JSON lines" % n)
'
