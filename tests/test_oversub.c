/*
 * More threads than CPUs: the waiting policies keep the lock live and
 * mutually exclusive, and parked waiters are always woken.
 *
 * The bounds are generous (minutes for work that takes about a second), so a
 * slow machine does not make them flaky; what they catch is a hang: a waiter
 * left asleep while the lock is free, or a line that stops moving.
 */
#include "probe_run.h"

static void hammer_locks(const char *const *env, const char *threads, const char *nlocks,
                         const char *iterations, const char *hold_ns, struct probe_result *r)
{
	probe_run(r, env, (const char *const[]){ LOCKPROBE, "hammer", threads, nlocks, iterations,
	                                         hold_ns, NULL }, 180);
	assert_probe_provider(r);
	cr_assert_eq(r->status, 0, "%s threads: status %d (137: killed at the time limit)\n%s%s",
	             threads, r->status, r->out, r->err);
}

static void hammer(const char *const *env, const char *threads, const char *iterations,
                   const char *hold_ns, struct probe_result *r)
{
	hammer_locks(env, threads, "2", iterations, hold_ns, r);
}

Test(oversub, default_policy_16_threads)
{
	struct probe_result r;

	hammer((const char *const[]){ "TICKET_WAIT=", NULL }, "16", "20000", "0", &r);
}

Test(oversub, yield_16_threads)
{
	struct probe_result r;

	hammer((const char *const[]){ "TICKET_WAIT=yield", NULL }, "16", "20000", "0", &r);
}

Test(oversub, park_strict_fifo_16_threads)
{
	struct probe_result r;

	hammer((const char *const[]){ "TICKET_WAIT=park", "TICKET_QUEUE=0", NULL }, "16", "5000",
	       "0", &r);
}

/*
 * No number of waiters breaks mutual exclusion (issue 18, item 13): one
 * more locker than a full queue holds waits outside it, drawing no ticket,
 * in every mode, strict FIFO included; a trylock meanwhile fails.  The
 * queue is filled by setting the word (63 threads need not exist).
 */
static void full_queue(const char *const *env, const char *capacity)
{
	struct probe_result r;
	char want[64];

	probe_run(&r, env, (const char *const[]){ LOCKPROBE, "full", capacity, NULL }, 60);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "capacity %s: status %d\n%s%s", capacity, r.status, r.out, r.err);
	snprintf(want, sizeof(want), "full %s: ", capacity);
	cr_assert(strstr(r.out, want) != NULL && strstr(r.out, "trylock EBUSY, arrival waits"),
	          "%s", r.out);
}

Test(oversub, one_more_than_a_full_queue_waits_outside)
{
	full_queue(NULL, "63");
	full_queue((const char *const[]){ "TICKET_QUEUE=0", NULL }, "63");
	full_queue((const char *const[]){ "TICKET_QUEUE=0", "TICKET_WAIT=spin", NULL }, "63");
	full_queue((const char *const[]){ "TICKET_BYPASS=0", "TICKET_WAIT=yield", NULL }, "63");
	full_queue((const char *const[]){ "TICKET_QUEUE=4", NULL }, "4");
}

/*
 * More threads than the queue holds (TICKET_QUEUE=2): the others wait
 * outside it, and every one of them still gets the lock its N times (the
 * probe checks the exact count).
 */
Test(oversub, more_threads_than_the_queue_holds)
{
	struct probe_result r;

	hammer((const char *const[]){ "TICKET_WAIT=park", "TICKET_QUEUE=2", NULL }, "12", "5000",
	       "0", &r);
	hammer((const char *const[]){ "TICKET_WAIT=yield", "TICKET_QUEUE=3", NULL }, "12", "5000",
	       "0", &r);
}

/*
 * Oversubscribed, in the default mode, for a fixed time: every one of 16
 * threads on one lock gets it (a count above 0 each; lockprobe prints the
 * counts), so a waiter that lost its CPU does not keep the others out.
 */
Test(oversub, every_thread_progresses_16_threads)
{
	struct probe_result r;

	probe_run(&r, (const char *const[]){ "TICKET_WAIT=", NULL },
	          (const char *const[]){ LOCKPROBE, "progress", "16", "500", NULL }, 60);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "a thread never got the lock:\n%s%s", r.out, r.err);
}

Test(oversub, plain_reference_still_finishes)
{
	struct probe_result r;

	hammer((const char *const[]){ "TICKET_DELAY=off", "TICKET_WAIT=spin", "TICKET_QUEUE=0",
	                              NULL }, "4", "300", "0", &r);
}

/* Parked waiters count, from the TICKET_STATS report (column "parks"). */
static long parks_reported(const char *err)
{
	const char *header = strstr(err, " parks ");
	const char *row;
	long columns = 0, parks = -1;

	cr_assert_not_null(header, "no stats report:\n%s", err);
	/*
	 * The data row follows the header lines; "parks" is its 18th field,
	 * after the prefix (ts_report_write's order: the core, with
	 * ts_report_parse_row, is not linked in here).
	 */
	row = strchr(header, '\n');
	cr_assert_not_null(row);
	row = strstr(row, "0x");
	cr_assert_not_null(row, "no lock row in the report:\n%s", err);
	char copy[512];
	snprintf(copy, sizeof(copy), "%s", row);
	for (char *field = strtok(copy, " \t"); field != NULL; field = strtok(NULL, " \t")) {
		if (++columns == 18) {
			parks = strtol(field, NULL, 10);
			break;
		}
	}
	return parks;
}

/*
 * Waiters park after one pause without progress, in strict FIFO so that
 * they park holding tickets in order: each round, six waiters queue behind
 * the holder, which lingers 2 ms so they fall asleep, then unlocks; every one
 * of them must be woken in turn (the probe checks the order).  A lost
 * wake-up stalls the run for the nap each time (test_wakeup counts them).
 */
Test(oversub, no_parked_waiter_left_asleep)
{
	struct probe_result r;

	probe_run(&r, (const char *const[]){ "TICKET_WAIT=park", "TICKET_SPIN=1", "TICKET_QUEUE=0",
	                                     "TICKET_STATS=1", NULL },
	          (const char *const[]){ LOCKPROBE, "fifo", "6", "40", "2000", NULL }, 180);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "status %d (137: killed at the time limit)\n%s%s", r.status,
	             r.out, r.err);
	cr_assert_geq(parks_reported(r.err), 40,
	              "too few parks for the test to mean anything:\n%s", r.err);
}
