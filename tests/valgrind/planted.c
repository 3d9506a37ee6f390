/*
 * tests/valgrind/planted.c - a program with exactly three memory errors,
 * run under valgrind memcheck on a PCMALLOC_VALGRIND build of pcmalloc
 * (tests/valgrind/check.sh reads the report):
 *   1. a read one byte past a 3000-byte block (in its slot's slack);
 *   2. a read of a freed 32-byte block (use after free);
 *   3. a leaked 100-byte block.
 * Before them it uses every kind of block (small, large, huge, aligned,
 * calloc, realloc chains, an object cache with a constructor) correctly, so
 * that any other error in the report is a false one from the allocator.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcmalloc.h"

static volatile char sink;
static void *(*volatile p_malloc)(size_t) = malloc;

static void ctor(void *p) { memset(p, 7, 48); }

static void clean_use(void)
{
	static const size_t sizes[] = { 1, 16, 100, 3000, 8192, 9000, 100000, 5u << 20 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char *p = malloc(sizes[i]);
		memset(p, 1, sizes[i]);
		p = realloc(p, sizes[i] * 2 + 1);
		sink = p[sizes[i] - 1];
		memset(p, 2, sizes[i] * 2 + 1);
		free(p);
		char *z = calloc(1, sizes[i]);
		sink = z[sizes[i] - 1];
		free(z);
		void *a = NULL;
		if (posix_memalign(&a, 4096, sizes[i]) == 0) {
			memset(a, 3, sizes[i]);
			free(a);
		}
		a = memalign(64, sizes[i]);
		memset(a, 4, sizes[i]);
		free(a);
	}
	pc_cache_t *c = pc_cache_create("planted", 48, 0, ctor);
	char *o = pc_cache_alloc(c);
	sink = o[47]; /* constructed: defined */
	pc_cache_free(c, o);
	pc_cache_destroy(c);
}

int main(void)
{
	clean_use();
	char *p = p_malloc(3000);
	memset(p, 5, 3000);
	sink = p[3000]; /* 1: one byte past the block */
	free(p);
	char *q = p_malloc(32);
	memset(q, 6, 32);
	free(q);
	sink = q[0]; /* 2: use after free */
	char *leak = p_malloc(100);
	leak[0] = 1;
	leak = NULL; /* 3: the only pointer to it is gone */
	printf("planted: done\n");
	return 0;
}
