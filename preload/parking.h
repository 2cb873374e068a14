/*
 * parking.h - where waiters sleep and who wakes them (parking.c).  The
 * protocol (slowpath.c) decides when to sleep; this file only knows how.
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

/*
 * Sleeps that ended by a wake-up (or a changed word) and by their timeout;
 * and rests (ts_rest()), dozes (ts_doze()) and turn yields
 * (ts_yield_turn()), which are neither.
 */
struct ts_sleep_counts {
	uint64_t woken;
	uint64_t timed_out;
	uint64_t rests;
	uint64_t dozes;
	uint64_t turn_yields;
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
 * Holding @ticket behind the head of the queue, sleeps for at most @nap_ns
 * until woken as the new head.  Sets TS_SLEEPERS first (a full barrier),
 * then sleeps only if the word that returned says @ticket is still not the
 * head.  @hash is ts_lock_hash(@lock).  *@elsewhere: the sleep of a private
 * word ran out though its wake-up was served, by a release in another
 * process (parking.c, "Served elsewhere"); set only when the sleep was made.
 */
enum ts_sleep ts_sleep_in_queue(ts_word_t *lock, uint32_t hash, uint8_t ticket, uint64_t nap_ns,
                                bool *elsewhere);

/*
 * At the head of the queue (holding @ticket), sleeps for at most @nap_ns
 * until the holder's unlock: sets TS_WAKE_HEAD in the word and clears
 * TS_WATCHING (stealers then go on as if no one waited), then sleeps only
 * while the lock is still held.  *@elsewhere as for ts_sleep_in_queue().
 */
enum ts_sleep ts_sleep_as_head(ts_word_t *lock, uint32_t hash, uint8_t ticket, uint64_t nap_ns,
                               bool *elsewhere);

/*
 * Before a release clears a private word's wake-up request (TS_WAKE_HEAD,
 * TS_WAKE_NEXT) from the word, and after it saw it there: counts a wake-up
 * of @ticket (the head) in @hash's slot, which a sleeper whose sleep ran
 * out checks (SEQ_CST; parking.c, "Served elsewhere").  Not a wake-up.
 */
void ts_wake_announce(uint32_t hash, uint8_t ticket);

/*
 * After that release: wakes the waiter holding @ticket of @lock (of hash
 * @hash), whose word was @word; on a shared word (TS_SHARED), one sleeper.
 */
void ts_wake_ticket(ts_word_t *lock, uint32_t hash, uint32_t word, uint8_t ticket);

/*
 * Wakes every sleeper in the queues of the locks of @hash, in this process's
 * table: a lock just made shared, whose sleepers there would otherwise wait
 * for their naps before they sleep on the word (slowpath.c, become_shared()).
 * Others of the slot look and sleep again.
 */
void ts_wake_all_of(uint32_t hash);

/*
 * On a shared word, announced (TS_SHARED_SLEEPERS set in @word), sleeps on
 * the word with the shared futex while it holds @word, for at most @nap_ns.
 */
enum ts_sleep ts_sleep_shared(ts_word_t *lock, uint32_t word, uint64_t nap_ns);

/*
 * Outside the queue (it holds @capacity tickets): sleeps for at most @nap_ns,
 * or until a waiter takes the lock from a queue that was full.
 */
enum ts_sleep ts_sleep_outside(ts_word_t *lock, uint32_t hash, uint32_t capacity,
                               uint64_t nap_ns);

/* Wakes the threads waiting outside the queue of the locks of @hash. */
void ts_wake_outside(uint32_t hash);

/*
 * Holding no ticket, sleeps @us microseconds, woken by no one: a thread that
 * the lock's bypass bound stopped gives its CPU time to the one that runs
 * (slowpath.c, "Rest").  A futex wait, not nanosleep(): no cancellation
 * point.  A signal ends it early, which costs nothing.
 */
void ts_rest(uint32_t us);

/* As ts_rest(), not counted: the first half of a rest (slowpath.c, rest()). */
void ts_sleep_us(uint32_t us);

/*
 * Holding no ticket, sleeps @us microseconds before queueing, woken by no
 * one (slowpath.c, "Doze"): it ends by its timeout, on the sleeper's own
 * CPU, which then runs it.  Counted in dozes.
 */
void ts_doze(uint32_t us);

/*
 * Holding no ticket, gives the CPU to another thread ready to run on it, if
 * any (sched_yield(): no cancellation point): a thread that has run alone
 * with the lock for a turn lets the head of the queue, woken but waiting for
 * a CPU, take its place (slowpath.c, "Turn").
 */
void ts_yield_turn(void);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t ts_now_ns(void);

#endif
