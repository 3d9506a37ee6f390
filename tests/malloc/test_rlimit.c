/*
 * tests/malloc/test_rlimit.c - running out of memory, cleanly and again.
 *
 * In a forked child (the limit must not touch the test itself), RLIMIT_AS is
 * set to the child's current address space + HEADROOM. Then ROUNDS times:
 * THREADS threads allocate random sizes (small, large and huge mixed) until
 * allocations keep failing; every NULL must come with errno ENOMEM. Each
 * thread then frees another thread's blocks, and the threads exit.
 *
 * The child reports each round's total; the parent checks that
 *   - the child exited 0 (no crash, no abort),
 *   - nothing at all was written to the child's stderr (captured through a
 *     pipe: an allocator must not print when memory runs out),
 *   - every failure had errno ENOMEM,
 *   - round 1 got a fair share of the headroom, and rounds 2 and 3 each got
 *     at least ROUND_RATIO of round 1 (running out leaks nothing).
 */
#define _GNU_SOURCE
#include "malloc_test.h"

#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define HEADROOM (512 * MiB)
#define THREADS 4
#define ROUNDS 3
#define ROUND_RATIO 0.75
#define GIVE_UP 32 /* consecutive failures after which a thread stops */
#define CHILD_ALARM_S 60

struct result {
	size_t round_bytes[ROUNDS];
	long round_blocks[ROUNDS];
	long failures, bad_errno, create_failed, damaged;
};

struct worker {
	int index;
	int round;
	void *list; /* blocks linked through their first word */
	size_t bytes;
	long blocks, failures, bad_errno, damaged;
};

static struct worker workers[THREADS];
static pthread_barrier_t all_started, all_full;

/* Small most of the time, so that a thread stops only when even small
 * blocks fail; large and huge take most of the bytes. */
static size_t oom_size(uint64_t *rng)
{
	unsigned u = (unsigned)(test_rand(rng) % 100);
	size_t n;
	if (u < 70)
		n = random_small(rng);
	else if (u < 95)
		n = random_large(rng);
	else
		n = random_huge(rng, 64 * MiB);
	return n < 16 ? 16 : n;
}

static void *oom_worker(void *arg)
{
	struct worker *w = arg;
	uint64_t rng = (uint64_t)w->round * 1000 + (uint64_t)w->index + 1;
	int fails_in_a_row = 0;
	/* All threads exist (their stacks are mapped) before any allocates. */
	pthread_barrier_wait(&all_started);
	while (fails_in_a_row < GIVE_UP) {
		size_t n = oom_size(&rng);
		errno = 0;
		void **p = p_malloc(n);
		if (!p) {
			w->failures++;
			w->bad_errno += errno != ENOMEM;
			fails_in_a_row++;
			continue;
		}
		fails_in_a_row = 0;
		/* link it in; mark the last byte too (a second page of a big
		 * block) when it is not part of the two link words */
		p[1] = (void *)n;
		p[0] = w->list;
		if (n > 16)
			((char *)p)[n - 1] = 0x11;
		w->list = p;
		w->bytes += n;
		w->blocks++;
	}
	pthread_barrier_wait(&all_full);
	/* Free the next thread's blocks: frees from another thread. */
	struct worker *other = &workers[(w->index + 1) % THREADS];
	void **p = other->list;
	while (p) {
		void **next = p[0];
		size_t n = (size_t)p[1];
		w->damaged += n < 16 || (n > 16 && ((char *)p)[n - 1] != 0x11);
		p_free(p);
		p = next;
	}
	return NULL;
}

static void child(int result_fd)
{
	alarm(CHILD_ALARM_S);
	struct result res = { { 0 }, { 0 }, 0, 0, 0, 0 };
	struct rlimit rl = { vm_bytes() + HEADROOM, vm_bytes() + HEADROOM };
	if (setrlimit(RLIMIT_AS, &rl) != 0)
		_exit(3);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 128 * KiB);
	for (int round = 0; round < ROUNDS; round++) {
		pthread_t th[THREADS];
		pthread_barrier_init(&all_started, NULL, THREADS);
		pthread_barrier_init(&all_full, NULL, THREADS);
		memset(workers, 0, sizeof(workers));
		for (int t = 0; t < THREADS; t++) {
			workers[t].index = t;
			workers[t].round = round;
		}
		int started = 0;
		for (int t = 0; t < THREADS; t++) {
			if (pthread_create(&th[t], &attr, oom_worker, &workers[t]) != 0)
				break;
			started++;
		}
		if (started < THREADS) {
			/* cannot go on: the barriers wait for all */
			res.create_failed++;
			ssize_t w = write(result_fd, &res, sizeof(res));
			(void)w;
			_exit(4);
		}
		for (int t = 0; t < THREADS; t++)
			pthread_join(th[t], NULL);
		pthread_barrier_destroy(&all_started);
		pthread_barrier_destroy(&all_full);
		for (int t = 0; t < THREADS; t++) {
			res.round_bytes[round] += workers[t].bytes;
			res.round_blocks[round] += workers[t].blocks;
			res.failures += workers[t].failures;
			res.bad_errno += workers[t].bad_errno;
			res.damaged += workers[t].damaged;
		}
	}
	pthread_attr_destroy(&attr);
	ssize_t w = write(result_fd, &res, sizeof(res));
	_exit(w == (ssize_t)sizeof(res) ? 0 : 5);
}

TEST(out_of_memory)
{
	int res_pipe[2], err_pipe[2];
	REQUIRE(pipe(res_pipe) == 0 && pipe(err_pipe) == 0);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		close(res_pipe[0]);
		close(err_pipe[0]);
		dup2(err_pipe[1], STDERR_FILENO);
		close(err_pipe[1]);
		child(res_pipe[1]);
	}
	close(res_pipe[1]);
	close(err_pipe[1]);
	/* Read the child's stderr until it closes; the results are small and
	 * wait in their pipe. */
	char errbuf[4096];
	size_t errlen = 0;
	for (;;) {
		ssize_t n = read(err_pipe[0], errbuf + errlen, sizeof(errbuf) - 1 - errlen);
		if (n <= 0)
			break;
		errlen += (size_t)n;
		if (errlen == sizeof(errbuf) - 1)
			break; /* enough to show */
	}
	errbuf[errlen] = 0;
	struct result res;
	memset(&res, 0, sizeof(res));
	ssize_t got = read(res_pipe[0], &res, sizeof(res));
	int status = 0;
	waitpid(pid, &status, 0);
	close(res_pipe[0]);
	close(err_pipe[0]);

	CHECK(WIFEXITED(status)); /* no crash */
	if (!WIFEXITED(status))
		fprintf(stderr, "  child killed by signal %d\n", WTERMSIG(status));
	CHECK_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
	CHECK_EQ(errlen, 0); /* nothing on stderr */
	if (errlen)
		fprintf(stderr, "  child's stderr: <<%s>>\n", errbuf);
	CHECK(got == (ssize_t)sizeof(res));
	if (got != (ssize_t)sizeof(res))
		return;
	for (int r = 0; r < ROUNDS; r++)
		printf("rlimit: round %d: %ld blocks, %zu MiB\n", r + 1, res.round_blocks[r],
		       res.round_bytes[r] / MiB);
	printf("rlimit: %ld failed allocations, %ld without ENOMEM\n", res.failures, res.bad_errno);
	CHECK_EQ(res.create_failed, 0);
	CHECK(res.failures >= THREADS * GIVE_UP); /* memory did run out */
	CHECK_EQ(res.bad_errno, 0);               /* every NULL came with ENOMEM */
	CHECK_EQ(res.damaged, 0);
	CHECK(res.round_bytes[0] >= HEADROOM / 4); /* a fair share of the headroom */
	for (int r = 1; r < ROUNDS; r++)
		CHECK((double)res.round_bytes[r] >= ROUND_RATIO * (double)res.round_bytes[0]);
}

int main(void)
{
	RUN(malloc_interposed);
	RUN(out_of_memory);
	return test_report();
}
