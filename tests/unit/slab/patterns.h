/*
 * tests/unit/slab/patterns.h - the contents check of the slab tests that
 * hand out many objects at once (bulk.c, bulk_free.c): each object filled
 * with a pattern of its index, then all checked, so that two objects that
 * overlapped would have overwritten each other.
 */
#ifndef PC_TEST_SLAB_PATTERNS_H
#define PC_TEST_SLAB_PATTERNS_H

#include "slab/slab.h"
#include "test.h"

#include <string.h>

static inline void write_and_check(struct pc_cache *s, void **objs, unsigned n, unsigned salt)
{
	for (unsigned i = 0; i < n; i++)
		memset(objs[i], (int)((i + salt) & 0xff), s->object_size);
	int bad = 0;
	for (unsigned i = 0; i < n; i++)
		for (size_t b = 0; b < s->object_size; b++)
			bad += ((unsigned char *)objs[i])[b] != ((i + salt) & 0xff);
	CHECK_EQ(bad, 0);
}

#endif
