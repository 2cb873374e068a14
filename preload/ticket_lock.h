/*
 * ticket_lock.h - the lock word and the fast paths of ticketspin.
 *
 * The lock is the caller's own 4-byte pthread_spinlock_t, used in place:
 *
 *   bits  0..15  "serving": the ticket now being served (written only by the
 *                holder's unlock, with a plain 16-bit store)
 *   bits 16..31  "next":    the next ticket to hand out (fetch-add by lockers)
 *
 * Tickets advance by two, so bit 0 of each half is free for a flag:
 *
 *   bit 16 TS_PARKED    some waiter may be asleep on the futex of this word;
 *                       it lives in the "next" half, which the unlocking
 *                       store never writes, so an unlock cannot clear it.
 *   bit  0 (reserved)   always zero in a valid lock.  glibc's unlocked value
 *                       is 1, so a word glibc initialised is recognisable.
 *
 * All-zero is unlocked, so a zero-filled lock works without init.  Since
 * tickets are 15 bits wide, at most 32,767 threads may wait on one lock at
 * once; one more would make the queue look empty and break mutual exclusion.
 *
 * Assumptions (checked by configure and by the tests, stated here because the
 * code relies on them silently):
 *  - x86-64: little-endian, total store order, and coherent mixed-size
 *    accesses: the 16-bit unlock store and the 32-bit fetch-add/loads act on
 *    overlapping bytes of one word.  C11 does not define mixed-size atomics;
 *    GCC and x86 do what the kernel's ticket locks also rely on.
 *  - pthread_spinlock_t is a 4-byte, 4-aligned int (glibc).
 *
 * The fast paths return early and do nothing else: no environment, no TLS,
 * no hashing, no statistics.  Everything else is in slowpath.c.
 */
#ifndef TICKETSPIN_TICKET_LOCK_H
#define TICKETSPIN_TICKET_LOCK_H

#include <stdbool.h>
#include <stdint.h>

typedef uint32_t __attribute__((may_alias)) ts_word_t;
typedef uint16_t __attribute__((may_alias)) ts_half_t;

#define TS_TICKET_STEP  2u                     /* one ticket, in either half */
#define TS_NEXT_STEP    (TS_TICKET_STEP << 16) /* one ticket, added to "next" */
#define TS_TICKET_MASK  0xfffeu                /* a half without its flag bit */
#define TS_PARKED       (1u << 16)
#define TS_RESERVED_BIT 1u
#define TS_MAX_WAITERS  32767u

static inline uint16_t ts_serving(uint32_t word) { return (uint16_t)(word & TS_TICKET_MASK); }
static inline uint16_t ts_next(uint32_t word) { return (uint16_t)((word >> 16) & TS_TICKET_MASK); }

/* Tickets from @from up to (not including) @to, modulo the 15-bit ticket space. */
static inline uint16_t ts_tickets_between(uint16_t from, uint16_t to)
{
	return (uint16_t)((uint16_t)(to - from) & TS_TICKET_MASK) / TS_TICKET_STEP;
}

static inline bool ts_word_is_free(uint32_t word) { return ts_serving(word) == ts_next(word); }

static inline ts_half_t *ts_serving_half(ts_word_t *lock)
{
	return (ts_half_t *)lock; /* little-endian: the low half comes first */
}

/*
 * Out of line (slowpath.c): wait until @ticket is served; acquire ordering.
 * @caller is the return address of pthread_spin_lock(), for reports.
 */
void ts_lock_slow(ts_word_t *lock, uint16_t ticket, const void *caller);

static inline void ts_lock(ts_word_t *lock, const void *caller)
{
	/*
	 * ACQUIRE pairs with the RELEASE store in ts_unlock(): when the ticket we
	 * drew is already being served, the previous holder's critical section
	 * happens-before ours.
	 */
	uint32_t old = __atomic_fetch_add(lock, TS_NEXT_STEP, __ATOMIC_ACQUIRE);

	if (__builtin_expect(ts_word_is_free(old), 1))
		return;
	ts_lock_slow(lock, ts_next(old), caller);
}

/* Returns true when the lock was taken; never waits, never leaves a ticket. */
static inline bool ts_trylock(ts_word_t *lock)
{
	uint32_t old = __atomic_load_n(lock, __ATOMIC_RELAXED);

	if (!ts_word_is_free(old))
		return false;
	/*
	 * ACQUIRE on success pairs with the RELEASE store in ts_unlock(), as in
	 * ts_lock().  A failed exchange means another thread drew a ticket (or
	 * parked) since our load: the lock is taken, and we report it so.
	 */
	return __atomic_compare_exchange_n(lock, &old, old + TS_NEXT_STEP, false,
	                                   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/*
 * Returns false, and leaves the word alone, when no one holds the lock (an
 * unlock too many would otherwise move "serving" past "next" and make every
 * later lock() wait forever).  Otherwise one load and one store.
 */
static inline bool ts_unlock(ts_word_t *lock)
{
	/* Only the holder writes "serving", so the value we read is our own. */
	uint32_t word = __atomic_load_n(lock, __ATOMIC_RELAXED);

	if (__builtin_expect(ts_word_is_free(word), 0))
		return false;
	/*
	 * RELEASE pairs with the ACQUIRE fetch-add in ts_lock() and the ACQUIRE
	 * polls in ts_lock_slow(): our critical section happens-before the next
	 * holder's.  A 16-bit store cannot disturb tickets drawn meanwhile in the
	 * "next" half, nor TS_PARKED.
	 */
	__atomic_store_n(ts_serving_half(lock), (uint16_t)(ts_serving(word) + TS_TICKET_STEP),
	                 __ATOMIC_RELEASE);
	return true;
}

#endif
