/*
 * The queue's promises, through the core linked in, on words set up by hand
 * (test_bypass.c has the bound on stealing and strict FIFO): a head that
 * does not watch is passed without counting; a process-shared lock is never
 * stolen; and a waiter that is not running (a phantom ticket at the head: no
 * thread holds it) does not keep the running ones out: the last in the queue
 * gives its ticket back and takes the lock (escape), in every waiting
 * policy, and threads that keep coming all progress.  Each test sets its
 * environment before the core first reads it.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "options.h"
#include "ticket_lock.h"

static ts_word_t lock_word __attribute__((aligned(64)));

static uint32_t word(void)
{
	return __atomic_load_n(&lock_word, __ATOMIC_ACQUIRE);
}

/* A queue of one phantom ticket (@head), the lock free; @flags: TS_WATCHING, bypass. */
static void phantom_head(uint8_t head, uint32_t flags)
{
	__atomic_store_n(&lock_word,
	                 (uint32_t)head << TS_HEAD_SHIFT | (uint32_t)(head + 1) << TS_NEXT_SHIFT | flags,
	                 __ATOMIC_RELEASE);
}

/* A head that is not watching (asleep, or not yet looking) may be passed. */
Test(queue, a_head_that_does_not_watch_is_passed)
{
	setenv("TICKET_BYPASS", "1", 1);
	phantom_head(10, 0);
	for (int i = 0; i < 5; i++) {
		cr_assert(ts_trylock(&lock_word), "word %#x", word());
		cr_assert_eq(ts_bypass(word()), 0, "counted without a watch: %#x", word());
		cr_assert(ts_unlock(&lock_word));
	}
}

static void *lock_once(void *arg)
{
	ts_lock(&lock_word, NULL);
	*(uint32_t *)arg = word(); /* the holder's view */
	cr_assert(ts_unlock(&lock_word));
	return NULL;
}

/*
 * A process-shared lock is strict FIFO whatever TICKET_BYPASS says: a lock
 * of its free word past the phantom draws a ticket instead of keeping it,
 * and gets the lock once the phantom's turn is served (by us, as the
 * phantom would: a take that advances the head, and an unlock).  A trylock
 * takes the free lock all the same: it never waits, and POSIX lets it fail
 * only while the lock is held (issue 40).
 */
Test(queue, a_process_shared_lock_is_never_stolen, .timeout = 10)
{
	pthread_t tid;
	uint32_t seen = 0, w, taken;

	phantom_head(10, TS_SHARED);
	cr_assert_eq(pthread_create(&tid, NULL, lock_once, &seen), 0);
	while (ts_queued(word()) < 2)
		sched_yield();
	cr_assert(!ts_is_held(word()), "a shared lock stolen: %#x", word());
	w = word();
	do {
		taken = (w & ~(TS_HEAD_FIELD | TS_LOCK_BYTE)) | 11u << TS_HEAD_SHIFT | TS_LOCKED;
	} while (!__atomic_compare_exchange_n(&lock_word, &w, taken, false, __ATOMIC_ACQUIRE,
	                                      __ATOMIC_RELAXED));
	cr_assert(ts_unlock(&lock_word));
	pthread_join(tid, NULL);
	cr_assert(ts_is_held(seen), "%#x", seen);
	cr_assert_eq(ts_queued(seen), 0, "the waiter took it at the head: %#x", seen);
	cr_assert(seen & TS_SHARED, "%#x", seen);
	phantom_head(10, TS_SHARED);
	cr_assert(ts_trylock(&lock_word), "trylock failed on a free lock: %#x", word());
	cr_assert_eq(ts_queued(word()), 1, "%#x", word());
	cr_assert(ts_unlock(&lock_word));
}

/*
 * A watching head that never takes the free lock (a phantom: its thread is
 * not running), bypassed the most times already, so no one may steal: a
 * thread that queues behind it, last in the queue, gives its ticket back and
 * takes the lock.  Checked by the outcome, not by any time: it gets the lock
 * (the timeout catches a hang), without a ticket, and the watch is over.
 */
static void escape_in(const char *wait)
{
	pthread_t tid;
	uint32_t seen = 0;

	setenv("TICKET_WAIT", wait, 1);
	/* (a trylock would take it: it takes any free lock, issue 40) */
	phantom_head(40, TS_WATCHING | TS_BYPASS_MAX << TS_BYPASS_SHIFT);
	cr_assert_eq(pthread_create(&tid, NULL, lock_once, &seen), 0);
	pthread_join(tid, NULL);
	cr_assert_eq(ts_lock_byte(seen) & TS_LOCKED, TS_LOCKED, "%#x", seen);
	cr_assert_eq(ts_head(seen), 40, "the phantom is still the head: %#x", seen);
	cr_assert_eq(ts_queued(seen), 1, "the escaper's ticket given back: %#x", seen);
	cr_assert_eq(seen & TS_WATCHING, 0, "the watch is over: %#x", seen);
	/* and the lock is free for stealing, the phantom still queued */
	cr_assert(ts_trylock(&lock_word), "word %#x", word());
	cr_assert(ts_unlock(&lock_word));
	cr_assert_eq(ts_queued(word()), 1, "%#x", word());
}

Test(queue, escape_past_a_head_that_is_not_running_park, .timeout = 30)
{
	escape_in("park");
}

Test(queue, escape_past_a_head_that_is_not_running_spin, .timeout = 30)
{
	escape_in("spin");
}

Test(queue, escape_past_a_head_that_is_not_running_yield, .timeout = 30)
{
	escape_in("yield");
}

static int stop;
static long acquired[4];

static void *contend_until_stopped(void *arg)
{
	int id = (int)(intptr_t)arg;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		ts_lock(&lock_word, NULL);
		acquired[id]++;
		for (int i = 0; i < 100; i++)
			__builtin_ia32_pause();
		cr_assert(ts_unlock(&lock_word));
	}
	return NULL;
}

/*
 * Running threads behind a head that is not running (the phantom, watching,
 * bypassed to the count): for 300 ms four threads take the lock over and
 * over; then each must finish its last acquisition and have made progress.
 * A thread left waiting behind the phantom hangs the join: the timeout
 * fails the test.
 */
Test(queue, running_threads_behind_a_head_that_is_not_running_all_progress, .timeout = 10)
{
	pthread_t tids[4];
	struct timespec run = { 0, 300000000L };

	phantom_head(40, TS_WATCHING | TS_BYPASS_MAX << TS_BYPASS_SHIFT);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(pthread_create(&tids[i], NULL, contend_until_stopped, (void *)(intptr_t)i),
		             0);
	nanosleep(&run, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 4; i++)
		pthread_join(tids[i], NULL);
	for (int i = 0; i < 4; i++)
		cr_assert_gt(acquired[i], 0, "thread %d never got the lock (word %#x)", i, word());
}
