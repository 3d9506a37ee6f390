/*
 * tests/unit/lock/basic.c - single-threaded checks of the lock layer:
 * trylock semantics of every kind (raw and generic), names, the histogram
 * bucket function, statistics reset, the generic MCS lock released out of
 * order, the nesting bound (pc_fatal, checked in a forked child),
 * pc_lock_reinit after fork and pc_lock_acquire_for_fork of many locks.
 */
#include "lock/lock.h"
#include "test.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

TEST(spin_trylock)
{
	struct pc_spin l;
	pc_spin_init(&l);
	CHECK(pc_spin_trylock(&l));
	CHECK(!pc_spin_trylock(&l));
	pc_spin_unlock(&l);
	pc_spin_lock(&l);
	CHECK(!pc_spin_trylock(&l));
	pc_spin_unlock(&l);
	CHECK(pc_spin_trylock(&l));
	pc_spin_unlock(&l);
	CHECK_EQ(pc_load_relaxed(&l.locked), 0);
}

TEST(ticket_trylock)
{
	struct pc_ticket l;
	pc_ticket_init(&l);
	CHECK(pc_ticket_trylock(&l));
	CHECK(!pc_ticket_trylock(&l));
	CHECK_EQ(pc_load_relaxed(&l.next), 1); /* a failed try takes no ticket */
	pc_ticket_unlock(&l);
	pc_ticket_lock(&l);
	CHECK(!pc_ticket_trylock(&l));
	pc_ticket_unlock(&l);
	CHECK(pc_ticket_trylock(&l));
	pc_ticket_unlock(&l);
	CHECK_EQ(pc_load_relaxed(&l.next), 3);
	CHECK_EQ(pc_load_relaxed(&l.owner), 3);
}

TEST(ticket_wraps)
{
	struct pc_ticket l;
	pc_ticket_init(&l);
	pc_store_relaxed(&l.next, UINT32_MAX);
	pc_store_relaxed(&l.owner, UINT32_MAX);
	pc_ticket_lock(&l);
	CHECK(!pc_ticket_trylock(&l));
	pc_ticket_unlock(&l); /* owner wraps to 0 */
	CHECK(pc_ticket_trylock(&l));
	pc_ticket_unlock(&l);
	CHECK_EQ(pc_load_relaxed(&l.owner), 1);
}

TEST(mcs_trylock)
{
	struct pc_mcs l;
	struct pc_mcs_node a, b;
	pc_mcs_init(&l);
	CHECK(pc_mcs_trylock(&l, &a));
	CHECK(!pc_mcs_trylock(&l, &b));
	CHECK(pc_load_relaxed(&l.tail) == &a); /* a failed try leaves no trace */
	pc_mcs_unlock(&l, &a);
	CHECK(pc_load_relaxed(&l.tail) == NULL);
	pc_mcs_lock(&l, &b);
	CHECK(!pc_mcs_trylock(&l, &a));
	pc_mcs_unlock(&l, &b);
	CHECK(pc_mcs_trylock(&l, &a));
	pc_mcs_unlock(&l, &a);
	CHECK(pc_load_relaxed(&l.tail) == NULL);
}

TEST(mutex_trylock)
{
	struct pc_mutex m;
	pc_mutex_init(&m);
	CHECK(pc_mutex_trylock(&m));
	CHECK(!pc_mutex_trylock(&m));
	CHECK_EQ(pc_load_relaxed(&m.state), 1);
	pc_mutex_unlock(&m);
	CHECK_EQ(pc_load_relaxed(&m.state), 0);
	pc_mutex_lock(&m);
	CHECK(!pc_mutex_trylock(&m));
	pc_mutex_unlock(&m);
	CHECK(pc_mutex_trylock(&m));
	pc_mutex_unlock(&m);
	CHECK_EQ(pc_load_relaxed(&m.state), 0);
	CHECK_EQ(pc_load_relaxed(&m.spinq.tail), 0);
}

TEST(generic_trylock)
{
	for (int k = 0; k < PC_LOCK_KIND_COUNT; k++) {
		struct pc_lock l;
		pc_lock_init(&l, "test", (enum pc_lock_kind)k);
		CHECK_EQ(l.kind, k);
		CHECK(!pc_lock_is_locked(&l));
		CHECK(pc_lock_try(&l));
		CHECK(pc_lock_is_locked(&l));
		CHECK(!pc_lock_try(&l));
		pc_lock_release(&l);
		CHECK(!pc_lock_is_locked(&l));
		pc_lock_acquire(&l);
		CHECK(pc_lock_is_locked(&l));
		CHECK(!pc_lock_try(&l));
		pc_lock_release(&l);
		CHECK(pc_lock_try(&l));
		pc_lock_release(&l);
		CHECK(!pc_lock_is_locked(&l));
		CHECK(l.mcs_owner_node == NULL);
		CHECK_EQ(l.acquired_ns, 0); /* statistics are off */
	}
}

TEST(kind_names)
{
	const char *names[] = { "spin", "ticket", "mcs", "mutex" };
	for (int k = 0; k < PC_LOCK_KIND_COUNT; k++) {
		CHECK(strcmp(pc_lock_kind_name((enum pc_lock_kind)k), names[k]) == 0);
		CHECK_EQ(pc_lock_kind_parse(names[k]), k);
	}
	CHECK_EQ(pc_lock_kind_parse("futex"), -1);
	CHECK_EQ(pc_lock_kind_parse(""), -1);
	CHECK_EQ(pc_lock_kind_parse("MCS"), -1);
	CHECK_EQ(pc_lock_kind_parse(NULL), -1);
	CHECK(strcmp(pc_lock_kind_name(PC_LOCK_KIND_COUNT), "unknown") == 0);
}

TEST(hist_bucket)
{
	CHECK_EQ(pc_lock_hist_bucket(0), 0);
	CHECK_EQ(pc_lock_hist_bucket(1), 0);
	CHECK_EQ(pc_lock_hist_bucket(2), 1);
	CHECK_EQ(pc_lock_hist_bucket(3), 1);
	CHECK_EQ(pc_lock_hist_bucket(4), 2);
	CHECK_EQ(pc_lock_hist_bucket(1023), 9);
	CHECK_EQ(pc_lock_hist_bucket(1024), 10);
	CHECK_EQ(pc_lock_hist_bucket((1ull << 39) - 1), 38);
	CHECK_EQ(pc_lock_hist_bucket(1ull << 39), PC_LOCK_HIST_BUCKETS - 1);
	CHECK_EQ(pc_lock_hist_bucket(UINT64_MAX), PC_LOCK_HIST_BUCKETS - 1);
}

TEST(stats_add_and_reset)
{
	struct pc_lock_stats s;
	memset(&s, 0xff, sizeof(s));
	pc_lock_stats_reset(&s);
	CHECK_EQ(pc_load_relaxed(&s.acquisitions), 0);
	CHECK_EQ(pc_load_relaxed(&s.wait_ns_max), 0);
	CHECK_EQ(pc_load_relaxed(&s.wait_hist[PC_LOCK_HIST_BUCKETS - 1]), 0);
	pc_lock_stats_add_wait(&s, 1000);
	pc_lock_stats_add_wait(&s, 10);
	pc_lock_stats_add_wait(&s, 0);
	CHECK_EQ(pc_load_relaxed(&s.wait_ns_total), 1010);
	CHECK_EQ(pc_load_relaxed(&s.wait_ns_max), 1000);
	CHECK_EQ(pc_load_relaxed(&s.wait_hist[9]), 1);
	CHECK_EQ(pc_load_relaxed(&s.wait_hist[3]), 1);
	CHECK_EQ(pc_load_relaxed(&s.wait_hist[0]), 1);
	CHECK_EQ(pc_load_relaxed(&s.contended), 0); /* counted by the caller */
}

/* Acquire A, B; release A; acquire C; release B, C: slots are per lock. */
TEST(generic_mcs_out_of_order)
{
	struct pc_lock a, b, c;
	pc_lock_init(&a, "a", PC_LOCK_MCS);
	pc_lock_init(&b, "b", PC_LOCK_MCS);
	pc_lock_init(&c, "c", PC_LOCK_MCS);
	pc_lock_acquire(&a);
	pc_lock_acquire(&b);
	CHECK(a.mcs_owner_node != b.mcs_owner_node);
	pc_lock_release(&a);
	CHECK(!pc_lock_is_locked(&a));
	CHECK(pc_lock_is_locked(&b));
	pc_lock_acquire(&c);
	CHECK(c.mcs_owner_node != b.mcs_owner_node);
	pc_lock_release(&b);
	CHECK(pc_lock_is_locked(&c));
	pc_lock_release(&c);
	CHECK(!pc_lock_is_locked(&a) && !pc_lock_is_locked(&b) && !pc_lock_is_locked(&c));
	/* All slots are free again: the full nesting depth works, any order. */
	struct pc_lock many[PC_LOCK_MAX_NESTED];
	for (int i = 0; i < PC_LOCK_MAX_NESTED; i++) {
		pc_lock_init(&many[i], "many", PC_LOCK_MCS);
		CHECK(i % 2 ? pc_lock_try(&many[i]) : (pc_lock_acquire(&many[i]), 1));
	}
	for (int i = 0; i < PC_LOCK_MAX_NESTED; i += 2)
		pc_lock_release(&many[i]);
	for (int i = PC_LOCK_MAX_NESTED - 1; i > 0; i -= 2)
		pc_lock_release(&many[i]);
	for (int i = 0; i < PC_LOCK_MAX_NESTED; i++)
		CHECK(!pc_lock_is_locked(&many[i]));
	pc_lock_thread_exit();
}

/* Holding PC_LOCK_MAX_NESTED + 1 generic MCS locks is fatal (SIGABRT). */
TEST(generic_mcs_nesting_bound)
{
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		static struct pc_lock locks[PC_LOCK_MAX_NESTED + 1];
		for (int i = 0; i <= PC_LOCK_MAX_NESTED; i++) {
			pc_lock_init(&locks[i], "nest", PC_LOCK_MCS);
			pc_lock_acquire(&locks[i]);
		}
		_exit(0); /* not reached if the bound is enforced */
	}
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFSIGNALED(status));
	CHECK_EQ(WIFSIGNALED(status) ? WTERMSIG(status) : 0, SIGABRT);
}

/* Held at fork: the child reinitialises and can take every lock again, and
 * the generic MCS slot held at fork time is given back to the child. */
TEST(reinit_after_fork)
{
	static struct pc_lock locks[PC_LOCK_KIND_COUNT];
	for (int k = 0; k < PC_LOCK_KIND_COUNT; k++) {
		pc_lock_init(&locks[k], "fork", (enum pc_lock_kind)k);
		pc_lock_acquire(&locks[k]);
	}
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		pc_lock_fork_child();
		int bad = 0;
		for (int k = 0; k < PC_LOCK_KIND_COUNT; k++) {
			pc_lock_reinit(&locks[k]);
			bad |= pc_lock_is_locked(&locks[k]) || !pc_lock_try(&locks[k]);
			pc_lock_release(&locks[k]);
		}
		/* The slot of the MCS lock held at fork is free: the full depth works. */
		static struct pc_lock more[PC_LOCK_MAX_NESTED];
		for (int i = 0; i < PC_LOCK_MAX_NESTED; i++) {
			pc_lock_init(&more[i], "more", PC_LOCK_MCS);
			pc_lock_acquire(&more[i]);
		}
		for (int i = 0; i < PC_LOCK_MAX_NESTED; i++)
			pc_lock_release(&more[i]);
		_exit(bad ? 1 : 0);
	}
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (int k = 0; k < PC_LOCK_KIND_COUNT; k++) {
		CHECK(pc_lock_is_locked(&locks[k]));
		pc_lock_release(&locks[k]);
	}
}

/* A prefork handler holds many MCS locks (more than the per-thread bound)
 * with pc_lock_acquire_for_fork; the child reinitialises them, the parent
 * releases them, and the nodes all come back (twice round works). */
#define FORK_MANY (8 * PC_LOCK_MAX_NESTED)

/* In the child: reinitialise, use each lock, then hold them all again. */
static void fork_many_child(struct pc_lock *locks)
{
	int bad = 0;
	pc_lock_fork_child();
	for (int i = 0; i < FORK_MANY; i++) {
		pc_lock_reinit(&locks[i]);
		bad |= !pc_lock_try(&locks[i]);
		pc_lock_release(&locks[i]);
	}
	/* The fork nodes came back to the child's pool too. */
	for (int i = 0; i < FORK_MANY; i++)
		pc_lock_acquire_for_fork(&locks[i]);
	for (int i = FORK_MANY; i-- > 0;)
		pc_lock_release(&locks[i]);
	_exit(bad);
}

TEST(acquire_for_fork_many)
{
	enum { N = FORK_MANY };
	static struct pc_lock locks[N];
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < N; i++) {
			pc_lock_init(&locks[i], "fork-many",
				     i < 4 ? (enum pc_lock_kind)i : PC_LOCK_MCS);
			pc_lock_acquire_for_fork(&locks[i]);
		}
		/* The per-thread nodes are untouched: the full depth still works. */
		struct pc_lock nested[PC_LOCK_MAX_NESTED];
		for (int i = 0; i < PC_LOCK_MAX_NESTED; i++) {
			pc_lock_init(&nested[i], "nested", PC_LOCK_MCS);
			pc_lock_acquire(&nested[i]);
		}
		for (int i = 0; i < PC_LOCK_MAX_NESTED; i++)
			pc_lock_release(&nested[i]);
		fflush(NULL);
		pid_t pid = fork();
		REQUIRE(pid >= 0);
		if (pid == 0)
			fork_many_child(locks);
		int status = 0;
		REQUIRE(waitpid(pid, &status, 0) == pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		for (int i = 0; i < N; i++) {
			CHECK(pc_lock_is_locked(&locks[i]));
			pc_lock_release(&locks[i]);
			CHECK(!pc_lock_is_locked(&locks[i]));
		}
	}
}

int main(void)
{
	RUN(spin_trylock);
	RUN(ticket_trylock);
	RUN(ticket_wraps);
	RUN(mcs_trylock);
	RUN(mutex_trylock);
	RUN(generic_trylock);
	RUN(kind_names);
	RUN(hist_bucket);
	RUN(stats_add_and_reset);
	RUN(generic_mcs_out_of_order);
	RUN(generic_mcs_nesting_bound);
	RUN(reinit_after_fork);
	RUN(acquire_for_fork_many);
	return test_report();
}
