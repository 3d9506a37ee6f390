/*
 * tests/malloc/test_rss.c - freed memory goes back to the system.
 *
 * The resident set size comes from /proc/self/statm. Each measurement runs
 * in a child process of its own, so that what one leaves behind (or keeps
 * cached) cannot help or spoil another; the parent checks the numbers.
 *
 *   huge_freed:        malloc 1 GiB, touch all of it, free it: RSS drops by
 *                      at least 900 MiB, without malloc_trim.
 *   small_freed_trim:  ~512 MiB of small blocks (16 .. 1024 bytes), touched,
 *                      freed in random order, then malloc_trim(0): RSS drops
 *                      by at least half of what they added. (glibc passes
 *                      only because its malloc_trim also returns free pages
 *                      in the middle of the heap.)
 *   large_freed_trim:  the same with 256 MiB of large blocks (8 KiB .. 2 MiB).
 *   small_classes_footprint: a few objects of each of the 17 size classes
 *                      from 8 to 512 bytes, in a child whose allocator has
 *                      made few classes (a warm-up's, so that code and
 *                      start-up metadata are resident before), pinned to
 *                      one CPU (each CPU refills from its own slabs): its
 *                      anonymous RSS grows by at most 200 KiB (17 caches'
 *                      metadata and one or two slabs each: 120 KiB with
 *                      rseq, 108 KiB in thread mode, where every class is
 *                      made at start-up). The sheaves' default capacity
 *                      starts small (slab/sheaf.c); when each first
 *                      allocation refilled a whole 16 KiB sheaf, and its
 *                      slabs were written whole, the same workload took
 *                      292 and 244 KiB (docs/footprint.md).
 */
#define _GNU_SOURCE
#include "malloc_test.h"

#include <sched.h>
#include <sys/mman.h>

/* RSS at the three points of a measurement, and how it went. */
struct rss_run {
	size_t before, peak, freed, after; /* bytes */
	size_t blocks, bytes;
	int nulls, exited_ok;
};

/* Runs fn in a forked child and returns what it measured. */
static struct rss_run in_child(void (*fn)(void *, const void *), const void *arg)
{
	struct rss_run r = { 0 };
	int ok = run_in_child(fn, arg, &r, sizeof(r));
	r.exited_ok = ok;
	return r;
}

static void report(const char *what, size_t before, size_t peak, size_t after)
{
	printf("rss: %s: before %zu MiB, peak %zu MiB, after %zu MiB\n", what, before / MiB,
	       peak / MiB, after / MiB);
}

static void huge_run(void *out, const void *arg)
{
	struct rss_run *r = out;
	(void)arg;
	size_t n = 1 * GiB;
	r->before = rss_bytes();
	char *p = p_malloc(n);
	if (!p) {
		r->nulls = 1;
		return;
	}
	for (size_t i = 0; i < n; i += 4096)
		p[i] = (char)i;
	p[n - 1] = 1;
	r->peak = rss_bytes();
	p_free(p);
	r->after = r->freed = rss_bytes();
	r->blocks = 1;
	r->bytes = n;
}

TEST(huge_freed)
{
	struct rss_run r = in_child(huge_run, NULL);
	report("1 GiB block", r.before, r.peak, r.after);
	CHECK(r.exited_ok);
	CHECK_EQ(r.nulls, 0);
	CHECK(r.peak >= r.before + 1000 * MiB); /* touching it made it resident */
	CHECK(r.peak >= r.after + 900 * MiB);   /* freeing it gave it back */
}

struct blocks_spec {
	size_t total, lo, hi;
};

/* Allocates blocks of random sizes in [lo, hi] until `total` bytes, touches
 * every byte, frees them in random order and calls malloc_trim(0). */
static void blocks_run(void *out, const void *arg)
{
	struct rss_run *r = out;
	const struct blocks_spec *s = arg;
	size_t max_blocks = s->total / s->lo + 1;
	/* The pointer array is mmapped, so that the allocator under test does
	 * not count it (pages of it are touched as it fills). */
	void **ps = mmap(NULL, max_blocks * sizeof(void *), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ps == MAP_FAILED) {
		r->nulls = -1;
		return;
	}
	uint64_t rng = 2024;
	r->before = rss_bytes();
	while (r->bytes < s->total && r->blocks < max_blocks) {
		size_t n = s->lo + (size_t)(test_rand(&rng) % (s->hi - s->lo + 1));
		void *p = p_malloc(n);
		if (!p) {
			r->nulls++;
			break;
		}
		memset(p, 0x6b, n);
		ps[r->blocks++] = p;
		r->bytes += n;
	}
	r->peak = rss_bytes();
	for (size_t i = r->blocks; i > 1; i--) { /* shuffle */
		size_t j = (size_t)(test_rand(&rng) % i);
		void *t = ps[i - 1];
		ps[i - 1] = ps[j];
		ps[j] = t;
	}
	for (size_t i = 0; i < r->blocks; i++)
		p_free(ps[i]);
	r->freed = rss_bytes();
	p_malloc_trim(0);
	r->after = rss_bytes();
}

static void freed_then_trimmed(const char *what, size_t total, size_t lo, size_t hi)
{
	struct blocks_spec spec = { total, lo, hi };
	struct rss_run r = in_child(blocks_run, &spec);
	report(what, r.before, r.peak, r.after);
	printf("rss: %s: %zu blocks, %zu MiB; after free, before trim %zu MiB\n", what, r.blocks,
	       r.bytes / MiB, r.freed / MiB);
	CHECK(r.exited_ok);
	CHECK_EQ(r.nulls, 0);
	CHECK(r.peak >= r.before + total / 2); /* the blocks were resident */
	/* RSS dropped by at least half of what the blocks added */
	size_t added = r.peak > r.before ? r.peak - r.before : 0;
	CHECK(r.after + added / 2 <= r.peak);
}

TEST(small_freed_trim)
{
	freed_then_trimmed("512 MiB of small blocks", 512 * MiB, 16, 1024);
}

TEST(large_freed_trim)
{
	freed_then_trimmed("256 MiB of large blocks", 256 * MiB, 8 * KiB + 1, 2 * MiB);
}

/* RssAnon of /proc/self/status, in bytes (0 if unreadable): the pages a
 * workload writes, without the code pages it happens to fault in. */
static size_t anon_rss_bytes(void)
{
	char line[128];
	size_t kb = 0;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "RssAnon:", 8) == 0)
			kb = (size_t)strtoul(line + 8, NULL, 10);
	fclose(f);
	return kb * KiB;
}

static const size_t footprint_sizes[] = {
	8, 16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512,
};

#define NSIZES (sizeof(footprint_sizes) / sizeof(footprint_sizes[0]))

static void footprint_run(void *out, const void *arg)
{
	struct rss_run *r = out;
	(void)arg;
	/* On one CPU from here on: each CPU refills from its own CPU slabs
	 * (of the classes and of the sheaf caches), so a migration in the
	 * middle would cost new slabs on the other CPU (+40-120 KiB: a
	 * verdict that would depend on scheduling). */
	int cpu = sched_getcpu();
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu >= 0 ? cpu : 0, &one);
	if (sched_setaffinity(0, sizeof(one), &one) != 0) {
		r->nulls = -1;
		return;
	}
	/* Warm-up: a class outside the measured ones (its cache, the sheaf
	 * caches, the allocator's start-up, the code of the slow paths), and
	 * the FILE that anon_rss_bytes opens. */
	p_free(p_malloc(2000));
	r->before = anon_rss_bytes();
	void *p[NSIZES][8];
	for (size_t c = 0; c < NSIZES; c++) {
		for (int i = 0; i < 8; i++) {
			if (!(p[c][i] = p_malloc(footprint_sizes[c]))) {
				r->nulls++;
				return;
			}
			memset(p[c][i], 0x5a, footprint_sizes[c]);
			r->blocks++;
			r->bytes += footprint_sizes[c];
		}
	}
	r->peak = anon_rss_bytes();
	for (size_t c = 0; c < NSIZES; c++)
		for (int i = 0; i < 8; i++)
			p_free(p[c][i]);
}

TEST(small_classes_footprint)
{
	struct rss_run r = in_child(footprint_run, NULL);
	size_t added = r.peak > r.before ? r.peak - r.before : 0;
	printf("rss: %zu small blocks (%zu bytes) in 17 classes: anonymous RSS %zu KiB -> %zu KiB (+%zu KiB)\n",
	       r.blocks, r.bytes, r.before / KiB, r.peak / KiB, added / KiB);
	CHECK(r.exited_ok);
	CHECK_EQ(r.nulls, 0);
	CHECK(r.before > 0);
	/* The per-thread fallback (slub.sheaf_mode 2) starts its sheaves at the
	 * default capacity (sheaf.c: it has no spare to keep a steady loop off
	 * a sheaf's ends), as before the capacity could grow: +240 KiB then. */
	int (*ctl_get)(const char *, long *) =
		(int (*)(const char *, long *))dlsym(RTLD_DEFAULT, "pcmalloc_ctl_get");
	long mode = 1;
	if (ctl_get)
		CHECK(ctl_get("slub.sheaf_mode", &mode) == 0);
	CHECK(added <= (mode == 2 ? 300 : 200) * KiB);
}

int main(void)
{
	RUN(malloc_interposed);
	RUN(small_classes_footprint); /* early: the parent has used few classes */
	RUN(huge_freed);
	RUN(small_freed_trim);
	RUN(large_freed_trim);
	return test_report();
}
