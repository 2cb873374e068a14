/*
 * stats.h - TICKET_STATS: per-lock contention statistics, kept in a
 * per-process shared-memory file (stats_file.h) that `ticketspin report` and
 * `ticketspin top` read, and reported at a normal exit.
 *
 * Only the slow path records, and only when cfg->stats != NULL: a call when
 * it starts waiting and one once it holds the lock; pthread_spin_unlock()
 * completes the record after the release, and counts every release of a
 * lock once contended (its word keeps TS_UNLOCK_DUE: exact totals).  Records are per thread
 * (no shared atomics): a slot of the file claimed on the thread's first
 * record (or pthread_spin_init()), and handed on to a later thread when the
 * thread exits (a pthread key destructor): its records stay in the slot, so
 * threads that exit before the program are still counted, and the file stays
 * bounded by the threads alive at once.  pthread_spin_init() of a lock never
 * recorded contended keeps no record (it cannot fall inside a run of
 * observations), so a program may initialise any number of such locks.  The file outlives the process when it ends by _exit(),
 * exec or a signal; a normal exit writes the report (stderr, or the
 * TICKET_STATS file) and removes the file unless TICKET_STATS_KEEP=1.
 */
#ifndef TICKETSPIN_STATS_H
#define TICKETSPIN_STATS_H

#include <stdbool.h>
#include <stdint.h>

/* What one contended acquisition cost; the slow path fills it as it waits. */
struct ts_wait_stats {
	uint32_t polls;  /* loads of the lock word after a pause */
	uint32_t yields; /* sched_yield() calls */
	uint32_t parks;  /* futex sleeps attempted */
	uint32_t rests;  /* rests before queueing (TICKET_REST_US; slowpath.c): 0 or 1 */
	uint32_t skips;  /* rests due but skipped (one held up everyone; slowpath.c, rest()): 0 or 1 */
	uint32_t dozes;  /* dozed before queueing (TICKET_DOZE_US; slowpath.c): 0 or 1 */
	uint32_t line;   /* waited in the active set's line (TICKET_ACTIVE; active.c): 0 or 1 */
	uint32_t borrows; /* 1: taken with no ticket (stolen, or escaped: slowpath.c) */
	uint16_t ahead;  /* tickets ahead of ours when we began to wait, holder included */
	uint64_t begin;  /* set by ts_stats_wait_begin(): when the wait began; 0: not timed */
	bool at_once;    /* set by ts_stats_wait_begin(): our turn had come at the first look */
};

/*
 * Called once per contended acquisition by the slow path, at its first look
 * at the lock word after drawing a ticket (one backoff after the draw;
 * @wait->ahead set from the word the draw returned), or before it if the
 * waiter leaves the line or is served without a look: notes the time in
 * @wait->begin, unless @served_at_once (that look found our turn come): then
 * the wait is recorded as none, and no clock is read at all on the way to
 * the lock, where 12 ns would delay a hand-over already under way.  Does the
 * bookkeeping of the previous contended acquisition if pthread_spin_unlock()
 * has not (the lock was released by another thread).  Never takes the lock being waited for;
 * may take a private mutex and make system calls the first time a thread
 * records.
 */
void ts_stats_wait_begin(struct ts_wait_stats *wait, bool served_at_once);

/*
 * Records one contended acquisition of @lock by the calling thread, which
 * holds it.  The clock is read here, while holding the lock, since that
 * reading starts the hold sample; not with @wait->at_once (a wait of none,
 * then no hold sample either).  @caller is the return
 * address of pthread_spin_lock(), @delay the thread's tuned delay for @lock
 * after this wait (fixed point, TS_DELAY_SHIFT; 0 when the delay is not
 * auto-tuned).  Cheap: at most one clock read and a dozen stores to the
 * thread's own slot; never allocates, never takes a lock (after the
 * thread's first record).
 */
void ts_stats_record(const void *lock, const void *caller, const struct ts_wait_stats *wait,
                     uint32_t delay);

/*
 * Records a steal of @lock (taken with no wait, past a queue) by the calling
 * thread, which holds it, from @caller; @yielded: it ended its turn first.
 * Counted at once, without a pending record: a steal has no wait, no hold
 * sample and no tuned delay, and in a holder's burst every acquisition is
 * one.  Same rules as ts_stats_record().  @first: the lock is not marked
 * yet (TS_UNLOCK_DUE), so that a pthread_spin_init() after this must mark it.
 */
void ts_stats_steal(const void *lock, const void *caller, bool yielded, bool first);

/*
 * After a release of @lock, whose word carries TS_UNLOCK_DUE (the unlock came
 * out of line for it), while the other threads have the lock: counts the
 * release, and if the calling thread's pending record is of @lock, takes its
 * hold sample and folds it into the per-lock aggregates.  @checked: the
 * unlock read the lock byte, as it does with TICKET_CHECK_UNLOCK, whose mark
 * every initialised lock carries (then only a lock seen contended counts).
 * The first call in a thread may claim its slot (system calls, no
 * cancellation point).
 */
void ts_stats_after_unlock(const void *lock, bool checked);

/*
 * pthread_spin_init() of @lock, with TICKET_STATS on: true when the lock (its
 * hash) has been contended before, so that the new word must carry
 * TS_UNLOCK_DUE for its releases to go on being counted.
 */
bool ts_stats_init(const void *lock);

/*
 * Creates the process's statistics file (and the TICKET_STATS report file)
 * if TICKET_STATS is on and it is not made yet; true when it exists.  The
 * library's constructor calls it; recording calls it when needed.
 */
bool ts_stats_start(void);

/* The statistics file's path, or NULL when there is none. */
const char *ts_stats_file(void);

/*
 * Writes the report of this process's file to @fd, at most @top locks, each
 * line prefixed with @prefix.  Returns the number of contended locks (listed
 * or not), or -1 when the file cannot be read.  The destructor calls it; the
 * tests call it directly.
 */
long ts_stats_report(int fd, const char *prefix, uint32_t top);

#endif
