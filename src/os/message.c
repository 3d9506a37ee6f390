/*
 * os/message.c - messages on stderr: pc_message, pc_report, pc_fatal,
 * pc_assert_fail.
 * Portable: formats with vsnprintf into a stack buffer and writes it with
 * os_write_stderr, so it never allocates and may run inside malloc. Plain
 * conversions (%s %d %u %zu %p %x ...) are fine; avoid %f and positional
 * arguments ("%1$s"), which may make glibc's printf allocate.
 *
 * Owns: nothing. Locking: none (each message is one write(2) when it fits
 * in the pipe buffer, so concurrent messages do not interleave).
 */
#include "os.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OS_MESSAGE_MAX 1024 /* longer messages are truncated */

/* Write prefix + formatted text + "\n" to stderr in one write. */
static void os_vmessage(const char *prefix, const char *fmt, va_list ap)
{
	char buf[OS_MESSAGE_MAX];
	size_t len = strlen(prefix);
	if (len > sizeof(buf) - 2)
		len = sizeof(buf) - 2;
	memcpy(buf, prefix, len);
	int n = vsnprintf(buf + len, sizeof(buf) - 1 - len, fmt, ap);
	if (n > 0)
		len += PC_MIN((size_t)n, sizeof(buf) - 2 - len); /* truncated */
	buf[len++] = '\n';
	os_write_stderr(buf, len);
}

void pc_message(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	os_vmessage("pcmalloc: ", fmt, ap);
	va_end(ap);
}

void pc_report(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	os_vmessage("", fmt, ap);
	va_end(ap);
}

void pc_fatal(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	os_vmessage("pcmalloc: fatal: ", fmt, ap);
	va_end(ap);
	abort();
}

void pc_assert_fail(const char *expr, const char *file, int line)
{
	pc_fatal("assertion failed: %s (%s:%d)", expr, file, line);
}
