/*
 * bench/seed/pages.c - page-allocator pressure for seeds 001 and 003
 * (white-box: calls pcmalloc's page allocator directly).
 *
 * Seed 001 ran ten copies of "map 6 GiB, write every page, unmap" and timed
 * rmqueue_bulk, the refill of a per-CPU page list from the zone under
 * zone->lock. Here --threads threads each, --rounds times, take --pages
 * order-0 pages from pc_alloc_pages(0), write one byte in each, and give them
 * all back with pc_free_pages: the per-CPU lists fill and overflow, so
 * refills and drains of up to vm.pcp_batch << vm.pcp_batch_scale_max pages
 * contend for the zone lock. Set the tunables through the environment
 * (PCMALLOC_VM_PCP_BATCH_SCALE_MAX, PCMALLOC_VM_ZONE_INSTANCES, ...).
 *
 *   bench_pages [--threads 4] [--pages 8192] [--rounds 20]
 *
 * Prints {"bench":"pages","threads":..,"pages":..,"elapsed_s":..,
 * "mpages_per_s":..,"alloc_max_ns":..,"free_max_ns":..,"scale_max":..,
 * "zone_instances":..} and the white-box lines (bench/whitebox.c): the zone
 * lock's wait share and the refill latency histogram (log2 ns buckets).
 * alloc_max_ns / free_max_ns: the slowest single pc_alloc_pages /
 * pc_free_pages call seen (rdtsc, converted with a calibrated rate).
 */
#include "bench.h"

#include "pcmalloc.h"
#include "page/page.h"

static long pages, rounds;
static double ns_per_tick;
static uint64_t max_alloc_ticks[256], max_free_ticks[256];

static void *worker(long id)
{
	void **v = bench_xmalloc((size_t)pages * sizeof(void *));
	uint64_t ma = 0, mf = 0;
	for (long r = 0; r < rounds; r++) {
		for (long i = 0; i < pages; i++) {
			uint64_t t0 = bench_rdtsc();
			v[i] = pc_alloc_pages(0);
			uint64_t t = bench_rdtsc() - t0;
			ma = t > ma ? t : ma;
			if (!v[i]) {
				fprintf(stderr, "pages: out of memory\n");
				exit(1);
			}
			*(volatile char *)v[i] = (char)i;
		}
		for (long i = 0; i < pages; i++) {
			uint64_t t0 = bench_rdtsc();
			pc_free_pages(v[i], 0);
			uint64_t t = bench_rdtsc() - t0;
			mf = t > mf ? t : mf;
		}
	}
	free(v);
	max_alloc_ticks[id % 256] = ma;
	max_free_ticks[id % 256] = mf;
	return NULL;
}

static double calibrate(void)
{
	double t0 = bench_now_ns();
	uint64_t c0 = bench_rdtsc();
	struct timespec ts = { 0, 20000000 };
	nanosleep(&ts, NULL);
	return (bench_now_ns() - t0) / (double)(bench_rdtsc() - c0);
}

int main(int argc, char **argv)
{
	struct bench_args a;
	bench_args_init(&a, argc, argv);
	long threads = bench_long(&a, "threads", 4, 2);
	pages = bench_long(&a, "pages", 8192, 512);
	rounds = bench_long(&a, "rounds", 20, 2);
	if (threads < 1 || threads > 256) {
		fprintf(stderr, "pages: --threads 1..256\n");
		return 2;
	}
	pc_page_init();
	bench_stats_start();
	ns_per_tick = calibrate();
	double ns = bench_run_threads(threads, worker);
	uint64_t ma = 0, mf = 0;
	for (long i = 0; i < threads; i++) {
		ma = max_alloc_ticks[i] > ma ? max_alloc_ticks[i] : ma;
		mf = max_free_ticks[i] > mf ? max_free_ticks[i] : mf;
	}
	long scale = -1, zones = -1;
	pcmalloc_ctl_get("vm.pcp_batch_scale_max", &scale);
	pcmalloc_ctl_get("vm.zone_instances", &zones);
	double total = (double)threads * (double)pages * (double)rounds;
	printf("{\"bench\":\"pages\",\"threads\":%ld,\"pages\":%.0f,\"elapsed_s\":%.6f,"
	       "\"mpages_per_s\":%.4f,\"alloc_max_ns\":%.0f,\"free_max_ns\":%.0f,"
	       "\"scale_max\":%ld,\"zone_instances\":%ld,\"zones\":%u,\"peak_rss_kb\":%ld}\n",
	       threads, total, ns / 1e9, total / ns * 1e3, (double)ma * ns_per_tick,
	       (double)mf * ns_per_tick, scale, zones, pc_zone_count(), bench_peak_rss_kb());
	bench_stats_report("pages", threads, ns);
	return 0;
}
