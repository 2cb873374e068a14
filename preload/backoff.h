/*
 * backoff.h - the seeds' algorithm: proportional backoff, its auto-tuning,
 * and the per-thread delay table (backoff.c).
 *
 * Contract: everything here is per thread and touches no shared memory; the
 * waiting machinery (slowpath.c) calls it between two looks at the lock word.
 */
#ifndef TICKETSPIN_BACKOFF_H
#define TICKETSPIN_BACKOFF_H

#include <stdbool.h>
#include <stdint.h>

#include "options.h"

/* Auto-tuned delays are fixed point: TS_DELAY_ONE is one pause per waiter ahead. */
#define TS_DELAY_SHIFT 8
#define TS_DELAY_ONE   (1u << TS_DELAY_SHIFT)

/* The next in line's delay grows by 1/TS_NEXT_GROWTH unit per busy look. */
#ifndef TS_NEXT_GROWTH
#define TS_NEXT_GROWTH 2
#endif

/* One entry of a thread's delay table, indexed by a hash of the lock address. */
struct ts_delay_entry {
	uint32_t tag;       /* ts_lock_hash() of the owning lock, 0 when unused */
	uint32_t delay;     /* fixed point, TS_DELAY_SHIFT fractional bits */
	uint32_t next_delay; /* the same, between two looks of the head of the queue (auto) */
};

/* The 32-bit hash of a lock address; never 0, which marks an unused entry. */
uint32_t ts_lock_hash(const void *lock);

/*
 * The calling thread's entry for the lock of hash @hash, claimed for it: an
 * entry that belonged to another lock (hashed table) is reset, so that lock's
 * delays are not inherited.  Starts @*delay and @*next_delay from the
 * entry's tuned delays.
 */
struct ts_delay_entry *ts_delay_entry_claim(const struct ts_config *cfg, uint32_t hash,
                                            uint32_t *delay, uint32_t *next_delay);

/*
 * The calling thread's tuned delay for @lock (fixed point), as the next
 * contended acquisition would start from it: the table entry's value when the
 * entry belongs to @lock (or in "single" mode), else the minimum.
 */
uint32_t ts_delay_of(const struct ts_config *cfg, const void *lock);

/* The same for the next in line's delay (fixed point; TS_DELAY_ONE untuned). */
uint32_t ts_next_delay_of(const struct ts_config *cfg, const void *lock);

/* Pauses before the next look at the lock, given the tickets ahead of ours
 * (holder included) and the tuned delays (@next_delay: for the next in line). */
uint64_t ts_backoff_pauses(const struct ts_config *cfg, uint32_t delay, uint32_t next_delay,
                           uint16_t ahead);

/*
 * The tuned delay after a look at the lock, from @delay: @overslept is true
 * when the look found our turn already come (we waited too long).
 */
uint32_t ts_delay_after_poll(const struct ts_config *cfg, uint32_t delay, bool overslept);

/* The same for the next in line's delay (TICKET_DELAY=auto only). */
uint32_t ts_next_delay_after_poll(const struct ts_config *cfg, uint32_t next_delay,
                                  bool overslept);

static inline void ts_pause_for(uint64_t pauses)
{
	while (pauses-- > 0)
		__builtin_ia32_pause();
}

#endif
