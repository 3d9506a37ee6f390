/*
 * tests/unit/slab/drained.h - the end of a slab test that turned sheaves
 * and statistics on for one cache: every object is back (the walker counts
 * none in use), a shrink leaves no slab, the options go back to their
 * defaults and the cache is destroyed.
 */
#ifndef PC_TEST_SLAB_DRAINED_H
#define PC_TEST_SLAB_DRAINED_H

#include "slab/slab.h"
#include "test.h"
#include "unit/unit_helpers.h"

static inline void check_drained_and_destroy(struct pc_cache *s)
{
	struct pc_cache_info info;
	CHECK_EQ(pc_cache_check(s), 0);
	pc_cache_shrink(s);
	pc_cache_info(s, &info);
	CHECK_EQ(info.slabs, 0);
	set_opt(PC_OPT_SLUB_SHEAF_CAPACITY, -1);
	set_opt(PC_OPT_STATS_ENABLE, 0);
	CHECK_EQ(pc_cache_destroy(s), 0);
}

#endif
