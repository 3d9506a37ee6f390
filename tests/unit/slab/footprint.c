/*
 * tests/unit/slab/footprint.c - what a cache costs in resident memory
 * (docs/footprint.md).
 *
 *  - cache_metadata: with statistics off, making NCACHES caches (no object
 *    allocated) adds at most 1 KiB + 192 bytes per CPU + 384 per node each
 *    to the anonymous RSS, plus two pages for the chunks' ends: the cold
 *    blocks (each CPU's slab counters, the list_lock and barn lock
 *    statistics) stay untouched, and a cache carries no PC_MAX_NODES
 *    arrays. Before, a cache was about 3 KiB on
 *    2 CPUs (1.3 KiB of it statistics, 1 KiB the two arrays of 64 node
 *    pointers): about 200 KiB for 64 caches, against about 50 KiB now.
 *  - the cold blocks work: with stats.enable on, the counters and the lock
 *    statistics of a cache count (pc_cache_info).
 * The RSS comes from /proc/self/status (RssAnon), in pages, so no verdict
 * depends on timing. Under AddressSanitizer (whose shadow memory grows with
 * every write) the RSS bound is not checked.
 */
#define _GNU_SOURCE
#include "slab/slab.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCACHES 64

static size_t anon_rss_bytes(void)
{
	char line[128];
	size_t kb = 0;
	FILE *f = fopen("/proc/self/status", "r");
	REQUIRE(f != NULL);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "RssAnon:", 8) == 0)
			kb = (size_t)strtoul(line + 8, NULL, 10);
	fclose(f);
	return kb << 10;
}

/* The bytes of one cache's block as cache.c lays it out (white-box). */
static size_t block_bytes(void)
{
	size_t bytes = sizeof(struct pc_cache) + os_cpu_count() * sizeof(struct pc_cache_cpu) +
		       pc_node_count() * (sizeof(struct pc_cache_node) + sizeof(struct pc_barn) +
					  2 * sizeof(void *));
	return pc_align_up(bytes, 64) + os_cpu_count() * sizeof(struct pc_sheaf_slot);
}

/* What a cache may cost: 1 KiB, 192 bytes per CPU (its CPU slab line and
 * sheaf slot line, with room), 384 per node (node and barn with their
 * locks). The old layout (statistics inline, two arrays of PC_MAX_NODES
 * pointers) took 1216 + 320 per CPU + 1088 per node bytes. */
static size_t cache_bound(void)
{
	return 1024 + 192 * (size_t)os_cpu_count() + 384 * (size_t)pc_node_count();
}

TEST(cache_metadata)
{
	REQUIRE(pc_option_set(PC_OPT_STATS_ENABLE, 0, false) == 0);
	/* The first creation starts the slab layer and makes the sheaf caches. */
	struct pc_cache *first = pc_cache_create("fp-first", 40, 0, NULL);
	REQUIRE(first != NULL);
	static struct pc_cache *caches[NCACHES];
	char name[32];
	size_t before = anon_rss_bytes();
	for (int i = 0; i < NCACHES; i++) {
		snprintf(name, sizeof(name), "fp-%d", i);
		REQUIRE((caches[i] = pc_cache_create(name, 24 + 8 * (size_t)i, 0, NULL)) != NULL);
	}
	size_t after = anon_rss_bytes(), added = after > before ? after - before : 0;
	size_t bound = NCACHES * cache_bound() + 2 * PC_PAGE_SIZE;
	CHECK(block_bytes() <= cache_bound());
	printf("  %d caches: anonymous RSS +%zu KiB (blocks of %zu bytes; bound %zu KiB)\n", NCACHES,
	       added >> 10, block_bytes(), bound >> 10);
#if defined(__SANITIZE_ADDRESS__)
	printf("  (AddressSanitizer: the bound is not checked)\n");
#else
	CHECK(added <= bound);
#endif
	/* Usable, and nothing of theirs left after a destroy. */
	for (int i = 0; i < NCACHES; i++) {
		void *p = pc_cache_alloc(caches[i]);
		REQUIRE(p != NULL);
		pc_cache_free(caches[i], p);
		CHECK_EQ(pc_cache_destroy(caches[i]), 0);
	}
	CHECK_EQ(pc_cache_destroy(first), 0);
}

TEST(cold_blocks_count)
{
	REQUIRE(pc_option_set(PC_OPT_STATS_ENABLE, 1, false) == 0);
	struct pc_cache *s = pc_cache_create("fp-stats", 72, 0, NULL);
	REQUIRE(s != NULL);
	static void *v[2000];
	for (int i = 0; i < 2000; i++)
		REQUIRE((v[i] = pc_cache_alloc(s)) != NULL);
	for (int i = 0; i < 2000; i++)
		pc_cache_free(s, v[i]);
	pc_cache_shrink(s); /* takes every list_lock and barn lock */
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	CHECK(info.stats[PC_SLAB_STAT_alloc_slowpath] > 0);
	CHECK(info.stats[PC_SLAB_STAT_slab_alloc] > 0);
	CHECK(pc_load_relaxed(&info.list_lock.acquisitions) > 0);
	CHECK(pc_load_relaxed(&info.barn_lock.acquisitions) > 0);
	CHECK_EQ(pc_cache_destroy(s), 0);
	REQUIRE(pc_option_set(PC_OPT_STATS_ENABLE, 0, false) == 0);
}

int main(void)
{
	RUN(cache_metadata);
	RUN(cold_blocks_count);
	return test_report();
}
