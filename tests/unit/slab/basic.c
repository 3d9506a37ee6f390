/*
 * tests/unit/slab/basic.c - single-threaded white-box tests of the object
 * caches: argument checking, slot geometry and alignment, constructors (run
 * once per object when it is first taken from its slab, never on reuse;
 * here every slot of six slabs is taken, so once per slot), the slab order
 * calculation, shrink giving pages back to the page allocator, destroy with
 * and without live objects, and the SLUB counters (stats.enable) on the
 * exact paths that should count them.
 *
 * The whole run is pinned to the process's first CPU (test_cpu(0), CPU0
 * below), so that os_cpu_current() is CPU0 on every call and every fast path
 * works on cpu[CPU0]: exact counts (LIFO reuse, which
 * slab an object comes from, counters) do not depend on the scheduler.
 * Cross-CPU behaviour is the business of model.c, threads.c and numa.c.
 */
#define _GNU_SOURCE
#include "slab/slab.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned order_for_bytes(size_t n)
{
	unsigned order = 0;
	while ((PC_PAGE_SIZE << order) < n)
		order++;
	return order;
}

/* Free pages the page allocator holds: buddy lists plus every pcp list. */
static size_t free_pages_now(void)
{
	size_t n = 0;
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		n += pc_load_relaxed(&z->free_hint);
		for (unsigned c = 0; c < os_cpu_count(); c++)
			n += (size_t)z->pcp[c].count;
	}
	return n;
}

static uint64_t stat_of(struct pc_cache *s, enum pc_slab_stat k)
{
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	return info.stats[k];
}

static void snap_stats(struct pc_cache *s, uint64_t out[PC_SLAB_STAT_COUNT])
{
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	memcpy(out, info.stats, sizeof(info.stats));
}

/* Counter k moved by exactly `want` since `before`. */
/* The CPU the tests run on: the process's first (unit_helpers.h). */
#define CPU0 test_cpu(0)

#define CHECK_STAT_DELTA(s, before, k, want) \
	CHECK_EQ(stat_of((s), PC_SLAB_STAT_##k) - (before)[PC_SLAB_STAT_##k], (want))

/* ---- argument checking ----------------------------------------------------------- */
TEST(invalid_arguments)
{
	static const struct { size_t size, align; } bad[] = {
		{ 8, 3 }, { 8, 6 }, { 64, 24 }, { 64, 8192 }, { 64, 1u << 20 }, { 0, 0 }, { 0, 8 },
		{ (size_t)8 << 20, 0 }, { SIZE_MAX, 0 },
	};
	for (size_t i = 0; i < PC_ARRAY_SIZE(bad); i++) {
		errno = 0;
		struct pc_cache *s = pc_cache_create("bad", bad[i].size, bad[i].align, NULL);
		CHECK(s == NULL);
		CHECK_EQ(errno, EINVAL);
		if (s)
			pc_cache_destroy(s);
	}
	/* Limits that are fine: alignment of a whole page, 1-byte objects. */
	struct pc_cache *s = pc_cache_create("page-aligned", 1, PC_PAGE_SIZE, NULL);
	CHECK(s != NULL);
	if (s)
		CHECK_EQ(pc_cache_destroy(s), 0);
	/* The largest object: half of the largest buddy block (2 MiB). */
	size_t biggest = (PC_PAGE_SIZE << PC_MAX_ORDER) / 2;
	errno = 0;
	CHECK(pc_cache_create("too-big", biggest + 1, 0, NULL) == NULL);
	CHECK_EQ(errno, EINVAL);
	s = pc_cache_create("biggest", biggest, 0, NULL);
	CHECK(s != NULL);
	if (s) {
		void *a = pc_cache_alloc(s), *b = pc_cache_alloc(s);
		CHECK(a && b && a != b);
		if (a && b) {
			CHECK_EQ(pc_slab_of(a)->order, PC_MAX_ORDER - 1);
			memset(a, 1, biggest);
			memset(b, 2, biggest);
			CHECK(((unsigned char *)a)[biggest - 1] == 1);
			pc_cache_free(s, a);
			pc_cache_free(s, b);
		}
		CHECK_EQ(pc_cache_check(s), 0);
		CHECK_EQ(pc_cache_destroy(s), 0);
	}
	/* NULL name is allowed. */
	s = pc_cache_create(NULL, 16, 0, NULL);
	CHECK(s != NULL);
	if (s)
		CHECK_EQ(pc_cache_destroy(s), 0);
}

/* ---- geometry and alignment -------------------------------------------------------- */
static void fill(void *p, size_t n, uint8_t seed)
{
	uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seed + i * 7);
}

static bool filled(const void *p, size_t n, uint8_t seed)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i] != (uint8_t)(seed + i * 7))
			return false;
	return true;
}

TEST(alignment)
{
	static const size_t aligns[] = { 0, 8, 16, 64, 512, 4096 };
	static const size_t sizes[] = { 1, 8, 24, 100, 1000, 5000 };
	for (size_t a = 0; a < PC_ARRAY_SIZE(aligns); a++) {
		for (size_t z = 0; z < PC_ARRAY_SIZE(sizes); z++) {
			size_t align = aligns[a], size = sizes[z];
			size_t want = align ? align : size >= 16 ? 16 : 8;
			struct pc_cache *s = pc_cache_create("align", size, align, NULL);
			REQUIRE(s != NULL);
			struct pc_cache_info info;
			pc_cache_info(s, &info);
			CHECK_EQ(info.object_size, size);
			CHECK(info.size >= size && info.size >= sizeof(void *));
			CHECK_EQ(info.size % want, 0);
			CHECK(info.objects_per_slab >= 1);
			CHECK(info.objects_per_slab * info.size <= PC_PAGE_SIZE << info.order);
			size_t n = 2 * (size_t)info.objects_per_slab + 3;
			void **objs = calloc(n, sizeof(void *));
			REQUIRE(objs);
			bool aligned = true, owned = true, kept = true;
			for (size_t i = 0; i < n; i++) {
				objs[i] = pc_cache_alloc(s);
				REQUIRE(objs[i] != NULL);
				aligned &= ((uintptr_t)objs[i] % want) == 0;
				owned &= pc_slab_cache_of(objs[i]) == s;
				struct pc_page *slab = pc_slab_of(objs[i]);
				owned &= slab != NULL && slab->order == info.order;
				if (slab) {
					char *base = pc_page_address(slab);
					size_t off = (size_t)((char *)objs[i] - base);
					owned &= off % info.size == 0 &&
						 off + size <= PC_PAGE_SIZE << slab->order;
				}
				fill(objs[i], size, (uint8_t)i);
			}
			for (size_t i = 0; i < n; i++)
				kept &= filled(objs[i], size, (uint8_t)i);
			CHECK(aligned);
			CHECK(owned);
			CHECK(kept); /* no two objects overlap */
			CHECK_EQ(pc_cache_check(s), (long)n);
			for (size_t i = 0; i < n; i++)
				pc_cache_free(s, objs[i]);
			CHECK_EQ(pc_cache_check(s), 0);
			CHECK_EQ(pc_cache_destroy(s), 0);
			free(objs);
		}
	}
}

TEST(slab_of_foreign_pointers)
{
	int local = 0;
	void *heap = malloc(64);
	CHECK(pc_slab_cache_of(&local) == NULL);
	CHECK(pc_slab_cache_of(heap) == NULL);
	CHECK(pc_slab_cache_of(NULL) == NULL);
	CHECK(pc_slab_of(&local) == NULL);
	/* A page from the page allocator that is not a slab. */
	void *pg = pc_alloc_pages(0);
	REQUIRE(pg);
	CHECK(pc_slab_cache_of(pg) == NULL);
	pc_free_pages(pg, 0);
	free(heap);
	/* pc_cache_free(s, NULL) does nothing. */
	struct pc_cache *s = pc_cache_create("null-free", 32, 0, NULL);
	REQUIRE(s);
	pc_cache_free(s, NULL);
	CHECK_EQ(pc_cache_check(s), 0);
	CHECK_EQ(pc_cache_destroy(s), 0);
}

/* Freeing an object into the wrong cache is fatal (in a child). */
TEST(free_to_wrong_cache_aborts)
{
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct pc_cache *a = pc_cache_create("a", 64, 0, NULL);
		struct pc_cache *b = pc_cache_create("b", 64, 0, NULL);
		if (!a || !b)
			_exit(2);
		void *p = pc_cache_alloc(a);
		pc_cache_free(b, p);
		_exit(0); /* not reached if the error is caught */
	}
	int status;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
}

/* ---- constructors -------------------------------------------------------------------- */
#define CANARY 0x5ca1ab1e0ddba11ULL
struct ctor_obj {
	uint64_t canary;
	uint64_t serial; /* ctor call number */
	char user[40];   /* the user scribbles here */
};
static _Atomic uint64_t ctor_calls;

static void ctor(void *p)
{
	struct ctor_obj *o = p;
	o->canary = CANARY;
	o->serial = pc_add_relaxed(&ctor_calls, 1) + 1;
	memset(o->user, 0, sizeof(o->user));
}

static uint64_t small_ctor_calls;
static void small_ctor(void *p)
{
	*(uint64_t *)p = CANARY;
	small_ctor_calls++;
}

TEST(constructor)
{
	if (!pin_cpu0_or_skip()) /* exact slab usage needs one CPU slab */
		return;
	/* Keep every empty slab, so reused objects come from the slabs that
	 * were constructed once. */
	set_opt(PC_OPT_SLUB_MIN_PARTIAL, 64);
	struct pc_cache *s = pc_cache_create("ctor", sizeof(struct ctor_obj), 0, ctor);
	REQUIRE(s);
	CHECK(s->offset >= sizeof(struct ctor_obj)); /* free pointer after the object */
	CHECK(s->size >= s->offset + sizeof(void *));
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	CHECK_EQ(info.min_partial, 64);
	size_t n = 6 * (size_t)info.objects_per_slab; /* every slot of 6 slabs */
	struct ctor_obj **objs = calloc(n, sizeof(*objs));
	uint64_t *serial = calloc(n, sizeof(*serial));
	REQUIRE(objs && serial);

	CHECK_EQ(pc_load_relaxed(&ctor_calls), 0);
	bool canaries = true;
	for (size_t i = 0; i < n; i++) {
		objs[i] = pc_cache_alloc(s);
		REQUIRE(objs[i]);
		canaries &= objs[i]->canary == CANARY;
		serial[i] = objs[i]->serial;
		memset(objs[i]->user, 0xee, sizeof(objs[i]->user));
	}
	CHECK(canaries);
	pc_cache_info(s, &info);
	/* Once per object of every slab made, no more. */
	CHECK_EQ(pc_load_relaxed(&ctor_calls), info.total_objects);
	CHECK_EQ(info.total_objects, info.slabs * (long)info.objects_per_slab);
	uint64_t made = pc_load_relaxed(&ctor_calls);

	/* Free everything (in a scrambled order) and take it all again: no
	 * constructor call, every object keeps its canary and serial. */
	for (size_t i = 0; i < n; i++)
		pc_cache_free(s, objs[(i * 7919) % n]);
	CHECK_EQ(pc_cache_check(s), 0);
	uint64_t *by_addr_serial = serial; /* serial[i] belongs to old objs[i] */
	struct ctor_obj **old = malloc(n * sizeof(*old));
	REQUIRE(old);
	memcpy(old, objs, n * sizeof(*old));
	bool same_serial = true, all_known = true;
	canaries = true;
	for (size_t i = 0; i < n; i++) {
		objs[i] = pc_cache_alloc(s);
		REQUIRE(objs[i]);
		canaries &= objs[i]->canary == CANARY;
		size_t j;
		for (j = 0; j < n && old[j] != objs[i]; j++)
			;
		if (j == n)
			all_known = false;
		else
			same_serial &= objs[i]->serial == by_addr_serial[j];
	}
	CHECK(canaries);
	CHECK(all_known); /* all from the same slabs */
	CHECK(same_serial);
	CHECK_EQ(pc_load_relaxed(&ctor_calls), made);
	CHECK_EQ(pc_cache_check(s), (long)n);

	/* After a shrink the slabs are new and constructed again. */
	for (size_t i = 0; i < n; i++)
		pc_cache_free(s, objs[i]);
	CHECK(pc_cache_shrink(s) > 0);
	pc_cache_info(s, &info);
	CHECK_EQ(info.slabs, 0);
	objs[0] = pc_cache_alloc(s);
	REQUIRE(objs[0]);
	CHECK(objs[0]->canary == CANARY);
	CHECK(objs[0]->serial > made);
	pc_cache_info(s, &info);
	CHECK_EQ(pc_load_relaxed(&ctor_calls), made + (uint64_t)info.total_objects);
	pc_cache_free(s, objs[0]);
	CHECK_EQ(pc_cache_destroy(s), 0);

	/* An 8-byte object with a constructor: the canary is the whole object
	 * and must survive a free (the free pointer lives past it). */
	struct pc_cache *t = pc_cache_create("ctor8", 8, 0, small_ctor);
	REQUIRE(t);
	CHECK(t->offset >= 8);
	uint64_t *p = pc_cache_alloc(t);
	REQUIRE(p);
	CHECK_EQ(*p, CANARY);
	uint64_t calls = small_ctor_calls;
	pc_cache_free(t, p); /* fast path: onto the CPU freelist */
	CHECK_EQ(*p, CANARY);
	uint64_t *q = pc_cache_alloc(t);
	CHECK(q == p); /* LIFO on the CPU freelist when the CPU does not change */
	CHECK_EQ(*q, CANARY);
	CHECK_EQ(small_ctor_calls, calls);
	pc_cache_free(t, q);
	CHECK_EQ(pc_cache_destroy(t), 0);

	/* A constructor cache with a big alignment. */
	struct pc_cache *u = pc_cache_create("ctor-a64", 8, 64, small_ctor);
	REQUIRE(u);
	CHECK_EQ(u->size % 64, 0);
	p = pc_cache_alloc(u);
	REQUIRE(p);
	CHECK_EQ((uintptr_t)p % 64, 0);
	CHECK_EQ(*p, CANARY);
	pc_cache_free(u, p);
	CHECK_EQ(*p, CANARY);
	CHECK_EQ(pc_cache_destroy(u), 0);

	set_opt(PC_OPT_SLUB_MIN_PARTIAL, 5);
	free(old);
	free(objs);
	free(serial);
}

/* ---- order calculation ------------------------------------------------------------------ */
static void check_order_for(size_t size, long max_order_opt, long min_objects_opt, unsigned *order_out)
{
	unsigned objects = 0;
	unsigned order = pc_slab_calculate_order(size, &objects);
	unsigned max_order = max_order_opt >= 0 ? (unsigned)max_order_opt : 3; /* 2 CPUs */
	size_t slab = PC_PAGE_SIZE << order;
	*order_out = order;
	bool ok = true;
	/* Never above max_order unless one object needs more; then the
	 * smallest order holding one object. */
	if (order > max_order)
		ok &= order == order_for_bytes(size) && (PC_PAGE_SIZE << max_order) < size;
	ok &= objects >= 1;
	ok &= (size_t)objects * size <= slab;
	ok &= objects == PC_MIN(slab / size, (size_t)0xffffff);
	ok &= slab - (size_t)objects * size <= slab / 2;
	/* At least min_objects per slab when max_order allows that many. */
	size_t min_objects = min_objects_opt > 0 ? (size_t)min_objects_opt : 12;
	size_t fit = (PC_PAGE_SIZE << max_order) / size;
	ok &= objects >= PC_MIN(min_objects, PC_MAX(fit, (size_t)1));
	if (!ok) {
		fprintf(stderr, "size %zu max_order %ld min_objects %ld: order %u objects %u\n",
			size, max_order_opt, min_objects_opt, order, objects);
		CHECK(ok);
	}
}

TEST(order_calculation)
{
	size_t sizes[256];
	size_t nsizes = 0;
	for (size_t z = 8; z <= 32768; z *= 2)
		sizes[nsizes++] = z;
	for (size_t z = 9; z <= 32768 && nsizes < PC_ARRAY_SIZE(sizes); z = z * 5 / 4 + 3)
		sizes[nsizes++] = z | 1; /* odd sizes, spread geometrically */
	static const size_t extra[] = { 24, 40, 96, 100, 192, 1000, 1025, 2049, 3000, 4095, 4097,
					 5000, 8191, 8193, 9000, 16385, 20000, 32767 };
	for (size_t i = 0; i < PC_ARRAY_SIZE(extra); i++)
		sizes[nsizes++] = extra[i];

	static const long max_orders[] = { -1, 0, 1, 2, 3, 4, 5, 7, 10 };
	static const long min_objs[] = { 1, 2, 4, 12, 16, 64, 256, 1024 }; /* increasing */
	for (size_t m = 0; m < PC_ARRAY_SIZE(max_orders); m++) {
		set_opt(PC_OPT_SLUB_MAX_ORDER, max_orders[m]);
		for (size_t i = 0; i < nsizes; i++) {
			unsigned prev = 0, order, o12 = 0, odef;
			for (size_t k = 0; k < PC_ARRAY_SIZE(min_objs); k++) {
				set_opt(PC_OPT_SLUB_MIN_OBJECTS, min_objs[k]);
				check_order_for(sizes[i], max_orders[m], min_objs[k], &order);
				/* more objects wanted never gives a smaller slab */
				if (order < prev) {
					fprintf(stderr, "size %zu max_order %ld: min_objects %ld gives order %u < %u\n",
						sizes[i], max_orders[m], min_objs[k], order, prev);
					CHECK(order >= prev);
				}
				prev = order;
				if (min_objs[k] == 12)
					o12 = order;
			}
			/* the default on 2 CPUs is 4 * (fls(2) + 1) = 12 */
			set_opt(PC_OPT_SLUB_MIN_OBJECTS, -1);
			check_order_for(sizes[i], max_orders[m], -1, &odef);
			CHECK_EQ(odef, o12);
		}
	}
	/* Known values with the defaults on 2 CPUs (min_objects 12, max_order 3). */
	set_opt(PC_OPT_SLUB_MAX_ORDER, -1);
	set_opt(PC_OPT_SLUB_MIN_OBJECTS, -1);
	unsigned objects;
	CHECK_EQ(pc_slab_calculate_order(8, &objects), 0);
	CHECK_EQ(objects, 512);
	CHECK_EQ(pc_slab_calculate_order(256, &objects), 0);
	CHECK_EQ(objects, 16);
	CHECK_EQ(pc_slab_calculate_order(1024, &objects), 2); /* 12 objects need 3 pages */
	CHECK_EQ(objects, 16);
	CHECK_EQ(pc_slab_calculate_order(4096, &objects), 3);
	CHECK_EQ(objects, 8);
	CHECK_EQ(pc_slab_calculate_order(32768, &objects), 3);
	CHECK_EQ(objects, 1);
	/* max_order 4: bigger objects may use 16 pages, never more. */
	set_opt(PC_OPT_SLUB_MAX_ORDER, 4);
	for (size_t z = 8; z <= 65536; z = z * 3 / 2 + 1) {
		unsigned o = pc_slab_calculate_order(z, &objects);
		CHECK(o <= 4);
	}
	CHECK_EQ(pc_slab_calculate_order(32768, &objects), 4);
	CHECK_EQ(objects, 2);
	/* Above max_order only when one object needs it. */
	set_opt(PC_OPT_SLUB_MAX_ORDER, 0);
	CHECK_EQ(pc_slab_calculate_order(9000, &objects), 2);
	CHECK_EQ(objects, 1);
	CHECK_EQ(pc_slab_calculate_order(4096, &objects), 0);
	CHECK_EQ(objects, 1);

	/* A cache follows the tunable at run time. */
	set_opt(PC_OPT_SLUB_MAX_ORDER, -1);
	struct pc_cache *s = pc_cache_create("order", 1000, 0, NULL);
	REQUIRE(s);
	struct pc_cache_info info;
	for (long mo = 0; mo <= 4; mo++) {
		set_opt(PC_OPT_SLUB_MAX_ORDER, mo);
		unsigned want = pc_slab_calculate_order(s->size, &objects);
		pc_cache_info(s, &info);
		CHECK_EQ(info.order, want);
		CHECK_EQ(info.objects_per_slab, objects);
		void *p = pc_cache_alloc(s);
		REQUIRE(p);
		CHECK_EQ(pc_slab_of(p)->order, want); /* a new slab: nothing cached */
		pc_cache_free(s, p);
		pc_cache_shrink(s);
		pc_cache_info(s, &info);
		CHECK_EQ(info.slabs, 0);
	}
	CHECK_EQ(pc_cache_destroy(s), 0);
	set_opt(PC_OPT_SLUB_MAX_ORDER, -1);
}

/* ---- shrink ------------------------------------------------------------------------------ */
TEST(shrink_returns_pages)
{
	if (!pin_cpu0_or_skip()) /* exact slab usage needs one CPU slab */
		return;
	struct pc_cache *s = pc_cache_create("shrink", 256, 0, NULL);
	REQUIRE(s);
	size_t n = 40000; /* 10 MiB */
	void **objs = malloc(n * sizeof(void *));
	REQUIRE(objs);
	for (size_t i = 0; i < n; i++) {
		objs[i] = pc_cache_alloc(s);
		REQUIRE(objs[i]);
	}
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	long slab_pages = info.slabs << info.order;
	CHECK(slab_pages >= (long)(n * 256 / PC_PAGE_SIZE));
	CHECK_EQ(info.active_objects, (long)n);
	size_t before = free_pages_now();
	for (size_t i = 0; i < n; i++)
		pc_cache_free(s, objs[(i * 15485863u) % n]); /* scattered */
	CHECK_EQ(pc_cache_check(s), 0);
	size_t freed = pc_cache_shrink(s);
	CHECK(freed > 0);
	pc_cache_info(s, &info);
	CHECK_EQ(info.slabs, 0);
	CHECK_EQ(info.total_objects, 0);
	CHECK_EQ(info.active_objects, 0);
	CHECK_EQ(info.partial_slabs, 0);
	CHECK_EQ(info.cpu_slabs, 0);
	size_t after = free_pages_now();
	CHECK_EQ((long)(after - before), slab_pages);
	CHECK(pc_page_check());
	/* A second shrink has nothing to do. */
	CHECK_EQ(pc_cache_shrink(s), 0);
	CHECK_EQ(pc_cache_destroy(s), 0);
	free(objs);
}

/* Empty slabs beyond min_partial go back while freeing (no shrink). */
TEST(empty_slabs_beyond_min_partial)
{
	if (!pin_cpu0_or_skip())
		return;
	set_opt(PC_OPT_SLUB_MIN_PARTIAL, 2);
	set_opt(PC_OPT_SLUB_MAX_PARTIAL, 2);
	struct pc_cache *s = pc_cache_create("minpartial", 512, 0, NULL);
	REQUIRE(s);
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	CHECK_EQ(info.min_partial, 2);
	size_t per = info.objects_per_slab, n = per * 20;
	void **objs = malloc(n * sizeof(void *));
	REQUIRE(objs);
	for (size_t i = 0; i < n; i++)
		REQUIRE((objs[i] = pc_cache_alloc(s)) != NULL);
	pc_cache_info(s, &info);
	CHECK_EQ(info.slabs, 20);
	for (size_t i = 0; i < n; i++)
		pc_cache_free(s, objs[i]);
	CHECK_EQ(pc_cache_check(s), 0);
	pc_cache_info(s, &info);
	/* Left: the CPU slab, the CPU partial list (cpu_partial slabs at most)
	 * and min_partial empty slabs on the node list. */
	CHECK(info.partial_slabs <= 2);
	CHECK(info.slabs <= 1 + (long)info.cpu_partial + 2);
	CHECK_EQ(info.active_objects, 0); /* exact: CPU-held free objects are not active */
	pc_cache_shrink(s);
	pc_cache_info(s, &info);
	CHECK_EQ(info.slabs, 0);
	CHECK_EQ(pc_cache_destroy(s), 0);
	set_opt(PC_OPT_SLUB_MIN_PARTIAL, 5);
	set_opt(PC_OPT_SLUB_MAX_PARTIAL, -1);
	free(objs);
}

/* ---- destroy --------------------------------------------------------------------------------- */
TEST(destroy)
{
	struct pc_cache *s = pc_cache_create("empty", 64, 0, NULL);
	REQUIRE(s);
	CHECK_EQ(pc_cache_destroy(s), 0);

	s = pc_cache_create("used-then-freed", 64, 0, NULL);
	REQUIRE(s);
	void *p[100];
	for (int i = 0; i < 100; i++)
		REQUIRE((p[i] = pc_cache_alloc(s)) != NULL);
	for (int i = 0; i < 100; i++)
		pc_cache_free(s, p[i]);
	CHECK_EQ(pc_cache_destroy(s), 0);

	/* Live objects: destroy reports them and keeps the cache usable. */
	s = pc_cache_create("leaky", 64, 0, NULL);
	REQUIRE(s);
	for (int i = 0; i < 100; i++)
		REQUIRE((p[i] = pc_cache_alloc(s)) != NULL);
	for (int i = 10; i < 100; i++)
		pc_cache_free(s, p[i]);
	fprintf(stderr, "(a message about 10 objects still allocated is expected)\n");
	size_t left = pc_cache_destroy(s);
	CHECK(left >= 10);
	CHECK_EQ(left, 10); /* after the shrink, exactly the live objects */
	CHECK_EQ(pc_cache_check(s), 10);
	void *q = pc_cache_alloc(s);
	CHECK(q != NULL);
	CHECK(pc_slab_cache_of(q) == s);
	pc_cache_free(s, q);
	for (int i = 0; i < 10; i++)
		pc_cache_free(s, p[i]);
	CHECK_EQ(pc_cache_destroy(s), 0);

	/* Objects spread over many slabs. */
	s = pc_cache_create("leaky-big", 3000, 0, NULL);
	REQUIRE(s);
	void *big[200];
	for (int i = 0; i < 200; i++)
		REQUIRE((big[i] = pc_cache_alloc(s)) != NULL);
	for (int i = 0; i < 200; i++)
		if (i % 7)
			pc_cache_free(s, big[i]);
	left = pc_cache_destroy(s);
	CHECK_EQ(left, 29); /* 0, 7, ..., 196 */
	for (int i = 0; i < 200; i += 7)
		pc_cache_free(s, big[i]);
	CHECK_EQ(pc_cache_destroy(s), 0);
}

static unsigned long registry_entries;
static void count_lock(struct pc_lock *l, void *arg)
{
	(void)arg;
	if (++registry_entries > 100000) { /* a cycle */
		fprintf(stderr, "lock registry walk does not end (cycle)\n");
		_exit(3);
	}
	(void)pc_load_relaxed(&l->stats->acquisitions); /* a dangling entry faults here */
}

/*
 * The list_locks of a cache are registered with the lock layer, whose
 * registry lives as long as the process. After a cache is destroyed the
 * registry must still be walkable, and creating caches again must not
 * corrupt it. Run in a child: a broken registry faults, aborts or loops.
 */
TEST(destroy_keeps_lock_registry_sane)
{
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		alarm(20);
		for (int round = 0; round < 3; round++) {
			struct pc_cache *s = pc_cache_create("reg", 128, 0, NULL);
			if (!s)
				_exit(2);
			void *p = pc_cache_alloc(s);
			pc_cache_free(s, p);
			if (pc_cache_destroy(s) != 0)
				_exit(2);
			registry_entries = 0;
			pc_lock_foreach(count_lock, NULL);
		}
		_exit(0);
	}
	int status;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		fprintf(stderr, "child: %s %d\n", WIFSIGNALED(status) ? "signal" : "exit",
			WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- statistics ---------------------------------------------------------------------------- */
TEST(stats_fast_paths)
{
	if (!pin_cpu0_or_skip())
		return;
	set_opt(PC_OPT_STATS_ENABLE, 1);
	struct pc_cache *s = pc_cache_create("stats-fast", 64, 0, NULL);
	REQUIRE(s);
	uint64_t b[PC_SLAB_STAT_COUNT];
	snap_stats(s, b);
	for (int k = 0; k < PC_SLAB_STAT_COUNT; k++)
		CHECK_EQ(b[k], 0);

	/* The first allocation: slow path, a new slab. */
	void *first = pc_cache_alloc(s);
	REQUIRE(first);
	CHECK_STAT_DELTA(s, b, slab_alloc, 1);
	CHECK_STAT_DELTA(s, b, alloc_slowpath, 1);
	CHECK_STAT_DELTA(s, b, alloc_fastpath, 0);
	CHECK_EQ(pc_load_relaxed(&s->cpu[CPU0].slab), pc_slab_of(first));

	/* Same CPU alloc + free: the CPU freelist both ways. */
	snap_stats(s, b);
	for (int i = 0; i < 1000; i++) {
		void *p = pc_cache_alloc(s);
		REQUIRE(p);
		pc_cache_free(s, p);
	}
	CHECK_STAT_DELTA(s, b, alloc_fastpath, 1000);
	CHECK_STAT_DELTA(s, b, free_fastpath, 1000);
	CHECK_STAT_DELTA(s, b, alloc_slowpath, 0);
	CHECK_STAT_DELTA(s, b, free_slowpath, 0);
	CHECK_STAT_DELTA(s, b, slab_alloc, 0);
	CHECK_STAT_DELTA(s, b, cmpxchg_cpu_fail, 0);
	pc_cache_free(s, first);

	/* Off: nothing moves. */
	set_opt(PC_OPT_STATS_ENABLE, 0);
	snap_stats(s, b);
	void *objs[300];
	for (int r = 0; r < 3; r++) {
		for (int i = 0; i < 300; i++)
			REQUIRE((objs[i] = pc_cache_alloc(s)) != NULL);
		for (int i = 0; i < 300; i++)
			pc_cache_free(s, objs[(i * 7) % 300]);
	}
	pc_cache_shrink(s);
	uint64_t a[PC_SLAB_STAT_COUNT];
	snap_stats(s, a);
	for (int k = 0; k < PC_SLAB_STAT_COUNT; k++)
		if (a[k] != b[k]) {
			fprintf(stderr, "stat %s moved with stats.enable=0\n", pc_slab_stat_names[k]);
			CHECK(a[k] == b[k]);
		}
	CHECK_EQ(pc_cache_destroy(s), 0);
}

/*
 * Three slabs filled in turn on CPU0: A and B retire full, C is the CPU slab
 * with an empty CPU freelist. Frees into A and B re-freeze them onto CPU0's
 * partial list (or, with cpu_partial 0, list them on the node), and the next
 * allocations take them back from there.
 */
struct three {
	struct pc_cache *s;
	unsigned per;
	void **objs; /* 3 * per */
	struct pc_page *slab[3];
};

static void fill_three(struct three *t, const char *name)
{
	t->s = pc_cache_create(name, 128, 0, NULL);
	REQUIRE(t->s);
	struct pc_cache_info info;
	pc_cache_info(t->s, &info);
	t->per = info.objects_per_slab;
	REQUIRE(t->per >= 4);
	t->objs = malloc(3 * t->per * sizeof(void *));
	REQUIRE(t->objs);
	for (unsigned i = 0; i < 3 * t->per; i++)
		REQUIRE((t->objs[i] = pc_cache_alloc(t->s)) != NULL);
	for (int k = 0; k < 3; k++) {
		t->slab[k] = pc_slab_of(t->objs[k * t->per]);
		for (unsigned i = 0; i < t->per; i++)
			CHECK(pc_slab_of(t->objs[k * t->per + i]) == t->slab[k]);
	}
	CHECK(t->slab[0] != t->slab[1] && t->slab[1] != t->slab[2]);
	CHECK_EQ(pc_load_relaxed(&t->s->cpu[CPU0].slab), t->slab[2]);
	CHECK(pc_load_relaxed(&t->s->cpu[CPU0].fl.ptr) == NULL);
	CHECK_EQ(pc_cache_check(t->s), 3 * (long)t->per);
}

static void free_three(struct three *t)
{
	for (unsigned i = 0; i < 3 * t->per; i++)
		if (t->objs[i])
			pc_cache_free(t->s, t->objs[i]);
	CHECK_EQ(pc_cache_check(t->s), 0);
	CHECK_EQ(pc_cache_destroy(t->s), 0);
	free(t->objs);
}

TEST(stats_slow_paths_cpu_partial)
{
	if (!pin_cpu0_or_skip())
		return;
	set_opt(PC_OPT_STATS_ENABLE, 1);
	set_opt(PC_OPT_SLUB_CPU_PARTIAL, 30);
	struct three t;
	fill_three(&t, "stats-cpu-partial");
	struct pc_cache *s = t.s;
	unsigned per = t.per;
	CHECK_EQ(stat_of(s, PC_SLAB_STAT_slab_alloc), 3);
	CHECK_EQ(stat_of(s, PC_SLAB_STAT_alloc_slowpath), 3);
	CHECK_EQ(stat_of(s, PC_SLAB_STAT_alloc_fastpath), 3 * (per - 1));
	CHECK_EQ(stat_of(s, PC_SLAB_STAT_deactivate_full), 2);

	uint64_t b[PC_SLAB_STAT_COUNT];
	snap_stats(s, b);
	/* A free into full slab A: slow path, remote (A is not the CPU slab),
	 * A frozen onto CPU0's partial list. */
	pc_cache_free(s, t.objs[0]);
	t.objs[0] = NULL;
	CHECK_STAT_DELTA(s, b, free_slowpath, 1);
	CHECK_STAT_DELTA(s, b, free_remote, 1);
	CHECK_STAT_DELTA(s, b, free_frozen, 0);
	CHECK_STAT_DELTA(s, b, cpu_partial_free, 1);
	CHECK_STAT_DELTA(s, b, free_add_partial, 0);
	CHECK_STAT_DELTA(s, b, free_fastpath, 0);
	CHECK(s->cpu[CPU0].partial == t.slab[0]);
	CHECK_EQ(s->cpu[CPU0].nr_partial, 1);
	CHECK(PC_SLAB_FROZEN(pc_load_relaxed(&slab_word(t.slab[0])->word)));
	/* A second free into A: A is frozen now. */
	snap_stats(s, b);
	pc_cache_free(s, t.objs[1]);
	t.objs[1] = NULL;
	CHECK_STAT_DELTA(s, b, free_slowpath, 1);
	CHECK_STAT_DELTA(s, b, free_frozen, 1);
	CHECK_STAT_DELTA(s, b, cpu_partial_free, 0);
	/* B too. */
	snap_stats(s, b);
	pc_cache_free(s, t.objs[per]);
	t.objs[per] = NULL;
	CHECK_STAT_DELTA(s, b, cpu_partial_free, 1);
	CHECK_STAT_DELTA(s, b, cpu_partial_drain, 0);
	CHECK_EQ(s->cpu[CPU0].nr_partial, 2);
	/* An object of the CPU slab C: fast path. */
	snap_stats(s, b);
	pc_cache_free(s, t.objs[2 * per]);
	t.objs[2 * per] = NULL;
	CHECK_STAT_DELTA(s, b, free_fastpath, 1);
	CHECK_STAT_DELTA(s, b, free_slowpath, 0);
	CHECK_EQ(pc_cache_check(s), 3 * (long)per - 4);

	/* Allocations: C's object (fast), then B (LIFO), then A. */
	snap_stats(s, b);
	void *x = pc_cache_alloc(s);
	CHECK(pc_slab_of(x) == t.slab[2]);
	CHECK_STAT_DELTA(s, b, alloc_fastpath, 1);
	void *y = pc_cache_alloc(s);
	CHECK(pc_slab_of(y) == t.slab[1]);
	CHECK_STAT_DELTA(s, b, alloc_slowpath, 1);
	CHECK_STAT_DELTA(s, b, cpu_partial_alloc, 1);
	CHECK_STAT_DELTA(s, b, deactivate_full, 1);
	CHECK_STAT_DELTA(s, b, slab_alloc, 0);
	void *z = pc_cache_alloc(s);
	CHECK(pc_slab_of(z) == t.slab[0]);
	void *z2 = pc_cache_alloc(s);
	CHECK(pc_slab_of(z2) == t.slab[0]);
	CHECK_STAT_DELTA(s, b, cpu_partial_alloc, 2);
	CHECK_STAT_DELTA(s, b, alloc_fastpath, 2);
	CHECK_STAT_DELTA(s, b, alloc_from_partial, 0);
	CHECK_STAT_DELTA(s, b, slab_alloc, 0);
	CHECK_EQ(s->cpu[CPU0].nr_partial, 0);
	CHECK_EQ(pc_cache_check(s), 3 * (long)per);
	t.objs[0] = x; /* any slot will do for free_three */
	t.objs[1] = y;
	t.objs[per] = z;
	t.objs[2 * per] = z2;

	/* Overflowing the CPU partial list drains it to the node. */
	set_opt(PC_OPT_SLUB_CPU_PARTIAL, 1);
	snap_stats(s, b);
	/* Full slabs now: A (CPU slab, empty freelist), B, C. Free into B and C. */
	for (unsigned i = 0; i < 3 * per; i++) {
		struct pc_page *sl = pc_slab_of(t.objs[i]);
		if (sl != t.slab[0] && (i % per) == 3) {
			pc_cache_free(s, t.objs[i]);
			t.objs[i] = NULL;
		}
	}
	CHECK_STAT_DELTA(s, b, cpu_partial_free, 2);
	CHECK_STAT_DELTA(s, b, cpu_partial_drain, 1);
	CHECK_STAT_DELTA(s, b, free_add_partial, 0);
	CHECK_EQ(s->cpu[CPU0].nr_partial, 0);
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	CHECK_EQ(info.partial_slabs, 2);
	CHECK_EQ(pc_cache_check(s), 3 * (long)per - 2);
	free_three(&t);
	set_opt(PC_OPT_SLUB_CPU_PARTIAL, -1);
	set_opt(PC_OPT_STATS_ENABLE, 0);
}

TEST(stats_slow_paths_node_partial)
{
	if (!pin_cpu0_or_skip())
		return;
	set_opt(PC_OPT_STATS_ENABLE, 1);
	set_opt(PC_OPT_SLUB_CPU_PARTIAL, 0);
	struct three t;
	fill_three(&t, "stats-node-partial");
	struct pc_cache *s = t.s;
	unsigned per = t.per;
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	CHECK_EQ(info.cpu_partial, 0);

	uint64_t b[PC_SLAB_STAT_COUNT];
	snap_stats(s, b);
	pc_cache_free(s, t.objs[0]); /* A: full -> node partial list */
	t.objs[0] = NULL;
	CHECK_STAT_DELTA(s, b, free_slowpath, 1);
	CHECK_STAT_DELTA(s, b, free_add_partial, 1);
	CHECK_STAT_DELTA(s, b, cpu_partial_free, 0);
	CHECK(t.slab[0]->flags & PC_SLAB_ON_PARTIAL);
	CHECK(!PC_SLAB_FROZEN(pc_load_relaxed(&slab_word(t.slab[0])->word)));
	CHECK(s->cpu[CPU0].partial == NULL);
	pc_cache_free(s, t.objs[1]); /* A again: listed, lock-free push */
	t.objs[1] = NULL;
	CHECK_STAT_DELTA(s, b, free_slowpath, 2);
	CHECK_STAT_DELTA(s, b, free_add_partial, 1);
	pc_cache_info(s, &info);
	CHECK_EQ(info.partial_slabs, 1);
	CHECK_EQ(pc_cache_check(s), 3 * (long)per - 2);

	/* C's freelist is empty: the next allocation retires C and takes A
	 * from the node list. */
	snap_stats(s, b);
	void *x = pc_cache_alloc(s);
	CHECK(pc_slab_of(x) == t.slab[0]);
	CHECK_STAT_DELTA(s, b, alloc_slowpath, 1);
	CHECK_STAT_DELTA(s, b, alloc_from_partial, 1);
	CHECK_STAT_DELTA(s, b, cpu_partial_alloc, 0);
	CHECK_STAT_DELTA(s, b, deactivate_full, 1);
	CHECK_STAT_DELTA(s, b, slab_alloc, 0);
	void *y = pc_cache_alloc(s);
	CHECK(pc_slab_of(y) == t.slab[0]);
	CHECK_STAT_DELTA(s, b, alloc_fastpath, 1);
	pc_cache_info(s, &info);
	CHECK_EQ(info.partial_slabs, 0);
	CHECK(!(t.slab[0]->flags & PC_SLAB_ON_PARTIAL));
	CHECK_EQ(pc_cache_check(s), 3 * (long)per);
	t.objs[0] = x;
	t.objs[1] = y;

	/* Emptying a listed slab beyond min_partial discards it at once. */
	set_opt(PC_OPT_SLUB_MIN_PARTIAL, 0);
	set_opt(PC_OPT_SLUB_MAX_PARTIAL, 0);
	pc_cache_info(s, &info);
	CHECK_EQ(info.min_partial, 0);
	snap_stats(s, b);
	for (unsigned i = per; i < 2 * per; i++) { /* all of B */
		pc_cache_free(s, t.objs[i]);
		t.objs[i] = NULL;
	}
	CHECK_STAT_DELTA(s, b, free_add_partial, 1);
	CHECK_STAT_DELTA(s, b, free_remove_partial, 1);
	CHECK_STAT_DELTA(s, b, slab_free, 1); /* B went back to the page allocator */
	pc_cache_info(s, &info);
	CHECK_EQ(info.slabs, 2);
	CHECK_EQ(info.partial_slabs, 0);
	CHECK_EQ(pc_cache_check(s), 2 * (long)per);
	free_three(&t);
	set_opt(PC_OPT_SLUB_MIN_PARTIAL, 5);
	set_opt(PC_OPT_SLUB_MAX_PARTIAL, -1);
	set_opt(PC_OPT_SLUB_CPU_PARTIAL, -1);
	set_opt(PC_OPT_STATS_ENABLE, 0);
}

/* get_partial: the first node partial slab becomes the CPU slab and more
 * go frozen onto the CPU partial list until it holds cpu_partial / 2. */
TEST(get_partial_fills_cpu_partial)
{
	if (!pin_cpu0_or_skip())
		return;
	set_opt(PC_OPT_SLUB_CPU_PARTIAL, 0);
	struct pc_cache *s = pc_cache_create("get-partial", 256, 0, NULL);
	REQUIRE(s);
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	unsigned per = info.objects_per_slab;
	enum { SLABS = 7 };
	void **objs = malloc(SLABS * per * sizeof(void *));
	REQUIRE(objs);
	for (unsigned i = 0; i < SLABS * per; i++)
		REQUIRE((objs[i] = pc_cache_alloc(s)) != NULL);
	/* One object from each of the 6 full slabs: 6 node partial slabs. */
	for (unsigned k = 0; k < SLABS - 1; k++) {
		pc_cache_free(s, objs[k * per]);
		objs[k * per] = NULL;
	}
	CHECK_EQ(pc_load_relaxed(&s->node[0]->nr_partial), SLABS - 1);
	set_opt(PC_OPT_SLUB_CPU_PARTIAL, 6);
	pc_cache_info(s, &info);
	CHECK_EQ(info.cpu_partial, 6);
	void *p = pc_cache_alloc(s); /* CPU slab exhausted: refill */
	REQUIRE(p);
	CHECK_EQ(s->cpu[CPU0].nr_partial, 3);
	CHECK_EQ(pc_load_relaxed(&s->node[0]->nr_partial), SLABS - 1 - 4);
	bool frozen = true;
	for (struct pc_page *sl = s->cpu[CPU0].partial; sl; sl = (struct pc_page *)(void *)sl->list.next)
		frozen &= PC_SLAB_FROZEN(pc_load_relaxed(&slab_word(sl)->word)) &&
			  !(sl->flags & PC_SLAB_ON_PARTIAL);
	CHECK(frozen);
	CHECK_EQ(pc_cache_check(s), (long)(SLABS * per) - (SLABS - 1) + 1);
	/* The next three allocations come from the CPU partial slabs. */
	void *q[3];
	for (int i = 0; i < 3; i++) {
		REQUIRE((q[i] = pc_cache_alloc(s)) != NULL);
		CHECK_EQ(s->cpu[CPU0].nr_partial, 2 - i);
	}
	CHECK_EQ(pc_load_relaxed(&s->node[0]->nr_partial), 2);
	/* cpu_partial 1: want 0, only the CPU slab is taken. */
	set_opt(PC_OPT_SLUB_CPU_PARTIAL, 1);
	void *r = pc_cache_alloc(s);
	REQUIRE(r);
	CHECK_EQ(s->cpu[CPU0].nr_partial, 0);
	CHECK_EQ(pc_load_relaxed(&s->node[0]->nr_partial), 1);
	CHECK_EQ(pc_cache_check(s), (long)(SLABS * per) - (SLABS - 1) + 5);
	pc_cache_free(s, p);
	pc_cache_free(s, r);
	for (int i = 0; i < 3; i++)
		pc_cache_free(s, q[i]);
	for (unsigned i = 0; i < SLABS * per; i++)
		if (objs[i])
			pc_cache_free(s, objs[i]);
	CHECK_EQ(pc_cache_check(s), 0);
	CHECK_EQ(pc_cache_destroy(s), 0);
	free(objs);
	set_opt(PC_OPT_SLUB_CPU_PARTIAL, -1);
}

/* Out of memory: creation that needs memory the OS refuses fails with
 * ENOMEM (caches are cut from shared chunks, so the first few may still
 * fit in the current one); an allocation that finds no page returns NULL
 * with ENOMEM and leaves the cache consistent and usable. */
TEST(out_of_memory)
{
	enum { MAXC = 64 }; /* more than a chunk holds (cache.c, CACHE_CHUNK) */
	struct pc_cache *made[MAXC];
	int nmade = 0;
	os_inject_map_failures(0, 1);
	errno = 0;
	while (nmade < MAXC && (made[nmade] = pc_cache_create("oom-create", 64, 0, NULL)) != NULL)
		nmade++;
	CHECK(nmade < MAXC);
	CHECK_EQ(errno, ENOMEM);
	os_inject_map_failures(0, 0);
	for (int i = 0; i < nmade; i++)
		CHECK_EQ(pc_cache_destroy(made[i]), 0);
	struct pc_cache *s;

	bool pinned = pin_cpu(0); /* one CPU slab: its objects are all there is */
	s = pc_cache_create("oom", 2048, 0, NULL);
	REQUIRE(s);
	void *keep = pc_cache_alloc(s); /* a slab exists, its freelist has room */
	REQUIRE(keep);
	/* Take every free page while the OS refuses more. */
	os_inject_map_failures(0, 1u << 30);
	enum { MAXB = 1 << 16 };
	static void *blocks[MAXB];
	static unsigned char orders[MAXB];
	size_t nb = 0;
	for (int order = PC_MAX_ORDER; order >= 0; order--) {
		void *b;
		while (nb < MAXB && (b = pc_alloc_pages((unsigned)order)) != NULL) {
			blocks[nb] = b;
			orders[nb++] = (unsigned char)order;
		}
	}
	REQUIRE(nb < MAXB);
	/* The CPU slab still has objects: those are handed out. */
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	size_t got = 1;
	void *objs[64];
	size_t n = 0;
	errno = 0;
	for (;;) {
		void *p = pc_cache_alloc(s);
		if (!p)
			break;
		REQUIRE(n < 64);
		objs[n++] = p;
		got++;
	}
	CHECK_EQ(errno, ENOMEM);
	if (pinned)
		CHECK_EQ(got, info.objects_per_slab); /* exactly the one slab */
	/* Failing again is harmless; the CPU structure is intact. */
	CHECK(pc_cache_alloc(s) == NULL);
	CHECK_EQ(pc_load_relaxed(&s->cpu[os_cpu_current()].fl.word) & 1, 0);
	os_inject_map_failures(0, 0);
	CHECK_EQ(pc_cache_check(s), (long)got);
	/* Frees work, and so does allocation once pages are back. */
	pc_cache_free(s, objs[--n]);
	void *again = pc_cache_alloc(s);
	CHECK(again != NULL);
	if (again)
		objs[n++] = again;
	while (nb > 0) {
		nb--;
		pc_free_pages(blocks[nb], orders[nb]);
	}
	void *more[40];
	for (int i = 0; i < 40; i++)
		CHECK((more[i] = pc_cache_alloc(s)) != NULL);
	CHECK_EQ(pc_cache_check(s), (long)got + 40);
	for (int i = 0; i < 40; i++)
		pc_cache_free(s, more[i]);
	while (n > 0)
		pc_cache_free(s, objs[--n]);
	pc_cache_free(s, keep);
	CHECK_EQ(pc_cache_check(s), 0);
	CHECK_EQ(pc_cache_destroy(s), 0);
	CHECK(pc_page_check());
}

int main(void)
{
	/* White-box tests of the slab layer beneath the sheaves (whose own
	 * tests are slab/sheaves*): without sheaves, every call reaches it. */
	REQUIRE(pc_option_set(PC_OPT_SLUB_SHEAF_CAPACITY, 0, true) == 0);
	pc_page_init();
	if (!pin_cpu(0))
		fprintf(stderr, "cannot pin to a CPU: the tests that need it are skipped\n");
	RUN(invalid_arguments);
	RUN(alignment);
	RUN(slab_of_foreign_pointers);
	RUN(free_to_wrong_cache_aborts);
	RUN(constructor);
	RUN(order_calculation);
	RUN(shrink_returns_pages);
	RUN(empty_slabs_beyond_min_partial);
	RUN(destroy);
	RUN(stats_fast_paths);
	RUN(stats_slow_paths_cpu_partial);
	RUN(stats_slow_paths_node_partial);
	RUN(get_partial_fills_cpu_partial);
	RUN(out_of_memory);
	RUN(destroy_keeps_lock_registry_sane);
	CHECK(pc_page_check());
	return test_report();
}
