/*
 * slowpath.h - internals of the contended path, for the library and its tests.
 *
 * The entry points (ts_lock_slow, ts_unlock_slow) are declared with the fast
 * paths in ticket_lock.h; the seeds' backoff and delay table, which the tests
 * and the statistics read, in backoff.h.
 */
#ifndef TICKETSPIN_SLOWPATH_H
#define TICKETSPIN_SLOWPATH_H

#include "backoff.h"
#include "options.h"
#include "ticket_lock.h"

#include <stdint.h>

/* A head bypassed this often or more watched a saturated lock: no spin before queueing. */
#define TS_PRESPIN_MAX_BYPASSED 4u

/*
 * How many steals the last head that watched @lock (or a lock sharing its
 * slot) let pass before it took it, plus one; 0 when no head has watched.
 */
uint32_t ts_head_bypassed(const void *lock);

#endif
