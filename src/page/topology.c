/*
 * page/topology.c - nodes, zone instances and which zone each CPU prefers.
 *
 * Built once by pc_page_init() and read-only afterwards (no lock needed to
 * read it). Nodes come from the OS, or from vm.numa_fake, which deals the
 * CPUs round-robin into N nodes as the kernel's numa=fake splits a machine,
 * so that per-node behaviour can be tested on a one-node machine.
 *
 * Zone instances (seed 003): the kernel patch splits a zone into one instance
 * per ~256 GB because big memory comes with many CPUs; what hurts is the
 * number of CPUs sharing one zone lock. In a process the zone covers only the
 * heap, so pcmalloc sizes the split by CPUs: one instance per 16 CPUs of the
 * node, but no more than one per 64 GiB of the node's memory, so small
 * machines keep a single zone. vm.zone_instances overrides it.
 */
#include "page.h"

#include <errno.h>

static struct pc_node nodes[PC_MAX_NODES];
static unsigned nr_nodes;
static struct pc_zone *zone_table[PC_MAX_NODES * 64];
static unsigned nr_zones;
static uint16_t cpu_node[PC_MAX_CPUS];
static uint16_t cpu_zone[PC_MAX_CPUS]; /* instance index within the node */
static bool numa_bind;
static _Atomic uint32_t init_state; /* pc_once */

unsigned pc_node_count(void) { return nr_nodes; }
/* cpu < os_cpu_count(): os_cpu_current() guarantees it. */
unsigned pc_cpu_node(unsigned cpu) { pc_assert(cpu < os_cpu_count()); return cpu_node[cpu]; }
struct pc_node *pc_node_get(unsigned node) { return &nodes[node]; }
unsigned pc_zone_count(void) { return nr_zones; }
struct pc_zone *pc_zone_get(unsigned i) { return zone_table[i]; }
bool page_numa_bind(void) { return numa_bind; }

struct pc_zone *pc_zone_preferred(unsigned cpu)
{
	pc_assert(cpu < os_cpu_count());
	return &nodes[cpu_node[cpu]].zones[cpu_zone[cpu]];
}

/* vm.zone_instances as built: instances of node 0 (help shows it). */
static long zone_instances_resolved(void)
{
	return nr_nodes ? (long)nodes[0].nr_zones : -1;
}

static void stats_hook(long on)
{
	pc_store_relaxed(&pc_lock_stats_enabled, on != 0);
}

/* Assign CPUs to nodes; count each node's CPUs. */
static void map_cpus(void)
{
	unsigned ncpu = os_cpu_count();
	long fake = pc_option(PC_OPT_VM_NUMA_FAKE);

	nr_nodes = fake > 0 ? (unsigned)fake : os_numa_node_count();
	if (nr_nodes > PC_MAX_NODES)
		nr_nodes = PC_MAX_NODES;
	numa_bind = fake == 0 && nr_nodes > 1;
	for (unsigned c = 0; c < ncpu && c < PC_MAX_CPUS; c++) {
		unsigned n = fake > 0 ? c % nr_nodes : os_cpu_to_node(c) % nr_nodes;
		cpu_node[c] = (uint16_t)n;
		cpu_zone[c] = (uint16_t)nodes[n].nr_cpus++; /* index within node, for now */
	}
}

static unsigned default_instances(const struct pc_node *n)
{
	size_t mem_per_node = os_physical_memory() / nr_nodes;
	unsigned by_cpus = n->nr_cpus / 16;
	unsigned by_mem = (unsigned)(mem_per_node >> 36); /* 64 GiB */
	return PC_MAX(1u, PC_MIN(by_cpus, by_mem));
}

static bool zone_setup(struct pc_zone *z, unsigned node, unsigned instance)
{
	size_t pcp_bytes = pc_align_up(sizeof(struct pc_pcp) * os_cpu_count(), PC_PAGE_SIZE);
	z->pcp = os_map(pcp_bytes, PC_PAGE_SIZE);
	if (!z->pcp)
		return false;
	for (unsigned c = 0; c < os_cpu_count(); c++)
		pcp_init(&z->pcp[c]);
	pc_lock_init(&z->lock, "zone", (enum pc_lock_kind)pc_option(PC_OPT_LOCK_KIND));
	pc_lock_set_rank(&z->lock, PC_LOCK_RANK_ZONE);
	pc_lock_register(&z->lock, &z->lock_stats);
	pc_mutex_init(&z->grow_lock);
	pc_mutex_set_rank(&z->grow_lock, PC_LOCK_RANK_ZONE_GROW);
	for (unsigned o = 0; o <= PC_MAX_ORDER; o++) {
		pc_list_init(&z->free_area[o].dirty);
		pc_list_init(&z->free_area[o].clean);
	}
	pc_list_init(&z->release_held_blocks);
	pc_list_init(&z->release_held_runs);
	zone_run_init(z);
	z->node = node;
	z->instance = instance;
	z->id = nr_zones;
	zone_table[nr_zones++] = z;
	return true;
}

static bool build_zones(void)
{
	long forced = pc_option(PC_OPT_VM_ZONE_INSTANCES);
	for (unsigned n = 0; n < nr_nodes; n++) {
		struct pc_node *node = &nodes[n];
		unsigned count = forced > 0 ? (unsigned)forced : default_instances(node);
		size_t bytes = pc_align_up(sizeof(struct pc_zone) * count, PC_PAGE_SIZE);
		node->id = n;
		node->zones = os_map(bytes, PC_PAGE_SIZE);
		if (!node->zones)
			return false;
		node->nr_zones = count;
		for (unsigned i = 0; i < count; i++)
			if (!zone_setup(&node->zones[i], n, i))
				return false;
	}
	for (unsigned c = 0; c < os_cpu_count() && c < PC_MAX_CPUS; c++)
		cpu_zone[c] = (uint16_t)(cpu_zone[c] % nodes[cpu_node[c]].nr_zones);
	return true;
}

/* Start-up; on failure, forget the partial state so that a retry starts
 * clean (the metadata mapped so far stays mapped: a few pages, once). */
static bool page_init_once(void)
{
	pc_lock_layer_start(); /* its fork handlers before any lock exists */
	os_init();
	pc_options_init();
	pc_option_on_change(PC_OPT_STATS_ENABLE, stats_hook);
	stats_hook(pc_option(PC_OPT_STATS_ENABLE));
	zone_release_init();
	pc_option_on_resolve(PC_OPT_VM_ZONE_INSTANCES, zone_instances_resolved);
	map_cpus();
	if (build_zones()) {
		static const struct pc_life page_life = {
			.name = "page", .rank = PC_LIFE_RANK_PAGE,
			.prefork = pc_page_prefork, .postfork_parent = pc_page_postfork_parent,
			.postfork_child = pc_page_postfork_child,
		};
		pc_life_register(&page_life); /* fork now takes the zones' locks */
		return true;
	}
	for (unsigned n = 0; n < PC_MAX_NODES; n++)
		nodes[n].nr_cpus = nodes[n].nr_zones = 0;
	nr_zones = 0;
	errno = ENOMEM;
	return false;
}

/* Thread-safe and idempotent; false (errno ENOMEM) when the allocator is not
 * usable yet. */
bool pc_page_try_init(void)
{
	return pc_once(&init_state, page_init_once);
}

void pc_page_init(void)
{
	if (!pc_page_try_init())
		pc_fatal("cannot map the page allocator's metadata at start-up");
}
