/*
 * Wake-ups, through the core linked in: every sleeper whose turn comes is
 * woken by whoever must wake it, not by its nap running out.  The naps are
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

static unsigned tickets_drawn(void)
{
	uint32_t word = __atomic_load_n(&lock_word, __ATOMIC_ACQUIRE);

	return ts_tickets_between(ts_serving(word), ts_next(word));
}

/*
 * Rounds of: hold the lock, let @waiters queue one after another, linger so
 * that they fall asleep, unlock; they must all be served, in order, woken.
 */
static void rounds_of(int waiters, int rounds)
{
	struct ts_sleep_counts before, after;
	pthread_t tids[16];

	ts_sleep_counts(&before);
	for (int round = 0; round < rounds; round++) {
		grants = 0;
		ts_lock(&lock_word, NULL);
		for (int i = 0; i < waiters; i++) {
			cr_assert_eq(pthread_create(&tids[i], NULL, waiter, (void *)(intptr_t)i), 0);
			while (tickets_drawn() < (unsigned)i + 2)
				sched_yield();
		}
		usleep(3000);
		cr_assert(ts_unlock(&lock_word));
		for (int i = 0; i < waiters; i++)
			pthread_join(tids[i], NULL);
		cr_assert_eq(grants, waiters);
		for (int i = 0; i < waiters; i++)
			cr_assert_eq(granted[i], i, "round %d: served out of order", round);
	}
	ts_sleep_counts(&after);
	cr_assert_eq(after.timed_out - before.timed_out, 0,
	             "%llu sleeps ended by their timeout: missed wake-ups",
	             (unsigned long long)(after.timed_out - before.timed_out));
	cr_assert_geq(after.woken - before.woken, (uint64_t)rounds * (unsigned)waiters,
	              "too few sleeps for the test to mean anything (%llu)",
	              (unsigned long long)(after.woken - before.woken));
}

/* The next in line sleeps: the unlock that serves it must wake it. */
Test(wakeup, next_in_line_is_woken_by_the_unlock, .timeout = 120)
{
	long_naps("0");
	rounds_of(1, 30);
}

/* Far waiters sleep: each is woken by the waiter served before it. */
Test(wakeup, far_waiters_are_woken_in_a_chain, .timeout = 120)
{
	long_naps("0");
	rounds_of(5, 20);
}

/* The same in lending mode, where hand-overs are claimed. */
Test(wakeup, woken_in_lending_mode_too, .timeout = 120)
{
	long_naps("0");
	__atomic_store_n(&lock_word, TS_LENDING, __ATOMIC_RELAXED);
	rounds_of(4, 20);
}
