/*
 * parking.c - where waiters sleep and who wakes them.
 *
 * Who sleeps (slowpath.c decides): waiters behind the head of the queue
 * while the lock is saturated, so that the threads that circulate are the
 * holder and the head; the head when the holder keeps the lock for long (or
 * has lost its CPU); and threads waiting for room outside a full queue.
 *
 * Where.  The lock word changes with every acquisition while threads steal,
 * so a futex on it would rarely find the value it expects: waiters of a
 * private lock sleep on a sequence word in a per-process table, indexed by
 * the lock's hash, each on its own futex bit (ticket mod 32), so a wake-up
 * reaches the waiter it is meant for.  A shared word (TS_SHARED: a lock
 * initialised PTHREAD_PROCESS_SHARED, or made shared) has waiters in other
 * processes, which this table does not reach: they sleep on the lock word
 * itself, with the shared futex (ts_sleep_shared()), announced by
 * TS_SHARED_SLEEPERS, and an unlock that finds the bit wakes one of them.
 * The word changes when the lock changes hands, and then only by its lock
 * byte: a sleeper expects "held, announced", which an unlock changes.  The
 * table's futexes stay private: a shared futex cannot reach another
 * process through memory that is the process's own, whatever its flag.
 *
 * Served elsewhere.  A process-private lock may live in shared memory and
 * be used by two processes all the same (POSIX leaves it undefined; glibc's
 * lock serves it; libfabric's shared-memory provider does it).  Then a
 * sleeper of one process, in its table, is never woken by the other's
 * release, which bumps and wakes its own table: the sleep runs out.  A
 * release announces a wake-up in its table, by the woken ticket's bit
 * (ts_wake_announce()), before it clears the request from the word, so a
 * sleeper whose sleep ran out and who finds its request cleared (served)
 * with no announcement for its bit since it asked knows that a release of
 * another process served it
 * (served_elsewhere()): the lock is then made a shared word (slowpath.c,
 * become_shared()), whose sleepers every process can wake.  One nap per
 * lock pays for the discovery, where every contended hand-over between the
 * processes cost one.  (Deciding by the mapping instead would take a
 * system call, /proc/self/maps or the like, in the lock path, which a
 * seccomp filter may forbid; and a lock in shared memory used by one
 * process needs nothing.)
 *
 * Who wakes whom.  Unlock stays a load and a store unless a request to
 * it (bits beside the lock byte) sends it out of line: TS_WAKE_HEAD (set by
 * the head before it sleeps) and TS_WAKE_NEXT (set by a waiter that took
 * the lock from the head of the queue while TS_SLEEPERS said the next one
 * may sleep).  The wake-up
 * then comes after the release, outside the critical section.
 *
 * Why no lost wake-up, mostly.  A waiter behind the head sets TS_SLEEPERS
 * with a full barrier after reading the table's sequence word, and sleeps
 * only if the word that barrier returned says it is not the head; the waiter
 * that makes it the head does so with a read-modify-write of the same word,
 * so it either sees TS_SLEEPERS (and its unlock bumps the sequence word and
 * wakes us: we then find the sequence changed, or are asleep and get the
 * wake-up) or came first (and we do not sleep).  The head's own sleep has a
 * window: an unlock that loaded the lock byte before the head set
 * TS_WAKE_HEAD, and stores 0 after, wakes no one (making unlock a locked
 * instruction would close it and cost every uncontended unlock).  A shared
 * word's sleeper has the same window with TS_SHARED_SLEEPERS; outside it,
 * the unlock's byte store changes the word its sleep expects, so a sleep
 * that has not begun does not begin, and one that has is woken.  So every
 * sleep is bounded (TS_NAP_FIRST_NS, doubling to TS_NAP_MAX_NS while nothing
 * changes), and a missed wake-up costs at most the nap.
 */
#include "parking.h"

#include "probes.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
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
	out->rests = __atomic_load_n(&sleep_counts.rests, __ATOMIC_RELAXED);
	out->dozes = __atomic_load_n(&sleep_counts.dozes, __ATOMIC_RELAXED);
	out->turn_yields = __atomic_load_n(&sleep_counts.turn_yields, __ATOMIC_RELAXED);
}

uint64_t ts_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The table: per hash slot, the sequence word the queue's sleepers wait on
 * and the one outsiders wait on.  Locks that hash alike share a slot: a
 * wake-up may then reach a sleeper of another lock, which looks and sleeps
 * again.
 */
#define PARKING_BITS 6

static struct parking_slot {
	uint32_t seq;         /* bumped by each wake-up of a queue's waiter */
	uint32_t outside_seq; /* bumped by each wake-up of the outsiders */
	/*
	 * By ticket bit: wake-ups announced by this process's releases, each
	 * before the release clears the request it serves ("Served elsewhere").
	 */
	uint32_t announced[32];
} __attribute__((aligned(64))) parking[1u << PARKING_BITS];

static struct parking_slot *slot_of(uint32_t hash)
{
	return &parking[hash >> (32 - PARKING_BITS)];
}

static uint32_t ticket_bit(uint8_t ticket)
{
	return 1u << (ticket & 31);
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

/*
 * FUTEX_WAIT_BITSET (@op, shared or private) on @futex while it holds
 * @value, until @nap_ns from now, for wake-ups in @bitset; the system call's
 * result.
 */
static long futex_wait_for(uint32_t *futex, int op, uint32_t value, uint64_t nap_ns,
                           uint32_t bitset)
{
	/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline. */
	uint64_t at = ts_now_ns() + nap_ns;
	struct timespec deadline = { (time_t)(at / 1000000000ull), (long)(at % 1000000000ull) };

	return syscall(SYS_futex, futex, op, value, &deadline, NULL, bitset);
}

/* A sleep on @futex while it holds @value, for at most @nap_ns, woken by @ticket's bit. */
static enum ts_sleep futex_sleep(uint32_t *futex, bool shared, uint32_t value, uint8_t ticket,
                                 uint64_t nap_ns)
{
	int op = shared ? FUTEX_WAIT_BITSET : FUTEX_WAIT_BITSET_PRIVATE;

	return sleep_result(futex_wait_for(futex, op, value, nap_ns, ticket_bit(ticket)));
}

static uint32_t *announced_of(struct parking_slot *slot, uint8_t ticket)
{
	return &slot->announced[ticket & 31];
}

/*
 * After a private sleep on @slot that ran out: was its wake-up served, in
 * another process?  The request that asked for it (@request, in the word
 * while our ticket @ticket is the head) is gone, so a release cleared it
 * and woke the head; and the wake-ups this process announced for our
 * ticket's bit are still @mark, as read before the request was made, so no
 * release of this process did (release() announces before it clears:
 * slowpath.c).  Nothing else clears those requests while we wait with our
 * ticket (ticket_lock.h).  A release of this process for another lock of
 * the slot, or another ticket of the bit, only makes us conclude nothing.
 */
static bool served_elsewhere(ts_word_t *lock, struct parking_slot *slot, uint32_t mark,
                             uint8_t ticket, uint32_t request)
{
	/* SEQ_CST, the word first: a cleared request shows its announcement. */
	uint32_t word = __atomic_load_n(lock, __ATOMIC_SEQ_CST);

	return !(word & (TS_SHARED | request)) && ts_head(word) == ticket &&
	       __atomic_load_n(announced_of(slot, ticket), __ATOMIC_SEQ_CST) == mark;
}

enum ts_sleep ts_sleep_in_queue(ts_word_t *lock, uint32_t hash, uint8_t ticket, uint64_t nap_ns,
                                bool *elsewhere)
{
	struct parking_slot *slot = slot_of(hash);
	/* ACQUIRE, and before the fetch-or: see "Why no lost wake-up". */
	uint32_t seq = __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE);
	uint32_t mark = __atomic_load_n(announced_of(slot, ticket), __ATOMIC_ACQUIRE);
	/*
	 * SEQ_CST: ordered against the compare-and-swap that makes us the head
	 * (slowpath.c, take_as_head()), which reads TS_SLEEPERS.
	 */
	uint32_t word = __atomic_fetch_or(lock, TS_SLEEPERS, __ATOMIC_SEQ_CST) | TS_SLEEPERS;
	enum ts_sleep how;

	if (ts_head(word) == ticket)
		return TS_SLEEP_SKIPPED;
	TS_PROBE3(sleep, lock, (int)ticket, TS_PROBE_SLEEP_BEHIND);
	if (word & TS_SHARED) {
		how = futex_sleep(lock, true, word, ticket, nap_ns);
	} else {
		how = futex_sleep(&slot->seq, false, seq, ticket, nap_ns);
		*elsewhere = how == TS_SLEEP_TIMEOUT &&
		             served_elsewhere(lock, slot, mark, ticket, TS_WAKE_NEXT);
	}
	TS_PROBE3(wake, lock, (int)ticket, (int)how);
	return how;
}

enum ts_sleep ts_sleep_as_head(ts_word_t *lock, uint32_t hash, uint8_t ticket, uint64_t nap_ns,
                               bool *elsewhere)
{
	struct parking_slot *slot = slot_of(hash);
	uint32_t seq = __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE);
	/* Before our request is made: its release's announcement comes after. */
	uint32_t mark = __atomic_load_n(announced_of(slot, ticket), __ATOMIC_ACQUIRE);
	uint32_t word = __atomic_load_n(lock, __ATOMIC_RELAXED);
	uint32_t asleep;
	enum ts_sleep how;

	do {
		if (ts_head(word) != ticket || !ts_is_held(word))
			return TS_SLEEP_SKIPPED;
		asleep = (word | TS_WAKE_HEAD) & ~(TS_WATCHING | TS_BYPASS_MASK);
		/* SEQ_CST: ordered against the unlock's load (see "Why no lost wake-up"). */
	} while (!__atomic_compare_exchange_n(lock, &word, asleep, false, __ATOMIC_SEQ_CST,
	                                      __ATOMIC_RELAXED));
	if (asleep & TS_SHARED) {
		TS_PROBE3(sleep, lock, (int)ticket, TS_PROBE_SLEEP_HEAD);
		how = futex_sleep(lock, true, asleep, ticket, nap_ns);
	} else {
		/* An unlock whose store landed since: it may have missed the request. */
		if (!ts_is_held(__atomic_load_n(lock, __ATOMIC_SEQ_CST)))
			return TS_SLEEP_SKIPPED;
		TS_PROBE3(sleep, lock, (int)ticket, TS_PROBE_SLEEP_HEAD);
		how = futex_sleep(&slot->seq, false, seq, ticket, nap_ns);
		*elsewhere = how == TS_SLEEP_TIMEOUT &&
		             served_elsewhere(lock, slot, mark, ticket, TS_WAKE_HEAD);
	}
	TS_PROBE3(wake, lock, (int)ticket, (int)how);
	return how;
}

/*
 * What a rest and a doze wait on: never changed, never woken.  Each
 * thread's own: the kernel hashes a private futex by its address, and one
 * word for the whole process put every rest and doze into one hash bucket,
 * whose lock each wait and each timeout takes.
 */
static __thread uint32_t rest_futex __attribute__((tls_model("initial-exec")));

void ts_sleep_us(uint32_t us)
{
	/* Not futex_sleep(): neither woken nor a nap that timed out. */
	futex_wait_for(&rest_futex, FUTEX_WAIT_BITSET_PRIVATE, 0, (uint64_t)us * 1000u,
	               FUTEX_BITSET_MATCH_ANY);
}

void ts_rest(uint32_t us)
{
	ts_sleep_us(us);
	__atomic_fetch_add(&sleep_counts.rests, 1, __ATOMIC_RELAXED);
}

void ts_doze(uint32_t us)
{
	ts_sleep_us(us);
	__atomic_fetch_add(&sleep_counts.dozes, 1, __ATOMIC_RELAXED);
}

void ts_yield_turn(void)
{
	sched_yield();
	__atomic_fetch_add(&sleep_counts.turn_yields, 1, __ATOMIC_RELAXED);
}

void ts_wake_announce(uint32_t hash, uint8_t ticket)
{
	/* SEQ_CST: after the request was seen, before it is cleared. */
	__atomic_fetch_add(announced_of(slot_of(hash), ticket), 1, __ATOMIC_SEQ_CST);
}

void ts_wake_ticket(ts_word_t *lock, uint32_t hash, uint32_t word, uint8_t ticket)
{
	struct parking_slot *slot = slot_of(hash);

	if (!(word & TS_SHARED)) {
		/* SEQ_CST: after the word's change that ended the sleep's condition. */
		__atomic_fetch_add(&slot->seq, 1, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, &slot->seq, FUTEX_WAKE_BITSET_PRIVATE, INT_MAX, NULL, NULL,
		        ticket_bit(ticket));
	} else if (ts_queued(word) == 0) {
		/*
		 * One sleeper: it takes the lock with TS_SHARED_SLEEPERS set, and
		 * its unlock wakes the next (ticket_lock.h, I5).
		 */
		syscall(SYS_futex, lock, FUTEX_WAKE_BITSET, 1, NULL, NULL, FUTEX_BITSET_MATCH_ANY);
	} else {
		/*
		 * A converted word whose tickets drain (slowpath.c, "Shared
		 * words"): its ticket holders sleep on the word by their ticket's
		 * bit, or still in this process's table, and the bit may be a
		 * shared sleeper's too.  Everyone on the word: rare, and short.
		 */
		__atomic_fetch_add(&slot->seq, 1, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, &slot->seq, FUTEX_WAKE_BITSET_PRIVATE, INT_MAX, NULL, NULL,
		        ticket_bit(ticket));
		syscall(SYS_futex, lock, FUTEX_WAKE_BITSET, INT_MAX, NULL, NULL,
		        FUTEX_BITSET_MATCH_ANY);
	}
}

void ts_wake_all_of(uint32_t hash)
{
	struct parking_slot *slot = slot_of(hash);

	/* SEQ_CST: after the word's change; as ts_wake_ticket(). */
	__atomic_fetch_add(&slot->seq, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &slot->seq, FUTEX_WAKE_BITSET_PRIVATE, INT_MAX, NULL, NULL,
	        FUTEX_BITSET_MATCH_ANY);
}

enum ts_sleep ts_sleep_shared(ts_word_t *lock, uint32_t word, uint64_t nap_ns)
{
	enum ts_sleep how;

	/* No ticket: -1 (probes.h).  Any bit: the unlock wakes one, whoever it is. */
	TS_PROBE3(sleep, lock, -1, TS_PROBE_SLEEP_SHARED);
	how = sleep_result(futex_wait_for(lock, FUTEX_WAIT_BITSET, word, nap_ns,
	                                  FUTEX_BITSET_MATCH_ANY));
	TS_PROBE3(wake, lock, -1, (int)how);
	return how;
}

enum ts_sleep ts_sleep_outside(ts_word_t *lock, uint32_t hash, uint32_t capacity, uint64_t nap_ns)
{
	struct parking_slot *slot = slot_of(hash);
	uint32_t seq = __atomic_load_n(&slot->outside_seq, __ATOMIC_SEQ_CST);
	struct timespec nap = { (time_t)(nap_ns / 1000000000ull), (long)(nap_ns % 1000000000ull) };
	enum ts_sleep how;

	/* Room appeared since we looked: no sleep.  (SEQ_CST: against the waker's bump.) */
	if (ts_queued(__atomic_load_n(lock, __ATOMIC_SEQ_CST)) < capacity)
		return TS_SLEEP_SKIPPED;
	/* No ticket: -1 (probes.h). */
	TS_PROBE3(sleep, lock, -1, TS_PROBE_SLEEP_OUTSIDE);
	how = sleep_result(syscall(SYS_futex, &slot->outside_seq, FUTEX_WAIT_PRIVATE, seq, &nap,
	                           NULL, 0));
	TS_PROBE3(wake, lock, -1, (int)how);
	return how;
}

void ts_wake_outside(uint32_t hash)
{
	struct parking_slot *slot = slot_of(hash);

	__atomic_fetch_add(&slot->outside_seq, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &slot->outside_seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}
