/*
 * Auto-tuning and the delay table, through the core library linked in (the
 * same code the preload object runs, reached without exports).  Each test
 * sets its environment before the core first reads it.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "options.h"
#include "slowpath.h"
#include "ticket_lock.h"

struct padded_lock {
	ts_word_t word;
} __attribute__((aligned(64)));

/*
 * Enough locks that one shares lock 0's slot of the 64-slot table with
 * near certainty: 1023 others miss it with probability (63/64)^1023, 1e-7.
 */
#define POOL_LOCKS 1024
static struct padded_lock lock_pool[POOL_LOCKS];
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
	for (int i = 1; i < POOL_LOCKS; i++) {
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

/* ---- per-lock delays that last, and a tuner that comes back down ---------- */

/*
 * Two phases in the same threads (the table is per thread): first every
 * thread contends for @first_lock, held @first_hold pauses; then, after a
 * barrier, for @second_lock, held @second_hold pauses.  Records, per thread,
 * the first lock's delay after each phase and the second lock's at the end.
 */
static ts_word_t *first_lock, *second_lock;
static unsigned first_hold, second_hold;
static long second_rounds;
static pthread_barrier_t between_phases;
static uint32_t first_after_1[8], first_after_2[8], second_after_2[8];

static void *two_phases(void *arg)
{
	int id = (int)(uintptr_t)arg;

	for (long i = 0; i < rounds; i++) {
		ts_lock(first_lock, NULL);
		hold(first_hold);
		ts_unlock(first_lock);
	}
	first_after_1[id] = ts_delay_of(ts_config(), (const void *)first_lock);
	pthread_barrier_wait(&between_phases);
	for (long i = 0; i < second_rounds; i++) {
		ts_lock(second_lock, NULL);
		hold(second_hold);
		ts_unlock(second_lock);
	}
	first_after_2[id] = ts_delay_of(ts_config(), (const void *)first_lock);
	second_after_2[id] = ts_delay_of(ts_config(), (const void *)second_lock);
	return NULL;
}

/*
 * We hold @lock until all @threads have drawn a ticket for it (strict FIFO:
 * no one steals it), and a little longer, then release it.  Every ticket
 * but the first is a far waiter (two acquisitions or more ahead: us and the
 * first) whose looks find the lock held: each raises its delay above the
 * minimum (+1/7 unit), where it stays, since an oversleep lowers a delay
 * only from 2 units, and never below the minimum (backoff.c).  The 2 ms
 * only let the far waiters make their first look before our release; a
 * later look by the last of them still finds the lock held by a ticket
 * ahead, unless every one ahead had been served while it had no CPU.
 */
static void hold_until_all_queued(ts_word_t *lock, int threads)
{
	while (ts_queued(__atomic_load_n(lock, __ATOMIC_ACQUIRE)) < (unsigned)threads)
		usleep(100);
	usleep(2000);
	cr_assert(ts_unlock(lock));
}

/*
 * Each phase starts with every thread queued behind us (hold_until_all_queued()),
 * so that at least three of four tune each lock's delay, and at least two
 * hold both: contention alone left the short-held second lock's delays all
 * at the minimum about one run in 20 (no thread ever waited two
 * acquisitions behind on it).
 */
static void run_two_phases(int threads, long n1, long n2)
{
	pthread_t tids[8];

	rounds = n1;
	second_rounds = n2;
	cr_assert_eq(pthread_barrier_init(&between_phases, NULL, (unsigned)threads), 0);
	ts_lock(first_lock, NULL);
	ts_lock(second_lock, NULL);
	for (int i = 0; i < threads; i++)
		cr_assert_eq(pthread_create(&tids[i], NULL, two_phases, (void *)(uintptr_t)i), 0);
	hold_until_all_queued(first_lock, threads);
	hold_until_all_queued(second_lock, threads);
	for (int i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	pthread_barrier_destroy(&between_phases);
}

/*
 * TICKET_DELAY_TABLE=hashed keeps one tuned delay per lock: a thread that
 * tuned a long-held lock, then contends for a short-held one on another
 * slot, still has the first lock's delay, and holds tuned delays for both
 * locks at once.  (With one entry for every lock, the second lock's first
 * contended acquisition takes the entry over, and the first lock's delay
 * starts again from the minimum.)
 */
Test(autotune, hashed_table_keeps_each_locks_delay_while_another_is_tuned)
{
	uint32_t min;
	int both = 0;

	environment("hashed");
	pick_locks(0);
	first_lock = long_lock;
	second_lock = short_lock;
	first_hold = 400;
	second_hold = 40;
	run_two_phases(4, 3000, 6000);
	min = ts_config()->delay_min << TS_DELAY_SHIFT;
	cr_assert_gt(max_of(first_after_1, 4), min, "no thread tuned the first lock: proves nothing");
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(first_after_2[i], first_after_1[i],
		             "thread %d: contending for another lock changed the first lock's delay "
		             "from %u to %u", i, first_after_1[i], first_after_2[i]);
		both += first_after_2[i] > min && second_after_2[i] > min;
	}
	cr_assert_gt(both, 0, "no thread holds tuned delays for two locks at once "
	             "(first: %u %u %u %u; second: %u %u %u %u)",
	             first_after_2[0], first_after_2[1], first_after_2[2], first_after_2[3],
	             second_after_2[0], second_after_2[1], second_after_2[2], second_after_2[3]);
}

/*
 * The tuner comes back down.  One thread, T, waits as the far waiter (behind
 * the head of the queue, a thread queued while the main thread holds) in
 * rounds.  First the lock is held 20 ms: T's looks find it busy, and its
 * delay grows.  Then the hold time drops to nothing: the next in line takes
 * and releases the lock at once, and T's first look finds its turn already
 * come (it overslept): its delay must fall.  Counted, not timed: the rounds
 * after which T's delay was lower than before.  (A round in which the next
 * in line lost its CPU ends with busy looks instead, a little higher; with
 * TICKET_DELAY_MIN set to 200, T's first look comes 200 pauses or more after
 * its draw, time enough for a running next in line.)
 *
 * The long rounds must outgrow the oversleep that ends each of them: a busy
 * look adds 1/7 unit, an oversleep takes delay/32.  At 200 units a look is
 * some 4 us (18 ns a pause here, more on older cores), so 20 ms gives
 * hundreds of looks, +50 units or more, against -7: margin enough for a T
 * that gets a tenth of a CPU beside the other tests.  (At 1000 units and
 * 10 ms the two were even, and the test failed one run in seven.)
 */
static ts_word_t *far_lock;
static int far_go, far_done;
static uint32_t far_delay[64];
static ts_word_t *far_read[2]; /* T's delays for these locks, at the end: far_end[] */
static uint32_t far_end[2];

/* The holder and the threads queued behind it (the holder has no ticket). */
static unsigned tickets_in_line(void)
{
	uint32_t word = __atomic_load_n(far_lock, __ATOMIC_ACQUIRE);

	return ts_queued(word) + (ts_is_held(word) ? 1u : 0u);
}

static void *take_once(void *arg)
{
	(void)arg;
	ts_lock(far_lock, NULL);
	ts_unlock(far_lock);
	return NULL;
}

static void *far_waiter(void *arg)
{
	int rounds_left = (int)(intptr_t)arg;

	for (int r = 0; r < rounds_left; r++) {
		while (__atomic_load_n(&far_go, __ATOMIC_ACQUIRE) == r)
			sched_yield();
		ts_lock(far_lock, NULL);
		ts_unlock(far_lock);
		far_delay[r] = ts_delay_of(ts_config(), (const void *)far_lock);
		__atomic_store_n(&far_done, r + 1, __ATOMIC_RELEASE);
	}
	for (int i = 0; i < 2; i++)
		if (far_read[i] != NULL)
			far_end[i] = ts_delay_of(ts_config(), (const void *)far_read[i]);
	return NULL;
}

/*
 * Runs T as the far waiter for @n rounds: in round r, on @locks[r], held
 * @hold_us[r] microseconds by the main thread while the next in line and T
 * queue behind it.  T's delay after each round lands in far_delay[], and
 * its delays for far_read[] at the end in far_end[].
 */
static void far_rounds(ts_word_t *const *locks, const unsigned *hold_us, int n)
{
	pthread_t far, next;

	far_go = far_done = 0;
	cr_assert_eq(pthread_create(&far, NULL, far_waiter, (void *)(intptr_t)n), 0);
	for (int r = 0; r < n; r++) {
		/* far_go's RELEASE publishes far_lock to T; pthread_create to the next. */
		far_lock = locks[r];
		ts_lock(far_lock, NULL);
		cr_assert_eq(pthread_create(&next, NULL, take_once, NULL), 0);
		while (tickets_in_line() < 2)
			sched_yield();
		__atomic_store_n(&far_go, r + 1, __ATOMIC_RELEASE);
		while (tickets_in_line() < 3)
			sched_yield();
		if (hold_us[r] > 0)
			usleep(hold_us[r]);
		cr_assert(ts_unlock(far_lock));
		pthread_join(next, NULL);
		while (__atomic_load_n(&far_done, __ATOMIC_ACQUIRE) < r + 1)
			sched_yield();
	}
	pthread_join(far, NULL);
}

static void far_environment(void)
{
	environment("hashed");
	setenv("TICKET_WAIT", "spin", 1); /* T looks, never sleeps */
	setenv("TICKET_DELAY_MIN", "200", 1); /* a look costs 200 pauses or more */
}

Test(autotune, the_delay_comes_back_down_when_the_hold_time_drops)
{
	enum { LONG_ROUNDS = 10, SHORT_ROUNDS = 30, ROUNDS = LONG_ROUNDS + SHORT_ROUNDS };
	ts_word_t *locks[ROUNDS];
	unsigned hold_us[ROUNDS];
	uint32_t min;
	int fell = 0;

	far_environment();
	for (int r = 0; r < ROUNDS; r++) {
		locks[r] = &lock_pool[0].word;
		hold_us[r] = r < LONG_ROUNDS ? 20000 : 0;
	}
	far_rounds(locks, hold_us, ROUNDS);
	min = ts_config()->delay_min << TS_DELAY_SHIFT;
	cr_assert_gt(far_delay[LONG_ROUNDS - 1], min,
	             "the long holds did not tune the far waiter's delay up (%u, minimum %u): "
	             "proves nothing", far_delay[LONG_ROUNDS - 1], min);
	for (int r = LONG_ROUNDS; r < ROUNDS; r++)
		fell += far_delay[r] < far_delay[r - 1];
	cr_assert_gt(fell, 0, "in %d rounds without a hold, the far waiter's delay never fell "
	             "(%u after the long holds, %u at the end)", SHORT_ROUNDS,
	             far_delay[LONG_ROUNDS - 1], far_delay[ROUNDS - 1]);
}

/*
 * TICKET_DELAY_TABLE=hashed keeps a delay per lock: T waits in rounds
 * alternately on a long-held lock and, on another slot, a lock its turn
 * comes for at once.  The long-held lock's delay ends above the other's.
 * (Scripted rounds, not free-running threads: four threads on two CPUs
 * preempt holders of either lock, and the short-held one's delay could
 * then grow past the other's.)
 */
Test(autotune, hashed_table_keeps_per_lock_delays)
{
	enum { ROUNDS = 16 };
	ts_word_t *locks[ROUNDS];
	unsigned hold_us[ROUNDS];

	far_environment();
	pick_locks(0);
	for (int r = 0; r < ROUNDS; r++) {
		locks[r] = r % 2 == 0 ? long_lock : short_lock;
		hold_us[r] = r % 2 == 0 ? 20000 : 0;
	}
	far_read[0] = long_lock;
	far_read[1] = short_lock;
	/*
	 * Up to three attempts, each with a new far waiter (a fresh delay
	 * table): how far a delay climbs depends on when the waiter runs, and
	 * one attempt in a fresh-clone CI run left the short-held lock's higher.
	 * A table that does not keep the locks apart fails all three.
	 */
	for (int attempt = 0; attempt < 3; attempt++) {
		far_rounds(locks, hold_us, ROUNDS);
		if (far_end[0] > far_end[1])
			return;
	}
	cr_assert_gt(far_end[0], far_end[1],
	             "long-held lock delay %u should exceed short-held lock delay %u (3 attempts)",
	             far_end[0], far_end[1]);
}

/* The rule itself, at its bounds: oversleeping lowers a delay of 2 units or more. */
Test(autotune, the_rule_lowers_an_overslept_delay_within_the_bounds)
{
	const struct ts_config *cfg;
	uint32_t min, max;

	environment("hashed");
	cfg = ts_config();
	min = cfg->delay_min << TS_DELAY_SHIFT;
	max = cfg->delay_max << TS_DELAY_SHIFT;
	for (uint32_t d = 2 * TS_DELAY_ONE; d <= max; d += d / 3) {
		uint32_t down = ts_delay_after_poll(cfg, d, true);

		cr_assert_lt(down, d, "overslept at %u: %u", d, down);
		cr_assert_geq(down, min);
		cr_assert_geq(ts_delay_after_poll(cfg, d, false), d);
		cr_assert_leq(ts_delay_after_poll(cfg, d, false), max);
		cr_assert_lt(ts_next_delay_after_poll(cfg, d, true), d);
	}
	cr_assert_eq(ts_delay_after_poll(cfg, min, true), min);
	cr_assert_eq(ts_delay_after_poll(cfg, max, false), max);
}

/*
 * A waiter behind a watching head that finds the lock free is waiting for
 * the head to look, not for a holder: those looks must not move the seeds'
 * delay (slowpath.c, look_times_holder()).  Counted as busy, they raised it
 * by 1/7 unit each and the head, pausing by it, overslept every burst.
 * Here the head is a ticket no thread holds, watching, its bypass count
 * spent: we queue behind it and look at a free lock until we pass it (the
 * escape, after TS_ESCAPE_NS: hundreds of looks, one pause apart at the
 * minimum delay; the old rule had raised it to about 17 units by then).
 */
Test(autotune, looks_at_a_free_lock_behind_the_head_leave_the_delay_alone, .timeout = 10)
{
	static struct padded_lock lock;
	const struct ts_config *cfg;
	uint32_t word, min, delay;

	setenv("TICKET_DELAY", "auto", 1);
	cfg = ts_config();
	min = cfg->delay_min << TS_DELAY_SHIFT;
	cr_assert_gt(cfg->bypass_max, 0u);
	__atomic_store_n(&lock.word,
	                 TS_NEXT_ONE | TS_WATCHING | (cfg->bypass_max << TS_BYPASS_SHIFT),
	                 __ATOMIC_RELAXED);
	ts_lock(&lock.word, NULL);
	word = __atomic_load_n(&lock.word, __ATOMIC_RELAXED);
	/* We passed the head as the last in line: our ticket given back, its left. */
	cr_assert(ts_is_held(word), "word %#x", word);
	cr_assert_eq(ts_queued(word), 1, "word %#x", word);
	delay = ts_delay_of(cfg, (const void *)&lock.word);
	cr_assert_eq(delay, min, "the delay moved while we waited for the head: %u (minimum %u)",
	             delay, min);
	cr_assert(ts_unlock(&lock.word));
}

/*
 * README, TICKET_DELAY: "N: N x (acquisitions ahead, holder included)
 * pauses: in the queue, the tickets ahead; at its head, the steals it still
 * allows"; "series: ... the next in line (the head, once it allows no more
 * steals) polls tightly, the others (and a head that still allows steals)
 * pause delay x (acquisitions ahead, holder excluded)".  The distance
 * (ts_acquisitions_ahead()) and the pauses it gives (ts_backoff_pauses()),
 * from words a waiter sees; the lock is held throughout.  (A running head's
 * pause is then capped at TS_HEAD_MAX_PAUSES, 64, in slowpath.c: not seen
 * here.)
 */
static uint32_t watched(uint32_t bypass)
{
	return TS_LOCKED | TS_WATCHING | bypass << TS_BYPASS_SHIFT | 3u << TS_NEXT_SHIFT;
}

Test(autotune, a_fixed_delay_counts_the_holder_and_the_steals_a_watching_head_allows)
{
	const struct ts_config *cfg;

	setenv("TICKET_DELAY", "10", 1);
	setenv("TICKET_BYPASS", "31", 1);
	cfg = ts_config();
	cr_assert_eq(cfg->delay_mode, TS_DELAY_FIXED);
	cr_assert_eq(cfg->bypass_max, 31u);
	/* at the head of a watching queue: the 31 - b steals it still allows, and the holder */
	for (uint32_t b = 0; b <= 31; b++) {
		uint32_t ahead = ts_acquisitions_ahead(cfg, watched(b), 0);

		cr_assert_eq(ahead, 31 - b + 1, "a watching head bypassed %u times of 31: %u "
		             "acquisitions ahead, not %u (the steals it allows, and the holder)",
		             b, ahead, 31 - b + 1);
		cr_assert_eq(ts_backoff_pauses(cfg, 0, 0, (uint16_t)ahead), 10u * (31 - b + 1));
	}
	/* allowing no more steals, or not watching: the holder only */
	cr_assert_eq(ts_acquisitions_ahead(cfg, watched(31), 0), 1u);
	cr_assert_eq(ts_acquisitions_ahead(cfg, watched(0) & ~TS_WATCHING, 0), 1u);
	/* behind the head: the tickets ahead (the head's among them) and the holder */
	for (uint32_t pos = 1; pos < 3; pos++) {
		cr_assert_eq(ts_acquisitions_ahead(cfg, watched(5), pos), pos + 1);
		cr_assert_eq(ts_acquisitions_ahead(cfg, watched(5) & ~TS_WATCHING, pos), pos + 1);
		cr_assert_eq(ts_backoff_pauses(cfg, 0, 0, (uint16_t)(pos + 1)), 10u * (pos + 1));
	}
}

/* The same with TICKET_BYPASS=5: the distance follows the bound in force. */
Test(autotune, the_head_distance_follows_ticket_bypass)
{
	const struct ts_config *cfg;

	setenv("TICKET_DELAY", "7", 1);
	setenv("TICKET_BYPASS", "5", 1);
	cfg = ts_config();
	cr_assert_eq(cfg->bypass_max, 5u);
	for (uint32_t b = 0; b <= 5; b++)
		cr_assert_eq(ts_acquisitions_ahead(cfg, watched(b), 0), b < 5 ? 5 - b + 1 : 1u,
		             "a watching head bypassed %u times of 5", b);
	cr_assert_eq(ts_backoff_pauses(cfg, 0, 0, (uint16_t)ts_acquisitions_ahead(cfg, watched(2), 0)),
	             7u * 4);
}

/*
 * series: the next in line (a head that allows no more steals, or does not
 * watch) polls tightly; a head that still allows s steals pauses delay x s
 * (holder excluded); a waiter p tickets behind the head, delay x p.
 */
Test(autotune, series_a_head_that_still_allows_steals_pauses_delay_times_the_steals)
{
	const struct ts_config *cfg;
	const uint32_t delay = 3u << TS_DELAY_SHIFT; /* 3 pauses */

	setenv("TICKET_DELAY", "series", 1);
	setenv("TICKET_BYPASS", "31", 1);
	cfg = ts_config();
	cr_assert_eq(cfg->delay_mode, TS_DELAY_SERIES);
	for (uint32_t b = 0; b < 31; b++) {
		uint32_t ahead = ts_acquisitions_ahead(cfg, watched(b), 0);
		uint64_t pauses = ts_backoff_pauses(cfg, delay, 0, (uint16_t)ahead);

		cr_assert_eq(pauses, 3u * (31 - b), "a watching head bypassed %u times of 31 "
		             "pauses %llu, not delay x %u steals it still allows", b,
		             (unsigned long long)pauses, 31 - b);
	}
	cr_assert_eq(ts_backoff_pauses(cfg, delay, 0, (uint16_t)ts_acquisitions_ahead(cfg, watched(31), 0)),
	             1u, "the next in line polls tightly");
	cr_assert_eq(ts_backoff_pauses(cfg, delay, 0,
	                               (uint16_t)ts_acquisitions_ahead(cfg, watched(0) & ~TS_WATCHING, 0)),
	             1u, "a head that does not watch is next in line");
	cr_assert_eq(ts_backoff_pauses(cfg, delay, 0, (uint16_t)ts_acquisitions_ahead(cfg, watched(0), 2)),
	             3u * 2, "two tickets behind the head");
}

/*
 * The tuner's rule, as README (TICKET_DELAY) and libticketspin(7) state it:
 * the delay is fixed point with 8 fractional bits; it "gains 1/7 after each
 * look that found the lock busy and loses max(delay/32, 1) after one that
 * found it already theirs, while it is at least 2", within TICKET_DELAY_MIN
 * and TICKET_DELAY_MAX; with auto, the head's pause "gains 1/2 after a busy
 * look and loses as above".  Every delay from the minimum to the maximum,
 * a step at a time, against those numbers.
 */
Test(autotune, the_tuner_gains_a_seventh_loses_a_32nd_at_least_one_from_two)
{
	struct ts_config cfg;
	const uint32_t one = 256; /* 8 fractional bits */

	setenv("TICKET_DELAY_MIN", "1", 1);
	setenv("TICKET_DELAY_MAX", "100", 1);
	cr_assert_eq(ts_config_parse(&cfg), 0);
	cr_assert_eq(1u << TS_DELAY_SHIFT, one, "the delay's fixed point is not 8 bits");
	for (uint32_t d = cfg.delay_min * one; d <= cfg.delay_max * one; d++) {
		uint32_t down = d >= 2 * one ? d - (d / 32 > one ? d / 32 : one) : d;
		uint32_t up = d + one / 7 < cfg.delay_max * one ? d + one / 7 : cfg.delay_max * one;
		uint32_t next_up = d + one / 2 < cfg.delay_max * one ? d + one / 2 : cfg.delay_max * one;

		if (down < cfg.delay_min * one)
			down = cfg.delay_min * one;
		cr_assert_eq(ts_delay_after_poll(&cfg, d, false), up,
		             "a busy look at delay %u: %u, not + 1/7 unit (%u)", d,
		             ts_delay_after_poll(&cfg, d, false), up);
		cr_assert_eq(ts_delay_after_poll(&cfg, d, true), down,
		             "an overslept look at delay %u: %u, not - max(delay/32, 1 unit) from 2 "
		             "units (%u)", d, ts_delay_after_poll(&cfg, d, true), down);
		cr_assert_eq(ts_next_delay_after_poll(&cfg, d, false), next_up,
		             "the head's pause, a busy look at %u: %u, not + 1/2 unit (%u)", d,
		             ts_next_delay_after_poll(&cfg, d, false), next_up);
		if (d >= one)
			cr_assert_eq(ts_next_delay_after_poll(&cfg, d, true), down < one ? one : down,
			             "the head's pause, an overslept look at %u", d);
	}
}

/* TICKET_DELAY=off: "one pause" between two looks, wherever the waiter is. */
Test(autotune, delay_off_is_one_pause)
{
	struct ts_config cfg;

	setenv("TICKET_DELAY", "off", 1);
	cr_assert_eq(ts_config_parse(&cfg), 0);
	for (uint16_t ahead = 1; ahead <= 63; ahead++)
		cr_assert_eq(ts_backoff_pauses(&cfg, 100u << TS_DELAY_SHIFT, 100u << TS_DELAY_SHIFT,
		                               ahead), 1u, "%u acquisitions ahead", ahead);
}

/*
 * README and libticketspin(7), TICKET_DELAY: "In every mode but strict FIFO
 * a head pauses at most 64 pauses between two looks, so that the last in
 * line never takes a running head for a stopped one."  A fixed delay of 10
 * at a watching head that still allows 31 steals would pause 320; a tuned
 * head's pause as long as it likes.  Behind the head, and in strict FIFO,
 * the backoff is not capped.  (ts_pauses_before_look(), which the waiting
 * loop calls, from the distances of ts_acquisitions_ahead().)
 */
static void head_pauses_in_mode(const char *delay, uint32_t tuned)
{
	struct ts_config cfg;
	const uint32_t word = watched(0); /* a watching head, bypassed 0 times of 31 */

	setenv("TICKET_DELAY", delay, 1);
	setenv("TICKET_BYPASS", "31", 1);
	cr_assert_eq(ts_config_parse(&cfg), 0);
	for (uint32_t b = 0; b <= 31; b++) {
		uint32_t w = watched(b);
		uint32_t ahead = ts_acquisitions_ahead(&cfg, w, 0);
		uint64_t uncapped = ts_backoff_pauses(&cfg, tuned, tuned, (uint16_t)ahead);
		uint64_t pauses = ts_pauses_before_look(&cfg, tuned, tuned, ahead, true, false);
		uint64_t strict = ts_pauses_before_look(&cfg, tuned, tuned, ahead, true, true);

		cr_assert_leq(pauses, 64u, "TICKET_DELAY=%s: a head bypassed %u times of 31 pauses "
		              "%llu between two looks, more than 64", delay, b,
		              (unsigned long long)pauses);
		cr_assert_eq(pauses, uncapped < 64 ? (uncapped != 0 ? uncapped : 1) : 64,
		             "TICKET_DELAY=%s, bypassed %u: %llu pauses, the backoff %llu", delay, b,
		             (unsigned long long)pauses, (unsigned long long)uncapped);
		cr_assert_eq(strict, uncapped != 0 ? uncapped : 1,
		             "TICKET_DELAY=%s: a strict FIFO head's backoff was capped: %llu, not %llu",
		             delay, (unsigned long long)strict, (unsigned long long)uncapped);
	}
	/* behind the head: the tickets ahead, never capped */
	for (uint32_t pos = 1; pos < 63; pos++) {
		uint32_t ahead = ts_acquisitions_ahead(&cfg, word, pos);
		uint64_t uncapped = ts_backoff_pauses(&cfg, tuned, tuned, (uint16_t)ahead);

		cr_assert_eq(ts_pauses_before_look(&cfg, tuned, tuned, ahead, false, false),
		             uncapped != 0 ? uncapped : 1, "TICKET_DELAY=%s, %u behind the head",
		             delay, pos);
	}
}

Test(autotune, a_running_head_pauses_at_most_64_pauses_in_every_mode_but_strict_fifo)
{
	/* 10 x 32 = 320 pauses at a head bypassed 0 times: capped */
	head_pauses_in_mode("10", 0);
	cr_assert_eq(ts_pauses_before_look(&(struct ts_config){ .delay_mode = TS_DELAY_FIXED,
	                                                         .delay_factor = 10,
	                                                         .bypass_max = 31 },
	                                   0, 0, 32, true, false), 64u);
	/* tuned delays of 50 units: 50 x 31 steals (series, auto), 50 for the head (auto) */
	head_pauses_in_mode("series", 50u << TS_DELAY_SHIFT);
	head_pauses_in_mode("auto", 50u << TS_DELAY_SHIFT);
	head_pauses_in_mode("off", 50u << TS_DELAY_SHIFT);
}

/*
 * TICKET_DELAY_TABLE=hashed: "each thread keeps 2^TICKET_DELAY_HASH_BITS
 * delays indexed by a hash of the lock address, tagged so a lock landing on
 * another's entry starts from the minimum".  A thread claims an entry for
 * each of 1024 locks in turn and leaves a tuned delay in it: a lock keeps
 * its delay only while no later lock landed on its entry, so as many locks
 * keep theirs as there are entries (1024 locks leave one of 64 entries
 * unclaimed with probability 64 x (63/64)^1024, 1e-5; fewer entries, less).
 * Every size from 0 to 6 bits; single: one delay for every lock.
 */
static unsigned locks_keeping_their_delay(const struct ts_config *cfg)
{
	const uint32_t tuned = 77u << TS_DELAY_SHIFT;
	unsigned kept = 0;

	for (int i = 0; i < POOL_LOCKS; i++) {
		uint32_t delay, next_delay;
		struct ts_delay_entry *entry = ts_delay_entry_claim(cfg, ts_lock_hash(&lock_pool[i].word),
		                                                    &delay, &next_delay);

		entry->delay = tuned;
	}
	for (int i = 0; i < POOL_LOCKS; i++)
		kept += ts_delay_of(cfg, &lock_pool[i].word) == tuned;
	return kept;
}

Test(autotune, the_hashed_table_holds_2_to_the_hash_bits_delays)
{
	for (unsigned bits = 0; bits <= 6; bits++) {
		struct ts_config cfg;
		char value[4];
		unsigned kept;

		snprintf(value, sizeof(value), "%u", bits);
		setenv("TICKET_DELAY_HASH_BITS", value, 1);
		setenv("TICKET_DELAY_TABLE", "hashed", 1);
		cr_assert_eq(ts_config_parse(&cfg), 0);
		kept = locks_keeping_their_delay(&cfg);
		cr_assert_eq(kept, 1u << bits,
		             "TICKET_DELAY_HASH_BITS=%u: %u locks kept their own delay, not 2^%u",
		             bits, kept, bits);
	}
	{
		struct ts_config cfg;

		setenv("TICKET_DELAY_TABLE", "single", 1);
		cr_assert_eq(ts_config_parse(&cfg), 0);
		cr_assert_eq(locks_keeping_their_delay(&cfg), (unsigned)POOL_LOCKS,
		             "single: one delay for every lock");
	}
}
