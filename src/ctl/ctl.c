/*
 * ctl/ctl.c - the public tunables interface: pcmalloc_ctl_get/set by name.
 * Settings go through the options table (options.c), which validates them
 * and runs the hook of the layer that acts on a change.
 */
#include "options.h"

#include <errno.h>

#include "pcmalloc.h"

int pcmalloc_ctl_get(const char *name, long *value)
{
	int o = name ? pc_option_find(name) : -1;
	if (o < 0) {
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
	return pc_option_set((enum pc_option)o, value, false);
}
