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

/*
 * With TICKET_CHECK_UNLOCK=1 (pthread_spin_init marks the word with
 * TS_UNLOCK_DUE, 0x00800000, so that every unlock comes out of line),
 * one unlock too many (the lock byte is 0):
 * EPERM, word unchanged, one line per lock, still works; also for a
 * process-shared lock (its mark is no holder) and for a free lock with
 * waiters queued.  (Without it, see test_api's unlock_of_a_free_lock_unchecked.)
 */
Test(misuse, unlock_of_unheld_lock)
{
	struct probe_result r;

	run_probe(&r, (const char *const[]){ "TICKET_CHECK_UNLOCK=1", NULL }, "unlock", NULL, NULL);
	cr_assert(strstr(r.out, "unlock of a fresh lock: EPERM, word 0x00800000 -> 0x00800000"),
	          "%s", r.out);
	cr_assert(strstr(r.out, "1000 of 1000 returned EPERM"), "%s", r.out);
	cr_assert(strstr(r.out, "counter 80000"), "%s", r.out);
	cr_assert(strstr(r.out, "unlock of a fresh shared lock: EPERM, word 0x80800000 -> "
	                        "0x80800000"), "%s", r.out);
	cr_assert(strstr(r.out, "unlock of a free lock with a queue: EPERM, word 0x81808000 -> "
	                        "0x81808000"), "%s", r.out);
	cr_assert_eq(count_lines(r.err, "pthread_spin_unlock("), 3,
	             "expected one report per lock (3 locks, 1001 + 1 + 2 misuses):\n%s", r.err);
	cr_assert_eq(count_lines(r.err, "ticketspin: misuse: "), 3, "%s", r.err);
	cr_assert_eq(count_lines(r.err, "probe_lock_a"), 1, "lock not named:\n%s", r.err);
	cr_assert_eq(count_lines(r.err, "probe_lock_b"), 1, "lock not named:\n%s", r.err);
	cr_assert_eq(count_lines(r.err, "probe_lock_c"), 1, "lock not named:\n%s", r.err);
	cr_assert_eq(count_lines(r.err, "called from 0x"), 3, "%s", r.err);
	cr_assert_eq(count_lines(r.err, "probe_unlock_unheld+0x"), 3, "caller not named:\n%s",
	             r.err);
	cr_assert_eq(count_lines(r.err, "returned EPERM, lock left unchanged"), 3, "%s", r.err);
}

/*
 * Destroy of a held lock: reported, returns 0, the word is untouched.  A free
 * lock is not reported, whatever flags a past wait or pthread_spin_init()
 * left in its word (the probe destroys two such: probe_destroy_c).
 */
Test(misuse, destroy_of_held_lock)
{
	struct probe_result r;

	run_probe(&r, NULL, "destroy", NULL, NULL);
	cr_assert(strstr(r.out, "destroy of a held lock: returned 0, word "), "%s", r.out);
	cr_assert(strstr(r.out, "destroy of a free shared lock (word 0x80000000): returned 0"),
	          "%s", r.out);
	cr_assert(strstr(r.out, "destroy of a free lock with flags left (word 0x0505c300): "
	                        "returned 0"), "%s", r.out);
	cr_assert_eq(count_lines(r.err, "probe_destroy_c"), 0, "a free lock reported:\n%s", r.err);
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

	run_probe(&r, (const char *const[]){ "TICKET_CHECK_UNLOCK=1", NULL }, "flood", "200", NULL);
	lines = count_lines(r.err, "ticketspin: misuse: ");
	/* 16 at once, one more in that second (maybe two, if it ticked), one after 1.1 s */
	cr_assert(lines >= 17 && lines <= 20, "%d report lines:\n%s", lines, r.err);
	cr_assert_eq(count_lines(r.err, "earlier reports suppressed by the rate limit"), 1,
	             "the last report should count the suppressed ones:\n%s", r.err);
}

/*
 * The waiter on a suspect word keeps its place: it does not get the lock
 * while the phantom tickets ahead are not served, and (@serve "1") gets it
 * once they are.  Returns the tickets ahead, as the probe computed them from
 * the layout in ticket_lock.h.
 */
static unsigned suspect_waits(struct probe_result *r, const char *const *env, const char *word,
                              const char *serve)
{
	const char *line;
	unsigned ahead;

	run_probe(r, env, "suspect", word, serve);
	line = strstr(r->out, "tickets ahead of the waiter");
	cr_assert(line != NULL, "%s", r->out);
	while (line > r->out && line[-1] != ':')
		line--;
	ahead = (unsigned)strtoul(line, NULL, 10);
	cr_assert(ahead >= 62, "%s", r->out);
	cr_assert(strstr(r->out, "still waiting"), "%s", r->out);
	if (serve[0] == '1')
		cr_assert(strstr(r->out, ": acquired"), "%s", r->out);
	return ahead;
}

/* ... and the word is reported, once, naming the lock and the caller. */
static void suspect(const char *const *env, const char *word, const char *serve)
{
	struct probe_result r;
	char needle[64];
	unsigned ahead = suspect_waits(&r, env, word, serve);

	snprintf(needle, sizeof(needle), "(%u tickets ahead of ours", ahead);
	cr_assert_eq(count_lines(r.err, "is not a valid ticket lock"), 1, "%s", r.err);
	cr_assert_eq(count_lines(r.err, needle), 1, "%s", r.err);
	cr_assert_eq(count_lines(r.err, "probe_suspect_lock"), 1, "lock not named:\n%s", r.err);
	cr_assert_eq(count_lines(r.err, "probe_suspect_waiter+0x"), 1, "caller not named:\n%s",
	             r.err);
}

/*
 * A garbage word: held (TS_LOCKED), with 62 phantom tickets in the queue (head 0, next
 * 62: the most a waiter can find ahead of it, the queue holding 63), and
 * bit 5 of the lock byte, which the library never sets (glibc's contended
 * words have it; the arrival's exchange replaces it and judges the byte), is
 * reported once, and the waiter keeps its place: when the probe serves the
 * phantom tickets, it gets the lock, in every waiting policy (a sleeper's nap
 * is bounded: it finds itself at the head when it wakes).  (A queue of 62
 * alone is no proof: a system can run more threads than that.)
 */
#define SUSPECT_WORD "0x3e000030"
#define SUSPECT_TESTS(name, env)                                                        \
	Test(misuse, suspect_word_waiter_keeps_its_place_##name)                        \
	{                                                                               \
		struct probe_result r;                                                  \
		suspect_waits(&r, env, SUSPECT_WORD, "1");                              \
	}
SUSPECT_TESTS(default, NULL) /* the waiter sleeps behind the phantom head */
SUSPECT_TESTS(off_spin, MODE_ENV("TICKET_DELAY=off", "TICKET_WAIT=spin", "TICKET_QUEUE=0"))
SUSPECT_TESTS(auto_yield, MODE_ENV("TICKET_WAIT=yield", "TICKET_QUEUE=0"))
SUSPECT_TESTS(park, MODE_ENV("TICKET_WAIT=park", "TICKET_SPIN=1", "TICKET_QUEUE=0"))

Test(misuse, suspect_word_is_reported)
{
	suspect(MODE_ENV("TICKET_WAIT=yield", "TICKET_QUEUE=0"), SUSPECT_WORD, "1");
}

/* Parked behind the phantoms, never served: reported all the same. */
Test(misuse, suspect_word_is_reported_parked)
{
	suspect(MODE_ENV("TICKET_WAIT=park", "TICKET_SPIN=1", "TICKET_QUEUE=0"), SUSPECT_WORD, "0");
}

/*
 * Words with at most 32 tickets in the queue are never questioned (the
 * cheap bound): 0x0d2d0000 has 32 in its queue (head 45, next 13, across
 * the wrap), and in strict FIFO no one keeps it past the queue; the waiter
 * keeps its place and gets the lock when served, unreported.  (It was
 * 0x8d2d0000, marked process-shared to stop steals: a shared word has no
 * queue now, and a locker takes it when free whatever tickets it shows,
 * which can only be a converted word's, draining: ticket_lock.h.)
 */
Test(misuse, short_queue_word_is_not_questioned)
{
	struct probe_result r;

	run_probe(&r, MODE_ENV("TICKET_WAIT=yield", "TICKET_QUEUE=0"), "suspect", "0x0d2d0000",
	          "1");
	cr_assert(strstr(r.out, "suspect word 0x0d2d0000: 32 tickets ahead of the waiter; after "
	                        "0.3 s: still waiting"), "%s", r.out);
	cr_assert(strstr(r.out, ": acquired"), "%s", r.out);
	cr_assert_eq(count_lines(r.err, "is not a valid ticket lock"), 0, "%s", r.err);
}

/* glibc's unlocked value (1): the first lock takes it, the lock works, no report. */
Test(misuse, glibc_unlocked_word_works)
{
	struct probe_result r;

	/* the probe takes milliseconds: a hang fails in 10 s, not the usual 60 */
	probe_run(&r, NULL, (const char *const[]){ MISUSEPROBE, "foreign", "1", NULL }, 10);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "misuseprobe foreign: status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.out, "word 0x00000001: lock returned 0, unlock 0, trylock 0, unlock 0"),
	          "%s", r.out);
	cr_assert_eq(count_lines(r.err, "ticketspin:"), 0, "%s", r.err);
}

/*
 * libticketspin(7): "All-zero is unlocked, and so is glibc's unlocked word
 * (1)"; reliability.md: foreign bits are 5 to 7, or "0 to 3 with the lock
 * held".  A free lock byte with bits 0-3 set is a free lock, not misuse:
 * glibc's 1 (made by glibc's own pthread_spin_init(), from libc) and the
 * rest mark TS_REST_MARK (2).  The fast path takes an idle word without
 * looking at the byte it replaced, so each word here has a queue, one
 * phantom ticket whose head does not watch: the lock's exchange goes out of
 * line with that byte, where the misuse check judges it, and the locker
 * steals the free lock.  No report may follow, and the lock must work.
 */
static void free_byte_is_not_misuse(const char *word, const char *shown)
{
	struct probe_result r;
	char needle[96];

	/* the probe takes milliseconds: a hang fails in 10 s */
	probe_run(&r, NULL, (const char *const[]){ MISUSEPROBE, "foreign", word, NULL }, 10);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "misuseprobe foreign %s: status %d\n%s%s", word, r.status, r.out,
	             r.err);
	snprintf(needle, sizeof(needle), "word %s: lock returned 0, unlock 0, trylock 0, unlock 0",
	         shown);
	cr_assert(strstr(r.out, needle), "%s", r.out);
	cr_assert_eq(count_lines(r.err, "ticketspin:"), 0,
	             "a free lock byte (word %s) reported as misuse:\n%s", shown, r.err);
}

Test(misuse, glibc_unlocked_byte_with_a_queue_is_a_free_lock)
{
	free_byte_is_not_misuse("glibc+0x01000000", "0x01000001");
}

Test(misuse, rest_mark_with_a_queue_is_a_free_lock)
{
	free_byte_is_not_misuse("0x01000002", "0x01000002");
}

/*
 * ... but the same bits with the lock held (TS_LOCKED and glibc's 1; and
 * TS_LOCKED and the rest mark) are bits this library never makes: the
 * arrival's exchange replaces the byte, and it is reported once, naming the
 * lock and the caller; the waiter keeps its place (one phantom ticket
 * ahead) and gets the lock when the probe serves it.
 */
static void held_byte_is_reported(const char *word)
{
	struct probe_result r;

	run_probe(&r, MODE_ENV("TICKET_WAIT=park", "TICKET_STALL_MS=0"), "suspect", word, "1");
	cr_assert(strstr(r.out, ": 1 tickets ahead of the waiter; after 0.3 s: still waiting"),
	          "%s", r.out);
	cr_assert(strstr(r.out, ": acquired"), "%s", r.out);
	cr_assert_eq(count_lines(r.err, "has bits this library never sets"), 1,
	             "word %s (held, bits 0-3 set) not reported:\n%s", word, r.err);
	cr_assert_eq(count_lines(r.err, "probe_suspect_lock"), 1, "lock not named:\n%s", r.err);
	cr_assert_eq(count_lines(r.err, "probe_suspect_waiter+0x"), 1, "caller not named:\n%s",
	             r.err);
}

Test(misuse, held_byte_with_glibc_bit_is_reported)
{
	held_byte_is_reported("0x01000011");
}

Test(misuse, held_byte_with_the_rest_mark_is_reported)
{
	held_byte_is_reported("0x01000012");
}

/*
 * Issue 40, item 7: a process-shared lock also used by code without the
 * preload.  glibc's pthread_spin_lock (libc's own, called here on a lock we
 * hold) decrements the word before it tests it: our held byte 0x10 becomes
 * 0x0f, which no locker of ours makes, and glibc's waiter, finding the word
 * negative, waits for good.  Our unlock, checking (TICKET_CHECK_UNLOCK=1:
 * the fast path reads no lock byte), names what happened, not just "not
 * held" (doc/reliability.md, "Code without the preload": they cannot share
 * a lock).
 */
Test(misuse, a_held_byte_decremented_by_glibcs_lock_is_named)
{
	struct probe_result r;

	probe_run(&r, (const char *const[]){ "TICKET_CHECK_UNLOCK=1", NULL },
	          (const char *const[]){ INTEROPPROBE, "decrement", NULL }, 20);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "interopprobe decrement: status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.out, "decrement: held 0x80800010, after glibc's pthread_spin_lock "
	                        "0x8080000f, our unlock EPERM, word now 0x8080000f"), "%s", r.out);
	cr_assert_eq(count_lines(r.err, "the lock byte is 0x0f, our held 0x10 decremented (word "
	                                "0x8080000f), as glibc's pthread_spin_lock leaves"), 1,
	             "%s", r.err);
	cr_assert_eq(count_lines(r.err, "code without ticketspin uses this lock"), 1, "%s", r.err);
	cr_assert_eq(count_lines(r.err, "ticketspin: "), 1, "%s", r.err);
}
