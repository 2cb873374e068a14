/*
 * Process-shared locks (issue 6): locks in a MAP_SHARED mapping, used by
 * several processes of several threads each (spinstress -p): mutual exclusion
 * and exact counts, in every mode; and the park check (spinstress -P): waiters
 * of two processes asleep on the futex of one lock word must all be woken,
 * by each other, after a plain unlock - no lost wake-up, within a generous
 * bound (the watchdog; the child is killed at 60 s).
 */
#include "modes.h"
#include "probe_run.h"

static void pshared(const char *const *env, const char *procs, const char *threads,
                    const char *n)
{
	struct probe_result r;

	probe_run(&r, env, (const char *const[]){ SPINSTRESS, "-p", procs, "-t", threads, "-n", n,
	                                          "-l", "2", "-w", "50", NULL }, 60);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "-p %s -t %s -n %s: status %d\n%s%s", procs, threads, n,
	             r.status, r.out, r.err);
	cr_assert(strstr(r.out, "violations=0"), "%s", r.out);
}

#define PSHARED_TESTS(name, env)                                        \
	Test(pshared, name)                                             \
	{                                                               \
		pshared(env, "2", "2", "2000");                         \
		pshared(env, "3", "3", "500");                          \
	}

FOR_EACH_MODE(PSHARED_TESTS)

static void park_check(const char *const *env, const char *procs, const char *threads)
{
	struct probe_result r;

	probe_run(&r, env,
	          (const char *const[]){ SPINSTRESS, "-P", "-p", procs, "-t", threads, "-n", "300",
	                                 "-w", "50", NULL }, 60);
	assert_probe_provider(&r);
	if (r.status == 4)
		cr_skip_test("cannot see where threads sleep (/proc/PID/task/TID/syscall): %s", r.err);
	cr_assert_eq(r.status, 0, "park check -p %s -t %s: status %d\n%s%s", procs, threads,
	             r.status, r.out, r.err);
	cr_assert(strstr(r.out, "park-check"), "%s", r.out);
}

#define STRICT_PARK MODE_ENV("TICKET_WAIT=park", "TICKET_SPIN=1", "TICKET_QUEUE=0")

Test(pshared, parked_in_two_processes_all_woken)
{
	park_check(STRICT_PARK, "2", "3");
}

Test(pshared, parked_in_four_processes_all_woken)
{
	park_check(STRICT_PARK, "4", "2");
}

/*
 * Without TICKET_QUEUE=0: a process-shared lock is strict FIFO all the same
 * (no one steals it), and its waiters sleep on the word, where the other
 * processes' unlocks wake them.
 */
Test(pshared, parked_in_the_default_mode_all_woken)
{
	park_check(MODE_ENV("TICKET_WAIT=park", "TICKET_SPIN=1"), "2", "3");
}

/*
 * The waiters in the children are woken by the parent's unlock and by each
 * other, across processes, not by their naps running out: spinstress_core
 * (the core linked in) makes every nap 2 s, far beyond anything this run
 * waits for, and counts the children's sleeps.  A sleep that timed out is a
 * wake-up that did not reach another process (the naps hide it otherwise).
 */
Test(pshared, parked_in_other_processes_woken_not_timed_out, .timeout = 120)
{
	struct probe_result r;
	const char *line;
	unsigned long long woken, timed_out;

	probe_run(&r, MODE_ENV("TICKET_WAIT=park", "TICKET_SPIN=1", "TICKET_QUEUE=0"),
	          (const char *const[]){ SPINSTRESS_CORE, "-P", "-p", "2", "-t", "2", "-n", "3",
	                                 "-N", "2000", "-w", "60", NULL }, 90);
	if (r.status == 4)
		cr_skip_test("cannot see where threads sleep (/proc/PID/task/TID/syscall): %s", r.err);
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.out, "provider core") != NULL, "%s", r.out);
	line = strstr(r.out, "children's sleeps: ");
	cr_assert(line != NULL, "%s", r.out);
	cr_assert_eq(sscanf(line, "children's sleeps: woken=%llu timed_out=%llu", &woken,
	                    &timed_out), 2, "%s", line);
	cr_assert_eq(timed_out, 0, "%llu sleeps in the children ended by their 2 s timeout: "
	             "wake-ups lost between processes\n%s", timed_out, r.out);
	cr_assert_geq(woken, 2, "too few sleeps to mean anything (one per process parked)\n%s",
	              r.out);
}
