/*
 * stats/start.c - start-up of the statistics layer, from a library
 * constructor that runs after the malloc layer's:
 *  - PCMALLOC_OPTIONS=help is printed here, once every layer has registered
 *    the resolvers of its computed defaults;
 *  - ctl.c learns to read statistics by name (pcmalloc_ctl_get);
 *  - the thread-time clock of the wait shares starts when stats.enable goes
 *    on (a change hook);
 *  - the exit report (stats.print) is registered with atexit;
 *  - stats.export=1 starts the export (export.c).
 */
#include "stats.h"

#include <pthread.h>
#include <stdlib.h>
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

static void stats_enable_hook(long on)
{
	if (on)
		pc_stats_clock_start();
}

static void stats_at_exit(void)
{
	pc_stats_print_at_exit();
	pc_stats_export_stop();
}

void pc_stats_start(void)
{
	static _Atomic int started;
	int expected = 0;
	if (!pc_malloc_init() || !pc_cas_strong_acq_rel(&started, &expected, 1))
		return; /* acq_rel: only one caller goes on; it publishes nothing else */
	pc_ctl_set_stat_reader(pc_stats_read);
	pc_option_on_change(PC_OPT_STATS_ENABLE, stats_enable_hook);
	if (pc_options_help_requested())
		pc_options_help(help_emit, NULL);
	atexit(stats_at_exit);
	if (pc_option(PC_OPT_STATS_EXPORT))
		pc_stats_export_start();
}

/* After the malloc layer's constructor (101): the allocator is up. */
__attribute__((constructor(102))) static void pc_stats_constructor(void)
{
	pc_stats_start();
}
