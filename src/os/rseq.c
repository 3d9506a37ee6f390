/*
 * os/rseq.c - setting up the per-CPU stacks on rseq (os.h): checks glibc's
 * registration and registers the process for the expedited rseq membarrier.
 * The critical sections themselves are inline, in rseq_x86_64.h.
 *
 * Owns: os_rseq_offset, written once by os_rseq_setup (its callers run it
 * inside a pc_once, which publishes it) and read by the sequences.
 */
#define _GNU_SOURCE
#include "os.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

ptrdiff_t os_rseq_offset PC_STARTUP_DATA;

static long os_membarrier(int cmd)
{
	return syscall(__NR_membarrier, cmd, 0, 0);
}

bool os_rseq_setup(void)
{
	int saved = errno;
	bool ok = false;
	/* rseq_cs must be inside the registered area, and this thread's
	 * registration must have worked (cpu_id >= 0). */
	if (__rseq_size >= offsetof(struct rseq, rseq_cs) + sizeof(uint64_t) &&
	    os_rseq_cpu_id() >= 0) {
		/* No MEMBARRIER_CMD_QUERY first: a kernel without the command
		 * (before 5.10, or without CONFIG_RSEQ) refuses the registration
		 * itself with EINVAL, so one system call at start-up answers. */
		ok = os_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ) == 0;
	}
	if (ok)
		os_rseq_offset = __rseq_offset;
	errno = saved;
	return ok;
}

void os_rseq_fence(void)
{
	int saved = errno;
	if (os_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) != 0)
		pc_fatal("membarrier(PRIVATE_EXPEDITED_RSEQ) failed (errno %d)", errno);
	errno = saved;
}
