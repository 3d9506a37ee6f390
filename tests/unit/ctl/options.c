/*
 * tests/unit/ctl/options.c - the tunables table: environment parsing, ranges,
 * start-up-only options, change hooks, and the public ctl calls.
 * Re-runs itself with a prepared environment to test start-up parsing.
 */
#define _GNU_SOURCE
#include "test.h"

#include <errno.h>
#include <unistd.h>

#include "ctl/options.h"
#include "lock/lock.h"
#include "pcmalloc.h"

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
	return bad;
}

TEST(environment)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd),
		 "PCMALLOC_VM_PCP_BATCH_SCALE_MAX=2 PCMALLOC_VM_PCP_BATCH=32 "
		 "PCMALLOC_OPTIONS='lock.kind=ticket,vm.zone_instances=3,vm.pcp_batch=8,slub.max_order=99' "
		 "/proc/%d/exe --child 2>/dev/null", (int)getpid());
	CHECK_EQ(system(cmd), 0);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--child") == 0)
		return child_checks();
	RUN(defaults);
	RUN(runtime_set_ranges_and_hooks);
	RUN(parse_values);
	RUN(environment);
	return test_report();
}
