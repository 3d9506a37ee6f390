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

static void (*_Atomic option_hooks[PC_OPT_COUNT])(long) = {
	[PC_OPT_DEBUG_FAIL_MMAP] = fail_mmap_changed,
	[PC_OPT_DEBUG_FAIL_MMAP_PPM] = fail_mmap_ppm_changed,
};

int pc_option_find(const char *name)
{
	for (int i = 0; i < PC_OPT_COUNT; i++)
		if (strcmp(option_table[i].name, name) == 0)
			return i;
	return -1;
}

const char *pc_option_name(enum pc_option o) { return option_table[o].name; }

void pc_option_on_change(enum pc_option o, void (*hook)(long value))
{
	pc_store_relaxed(&option_hooks[o], hook);
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
	void (*hook)(long) = pc_load_relaxed(&option_hooks[o]);
	if (hook)
		hook(value);
	return 0;
}

int pc_option_parse_value(enum pc_option o, const char *text, long *out)
{
	if (o == PC_OPT_LOCK_KIND) {
		int k = pc_lock_kind_parse(text);
		if (k >= 0) {
			*out = k;
			return 0;
		}
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

/* Apply "name=value"; bad entries are reported once and ignored. */
static void apply_setting(const char *name, size_t name_len, const char *value)
{
	char key[64];
	if (name_len == 0 || name_len >= sizeof(key))
		goto bad;
	memcpy(key, name, name_len);
	key[name_len] = '\0';
	int o = pc_option_find(key);
	long v;
	if (o < 0 || pc_option_parse_value((enum pc_option)o, value, &v) != 0 ||
	    pc_option_set((enum pc_option)o, v, true) != 0)
		goto bad;
	return;
bad:
	pc_message("ignoring option '%.*s=%s' (unknown name or bad value)",
		   (int)name_len, name, value);
}

/* Environment variable of an option: PCMALLOC_ + NAME with '.' -> '_'. */
static void env_name(const char *name, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "PCMALLOC_%s", name);
	for (size_t i = 9; i < n && i < size; i++)
		buf[i] = buf[i] == '.' ? '_' : (char)(buf[i] >= 'a' && buf[i] <= 'z' ? buf[i] - 32 : buf[i]);
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
			if (eq)
				apply_setting(item, (size_t)(eq - item), eq + 1);
			else
				apply_setting(item, len, "");
		}
		list += len + (list[len] == ',');
	}
}

static bool options_init_once(void)
{
	const char *list = os_getenv("PCMALLOC_OPTIONS");
	if (list)
		parse_option_list(list);
	for (int i = 0; i < PC_OPT_COUNT; i++) {
		char var[96];
		env_name(option_table[i].name, var, sizeof(var));
		const char *value = os_getenv(var);
		if (value)
			apply_setting(option_table[i].name, strlen(option_table[i].name), value);
	}
	return true;
}

/* Once (lifecycle.c): a racing caller waits until the environment is in. */
void pc_options_init(void)
{
	static _Atomic uint32_t state;
	pc_once(&state, options_init_once);
}
