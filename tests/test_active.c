/*
 * The active set (TICKET_ACTIVE, active.c), through the core linked in:
 * on a saturated lock (its hint set by a real watching head, arrivals.h),
 * with one slot, threads that contend are restricted (they join the line)
 * and rotated in (their first evicts a member whose turn is over), every
 * thread finishes, and the lock stays exclusive (a plain counter checked
 * inside and after, as Concurrency Kit's validate harnesses do).  A member
 * that stops coming (here: a thread that took a slot and exited) holds it
 * one turn at most; one that is off-CPU (here: blocked) keeps it for
 * TS_ACTIVE_WALL_TURNS turns, since a turn is the member's CPU time; once the
 * lock is no longer saturated, newcomers pass a waiting line.  Checked
 * by counts and outcomes, and that one by a lower bound the mechanism sets
 * (never by how fast anything ran): each test's timeout catches a hang.  Each
 * test sets its environment before the core first reads it.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "active.h"
#include "backoff.h"
#include "options.h"
#include "parking.h"
#include "ticket_lock.h"

static ts_word_t word __attribute__((aligned(64))); /* the lock of arrivals.h */

#include "arrivals.h"

static bool restricted_and_rotated(void)
{
	struct ts_active_counts c;

	ts_active_counts(&c);
	return c.joined > 0 && c.evicted > 0;
}

static bool at_once(void)
{
	return true;
}

/*
 * Four threads, one slot, short turns: the others must have waited in the
 * line (a gate that is never reached, or that admits everyone, joins no one)
 * and been rotated in by eviction (a line that is never served would hang).
 * The heads spin (heads_spin(), for the helper's watching head).
 */
Test(active, one_slot_restricts_and_rotates_and_everyone_finishes, .timeout = 60)
{
	struct ts_active_counts c;

	setenv("TICKET_ACTIVE", "1", 1);
	setenv("TICKET_ACTIVE_US", "200", 1);
	heads_spin();
	cr_assert_eq(ts_config()->active, 1);
	a_watching_head_takes_after(TS_SATURATED_BYPASSED); /* saturated, as contention leaves it */
	contend_until(restricted_and_rotated);
	ts_active_counts(&c);
	cr_assert_gt(c.joined, 0, "no thread was restricted");
	cr_assert_gt(c.evicted, 0, "no turn ended: the line was never rotated");
}

/*
 * With the set off (TICKET_ACTIVE=off, the default until 7 December 2026)
 * nothing joins a line, even on a lock whose hint says saturated.
 */
Test(active, off_restricts_no_one, .timeout = 60)
{
	struct ts_active_counts c;

	setenv("TICKET_ACTIVE", "off", 1);
	heads_spin();
	cr_assert_eq(ts_config()->active, 0);
	a_watching_head_takes_after(TS_SATURATED_BYPASSED); /* saturated: a set would restrict */
	contend_until(at_once);
	ts_active_counts(&c);
	cr_assert_eq(c.joined, 0);
	cr_assert_eq(c.evicted, 0);
}

/*
 * README, libticketspin(7), TICKET_ACTIVE: not "with TICKET_WAIT=spin or
 * yield".  On a lock whose hint says saturated, four threads contend with
 * one slot asked for: no one joins a line.
 */
static void restricts_no_one_when_waiters(const char *wait)
{
	struct ts_active_counts c;

	setenv("TICKET_ACTIVE", "1", 1);
	setenv("TICKET_WAIT", wait, 1);
	heads_spin();
	cr_assert_eq(ts_config()->active, 1);
	cr_assert_neq(ts_config()->wait, TS_WAIT_PARK);
	a_watching_head_takes_after(4u); /* saturated: the gate would restrict */
	contend_until(at_once);
	ts_active_counts(&c);
	cr_assert_eq(c.joined, 0, "TICKET_WAIT=%s: %llu joined the line", wait,
	             (unsigned long long)c.joined);
}

Test(active, restricts_no_one_when_waiters_yield, .timeout = 60)
{
	restricts_no_one_when_waiters("yield");
}

Test(active, restricts_no_one_when_waiters_spin, .timeout = 60)
{
	restricts_no_one_when_waiters("spin");
}

/* A thread that becomes the only member, then exits without giving its slot back. */
static void *take_a_slot_and_exit(void *arg)
{
	(void)arg;
	ts_lock(&word, NULL); /* held by main: the slow path, the gate, a free slot */
	cr_assert(ts_unlock(&word));
	return NULL;
}

/*
 * A member that vanished holds its slot one turn at most: the threads that
 * come after it are admitted by evicting it (without eviction the first of
 * the line would wait for good), and finish.
 */
Test(active, a_member_that_exited_is_evicted, .timeout = 60)
{
	struct ts_active_counts c;
	pthread_t tid;

	setenv("TICKET_ACTIVE", "1", 1);
	setenv("TICKET_ACTIVE_US", "1000", 1);
	heads_spin();
	a_watching_head_takes_after(TS_SATURATED_BYPASSED); /* saturated: the gate restricts */
	ts_lock(&word, NULL);
	cr_assert_eq(pthread_create(&tid, NULL, take_a_slot_and_exit, NULL), 0);
	while (ts_queued(__atomic_load_n(&word, __ATOMIC_RELAXED)) == 0)
		sched_yield(); /* it has passed the gate and drawn a ticket */
	cr_assert(ts_unlock(&word));
	pthread_join(tid, NULL);
	ts_active_counts(&c);
	cr_assert_eq(c.joined, 0, "the first contender had a free slot");
	contend_until(restricted_and_rotated);
	ts_active_counts(&c);
	cr_assert_gt(c.evicted, 0, "the vanished member was never evicted");
}

static sem_t member_may_go;

/* At the gate of the lock `word` (ts_active_admit() as the slow path calls it): true if it waited. */
static bool through_the_gate(void)
{
	return ts_active_admit(ts_config(), ts_lock_hash(&word), 0);
}

/* A thread that takes the only slot at the gate, then blocks (no CPU time) keeping it. */
static void *take_a_slot_and_block(void *arg)
{
	__atomic_store_n((bool *)arg, through_the_gate(), __ATOMIC_RELAXED);
	while (sem_wait(&member_may_go) != 0)
		;
	return NULL;
}

/*
 * A turn is the member's CPU time (TICKET_ACTIVE_US of it), or
 * TS_ACTIVE_WALL_TURNS (4) turns of wall time when it does not run: a member
 * that outside load preempts keeps its place.  So a member that blocks is
 * evicted no earlier than four turns after it took the slot, however fast or
 * slow the machine (a lower bound: turns of wall time evicted it after one),
 * and is evicted then: the next thread at the gate waits in the line until
 * then, and gets the slot.
 */
Test(active, a_member_off_cpu_keeps_its_slot_wall_turns, .timeout = 60)
{
	struct ts_active_counts c;
	uint64_t before_it_came, waited_us;
	bool member_waited = true;
	pthread_t tid;

	setenv("TICKET_ACTIVE", "1", 1);
	setenv("TICKET_ACTIVE_US", "100000", 1);
	cr_assert_eq(sem_init(&member_may_go, 0, 0), 0);
	a_watching_head_takes_after(TS_SATURATED_BYPASSED); /* saturated: the gate restricts */
	before_it_came = ts_now_ns();
	cr_assert_eq(pthread_create(&tid, NULL, take_a_slot_and_block, &member_waited), 0);
	while (__atomic_load_n(&member_waited, __ATOMIC_RELAXED))
		usleep(1000); /* until it passed the gate without waiting: a member */
	cr_assert(through_the_gate(), "the only slot was free");
	waited_us = (ts_now_ns() - before_it_came) / 1000u;
	ts_active_counts(&c);
	cr_assert_eq(c.joined, 1);
	cr_assert_eq(c.evicted, 1);
	/* README, libticketspin(7): "at most four times as long in wall time" */
	cr_assert_geq(waited_us, 4u * 100000u,
	              "the blocked member lost its slot after %llu us, under 4 turns",
	              (unsigned long long)waited_us);
	cr_assert_eq(sem_post(&member_may_go), 0);
	pthread_join(tid, NULL);
}

/* A thread at the gate: when it came, and whether it waited in the line. */
struct gate_visit {
	uint64_t came_ns;
	bool waited;
	bool outsider;
};

static void *at_the_gate(void *arg)
{
	struct gate_visit *v = arg;

	v->came_ns = ts_now_ns();
	v->waited = through_the_gate();
	return NULL;
}

/* Releases the lock `word` once a head watches it (we pretend to hold it meanwhile). */
static void *release_to_the_watching_head(void *arg)
{
	uint32_t seen;

	(void)arg;
	do {
		seen = __atomic_load_n(&word, __ATOMIC_ACQUIRE);
	} while (!(ts_queued(seen) == 1 && (seen & TS_WATCHING)));
	cr_assert(ts_unlock(&word));
	return NULL;
}

/* A thread at the gate that first asks whether it is an outsider (one that may not steal). */
static void *ask_then_at_the_gate(void *arg)
{
	struct gate_visit *v = arg;

	v->outsider = ts_active_outsider(ts_config(), &word, 0);
	return at_the_gate(arg);
}

/*
 * Restriction only while the lock is saturated, even once a line has formed:
 * when the lock's hint turns to "not saturated" (its last watching head took
 * it at once), a newcomer neither joins the line nor counts as an outsider
 * (it may keep a lock its exchange took), while the line is still served by
 * turns.  A line that newcomers join whatever the hint never dissolves: at
 * work 1000, where the lock is not the bottleneck, evicted members rejoined
 * it for good, and two threads ran where sixteen could (0.73x
 * pthread_mutex beside CPU hogs, 16 threads; doc/benchmarks.md).  Here the
 * only member (this thread) is that head, so that no one passes the gate to
 * set the hint; the first in line waits for the member's turn.  The line
 * waits at most TS_ACTIVE_WALL_TURNS turns of ours (400 ms): a newcomer
 * that came later than half of that (a machine too slow or too loaded)
 * proves nothing.  The heads spin (heads_spin()), so that ours watches until
 * the release.
 */
Test(active, a_newcomer_passes_a_waiting_line_when_the_lock_is_not_saturated, .timeout = 60)
{
	struct ts_active_counts c;
	struct gate_visit first = { 0 }, newcomer = { 0 };
	pthread_t first_tid, newcomer_tid, releaser;
	uint64_t member_since;

	setenv("TICKET_ACTIVE", "1", 1);
	setenv("TICKET_ACTIVE_US", "100000", 1);
	heads_spin();
	a_watching_head_takes_after(TS_SATURATED_BYPASSED); /* saturated: the gate restricts */
	member_since = ts_now_ns();
	cr_assert(!through_the_gate(), "the only slot was free");
	cr_assert_eq(pthread_create(&first_tid, NULL, at_the_gate, &first), 0);
	do {
		ts_active_counts(&c);
		usleep(1000);
	} while (c.joined == 0); /* the first is in the line */
	/* We, the member, are a head that takes the lock at once: not saturated now. */
	__atomic_store_n(&word, TS_LOCKED, __ATOMIC_RELEASE);
	cr_assert_eq(pthread_create(&releaser, NULL, release_to_the_watching_head, NULL), 0);
	ts_lock(&word, NULL);
	cr_assert(ts_unlock(&word));
	cr_assert_eq(pthread_join(releaser, NULL), 0);
	cr_assert(!ts_lock_saturated(ts_lock_hash(&word)), "hint %u", ts_head_bypassed(&word));
	cr_assert_eq(pthread_create(&newcomer_tid, NULL, ask_then_at_the_gate, &newcomer), 0);
	cr_assert_eq(pthread_join(newcomer_tid, NULL), 0);
	ts_active_counts(&c);
	if (c.joined == 1 && newcomer.came_ns - member_since > 200000000u)
		cr_skip_test("the newcomer came %llu ms after our turn began: the line may have been served",
		             (unsigned long long)((newcomer.came_ns - member_since) / 1000000u));
	cr_assert(!newcomer.waited, "the newcomer joined the line of a lock that is not saturated");
	cr_assert(!newcomer.outsider, "a newcomer counted as an outsider on a lock that is not saturated");
	cr_assert_eq(pthread_join(first_tid, NULL), 0); /* after our turn */
	cr_assert(first.waited);
	ts_active_counts(&c);
	cr_assert_eq(c.joined, 1);
}
