/*
 * spin_api.c - the five exported pthread_spin_* functions.
 *
 * We define all five because glibc's x86-64 spinlock uses another encoding
 * (1 is unlocked): a lock touched by both would be corrupt.  They are the
 * only symbols this library exports (-fvisibility=hidden elsewhere, and an
 * unnamed version node, since a named one would make them stop interposing
 * on glibc's versioned definitions).
 */
#include <errno.h>
#include <pthread.h>

#include "fork.h"
#include "log.h"
#include "misuse.h"
#include "options.h"
#include "stats.h"
#include "ticket_lock.h"

#define TS_EXPORT __attribute__((visibility("default")))

_Static_assert(sizeof(pthread_spinlock_t) == sizeof(ts_word_t), "lock word is 4 bytes");
_Static_assert(_Alignof(pthread_spinlock_t) >= _Alignof(ts_word_t), "lock word alignment");

static ts_word_t *word_of(pthread_spinlock_t *lock)
{
	return (ts_word_t *)(void *)lock;
}

TS_EXPORT int pthread_spin_init(pthread_spinlock_t *lock, int pshared)
{
	if (pshared != PTHREAD_PROCESS_PRIVATE && pshared != PTHREAD_PROCESS_SHARED)
		return EINVAL;
	/*
	 * Publication to other threads is the caller's business, as with glibc.
	 * A process-shared lock is marked: its waiters must sleep where other
	 * processes can wake them (parking.c).
	 */
	const struct ts_config *cfg = ts_config();
	uint32_t word = pshared == PTHREAD_PROCESS_SHARED ? TS_SHARED : 0;

	/*
	 * Every unlock comes out of line to be checked (TICKET_CHECK_UNLOCK),
	 * or, for TICKET_STATS, to be counted on a lock contended before.
	 */
	if (__builtin_expect(cfg->check_unlock, 0) ||
	    (__builtin_expect(cfg->stats != NULL, 0) && ts_stats_init(word_of(lock))))
		word |= TS_UNLOCK_DUE;
	__atomic_store_n(word_of(lock), word, __ATOMIC_RELAXED);
	return 0;
}

/*
 * Destroying a held lock is reported and otherwise ignored: the word is left
 * as it is and the result is 0, as with glibc.  POSIX would allow EBUSY, but
 * programs tested against glibc have never seen it, and one that checks the
 * result would turn a harmless bug (destroy does nothing to the word) into a
 * failure.  Threads still holding or waiting for the lock are not helped.
 */
TS_EXPORT int pthread_spin_destroy(pthread_spinlock_t *lock)
{
	uint32_t word = __atomic_load_n(word_of(lock), __ATOMIC_RELAXED);

	if (__builtin_expect(!ts_word_is_idle(word), 0))
		ts_misuse_destroy_held(word_of(lock), word, __builtin_return_address(0));
	return 0;
}

/* No frame on the fast path: the slow path is a tail call. */
TS_EXPORT int pthread_spin_lock(pthread_spinlock_t *lock)
{
	uint8_t was;

	if (__builtin_expect(ts_lock_fast(word_of(lock), &was), 1))
		return 0;
	return ts_lock_slow(word_of(lock), was, __builtin_return_address(0));
}

TS_EXPORT int pthread_spin_trylock(pthread_spinlock_t *lock)
{
	return ts_trylock(word_of(lock)) ? 0 : EBUSY;
}

/* An unlock of a lock no one holds leaves the word alone (see ts_unlock()). */
TS_EXPORT int pthread_spin_unlock(pthread_spinlock_t *lock)
{
	if (__builtin_expect(ts_unlock(word_of(lock)), 1))
		return 0;
	ts_misuse_unlock_unheld(word_of(lock), __atomic_load_n(word_of(lock), __ATOMIC_RELAXED),
	                        __builtin_return_address(0));
	return EPERM;
}

/* Read the configuration before main, so TICKET_STRICT=1 can stop a bad run
 * early and TICKET_VERBOSE=1 reports even when no lock is ever contended. */
__attribute__((constructor)) static void ticketspin_init(void)
{
	ts_note_pid(); /* for the stall report, which makes no system call to learn it */
	ts_fork_init(); /* a child must not inherit the queues of threads it has not */
	if (ts_config()->stats != NULL)
		ts_stats_start(); /* the statistics file exists from the start, for ticketspin top */
}
