/*
 * tests/unit/lock/witness.c - lock ranks checked in debug builds
 * (lock/witness.c, lock.h "lock ranks"). Each case runs in a forked child
 * with stderr on a pipe; a violation must stop it with SIGABRT and
 *     pcmalloc: fatal: lock order violation: ...
 *  - a lower rank taken while holding a higher one (zone->lock, then a pcp
 *    lock), with each lock kind that carries a rank (generic, spin, mutex);
 *  - two locks of one rank outside a nesting window;
 *  - inside pc_lock_nesting_begin/end: equal ranks nest, a lower one still
 *    stops the program;
 *  - legal: increasing ranks, a try-lock against the order (it cannot wait),
 *    releases in any order, unranked locks anywhere: the child exits 0;
 *  - releasing a ranked lock this thread does not hold.
 * In a release build (PC_DEBUG < 2) there is no witness: it only checks that
 * ranked locks still work, and says so.
 */
#define _GNU_SOURCE
#include "lock/lock.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

static struct pc_lock zone, barn;
static struct pc_spin pcp, pcp2, leaf;
static struct pc_mutex grow;

static void setup(void)
{
	pc_lock_init(&zone, "zone", PC_LOCK_MUTEX);
	pc_lock_set_rank(&zone, PC_LOCK_RANK_ZONE);
	pc_lock_init(&barn, "barn", PC_LOCK_MCS);
	pc_lock_set_rank(&barn, PC_LOCK_RANK_BARN);
	pc_spin_init(&pcp);
	pc_spin_set_rank(&pcp, PC_LOCK_RANK_PCP);
	pc_spin_init(&pcp2);
	pc_spin_set_rank(&pcp2, PC_LOCK_RANK_PCP);
	pc_spin_init(&leaf); /* unranked */
	pc_mutex_init(&grow);
	pc_mutex_set_rank(&grow, PC_LOCK_RANK_ZONE_GROW);
}

/* The violation bodies are used only in debug builds. */
#define BODY static __attribute__((unused)) void

static void body_run(void *body)
{
	(*(void (**)(void))body)();
}

/* Runs body in a child: 1 if it died of SIGABRT with `message` on stderr,
 * 0 if it exited 0, -1 otherwise (printed). */
static int run_child(void (*body)(void), const char *message)
{
	char buf[1024];
	int status = test_in_child(body_run, &body, buf, sizeof(buf));
	if (test_exited_ok(status))
		return 0;
	return test_aborted_with(status, buf, message) ? 1 : -1;
}

BODY lower_generic_then_spin(void)
{
	pc_lock_acquire(&zone);
	pc_spin_lock(&pcp); /* 70 under 80 */
}
BODY lower_mutex_under_spin(void)
{
	pc_spin_lock(&pcp);
	pc_mutex_lock(&grow); /* 60 under 70 */
}
BODY lower_generic_under_mutex(void)
{
	pc_mutex_lock(&grow);
	pc_lock_acquire(&barn); /* 30 under 60 */
}
BODY same_rank(void)
{
	pc_spin_lock(&pcp);
	pc_spin_lock(&pcp2);
}
BODY nesting_lower(void)
{
	pc_lock_nesting_begin();
	pc_spin_lock(&pcp);
	pc_mutex_lock(&grow); /* still lower */
}
BODY release_not_held(void)
{
	pc_spin_lock(&pcp); /* taken ... */
	pc_store_relaxed(&pcp2.locked, 1); /* locked, but not through pc_spin_lock */
	pc_spin_unlock(&pcp2); /* ... but another is released */
}

static void legal(void)
{
	pc_lock_acquire(&barn);    /* 30 */
	pc_mutex_lock(&grow);      /* 60 */
	pc_spin_lock(&pcp);        /* 70 */
	pc_lock_acquire(&zone);    /* 80 */
	pc_spin_lock(&leaf);       /* unranked: anywhere */
	pc_mutex_unlock(&grow);    /* any order */
	pc_lock_release(&barn);
	pc_spin_unlock(&leaf);
	pc_lock_release(&zone);
	if (!pc_spin_trylock(&pcp2)) /* a try against the order: allowed */
		_exit(3);
	pc_spin_unlock(&pcp2);
	pc_spin_unlock(&pcp);
	pc_lock_nesting_begin();   /* equal ranks in a nesting window */
	pc_spin_lock(&pcp);
	pc_spin_lock(&pcp2);
	pc_lock_acquire(&zone);
	pc_lock_release(&zone);
	pc_spin_unlock(&pcp2);
	pc_spin_unlock(&pcp);
	pc_lock_nesting_end();
}

TEST(violations_stop_the_program)
{
#if PC_DEBUG >= 2
	const char *order = "pcmalloc: fatal: lock order violation:";
	CHECK_EQ(run_child(lower_generic_then_spin, order), 1);
	CHECK_EQ(run_child(lower_mutex_under_spin, order), 1);
	CHECK_EQ(run_child(lower_generic_under_mutex, order), 1);
	CHECK_EQ(run_child(same_rank, order), 1);
	CHECK_EQ(run_child(nesting_lower, order), 1);
	CHECK_EQ(run_child(release_not_held, "which this thread does not hold"), 1);
#else
	printf("  release build: no witness (PC_DEBUG < 2), nothing to check\n");
#endif
}

TEST(legal_orders_pass)
{
	CHECK_EQ(run_child(legal, "fatal"), 0);
	CHECK_EQ(pc_lock_rank_name(PC_LOCK_RANK_PCP)[0], 'p');
	CHECK(strcmp(pc_lock_rank_name(PC_LOCK_RANK_ZONE), "zone->lock") == 0);
	CHECK(strcmp(pc_lock_rank_name(7), "unranked") == 0);
}

int main(void)
{
	setup();
	RUN(violations_stop_the_program);
	RUN(legal_orders_pass);
	return test_report();
}
