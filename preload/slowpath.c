/*
 * slowpath.c - waiting for a contended ticket: proportional backoff, its
 * auto-tuning, the per-thread delay table, and the waiting policy.
 *
 * Backoff (TICKET_DELAY), after Rik van Riel's series of Dec 2012 - Jan 2013:
 *  - off:   poll with one pause in between (the pre-2013 kernel);
 *  - N:     N x (tickets ahead, holder included) pauses between polls;
 *  - auto:  the next in line polls tightly; the others pause
 *           delay x (waiters ahead, holder excluded) between polls, where
 *           delay is tuned per thread and per lock: +1/7 unit after a poll that
 *           found the lock still busy, -max(delay/32, 1 unit) after one that
 *           found it already ours (we overslept), within
 *           [TICKET_DELAY_MIN, TICKET_DELAY_MAX].
 *
 * Delay table (TICKET_DELAY_TABLE), after Eric Dumazet: "hashed" keeps
 * 2^TICKET_DELAY_HASH_BITS entries per thread, indexed by a hash of the lock
 * address and tagged with the whole hash, so a lock that lands on another
 * lock's entry starts from the minimum instead of inheriting its delay;
 * "single" keeps one delay per thread for every lock.
 *
 * Waiting when threads are not running.  The kernel never needs this (it
 * spins with preemption off); a user-space ticket lock does: the holder, or
 * the waiter whose turn comes next, may be off its CPU, and then everyone
 * behind it burns whole time slices (a plain ticket lock on 2 CPUs with 3
 * threads runs hundreds of times slower than glibc's test-and-set lock).  We
 * read how others cope before choosing: glibc's adaptive mutex and LiTL's
 * spin-then-park locks (spin a while, then sleep), time-published locks (a
 * waiter that is not running is passed over), preemptable ticket locks
 * (ticket order with a timeout after which order is given up), and TWA
 * (waiting away from the lock word; it reduces traffic, not preemption).
 * What we chose, each piece within the 4-byte word and with unlock kept to a
 * load and a store:
 *
 *  1. Spin, then give way (TICKET_WAIT), when "serving" has not moved for
 *     TICKET_SPIN pauses.  spin: never (the reference ticket lock).  yield:
 *     sched_yield().  park (default): the next in line yields (it must stay
 *     runnable: nobody would wake it), after 16 budgets rather than one since
 *     the yield itself is what takes it off the CPU just before its turn; the
 *     others sleep on a futex on the lock word.  Instead of the unlocker,
 *     each waiter served in this slow path wakes the one behind it, which
 *     then has a whole critical section to get back on a CPU; the chain
 *     reaches every parked waiter, since every hand-over to a waiter ends
 *     here.  Spin-then-park as in glibc and LiTL, the wake-up moved out of
 *     unlock to the successor as in time-published locks.
 *  2. A bounded line (TICKET_QUEUE, default: the CPUs we may run on).  More
 *     tickets in line than CPUs means some ticket's holder is not running, so
 *     the last in line withdraws its ticket (safe: no one holds a later one)
 *     and waits outside, drawing again when the line is shorter.  Unlike
 *     preemptable ticket locks, no one is passed over for this: only the
 *     tail leaves.  Outside, under "park", a thread sleeps after the spin
 *     budget, not on the lock word (it changes with every acquisition, so a
 *     futex wait there returns at once) but on a sequence word of a small
 *     per-process table hashed by lock, whose futex queue is FIFO; a sleep
 *     lasts at most 1 ms, which bounds what a wake missed (or sent from
 *     another process, which cannot reach us) can cost.
 *  3. Lending a stalled turn.  Once a waiter has seen the line stall, it sets
 *     TS_SLOW and unlocks mark the turn they hand over (TS_HANDOFF): the
 *     waiter served must claim it with a CAS.  A turn unclaimed for the spin
 *     budget belongs to a waiter that is not running; a thread holding no
 *     ticket (outside the line, or the last in line, withdrawing) may then
 *     hold the lock in its place (TS_BORROWED) and its unlock hands the turn
 *     back.  The waiter keeps its ticket, so no ticket is ever skipped: that
 *     is what makes this safe where skipping a ticket is not (a skipped
 *     waiter that sleeps through 16,384 acquisitions would see its old
 *     ticket number served again, and think it was its turn).
 *  4. Taking turns: a thread that has had 128 acquisitions in a row while
 *     others sleep (or wait) outside steps out, wakes the one that has slept
 *     longest and sleeps in its place.  Without this the threads that happen
 *     to be running keep the short line to themselves until the scheduler
 *     preempts them (min/max acquisitions per thread fell to 0.2 at 16
 *     threads on 2 CPUs); with it, threads go through the line in turn, and
 *     the sleepers cost no CPU.
 *
 * What is not FIFO, then: entry into a full line (sleepers are woken in
 * order, but a thread arriving meanwhile may take the place), and lent turns (a waiter that is not running waits one more
 * critical section per lend; a running one claims its turn within
 * nanoseconds, before the spin budget runs out).  TICKET_QUEUE=0 turns 2-4
 * off: strict FIFO.  In fast mode (no stall seen) none of this costs anything:
 * hand-overs are not marked and waiters do not claim.
 *
 * Why no lost wake-up: a waiter parks only after setting TS_SLOW with a
 * fetch-or, and only if that fetch-or saw it two or more tickets from being
 * served; the futex then sleeps only while the word is still what it saw.
 * The waiter behind ours sees its turn come only through the unlock store
 * that made us owner; if its fetch-or came first, our acquiring load (which
 * reads that store's word, "next" half included) sees TS_SLOW and we wake it;
 * if the store came first, its fetch-or returns a word in which it is next
 * in line, and it does not sleep.  Only a waiter served here clears TS_SLOW,
 * and only when at most one ticket is behind its own (that one it wakes).
 * Withdrawing (2, 3) takes only the last ticket, behind which no one can be
 * parked.  The futex calls use the shared (not _PRIVATE) form, so waiters in
 * other processes are woken too: four bytes do not tell us whether the lock
 * was initialised PTHREAD_PROCESS_SHARED.
 */
#include "slowpath.h"

#include "misuse.h"
#include "stats.h"

#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct ts_delay_entry {
	uint32_t tag;      /* ts_lock_hash() of the owning lock, 0 when unused */
	uint32_t delay;    /* fixed point, TS_DELAY_SHIFT fractional bits */
	uint16_t streak;   /* acquisitions since we last stepped out of line */
	uint16_t crowded;  /* acquisitions left in which to take turns with outsiders */
	uint16_t lent_turn; /* "serving" | 1 of the turn we last borrowed, 0: none */
	uint16_t reborrows; /* borrows of that same turn in a row */
};

/* A thread may borrow the same stalled turn again without waiting out the
 * spin budget this many times in a row. */
#define TS_REBORROW_MAX 64

/* Taking turns: after this many acquisitions in a row while others wait
 * outside the line, a thread steps out and yields its CPU to one of them. */
#ifndef TS_TURN_BATCH
#define TS_TURN_BATCH 128
#endif
/*
 * The next in line waits this many spin budgets before it yields.  A yield
 * takes it off its CPU, and if the lock is released meanwhile, the line
 * stalls until it is scheduled again: under load from other processes that
 * costs milliseconds.  Spinning keeps it on the CPU, ready for the hand-over.
 */
#ifndef TS_NEXT_IN_LINE_PATIENCE
#define TS_NEXT_IN_LINE_PATIENCE 64
#endif
/* How long, in acquisitions, stepping out once makes a thread take turns. */
#define TS_CROWDED_MEMORY 4096

static __thread struct ts_delay_entry delay_table[1u << TS_HASH_BITS_MAX];

uint32_t ts_lock_hash(const void *lock)
{
	/* Fibonacci hashing; the low bits of an address carry little, drop them. */
	uint64_t h = ((uint64_t)(uintptr_t)lock >> 2) * 0x9e3779b97f4a7c15ull;
	uint32_t hash = (uint32_t)(h >> 32);

	return hash != 0 ? hash : 1;
}

static struct ts_delay_entry *delay_entry(const struct ts_config *cfg, uint32_t hash)
{
	if (cfg->table == TS_TABLE_SINGLE || cfg->hash_bits == 0)
		return &delay_table[0];
	return &delay_table[hash >> (32 - cfg->hash_bits)];
}

static uint32_t entry_delay(const struct ts_config *cfg, const struct ts_delay_entry *entry,
                            uint32_t hash)
{
	bool owned = cfg->table == TS_TABLE_SINGLE || entry->tag == hash;

	if (!owned || entry->delay == 0)
		return cfg->delay_min << TS_DELAY_SHIFT;
	return entry->delay;
}

uint32_t ts_delay_of(const struct ts_config *cfg, const void *lock)
{
	uint32_t hash = ts_lock_hash(lock);

	return entry_delay(cfg, delay_entry(cfg, hash), hash);
}

static void pause_for(uint64_t pauses)
{
	while (pauses-- > 0)
		__builtin_ia32_pause();
}

/* Pauses before the next poll, given the tickets ahead of ours (holder included). */
static uint64_t backoff_pauses(const struct ts_config *cfg, uint32_t delay, uint16_t ahead)
{
	switch (cfg->delay_mode) {
	case TS_DELAY_OFF:
		return 1;
	case TS_DELAY_FIXED:
		return (uint64_t)cfg->delay_factor * ahead;
	default:
		if (ahead <= 1)
			return 1; /* next in line: poll tightly */
		return ((uint64_t)delay * (ahead - 1u)) >> TS_DELAY_SHIFT;
	}
}

static uint32_t delay_after_poll(const struct ts_config *cfg, uint32_t delay, bool overslept)
{
	uint32_t min = cfg->delay_min << TS_DELAY_SHIFT;
	uint32_t max = cfg->delay_max << TS_DELAY_SHIFT;

	if (overslept) {
		if (delay >= 2 * TS_DELAY_ONE) {
			uint32_t step = delay / 32;

			delay -= step > TS_DELAY_ONE ? step : TS_DELAY_ONE;
		}
		return delay < min ? min : delay;
	}
	delay += TS_DELAY_ONE / 7;
	return delay > max ? max : delay;
}

static long futex(ts_word_t *lock, int op, uint32_t val, uint32_t bitset)
{
	return syscall(SYS_futex, lock, op, val, NULL, NULL, bitset);
}

/* Each ticket waits on its own futex bit, so a wake reaches one waiter (mod 32). */
static uint32_t ticket_bit(uint16_t ticket)
{
	return 1u << ((ticket / TS_TICKET_STEP) & 31);
}

/* Sleeps until woken, unless we are (or become) next in line meanwhile. */
static void park(ts_word_t *lock, uint16_t ticket)
{
	/*
	 * SEQ_CST fetch-or: a full barrier ordered against the unlock store that
	 * makes our predecessor owner; see "Why no lost wake-up" above.
	 */
	uint32_t word = __atomic_fetch_or(lock, TS_SLOW, __ATOMIC_SEQ_CST) | TS_SLOW;

	if (ts_tickets_between(ts_serving(word), ticket) >= 2)
		futex(lock, FUTEX_WAIT_BITSET, word, ticket_bit(ticket));
}

/*
 * We own the lock, served in the slow path, and @word is the value our
 * acquiring load (or claim) read.  Wake the waiter behind us if anyone may be
 * parked.
 */
static void wake_successor(ts_word_t *lock, uint16_t ticket, uint32_t word)
{
	uint16_t successor = (uint16_t)(ticket + TS_TICKET_STEP);

	if (!(word & TS_SLOW))
		return;
	/*
	 * With at most one waiter behind us, only that waiter can be parked, and
	 * we wake it now: the flag can go, and the lock is back in fast mode.  A
	 * failed exchange (a ticket was drawn meanwhile) leaves it set, which
	 * costs a futex call later, no more.
	 */
	if (ts_tickets_between(ticket, ts_next(word)) <= 2)
		__atomic_compare_exchange_n(lock, &word, word & ~TS_SLOW, false,
		                            __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	futex(lock, FUTEX_WAKE_BITSET, INT_MAX, ticket_bit(successor));
}

/*
 * Where threads waiting outside the line sleep.  Not on the lock word: it
 * changes with every acquisition, so a futex wait on it would return at once.
 * A small table of sequence words, hashed by lock, shared by the locks that
 * hash alike; private to the process, so a sleep is also bounded by
 * TS_OUTSIDE_NAP_NS (a waker in another process cannot reach us, and no wake
 * can be lost for longer than that).  The futex queue is FIFO, so outsiders
 * are let in in the order they went to sleep.
 */
#define TS_PARKING_BITS 6
#define TS_OUTSIDE_NAP_NS 1000000L

static struct parking_slot {
	uint32_t seq;      /* bumped by each wake */
	uint32_t sleepers; /* threads asleep, or about to be */
} __attribute__((aligned(64))) parking[1u << TS_PARKING_BITS];

static struct parking_slot *parking_slot_of(uint32_t hash)
{
	return &parking[hash >> (32 - TS_PARKING_BITS)];
}

/*
 * Sleeps until woken or TS_OUTSIDE_NAP_NS pass.  With @only_if_full, not if
 * the line has room by the time we are counted among the sleepers.
 */
static void outside_sleep(ts_word_t *lock, uint32_t hash, uint32_t queue_max, bool only_if_full)
{
	struct parking_slot *slot = parking_slot_of(hash);
	uint32_t seq = __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE);
	uint32_t word;

	/* SEQ_CST: ordered before the word's re-check, against the waker's bump. */
	__atomic_fetch_add(&slot->sleepers, 1, __ATOMIC_SEQ_CST);
	word = __atomic_load_n(lock, __ATOMIC_RELAXED);
	if (!only_if_full || ts_tickets_between(ts_serving(word), ts_next(word)) >= queue_max) {
		struct timespec nap = { 0, TS_OUTSIDE_NAP_NS };

		syscall(SYS_futex, &slot->seq, FUTEX_WAIT_PRIVATE, seq, &nap, NULL, 0);
	}
	__atomic_fetch_sub(&slot->sleepers, 1, __ATOMIC_RELAXED);
}

/* Wakes the outsider that has slept longest; false if none sleeps. */
static bool outside_wake_one(uint32_t hash)
{
	struct parking_slot *slot = parking_slot_of(hash);

	if (__atomic_load_n(&slot->sleepers, __ATOMIC_SEQ_CST) == 0)
		return false;
	__atomic_fetch_add(&slot->seq, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &slot->seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return true;
}

/* The queue has not moved for the spin budget: give the CPU away.  True if parked. */
static bool give_way(const struct ts_config *cfg, ts_word_t *lock, uint16_t ticket,
                     uint16_t ahead)
{
	if (cfg->wait == TS_WAIT_PARK && ahead >= 2) {
		park(lock, ticket);
		return true;
	}
	sched_yield();
	return false;
}

bool ts_unlock_slow(ts_word_t *lock, uint32_t word)
{
	uint16_t serving = ts_serving(word);
	uint16_t low;

	if (ts_word_is_free(word))
		return false;
	if (word & TS_BORROWED) {
		low = serving | TS_HANDOFF; /* give the turn back to its waiter */
	} else if (word & TS_HANDOFF) {
		return false; /* the served waiter has not claimed: no one holds the lock */
	} else {
		low = (uint16_t)(serving + TS_TICKET_STEP);
		/* Slow mode: the waiter served must claim, so that a stalled turn can be lent. */
		if ((word & TS_SLOW) && ts_next(word) != low)
			low |= TS_HANDOFF;
	}
	/*
	 * RELEASE pairs with the ACQUIRE polls, claims and borrows in
	 * wait_in_line() and wait_outside(), as in ts_unlock().  No one else
	 * writes "serving" while we hold the lock, borrowed or not.
	 */
	__atomic_store_n(ts_serving_half(lock), low, __ATOMIC_RELEASE);
	return true;
}

struct waiter {
	const struct ts_config *cfg;
	ts_word_t *lock;
	uint32_t hash;                /* ts_lock_hash(lock) */
	struct ts_delay_entry *entry; /* this thread's entry for the lock */
	uint32_t delay;
	bool tune;                    /* TS_DELAY_AUTO */
	struct ts_wait_stats st;      /* for TICKET_STATS (stats.c) */
};

enum line_result {
	SERVED,        /* our ticket is served: we own the lock */
	BORROWED,      /* we withdrew our ticket and hold a stalled turn */
	STEPPED_OUT,   /* too many in line: we withdrew our ticket */
	TOOK_TURNS,    /* we had a long run: we withdrew to let an outsider in */
};

static bool is_last_in_line(uint32_t word, uint16_t ticket)
{
	return ts_next(word) == (uint16_t)(ticket + TS_TICKET_STEP);
}

/*
 * Withdraws our ticket, the last one drawn when we read @word, and with it
 * sets the flags in @set; false, with @word reloaded, when the word has
 * changed since.
 */
static bool withdraw(ts_word_t *lock, uint32_t *word, uint32_t set)
{
	uint32_t withdrawn = *word - TS_NEXT_STEP;

	if (set & TS_BORROWED)
		withdrawn &= ~TS_HANDOFF;
	/*
	 * Safe: no one holds a later ticket.  ACQUIRE: the word read may be the
	 * one that serves us, or one whose turn we borrow (pairs with the RELEASE
	 * store of the unlock that wrote it).
	 */
	return __atomic_compare_exchange_n(lock, word, withdrawn | set, false, __ATOMIC_ACQUIRE,
	                                   __ATOMIC_ACQUIRE);
}

/*
 * May we borrow the turn @word shows unclaimed?  When it has been unclaimed
 * for the spin budget (its waiter is not running), or when it is the very
 * turn we borrowed last time and still unclaimed (a bounded number of times
 * in a row, so a waiter that runs again gets it back quickly).
 */
static bool may_borrow(const struct waiter *w, uint32_t word, uint64_t stalled)
{
	if ((word & (TS_HANDOFF | TS_BORROWED)) != TS_HANDOFF || w->cfg->queue_max == 0)
		return false;
	if (stalled >= w->cfg->spin_budget)
		return true;
	return w->entry->lent_turn == (ts_serving(word) | 1u) && w->entry->reborrows < TS_REBORROW_MAX;
}

static void note_borrow(struct waiter *w, uint32_t word)
{
	uint16_t turn = ts_serving(word) | 1u; /* | 1: never equal to "none" (0) */

	w->entry->reborrows = w->entry->lent_turn == turn ? w->entry->reborrows + 1 : 0;
	w->entry->lent_turn = turn;
	w->st.borrows++;
}

/*
 * Waits in line until @ticket is served (SERVED, with the word read at that
 * moment in @served), or withdraws the ticket: to hold a stalled turn
 * (BORROWED), when more tickets are in line than TICKET_QUEUE allows
 * (STEPPED_OUT), or to take turns (TOOK_TURNS).
 */
static enum line_result wait_in_line(struct waiter *w, uint16_t ticket, uint32_t *served)
{
	const struct ts_config *cfg = w->cfg;
	uint32_t seen_low = UINT32_MAX; /* "serving" and its flags, when last seen moving */
	uint64_t stalled = 0;           /* pauses since then */
	uint32_t word;

	/* ACQUIRE pairs with the RELEASE store in ts_unlock() that serves us. */
	word = __atomic_load_n(w->lock, __ATOMIC_ACQUIRE);
	for (;;) {
		uint16_t ahead = ts_tickets_between(ts_serving(word), ticket);
		uint64_t pauses;

		if (ahead == 0 && !(word & (TS_HANDOFF | TS_BORROWED)))
			break;
		if (ahead == 0 && (word & TS_HANDOFF)) {
			/* Claim our turn.  ACQUIRE pairs as above. */
			if (__atomic_compare_exchange_n(w->lock, &word, word & ~TS_HANDOFF, false,
			                                __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
				word &= ~TS_HANDOFF;
				break;
			}
			continue;
		}
		/* From here on, either tickets are ahead of ours or our turn is lent out. */
		if (cfg->queue_max != 0 && ahead >= cfg->queue_max && is_last_in_line(word, ticket)) {
			/*
			 * More tickets in line than CPUs to run their holders: some
			 * holder ahead is not running, and a thread queued behind it
			 * would burn its time slice.  The last in line steps out.
			 */
			if (withdraw(w->lock, &word, TS_SLOW))
				return STEPPED_OUT;
			continue;
		}
		if (ahead > 0 && w->entry->streak >= TS_TURN_BATCH && is_last_in_line(word, ticket) &&
		    (w->entry->crowded > 0 ||
		     __atomic_load_n(&parking_slot_of(w->hash)->sleepers, __ATOMIC_RELAXED) > 0)) {
			/*
			 * Others wait outside, and we have had our run: without this,
			 * the threads that happen to be on a CPU keep the line to
			 * themselves until the scheduler preempts them.
			 */
			if (withdraw(w->lock, &word, 0))
				return TOOK_TURNS;
			continue;
		}
		if ((word & 0xffffu) != seen_low) {
			seen_low = word & 0xffffu;
			stalled = 0;
		}
		if (ahead > 0 && is_last_in_line(word, ticket) && may_borrow(w, word, stalled)) {
			/*
			 * The waiter served has not claimed its turn for a while: it is
			 * not running.  Rather than wait for the scheduler to bring it
			 * back, hold the lock in its place (giving up our own ticket,
			 * which only the last in line can); our unlock hands the turn
			 * back, so that waiter keeps its place.
			 */
			if (withdraw(w->lock, &word, TS_BORROWED)) {
				note_borrow(w, word);
				return BORROWED;
			}
			continue;
		}
		if (cfg->wait != TS_WAIT_SPIN &&
		    stalled >= cfg->spin_budget * (ahead <= 1 ? TS_NEXT_IN_LINE_PATIENCE : 1)) {
			/* Slow mode from now on: unlocks mark turns, so stalled ones can be lent. */
			if (!(word & TS_SLOW))
				__atomic_fetch_or(w->lock, TS_SLOW, __ATOMIC_RELAXED);
			if (give_way(cfg, w->lock, ticket, ahead))
				w->st.parks++;
			else
				w->st.yields++;
			stalled = 0;
			word = __atomic_load_n(w->lock, __ATOMIC_ACQUIRE); /* pairs as above */
			continue;
		}
		pauses = backoff_pauses(cfg, w->delay, ahead);
		pause_for(pauses);
		stalled += pauses;
		word = __atomic_load_n(w->lock, __ATOMIC_ACQUIRE); /* pairs as above */
		w->st.polls++;
		if (w->tune && ahead >= 2)
			w->delay = delay_after_poll(cfg, w->delay, ts_serving(word) == ticket);
	}
	*served = word;
	return SERVED;
}

/*
 * Holding no ticket, waits until the line is shorter than TICKET_QUEUE (and
 * returns false: draw a ticket), or borrows a stalled turn (returns true: we
 * hold the lock).  With @sleep_first, goes to sleep before looking (we have
 * just given our place to a sleeper we woke).
 */
static bool wait_outside(struct waiter *w, bool sleep_first)
{
	const struct ts_config *cfg = w->cfg;
	uint32_t seen_low = UINT32_MAX;
	uint64_t stalled = 0, spun = 0;

	if (sleep_first) {
		/* The line has room (we just left it): that is the point, sleep anyway. */
		outside_sleep(w->lock, w->hash, cfg->queue_max, false);
		w->st.parks++;
	}
	for (;;) {
		/* ACQUIRE: a borrow below takes the lock from the unlock that wrote this. */
		uint32_t word = __atomic_load_n(w->lock, __ATOMIC_ACQUIRE);
		uint16_t in_line = ts_tickets_between(ts_serving(word), ts_next(word));
		uint64_t pauses;

		if (in_line < cfg->queue_max)
			return false;
		if ((word & 0xffffu) != seen_low) {
			seen_low = word & 0xffffu;
			stalled = 0;
		}
		if (may_borrow(w, word, stalled)) {
			uint32_t lent = (word & ~TS_HANDOFF) | TS_BORROWED;

			/* ACQUIRE pairs with the RELEASE store of the unlock that wrote @word. */
			if (__atomic_compare_exchange_n(w->lock, &word, lent, false, __ATOMIC_ACQUIRE,
			                                __ATOMIC_RELAXED)) {
				note_borrow(w, word);
				return true;
			}
			continue;
		}
		if (cfg->wait != TS_WAIT_SPIN && spun >= cfg->spin_budget) {
			if (cfg->wait == TS_WAIT_PARK) {
				outside_sleep(w->lock, w->hash, cfg->queue_max, true);
				w->st.parks++;
			} else {
				sched_yield();
				w->st.yields++;
			}
			spun = 0;
			continue;
		}
		pauses = backoff_pauses(cfg, w->delay, in_line);
		pause_for(pauses);
		spun += pauses;
		stalled += pauses;
	}
}

void ts_lock_slow(ts_word_t *lock, uint16_t ticket, const void *caller)
{
	const struct ts_config *cfg = ts_config();
	uint32_t hash = ts_lock_hash(lock);
	struct waiter w = {
		.cfg = cfg,
		.lock = lock,
		.hash = hash,
		.entry = delay_entry(cfg, hash),
		.tune = cfg->delay_mode == TS_DELAY_AUTO,
	};
	enum line_result result;
	uint32_t word;

	/* More tickets ahead than threads exist: report the word (misuse.c), then wait anyway. */
	word = __atomic_load_n(lock, __ATOMIC_RELAXED);
	ts_misuse_check_line(lock, word, ticket, caller);
	w.st.ahead = ts_tickets_between(ts_serving(word), ticket);
	if (cfg->stats != NULL)
		ts_stats_wait_begin(&w.st); /* the wait's start time; the previous record's bookkeeping */
	w.delay = entry_delay(cfg, w.entry, hash);
	if (cfg->table == TS_TABLE_HASHED && w.entry->tag != hash)
		*w.entry = (struct ts_delay_entry){ .tag = hash, .delay = w.delay };

	while ((result = wait_in_line(&w, ticket, &word)) != SERVED && result != BORROWED) {
		uint32_t old;

		bool gave_place = false;

		w.entry->streak = 0;
		if (result == STEPPED_OUT)
			w.entry->crowded = TS_CROWDED_MEMORY;
		else if (cfg->wait == TS_WAIT_PARK)
			gave_place = outside_wake_one(hash); /* our place, to the longest asleep */
		if (result == TOOK_TURNS && !gave_place)
			sched_yield(); /* to an outsider on our CPU, if there is one */
		if (wait_outside(&w, gave_place)) {
			result = BORROWED;
			break;
		}
		/* ACQUIRE pairs with the RELEASE store in ts_unlock(), as in ts_lock(). */
		old = __atomic_fetch_add(lock, TS_NEXT_STEP, __ATOMIC_ACQUIRE);
		ticket = ts_next(old);
		if (ts_word_is_free(old)) {
			word = old + TS_NEXT_STEP;
			break;
		}
	}

	w.entry->tag = hash;
	if (w.tune)
		w.entry->delay = w.delay;
	if (w.entry->streak < UINT16_MAX)
		w.entry->streak++;
	if (w.entry->crowded > 0)
		w.entry->crowded--;
	if (result != BORROWED) {
		w.entry->reborrows = 0;
		/* Not only under "park": another process sharing the lock may park. */
		wake_successor(lock, ticket, word);
	}
	if (cfg->stats != NULL)
		ts_stats_record(lock, ticket, caller, &w.st, w.tune ? w.delay : 0);
}
