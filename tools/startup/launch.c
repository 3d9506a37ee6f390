/*
 * tools/startup/launch.c - the launcher of docs/footprint.md, "2026-11-24
 * night, helper startup": runs one program once and prints, on one line,
 * its wall time (us), CPU time (user + system, us), peak RSS (ru_maxrss,
 * kB), minor faults and wait status.
 *
 *   cc -O2 -static -o launch tools/startup/launch.c
 *   ./launch LIB PROGRAM [ARGS...]      LIB: LD_PRELOAD for the child, or "-"
 *   NORAND=1 ./launch ...               address space layout randomisation off
 *
 * Static, so that nothing of its own is counted in the child's RSS before
 * the exec; the child's standard output goes to /dev/null.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s LIB|- PROGRAM [ARGS...]\n", argv[0]);
		return 2;
	}
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	pid_t pid = fork();
	if (pid == 0) {
		if (getenv("NORAND"))
			personality(ADDR_NO_RANDOMIZE);
		if (argv[1][0] != '-')
			setenv("LD_PRELOAD", argv[1], 1);
		int fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		execv(argv[2], argv + 2);
		_exit(127);
	}
	int st = 0;
	struct rusage ru;
	wait4(pid, &st, 0, &ru);
	clock_gettime(CLOCK_MONOTONIC, &b);
	long wall = (b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000;
	long cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000L + ru.ru_utime.tv_usec +
		   ru.ru_stime.tv_usec;
	printf("%ld %ld %ld %ld %d\n", wall, cpu, ru.ru_maxrss, ru.ru_minflt, st);
	return 0;
}
