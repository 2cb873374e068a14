/*
 * Long waits: a lock held for a long time costs its waiters almost no CPU
 * (they sleep), and each waiter reports the wait once on stderr after
 * TICKET_STALL_MS, then keeps waiting and gets the lock.
 *
 * The report gives addresses, which `ticketspin where PID ADDRESS...` names
 * while the process still waits (checked here on the test's own process).
 *
 * No timing is asserted: the CPU bound is a resource bound, a fifth of what
 * one waiter spinning through the hold would use.
 */
#include "probe_run.h"

static long cpu_ms_of(const struct probe_result *r)
{
	const char *line = strstr(r->out, "cpu_ms ");

	cr_assert_not_null(line, "no cpu_ms line:\n%s", r->out);
	return strtol(line + 7, NULL, 10);
}

static void hold_run(struct probe_result *r, const char *const *env, const char *waiters,
                     const char *hold_ms)
{
	probe_run(r, env, (const char *const[]){ LOCKPROBE, "hold", waiters, hold_ms, NULL }, 120);
	assert_probe_provider(r);
	cr_assert_eq(r->status, 0, "status %d (137: killed at the time limit)\n%s%s", r->status,
	             r->out, r->err);
}

Test(stall, waiters_of_a_long_held_lock_sleep)
{
	struct probe_result r;

	/* Two waiters in the queue (TICKET_QUEUE=2: the head and one behind), two outside it. */
	hold_run(&r, (const char *const[]){ "TICKET_WAIT=", "TICKET_QUEUE=2", NULL }, "4", "1500");
	cr_assert_lt(cpu_ms_of(&r), 300, "waiters burned CPU while the lock was held:\n%s%s",
	             r.out, r.err);
}

Test(stall, waiters_in_strict_fifo_sleep)
{
	struct probe_result r;

	/* Strict FIFO: all four hold tickets; the head and those behind it sleep. */
	hold_run(&r, (const char *const[]){ "TICKET_WAIT=", "TICKET_QUEUE=0", NULL }, "4", "1500");
	cr_assert_lt(cpu_ms_of(&r), 300, "waiters burned CPU while the lock was held:\n%s%s",
	             r.out, r.err);
}

Test(stall, waiters_in_the_default_mode_sleep)
{
	struct probe_result r;

	/* The default: the head watches, then sleeps; those behind it sleep at once. */
	hold_run(&r, (const char *const[]){ "TICKET_WAIT=", NULL }, "4", "1500");
	cr_assert_lt(cpu_ms_of(&r), 300, "waiters burned CPU while the lock was held:\n%s%s",
	             r.out, r.err);
}

Test(stall, each_waiter_reports_once_and_keeps_waiting)
{
	struct probe_result r;

	hold_run(&r, (const char *const[]){ "TICKET_STALL_MS=200", "TICKET_QUEUE=0", NULL }, "3",
	         "1500");
	cr_assert_eq(count_occurrences(r.err, "ticketspin: stall: "), 3, "expected one report per waiter:\n%s",
	             r.err);
	cr_assert_not_null(strstr(r.err, "called from"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "from 0x"), "%s", r.err);
	/* no name: the waiting thread makes no system call to find one (issue 40) */
	cr_assert_not_null(strstr(r.err, "; names: ticketspin where "), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "1 ticket ahead"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "3 tickets ahead"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "still waiting (TICKET_STALL_MS=200)"), "%s", r.err);
}

/*
 * "The reports are rate-limited: at most one a second after the first 8"
 * (doc/design.md; libticketspin(7): "The lines are rate-limited").  24
 * waiters each pass TICKET_STALL_MS within a few naps of one another: the
 * first 8 reports are printed, then at most one in each second (the first
 * of them at once), 16 at most even if the last of them took 8 s to get
 * there: not 24.
 */
Test(stall, reports_past_the_first_8_are_rate_limited)
{
	struct probe_result r;
	int n;

	hold_run(&r, (const char *const[]){ "TICKET_STALL_MS=200", "TICKET_QUEUE=0", NULL }, "24",
	         "800");
	n = count_occurrences(r.err, "ticketspin: stall: ");
	cr_assert_geq(n, 8, "the first 8 reports must pass: %d\n%s", n, r.err);
	cr_assert_leq(n, 16, "24 waiters' reports, %d printed: not rate-limited\n%s", n, r.err);
}

/* The default mode: the waiters behind the head (asleep at once) report too. */
Test(stall, each_waiter_reports_once_in_the_default_mode)
{
	struct probe_result r;

	hold_run(&r, (const char *const[]){ "TICKET_STALL_MS=200", "TICKET_QUEUE=", NULL }, "3",
	         "1500");
	cr_assert_eq(count_occurrences(r.err, "ticketspin: stall: "), 3,
	             "expected one report per waiter:\n%s", r.err);
	cr_assert_not_null(strstr(r.err, "1 ticket ahead"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "3 tickets ahead"), "%s", r.err);
}

/* Waiters outside a full queue (TICKET_QUEUE=2: two in it, two outside) report too. */
Test(stall, waiters_outside_the_queue_report_too)
{
	struct probe_result r;

	hold_run(&r, (const char *const[]){ "TICKET_STALL_MS=200", "TICKET_QUEUE=2", NULL }, "4",
	         "1500");
	cr_assert_eq(count_occurrences(r.err, "ticketspin: stall: "), 4, "%s", r.err);
	cr_assert_eq(count_occurrences(r.err, "outside a full line"), 2, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "(2 tickets in line, "), "%s", r.err);
}

Test(stall, zero_turns_the_report_off)
{
	struct probe_result r;

	hold_run(&r, (const char *const[]){ "TICKET_STALL_MS=0", NULL }, "3", "600");
	cr_assert_null(strstr(r.err, "stall:"), "%s", r.err);
}

Test(stall, short_waits_are_not_reported)
{
	struct probe_result r;

	hold_run(&r, (const char *const[]){ "TICKET_STALL_MS=5000", NULL }, "3", "300");
	cr_assert_null(strstr(r.err, "stall:"), "%s", r.err);
}

/* What the report's "names:" command says of an address in this program. */
__attribute__((noinline)) static void a_function_to_name(void)
{
	__asm__ volatile("");
}

Test(stall, ticketspin_where_names_an_address_of_a_running_process)
{
	struct probe_result r;
	char pid[16], address[32];

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	snprintf(address, sizeof(address), "%p", (void *)a_function_to_name);
	probe_run(&r, NULL, (const char *const[]){ WRAPPER, "where", pid, address, "0x1", NULL },
	          30);
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert_not_null(strstr(r.out, "test_stall+0x"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "in a_function_to_name at "), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "0x1: not mapped"), "%s", r.out);
}
