/*
 * active.h - the active set (active.c): how many threads contend for a
 * saturated lock at once.  The others wait off-CPU, holding nothing, and are
 * rotated in.
 *
 * Contract: ts_active_admit() is called by a thread that has failed to take
 * the lock and holds no ticket, before it may draw one; it returns once the
 * thread may contend (at once, nearly always, at low contention), having
 * slept if the set was full.  It holds nothing of the lock's word, so it
 * cannot hold up the lock's holder or its queue; every sleep in it is
 * bounded.  Membership is a hint kept per lock hash: a member's turn is
 * TICKET_ACTIVE_US of its CPU time, at most TS_ACTIVE_WALL_TURNS turns of
 * wall time; a member that exits or forks away keeps its slot one turn, one
 * that blocks or stops contending until its turn is over, when the first of
 * the line takes it; it can never make a thread wait for good.
 */
#ifndef TICKETSPIN_ACTIVE_H
#define TICKETSPIN_ACTIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "options.h"
#include "ticket_lock.h"

/* The largest TICKET_ACTIVE (slots per lock hash). */
#define TS_ACTIVE_MAX 8u
/* The longest turn in wall time, in turns: a member that does not run that long loses its slot. */
#define TS_ACTIVE_WALL_TURNS 4u

/*
 * Before drawing a ticket for the lock of hash @hash, whose word was @word:
 * returns when the calling thread is a member of the lock's active set, or
 * the lock is not saturated (its last watching head was bypassed fewer than
 * TS_SATURATED_BYPASSED times), or the set is off (cfg->active == 0, strict
 * FIFO, a wait policy other than park, or a PTHREAD_PROCESS_SHARED lock).
 * True if it waited in the line, off-CPU, first (for TICKET_STATS).
 */
bool ts_active_admit(const struct ts_config *cfg, uint32_t hash, uint32_t word);

/*
 * Is the calling thread outside @lock's active set while others sleep
 * waiting for a place in it and the lock is saturated (the gate's own
 * test)?  Then it may not steal: it goes to the gate (ts_active_admit())
 * behind them.  Cheap when the set is off or no one sleeps: a load.
 */
bool ts_active_outsider(const struct ts_config *cfg, ts_word_t *lock, uint32_t word);

/* The CPUs this process may run on (TICKET_ACTIVE=cpus), at least 1. */
uint32_t ts_active_cpus(void);

/* Threads that joined a line, and slots taken from a member whose turn was over. */
struct ts_active_counts {
	uint64_t joined;
	uint64_t evicted;
};
void ts_active_counts(struct ts_active_counts *out);

/* In a forked child: no member of any set exists but the caller; empties them all. */
void ts_active_after_fork(void);

#endif
