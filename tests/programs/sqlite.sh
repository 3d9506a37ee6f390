#!/usr/bin/env bash
# tests/programs/sqlite.sh - the sqlite3 shell under pcmalloc: a table of
# 200k rows, two indexes, aggregates, a window function, updates, deletes,
# VACUUM and an integrity check; output compared with the run on glibc.
#   sqlite.sh /path/to/libpcmalloc.so      (Debian package: sqlite3)
source "$(dirname "$0")/lib.sh" "$@"
pc_need sqlite3

workload() {
	sqlite3 "$1/test.db" <<'EOF'
PRAGMA cache_size = -65536;
PRAGMA journal_mode = WAL;
PRAGMA synchronous = OFF;
CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, val REAL, pad BLOB);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000)
INSERT INTO t SELECT x, (x * 7919) % 1000,
       printf('name-%08d-%s', (x * 104729) % 200000, hex(x * 31)),
       (x % 977) * 1.5, zeroblob(x % 300)
FROM c;
CREATE INDEX t_grp ON t(grp, name);
CREATE INDEX t_name ON t(name);
SELECT count(*), sum(grp), total(val), sum(length(pad)) FROM t;
SELECT grp, count(*), min(name), max(name), round(avg(val), 3)
FROM t GROUP BY grp ORDER BY grp LIMIT 10 OFFSET 100;
SELECT name FROM t WHERE grp = 42 ORDER BY name LIMIT 5;
SELECT length(group_concat(name, ',')) FROM (SELECT name FROM t ORDER BY name DESC);
SELECT count(DISTINCT name), count(DISTINCT substr(name, 6, 4)) FROM t;
SELECT sum(r), max(r) FROM (
  SELECT row_number() OVER (PARTITION BY grp ORDER BY val DESC, id) AS r FROM t);
UPDATE t SET name = name || '-' || upper(hex(grp)) WHERE id % 3 = 0;
DELETE FROM t WHERE id % 5 = 0;
SELECT count(*), sum(length(name)), sum(grp) FROM t;
SELECT a.grp % 10, count(*), sum(b.grp) FROM t AS a JOIN t AS b ON b.id = a.id + 1
GROUP BY a.grp ORDER BY 2 DESC, 1 LIMIT 5;
VACUUM;
PRAGMA integrity_check;
EOF
}

pc_check "pcmalloc can be preloaded" pc_preload_works
pc_run_both workload
pc_check_runs
pc_check "integrity_check ok" grep -qx ok "$WORK/pcmalloc.out"
pc_finish
