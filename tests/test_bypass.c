/*
 * The two bounds of the default protocol (slowpath.c), through the core
 * linked in, on lock words set up by hand so that nothing depends on timing:
 *  - a watching head is bypassed at most TICKET_BYPASS times: stealers count
 *    themselves in the word, and the next one queues instead;
 *  - a watching head that is not running (here: a ticket no thread holds, as
 *    a descheduled or vanished waiter leaves it) does not hold up a running
 *    thread for good: the last in line takes the lock past it, and stealing
 *    goes on.
 *  - a thread that the bound stops rests TICKET_REST_US first, once, and
 *    then queues; the rests alternate: stopped again before another thread
 *    has rested on the lock, it queues at once (judged on trials in which
 *    the threads' own clocks and counts say the load changed nothing), but
 *    not past TS_REST_ALTERNATE rests' time.  A rest in whose second half
 *    no one took the lock (the mark it left in the free lock byte is still
 *    there) held up everyone: the thread skips its next one, three after
 *    another such rest, and so on; a rest in which someone took the lock
 *    keeps them.
 *  - a thread that steals past a queue of two or more whose head does not
 *    watch yields its CPU once per TICKET_TURN_US of it (the turn); not past
 *    a queue of one, not with TICKET_TURN_US=0, not with TICKET_WAIT=spin.
 *  - a thread that finds the lock held past a queue whose head does not
 *    watch dozes TICKET_DOZE_US outside the queue and steals the lock if it
 *    is free then, if the lock's last watching head was bypassed fewer than
 *    TS_DOZE_MAX_BYPASSED times; at most TS_DOZES_MAX times, then it
 *    queues; not behind a watching head, not before any head has watched,
 *    not after a head bypassed that often, not right after a rest, not
 *    with TICKET_DOZE_US=0.
 * And strict FIFO (TICKET_QUEUE=0) steals nothing; pthread_spin_trylock() takes
 * a free lock whatever the queue (a watching head at the bound, strict FIFO,
 * a head asleep or stopped), and fails only while the lock is held.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "options.h"
#include "parking.h"
#include "slowpath.h"
#include "ticket_lock.h"

static ts_word_t word __attribute__((aligned(64)));

#include "arrivals.h"

static void bypass(const char *value)
{
	setenv("TICKET_BYPASS", value, 1);
}

Test(bypass, stealers_count_and_stop_at_the_bound, .timeout = 10)
{
	bypass("5");
	cr_assert_eq(ts_config()->bypass_max, 5u);
	__atomic_store_n(&word, ghost_watching_head(), __ATOMIC_RELAXED);
	for (uint32_t k = 1; k <= 5; k++) {
		ts_lock(&word, NULL);
		/* a steal: no ticket taken, counted in the word */
		cr_assert_eq(ts_bypass(word), k, "steal %u: word %#x", k, word);
		cr_assert(word & TS_WATCHING, "steal %u: word %#x", k, word);
		cr_assert_eq(ts_queued(word), 1, "steal %u: word %#x", k, word);
		cr_assert(ts_unlock(&word));
	}
	/*
	 * The sixth may not steal: it queues behind the head, and gets the lock
	 * only by passing the head that does not take it (the escape), which
	 * ends the watch.
	 */
	ts_lock(&word, NULL);
	cr_assert(!(word & TS_WATCHING), "after the bound: word %#x", word);
	cr_assert_eq(ts_bypass(word), 0, "word %#x", word);
	cr_assert_eq(ts_queued(word), 1, "our ticket was given back: word %#x", word);
	cr_assert(ts_unlock(&word));
	/* No one watches now: steals go on, uncounted. */
	for (int k = 0; k < 100; k++) {
		ts_lock(&word, NULL);
		cr_assert_eq(ts_bypass(word), 0, "word %#x", word);
		cr_assert(ts_unlock(&word));
	}
	cr_assert_eq(ts_queued(word), 1, "the ghost's ticket stays: word %#x", word);
}

/* TICKET_BYPASS=5 and TICKET_REST_US=@us, then up to the bound as above. */
static void steal_up_to_the_bound_resting(uint32_t us)
{
	char value[16];

	snprintf(value, sizeof value, "%" PRIu32, us);
	bypass("5");
	setenv("TICKET_REST_US", value, 1);
	cr_assert_eq(ts_config()->rest_us, us);
	steal_up_to_the_bound();
}

/* The library's counts of rests, turn yields and sleeps, so far. */
static struct ts_sleep_counts counts_so_far(void)
{
	struct ts_sleep_counts counts;

	ts_sleep_counts(&counts);
	return counts;
}

static uint64_t rests_so_far(void)
{
	return counts_so_far().rests;
}

static uint64_t elapsed_us(uint64_t since_ns)
{
	return (ts_now_ns() - since_ns) / 1000u;
}

/*
 * The sixth lock, stopped by the bound, sleeps its rest (a lower bound on
 * the time: the rest's deadline) and only then queues, passing the ghost by
 * the escape as above; the seventh finds no one watching and steals.
 */
Test(bypass, a_stealer_stopped_at_the_bound_rests_once_then_queues, .timeout = 10)
{
	uint64_t rests, start;

	steal_up_to_the_bound_resting(50000u);
	rests = rests_so_far();
	start = ts_now_ns();
	ts_lock(&word, NULL);
	cr_assert_geq(elapsed_us(start), 50000, "no rest before queueing");
	cr_assert_eq(rests_so_far(), rests + 1, "one rest, then the queue");
	cr_assert(!(word & TS_WATCHING), "taken past the ghost: word %#x", word);
	cr_assert(ts_unlock(&word));
	ts_lock(&word, NULL);
	cr_assert_eq(rests_so_far(), rests + 1, "no one watches: no bound, no rest");
	cr_assert(ts_unlock(&word));
}

/*
 * Another thread that takes the lock whenever a rester has marked it: as
 * any acquisition would, it overwrites the mark (here with a free byte, an
 * acquisition and its release at once): the rest let someone run.  Until
 * stop_acquirer().  It counts the marks it overwrote: a rest in whose
 * second half it had no CPU (beside CPU hogs, under a sanitizer) keeps its
 * mark, held up everyone as far as the library can tell, and rightly makes
 * the rester skip its next rest.
 */
static bool acquirer_stop;
static uint64_t marks_overwritten;

static void *acquire_during_rests(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&acquirer_stop, __ATOMIC_RELAXED)) {
		uint32_t seen = __atomic_load_n(&word, __ATOMIC_RELAXED);

		if (ts_lock_byte(seen) == TS_REST_MARK &&
		    __atomic_compare_exchange_n(&word, &seen, seen & ~TS_LOCK_BYTE, false,
		                                __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			__atomic_fetch_add(&marks_overwritten, 1, __ATOMIC_RELAXED);
		usleep(100);
	}
	return NULL;
}

static pthread_t start_acquirer(void)
{
	pthread_t tid;

	__atomic_store_n(&acquirer_stop, false, __ATOMIC_RELAXED);
	cr_assert_eq(pthread_create(&tid, NULL, acquire_during_rests, NULL), 0);
	return tid;
}

static void stop_acquirer(pthread_t tid)
{
	__atomic_store_n(&acquirer_stop, true, __ATOMIC_RELAXED);
	cr_assert_eq(pthread_join(tid, NULL), 0);
}

/*
 * A stop by the bound as the stopped thread saw it: steal_up_to_the_bound()'s
 * steps without its assertions (threads other than the test's make it; the
 * test's own thread judges), then the sixth lock, stopped, timed by the
 * thread's own clock.
 */
struct stop {
	uint64_t began_ns, ended_ns; /* around the sixth lock */
	uint64_t rests;              /* rests during it: 0 or 1 */
	bool mark_overwritten;       /* the acquirer overwrote a rest's mark during it */
	uint32_t held_word;          /* the word while it held the lock */
};

static struct stop stop_at_the_bound(void)
{
	struct stop s;
	uint64_t rests, marks;

	__atomic_store_n(&word, ghost_watching_head(), __ATOMIC_RELAXED);
	for (int k = 0; k < 5; k++) {
		ts_lock(&word, NULL);
		(void)ts_unlock(&word);
	}
	rests = rests_so_far();
	marks = __atomic_load_n(&marks_overwritten, __ATOMIC_RELAXED);
	s.began_ns = ts_now_ns();
	ts_lock(&word, NULL); /* the sixth: stopped */
	s.ended_ns = ts_now_ns();
	s.held_word = __atomic_load_n(&word, __ATOMIC_RELAXED);
	(void)ts_unlock(&word);
	s.rests = rests_so_far() - rests;
	s.mark_overwritten = __atomic_load_n(&marks_overwritten, __ATOMIC_RELAXED) != marks;
	return s;
}

/*
 * One trial of the alternation, in a thread of its own (a new thread has
 * rested on no lock and has no skips due): its stops, and another thread's
 * between them.
 */
struct alternation_trial {
	uint32_t late_after_us; /* how long after its rest the last stop comes */
	struct stop first;      /* it has not rested on the lock: it rests */
	struct stop again[2];   /* at once after: it rested last, it queues */
	bool other_ran;
	struct stop other;      /* another thread: it did not rest last, it rests */
	struct stop turn;       /* the other rested since: our turn to rest */
	struct stop late;       /* past the window after its own rest, the last one: it rests */
};

static void *stop_in_another_thread(void *arg)
{
	*(struct stop *)arg = stop_at_the_bound();
	return NULL;
}

static void *alternation_trial(void *arg)
{
	struct alternation_trial *t = arg;
	pthread_t other;

	t->first = stop_at_the_bound();
	for (int k = 0; k < 2; k++)
		t->again[k] = stop_at_the_bound();
	t->other_ran = pthread_create(&other, NULL, stop_in_another_thread, &t->other) == 0 &&
	               pthread_join(other, NULL) == 0;
	t->turn = stop_at_the_bound();
	usleep(t->late_after_us);
	t->late = stop_at_the_bound();
	return NULL;
}

/*
 * The rests alternate.  A thread that rested last on the lock, stopped by
 * the bound again (twice here, milliseconds after its rest), queues without
 * resting: the thread it stopped is the one that rests.  Once another
 * thread has rested on the lock, the bound makes it rest again; and so it
 * does TS_REST_ALTERNATE rests' time after its last rest, whoever rested
 * since.
 *
 * Judged by what the threads saw, not by how long things should take.  A
 * stop again counts only if the thread's own clock puts all of it, from
 * the start of the rest before to its end, within the window (beside CPU
 * hogs it can lose its CPU for longer, and then a rest is due).  A stop
 * that must rest counts only if the acquirer overwrote the mark of every
 * rest of that thread before it: when the acquirer had no CPU in a rest's
 * second half, the rest held up everyone as far as the library can tell,
 * and the next one is rightly skipped (the ASan build failed so beside a
 * load of timers, 3 runs in 20; doc/testing.md).  The last stop counts
 * only if it came less than half a window after the window's end: one
 * that a stretched sleep put later would pass with a longer window too.
 * Trials, each in a new thread, until each of the three has counted, up
 * to ALTERNATION_TRIALS of them or ALTERNATION_BUDGET_NS; a check that
 * counts and fails fails the test, and so does one that never counted.
 */
#define ALTERNATION_TRIALS    20
#define ALTERNATION_BUDGET_NS 6000000000u /* no trial begins after 6 s: the timeout is 10 */

Test(bypass, the_rests_alternate_between_threads, .timeout = 10)
{
	const uint32_t rest_us = 10000u;
	/* libticketspin(7): "up to eight rests' time after its own rest" (TS_REST_ALTERNATE) */
	const uint64_t window_ns = (uint64_t)rest_us * 8u * 1000u;
	int trial, queued_again = 0, rested_turn = 0, rested_late = 0;
	uint64_t start;
	pthread_t acquirer = start_acquirer(); /* the rests are useful: none skipped */

	steal_up_to_the_bound_resting(rest_us); /* the settings, read here */
	start = ts_now_ns();
	for (trial = 1; trial <= ALTERNATION_TRIALS && ts_now_ns() - start < ALTERNATION_BUDGET_NS &&
	                !(queued_again && rested_turn && rested_late);
	     trial++) {
		struct alternation_trial t = { .late_after_us = rest_us * 9u };
		const struct stop *stops[] = { &t.first, &t.again[0], &t.again[1],
		                               &t.other, &t.turn, &t.late };
		const struct stop *last_rest = &t.first;
		bool useful; /* every rest of the trial's thread so far let the acquirer run */
		uint64_t late_ns;
		pthread_t subject;

		cr_assert_eq(pthread_create(&subject, NULL, alternation_trial, &t), 0);
		cr_assert_eq(pthread_join(subject, NULL), 0);
		cr_assert(t.other_ran, "trial %d: no other thread", trial);
		for (size_t k = 0; k < sizeof stops / sizeof stops[0]; k++) {
			cr_assert_leq(stops[k]->rests, 1, "trial %d, stop %zu: %" PRIu64 " rests", trial,
			              k, stops[k]->rests);
			cr_assert(!(stops[k]->held_word & TS_WATCHING),
			          "trial %d, stop %zu: taken past the ghost: word %#x", trial, k,
			          stops[k]->held_word);
		}
		cr_assert_eq(t.first.rests, 1, "trial %d: stopped by the bound: one rest", trial);
		useful = t.first.mark_overwritten;

		for (int again = 0; again < 2; again++) {
			const struct stop *s = &t.again[again];
			uint64_t since_ns = s->ended_ns - last_rest->began_ns;

			if (since_ns < window_ns) {
				cr_assert_eq(s->rests, 0,
				             "trial %d: stopped again (%d) within %" PRIu64
				             " us of its rest, it rested again",
				             trial, again + 1, since_ns / 1000u);
				queued_again++;
				continue;
			}
			cr_log_info("trial %d: stopped again (%d) %" PRIu64 " us after its rest began: "
			            "not counted", trial, again + 1, since_ns / 1000u);
			if (s->rests == 1) { /* past the window, a rest was due */
				last_rest = s;
				useful = useful && s->mark_overwritten;
			}
		}
		cr_assert_eq(t.other.rests, 1, "trial %d: the other thread, stopped, did not rest",
		             trial);
		if (!useful) {
			cr_log_info("trial %d: a rest kept its mark (the acquirer had no CPU): "
			            "a skip may be due, the turn not counted", trial);
			continue;
		}
		cr_assert_eq(t.turn.rests, 1, "trial %d: the other rested since: our turn to rest",
		             trial);
		rested_turn++;
		if (!t.turn.mark_overwritten) {
			cr_log_info("trial %d: the turn's rest kept its mark: the last stop not counted",
			            trial);
			continue;
		}
		late_ns = t.late.began_ns - t.turn.ended_ns;
		if (late_ns < window_ns)
			continue; /* (the sleep is longer) */
		cr_assert_eq(t.late.rests, 1,
		             "trial %d: stopped %" PRIu64 " us after its own rest, the last one: it must rest",
		             trial, late_ns / 1000u);
		if (late_ns < window_ns * 3u / 2u)
			rested_late++;
		else
			cr_log_info("trial %d: the last stop came %" PRIu64 " us after the rest: not counted",
			            trial, late_ns / 1000u);
	}
	stop_acquirer(acquirer);
	cr_assert(queued_again && rested_turn && rested_late,
	          "in %d trials, counted: stopped again %d times, the turn %d, the last stop %d "
	          "(the others' threads lost their CPU too long)",
	          trial - 1, queued_again, rested_turn, rested_late);
	cr_log_info("%d trials: counted stopped again %d times, the turn %d, the last stop %d",
	            trial - 1, queued_again, rested_turn, rested_late);
}

/* stopped_by_the_bound(): true if it rested. */
static bool stopped_rests(uint32_t rest_us)
{
	uint64_t rests = rests_so_far();

	stopped_by_the_bound(rest_us);
	return rests_so_far() == rests + 1;
}

/*
 * A rest in which no one took the lock held everyone up: the thread skips
 * its next rest on the lock, then three after the next such rest; a rest in
 * which someone took it (the mark overwritten) takes an eighth off, at
 * least one.  Without the skips every stop rests; without the mark's
 * judgement every rest counts as one or the other.
 */
Test(bypass, a_rest_that_held_up_everyone_makes_the_next_ones_skipped, .timeout = 10)
{
	const uint32_t rest_us = 10000u;
	const bool idle_then[] = { true, false, true, false, false, false };
	pthread_t acquirer;

	steal_up_to_the_bound_resting(rest_us);
	for (size_t k = 0; k < sizeof idle_then / sizeof idle_then[0]; k++)
		cr_assert_eq(stopped_rests(rest_us), idle_then[k],
		             "stop %zu: %s", k, idle_then[k] ? "a rest was due" : "a skip was due");
	/* After the three skips a rest, which a taker makes useful: three less one. */
	acquirer = start_acquirer();
	cr_assert(stopped_rests(rest_us), "the skips were over: a rest");
	stop_acquirer(acquirer);
	for (int k = 0; k < 2; k++)
		cr_assert(!stopped_rests(rest_us), "stop %d after the useful rest: a skip was due", k);
	cr_assert(stopped_rests(rest_us), "the skips were over: a rest");
}

/*
 * libticketspin(7), TICKET_REST_US: a rest that held up everyone makes the
 * thread skip "its next rest on that lock, three after another such rest,
 * and so on up to 255".  Past a ghost head no one takes the lock during a
 * rest, so every rest held up everyone: between two rests the thread skips
 * 1, 3, 7 ... 127, then 255, and 255 again, not 511.  (Rests of 1 us: the
 * skips, not the rests' length, are counted.)
 */
Test(bypass, the_skips_double_after_each_rest_that_held_up_everyone_up_to_255, .timeout = 10)
{
	static const uint32_t skips[] = { 1, 3, 7, 15, 31, 63, 127, 255, 255 };

	steal_up_to_the_bound_resting(1u);
	cr_assert(stopped_rests(1u), "the first stop: a rest");
	for (size_t k = 0; k < sizeof skips / sizeof skips[0]; k++) {
		for (uint32_t n = 0; n < skips[k]; n++)
			cr_assert(!stopped_rests(1u), "after rest %zu, stop %u rested: %u skips due",
			          k + 1, n + 1, skips[k]);
		cr_assert(stopped_rests(1u), "after rest %zu, %u skips, then a rest was due", k + 1,
		          skips[k]);
	}
}

/*
 * A rest is a futex wait with a deadline, and "a signal ends it early"
 * (doc/limits.md): a thread whose rest a handled signal interrupts does not
 * sleep on to the deadline.  We rest 100 ms (the longest) while another
 * thread signals us every 200 us: each half of the rest ends at the first
 * signal, so the lock call sees a handful of them; a rest that slept on
 * through them would see hundreds (a count, not a time: a slow machine
 * sends fewer).
 */
static volatile sig_atomic_t signals_handled;
static bool signaller_stop;

static void count_signal(int sig)
{
	(void)sig;
	signals_handled++;
}

static void *signal_every_200_us(void *arg)
{
	pthread_t target = *(pthread_t *)arg;

	while (!__atomic_load_n(&signaller_stop, __ATOMIC_RELAXED)) {
		pthread_kill(target, SIGUSR2);
		usleep(200);
	}
	return NULL;
}

Test(bypass, a_signal_ends_a_rest_early, .timeout = 10)
{
	struct sigaction sa = { .sa_handler = count_signal, .sa_flags = SA_RESTART };
	pthread_t self = pthread_self(), signaller;
	uint64_t rests;
	sig_atomic_t before, during;

	cr_assert_eq(sigaction(SIGUSR2, &sa, NULL), 0);
	steal_up_to_the_bound_resting(100000u);
	rests = rests_so_far();
	cr_assert_eq(pthread_create(&signaller, NULL, signal_every_200_us, &self), 0);
	while (signals_handled == 0)
		sched_yield();
	before = signals_handled;
	ts_lock(&word, NULL); /* stopped by the bound: the rest, then past the ghost */
	during = signals_handled - before;
	__atomic_store_n(&signaller_stop, true, __ATOMIC_RELAXED);
	cr_assert_eq(pthread_join(signaller, NULL), 0);
	cr_assert(ts_unlock(&word));
	cr_assert_eq(rests_so_far(), rests + 1, "stopped by the bound: one rest");
	cr_assert_lt(during, 20, "%d signals handled during one rest: it slept on through them",
	             (int)during);
}

/*
 * The escape (README: "A watching head that leaves the lock free for 20 us
 * is not running: the last in the queue takes the lock in its place"): not
 * sooner.  Past a ghost head watching at the bound, with no rest, each of
 * our locks queues as the last in line and passes the head after the lock
 * has been free 20 us: each takes 20 us at least (a lower bound, which no
 * load can break).
 */
Test(bypass, the_last_in_line_passes_a_watching_head_after_20_us_of_a_free_lock, .timeout = 10)
{
	steal_up_to_the_bound_resting(0u);
	for (int k = 0; k < 20; k++) {
		uint64_t start;

		steal_up_to_the_bound();
		start = ts_now_ns();
		ts_lock(&word, NULL);
		cr_assert_geq(ts_now_ns() - start, 20000u,
		              "escape %d: passed the watching head after %llu ns of a free lock", k,
		              (unsigned long long)(ts_now_ns() - start));
		cr_assert(!(word & TS_WATCHING) && ts_queued(word) == 1,
		          "not past the ghost: word %#x", word);
		cr_assert(ts_unlock(&word));
	}
}

Test(bypass, no_rest_with_ticket_rest_us_0, .timeout = 10)
{
	uint64_t rests;

	steal_up_to_the_bound_resting(0u);
	rests = rests_so_far();
	ts_lock(&word, NULL);
	cr_assert_eq(rests_so_far(), rests, "rested with TICKET_REST_US=0");
	cr_assert(ts_unlock(&word));
}

static uint64_t turn_yields_so_far(void)
{
	return counts_so_far().turn_yields;
}

/*
 * Takes and releases the lock for @ms milliseconds past a queue of @queued
 * ghost tickets whose head does not watch (woken, say, and not running):
 * every acquisition is a steal, and the tickets stay.  Returns the turn
 * yields counted meanwhile, and the time taken in @elapsed_ns.
 */
static uint64_t steal_past_ghosts_for(uint32_t queued, uint64_t ms, uint64_t *elapsed_ns)
{
	uint64_t before = turn_yields_so_far();
	uint64_t start = ts_now_ns();

	__atomic_store_n(&word, queued << TS_NEXT_SHIFT, __ATOMIC_RELAXED);
	do {
		for (int k = 0; k < 1000; k++) {
			ts_lock(&word, NULL);
			cr_assert(!(word & TS_WATCHING) && ts_bypass(word) == 0, "word %#x", word);
			cr_assert(ts_unlock(&word));
		}
		*elapsed_ns = ts_now_ns() - start;
	} while (*elapsed_ns < ms * 1000000u);
	cr_assert_eq(ts_queued(word), queued, "the ghosts' tickets stay: word %#x", word);
	return turn_yields_so_far() - before;
}

/*
 * A turn restarts at each yield, and is timed from its 64th steal: at most
 * one yield per TICKET_TURN_US, and at least one in 30 of them.  (Counts of
 * a logical bound, not a speed: a slow machine only steals less often.)
 */
Test(bypass, a_thread_stealing_past_a_head_that_does_not_watch_yields_once_a_turn,
     .timeout = 10)
{
	uint64_t yields, elapsed_ns;

	setenv("TICKET_TURN_US", "1000", 1);
	cr_assert_eq(ts_config()->turn_us, 1000u);
	yields = steal_past_ghosts_for(2, 30, &elapsed_ns);
	cr_assert_geq(yields, 1, "no yield in %llu us of steals past the queue",
	              (unsigned long long)(elapsed_ns / 1000u));
	cr_assert_leq(yields, elapsed_ns / 1000000u + 1, "%llu yields in %llu us",
	              (unsigned long long)yields, (unsigned long long)(elapsed_ns / 1000u));
}

/* One waiter is the two-thread case, which the rest handles: no turn. */
Test(bypass, no_turn_past_a_queue_of_one, .timeout = 10)
{
	uint64_t elapsed_ns;

	setenv("TICKET_TURN_US", "1000", 1);
	cr_assert_eq(steal_past_ghosts_for(1, 10, &elapsed_ns), 0);
}

Test(bypass, no_turn_with_ticket_turn_us_0, .timeout = 10)
{
	uint64_t elapsed_ns;

	setenv("TICKET_TURN_US", "0", 1);
	cr_assert_eq(ts_config()->turn_us, 0u);
	cr_assert_eq(steal_past_ghosts_for(2, 10, &elapsed_ns), 0);
}

Test(bypass, no_turn_with_ticket_wait_spin, .timeout = 10)
{
	uint64_t elapsed_ns;

	setenv("TICKET_TURN_US", "1000", 1);
	setenv("TICKET_WAIT", "spin", 1);
	cr_assert_eq(ts_config()->wait, TS_WAIT_SPIN);
	cr_assert_eq(steal_past_ghosts_for(2, 10, &elapsed_ns), 0);
}

static uint64_t sleeps_so_far(void)
{
	struct ts_sleep_counts counts = counts_so_far();

	return counts.woken + counts.timed_out;
}

static uint64_t dozes_so_far(void)
{
	return counts_so_far().dozes;
}

/*
 * The doze tests' settings: TICKET_DOZE_US=@us, and heads that spin
 * (heads_spin()), so that the real watching head that sets the lock's hint
 * (a_watching_head_takes_after()) watches until our release even when it
 * shares our CPU.
 */
static void doze_for(const char *us)
{
	heads_spin();
	setenv("TICKET_DOZE_US", us, 1);
	cr_assert_eq(ts_config()->doze_us, (uint32_t)strtoul(us, NULL, 10));
}

/*
 * Held, past two ghost tickets whose head does not watch (woken, say, and
 * not running), on a lock whose last watching head was bypassed fewer than
 * TS_DOZE_MAX_BYPASSED times (the lock came free between acquisitions): the
 * arrival dozes outside the queue (here 100 ms, so that our 20 ms of
 * holding end within its first doze) and then steals the lock, drawing no
 * ticket and never sleeping in the queue.  Without the doze it would queue
 * behind the ghosts and sleep.  (Not judged if we lost our CPU for most of
 * the 100 ms: the arrival then dozed again.)
 */
Test(bypass, an_arrival_behind_a_head_that_does_not_watch_dozes_and_steals, .timeout = 10)
{
	struct arrival a = { 0 };
	uint64_t sleeps, dozes;
	struct hold_report r;

	doze_for("100000");
	/* README: "its last head that watched was bypassed fewer than 16 times" */
	a_watching_head_takes_after(15u);
	sleeps = sleeps_so_far();
	dozes = dozes_so_far();
	r = hold_while_one_arrives(2u << TS_NEXT_SHIFT, 20, &a);
	if (r.held_ns >= 90000000u)
		cr_skip_test("held %llu ms: longer than the doze", (unsigned long long)(r.held_ns / 1000000u));
	cr_assert_eq(r.most_queued, 2, "the arrival drew a ticket (%u in the queue)", r.most_queued);
	cr_assert(ts_is_held(a.held_word) && ts_queued(a.held_word) == 2,
	          "not a steal past the ghosts: word %#x", a.held_word);
	cr_assert_eq(dozes_so_far() - dozes, 1, "dozes: %llu",
	             (unsigned long long)(dozes_so_far() - dozes));
	cr_assert_eq(sleeps_so_far(), sleeps, "the arrival slept in the queue");
}

/*
 * The lock stays held past the ghosts: the arrival dozes TS_DOZES_MAX
 * times, 1 ms each, and then draws its ticket.  Without the limit it would
 * doze on for as long as the lock stays held (here up to 5 s).
 */
Test(bypass, an_arrival_dozes_at_most_ts_dozes_max_times_then_queues, .timeout = 10)
{
	struct arrival a = { 0 };
	uint64_t dozes;
	struct hold_report r;

	doze_for("1000");
	a_watching_head_takes_after(0);
	dozes = dozes_so_far();
	r = hold_while_one_arrives(2u << TS_NEXT_SHIFT, 5000, &a);
	cr_assert_eq(r.most_queued, 3, "no ticket in %llu ms", (unsigned long long)(r.held_ns / 1000000u));
	/* README, libticketspin(7): "up to 4 times, before it queues" (TS_DOZES_MAX) */
	cr_assert_eq(dozes_so_far() - dozes, 4u, "dozes: %llu, not 4",
	             (unsigned long long)(dozes_so_far() - dozes));
}

/* The arrival draws its ticket while we hold the lock, without dozing. */
static void an_arrival_queues_without_dozing(uint32_t queue)
{
	struct arrival a = { 0 };
	uint64_t dozes = dozes_so_far();
	struct hold_report r = hold_while_one_arrives(queue, 5000, &a);

	cr_assert_eq(r.most_queued, ts_queued(queue) + 1, "no ticket in %llu ms (word %#x)",
	             (unsigned long long)(r.held_ns / 1000000u), queue);
	cr_assert_eq(dozes_so_far(), dozes, "the arrival dozed %llu times before its ticket",
	             (unsigned long long)(dozes_so_far() - dozes));
}

/* TICKET_DOZE_US=0: the arrival queues at once, behind the ghosts. */
Test(bypass, no_doze_with_ticket_doze_us_0, .timeout = 10)
{
	doze_for("0");
	a_watching_head_takes_after(0);
	an_arrival_queues_without_dozing(2u << TS_NEXT_SHIFT);
}

/*
 * Behind a head that watches the lock is saturated, and a ticket is the
 * restriction (step 3): the arrival queues at once.
 */
Test(bypass, no_doze_behind_a_watching_head, .timeout = 10)
{
	doze_for("100000");
	a_watching_head_takes_after(0);
	an_arrival_queues_without_dozing(ghost_watching_head());
}

/*
 * With an empty queue the arrival becomes the head, which runs and watches
 * (README, TICKET_DOZE_US: "not with an empty queue"): it queues at once,
 * on a lock whose hint says it comes free between acquisitions.
 */
Test(bypass, no_doze_with_an_empty_queue, .timeout = 10)
{
	doze_for("100000");
	a_watching_head_takes_after(0);
	an_arrival_queues_without_dozing(0);
}

/*
 * Only where waiters sleep (README, TICKET_DOZE_US: "only with
 * TICKET_WAIT=park"): with TICKET_WAIT=yield or spin the arrival queues at
 * once behind the ghosts, where it would doze with park.
 */
static void no_doze_when_waiters(const char *wait)
{
	setenv("TICKET_WAIT", wait, 1);
	doze_for("100000");
	cr_assert_neq(ts_config()->wait, TS_WAIT_PARK);
	a_watching_head_takes_after(0);
	an_arrival_queues_without_dozing(2u << TS_NEXT_SHIFT);
}

Test(bypass, no_doze_when_waiters_yield, .timeout = 10)
{
	no_doze_when_waiters("yield");
}

Test(bypass, no_doze_when_waiters_spin, .timeout = 10)
{
	no_doze_when_waiters("spin");
}

/*
 * No head has watched the lock yet: nothing says it comes free between
 * acquisitions, and the arrival queues at once behind the ghosts.
 */
Test(bypass, no_doze_before_a_head_has_watched, .timeout = 10)
{
	doze_for("100000");
	cr_assert_eq(ts_head_bypassed(&word), 0u);
	an_arrival_queues_without_dozing(2u << TS_NEXT_SHIFT);
}

/*
 * The lock's last watching head was bypassed TS_DOZE_MAX_BYPASSED times:
 * the lock was saturated (at 16 threads with little work between
 * acquisitions, dozing there took a sixth off: the sleeping queue is the
 * restriction), and the arrival queues at once.
 */
Test(bypass, no_doze_after_a_head_bypassed_as_often_as_the_gate, .timeout = 10)
{
	doze_for("100000");
	a_watching_head_takes_after(16u); /* not "fewer than 16 times" */
	an_arrival_queues_without_dozing(2u << TS_NEXT_SHIFT);
}

/*
 * Not after a rest (README, TICKET_DOZE_US): a thread that the bound
 * stopped and that rested queues, so that the two threads take turns
 * (slowpath.c, steps 4 and 7), even where it would doze otherwise.  The
 * arrival is stopped by the bound past a ghost head watching (free lock,
 * 5 steals counted, TICKET_BYPASS=5) and rests 100 ms.  The mark it leaves
 * in the free lock byte halfway (rest()) tells us it is in the rest's
 * second half, whatever the scheduler did: only then do we take the lock
 * and replace the ghost by two ghost tickets whose head does not watch, on
 * a lock whose hint says it comes free between acquisitions.  So the rest
 * is all that stands between the arrival and a doze (the other doze tests
 * show it dozes there otherwise): it must draw its ticket with no doze
 * counted.  If we lost our CPU for the whole 50 ms of the rest's second
 * half, the arrival found the ghost watching again and queued behind it:
 * not judged.
 */
Test(bypass, a_thread_that_has_just_rested_queues_without_dozing, .timeout = 10)
{
	struct arrival a = { 0 };
	uint64_t dozes, rests, start;
	uint32_t seen;

	bypass("5");
	setenv("TICKET_REST_US", "100000", 1); /* the longest: a wide window */
	doze_for("10000"); /* short: a broken rule costs TS_DOZES_MAX of them */
	cr_assert_eq(ts_config()->rest_us, 100000u);
	a_watching_head_takes_after(0);
	dozes = dozes_so_far();
	rests = rests_so_far();
	__atomic_store_n(&word, ghost_watching_head() | (5u << TS_BYPASS_SHIFT), __ATOMIC_RELEASE);
	cr_assert_eq(pthread_create(&a.tid, NULL, arrival_thread, &a), 0);
	start = ts_now_ns();
	do {
		seen = __atomic_load_n(&word, __ATOMIC_ACQUIRE);
		if (ts_now_ns() - start > 5000000000u)
			cr_assert_fail("no rest's mark in 5 s: word %#x", seen);
		usleep(100);
	} while (ts_lock_byte(seen) != TS_REST_MARK);
	/*
	 * As an acquisition would, taking the lock overwrites the mark.  The
	 * exchange fails only if the rest ended first and removed its mark.
	 */
	if (!__atomic_compare_exchange_n(&word, &seen, (2u << TS_NEXT_SHIFT) | TS_LOCKED, false,
	                                 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		cr_assert_eq(pthread_join(a.tid, NULL), 0); /* past the ghost by the escape */
		cr_skip_test("the rest ended before we took the lock: word %#x", seen);
	}
	start = ts_now_ns();
	while (ts_queued(__atomic_load_n(&word, __ATOMIC_RELAXED)) < 3 &&
	       ts_now_ns() - start < 5000000000u)
		usleep(100);
	seen = __atomic_load_n(&word, __ATOMIC_RELAXED);
	cr_assert(ts_unlock(&word));
	cr_assert_eq(pthread_join(a.tid, NULL), 0);
	cr_assert_eq(rests_so_far(), rests + 1, "the arrival did not rest");
	cr_assert_eq(ts_queued(seen), 3, "no ticket after the rest: word %#x", seen);
	cr_assert_eq(dozes_so_far(), dozes, "the arrival dozed %llu times after its rest",
	             (unsigned long long)(dozes_so_far() - dozes));
}

struct taker {
	pthread_t tid;
	volatile int acquired;
};

static void *head_thread(void *arg)
{
	struct taker *t = arg;

	ts_lock(&word, NULL);
	t->acquired = 1;
	cr_assert(ts_unlock(&word));
	return NULL;
}

/*
 * A real head: while the thread that keeps relocking holds the lock and the
 * head watches, the word never shows more steals than the bound (each steal
 * counts itself, and the one past the bound queues).  How many acquisitions
 * the relocking thread gets before the head has the lock is no measure: a
 * head that loses its CPU is passed over until it runs again, by design.
 */
Test(bypass, a_watching_head_is_never_bypassed_past_the_bound, .timeout = 10)
{
	enum { TRIALS = 15, BOUND = 8 };
	long watched = 0;

	bypass("8");
	/* The count alone: a head out of patience would fill it to 9 itself. */
	setenv("TICKET_BYPASS_NS", "0", 1);
	/* A head that sleeps does not watch: keep it awake, so that it does. */
	setenv("TICKET_WAIT", "spin", 1);
	cr_assert_eq(ts_config()->wait, TS_WAIT_SPIN);
	for (int trial = 0; trial < TRIALS; trial++) {
		struct taker t = { 0 };

		__atomic_store_n(&word, 0, __ATOMIC_RELAXED);
		ts_lock(&word, NULL);
		pthread_create(&t.tid, NULL, head_thread, &t);
		/* wait until it has queued (at the front of an empty queue, it watches) */
		while (ts_queued(__atomic_load_n(&word, __ATOMIC_ACQUIRE)) == 0)
			;
		cr_assert(ts_unlock(&word));
		while (!t.acquired) {
			uint32_t held;

			ts_lock(&word, NULL);
			held = __atomic_load_n(&word, __ATOMIC_RELAXED);
			if (held & TS_WATCHING) {
				watched++;
				cr_assert_leq(ts_bypass(held), BOUND, "trial %d: word %#x", trial, held);
			}
			cr_assert(ts_unlock(&word));
		}
		pthread_join(t.tid, NULL);
	}
	cr_assert_gt(watched, 0, "the head never watched while we held the lock");
}

/*
 * TICKET_BYPASS_NS: a real head that watches while we hold the lock fills
 * the bypass count to TICKET_BYPASS itself once it has watched that long,
 * if it had been bypassed TS_REST_MIN_BYPASSED times or more by then (here:
 * steals written into the word by hand just after its watch began); an
 * arrival then may not steal, and rests before it queues.  Bypassed fewer
 * times (here: none, we hold the lock throughout), it leaves the count
 * alone.  Nothing is timed but to void a trial: the fill is waited for
 * (TICKET_BYPASS_NS=1000000 leaves a millisecond to write the steals; a
 * trial whose write came later than half of it after the head began to
 * lock is void), and with TICKET_BYPASS_NS=0 it never comes.
 */
struct patience {
	uint32_t filled; /* the count the head left; UINT32_MAX: a void trial */
	bool rested;     /* the arrival rested before it queued */
};

static bool wait_for_word(uint32_t mask, uint32_t at_least, uint64_t ms)
{
	uint64_t start = ts_now_ns();

	while (ts_now_ns() - start < ms * 1000000u) {
		uint32_t w = __atomic_load_n(&word, __ATOMIC_RELAXED);

		if ((w & mask) >= at_least)
			return true;
		sched_yield();
	}
	return false;
}

/* TICKET_BYPASS_NS=@ns, TICKET_BYPASS=20, and a head that never sleeps (a sleeping head does not watch). */
static void patience_setup(const char *ns)
{
	setenv("TICKET_BYPASS_NS", ns, 1);
	bypass("20");
	setenv("TICKET_WAIT", "spin", 1);
	cr_assert_eq(ts_config()->bypass_ns, (uint32_t)strtoul(ns, NULL, 10));
	cr_assert_eq(ts_config()->bypass_max, 20u);
	cr_assert_eq(ts_config()->wait, TS_WAIT_SPIN);
}

/* A head that notes when it began to lock: its watch, and its patience, start after. */
struct timed_taker {
	pthread_t tid;
	volatile uint64_t started_ns;
};

static void *timed_head_thread(void *arg)
{
	struct timed_taker *t = arg;

	t->started_ns = ts_now_ns();
	ts_lock(&word, NULL);
	cr_assert(ts_unlock(&word));
	return NULL;
}

static struct patience head_out_of_patience_after(uint32_t steals_by_hand, uint64_t hold_ms)
{
	struct patience p = { UINT32_MAX, false };
	struct timed_taker t = { 0 };
	struct arrival a = { 0 };
	bool written = true;
	uint64_t rests;

	__atomic_store_n(&word, 0, __ATOMIC_RELAXED);
	ts_lock(&word, NULL);
	cr_assert_eq(pthread_create(&t.tid, NULL, timed_head_thread, &t), 0);
	cr_assert(wait_for_word(TS_WATCHING, TS_WATCHING, 5000), "the head never watched");
	if (steals_by_hand != 0) {
		uint32_t w = __atomic_load_n(&word, __ATOMIC_RELAXED);

		/*
		 * In time only if written well before the head can have decided:
		 * it decides TICKET_BYPASS_NS after its watch began, which was
		 * after it noted started_ns (the same clock), on the word it
		 * loaded last, so half of that, for a look that loaded the word
		 * just before our write.
		 */
		uint64_t patience = ts_config()->bypass_ns;

		written = ts_bypass(w) == 0 &&
		          __atomic_compare_exchange_n(&word, &w, w + steals_by_hand * TS_BYPASS_ONE,
		                                      false, __ATOMIC_RELAXED, __ATOMIC_RELAXED) &&
		          (patience == 0 || ts_now_ns() - t.started_ns < patience / 2);
	}
	(void)wait_for_word(TS_BYPASS_MASK, 20u * TS_BYPASS_ONE, hold_ms);
	if (written)
		p.filled = ts_bypass(__atomic_load_n(&word, __ATOMIC_RELAXED));
	if (written && p.filled >= 20u) {
		rests = rests_so_far();
		cr_assert_eq(pthread_create(&a.tid, NULL, arrival_thread, &a), 0);
		cr_assert(wait_for_word(TS_NEXT_FIELD, 2u << TS_NEXT_SHIFT, 5000),
		          "the arrival never queued: word %#x", word);
		p.rested = rests_so_far() != rests;
	}
	cr_assert(ts_unlock(&word));
	cr_assert_eq(pthread_join(t.tid, NULL), 0);
	if (a.tid != 0)
		cr_assert_eq(pthread_join(a.tid, NULL), 0);
	return p;
}

/* A few trials, for one whose steals were written in time. */
static struct patience patience_trials(uint32_t steals_by_hand, uint64_t hold_ms)
{
	struct patience p = { UINT32_MAX, false };

	for (int trial = 0; trial < 20 && p.filled == UINT32_MAX; trial++)
		p = head_out_of_patience_after(steals_by_hand, hold_ms);
	if (p.filled == UINT32_MAX)
		cr_skip_test("the steals were not written within half the head's patience, 20 times");
	return p;
}

Test(bypass, a_head_out_of_patience_on_a_saturated_lock_stops_the_stealers, .timeout = 30)
{
	struct patience p;

	patience_setup("1000000");
	p = patience_trials(TS_REST_MIN_BYPASSED, 5000);
	cr_assert_eq(p.filled, 20u, "the head left the count at %u, not TICKET_BYPASS", p.filled);
	cr_assert(p.rested, "the arrival stopped by a saturated lock's head did not rest");
}

Test(bypass, a_head_bypassed_fewer_times_than_the_minimum_stays_patient, .timeout = 30)
{
	struct patience p;

	patience_setup("1000000");
	p = patience_trials(TS_REST_MIN_BYPASSED - 1u, 50);
	cr_assert_eq(p.filled, TS_REST_MIN_BYPASSED - 1u,
	             "the head filled the count to %u after fewer than %u steals", p.filled,
	             TS_REST_MIN_BYPASSED);
	p = head_out_of_patience_after(0, 50);
	cr_assert_eq(p.filled, 0u, "the head filled the count to %u, never bypassed", p.filled);
}

Test(bypass, no_time_bound_with_ticket_bypass_ns_0, .timeout = 30)
{
	struct patience p;

	patience_setup("0");
	p = patience_trials(TS_REST_MIN_BYPASSED + 4u, 50);
	cr_assert_eq(p.filled, TS_REST_MIN_BYPASSED + 4u,
	             "the head filled the count to %u with TICKET_BYPASS_NS=0", p.filled);
}

/*
 * pthread_spin_trylock() fails only while the lock is held (POSIX; issue 40,
 * item 5): a trylock draws no ticket and never waits, so it takes a free
 * lock past any queue.  Each case below found EBUSY on a free lock before.
 */
static void trylock_takes_the_free_lock_of(uint32_t queue)
{
	__atomic_store_n(&word, queue, __ATOMIC_RELAXED);
	cr_assert(ts_trylock(&word), "trylock failed on a free lock: word %#x", queue);
	cr_assert(ts_is_held(word), "word %#x", word);
	cr_assert_eq(ts_queued(word), ts_queued(queue), "the queue changed: word %#x", word);
	cr_assert(!ts_trylock(&word), "a held lock taken twice: word %#x", word);
	cr_assert(ts_unlock(&word));
}

Test(bypass, strict_fifo_trylock_takes_a_free_lock_past_the_queue, .timeout = 10)
{
	setenv("TICKET_QUEUE", "0", 1);
	cr_assert_eq(ts_config()->bypass_max, 0u);
	trylock_takes_the_free_lock_of(TS_NEXT_ONE);
	/* a head asleep, its wake-up due at the next unlock */
	trylock_takes_the_free_lock_of(TS_NEXT_ONE | TS_SLEEPERS | TS_WAKE_HEAD);
	/* process-shared: always strict FIFO */
	trylock_takes_the_free_lock_of(TS_SHARED | (2u << TS_NEXT_SHIFT));
}

Test(bypass, trylock_takes_a_free_lock_past_a_watching_head_at_the_bound, .timeout = 10)
{
	bypass("5");
	cr_assert_eq(ts_config()->bypass_max, 5u);
	trylock_takes_the_free_lock_of(ghost_watching_head() | (5u << TS_BYPASS_SHIFT));
}

/*
 * A loop of trylocks past a head that watches and never runs (here, a ghost
 * ticket; in the issue, a head stopped in a signal handler, or one a
 * SCHED_FIFO trylocker keeps off its CPU) makes progress at every call.  The
 * bypass count goes on counting while the field holds it and saturates at
 * TS_BYPASS_MAX, at TICKET_BYPASS=63 too: it never wraps to a count that
 * lets stealers past again, nor carries into TS_WATCHING.
 */
static void trylocks_make_progress_past_a_ghost_head(const char *bound)
{
	bypass(bound);
	__atomic_store_n(&word, ghost_watching_head(), __ATOMIC_RELAXED);
	for (uint32_t k = 1; k <= 1000; k++) {
		cr_assert(ts_trylock(&word), "trylock %u failed on a free lock: word %#x", k, word);
		cr_assert(word & TS_WATCHING, "trylock %u: word %#x", k, word);
		cr_assert_eq(ts_bypass(word), k < TS_BYPASS_MAX ? k : TS_BYPASS_MAX,
		             "trylock %u: word %#x", k, word);
		cr_assert_eq(ts_queued(word), 1, "trylock %u: word %#x", k, word);
		cr_assert(ts_unlock(&word));
	}
}

Test(bypass, trylocks_in_a_loop_make_progress_past_a_head_that_does_not_run, .timeout = 10)
{
	trylocks_make_progress_past_a_ghost_head("5");
}

Test(bypass, trylock_saturates_the_bypass_count_at_the_largest_bound, .timeout = 10)
{
	trylocks_make_progress_past_a_ghost_head("63");
	cr_assert_eq(ts_config()->bypass_max, TS_BYPASS_MAX);
}

/*
 * A real head, running and watching, then stopped in a signal handler for
 * the rest of the test: our trylocks on the free lock succeed at once.
 */
static volatile int head_stopped;
static volatile int head_may_go;

static void stop_here(int sig)
{
	(void)sig;
	head_stopped = 1;
	while (!head_may_go)
		usleep(1000);
}

Test(bypass, trylock_takes_a_free_lock_while_the_watching_head_is_in_a_signal_handler,
     .timeout = 10)
{
	struct arrival head = { 0 };
	uint64_t start = ts_now_ns();
	uint32_t seen;

	heads_spin(); /* the head watches; it does not sleep */
	bypass("5");
	cr_assert_neq(signal(SIGUSR1, stop_here), SIG_ERR);
	__atomic_store_n(&word, TS_LOCKED, __ATOMIC_RELEASE);
	cr_assert_eq(pthread_create(&head.tid, NULL, arrival_thread, &head), 0);
	do {
		seen = __atomic_load_n(&word, __ATOMIC_ACQUIRE);
	} while (!(ts_queued(seen) == 1 && (seen & TS_WATCHING)) &&
	         ts_now_ns() - start < 2000000000u);
	cr_assert(seen & TS_WATCHING, "no head watched: word %#x", seen);
	/* at the bound, and stopped where it cannot look */
	while (!__atomic_compare_exchange_n(&word, &seen, (seen & ~TS_BYPASS_MASK) |
	                                                         (5u << TS_BYPASS_SHIFT),
	                                    false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	cr_assert_eq(pthread_kill(head.tid, SIGUSR1), 0);
	while (!head_stopped)
		sched_yield();
	cr_assert(ts_unlock(&word));
	for (int k = 0; k < 100; k++) {
		cr_assert(ts_trylock(&word), "trylock %d failed on a free lock: word %#x", k,
		          __atomic_load_n(&word, __ATOMIC_RELAXED));
		cr_assert(ts_unlock(&word));
	}
	head_may_go = 1;
	cr_assert_eq(pthread_join(head.tid, NULL), 0);
	cr_assert_eq(__atomic_load_n(&word, __ATOMIC_ACQUIRE), 0);
}

Test(bypass, default_trylock_steals_a_free_lock_behind_a_queue, .timeout = 10)
{
	__atomic_store_n(&word, TS_NEXT_ONE, __ATOMIC_RELAXED);
	cr_assert(ts_trylock(&word), "word %#x", word);
	cr_assert(ts_is_held(word));
	cr_assert(ts_unlock(&word));
}
