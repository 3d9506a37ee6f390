/*
 * ctl/ctl.c - the public tunables interface: pcmalloc_ctl_get/set by name.
 * Settings go through the options table (options.c), which validates them
 * and runs the hook of the layer that acts on a change. Reading a statistic
 * by name is answered by the statistics layer (src/stats/), which sits on
 * top of every layer and registers its reader here at start-up (ctl is a
 * leaf of the include graph and cannot call up).
 */
#include "options.h"

#include <errno.h>

#include "pcmalloc.h"

/* Written once at start-up, read relaxed: a reader sees it or NULL. */
static int (*_Atomic ctl_stat_reader)(const char *name, long *value);

void pc_ctl_set_stat_reader(int (*reader)(const char *name, long *value))
{
	pc_store_relaxed(&ctl_stat_reader, reader);
}

int pcmalloc_ctl_get(const char *name, long *value)
{
	int o = name ? pc_option_find(name) : -1;
	if (o < 0) {
		int (*reader)(const char *, long *) = pc_load_relaxed(&ctl_stat_reader);
		if (name && value && reader)
			return reader(name, value);
		errno = ENOENT;
		return -1;
	}
	pc_options_init();
	*value = pc_option((enum pc_option)o);
	return 0;
}

int pcmalloc_ctl_set(const char *name, long value)
{
	int o = name ? pc_option_find(name) : -1;
	if (o < 0) {
		errno = ENOENT;
		return -1;
	}
	pc_options_init(); /* the environment first, so this call wins */
	if (pc_option_is_text((enum pc_option)o)) { /* only pcmalloc_ctl_set_text */
		errno = EINVAL;
		return -1;
	}
	return pc_option_set((enum pc_option)o, value, false);
}

int pcmalloc_ctl_set_text(const char *name, const char *value)
{
	char msg[320];
	if (!name || !value) {
		errno = EINVAL;
		return -1;
	}
	pc_options_init();
	int err = pc_option_apply_text("pcmalloc_ctl_set_text", name, value, false, msg,
				       sizeof(msg));
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}
