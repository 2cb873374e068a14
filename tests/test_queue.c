/*
 * The queue's promises, through the core linked in, on words set up by hand
 * (test_bypass.c has the bound on stealing and strict FIFO): a head that
 * does not watch is passed without counting; a process-shared lock draws
 * no ticket; and a waiter that is not running (a phantom ticket at the head: no
 * thread holds it) does not keep the running ones out: the last in the queue
 * gives its ticket back and takes the lock (escape), in every waiting
 * policy, and threads that keep coming all progress.  Each test sets its
 * environment before the core first reads it.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "options.h"
#include "parking.h"
#include "ticket_lock.h"

static ts_word_t lock_word __attribute__((aligned(64)));

static uint32_t word(void)
{
	return __atomic_load_n(&lock_word, __ATOMIC_ACQUIRE);
}

/* A queue of one phantom ticket (@head), the lock free; @flags: TS_WATCHING, bypass. */
static uint32_t phantom_word(uint8_t head, uint32_t flags)
{
	return (uint32_t)head << TS_HEAD_SHIFT | (uint32_t)(head + 1) << TS_NEXT_SHIFT | flags;
}

static void phantom_head(uint8_t head, uint32_t flags)
{
	__atomic_store_n(&lock_word, phantom_word(head, flags), __ATOMIC_RELEASE);
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
 * A process-shared lock has no queue (ticket_lock.h, "Shared words"): a
 * waiter draws no ticket and leaves nothing in the word but
 * TS_SHARED_SLEEPERS before it sleeps (TICKET_SPIN=1: at once), and takes
 * the lock at our unlock keeping that bit, since it slept (I5); its own
 * unlock clears it.  On a converted word whose tickets drain (here a
 * phantom's, free), a locker and a trylock take the free lock and leave
 * the tickets alone.
 */
Test(queue, a_process_shared_lock_draws_no_ticket, .timeout = 10)
{
	pthread_t tid;
	uint32_t seen = 0;

	setenv("TICKET_SPIN", "1", 1);
	setenv("TICKET_WAIT", "park", 1);
	__atomic_store_n(&lock_word, TS_SHARED, __ATOMIC_RELEASE);
	ts_lock(&lock_word, NULL);
	cr_assert_eq(word(), TS_SHARED | TS_LOCKED, "%#x", word());
	cr_assert_eq(pthread_create(&tid, NULL, lock_once, &seen), 0);
	while (!(word() & TS_SHARED_SLEEPERS))
		sched_yield();
	cr_assert_eq(word(), TS_SHARED | TS_LOCKED | TS_SHARED_SLEEPERS,
	             "a waiter left more than its announcement: %#x", word());
	cr_assert(ts_unlock(&lock_word));
	pthread_join(tid, NULL);
	cr_assert_eq(seen, TS_SHARED | TS_LOCKED | TS_SHARED_SLEEPERS,
	             "the sleeper took the lock without keeping the bit: %#x", seen);
	cr_assert_eq(word(), TS_SHARED, "its unlock left %#x", word());

	phantom_head(10, TS_SHARED);
	ts_lock(&lock_word, NULL);
	cr_assert_eq(word(), phantom_word(10, TS_SHARED) | TS_LOCKED, "%#x", word());
	cr_assert(ts_unlock(&lock_word));
	cr_assert(ts_trylock(&lock_word), "trylock failed on a free lock: %#x", word());
	cr_assert_eq(word(), phantom_word(10, TS_SHARED) | TS_LOCKED, "%#x", word());
	cr_assert(ts_unlock(&lock_word));
	cr_assert_eq(word(), phantom_word(10, TS_SHARED), "%#x", word());
}

/*
 * The rest on a shared word (slowpath.c, wait_shared()): a waiter that lost
 * the lock to another rests TICKET_REST_US, holding nothing, once per
 * acquisition.  We hold the lock; a waiter sleeps on the word
 * (TICKET_SPIN=1), announced; we do what a release followed at once by
 * another's take does, in one step (no scheduler can come between): clear
 * the bit, keeping the lock, and wake the waiter.  It finds the lock held,
 * lost, and rests (50 ms), while we release the lock for good.  One rest
 * in all, by it; we never wait.
 */
static uint32_t shared_seen;

/* Threads of this process asleep in futex(2) on @uaddr (/proc/self/task/TID/syscall). */
static int threads_asleep_on(const void *uaddr)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *e;
	int asleep = 0;

	cr_assert_not_null(dir, "/proc/self/task: the test needs it");
	while ((e = readdir(dir)) != NULL) {
		char path[300], buf[256];
		unsigned long nr, addr;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/syscall", e->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(buf, sizeof(buf), f) != NULL && sscanf(buf, "%lu %lx", &nr, &addr) == 2 &&
		    nr == SYS_futex && addr == (unsigned long)(uintptr_t)uaddr)
			asleep++;
		fclose(f);
	}
	closedir(dir);
	return asleep;
}

static void *shared_lock_once(void *arg)
{
	(void)arg;
	ts_lock(&lock_word, NULL);
	shared_seen = word();
	cr_assert(ts_unlock(&lock_word));
	return NULL;
}

Test(queue, a_shared_waiter_woken_to_a_lock_taken_again_rests, .timeout = 20)
{
	pthread_t tid;
	struct ts_sleep_counts before, after;

	setenv("TICKET_SPIN", "1", 1);
	setenv("TICKET_WAIT", "park", 1);
	setenv("TICKET_REST_US", "50000", 1);
	__atomic_store_n(&lock_word, TS_SHARED, __ATOMIC_RELEASE);
	ts_sleep_counts(&before);
	ts_lock(&lock_word, NULL);
	cr_assert_eq(pthread_create(&tid, NULL, shared_lock_once, NULL), 0);
	while (threads_asleep_on(&lock_word) < 1) /* asleep, not only announced */
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	cr_assert_eq(__atomic_fetch_and(&lock_word, ~TS_SHARED_SLEEPERS, __ATOMIC_SEQ_CST),
	             TS_SHARED | TS_LOCKED | TS_SHARED_SLEEPERS);
	cr_assert_eq(syscall(SYS_futex, &lock_word, FUTEX_WAKE, 1, NULL, NULL, 0), 1);
	nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	cr_assert(ts_unlock(&lock_word));
	pthread_join(tid, NULL);
	ts_sleep_counts(&after);
	cr_assert_eq(after.rests - before.rests, 1,
	             "%llu rests: a waiter that lost the lock to another must rest once",
	             (unsigned long long)(after.rests - before.rests));
	cr_assert_eq(ts_queued(shared_seen), 0, "a ticket on a shared word: %#x", shared_seen);
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
