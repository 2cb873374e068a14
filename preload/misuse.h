/*
 * misuse.h - reporting programs that misuse a lock, and surviving it.
 *
 * A ticket lock is less forgiving than glibc's test-and-set lock: a word
 * that was never a ticket lock, or that glibc's own code has written, may
 * stand for dozens of tickets that no thread holds, and an unlock too many,
 * if it were carried out, would free a lock its holder still uses.  This
 * library is preloaded into programs their users did not write, so it
 * detects what four bytes allow and says so, one line on stderr (ts_log)
 * per report, and keeps the program running:
 *
 *  - unlock of a lock no one holds: the word is left unchanged, unlock returns
 *    EPERM (ts_unlock() already refuses; spin_api.c reports); when its lock
 *    byte is TS_LOCKED decremented (0x03-0x0f), said apart: glibc's lock, in
 *    code without the preload, took the word for its own (doc/reliability.md,
 *    "Code without the preload");
 *  - destroy of a held lock: reported; destroy returns 0, as glibc's does
 *    (see spin_api.c for why not EBUSY);
 *  - a word that cannot be a valid ticket lock: more tickets ahead of ours than
 *    there are threads on the whole system (every ticket ahead but the
 *    holder's belongs to a live, waiting thread).  Reported from the slow path;
 *    the thread then keeps waiting in line, as for any other lock.
 *
 * Reports are made once per lock and kind (a small table of reported locks),
 * and at most TS_MISUSE_BURST in all before being limited to one a second;
 * the next line then says how many were suppressed.  Nothing here is on a
 * fast path: these functions run only after a fast path found the misuse.
 */
#ifndef TICKETSPIN_MISUSE_H
#define TICKETSPIN_MISUSE_H

#include <stdint.h>

#include "ticket_lock.h"

enum ts_misuse_kind {
	TS_MISUSE_UNLOCK_UNHELD, /* pthread_spin_unlock() of a lock no one holds */
	TS_MISUSE_DESTROY_HELD,  /* pthread_spin_destroy() of a held lock */
	TS_MISUSE_SUSPECT_WORD,  /* more tickets ahead than threads on the system */
	TS_MISUSE_DECREMENTED,   /* unlock of a lock whose held byte glibc's lock decremented */
	TS_MISUSE_KINDS
};

/* Reports beyond this many (all kinds together) are limited to one a second. */
#define TS_MISUSE_BURST 16

/*
 * Tickets ahead of ours at or below which a word is never questioned.  Above
 * it, ts_misuse_suspect_word() compares with the number of threads on the
 * system (one sysinfo(2) call).  A line this long on one lock is itself rare.
 */
#define TS_MISUSE_AHEAD_CHEAP 32u

/*
 * @word: the lock word as the unlock found it (free).  A lock byte of 0x03
 * to 0x0f is none of ours (ticket_lock.h): TS_LOCKED less one or more, as
 * glibc's pthread_spin_lock leaves a word it finds held (its `lock decl`
 * comes before its test), reported as TS_MISUSE_DECREMENTED.
 */
void ts_misuse_unlock_unheld(const void *lock, uint32_t word, const void *caller);

/* Is @byte, a lock byte that is not held, TS_LOCKED decremented (0x03-0x0f)? */
static inline bool ts_byte_is_decremented(uint8_t byte)
{
	/* 0x01 is glibc's free word, 0x02 the rest mark: both free bytes of ours too. */
	return byte >= 0x03u && byte < TS_LOCKED;
}

/* @word: the lock word as destroy found it (held). */
void ts_misuse_destroy_held(const void *lock, uint32_t word, const void *caller);

/*
 * @word: the lock word seen after drawing @ticket (or, for a foreign lock
 * byte the lock's exchange found, the word with that byte and @ticket its
 * "next").  Reports (once per lock) when it has bits this library never
 * sets (ts_word_is_foreign()), or when the tickets ahead of @ticket
 * outnumber the threads on the system; returns true if the word was judged
 * impossible, whether reported or not.
 */
bool ts_misuse_suspect_word(const void *lock, uint32_t word, uint8_t ticket,
                            const void *caller);

/*
 * The queue's hook: called once per ticket drawn (slowpath.c), cheap enough
 * for that.  @word: the lock word as drawing @ticket left it (our
 * compare-and-swap's).  Calls ts_misuse_suspect_word() only when more than
 * TS_MISUSE_AHEAD_CHEAP tickets are ahead of @ticket.
 */
static inline void ts_misuse_check_line(ts_word_t *lock, uint32_t word, uint8_t ticket,
                                        const void *caller)
{
	if (__builtin_expect(ts_tickets_between(ts_head(word), ticket) > TS_MISUSE_AHEAD_CHEAP ||
	                     ts_word_is_foreign(word), 0))
		(void)ts_misuse_suspect_word(lock, word, ticket, caller);
}

/* Misuses detected so far, of one kind (reported or not); for tests and stats. */
uint64_t ts_misuse_count(enum ts_misuse_kind kind);

#endif
