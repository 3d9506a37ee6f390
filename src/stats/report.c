/*
 * stats/report.c - the public statistics calls (pcmalloc_stats_print,
 * pcmalloc_stats_json, pcmalloc_stats_format) and the report at exit
 * (stats.print=text|json, to stats.file or stderr).
 *
 * Each call takes a fresh snapshot and formats it into os_map memory; only
 * pcmalloc_stats_json hands the caller a malloc'd copy.
 */
#include "stats.h"

#include <errno.h>
#include <string.h>

bool pc_stats_report(struct pc_out *o, const char *format)
{
	/* Once (a no-op after the constructor ran); the reference also links
	 * start.c, with its constructor, into static programs, which pull this
	 * file in through malloc_stats in override.c. */
	pc_stats_start();
	void (*fmt)(struct pc_out *, const struct pc_stats_snapshot *) = NULL;
	if (format && strcmp(format, "text") == 0)
		fmt = pc_stats_text;
	else if (format && strcmp(format, "json") == 0)
		fmt = pc_stats_json;
	else if (format && strcmp(format, "xml") == 0)
		fmt = pc_stats_xml;
	if (!fmt)
		return false;
	struct pc_stats_snapshot *s = pc_stats_snapshot_take();
	if (!s) {
		o->failed = true;
		return true;
	}
	fmt(o, s);
	pc_stats_snapshot_free(s);
	return true;
}

/* Write a finished report to stats.file (appended) or stderr. */
static int report_write(const struct pc_out *o)
{
	const char *path = pc_option_text(PC_OPT_STATS_FILE);
	if (path[0] == '\0') {
		os_write_stderr(o->buf, o->len);
		return 0;
	}
	int fd = os_file_open_append(path);
	if (fd < 0)
		return -1;
	int rc = os_write_all(fd, o->buf, o->len);
	int saved = errno;
	os_close(fd);
	errno = saved;
	return rc;
}

PC_API int pcmalloc_stats_print(const char *format)
{
	struct pc_out o = { 0 };
	if (!pc_stats_report(&o, format)) {
		errno = EINVAL;
		return -1;
	}
	int rc = -1;
	if (o.failed)
		errno = ENOMEM;
	else
		rc = report_write(&o);
	pc_out_free(&o);
	return rc;
}

PC_API size_t pcmalloc_stats_format(const char *format, char *buf, size_t size)
{
	struct pc_out o = { 0 };
	if (!pc_stats_report(&o, format)) {
		errno = EINVAL;
		return 0;
	}
	if (o.failed) {
		pc_out_free(&o);
		errno = ENOMEM;
		return 0;
	}
	if (size > 0) {
		size_t n = PC_MIN(o.len, size - 1);
		memcpy(buf, o.buf, n);
		buf[n] = '\0';
	}
	size_t len = o.len;
	pc_out_free(&o);
	return len;
}

PC_API char *pcmalloc_stats_json(void)
{
	struct pc_out o = { 0 };
	pc_stats_report(&o, "json");
	char *copy = o.failed ? NULL : pc_malloc(o.len + 1);
	if (copy)
		memcpy(copy, o.buf, o.len + 1);
	pc_out_free(&o);
	if (!copy)
		errno = ENOMEM;
	return copy;
}

void pc_stats_print_at_exit(void)
{
	long what = pc_option(PC_OPT_STATS_PRINT);
	const char *format = pc_option_value_name(PC_OPT_STATS_PRINT, what);
	if (what == 0 || format == NULL)
		return;
	if (pcmalloc_stats_print(format) != 0)
		pc_message("stats.print: cannot write the statistics to '%s'",
			   pc_option_text(PC_OPT_STATS_FILE));
}
