/*
 * slowpath.h - internals of the contended path, for the library and its tests.
 */
#ifndef TICKETSPIN_SLOWPATH_H
#define TICKETSPIN_SLOWPATH_H

#include <stdint.h>

#include "options.h"
#include "ticket_lock.h"

/* Auto-tuned delays are fixed point: TS_DELAY_ONE is one pause per waiter ahead. */
#define TS_DELAY_SHIFT 8
#define TS_DELAY_ONE   (1u << TS_DELAY_SHIFT)

/* The 32-bit hash of a lock address; never 0, which marks an unused entry. */
uint32_t ts_lock_hash(const void *lock);

/*
 * The calling thread's tuned delay for @lock (fixed point), as the next
 * contended acquisition would start from it: the table entry's value when the
 * entry belongs to @lock (or in "single" mode), else the minimum.
 */
uint32_t ts_delay_of(const struct ts_config *cfg, const void *lock);

#endif
