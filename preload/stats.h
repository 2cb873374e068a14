/*
 * stats.h - TICKET_STATS: per-lock contention statistics, reported at exit.
 *
 * Only the slow path records, and only when cfg->stats != NULL: one call per
 * contended acquisition, made while holding the lock.  Records are per thread
 * (no shared atomics): a table allocated with mmap the first time a thread
 * records, pushed once onto a global list and never freed, so threads that
 * exit before the program are still counted.  A destructor merges the tables
 * and writes the report (stderr, or the TICKET_STATS file) when the program
 * exits normally; _exit() and fatal signals skip it.
 */
#ifndef TICKETSPIN_STATS_H
#define TICKETSPIN_STATS_H

#include <stdint.h>

/* What one contended acquisition cost; the slow path fills it as it waits. */
struct ts_wait_stats {
	uint32_t polls;  /* loads of the lock word after a pause */
	uint32_t yields; /* sched_yield() calls */
	uint32_t parks;  /* futex sleeps attempted */
	uint32_t borrows; /* stalled turns held in a descheduled waiter's place (0 or 1) */
	uint16_t ahead;  /* tickets ahead of ours when we began to wait, holder included */
};

/*
 * Records one contended acquisition of @lock by the calling thread: @ticket
 * is the ticket it was served with, @caller the return address of
 * pthread_spin_lock(), @delay the thread's tuned delay for @lock after this
 * wait (fixed point, TS_DELAY_SHIFT; 0 when the delay is not auto-tuned).
 * Never allocates with malloc, never takes a lock.
 */
void ts_stats_record(const void *lock, uint16_t ticket, const void *caller,
                     const struct ts_wait_stats *wait, uint32_t delay);

/* Notes that pthread_spin_init() reset @lock (its tickets restart from 0). */
void ts_stats_init(const void *lock);

/*
 * Merges every thread's records and writes the report to @fd, at most @top
 * locks, each line prefixed with @prefix.  Returns the number of contended
 * locks (listed or not), or -1 when memory for the merge is not available.
 * The destructor calls it; the tests call it directly.
 */
long ts_stats_report(int fd, const char *prefix, uint32_t top);

#endif
