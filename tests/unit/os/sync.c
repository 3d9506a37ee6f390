/*
 * tests/unit/os/sync.c - futex wait/wake, the clock, thread ids, getenv,
 * stderr writes and the pc_message / pc_fatal / pc_assert_fail formats.
 *
 * Futex tests join their threads with a timeout, so a lost wake-up fails
 * the test instead of hanging it. Output tests run a forked child whose
 * stderr is a pipe. Worker threads record results in atomics; only the main
 * thread calls CHECK.
 *
 * PC_TEST_LABELS: tsan
 */
#define _GNU_SOURCE
#include "os/os.h"
#include "test.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* pthread_timedjoin_np with a timeout in seconds; true when joined. */
static bool join_within(pthread_t t, int seconds)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += seconds;
	return pthread_timedjoin_np(t, NULL, &ts) == 0;
}

/* ---- futex -------------------------------------------------------------------------- */
TEST(futex_no_sleep)
{
	_Atomic uint32_t w = 5;
	errno = 31;
	os_futex_wait(&w, 4); /* *w != expected: returns at once */
	CHECK_EQ(errno, 31);
	CHECK_EQ(os_futex_wake(&w, 1), 0); /* no sleepers */
	CHECK_EQ(os_futex_wake(&w, INT_MAX), 0);
	CHECK_EQ(errno, 31);
}

static _Atomic uint32_t hand_word, hand_tid, hand_seen;

static void *handoff_waiter(void *arg)
{
	(void)arg;
	atomic_store(&hand_tid, os_thread_id());
	/* acquire: pairs with the main thread's release store of 1. */
	while (pc_load_acquire(&hand_word) == 0)
		os_futex_wait(&hand_word, 0);
	atomic_store(&hand_seen, 1);
	return NULL;
}

/* State letter of a thread of this process from /proc, or 0. */
static char thread_state(uint32_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/task/%u/stat", tid);
	if (os_read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	char *p = strrchr(buf, ')');
	return p != NULL && p[1] == ' ' ? p[2] : 0;
}

/* One sleeper: wake returns 1 and the waiter leaves its loop. */
TEST(futex_handoff)
{
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, handoff_waiter, NULL) == 0);
	uint32_t tid;
	while ((tid = atomic_load(&hand_tid)) == 0)
		sleep_ms(1);
	/* Certain to happen (hand_word stays 0, so the waiter sleeps in the
	 * futex): wait for it however long the scheduler takes (no time limit;
	 * a hang ends the test through ctest's timeout). */
	char st = 0;
	while ((st = thread_state(tid)) != 'S' && st != 0)
		sleep_ms(1);
	CHECK_EQ(st, 'S'); /* asleep in the futex */
	/* release: the waiter's acquire load sees everything before this. */
	pc_store_release(&hand_word, 1);
	CHECK_EQ(os_futex_wake(&hand_word, 1), 1);
	bool joined = join_within(t, 120); /* a hang detector, not a time limit */
	CHECK(joined);
	if (!joined) {
		os_futex_wake(&hand_word, INT_MAX);
		pthread_join(t, NULL);
	}
	CHECK_EQ(atomic_load(&hand_seen), 1);
}

/* Ping-pong: two threads take turns incrementing a word, each sleeping on
 * the futex until the word reaches its turn. A lost wake-up hangs a side. */
#define PINGPONG_ROUNDS 20000
static _Atomic uint32_t pp_word;

static void wait_for_value(_Atomic uint32_t *w, uint32_t target)
{
	uint32_t v;
	/* acquire: pairs with the release increment that made it target. */
	while ((v = pc_load_acquire(w)) != target)
		os_futex_wait(w, v);
}

static void *pingpong_thread(void *arg)
{
	uint32_t parity = (uint32_t)(uintptr_t)arg;
	for (uint32_t i = 0; i < PINGPONG_ROUNDS; i++) {
		wait_for_value(&pp_word, 2 * i + parity);
		/* release: publishes this turn to the other side. */
		atomic_fetch_add_explicit(&pp_word, 1, memory_order_release);
		os_futex_wake(&pp_word, 1);
	}
	return NULL;
}

TEST(futex_pingpong)
{
	pthread_t a, b;
	REQUIRE(pthread_create(&a, NULL, pingpong_thread, (void *)0) == 0);
	REQUIRE(pthread_create(&b, NULL, pingpong_thread, (void *)1) == 0);
	bool ja = join_within(a, 60), jb = join_within(b, 60);
	CHECK(ja && jb);
	if (!ja || !jb) {
		fprintf(stderr, "lost wake-up: word stuck at %u\n", atomic_load(&pp_word));
		exit(1); /* threads are stuck for good */
	}
	CHECK_EQ(atomic_load(&pp_word), 2 * PINGPONG_ROUNDS);
}

#define MANY_WAITERS 4
static _Atomic uint32_t many_word, many_started, many_done;

static void *many_waiter(void *arg)
{
	(void)arg;
	atomic_fetch_add(&many_started, 1);
	/* acquire: pairs with the main thread's release store. */
	while (pc_load_acquire(&many_word) == 0)
		os_futex_wait(&many_word, 0);
	atomic_fetch_add(&many_done, 1);
	return NULL;
}

TEST(futex_wake_all)
{
	pthread_t t[MANY_WAITERS];
	for (int i = 0; i < MANY_WAITERS; i++)
		REQUIRE(pthread_create(&t[i], NULL, many_waiter, NULL) == 0);
	while (atomic_load(&many_started) < MANY_WAITERS)
		sleep_ms(1);
	sleep_ms(20);
	pc_store_release(&many_word, 1); /* release: see many_waiter */
	int woken = os_futex_wake(&many_word, INT_MAX);
	CHECK(woken >= 0 && woken <= MANY_WAITERS);
	for (int i = 0; i < MANY_WAITERS; i++)
		CHECK(join_within(t[i], 120)); /* a hang detector */
	CHECK_EQ(atomic_load(&many_done), MANY_WAITERS);
}

/* ---- clock, threads, environment ----------------------------------------------------- */
TEST(now_monotonic)
{
	uint64_t prev = os_now_ns(), bad = 0;
	for (int i = 0; i < 200000; i++) {
		uint64_t t = os_now_ns();
		bad += t < prev;
		prev = t;
	}
	CHECK_EQ(bad, 0);
	uint64_t t0 = os_now_ns();
	sleep_ms(20);
	uint64_t dt = os_now_ns() - t0;
	CHECK(dt >= 20000000u);
	CHECK(dt < 5000000000u);
	os_yield();
}

static _Atomic uint32_t worker_tid, worker_gettid;

static void *tid_thread(void *arg)
{
	(void)arg;
	atomic_store(&worker_tid, os_thread_id());
	atomic_store(&worker_gettid, (uint32_t)syscall(SYS_gettid));
	return NULL;
}

TEST(thread_id)
{
	pthread_t t;
	uint32_t me = os_thread_id();
	CHECK_EQ(me, (uint32_t)getpid());
	REQUIRE(pthread_create(&t, NULL, tid_thread, NULL) == 0);
	pthread_join(t, NULL);
	CHECK_EQ(atomic_load(&worker_tid), atomic_load(&worker_gettid));
	CHECK(atomic_load(&worker_tid) != me);
	/* After fork the child has a new id: no stale cached value. */
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(os_thread_id() == (uint32_t)getpid() && os_thread_id() != me ? 0 : 1);
	int status;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(getenv)
{
	setenv("PCMALLOC_OS_TEST_VAR", "xyz", 1);
	const char *v = os_getenv("PCMALLOC_OS_TEST_VAR");
	CHECK(v != NULL && strcmp(v, "xyz") == 0);
	unsetenv("PCMALLOC_OS_TEST_VAR");
	CHECK(os_getenv("PCMALLOC_OS_TEST_VAR") == NULL);
}

/* ---- stderr output, via a forked child ---------------------------------------------- */
/* Run fn in a child whose stderr is a pipe; collect up to cap-1 bytes. */
static size_t capture_child(void (*fn)(void), char *out, size_t cap, int *status)
{
	int fds[2];
	REQUIRE(pipe(fds) == 0);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], STDERR_FILENO);
		fn();
		_exit(0);
	}
	close(fds[1]);
	size_t len = 0;
	ssize_t n;
	while ((n = read(fds[0], out + len, cap - 1 - len)) != 0) {
		if (n > 0)
			len += (size_t)n;
		else if (errno != EINTR)
			break;
		if (len + 1 == cap)
			break;
	}
	out[len] = '\0';
	close(fds[0]);
	REQUIRE(waitpid(pid, status, 0) == pid);
	return len;
}

#define BIG_WRITE (256 * 1024) /* several times a pipe's buffer */
static char big_buf[BIG_WRITE + 1];

static void child_big_write(void)
{
	for (size_t i = 0; i < BIG_WRITE; i++)
		big_buf[i] = (char)('a' + i % 26);
	os_write_stderr(big_buf, BIG_WRITE);
}

TEST(write_stderr)
{
	static char out[BIG_WRITE + 16];
	int status;
	size_t n = capture_child(child_big_write, out, sizeof(out), &status);
	CHECK_EQ(n, BIG_WRITE);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	size_t bad = 0;
	for (size_t i = 0; i < n; i++)
		bad += out[i] != (char)('a' + i % 26);
	CHECK_EQ(bad, 0);
}

static void child_message(void)
{
	errno = 55;
	pc_message("hello %d %s", 7, "world");
	if (errno != 55)
		_exit(3);
}

static void child_long_message(void)
{
	memset(big_buf, 'x', 5000);
	big_buf[5000] = '\0';
	pc_message("%s", big_buf);
}

static void child_fatal(void)
{
	pc_fatal("bad %s %u", "thing", 42u);
}

static void child_assert(void)
{
	pc_assert_fail("a == b", "file.c", 12);
}

TEST(messages)
{
	char out[4096];
	int status;
	capture_child(child_message, out, sizeof(out), &status);
	CHECK(strcmp(out, "pcmalloc: hello 7 world\n") == 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	size_t n = capture_child(child_long_message, out, sizeof(out), &status);
	CHECK(n > 900 && n < 1100); /* truncated to the stack buffer */
	CHECK(strncmp(out, "pcmalloc: xxxx", 14) == 0);
	CHECK(n > 0 && out[n - 1] == '\n' && out[n - 2] == 'x');

	capture_child(child_fatal, out, sizeof(out), &status);
	CHECK(strcmp(out, "pcmalloc: fatal: bad thing 42\n") == 0);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);

	capture_child(child_assert, out, sizeof(out), &status);
	CHECK(strcmp(out, "pcmalloc: fatal: assertion failed: a == b (file.c:12)\n") == 0);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
}

int main(void)
{
	os_init();
	RUN(futex_no_sleep);
	RUN(futex_handoff);
	RUN(futex_pingpong);
	RUN(futex_wake_all);
	RUN(now_monotonic);
	RUN(thread_id);
	RUN(getenv);
	RUN(write_stderr);
	RUN(messages);
	return test_report();
}
