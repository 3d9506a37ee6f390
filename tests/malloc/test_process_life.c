/*
 * tests/malloc/test_process_life.c - allocation at every stage of a
 * process's life, not only between the start and the end of main:
 *
 *   preinit:       from .preinit_array, before any shared library's
 *                  constructor has run (so before the allocator's own);
 *   constructor:   from a constructor, including a thread started there;
 *   key_destructor: from pthread key destructors as threads exit, for a key
 *                  created before the allocator's first use and one after,
 *                  and for a destructor that sets its key again (a second
 *                  destructor round);
 *   atexit:        from atexit handlers and destructors while the process
 *                  exits (in a forked child, which reports through a pipe).
 */
#define _GNU_SOURCE
#include "malloc_test.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/wait.h>

/* One round of allocation work of every class and kind; returns the number
 * of things that went wrong. Safe to call from anywhere. */
static int exercise(unsigned seed)
{
	static const size_t ns[] = { 1, 16, 100, 1000, 8192, 8193, 100000, 4 * MiB + 1 };
	int bad = 0;
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		size_t n = ns[i] + seed % 7;
		char *p = p_malloc(n);
		if (!p) {
			bad++;
			continue;
		}
		pattern_fill(p, n);
		char *c = p_calloc(1, n);
		bad += !c || c[0] != 0 || c[n - 1] != 0;
		char *q = p_realloc(p, n * 3);
		bad += !q || !pattern_check_from(q, n, n, pattern_key(p, n), 0);
		void *a = p_memalign(4096, n);
		bad += !a || !is_aligned(a, 4096);
		p_free(a);
		p_free(c);
		p_free(q ? q : p);
	}
	char *s = strdup("an allocation made by the C library"); /* libc's own malloc calls */
	bad += !s;
	free(s);
	return bad;
}

/* ---- before main ----------------------------------------------------------- */
static int preinit_ran, preinit_bad;
static int ctor_ran, ctor_bad, ctor_thread_bad;
static pthread_key_t key_early, key_late;
static bool key_early_ok;

static void preinit(int argc, char **argv, char **envp)
{
	preinit_ran = 1;
	preinit_bad = exercise(1);
}
/* .preinit_array runs before the initialisers of every shared library. */
__attribute__((section(".preinit_array"), used)) static void (*preinit_entry)(int, char **, char **) =
	preinit;

static void *ctor_thread(void *arg)
{
	ctor_thread_bad = exercise(3);
	return NULL;
}

static void key_destructor(void *v);

__attribute__((constructor)) static void constructor(void)
{
	ctor_ran = 1;
	ctor_bad = exercise(2);
	pthread_t t;
	if (pthread_create(&t, NULL, ctor_thread, NULL) == 0)
		pthread_join(t, NULL);
	else
		ctor_thread_bad = 1;
	/* A key made early gets a low number: its destructor tends to run
	 * before those of keys the allocator makes later for itself. */
	key_early_ok = pthread_key_create(&key_early, key_destructor) == 0;
}

TEST(preinit)
{
	CHECK(preinit_ran);
	CHECK_EQ(preinit_bad, 0);
}

TEST(constructor)
{
	CHECK(ctor_ran);
	CHECK_EQ(ctor_bad, 0);
	CHECK_EQ(ctor_thread_bad, 0); /* a thread started in a constructor */
}

/* ---- the dynamic linker allocating -------------------------------------------- */
/* dlopen, dlsym and dlerror allocate through malloc (dlerror's message, the
 * link map), and interposing libraries call dlsym(RTLD_NEXT, "malloc") from
 * inside their own malloc: both must work on pcmalloc, before main too. */
static int dl_round(void)
{
	int bad = 0;
	void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
	bad += h == NULL;
	bad += dlsym(RTLD_DEFAULT, "pcmalloc_no_such_symbol") != NULL;
	bad += dlerror() == NULL; /* the failed lookup left a (malloc'ed) message */
	void *(*next_malloc)(size_t) = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	void *(*any_malloc)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "malloc");
	bad += any_malloc == NULL;
	void *(*use)(size_t) = next_malloc ? next_malloc : any_malloc;
	char *p = use ? use(100) : NULL;
	bad += p == NULL;
	if (p) {
		memset(p, 1, 100);
		p_free(p);
	}
	if (h)
		bad += dlclose(h) != 0;
	return bad;
}

static int dl_ctor_bad = -1;
__attribute__((constructor)) static void dl_ctor(void)
{
	dl_ctor_bad = dl_round();
}

TEST(dynamic_linker)
{
	CHECK_EQ(dl_ctor_bad, 0);
	for (int i = 0; i < 50; i++)
		CHECK_EQ(dl_round(), 0);
}

/* ---- pthread key destructors ----------------------------------------------- */
static atomic_int dtor_calls, dtor_bad;

struct key_value {
	int rounds_left; /* set the key again this many times */
	pthread_key_t key;
	size_t size;
	void *block;
};

static void key_destructor(void *v)
{
	struct key_value *kv = v;
	atomic_fetch_add(&dtor_calls, 1);
	int bad = !pattern_check(kv->block, kv->size);
	p_free(kv->block);
	bad += exercise((unsigned)kv->rounds_left + 4);
	if (kv->rounds_left > 0) {
		/* a new value, allocated here: the destructor runs again */
		struct key_value *again = p_malloc(sizeof(*again));
		if (again) {
			*again = (struct key_value){ kv->rounds_left - 1, kv->key, 5000, p_malloc(5000) };
			if (again->block)
				pattern_fill(again->block, again->size);
			else
				bad++;
			pthread_setspecific(kv->key, again);
		} else {
			bad++;
		}
	}
	p_free(kv);
	atomic_fetch_add(&dtor_bad, bad);
}

static int set_key(pthread_key_t key, size_t size)
{
	struct key_value *kv = p_malloc(sizeof(*kv));
	if (!kv)
		return 1;
	*kv = (struct key_value){ 1, key, size, p_malloc(size) };
	if (!kv->block)
		return 1;
	pattern_fill(kv->block, size);
	return pthread_setspecific(key, kv) != 0;
}

static void *key_thread(void *arg)
{
	int bad = exercise(9); /* the allocator sets up this thread first */
	bad += set_key(key_early, 100 + (size_t)(uintptr_t)arg);
	bad += set_key(key_late, 70000 + (size_t)(uintptr_t)arg);
	atomic_fetch_add(&dtor_bad, bad);
	return NULL;
}

TEST(key_destructor)
{
	REQUIRE(key_early_ok);
	REQUIRE(pthread_key_create(&key_late, key_destructor) == 0);
	enum { THREADS = 16 };
	pthread_t th[THREADS];
	int started = 0;
	for (uintptr_t i = 0; i < THREADS; i++)
		started += pthread_create(&th[i], NULL, key_thread, (void *)i) == 0;
	CHECK_EQ(started, THREADS);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	/* each thread: two keys, each destructed twice (set again once) */
	CHECK_EQ(atomic_load(&dtor_calls), started * 2 * 2);
	CHECK_EQ(atomic_load(&dtor_bad), 0);
}

/* ---- the end of the process ------------------------------------------------ */
static int exit_fd = -1; /* set in the child only */

static void report_stage(const char *stage, int bad)
{
	if (exit_fd < 0)
		return;
	char line[64];
	int n = snprintf(line, sizeof(line), "%s %d\n", stage, bad);
	ssize_t w = write(exit_fd, line, (size_t)n);
	(void)w;
}

static void atexit_early(void) { report_stage("atexit-registered-first", exercise(11)); }
static void atexit_late(void) { report_stage("atexit-registered-last", exercise(12)); }

__attribute__((destructor)) static void destructor(void)
{
	report_stage("destructor", exercise(13));
}

TEST(atexit)
{
	int fd[2];
	REQUIRE(pipe(fd) == 0);
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		close(fd[0]);
		exit_fd = fd[1];
		atexit(atexit_early);
		void *keep = p_malloc(12345); /* alive at exit */
		(void)keep;
		atexit(atexit_late);
		exit(0); /* runs the handlers and destructors */
	}
	close(fd[1]);
	char buf[512];
	size_t len = 0;
	ssize_t n;
	while (len < sizeof(buf) - 1 && (n = read(fd[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = 0;
	close(fd[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* exit completed */
	CHECK(strstr(buf, "atexit-registered-last 0\n") != NULL);
	CHECK(strstr(buf, "atexit-registered-first 0\n") != NULL);
	CHECK(strstr(buf, "destructor 0\n") != NULL);
	if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) || !strstr(buf, "destructor 0\n"))
		fprintf(stderr, "  child status %#x, reported:\n%s", status, buf);
}

int main(void)
{
	RUN(malloc_interposed);
	RUN(preinit);
	RUN(constructor);
	RUN(dynamic_linker);
	RUN(key_destructor);
	RUN(atexit);
	return test_report();
}
