/*
 * tests/unit/ctl/options.c - the tunables table: environment parsing, ranges,
 * start-up-only options, change hooks, and the public ctl calls; every
 * tunable through help, the environment and the API (good value, bad name,
 * out of range, start-up only), with the one-line messages for bad entries.
 * Re-runs itself with a prepared environment to test start-up parsing.
 */
#define _GNU_SOURCE
#include "test.h"

#include <errno.h>
#include <unistd.h>

#include "ctl/options.h"
#include "lock/lock.h"
#include "page/page.h"
#include "pcmalloc.h"
#include "slab/slab.h"

static long hook_value = -100;
static void hook(long v) { hook_value = v; }

TEST(defaults)
{
	CHECK_EQ(pc_option(PC_OPT_VM_PCP_BATCH_SCALE_MAX), 5);
	CHECK_EQ(pc_option(PC_OPT_LOCK_KIND), PC_LOCK_MUTEX);
	CHECK_EQ(pc_option(PC_OPT_STATS_ENABLE), 0);
	CHECK_EQ(pc_option_find("vm.pcp_batch_scale_max"), PC_OPT_VM_PCP_BATCH_SCALE_MAX);
	CHECK_EQ(pc_option_find("no.such.option"), -1);
}

TEST(runtime_set_ranges_and_hooks)
{
	pc_option_on_change(PC_OPT_VM_PCP_BATCH_SCALE_MAX, hook);
	CHECK_EQ(pcmalloc_ctl_set("vm.pcp_batch_scale_max", 0), 0);
	CHECK_EQ(hook_value, 0);
	long v = -1;
	CHECK_EQ(pcmalloc_ctl_get("vm.pcp_batch_scale_max", &v), 0);
	CHECK_EQ(v, 0);
	errno = 0;
	CHECK_EQ(pcmalloc_ctl_set("vm.pcp_batch_scale_max", 7), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(pc_option(PC_OPT_VM_PCP_BATCH_SCALE_MAX), 0);
	errno = 0;
	CHECK_EQ(pcmalloc_ctl_set("vm.zone_instances", 2), -1);
	CHECK_EQ(errno, EPERM);
	errno = 0;
	CHECK_EQ(pcmalloc_ctl_set("vm.nope", 1), -1);
	CHECK_EQ(errno, ENOENT);
	CHECK_EQ(pcmalloc_ctl_get("vm.nope", &v), -1);
	CHECK_EQ(pcmalloc_ctl_set("vm.pcp_batch_scale_max", 5), 0);
	CHECK_EQ(hook_value, 5);
}

TEST(parse_values)
{
	long v;
	CHECK_EQ(pc_option_parse_value(PC_OPT_LOCK_KIND, "mcs", &v), 0);
	CHECK_EQ(v, PC_LOCK_MCS);
	CHECK_EQ(pc_option_parse_value(PC_OPT_LOCK_KIND, "2", &v), 0);
	CHECK_EQ(v, 2);
	CHECK_EQ(pc_option_parse_value(PC_OPT_VM_PCP_BATCH, "0x10", &v), 0);
	CHECK_EQ(v, 16);
	CHECK_EQ(pc_option_parse_value(PC_OPT_VM_PCP_BATCH, "12abc", &v), -1);
	CHECK_EQ(pc_option_parse_value(PC_OPT_VM_PCP_BATCH, "", &v), -1);
}

/* ---- help ------------------------------------------------------------------ */
static char help_text[16384];

static void help_collect(const char *line, void *arg)
{
	(void)arg;
	size_t n = strlen(help_text);
	snprintf(help_text + n, sizeof(help_text) - n, "%s\n", line);
}

/* The help line of option o, or NULL. */
static const char *help_line_of(enum pc_option o)
{
	const char *name = pc_option_name(o);
	for (const char *p = help_text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, name, strlen(name)) == 0 && p[strlen(name)] == ' ')
			return p;
	return NULL;
}

TEST(help_lists_every_tunable)
{
	pc_page_init(); /* registers vm.zone_instances' resolver */
	REQUIRE(pc_cache_create("help-probe", 64, 0, NULL) != NULL); /* slub.* resolvers */
	help_text[0] = '\0';
	pc_options_help(help_collect, NULL);
	for (int o = 0; o < PC_OPT_COUNT; o++) {
		const char *line = help_line_of((enum pc_option)o);
		CHECK(line != NULL);
		if (!line)
			continue;
		/* name, current, default, range, when, description */
		char name[64], cur[64], def[64], range[96], when[16];
		CHECK_EQ(sscanf(line, "%63s %63s %63s %95s %15s", name, cur, def, range, when), 5);
		char want[96];
		pc_option_range((enum pc_option)o, want, sizeof(want));
		CHECK(strcmp(range, want) == 0);
		CHECK(strcmp(when, pc_option_runtime((enum pc_option)o) ? "runtime" : "start-up") == 0);
		const char *desc = pc_option_description((enum pc_option)o);
		const char *eol = strchr(line, '\n');
		CHECK(eol && (size_t)(eol - line) >= strlen(desc) &&
		      strncmp(eol - strlen(desc), desc, strlen(desc)) == 0);
		if (pc_option_default((enum pc_option)o) == -1 && o != PC_OPT_SLUB_CPU_PARTIAL &&
		    o != PC_OPT_SLUB_SHEAF_CAPACITY) {
			/* a computed default shows what it resolved to (cpu_partial
			 * and sheaf_capacity are per cache: no one value) */
			char resolved[64];
			snprintf(resolved, sizeof(resolved), "-1(=%ld)",
				 pc_option_resolved((enum pc_option)o));
			CHECK(strcmp(def, resolved) == 0);
			CHECK(pc_option_resolved((enum pc_option)o) >= 0);
		}
	}
	/* lock.kind shows names, not numbers */
	CHECK(strstr(help_line_of(PC_OPT_LOCK_KIND), "spin|ticket|mcs|mutex") != NULL);
}

/* Every tunable through the API: a good value, out of range, start-up only. */
TEST(every_tunable_through_api)
{
	char msg[320];
	for (int i = 0; i < PC_OPT_COUNT; i++) {
		enum pc_option o = (enum pc_option)i;
		const char *name = pc_option_name(o);
		long before = pc_option(o), v = -2;
		char text[32];
		CHECK_EQ(pcmalloc_ctl_get(name, &v), 0);
		CHECK_EQ(v, before);
		/* one past the range: refused with the range in the message */
		snprintf(text, sizeof(text), "%ld", pc_option_max(o) + 1);
		if (o != PC_OPT_STATS_FILE) {
			CHECK_EQ(pc_option_apply_text("test", name, text, true, msg, sizeof(msg)), EINVAL);
			CHECK(strstr(msg, name) != NULL && strstr(msg, "accepted") != NULL);
			errno = 0;
			CHECK_EQ(pcmalloc_ctl_set_text(name, text), -1);
			CHECK_EQ(errno, EINVAL);
		}
		/* the current value again: accepted at run time only if runtime */
		char cur[300];
		pc_option_format(o, cur, sizeof(cur));
		if (o == PC_OPT_STATS_FILE)
			snprintf(cur, sizeof(cur), "/tmp/x");
		int rc = pc_option_apply_text("test", name, cur, false, msg, sizeof(msg));
		if (pc_option_runtime(o)) {
			CHECK_EQ(rc, 0);
			CHECK_EQ(pcmalloc_ctl_set_text(name, cur), 0);
		} else {
			CHECK_EQ(rc, EPERM);
			CHECK(strstr(msg, "start-up") != NULL && strstr(msg, name) != NULL);
			errno = 0;
			CHECK_EQ(pcmalloc_ctl_set_text(name, cur), -1);
			CHECK_EQ(errno, EPERM);
		}
		CHECK_EQ(pc_option(o), before);
	}
	CHECK_EQ(pc_option_apply_text("test", "no.such", "1", false, msg, sizeof(msg)), ENOENT);
	CHECK(strstr(msg, "no.such") != NULL && strstr(msg, "unknown tunable") != NULL);
	errno = 0;
	CHECK_EQ(pcmalloc_ctl_set_text("no.such", "1"), -1);
	CHECK_EQ(errno, ENOENT);
	/* names for enum values */
	CHECK_EQ(pcmalloc_ctl_set_text("stats.print", "json"), 0);
	CHECK_EQ(pc_option(PC_OPT_STATS_PRINT), 2);
	CHECK_EQ(pcmalloc_ctl_set_text("stats.print", "none"), 0);
	CHECK_EQ(pc_option_apply_text("test", "stats.print", "yaml", false, msg, sizeof(msg)), EINVAL);
	CHECK(strstr(msg, "none|text|json") != NULL);
}

/* In the child: the environment set by the parent was applied. */
static int child_checks(void)
{
	pc_options_init();
	int bad = 0;
	bad |= pc_option(PC_OPT_VM_PCP_BATCH_SCALE_MAX) != 2;  /* PCMALLOC_VM_... */
	bad |= pc_option(PC_OPT_LOCK_KIND) != PC_LOCK_TICKET;  /* PCMALLOC_OPTIONS */
	bad |= pc_option(PC_OPT_VM_ZONE_INSTANCES) != 3;       /* start-up only: allowed */
	bad |= pc_option(PC_OPT_SLUB_MAX_ORDER) != -1;         /* bad value ignored */
	/* the specific variable wins over PCMALLOC_OPTIONS (applied later) */
	bad |= pc_option(PC_OPT_VM_PCP_BATCH) != 32;
	bad |= pc_option(PC_OPT_STATS_PRINT) != 1;               /* a name */
	bad |= strcmp(pc_option_text(PC_OPT_STATS_FILE), "/tmp/pc-stats.txt") != 0;
	bad |= pc_option(PC_OPT_VM_PCP_HIGH) != 512;           /* out of range: kept */
	bad |= pc_option(PC_OPT_VM_PCP_BATCH_SCALE_MAX) != 2;
	bad |= !pc_options_help_requested();
	return bad;
}

/* Count the lines of file f that contain every one of the strings. */
static int lines_with(const char *path, const char *a, const char *b)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int n = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, a) && (!b || strstr(line, b));
	fclose(f);
	return n;
}

TEST(environment)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd),
		 "PCMALLOC_VM_PCP_BATCH_SCALE_MAX=2 PCMALLOC_VM_PCP_BATCH=32 "
		 "PCMALLOC_OPTIONS='lock.kind=ticket,vm.zone_instances=3,vm.pcp_batch=8,slub.max_order=99,"
		 "help,no.such=1,stats.print=text,stats.file=/tmp/pc-stats.txt,lock.kind=bogus,"
		 "vm.pcp_high=-5' PCMALLOC_VM_PCP_BATCH_SCALE_MAX=2 PCMALLOC_SLUB_MIN_PARTIAL=x "
		 "/proc/%d/exe --child 2>/tmp/pc-options-%d.err", (int)getpid(), (int)getpid());
	CHECK_EQ(system(cmd), 0); /* the program ran on */
	char err[64];
	snprintf(err, sizeof(err), "/tmp/pc-options-%d.err", (int)getpid());
	/* one line per bad entry, naming it and (for values) what is accepted */
	CHECK_EQ(lines_with(err, "slub.max_order=99", "accepted: -1..10"), 1);
	CHECK_EQ(lines_with(err, "no.such=1", "unknown tunable"), 1);
	CHECK_EQ(lines_with(err, "lock.kind=bogus", "spin|ticket|mcs|mutex"), 1);
	CHECK_EQ(lines_with(err, "vm.pcp_high=-5", "accepted: 0..1048576"), 1);
	CHECK_EQ(lines_with(err, "PCMALLOC_SLUB_MIN_PARTIAL", "'x' is not a number"), 1);
	CHECK_EQ(lines_with(err, "pcmalloc:", NULL), 5); /* nothing else */
	unlink(err);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--child") == 0)
		return child_checks();
	RUN(defaults);
	RUN(runtime_set_ranges_and_hooks);
	RUN(parse_values);
	RUN(help_lists_every_tunable);
	RUN(every_tunable_through_api);
	RUN(environment);
	return test_report();
}
