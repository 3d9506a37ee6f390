/*
 * tests/unit/os/startup_reads.c - what os_init reads at start-up: the files
 * of /sys it needs and no more (docs/footprint.md, "2026-11-24 night,
 * helper startup").
 *
 * os_init reads cpu/possible and node/possible; a node's cpulist only when
 * node/possible lists a node other than 0 (one file per listed node), none
 * when it lists node 0 alone or is missing; each with one read(2). The
 * expected count is computed from this machine's own /sys, so the verdict
 * is the same on any machine. Also: os_read_line reads a /sys attribute
 * whole in one read(2) where os_read_file reads to the end (two), and a
 * /proc file produced a page at a time is read to its end.
 */
#define _GNU_SOURCE
#include "os/os.h"
#include "test.h"

/* The test's own read of a small file (stdio); -1 if unreadable. */
static long slurp(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	size_t n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (long)n;
}

/* Nodes listed in node/possible, or 0 when it is missing or unparsable. */
static unsigned possible_nodes(uint64_t *mask)
{
	char buf[4096];
	*mask = 0;
	if (slurp("/sys/devices/system/node/possible", buf, sizeof(buf)) < 0 ||
	    os_parse_cpulist(buf, mask, 64) < 0)
		return 0;
	return (unsigned)__builtin_popcountll(*mask);
}

/* Runs first: nothing in this program reads a file through the os layer
 * before os_init. */
TEST(init_reads_what_it_needs)
{
	CHECK_EQ(os_files_opened(), 0);
	CHECK_EQ(os_file_reads(), 0);
	os_init();
	uint64_t mask;
	unsigned listed = possible_nodes(&mask);
	/* cpu/possible and node/possible; the nodes' cpulists only with NUMA. */
	unsigned long expect = 2 + (mask > 1 ? listed : 0);
	fprintf(stderr, "node/possible lists %u node(s); os_init opened %lu file(s), expected %lu\n",
		listed, os_files_opened(), expect);
	CHECK_EQ(os_files_opened(), expect);
	/* One read(2) per file that exists (a missing one: none; a possible
	 * node need not have a directory). */
	char tmp[4096];
	unsigned long reads_expect = 0;
	reads_expect += slurp("/sys/devices/system/cpu/possible", tmp, sizeof(tmp)) >= 0;
	reads_expect += slurp("/sys/devices/system/node/possible", tmp, sizeof(tmp)) >= 0;
	for (unsigned node = 0; mask > 1 && node < 64; node++) {
		char path[96];
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%u/cpulist", node);
		if ((mask >> node & 1) && slurp(path, tmp, sizeof(tmp)) >= 0)
			reads_expect++;
	}
	fprintf(stderr, "os_init made %lu read(2) calls, expected %lu\n", os_file_reads(), reads_expect);
	CHECK_EQ(os_file_reads(), reads_expect);
	if (mask <= 1) {
		CHECK_EQ(os_numa_node_count(), 1);
		for (unsigned cpu = 0; cpu < os_cpu_count(); cpu++)
			CHECK_EQ(os_cpu_to_node(cpu), 0);
	}
	/* Later calls read nothing. */
	os_init();
	CHECK_EQ(os_files_opened(), expect);
}

TEST(sysfs_file_whole)
{
	const char *path = "/sys/devices/system/cpu/possible";
	char mine[4096], theirs[4096];
	long want = slurp(path, theirs, sizeof(theirs));
	if (want < 0) {
		fprintf(stderr, "note: no %s\n", path);
		CHECK_EQ(os_read_line(path, mine, sizeof(mine)), -1);
		return;
	}
	unsigned long before = os_files_opened(), reads = os_file_reads();
	CHECK_EQ(os_read_line(path, mine, sizeof(mine)), want);
	CHECK(strcmp(mine, theirs) == 0);
	CHECK_EQ(os_files_opened(), before + 1);
	CHECK_EQ(os_file_reads(), reads + 1); /* the line, no read of the end */
	/* os_read_file reads on to the end: the same bytes, a second read. */
	reads = os_file_reads();
	CHECK_EQ(os_read_file(path, mine, sizeof(mine)), want);
	CHECK(strcmp(mine, theirs) == 0);
	CHECK_EQ(os_file_reads(), reads + 2);
	/* A buffer too small for the line: cut at cap - 1, NUL-terminated. */
	char small[2];
	CHECK_EQ(os_read_line(path, small, sizeof(small)), 1);
	CHECK(small[0] == theirs[0] && small[1] == '\0');
}

TEST(proc_file_to_the_end)
{
	/* /proc/self/smaps is produced a page at most per read(2), each line
	 * ending in '\n', and is several pages long (a kB or so per mapping):
	 * it must be read to its end, not to the first read's. */
	static char buf[1 << 18];
	long got = os_read_file("/proc/self/smaps", buf, sizeof(buf));
	REQUIRE(got > 0);
	CHECK(got > 3 * 4096);
	CHECK(buf[got - 1] == '\n');
	char *last = got >= 2 ? memrchr(buf, '\n', (size_t)got - 1) : NULL;
	CHECK(last != NULL && strncmp(last + 1, "VmFlags:", 8) == 0);
}

/* os_env_has_prefix: options_init_once looks up its variables only when
 * one with PCMALLOC_ is set (names unique to this test here). */
TEST(env_prefix)
{
	const char *pre = "PC_STARTUP_READS_TEST_";
	CHECK(!os_env_has_prefix(pre, strlen(pre)));
	REQUIRE(setenv("PC_STARTUP_READS_TEST", "1", 1) == 0); /* shorter: no match */
	CHECK(!os_env_has_prefix(pre, strlen(pre)));
	REQUIRE(setenv("PC_STARTUP_READS_TEST_X", "", 1) == 0);
	CHECK(os_env_has_prefix(pre, strlen(pre)));
	CHECK(os_env_has_prefix("PC_STARTUP_READS_TEST_X=", strlen(pre) + 2));
	CHECK(!os_env_has_prefix("PC_STARTUP_READS_TEST_Y", strlen(pre) + 1));
	unsetenv("PC_STARTUP_READS_TEST_X");
	unsetenv("PC_STARTUP_READS_TEST");
	CHECK(!os_env_has_prefix(pre, strlen(pre)));
}

int main(void)
{
	RUN(init_reads_what_it_needs); /* first: counts from the process's start */
	RUN(sysfs_file_whole);
	RUN(proc_file_to_the_end);
	RUN(env_prefix);
	return test_report();
}
