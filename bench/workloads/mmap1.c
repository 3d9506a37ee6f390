/*
 * bench/workloads/mmap1.c - a user-space analogue of will-it-scale/mmap1
 * (seed 000), through malloc/free.
 *
 * In the kernel each mmap+munmap of mmap1 allocates a vm_area_struct (about
 * 200 B) and maple-tree nodes (256 B), and frees them; the maple nodes are
 * freed through RCU, a grace period later, in batches, so their frees land on
 * slabs that are no longer the CPU slab and go to the node partial lists under
 * list_lock: that is the contention seed 000 measured (76% of cycles at 224
 * CPUs). One operation here does the same with malloc: allocate a 184-byte
 * "vma" and --nodes (2) 256-byte "maple nodes", and free the vma; each node
 * goes into a random slot of a table shared by all threads (--delay slots per
 * thread, 1024), and whatever node was in that slot is freed: objects freed
 * late, by any thread, as RCU callbacks free them. The table is an array of
 * atomic pointers swapped with one exchange, so the workload adds no lock.
 *
 *   bench_mmap1 [--threads N] [--ops 200000] [--nodes 2] [--delay 1024]
 *
 * Prints {"bench":"mmap1","threads":..,"ops":..,"elapsed_s":..,
 * "per_thread_ops":..} where per_thread_ops is operations per second per
 * thread (will-it-scale's per_process_ops).
 */
#include "bench.h"

#include <stdatomic.h>

static long ops, nodes;
static size_t table_size;
static void *_Atomic *table; /* the nodes waiting for their grace period */

static void *worker(long id)
{
	uint64_t rng = bench_seed(id);
	for (long i = 0; i < ops; i++) {
		char *vma = bench_xmalloc(184);
		vma[0] = (char)i;
		for (long k = 0; k < nodes; k++) {
			char *node = bench_xmalloc(256);
			node[0] = (char)k;
			size_t slot = (size_t)(bench_rand(&rng) % table_size);
			/* relaxed: the slot only hands over ownership of the node; the
			 * allocator orders its own metadata. */
			free(atomic_exchange_explicit(&table[slot], node, memory_order_relaxed));
		}
		free(vma);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct bench_args a;
	bench_start(&a, argc, argv);
	long threads = bench_long(&a, "threads", bench_cpus(), 2);
	ops = bench_long(&a, "ops", 200000, 2000);
	nodes = bench_long(&a, "nodes", 2, 2);
	long delay = bench_long(&a, "delay", 1024, 64);
	table_size = (size_t)(delay * threads);
	table = calloc(table_size, sizeof(*table));
	double ns = bench_run_threads(threads, worker);
	for (size_t k = 0; k < table_size; k++)
		free(atomic_load_explicit(&table[k], memory_order_relaxed));
	free(table);
	char extra[64];
	snprintf(extra, sizeof(extra), "\"per_thread_ops\":%.1f", (double)ops / ns * 1e9);
	bench_result("mmap1", threads, (double)(ops * threads), ns, extra);
	return 0;
}
