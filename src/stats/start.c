/*
 * stats/start.c - start-up of the statistics layer, from a library
 * constructor that runs after the malloc layer's: PCMALLOC_OPTIONS=help is
 * printed here, once every layer has registered the resolvers of its
 * computed defaults (so help shows what they resolved to on this machine).
 */
#include "stats.h"

#include <string.h>

/* Write one help line to stderr (never allocates). */
static void help_emit(const char *line, void *arg)
{
	(void)arg;
	char buf[512];
	size_t n = PC_MIN(strlen(line), sizeof(buf) - 1);
	memcpy(buf, line, n);
	buf[n++] = '\n';
	os_write_stderr(buf, n);
}

void pc_stats_start(void)
{
	if (!pc_malloc_init())
		return;
	if (pc_options_help_requested())
		pc_options_help(help_emit, NULL);
}

/* After the malloc layer's constructor (101): the allocator is up. */
__attribute__((constructor(102))) static void pc_stats_constructor(void)
{
	pc_stats_start();
}
