/*
 * tests/unit/page/buddy.c - the buddy allocator against a reference model.
 *
 * A fixed-seed sequence of 200k operations: allocate a block of a random
 * order (0..PC_MAX_ORDER, biased to small orders) or free a random live
 * block. The model is the array of live blocks; every block is tagged at its
 * first and last 8 bytes with a word derived from its address and order,
 * checked when it is freed (and at every checkpoint), so that a block handed
 * out twice or overlapping another one shows up as a bad tag.
 *
 * Every CHECKPOINT operations: pc_page_check(), no two live blocks overlap
 * (sorted by address), every live head is PC_PG_ALLOC with its order, and the
 * exact page accounting of every zone:
 *     managed_pages == free_pages + pages on its pcp lists + live pages.
 * At the end everything is freed and drained, and coalescing must be
 * complete: each zone is nothing but free order-PC_MAX_ORDER blocks.
 *
 * The sequence runs twice: with the default options, then with vm.pcp_high
 * set to 0 at run time, where every free through a pcp drains it at once.
 * Single-threaded: the accounting reads counters under the zone and pcp locks.
 */
#define _GNU_SOURCE
#include "page/page.h"
#include "test.h"
#include "unit/unit_helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define OPS        200000
#define CHECKPOINT 5000
#define MAX_LIVE   8192
#define LIVE_MID   4000 /* the model drifts towards this many live blocks */

struct blk {
	char *p;
	unsigned order;
};

static struct blk live[MAX_LIVE];
static size_t nlive;

static size_t blk_bytes(unsigned order) { return PC_PAGE_SIZE << order; }

static uint64_t tag_head(const char *p, unsigned order)
{
	return (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)order << 56) ^ 0x5a5aa5a5ULL;
}
static uint64_t tag_tail(const char *p, unsigned order) { return ~tag_head(p, order) ^ 0x1234; }

static void tag(struct blk *b)
{
	memcpy(b->p, &(uint64_t){ tag_head(b->p, b->order) }, 8);
	memcpy(b->p + blk_bytes(b->order) - 8, &(uint64_t){ tag_tail(b->p, b->order) }, 8);
}

static bool tag_ok(const struct blk *b)
{
	uint64_t h, t;
	memcpy(&h, b->p, 8);
	memcpy(&t, b->p + blk_bytes(b->order) - 8, 8);
	return h == tag_head(b->p, b->order) && t == tag_tail(b->p, b->order);
}

/* Order 0..PC_MAX_ORDER, P(k) = 2^-(k+1) below the top, so mostly small. */
static unsigned rand_order(uint64_t *s)
{
	uint64_t r = test_rand(s) | ((uint64_t)1 << PC_MAX_ORDER);
	return (unsigned)__builtin_ctzll(r);
}

static struct pc_zone *zone_or_null(const void *p)
{
	struct pc_page *pg = pc_page_of(p);
	return pg ? pc_page_region(pg)->zone : NULL;
}

static int cmp_blk(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct blk *)a)->p, y = (uintptr_t)((const struct blk *)b)->p;
	return x < y ? -1 : x > y;
}

/* Counts of failures found by the checkpoint walkers (reported by CHECK). */
struct audit {
	size_t bad_tags, bad_state, overlaps, bad_account;
};

/* Sorted copy of the live set: no overlap, every head allocated. */
static void audit_blocks(struct audit *a)
{
	static struct blk sorted[MAX_LIVE];
	memcpy(sorted, live, nlive * sizeof(live[0]));
	qsort(sorted, nlive, sizeof(sorted[0]), cmp_blk);
	for (size_t i = 0; i < nlive; i++) {
		const struct blk *b = &sorted[i];
		if (!tag_ok(b))
			a->bad_tags++;
		struct pc_page *pg = pc_page_of(b->p);
		if (!pg || pc_pg_state(pg) != PC_PG_ALLOC || pg->order != b->order)
			a->bad_state++;
		if (i + 1 < nlive && b->p + blk_bytes(b->order) > sorted[i + 1].p)
			a->overlaps++;
	}
}

/* managed == free + pcp + live, zone by zone, counted under the locks. */
static void audit_accounting(struct audit *a)
{
	for (unsigned i = 0; i < pc_zone_count(); i++) {
		struct pc_zone *z = pc_zone_get(i);
		size_t live_pages = 0;
		for (size_t k = 0; k < nlive; k++)
			if (zone_or_null(live[k].p) == z)
				live_pages += (size_t)1 << live[k].order;
		pc_lock_nesting_begin(); /* every pcp lock of z, as pc_page_check */
		for (unsigned c = 0; c < os_cpu_count(); c++)
			pc_spin_stat_lock(&z->pcp[c].lock);
		pc_lock_acquire(&z->lock);
		size_t pcp_pages = 0;
		for (unsigned c = 0; c < os_cpu_count(); c++)
			pcp_pages += (size_t)z->pcp[c].count;
		size_t managed = z->managed_pages, free_pages = z->free_pages;
		pc_lock_release(&z->lock);
		for (unsigned c = 0; c < os_cpu_count(); c++)
			pc_spin_stat_unlock(&z->pcp[c].lock);
		pc_lock_nesting_end();
		if (managed != free_pages + pcp_pages + live_pages) {
			fprintf(stderr, "zone %u: managed %zu != free %zu + pcp %zu + live %zu\n",
				z->id, managed, free_pages, pcp_pages, live_pages);
			a->bad_account++;
		}
	}
}

static void checkpoint(size_t op)
{
	struct audit a = { 0 };
	bool ok = pc_page_check();
	CHECK(ok);
	audit_blocks(&a);
	audit_accounting(&a);
	CHECK_EQ(a.bad_tags, 0);
	CHECK_EQ(a.bad_state, 0);
	CHECK_EQ(a.overlaps, 0);
	CHECK_EQ(a.bad_account, 0);
	if (!ok || a.bad_tags || a.bad_state || a.overlaps || a.bad_account)
		fprintf(stderr, "  ... at operation %zu, %zu live blocks\n", op, nlive);
}

struct run_result {
	size_t allocs, frees, null_allocs, bad_align, bad_free_tags, pcp_left;
	size_t order_allocs[PC_MAX_ORDER + 1];
};

static void run_sequence(uint64_t seed, bool expect_pcp_empty_after_free)
{
	struct run_result r = { 0 };
	uint64_t s = seed;
	nlive = 0;
	for (size_t op = 1; op <= OPS; op++) {
		unsigned pct = nlive < LIVE_MID ? 60 : 40;
		bool do_alloc = nlive == 0 || (nlive < MAX_LIVE && test_rand(&s) % 100 < pct);
		if (do_alloc) {
			unsigned order = rand_order(&s);
			errno = 0;
			char *p = pc_alloc_pages(order);
			if (!p) {
				r.null_allocs++;
				continue;
			}
			if ((uintptr_t)p & (blk_bytes(order) - 1))
				r.bad_align++;
			live[nlive] = (struct blk){ p, order };
			tag(&live[nlive]);
			nlive++;
			r.allocs++;
			r.order_allocs[order]++;
		} else {
			size_t k = (size_t)(test_rand(&s) % nlive);
			struct blk b = live[k];
			live[k] = live[--nlive];
			if (!tag_ok(&b))
				r.bad_free_tags++;
			struct pc_zone *z = zone_or_null(b.p);
			unsigned cpu = os_cpu_current();
			pc_free_pages(b.p, b.order);
			r.frees++;
			/* vm.pcp_high == 0: a free through the pcp leaves it empty
			 * (unless the thread migrated in between: then we cannot tell). */
			if (expect_pcp_empty_after_free && b.order <= PC_PCP_MAX_ORDER &&
			    os_cpu_current() == cpu && z->pcp[cpu].count != 0)
				r.pcp_left++;
		}
		if (op % CHECKPOINT == 0)
			checkpoint(op);
	}
	CHECK_EQ(r.null_allocs, 0);
	CHECK_EQ(r.bad_align, 0);
	CHECK_EQ(r.bad_free_tags, 0);
	CHECK_EQ(r.pcp_left, 0);
	/* The sequence really covers every order. */
	for (unsigned o = 0; o <= PC_MAX_ORDER; o++)
		CHECK(r.order_allocs[o] > 0);
	CHECK(r.allocs > OPS / 3 && r.frees > OPS / 3);

	/* Free everything (tags checked), drain, and all of it must coalesce. */
	size_t bad = 0;
	while (nlive > 0) {
		struct blk b = live[--nlive];
		bad += !tag_ok(&b);
		pc_free_pages(b.p, b.order);
	}
	CHECK_EQ(bad, 0);
	pc_page_drain_all();
	check_coalesced_locked(true);
}

TEST(model_default)
{
	run_sequence(0x243F6A8885A308D3ULL, false);
}

TEST(model_pcp_high_zero)
{
	CHECK_EQ(pc_option_set(PC_OPT_VM_PCP_HIGH, 0, false), 0);
	CHECK_EQ(pc_option(PC_OPT_VM_PCP_HIGH), 0);
	run_sequence(0x13198A2E03707344ULL, true);
	CHECK_EQ(pc_option_set(PC_OPT_VM_PCP_HIGH, 2048, false), 0);
}

/* The same block comes back after a free at every order when nothing else
 * moves (LIFO free lists), and its descriptor follows the state machine. */
TEST(descriptor_states)
{
	pc_page_drain_all();
	for (unsigned o = 0; o <= PC_MAX_ORDER; o++) {
		char *p = pc_alloc_pages(o);
		REQUIRE(p != NULL);
		struct pc_page *pg = pc_page_of(p);
		REQUIRE(pg != NULL);
		CHECK_EQ(pc_pg_state(pg), PC_PG_ALLOC);
		CHECK_EQ(pg->order, o);
		CHECK(pc_page_address(pg) == p);
		CHECK(pc_page_region(pg)->base <= p && p < pc_page_region(pg)->base + PC_REGION_SIZE);
		/* Last page of the block maps to the descriptor o pages on. */
		CHECK(pc_page_of(p + blk_bytes(o) - 1) == pg + ((size_t)1 << o) - 1);
		pc_free_pages(p, o);
		CHECK(pc_pg_state(pg) == PC_PG_PCP || pc_pg_state(pg) == PC_PG_BUDDY || pc_pg_state(pg) == PC_PG_NONE);
		if (o > PC_PCP_MAX_ORDER)
			CHECK(pc_pg_state(pg) == PC_PG_BUDDY || pc_pg_state(pg) == PC_PG_NONE);
		CHECK(pc_page_check());
	}
	/* Out-of-range order: NULL with ENOMEM, nothing changes. */
	errno = 0;
	CHECK(pc_alloc_pages(PC_MAX_ORDER + 1) == NULL);
	CHECK_EQ(errno, ENOMEM);
	pc_page_drain_all();
	check_coalesced_locked(true);
}

/* ---- misuse: page.h promises "a double free or a pointer we do not own is
 * reported and aborts". Each case runs in a child process (stderr muted). */
static bool child_aborts(void (*fn)(void))
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);
		if (fd >= 0)
			dup2(fd, 2);
		fn();
		_exit(0); /* not detected */
	}
	int st = 0;
	REQUIRE(waitpid(pid, &st, 0) == pid);
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT)
		return true;
	if (WIFEXITED(st))
		fprintf(stderr, "  child exited with %d (%s)\n", WEXITSTATUS(st),
			WEXITSTATUS(st) == 0 ? "misuse not detected" : "setup failed");
	else
		fprintf(stderr, "  child died of signal %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : -1);
	return false;
}

static void df_on_pcp(void)
{
	char *p = pc_alloc_pages(0);
	pc_free_pages(p, 0); /* on the pcp (vm.pcp_high 2048) */
	pc_free_pages(p, 0);
}

static void df_top_order(void)
{
	char *p = pc_alloc_pages(PC_MAX_ORDER);
	pc_free_pages(p, PC_MAX_ORDER);
	pc_free_pages(p, PC_MAX_ORDER);
}

static void not_ours(void)
{
	static char buf[3 * 4096];
	pc_free_pages((void *)pc_align_up((uintptr_t)buf, PC_PAGE_SIZE), 0);
}

static void misaligned(void)
{
	char *p = pc_alloc_pages(1);
	pc_free_pages(p + PC_PAGE_SIZE, 1);
}

/* A page freed, drained and merged into a larger free block (so that it is
 * no block head any more), then freed again. */
static void df_after_merge(void)
{
	static char *held[4096];
	int n = 0;
	char *victim = NULL;
	while (!victim && n < 4096) {
		char *p = pc_alloc_pages(0);
		struct pc_page *pg = pc_page_of(p);
		if ((pg - pc_page_region(pg)->pages) & 1)
			victim = p; /* upper half of its order-1 pair */
		else
			held[n++] = p;
	}
	while (n > 0)
		pc_free_pages(held[--n], 0);
	pc_free_pages(victim, 0);
	pc_page_drain_all(); /* everything coalesces; victim is inside a block */
	if (pc_pg_state(pc_page_of(victim)) != PC_PG_NONE)
		_exit(3); /* setup failed: not what this case is about */
	pc_free_pages(victim, 0);
}

TEST(misuse_is_detected)
{
	CHECK(child_aborts(df_on_pcp));
	CHECK(child_aborts(df_top_order));
	CHECK(child_aborts(not_ours));
	CHECK(child_aborts(misaligned));
}

/* The same promise for a page freed twice after it merged into a larger free
 * block: it is no block head any more (state PC_PG_NONE, like the pieces of
 * a live block that malloc/large.c frees), so pc_free_pages accepts it and
 * the page ends up free twice (an order-0 free block inside a free block). */
TEST(double_free_after_merge_is_detected)
{
	CHECK(child_aborts(df_after_merge));
}

/* A live block may be freed in aligned pieces (alloc_pages_exact, as
 * malloc/large.c does): the pieces coalesce back completely. */
TEST(free_in_pieces)
{
	pc_page_drain_all();
	for (unsigned o = 1; o <= PC_MAX_ORDER; o++) {
		char *p = pc_alloc_pages(o);
		REQUIRE(p != NULL);
		/* Upper half as one block, then the lower half page by page,
		 * from the top down. */
		pc_free_pages(p + (blk_bytes(o) >> 1), o - 1);
		for (size_t i = ((size_t)1 << (o - 1)); i-- > 0;)
			pc_free_pages(p + i * PC_PAGE_SIZE, 0);
		CHECK(pc_page_check());
	}
	pc_page_drain_all();
	check_coalesced_locked(true);
}

int main(void)
{
	pc_page_init();
	RUN(model_default);
	RUN(model_pcp_high_zero);
	RUN(descriptor_states);
	RUN(misuse_is_detected);
	RUN(free_in_pieces);
	RUN(double_free_after_merge_is_detected);
	return test_report();
}
