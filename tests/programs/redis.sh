#!/usr/bin/env bash
# tests/programs/redis.sh - redis-server under pcmalloc (its own malloc,
# jemalloc, is overridden by the preload): 150k commands loaded through
# redis-cli --pipe, redis-benchmark on top, BGSAVE (a fork that writes the
# dump), then a second server that loads the dump. DBSIZE and DEBUG DIGEST
# of the data set must agree before and after the reload, and with glibc.
# Listens on 127.0.0.1 only, on a free port.
#   redis.sh /path/to/libpcmalloc.so      (Debian packages: redis-server, redis-tools)
source "$(dirname "$0")/lib.sh" "$@"
pc_need redis-server redis-cli redis-benchmark awk

# A port nothing listens on (bash's /dev/tcp connects when one does).
free_port() {
	local port
	for port in $(seq $((20000 + $$ % 20000)) $((20100 + $$ % 20000))); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	return 1
}

# Starts a server in directory $1 on port $2; waits until it answers, with
# no time limit but pc_run's watchdog (a slow start on a loaded machine is
# no failure; before, 10 s were), and fails if the server exits first.
start_server() {
	redis-server --bind 127.0.0.1 --port "$2" --dir "$1" --dbfilename dump.rdb \
		--save "" --appendonly no --daemonize no --protected-mode yes \
		--enable-debug-command local --logfile "$1/redis-$2.log" &
	local server=$!
	until [[ $(redis-cli -p "$2" ping 2>/dev/null) == PONG ]]; do
		if ! kill -0 "$server" 2>/dev/null; then
			echo "redis-server on port $2 did not start" >&2
			cat "$1/redis-$2.log" >&2
			return 1
		fi
		sleep 0.1
	done
}

stop_server() {
	redis-cli -p "$1" shutdown nosave >/dev/null 2>&1
	wait "$2" 2>/dev/null
}

commands() {
	awk 'BEGIN {
		for (i = 1; i <= 30000; i++) {
			printf "SET key:%d value-%d-%s\n", i, i, substr("abcdefghijklmnopqrstuvwxyz", 1, 1 + i % 26)
			printf "HSET hash:%d field:%d %d\n", i % 100, i, i * 3
			printf "RPUSH list:%d item-%d\n", i % 50, i
			printf "SADD set:%d member-%d\n", i % 20, i
			printf "ZADD zset:%d %d m-%d\n", i % 10, i % 1000, i
		}
		for (i = 1; i <= 30000; i += 7) printf "DEL key:%d\n", i
		for (i = 1; i <= 30000; i += 11) printf "APPEND key:%d -appended-%d\n", i + 1, i
	}'
}

workload() {
	local dir=$1 port port2 pid pid2
	port=$(free_port) || { echo "no free port" >&2; return 1; }
	start_server "$dir" "$port" || return 1
	pid=$!
	commands | redis-cli -p "$port" --pipe >"$dir/pipe.out" 2>&1
	grep -o 'errors: [0-9]*, replies: [0-9]*' "$dir/pipe.out"
	redis-benchmark -h 127.0.0.1 -p "$port" -n 20000 -c 20 -q \
		-t set,get,incr,lpush,lpop,sadd,hset,zadd,mset >"$dir/bench.out" 2>&1
	echo "benchmark exit $?"
	echo "dbsize $(redis-cli -p "$port" dbsize)"
	local digest
	digest=$(redis-cli -p "$port" debug digest)
	echo "digest $digest"
	redis-cli -p "$port" bgsave >/dev/null
	# Until the dump is written, however long that takes (the watchdog
	# ends a hang; before, 30 s and the output differed from glibc's).
	until redis-cli -p "$port" info persistence | grep -q '^rdb_bgsave_in_progress:0'; do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	redis-cli -p "$port" info persistence | grep -o '^rdb_last_bgsave_status:[a-z]*'
	[[ -s $dir/dump.rdb ]] && echo "dump written"
	stop_server "$port" "$pid"

	# A new server reads the dump back.
	port2=$(free_port) || return 1
	start_server "$dir" "$port2" || return 1
	pid2=$!
	echo "reloaded dbsize $(redis-cli -p "$port2" dbsize)"
	[[ $(redis-cli -p "$port2" debug digest) == "$digest" ]] && echo "reloaded digest matches"
	echo "sample $(redis-cli -p "$port2" get key:1000) $(redis-cli -p "$port2" zscore zset:3 m-12343)"
	stop_server "$port2" "$pid2"
}

pc_check "pcmalloc can be preloaded" pc_preload_works
pc_run_both workload
pc_check_runs
pc_check "BGSAVE (a fork) wrote the dump" grep -qx 'dump written' "$WORK/pcmalloc.out"
pc_check "bgsave status ok" grep -qx 'rdb_last_bgsave_status:ok' "$WORK/pcmalloc.out"
pc_check "reloaded digest matches" grep -qx 'reloaded digest matches' "$WORK/pcmalloc.out"
pc_check "redis-benchmark ran" grep -qx 'benchmark exit 0' "$WORK/pcmalloc.out"
pc_finish
