/*
 * arrivals.h - threads that arrive at a lock word set up by hand, for the
 * tests that link the core (test_bypass.c, test_stats.c, test_active.c): a
 * thread that takes the lock once, we holding it meanwhile over a ghost
 * queue; our own steals past a ghost head, up to the bound and one more; a
 * real head that watches, to set the lock's head-bypassed hint (slowpath.c,
 * step 7); and a crowd of threads that contend for it until a condition
 * holds, its counts checked as Concurrency Kit's validate harnesses check
 * theirs.  The including file includes Criterion and defines the lock,
 * `word`, first.
 */
#ifndef TICKETSPIN_TESTS_ARRIVALS_H
#define TICKETSPIN_TESTS_ARRIVALS_H

#include <pthread.h>
#include <stdbool.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "options.h"
#include "parking.h"
#include "slowpath.h"
#include "ticket_lock.h"

/* A thread that takes the lock once, and what it saw while it held it. */
struct arrival {
	pthread_t tid;
	volatile int arrived;
	volatile uint32_t held_word;
};

static void *arrival_thread(void *arg)
{
	struct arrival *a = arg;

	a->arrived = 1;
	ts_lock(&word, NULL);
	a->held_word = __atomic_load_n(&word, __ATOMIC_RELAXED);
	cr_assert(ts_unlock(&word));
	return NULL;
}

/* What a lock by another thread did while we held the lock. */
struct hold_report {
	uint32_t most_queued; /* the most tickets seen in the queue */
	uint64_t held_ns;     /* from its arrival to our release */
};

/*
 * We hold the lock over a ghost queue @queue (held | @queue); another thread
 * arrives and locks it.  We watch the word until the arrival's ticket shows
 * or @hold_ms pass, then release, and it gets the lock one way or another.
 */
static inline struct hold_report hold_while_one_arrives(uint32_t queue, uint64_t hold_ms,
                                                        struct arrival *a)
{
	struct hold_report r = { 0 };
	uint64_t start;

	__atomic_store_n(&word, queue | TS_LOCKED, __ATOMIC_RELEASE);
	cr_assert_eq(pthread_create(&a->tid, NULL, arrival_thread, a), 0);
	while (!a->arrived)
		sched_yield();
	start = ts_now_ns();
	while (ts_now_ns() - start < hold_ms * 1000000u) {
		uint32_t queued = ts_queued(__atomic_load_n(&word, __ATOMIC_RELAXED));

		if (queued > r.most_queued)
			r.most_queued = queued;
		if (queued > ts_queued(queue))
			break; /* its ticket */
		usleep(100);
	}
	r.held_ns = ts_now_ns() - start;
	cr_assert(ts_unlock(&word));
	cr_assert_eq(pthread_join(a->tid, NULL), 0);
	return r;
}

/* A queue of one ticket (0), whose waiter watches and will never look again. */
static inline uint32_t ghost_watching_head(void)
{
	return TS_NEXT_ONE | TS_WATCHING;
}

/* Takes the lock five times past a ghost head watching, within TICKET_BYPASS=5. */
static inline void steal_up_to_the_bound(void)
{
	cr_assert_eq(ts_config()->bypass_max, 5u);
	__atomic_store_n(&word, ghost_watching_head(), __ATOMIC_RELAXED);
	for (int k = 0; k < 5; k++) {
		ts_lock(&word, NULL);
		cr_assert(ts_unlock(&word));
	}
	cr_assert_eq(ts_bypass(word), 5, "word %#x", word);
}

/*
 * Takes the lock once more after steal_up_to_the_bound(), stopped by the
 * bound, TS_REST_ALTERNATE rests of @rest_us after our last rest, so that
 * the alternation lets us rest (slowpath.c, step 4); past the ghost head,
 * which never takes the lock, no one takes it during such a rest.
 */
static inline void stopped_by_the_bound(uint32_t rest_us)
{
	usleep((useconds_t)rest_us * (TS_REST_ALTERNATE + 1u));
	steal_up_to_the_bound();
	ts_lock(&word, NULL);
	cr_assert(ts_unlock(&word));
}

/*
 * Before the settings are read (the first lock): queue heads spin instead
 * of sleeping, so that a_watching_head_takes_after()'s head watches until
 * our release even when we lose our CPU to it (beside CPU hogs, under
 * ASan, it had slept first 50 times in a row).
 */
static inline void heads_spin(void)
{
	setenv("TICKET_SPIN", "100000000", 1);
}

/*
 * Step 7's hint, set by a real head: we hold the lock, another thread
 * queues at the front of the empty queue and watches; we count @bypassed
 * steals in the word, as that many stealers would have, and release; the
 * head takes the lock, and the library notes how often it was bypassed.  A
 * head that slept instead of watching (it lost its CPU) notes nothing: tried
 * again.  Leaves the lock idle.
 */
static inline void a_watching_head_takes_after(uint32_t bypassed)
{
	for (int attempt = 0; attempt < 50; attempt++) {
		uint64_t start = ts_now_ns();
		struct arrival head = { 0 };
		uint32_t seen;

		__atomic_store_n(&word, TS_LOCKED, __ATOMIC_RELEASE);
		cr_assert_eq(pthread_create(&head.tid, NULL, arrival_thread, &head), 0);
		do {
			seen = __atomic_load_n(&word, __ATOMIC_ACQUIRE);
		} while (!(ts_queued(seen) == 1 && (seen & TS_WATCHING)) &&
		         ts_now_ns() - start < 100000000u);
		while ((seen & TS_WATCHING) &&
		       !__atomic_compare_exchange_n(&word, &seen,
		                                    (seen & ~TS_BYPASS_MASK) |
		                                            (bypassed << TS_BYPASS_SHIFT),
		                                    false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			;
		cr_assert(ts_unlock(&word));
		cr_assert_eq(pthread_join(head.tid, NULL), 0);
		/* (TICKET_STATS marks a contended lock for good: TS_UNLOCK_DUE may stay) */
		cr_assert_eq(__atomic_load_n(&word, __ATOMIC_ACQUIRE) & ~TS_UNLOCK_DUE, 0);
		if (ts_head_bypassed(&word) == bypassed + 1u)
			return;
	}
	cr_assert_fail("no head watched the lock in 50 attempts (hint %u)", ts_head_bypassed(&word));
}

/* The crowd: CROWD threads, each at least CROWD_ROUNDS acquisitions. */
#define CROWD        4
#define CROWD_ROUNDS 100000

static uint64_t crowd_counter;  /* written only under the lock, not atomically */
static uint32_t crowd_inside;   /* threads inside the critical section: 0 or 1 */
static uint32_t crowd_overlaps; /* critical sections that found another inside */
static uint64_t crowd_made[CROWD];
static bool crowd_stop;
static pthread_barrier_t crowd_start;

static inline void *crowd_thread(void *arg)
{
	uint64_t *mine = arg;

	pthread_barrier_wait(&crowd_start); /* all at once: contended from the start */
	while (*mine < CROWD_ROUNDS || !__atomic_load_n(&crowd_stop, __ATOMIC_RELAXED)) {
		ts_lock(&word, NULL);
		if (__atomic_fetch_add(&crowd_inside, 1, __ATOMIC_RELAXED) != 0)
			__atomic_fetch_add(&crowd_overlaps, 1, __ATOMIC_RELAXED);
		crowd_counter++;
		(*mine)++;
		__atomic_fetch_sub(&crowd_inside, 1, __ATOMIC_RELAXED);
		cr_assert(ts_unlock(&word));
	}
	return NULL;
}

/*
 * Contends from CROWD threads until @done() (never, if the mechanism it
 * waits for is broken: the test's timeout), then checks the counts: no two
 * critical sections overlapped, none was lost, the lock is idle.
 */
static inline void contend_until(bool (*done)(void))
{
	pthread_t tid[CROWD];
	uint64_t sum = 0;

	cr_assert_eq(pthread_barrier_init(&crowd_start, NULL, CROWD), 0);
	for (int t = 0; t < CROWD; t++)
		cr_assert_eq(pthread_create(&tid[t], NULL, crowd_thread, &crowd_made[t]), 0);
	while (!done())
		usleep(1000);
	__atomic_store_n(&crowd_stop, true, __ATOMIC_RELAXED);
	for (int t = 0; t < CROWD; t++) {
		pthread_join(tid[t], NULL);
		cr_assert_geq(crowd_made[t], CROWD_ROUNDS);
		sum += crowd_made[t];
	}
	cr_assert_eq(crowd_overlaps, 0, "%u critical sections overlapped", crowd_overlaps);
	cr_assert_eq(crowd_counter, sum, "counter %llu, acquisitions %llu",
	             (unsigned long long)crowd_counter, (unsigned long long)sum);
	/* (TICKET_STATS marks a contended lock for good: TS_UNLOCK_DUE may stay) */
	cr_assert_eq(__atomic_load_n(&word, __ATOMIC_RELAXED) & ~TS_UNLOCK_DUE, 0,
	             "the lock is not idle: %#x", __atomic_load_n(&word, __ATOMIC_RELAXED));
}

#endif
