/*
 * tests/unit/page/oom.c - running out of memory: os_map failures injected
 * through os_inject_map_failures().
 *
 *  - Before start-up: every map fails, so start-up cannot map its metadata;
 *    pc_alloc_pages() returns NULL with errno ENOMEM and nothing crashes.
 *    Start-up failing part way (some maps allowed) leaves no half-built state:
 *    once maps work again the allocator starts with the right topology.
 *  - A region whose descriptors cannot be mapped: NULL/ENOMEM, and the span
 *    mapped for it is given back (no address space leaked).
 *  - Order PC_MAX_ORDER: with every free page allocated and growth refused,
 *    allocation fails cleanly; one free makes the next allocation succeed;
 *    clearing the injection lets the zone grow again.
 *  - Order 0 (the pcp path): with growth refused, order-0 allocations get
 *    exactly every free page of every zone, pages cached on any CPU's pcp
 *    included, then NULL/ENOMEM.
 * After each part: pc_page_check() and, once all is freed, full coalescing.
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <unistd.h>

#define INJECT_ALL UINT_MAX

static size_t managed_total(void)
{
	size_t n = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++)
		n += pc_zone_get(i)->managed_pages;
	return n;
}

static uint64_t map_failures_total(void)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++)
		n += atomic_load(&pc_zone_get(i)->stats.map_failures);
	return n;
}

/* ---- (a) start-up ------------------------------------------------------------ */
TEST(init_without_memory)
{
	os_inject_map_failures(0, INJECT_ALL);
	for (unsigned order = 0; order <= PC_MAX_ORDER; order += 5) {
		errno = 0;
		CHECK(pc_alloc_pages(order) == NULL);
		CHECK_EQ(errno, ENOMEM);
	}
	errno = 0;
	CHECK(pc_alloc_pages_node(0, 0) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(!pc_page_try_init());
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(pc_zone_count(), 0);
	CHECK_EQ(pc_page_trim(), 0);

	/* Let 1, 2, ... maps through: start-up fails part way until it has all
	 * it needs; each failure must forget what it built. */
	unsigned skip = 1;
	for (; skip < 64; skip++) {
		os_inject_map_failures(skip, INJECT_ALL);
		errno = 0;
		if (pc_page_try_init())
			break;
		CHECK_EQ(errno, ENOMEM);
		CHECK_EQ(pc_zone_count(), 0);
	}
	os_inject_map_failures(0, 0);
	REQUIRE(skip < 64);
	CHECK(skip >= 2); /* at least the zone array and one pcp array */

	/* The topology is whole: every CPU counted once, every zone listed. */
	unsigned cpus = 0, zones = 0;
	for (unsigned n = 0; n < pc_node_count(); n++) {
		cpus += pc_node_get(n)->nr_cpus;
		zones += pc_node_get(n)->nr_zones;
	}
	CHECK_EQ(cpus, os_cpu_count());
	CHECK_EQ(zones, pc_zone_count());
	CHECK(zones >= 1);
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		CHECK_EQ(pc_zone_get(i)->id, i);
		CHECK_EQ(pc_zone_get(i)->managed_pages, 0);
	}
	for (unsigned c = 0; c < os_cpu_count(); c++) {
		struct pc_zone *z = pc_zone_preferred(c);
		CHECK(z->id < pc_zone_count() && pc_zone_get(z->id) == z);
	}
	CHECK(pc_page_check());
}

/* ---- (a') the first region cannot be mapped, then can ------------------------ */
TEST(first_region)
{
	uint64_t fails = map_failures_total();
	size_t mapped = mapped_bytes();
	os_inject_map_failures(0, INJECT_ALL);
	errno = 0;
	CHECK(pc_alloc_pages(0) == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK(map_failures_total() > fails);
	CHECK_EQ(managed_total(), 0);

	/* Span mapped, descriptors refused: the span must be unmapped again. */
	os_inject_map_failures(1, 1);
	errno = 0;
	CHECK(pc_alloc_pages(PC_MAX_ORDER) == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(managed_total(), 0);
	CHECK_EQ(mapped_bytes(), mapped);
	os_inject_map_failures(0, 0);
	CHECK(pc_page_check());

	char *p = pc_alloc_pages(0);
	CHECK(p != NULL);
	if (p) {
		p[0] = 1;
		pc_free_pages(p, 0);
	}
	CHECK_EQ(managed_total(), PC_REGION_PAGES);
	CHECK(pc_page_check());
}

/* ---- (b) order PC_MAX_ORDER ------------------------------------------------------ */
#define MAX_BIG 1024
static char *big[MAX_BIG];
static size_t nbig;

TEST(top_order_exhaustion)
{
	pc_page_drain_all();
	/* Everything free is in whole top-order blocks now: take them all. */
	while (free_total() > 0) {
		REQUIRE(nbig < MAX_BIG);
		char *p = pc_alloc_pages(PC_MAX_ORDER);
		REQUIRE(p != NULL);
		big[nbig++] = p;
	}
	size_t managed = managed_total();
	CHECK_EQ(nbig, managed >> PC_MAX_ORDER);

	os_inject_map_failures(0, INJECT_ALL);
	unsigned long injected = os_injected_failures();
	errno = 0;
	CHECK(pc_alloc_pages(PC_MAX_ORDER) == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK(os_injected_failures() > injected); /* it did try to grow */
	CHECK_EQ(managed_total(), managed);
	CHECK(pc_page_check());
	/* Smaller orders too: not one page is free anywhere. */
	for (unsigned order = 0; order < PC_MAX_ORDER; order += 3) {
		errno = 0;
		CHECK(pc_alloc_pages(order) == NULL);
		CHECK_EQ(errno, ENOMEM);
	}

	/* One block back: the next allocation gets exactly it. */
	char *last = big[--nbig];
	pc_free_pages(last, PC_MAX_ORDER);
	errno = 0;
	char *again = pc_alloc_pages(PC_MAX_ORDER);
	CHECK(again == last);
	if (again)
		big[nbig++] = again;
	errno = 0;
	CHECK(pc_alloc_pages(PC_MAX_ORDER) == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK(pc_page_check());

	/* Growth allowed again. */
	os_inject_map_failures(0, 0);
	char *grown = pc_alloc_pages(PC_MAX_ORDER);
	CHECK(grown != NULL);
	if (grown)
		big[nbig++] = grown;
	CHECK_EQ(managed_total(), managed + PC_REGION_PAGES);
	CHECK(pc_page_check());

	while (nbig > 0)
		pc_free_pages(big[--nbig], PC_MAX_ORDER);
	pc_page_drain_all();
	check_coalesced(true);
}

/* ---- (b') order 0, through the pcp ---------------------------------------------- */
TEST(order0_exhaustion)
{
	/* Leave pages cached on another CPU's pcp: the last resort must find them. */
	bool two_cpus = pin_cpu(1); /* the process's second CPU, if it has one */
	char *warm = NULL;
	if (two_cpus) {
		warm = pc_alloc_pages(0);
		REQUIRE(warm != NULL);
		pc_free_pages(warm, 0);
		unsigned c1 = (unsigned)test_cpu(1);
		CHECK(pc_zone_preferred(c1)->pcp[c1].count > 0);
		REQUIRE(pin_cpu(0));
	}
	size_t expect = free_total();
	size_t managed = managed_total();
	REQUIRE(expect > 0);
	char **pg = malloc(expect * sizeof(*pg));
	REQUIRE(pg != NULL);

	os_inject_map_failures(0, INJECT_ALL);
	size_t n = 0, bad = 0;
	for (;;) {
		errno = 0;
		char *p = pc_alloc_pages(0);
		if (!p)
			break;
		if (n == expect) { /* more pages than were free */
			bad++;
			pc_free_pages(p, 0);
			break;
		}
		memcpy(p, &p, sizeof(p)); /* tag: its own address */
		pg[n++] = p;
	}
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(bad, 0);
	CHECK_EQ(n, expect);
	CHECK_EQ(free_total(), 0);
	CHECK_EQ(managed_total(), managed);
	CHECK(pc_page_check());

	/* Frees still work, and each freed page can be had again. */
	for (int i = 0; i < 8 && n > 0; i++)
		pc_free_pages(pg[--n], 0);
	for (int i = 0; i < 8; i++) {
		char *p = pc_alloc_pages(0);
		CHECK(p != NULL);
		if (p) {
			memcpy(p, &p, sizeof(p));
			pg[n++] = p;
		}
	}
	CHECK(pc_alloc_pages(0) == NULL);

	size_t bad_tags = 0;
	while (n > 0) {
		char *p = pg[--n], *t;
		memcpy(&t, p, sizeof(t));
		bad_tags += t != p;
		pc_free_pages(p, 0);
	}
	CHECK_EQ(bad_tags, 0);
	free(pg);
	os_inject_map_failures(0, 0);
	pc_page_drain_all();
	check_coalesced(true);
	unpin_cpus();
}

/* ---- growth refused while other threads of work remain ------------------------ */
TEST(mixed_orders_exhaustion)
{
	/* Orders 0..PC_MAX_ORDER round-robin until nothing is left: every page
	 * ends up allocated (largest orders fail first, then smaller ones). */
	size_t expect = free_total();
	os_inject_map_failures(0, INJECT_ALL);
	size_t cap = expect + 16, n = 0, pages = 0;
	struct { char *p; unsigned order; } *b = malloc(cap * sizeof(*b));
	REQUIRE(b != NULL);
	for (unsigned order = PC_MAX_ORDER + 1; order-- > 0;) {
		for (;;) {
			char *p = pc_alloc_pages(order);
			if (!p)
				break;
			REQUIRE(n < cap);
			b[n].p = p;
			b[n++].order = order;
			pages += (size_t)1 << order;
		}
		CHECK_EQ(errno, ENOMEM);
	}
	CHECK_EQ(pages, expect);
	CHECK(pc_page_check());
	while (n > 0) {
		n--;
		pc_free_pages(b[n].p, b[n].order);
	}
	free(b);
	os_inject_map_failures(0, 0);
	pc_page_drain_all();
	check_coalesced(true);
}

int main(void)
{
	RUN(init_without_memory);
	RUN(first_region);
	RUN(top_order_exhaustion);
	RUN(order0_exhaustion);
	RUN(mixed_orders_exhaustion);
	return test_report();
}
