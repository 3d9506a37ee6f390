#!/usr/bin/env bash
# tests/programs/git.sh - git under pcmalloc: a history of 400 commits over
# 1500 files made with fast-import, porcelain commits on top, a clone over
# the pack protocol, repack -adf (threaded delta search), gc and fsck; the
# history and contents must come out as on glibc.
#   git.sh /path/to/libpcmalloc.so      (Debian package: git)
source "$(dirname "$0")/lib.sh" "$@"
pc_need git awk

# A deterministic fast-import stream: commit c changes 25 of 1500 files, each
# file a few dozen lines that shift from commit to commit (good deltas).
history() {
	awk 'BEGIN {
		srand(1); t = 1577836800
		for (c = 1; c <= 400; c++) {
			printf "commit refs/heads/main\n"
			printf "mark :%d\n", c
			printf "committer Test <test@example.com> %d +0000\n", t + c * 60
			msg = sprintf("commit %d\n", c)
			printf "data %d\n%s", length(msg), msg
			if (c > 1) printf "from :%d\n", c - 1
			for (k = 0; k < 25; k++) {
				f = (c * 37 + k * 61) % 1500
				body = ""
				n = 20 + (c + k) % 30
				for (l = 0; l < n; l++)
					body = body sprintf("line %d of file %d, version %d: %d\n", l, f, c, (f * 131 + l * 17 + c) % 9973)
				printf "M 100644 inline dir%d/file%d.txt\n", f % 30, f
				printf "data %d\n%s\n", length(body), body
			}
		}
	}'
}

workload() {
	local dir=$1
	export HOME=$dir GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
	export GIT_AUTHOR_NAME=Test GIT_AUTHOR_EMAIL=test@example.com
	export GIT_COMMITTER_NAME=Test GIT_COMMITTER_EMAIL=test@example.com
	export GIT_AUTHOR_DATE="2021-01-01T00:00:00 +0000" GIT_COMMITTER_DATE="2021-01-01T00:00:00 +0000"
	set -e
	git init -q -b main repo
	cd repo
	history | git fast-import --quiet
	git checkout -q main
	local i
	for i in $(seq 1 20); do
		printf 'porcelain change %d\n' "$i" >>"dir$((i % 30))/file$((i * 7)).txt"
		printf 'new file %d\n' "$i" >"added$i.txt"
		git add -A
		git commit -q -m "porcelain $i"
	done
	git tag -a v1 -m "tag v1"
	cd ..
	git clone -q --no-local repo clone
	cd clone
	git repack -q -adf --threads=4
	git gc -q
	local rc=0
	git fsck --full --no-progress >../fsck.out 2>&1 || rc=$?
	echo "fsck exit $rc"
	echo "commits $(git rev-list --all | wc -l)"
	echo "head $(git rev-parse HEAD)"
	echo "tree $(git rev-parse 'HEAD^{tree}')"
	echo "objects $(git cat-file --batch-all-objects --batch-check | wc -l)"
	echo "log $(git log --stat --format='%H %s' | md5sum)"
	echo "diff $(git diff HEAD~300 HEAD | md5sum)"
	echo "blame $(git blame -s dir7/file7.txt | md5sum)"
	echo "grep $(git grep -c 'version 399' | md5sum)"
}

pc_check "pcmalloc can be preloaded" pc_preload_works
pc_run_both workload
pc_check_runs
pc_check "fsck passed" grep -qx 'fsck exit 0' "$WORK/pcmalloc.out"
pc_check "all 420 commits cloned" grep -qx 'commits 420' "$WORK/pcmalloc.out"
pc_finish
