/*
 * malloc/huge_cache.c - freed huge mappings kept for reuse, under the same
 * delay as free pages (vm.release_delay_ms), bounded in bytes
 * (vm.huge_cache_kb).
 *
 * A program that cycles blocks of 5-25 MB otherwise maps, faults in and
 * unmaps every one of them. Here a freed mapping (header page included, its
 * pages still resident) goes into one of CACHE_SLOTS slots; a huge malloc
 * takes the best fit: the smallest cached mapping at least as large as it
 * needs, whose unused tail beyond 1/8 of the request is unmapped (split),
 * else the largest smaller one, grown with mremap (its resident pages are
 * kept, only the new tail faults in). A mapping cached longer than the delay
 * is unmapped by the next huge malloc or free, the release thread (through
 * pc_page_release_hook) or pc_trim; all of them go at once on pc_trim and
 * before an allocation fails for lack of memory (malloc_reclaim).
 *
 * Lock-free, so nothing to do around fork(): a slot holds a header pointer;
 * take is an exchange with NULL (the taker owns the mapping), put a
 * compare-and-swap from NULL. slot_size and slot_time are hints written
 * before the put: a scanner may read a stale size, so a taker checks the
 * real size in the header it now owns. A mapping with extra alignment is
 * never cached (its data does not start one page after the mapping).
 */
#include "malloc.h"

#define CACHE_SLOTS 32

static _Atomic(struct pc_huge_header *) slots[CACHE_SLOTS];
static _Atomic size_t slot_size[CACHE_SLOTS];
static _Atomic uint64_t slot_time[CACHE_SLOTS];
static _Atomic size_t cached_bytes;

size_t huge_cache_bytes(void)
{
	return pc_load_relaxed(&cached_bytes);
}

/* Take slot i's mapping, or NULL if another thread took it first. */
static struct pc_huge_header *take_slot(unsigned i)
{
	if (!pc_load_relaxed(&slots[i]))
		return NULL;
	/* Acquire: pairs with the put's release (the header's fields). */
	struct pc_huge_header *h = pc_xchg_acquire(&slots[i], NULL);
	if (h)
		pc_sub_relaxed(&cached_bytes, h->map_size);
	return h;
}

/* Keep the mapping of a freed huge block (header h); false if it does not
 * fit the bound or no slot is free (the caller unmaps it). */
bool huge_cache_put(struct pc_huge_header *h)
{
	size_t bound = (size_t)pc_option(PC_OPT_VM_HUGE_CACHE_KB) << 10;
	if (h->align > PC_PAGE_SIZE || pc_option(PC_OPT_VM_RELEASE_DELAY_MS) == 0)
		return false;
	if (pc_add_relaxed(&cached_bytes, h->map_size) + h->map_size > bound) {
		pc_sub_relaxed(&cached_bytes, h->map_size);
		return false;
	}
	h->magic = 0; /* not a live block while cached */
	for (unsigned i = 0; i < CACHE_SLOTS; i++) {
		if (pc_load_relaxed(&slots[i]))
			continue;
		pc_store_relaxed(&slot_size[i], h->map_size);
		pc_store_relaxed(&slot_time[i], pc_page_clock_ns());
		struct pc_huge_header *expected = NULL;
		/* Release: a taker sees the header written before. */
		if (pc_cas_strong_release(&slots[i], &expected, h))
			return true;
	}
	pc_sub_relaxed(&cached_bytes, h->map_size);
	return false;
}

/* The slot with the best fit for `need` bytes of mapping (see the top), or
 * -1 when the cache looks empty. */
static int best_slot(size_t need)
{
	int best = -1, below = -1;
	size_t best_size = SIZE_MAX, below_size = 0;
	for (unsigned i = 0; i < CACHE_SLOTS; i++) {
		if (!pc_load_relaxed(&slots[i]))
			continue;
		size_t s = pc_load_relaxed(&slot_size[i]);
		if (s >= need && s < best_size) {
			best = (int)i;
			best_size = s;
		} else if (s < need && s > below_size) {
			below = (int)i;
			below_size = s;
		}
	}
	return best >= 0 ? best : below;
}

/* Fit a cached mapping h to exactly `need` bytes: unmap a tail beyond an
 * eighth too many, or grow it with mremap. NULL (h unmapped) on failure. */
static struct pc_huge_header *fit(struct pc_huge_header *h, size_t need)
{
	size_t have = h->map_size;
	if (have < need) {
		struct pc_huge_header *n = os_remap(h, have, need);
		if (!n) {
			os_unmap(h, have);
			return NULL;
		}
		h = n;
		have = need;
	} else if (have - need > need / 8) {
		os_unmap((char *)h + need, have - need);
		have = need;
	}
	h->map_base = h;
	h->map_size = have;
	return h;
}

/* A mapping of at least `need` bytes (page multiple) whose contents are
 * undefined, header not yet written; NULL if the cache has none. */
struct pc_huge_header *huge_cache_take(size_t need)
{
	for (int tries = 0; tries < 4; tries++) {
		int i = best_slot(need);
		if (i < 0)
			return NULL;
		struct pc_huge_header *h = take_slot((unsigned)i);
		if (h)
			return fit(h, need);
	}
	return NULL;
}

/* Unmap what has been cached since before `before` (PC_NS_NEVER: all). */
static size_t expire(uint64_t before)
{
	size_t bytes = 0;
	for (unsigned i = 0; i < CACHE_SLOTS; i++) {
		if (before != PC_NS_NEVER && pc_load_relaxed(&slot_time[i]) >= before)
			continue;
		struct pc_huge_header *h = take_slot(i);
		if (h) {
			bytes += h->map_size;
			os_unmap(h, h->map_size);
		}
	}
	return bytes;
}

/* What has stayed cached longer than the delay goes back. */
size_t huge_cache_expire(void)
{
	if (pc_load_relaxed(&cached_bytes) == 0)
		return 0;
	uint64_t delay = (uint64_t)pc_option(PC_OPT_VM_RELEASE_DELAY_MS) * 1000000u;
	uint64_t now = pc_page_clock_ns();
	return expire(now > delay ? now - delay + 1 : 0);
}

size_t huge_cache_flush(void)
{
	return expire(PC_NS_NEVER);
}
