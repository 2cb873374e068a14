/*
 * slowpath.c - waiting in line for a contended ticket: the protocol on the
 * lock word (claims, withdrawing, lending, taking turns) and the policy that
 * decides, between two looks at the word, whether to keep spinning, sleep,
 * step out of line or hold a stalled turn.
 *
 * The seeds' backoff and delay tuner are in backoff.c, where waiters sleep and
 * who wakes them in parking.c, the report of long waits in stall.c.
 *
 * Waiting when threads are not running.  In user space the holder, or the
 * waiter whose turn comes next, may be off its CPU (preempted by our own
 * threads or by other processes), and then everyone behind it in a plain
 * ticket lock spins away whole time slices.  We read how others cope before
 * choosing: glibc's adaptive mutex and LiTL's spin-then-park locks,
 * time-published locks (a waiter that is not running is passed over),
 * preemptable ticket locks (ticket order given up after a timeout), and TWA
 * (waiting away from the lock word).  What we chose, each piece within the
 * 4-byte word and with unlock kept to a load and a store when no flag is set:
 *
 *  1. Spin, then sleep (TICKET_WAIT, parking.c): a waiter whose line has not
 *     moved for TICKET_SPIN pauses sleeps, with a real wake-up and a bounded,
 *     growing nap.  The next in line spins TS_NEXT_IN_LINE_PATIENCE budgets
 *     first: it is the one that must be on a CPU when the turn comes.
 *  2. A bounded line (TICKET_QUEUE, default: the CPUs we may run on).  More
 *     tickets in line than CPUs means some ticket's holder is not running, so
 *     the last in line withdraws its ticket (safe: no one holds a later one)
 *     and waits outside, drawing again when the line is shorter.  Only the
 *     tail leaves; no one is passed over.
 *  3. Lending a stalled turn.  A waiter that sees the line stall for half a
 *     millisecond switches on lending mode (TS_LENDING), which stays on while
 *     stalls keep coming (TS_STALL_MEMORY_MS): unlocks then mark the turn
 *     they hand over (TS_HANDOFF) and the waiter served claims it with a CAS.
 *     A turn unclaimed for the spin budget belongs to a waiter that is not
 *     running; a thread holding no ticket (outside the line, or the last in
 *     line, withdrawing) may hold the lock in its place (TS_BORROWED), and its
 *     unlock hands the turn back.  The waiter keeps its ticket, so no ticket
 *     is ever skipped: a skipped waiter that slept through 16,384
 *     acquisitions would see its old ticket number served again.  Lending is
 *     what keeps a lock moving when other processes take the CPUs: without
 *     it, every hand-over to a waiter that lost its CPU costs a time slice.
 *  4. Taking turns: a thread that has had TS_TURN_BATCH acquisitions in a row
 *     while others wait outside steps out, wakes the one that has slept
 *     longest and sleeps in its place; otherwise the threads that happen to be
 *     running keep the short line to themselves.
 *
 * Why lending mode is not always on: a claim is one more atomic on the lock's
 * cache line per contended hand-over; without stalls there is nothing to lend.
 * Why sleepers have a flag of their own (TS_SLEEPERS) rather than sharing
 * lending mode's: a wake-up is a system call, and lending mode may stay on for
 * a long time while no one sleeps.
 *
 * What is not FIFO, then: entry into a full line (outsiders are woken in
 * order, but a thread arriving meanwhile may take the place), and lent turns
 * (a waiter that is not running waits one more critical section per lend; a
 * running one claims its turn within nanoseconds).  TICKET_QUEUE=0 turns 2-4
 * off: strict FIFO.
 *
 * Why no lost wake-up.  A waiter sleeps only after setting TS_SLEEPERS with a
 * full barrier (fetch-or), and only if the word that fetch-or returned says
 * its turn has not come; the futex then sleeps only while the word is still
 * that value.  A waiter two or more from the front is woken by the waiter
 * served just before it: that one becomes owner through an unlock store (or
 * its claim), and its acquiring load or claim reads a word at least as new as
 * the sleeper's fetch-or if the fetch-or came first, so it sees TS_SLEEPERS
 * and wakes it; if the unlock store came first, the fetch-or returns a word in
 * which the sleeper is next in line, and it does not sleep as a far waiter.
 * The next in line is woken by the unlock that serves it, which sees
 * TS_SLEEPERS when its load follows the fetch-or; when its load came first
 * and its store lands after the sleeper's futex check (the unlocking thread
 * interrupted between the two), the wake-up is missed and the nap's timeout
 * ends the sleep (parking.c).  TS_SLEEPERS is cleared only by a waiter served
 * here with at most one ticket behind its own, which it wakes.  Withdrawing
 * takes only the last ticket, behind which no one can be asleep.
 */
#include "slowpath.h"

#include "backoff.h"
#include "misuse.h"
#include "parking.h"
#include "stall.h"
#include "stats.h"

#include <sched.h>
#include <stdbool.h>

/*
 * A thread may borrow the same stalled turn again, without waiting out the
 * spin budget, this many times in a row; then it leaves the turn unclaimed
 * for a claim window (1 / 2^TS_CLAIM_WINDOW_SHIFT of the spin budget) before
 * it borrows it again, and counts from zero.  The waiter whose turn it is
 * claims it back between two borrows as soon as it runs (the turn is handed
 * back at each unlock), so the bound and the window only serve a waiter that
 * runs but is slow to look.  A whole spin budget at each borrow past the
 * bound, as before, cost 4 threads beside 2 CPU-bound processes a sixth of
 * their throughput: there a waiter loses its CPU for milliseconds at a time.
 */
#define TS_REBORROW_MAX 4096
#define TS_CLAIM_WINDOW_SHIFT 3

/*
 * Taking turns: after this many acquisitions in a row while others wait
 * outside the line, a thread steps out and yields its CPU to one of them.
 * Each turn costs a wake-up: 128 spent a third of the throughput of 4
 * threads on 2 CPUs (work 100) on them; 512 keeps fairness (min/max
 * acquisitions per thread over half a second) at 0.7 or more there.
 */
#ifndef TS_TURN_BATCH
#define TS_TURN_BATCH 512
#endif
/* Pauses between two yields while a thread stays for the outsider it woke. */
#define TS_STAY_PAUSES 32
/*
 * The next in line spins this many spin budgets before it sleeps: it is the
 * thread that must be on a CPU when the turn comes, and a sleeper needs a
 * wake-up and a CPU before it can take it.  The others sleep after one.
 */
#ifndef TS_NEXT_IN_LINE_PATIENCE
#define TS_NEXT_IN_LINE_PATIENCE 4
#endif
/*
 * A line that has not moved for this long (from the first spin budget without
 * progress) switches lending mode on.  Long enough that an interrupt, a page
 * fault or a slow critical section does not (in lending mode each hand-over
 * costs a claim: about a third of the throughput of two threads taking the
 * lock in turn with nothing else to do); short beside a scheduler time slice,
 * which is what a waiter preempted by another process costs.
 */
#define TS_LEND_AFTER_NS 500000ull
/* How long, in acquisitions, stepping out once makes a thread take turns. */
#define TS_CROWDED_MEMORY 4096

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
		/* Lending mode: the waiter served must claim, so that a stalled turn can be lent. */
		if ((word & TS_LENDING) && ts_next(word) != low)
			low |= TS_HANDOFF;
	}
	/*
	 * RELEASE pairs with the ACQUIRE polls, claims and borrows in
	 * wait_in_line() and wait_outside(), as in ts_unlock().  No one else
	 * writes "serving" while we hold the lock, borrowed or not.
	 */
	__atomic_store_n(ts_serving_half(lock), low, __ATOMIC_RELEASE);
	/* The waiter we serve may be asleep (it set TS_SLEEPERS before sleeping). */
	if ((word & TS_SLEEPERS) && (low & TS_TICKET_MASK) != ts_next(word))
		ts_wake_ticket(lock, low & TS_TICKET_MASK);
	return true;
}

struct waiter {
	const struct ts_config *cfg;
	ts_word_t *lock;
	const void *caller;           /* for the stall report */
	uint32_t hash;                /* ts_lock_hash(lock) */
	struct ts_delay_entry *entry; /* this thread's entry for the lock */
	uint32_t delay;
	uint32_t next_delay;          /* the next in line's (auto) */
	bool tune;                    /* TS_DELAY_AUTO or TS_DELAY_SERIES */
	uint64_t nap_ns;              /* the next sleep's bound */
	bool came_from_outside;       /* this acquisition waited outside the line */
	struct ts_stall_watch stall;
	struct ts_wait_stats st;      /* for TICKET_STATS (stats.c) */
	bool stats_look_due;          /* TICKET_STATS: the wait's timing starts at the next look */
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
 * turn we borrowed last time and still unclaimed: at once, but after
 * TS_REBORROW_MAX borrows in a row only once it has been left unclaimed for
 * the claim window.
 */
static bool may_borrow(const struct waiter *w, uint32_t word, uint64_t stalled)
{
	if ((word & (TS_HANDOFF | TS_BORROWED)) != TS_HANDOFF || w->cfg->queue_max == 0)
		return false;
	if (stalled >= w->cfg->spin_budget)
		return true;
	if (w->entry->lent_turn != (ts_serving(word) | 1u))
		return false;
	return w->entry->reborrows < TS_REBORROW_MAX ||
	       stalled >= (w->cfg->spin_budget >> TS_CLAIM_WINDOW_SHIFT);
}

static void note_borrow(struct waiter *w, uint32_t word)
{
	uint16_t turn = ts_serving(word) | 1u; /* | 1: never equal to "none" (0) */
	bool again = w->entry->lent_turn == turn && w->entry->reborrows < TS_REBORROW_MAX;

	w->entry->reborrows = again ? w->entry->reborrows + 1 : 0;
	w->entry->lent_turn = turn;
	w->st.borrows++;
}

/*
 * The line has not moved for TS_LEND_AFTER_NS: switch lending mode on (unless
 * the line is unbounded: strict FIFO lends nothing), and remember the stall.
 * Returns the word as it now is, as far as we know.
 */
static uint32_t note_stall(struct waiter *w, uint32_t word)
{
	ts_note_stall();
	if (w->cfg->queue_max != 0 && !(word & TS_LENDING))
		word = __atomic_fetch_or(w->lock, TS_LENDING, __ATOMIC_RELAXED) | TS_LENDING;
	return word;
}

/* Give the CPU away while the line does not move; true if we slept. */
static bool give_way(struct waiter *w, uint16_t ticket, uint16_t ahead)
{
	enum ts_sleep how;

	if (w->cfg->wait != TS_WAIT_PARK) {
		sched_yield();
		w->st.yields++;
		return false;
	}
	how = ts_sleep_in_line(w->lock, ticket, ahead <= 1, w->nap_ns);
	if (how == TS_SLEEP_SKIPPED)
		return false;
	w->st.parks++;
	w->nap_ns = ts_nap_after(w->nap_ns, how);
	return true;
}

/* @word serves @ticket, and the lock is ours: no turn to claim, none lent out. */
static bool served_outright(uint32_t word, uint16_t ticket)
{
	return ts_tickets_between(ts_serving(word), ticket) == 0 &&
	       !(word & (TS_HANDOFF | TS_BORROWED));
}

/*
 * TICKET_STATS: the wait's timing starts, at the first look after drawing a
 * ticket, or earlier when we are out of line or served before any look;
 * @served_at_once: that look found our turn come (no clock is read then, see
 * ts_stats_wait_begin()).
 */
static void stats_wait_begins(struct waiter *w, bool served_at_once)
{
	w->stats_look_due = false;
	ts_stats_wait_begin(&w->st, served_at_once);
}

/*
 * Waits in line until @ticket is served (SERVED, with the word read at that
 * moment in @inout_word), or withdraws the ticket: to hold a stalled turn
 * (BORROWED), when more tickets are in line than TICKET_QUEUE allows
 * (STEPPED_OUT), or to take turns (TOOK_TURNS).
 *
 * Starts from @inout_word as the fetch-add that drew @ticket left it (the
 * word it returned, plus our ticket), and looks at the lock only
 * after the first backoff: the critical section's data usually shares the
 * lock's cache line, and a look straight after drawing pulls the line away
 * from the holder in the middle of its critical section, so that its next
 * write waits for a transfer between CPUs.  Two such looks (a load for the
 * misuse check, then the first poll) held 2 threads with no work between
 * acquisitions to about 0.7x a plain ticket lock's throughput.  The kernel's
 * ticket locks do the same: they test the fetch-add's result, then pause
 * before their first load.
 */
static enum line_result wait_in_line(struct waiter *w, uint16_t ticket, uint32_t *inout_word)
{
	const struct ts_config *cfg = w->cfg;
	uint32_t seen_low = UINT32_MAX; /* "serving" and its flags, when last seen moving */
	uint64_t stalled = 0;           /* pauses since then */
	uint64_t next_check = cfg->spin_budget; /* stalled pauses at the next stall check */
	uint64_t stalled_since = 0;     /* ts_now_ns() at the first check since it moved */
	/*
	 * The fetch-add that drew our ticket, and every load of the word below,
	 * is ACQUIRE: pairs with the RELEASE store in ts_unlock() that serves us.
	 */
	uint32_t word = *inout_word;

	for (;;) {
		uint16_t ahead = ts_tickets_between(ts_serving(word), ticket);
		uint64_t pauses;

		if (served_outright(word, ticket))
			break;
		if (ahead == 0 && (word & TS_HANDOFF)) {
			/*
			 * Claim our turn: clear TS_HANDOFF with an atomic AND, not a
			 * CAS, so that tickets drawn meanwhile in the other half
			 * cannot make the claim fail (a borrower draws one just
			 * before it borrows the turn again, and would otherwise win
			 * every race).  Set when we cleared it, the flag says the turn
			 * was still ours to claim: no one else clears it but a
			 * borrower's CAS, which we then beat.  ACQUIRE pairs as above.
			 */
			if (__atomic_fetch_and(w->lock, ~TS_HANDOFF, __ATOMIC_ACQUIRE) & TS_HANDOFF) {
				/* Ours now: only the "next" half and its flags may move. */
				word = __atomic_load_n(w->lock, __ATOMIC_RELAXED);
				break;
			}
			word = __atomic_load_n(w->lock, __ATOMIC_ACQUIRE);
			continue;
		}
		/* From here on, either tickets are ahead of ours or our turn is lent out. */
		if (cfg->queue_max != 0 && ahead >= cfg->queue_max && is_last_in_line(word, ticket)) {
			/*
			 * More tickets in line than CPUs to run their holders: some
			 * holder ahead is not running, and a thread queued behind it
			 * would burn its time slice.  The last in line steps out.
			 */
			if (withdraw(w->lock, &word, TS_LENDING))
				return STEPPED_OUT;
			continue;
		}
		if (ahead > 0 && w->entry->streak >= TS_TURN_BATCH && is_last_in_line(word, ticket) &&
		    (w->entry->crowded > 0 || ts_outsiders(w->hash) > 0)) {
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
			stalled_since = 0;
			next_check = cfg->spin_budget;
			w->nap_ns = ts_nap_first_ns;
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
		if (stalled >= next_check) {
			/* Once per spin budget without progress, and after every sleep. */
			uint64_t now = ts_now_ns();

			next_check = stalled + cfg->spin_budget;
			if (stalled_since == 0)
				stalled_since = now;
			else if (now - stalled_since >= TS_LEND_AFTER_NS)
				word = note_stall(w, word);
			ts_stall_check(&w->stall, cfg, w->lock, w->caller, ahead, word, false, now);
			if (cfg->wait != TS_WAIT_SPIN &&
			    stalled >= (uint64_t)cfg->spin_budget *
			                       (ahead <= 1 ? TS_NEXT_IN_LINE_PATIENCE : 1)) {
				/*
				 * Give way without spinning again first: after a
				 * sleep that saw no progress, the next look comes
				 * straight back here and sleeps twice as long.
				 * After a yield (TICKET_WAIT=yield), spin a budget
				 * again.
				 */
				next_check = give_way(w, ticket, ahead) ? stalled
				                                          : stalled + cfg->spin_budget;
				word = __atomic_load_n(w->lock, __ATOMIC_ACQUIRE); /* pairs as above */
				continue;
			}
		}
		pauses = ts_backoff_pauses(cfg, w->delay, w->next_delay, ahead);
		if (pauses == 0)
			pauses = 1; /* a fixed factor with our turn lent out: still count time */
		ts_pause_for(pauses);
		stalled += pauses;
		word = __atomic_load_n(w->lock, __ATOMIC_ACQUIRE); /* pairs as above */
		w->st.polls++;
		if (__builtin_expect(w->stats_look_due, 0))
			stats_wait_begins(w, served_outright(word, ticket));
		if (w->tune && ahead >= 2)
			w->delay = ts_delay_after_poll(cfg, w->delay, ts_serving(word) == ticket);
		else if (ahead == 1 && cfg->delay_mode == TS_DELAY_AUTO)
			w->next_delay = ts_next_delay_after_poll(cfg, w->next_delay,
			                                         ts_serving(word) == ticket);
	}
	*inout_word = word;
	return SERVED;
}

/*
 * We left the line and woke an outsider to take our place: keep our CPU,
 * yielding it, until a ticket is drawn (the outsider came in) or for one spin
 * budget, and only then sleep.  A CPU we leave idle stays idle until the
 * wake-up reaches it, which on a VM takes tens of microseconds (the host
 * must wake the idle virtual CPU); sleeping at once left a fifth of the CPU
 * time of 4 threads on 2 CPUs idle, and the throughput 0.6x a mutex's.  A
 * yield hands our CPU straight to the woken thread when it is queued there.
 */
static void stay_until_taken(const struct waiter *w)
{
	uint16_t next = ts_next(__atomic_load_n(w->lock, __ATOMIC_RELAXED));

	for (uint64_t spun = 0; spun < w->cfg->spin_budget; spun += TS_STAY_PAUSES) {
		if (ts_next(__atomic_load_n(w->lock, __ATOMIC_RELAXED)) != next)
			return;
		ts_pause_for(TS_STAY_PAUSES);
		sched_yield();
	}
}

/*
 * Holding no ticket, waits until the line is shorter than TICKET_QUEUE (and
 * returns false: draw a ticket), or borrows a stalled turn (returns true: we
 * hold the lock).  With @sleep_first, goes to sleep before looking (we have
 * just given our place to a sleeper we woke).  Spins for the spin budget
 * only after arriving or being woken; after a nap that ran out, one look and
 * back to sleep, for twice as long.
 */
static bool wait_outside(struct waiter *w, bool sleep_first)
{
	const struct ts_config *cfg = w->cfg;
	uint32_t seen_low = UINT32_MAX;
	uint64_t stalled = 0, spun = 0;
	uint64_t nap_ns = ts_nap_first_ns;
	uint64_t spin_allowance = cfg->spin_budget;

	if (sleep_first) {
		enum ts_sleep how;

		stay_until_taken(w);
		/* The line has room (we just left it): that is the point, sleep anyway. */
		how = ts_sleep_outside(w->lock, w->hash, cfg->queue_max, false, nap_ns);

		w->st.parks++;
		nap_ns = ts_nap_after(nap_ns, how);
		if (how == TS_SLEEP_TIMEOUT)
			spin_allowance = 0;
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
		if (spun >= spin_allowance) {
			ts_stall_check(&w->stall, cfg, w->lock, w->caller, 0, word, true, ts_now_ns());
			if (cfg->wait == TS_WAIT_PARK) {
				enum ts_sleep how = ts_sleep_outside(w->lock, w->hash, cfg->queue_max,
				                                     true, nap_ns);

				if (how != TS_SLEEP_SKIPPED)
					w->st.parks++;
				nap_ns = ts_nap_after(nap_ns, how);
				/* Woken: someone made room, look for the spin budget. */
				spin_allowance = how == TS_SLEEP_TIMEOUT ? 0 : cfg->spin_budget;
			} else if (cfg->wait == TS_WAIT_YIELD) {
				sched_yield();
				w->st.yields++;
			}
			spun = 0;
			if (cfg->wait != TS_WAIT_SPIN)
				continue;
		}
		pauses = ts_backoff_pauses(cfg, w->delay, w->next_delay, in_line);
		ts_pause_for(pauses);
		spun += pauses;
		stalled += pauses;
	}
}

/*
 * We own the lock, served here, and @word is the value our acquiring load
 * (or claim) read.  Wake the waiter behind us if it may be asleep, and drop
 * the flags no longer needed.  A thread that came in from outside and finds
 * no one behind it passes the room on to the next outsider: outsiders come
 * in one after another when the line empties (thread churn), without every
 * acquisition paying a wake-up inside the critical section (which, made at
 * each acquisition with no one behind, cost a third of the throughput of 8
 * threads on 2 busy CPUs).
 */
static void after_served(const struct waiter *w, uint16_t ticket, uint32_t word)
{
	uint16_t behind = (uint16_t)(ts_tickets_between(ticket, ts_next(word)) - 1u);
	uint32_t drop = 0;

	if (word & TS_SLEEPERS) {
		/*
		 * With at most one waiter behind us, only that waiter can be asleep,
		 * and we wake it now: the flag can go.
		 */
		if (behind <= 1)
			drop |= TS_SLEEPERS;
	}
	if ((word & TS_LENDING) && !ts_stalled_recently())
		drop |= TS_LENDING;
	/*
	 * A failed exchange (a ticket was drawn meanwhile) leaves the flags set,
	 * which costs a wake-up or a claim later, no more.  Before the wake-up:
	 * a successor about to sleep then sees the word changed.
	 */
	if (drop != 0)
		__atomic_compare_exchange_n(w->lock, &word, word & ~drop, false, __ATOMIC_RELAXED,
		                            __ATOMIC_RELAXED);
	if (word & TS_SLEEPERS)
		ts_wake_ticket(w->lock, (uint16_t)(ticket + TS_TICKET_STEP));
	if (w->came_from_outside && behind == 0 && w->cfg->wait == TS_WAIT_PARK)
		ts_wake_outsider(w->hash);
}

void ts_lock_slow(ts_word_t *lock, uint32_t drawn, const void *caller)
{
	const struct ts_config *cfg = ts_config();
	uint32_t hash = ts_lock_hash(lock);
	struct waiter w = {
		.cfg = cfg,
		.lock = lock,
		.caller = caller,
		.hash = hash,
		.tune = ts_delay_tuned(cfg),
		.nap_ns = ts_nap_first_ns,
	};
	enum line_result result;
	uint16_t ticket = ts_next(drawn);
	uint32_t word = drawn + TS_NEXT_STEP; /* as our fetch-add left it */

	/* More tickets ahead than threads exist: report the word (misuse.c), then wait anyway. */
	ts_misuse_check_line(lock, word, ticket, caller);
	w.st.ahead = ts_tickets_between(ts_serving(word), ticket);
	w.stats_look_due = cfg->stats != NULL;
	w.entry = ts_delay_entry_claim(cfg, hash, &w.delay, &w.next_delay);

	while ((result = wait_in_line(&w, ticket, &word)) != SERVED && result != BORROWED) {
		uint32_t old;
		bool gave_place = false;

		w.entry->streak = 0;
		if (result == STEPPED_OUT)
			w.entry->crowded = TS_CROWDED_MEMORY;
		else if (cfg->wait == TS_WAIT_PARK)
			gave_place = ts_wake_outsider(hash); /* our place, to the longest asleep */
		if (result == TOOK_TURNS && !gave_place)
			sched_yield(); /* to an outsider on our CPU, if there is one */
		w.came_from_outside = true;
		if (w.stats_look_due) /* out of line before the first look: timed from here */
			stats_wait_begins(&w, false);
		if (wait_outside(&w, gave_place)) {
			result = BORROWED;
			break;
		}
		/* ACQUIRE pairs with the RELEASE store in ts_unlock(), as in ts_lock(). */
		old = __atomic_fetch_add(lock, TS_NEXT_STEP, __ATOMIC_ACQUIRE);
		ticket = ts_next(old);
		word = old + TS_NEXT_STEP;
		if (ts_word_is_free(old))
			break;
	}
	if (w.stats_look_due) /* served or lent a turn before the first look */
		stats_wait_begins(&w, false);

	w.entry->tag = hash;
	if (w.tune) {
		w.entry->delay = w.delay;
		w.entry->next_delay = w.next_delay;
	}
	if (w.entry->streak < UINT16_MAX)
		w.entry->streak++;
	if (w.entry->crowded > 0)
		w.entry->crowded--;
	if (result != BORROWED) {
		w.entry->reborrows = 0;
		/* Not only under "park": another process sharing the lock may sleep. */
		after_served(&w, ticket, word);
	}
	if (cfg->stats != NULL)
		ts_stats_record(lock, ticket, caller, &w.st, w.tune ? w.delay : 0);
}
