/*
 * tests/unit/os/rseq.c - the inline restartable sequences (os/rseq_x86_64.h):
 * what push, pop, pop_many, push_many, slot_cas and stack_resize return, and
 * each one's abort path (the moves' also in the middle of their copy, with
 * elements copied before the fault), forced
 * deterministically: the memory a section reads is made inaccessible, so the
 * section faults between its start and its commit. The kernel then aborts
 * the section before it delivers SIGSEGV (the handler's saved instruction
 * pointer is the abort handler, right after the RSEQ_SIG word); the handler
 * makes the memory accessible again and returns to the abort handler, which
 * must re-arm and run the section again to completion.
 *
 * And the exit of a thread that is not registered, on a stand-in for the
 * registration whose cpu_id the test sets (not_registered_fails).
 *
 * Skipped (reported, passing) where glibc registered no rseq area
 * (valgrind, GLIBC_TUNABLES=glibc.pthread.rseq=0) and in sanitizer builds,
 * whose runtimes handle SIGSEGV themselves.
 */
#define _GNU_SOURCE
#include "os/os.h"
#include "test.h"

#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define CAP 4

static char *page;             /* the slots or the stack (whole pages) */
static size_t page_size;
static volatile sig_atomic_t faults, at_abort;

/* A stack at the start of `mem`, with room for CAP objects. */
static struct os_rseq_stack *stack_at(void *mem)
{
	struct os_rseq_stack *st = mem;
	st->count = 0;
	st->capacity = CAP;
	st->link = NULL;
	return st;
}

static void on_segv(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	const ucontext_t *uc = ctx;
	const unsigned char *ip = (const unsigned char *)uc->uc_mcontext.gregs[REG_RIP];
	uint32_t word;
	memcpy(&word, ip - 4, sizeof(word));
	if ((char *)si->si_addr >= page && (char *)si->si_addr < page + page_size) {
		faults++;
		if (word == OS_RSEQ_SIG)
			at_abort++; /* the kernel moved us to an abort handler */
		mprotect(page, page_size, PROT_READ | PROT_WRITE);
		return;
	}
	signal(SIGSEGV, SIG_DFL); /* a real crash */
}

static void *slots_new(void)
{
	size_t bytes = (size_t)os_cpu_count() << OS_RSEQ_SLOT_SHIFT;
	void *slots = NULL;
	REQUIRE(posix_memalign(&slots, 64, bytes) == 0);
	memset(slots, 0, bytes);
	return slots;
}

static void slots_point_to(void *slots, void *stack)
{
	for (unsigned c = 0; c < os_cpu_count(); c++)
		*(void **)((char *)slots + ((size_t)c << OS_RSEQ_SLOT_SHIFT)) = stack;
}

static void arm_fault(void)
{
	faults = at_abort = 0;
	REQUIRE(mprotect(page, page_size, PROT_NONE) == 0);
}

TEST(push_pop_results)
{
	void *slots = slots_new();
	struct os_rseq_stack *st = stack_at(page);
	slots_point_to(slots, st);
	int a, b, c, d, e;
	CHECK(os_rseq_pop(slots) == NULL);            /* empty */
	CHECK_EQ(os_rseq_push(slots, &a), 1);
	CHECK_EQ(os_rseq_push(slots, &a), -1);        /* on top: double free */
	CHECK_EQ(os_rseq_push(slots, &b), 1);
	CHECK_EQ(os_rseq_push(slots, &a), -1);        /* second from the top */
	CHECK_EQ(os_rseq_push(slots, &c), 1);
	CHECK_EQ(os_rseq_push(slots, &d), 1);
	CHECK_EQ(os_rseq_push(slots, &e), 0);         /* full */
	CHECK_EQ(os_rseq_push(slots, &d), -1);        /* checked when full too */
	CHECK_EQ(st->count, CAP);
	CHECK(os_rseq_pop(slots) == &d);
	CHECK(os_rseq_pop(slots) == &c);
	CHECK(os_rseq_pop(slots) == &b);
	CHECK(os_rseq_pop(slots) == &a);
	CHECK(os_rseq_pop(slots) == NULL);
	CHECK_EQ(st->count, 0);
	free(slots);
}

TEST(pop_abort_retries)
{
	void *slots = slots_new();
	struct os_rseq_stack *st = stack_at(page);
	slots_point_to(slots, st);
	int a, b;
	CHECK_EQ(os_rseq_push(slots, &a), 1);
	CHECK_EQ(os_rseq_push(slots, &b), 1);
	arm_fault(); /* the section faults reading count */
	void *got = os_rseq_pop(slots);
	CHECK_EQ(faults, 1);
	CHECK_EQ(at_abort, 1);
	CHECK(got == &b);
	CHECK_EQ(st->count, 1);
	free(slots);
}

TEST(push_abort_retries)
{
	void *slots = slots_new();
	struct os_rseq_stack *st = stack_at(page);
	slots_point_to(slots, st);
	int a, b;
	CHECK_EQ(os_rseq_push(slots, &a), 1);
	arm_fault();
	CHECK_EQ(os_rseq_push(slots, &b), 1);
	CHECK_EQ(faults, 1);
	CHECK_EQ(at_abort, 1);
	CHECK_EQ(st->count, 2);
	CHECK(st->objects[1] == &b);
	arm_fault(); /* the double-free exit after an abort */
	CHECK_EQ(os_rseq_push(slots, &b), -1);
	CHECK_EQ(at_abort, 1);
	CHECK_EQ(st->count, 2);
	free(slots);
}

TEST(move_many_results)
{
	void *slots = slots_new();
	void *mem = NULL;
	REQUIRE(posix_memalign(&mem, 64, sizeof(struct os_rseq_stack) + CAP * sizeof(void *)) == 0);
	struct os_rseq_stack *st = stack_at(mem);
	slots_point_to(slots, st);
	int a, b, c, d, e;
	void *in[] = { &a, &b, &c, &d, &e }, *out[CAP + 1] = { NULL };
	CHECK_EQ(os_rseq_pop_many(slots, out, 3), 0);     /* empty */
	CHECK_EQ(os_rseq_push_many(slots, in, 0), 0);     /* nothing asked */
	CHECK_EQ(os_rseq_push_many(slots, in, 3), 3);     /* a b c */
	CHECK_EQ(st->count, 3);
	CHECK_EQ(os_rseq_push_many(slots, in + 3, 2), 1); /* room for d only */
	CHECK_EQ(st->count, CAP);
	CHECK(st->objects[3] == &d);
	CHECK_EQ(os_rseq_push_many(slots, in + 4, 1), 0); /* full */
	CHECK_EQ(os_rseq_pop_many(slots, out, 0), 0);     /* nothing asked */
	CHECK_EQ(os_rseq_pop_many(slots, out, 2), 2);     /* the top two, in order */
	CHECK(out[0] == &c && out[1] == &d);
	CHECK_EQ(st->count, 2);
	CHECK_EQ(os_rseq_pop_many(slots, out, 5), 2);     /* all that is left */
	CHECK(out[0] == &a && out[1] == &b);
	CHECK_EQ(st->count, 0);
	CHECK(os_rseq_pop(slots) == NULL);
	st->capacity = 0;                                 /* the capacity-0 stack: */
	CHECK_EQ(os_rseq_push_many(slots, in, 1), 0);     /* always full */
	free(mem);
	free(slots);
}

TEST(move_many_abort_retries)
{
	/* The stack elsewhere, the buffer on the page: each section faults in
	 * the middle of its copy loop, after its first reads. */
	void *slots = slots_new();
	void *mem = NULL;
	REQUIRE(posix_memalign(&mem, 64, sizeof(struct os_rseq_stack) + CAP * sizeof(void *)) == 0);
	struct os_rseq_stack *st = stack_at(mem);
	slots_point_to(slots, st);
	int a, b, c;
	void **buf = (void **)(void *)page;
	buf[0] = &a, buf[1] = &b, buf[2] = &c;
	arm_fault(); /* push_many faults reading in[0] */
	CHECK_EQ(os_rseq_push_many(slots, buf, 3), 3);
	CHECK_EQ(faults, 1);
	CHECK_EQ(at_abort, 1);
	CHECK_EQ(st->count, 3);
	CHECK(st->objects[0] == &a && st->objects[1] == &b && st->objects[2] == &c);
	buf[0] = buf[1] = NULL;
	arm_fault(); /* pop_many faults writing out[0] */
	CHECK_EQ(os_rseq_pop_many(slots, buf, 2), 2);
	CHECK_EQ(faults, 1);
	CHECK_EQ(at_abort, 1);
	CHECK_EQ(st->count, 1); /* committed once */
	CHECK(buf[0] == &b && buf[1] == &c);
	/* The stack on the page: the fault on reading count (before any copy). */
	struct os_rseq_stack *pst = stack_at(page);
	slots_point_to(slots, pst);
	void *in[] = { &a, &b };
	arm_fault();
	CHECK_EQ(os_rseq_push_many(slots, in, 2), 2);
	CHECK_EQ(at_abort, 1);
	CHECK_EQ(pst->count, 2);
	void *out[2] = { NULL, NULL };
	arm_fault();
	CHECK_EQ(os_rseq_pop_many(slots, out, 2), 2);
	CHECK_EQ(at_abort, 1);
	CHECK(out[0] == &a && out[1] == &b);
	CHECK_EQ(pst->count, 0);
	/* A fault at the third element (the buffer's first two words on the
	 * accessible page before): the restart starts the copy over with two
	 * elements already copied, and the result is still exactly the three,
	 * in order, committed once. */
	slots_point_to(slots, st);
	st->count = 0;
	void **edge = (void **)(void *)page - 2;
	edge[0] = &a, edge[1] = &b;
	((void **)(void *)page)[0] = &c;
	arm_fault();
	CHECK_EQ(os_rseq_push_many(slots, edge, 3), 3);
	CHECK_EQ(faults, 1);
	CHECK_EQ(at_abort, 1);
	CHECK_EQ(st->count, 3);
	CHECK(st->objects[0] == &a && st->objects[1] == &b && st->objects[2] == &c);
	edge[0] = edge[1] = NULL;
	arm_fault();
	CHECK_EQ(os_rseq_pop_many(slots, edge, 3), 3);
	CHECK_EQ(faults, 1);
	CHECK_EQ(at_abort, 1);
	CHECK_EQ(st->count, 0);
	CHECK(edge[0] == &a && edge[1] == &b && ((void **)(void *)page)[0] == &c);
	free(mem);
	free(slots);
}

TEST(slot_cas_abort_retries)
{
	/* The slots themselves on the page: the section faults reading the slot. */
	struct os_rseq_stack one, two;
	slots_point_to(page, &one);
	unsigned cpu = (unsigned)os_rseq_cpu_id();
	arm_fault();
	/* Between reading cpu and the call we may migrate: then it fails
	 * without reading the slot; retry until it ran on its CPU. */
	bool stored = false;
	for (int i = 0; i < 1000 && !stored; i++) {
		stored = os_rseq_slot_cas(page, cpu, &one, &two);
		if (!stored)
			cpu = (unsigned)os_rseq_cpu_id();
	}
	CHECK(stored);
	CHECK_EQ(faults, 1);
	CHECK_EQ(at_abort, 1);
	CHECK(*(void **)(page + ((size_t)cpu << OS_RSEQ_SLOT_SHIFT)) == &two);
	CHECK(!os_rseq_slot_cas(page, cpu, &one, &two)); /* no longer holds old */
}

/* os_rseq_stack_resize: run until it ran on the CPU it names (a migration
 * between reading the CPU and the call fails it). */
static bool resize_here(void *slots, struct os_rseq_stack *st, uint32_t old_cap, uint32_t new_cap)
{
	for (int i = 0; i < 1000; i++) {
		unsigned cpu = (unsigned)os_rseq_cpu_id();
		if (os_rseq_stack_resize(slots, cpu, st, old_cap, new_cap))
			return true;
		if ((unsigned)os_rseq_cpu_id() == cpu && st->capacity != old_cap)
			return false;
		if ((unsigned)os_rseq_cpu_id() == cpu && st->count > new_cap)
			return false;
	}
	return false;
}

TEST(stack_resize_results)
{
	void *slots = slots_new();
	void *mem = NULL;
	REQUIRE(posix_memalign(&mem, 64, sizeof(struct os_rseq_stack) + CAP * sizeof(void *)) == 0);
	struct os_rseq_stack *st = stack_at(mem), other;
	slots_point_to(slots, st);
	int x, y;
	CHECK_EQ(os_rseq_push(slots, &x), 1);
	CHECK_EQ(os_rseq_push(slots, &y), 1);
	CHECK(resize_here(slots, st, CAP, 3));      /* lowered to >= count */
	CHECK_EQ(st->capacity, 3);
	CHECK(!resize_here(slots, st, CAP, 2));     /* old capacity wrong */
	CHECK(!resize_here(slots, st, 3, 1));       /* count 2 > 1 */
	CHECK_EQ(st->capacity, 3);
	CHECK(resize_here(slots, st, 3, 2));        /* count 2 == 2: allowed */
	int z;
	CHECK_EQ(os_rseq_push(slots, &z), 0);       /* full at the new capacity */
	slots_point_to(slots, &other);              /* the slot holds another stack */
	CHECK(!resize_here(slots, st, 2, CAP));
	slots_point_to(slots, st);
	if (os_cpu_count() > 1) { /* named another CPU: fails, nothing stored */
		unsigned cpu = (unsigned)os_rseq_cpu_id();
		CHECK(!os_rseq_stack_resize(slots, (cpu + 1) % os_cpu_count(), st, 2, CAP) ||
		      (unsigned)os_rseq_cpu_id() != cpu);
	}
	free(mem);
	free(slots);
}

TEST(stack_resize_abort_retries)
{
	/* The slots on the page: the section faults reading its slot. */
	void *mem = NULL;
	REQUIRE(posix_memalign(&mem, 64, sizeof(struct os_rseq_stack) + CAP * sizeof(void *)) == 0);
	struct os_rseq_stack *st = stack_at(mem);
	slots_point_to(page, st);
	arm_fault();
	bool stored = false;
	for (int i = 0; i < 1000 && !stored; i++)
		stored = os_rseq_stack_resize(page, (unsigned)os_rseq_cpu_id(), st, CAP, 2);
	CHECK(stored);
	CHECK_EQ(faults, 1);
	CHECK_EQ(at_abort, 1);
	CHECK_EQ(st->capacity, 2);
	free(mem);
}

/* A thread-local stand-in for glibc's struct rseq (cpu_id_start, cpu_id,
 * rseq_cs), which os_rseq_offset is pointed at: the kernel never sees it,
 * so a section on it is never aborted, and its cpu_id is whatever the test
 * writes. */
static __thread struct {
	uint32_t cpu_id_start;
	int32_t cpu_id;
	uint64_t rseq_cs;
} fake_rseq __attribute__((aligned(32)));

/* The "not registered" exit of every section that reads a CPU's stack:
 * with a negative cpu_id (glibc's -1 before registration, -2 when it
 * failed, and the extremes) pop, push, pop_many and push_many fail and
 * leave the stack as it was, never indexing the slots with it (the sign
 * test is the flags of the shift that scales cpu_id, rseq_x86_64.h). CPU 0
 * on the same stand-in works, so the stand-in is what the sections read.
 * Needs no registration and no kernel: runs everywhere. */
TEST(not_registered_fails)
{
	ptrdiff_t saved = os_rseq_offset;
	char *tp;
	__asm__("movq %%fs:0, %0" : "=r"(tp)); /* glibc: the thread pointer is at %fs:0 */
	os_rseq_offset = (char *)&fake_rseq - tp;
	void *slots = slots_new();
	struct os_rseq_stack *st = NULL;
	REQUIRE(posix_memalign((void **)&st, 64, 4096) == 0);
	st->count = 0;
	st->capacity = CAP;
	st->link = NULL;
	slots_point_to(slots, st);
	int a, b, c;
	void *in[2] = { &b, &c }, *out[2] = { NULL, NULL };
	fake_rseq.cpu_id = 0;
	CHECK_EQ(os_rseq_push(slots, &a), 1);
	CHECK_EQ(os_rseq_push(slots, &b), 1);
	static const int32_t ids[] = { -1, -2, INT32_MIN, -65536 };
	for (size_t i = 0; i < PC_ARRAY_SIZE(ids); i++) {
		fake_rseq.cpu_id = ids[i];
		CHECK(os_rseq_pop(slots) == NULL);
		CHECK_EQ(os_rseq_push(slots, &c), 0);
		CHECK_EQ(os_rseq_push(slots, &b), 0); /* not even the double-free test */
		CHECK_EQ(os_rseq_pop_many(slots, out, 2), 0);
		CHECK_EQ(os_rseq_push_many(slots, in, 2), 0);
		CHECK_EQ(st->count, 2);
		CHECK(st->objects[0] == &a && st->objects[1] == &b && out[0] == NULL);
	}
	fake_rseq.cpu_id = 0;
	CHECK(os_rseq_pop(slots) == &b);
	CHECK_EQ(st->count, 1);
	os_rseq_offset = saved;
	free(st);
	free(slots);
}

int main(void)
{
	os_init();
	RUN(not_registered_fails); /* before the skips below: it needs neither */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	printf("skipped: sanitizer build\n");
	return test_report();
#endif
	if (!os_rseq_setup()) {
		printf("skipped: no rseq registration\n");
		return test_report();
	}
	size_t unit = (size_t)sysconf(_SC_PAGESIZE);
	page_size = (((size_t)os_cpu_count() << OS_RSEQ_SLOT_SHIFT) + unit - 1) / unit * unit;
	/* One accessible page before the one the tests guard (a copy that
	 * faults in its middle, move_many_abort_retries). */
	char *two = mmap(NULL, 2 * page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	REQUIRE(two != MAP_FAILED);
	page = two + page_size;
	struct sigaction sa = {0};
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	REQUIRE(sigaction(SIGSEGV, &sa, NULL) == 0);
	RUN(push_pop_results);
	RUN(pop_abort_retries);
	RUN(push_abort_retries);
	RUN(move_many_results);
	RUN(move_many_abort_retries);
	RUN(slot_cas_abort_retries);
	RUN(stack_resize_results);
	RUN(stack_resize_abort_retries);
	return test_report();
}
