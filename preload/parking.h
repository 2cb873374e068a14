/*
 * parking.h - where waiters sleep, who wakes them, and how long a stall is
 * remembered (parking.c).  The line protocol (slowpath.c) decides when to
 * sleep; this file only knows how.
 */
#ifndef TICKETSPIN_PARKING_H
#define TICKETSPIN_PARKING_H

#include <stdbool.h>
#include <stdint.h>

#include "ticket_lock.h"

/*
 * Every sleep is bounded: the first for TS_NAP_FIRST_NS, each one that times
 * out doubles the next, up to TS_NAP_MAX_NS; a wake-up (or progress) starts
 * over.  The bound is what a missed wake-up can cost, and what a thread that
 * waits on a lock that never comes free costs in wake-ups (16 a second).
 */
#define TS_NAP_FIRST_NS 1000000ull
#define TS_NAP_MAX_NS   64000000ull

/*
 * The bounds in force: TS_NAP_FIRST_NS and TS_NAP_MAX_NS.  Only the tests
 * change them (before any lock is contended), to make every sleep long enough
 * that a timed-out one can only be a missed wake-up.
 */
extern uint64_t ts_nap_first_ns, ts_nap_max_ns;

/* Sleeps that ended by a wake-up (or a changed word) and by their timeout. */
struct ts_sleep_counts {
	uint64_t woken;
	uint64_t timed_out;
};
void ts_sleep_counts(struct ts_sleep_counts *out);

enum ts_sleep {
	TS_SLEEP_SKIPPED, /* the condition to sleep no longer held */
	TS_SLEEP_WOKEN,   /* woken, or the futex word changed before we slept */
	TS_SLEEP_TIMEOUT, /* the nap ran out */
};

static inline uint64_t ts_nap_after(uint64_t nap_ns, enum ts_sleep how)
{
	if (how != TS_SLEEP_TIMEOUT)
		return ts_nap_first_ns;
	return nap_ns * 2 > ts_nap_max_ns ? ts_nap_max_ns : nap_ns * 2;
}

/*
 * Sleeps on the lock word, holding @ticket, for at most @nap_ns.  Sets
 * TS_SLEEPERS first (a full barrier), then sleeps only while our turn has not
 * come: with @next_in_line, while "serving" is not @ticket or our turn is lent
 * out (the unlock that serves us wakes us); otherwise, while two or more
 * tickets are ahead (the waiter served ahead of us wakes us).
 */
enum ts_sleep ts_sleep_in_line(ts_word_t *lock, uint16_t ticket, bool next_in_line,
                               uint64_t nap_ns);

/* Wakes the waiters holding @ticket (and any sharing its futex bit). */
void ts_wake_ticket(ts_word_t *lock, uint16_t ticket);

/*
 * Outside the line (holding no ticket): sleeps for at most @nap_ns on the
 * parking slot of @hash, FIFO among the sleepers of that slot.  With
 * @only_if_full, not if fewer than @queue_max tickets are in line once we are
 * counted among the sleepers.
 */
enum ts_sleep ts_sleep_outside(ts_word_t *lock, uint32_t hash, uint32_t queue_max,
                               bool only_if_full, uint64_t nap_ns);

/* Wakes the outsider of slot @hash that has slept longest; false if none sleeps. */
bool ts_wake_outsider(uint32_t hash);

/* Threads asleep (or about to be) outside the line, on the slot of @hash. */
uint32_t ts_outsiders(uint32_t hash);

/*
 * Stalls: a waiter that sees the line stall for the spin budget calls
 * ts_note_stall(); lending mode stays on while ts_stalled_recently(), that
 * is, within about one tick of the coarse clock (4 ms here, HZ=250) of the
 * last stall.  Lending mode costs every hand-over a claim, and beside
 * CPU-bound processes a waiter loses its CPU every few milliseconds: kept
 * for 100 ms after each stall, lending mode never went off there, and 2
 * threads ran at 0.74x to 0.85x glibc (0.84x to 0.97x with 4 ms; two
 * series of 9 runs, work 100, one CPU-bound process per CPU).
 */
#define TS_STALL_MEMORY_MS 4
void ts_note_stall(void);
bool ts_stalled_recently(void);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t ts_now_ns(void);

#endif
