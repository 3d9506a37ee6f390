/*
 * os/membarrier.c - a memory barrier on every running thread of the process
 * (membarrier(2)), for flushing other threads' per-thread sheaves (slab.h,
 * "Sheaves", thread mode). See os.h, "process-wide barrier".
 *
 * Owns: membarrier_cmd, written once by os_membarrier_setup (its caller runs
 * it inside a pc_once, which publishes it), read by os_membarrier_fence.
 */
#define _GNU_SOURCE
#include "os.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

static int membarrier_cmd PC_STARTUP_DATA; /* 0: none */

static long membarrier_call(int cmd)
{
	return syscall(__NR_membarrier, cmd, 0, 0);
}

int os_membarrier_setup(void)
{
	int saved = errno;
	long cmds = membarrier_call(MEMBARRIER_CMD_QUERY);
	membarrier_cmd = 0;
	if (cmds >= 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	    membarrier_call(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
		membarrier_cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED; /* IPIs: microseconds */
	else if (cmds >= 0 && (cmds & MEMBARRIER_CMD_GLOBAL))
		membarrier_cmd = MEMBARRIER_CMD_GLOBAL; /* an RCU grace period: milliseconds */
	errno = saved;
	return membarrier_cmd == MEMBARRIER_CMD_PRIVATE_EXPEDITED ? OS_MEMBARRIER_PRIVATE
	       : membarrier_cmd ? OS_MEMBARRIER_GLOBAL : OS_MEMBARRIER_NONE;
}

int os_membarrier_mode(void)
{
	return membarrier_cmd == MEMBARRIER_CMD_PRIVATE_EXPEDITED ? OS_MEMBARRIER_PRIVATE
	       : membarrier_cmd ? OS_MEMBARRIER_GLOBAL : OS_MEMBARRIER_NONE;
}

void os_membarrier_fence(void)
{
	int saved = errno;
	if (membarrier_cmd == 0 || membarrier_call(membarrier_cmd) != 0)
		pc_fatal("membarrier(%d) failed (errno %d)", membarrier_cmd, errno);
	errno = saved;
}
