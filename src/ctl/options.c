/*
 * ctl/options.c - the tunables table: defaults, ranges, environment parsing
 * and run-time setting. See options.h for the naming rules.
 *
 * Concurrency: values are relaxed atomics (options.h). Hooks are registered
 * during start-up by the layers, before any run-time set can happen; the hook
 * table is written once per option and read with relaxed loads.
 */
#include "options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lock/lock.h"
#include "../os/os.h"

struct option_desc {
	const char *name;
	long def, min, max;
	bool runtime;
	const char *description;
};

static const struct option_desc option_table[PC_OPT_COUNT] = {
#define PC_OPTION_DESC(id, name, def, min, max, rt, desc) \
	[PC_OPT_##id] = { name, def, min, max, rt, desc },
	PC_OPTIONS(PC_OPTION_DESC)
#undef PC_OPTION_DESC
};

_Atomic long pc_option_values[PC_OPT_COUNT] = {
#define PC_OPTION_DEFAULT(id, name, def, ...) [PC_OPT_##id] = def,
	PC_OPTIONS(PC_OPTION_DEFAULT)
#undef PC_OPTION_DEFAULT
};

/* The fault injection tunables act in the OS layer, below every layer that
 * could register a hook for them: their hooks are set here. */
static void fail_mmap_changed(long n) { os_fail_map_every((unsigned long)n); }
static void fail_mmap_ppm_changed(long ppm) { os_fail_map_ppm((unsigned long)ppm); }

static void (*_Atomic option_hooks[PC_OPT_COUNT][PC_OPTION_MAX_HOOKS])(long) = {
	[PC_OPT_DEBUG_FAIL_MMAP] = { fail_mmap_changed },
	[PC_OPT_DEBUG_FAIL_MMAP_PPM] = { fail_mmap_ppm_changed },
};

int pc_option_find(const char *name)
{
	for (int i = 0; i < PC_OPT_COUNT; i++)
		if (strcmp(option_table[i].name, name) == 0)
			return i;
	return -1;
}

const char *pc_option_name(enum pc_option o) { return option_table[o].name; }
const char *pc_option_description(enum pc_option o) { return option_table[o].description; }
bool pc_option_runtime(enum pc_option o) { return option_table[o].runtime; }
long pc_option_default(enum pc_option o) { return option_table[o].def; }
long pc_option_min(enum pc_option o) { return option_table[o].min; }
long pc_option_max(enum pc_option o) { return option_table[o].max; }

void pc_option_on_change(enum pc_option o, void (*hook)(long value))
{
	for (int i = 0; i < PC_OPTION_MAX_HOOKS; i++) {
		void (*h)(long) = pc_load_relaxed(&option_hooks[o][i]);
		if (h == hook)
			return;
		if (h == NULL) {
			pc_store_relaxed(&option_hooks[o][i], hook);
			return;
		}
	}
	pc_fatal("more than %d change hooks for option %s", PC_OPTION_MAX_HOOKS,
		 option_table[o].name);
}

int pc_option_set(enum pc_option o, long value, bool before_start)
{
	const struct option_desc *d = &option_table[o];
	if (value < d->min || value > d->max) {
		errno = EINVAL;
		return -1;
	}
	if (!before_start && !d->runtime) {
		errno = EPERM;
		return -1;
	}
	pc_store_relaxed(&pc_option_values[o], value);
	for (int i = 0; i < PC_OPTION_MAX_HOOKS; i++) {
		void (*hook)(long) = pc_load_relaxed(&option_hooks[o][i]);
		if (hook)
			hook(value);
	}
	return 0;
}

int pc_option_parse_value(enum pc_option o, const char *text, long *out)
{
	int k = pc_option_value_parse_name(o, text);
	if (k >= 0) {
		*out = k;
		return 0;
	}
	if (o == PC_OPT_STATS_FILE) { /* text: 1 when a path is given */
		*out = text[0] != '\0';
		return 0;
	}
	if (o == PC_OPT_SLUB_DEBUG) { /* text: the union of its flags */
		char why[160];
		return pc_slub_debug_parse(text, out, why, sizeof(why)) == 0 ? 0 : (errno = EINVAL, -1);
	}
	char *end;
	errno = 0;
	long v = strtol(text, &end, 0);
	if (errno || end == text || *end != '\0') {
		errno = EINVAL;
		return -1;
	}
	*out = v;
	return 0;
}

/* Apply "name=value" from `source`; a bad entry is reported and ignored. */
static void apply_setting(const char *source, const char *name, size_t name_len,
			  const char *value)
{
	char key[64], msg[256];
	if (name_len == 0 || name_len >= sizeof(key)) {
		pc_message("%s: ignoring '%.*s=%s': unknown tunable (PCMALLOC_OPTIONS=help "
			   "lists them)", source, (int)PC_MIN(name_len, (size_t)80), name, value);
		return;
	}
	memcpy(key, name, name_len);
	key[name_len] = '\0';
	if (pc_option_apply_text(source, key, value, true, msg, sizeof(msg)) != 0)
		pc_message("%s", msg);
}

/* Environment variable of an option: PCMALLOC_ + NAME with '.' -> '_'
 * (cut to size; no snprintf at start-up: os_format_u in os.h says why). */
static void env_name(const char *name, char *buf, size_t size)
{
	size_t n = 0;
	for (const char *s = "PCMALLOC_"; *s && n + 1 < size; s++)
		buf[n++] = *s;
	for (const char *s = name; *s && n + 1 < size; s++)
		buf[n++] = *s == '.' ? '_' : (char)(*s >= 'a' && *s <= 'z' ? *s - 32 : *s);
	buf[n] = '\0';
}

static void parse_option_list(const char *list)
{
	char item[160];
	while (*list) {
		size_t len = strcspn(list, ",");
		if (len > 0 && len < sizeof(item)) {
			memcpy(item, list, len);
			item[len] = '\0';
			char *eq = strchr(item, '=');
			if (strcmp(item, "help") == 0)
				pc_options_help_request();
			else if (eq)
				apply_setting("PCMALLOC_OPTIONS", item, (size_t)(eq - item), eq + 1);
			else
				apply_setting("PCMALLOC_OPTIONS", item, len, "");
		} else if (len > 0) {
			pc_message("PCMALLOC_OPTIONS: ignoring an entry of %zu characters "
				   "(too long)", len);
		}
		list += len + (list[len] == ',');
	}
}

static bool options_init_once(void)
{
	/* Most processes set none: one pass over the environment instead of a
	 * getenv (a pass each) for every option (docs/footprint.md). */
	if (!os_env_has_prefix("PCMALLOC_", sizeof("PCMALLOC_") - 1))
		return true;
	const char *list = os_getenv("PCMALLOC_OPTIONS");
	if (list)
		parse_option_list(list);
	for (int i = 0; i < PC_OPT_COUNT; i++) {
		char var[96];
		env_name(option_table[i].name, var, sizeof(var));
		const char *value = os_getenv(var);
		if (value)
			apply_setting(var, option_table[i].name, strlen(option_table[i].name), value);
	}
	return true;
}

/* Once (lifecycle.c): a racing caller waits until the environment is in. */
void pc_options_init(void)
{
	static _Atomic uint32_t state;
	pc_once(&state, options_init_once);
}
