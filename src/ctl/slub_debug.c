/*
 * ctl/slub_debug.c - the text of the slub.debug tunable: its syntax, and
 * which debug flags a cache of a given name gets (the slab layer asks when
 * it creates a cache; docs/reliability.md, "slub_debug mode").
 *
 *   slub.debug = block ( ';' block )*
 *   block      = flags ( ':' glob )*
 *   flags      = letters of F Z P U T (either case), or '-' (none); no
 *                letter at all means F Z P U, as the kernel's bare slub_debug
 *   glob       = a cache name, '*' and '?' as in the shell
 *
 * The kernel writes "FZ,kmalloc-64;P,dentry"; here ',' already separates
 * PCMALLOC_OPTIONS entries, so the names follow ':' instead:
 * "FZ:kmalloc-64:kmalloc-1*;P:dentry". A cache takes the flags of the first
 * block that lists a glob matching its name, else those of the first block
 * without names, else none. The option's number is the union of every
 * block's flags (pcmalloc_ctl_get("slub.debug") is nonzero when some cache
 * may be a debug cache).
 *
 * Concurrency: the text is written only before start-up (the option is
 * start-up only) and read when caches are created.
 */
#include "options.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define SLUB_DEBUG_TEXT_MAX 256

static char slub_debug_text[SLUB_DEBUG_TEXT_MAX];

static const char slub_debug_letters[] = "FZPUT";

/* The flag of letter ch, 0 if none. */
static unsigned slub_debug_letter(char ch)
{
	if (ch >= 'a' && ch <= 'z')
		ch = (char)(ch - 'a' + 'A');
	const char *at = strchr(slub_debug_letters, ch);
	return ch && at ? 1u << (at - slub_debug_letters) : 0;
}

/* Flags of a block's flags part [p, end); false for an unknown letter. */
static bool slub_debug_block_flags(const char *p, const char *end, unsigned *flags, char *bad)
{
	if (p == end) {
		*flags = PC_SLUB_DEBUG_DEFAULT;
		return true;
	}
	*flags = 0;
	if (end - p == 1 && *p == '-')
		return true;
	for (; p < end; p++) {
		unsigned f = slub_debug_letter(*p);
		if (!f) {
			*bad = *p;
			return false;
		}
		*flags |= f;
	}
	return true;
}

/* Shell-style match of name against glob[0, glob_len) ('*', '?'), the
 * iterative way: on a mismatch only the last '*' is retried, one character
 * further, so the time is O(glob * name) whatever the pattern. */
static bool slub_debug_glob(const char *glob, size_t glob_len, const char *name)
{
	size_t g = 0, star = SIZE_MAX;
	const char *n = name, *star_n = name;
	while (*n) {
		if (g < glob_len && glob[g] == '*') {
			star = g++;
			star_n = n;
		} else if (g < glob_len && (glob[g] == '?' || glob[g] == *n)) {
			g++;
			n++;
		} else if (star != SIZE_MAX) {
			g = star + 1;
			n = ++star_n;
		} else {
			return false;
		}
	}
	while (g < glob_len && glob[g] == '*')
		g++;
	return g == glob_len;
}

/* A character for a message: itself if printable, else \xNN. */
static void slub_debug_char(char ch, char *buf, size_t size)
{
	if (ch > ' ' && ch < 127)
		snprintf(buf, size, "%c", ch);
	else
		snprintf(buf, size, "\\x%02x", (unsigned char)ch);
}

/*
 * Walk text's blocks. With name: the flags that cache gets (*out), else
 * validate and set *out to the union of all flags. 0, or EINVAL with the
 * reason in why.
 */
static int slub_debug_walk(const char *text, const char *name, long *out, char *why, size_t size)
{
	long all = 0, global = -1;
	for (const char *b = text;;) {
		size_t blen = strcspn(b, ";");
		const char *bend = b + blen, *fend = b + strcspn(b, ":;");
		unsigned flags;
		char bad = 0;
		if (blen == 0 && b != text) { /* "F;" or "F;;Z": not a bare block */
			snprintf(why, size, "an empty block (';' at the end or twice); accepted: "
				 "flags of FZPUT or '-', then ':'-separated cache names, blocks "
				 "separated by ';'");
			return EINVAL;
		}
		if (!slub_debug_block_flags(b, fend, &flags, &bad)) {
			char shown[8];
			slub_debug_char(bad, shown, sizeof(shown));
			snprintf(why, size, "unknown flag '%s'; accepted: flags of FZPUT or '-', "
				 "then ':'-separated cache names, blocks separated by ';'", shown);
			return EINVAL;
		}
		all |= flags;
		if (fend == bend && global < 0)
			global = flags;
		for (const char *g = fend; g < bend;) {
			g++; /* the ':' */
			size_t glen = strcspn(g, ":;");
			if (glen == 0 || glen >= 32) {
				snprintf(why, size, "a cache name must have 1 to 31 characters; "
					 "accepted: flags of FZPUT or '-', then ':'-separated cache "
					 "names, blocks separated by ';'");
				return EINVAL;
			}
			if (name && slub_debug_glob(g, glen, name)) {
				*out = flags;
				return 0;
			}
			g += glen;
		}
		if (*bend == '\0')
			break;
		b = bend + 1;
	}
	*out = name ? PC_MAX(global, 0L) : all;
	return 0;
}

int pc_slub_debug_parse(const char *text, long *flags, char *why, size_t size)
{
	if (strlen(text) >= SLUB_DEBUG_TEXT_MAX) {
		snprintf(why, size, "longer than %d characters", SLUB_DEBUG_TEXT_MAX - 1);
		return EINVAL;
	}
	return slub_debug_walk(text, NULL, flags, why, size);
}

void pc_slub_debug_store(const char *text)
{
	snprintf(slub_debug_text, sizeof(slub_debug_text), "%s", text);
}

const char *pc_slub_debug_text(void)
{
	return pc_option(PC_OPT_SLUB_DEBUG) ? slub_debug_text : "";
}

unsigned pc_slub_debug_flags(const char *name)
{
	char why[160];
	long flags = 0;
	if (!pc_option(PC_OPT_SLUB_DEBUG) ||
	    slub_debug_walk(slub_debug_text, name ? name : "", &flags, why, sizeof(why)) != 0)
		return 0;
	return (unsigned)flags;
}
