/*
 * bench/whitebox.c - pcmalloc's own statistics for the white-box builds of
 * the workloads (BENCH_WHITEBOX, linked with pcmalloc_static).
 *
 * Reads the lock registry (pc_lock_foreach), the zones' refill/drain
 * counters and the caches' tunables through the internal headers; it takes
 * no lock of its own and runs after the workload's threads have joined.
 * When a public statistics call (issue 10) lands, this file is the one place
 * to switch over.
 *
 * Lines printed, each tagged with the workload's name:
 *   {"bench":..,"stat":"lock","lock":"list_lock","acquisitions":..,
 *    "contended":..,"wait_ns":..,"hold_ns":..,"wait_share":..,
 *    "hold_share":..,"wait_hist":[..]}         one per lock class
 *   {"bench":..,"stat":"zones","refills":..,"refill_pages":..,"drains":..,
 *    "drain_pages":..,"refill_hist":[..]}       summed over zones
 *   {"bench":..,"stat":"cache","name":..,...}   caches whose list_lock was
 *                                               taken by
 *                                               the workload
 * wait_share = wait time / (threads * elapsed): the share of the threads'
 * time spent waiting for that lock class (the seeds' "% of cycles in
 * queued_spin_lock_slowpath"); hold_share likewise for time held.
 */
#include "bench.h"

#include "pcmalloc.h"
#include "lock/lock.h"
#include "page/page.h"
#include "slab/slab.h"

#define MAX_CLASSES 16

struct class_sum {
	const char *name;
	struct pc_lock_stats s;
};
struct class_table {
	int n;
	struct class_sum c[MAX_CLASSES];
};

void bench_stats_start(void)
{
	if (pcmalloc_ctl_set("stats.enable", 1) != 0)
		perror("pcmalloc_ctl_set(stats.enable)");
}

static void add_lock(struct pc_lock *l, void *arg)
{
	struct class_table *t = arg;
	int i = 0;
	while (i < t->n && strcmp(t->c[i].name, l->name) != 0)
		i++;
	if (i == t->n) {
		if (t->n == MAX_CLASSES)
			return;
		t->c[t->n++].name = l->name;
	}
	pc_lock_stats_merge(&t->c[i].s, l->stats);
}

static void print_hist(const _Atomic uint64_t *h)
{
	int last = 0;
	for (int b = 0; b < PC_LOCK_HIST_BUCKETS; b++)
		if (atomic_load_explicit(&h[b], memory_order_relaxed))
			last = b;
	printf("[");
	for (int b = 0; b <= last; b++)
		printf("%s%llu", b ? "," : "",
		       (unsigned long long)atomic_load_explicit(&h[b], memory_order_relaxed));
	printf("]");
}

static void report_locks(const char *bench, double thread_ns)
{
	static struct class_table t; /* large: not on the stack */
	memset(&t, 0, sizeof(t));
	pc_lock_foreach(add_lock, &t);
	for (int i = 0; i < t.n; i++) {
		struct pc_lock_stats *s = &t.c[i].s;
		uint64_t wait = atomic_load_explicit(&s->wait_ns_total, memory_order_relaxed);
		uint64_t hold = atomic_load_explicit(&s->hold_ns_total, memory_order_relaxed);
		printf("{\"bench\":\"%s\",\"stat\":\"lock\",\"lock\":\"%s\",\"acquisitions\":%llu,"
		       "\"contended\":%llu,\"wait_ns\":%llu,\"wait_ns_max\":%llu,\"hold_ns\":%llu,"
		       "\"wait_share\":%.6f,\"hold_share\":%.6f,\"wait_hist\":",
		       bench, t.c[i].name,
		       (unsigned long long)atomic_load_explicit(&s->acquisitions, memory_order_relaxed),
		       (unsigned long long)atomic_load_explicit(&s->contended, memory_order_relaxed),
		       (unsigned long long)wait,
		       (unsigned long long)atomic_load_explicit(&s->wait_ns_max, memory_order_relaxed),
		       (unsigned long long)hold, (double)wait / thread_ns, (double)hold / thread_ns);
		print_hist(s->wait_hist);
		printf("}\n");
	}
}

static void report_zones(const char *bench)
{
	static _Atomic uint64_t hist[PC_LOCK_HIST_BUCKETS];
	uint64_t refills = 0, refill_pages = 0, drains = 0, drain_pages = 0;
	unsigned nz = pc_zone_count();
	for (unsigned z = 0; z < nz; z++) {
		struct pc_zone_stats *st = &pc_zone_get(z)->stats;
		refills += atomic_load_explicit(&st->refills, memory_order_relaxed);
		refill_pages += atomic_load_explicit(&st->refill_pages, memory_order_relaxed);
		drains += atomic_load_explicit(&st->drains, memory_order_relaxed);
		drain_pages += atomic_load_explicit(&st->drain_pages, memory_order_relaxed);
		for (int b = 0; b < PC_LOCK_HIST_BUCKETS; b++)
			atomic_fetch_add_explicit(&hist[b],
				atomic_load_explicit(&st->refill_ns.bucket[b], memory_order_relaxed),
				memory_order_relaxed);
	}
	printf("{\"bench\":\"%s\",\"stat\":\"zones\",\"zones\":%u,\"refills\":%llu,"
	       "\"refill_pages\":%llu,\"drains\":%llu,\"drain_pages\":%llu,\"refill_hist\":",
	       bench, nz, (unsigned long long)refills, (unsigned long long)refill_pages,
	       (unsigned long long)drains, (unsigned long long)drain_pages);
	print_hist(hist);
	printf("}\n");
}

static const char *cache_bench;

static void report_cache(struct pc_cache *s, void *arg)
{
	(void)arg;
	static struct pc_cache_info info; /* large: not on the stack */
	pc_cache_info(s, &info);
	uint64_t acq = atomic_load_explicit(&info.list_lock.acquisitions, memory_order_relaxed);
	if (acq <= 1) /* pc_cache_info itself took it once */
		return;
	printf("{\"bench\":\"%s\",\"stat\":\"cache\",\"name\":\"%s\",\"size\":%zu,\"order\":%u,"
	       "\"objects_per_slab\":%u,\"min_partial\":%u,\"cpu_partial\":%u,"
	       "\"list_lock_acquisitions\":%llu,\"list_lock_wait_ns\":%llu}\n",
	       cache_bench, info.name, info.size, info.order, info.objects_per_slab,
	       info.min_partial, info.cpu_partial, (unsigned long long)acq,
	       (unsigned long long)atomic_load_explicit(&info.list_lock.wait_ns_total,
							memory_order_relaxed));
}

void bench_stats_report(const char *bench, long threads, double elapsed_ns)
{
	double thread_ns = (double)threads * elapsed_ns;
	if (thread_ns <= 0)
		thread_ns = 1;
	report_locks(bench, thread_ns);
	report_zones(bench);
	cache_bench = bench;
	pc_cache_foreach(report_cache, NULL);
	fflush(stdout);
}
