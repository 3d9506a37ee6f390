/*
 * tests/unit/slab/debug.c - slub_debug mode on object caches (slab.h "Debug
 * caches", slab/debug.c):
 *  - the slub.debug text: flags, cache lists with globs, blocks, '-', bad
 *    text refused with one line naming the entry (empty blocks, control
 *    characters escaped), '?' in a glob;
 *  - a run-time sheaf capacity change leaves debug caches without sheaves;
 *    a cache of 100000-byte objects;
 *  - only the caches the option names are debug caches (no sheaves, the
 *    debug layout); the others keep their sheaves and layout;
 *  - the layout keeps the alignment of caches created with one (8..4096);
 *  - a constructor still runs once per object (when it is first handed
 *    out) and its state survives free and allocation (no poison in a cache
 *    with a constructor);
 *  - death tests, each in a child pinned to its CPU (test_in_child): a
 *    one-byte overflow ("Right Redzone overwritten" at the free), a write
 *    after free ("Poison overwritten" at the next allocation of the object,
 *    which is forced: the cache's only slab and the head of its freelist),
 *    a double free buried under 99 other frees ("Object already free"), a
 *    double free with U alone (the default check kept without F), an
 *    interior pointer ("Invalid object pointer"); on a partly built slab
 *    (fresh objects left: slab_alloc.c), a free pointer aimed at a fresh
 *    object or into an object ("Freepointer corrupt" at the allocation), a
 *    buried double free and the free of a fresh object ("Object already
 *    free"; the report shows nothing of a fresh object, whose page may hold
 *    another cache's old bytes: "is fresh (never allocated)"); each with the SLUB
 *    banner, the INFO line of the broken bytes where there are some,
 *    pcmalloc's fatal line and SIGABRT.
 * The tracks (U) are tested in tests/malloc/test_slub_debug.c: naming the
 * caller needs pcmalloc as a shared library (os/symbol.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>

#include "slab/slab.h"
#include "test.h"

static char err[16384];

static struct pc_cache *make(const char *name, size_t size)
{
	struct pc_cache *s = pc_cache_create(name, size, 0, NULL);
	REQUIRE(s != NULL);
	return s;
}

TEST(option_syntax)
{
	char why[256];
	long v = -1;
	CHECK_EQ(pc_slub_debug_parse("", &v, why, sizeof(why)), 0);
	CHECK_EQ(v, (long)PC_SLUB_DEBUG_DEFAULT); /* bare: F Z P U */
	CHECK_EQ(pc_slub_debug_parse("fz:a:b*;P:c", &v, why, sizeof(why)), 0);
	CHECK_EQ(v, (long)(PC_SLUB_DEBUG_F | PC_SLUB_DEBUG_Z | PC_SLUB_DEBUG_P));
	CHECK_EQ(pc_slub_debug_parse("-", &v, why, sizeof(why)), 0);
	CHECK_EQ(v, 0);
	CHECK_EQ(pc_slub_debug_parse("T", &v, why, sizeof(why)), 0);
	CHECK_EQ(v, (long)PC_SLUB_DEBUG_T);
	CHECK_EQ(pc_slub_debug_parse("FX", &v, why, sizeof(why)), EINVAL);
	CHECK(strstr(why, "unknown flag 'X'") != NULL);
	CHECK_EQ(pc_slub_debug_parse("F::a", &v, why, sizeof(why)), EINVAL);
	CHECK_EQ(pc_slub_debug_parse("F:0123456789012345678901234567890123", &v, why, sizeof(why)), EINVAL);
	/* an empty block is an error, not a second bare "FZPU" block */
	CHECK_EQ(pc_slub_debug_parse("Z:kmalloc-64;", &v, why, sizeof(why)), EINVAL);
	CHECK(strstr(why, "empty block") != NULL);
	CHECK_EQ(pc_slub_debug_parse("F;;Z", &v, why, sizeof(why)), EINVAL);
	/* a control character is shown escaped */
	CHECK_EQ(pc_slub_debug_parse("F\x01", &v, why, sizeof(why)), EINVAL);
	CHECK(strstr(why, "'\\x01'") != NULL);
	/* through the tunables' entry point: one line, the option unchanged */
	char msg[320];
	CHECK_EQ(pc_option_apply_text("PCMALLOC_OPTIONS", "slub.debug", "FQ", true, msg, sizeof(msg)),
		 EINVAL);
	CHECK(strstr(msg, "slub.debug=FQ") != NULL && strstr(msg, "accepted") != NULL);
	CHECK_EQ(pc_option(PC_OPT_SLUB_DEBUG), 0);
}

/* Set once, before the first cache: the option is start-up only. */
static void debug_on(void)
{
	char msg[320];
	REQUIRE(pc_option_apply_text("test", "slub.debug", "-:dbg-off;FZPU:dbg-*;Z:zonly-*;U:uonly-?",
				     true, msg, sizeof(msg)) == 0);
}

TEST(which_caches)
{
	CHECK_EQ(pc_option(PC_OPT_SLUB_DEBUG), (long)PC_SLUB_DEBUG_DEFAULT);
	CHECK_EQ(pc_slub_debug_flags("dbg-one"), PC_SLUB_DEBUG_DEFAULT);
	CHECK_EQ(pc_slub_debug_flags("dbg-off"), 0u);  /* the first block that names it */
	CHECK_EQ(pc_slub_debug_flags("zonly-x"), PC_SLUB_DEBUG_Z);
	CHECK_EQ(pc_slub_debug_flags("plain"), 0u);
	CHECK_EQ(pc_slub_debug_flags("uonly-1"), PC_SLUB_DEBUG_U); /* '?': one character */
	CHECK_EQ(pc_slub_debug_flags("uonly-12"), 0u);
	char text[300];
	pc_option_format(PC_OPT_SLUB_DEBUG, text, sizeof(text));
	CHECK(strcmp(text, "-:dbg-off;FZPU:dbg-*;Z:zonly-*;U:uonly-?") == 0);
	char msg[320];
	CHECK_EQ(pc_option_apply_text("test", "slub.debug", "F", false, msg, sizeof(msg)), EPERM);

	struct pc_cache *d = make("dbg-which", 40), *p = make("plain-which", 40);
	CHECK_EQ(d->debug, PC_SLUB_DEBUG_DEFAULT);
	CHECK_EQ(pc_load_relaxed(&d->sheaf_capacity), 0u);
	CHECK(d->offset >= d->object_size + sizeof(void *)); /* free pointer after the red zone */
	CHECK(d->size >= d->offset + sizeof(void *) + 2 * sizeof(struct pc_slab_track));
	CHECK_EQ(p->debug, 0u);
	CHECK(pc_load_relaxed(&p->sheaf_capacity) > 0);
	CHECK_EQ(p->size, (size_t)48);
	/* objects come and go, and the walker agrees */
	void *o[300];
	for (int i = 0; i < 300; i++) {
		o[i] = pc_cache_alloc(d);
		REQUIRE(o[i] != NULL);
		memset(o[i], i, 40);
	}
	for (int i = 0; i < 300; i += 2)
		pc_cache_free(d, o[i]);
	CHECK_EQ(pc_cache_check(d), 150);
	for (int i = 1; i < 300; i += 2) {
		for (int k = 0; k < 40; k++)
			REQUIRE(((unsigned char *)o[i])[k] == (unsigned char)i);
		pc_cache_free(d, o[i]);
	}
	CHECK_EQ(pc_cache_check(d), 0);
	/* a run-time sheaf capacity change leaves debug caches without sheaves */
	REQUIRE(pc_option_set(PC_OPT_SLUB_SHEAF_CAPACITY, 7, false) == 0);
	CHECK_EQ(pc_load_relaxed(&d->sheaf_capacity), 0u);
	CHECK_EQ(pc_load_relaxed(&p->sheaf_capacity), 7u);
	void *x = pc_cache_alloc(d);
	pc_cache_free(d, x);
	REQUIRE(pc_option_set(PC_OPT_SLUB_SHEAF_CAPACITY, -1, false) == 0);
	CHECK_EQ(pc_cache_check(d), 0);
	CHECK_EQ(pc_cache_destroy(d), 0u);
	/* a large object: a slab of one or two, still checked */
	struct pc_cache *big = make("dbg-big", 100000);
	char *b1 = pc_cache_alloc(big), *b2 = pc_cache_alloc(big);
	REQUIRE(b1 && b2);
	memset(b1, 1, 100000);
	memset(b2, 2, 100000);
	pc_cache_free(big, b1);
	pc_cache_free(big, b2);
	CHECK_EQ(pc_cache_destroy(big), 0u);
}

TEST(alignment_kept)
{
	for (size_t align = 8; align <= 4096; align *= 2) {
		size_t sizes[] = { 1, 8, 24, 100, 1000 };
		for (size_t i = 0; i < PC_ARRAY_SIZE(sizes); i++) {
			char name[32];
			snprintf(name, sizeof(name), "dbg-a%zu-%zu", align, sizes[i]);
			struct pc_cache *s = pc_cache_create(name, sizes[i], align, NULL);
			REQUIRE(s != NULL && s->debug != 0);
			void *o[20];
			for (int k = 0; k < 20; k++) {
				o[k] = pc_cache_alloc(s);
				REQUIRE(o[k] != NULL);
				CHECK(((uintptr_t)o[k] & (align - 1)) == 0);
				memset(o[k], 0x5a, sizes[i]); /* the whole object, no more */
			}
			for (int k = 0; k < 20; k++)
				pc_cache_free(s, o[k]);
			CHECK_EQ(pc_cache_destroy(s), 0u);
		}
	}
}

static _Atomic int ctor_calls;
static void ctor_magic(void *p)
{
	pc_add_relaxed(&ctor_calls, 1);
	memcpy(p, "MAGIC!!", 8);
}

TEST(constructor_kept)
{
	struct pc_cache *s = pc_cache_create("dbg-ctor", 64, 0, ctor_magic);
	REQUIRE(s != NULL);
	CHECK_EQ(s->debug, PC_SLUB_DEBUG_DEFAULT & ~PC_SLUB_DEBUG_P); /* no poison with a ctor */
	void *o[50], *seen[100];
	int distinct = 0;
	for (int i = 0; i < 50; i++) {
		o[i] = pc_cache_alloc(s);
		REQUIRE(o[i] != NULL);
		CHECK(memcmp(o[i], "MAGIC!!", 8) == 0);
		seen[distinct++] = o[i];
	}
	/* Objects are constructed when first handed out (slab_alloc.c, "Fresh
	 * objects"), and a debug cache hands them out one by one. */
	CHECK_EQ(pc_load_relaxed(&ctor_calls), 50);
	for (int i = 0; i < 50; i++)
		memcpy((char *)o[i] + 8, "used", 4); /* the user's state after the constructor's */
	for (int i = 0; i < 50; i++)
		pc_cache_free(s, o[i]);
	for (int i = 0; i < 50; i++) {
		o[i] = pc_cache_alloc(s);
		REQUIRE(o[i] != NULL);
		CHECK(memcmp(o[i], "MAGIC!!", 8) == 0);
		bool again = false;
		for (int k = 0; k < 50; k++)
			again |= seen[k] == o[i];
		/* state kept, not reconstructed; a new object was constructed */
		CHECK(again ? memcmp((char *)o[i] + 8, "used", 4) == 0 : true);
		if (!again)
			seen[distinct++] = o[i];
	}
	/* Once per object ever handed out: none constructed twice. */
	CHECK_EQ(pc_load_relaxed(&ctor_calls), distinct);
	struct pc_cache_info info;
	pc_cache_info(s, &info);
	CHECK_EQ(pc_load_relaxed(&ctor_calls), info.total_objects - info.fresh_objects);
	for (int i = 0; i < 50; i++)
		pc_cache_free(s, o[i]);
}

/* ---- death tests ------------------------------------------------------------------ */
static void overflow_one_byte(void *arg)
{
	(void)arg;
	test_pin_here();
	struct pc_cache *s = make("dbg-overflow", 40);
	char *a = pc_cache_alloc(s);
	a[40] = 'x'; /* one byte past the object */
	pc_cache_free(s, a);
}

static void write_after_free(void *arg)
{
	(void)arg;
	test_pin_here();
	struct pc_cache *s = make("dbg-uaf", 40);
	char *a = pc_cache_alloc(s); /* the cache's first object: its only slab */
	pc_cache_free(s, a);         /* the head of that slab's freelist */
	a[5] = 'x';
	pc_cache_alloc(s);           /* takes a again: checks its poison */
}

static void buried_double_free(void *arg)
{
	(void)arg;
	test_pin_here();
	struct pc_cache *s = make("dbg-double", 40);
	void *o[100];
	for (int i = 0; i < 100; i++)
		o[i] = pc_cache_alloc(s);
	for (int i = 0; i < 100; i++)
		pc_cache_free(s, o[i]);
	pc_cache_free(s, o[0]); /* freed 99 frees ago */
}

/* U alone (no F, no Z): the default double-free check still holds. */
static void u_only_double_free(void *arg)
{
	test_pin_here();
	struct pc_cache *s = make("uonly-1", 40);
	void *a = pc_cache_alloc(s), *b = pc_cache_alloc(s);
	pc_cache_free(s, a);
	if (arg) /* free(a); free(b); free(a) */
		pc_cache_free(s, b);
	pc_cache_free(s, a);
}

static void interior_pointer(void *arg)
{
	(void)arg;
	test_pin_here();
	struct pc_cache *s = make("dbg-interior", 40);
	char *a = pc_cache_alloc(s);
	pc_cache_free(s, a + 8);
}

static void underflow_into_previous(void *arg)
{
	(void)arg;
	test_pin_here();
	struct pc_cache *s = pc_cache_create("zonly-prev", 40, 0, NULL); /* Z alone */
	char *a = pc_cache_alloc(s), *b = pc_cache_alloc(s);
	REQUIRE(b == a + s->size); /* address order in a new slab */
	b[-(ptrdiff_t)s->size + 44] = 'u'; /* a's red zone, written through b */
	pc_cache_free(s, a);
}

/* A debug cache's new slab after two allocations: partly built (slab.h,
 * the counters word: the rest of its objects fresh). Returns a, b and the
 * slab's last object, which is fresh. */
static char *partly_built(const char *name, char **a, char **b)
{
	struct pc_cache *s = make(name, 40);
	*a = pc_cache_alloc(s);
	*b = pc_cache_alloc(s);
	REQUIRE(*a && *b);
	struct pc_page *slab = pc_slab_of(*a);
	uint64_t cnt = pc_load_relaxed(&slab_word(slab)->word);
	REQUIRE(PC_SLAB_FRESH(cnt) == PC_SLAB_OBJECTS(cnt) - 2 && PC_SLAB_FRESH(cnt) > 0);
	char *last = (char *)pc_page_address(slab) + (PC_SLAB_OBJECTS(cnt) - 1) * s->size;
	REQUIRE(slab_is_fresh(slab, cnt, last));
	return last;
}

/* a freed, its free pointer (outside the object: offset) aimed at a fresh
 * object (arg NULL) or at a byte inside b; its next allocation checks it. */
static void free_pointer_corrupt(void *arg)
{
	test_pin_here();
	char *a, *b, *fresh = partly_built("dbg-fp", &a, &b);
	struct pc_cache *s = pc_slab_cache_of(a);
	pc_cache_free(s, a);
	*(void **)(void *)(a + s->offset) = arg ? b + 3 : fresh;
	pc_cache_alloc(s);
}

/* a freed twice (arg NULL: a and b freed between), or a fresh object freed
 * (one never handed out: free already), on a partly built slab. */
static void partly_built_double_free(void *arg)
{
	test_pin_here();
	char *a, *b, *fresh = partly_built("dbg-pdouble", &a, &b);
	struct pc_cache *s = pc_slab_cache_of(a);
	if (arg) {
		pc_cache_free(s, fresh);
		return;
	}
	pc_cache_free(s, a);
	pc_cache_free(s, b);
	pc_cache_free(s, a);
}

/* The free of a fresh object whose page held other data before (filled
 * with 0x41 and given back to the page allocator, whose per-CPU lists hand
 * the same block to the new slab): the report says the object is fresh and
 * shows none of its bytes, which are not the cache's (no "Allocated in
 * 0x4141..." track). */
static void fresh_free_on_dirty_page(void *arg)
{
	(void)arg;
	test_pin_here();
	struct pc_cache *s = make("dbg-dirty", 40);
	unsigned order = (unsigned)(pc_load_relaxed(&s->oo) >> 32);
	char *blk = pc_alloc_pages_node(order, pc_cpu_node(os_cpu_current()));
	REQUIRE(blk != NULL);
	memset(blk, 0x41, PC_PAGE_SIZE << order);
	pc_free_pages(blk, order);
	char *a = pc_cache_alloc(s);
	REQUIRE(a == blk); /* the new slab is that block */
	char *fresh = a + 3 * s->size;
	REQUIRE(fresh[0] == 0x41);
	pc_cache_free(s, fresh);
}

TEST(partly_built_slab_checked)
{
	int st = test_in_child(free_pointer_corrupt, NULL, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "BUG dbg-fp: Freepointer corrupt"));
	CHECK(strstr(err, "fresh=") != NULL);
	st = test_in_child(free_pointer_corrupt, (void *)1, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "BUG dbg-fp: Freepointer corrupt"));
	st = test_in_child(partly_built_double_free, NULL, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "BUG dbg-pdouble: Object already free"));
	st = test_in_child(partly_built_double_free, (void *)1, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "BUG dbg-pdouble: Object already free"));
	CHECK(strstr(err, "double free detected") != NULL);
	CHECK(strstr(err, "is fresh (never allocated)") != NULL);
	st = test_in_child(fresh_free_on_dirty_page, NULL, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "BUG dbg-dirty: Object already free"));
	CHECK(strstr(err, "is fresh (never allocated)") != NULL);
	CHECK(strstr(err, "INFO: Allocated in") == NULL && strstr(err, "4141414141414141") == NULL &&
	      strstr(err, "41 41 41 41") == NULL); /* no track, requested size or dump of it */
}

TEST(overflow_reported)
{
	int st = test_in_child(overflow_one_byte, NULL, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "BUG dbg-overflow: Right Redzone overwritten"));
	CHECK(strstr(err, "@offset=40. First byte 0x78 instead of 0xcc") != NULL);
	CHECK(strstr(err, "INFO: Slab ") != NULL && strstr(err, "Redzone ") != NULL);
	CHECK(strstr(err, "pcmalloc: fatal: slub_debug: Right Redzone overwritten") != NULL);
}

TEST(write_after_free_reported)
{
	int st = test_in_child(write_after_free, NULL, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "BUG dbg-uaf: Poison overwritten"));
	CHECK(strstr(err, "@offset=5. First byte 0x78 instead of 0x6b") != NULL);
}

TEST(buried_double_free_reported)
{
	int st = test_in_child(buried_double_free, NULL, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "BUG dbg-double: Object already free"));
	CHECK(strstr(err, "pcmalloc: fatal: free(") != NULL && strstr(err, "double free detected") != NULL);
}

TEST(double_free_caught_without_f)
{
	int st = test_in_child(u_only_double_free, NULL, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "BUG uonly-1: Object already free"));
	CHECK(strstr(err, "double free detected") != NULL);
	CHECK(strstr(err, "INFO: Allocated in ") != NULL); /* U's tracks */
	st = test_in_child(u_only_double_free, (void *)1, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "BUG uonly-1: Object already free"));
}

TEST(interior_pointer_reported)
{
	int st = test_in_child(interior_pointer, NULL, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "BUG dbg-interior: Invalid object pointer"));
	CHECK(strstr(err, "pcmalloc: fatal: pc_cache_free(") != NULL && strstr(err, "bytes into object") != NULL);
}

TEST(z_alone_catches_a_write_into_the_zone)
{
	int st = test_in_child(underflow_into_previous, NULL, err, sizeof(err));
	CHECK(test_aborted_with(st, err, "BUG zonly-prev: Right Redzone overwritten"));
}

int main(void)
{
	RUN(option_syntax);
	debug_on();
	RUN(which_caches);
	RUN(alignment_kept);
	RUN(constructor_kept);
	RUN(overflow_reported);
	RUN(write_after_free_reported);
	RUN(buried_double_free_reported);
	RUN(double_free_caught_without_f);
	RUN(interior_pointer_reported);
	RUN(z_alone_catches_a_write_into_the_zone);
	RUN(partly_built_slab_checked);
	return test_report();
}
