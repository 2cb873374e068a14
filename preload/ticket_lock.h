/*
 * ticket_lock.h - the lock word and the fast paths of ticketspin.
 *
 * The lock is the caller's own 4-byte pthread_spinlock_t, used in place: a
 * lock byte, which says who holds the lock, and a ticket queue of the threads
 * waiting for it, which says in which order they get it (but on a shared
 * word, below, which has no queue).
 *
 *   bits  0..7   lock byte: held when TS_LOCKED (bit 4) is set, and nothing
 *                else is ever set in it by us but TS_REST_MARK (bit 1) in a
 *                free byte: a resting thread's mark, which any acquisition
 *                overwrites (slowpath.c, "Rest"); glibc's unlocked word, 1,
 *                is a free lock here too, taken over by its first locker.
 *                Written by the lock's exchange (to TS_LOCKED, held or
 *                not), by an unlock's plain byte store (to 0), and by atomic
 *                read-modify-writes of the whole word.
 *   bits  8..13  bypass: acquisitions by threads outside the queue since the
 *                head of the queue began to watch (TS_WATCHING).
 *   bit  14      TS_WATCHING: the head of the queue is running and watching
 *                the lock; stealers count themselves in "bypass", and when it
 *                reaches TICKET_BYPASS they queue instead.
 *   bit  15      TS_SLEEPERS: a waiter in the queue may be asleep.
 *   bits 16..21  head: the ticket at the front of the queue.
 *   bit  22      TS_WAKE_HEAD: the head of the queue sleeps and wants the
 *                next unlock to wake it.  On a shared word,
 *                TS_SHARED_SLEEPERS: a thread may sleep on the word, and
 *                the next unlock wakes one.
 *   bit  23      TS_UNLOCK_DUE: every unlock of this lock comes out of
 *                line: TICKET_STATS counts its releases (and the holder's
 *                unlock folds its record), TICKET_CHECK_UNLOCK checks that
 *                it is held.  Set by pthread_spin_init() when either asks
 *                (for TICKET_STATS, once the lock was seen contended) and
 *                at a recorded contended acquisition; cleared only by
 *                pthread_spin_init().  Never set with both off.
 *   bits 24..29  next: the next ticket to hand out.
 *   bit  30      TS_WAKE_NEXT: the waiter that has just become the head may
 *                sleep: the holder's unlock wakes it.
 *   bit  31      TS_SHARED: a process-shared word (below): initialised
 *                PTHREAD_PROCESS_SHARED, or a private lock seen served by
 *                another process (slowpath.c, "Shared words").
 *
 * The three requests to the unlock (TS_WAKE_HEAD, TS_WAKE_NEXT, TS_UNLOCK_DUE)
 * live outside the lock byte because the lock's exchange overwrites it whole.
 * The unlock's fast path tests them with the lock byte; its slow path
 * releases with a compare-and-swap that clears the two wake-ups (or, with
 * TS_UNLOCK_DUE alone, the fast path's byte store), then counts.  A lock
 * word is only ever read by the unlock's fast path through its upper half:
 * the lock byte, just written by the lock's exchange, would make the load
 * wait for it.
 *
 * Everything but the lock byte changes only by atomic read-modify-writes, so
 * the unlock's byte store cannot lose an update to it.
 *
 * Shared words (TS_SHARED) have no queue: a test-and-set lock on the lock
 * byte, whose waiters hold nothing in the word that another process must
 * serve, so that a process that exits, is killed, execs or is stopped while
 * one of its threads waits holds up no one.  Their only bits besides the
 * lock byte and TS_SHARED are TS_UNLOCK_DUE and TS_SHARED_SLEEPERS (the bit
 * of TS_WAKE_HEAD): a waiter may sleep on the word, and the next unlock goes
 * out of line to wake one sleeper (Drepper's "Futexes are tricky", mutex 2).
 * A woken thread takes the lock keeping the bit, so a stale bit costs one
 * wake-up of no one, never a sleeper left asleep.  The fast paths serve
 * them unchanged: the exchange takes a free byte (no tickets), the unlock
 * stores the byte unless a request is set.  A private lock converted to a
 * shared word may still have tickets, which drain: their waiters keep their
 * turn and sleep on the word (parking.c), and no new ticket is drawn.  No
 * order is kept on a shared word; its waiters' only bounds are their
 * sleeps' (parking.h) and one rest per acquisition (slowpath.c).
 *
 * The protocol (slowpath.c has the details and the reasons):
 *  - Free is "TS_LOCKED clear".  A thread takes the lock by setting the
 *    lock byte to TS_LOCKED with an atomic operation that saw it clear;
 *    nothing else makes an owner.
 *  - Uncontended: the whole word is 0; lock is one exchange of the lock
 *    byte (to TS_LOCKED) and a load of the tickets (the upper half, which
 *    the exchange's byte does not overlap: no store forwarding to wait
 *    for), unlock one load (the requests' half, likewise) and one byte
 *    store.  An exchange that finds the lock free holds it, queue or
 *    not: with a queue behind, it decides out of line whether it may keep
 *    it (a steal, bounded as below) or must give it back (an unlock with no
 *    critical section) and wait.
 *  - Contended: a thread that finds the lock free but the queue not empty
 *    may keep it (steal) unless the head is watching and has been
 *    bypassed TICKET_BYPASS times already (or, on a saturated lock, has
 *    watched for TICKET_BYPASS_NS: it fills the count); otherwise it draws a ticket and
 *    queues (stopped by that count, once per acquisition, it first sleeps
 *    TICKET_REST_US holding nothing: the rest; not if it was the last to
 *    rest on that lock and its rest ended less than 8 x TICKET_REST_US ago,
 *    so that two threads' rests alternate, nor for a while after a rest in
 *    which no one took the lock).  The head of the queue
 *    takes the lock when it sees it free, advancing "head" in the same
 *    compare-and-swap.  Only the last ticket may be given back (withdrawn),
 *    and only by a waiter that takes the lock in the same operation because
 *    the head did not for TS_ESCAPE_NS (it is not running).  A thread that
 *    steals past a queue of two or more whose head does not watch yields
 *    its CPU once every TICKET_TURN_US (the turn), holding nothing.  A
 *    thread that finds the lock held past a queue whose head does not
 *    watch, on a lock whose last watching head was seldom bypassed, sleeps
 *    TICKET_DOZE_US holding nothing and tries again, up to TS_DOZES_MAX
 *    times, before it draws a ticket.
 *
 * Invariants:
 *  I1 at most one thread holds the lock: the one whose atomic operation
 *     set TS_LOCKED where it was clear; it is clear again only by that
 *     thread's unlock (or give-back).  An exchange that finds it set changes
 *     nothing (it writes the byte's only value back).  A thread holding the
 *     lock enters its critical section only after the steal decision.
 *  I2 the tickets in the queue are those from head up to next (mod 2^6), at
 *     most TS_QUEUE_CAPACITY of them: each belongs to exactly one waiting
 *     thread; head advances only when that ticket's waiter takes the lock,
 *     next goes back only when the last ticket's waiter takes it.  An empty
 *     queue is head == next == 0: whoever empties it sets both to 0, so that
 *     an idle lock is the all-zero word the fast path expects (with
 *     TICKET_STATS or TICKET_CHECK_UNLOCK, TS_UNLOCK_DUE may stay: the
 *     lock's fast path ignores it, and it sends the unlock out of line).
 *  I3 while TS_WATCHING is set, bypass counts the acquisitions by other than
 *     the head (critical sections entered, not exchanges given back),
 *     saturating at TS_BYPASS_MAX, and no steal makes it exceed
 *     TICKET_BYPASS.  The watching head may fill it to TICKET_BYPASS
 *     itself, once it has watched TICKET_BYPASS_NS on a saturated lock.
 *     The holder the watch began under is not counted (it took the lock
 *     before TS_WATCHING was set): one watch is passed by at most
 *     TICKET_BYPASS + 1 critical sections (the model's I6).  Across watches
 *     there is no count bound: a head that sleeps or is escaped past ends
 *     its watch, and the count starts again; that wait is bounded in time.
 *     A trylock may exceed it (it takes any free lock: POSIX lets it
 *     fail only while the lock is held, and it cannot wait its turn); it
 *     counts itself up to TS_BYPASS_MAX and no further, so the field never
 *     wraps or carries into TS_WATCHING.  TS_WATCHING is set only by the
 *     head, and cleared by the head's own acquisition, by the head before it
 *     sleeps, and by a waiter that takes the lock because the watching head
 *     left it free for TS_ESCAPE_NS.
 *  I4 TS_SLEEPERS is set before any waiter in the queue sleeps, and cleared
 *     only when at most one ticket is left that could be asleep and its
 *     wake-up is already due: by a head taking the lock with at most one
 *     waiter behind it, which then wakes that waiter (TS_WAKE_NEXT), and by
 *     an escape that leaves only the head (woken by the TS_WAKE_NEXT or
 *     TS_WAKE_HEAD that made or keeps it so).
 *  I5 on a shared word, TS_SHARED_SLEEPERS is set before any thread sleeps
 *     on it (in the value the sleep expects), and cleared only by a release
 *     (the unlock's slow path, a give-back), which then wakes one sleeper.
 *     A thread that has slept takes the lock with the bit set, and sets it
 *     again before it rests or sleeps.  TS_SHARED is never cleared but by
 *     pthread_spin_init().  No ticket is drawn on a shared word.
 *
 * Assumptions (the code relies on them silently):
 *  - x86-64: little-endian, total store order, and coherent mixed-size
 *    accesses: the lock's 8-bit exchange, its 16-bit load, the unlock's
 *    8-bit store and the 32-bit atomics act on bytes of one word.  C11 does
 *    not define mixed-size atomics; GCC and x86 do what the kernel's locks
 *    also rely on.
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
typedef uint8_t __attribute__((may_alias)) ts_byte_t;
typedef uint16_t __attribute__((may_alias)) ts_half_t;

#define TS_LOCKED       0x10u
#define TS_REST_MARK    0x02u /* a free lock byte: no acquisition since a rester marked it */
#define TS_LOCK_BYTE    0xffu
#define TS_BYPASS_SHIFT 8
#define TS_BYPASS_ONE   (1u << TS_BYPASS_SHIFT)
#define TS_BYPASS_MASK  (0x3fu << TS_BYPASS_SHIFT)
#define TS_BYPASS_MAX   63u /* the largest TICKET_BYPASS the field holds */
#define TS_WATCHING     (1u << 14)
#define TS_SLEEPERS     (1u << 15)
#define TS_HEAD_SHIFT   16
#define TS_WAKE_HEAD    (1u << 22)
#define TS_UNLOCK_DUE   (1u << 23) /* the unlock comes out of line: statistics, checks */
#define TS_NEXT_SHIFT   24
#define TS_WAKE_NEXT    (1u << 30)
#define TS_REQUESTS     (TS_WAKE_HEAD | TS_WAKE_NEXT | TS_UNLOCK_DUE)
#define TS_TICKET_BITS  6
#define TS_TICKET_MASK  ((1u << TS_TICKET_BITS) - 1)
#define TS_HEAD_ONE     (1u << TS_HEAD_SHIFT)
#define TS_NEXT_ONE     (1u << TS_NEXT_SHIFT)
#define TS_HEAD_FIELD   (TS_TICKET_MASK << TS_HEAD_SHIFT)
#define TS_NEXT_FIELD   (TS_TICKET_MASK << TS_NEXT_SHIFT)
#define TS_SHARED       (1u << 31)
/* Shared words: a thread may sleep on the word; the unlock wakes one (I5). */
#define TS_SHARED_SLEEPERS TS_WAKE_HEAD
/* The ticket fields as the upper half of the word shows them (the lock's load). */
#define TS_UPPER_TICKETS ((TS_HEAD_FIELD | TS_NEXT_FIELD) >> 16)
/* Most tickets in the queue at once: one fewer than the ticket space, so a
 * full queue never looks empty.  Threads beyond it wait outside. */
#define TS_QUEUE_CAPACITY TS_TICKET_MASK

static inline uint8_t ts_lock_byte(uint32_t word) { return (uint8_t)(word & TS_LOCK_BYTE); }
static inline bool ts_is_held(uint32_t word) { return (word & TS_LOCKED) != 0; }
static inline uint32_t ts_bypass(uint32_t word) { return (word & TS_BYPASS_MASK) >> TS_BYPASS_SHIFT; }
static inline uint8_t ts_head(uint32_t word) { return (uint8_t)((word >> TS_HEAD_SHIFT) & TS_TICKET_MASK); }
static inline uint8_t ts_next(uint32_t word) { return (uint8_t)((word >> TS_NEXT_SHIFT) & TS_TICKET_MASK); }

/* Tickets from @from up to (not including) @to, modulo the ticket space. */
static inline uint32_t ts_tickets_between(uint8_t from, uint8_t to)
{
	return (uint32_t)(to - from) & TS_TICKET_MASK;
}

static inline uint32_t ts_queued(uint32_t word)
{
	return ts_tickets_between(ts_head(word), ts_next(word));
}

/*
 * Lock bytes this library never makes: bits 5..7, or bits 0..3 with the lock
 * held (glibc's unlocked word, 1, is a free lock here).  glibc's words for a
 * lock held with waiters (0, -1, -2...: it counts down) have them: a lock
 * also used by code without the preload (a set-user-ID helper, a statically
 * linked program) shows them.  The lock's exchange returns the byte it
 * replaced, so the slow path judges that.
 */
static inline bool ts_byte_is_foreign(uint8_t byte)
{
	return (byte & 0xe0u) || ((byte & 0x0fu) && (byte & TS_LOCKED));
}

static inline bool ts_word_is_foreign(uint32_t word)
{
	return ts_byte_is_foreign(ts_lock_byte(word));
}

/* No one holds the lock and no one waits in the queue. */
static inline bool ts_word_is_idle(uint32_t word)
{
	return !ts_is_held(word) && ts_queued(word) == 0;
}

static inline ts_byte_t *ts_lock_byte_of(ts_word_t *lock)
{
	return (ts_byte_t *)lock; /* little-endian: the low byte comes first */
}

/* The upper half of the word, the tickets and two of the requests; relaxed. */
static inline uint16_t ts_upper_half(ts_word_t *lock)
{
	return __atomic_load_n((ts_half_t *)lock + 1, __ATOMIC_RELAXED); /* little-endian */
}

/*
 * Out of line (slowpath.c): acquire the lock, whose lock byte our exchange
 * found @was.  With TS_LOCKED clear in @was, the exchange took the lock and
 * we hold it, with a queue behind it: keep it (a steal) or give it back and
 * wait.  Otherwise someone else holds it.  Acquire ordering.  @caller is the
 * return address of pthread_spin_lock(), for reports.  Returns 0, so that a
 * caller can end with it as a tail call.
 */
int ts_lock_slow(ts_word_t *lock, uint8_t was, const void *caller);

/* The fast path: true when the lock was idle and is ours; else @*was is the byte we replaced. */
static inline bool ts_lock_fast(ts_word_t *lock, uint8_t *was)
{
	/*
	 * ACQUIRE pairs with the RELEASE store in ts_unlock(): the previous
	 * holder's critical section happens-before ours.  The exchange takes a
	 * free lock whatever the rest of the word says; the load of the
	 * tickets after it (which does not overlap the byte written) sends a
	 * take past a queue out of line, before our critical section.
	 */
	*was = __atomic_exchange_n(ts_lock_byte_of(lock), TS_LOCKED, __ATOMIC_ACQUIRE);
	return __builtin_expect(!(*was & TS_LOCKED), 1) &&
	       __builtin_expect((ts_upper_half(lock) & TS_UPPER_TICKETS) == 0, 1);
}

static inline void ts_lock(ts_word_t *lock, const void *caller)
{
	uint8_t was;

	if (__builtin_expect(ts_lock_fast(lock, &was), 1))
		return;
	ts_lock_slow(lock, was, caller);
}

/*
 * Out of line: trylock of a word that is not all zero, @seen.  Takes the
 * lock if it is free, whatever the queue (I3); false only if it is held.
 */
bool ts_trylock_slow(ts_word_t *lock, uint32_t seen);

/*
 * Returns true when the lock was taken, false only while someone holds it;
 * never waits, never takes a ticket.  One compare-and-swap when idle.
 */
static inline bool ts_trylock(ts_word_t *lock)
{
	uint32_t seen = 0;

	/* ACQUIRE on success pairs with the RELEASE store in ts_unlock(), as in ts_lock(). */
	if (__atomic_compare_exchange_n(lock, &seen, TS_LOCKED, false, __ATOMIC_ACQUIRE,
	                                __ATOMIC_RELAXED))
		return true;
	return ts_trylock_slow(lock, seen);
}

/*
 * Out of line (slowpath.c): unlock of a word that carries a request to the
 * unlock; @upper the upper half as loaded.  False when the lock byte says no
 * one holds the lock (word left alone), which it reads unless only
 * TICKET_STATS's count was asked for.
 */
bool ts_unlock_slow(ts_word_t *lock, uint16_t upper);

/*
 * Releases the lock: one load (the requests' half) and one byte store.
 * Returns false, and leaves the word alone, when the lock turns out not to be
 * held, which only the slow path sees: with a request in the word, and every
 * time on a lock initialised with TICKET_CHECK_UNLOCK=1 (TS_UNLOCK_DUE).
 */
static inline bool ts_unlock(ts_word_t *lock)
{
	/*
	 * Only the holder's unlock clears the lock byte.  The fast path does
	 * not read that byte: a load of the byte the lock's exchange has just
	 * written waits for the exchange (the uncontended pair cost 11.4 ns with
	 * it against glibc's 6.6 on one CPU, as much as glibc's on another,
	 * when measured: doc/benchmarks.md), and a lock held by its caller has
	 * nothing else in it.  The upper half, with the requests, does not
	 * overlap it.
	 */
	uint16_t upper = ts_upper_half(lock);

	if (__builtin_expect((upper & (TS_REQUESTS >> 16)) != 0, 0))
		return ts_unlock_slow(lock, upper);
	/*
	 * RELEASE pairs with the ACQUIRE exchange or compare-and-swap of the
	 * next holder (ts_lock(), slowpath.c): our critical section
	 * happens-before its.  A byte store cannot disturb the queue or the
	 * requests, which others change meanwhile with atomic operations on the
	 * whole word; a request set since our load stays in the word for the
	 * next unlock (parking.c, "Why no lost wake-up").
	 */
	__atomic_store_n(ts_lock_byte_of(lock), 0, __ATOMIC_RELEASE);
	return true;
}

#endif
