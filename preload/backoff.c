/*
 * backoff.c - proportional backoff, auto-tuned per thread and per lock, after
 * the Linux kernel series of Dec 2012 - Jan 2013.
 *
 * Backoff (TICKET_DELAY), after Rik van Riel's patches:
 *  - off:   poll with one pause in between (the pre-2013 kernel);
 *  - N:     N x (tickets ahead, holder included) pauses between polls
 *           (Michel Lespinasse's static-delay experiments used 10, 50, 250);
 *  - series: the series' auto-tuning: the next in line polls tightly; the
 *           others pause delay x (waiters ahead, holder excluded) between
 *           polls, where delay is tuned per thread and per lock: +1/7 unit
 *           after a poll that found the lock still busy, -max(delay/32, 1
 *           unit) after one that found it already ours (we overslept) while
 *           delay >= 2 units, within [TICKET_DELAY_MIN, TICKET_DELAY_MAX].
 *  - auto:  the same, and the next in line's pause is tuned too (ours, not
 *           the series'): +1/TS_NEXT_GROWTH unit after a look that found the
 *           lock still busy, the same decrease after one that found it ours,
 *           within [1, TICKET_DELAY_MAX].  The series let the next in line
 *           poll tightly, and in user space that is what locks two threads
 *           into step: the holder writes the lock's cache line (the data
 *           usually shares it) while the next in line keeps pulling it back
 *           to read, so each write of the critical section waits for a
 *           transfer between CPUs, and the critical section grows by an order
 *           of magnitude (2.5 M against 25 M acquisitions/s on two CPUs).
 *           Tuned, it looks about TS_NEXT_GROWTH times per hand-over, late by
 *           a few pauses at most.
 *
 * Delay table (TICKET_DELAY_TABLE), after Eric Dumazet: "hashed" keeps
 * 2^TICKET_DELAY_HASH_BITS entries per thread, indexed by a hash of the lock
 * address and tagged with the whole hash, so a lock that lands on another
 * lock's entry starts from the minimum instead of inheriting its delay;
 * "single" keeps one delay per thread for every lock.
 *
 * Everything here is thread-local: no shared memory is read or written.
 */
#include "backoff.h"

/*
 * initial-exec, as every thread-local of the library: the slow path reads it,
 * and a general-dynamic access is a __tls_get_addr() call, which after a
 * dlopen() of a module with TLS may update the thread's vector of modules
 * with malloc(): not in a lock path whose caller may be malloc itself.  The
 * library is preloaded or linked in, so its TLS is static.
 */
static __thread struct ts_delay_entry delay_table[1u << TS_HASH_BITS_MAX]
	__attribute__((tls_model("initial-exec")));

uint32_t ts_lock_hash(const void *lock)
{
	/* Fibonacci hashing; the low bits of an address carry little, drop them. */
	uint64_t h = ((uint64_t)(uintptr_t)lock >> 2) * 0x9e3779b97f4a7c15ull;
	uint32_t hash = (uint32_t)(h >> 32);

	return hash != 0 ? hash : 1;
}

static struct ts_delay_entry *entry_of(const struct ts_config *cfg, uint32_t hash)
{
	if (cfg->table == TS_TABLE_SINGLE || cfg->hash_bits == 0)
		return &delay_table[0];
	return &delay_table[hash >> (32 - cfg->hash_bits)];
}

/* Does @entry hold @hash's delays?  In "single" mode it holds every lock's. */
static bool entry_owned(const struct ts_config *cfg, const struct ts_delay_entry *entry,
                        uint32_t hash)
{
	return cfg->table == TS_TABLE_SINGLE || entry->tag == hash;
}

static uint32_t entry_delay(const struct ts_config *cfg, const struct ts_delay_entry *entry,
                            uint32_t hash)
{
	if (!entry_owned(cfg, entry, hash) || entry->delay == 0)
		return cfg->delay_min << TS_DELAY_SHIFT;
	return entry->delay;
}

static uint32_t entry_next_delay(const struct ts_config *cfg, const struct ts_delay_entry *entry,
                                 uint32_t hash)
{
	if (!entry_owned(cfg, entry, hash) || entry->next_delay == 0)
		return TS_DELAY_ONE;
	return entry->next_delay;
}

struct ts_delay_entry *ts_delay_entry_claim(const struct ts_config *cfg, uint32_t hash,
                                            uint32_t *delay, uint32_t *next_delay)
{
	struct ts_delay_entry *entry = entry_of(cfg, hash);

	*delay = entry_delay(cfg, entry, hash);
	*next_delay = entry_next_delay(cfg, entry, hash);
	if (!entry_owned(cfg, entry, hash))
		*entry = (struct ts_delay_entry){ .tag = hash, .delay = *delay,
			                          .next_delay = *next_delay };
	return entry;
}

uint32_t ts_delay_of(const struct ts_config *cfg, const void *lock)
{
	uint32_t hash = ts_lock_hash(lock);

	return entry_delay(cfg, entry_of(cfg, hash), hash);
}

uint32_t ts_next_delay_of(const struct ts_config *cfg, const void *lock)
{
	uint32_t hash = ts_lock_hash(lock);

	return entry_next_delay(cfg, entry_of(cfg, hash), hash);
}

uint64_t ts_backoff_pauses(const struct ts_config *cfg, uint32_t delay, uint32_t next_delay,
                           uint16_t ahead)
{
	switch (cfg->delay_mode) {
	case TS_DELAY_OFF:
		return 1;
	case TS_DELAY_FIXED:
		return (uint64_t)cfg->delay_factor * ahead;
	case TS_DELAY_SERIES:
		if (ahead <= 1)
			return 1; /* next in line: poll tightly */
		return ((uint64_t)delay * (ahead - 1u)) >> TS_DELAY_SHIFT;
	default:
		if (ahead <= 1)
			return next_delay >> TS_DELAY_SHIFT;
		return ((uint64_t)delay * (ahead - 1u)) >> TS_DELAY_SHIFT;
	}
}

/*
 * The series' rule, for either delay: after a look that found our turn
 * already come (we overslept), -max(delay/32, 1 unit) while delay >= 2
 * units; after one that found the lock busy, +1/@growth unit; within
 * [@min, @max] (fixed point).
 */
static uint32_t tuned(uint32_t delay, bool overslept, uint32_t growth, uint32_t min,
                      uint32_t max)
{
	if (overslept) {
		if (delay >= 2 * TS_DELAY_ONE) {
			uint32_t step = delay / 32;

			delay -= step > TS_DELAY_ONE ? step : TS_DELAY_ONE;
		}
		return delay < min ? min : delay;
	}
	delay += TS_DELAY_ONE / growth;
	return delay > max ? max : delay;
}

uint32_t ts_delay_after_poll(const struct ts_config *cfg, uint32_t delay, bool overslept)
{
	return tuned(delay, overslept, 7, cfg->delay_min << TS_DELAY_SHIFT,
	             cfg->delay_max << TS_DELAY_SHIFT);
}

uint32_t ts_next_delay_after_poll(const struct ts_config *cfg, uint32_t next_delay,
                                  bool overslept)
{
	return tuned(next_delay, overslept, TS_NEXT_GROWTH, TS_DELAY_ONE,
	             cfg->delay_max << TS_DELAY_SHIFT);
}
