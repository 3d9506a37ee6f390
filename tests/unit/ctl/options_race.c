/*
 * tests/unit/ctl/options_race.c - the options race of issue 12: a caller
 * that races with the first pc_options_init() must not go on with the
 * default start-up options (and build locks and zones with them) while the
 * first caller is still applying PCMALLOC_OPTIONS. pc_options_init runs in
 * a pc_once, so the racer waits until the environment is in.
 *
 * Deterministic through the test seam pc_once_test_hook (os.h): thread A
 * starts the init and is held at its RUN event until thread B has either
 * reached its WAIT event (B waits for A: right) or returned from
 * pc_options_init (B did not wait: the bug). B then reads the options. The
 * verdict: B waited, and saw the values from the environment, not the
 * defaults. Nothing else in this process touches the options first.
 */
#define _GNU_SOURCE
#include "test.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "ctl/options.h"
#include "lock/lock.h"
#include "os/os.h"

static _Atomic(_Atomic uint32_t *) options_state; /* the once A runs */
static _Atomic int a_running, b_waiting, b_returned;
static long b_lock_kind = -1, b_scale = -1;

static void hook(_Atomic uint32_t *state, enum pc_once_event event)
{
	if (event == PC_ONCE_EVENT_RUN && atomic_load(&options_state) == NULL) {
		atomic_store(&options_state, state);
		atomic_store(&a_running, 1);
		/* Hold A inside the init until B has shown what it does. */
		while (!atomic_load(&b_waiting) && !atomic_load(&b_returned))
			sched_yield();
	} else if (event == PC_ONCE_EVENT_WAIT && state == atomic_load(&options_state)) {
		atomic_store(&b_waiting, 1);
	}
}

static void *first_caller(void *arg)
{
	(void)arg;
	pc_options_init();
	return NULL;
}

static void *racing_caller(void *arg)
{
	(void)arg;
	pc_options_init();
	b_lock_kind = pc_option(PC_OPT_LOCK_KIND);
	b_scale = pc_option(PC_OPT_VM_PCP_BATCH_SCALE_MAX);
	atomic_store(&b_returned, 1);
	return NULL;
}

TEST(racing_caller_sees_environment)
{
	/* Both differ from the defaults (mutex, 5). */
	REQUIRE(setenv("PCMALLOC_OPTIONS", "lock.kind=spin", 1) == 0);
	REQUIRE(setenv("PCMALLOC_VM_PCP_BATCH_SCALE_MAX", "2", 1) == 0);
	REQUIRE(pc_option(PC_OPT_LOCK_KIND) == PC_LOCK_MUTEX);
	atomic_store(&pc_once_test_hook, hook);
	pthread_t a, b;
	REQUIRE(pthread_create(&a, NULL, first_caller, NULL) == 0);
	while (!atomic_load(&a_running))
		sched_yield();
	REQUIRE(pthread_create(&b, NULL, racing_caller, NULL) == 0);
	pthread_join(b, NULL);
	pthread_join(a, NULL);
	atomic_store(&pc_once_test_hook, NULL);
	CHECK(atomic_load(&b_waiting));
	CHECK_EQ(b_lock_kind, PC_LOCK_SPIN);
	CHECK_EQ(b_scale, 2);
}

int main(void)
{
	RUN(racing_caller_sees_environment);
	return test_report();
}
