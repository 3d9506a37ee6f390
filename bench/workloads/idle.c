/*
 * bench/workloads/idle.c - allocate 1 GB, free it, idle (issue 9): RSS over
 * time shows when the allocator gives memory back to the OS.
 *
 * Allocates --mb MiB (1024) in blocks of 4-64 KiB (log-uniform), writes every
 * page, frees everything, then sleeps --idle-ms (3000) in steps of
 * --sample-ms (100), sampling the RSS. It never calls malloc_trim: whatever
 * is given back, the allocator gave back on its own.
 *
 *   bench_idle [--mb 1024] [--idle-ms 3000] [--sample-ms 100]
 *
 * Prints {"bench":"idle", "peak_rss_kb":.., "after_free_kb":.., "final_kb":..,
 * "samples":[[ms, rss_kb], ...]} (ms since the frees finished).
 */
#include "bench.h"

int main(int argc, char **argv)
{
	struct bench_args a;
	bench_args_init(&a, argc, argv);
	long mb = bench_long(&a, "mb", 1024, 16);
	long idle_ms = bench_long(&a, "idle-ms", 3000, 200);
	long sample_ms = bench_long(&a, "sample-ms", 100, 50);
	uint64_t rng = bench_seed(0);
	size_t total = (size_t)mb << 20, got = 0, n = 0, cap = total / 4096 + 1;
	char **blk = bench_xmalloc(cap * sizeof(*blk));
	while (got < total && n < cap) {
		size_t sz = bench_log_uniform(&rng, 4096, 65536);
		blk[n] = bench_xmalloc(sz);
		bench_touch(blk[n++], sz);
		got += sz;
	}
	long peak = bench_rss_kb();
	double t_free = bench_now_ns();
	for (size_t i = 0; i < n; i++)
		free(blk[i]);
	free(blk);
	double t0 = bench_now_ns();
	long after = bench_rss_kb();
	printf("{\"bench\":\"idle\",\"mb\":%ld,\"blocks\":%zu,\"free_s\":%.6f,\"peak_rss_kb\":%ld,"
	       "\"after_free_kb\":%ld,\"samples\":[", mb, n, (t0 - t_free) / 1e9, peak, after);
	long last = after;
	for (long ms = 0; ms <= idle_ms; ms += sample_ms) {
		struct timespec ts = { sample_ms / 1000, (sample_ms % 1000) * 1000000L };
		last = bench_rss_kb();
		printf("%s[%.0f,%ld]", ms ? "," : "", (bench_now_ns() - t0) / 1e6, last);
		nanosleep(&ts, NULL);
	}
	printf("],\"final_kb\":%ld}\n", last);
	return 0;
}
