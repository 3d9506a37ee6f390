/*
 * docs/pages-mixed-peak.c - where bench_mixed's peak RSS is (docs/pages-medium.md,
 * "Where bench_mixed's peak is, attributed"). Runs bench_mixed's workload
 * (bench/workloads/mixed.c: the same random numbers, sizes and steps) and,
 * each time the resident set has grown by 1% over the last look, stops every
 * worker between two steps (they wait on a flag; none holds an allocator
 * lock there), and counts:
 *   - live: the bytes the program asked for, of the blocks it holds;
 *   - span / resident: the distinct pages those blocks cover, and how many
 *     of them are resident (mincore);
 *   - the rest of the RSS (allocator pools, metadata, freed pages);
 *   - under pcmalloc (LD_PRELOAD, found with dlsym), its statistics.
 * The look at the highest RSS is printed at the end, with the threads that
 * had started, were running and had ended by then. The pauses add time, so
 * the run's own peak is printed too (VmHWM) to compare with bench_mixed's.
 * With --pause 0 nothing stops: each new high of the RSS (sampled every
 * 200 us) records only the RSS, the live bytes and the threads, so the
 * peak's moment is that of an undisturbed run.
 *
 * With --large 1, bench_large's workload (64 KiB - 4 MiB, every page
 * written) instead.
 *
 *   cc -O2 -pthread -Ibench -o /tmp/mixed-peak docs/pages-mixed-peak.c -ldl
 *   LD_PRELOAD=build/libpcmalloc.so /tmp/mixed-peak --threads 16 --steps 10000
 */
#define _GNU_SOURCE
#include "bench.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <sys/mman.h>

static long blocks, steps, realloc_every, threads;
static size_t min_size, max_size;
static char ***all_blk;
static size_t **all_len;
static atomic_long live_bytes, started, running, ended;
static atomic_int pause_req, paused;

/* Between two steps: wait while the sampler looks. */
static void pause_point(void)
{
	if (!atomic_load_explicit(&pause_req, memory_order_acquire))
		return;
	atomic_fetch_add(&paused, 1);
	while (atomic_load_explicit(&pause_req, memory_order_acquire))
		sched_yield();
	atomic_fetch_sub(&paused, 1);
}

/* A worker's tables of blocks and their lengths, published for the look;
 * counted as started and running. */
static void worker_start(long id, char ***blk, size_t **len)
{
	*blk = calloc((size_t)blocks, sizeof(**blk));
	*len = calloc((size_t)blocks, sizeof(**len));
	if (!*blk || !*len)
		exit(1);
	all_blk[id] = *blk;
	all_len[id] = *len;
	atomic_fetch_add(&started, 1);
	atomic_fetch_add(&running, 1);
}

/* Frees what the worker holds, pausing between blocks as the steps do. */
static void worker_end(char **blk, size_t *len)
{
	for (long i = 0; i < blocks; i++) {
		pause_point();
		free(blk[i]);
		atomic_fetch_sub(&live_bytes, (long)len[i]);
		blk[i] = NULL;
	}
	atomic_fetch_sub(&running, 1);
	atomic_fetch_add(&ended, 1);
}

/* bench_large's workload instead (bench/workloads/large.c, --large 1): --blocks
 * live blocks (8) of --min..--max (64 KiB - 4 MiB), each step frees one
 * and allocates another, writing one byte per page of it. */
static long large_mode;

static void *large_worker(long id)
{
	uint64_t rng = bench_seed(id);
	char **blk;
	size_t *len;
	worker_start(id, &blk, &len);
	for (long s = 0; s < steps; s++) {
		pause_point();
		long i = (long)(bench_rand(&rng) % (uint64_t)blocks);
		free(blk[i]);
		atomic_fetch_sub(&live_bytes, (long)len[i]);
		blk[i] = NULL;
		size_t n = bench_log_uniform(&rng, min_size, max_size);
		char *p = bench_xmalloc(n);
		bench_touch(p, n);
		len[i] = n;
		atomic_fetch_add(&live_bytes, (long)n);
		__atomic_store_n(&blk[i], p, __ATOMIC_RELEASE);
	}
	worker_end(blk, len);
	return NULL;
}

static void *worker(long id)
{
	if (large_mode)
		return large_worker(id);
	uint64_t rng = bench_seed(id);
	char **blk;
	size_t *len;
	worker_start(id, &blk, &len);
	for (long i = 0; i < blocks; i++) {
		pause_point();
		size_t n = bench_log_uniform(&rng, min_size, max_size);
		char *p = bench_xmalloc(n);
		p[0] = p[n - 1] = 1;
		len[i] = n;
		__atomic_store_n(&blk[i], p, __ATOMIC_RELEASE);
		atomic_fetch_add(&live_bytes, (long)n);
	}
	for (long s = 0; s < steps; s++) {
		pause_point();
		long i = (long)(bench_rand(&rng) % (uint64_t)blocks);
		size_t n = bench_log_uniform(&rng, min_size, max_size);
		char *p;
		if (s % realloc_every == 0) {
			p = realloc(blk[i], n);
			if (!p)
				exit(1);
		} else {
			free(blk[i]);
			p = bench_xmalloc(n);
		}
		p[0] = p[n - 1] = (char)s;
		atomic_fetch_add(&live_bytes, (long)n - (long)len[i]);
		len[i] = n;
		blk[i] = p;
	}
	worker_end(blk, len);
	return NULL;
}

/* ---- the look ------------------------------------------------------------------ */
struct look {
	double ms;
	long rss_kb, started, running, ended;
	long live, span_pages, resident_pages;
	long pc[16];
};
static const char *pc_names[] = {
	"stats.allocated", "stats.active", "stats.medium_cached", "stats.pcp_bytes",
	"stats.zone.0.free_pages", "stats.zone.0.dirty_pages", "stats.zone.0.run_free_pages",
	"stats.zone.0.run_dirty_pages", "stats.mapped", "stats.rss",
};
#define PC_N (sizeof(pc_names) / sizeof(pc_names[0]))
static int (*ctl_get)(const char *, long *);

static int cmp_ul(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

static uintptr_t *pages;
static size_t pages_cap;

/* Distinct pages under the live blocks, and how many are resident. */
static void count_pages(struct look *l)
{
	size_t n = 0;
	long ps = sysconf(_SC_PAGESIZE);
	for (long t = 0; t < threads; t++) {
		char **blk = all_blk[t];
		size_t *len = all_len[t];
		if (!blk)
			continue;
		for (long i = 0; i < blocks; i++) {
			char *p = __atomic_load_n(&blk[i], __ATOMIC_ACQUIRE);
			if (!p)
				continue;
			uintptr_t a = (uintptr_t)p / (uintptr_t)ps, b = ((uintptr_t)p + len[i] - 1) / (uintptr_t)ps;
			for (uintptr_t q = a; q <= b; q++) {
				if (n == pages_cap) {
					pages_cap = pages_cap ? 2 * pages_cap : 1 << 20;
					pages = realloc(pages, pages_cap * sizeof(*pages));
				}
				pages[n++] = q;
			}
		}
	}
	qsort(pages, n, sizeof(*pages), cmp_ul);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (u == 0 || pages[u - 1] != pages[i])
			pages[u++] = pages[i];
	/* One mincore per run of consecutive pages (a block's pages, or
	 * neighbours'), not one per page. */
	long res = 0;
	static unsigned char vec[1 << 16];
	for (size_t i = 0; i < u;) {
		size_t j = i + 1;
		while (j < u && pages[j] == pages[j - 1] + 1 && j - i < sizeof(vec))
			j++;
		if (mincore((void *)(pages[i] * (uintptr_t)ps), (j - i) * (size_t)ps, vec) == 0)
			for (size_t k = 0; k < j - i; k++)
				res += vec[k] & 1;
		i = j;
	}
	l->span_pages = (long)u;
	l->resident_pages = res;
}

static void take_look(struct look *l, double t0)
{
	atomic_store_explicit(&pause_req, 1, memory_order_release);
	while (atomic_load(&paused) < atomic_load(&running))
		sched_yield();
	l->ms = (bench_now_ns() - t0) / 1e6;
	l->rss_kb = bench_rss_kb();
	l->started = atomic_load(&started);
	l->running = atomic_load(&running);
	l->ended = atomic_load(&ended);
	l->live = atomic_load(&live_bytes);
	count_pages(l);
	for (size_t i = 0; ctl_get && i < PC_N; i++)
		if (ctl_get(pc_names[i], &l->pc[i]) != 0)
			l->pc[i] = -1;
	atomic_store_explicit(&pause_req, 0, memory_order_release);
}

static atomic_int done;
static struct look best, most_live;
static long pause_on, trace_ms;

static void quick_look(struct look *l, double t0, long rss)
{
	l->ms = (bench_now_ns() - t0) / 1e6;
	l->rss_kb = rss;
	l->started = atomic_load(&started);
	l->running = atomic_load(&running);
	l->ended = atomic_load(&ended);
	l->live = atomic_load(&live_bytes);
}

static void *sampler(void *arg)
{
	double t0 = *(double *)arg;
	long last = 0;
	double next_trace = 0;
	while (!atomic_load(&done)) {
		long rss = bench_rss_kb();
		if (trace_ms && (bench_now_ns() - t0) / 1e6 >= next_trace) {
			struct look l;
			quick_look(&l, t0, rss);
			printf("trace %6.0f ms rss %6.1f MB live %7.1f MB running %2ld ended %2ld\n", l.ms,
			       rss / 1024.0 * 1.048576, l.live / 1e6, l.running, l.ended);
			next_trace = l.ms + (double)trace_ms;
		}
		if (!pause_on && rss > best.rss_kb) {
			quick_look(&best, t0, rss);
		} else if (pause_on && rss > last + last / 100) {
			struct look l;
			memset(&l, 0, sizeof(l));
			take_look(&l, t0);
			last = l.rss_kb;
			if (l.rss_kb > best.rss_kb)
				best = l;
			if (l.live > most_live.live)
				most_live = l;
		}
		usleep(200);
	}
	return NULL;
}

static void print_look(const struct look *l)
{
	const double MB = 1e6;
	long ps = sysconf(_SC_PAGESIZE);
	printf("live %.1f MB asked; their pages: %.1f MB spanned, %.1f MB resident; rest of rss %.1f MB\n",
	       l->live / MB, l->span_pages * ps / MB, l->resident_pages * ps / MB,
	       (l->rss_kb * 1024.0 - l->resident_pages * (double)ps) / MB);
	if (!ctl_get)
		return;
	printf("pcmalloc:");
	for (size_t i = 0; i < PC_N; i++) {
		double v = l->pc[i];
		if (strstr(pc_names[i], "_pages"))
			v *= (double)ps;
		printf(" %s %.1f MB;", pc_names[i] + 6, v / MB);
	}
	printf("\n");
}

static void *run_workers(void *arg)
{
	(void)arg;
	bench_run_threads(threads, worker);
	atomic_store(&done, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	struct bench_args a;
	bench_start(&a, argc, argv);
	threads = bench_long(&a, "threads", 2, 1);
	large_mode = bench_long(&a, "large", 0, 0);
	blocks = bench_long(&a, "blocks", large_mode ? 8 : 4000, 8);
	steps = bench_long(&a, "steps", large_mode ? 500 : 80000, 100);
	realloc_every = bench_long(&a, "realloc-every", 8, 8);
	pause_on = bench_long(&a, "pause", 1, 0);
	trace_ms = bench_long(&a, "trace", 0, 0); /* with --pause 0: a line every N ms */
	min_size = (size_t)bench_long(&a, "min", large_mode ? 65536 : 8, 8);
	max_size = (size_t)bench_long(&a, "max", large_mode ? 4194304 : 131072, 131072);
	all_blk = calloc((size_t)threads, sizeof(*all_blk));
	all_len = calloc((size_t)threads, sizeof(*all_len));
	*(void **)&ctl_get = dlsym(RTLD_DEFAULT, "pcmalloc_ctl_get");
	double t0 = bench_now_ns();
	pthread_t s, w;
	pthread_create(&s, NULL, sampler, &t0);
	pthread_create(&w, NULL, run_workers, NULL);
	pthread_join(w, NULL);
	pthread_join(s, NULL);
	const double MB = 1e6;
	printf("vmhwm %.1f MB; highest look at %.0f ms: rss %.1f MB, threads started %ld running %ld ended %ld\n",
	       bench_peak_rss_kb() * 1024 / MB, best.ms, best.rss_kb * 1024 / MB, best.started, best.running, best.ended);
	if (!pause_on) {
		printf("live %.1f MB asked\n", best.live / MB);
		return 0;
	}
	print_look(&best);
	printf("look with the most live bytes, at %.0f ms: rss %.1f MB, threads started %ld running %ld ended %ld\n",
	       most_live.ms, most_live.rss_kb * 1024 / MB, most_live.started, most_live.running, most_live.ended);
	print_look(&most_live);
	return 0;
}
