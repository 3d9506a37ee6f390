/*
 * os/topology.c - CPUs and NUMA nodes on Linux: os_init() reads the number
 * of possible CPUs and the node of each CPU from /sys once, and the current
 * CPU comes from glibc's rseq area or sched_getcpu().
 *
 * Owns: os_ncpus, os_node_count and os_cpu_node[], written only by the
 * once-init of os_init_state (pc_once, lifecycle.c), then read-only.
 * Never calls malloc: files are read into stack buffers.
 */
#ifndef __linux__
#error "os/topology.c reads Linux's /sys"
#endif
#define _GNU_SOURCE
#include "os.h"

#include <errno.h>
#include <sched.h>
#include <unistd.h>

#define OS_CPU_WORDS ((PC_MAX_CPUS + 63) / 64)
#define OS_LIST_BUF  4096 /* a cpulist of 1024 CPUs, one by one, fits */
#define OS_MAX_NUMBER (1UL << 30) /* larger list entries are malformed */

/* Node numbers fit os_cpu_node's uint8_t and os_bind_node's one-word mask. */
_Static_assert(PC_MAX_NODES <= 64, "node masks are one 64-bit word");

unsigned os_ncpus PC_STARTUP_DATA;
static unsigned os_node_count = 1;
static uint8_t os_cpu_node[PC_MAX_CPUS]; /* node of each CPU, 0 if unknown */
static _Atomic uint32_t os_init_state PC_STARTUP_DATA; /* pc_once */

/* ---- list parsing ------------------------------------------------------------ */
bool os_parse_number(const char **s, unsigned long max, unsigned long *out)
{
	const char *p = *s;
	unsigned long v = 0;
	if (*p < '0' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned long digit = (unsigned long)(*p - '0');
		if (v > (max - digit) / 10)
			return false;
		v = v * 10 + digit;
	}
	*s = p;
	*out = v;
	return true;
}

static void os_mask_set_range(uint64_t *mask, unsigned nbits, unsigned long lo,
			      unsigned long hi)
{
	for (unsigned long i = lo; i <= hi && i < nbits; i++)
		mask[i / 64] |= (uint64_t)1 << (i % 64);
}

/* Grammar: list = "" | range ("," range)*, range = N | N "-" N (lo <= hi),
 * optionally followed by whitespace (sysfs ends with "\n"). */
long os_parse_cpulist(const char *s, uint64_t *mask, unsigned nbits)
{
	unsigned long end = 0, lo, hi;
	for (unsigned i = 0; i < (nbits + 63) / 64; i++)
		mask[i] = 0;
	while (*s != '\0' && *s != '\n' && *s != ' ') {
		if (!os_parse_number(&s, OS_MAX_NUMBER, &lo))
			return -1;
		hi = lo;
		if (*s == '-') {
			s++;
			if (!os_parse_number(&s, OS_MAX_NUMBER, &hi) || hi < lo)
				return -1;
		}
		os_mask_set_range(mask, nbits, lo, hi);
		end = PC_MAX(end, hi + 1);
		if (*s == ',' && (s[1] < '0' || s[1] > '9'))
			return -1;
		if (*s == ',')
			s++;
	}
	while (*s == '\n' || *s == ' ')
		s++;
	return *s == '\0' ? (long)end : -1;
}

/* Read a list file of /sys (one line) into mask; the highest entry + 1, or -1. */
static long os_read_list(const char *path, uint64_t *mask, unsigned nbits)
{
	char buf[OS_LIST_BUF];
	if (os_read_line(path, buf, sizeof(buf)) < 0)
		return -1;
	return os_parse_cpulist(buf, mask, nbits);
}

/* ---- discovery ------------------------------------------------------------------ */
static unsigned os_discover_cpus(void)
{
	uint64_t mask[OS_CPU_WORDS];
	long n = os_read_list("/sys/devices/system/cpu/possible", mask, PC_MAX_CPUS);
	if (n <= 0)
		n = sysconf(_SC_NPROCESSORS_CONF);
	if (n <= 0)
		n = 1;
	return (unsigned)PC_MIN(n, (long)PC_MAX_CPUS);
}

/* Record the CPUs of node `node`; false if the node has no directory. */
static bool os_discover_node(unsigned node)
{
	char path[64];
	uint64_t mask[OS_CPU_WORDS];
	os_format_u(path, sizeof(path), "/sys/devices/system/node/node", node, "/cpulist");
	if (os_read_list(path, mask, PC_MAX_CPUS) < 0)
		return false;
	for (unsigned cpu = 0; cpu < PC_MAX_CPUS; cpu++)
		if (mask[cpu / 64] >> (cpu % 64) & 1)
			os_cpu_node[cpu] = (uint8_t)node;
	return true;
}

/*
 * Nodes: those listed in node/possible that have a directory. The count is
 * the highest such node + 1, so node numbers index arrays directly. Without
 * NUMA it is 1 and no node's file is read: node/possible missing (a kernel
 * without CONFIG_NUMA has no node directory at all; it used to cost a
 * failed open for each of the PC_MAX_NODES nodes) or listing node 0 alone
 * (every CPU is then on node 0, os_cpu_node's zeroes), so that start-up
 * reads two files of /sys on such machines (docs/footprint.md).
 */
static unsigned os_discover_nodes(void)
{
	uint64_t possible;
	unsigned count = 1;
	if (os_read_list("/sys/devices/system/node/possible", &possible, PC_MAX_NODES) <= 0 ||
	    possible <= 1)
		return 1;
	for (unsigned node = 0; node < PC_MAX_NODES; node++)
		if ((possible >> node & 1) && os_discover_node(node))
			count = node + 1;
	return count;
}

static bool os_init_once(void)
{
	int saved = errno;
	os_ncpus = os_discover_cpus();
	os_node_count = os_discover_nodes();
	errno = saved;
	return true;
}

void os_init(void)
{
	pc_once(&os_init_state, os_init_once);
}

/* ---- queries ----------------------------------------------------------------------- */
unsigned os_numa_node_count(void)
{
	return os_node_count;
}

unsigned os_cpu_to_node(unsigned cpu)
{
	return cpu < PC_MAX_CPUS ? os_cpu_node[cpu] : 0;
}

bool os_rseq_active(void)
{
	return __rseq_size != 0 && os_rseq_cpu_id() >= 0;
}

unsigned os_cpu_current_slow(void)
{
	os_init(); /* one load once initialised; makes os_ncpus nonzero */
	int saved = errno;
	int cpu = sched_getcpu();
	errno = saved;
	return cpu < 0 ? 0 : (unsigned)cpu % os_ncpus;
}
