/*
 * ticket_lock.h - the lock word and the fast paths of ticketspin.
 *
 * The lock is the caller's own 4-byte pthread_spinlock_t, used in place:
 *
 *   bits  0..15  "serving": the ticket now being served (written only by the
 *                holder's unlock, with a plain 16-bit store, or by a CAS of a
 *                waiter claiming or borrowing the turn, see below)
 *   bits 16..31  "next":    the next ticket to hand out (fetch-add by lockers)
 *
 * Tickets advance by four, so the two low bits of each half are flags:
 *
 *   bit  0 TS_HANDOFF  the served ticket's holder has not claimed its turn
 *                      yet.  Set by an unlock only in lending mode
 *                      (TS_LENDING) and when a waiter exists; the waiter then
 *                      claims with a CAS.  Otherwise a waiter owns the lock
 *                      the moment it is served, as in any ticket lock.
 *   bit  1 TS_BORROWED a thread holding no ticket holds the lock during an
 *                      unclaimed turn (the served waiter is not running); its
 *                      unlock gives the turn back (TS_HANDOFF again), so the
 *                      served waiter never loses its place.
 *   bit 16 TS_LENDING  lending mode: the line has stalled recently, so
 *                      unlocks mark the turns they hand over, and a turn left
 *                      unclaimed may be lent (slowpath.c).
 *   bit 17 TS_SLEEPERS a waiter may be asleep on this word's futex: unlocks
 *                      wake the waiter they serve, and waiters served in the
 *                      slow path wake the one behind them (parking.c).
 *
 * The flags of the "next" half are never written by the unlocking store, so
 * an unlock cannot clear them.
 *
 * All-zero is unlocked, so a zero-filled lock works without init.  Tickets are
 * 14 bits wide: at most 16,383 threads may wait on one lock at once; one more
 * would make the line look empty and break mutual exclusion.
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

#define TS_TICKET_STEP  4u                     /* one ticket, in either half */
#define TS_NEXT_STEP    (TS_TICKET_STEP << 16) /* one ticket, added to "next" */
#define TS_TICKET_MASK  0xfffcu                /* a half without its flag bits */
#define TS_HANDOFF      (1u << 0)
#define TS_BORROWED     (1u << 1)
#define TS_LENDING      (1u << 16)
#define TS_SLEEPERS     (1u << 17)
/* Any of these sends an unlock out of line. */
#define TS_UNLOCK_FLAGS (TS_LENDING | TS_SLEEPERS | TS_HANDOFF | TS_BORROWED)
#define TS_MAX_WAITERS  16383u

static inline uint16_t ts_serving(uint32_t word) { return (uint16_t)(word & TS_TICKET_MASK); }
static inline uint16_t ts_next(uint32_t word) { return (uint16_t)((word >> 16) & TS_TICKET_MASK); }

/* Tickets from @from up to (not including) @to, modulo the 14-bit ticket space. */
static inline uint16_t ts_tickets_between(uint16_t from, uint16_t to)
{
	return (uint16_t)((uint16_t)(to - from) & TS_TICKET_MASK) / TS_TICKET_STEP;
}

/*
 * Free: no ticket outstanding, and no turn handed over or lent.  (glibc's
 * unlocked word, 1, is not free by this test: its first locker goes through
 * the slow path, which claims the "turn" and leaves a valid word.)
 */
static inline bool ts_word_is_free(uint32_t word)
{
	return (((word ^ (word >> 16)) & TS_TICKET_MASK) | (word & (TS_HANDOFF | TS_BORROWED))) == 0;
}

static inline ts_half_t *ts_serving_half(ts_word_t *lock)
{
	return (ts_half_t *)lock; /* little-endian: the low half comes first */
}

/*
 * Out of line (slowpath.c): wait until the ticket in @drawn's "next" half is
 * served; acquire ordering.  @drawn is the word our fetch-add returned: the
 * slow path starts from it rather than loading the word again at once.
 * @caller is the return address of pthread_spin_lock(), for reports.
 */
void ts_lock_slow(ts_word_t *lock, uint32_t drawn, const void *caller);

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
	ts_lock_slow(lock, old, caller);
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

/* Out of line (slowpath.c): unlock of a word with flags set, or not held. */
bool ts_unlock_slow(ts_word_t *lock, uint32_t word);

/*
 * Returns false, and leaves the word alone, when no one holds the lock (an
 * unlock too many would otherwise move "serving" past "next" and make every
 * later lock() wait forever).  Otherwise one load and one store.
 */
static inline bool ts_unlock(ts_word_t *lock)
{
	/* Only the holder writes "serving", so the value we read is our own. */
	uint32_t word = __atomic_load_n(lock, __ATOMIC_RELAXED);

	/* Flags, or no ticket outstanding (not held: the slow path refuses it). */
	if (__builtin_expect((word & TS_UNLOCK_FLAGS) ||
	                     ts_serving(word) == ts_next(word), 0))
		return ts_unlock_slow(lock, word);
	/*
	 * RELEASE pairs with the ACQUIRE fetch-add in ts_lock() and the ACQUIRE
	 * polls in ts_lock_slow(): our critical section happens-before the next
	 * holder's.  A 16-bit store cannot disturb tickets drawn meanwhile in the
	 * "next" half, nor the flags there.
	 */
	__atomic_store_n(ts_serving_half(lock), (uint16_t)(ts_serving(word) + TS_TICKET_STEP),
	                 __ATOMIC_RELEASE);
	return true;
}

#endif
