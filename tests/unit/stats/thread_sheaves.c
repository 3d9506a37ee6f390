/*
 * tests/unit/stats/thread_sheaves.c - statistics and trimming see every live
 * thread's sheaves, also on the per-thread fallback (thread_sheaves_norseq,
 * and ThreadSanitizer), not only the calling thread's (slab.h, "Flushing
 * another thread's sheaves"):
 *  - thread B allocates and frees N objects of a cache and stays alive
 *    (parked on a semaphore); thread A's slabinfo active_objs for that cache
 *    (pcmalloc_ctl_get, from the same snapshot as the slabinfo line) does
 *    not count them, and sheaf_objects does;
 *  - pc_trim (malloc_trim's body) from A then gives B's sheaf back to the
 *    slabs: sheaf_objects 0, no slab left.
 * B's sheaf is filled before A looks and nobody runs meanwhile: no verdict
 * depends on timing.
 * Links every layer but the C library's names (pcmalloc_prefixed).
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "stats/stats.h"
#include "test.h"
#include "unit/slab/parked.h"

#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>

#define N 100

static struct pc_cache *cache;
static long stat_of(const char *field)
{
	char name[96];
	long v = -1;
	snprintf(name, sizeof(name), "stats.cache.probe-ts.%s", field);
	REQUIRE(pcmalloc_ctl_get(name, &v) == 0);
	return v;
}

TEST(other_threads_sheaves_not_active_and_trimmed)
{
	cache = pc_cache_create("probe-ts", 200, 0, NULL);
	REQUIRE(cache != NULL);
	struct parked parked;
	parked_start(&parked, cache, N);
	CHECK_EQ(stat_of("active_objs"), 0);
	CHECK(stat_of("sheaf_objects") >= 1);
	CHECK(stat_of("num_slabs") > 0);
	pc_trim();
	CHECK_EQ(stat_of("sheaf_objects"), 0);
	CHECK_EQ(stat_of("active_objs"), 0);
	CHECK_EQ(stat_of("num_slabs"), 0);
	parked_finish(&parked);
	CHECK_EQ(pc_cache_destroy(cache), 0);
}

int main(void)
{
	alarm(300);
	pc_stats_start();
	REQUIRE(pcmalloc_ctl_set("stats.enable", 1) == 0);
	RUN(other_threads_sheaves_not_active_and_trimmed);
	return test_report();
}
