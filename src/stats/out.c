/*
 * stats/out.c - a growing text buffer for reports, in memory from os_map
 * (never malloc: reporting must not change what it reports, and it may run
 * at exit or in the export thread). Formatting is vsnprintf with integer
 * conversions only (no %f, which may allocate in glibc).
 */
#include "stats.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Make room for `more` bytes plus the terminator; false when out of memory. */
static bool out_reserve(struct pc_out *o, size_t more)
{
	if (o->failed)
		return false;
	if (o->len + more + 1 <= o->cap)
		return true;
	size_t cap = PC_MAX(o->cap * 2, pc_align_up(o->len + more + 1, 64 * 1024));
	char *buf = os_map(cap, PC_PAGE_SIZE);
	if (!buf) {
		o->failed = true;
		return false;
	}
	if (o->buf) {
		memcpy(buf, o->buf, o->len);
		os_unmap(o->buf, o->cap);
	}
	o->buf = buf;
	o->cap = cap;
	return true;
}

void pc_out_printf(struct pc_out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char small[512];
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0 || !out_reserve(o, (size_t)n))
		return;
	if ((size_t)n < sizeof(small)) {
		memcpy(o->buf + o->len, small, (size_t)n + 1);
	} else {
		va_start(ap, fmt);
		vsnprintf(o->buf + o->len, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	o->len += (size_t)n;
}

void pc_out_free(struct pc_out *o)
{
	if (o->buf)
		os_unmap(o->buf, o->cap);
	memset(o, 0, sizeof(*o));
}

/* Rounded to the nearest hundredth of a microsecond, as lock_stat does. */
void pc_out_usec(char *buf, size_t size, uint64_t ns)
{
	uint64_t hundredths = (ns + 5) / 10;
	snprintf(buf, size, "%llu.%02llu", (unsigned long long)(hundredths / 100),
		 (unsigned long long)(hundredths % 100));
}
