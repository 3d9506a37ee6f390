/*
 * tests/unit/os/format.c - os_format_u (os.h), which builds the names
 * start-up makes without snprintf: prefix, value in decimal, suffix; cut to
 * the buffer and always terminated, as snprintf would leave it.
 */
#define _GNU_SOURCE
#include "os/os.h"
#include "test.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* The same as snprintf's "%s%u%s" for every size from 1 to the whole. */
static void same_as_snprintf(const char *prefix, unsigned value, const char *suffix)
{
	char want[96], got[96];
	for (size_t size = 1; size <= sizeof(got); size++) {
		memset(got, 'x', sizeof(got));
		snprintf(want, size, "%s%u%s", prefix, value, suffix);
		os_format_u(got, size, prefix, value, suffix);
		CHECK(strcmp(got, want) == 0);
		CHECK(strlen(got) < size);
		if (size < sizeof(got))
			CHECK(got[size] == 'x');
	}
}

TEST(names)
{
	char buf[32];
	os_format_u(buf, sizeof(buf), "kmalloc-", 64, "");
	CHECK(strcmp(buf, "kmalloc-64") == 0);
	os_format_u(buf, sizeof(buf), "sheaf-", 4, "");
	CHECK(strcmp(buf, "sheaf-4") == 0);
	os_format_u(buf, sizeof(buf), "node", 0, "/cpulist");
	CHECK(strcmp(buf, "node0/cpulist") == 0);
}

TEST(truncated_like_snprintf)
{
	same_as_snprintf("kmalloc-", 8192, "");
	same_as_snprintf("/sys/devices/system/node/node", 63, "/cpulist");
	same_as_snprintf("", 0, "");
	same_as_snprintf("", UINT_MAX, "");
	same_as_snprintf("a", 1234567890, "bcd");
}

int main(void)
{
	RUN(names);
	RUN(truncated_like_snprintf);
	return test_report();
}
