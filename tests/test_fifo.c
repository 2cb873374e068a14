/* FIFO: waiters that drew their tickets in a known order get the lock in that
 * order, whatever the backoff and the waiting policy, in strict FIFO
 * (TICKET_QUEUE=0, or TICKET_BYPASS=0).  The default is not FIFO, nor is a
 * process-shared lock in any mode (no queue: ticket_lock.h): there, every
 * thread must still get the lock. */
#include "modes.h"
#include "probe_run.h"

/*
 * A run takes well under a second; a waiter that is never served (a queue
 * that skips a ticket) hangs it for good.  The probe's limit makes that a
 * failure in PROBE_LIMIT_S, and kills the probe; each test's Criterion
 * timeout, above it so that the probe is killed and reaped first, is the
 * last resort.  (At 60 s, `make mutants` spent 440 s on one such mutant.)
 */
#define PROBE_LIMIT_S 10
#define TEST_LIMIT_S  20

#define FIFO_TEST(name, env)                                                              \
	Test(fifo, name, .timeout = TEST_LIMIT_S)                                         \
	{                                                                                 \
		struct probe_result r;                                                    \
		const char *const *mode = env;                                            \
		const char *e[16];                                                        \
		size_t n = 0;                                                             \
		while (*mode != NULL)                                                     \
			e[n++] = *mode++;                                                 \
		e[n++] = "TICKET_QUEUE=0";                                                \
		e[n] = NULL;                                                              \
		probe_run(&r, e, (const char *const[]){ LOCKPROBE, "fifo", "6", NULL },   \
		          PROBE_LIMIT_S);                                                 \
		assert_probe_provider(&r);                                                \
		cr_assert_eq(r.status, 0, "grant order not FIFO:\n%s%s", r.out, r.err);   \
		cr_assert(strstr(r.out, "order 0 1 2 3 4 5\n") != NULL, "%s", r.out);     \
	}

FOR_EACH_MODE(FIFO_TEST)

static void fifo_run(const char *const *env, const char *const *args)
{
	struct probe_result r;

	probe_run(&r, env, args, PROBE_LIMIT_S);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "grant order not FIFO:\n%s%s", r.out, r.err);
	cr_assert(strstr(r.out, "order 0 1 2 3 4 5\n") != NULL, "%s", r.out);
}

/* TICKET_BYPASS=0 asks for strict FIFO too. */
Test(fifo, bypass_zero, .timeout = TEST_LIMIT_S)
{
	fifo_run(MODE_ENV("TICKET_BYPASS=0"),
	         (const char *const[]){ LOCKPROBE, "fifo", "6", "3", "2000", NULL });
}


/*
 * The default mode steals (no order promised), but every thread gets the
 * lock: 8 threads on one lock for 300 ms, each must have acquired it.
 */
#define PROGRESS_TEST(name, env)                                                        \
	Test(fifo, every_thread_progresses_by_default_##name, .timeout = TEST_LIMIT_S)  \
	{                                                                               \
		struct probe_result r;                                                  \
		probe_run(&r, env, (const char *const[]){ LOCKPROBE, "progress", "8", "300", \
		                                          NULL }, PROBE_LIMIT_S);       \
		assert_probe_provider(&r);                                              \
		cr_assert_eq(r.status, 0, "a thread never got the lock:\n%s%s", r.out, r.err); \
		cr_assert(strstr(r.out, "progress threads 8 min ") != NULL, "%s", r.out); \
	}

PROGRESS_TEST(defaults, MODE_ENV("TICKET_DELAY="))

/*
 * A process-shared lock keeps no order (issue 40: a queue's waiters held
 * state that another process had to serve), and strict FIFO does not give
 * it one; every thread still gets it, whatever the waiting policy.
 */
#define SHARED_PROGRESS_TEST(name, env)                                                 \
	Test(fifo, every_thread_progresses_on_a_process_shared_lock_##name,             \
	     .timeout = TEST_LIMIT_S)                                                   \
	{                                                                               \
		struct probe_result r;                                                  \
		probe_run(&r, env, (const char *const[]){ LOCKPROBE, "progress", "8", "300", \
		                                          "shared", NULL }, PROBE_LIMIT_S); \
		assert_probe_provider(&r);                                              \
		cr_assert_eq(r.status, 0, "a thread never got the lock:\n%s%s", r.out, r.err); \
		cr_assert(strstr(r.out, "progress threads 8 min ") != NULL, "%s", r.out); \
	}

SHARED_PROGRESS_TEST(defaults, MODE_ENV("TICKET_DELAY="))
SHARED_PROGRESS_TEST(strict_fifo, MODE_ENV("TICKET_QUEUE=0"))
SHARED_PROGRESS_TEST(spin, MODE_ENV("TICKET_WAIT=spin"))
SHARED_PROGRESS_TEST(yield, MODE_ENV("TICKET_WAIT=yield"))
PROGRESS_TEST(off_spin, MODE_ENV("TICKET_DELAY=off", "TICKET_WAIT=spin"))
PROGRESS_TEST(auto_yield, MODE_ENV("TICKET_WAIT=yield"))
