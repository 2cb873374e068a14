/*
 * Wake-ups, through the core linked in: every sleeper whose turn comes is
 * woken by whoever must wake it, not by its nap running out: the head of the
 * queue, asleep with TS_WAKE_HEAD, by the holder's unlock; a waiter behind
 * the head, asleep under TS_SLEEPERS, by the unlock of the waiter that made
 * it the head (TS_WAKE_NEXT); a waiter outside a full queue by the take that
 * made room.  The naps are
 * raised to 5 s, far beyond anything the scenarios wait for, so a sleep that
 * ends by its timeout can only be a missed wake-up; the counts come from
 * parking.c.  (In the library the first nap is 1 ms: a missed wake-up there
 * costs little, which is why only counting can see one.)
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "options.h"
#include "parking.h"
#include "ticket_lock.h"

static ts_word_t lock_word __attribute__((aligned(64)));
static int granted[16], grants;

static void long_naps(const char *queue)
{
	setenv("TICKET_SPIN", "1", 1);      /* sleep almost at once */
	setenv("TICKET_WAIT", "park", 1);
	if (queue != NULL)
		setenv("TICKET_QUEUE", queue, 1);
	ts_nap_first_ns = ts_nap_max_ns = 5000000000ull;
}

static void *waiter(void *arg)
{
	ts_lock(&lock_word, NULL);
	granted[grants++] = (int)(intptr_t)arg;
	cr_assert(ts_unlock(&lock_word));
	return NULL;
}

/* Waiters in the queue (the holder has no ticket). */
static unsigned tickets_drawn(void)
{
	return ts_queued(__atomic_load_n(&lock_word, __ATOMIC_ACQUIRE));
}

/*
 * Rounds of: hold the lock, let @waiters queue one after another (the
 * first @room of them in the queue, the others outside it), linger so that
 * they fall asleep, unlock; they must all be served, woken, and with @fifo
 * in the order they queued.
 */
static void rounds_of(int waiters, int rounds, int room, bool fifo)
{
	struct ts_sleep_counts before, after;
	pthread_t tids[16];

	ts_sleep_counts(&before);
	for (int round = 0; round < rounds; round++) {
		int seen[16] = { 0 };

		grants = 0;
		ts_lock(&lock_word, NULL);
		for (int i = 0; i < waiters; i++) {
			cr_assert_eq(pthread_create(&tids[i], NULL, waiter, (void *)(intptr_t)i), 0);
			if (i < room) {
				while (tickets_drawn() < (unsigned)i + 1)
					sched_yield();
			} else {
				usleep(1000); /* outside: nothing in the word to wait for */
			}
		}
		usleep(3000);
		cr_assert_eq(tickets_drawn(), (unsigned)(waiters < room ? waiters : room));
		cr_assert(ts_unlock(&lock_word));
		for (int i = 0; i < waiters; i++)
			pthread_join(tids[i], NULL);
		cr_assert_eq(grants, waiters);
		for (int i = 0; i < waiters; i++) {
			cr_assert(granted[i] >= 0 && granted[i] < waiters && !seen[granted[i]],
			          "round %d: waiter %d served twice", round, granted[i]);
			seen[granted[i]] = 1;
			if (fifo)
				cr_assert_eq(granted[i], i, "round %d: served out of order", round);
		}
		/* free, and every ticket served (head == next, wherever they are) */
		cr_assert(ts_lock_byte(lock_word) == 0 && ts_queued(lock_word) == 0,
		          "round %d: word %#x left", round, lock_word);
	}
	ts_sleep_counts(&after);
	cr_assert_eq(after.timed_out - before.timed_out, 0,
	             "%llu sleeps ended by their timeout: missed wake-ups",
	             (unsigned long long)(after.timed_out - before.timed_out));
	cr_assert_geq(after.woken - before.woken, (uint64_t)rounds * (unsigned)waiters,
	              "too few sleeps for the test to mean anything (%llu)",
	              (unsigned long long)(after.woken - before.woken));
}

/* Strict FIFO: the head sleeps (TS_WAKE_HEAD); the holder's unlock must wake it. */
Test(wakeup, sleeping_head_is_woken_by_the_unlock, .timeout = 120)
{
	long_naps("0");
	rounds_of(1, 30, 16, true);
}

/*
 * Strict FIFO: waiters behind the head sleep (TS_SLEEPERS); each is woken
 * by the unlock of the waiter served before it (TS_WAKE_NEXT), then sleeps
 * again as the head until that unlock.
 */
Test(wakeup, waiters_behind_the_head_are_woken_in_a_chain, .timeout = 120)
{
	long_naps("0");
	rounds_of(5, 20, 16, true);
}

/*
 * The default (stealing, restriction): waiters behind the head sleep at
 * once, the head when the holder keeps the lock; no order is promised
 * here, only that every one is served, woken.
 */
Test(wakeup, woken_in_the_default_mode_too, .timeout = 120)
{
	long_naps(NULL);
	rounds_of(5, 20, 16, false);
}

/* A process-shared lock: waiters sleep on the word itself (shared futex), in FIFO order. */
Test(wakeup, woken_on_a_process_shared_lock, .timeout = 120)
{
	long_naps(NULL);
	__atomic_store_n(&lock_word, TS_SHARED, __ATOMIC_RELAXED);
	rounds_of(4, 20, 16, true);
}

/*
 * A queue of 2 (TICKET_QUEUE=2): three of five waiters sleep outside it, and
 * are woken as the queue makes room.
 */
Test(wakeup, woken_outside_a_full_queue, .timeout = 120)
{
	long_naps("2");
	rounds_of(5, 20, 2, false);
}
