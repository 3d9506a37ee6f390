/*
 * tests/unit/page/numa.c - nodes, with vm.numa_fake=2 set before start-up:
 * two fake nodes, CPU c on node c % 2, one zone per node (few CPUs), and
 * pc_alloc_pages_node() returning memory of the node asked for.
 *
 * Node locality: a node whose zone is merely empty (it never grew, or its
 * free memory ran out) can get a new region from the OS; memory of another
 * node is the last resort, for when the OS refuses. So
 * pc_alloc_pages_node(o, n) must return memory of a zone of node n as long as
 * the OS gives memory, whatever the other nodes hold free. Falling back to
 * another node when node n cannot grow must work and count stats.fallbacks.
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>

static size_t node_free_pages(unsigned node)
{
	size_t n = 0;
	struct pc_node *nd = pc_node_get(node);
	for (unsigned i = 0; i < nd->nr_zones; i++)
		n += zone_free_total(&nd->zones[i]);
	return n;
}

TEST(topology)
{
	CHECK_EQ(pc_node_count(), 2);
	unsigned cpus[2] = { 0, 0 }, zones = 0;
	for (unsigned c = 0; c < os_cpu_count(); c++) {
		CHECK_EQ(pc_cpu_node(c), c % 2);
		CHECK_EQ(pc_zone_preferred(c)->node, c % 2);
		cpus[c % 2]++;
	}
	for (unsigned n = 0; n < pc_node_count(); n++) {
		struct pc_node *nd = pc_node_get(n);
		CHECK_EQ(nd->id, n);
		CHECK_EQ(nd->nr_cpus, cpus[n]);
		CHECK(nd->nr_zones >= 1);
		for (unsigned i = 0; i < nd->nr_zones; i++) {
			CHECK_EQ(nd->zones[i].node, n);
			CHECK_EQ(nd->zones[i].instance, i);
			CHECK(pc_zone_get(nd->zones[i].id) == &nd->zones[i]);
		}
		zones += nd->nr_zones;
	}
	CHECK_EQ(zones, pc_zone_count());
}

/* From a fresh allocator: node 1 first (grows node 1), then node 0, whose
 * zone is empty while node 1 has plenty free: node 0 must still get node 0
 * memory, by growing. Then the other way round, at several orders. */
TEST(alloc_node_fresh)
{
	const unsigned orders[] = { 0, 3, PC_MAX_ORDER };
	char *p[3][2];
	for (unsigned k = 0; k < 3; k++) {
		for (unsigned n = 2; n-- > 0;) {
			p[k][n] = pc_alloc_pages_node(orders[k], n);
			REQUIRE(p[k][n] != NULL);
			CHECK_EQ(zone_of(p[k][n])->node, n);
			if (zone_of(p[k][n])->node != n)
				fprintf(stderr, "  order %u for node %u came from node %u\n",
					orders[k], n, zone_of(p[k][n])->node);
		}
	}
	for (unsigned k = 0; k < 3; k++)
		for (unsigned n = 0; n < 2; n++)
			pc_free_pages(p[k][n], orders[k]);
	CHECK(pc_page_check());
}

/* Make sure both nodes have memory (allocate on node n until a block of node
 * n comes back), then every order on every node is served locally. */
TEST(alloc_node_both_grown)
{
	for (unsigned n = 0; n < 2; n++) {
		char *held[64];
		unsigned nheld = 0;
		for (;;) {
			REQUIRE(nheld < 64);
			char *q = pc_alloc_pages_node(PC_MAX_ORDER, n);
			REQUIRE(q != NULL);
			held[nheld++] = q;
			if (zone_of(q)->node == n)
				break;
		}
		while (nheld > 0)
			pc_free_pages(held[--nheld], PC_MAX_ORDER);
	}
	pc_page_drain_all();
	REQUIRE(node_free_pages(0) > 0 && node_free_pages(1) > 0);

	size_t wrong = 0;
	for (unsigned o = 0; o <= PC_MAX_ORDER; o++) {
		for (unsigned n = 0; n < 2; n++) {
			char *q = pc_alloc_pages_node(o, n);
			REQUIRE(q != NULL);
			wrong += zone_of(q)->node != n;
			q[0] = 1;
			pc_free_pages(q, o);
		}
	}
	CHECK_EQ(wrong, 0);

	/* A node number out of range: the caller's preferred zone. */
	unsigned cpu = os_cpu_current();
	char *q = pc_alloc_pages_node(0, 7);
	CHECK(q != NULL);
	if (q) {
		unsigned now = os_cpu_current();
		if (now == cpu)
			CHECK(zone_of(q)->node == pc_cpu_node(cpu));
		pc_free_pages(q, 0);
	}

	/* Plain pc_alloc_pages follows the CPU's node (the process's first two
	 * CPUs, those it has). */
	if (os_cpu_count() >= 2) {
		for (unsigned i = 0; i < 2; i++) {
			if (!pin_cpu(i))
				continue;
			char *r = pc_alloc_pages(0);
			REQUIRE(r != NULL);
			CHECK_EQ(zone_of(r)->node, (unsigned)test_cpu(i) % 2);
			pc_free_pages(r, 0);
		}
	}
	pc_page_drain_all();
	check_coalesced(false);
}

/* Node 1 cannot grow (map failures injected) and its free memory is used up:
 * the next allocation for node 1 comes from node 0, and counts a fallback. */
TEST(fallback_to_other_node)
{
	REQUIRE(pc_option(PC_OPT_STATS_ENABLE) == 1);
	pc_page_drain_all();
	REQUIRE(node_free_pages(0) >= ((size_t)1 << PC_MAX_ORDER));
	os_inject_map_failures(0, UINT_MAX);
	char *held[256];
	unsigned nheld = 0;
	while (node_free_pages(1) > 0) {
		REQUIRE(nheld < 256);
		char *q = pc_alloc_pages_node(PC_MAX_ORDER, 1);
		REQUIRE(q != NULL);
		CHECK_EQ(zone_of(q)->node, 1);
		held[nheld++] = q;
	}
	uint64_t fb = fallbacks_total();
	uint64_t fb0 = atomic_load(&pc_node_get(0)->zones[0].stats.fallbacks);
	errno = 0;
	char *q = pc_alloc_pages_node(PC_MAX_ORDER, 1);
	CHECK(q != NULL);
	if (q) {
		CHECK_EQ(zone_of(q)->node, 0);
		held[nheld++] = q;
	}
	CHECK_EQ(fallbacks_total(), fb + 1);
	/* Counted on the zone that served. */
	CHECK_EQ(atomic_load(&pc_node_get(0)->zones[0].stats.fallbacks), fb0 + 1);
	/* Small orders fall back the same way (through node 0's pcp). */
	char *s = pc_alloc_pages_node(0, 1);
	CHECK(s != NULL);
	if (s) {
		CHECK_EQ(zone_of(s)->node, 0);
		pc_free_pages(s, 0);
	}
	os_inject_map_failures(0, 0);
	CHECK(pc_page_check());
	while (nheld > 0)
		pc_free_pages(held[--nheld], PC_MAX_ORDER);
	pc_page_drain_all();
	check_coalesced(false);
}

int main(void)
{
	REQUIRE(pc_option_set(PC_OPT_VM_NUMA_FAKE, 2, true) == 0);
	REQUIRE(pc_option_set(PC_OPT_STATS_ENABLE, 1, true) == 0);
	pc_page_init();
	RUN(topology);
	RUN(alloc_node_fresh);
	RUN(alloc_node_both_grown);
	RUN(fallback_to_other_node);
	return test_report();
}
