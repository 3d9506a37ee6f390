/*
 * os/physmem.c - how much physical memory the machine has.
 */
#include "os.h"

#include <unistd.h>

size_t os_physical_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES);
	long size = sysconf(_SC_PAGESIZE);
	return pages > 0 && size > 0 ? (size_t)pages * (size_t)size : 0;
}
