/*
 * tests/unit/page/numa_zones.c - zone instances (seed 003), with
 * vm.zone_instances=2 set before start-up and the real node topology
 * (vm.numa_fake 0): every node has two zones; the k-th CPU of a node prefers
 * instance k % 2; a CPU whose instance is empty and cannot grow is served by
 * the other instance of its node (stats.fallbacks counts it); the documented
 * order is "other instances of the node before a new region".
 *
 * The parts pinned to the process's first two CPUs (test_cpu(0) and
 * test_cpu(1), unit_helpers.h) need them on one node with different
 * preferred instances; they are skipped (with a message) otherwise.
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>

static bool two_cpus_one_node;
static unsigned cpu_a, cpu_b; /* test_cpu(0) and test_cpu(1) */

TEST(topology)
{
	unsigned zones = 0;
	for (unsigned n = 0; n < pc_node_count(); n++) {
		struct pc_node *nd = pc_node_get(n);
		CHECK_EQ(nd->nr_zones, 2);
		for (unsigned i = 0; i < nd->nr_zones; i++) {
			CHECK_EQ(nd->zones[i].node, n);
			CHECK_EQ(nd->zones[i].instance, i);
			CHECK(pc_zone_get(nd->zones[i].id) == &nd->zones[i]);
		}
		zones += nd->nr_zones;
	}
	CHECK_EQ(zones, pc_zone_count());
	CHECK_EQ(pc_zone_count(), 2 * pc_node_count());
	/* The k-th CPU of each node prefers instance k % 2 of its node. */
	unsigned seen[PC_MAX_NODES] = { 0 };
	for (unsigned c = 0; c < os_cpu_count(); c++) {
		unsigned n = pc_cpu_node(c);
		REQUIRE(n < pc_node_count());
		struct pc_zone *z = pc_zone_preferred(c);
		CHECK_EQ(z->node, n);
		CHECK_EQ(z->instance, seen[n] % 2);
		CHECK(z == &pc_node_get(n)->zones[seen[n] % 2]);
		seen[n]++;
	}
}

/* Fresh allocator. CPU b grows its instance and keeps the memory free.
 * CPU a's instance cannot grow (map failures): an order-PC_MAX_ORDER
 * allocation is served by instance 1 and counted as a fallback. */
TEST(fallback_to_sibling_instance)
{
	if (!two_cpus_one_node) {
		fprintf(stderr, "  needs two CPUs of one node, of different instances: skipped\n");
		return;
	}
	struct pc_zone *z0 = pc_zone_preferred(cpu_a), *z1 = pc_zone_preferred(cpu_b);
	REQUIRE(pin_cpu(1));
	CHECK(pc_zone_preferred(os_cpu_current()) == z1);
	char *p = pc_alloc_pages(PC_MAX_ORDER);
	REQUIRE(p != NULL);
	CHECK(zone_of(p) == z1);
	pc_free_pages(p, PC_MAX_ORDER);
	CHECK_EQ(z1->managed_pages, PC_REGION_PAGES);
	CHECK_EQ(z1->free_pages, PC_REGION_PAGES); /* kept, not released */

	REQUIRE(pin_cpu(0));
	CHECK(pc_zone_preferred(os_cpu_current()) == z0);
	os_inject_map_failures(0, UINT_MAX);
	uint64_t fb = fallbacks_total();
	uint64_t fb1 = atomic_load(&z1->stats.fallbacks);
	errno = 0;
	char *q = pc_alloc_pages(PC_MAX_ORDER);
	os_inject_map_failures(0, 0);
	CHECK(q != NULL);
	if (q) {
		CHECK(zone_of(q) == z1);
		pc_free_pages(q, PC_MAX_ORDER);
	}
	CHECK_EQ(fallbacks_total(), fb + 1);
	CHECK_EQ(atomic_load(&z1->stats.fallbacks), fb1 + 1);
	CHECK_EQ(z0->managed_pages, 0);
	CHECK(pc_page_check());
}

/* CPU b's instance's free memory used from CPU a down to a quarter of a region
 * (the sibling threshold of alloc_slow): the next allocation grows CPU a's
 * instance and is served by it (no fallback counted). */
TEST(grow_when_sibling_exhausted)
{
	if (!two_cpus_one_node) {
		fprintf(stderr, "  needs two CPUs of one node, of different instances: skipped\n");
		return;
	}
	struct pc_zone *z0 = pc_zone_preferred(cpu_a), *z1 = pc_zone_preferred(cpu_b);
	REQUIRE(pin_cpu(0));
	pc_page_drain_all();
	char *held[64];
	unsigned nheld = 0;
	while (zone_free_total(z1) >= PC_REGION_PAGES / 4 ||
	       zone_free_total(z0) > 0) {
		REQUIRE(nheld < 64);
		char *q = pc_alloc_pages(PC_MAX_ORDER);
		REQUIRE(q != NULL);
		held[nheld++] = q;
	}
	CHECK_EQ(z0->managed_pages, 0); /* CPU b's instance served everything so far */
	CHECK(zone_free_total(z1) > 0);   /* ... and is not drained dry */
	uint64_t fb = fallbacks_total();
	char *q = pc_alloc_pages(PC_MAX_ORDER);
	CHECK(q != NULL);
	if (q) {
		CHECK(zone_of(q) == z0);
		held[nheld++] = q;
	}
	CHECK_EQ(z0->managed_pages, PC_REGION_PAGES);
	CHECK_EQ(fallbacks_total(), fb);
	while (nheld > 0)
		pc_free_pages(held[--nheld], PC_MAX_ORDER);
	pc_page_drain_all();
	check_coalesced(false);
}

/* Both instances have memory now: each CPU is served by its own instance,
 * through its own pcp. */
TEST(preferred_instance_serves)
{
	if (!two_cpus_one_node) {
		fprintf(stderr, "  needs two CPUs of one node, of different instances: skipped\n");
		return;
	}
	struct pc_zone *zones[2] = { pc_zone_preferred(cpu_a), pc_zone_preferred(cpu_b) };
	unsigned cpus[2] = { cpu_a, cpu_b };
	REQUIRE(zones[0]->managed_pages > 0 && zones[1]->managed_pages > 0);
	for (unsigned i = 0; i < 2; i++) {
		REQUIRE(pin_cpu(i));
		unsigned c = cpus[i];
		struct pc_zone *z = zones[i];
		CHECK(pc_zone_preferred(os_cpu_current()) == z);
		for (unsigned o = 0; o <= PC_MAX_ORDER; o++) {
			char *p = pc_alloc_pages(o);
			REQUIRE(p != NULL);
			CHECK(zone_of(p) == z);
			p[0] = 1;
			pc_free_pages(p, o);
		}
		CHECK(z->pcp[c].count > 0);
		CHECK_EQ(zones[1 - i]->pcp[c].count, 0);
	}
	pc_page_drain_all();
	check_coalesced(false);
}

int main(void)
{
	REQUIRE(pc_option_set(PC_OPT_VM_ZONE_INSTANCES, 2, true) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_NUMA_FAKE, 0, true) == 0);
	REQUIRE(pc_option_set(PC_OPT_STATS_ENABLE, 1, true) == 0);
	pc_page_init();
	cpu_a = (unsigned)test_cpu(0);
	cpu_b = (unsigned)test_cpu(1);
	two_cpus_one_node = test_cpus() >= 2 && cpu_b < os_cpu_count() &&
			    pc_cpu_node(cpu_a) == pc_cpu_node(cpu_b) &&
			    pc_zone_preferred(cpu_a) != pc_zone_preferred(cpu_b) && pin_cpu(0) && pin_cpu(1);
	RUN(topology);
	RUN(fallback_to_sibling_instance);
	RUN(grow_when_sibling_exhausted);
	RUN(preferred_instance_serves);
	return test_report();
}
