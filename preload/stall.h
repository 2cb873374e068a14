/*
 * stall.h - reporting waits that last too long (TICKET_STALL_MS).
 *
 * A lock that never comes free (a holder that died, a lock word overwritten,
 * a holder blocked for seconds) makes its waiters wait forever, and they do:
 * a lock cannot give up.  The user should at least learn which lock, from
 * where, and for how long: one line on stderr per waiting thread and wait,
 * rate-limited across the process, after which the thread keeps waiting.
 *
 * Contract: the slow path calls ts_stall_check() only when the line has not
 * moved for a spin budget or before a sleep, never per poll, so the clock
 * read it needs costs nothing that matters; a wait that ends quickly never
 * reads it at all.
 */
#ifndef TICKETSPIN_STALL_H
#define TICKETSPIN_STALL_H

#include <stdbool.h>
#include <stdint.h>

#include "options.h"

struct ts_stall_watch {
	uint64_t since_ns; /* when the wait first stalled for a spin budget, 0: not yet
	                    * (the time before that, tens of microseconds, is not counted) */
	bool reported;
};

/* Reports beyond this many are limited to one a second. */
#define TS_STALL_BURST 8

/*
 * Called while a wait for @lock (from @caller, with @ahead tickets ahead of
 * ours, or 0 for a thread waiting outside the line or on a shared word,
 * which has no queue; @word as last read) has
 * not moved, at @now_ns (ts_now_ns(), which the caller has read anyway):
 * starts the watch, or reports once the wait has lasted longer than
 * cfg->stall_ms.
 */
void ts_stall_check(struct ts_stall_watch *watch, const struct ts_config *cfg,
                    const void *lock, const void *caller, unsigned ahead, uint32_t word,
                    bool outside, uint64_t now_ns);

#endif
