/*
 * tools/startup/written.c - which pages a program has written, for
 * docs/footprint.md ("2026-11-25 morning, helper footprint2"): a destructor
 * that appends to the file $WRITTEN_OUT, for every mapping under 64 MiB,
 * its /proc/self/maps line ("M ...") and the address of each page that is
 * present and exclusively mapped ("W <hex>"; pagemap bits 63 and 56). A
 * page of .bss or of an anonymous mapping that was only read maps the
 * shared zero page, which is present but not exclusive (and which VmRSS
 * does not count); one that was written is the process's own.
 *
 *   cc -O2 -shared -fPIC -o written.so tools/startup/written.c
 *   WRITTEN_OUT=out LD_PRELOAD=build/libpcmalloc.so:./written.so ./program
 *
 * With a library linked so that each .bss input section lies on a page of
 * its own (a script with ". = ALIGN(4096); *(.bss.NAME)" for each, inserted
 * before .bss), the written pages name the written variables: that is how
 * tools/hot_text.py's HOT_BSS was found.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static char maps[1 << 20];
__attribute__((destructor(150))) static void written(void)
{
	int m = open("/proc/self/maps", O_RDONLY), pm = open("/proc/self/pagemap", O_RDONLY);
	long n, t = 0;
	while ((n = read(m, maps + t, sizeof(maps) - 1 - t)) > 0) t += n;
	maps[t] = 0;
	int out = open(getenv("WRITTEN_OUT"), O_WRONLY | O_APPEND | O_CREAT, 0644);
	for (char *l = maps; l && *l;) {
		char *e = strchr(l, '\n');
		if (e) *e = 0;
		unsigned long a, b;
		if (sscanf(l, "%lx-%lx", &a, &b) == 2 && b - a < (1UL << 26)) {
			dprintf(out, "M %s\n", l);
			for (unsigned long p = a; p < b; p += 4096) {
				uint64_t v = 0;
				if (pread(pm, &v, 8, (off_t)(p / 4096 * 8)) == 8 && (v >> 63) && ((v >> 56) & 1))
					dprintf(out, "W %lx\n", p);
			}
		}
		l = e ? e + 1 : 0;
	}
	close(out);
}
