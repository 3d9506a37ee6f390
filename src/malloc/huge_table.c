/*
 * malloc/huge_table.c - the set of live huge blocks, so that free() can tell
 * a huge block from a foreign pointer without reading memory we may not have
 * mapped (the header page in front of a foreign page-aligned pointer may not
 * exist at all).
 *
 * An open-addressing hash set of user pointers, lock-free: a slot goes from
 * EMPTY to a pointer (insert, compare-and-swap), from a pointer to GONE
 * (remove, compare-and-swap: of two racing frees of one block exactly one
 * wins), and from GONE to a pointer again (insert reuses it). A slot never
 * returns to EMPTY, so a lookup may stop at the first EMPTY slot; probing is
 * also bounded by PROBE_MAX slots, which an insert respects too (when the
 * PROBE_MAX slots after a pointer's hash are all live, huge_alloc fails with
 * ENOMEM: with 2^18 slots that takes tens of thousands of live huge blocks
 * hashing together). No lock means nothing to take around fork().
 *
 * The table (2 MiB of address space, touched sparsely) is mapped on the
 * first insert; a failed map fails that huge_alloc.
 */
#include "malloc.h"

#define TABLE_BITS 18
#define TABLE_SLOTS ((size_t)1 << TABLE_BITS)
#define PROBE_MAX 64
#define SLOT_EMPTY ((uintptr_t)0)
#define SLOT_GONE ((uintptr_t)1)

static _Atomic(_Atomic uintptr_t *) table;

static size_t slot_of(const void *p)
{
	uint64_t h = ((uintptr_t)p >> PC_PAGE_SHIFT) * 0x9e3779b97f4a7c15ULL;
	return (size_t)(h >> (64 - TABLE_BITS));
}

/* The table, mapped on first use; NULL if the OS refused. */
static _Atomic uintptr_t *table_get(void)
{
	/* Acquire: pairs with the release that installs it (zeroed memory). */
	_Atomic uintptr_t *t = pc_load_acquire(&table);
	if (pc_likely(t != NULL))
		return t;
	_Atomic uintptr_t *fresh = os_map(TABLE_SLOTS * sizeof(uintptr_t), PC_PAGE_SIZE);
	if (!fresh)
		return NULL;
	_Atomic uintptr_t *expected = NULL;
	/* Release: publishes the (kernel-zeroed) table; acquire on failure
	 * to read the winner's. */
	if (!atomic_compare_exchange_strong_explicit(&table, &expected, fresh,
						     memory_order_acq_rel, memory_order_acquire)) {
		os_unmap(fresh, TABLE_SLOTS * sizeof(uintptr_t));
		return expected;
	}
	return fresh;
}

bool huge_table_insert(const void *p)
{
	_Atomic uintptr_t *t = table_get();
	if (!t)
		return false;
	size_t i = slot_of(p);
	for (unsigned n = 0; n < PROBE_MAX; n++, i = (i + 1) & (TABLE_SLOTS - 1)) {
		uintptr_t cur = pc_load_relaxed(&t[i]);
		while (cur == SLOT_EMPTY || cur == SLOT_GONE) {
			/* Release: a thread that finds p (and then reads the header)
			 * sees the header written before the insert. */
			if (pc_cas_strong_release(&t[i], &cur, (uintptr_t)p))
				return true;
		}
	}
	return false;
}

/* The slot holding p, or NULL. */
static _Atomic uintptr_t *find(const void *p)
{
	/* Acquire: pairs with table_get's install. */
	_Atomic uintptr_t *t = pc_load_acquire(&table);
	if (!t || !p)
		return NULL;
	size_t i = slot_of(p);
	for (unsigned n = 0; n < PROBE_MAX; n++, i = (i + 1) & (TABLE_SLOTS - 1)) {
		/* Acquire: pairs with the insert's release (the header). */
		uintptr_t cur = pc_load_acquire(&t[i]);
		if (cur == (uintptr_t)p)
			return &t[i];
		if (cur == SLOT_EMPTY)
			return NULL;
	}
	return NULL;
}

bool huge_table_contains(const void *p)
{
	return find(p) != NULL;
}

bool huge_table_remove(const void *p)
{
	_Atomic uintptr_t *slot = find(p);
	uintptr_t expected = (uintptr_t)p;
	/* Relaxed: the winner owns the block by program order from here; a
	 * loser (a double free) only reports. */
	return slot && atomic_compare_exchange_strong_explicit(slot, &expected, SLOT_GONE,
							       memory_order_relaxed, memory_order_relaxed);
}
