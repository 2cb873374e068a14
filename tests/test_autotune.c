/*
 * Auto-tuning and the delay table, through the core library linked in (the
 * same code the preload object runs, reached without exports).  Each test
 * sets its environment before the core first reads it.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>

#include "options.h"
#include "slowpath.h"
#include "ticket_lock.h"

struct padded_lock {
	ts_word_t word;
} __attribute__((aligned(64)));

static struct padded_lock lock_pool[64];
static ts_word_t *long_lock, *short_lock, *slot_sharer;
static long rounds;
static uint32_t long_delay[8], short_delay[8], sharer_delay[8], long_next_delay[8];

static void hold(unsigned pauses)
{
	while (pauses-- > 0)
		__builtin_ia32_pause();
}

static void *contend(void *arg)
{
	int id = (int)(uintptr_t)arg;

	for (long i = 0; i < rounds; i++) {
		ts_lock(long_lock, NULL);
		hold(400);
		ts_unlock(long_lock);
		if (short_lock != NULL) {
			ts_lock(short_lock, NULL);
			hold(2);
			ts_unlock(short_lock);
		}
	}
	long_delay[id] = ts_delay_of(ts_config(), (const void *)long_lock);
	long_next_delay[id] = ts_next_delay_of(ts_config(), (const void *)long_lock);
	if (short_lock != NULL)
		short_delay[id] = ts_delay_of(ts_config(), (const void *)short_lock);
	if (slot_sharer != NULL)
		sharer_delay[id] = ts_delay_of(ts_config(), (const void *)slot_sharer);
	return NULL;
}

static void run(int threads, long n)
{
	pthread_t tids[8];

	rounds = n;
	for (int i = 0; i < threads; i++)
		cr_assert_eq(pthread_create(&tids[i], NULL, contend, (void *)(uintptr_t)i), 0);
	for (int i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
}

static unsigned slot_of(const void *lock, unsigned bits)
{
	return ts_lock_hash(lock) >> (32 - bits);
}

/* Two locks from the pool whose hashed-table slots differ (or, with @same, match). */
static void pick_locks(int same)
{
	for (int i = 1; i < 64; i++) {
		if ((slot_of(&lock_pool[0].word, 6) == slot_of(&lock_pool[i].word, 6)) == same) {
			long_lock = &lock_pool[0].word;
			short_lock = &lock_pool[i].word;
			return;
		}
	}
	cr_skip_test("no pair of pool locks with the wanted slots");
}

static uint32_t max_of(const uint32_t *values, int n)
{
	uint32_t max = 0;

	for (int i = 0; i < n; i++)
		if (values[i] > max)
			max = values[i];
	return max;
}

static void environment_with(const char *delay, const char *table)
{
	setenv("TICKET_DELAY", delay, 1);
	setenv("TICKET_DELAY_TABLE", table, 1);
	setenv("TICKET_WAIT", "yield", 1); /* FIFO, and no collapse on 2 CPUs */
	setenv("TICKET_QUEUE", "0", 1);
}

static void environment(const char *table)
{
	environment_with("auto", table);
}

Test(autotune, contention_raises_the_delay_above_the_minimum)
{
	environment("hashed");
	cr_assert_eq(ts_config()->delay_mode, TS_DELAY_AUTO);
	long_lock = &lock_pool[0].word;
	short_lock = NULL;
	run(4, 3000);
	cr_assert_gt(max_of(long_delay, 4), ts_config()->delay_min << TS_DELAY_SHIFT,
	             "no thread tuned its delay up (max %u)", max_of(long_delay, 4));
}

Test(autotune, hashed_table_keeps_per_lock_delays)
{
	environment("hashed");
	pick_locks(0);
	run(4, 3000);
	cr_assert_gt(max_of(long_delay, 4), max_of(short_delay, 4),
	             "long-held lock delay %u should exceed short-held lock delay %u",
	             max_of(long_delay, 4), max_of(short_delay, 4));
}

Test(autotune, single_table_shares_one_delay)
{
	environment("single");
	pick_locks(0);
	run(4, 3000);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(long_delay[i], short_delay[i], "thread %d: %u vs %u", i,
		             long_delay[i], short_delay[i]);
	cr_assert_gt(max_of(long_delay, 4), ts_config()->delay_min << TS_DELAY_SHIFT);
}

Test(autotune, a_lock_on_another_locks_slot_starts_from_the_minimum)
{
	uint32_t min;
	int tuned = 0;

	environment("hashed");
	pick_locks(1);
	slot_sharer = short_lock; /* same slot, never contended */
	short_lock = NULL;
	cr_assert_neq(ts_lock_hash((void *)slot_sharer), ts_lock_hash((void *)long_lock));
	run(4, 3000);
	min = ts_config()->delay_min << TS_DELAY_SHIFT;
	for (int i = 0; i < 4; i++) {
		if (long_delay[i] <= min)
			continue;
		tuned++;
		cr_assert_eq(sharer_delay[i], min,
		             "thread %d: the slot holds %u for another lock, yet the sharer "
		             "starts from %u instead of the minimum %u",
		             i, long_delay[i], sharer_delay[i], min);
	}
	cr_assert_gt(tuned, 0, "no thread tuned its delay: the test proved nothing");
}

/*
 * auto tunes the next in line's pause too: with a lock held 400 pauses at a
 * time, looking every pause finds it busy hundreds of times per hand-over,
 * and the pause grows.  The series' mode keeps the next in line polling.
 */
Test(autotune, auto_tunes_the_next_in_line)
{
	environment("hashed");
	long_lock = &lock_pool[0].word;
	short_lock = NULL;
	run(2, 3000);
	cr_assert_gt(max_of(long_next_delay, 2), TS_DELAY_ONE,
	             "the next in line's pause was not tuned up (max %u)",
	             max_of(long_next_delay, 2));
}

Test(autotune, series_mode_keeps_the_next_in_line_polling)
{
	environment_with("series", "hashed");
	cr_assert_eq(ts_config()->delay_mode, TS_DELAY_SERIES);
	long_lock = &lock_pool[0].word;
	short_lock = NULL;
	run(4, 3000);
	cr_assert_eq(max_of(long_next_delay, 4), TS_DELAY_ONE);
	cr_assert_gt(max_of(long_delay, 4), ts_config()->delay_min << TS_DELAY_SHIFT,
	             "the series' far waiters still tune (max %u)", max_of(long_delay, 4));
}
