/*
 * tools/startup/smaps.c - a preloaded destructor for docs/footprint.md,
 * "2026-11-24 night, helper startup": at exit it prints to stderr the Rss
 * of every mapping that has any (from /proc/self/smaps), then VmHWM,
 * RssAnon and RssFile. It uses read(2) and string functions only (no
 * malloc, no stdio), and it adds pages of its own (its buffer, the libc
 * string functions): compare runs that all load it.
 *
 *   cc -O2 -shared -fPIC -o smaps.so tools/startup/smaps.c
 *   LD_PRELOAD="build/libpcmalloc.so ./smaps.so" setarch -R ./once
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static char buf[1 << 20];

static void put(const char *s, size_t n)
{
	if (write(2, s, n) < 0)
		return;
}

static void status_line(const char *text, const char *key)
{
	const char *h = strstr(text, key);
	if (h) {
		const char *e = strchr(h, '\n');
		put(h, e ? (size_t)(e - h + 1) : strlen(h));
	}
}

__attribute__((destructor)) static void startup_smaps(void)
{
	int fd = open("/proc/self/smaps", O_RDONLY);
	size_t n = 0;
	ssize_t r;
	while (fd >= 0 && (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	if (fd >= 0)
		close(fd);
	char head[256] = "";
	char *save = NULL;
	for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *dash = strchr(l, '-'), *space = strchr(l, ' ');
		if (dash && space && dash < space && strncmp(l, "Rss:", 4) != 0 &&
		    ((l[0] >= '0' && l[0] <= '9') || (l[0] >= 'a' && l[0] <= 'f'))) {
			strncpy(head, l, sizeof(head) - 1);
			continue;
		}
		if (strncmp(l, "Rss:", 4) == 0) {
			char *p = l + 4;
			while (*p == ' ')
				p++;
			if (strcmp(p, "0 kB") != 0) {
				put(p, strlen(p));
				put("\t", 1);
				put(head, strlen(head));
				put("\n", 1);
			}
		}
	}
	fd = open("/proc/self/status", O_RDONLY);
	r = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	buf[r > 0 ? r : 0] = '\0';
	if (fd >= 0)
		close(fd);
	status_line(buf, "VmHWM");
	status_line(buf, "RssAnon");
	status_line(buf, "RssFile");
}
