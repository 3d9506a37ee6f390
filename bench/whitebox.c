/*
 * bench/whitebox.c - pcmalloc's own statistics for the white-box builds of
 * the workloads (BENCH_WHITEBOX, linked with pcmalloc_static).
 *
 * Reads them only through the public statistics API of include/pcmalloc.h
 * (docs/statistics.md): stats.enable=1 before the workload starts
 * (pcmalloc_ctl_set), and one JSON snapshot (pcmalloc_stats_json) after its
 * threads have joined. It prints one line, tagged with the workload's name:
 *
 *   {"bench":..,"stat":"pcmalloc","threads":N,"elapsed_ns":N,"snapshot":{..}}
 *
 * tools/bench_core.py (whitebox_lines) turns it into the lines the
 * experiments read: per lock class ("stat":"lock": acquisitions, contended,
 * wait_ns, wait_ns_max, hold_ns, wait_share, hold_share, wait_hist), the
 * zones summed ("stat":"zones": refills, refill_pages, drains, drain_pages,
 * refill_hist) and each cache whose list_lock the workload took
 * ("stat":"cache"). There, wait_share = wait time / (threads * elapsed): the
 * share of the workload threads' time spent waiting for that lock class (the
 * seeds' "% of cycles in queued_spin_lock_slowpath"); the snapshot's own
 * wait_share uses the process's CPU time instead.
 */
#include "bench.h"

#include "pcmalloc.h"

void bench_stats_start(void)
{
	if (pcmalloc_ctl_set("stats.enable", 1) != 0)
		perror("pcmalloc_ctl_set(stats.enable)");
}

void bench_stats_report(const char *bench, long threads, double elapsed_ns)
{
	char *json = pcmalloc_stats_json();
	if (!json) {
		perror("pcmalloc_stats_json");
		return;
	}
	size_t len = strlen(json);
	while (len > 0 && json[len - 1] == '\n') /* one line */
		json[--len] = '\0';
	printf("{\"bench\":\"%s\",\"stat\":\"pcmalloc\",\"threads\":%ld,\"elapsed_ns\":%.0f,"
	       "\"snapshot\":%s}\n", bench, threads, elapsed_ns, json);
	free(json);
	fflush(stdout);
}
