/*
 * slowpath.c - the contended lock: who may take a free lock, the queue, and
 * the policy that decides, between two looks at the word, whether to keep
 * spinning or sleep.  The word and its invariants are in ticket_lock.h; the
 * seeds' backoff and delay tuner in backoff.c; sleeping and waking in
 * parking.c; the report of long waits in stall.c.
 *
 * Why not a plain ticket lock.  In a ticket lock every acquisition under
 * contention is a hand-over to the next in line, on another CPU: two or three
 * transfers of the lock's cache line, where glibc's test-and-set lets the
 * thread that has just released take the lock again with the line still in
 * its cache.  Two threads on two CPUs ran at 0.2x glibc.  And a ticket lock
 * hands the lock to the next in line whether or not it is running: behind a
 * waiter that lost its CPU, everyone waits for the scheduler.
 *
 * What we do instead: a ticket queue for order, a lock byte for ownership,
 * and bounded stealing between the two (after the kernel's paravirt
 * qspinlock, whose arriving waiters may steal the lock until the head of its
 * queue asks them to stop, and after concurrency restriction, GCR and
 * Malthusian locks, which keep only as many threads circulating as the lock
 * can serve):
 *
 *  1. Steal.  A thread that finds the lock free takes it, queue or no queue,
 *     unless the head of the queue is watching (TS_WATCHING) and has been
 *     bypassed TICKET_BYPASS times since it began to: then it draws a ticket
 *     (after a rest, step 4).  The fast path's exchange takes a free lock
 *     before it sees the queue: it then decides holding the lock, before
 *     any critical section, and gives the lock back (as an unlock would) if
 *     it may not keep it (keep_or_give_back()).
 *     So the thread that has just released keeps the lock in bursts of up to
 *     TICKET_BYPASS + 1 acquisitions with the cache line at hand.
 *  2. The head of the queue sets TS_WATCHING when it first looks, and takes
 *     the lock as soon as it sees it free, whatever the count.  Once the count
 *     is reached, stealers queue and the lock is the head's at the next
 *     release: a running waiter at the head is bypassed at most
 *     TICKET_BYPASS times after its first look, TICKET_BYPASS + 1 counting
 *     the holder it began watching under (the model's I6); and on a saturated lock for about
 *     TICKET_BYPASS_NS: a head that has watched that long, bypassed
 *     TS_REST_MIN_BYPASSED times or more, fills the count itself
 *     (head_out_of_patience()), so that its wait is bounded in time too,
 *     not only by steals that may each take a cache-line transfer or more.
 *  3. Restriction.  Behind the head, a waiter sleeps at once, unless it is
 *     the next after a watching head and no one sleeps (the head will take
 *     the lock within a hand-over; it then spins up to TS_NEXT_SPIN_NS: a
 *     hand-over is no reason to sleep).  So while the lock is
 *     saturated the threads that circulate are the holder and the head; the
 *     others sleep, and are woken one at a time, in ticket order, as each
 *     becomes the head (TS_WAKE_NEXT): every thread gets its burst in turn,
 *     each lasting about one wake-up (the holder steals until the head it
 *     woke watches); with two threads, TICKET_BYPASS acquisitions, and then
 *     the rest (step 4) makes each turn TICKET_REST_US long.  A next
 *     that spun while others slept had bursts of a few dozen acquisitions
 *     against the sleepers' thousands: fairness 0.3 at 3 threads.
 *     At low contention the queue is empty or short and nothing is
 *     restricted.
 *  4. Rest.  Restriction down to one thread.  A thread that the bound
 *     stops (the head watches and the threads outside the queue took the
 *     lock TICKET_BYPASS times since: the lock was never free long enough
 *     for a running head) sleeps TICKET_REST_US before it draws a ticket,
 *     woken by no one, once per acquisition.  The head takes the lock and,
 *     with no one watching and the others asleep, runs alone with the cache
 *     line in its cache until the rester comes back, queues, watches, and
 *     stops it in turn.  Two threads on two CPUs ran at 40 M/s taking turns
 *     every burst, 110 M/s taking turns every rest, where one thread alone
 *     runs at 97 (bench/locks, work 0); beside two CPU hogs, 22 against 72,
 *     because a parked head's wake-ups had lined the two threads' time
 *     slices up, so that they ran, and contended, at the same time.  A
 *     rester holds no ticket: no bound above counts it, and its wait is at
 *     most TICKET_REST_US longer.  The lock is saturated whenever the bound
 *     stops someone: at low contention the head takes the lock at the first
 *     release it sees, and no one rests.  The rests alternate: a thread
 *     that rested last on the lock, stopped again, queues without resting,
 *     and the other thread, stopped in its turn, rests (rest_is_due()).
 *     A rest judges itself: halfway through, the rester marks the free
 *     lock byte (TS_REST_MARK), which any acquisition overwrites; a mark
 *     still there at the rest's end means no one took the lock in its
 *     second half, so the rest held up everyone (the rester holds what
 *     the others need: the only permit of a semaphore), and the thread
 *     skips its next rests on that lock, more after each such rest
 *     (rest()).  With one permit at 3 threads every rest had stalled the
 *     program: 0.63x glibc, 0.95x with the skips.
 *  5. Escape.  A head that stops running while watching would stop everyone
 *     behind the count.  The last waiter in the queue, seeing the head leave
 *     the lock free for TS_ESCAPE_NS (a running head looks every
 *     TS_HEAD_MAX_PAUSES pauses at most), gives its ticket back and takes the
 *     lock in one compare-and-swap, clearing TS_WATCHING: stealing goes on
 *     until the head runs and watches again.  (A head that does not watch
 *     stops no stealer, but one asleep, or a ticket whose waiter has
 *     vanished, would leave the queue behind it waiting: the last in line
 *     passes it the same way.)  So a waiter that is not running
 *     holds up the running ones for at most TS_ESCAPE_NS (while one of them
 *     is last in the queue), and a head that sleeps (holder preempted or a
 *     long critical section) clears TS_WATCHING before it does.
 *  6. Turn.  The head that a take woke may not get a CPU: with more threads
 *     than CPUs the scheduler often queues it behind the very thread that
 *     woke it, which then steals on, no one watching, until its time slice
 *     ends.  At 16 threads on two CPUs a tenth of the turns lasted 0.3 to 3
 *     ms and held most of the run, and who got them decided who got the
 *     lock: fairness 0.1-0.5.  So a thread that has stolen past a queue
 *     whose head does not watch for TICKET_TURN_US (its steals counted, the
 *     clock read every TS_TURN_CHECK_EVERY of them) yields its CPU once, at
 *     its next lock, holding nothing, and its turn starts over; a wait in
 *     the queue starts it over too.  A head waiting for that CPU runs,
 *     watches, and the bound above takes over.  Only steals past a queue
 *     of two or more count: a lock with no one waiting never yields, and
 *     with one waiter two threads take turns by the rest (step 4); there
 *     the yield only handed the CPU to outside load (TS_TURN_MIN_QUEUE).
 *  7. Doze before queueing (TICKET_DOZE_US, 50 us).  A thread that finds the
 *     lock held past a queue whose head does not watch (woken and not yet
 *     running, or asleep) sleeps TICKET_DOZE_US, holding nothing, woken by
 *     no one, and then tries to steal again; after TS_DOZES_MAX dozes it
 *     draws a ticket.  Behind such a head a ticket means sleeping until
 *     every waiter ahead has had its wake-up, one at a time, and a wake-up
 *     puts the woken thread on the CPU of the thread that woke it, which
 *     runs on, while the CPU of the thread that went to sleep in the queue
 *     idles: the scheduler does not move a thread that ran a moment ago to
 *     an idle CPU.  At 8 threads on two CPUs with short private work
 *     (bench/locks, work 100) a third of the CPU time was idle, and 98% of
 *     the idle stretches (0.2 to 5 ms each) began with one to three of the
 *     program's threads ready to run on the other CPU (perf sched).  A doze
 *     ends by a timer on the dozer's own CPU, which runs it there: the CPUs
 *     were busy 93-98% of the time, and 8 and 16 threads ran 1.6x faster
 *     where the lock's line moves in 50 ns, as fast as before where it
 *     takes 250 (the busy CPU buys nothing there).  It replaced a spin of
 *     up to 3 us,
 *     which served long private work (16 threads, work 1000: with neither,
 *     the queue never emptied and the CPUs idled a tenth of the time, 0.8x
 *     pthread_mutex) but spun the CPU away at work 100.  Only on a lock that
 *     comes free between acquisitions: its last head that watched was
 *     bypassed fewer than TS_DOZE_MAX_BYPASSED times before it took the lock
 *     (a hint kept by lock hash, head_bypassed_by_lock).  On a saturated
 *     lock (work 0 and 30, where most watching heads were bypassed 16 to 31
 *     times) the sleeping queue is the restriction (step 3): dozing there
 *     took a sixth off at 16 threads.  Behind a watching head the lock is
 *     saturated and the ticket is the restriction; with an empty queue the
 *     thread becomes the head, which runs; after a rest it queues, so that
 *     two threads take turns (step 4).
 *
 *  8. Active set (TICKET_ACTIVE, as many places as CPUs; active.c).
 *     Before it may draw a ticket, a thread that failed to take a saturated
 *     lock passes a gate that lets at most TICKET_ACTIVE threads contend;
 *     the others sleep in a FIFO line, holding nothing, and are rotated in
 *     by turns.  While the line is not empty and the lock saturated, a
 *     thread outside the set does not steal: the exchange's free lock is
 *     given back (keep_or_give_back()) and the thread goes to the gate.
 *     Nothing else here changes.
 *
 * Strict FIFO (TICKET_QUEUE=0, TICKET_BYPASS=0): no steal, no escape, no
 * restriction, no rest: a thread keeps a free lock only with an empty
 * queue (one that its exchange took past a queue is given back), and
 * waiters spin with the seeds' proportional backoff (delay x waiters
 * ahead) before sleeping, as the seed series' ticket lock does.
 *
 * Shared words (TS_SHARED; ticket_lock.h): none of the above.  A ticket, a
 * watch, a sleeper's flag are state in the word that the thread holding it
 * must serve; in a word shared between processes, a process that exits, is
 * killed, execs or is stopped while one of its threads waits leaves that
 * state to the others, who then wait for good (exit, kill, exec) or for the
 * whole stop (issue 40, items 1 and 2: the strict FIFO queue these words
 * had before).  And a FIFO hand-over goes to the next in line whether or
 * not it runs: with more threads than CPUs every release waited for a
 * sleeping waiter's wake-up (item 9; doc/benchmarks.md).  So a shared word
 * is a test-and-set lock (wait_shared()):
 * waiters look with an exponential backoff and take the lock when they see
 * it free, and after a spin budget sleep on the word, announced by
 * TS_SHARED_SLEEPERS, which the next release clears, waking one sleeper
 * (Drepper's mutex 2); a woken thread takes the lock keeping the bit.  A
 * waiter that vanishes or stops leaves at most that bit: one wake-up of no
 * one, or of a thread that is not running, which costs the other sleepers
 * at most their nap.  No order is kept, and none is promised: like glibc's
 * lock, a waiter may be passed any number of times; every sleep is
 * bounded (parking.h), so a waiter looks again at least every
 * TS_NAP_MAX_NS.  None of the queue's settings applies (TICKET_QUEUE,
 * TICKET_BYPASS, TICKET_REST_US, TICKET_TURN_US, TICKET_DOZE_US,
 * TICKET_ACTIVE, TICKET_DELAY); TICKET_WAIT, TICKET_SPIN, TICKET_STALL_MS
 * and TICKET_STATS do.
 *
 * A word becomes shared by pthread_spin_init(PTHREAD_PROCESS_SHARED), or,
 * initialised private, when a sleeper of ours finds its wake-up served by
 * a release in another process (become_shared(); issue 40, item 8): it
 * lies in shared memory and is used by two processes, whose private
 * sleeping tables cannot wake each other's sleepers.  Tickets drawn before
 * drain: their holders keep their turn (they sleep on the word from then
 * on), and no new ticket is drawn.
 */
#include "slowpath.h"

#include "active.h"
#include "backoff.h"
#include "fork.h"
#include "log.h"
#include "misuse.h"
#include "parking.h"
#include "probes.h"
#include "stall.h"
#include "stats.h"

#include <sched.h>
#include <stdbool.h>

/*
 * A watching head that leaves the lock free this long is not running.  Long
 * beside its looks (TS_HEAD_MAX_PAUSES pauses apart, about a microsecond),
 * short beside a scheduler time slice (milliseconds), which is what waiting
 * for it would cost.
 */
#ifndef TS_ESCAPE_NS
#define TS_ESCAPE_NS 20000ull
#endif
/*
 * The head's longest pause between two looks while it watches.  A holder
 * whose steals reach TICKET_BYPASS queues, and the lock then stays free until
 * the head looks: this pause is that gap, after every burst.  64 pauses is
 * about a microsecond here, as long as a burst of 64 steals with no work
 * between them (the bound was 63 when it was measured); 256 left the lock
 * idle most of the time at two threads (17 against 45 M/s, bench/locks, two
 * threads, work 0; doc/benchmarks.md).
 */
#ifndef TS_HEAD_MAX_PAUSES
#define TS_HEAD_MAX_PAUSES 64u
#endif
/*
 * The next after a watching head spins this long before it sleeps: the head
 * takes the lock within a hand-over, and then we are the head.  Twice
 * TS_ESCAPE_NS, so that the last in line sees a stalled head first.
 */
#define TS_NEXT_SPIN_NS (2 * TS_ESCAPE_NS)
/*
 * The head spins this many spin budgets without seeing the lock change hands
 * before it sleeps: it is the thread that must be on a CPU when the lock
 * comes free.  Others in strict FIFO sleep after one.
 */
#ifndef TS_HEAD_PATIENCE
#define TS_HEAD_PATIENCE 4
#endif

/* Steals between two looks at the clock, for the turn (step 6). */
#define TS_TURN_CHECK_EVERY 64u
/*
 * The shortest queue whose steals count for the turn.  Two threads beside
 * two CPU hogs, work 30 (bench/locks, medians of 7 interleaved runs): 23.4
 * M/s counting from two waiters up, 20.0 from one, 24.2 with no turn: a
 * yield with one waiter gave the CPU to a hog, not to the other thread,
 * which the rest already serves.
 */
#ifndef TS_TURN_MIN_QUEUE
#define TS_TURN_MIN_QUEUE 2u
#endif

uint64_t ts_locks_made_shared;

/*
 * This thread's turn (step 6): its steals past a queue whose head did not
 * watch, on @lock, since @since_ns (0: not timed yet).  Thread-local: a
 * steal writes nothing shared for it, and reads the clock once every
 * TS_TURN_CHECK_EVERY steals.
 */
struct turn {
	ts_word_t *lock;
	uint32_t steals;
	bool yield_due; /* the next lock of @lock yields first */
	uint64_t since_ns;
};
static __thread struct turn turn __attribute__((tls_model("initial-exec")));

static void turn_starts_over(void)
{
	turn.steals = 0;
	turn.since_ns = 0;
	turn.yield_due = false;
}

/* Our steal of @lock found @before. */
static void turn_count_steal(const struct ts_config *cfg, ts_word_t *lock, uint32_t before)
{
	uint64_t now;

	if (cfg->turn_us == 0 || ts_queued(before) < TS_TURN_MIN_QUEUE || (before & TS_WATCHING))
		return; /* fewer than two wait (the rest serves two threads), or the bound applies */
	if (turn.lock != lock) {
		turn.lock = lock;
		turn_starts_over();
	}
	if (++turn.steals % TS_TURN_CHECK_EVERY != 0)
		return;
	now = ts_now_ns();
	if (turn.since_ns == 0)
		turn.since_ns = now;
	else if (now - turn.since_ns >= (uint64_t)cfg->turn_us * 1000u)
		turn.yield_due = true;
}

/*
 * Before stealing @lock, last seen as @*word: yields once if our turn is
 * over and a head still does not watch.  True if we yielded.
 */
static bool turn_end(const struct ts_config *cfg, ts_word_t *lock, uint32_t *word)
{
	turn_starts_over();
	if (turn.lock != lock || cfg->wait == TS_WAIT_SPIN || ts_queued(*word) == 0 ||
	    (*word & TS_WATCHING))
		return false;
	ts_yield_turn();
	*word = __atomic_load_n(lock, __ATOMIC_RELAXED);
	return true;
}

static bool strict_fifo(const struct ts_config *cfg, uint32_t word)
{
	(void)word;
	return cfg->bypass_max == 0;
}

static uint32_t queue_capacity(const struct ts_config *cfg)
{
	return cfg->queue_capacity;
}

/*
 * May a thread holding no ticket take the lock of @word now?  Not a shared
 * word's by the queue's rules: wait_shared() takes those, keeping the bits
 * a steal would clear (I5).
 */
static bool may_steal(const struct ts_config *cfg, uint32_t word)
{
	if (ts_is_held(word) || (word & TS_SHARED))
		return false;
	if (ts_queued(word) == 0)
		return true; /* a free lock, no one waiting */
	if (strict_fifo(cfg, word))
		return false;
	return !(word & TS_WATCHING) || ts_bypass(word) < cfg->bypass_max;
}

/*
 * @word as a steal leaves it: held, and counted if the head watches (I3).
 * With no one in the queue, no flag of a waiter can still be due, and the
 * ticket numbers restart: the next acquisition finds the word all zero
 * again (the fast path).
 */
static uint32_t stolen(uint32_t word)
{
	word = (word & ~TS_LOCK_BYTE) | TS_LOCKED;
	if (ts_queued(word) == 0)
		return word & (TS_SHARED | TS_LOCKED | TS_UNLOCK_DUE);
	if (word & TS_WATCHING)
		word += TS_BYPASS_ONE; /* below TS_BYPASS_MAX: may_steal() checked */
	return word;
}

static uint32_t with_next(uint32_t word, uint32_t next)
{
	return (word & ~TS_NEXT_FIELD) | ((next & TS_TICKET_MASK) << TS_NEXT_SHIFT);
}

static uint32_t with_head(uint32_t word, uint32_t head)
{
	return (word & ~TS_HEAD_FIELD) | ((head & TS_TICKET_MASK) << TS_HEAD_SHIFT);
}

/*
 * Takes the lock without a ticket while may_steal() allows it, starting from
 * @*word; false, with @*word as last seen, once it does not.
 */
static bool try_steal(const struct ts_config *cfg, ts_word_t *lock, uint32_t *word)
{
	while (may_steal(cfg, *word)) {
		uint32_t before = *word;

		/* ACQUIRE pairs with the RELEASE store in ts_unlock(). */
		if (__atomic_compare_exchange_n(lock, word, stolen(*word), false, __ATOMIC_ACQUIRE,
		                                __ATOMIC_RELAXED)) {
			turn_count_steal(cfg, lock, before);
			return true;
		}
	}
	return false;
}

/*
 * @word as a trylock takes it: as stolen() would, but past any queue, the
 * bound included (pthread_spin_trylock() may fail only while the lock is
 * held, whatever the queue: POSIX).  A watching head is still counted, up to
 * what the field holds: the count saturates at TS_BYPASS_MAX (I3), so that
 * a trylock past a head at the bound neither wraps it into a small count
 * (which would let stealers past again) nor carries into TS_WATCHING.
 */
static uint32_t trylocked(uint32_t word)
{
	if (word & TS_SHARED)
		return (word & ~TS_LOCK_BYTE) | TS_LOCKED; /* every other bit kept (I5) */
	if ((word & TS_WATCHING) && ts_bypass(word) >= TS_BYPASS_MAX)
		return (word & ~TS_LOCK_BYTE) | TS_LOCKED;
	return stolen(word);
}

/*
 * Takes the lock whenever it is free, even where a thread that draws tickets
 * would queue (the bound, strict FIFO, a process-shared lock, a head that
 * does not run): a trylock never waits, so it cannot wait its turn, and
 * failing on a free lock livelocks a caller that trylocks in a loop (one at
 * a higher priority on the head's CPU, the head never runs).  The head
 * bypassed this way is bypassed by its caller's choice, as with glibc.
 */
bool ts_trylock_slow(ts_word_t *lock, uint32_t seen)
{
	const struct ts_config *cfg = ts_config();

	while (!ts_is_held(seen)) {
		uint32_t before = seen;

		/* ACQUIRE pairs with the RELEASE store in ts_unlock(). */
		if (__atomic_compare_exchange_n(lock, &seen, trylocked(seen), false,
		                                __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
			if (may_steal(cfg, before))
				turn_count_steal(cfg, lock, before);
			return true;
		}
	}
	return false;
}

/*
 * Releases the lock we hold, last seen as @word, and serves the wake-up
 * requests the word carried (a compare-and-swap clears them with the lock
 * byte: a byte store would leave them).  TS_UNLOCK_DUE stays: it marks the
 * lock for good (stats.c, exact totals).  The unlock's slow path, and the
 * give-back of a lock our exchange took that we may not keep.
 */
static void release(ts_word_t *lock, uint32_t word)
{
	uint32_t hash = ts_lock_hash(lock);
	bool announced = false;

	for (;;) {
		/*
		 * A wake-up of a private word's sleeper is announced (parking.c,
		 * "Served elsewhere") before the compare-and-swap clears its
		 * request: a sleeper whose request is gone from the word then
		 * finds the announcement, if the release ran in its process.
		 */
		if (!announced && !(word & TS_SHARED) && (word & (TS_WAKE_HEAD | TS_WAKE_NEXT))) {
			ts_wake_announce(hash, ts_head(word));
			announced = true;
		}
		/* RELEASE pairs with the next holder's ACQUIRE, as in ts_unlock(). */
		if (__atomic_compare_exchange_n(lock, &word,
		                                word & ~(TS_LOCK_BYTE | TS_WAKE_HEAD | TS_WAKE_NEXT),
		                                false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			break;
	}
	/*
	 * The head cannot change while we hold the lock (only a taker moves it,
	 * and the lock byte was ours): @word names the waiter to wake.  On a
	 * shared word the request is TS_SHARED_SLEEPERS: one sleeper is woken.
	 */
	if (word & (TS_WAKE_HEAD | TS_WAKE_NEXT))
		ts_wake_ticket(lock, hash, word, ts_head(word));
}

bool ts_unlock_slow(ts_word_t *lock, uint16_t upper)
{
	bool checked = __atomic_load_n(&ts_unlock_checks, __ATOMIC_RELAXED);
	uint32_t word;

	if (!((uint32_t)upper << 16 & (TS_WAKE_HEAD | TS_WAKE_NEXT)) && !checked) {
		/*
		 * Only TICKET_STATS's TS_UNLOCK_DUE sent us here: release as the
		 * fast path does, without reading the lock byte either
		 * (ts_unlock() says why), and count.
		 */
		__atomic_store_n(ts_lock_byte_of(lock), 0, __ATOMIC_RELEASE);
		ts_stats_after_unlock(lock, false);
		return true;
	}
	word = __atomic_load_n(lock, __ATOMIC_RELAXED);
	if (!ts_is_held(word))
		return false; /* no one holds the lock */
	if (ts_lock_byte(word) == TS_LOCKED && !(word & (TS_WAKE_HEAD | TS_WAKE_NEXT)))
		__atomic_store_n(ts_lock_byte_of(lock), 0, __ATOMIC_RELEASE); /* as above */
	else
		release(lock, word);
	if (word & TS_UNLOCK_DUE)
		ts_stats_after_unlock(lock, checked);
	return true;
}

struct waiter {
	const struct ts_config *cfg;
	ts_word_t *lock;
	const void *caller;           /* for the stall report */
	uint32_t hash;                /* ts_lock_hash(lock) */
	struct ts_delay_entry *entry; /* this thread's entry for the lock */
	uint32_t delay;               /* the seeds' tuned delay, behind the head */
	uint32_t next_delay;          /* the head's pause between looks (auto) */
	bool tune;                    /* TS_DELAY_AUTO or TS_DELAY_SERIES */
	uint64_t nap_ns;              /* the next sleep's bound */
	struct ts_stall_watch stall;
	struct ts_wait_stats st;      /* for TICKET_STATS (stats.c) */
	bool stats_look_due;          /* TICKET_STATS: the wait's timing starts at the next look */
	uint8_t bypassed_at_fill;     /* 1 + the steals our watch had seen when we filled its count */
};

/* The values are the acquired probe's "how" (probes.h). */
enum how_taken {
	STOLEN = TS_PROBE_HOW_STOLEN,   /* taken with no ticket */
	AS_HEAD = TS_PROBE_HOW_HEAD,    /* taken at the head of the queue */
	ESCAPED = TS_PROBE_HOW_ESCAPED, /* taken by the last in line, its ticket given back */
};

/*
 * How many steals the last head of a lock that watched it let pass before it
 * took the lock, plus one (0: no head has watched it yet), by the lock's
 * hash; locks whose hashes share a slot share it.  The doze before queueing
 * (step 7) and the active set read it: a head bypassed fewer than
 * TS_DOZE_MAX_BYPASSED times found the lock free between acquisitions, one
 * bypassed TS_SATURATED_BYPASSED times or more watched a saturated lock.
 * Written at a watching head's take, and only when the count differs, so
 * that the line stays shared between the contenders that read it.  A hint:
 * a stale or shared value costs a doze or a sleep, never a bound.
 */
#define TS_HEAD_BYPASSED_SLOTS 64u
static uint8_t head_bypassed_by_lock[TS_HEAD_BYPASSED_SLOTS] __attribute__((aligned(64)));

static uint8_t *head_bypassed_slot(uint32_t hash)
{
	return &head_bypassed_by_lock[hash % TS_HEAD_BYPASSED_SLOTS];
}

/* Relaxed: a hint, read with no other access ordered after it. */
static uint32_t head_bypassed(uint32_t hash)
{
	return __atomic_load_n(head_bypassed_slot(hash), __ATOMIC_RELAXED);
}

static void note_head_bypassed(uint32_t hash, uint32_t bypassed)
{
	uint8_t *slot = head_bypassed_slot(hash);
	uint8_t value = (uint8_t)(bypassed + 1u);

	if (head_bypassed(hash) != value)
		__atomic_store_n(slot, value, __ATOMIC_RELAXED);
}

uint32_t ts_head_bypassed(const void *lock)
{
	return head_bypassed(ts_lock_hash(lock));
}

/*
 * Takes the free lock of @*word as the head of the queue: advances head past
 * our ticket, ends the watch, and asks our unlock to wake the new head if it
 * may sleep.  False, with @*word reloaded, when the word changed.
 */
static bool take_as_head(struct waiter *w, uint8_t ticket, uint32_t *word)
{
	uint32_t behind = ts_tickets_between(ticket, ts_next(*word)) - 1u;
	uint32_t taken = with_head(*word, ticket + 1u) & ~(TS_WATCHING | TS_BYPASS_MASK);

	/* Ours, we run; but on a converted word it may be a shared sleeper's (I5). */
	if (!(*word & TS_SHARED))
		taken &= ~TS_WAKE_HEAD;
	taken = (taken & ~TS_LOCK_BYTE) | TS_LOCKED;
	if (behind == 0)
		taken &= ~(TS_HEAD_FIELD | TS_NEXT_FIELD); /* the queue is empty: all zero again */
	if (*word & TS_SLEEPERS) {
		/* I4: with at most one behind us, it is the only one that may sleep. */
		if (behind > 0)
			taken |= TS_WAKE_NEXT;
		if (behind <= 1)
			taken &= ~TS_SLEEPERS;
	}
	/*
	 * ACQUIRE pairs with the RELEASE store in ts_unlock().  SEQ_CST on the
	 * read side too: ordered against a sleeper's fetch-or of TS_SLEEPERS
	 * (parking.c, ts_sleep_in_queue()).
	 */
	if (!__atomic_compare_exchange_n(w->lock, word, taken, false, __ATOMIC_SEQ_CST,
	                                 __ATOMIC_RELAXED))
		return false;
	if (*word & TS_WATCHING)
		note_head_bypassed(w->hash, w->bypassed_at_fill != 0 ? w->bypassed_at_fill - 1u
		                                                     : ts_bypass(*word));
	if (ts_queued(*word) >= queue_capacity(w->cfg))
		ts_wake_outside(w->hash); /* room in the queue now */
	return true;
}

/*
 * The last in line takes the free lock of @*word in the place of a head
 * that is not running, giving its ticket back (I2).  False, with
 * @*word reloaded, when the word changed.
 */
static bool escape(struct waiter *w, uint32_t *word)
{
	uint32_t taken = with_next(*word, ts_next(*word) - 1u) & ~(TS_WATCHING | TS_BYPASS_MASK);

	/*
	 * Only the head is left (I4): if it sleeps, its wake-up is already due
	 * (TS_WAKE_NEXT from the take that made it the head, or TS_WAKE_HEAD).
	 */
	if (ts_queued(taken) <= 1)
		taken &= ~TS_SLEEPERS;
	taken = (taken & ~TS_LOCK_BYTE) | TS_LOCKED;
	/* ACQUIRE pairs with the RELEASE store in ts_unlock(). */
	if (!__atomic_compare_exchange_n(w->lock, word, taken, false, __ATOMIC_ACQUIRE,
	                                 __ATOMIC_RELAXED))
		return false;
	if (ts_queued(*word) >= queue_capacity(w->cfg))
		ts_wake_outside(w->hash); /* room in the queue now (the model's R2) */
	return true;
}

/*
 * The head's bound in time (TICKET_BYPASS_NS; step 2).  The count alone
 * lets a running head wait for TICKET_BYPASS steals however long they take,
 * and at two threads that wait was the 1-in-1,000 (doc/benchmarks.md).  A
 * head that has watched for TICKET_BYPASS_NS while the lock stayed taken,
 * and had been bypassed TS_REST_MIN_BYPASSED times or more by then, fills
 * the count itself: the lock is saturated, and is the head's at the next
 * release; the stealer it stops rests (step 4), as at a count the steals
 * filled.  Bypassed fewer times, the lock comes free between acquisitions:
 * stopping the stealers there cost throughput (a hand-over at every stop,
 * and a rest would leave a CPU idle), so the count alone bounds that watch,
 * and the head looks every TS_HEAD_EAGER_PAUSES pauses at most from then on:
 * there the lock is free more often than not, and looks 64 pauses apart
 * missed it.  Decided once per watch, at the first look past
 * TICKET_BYPASS_NS.  True when the lock was saturated (the count filled, or
 * changed under us: we look again); @*word reloaded if the word changed.
 */
static bool head_out_of_patience(struct waiter *w, uint32_t *word)
{
	uint32_t bypassed = ts_bypass(*word);
	uint32_t filled = (*word & ~TS_BYPASS_MASK) | (w->cfg->bypass_max << TS_BYPASS_SHIFT);

	if (bypassed < TS_REST_MIN_BYPASSED)
		return false;
	/* Relaxed: a count; ownership is taken only by an ACQUIRE compare-and-swap. */
	if (__atomic_compare_exchange_n(w->lock, word, filled, false, __ATOMIC_RELAXED,
	                                __ATOMIC_RELAXED)) {
		*word = filled;
		w->bypassed_at_fill = (uint8_t)(bypassed + 1u);
	}
	return true;
}

/*
 * A sleep of ours on @w's private word ran out though a release served its
 * wake-up, in another process (parking.c, "Served elsewhere"): the lock is
 * shared between processes without having been initialised so (POSIX
 * leaves that undefined; glibc's lock serves it, and a real program does
 * it: libfabric's shared-memory provider).  This process's table cannot
 * wake the other's sleepers, nor theirs ours: every contended hand-over
 * would cost a sleeper its nap.  So the word becomes a shared one, for
 * every process at once (its waiters then sleep on the word itself: "Shared
 * words" above); the tickets drawn drain.  Counted, and said with
 * TICKET_VERBOSE.
 */
static void become_shared(struct waiter *w)
{
	uint32_t was = __atomic_fetch_or(w->lock, TS_SHARED, __ATOMIC_RELAXED);

	if (was & TS_SHARED)
		return;
	/* Our process's sleepers in the table: to the word, now, not at their naps' end. */
	ts_wake_all_of(w->hash);
	__atomic_fetch_add(&ts_locks_made_shared, 1, __ATOMIC_RELAXED);
	if (w->cfg->verbose)
		ts_log("lock %p (process-private) is served by another process: made process-shared "
		       "(word 0x%08x)", (void *)w->lock, was | TS_SHARED);
}

/* Sleep, or yield, as TICKET_WAIT says; how a sleep ended (SKIPPED: none). */
static enum ts_sleep give_way(struct waiter *w, uint8_t ticket, bool as_head)
{
	enum ts_sleep how;
	bool elsewhere = false;

	if (w->cfg->wait != TS_WAIT_PARK) {
		sched_yield();
		w->st.yields++;
		return TS_SLEEP_SKIPPED;
	}
	how = as_head ? ts_sleep_as_head(w->lock, w->hash, ticket, w->nap_ns, &elsewhere)
	              : ts_sleep_in_queue(w->lock, w->hash, ticket, w->nap_ns, &elsewhere);
	if (how == TS_SLEEP_SKIPPED)
		return how;
	if (elsewhere)
		become_shared(w);
	w->st.parks++;
	w->nap_ns = ts_nap_after(w->nap_ns, how);
	return how;
}

/*
 * TICKET_STATS: the wait's timing starts, at the first look after drawing a
 * ticket; @at_once: that look found the lock ours to take.
 */
static void stats_wait_begins(struct waiter *w, bool at_once)
{
	w->stats_look_due = false;
	ts_stats_wait_begin(&w->st, at_once);
}

/*
 * How many acquisitions, as the seeds' backoff counts them (holder
 * included), come before ours: behind the head, the tickets ahead; at the
 * head, the steals a watching head still allows.  So the head looks
 * rarely while the holder's burst has far to go, and tightly when it ends:
 * the seeds' proportional backoff, with the bypass count as the distance.
 */
uint32_t ts_acquisitions_ahead(const struct ts_config *cfg, uint32_t word, uint32_t pos)
{
	uint32_t bypass = ts_bypass(word);

	if (pos > 0 || !(word & TS_WATCHING) || bypass >= cfg->bypass_max)
		return pos + 1;
	return cfg->bypass_max - bypass + 1;
}

/*
 * Does a look from @pos, finding @word, tell the seeds' tuner anything about
 * how long the acquisitions ahead of us take?  Not when the lock is free and
 * we are behind the head: then we wait for the head's next look (up to
 * TS_HEAD_MAX_PAUSES), not for a holder.  Counted as busy, those looks raised
 * the delay by 1/7 unit each, a dozen or more per burst, against one
 * decrease when the head, pausing by that delay, found the lock free: the
 * delay ran up to 10-40 units (the right value, a steal's length, is under
 * 2), and the head overslept the end of every burst.  In strict FIFO a free
 * lock behind the head is the hand-over the seeds' ticket lock counts as
 * busy, and is counted so.
 */
static bool look_times_holder(bool strict, uint32_t pos, uint32_t word)
{
	return strict || pos == 0 || ts_is_held(word);
}

/*
 * The pauses before the next look, @ahead acquisitions before ours, with the
 * tuned @delay and @next_delay: the seeds' backoff, a head's capped at
 * TS_HEAD_MAX_PAUSES but in strict FIFO (slowpath.h; its tests call it).
 */
uint64_t ts_pauses_before_look(const struct ts_config *cfg, uint32_t delay, uint32_t next_delay,
                               uint32_t ahead, bool head, bool strict)
{
	uint64_t pauses = ts_backoff_pauses(cfg, delay, next_delay, (uint16_t)ahead);

	if (head && !strict && pauses > TS_HEAD_MAX_PAUSES)
		pauses = TS_HEAD_MAX_PAUSES; /* TS_ESCAPE_NS must not take a running head */
	return pauses != 0 ? pauses : 1;
}

/*
 * Waits in the queue, holding @ticket, until we take the lock: AS_HEAD, or
 * ESCAPED.  Starts from @word as our ticket's compare-and-swap left it.
 */
static enum how_taken wait_in_queue(struct waiter *w, uint8_t ticket, uint32_t word)
{
	const struct ts_config *cfg = w->cfg;
	const bool strict = strict_fifo(cfg, word);
	uint32_t seen = UINT32_MAX;     /* the word's moving parts when last seen moving */
	uint64_t stalled = 0;           /* pauses since then */
	uint64_t next_check = cfg->spin_budget;
	uint64_t free_since = 0;        /* the watching head left the lock free since (ns) */
	uint64_t next_since = 0;        /* we have spun behind a watching head since (ns) */
	uint64_t watch_since = 0;       /* we have watched as the head since (ns); UINT64_MAX: patience decided */
	bool eager = false;             /* patience decided, the lock not saturated: look often */

	for (;;) {
		uint32_t pos = ts_tickets_between(ts_head(word), ticket);
		uint32_t moving = word & (TS_LOCK_BYTE | TS_BYPASS_MASK | TS_HEAD_FIELD);
		uint32_t ahead;
		uint64_t pauses;

		if (pos == 0 && !ts_is_held(word)) {
			if (take_as_head(w, ticket, &word))
				return AS_HEAD;
			continue;
		}
		if (pos == 0 && !strict && !(word & TS_WATCHING)) {
			/* I3: the count starts now.  A failed exchange reloads the word. */
			uint32_t watching = (word | TS_WATCHING) & ~TS_BYPASS_MASK;

			if (__atomic_compare_exchange_n(w->lock, &word, watching, false,
			                                __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
				word = watching;
				watch_since = 0;
				eager = false;
				w->bypassed_at_fill = 0;
			}
			continue;
		}
		if (pos == 0 && (word & TS_WATCHING) && watch_since != UINT64_MAX &&
		    cfg->bypass_ns != 0 && !strict && ts_is_held(word) &&
		    ts_bypass(word) < cfg->bypass_max) {
			uint64_t now = ts_now_ns();

			if (watch_since == 0) {
				watch_since = now;
			} else if (now - watch_since >= cfg->bypass_ns) {
				watch_since = UINT64_MAX; /* decided, for this watch */
				eager = !head_out_of_patience(w, &word);
				continue;
			}
		}
		if (moving != seen) {
			seen = moving;
			stalled = 0;
			next_check = cfg->spin_budget;
			/*
			 * Behind the head, the lock changing hands is no reason to
			 * look again soon: our wake-up comes when we are the head.
			 * Only a wake-up starts the naps over (ts_nap_after()).
			 */
			if (pos == 0 || strict)
				w->nap_ns = ts_nap_first_ns;
		}
		if (pos > 0 && !strict) {
			bool head_watches = (word & TS_WATCHING) != 0;

			if (!ts_is_held(word) &&
			    ts_next(word) == (uint8_t)((ticket + 1u) & TS_TICKET_MASK)) {
				uint64_t now = ts_now_ns();

				if (free_since == 0) {
					free_since = now;
				} else if (now - free_since >= TS_ESCAPE_NS) {
					if (escape(w, &word))
						return ESCAPED;
					free_since = 0;
					continue;
				}
			} else {
				free_since = 0;
			}
			if (cfg->wait != TS_WAIT_SPIN && free_since == 0) {
				bool spin_on = pos == 1 && head_watches && !(word & TS_SLEEPERS);

				if (spin_on) {
					uint64_t now = ts_now_ns();

					if (next_since == 0)
						next_since = now;
					spin_on = now - next_since < TS_NEXT_SPIN_NS;
				}
				if (!spin_on) {
					/* As once per spin budget below, but once per sleep. */
					ts_stall_check(&w->stall, cfg, w->lock, w->caller, pos + 1, word,
					               false, ts_now_ns());
					give_way(w, ticket, false);
					next_since = 0;
					word = __atomic_load_n(w->lock, __ATOMIC_RELAXED);
					continue;
				}
			}
		}
		if (stalled >= next_check) {
			/* Once per spin budget without the lock changing hands. */
			uint64_t now = ts_now_ns();

			next_check = stalled + cfg->spin_budget;
			ts_stall_check(&w->stall, cfg, w->lock, w->caller, pos + 1, word, false, now);
			if (cfg->wait != TS_WAIT_SPIN &&
			    stalled >= (uint64_t)cfg->spin_budget * (pos == 0 ? TS_HEAD_PATIENCE : 1)) {
				/*
				 * After a nap that ran out, the next look comes
				 * straight back here and sleeps twice as long; after
				 * a yield, spin a budget again.  A wake-up is the lock
				 * changing hands even if the word looks the same (the
				 * holder that woke us may have taken it again at once):
				 * a budget of watching before any sleep, or a head
				 * woken by the unlock would sleep again at once and
				 * never count a steal.
				 */
				switch (give_way(w, ticket, pos == 0)) {
				case TS_SLEEP_TIMEOUT:
					next_check = stalled;
					break;
				case TS_SLEEP_WOKEN:
					seen = UINT32_MAX;
					break;
				default:
					next_check = stalled + cfg->spin_budget;
				}
				word = __atomic_load_n(w->lock, __ATOMIC_RELAXED);
				continue;
			}
		}
		ahead = ts_acquisitions_ahead(cfg, word, pos);
		pauses = ts_pauses_before_look(cfg, w->delay, w->next_delay, ahead, pos == 0, strict);
		if (eager && pos == 0 && (word & TS_WATCHING) && pauses > TS_HEAD_EAGER_PAUSES)
			pauses = TS_HEAD_EAGER_PAUSES;
		ts_pause_for(pauses);
		stalled += pauses;
		/* Relaxed: ownership is taken only by an ACQUIRE compare-and-swap. */
		word = __atomic_load_n(w->lock, __ATOMIC_RELAXED);
		w->st.polls++;
		{
			uint32_t now_pos = ts_tickets_between(ts_head(word), ticket);
			bool ours = now_pos == 0 && !ts_is_held(word) &&
			            (ahead == 1 || ts_acquisitions_ahead(cfg, word, 0) == 1);

			if (__builtin_expect(w->stats_look_due, 0))
				stats_wait_begins(w, ours);
			/* The seeds' tuner: "ours" is a look that came too late. */
			if (w->tune && ahead >= 2 && look_times_holder(strict, now_pos, word))
				w->delay = ts_delay_after_poll(cfg, w->delay, ours);
			else if (ahead == 1 && cfg->delay_mode == TS_DELAY_AUTO)
				w->next_delay = ts_next_delay_after_poll(cfg, w->next_delay, ours);
		}
	}
}

/*
 * Holding no ticket, the queue full: waits until there is room or the lock
 * may be stolen, with @*word as last seen.
 */
static void wait_outside(struct waiter *w, uint32_t *word)
{
	const struct ts_config *cfg = w->cfg;
	uint64_t spun = 0;
	uint64_t nap_ns = ts_nap_first_ns;

	while (ts_queued(*word) >= queue_capacity(cfg) && !may_steal(cfg, *word) &&
	       !(*word & TS_SHARED)) {
		if (spun >= cfg->spin_budget) {
			ts_stall_check(&w->stall, cfg, w->lock, w->caller, 0, *word, true, ts_now_ns());
			if (cfg->wait == TS_WAIT_PARK) {
				enum ts_sleep how = ts_sleep_outside(w->lock, w->hash,
				                                     queue_capacity(cfg), nap_ns);

				if (how != TS_SLEEP_SKIPPED)
					w->st.parks++;
				nap_ns = ts_nap_after(nap_ns, how);
			} else if (cfg->wait == TS_WAIT_YIELD) {
				sched_yield();
				w->st.yields++;
			}
			spun = 0;
		} else {
			uint64_t pauses = ts_backoff_pauses(cfg, w->delay, w->next_delay,
			                                    (uint16_t)ts_queued(*word));

			ts_pause_for(pauses != 0 ? pauses : 1);
			spun += pauses != 0 ? pauses : 1;
		}
		*word = __atomic_load_n(w->lock, __ATOMIC_RELAXED);
	}
}

/*
 * Was the lock of @hash free between two acquisitions, when a head last
 * watched it?  Its last watching head took it after fewer than
 * TS_DOZE_MAX_BYPASSED steals.  Unknown (no head has watched yet) is no.
 */
static bool lock_left_free_between_acquisitions(uint32_t hash)
{
	uint32_t seen = head_bypassed(hash);

	return seen != 0 && seen - 1u < TS_DOZE_MAX_BYPASSED;
}

/*
 * The same hint, for the active set (active.c): its last watching head was
 * bypassed TS_SATURATED_BYPASSED times or more.  Unknown is no here too.
 */
bool ts_lock_saturated(uint32_t hash)
{
	uint32_t seen = head_bypassed(hash);

	return seen != 0 && seen - 1u >= TS_SATURATED_BYPASSED;
}

/*
 * Found @word held before queueing: doze first (step 7)?  Only behind a
 * head that does not watch: woken and not yet running, or asleep, so that a
 * ticket drawn now means sleeping until every waiter ahead has had its
 * wake-up.  With an empty queue the arriving thread becomes a head that
 * runs and watches; behind a watching head the lock is saturated, and
 * sleeping in the queue there is the restriction (step 3).  Not after a
 * rest: the rester queues, so that the two threads take turns (step 4).
 * Not on a lock that the hint says is saturated, or that no head has
 * watched yet.  Only where waiters sleep (TICKET_WAIT=park).
 */
static bool doze_pays(const struct ts_config *cfg, uint32_t word, bool rested, uint32_t hash)
{
	return cfg->doze_us != 0 && cfg->wait == TS_WAIT_PARK && !rested &&
	       !strict_fifo(cfg, word) && ts_is_held(word) && ts_queued(word) != 0 &&
	       !(word & TS_WATCHING) && lock_left_free_between_acquisitions(hash);
}

/*
 * Does a thread that may not steal from @word rest before it queues?  When
 * the bound stopped it: the head watches and the threads outside the queue
 * have taken the lock TICKET_BYPASS times since, so the lock was never free
 * long enough for the head to take it (step 4 above).
 */
static bool must_rest(const struct ts_config *cfg, uint32_t word)
{
	return cfg->rest_us != 0 && !strict_fifo(cfg, word) && (word & TS_WATCHING) &&
	       ts_bypass(word) >= cfg->bypass_max;
}

/*
 * The end of this thread's last rest, and on which lock.  Thread-local, and
 * touched only at a rest and at the bound: a few times per TICKET_REST_US.
 */
struct last_rest {
	ts_word_t *lock;
	uint64_t ended_ns;
	uint32_t skips;     /* rests skipped after each rest on @lock (rest()) */
	uint32_t skips_due; /* of which still to skip */
};
static __thread struct last_rest last_rest __attribute__((tls_model("initial-exec")));

/*
 * Which thread rested last on a lock, by the lock's hash (locks whose hashes
 * share a slot share it): the address of that thread's rest_token, unique
 * among live threads.  Written at a rest, read at the bound.  A hint: a
 * stale or shared value costs one rest taken or skipped, never a bound.
 */
#define TS_LAST_RESTER_SLOTS 64u
static uintptr_t last_rester_by_lock[TS_LAST_RESTER_SLOTS] __attribute__((aligned(64)));
static __thread char rest_token __attribute__((tls_model("initial-exec")));

static uintptr_t *last_rester_slot(uint32_t hash)
{
	return &last_rester_by_lock[hash % TS_LAST_RESTER_SLOTS];
}

/*
 * Stopped by the bound on @lock, does this thread rest (step 4), or is it
 * the other's turn to?  The rests alternate: a thread that rested last on
 * this lock, stopped again within TS_REST_ALTERNATE rests' time of its own
 * rest's end, queues at once, and the other thread, stopped in its turn,
 * rests.  Who gets stopped is often not a coin flip: in some runs one
 * thread was stopped nearly every time (738 stops against 106 in 0.5 s),
 * rested for each of the other's turns of TICKET_REST_US and got a few
 * dozen acquisitions in its own (two threads, work 30: fairness 0.19-0.45
 * in the slowest of 7-9 runs; alternating, 0.70-0.89).  The limit keeps a
 * thread whose partner is never stopped (its head takes the lock before
 * the bound) resting now and then, not contending for good.
 */
static bool rest_is_due(const struct ts_config *cfg, ts_word_t *lock, uint32_t hash)
{
	/* Relaxed: a hint; the rest orders nothing. */
	bool rested_last = __atomic_load_n(last_rester_slot(hash), __ATOMIC_RELAXED) ==
	                           (uintptr_t)&rest_token &&
	                   last_rest.lock == lock &&
	                   ts_now_ns() - last_rest.ended_ns <
	                           (uint64_t)cfg->rest_us * 1000u * TS_REST_ALTERNATE;

	return !rested_last;
}

/*
 * Marks the free lock @lock: its lock byte becomes TS_REST_MARK, which any
 * acquisition overwrites.  False if it was not free with a plain byte.
 */
static bool mark_free_lock(ts_word_t *lock)
{
	uint32_t word = __atomic_load_n(lock, __ATOMIC_RELAXED);

	/* Relaxed: the mark is a free byte's value; it orders nothing. */
	return ts_lock_byte(word) == 0 &&
	       __atomic_compare_exchange_n(lock, &word, word | TS_REST_MARK, false,
	                                   __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* Was @lock acquired since mark_free_lock()?  Removes the mark if not. */
static bool acquired_since_mark(ts_word_t *lock)
{
	uint32_t word = __atomic_load_n(lock, __ATOMIC_RELAXED);

	while (ts_lock_byte(word) == TS_REST_MARK) {
		if (__atomic_compare_exchange_n(lock, &word, word & ~TS_LOCK_BYTE, false,
		                                __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return false;
	}
	return true;
}

/*
 * Rests on @lock, whose hash is @hash, and notes it: we rested last there.
 * False if this rest is skipped: after a rest in whose second half no one
 * took the lock (the rest held up everyone, as when the rester holds what
 * the others need, such as the only permit of a semaphore), this thread
 * skips its next rests on the lock, twice as many after each such rest (up
 * to TS_REST_SKIPS_MAX); a rest in which someone took the lock (it ran
 * alone, as the rest intends) takes an eighth off the count, at least one.
 * The rest's length hardly matters there (100 to 500 us cost the same): how
 * often it comes does.  Halfway, because the head takes the lock as the
 * rest begins, whatever happens after.
 */
static bool rest(const struct ts_config *cfg, ts_word_t *lock, uint32_t hash)
{
	bool marked, ran;

	if (last_rest.lock != lock) {
		last_rest.lock = lock;
		last_rest.ended_ns = 0; /* not rested last here (rest_is_due()) */
		last_rest.skips = 0;
		last_rest.skips_due = 0;
	}
	if (last_rest.skips_due > 0) {
		last_rest.skips_due--;
		return false;
	}
	__atomic_store_n(last_rester_slot(hash), (uintptr_t)&rest_token, __ATOMIC_RELAXED);
	TS_PROBE2(rest, lock, cfg->rest_us);
	ts_sleep_us(cfg->rest_us / 2u);
	marked = mark_free_lock(lock);
	ts_rest(cfg->rest_us - cfg->rest_us / 2u);
	ran = !marked || acquired_since_mark(lock);
	last_rest.ended_ns = ts_now_ns();
	if (ran)
		last_rest.skips -= (last_rest.skips + 7u) / 8u;
	else if (last_rest.skips < TS_REST_SKIPS_MAX)
		last_rest.skips = last_rest.skips * 2u + 1u;
	last_rest.skips_due = last_rest.skips;
	return true;
}

/*
 * Shared words (ticket_lock.h; the top of this file): waits as for a
 * test-and-set lock, starting from @word, until it takes the lock.  Looks
 * with an exponential backoff, from one pause to TS_SHARED_BACKOFF_MAX
 * between two looks, and takes the lock with a compare-and-swap as soon as
 * it sees it free.  After a spin budget without taking it: rests, once per
 * acquisition, if it lost the lock to another (in that budget it saw the
 * lock free and someone else took it, or its sleep was ended by a release
 * and the lock was held again at its first look: the lock is saturated by
 * short critical sections); otherwise sleeps on the word
 * (TICKET_WAIT=park), announced by TS_SHARED_SLEEPERS, or yields (yield);
 * then spins a budget again.  A thread that has slept takes the lock with
 * the bit set (I5).
 *
 * The rest is the queue's (step 4: rest(), the same alternation and skips,
 * TICKET_REST_US), for the same reason: two threads contending for a
 * saturated lock move its line at every look and every hand-over, where one
 * of them alone runs with it in its cache; a rest holds nothing, and no one
 * wakes it (doc/benchmarks.md, 7 December 2026, has the figures with and
 * without it).  Only after a lost race: a waiter that saw the lock held at
 * every look may wait for one long critical section (or a holder off its
 * CPU), and is better woken at its release than back after a rest; if the
 * lock is held again when that wake-up comes, it was not.
 */
static void wait_shared(struct waiter *w, uint32_t word)
{
	const struct ts_config *cfg = w->cfg;
	bool slept = false;
	bool rest_decided = false; /* once per acquisition, as in the queue */
	bool lost = false;         /* since the last decision, the lock was lost to another */
	uint64_t spun = 0;         /* pauses since the last sleep or yield */
	uint32_t backoff = 1;      /* pauses before the next look */

	for (;;) {
		if (!ts_is_held(word)) {
			uint32_t taken = (word & ~TS_LOCK_BYTE) | TS_LOCKED |
			                 (slept ? TS_SHARED_SLEEPERS : 0u);

			/* ACQUIRE pairs with the RELEASE store in ts_unlock(). */
			if (__atomic_compare_exchange_n(w->lock, &word, taken, false, __ATOMIC_ACQUIRE,
			                                __ATOMIC_RELAXED))
				return;
			lost |= ts_is_held(word);
			continue;
		}
		if (spun >= cfg->spin_budget) {
			ts_stall_check(&w->stall, cfg, w->lock, w->caller, 0, word, false, ts_now_ns());
			if (lost && !rest_decided && cfg->rest_us != 0 && cfg->wait != TS_WAIT_SPIN) {
				rest_decided = true;
				if (rest_is_due(cfg, w->lock, w->hash)) {
					/*
					 * Woken, we may have taken the wake-up of the
					 * release that cleared the bit, which others
					 * asleep still need: set it again before we
					 * go (I5).  Relaxed: it orders nothing.
					 */
					if (slept)
						__atomic_fetch_or(w->lock, TS_SHARED_SLEEPERS,
						                  __ATOMIC_RELAXED);
					if (rest(cfg, w->lock, w->hash)) {
						w->st.rests = 1;
						spun = 0;
						backoff = 1;
						lost = false;
						word = __atomic_load_n(w->lock, __ATOMIC_RELAXED);
						continue;
					}
					w->st.skips = 1;
				}
			}
			lost = false;
			if (cfg->wait == TS_WAIT_YIELD) {
				sched_yield();
				w->st.yields++;
			} else if (cfg->wait == TS_WAIT_PARK) {
				uint32_t announced = word | TS_SHARED_SLEEPERS;
				enum ts_sleep how;

				/*
				 * SEQ_CST: before the unlock's loads, or its byte
				 * store changes the word the sleep expects.  A
				 * failure reloads the word: look again.
				 */
				if (announced != word &&
				    !__atomic_compare_exchange_n(w->lock, &word, announced, false,
				                                 __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
					continue;
				how = ts_sleep_shared(w->lock, announced, w->nap_ns);
				w->st.parks++;
				w->nap_ns = ts_nap_after(w->nap_ns, how);
				slept = true;
				word = __atomic_load_n(w->lock, __ATOMIC_RELAXED);
				/*
				 * Woken at a release, and the lock is held again: lost
				 * to another, the lock is saturated.  Decide at once.
				 */
				if (how == TS_SLEEP_WOKEN && ts_is_held(word)) {
					lost = true;
					spun = cfg->spin_budget;
					continue;
				}
			} else {
				word = __atomic_load_n(w->lock, __ATOMIC_RELAXED);
			}
			spun = 0;
			backoff = 1;
			continue;
		}
		ts_pause_for(backoff);
		spun += backoff;
		if (backoff < TS_SHARED_BACKOFF_MAX)
			backoff *= 2;
		/* Relaxed: ownership is taken only by an ACQUIRE compare-and-swap. */
		word = __atomic_load_n(w->lock, __ATOMIC_RELAXED);
		w->st.polls++;
	}
}

/*
 * TICKET_STATS: a doze before queueing and a rest are part of the wait,
 * which begins at the first of them (@*timed: it has begun).
 */
static void stats_wait_begins_outside(struct waiter *w, bool *timed)
{
	if (w->cfg->stats != NULL && !*timed)
		stats_wait_begins(w, false);
	*timed = true;
}

/*
 * TICKET_STATS: marks the lock with TS_UNLOCK_DUE unless @word, as last seen,
 * has it, so that our unlock folds the record and every unlock from now on
 * counts a release (stats.c).
 */
static void stats_mark(ts_word_t *lock, uint32_t word)
{
	/*
	 * An atomic OR, once: the word's other bits change under us (tickets, a
	 * head's request); no one clears the bit but pthread_spin_init().
	 */
	if (!(word & TS_UNLOCK_DUE))
		__atomic_fetch_or(lock, TS_UNLOCK_DUE, __ATOMIC_RELAXED);
}

/* Records a contended acquisition for TICKET_STATS, and marks the lock. */
static void stats_record(ts_word_t *lock, const void *caller, struct ts_wait_stats *st,
                         uint32_t delay)
{
	ts_stats_record(lock, caller, st, delay);
	stats_mark(lock, __atomic_load_n(lock, __ATOMIC_RELAXED));
}

/* Draws a ticket, or waits outside a full queue, and waits in the queue. */
static __attribute__((noinline)) void lock_queued(ts_word_t *lock, uint32_t word,
                                                   const void *caller, bool yielded)
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
	enum how_taken how = STOLEN;
	bool rest_decided = false; /* once per acquisition: then we queue, and the bounds hold */
	bool rested = false;       /* we slept a rest: we queue now (step 4) */
	uint32_t dozes = 0;        /* before queueing (step 7): at most TS_DOZES_MAX an acquisition */
	bool wait_timed = false;   /* TICKET_STATS: the wait began at a doze or the rest */
	uint8_t ticket = 0;
	ts_word_t *before;
	bool noted;                /* in the fork table (a ticket may be drawn) */
	bool lined_up;             /* waited in the active set's line (step 8) */
	uint64_t traced_since = 0; /* the wait's start, read only while acquired is traced */

	/*
	 * The probes (probes.h): a nop each untraced; the clock only for a
	 * tracer of acquired, whose semaphore says one is attached.
	 */
	TS_PROBE2(wait_begin, lock, caller);
	if (TS_PROBE_ENABLED(acquired))
		traced_since = ts_now_ns();
	w.entry = ts_delay_entry_claim(cfg, hash, &w.delay, &w.next_delay);
	/*
	 * Noted before a ticket can be drawn: a fork() by another thread between
	 * our draw and the note would leave the ticket in the child's queue
	 * (fork.c empties only the queues noted).  Noting a lock we then steal
	 * costs the child nothing: it has no thread in any queue.
	 */
	lined_up = ts_active_admit(cfg, hash, word);
	if (lined_up)
		word = __atomic_load_n(lock, __ATOMIC_RELAXED);
	/* A shared word's waiter draws no ticket: nothing for a child to repair. */
	noted = !(word & TS_SHARED);
	before = noted ? ts_fork_queued(lock) : NULL;
	for (;;) {
		if (word & TS_SHARED) {
			/* Shared, or made so since we looked (become_shared()). */
			stats_wait_begins_outside(&w, &wait_timed);
			wait_shared(&w, word);
			break;
		}
		if (try_steal(cfg, lock, &word))
			break;
		if (dozes < TS_DOZES_MAX && doze_pays(cfg, word, rested, hash)) {
			dozes++;
			stats_wait_begins_outside(&w, &wait_timed);
			TS_PROBE2(doze, lock, cfg->doze_us);
			ts_doze(cfg->doze_us);
			w.st.dozes = 1;
			word = __atomic_load_n(lock, __ATOMIC_RELAXED);
			continue;
		}
		if (!rest_decided && must_rest(cfg, word)) {
			rest_decided = true;
			if (rest_is_due(cfg, lock, hash)) {
				stats_wait_begins_outside(&w, &wait_timed);
				if (rest(cfg, lock, hash)) {
					rested = true;
					w.st.rests = 1;
					word = __atomic_load_n(lock, __ATOMIC_RELAXED);
					continue;
				}
				w.st.skips = 1;
			}
		}
		if (ts_queued(word) < queue_capacity(cfg)) {
			uint32_t joined = with_next(word, ts_next(word) + 1u);

			/* At the front of an empty queue: we run, so we watch from now (I3). */
			if (ts_queued(word) == 0 && !strict_fifo(cfg, word))
				joined = (joined | TS_WATCHING) & ~TS_BYPASS_MASK;
			/* Relaxed: drawing a ticket takes nothing; the take will acquire. */
			if (__atomic_compare_exchange_n(lock, &word, joined, false, __ATOMIC_RELAXED,
			                                __ATOMIC_RELAXED)) {
				ticket = ts_next(word);
				/* More waiting than threads exist: report the word (misuse.c). */
				ts_misuse_check_line(lock, joined, ticket, caller);
				w.st.ahead = (uint16_t)(ts_tickets_between(ts_head(joined), ticket) + 1u);
				w.stats_look_due = cfg->stats != NULL && !wait_timed;
				how = wait_in_queue(&w, ticket, joined);
				break;
			}
			continue;
		}
		wait_outside(&w, &word);
	}
	/* 0: the tracer attached during the wait, whose start is unknown. */
	if (TS_PROBE_ENABLED(acquired))
		TS_PROBE3(acquired, lock, traced_since != 0 ? ts_now_ns() - traced_since : 0,
		          (int)how);
	if (noted)
		ts_fork_queued_done(before);
	turn_starts_over(); /* we waited: the next turn is timed afresh */
	if (w.tune) {
		w.entry->delay = w.delay;
		w.entry->next_delay = w.next_delay;
	}
	if (cfg->stats != NULL) {
		w.st.yields += yielded;
		if ((w.stats_look_due || how == STOLEN) && !wait_timed)
			stats_wait_begins(&w, how == STOLEN); /* taken before the first look */
		w.st.line = lined_up;
		if (how != AS_HEAD)
			w.st.borrows = 1; /* no ticket consumed: the "steals" column */
		stats_record(lock, caller, &w.st, w.tune ? w.delay : 0);
	}
}

/*
 * Our exchange took the free lock of @lock, with a queue behind it: keep it
 * if a thread holding no ticket may take it now (may_steal(), judged on the
 * word as it would be free, and counted in it as stolen() counts), else give
 * it back as an unlock would, before any critical section.  True if we keep
 * it; else @*word is the word we judged, as free: what a refused steal
 * sees, so that must_rest() stops us at the bound as it would have (the
 * head's take may already have cleared the count in the word itself).
 * When we keep it, @*word is the word as our steal left it.
 * With our turn over we give it back too: ts_lock_slow() yields holding
 * nothing.
 */
static bool keep_or_give_back(const struct ts_config *cfg, ts_word_t *lock, uint32_t *word,
                              bool may_keep)
{
	uint32_t seen = *word;

	for (;;) {
		uint32_t as_free = seen & ~TS_LOCK_BYTE;

		if (may_keep && !turn.yield_due && may_steal(cfg, as_free)) {
			uint32_t kept = stolen(as_free);

			/* Relaxed: the exchange acquired the lock; this only counts. */
			if (kept == seen || __atomic_compare_exchange_n(lock, &seen, kept, false,
			                                                __ATOMIC_RELAXED,
			                                                __ATOMIC_RELAXED)) {
				turn_count_steal(cfg, lock, as_free);
				*word = kept;
				return true;
			}
			continue;
		}
		release(lock, seen);
		*word = as_free;
		return false;
	}
}

/*
 * TICKET_STATS: a steal, taken at once, with @word as our steal saw or left
 * it; marks the lock from that word, without loading it again (a load right
 * after our own atomic operation on it waits for it).
 */
static void stats_record_steal(ts_word_t *lock, const void *caller, bool yielded, uint32_t word)
{
	ts_stats_steal(lock, caller, yielded, !(word & TS_UNLOCK_DUE));
	stats_mark(lock, word);
}

int ts_lock_slow(ts_word_t *lock, uint8_t was, const void *caller)
{
	const struct ts_config *cfg = ts_config();
	uint32_t word;
	bool yielded = false;
	bool outsider;

	/* The byte our exchange replaced is the lock's own: judge it (misuse.c). */
	if (__builtin_expect(ts_byte_is_foreign(was), 0)) {
		word = __atomic_load_n(lock, __ATOMIC_RELAXED);
		(void)ts_misuse_suspect_word(lock, (word & ~TS_LOCK_BYTE) | was, ts_next(word), caller);
	}
	/*
	 * A shared word has no queue to decide about: a free byte our exchange
	 * took is ours (tickets there are a converted word's, draining), a held
	 * one is waited for as a test-and-set lock.
	 */
	word = __atomic_load_n(lock, __ATOMIC_RELAXED);
	if (word & TS_SHARED) {
		if (!(was & TS_LOCKED)) {
			if (__builtin_expect(cfg->stats != NULL, 0))
				stats_record_steal(lock, caller, false, word);
			return 0;
		}
		lock_queued(lock, word, caller, false);
		return 0;
	}
	/* With the active set off (the default) not even a call: the holder's bursts come here. */
	outsider = __builtin_expect(cfg->active != 0, 0) && ts_active_outsider(cfg, lock, word);
	if (!(was & TS_LOCKED) && keep_or_give_back(cfg, lock, &word, !outsider)) {
		if (__builtin_expect(cfg->stats != NULL, 0))
			stats_record_steal(lock, caller, false, word);
		return 0;
	}
	if (__builtin_expect(turn.yield_due, 0))
		yielded = turn_end(cfg, lock, &word);
	/*
	 * Steal first, with nothing set up: in a holder's burst, that is every
	 * acquisition.
	 */
	if (!outsider && try_steal(cfg, lock, &word)) {
		if (__builtin_expect(cfg->stats != NULL, 0))
			stats_record_steal(lock, caller, yielded, word);
		return 0;
	}
	lock_queued(lock, word, caller, yielded);
	return 0;
}
