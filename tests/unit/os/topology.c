/*
 * tests/unit/os/topology.c - os_init, CPU count, NUMA map, current CPU.
 *
 * Checks the list parser on fixed strings, compares the CPU and node tables
 * with an independent read of /sys, pins threads to each allowed CPU and
 * checks os_cpu_current() (rseq fast path and slow path), and re-executes
 * itself with GLIBC_TUNABLES=glibc.pthread.rseq=0 to check the slow path
 * without rseq. Worker threads record results in atomics; only the main
 * thread calls CHECK.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "os/os.h"
#include "test.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILD_ARG "--rseq-off-child"
static const char *self_argv0;

/* ---- os_init race: must run before anything else calls os_init ---------- */
#define RACE_THREADS 8
static pthread_barrier_t race_barrier;
static _Atomic unsigned race_ncpus[RACE_THREADS], race_nodes[RACE_THREADS];

static void *race_thread(void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;
	pthread_barrier_wait(&race_barrier);
	os_init();
	atomic_store(&race_ncpus[i], os_cpu_count());
	atomic_store(&race_nodes[i], os_numa_node_count());
	return NULL;
}

TEST(init_concurrent)
{
	pthread_t t[RACE_THREADS];
	pthread_barrier_init(&race_barrier, NULL, RACE_THREADS);
	for (unsigned i = 0; i < RACE_THREADS; i++)
		REQUIRE(pthread_create(&t[i], NULL, race_thread, (void *)(uintptr_t)i) == 0);
	for (unsigned i = 0; i < RACE_THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&race_barrier);
	for (unsigned i = 0; i < RACE_THREADS; i++) {
		CHECK(atomic_load(&race_ncpus[i]) >= 1);
		CHECK_EQ(atomic_load(&race_ncpus[i]), os_cpu_count());
		CHECK_EQ(atomic_load(&race_nodes[i]), os_numa_node_count());
	}
	/* Idempotent: later calls change nothing. */
	unsigned n = os_cpu_count();
	os_init();
	CHECK_EQ(os_cpu_count(), n);
}

/* ---- list parser ----------------------------------------------------------- */
TEST(parse_cpulist)
{
	uint64_t m[2];
	CHECK_EQ(os_parse_cpulist("0\n", m, 128), 1);
	CHECK_EQ(m[0], 1);
	CHECK_EQ(os_parse_cpulist("0-1", m, 128), 2);
	CHECK_EQ(m[0], 3);
	CHECK_EQ(os_parse_cpulist("0-3,8-11\n", m, 128), 12);
	CHECK_EQ(m[0], 0xf0f);
	CHECK_EQ(os_parse_cpulist("1,3,5", m, 128), 6);
	CHECK_EQ(m[0], 0x2a);
	CHECK_EQ(os_parse_cpulist("64-65,127", m, 128), 128);
	CHECK(m[0] == 0 && m[1] == (3ULL | 1ULL << 63));
	/* Entries beyond nbits count towards the result but are not stored. */
	CHECK_EQ(os_parse_cpulist("0,200", m, 64), 201);
	CHECK_EQ(m[0], 1);
	CHECK_EQ(os_parse_cpulist("", m, 64), 0);
	CHECK_EQ(m[0], 0);
	CHECK_EQ(os_parse_cpulist("\n", m, 64), 0);
	const char *bad[] = { "x", "1-", "-1", "3-1", "1,,2", "1,", "1 2",
			      "1-2-3", "99999999999999", "0-1x" };
	for (size_t i = 0; i < PC_ARRAY_SIZE(bad); i++)
		if (os_parse_cpulist(bad[i], m, 64) != -1) {
			fprintf(stderr, "accepted malformed list \"%s\"\n", bad[i]);
			CHECK(0);
		}
}

/* ---- CPU count and nodes against /sys ---------------------------------------- */
/* Independent parser (test side): highest entry + 1 of a list file; calls
 * fn(entry, arg) for each entry. -1 if unreadable. */
static long sys_list(const char *path, void (*fn)(unsigned, void *), void *arg)
{
	FILE *f = fopen(path, "r");
	char buf[8192];
	long end = 0;
	if (f == NULL)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (char *s = strtok(buf, ",\n"); s != NULL; s = strtok(NULL, ",\n")) {
		unsigned lo, hi;
		int k = sscanf(s, "%u-%u", &lo, &hi);
		if (k < 1)
			continue;
		if (k == 1)
			hi = lo;
		for (unsigned c = lo; c <= hi && fn != NULL; c++)
			fn(c, arg);
		end = PC_MAX(end, (long)hi + 1);
	}
	return end;
}

TEST(cpu_count)
{
	long possible = sys_list("/sys/devices/system/cpu/possible", NULL, NULL);
	CHECK(os_cpu_count() >= 1);
	CHECK(os_cpu_count() <= PC_MAX_CPUS);
	if (possible > 0)
		CHECK_EQ(os_cpu_count(), PC_MIN(possible, PC_MAX_CPUS));
	else
		fprintf(stderr, "note: no /sys/devices/system/cpu/possible\n");
	CHECK((long)os_cpu_count() >= sysconf(_SC_NPROCESSORS_ONLN));
}

struct node_check {
	unsigned node;
	unsigned bad;
};

static void node_check_cpu(unsigned cpu, void *arg)
{
	struct node_check *c = arg;
	if (cpu < PC_MAX_CPUS && os_cpu_to_node(cpu) != c->node)
		c->bad++;
}

TEST(numa_nodes)
{
	unsigned nodes = os_numa_node_count();
	long highest = -1;
	CHECK(nodes >= 1 && nodes <= PC_MAX_NODES);
	for (unsigned cpu = 0; cpu < os_cpu_count(); cpu++)
		CHECK(os_cpu_to_node(cpu) < nodes);
	CHECK_EQ(os_cpu_to_node(PC_MAX_CPUS + 5), 0);
	for (unsigned node = 0; node < PC_MAX_NODES; node++) {
		char path[128];
		struct node_check c = { node, 0 };
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%u/cpulist", node);
		if (sys_list(path, node_check_cpu, &c) < 0)
			continue;
		highest = node;
		CHECK_EQ(c.bad, 0);
	}
	CHECK_EQ(nodes, highest < 0 ? 1 : highest + 1);
}

/* ---- current CPU ------------------------------------------------------------------ */
/* Pin the calling thread to each allowed CPU in turn; count CPUs visited and
 * mismatches of os_cpu_current (and of the slow path when slow is set). */
static void pin_each_cpu(unsigned *visited, unsigned *bad)
{
	cpu_set_t all, one;
	*visited = *bad = 0;
	if (pthread_getaffinity_np(pthread_self(), sizeof(all), &all) != 0) {
		(*bad)++;
		return;
	}
	for (unsigned cpu = 0; cpu < os_cpu_count() && cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &all))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (pthread_setaffinity_np(pthread_self(), sizeof(one), &one) != 0) {
			(*bad)++;
			continue;
		}
		(*visited)++;
		if (os_cpu_current() != cpu || os_cpu_current_slow() != cpu ||
		    sched_getcpu() != (int)cpu)
			(*bad)++;
	}
	pthread_setaffinity_np(pthread_self(), sizeof(all), &all);
}

static unsigned allowed_cpus(void)
{
	cpu_set_t all;
	REQUIRE(sched_getaffinity(0, sizeof(all), &all) == 0);
	unsigned n = 0;
	for (unsigned cpu = 0; cpu < os_cpu_count() && cpu < CPU_SETSIZE; cpu++)
		n += CPU_ISSET(cpu, &all) ? 1 : 0;
	return n;
}

TEST(cpu_current_pinned_main)
{
	unsigned visited, bad;
	pin_each_cpu(&visited, &bad);
	CHECK(visited >= 1);
	CHECK_EQ(visited, allowed_cpus());
	CHECK_EQ(bad, 0);
}

static _Atomic unsigned worker_visited, worker_bad, worker_rseq;

static void *pin_thread(void *arg)
{
	unsigned visited, bad;
	(void)arg;
	atomic_store(&worker_rseq, os_rseq_active());
	pin_each_cpu(&visited, &bad);
	atomic_store(&worker_visited, visited);
	atomic_store(&worker_bad, bad);
	return NULL;
}

TEST(cpu_current_pinned_thread)
{
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, pin_thread, NULL) == 0);
	pthread_join(t, NULL);
	CHECK_EQ(atomic_load(&worker_visited), allowed_cpus());
	CHECK_EQ(atomic_load(&worker_bad), 0);
	CHECK_EQ(atomic_load(&worker_rseq), os_rseq_active());
}

TEST(cpu_current_unpinned)
{
	unsigned agree = 0, rounds = 10000;
	for (unsigned i = 0; i < rounds; i++) {
		unsigned a = os_cpu_current();
		int b = sched_getcpu();
		CHECK(a < os_cpu_count());
		agree += (int)a == b;
	}
	/* A migration between the two reads is the only way to disagree. */
	CHECK(agree >= rounds * 9 / 10);
}

TEST(rseq_active)
{
	if (__rseq_size == 0)
		fprintf(stderr, "note: glibc registered no rseq area in this process\n");
	CHECK_EQ(os_rseq_active(), __rseq_size != 0);
}

/* ---- without rseq: re-executed child --------------------------------------------- */
TEST(child_rseq_off)
{
	unsigned visited, bad;
	CHECK_EQ(__rseq_size, 0);
	CHECK(!os_rseq_active());
	CHECK(os_cpu_count() >= 1);
	CHECK(os_cpu_current() < os_cpu_count());
	pin_each_cpu(&visited, &bad);
	CHECK_EQ(visited, allowed_cpus());
	CHECK_EQ(bad, 0);
}

TEST(rseq_disabled_child)
{
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		char *argv[] = { (char *)self_argv0, (char *)CHILD_ARG, NULL };
		setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=0", 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	int status;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
}

int main(int argc, char **argv)
{
	self_argv0 = argv[0];
	if (argc > 1 && strcmp(argv[1], CHILD_ARG) == 0) {
		os_init();
		RUN(child_rseq_off);
		return test_report();
	}
	RUN(init_concurrent); /* first: nothing may call os_init before it */
	RUN(parse_cpulist);
	RUN(cpu_count);
	RUN(numa_nodes);
	RUN(cpu_current_pinned_main);
	RUN(cpu_current_pinned_thread);
	RUN(cpu_current_unpinned);
	RUN(rseq_active);
	RUN(rseq_disabled_child);
	return test_report();
}
