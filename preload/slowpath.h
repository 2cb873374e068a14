/*
 * slowpath.h - internals of the contended path, for the library and its tests.
 *
 * The entry points (ts_lock_slow, ts_unlock_slow) are declared with the fast
 * paths in ticket_lock.h; the seeds' backoff and delay table, which the tests
 * and the statistics read, in backoff.h.
 */
#ifndef TICKETSPIN_SLOWPATH_H
#define TICKETSPIN_SLOWPATH_H

#include "backoff.h"
#include "options.h"
#include "ticket_lock.h"

#include <stdint.h>

/*
 * A head bypassed this often or more watched a saturated lock: the active
 * set restricts (active.c).
 */
#define TS_SATURATED_BYPASSED 4u

/*
 * A head bypassed fewer times than this found the lock free between
 * acquisitions: a thread that finds it held past a head that does not watch
 * dozes before it queues (slowpath.c, step 7).  Watching heads' bypasses at
 * their take (bench/locks, 2 to 8 threads): work 0 and 30, 16 to the bound;
 * work 100, 8 to 15; work 1000, 0 to 3.  With TICKET_BYPASS under 16
 * every head passes it, and the doze acts on saturated locks too.
 */
#define TS_DOZE_MAX_BYPASSED 16u

/*
 * A head that has watched TICKET_BYPASS_NS stops the stealers only if it had
 * been bypassed this often or more by then: the lock is saturated
 * (slowpath.c, head_out_of_patience()).  With the default 500 ns, a steal
 * every 60 ns or faster: the holder's burst at work 0 and 30 on the 2-CPU
 * VM, where the lock's line moves in 50-100 ns; at work 100 the head's
 * watch saw fewer, and stopping the stealers there cost 5-13% (a hand-over
 * at each stop, or a rest that leaves a CPU idle).  It scales with the
 * line's transfer time: where a steal takes longer, raise TICKET_BYPASS_NS
 * with it.
 */
#define TS_REST_MIN_BYPASSED 8u

/*
 * A head whose patience ran out on a lock that was not saturated (fewer than
 * TS_REST_MIN_BYPASSED steals) looks at it every this many pauses at most,
 * not TS_HEAD_MAX_PAUSES (64): there the lock is free more often than not,
 * and looks 64 pauses apart (0.75 us here) missed it, in bands of 0.8, 1.5
 * and 2.2 us.  Two threads, work 100 (bench/locks, 5 interleaved runs): 16
 * gave a lock-wait p99.9 of 1.5 against 2.6-3.1 us, and 2-7% more
 * throughput; 8 was as good, 2 slower (the head's looks take the holder's
 * line).  A count of pauses: it scales with the pause's cost.
 */
#define TS_HEAD_EAGER_PAUSES 16u

/* The most dozes before queueing, per acquisition (step 7). */
#define TS_DOZES_MAX 4u

/*
 * A thread that rested last on a lock queues without resting when the bound
 * stops it again, for up to this many rests' time after its own (step 4).
 * Two threads, work 30 (bench/locks, 7 interleaved runs): no limit and 8
 * gave fairness 0.70 and 0.78 in the slowest run, 20.8 and 21.7 M/s; 16,
 * 0.82 and 22.2.  8 is 4 ms at the default TICKET_REST_US.
 */
#define TS_REST_ALTERNATE 8u

/* The most rests a thread skips after one that held up everyone (slowpath.c, rest()). */
#define TS_REST_SKIPS_MAX 255u

/*
 * A waiter of a shared word pauses at most this many times between two
 * looks at it (slowpath.c, wait_shared(): exponential backoff from one).
 * The backoff grows only while the lock is seen held, so the cap matters
 * on a saturated lock, where each look moves the line from the holder and
 * each look that finds it free hands the lock over: the longer the gaps,
 * the longer one thread runs with the line in its cache.  64, 256 and 1024
 * were measured (doc/benchmarks.md, 7 December 2026): 1024 was fastest
 * with short critical sections, and as fast with longer ones.
 */
#ifndef TS_SHARED_BACKOFF_MAX
#define TS_SHARED_BACKOFF_MAX 1024u
#endif

/*
 * Private locks made shared since the start, because a release in another
 * process served a sleeper of this one (slowpath.c, become_shared()).
 */
extern uint64_t ts_locks_made_shared;

/*
 * The acquisitions before ours, holder included, as the seeds' backoff
 * counts them (README, TICKET_DELAY), seeing @word from @pos tickets behind
 * the head (0: we are the head): behind the head, @pos + 1; at the head of
 * a watching queue, the steals it still allows plus the holder's; else 1.
 * For slowpath.c and its tests.
 */
uint32_t ts_acquisitions_ahead(const struct ts_config *cfg, uint32_t word, uint32_t pos);

/*
 * The pauses a waiter @ahead acquisitions from the lock (ts_acquisitions_ahead())
 * makes before its next look, with its tuned @delay and @next_delay (fixed
 * point; backoff.h): the seeds' backoff (ts_backoff_pauses()), at least one,
 * and at the head (@head) at most TS_HEAD_MAX_PAUSES (64) in every mode but
 * strict FIFO (@strict), so that the last in line, which escapes past a head
 * that leaves the lock free for TS_ESCAPE_NS, never takes a running head for
 * a stopped one (README, TICKET_DELAY).  For slowpath.c and its tests.
 */
uint64_t ts_pauses_before_look(const struct ts_config *cfg, uint32_t delay, uint32_t next_delay,
                               uint32_t ahead, bool head, bool strict);

/*
 * How many steals the last head that watched @lock (or a lock sharing its
 * slot) let pass before it took it, plus one; 0 when no head has watched.
 */
uint32_t ts_head_bypassed(const void *lock);

/*
 * Is the lock of @hash saturated, by that hint: was its last watching head
 * bypassed TS_SATURATED_BYPASSED times or more?  False when unknown.
 */
bool ts_lock_saturated(uint32_t hash);

#endif
