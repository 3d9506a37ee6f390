/*
 * malloc/huge_cache.c - freed huge mappings kept for reuse, under the same
 * delay as free pages (vm.release_delay_ms), bounded in bytes of address
 * space (vm.huge_cache_kb) and, separately, in resident bytes.
 *
 * A program that cycles blocks of 5-25 MB otherwise maps, faults in and
 * unmaps every one of them. Here a freed mapping (header page included)
 * goes into one of CACHE_SLOTS slots as a range of address space we keep
 * mapped, its pages either still resident or given back (MADV_DONTNEED: the
 * range is kept, a touch faults in a zero page). Its header page lists the
 * runs of pages that may still be resident (the dirty extents,
 * huge_dirty.c); the others read zero, so calloc skips them.
 *
 *  - take (a huge malloc) picks the range whose resident pages it reuses
 *    most (most_resident), else, among wholly released ones, the best fit:
 *    the smallest range at least as large as it needs, else the largest
 *    smaller one. A smaller range is grown with mremap (its pages are kept,
 *    only the new tail faults in). A tail beyond 1/8 of the
 *    request is split off and cached as a range of its own, its pages as
 *    they were: it is not unmapped, so a larger request later finds them
 *    again. When mremap cannot grow the range (it spans two mappings the
 *    kernel keeps apart, or the OS refuses), the range goes back into the
 *    cache and the caller maps a new block.
 *  - put (a huge free, or the tail a shrinking realloc cuts off) first
 *    merges the range with cached neighbours in the address space, resident
 *    or released (the tail split off above, when the block before it comes
 *    back), so splitting does not fragment the cache for good.
 *  - Resident bytes in the cache are bounded by one block per other CPU (the
 *    number of CPUs less one, at least one, times the largest huge block
 *    freed recently; at most the address space bound), checked after each
 *    take: while a thread goes from a free to its next malloc, at most one
 *    thread per other CPU can be doing the same, and more would only add to
 *    the peak RSS of a program with many threads (bench_huge at 16 threads
 *    on 2 CPUs: docs/huge.md). A put may pass the bound by the block it
 *    puts (the block in transit): the next take chooses first, then the
 *    excess goes. Released at the put instead, before the take chose, the
 *    excess was often the very pages the take then faulted in again. So on
 *    one CPU two blocks may stay resident between a free and the next
 *    malloc, and a program that stops allocating huge blocks keeps both
 *    until they expire.
 *    Beyond the bound the oldest resident ranges are released, their
 *    address space kept.
 *    "Recently": the largest size is halved for each release delay that
 *    passes without a free as large (never below the block being freed), so
 *    one big block freed long ago does not keep the bound up.
 *  - A range cached longer than the delay is unmapped by the next huge malloc
 *    or free, the release thread (the hook malloc/init.c adds with
 *    pc_page_release_hook_add) or pc_trim;
 *    all of them go at once on pc_trim and before an allocation fails for
 *    lack of memory (malloc_reclaim), so under `ulimit -v` the address space
 *    is given back.
 *
 * Lock-free, so nothing to do around fork() and safe from a signal handler:
 * a slot holds a header pointer; take is a compare-and-swap to NULL (the
 * taker owns the range); insert claims an empty slot (compare-and-swap from
 * NULL to SLOT_BUSY), writes its hints (slot_size, slot_time,
 * slot_resident), then publishes the range (a release store), so the hints
 * of a slot are always its range's (two inserts racing for a slot cannot
 * mix theirs), and a busy slot is neither empty nor takeable. A
 * scanner may still read stale hints, so whoever takes a range checks the real
 * size, extents and address in the header it now owns (a merge that took
 * a range that turns out not to be adjacent puts it back). The byte counters
 * are relaxed and the bounds checked before the insert, so racing frees may
 * pass a bound by one block each. A mapping with extra alignment is never
 * cached (its data does not start one page after the mapping). The largest
 * recent size and its time are two relaxed words: a racing free may see one
 * updated and not the other, which only moves a heuristic bound once.
 */
#include "malloc.h"

#define CACHE_SLOTS 32

#define SLOT_BUSY ((struct pc_huge_header *)1) /* claimed by an insert */

static _Atomic(struct pc_huge_header *) slots[CACHE_SLOTS];
static _Atomic size_t slot_size[CACHE_SLOTS];
static _Atomic uint64_t slot_time[CACHE_SLOTS];
static _Atomic size_t slot_resident[CACHE_SLOTS];
static _Atomic size_t cached_bytes, resident_bytes;
static _Atomic size_t largest_freed;     /* recently (see the top) */
static _Atomic uint64_t largest_time;    /* page clock when set or halved */

size_t huge_cache_bytes(void)
{
	return pc_load_relaxed(&cached_bytes);
}

size_t huge_cache_resident(void)
{
	return pc_load_relaxed(&resident_bytes);
}

/* Test hooks: the CPU count the bound uses (0 = the machine's), so that a
 * test can exceed the bound whatever machine it runs on; the bound itself
 * (0 = computed), so that a test decides which frees release what. */
_Atomic unsigned pc_huge_cache_test_cpus;
_Atomic size_t pc_huge_cache_test_bound;

/* Resident bytes the cache may hold once a malloc has taken its range: one
 * block per other CPU, at least one (see the top). */
size_t huge_cache_resident_bound(void)
{
	size_t bound = (size_t)pc_option(PC_OPT_VM_HUGE_CACHE_KB) << 10;
	size_t forced = pc_load_relaxed(&pc_huge_cache_test_bound);
	if (forced)
		return forced;
	unsigned cpus = pc_load_relaxed(&pc_huge_cache_test_cpus);
	cpus = cpus ? cpus : os_cpu_count();
	size_t blocks = (size_t)pc_load_relaxed(&largest_freed) * (cpus > 1 ? cpus - 1 : 1);
	return blocks < bound ? blocks : bound;
}

/* Bytes of range h counted resident: its dirty extents and its header
 * page; a range wholly released counts nothing (its one header page is
 * noise beside the bound, and a bound of one block must be met
 * by one resident block however many released ones are cached). */
static size_t resident_of(const struct pc_huge_header *h)
{
	size_t dirty = huge_dirty_bytes(h);
	return dirty ? PC_PAGE_SIZE + dirty : 0;
}

/* Add (sign 1) or take away (-1) a range's bytes from the counters. */
static void count(size_t size, size_t resident, int sign)
{
	pc_add_relaxed(&cached_bytes, sign > 0 ? size : -size); /* unsigned wrap */
	pc_add_relaxed(&resident_bytes, sign > 0 ? resident : -resident);
}

/* A block of `size` bytes was freed at page-clock time now: the largest
 * recent size follows (see the top). */
static void note_freed(size_t size, uint64_t now)
{
	size_t largest = pc_load_relaxed(&largest_freed);
	uint64_t since = pc_load_relaxed(&largest_time);
	uint64_t delay = (uint64_t)pc_option(PC_OPT_VM_RELEASE_DELAY_MS) * 1000000u;
	if (size < largest && delay && now > since && now - since >= delay) {
		uint64_t halvings = (now - since) / delay;
		largest = halvings >= 64 ? 0 : largest >> halvings;
	} else if (size < largest) {
		return; /* the largest is recent: it stays */
	}
	pc_store_relaxed(&largest_freed, PC_MAX(largest, size));
	pc_store_relaxed(&largest_time, now);
}

/* Slot i's range (relaxed: a hint for scanners), NULL if none or busy. */
static struct pc_huge_header *slot_range(unsigned i)
{
	struct pc_huge_header *h = pc_load_relaxed(&slots[i]);
	return h == SLOT_BUSY ? NULL : h;
}

/* Take slot i's range, or NULL if it is empty, busy, or another thread
 * took it first. */
static struct pc_huge_header *take_slot(unsigned i)
{
	/* Acquire: pairs with insert's release (the header's fields). */
	struct pc_huge_header *h = pc_load_acquire(&slots[i]);
	if (!h || h == SLOT_BUSY || !pc_cas_strong_acquire(&slots[i], &h, NULL))
		return NULL;
	count(h->map_size, resident_of(h), -1);
	return h;
}

/*
 * Put an owned range (header fields written) into a free slot, cached at
 * page-clock time t; false if every slot is taken. Once published, another
 * thread may take it and change its header, so its size and resident
 * bytes are read and counted before (a taker's subtraction must not come
 * first).
 */
static bool insert(struct pc_huge_header *h, uint64_t t)
{
	size_t size = h->map_size, resident = resident_of(h);
	h->magic = 0; /* not a live block while cached */
	h->map_base = h;
	for (unsigned i = 0; i < CACHE_SLOTS; i++) {
		struct pc_huge_header *expected = NULL;
		/* Relaxed: the claim publishes nothing; the store below does. */
		if (pc_load_relaxed(&slots[i]) ||
		    !atomic_compare_exchange_strong_explicit(&slots[i], &expected, SLOT_BUSY,
							     memory_order_relaxed, memory_order_relaxed))
			continue;
		pc_store_relaxed(&slot_size[i], size);
		pc_store_relaxed(&slot_time[i], t);
		pc_store_relaxed(&slot_resident[i], resident);
		count(size, resident, 1);
		/* Release: a taker sees the header (and the hints) written before. */
		pc_store_release(&slots[i], h);
		return true;
	}
	return false;
}

/* Insert, or unmap the range when no slot is free. */
static void insert_or_unmap(struct pc_huge_header *h, uint64_t t)
{
	if (!insert(h, t))
		os_unmap(h, h->map_size);
}

/*
 * Join h with the cached ranges right before and after it in the address
 * space, resident or released (their dirty extents are joined too); the
 * joined range keeps the newest time (*t). Returns the joined range's
 * header (the lowest address).
 */
static struct pc_huge_header *merge(struct pc_huge_header *h, uint64_t *t)
{
	for (unsigned i = 0; i < CACHE_SLOTS; i++) {
		char *n = (char *)slot_range(i);
		size_t nsize = pc_load_relaxed(&slot_size[i]);
		if (!n || (n != (char *)h + h->map_size && n + nsize != (char *)h))
			continue;
		uint64_t nt = pc_load_relaxed(&slot_time[i]);
		struct pc_huge_header *o = take_slot(i);
		if (!o)
			continue;
		if ((char *)o == (char *)h + h->map_size) {
			huge_dirty_join(h, o);
			h->map_size += o->map_size;
		} else if ((char *)o + o->map_size == (char *)h) {
			huge_dirty_join(o, h);
			o->map_size += h->map_size;
			h = o;
		} else {
			insert_or_unmap(o, nt);
			continue;
		}
		*t = nt > *t ? nt : *t;
	}
	return h;
}

/* The cached range freed longest ago among those with resident data pages
 * (`resident`) or the wholly released ones, or -1. */
static int oldest(bool resident)
{
	int oldest = -1;
	uint64_t when = PC_NS_NEVER;
	for (unsigned i = 0; i < CACHE_SLOTS; i++) {
		if (!slot_range(i) || (pc_load_relaxed(&slot_resident[i]) != 0) != resident)
			continue;
		uint64_t t = pc_load_relaxed(&slot_time[i]);
		if (t < when) {
			when = t;
			oldest = (int)i;
		}
	}
	return oldest;
}

/* Release pages of the oldest resident ranges, from their ends (the header
 * page stays), until the resident bytes are within the bound plus `slack`:
 * no more than the excess, so a range joined from several blocks keeps the
 * front the next taker gets (fit). The ranges stay cached. */
static void shed_resident(size_t slack)
{
	size_t bound = huge_cache_resident_bound() + slack;
	for (unsigned n = 0; n < CACHE_SLOTS; n++) {
		size_t resident = pc_load_relaxed(&resident_bytes);
		if (resident <= bound)
			return;
		int i = oldest(true);
		if (i < 0)
			return;
		uint64_t t = pc_load_relaxed(&slot_time[i]);
		struct pc_huge_header *h = take_slot((unsigned)i);
		if (!h)
			continue;
		size_t released = huge_dirty_release(h, resident - bound);
		insert_or_unmap(h, t);
		if (released == 0)
			return; /* refused (mlock'ed memory: EINVAL): the next free tries again */
	}
}

/* Room for `size` more bytes under the address-space bound: the oldest
 * wholly released ranges are unmapped for it (a block just freed, its pages
 * resident, is worth more than address space whose pages are gone); false
 * if that is not enough. */
static bool make_room(size_t size, size_t bound)
{
	for (unsigned n = 0; n < CACHE_SLOTS; n++) {
		if (pc_load_relaxed(&cached_bytes) + size <= bound)
			return true;
		int i = oldest(false);
		if (i < 0)
			return false;
		uint64_t t = pc_load_relaxed(&slot_time[i]);
		struct pc_huge_header *h = take_slot((unsigned)i);
		if (h && resident_of(h) != 0)
			insert_or_unmap(h, t); /* the slot was reused meanwhile */
		else if (h)
			os_unmap(h, h->map_size);
	}
	return pc_load_relaxed(&cached_bytes) + size <= bound;
}

/* Keep the mapping of a freed huge block (header h, map_size set, every
 * data page taken as dirty); false (the caller unmaps it) for a block with
 * extra alignment, with a release delay of 0, or when it does not fit the
 * bound even without the released ranges. */
bool huge_cache_put(struct pc_huge_header *h)
{
	size_t bound = (size_t)pc_option(PC_OPT_VM_HUGE_CACHE_KB) << 10;
	if (h->align > PC_PAGE_SIZE || pc_option(PC_OPT_VM_RELEASE_DELAY_MS) == 0)
		return false;
	if (h->map_size > bound || !make_room(h->map_size, bound))
		return false;
	uint64_t t = pc_page_clock_ns();
	size_t size = h->map_size;
	note_freed(size, t);
	huge_dirty_all(h);
	h = merge(h, &t);
	if (!insert(h, t)) {
		os_unmap(h, h->map_size); /* merged ranges included: now ours */
		return true;
	}
	shed_resident(size); /* the block in transit: see the top */
	return true;
}

/* The range a block of `need` bytes reuses the most resident pages of:
 * the most min(resident, need), the smaller range on a tie (less to split
 * off); a smaller range (grown by fit, only if `grow`) ranks a quarter
 * lower, since its mremap takes the kernel's mmap lock for writing and
 * moves page tables. Exactly the ranges best_released passes over
 * qualify: at least an eighth of `need` resident (the header pages left
 * in a range joined from released ones do not count); -1 if none does. */
static int most_resident(size_t need, bool grow)
{
	int best = -1;
	size_t best_reuse = 0, best_size = SIZE_MAX;
	for (unsigned i = 0; i < CACHE_SLOTS; i++) {
		if (!slot_range(i))
			continue;
		size_t s = pc_load_relaxed(&slot_size[i]);
		size_t reuse = PC_MIN(pc_load_relaxed(&slot_resident[i]), need);
		if ((s < need && !grow) || reuse < need / 8)
			continue; /* best_released's (under an eighth), or not to grow */
		if (s < need)
			reuse -= reuse / 4; /* ranks it only: it still qualifies */
		if (best < 0 || reuse > best_reuse || (reuse == best_reuse && s < best_size)) {
			best = (int)i;
			best_reuse = reuse;
			best_size = s;
		}
	}
	return best;
}

/* The best fit for `need` bytes among the ranges most_resident passes
 * over (wholly released, or under an eighth of `need` resident): the
 * smallest at least as large, else (if `grow`) the largest smaller one;
 * -1 if there looks to be none. */
static int best_released(size_t need, bool grow)
{
	int best = -1, below = -1;
	size_t best_size = SIZE_MAX, below_size = 0;
	for (unsigned i = 0; i < CACHE_SLOTS; i++) {
		if (!slot_range(i) || pc_load_relaxed(&slot_resident[i]) >= need / 8)
			continue;
		size_t s = pc_load_relaxed(&slot_size[i]);
		if (s >= need && s < best_size) {
			best = (int)i;
			best_size = s;
		} else if (grow && s < need && s > below_size) {
			below = (int)i;
			below_size = s;
		}
	}
	return best >= 0 ? best : below;
}

/* Where in range h (larger than `need`) a block of `need` bytes reuses the
 * most resident pages: the offset of its header page, at the start of h's
 * largest dirty extent (where a freed block joined to the range below kept
 * its header page). 0, the front, when that run is under an eighth of
 * `need` (a header page left by a join is not worth a split) or the front
 * before it would be (not worth a slot). With vm.huge_thp the block's data
 * stays on a 2 MiB boundary where the range's is (whole huge pages). */
static size_t place(const struct pc_huge_header *h, size_t need)
{
	size_t off = 0, len = 0;
	for (unsigned i = 0; i < h->nr_dirty; i++)
		if (h->dirty[i].len > len) {
			len = h->dirty[i].len;
			off = h->dirty[i].off;
		}
	off = PC_MIN(off, h->map_size - need);
	if (pc_option(PC_OPT_VM_HUGE_THP)) { /* the data, one page after off, down to 2 MiB */
		uintptr_t base = (uintptr_t)h + PC_PAGE_SIZE;
		uintptr_t data = (base + off) & ~(((uintptr_t)2 << 20) - 1);
		off = data >= base ? data - base : 0;
	}
	return len < need / 8 || off < need / 8 ? 0 : off;
}

/* Split off what range or block h has beyond `need` bytes as a range of
 * its own, cached at time t (the time of the range it came from: its pages
 * are no younger), when that is more than an eighth of `limit`; h's new
 * size. */
static size_t split_tail(struct pc_huge_header *h, size_t need, size_t limit, uint64_t t)
{
	size_t have = h->map_size;
	if (have <= need || have - need <= limit / 8)
		return have;
	struct pc_huge_header *tail = (void *)((char *)h + need);
	tail->map_size = have - need;
	tail->align = PC_PAGE_SIZE;
	tail->lent = false;
	huge_dirty_split(h, need, tail);
	insert_or_unmap(tail, t);
	return need;
}

/* Fit a cached range h to `need` bytes: place the block where its pages
 * are resident (the front before it cached again), split off a tail beyond
 * an eighth too many (cached again, its pages as they are), or grow it with
 * mremap (the new pages read zero: the extents stay). NULL when it cannot
 * grow: h is then cached again (cached at time t), so no address space is
 * lost. */
static struct pc_huge_header *fit(struct pc_huge_header *h, size_t need, uint64_t t)
{
	size_t have = h->map_size, front = have > need ? place(h, need) : 0;
	if (front) {
		struct pc_huge_header *block = (void *)((char *)h + front);
		block->map_size = have - front;
		huge_dirty_split(h, front, block);
		h->map_size = front;
		insert_or_unmap(h, t);
		h = block;
		have -= front;
	}
	if (have < need) {
		/* mremap fails on a range that spans two mappings (ranges of
		 * two mmaps joined here, which the kernel did not make one
		 * because their flags or anon_vma differ): EFAULT. */
		struct pc_huge_header *n = os_remap(h, have, need);
		if (!n) {
			insert_or_unmap(h, t);
			return NULL;
		}
		h = n;
		have = need;
	} else {
		h->map_size = have;
		have = split_tail(h, need, need, t);
	}
	h->map_base = h;
	h->map_size = have;
	return h;
}

/*
 * Grow live block h to `total` bytes in place with the cached range that
 * starts where it ends, if that is large enough (realloc: the tail fit split
 * off this very block, or the one a shrinking realloc cached): no system
 * call, the range's pages kept, and no mremap, which cannot grow a block
 * that spans two kernel mappings. What the block does not need beyond an
 * eighth goes back into the cache. false (h unchanged) if there is none.
 */
bool huge_cache_grow(struct pc_huge_header *h, size_t total)
{
	char *next = (char *)h + h->map_size;
	size_t extra = total - h->map_size;
	for (unsigned i = 0; i < CACHE_SLOTS; i++) {
		if ((char *)slot_range(i) != next || pc_load_relaxed(&slot_size[i]) < extra)
			continue;
		uint64_t t = pc_load_relaxed(&slot_time[i]);
		struct pc_huge_header *n = take_slot(i);
		if (!n)
			return false;
		if ((char *)n != next || n->map_size < extra) {
			insert_or_unmap(n, t); /* the slot was reused meanwhile */
			return false;
		}
		h->map_size += split_tail(n, extra, total, t);
		return true;
	}
	return false;
}

/* A mapping of `need` bytes (page multiple) to `need` + need/8, its
 * contents undefined but where its dirty extents say (the header's extent
 * list is valid: calloc reads it; the other header fields are the
 * caller's to write); NULL if the cache has none. When a range cannot be
 * grown, only ranges large enough are tried after it. */
struct pc_huge_header *huge_cache_take(size_t need)
{
	bool grow = true;
	for (int tries = 0; tries < 4; tries++) {
		int i = most_resident(need, grow);
		if (i < 0)
			i = best_released(need, grow);
		if (i < 0)
			return NULL;
		uint64_t t = pc_load_relaxed(&slot_time[i]);
		struct pc_huge_header *h = take_slot((unsigned)i);
		if (!h)
			continue;
		bool growing = h->map_size < need;
		h = fit(h, need, t);
		if (h)
			shed_resident(0); /* the taker has chosen: see the top */
		if (h || !growing)
			return h;
		grow = false; /* fit cached it again */
	}
	return NULL;
}

/* Resident bytes down to the bound, as a take leaves them: what a put let
 * pass it (the block in transit) is released if no take came since. */
void huge_cache_settle(void)
{
	shed_resident(0);
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
