/*
 * Process-shared locks (issue 6): locks in a MAP_SHARED mapping, used by
 * several processes of several threads each (spinstress -p): mutual exclusion
 * and exact counts, in every mode; and the park check (spinstress -P): waiters
 * of two processes asleep on the futex of one lock word must all be woken,
 * by each other, after a plain unlock - no lost wake-up, within a generous
 * bound (the watchdog; the child is killed at 60 s).
 *
 * Issue 40: a process that exits, is killed, execs or is stopped while its
 * threads wait for a process-shared lock holds up no one (psharedprobe);
 * many threads of two processes all get such a lock; and a private lock
 * used by two processes wakes its sleepers across them.
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
 * Without TICKET_QUEUE=0 (which changes nothing for a process-shared lock:
 * it has no queue), its waiters sleep on the word, where the other
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

/* ---- issue 40: processes that go away or stop around a process-shared lock ---------- */

/*
 * psharedprobe MODE 10: ten rounds of a child whose two threads wait for
 * the lock while the parent holds it, and then exits, is killed, execs, or
 * is stopped (another process must then take the lock 1000 times while it
 * is stopped).  With a queue, the child's tickets stayed in the word: the
 * parent hung for good (10 of 10 runs, word 0x83008000), and the other
 * process waited for the whole stop.  glibc's lock serves every round.
 * @env: by default the child's waiters spin, announce themselves or sleep
 * when it goes; with TICKET_SPIN=1 they are asleep on the word.
 */
static void survives(const char *const *env, const char *mode)
{
	struct probe_result r;
	char done[96];

	probe_run(&r, env, (const char *const[]){ PSHAREDPROBE, mode, "10", NULL }, 60);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "psharedprobe %s 10: status %d\n%s%s", mode, r.status, r.out,
	             r.err);
	snprintf(done, sizeof(done), "%s: 10 rounds, the lock served every time", mode);
	cr_assert(strstr(r.out, done), "%s", r.out);
}

#define ASLEEP MODE_ENV("TICKET_WAIT=park", "TICKET_SPIN=1")

Test(pshared, survives_a_waiting_process_that_exits, .timeout = 90)
{
	survives(NULL, "exit");
	survives(ASLEEP, "exit");
}

Test(pshared, survives_a_waiting_process_that_is_killed, .timeout = 90)
{
	survives(NULL, "kill");
	survives(ASLEEP, "kill");
}

Test(pshared, survives_a_waiting_thread_that_execs, .timeout = 90)
{
	survives(NULL, "exec");
	survives(ASLEEP, "exec");
}

Test(pshared, served_while_a_waiting_process_is_stopped, .timeout = 90)
{
	survives(NULL, "stop");
	survives(ASLEEP, "stop");
}

/*
 * Issue 40, item 9: two processes of 4 and of 8 threads each on one
 * process-shared lock, on however few CPUs: every thread gets the lock and
 * the counts add up.  The rate is printed, not asserted (in a strict FIFO
 * queue every release waited for a sleeping waiter: 45 thousand a second
 * at 8 threads on 2 CPUs against tens of millions now; doc/benchmarks.md).
 */
Test(pshared, many_threads_of_two_processes_all_progress, .timeout = 60)
{
	static const char *const threads[] = { "4", "8" };

	for (size_t i = 0; i < sizeof(threads) / sizeof(threads[0]); i++) {
		struct probe_result r;

		probe_run(&r, NULL, (const char *const[]){ PSHAREDPROBE, "throughput", "2",
		                                           threads[i], "300", NULL }, 30);
		assert_probe_provider(&r);
		cr_assert_eq(r.status, 0, "throughput 2 x %s: status %d\n%s%s", threads[i], r.status,
		             r.out, r.err);
		cr_assert(strstr(r.out, "violations 0"), "%s", r.out);
	}
}

/*
 * Issue 40, item 8: a PTHREAD_PROCESS_PRIVATE lock in a MAP_SHARED mapping,
 * used by two processes of two threads each, as libfabric's shared-memory
 * provider uses one (spinstress -P -x: the parent holds the lock until a
 * waiter of each child sleeps, then a plain unlock).  A sleeper in one
 * process's table was never woken by the other's release, and slept out
 * its nap (100 ms here): in strict FIFO every hand-over between the two
 * processes did, and the run did not finish (135-186 of 300 rounds in
 * 20 s).  Now the first sleep that runs out finds its wake-up served
 * elsewhere and the lock is made shared: at most two naps per thread run
 * out (its first, and the one it slept in its table when the lock
 * changed; 2 to 7 in all in 50 runs), and the lock is made shared once.
 * The bound allows one more per thread, for a wake-up that the unlock's
 * fast path misses (parking.c, "Why no lost wake-up, mostly").
 */
static void private_across(const char *const *env)
{
	struct probe_result r;
	const char *line;
	unsigned long long woken, timed_out, made;

	probe_run(&r, env, (const char *const[]){ SPINSTRESS_CORE, "-P", "-x", "-p", "2", "-t", "2",
	                                          "-n", "300", "-N", "100", "-w", "20", NULL }, 40);
	if (r.status == 4)
		cr_skip_test("cannot see where threads sleep (/proc/PID/task/TID/syscall): %s", r.err);
	cr_assert_eq(r.status, 0, "status %d (3: the watchdog, 20 s: the hand-overs between the "
	             "processes waited for naps)\n%s%s", r.status, r.out, r.err);
	line = strstr(r.out, "children's sleeps: ");
	cr_assert(line != NULL, "%s", r.out);
	cr_assert_eq(sscanf(line, "children's sleeps: woken=%llu timed_out=%llu; locks made "
	                    "shared=%llu", &woken, &timed_out, &made), 3, "%s", line);
	cr_assert_leq(timed_out, 3 * 2 * 2, "%llu sleeps ended by their 100 ms timeout: wake-ups "
	              "that did not cross the processes\n%s", timed_out, r.out);
	cr_assert_eq(made, 1, "the lock made shared %llu times\n%s", made, r.out);
}

Test(pshared, a_private_lock_used_by_two_processes_wakes_across_them, .timeout = 90)
{
	private_across(MODE_ENV("TICKET_WAIT=park", "TICKET_SPIN=1", "TICKET_QUEUE=0"));
	private_across(MODE_ENV("TICKET_WAIT=park", "TICKET_SPIN=1"));
}
