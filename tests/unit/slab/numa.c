/*
 * tests/unit/slab/numa.c - per-node behaviour with two fake nodes
 * (vm.numa_fake=2 before start-up: CPU c is node c % 2). "CPU 0" and "CPU
 * 1" below are the process's first two CPUs (pin_cpu(0), pin_cpu(1)), which
 * must then be on nodes 0 and 1 (else the test skips: a cpuset of one CPU,
 * or of CPUs 1 and 2).
 *
 *   - a slab made on CPU 0 lies in node 0's memory (its zones' descriptors
 *     say so: the slab counts are per CPU, the test walks the memory); on
 *     CPU 1, node 1;
 *   - objects allocated on CPU 0 and freed on CPU 1 (and the reverse) go back
 *     to their own slab and node: partial slabs land on their own node's
 *     list, never on the freeing CPU's node;
 *   - an allocation on a CPU whose node has no partial slab takes one from
 *     the other node before it makes a new slab;
 *   - two threads pinned to the two CPUs exchanging objects;
 *   - pc_cache_check() passes throughout, and shrink empties both nodes.
 *
 * The page allocator prefers free memory of another node to mapping a new
 * region for its own (see page.h); the test first gives each node a region
 * of its own, so that node-local slabs are what the slab layer asks for and
 * what it gets.
 */
#define _GNU_SOURCE
#include "slab/slab.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <pthread.h>
#include <sched.h>

static unsigned node_of_mem(const void *p)
{
	return pc_page_region(pc_page_of(p))->zone->node;
}

static unsigned slab_node_of(const void *obj)
{
	return node_of_mem(pc_page_address(pc_slab_of(obj)));
}

static bool two_cpus;

/* Map one region for each node while pinned to a CPU of it, keep it free. */
static void warm_nodes(void)
{
	for (unsigned cpu = 0; cpu < 2; cpu++) {
		REQUIRE(pin_cpu(cpu));
		void *blocks[64];
		unsigned n = 0;
		bool local = false;
		while (!local && n < 64) {
			blocks[n] = pc_alloc_pages(PC_MAX_ORDER);
			REQUIRE(blocks[n]);
			local = node_of_mem(blocks[n]) == cpu;
			n++;
		}
		REQUIRE(local);
		while (n > 0)
			pc_free_pages(blocks[--n], PC_MAX_ORDER);
	}
}

TEST(topology)
{
	CHECK_EQ(pc_node_count(), 2);
	CHECK_EQ(pc_cpu_node(0), 0);
	CHECK_EQ(pc_cpu_node(1), 1);
}

/* Slabs of s in node `node`'s memory: a walk of its zones' page
 * descriptors, as pc_cache_check's (the slab counts are kept per CPU, not
 * per node: slab.h, struct pc_cache_cpu). */
static long node_slabs(struct pc_cache *s, unsigned node)
{
	long n = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		if (z->node != node)
			continue;
		pc_page_reentry_enter(); /* a page lock: page.h, "Re-entry" */
		pc_lock_acquire(&z->lock); /* the region list */
		for (struct pc_region *r = z->regions; r; r = r->next)
			for (size_t k = 0; k < PC_REGION_PAGES; k++)
				n += pc_pg_state(&r->pages[k]) == PC_PG_SLAB && r->pages[k].owner == s;
		pc_lock_release(&z->lock);
		pc_page_reentry_leave();
	}
	return n;
}

TEST(slabs_are_node_local)
{
	struct pc_cache *s = pc_cache_create("numa-local", 200, 0, NULL);
	REQUIRE(s);
	enum { N = 300 };
	void *on[2][N];
	bool local[2] = { true, true };
	for (unsigned cpu = 0; cpu < 2; cpu++) {
		REQUIRE(pin_cpu(cpu));
		for (int i = 0; i < N; i++) {
			REQUIRE((on[cpu][i] = pc_cache_alloc(s)) != NULL);
			memset(on[cpu][i], (int)cpu + 1, 200);
			if (slab_node_of(on[cpu][i]) != cpu) {
				if (local[cpu])
					fprintf(stderr, "object %d allocated on CPU %u is in node %u memory\n",
						i, cpu, slab_node_of(on[cpu][i]));
				local[cpu] = false;
			}
		}
	}
	CHECK(local[0]);
	CHECK(local[1]);
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	/* Each node's memory holds its CPU's slabs. */
	long per_node = (N + info.objects_per_slab - 1) / info.objects_per_slab;
	CHECK_EQ(node_slabs(s, 0), per_node);
	CHECK_EQ(node_slabs(s, 1), per_node);
	CHECK_EQ(pc_cache_check(s), 2 * N);

	/* Cross frees: CPU 1 frees what CPU 0 made, and the reverse. Each
	 * slab goes to its own node's partial list. */
	REQUIRE(pin_cpu(1));
	for (int i = 0; i < N; i += 2)
		pc_cache_free(s, on[0][i]);
	REQUIRE(pin_cpu(0));
	for (int i = 0; i < N; i += 2)
		pc_cache_free(s, on[1][i]);
	CHECK_EQ(pc_cache_check(s), N);
	pc_cache_shrink(s); /* flush the CPU slabs and partial lists to the nodes */
	CHECK_EQ(pc_cache_check(s), N);
	for (unsigned nd = 0; nd < 2; nd++) {
		struct pc_cache_node *n = s->node[nd];
		struct pc_list *it;
		bool own = true;
		unsigned long count = 0;
		pc_list_for_each(it, &n->partial) {
			struct pc_page *slab = pc_list_entry(it, struct pc_page, list);
			own &= node_of_mem(pc_page_address(slab)) == nd;
			count++;
		}
		CHECK(own);
		CHECK_EQ(count, (unsigned long)per_node);
		CHECK_EQ(node_slabs(s, nd), per_node);
	}
	/* Objects still intact. */
	bool intact = true;
	for (unsigned cpu = 0; cpu < 2; cpu++)
		for (int i = 1; i < N; i += 2)
			for (int b = 0; b < 200; b++)
				intact &= ((unsigned char *)on[cpu][i])[b] == cpu + 1;
	CHECK(intact);

	/* Allocation on CPU 1 uses node 1's partial slabs first. */
	REQUIRE(pin_cpu(1));
	void *p = pc_cache_alloc(s);
	REQUIRE(p);
	CHECK_EQ(slab_node_of(p), 1);
	CHECK_EQ(node_slabs(s, 1), per_node); /* no new slab */
	pc_cache_free(s, p);

	for (unsigned cpu = 0; cpu < 2; cpu++)
		for (int i = 1; i < N; i += 2)
			pc_cache_free(s, on[cpu][i]);
	CHECK_EQ(pc_cache_check(s), 0);
	pc_cache_shrink(s);
	CHECK_EQ(node_slabs(s, 0), 0);
	CHECK_EQ(node_slabs(s, 1), 0);
	CHECK_EQ(pc_cache_destroy(s), 0);
}

/* With no partial slab on its own node, a CPU takes one of the other node
 * (get_partial's fallback) before it makes a new slab. */
TEST(partial_from_other_node)
{
	REQUIRE(pc_option_set(PC_OPT_SLUB_CPU_PARTIAL, 0, false) == 0);
	struct pc_cache *s = pc_cache_create("numa-fallback", 512, 0, NULL);
	REQUIRE(s);
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	unsigned per = info.objects_per_slab;
	REQUIRE(pin_cpu(0));
	void **objs = malloc(3 * per * sizeof(void *));
	REQUIRE(objs);
	for (unsigned i = 0; i < 3 * per; i++)
		REQUIRE((objs[i] = pc_cache_alloc(s)) != NULL);
	/* Free half of the first slab (full, node 0) from CPU 1: with
	 * cpu_partial 0 it goes to node 0's list. */
	REQUIRE(pin_cpu(1));
	for (unsigned i = 0; i < per / 2; i++)
		pc_cache_free(s, objs[i]);
	CHECK_EQ(pc_load_relaxed(&s->node[0]->nr_partial), 1);
	CHECK_EQ(pc_load_relaxed(&s->node[1]->nr_partial), 0);
	/* CPU 1 has no slab and node 1 no partial slab: it takes node 0's. */
	void *p = pc_cache_alloc(s);
	REQUIRE(p);
	CHECK(pc_slab_of(p) == pc_slab_of(objs[0]));
	CHECK_EQ(slab_node_of(p), 0);
	CHECK_EQ(node_slabs(s, 1), 0);
	CHECK_EQ(pc_cache_check(s), 3 * (long)per - (long)(per / 2) + 1);
	pc_cache_free(s, p);
	for (unsigned i = per / 2; i < 3 * per; i++)
		pc_cache_free(s, objs[i]);
	CHECK_EQ(pc_cache_check(s), 0);
	pc_cache_shrink(s);
	CHECK_EQ(node_slabs(s, 0) + node_slabs(s, 1), 0);
	CHECK_EQ(pc_cache_destroy(s), 0);
	free(objs);
	REQUIRE(pc_option_set(PC_OPT_SLUB_CPU_PARTIAL, -1, false) == 0);
}

/* ---- two pinned threads trading objects ----------------------------------------- */
#define TRADE_SLOTS 256
#if defined(__SANITIZE_THREAD__)
#define TRADE_OPS 200000
#else
#define TRADE_OPS 2000000
#endif
static struct pc_cache *trade_cache;
static void *_Atomic trade[2][TRADE_SLOTS]; /* trade[i]: objects for thread i to free */
static _Atomic unsigned long trade_errors, trade_nonlocal;

struct trader {
	unsigned cpu;
	uint64_t rng;
	void *mine[64];
	unsigned n;
};

static void *trader_main(void *argp)
{
	struct trader *t = argp;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(test_cpu(t->cpu), &set); /* its rank: "CPU 0" or "CPU 1" */
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0)
		pc_add_relaxed(&trade_errors, 1);
	for (long op = 0; op < TRADE_OPS; op++) {
		uint64_t r = test_rand(&t->rng);
		if (r % 3 == 0 && t->n < 64) {
			uint64_t *p = pc_cache_alloc(trade_cache);
			if (!p) {
				pc_add_relaxed(&trade_errors, 1);
				continue;
			}
			if (slab_node_of(p) != pc_cpu_node(os_cpu_current()))
				pc_add_relaxed(&trade_nonlocal, 1);
			p[0] = (uintptr_t)p ^ 0xabcdef;
			p[7] = t->cpu;
			t->mine[t->n++] = p;
		} else if (r % 3 == 1 && t->n > 0) {
			/* give to the other thread, or free here if its slot is taken */
			uint64_t *p = t->mine[--t->n];
			unsigned k = (unsigned)((r >> 8) % TRADE_SLOTS);
			void *expected = NULL;
			/* acq_rel: the contents reach the other thread */
			if (!pc_cas_strong_acq_rel(&trade[!t->cpu][k], &expected, (void *)p))
				pc_cache_free(trade_cache, p);
		} else {
			unsigned k = (unsigned)((r >> 8) % TRADE_SLOTS);
			uint64_t *p = pc_xchg_acq_rel(&trade[t->cpu][k], NULL); /* pairs with the CAS */
			if (p) {
				if (p[0] != ((uintptr_t)p ^ 0xabcdef) || p[7] != !t->cpu)
					pc_add_relaxed(&trade_errors, 1);
				pc_cache_free(trade_cache, p);
			}
		}
	}
	while (t->n > 0)
		pc_cache_free(trade_cache, t->mine[--t->n]);
	return NULL;
}

TEST(pinned_threads_trade)
{
	trade_cache = pc_cache_create("numa-trade", 64, 0, NULL);
	REQUIRE(trade_cache);
	struct trader t[2] = { { .cpu = 0, .rng = 11 }, { .cpu = 1, .rng = 22 } };
	pthread_t tid[2];
	for (int i = 0; i < 2; i++)
		REQUIRE(pthread_create(&tid[i], NULL, trader_main, &t[i]) == 0);
	for (int i = 0; i < 2; i++)
		pthread_join(tid[i], NULL);
	CHECK_EQ(pc_load_relaxed(&trade_errors), 0);
	/* Not a locality failure: a free into a full slab of the other node
	 * freezes it onto the freeing CPU's partial list, as SLUB does, and
	 * that CPU then allocates from it. */
	fprintf(stderr, "allocations from the other node's slabs: %lu\n",
		pc_load_relaxed(&trade_nonlocal));
	for (int w = 0; w < 2; w++)
		for (unsigned k = 0; k < TRADE_SLOTS; k++) {
			void *p = pc_xchg_acq_rel(&trade[w][k], NULL);
			if (p)
				pc_cache_free(trade_cache, p);
		}
	CHECK_EQ(pc_cache_check(trade_cache), 0);
	pc_cache_shrink(trade_cache);
	struct pc_cache_info info;
	pc_cache_info(trade_cache, &info);
	CHECK_EQ(info.slabs, 0);
	CHECK_EQ(pc_cache_destroy(trade_cache), 0);
	CHECK(pc_page_check());
}

int main(void)
{
	/* White-box tests of the slab layer beneath the sheaves (whose own
	 * tests are slab/sheaves*): without sheaves, every call reaches it. */
	REQUIRE(pc_option_set(PC_OPT_SLUB_SHEAF_CAPACITY, 0, true) == 0);
	REQUIRE(pc_option_set(PC_OPT_VM_NUMA_FAKE, 2, true) == 0);
	pc_page_init();
	two_cpus = pin_cpu(1) && pin_cpu(0) && pc_cpu_node((unsigned)test_cpu(0)) == 0 &&
		   pc_cpu_node((unsigned)test_cpu(1)) == 1;
	if (!two_cpus) {
		printf("needs two CPUs, on nodes 0 and 1; skipped\n");
		return 0;
	}
	warm_nodes();
	RUN(topology);
	RUN(slabs_are_node_local);
	RUN(partial_from_other_node);
	RUN(pinned_threads_trade);
	return test_report();
}
