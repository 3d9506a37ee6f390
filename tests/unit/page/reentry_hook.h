/*
 * tests/unit/page/reentry_hook.h - what the re-entry tests share
 * (tests/unit/page/reentry.c, tests/unit/malloc/reentry.c): the page layer's
 * test hook that raises SIGUSR1 once, at the armed test point (the signal is
 * delivered before raise() returns, so the lock of that point is held while
 * the test's handler runs), and the SIGALRM watchdog that turns a re-entered
 * call that hangs into a failure. Include after test.h and page/page.h.
 */
#ifndef PC_TEST_REENTRY_HOOK_H
#define PC_TEST_REENTRY_HOOK_H

#include <signal.h>
#include <unistd.h>

static _Atomic int armed = -1; /* the hook point that raises, once */
static _Atomic int fired;

static void hook(enum pc_page_test_point at)
{
	if ((int)at == pc_load_relaxed(&armed) && pc_load_relaxed(&fired) == 0) {
		pc_store_relaxed(&fired, 1);
		raise(SIGUSR1); /* delivered before raise returns: the lock is held */
	}
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "watchdog: a re-entered call hangs\n";
	ssize_t r = write(2, msg, sizeof(msg) - 1);
	(void)r;
	_exit(2);
}

#endif /* PC_TEST_REENTRY_HOOK_H */
