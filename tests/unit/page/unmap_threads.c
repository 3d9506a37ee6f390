/*
 * tests/unit/page/unmap_threads.c - regions unmapped (unmap.c) while other
 * threads allocate and free runs: a region is taken away only when nothing
 * of it is in use, so no live run loses its pages, and the run heap, the
 * buddy lists and the region list stay consistent.
 *
 * WORKERS threads each do a fixed number of operations (OPS, scaled down
 * under ThreadSanitizer) on SLOTS slots of their own: free the run in the
 * slot (after checking the tag written in its first and last page) or
 * allocate one of 1..PC_RUN_MAX_PAGES pages and tag it. Few slots and long
 * runs make regions fill and empty again and again. Meanwhile one more
 * thread trims (pc_page_trim, which unmaps), unmaps (pc_page_unmap_free) and
 * runs release passes until the workers are done. The work is fixed, not
 * timed: how many regions are unmapped on the way depends on the
 * scheduling, the verdict does not. At the end every run is freed and
 * trimmed: the page allocator's invariants hold and, since no block of
 * pc_alloc_pages was ever handed out, no region is left mapped. Workers
 * count failures in an atomic; only the main thread calls CHECK.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <pthread.h>

#define WORKERS 4
#define SLOTS 4
#define OPS 40000

static _Atomic int failures, workers_left, alloc_failures;

struct worker {
	pthread_t thread;
	unsigned id;
	char *run[SLOTS];
	size_t pages[SLOTS];
};

static char tag_of(const struct worker *w, unsigned slot, const char *p)
{
	return (char)(w->id * 31 + slot * 7 + ((uintptr_t)p >> 12));
}

static void tag(const struct worker *w, unsigned slot)
{
	char *p = w->run[slot];
	p[0] = p[(w->pages[slot] << PC_PAGE_SHIFT) - 1] = tag_of(w, slot, p);
}

static bool tagged(const struct worker *w, unsigned slot)
{
	const char *p = w->run[slot];
	char t = tag_of(w, slot, p);
	return p[0] == t && p[(w->pages[slot] << PC_PAGE_SHIFT) - 1] == t;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = 0x9e3779b97f4a7c15ull * (w->id + 1);
	unsigned ops = scaled(OPS, 20);
	for (unsigned i = 0; i < ops; i++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		unsigned slot = (unsigned)(rng >> 40) % SLOTS;
		if (w->run[slot]) {
			if (!tagged(w, slot))
				atomic_fetch_add(&failures, 1);
			pc_free_run(w->run[slot], w->pages[slot]);
			w->run[slot] = NULL;
			continue;
		}
		w->pages[slot] = 1 + (size_t)(rng >> 20) % PC_RUN_MAX_PAGES;
		w->run[slot] = pc_alloc_run(w->pages[slot]);
		if (!w->run[slot])
			atomic_fetch_add(&alloc_failures, 1);
		else
			tag(w, slot);
	}
	for (unsigned s = 0; s < SLOTS; s++) {
		if (w->run[s] && !tagged(w, s))
			atomic_fetch_add(&failures, 1);
		if (w->run[s])
			pc_free_run(w->run[s], w->pages[s]);
	}
	atomic_fetch_sub(&workers_left, 1);
	return NULL;
}

static void *trim(void *arg)
{
	(void)arg;
	while (atomic_load(&workers_left) > 0) {
		pc_page_trim();
		pc_page_unmap_free();
		pc_page_release_due();
		sched_yield();
	}
	return NULL;
}

static size_t regions(void)
{
	size_t pages = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		pc_lock_acquire(&z->lock);
		pages += z->managed_pages;
		pc_lock_release(&z->lock);
	}
	return pages / PC_REGION_PAGES;
}

TEST(unmap_while_runs_churn)
{
	static struct worker w[WORKERS];
	pthread_t trimmer;
	set_opt(PC_OPT_VM_RELEASE_DELAY_MS, 0); /* passes release at once: more unmapping */
	atomic_store(&workers_left, WORKERS);
	for (unsigned i = 0; i < WORKERS; i++) {
		w[i].id = i;
		REQUIRE(pthread_create(&w[i].thread, NULL, work, &w[i]) == 0);
	}
	REQUIRE(pthread_create(&trimmer, NULL, trim, NULL) == 0);
	for (unsigned i = 0; i < WORKERS; i++)
		pthread_join(w[i].thread, NULL);
	pthread_join(trimmer, NULL);
	CHECK_EQ(atomic_load(&failures), 0);
	CHECK_EQ(atomic_load(&alloc_failures), 0);
	pc_page_trim();
	CHECK(pc_page_check());
	CHECK_EQ(regions(), 0); /* no region ever held a pc_alloc_pages block */
	uint64_t unmapped = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++)
		unmapped += pc_load_relaxed(&pc_zone_get(i)->stats.regions_unmapped);
	printf("unmap_threads: %llu regions unmapped\n", (unsigned long long)unmapped);
	CHECK(unmapped >= 1);
}

int main(void)
{
	pc_page_init();
	RUN(unmap_while_runs_churn);
	return test_report();
}
