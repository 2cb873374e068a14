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

#endif
