/*
 * tests/stats/live_target.c - a process for tests/stats/live.py to watch
 * and tune: pcmalloc is its malloc; it reads one command per line on stdin
 * and answers "done" on stdout when the command is finished:
 *   alloc N            allocate N blocks of 16 KiB (order-2 page blocks,
 *                      through the per-CPU page lists) and keep them
 *   report TEXT JSON   write pcmalloc_stats_format("text") to TEXT and
 *                      pcmalloc_stats_format("json") to JSON
 *   exit               exit(0) (end of input too)
 * It prints "ready PID" first.
 */
#define _GNU_SOURCE
#include <pcmalloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *(*volatile p_malloc)(size_t) = malloc;

static int write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	size_t n = fwrite(text, 1, len, f);
	return fclose(f) == 0 && n == len ? 0 : -1;
}

/* Both reports of one quiet moment: the buffers are allocated first, so
 * nothing allocates between the two snapshots (only the snapshot's own
 * list_lock acquisitions differ, see live.py). */
static int report(const char *text_path, const char *json_path)
{
	size_t cap = (size_t)8 << 20;
	char *text = malloc(cap), *json = malloc(cap);
	if (!text || !json)
		return -1;
	size_t tlen = pcmalloc_stats_format("text", text, cap);
	size_t jlen = pcmalloc_stats_format("json", json, cap);
	int rc = tlen == 0 || tlen >= cap || jlen == 0 || jlen >= cap ? -1 : 0;
	rc |= write_file(text_path, text, tlen);
	rc |= write_file(json_path, json, jlen);
	free(text);
	free(json);
	return rc;
}

int main(void)
{
	char line[512], a[256], b[256];
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		unsigned long n;
		if (sscanf(line, "alloc %lu", &n) == 1) {
			for (unsigned long i = 0; i < n; i++)
				if (!p_malloc(16384))
					return 1;
		} else if (sscanf(line, "report %255s %255s", a, b) == 2) {
			if (report(a, b) != 0)
				return 1;
		} else if (strncmp(line, "exit", 4) == 0) {
			break;
		} else {
			return 2;
		}
		printf("done\n");
		fflush(stdout);
	}
	return 0;
}
