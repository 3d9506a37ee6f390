/*
 * ctl/describe.c - tunables as a user sees them: names of enum values, the
 * path of stats.file, the text of slub.debug (slub_debug.c), validation
 * with one clear message per rejected entry, what a computed default
 * resolved to, and the PCMALLOC_OPTIONS=help table.
 *
 * Shared by every way of setting a tunable (PCMALLOC_OPTIONS, PCMALLOC_<NAME>,
 * pcmalloc_ctl_set_text, pcmalloc-ctl), so that all give the same messages.
 *
 * Concurrency: resolvers and the help flag are written during start-up and
 * read with relaxed loads (a reader sees the resolver or none: help then
 * prints "computed"). The stats.file path is written only before start
 * (the option is start-up only), so readers at exit see it complete.
 */
#include "options.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../lock/lock.h"

static long (*_Atomic option_resolvers[PC_OPT_COUNT])(void);
static _Atomic bool help_requested;
static char stats_file_path[256];

static const char *const stats_print_names[] = { "none", "text", "json" };

const char *pc_option_value_name(enum pc_option o, long v)
{
	if (o == PC_OPT_LOCK_KIND && v >= 0 && v < PC_LOCK_KIND_COUNT)
		return pc_lock_kind_name((enum pc_lock_kind)v);
	if (o == PC_OPT_STATS_PRINT && v >= 0 && v < (long)PC_ARRAY_SIZE(stats_print_names))
		return stats_print_names[v];
	return NULL;
}

int pc_option_value_parse_name(enum pc_option o, const char *name)
{
	for (long v = pc_option_min(o); v <= pc_option_max(o); v++) {
		const char *n = pc_option_value_name(o, v);
		if (n == NULL)
			return -1; /* not an enum option */
		if (strcmp(n, name) == 0)
			return (int)v;
	}
	return -1;
}

void pc_option_on_resolve(enum pc_option o, long (*resolve)(void))
{
	pc_store_relaxed(&option_resolvers[o], resolve);
}

long pc_option_resolved(enum pc_option o)
{
	long v = pc_option(o);
	long (*resolve)(void) = pc_load_relaxed(&option_resolvers[o]);
	return v == -1 && resolve != NULL ? resolve() : v;
}

const char *pc_option_text(enum pc_option o)
{
	if (o == PC_OPT_SLUB_DEBUG)
		return pc_slub_debug_text();
	return o == PC_OPT_STATS_FILE && pc_option(o) ? stats_file_path : "";
}

bool pc_options_help_requested(void) { return pc_load_relaxed(&help_requested); }
void pc_options_help_request(void) { pc_store_relaxed(&help_requested, true); }

void pc_option_range(enum pc_option o, char *buf, size_t size)
{
	long lo = pc_option_min(o), hi = pc_option_max(o);
	if (o == PC_OPT_STATS_FILE) {
		snprintf(buf, size, "PATH");
		return;
	}
	if (o == PC_OPT_SLUB_DEBUG) {
		snprintf(buf, size, "FZPUT|-[:CACHE..][;..]");
		return;
	}
	if (pc_option_value_name(o, lo) != NULL) {
		size_t n = 0;
		buf[0] = '\0';
		for (long v = lo; v <= hi && n < size; v++)
			n += (size_t)snprintf(buf + n, size - n, "%s%s", v > lo ? "|" : "",
					      pc_option_value_name(o, v));
		return;
	}
	snprintf(buf, size, "%ld..%ld", lo, hi);
}

/* Copy s into buf, cut to size - 1 bytes. */
static void copy_text(char *buf, size_t size, const char *s)
{
	size_t n = PC_MIN(strlen(s), size - 1);
	memcpy(buf, s, n);
	buf[n] = '\0';
}

static void format_value(enum pc_option o, long v, char *buf, size_t size)
{
	const char *name = pc_option_value_name(o, v);
	if (o == PC_OPT_STATS_FILE)
		copy_text(buf, size, v ? stats_file_path : "");
	else if (o == PC_OPT_SLUB_DEBUG)
		copy_text(buf, size, v ? pc_slub_debug_text() : "");
	else if (name != NULL)
		copy_text(buf, size, name);
	else
		snprintf(buf, size, "%ld", v);
}

void pc_option_format(enum pc_option o, char *buf, size_t size)
{
	format_value(o, pc_option(o), buf, size);
}

/* Why `text` is no valid value of o: the message tail, "" if it is one. */
static int check_value(enum pc_option o, const char *text, long *v, char *why, size_t size)
{
	char range[96];
	pc_option_range(o, range, sizeof(range));
	if (o == PC_OPT_STATS_FILE && strlen(text) >= sizeof(stats_file_path)) {
		snprintf(why, size, "path longer than %zu bytes", sizeof(stats_file_path) - 1);
		return EINVAL;
	}
	if (o == PC_OPT_SLUB_DEBUG)
		return pc_slub_debug_parse(text, v, why, size);
	if (pc_option_parse_value(o, text, v) != 0) {
		snprintf(why, size, "'%s' is not %s; accepted: %s", text,
			 pc_option_value_name(o, pc_option_min(o)) ? "a known name" : "a number",
			 range);
		return EINVAL;
	}
	if (*v < pc_option_min(o) || *v > pc_option_max(o)) {
		snprintf(why, size, "%s is out of range; accepted: %s", text, range);
		return EINVAL;
	}
	return 0;
}

int pc_option_apply_text(const char *source, const char *name, const char *text,
			 bool before_start, char *msg, size_t size)
{
	int o = pc_option_find(name);
	char why[160];
	long v = 0;
	int err = 0;
	if (o < 0) {
		snprintf(msg, size, "%s: ignoring '%s=%s': unknown tunable "
			 "(PCMALLOC_OPTIONS=help lists them)", source, name, text);
		return ENOENT;
	}
	err = check_value((enum pc_option)o, text, &v, why, sizeof(why));
	if (err == 0 && !before_start && !pc_option_runtime((enum pc_option)o)) {
		snprintf(why, sizeof(why), "settable only at start-up (PCMALLOC_OPTIONS or "
			 "PCMALLOC_<NAME>)");
		err = EPERM;
	}
	if (err == 0 && o == PC_OPT_STATS_FILE)
		snprintf(stats_file_path, sizeof(stats_file_path), "%s", text);
	if (err == 0 && o == PC_OPT_SLUB_DEBUG)
		pc_slub_debug_store(text);
	if (err == 0 && pc_option_set((enum pc_option)o, v, before_start) != 0)
		err = errno; /* not reached: checked above */
	if (err != 0)
		snprintf(msg, size, "%s: ignoring '%s=%s': %s", source, name, text, why);
	else
		msg[0] = '\0';
	return err;
}

/* One help line for option o. */
static void help_line(enum pc_option o, char *line, size_t size)
{
	char cur[64], def[64], range[96];
	pc_option_format(o, cur, sizeof(cur));
	if (pc_option(o) == -1 && pc_load_relaxed(&option_resolvers[o]) != NULL)
		snprintf(cur, sizeof(cur), "-1(=%ld)", pc_option_resolved(o));
	format_value(o, pc_option_default(o), def, sizeof(def));
	if (pc_option_default(o) == -1) {
		long (*resolve)(void) = pc_load_relaxed(&option_resolvers[o]);
		if (resolve)
			snprintf(def, sizeof(def), "-1(=%ld)", resolve());
		else
			snprintf(def, sizeof(def), "-1(=per-cache)");
	}
	pc_option_range(o, range, sizeof(range));
	snprintf(line, size, "%-26s %-14s %-16s %-22s %-8s %s", pc_option_name(o),
		 cur[0] ? cur : "-", def[0] ? def : "-", range,
		 pc_option_runtime(o) ? "runtime" : "start-up", pc_option_description(o));
}

void pc_options_help(void (*emit)(const char *line, void *arg), void *arg)
{
	char line[400];
	emit("pcmalloc tunables: set with PCMALLOC_OPTIONS=name=value,... or "
	     "PCMALLOC_<NAME>=value (name upper-cased, '.' -> '_');", arg);
	emit("runtime ones also with pcmalloc_ctl_set() or pcmalloc-ctl PID name=value. "
	     "-1(=N): computed default, N on this machine.", arg);
	snprintf(line, sizeof(line), "%-26s %-14s %-16s %-22s %-8s %s", "name", "current",
		 "default", "range", "set", "description");
	emit(line, arg);
	for (int o = 0; o < PC_OPT_COUNT; o++) {
		help_line((enum pc_option)o, line, sizeof(line));
		emit(line, arg);
	}
}
