/*
 * parking.c - where waiters sleep and who wakes them.
 *
 * A user-space ticket lock must survive threads that are not running: the
 * holder, or the waiter whose turn comes next, may have lost its CPU to
 * another thread of ours or to another process.  The kernel never meets this
 * (it spins with preemption off).  What we chose, and why:
 *
 *  - Every waiter spins first (TICKET_SPIN pauses without progress), then
 *    sleeps on a futex.  Sleeping, not yielding: under load from other
 *    processes sched_yield() hands the CPU to them for a whole slice and
 *    brings us back on their schedule, not when our turn comes; a sleeper is
 *    woken when it matters and the scheduler favours a waking thread.  A
 *    waiter that sleeps costs nothing while the line does not move, which is
 *    what "bounded waste" asks of a lock preloaded into a busy server.
 *
 *  - Who wakes whom.  Unlock must stay a load and a store in the common case,
 *    so a wake-up is never its job unless a flag in the word sends it out of
 *    line.  Waiters two or more from the front are woken by the waiter served
 *    just before them (the successor chain: it has a whole critical section
 *    to get back on a CPU).  The next in line has no one ahead of it but the
 *    holder, so it sets TS_SLEEPERS before sleeping and the unlock that sees
 *    the flag wakes it.  Outsiders (threads that left a full line) sleep on a
 *    per-process table, not on the lock word, which changes with every
 *    acquisition; a thread taking turns wakes the one that has slept
 *    longest, and so does an outsider that got in and finds no one behind it
 *    (the line has room: outsiders then come in one after another).
 *
 *  - Every sleep is bounded (TS_NAP_FIRST_NS, doubling to TS_NAP_MAX_NS),
 *    because some wake-ups can be missed by design (model/ checks which):
 *    an unlock that read the word just before the next in line set
 *    TS_SLEEPERS, and whose store becomes visible only after the sleeper's
 *    futex check (still in the store buffer, or the unlocking thread
 *    interrupted between its load and its store); a thread that took turns
 *    sleeps without looking, and the outsider it woke may count the sleepers
 *    before it does; outsiders that find the line empty with no one to pass
 *    the room on; and any wake-up between processes sharing a lock, for
 *    outsiders, whose table is per process.  Making unlock a locked
 *    instruction would close the first and cost every uncontended unlock;
 *    the last needs state beyond the four bytes.  A missed wake-up costs at
 *    most the nap the sleeper was in.  A timed-out sleep
 *    only looks at the word and sleeps again, for twice as long: a thousand
 *    outsiders waiting for a lock that does not come free cost a few thousand
 *    wake-ups a second in all, not a storm of spinning.
 *
 *  - Lending mode (TS_LENDING, slowpath.c) is switched on by a stall and kept
 *    while stalls keep coming: this file remembers the last one, per process.
 *
 * Futex calls on the lock word use the shared (not _PRIVATE) form, so waiters
 * in other processes are woken too: four bytes do not tell us whether the
 * lock was initialised PTHREAD_PROCESS_SHARED.  Each ticket sleeps on its own
 * futex bit (ticket mod 32), so a wake reaches the waiter it is meant for.
 */
#include "parking.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uint64_t ts_nap_first_ns = TS_NAP_FIRST_NS;
uint64_t ts_nap_max_ns = TS_NAP_MAX_NS;

/* Shared counters, but only on the way out of a system call. */
static struct ts_sleep_counts sleep_counts;

void ts_sleep_counts(struct ts_sleep_counts *out)
{
	out->woken = __atomic_load_n(&sleep_counts.woken, __ATOMIC_RELAXED);
	out->timed_out = __atomic_load_n(&sleep_counts.timed_out, __ATOMIC_RELAXED);
}

uint64_t ts_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t ticket_bit(uint16_t ticket)
{
	return 1u << ((ticket / TS_TICKET_STEP) & 31);
}

static enum ts_sleep sleep_result(long rc)
{
	if (rc == 0 || errno != ETIMEDOUT) {
		/* woken, EAGAIN (the word changed) or EINTR */
		__atomic_fetch_add(&sleep_counts.woken, 1, __ATOMIC_RELAXED);
		return TS_SLEEP_WOKEN;
	}
	__atomic_fetch_add(&sleep_counts.timed_out, 1, __ATOMIC_RELAXED);
	return TS_SLEEP_TIMEOUT;
}

enum ts_sleep ts_sleep_in_line(ts_word_t *lock, uint16_t ticket, bool next_in_line,
                               uint64_t nap_ns)
{
	/*
	 * SEQ_CST fetch-or: ordered against the unlock store or the acquiring
	 * load of whoever must wake us (see slowpath.c, "Why no lost wake-up").
	 */
	uint32_t word = __atomic_fetch_or(lock, TS_SLEEPERS, __ATOMIC_SEQ_CST) | TS_SLEEPERS;
	uint16_t ahead = ts_tickets_between(ts_serving(word), ticket);
	bool turn_lent = ahead == 0 && (word & TS_BORROWED);
	struct timespec deadline;
	uint64_t at;
	long rc;

	if (next_in_line ? (ahead == 0 && !turn_lent) : ahead < 2)
		return TS_SLEEP_SKIPPED;
	/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline. */
	at = ts_now_ns() + nap_ns;
	deadline.tv_sec = (time_t)(at / 1000000000ull);
	deadline.tv_nsec = (long)(at % 1000000000ull);
	rc = syscall(SYS_futex, lock, FUTEX_WAIT_BITSET, word, &deadline, NULL, ticket_bit(ticket));
	return sleep_result(rc);
}

void ts_wake_ticket(ts_word_t *lock, uint16_t ticket)
{
	syscall(SYS_futex, lock, FUTEX_WAKE_BITSET, INT_MAX, NULL, NULL, ticket_bit(ticket));
}

/*
 * The outsiders' table: sequence words hashed by lock, shared by the locks
 * that hash alike (a wake may then reach a sleeper of another lock, which
 * looks, and sleeps again).  Private to the process.
 */
#define PARKING_BITS 6

static struct parking_slot {
	uint32_t seq;      /* bumped by each wake */
	uint32_t sleepers; /* threads asleep, or about to be */
} __attribute__((aligned(64))) parking[1u << PARKING_BITS];

static struct parking_slot *slot_of(uint32_t hash)
{
	return &parking[hash >> (32 - PARKING_BITS)];
}

enum ts_sleep ts_sleep_outside(ts_word_t *lock, uint32_t hash, uint32_t queue_max,
                               bool only_if_full, uint64_t nap_ns)
{
	struct parking_slot *slot = slot_of(hash);
	uint32_t seq = __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE);
	enum ts_sleep how = TS_SLEEP_SKIPPED;
	uint32_t word;

	/*
	 * SEQ_CST: ordered before the word's re-check, against the waker, which
	 * changes the word (serves a waiter) before it reads the count.
	 */
	__atomic_fetch_add(&slot->sleepers, 1, __ATOMIC_SEQ_CST);
	word = __atomic_load_n(lock, __ATOMIC_SEQ_CST);
	if (!only_if_full || ts_tickets_between(ts_serving(word), ts_next(word)) >= queue_max) {
		struct timespec nap = { (time_t)(nap_ns / 1000000000ull),
			                (long)(nap_ns % 1000000000ull) };

		how = sleep_result(syscall(SYS_futex, &slot->seq, FUTEX_WAIT_PRIVATE, seq, &nap,
		                           NULL, 0));
	}
	__atomic_fetch_sub(&slot->sleepers, 1, __ATOMIC_RELAXED);
	return how;
}

uint32_t ts_outsiders(uint32_t hash)
{
	return __atomic_load_n(&slot_of(hash)->sleepers, __ATOMIC_SEQ_CST);
}

bool ts_wake_outsider(uint32_t hash)
{
	struct parking_slot *slot = slot_of(hash);

	if (__atomic_load_n(&slot->sleepers, __ATOMIC_SEQ_CST) == 0)
		return false;
	__atomic_fetch_add(&slot->seq, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &slot->seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return true;
}

/*
 * The last stall, in coarse milliseconds.  Written only when a waiter sees a
 * stall (rarely, and only when it changes), read when lending mode might be
 * switched off: the cache line stays shared.
 */
static uint64_t last_stall_ms;

static uint64_t coarse_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void ts_note_stall(void)
{
	uint64_t now = coarse_ms();

	if (__atomic_load_n(&last_stall_ms, __ATOMIC_RELAXED) != now)
		__atomic_store_n(&last_stall_ms, now, __ATOMIC_RELAXED);
}

bool ts_stalled_recently(void)
{
	return coarse_ms() - __atomic_load_n(&last_stall_ms, __ATOMIC_RELAXED) < TS_STALL_MEMORY_MS;
}
