/*
 * Misuse is reported and survived (issue 6): misuseprobe misuses the lock in
 * a child under the preload; we check its exit status (it checks return
 * values, lock words and that the lock still works) and the lines the
 * library printed on stderr.  Nothing of ours may reach stdout.
 */
#include "modes.h"
#include "probe_run.h"

static int count_lines(const char *text, const char *needle)
{
	int n = 0;

	for (const char *line = text; line != NULL && *line != '\0';) {
		const char *end = strchr(line, '\n');
		size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
		char *copy = strndup(line, len);

		n += strstr(copy, needle) != NULL;
		free(copy);
		line = end != NULL ? end + 1 : NULL;
	}
	return n;
}

static void run_probe(struct probe_result *r, const char *const *env, const char *mode,
                      const char *arg1, const char *arg2)
{
	probe_run(r, env, (const char *const[]){ MISUSEPROBE, mode, arg1, arg2, NULL }, 60);
	assert_probe_provider(r);
	cr_assert(strstr(r->out, "ticketspin:") == NULL,
	          "the library printed on stdout:\n%s", r->out);
	cr_assert_eq(r->status, 0, "misuseprobe %s: status %d\n%s%s", mode, r->status, r->out,
	             r->err);
}

/* One unlock too many: EPERM, word unchanged, one line per lock, still works. */
Test(misuse, unlock_of_unheld_lock)
{
	struct probe_result r;

	run_probe(&r, NULL, "unlock", NULL, NULL);
	cr_assert(strstr(r.out, "unlock of a fresh lock: EPERM, word 0x00000000 -> 0x00000000"),
	          "%s", r.out);
	cr_assert(strstr(r.out, "1000 of 1000 returned EPERM"), "%s", r.out);
	cr_assert(strstr(r.out, "counter 80000"), "%s", r.out);
	cr_assert_eq(count_lines(r.err, "pthread_spin_unlock("), 2,
	             "expected one report per lock (2 locks, 1001 + 1 misuses):\n%s", r.err);
	cr_assert_eq(count_lines(r.err, "ticketspin: misuse: "), 2, "%s", r.err);
	cr_assert_eq(count_lines(r.err, "probe_lock_a"), 1, "lock not named:\n%s", r.err);
	cr_assert_eq(count_lines(r.err, "probe_lock_b"), 1, "lock not named:\n%s", r.err);
	cr_assert_eq(count_lines(r.err, "called from 0x"), 2, "%s", r.err);
	cr_assert_eq(count_lines(r.err, "probe_unlock_unheld+0x"), 2, "caller not named:\n%s",
	             r.err);
	cr_assert_eq(count_lines(r.err, "returned EPERM, lock left unchanged"), 2, "%s", r.err);
}

/* Destroy of a held lock: reported, returns 0, the word is untouched. */
Test(misuse, destroy_of_held_lock)
{
	struct probe_result r;

	run_probe(&r, NULL, "destroy", NULL, NULL);
	cr_assert(strstr(r.out, "destroy of a held lock: returned 0, word "), "%s", r.out);
	cr_assert_eq(count_lines(r.err, "pthread_spin_destroy("), 2, "%s", r.err);
	cr_assert_eq(count_lines(r.err, "probe_destroy_a"), 1, "%s", r.err);
	cr_assert_eq(count_lines(r.err, ", 0 threads waiting); returned 0"), 1, "%s", r.err);
	cr_assert_eq(count_lines(r.err, ", 1 thread waiting); returned 0"), 1, "%s", r.err);
	cr_assert_eq(count_lines(r.err, "returned 0 as glibc does"), 2, "%s", r.err);
}

/* Many locks misused at once: the first reports, then one a second. */
Test(misuse, reports_are_rate_limited)
{
	struct probe_result r;
	int lines;

	run_probe(&r, NULL, "flood", "200", NULL);
	lines = count_lines(r.err, "ticketspin: misuse: ");
	/* 16 at once, one more in that second (maybe two, if it ticked), one after 1.1 s */
	cr_assert(lines >= 17 && lines <= 20, "%d report lines:\n%s", lines, r.err);
	cr_assert_eq(count_lines(r.err, "earlier reports suppressed by the rate limit"), 1,
	             "the last report should count the suppressed ones:\n%s", r.err);
}

static void suspect(const char *const *env, const char *word, const char *serve)
{
	struct probe_result r;
	char needle[64];
	const char *line;
	unsigned ahead = 0;

	run_probe(&r, env, "suspect", word, serve);
	/* the probe computes the tickets ahead from the layout in ticket_lock.h */
	line = strstr(r.out, "tickets ahead of the waiter");
	cr_assert(line != NULL, "%s", r.out);
	while (line > r.out && line[-1] != ':')
		line--;
	ahead = (unsigned)strtoul(line, NULL, 10);
	cr_assert(ahead > 64, "%s", r.out);
	snprintf(needle, sizeof(needle), " %u tickets ahead of ours", ahead);
	cr_assert_eq(count_lines(r.err, "is not a valid ticket lock"), 1, "%s", r.err);
	cr_assert_eq(count_lines(r.err, needle), 1, "%s", r.err);
	cr_assert_eq(count_lines(r.err, "probe_suspect_lock"), 1, "lock not named:\n%s", r.err);
	cr_assert_eq(count_lines(r.err, "probe_suspect_waiter+0x"), 1, "caller not named:\n%s",
	             r.err);
	cr_assert(strstr(r.out, "still waiting"), "%s", r.out);
	if (serve[0] == '1')
		cr_assert(strstr(r.out, ": acquired"), "%s", r.out);
}

/*
 * A garbage word (0xdeadbeef: thousands of tickets ahead) is reported once,
 * and the waiter keeps its place: when the probe serves the phantom tickets
 * (as if their holders unlocked), it gets the lock, in every waiting policy
 * that does not sleep on the futex (a parked waiter is woken only by a real
 * predecessor; there is none).
 */
#define SUSPECT_TESTS(name, env) \
	Test(misuse, suspect_word_##name) { suspect(env, "0xdeadbeef", "1"); }
SUSPECT_TESTS(default, NULL) /* the queue bound: the waiter steps out of the line */
SUSPECT_TESTS(off_spin, MODE_ENV("TICKET_DELAY=off", "TICKET_WAIT=spin", "TICKET_QUEUE=0"))
SUSPECT_TESTS(auto_yield, MODE_ENV("TICKET_WAIT=yield", "TICKET_QUEUE=0"))

/* A byte lock's "locked" (0x100): thousands of tickets ahead; parked, it never gets in. */
Test(misuse, suspect_word_byte_lock_parked)
{
	suspect(MODE_ENV("TICKET_WAIT=park", "TICKET_SPIN=1", "TICKET_QUEUE=0"), "0x100", "0");
}

/* glibc's unlocked value (1): the first lock takes it, the lock works, no report. */
Test(misuse, glibc_unlocked_word_works)
{
	struct probe_result r;

	run_probe(&r, NULL, "foreign", "1", NULL);
	cr_assert(strstr(r.out, "word 0x00000001: lock returned 0, unlock 0, trylock 0, unlock 0"),
	          "%s", r.out);
	cr_assert_eq(count_lines(r.err, "ticketspin:"), 0, "%s", r.err);
}
