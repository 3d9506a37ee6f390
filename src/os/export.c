/*
 * os/export.c - the system calls of the statistics layer: the process's CPU
 * time, its pid, report files, the shared-memory file of the export
 * (/dev/shm, 0600, owner only), futexes on it shared between processes, and
 * sleeping with a timeout. Kept apart from linux.c: only the statistics
 * layer, never an allocation path, calls these.
 *
 * Owns: nothing. Locking: none; every function is thread-safe and never
 * calls malloc.
 */
#define _GNU_SOURCE
#include "os.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uint64_t os_process_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int os_getpid(void) { return (int)getpid(); }

int os_file_open_append(const char *path)
{
	return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

int os_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

void os_close(int fd) { (void)close(fd); }

/* Create path exclusively, mode 0600, refusing links; one stale file of a
 * dead process (same pid, our own file) is replaced. */
static int shm_open_new(const char *path)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			return fd;
		struct stat st;
		if (lstat(path, &st) != 0 || st.st_uid != geteuid() || !S_ISREG(st.st_mode))
			return -1; /* not ours: leave it alone */
		if (unlink(path) != 0)
			return -1;
	}
	return -1;
}

void *os_shm_create(const char *path, size_t size)
{
	int fd = shm_open_new(path);
	if (fd < 0)
		return NULL;
	/* fchmod: the umask cannot widen 0600, but be explicit about it. */
	if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)size) != 0) {
		close(fd);
		unlink(path);
		return NULL;
	}
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		unlink(path);
		return NULL;
	}
	return p;
}

void os_shm_remove(const char *path, void *map, size_t size)
{
	if (map)
		munmap(map, size);
	(void)unlink(path);
}

int os_futex_wait_shared(_Atomic uint32_t *word, uint32_t expected, uint64_t timeout_ns)
{
	struct timespec ts = { (time_t)(timeout_ns / 1000000000u), (long)(timeout_ns % 1000000000u) };
	return (int)syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, NULL, 0);
}

void os_futex_wake_shared(_Atomic uint32_t *word)
{
	(void)syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
}
