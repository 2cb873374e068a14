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
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "fork.h"
#include "options.h"
#include "parking.h"
#include "ticket_lock.h"

/*
 * The tests' limits (.timeout = 30): each runs in well under a second, and
 * fails at the first missed wake-up, one 5 s nap in; the limit is for a
 * hang, a quick failure here, not the 600 s of tests/mutants.sh.
 */
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
	int served;

	ts_lock(&lock_word, NULL);
	served = __atomic_load_n(&grants, __ATOMIC_RELAXED);
	granted[served] = (int)(intptr_t)arg;
	/* Under the lock; atomic only for served_or_a_lost_wake_up()'s look. */
	__atomic_store_n(&grants, served + 1, __ATOMIC_RELEASE);
	cr_assert(ts_unlock(&lock_word));
	return NULL;
}

/*
 * Waits until @waiters have been served, and fails at the first sleep that
 * ended by its timeout since @before: a missed wake-up, which costs a 5 s
 * nap, so that a mutant that loses them all (a chain of five waiters: 25 s
 * a round) fails in one nap, not after every round has run (at 120 s a test
 * `make mutants` spent 250-312 s on each such mutant).
 */
static void served_or_a_lost_wake_up(int waiters, const struct ts_sleep_counts *before,
                                     int round)
{
	struct ts_sleep_counts now;

	while (__atomic_load_n(&grants, __ATOMIC_ACQUIRE) < waiters) {
		ts_sleep_counts(&now);
		cr_assert_eq(now.timed_out - before->timed_out, 0,
		             "round %d: a sleep ended by its timeout: a missed wake-up", round);
		usleep(1000);
	}
}

/* Waiters in the queue (the holder has no ticket). */
/*
 * Since @before, no sleep ended by its timeout (a missed wake-up), and
 * enough were woken for that to mean something: most of @rounds x @waiters
 * sleep; a few may find their turn before they sleep (98 of 100 in one ASan
 * run), so half.
 */
static void no_sleep_timed_out(const struct ts_sleep_counts *before, int rounds, int waiters)
{
	struct ts_sleep_counts after;

	ts_sleep_counts(&after);
	cr_assert_eq(after.timed_out - before->timed_out, 0,
	             "%llu sleeps ended by their timeout: missed wake-ups",
	             (unsigned long long)(after.timed_out - before->timed_out));
	cr_assert_geq(after.woken - before->woken, (uint64_t)rounds * (unsigned)waiters / 2,
	              "too few sleeps for the test to mean anything (%llu)",
	              (unsigned long long)(after.woken - before->woken));
}

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
	struct ts_sleep_counts before;
	pthread_t tids[16];

	ts_sleep_counts(&before);
	for (int round = 0; round < rounds; round++) {
		int seen[16] = { 0 };

		__atomic_store_n(&grants, 0, __ATOMIC_RELAXED);
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
		served_or_a_lost_wake_up(waiters, &before, round);
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
	no_sleep_timed_out(&before, rounds, waiters);
}

/* Strict FIFO: the head sleeps (TS_WAKE_HEAD); the holder's unlock must wake it. */
Test(wakeup, sleeping_head_is_woken_by_the_unlock, .timeout = 30)
{
	long_naps("0");
	rounds_of(1, 30, 16, true);
}

/*
 * Strict FIFO: waiters behind the head sleep (TS_SLEEPERS); each is woken
 * by the unlock of the waiter served before it (TS_WAKE_NEXT), then sleeps
 * again as the head until that unlock.
 */
Test(wakeup, waiters_behind_the_head_are_woken_in_a_chain, .timeout = 30)
{
	long_naps("0");
	rounds_of(5, 20, 16, true);
}

/*
 * The default (stealing, restriction): waiters behind the head sleep at
 * once, the head when the holder keeps the lock; no order is promised
 * here, only that every one is served, woken.
 */
Test(wakeup, woken_in_the_default_mode_too, .timeout = 30)
{
	long_naps(NULL);
	rounds_of(5, 20, 16, false);
}

/*
 * Threads of this process asleep in futex(2) on @uaddr: /proc/self/task/TID/
 * syscall reads "202 0xUADDR ..." (SYS_futex, then its arguments) while a
 * thread is blocked there.
 */
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
			continue; /* that thread has just exited */
		if (fgets(buf, sizeof(buf), f) != NULL && sscanf(buf, "%lu %lx", &nr, &addr) == 2 &&
		    nr == SYS_futex && addr == (unsigned long)(uintptr_t)uaddr)
			asleep++;
		fclose(f);
	}
	closedir(dir);
	return asleep;
}

/*
 * A process-shared lock (no queue: ticket_lock.h, "Shared words"): rounds
 * of: hold the lock, let @waiters announce themselves (TS_SHARED_SLEEPERS)
 * and fall asleep on the word, unlock.  Our unlock wakes one; each woken
 * thread takes the lock keeping the bit (I5), so its unlock wakes the next:
 * all must be served, each woken, none by its nap running out.  No order.
 */
static void shared_rounds_of(int waiters, int rounds)
{
	struct ts_sleep_counts before;
	pthread_t tids[16];

	__atomic_store_n(&lock_word, TS_SHARED, __ATOMIC_RELAXED);
	ts_sleep_counts(&before);
	for (int round = 0; round < rounds; round++) {
		__atomic_store_n(&grants, 0, __ATOMIC_RELAXED);
		ts_lock(&lock_word, NULL);
		for (int i = 0; i < waiters; i++)
			cr_assert_eq(pthread_create(&tids[i], NULL, waiter, (void *)(intptr_t)i), 0);
		/* Nothing in the word counts them: the kernel's view of each thread does. */
		while (threads_asleep_on(&lock_word) < waiters)
			usleep(1000);
		cr_assert_eq(tickets_drawn(), 0, "a ticket drawn on a shared word: %#x", lock_word);
		cr_assert(ts_unlock(&lock_word));
		served_or_a_lost_wake_up(waiters, &before, round);
		for (int i = 0; i < waiters; i++)
			pthread_join(tids[i], NULL);
		cr_assert_eq(grants, waiters);
		cr_assert_eq(lock_word, TS_SHARED, "round %d: word %#x left", round, lock_word);
	}
	no_sleep_timed_out(&before, rounds, waiters);
}

Test(wakeup, woken_on_a_process_shared_lock, .timeout = 30)
{
	long_naps(NULL);
	shared_rounds_of(4, 20);
}

/*
 * Invariant I5's second half: a thread woken on a shared word that rests
 * instead of taking the lock sets TS_SHARED_SLEEPERS again first.  Two
 * waiters asleep on the word; we do what a release that another thread
 * followed at once with a take does, in one step, so that no scheduler
 * can come between: clear the bit, keeping the lock, and wake one sleeper.
 * It finds the lock lost and rests (100 ms).  Our unlock, while it rests,
 * must wake the other, asleep all along, which is then served first.
 * Without the bit the unlock goes by the fast path, and the other waits
 * until the rester comes back, takes the lock (with the bit: it slept) and
 * wakes it: served second.
 */
static pid_t rester_tids[2];

static void *tid_waiter(void *arg)
{
	__atomic_store_n(&rester_tids[(intptr_t)arg], (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	return waiter(arg);
}

/* Where thread @tid of this process sleeps in futex(2): the address, or 0. */
static unsigned long futex_of(pid_t tid)
{
	char path[64], buf[256];
	unsigned long nr, addr, at = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	if (fgets(buf, sizeof(buf), f) != NULL && sscanf(buf, "%lu %lx", &nr, &addr) == 2 &&
	    nr == SYS_futex)
		at = addr;
	fclose(f);
	return at;
}

Test(wakeup, a_woken_waiter_that_rests_leaves_the_others_their_wake_up, .timeout = 30)
{
	struct ts_sleep_counts before, after;
	pthread_t tids[2];
	int left = -1;

	long_naps(NULL);
	setenv("TICKET_REST_US", "100000", 1);
	__atomic_store_n(&lock_word, TS_SHARED, __ATOMIC_RELAXED);
	__atomic_store_n(&grants, 0, __ATOMIC_RELAXED);
	ts_sleep_counts(&before);
	ts_lock(&lock_word, NULL);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&tids[i], NULL, tid_waiter, (void *)(intptr_t)i), 0);
	while (threads_asleep_on(&lock_word) < 2)
		usleep(1000);
	cr_assert_eq(__atomic_fetch_and(&lock_word, ~TS_SHARED_SLEEPERS, __ATOMIC_SEQ_CST),
	             TS_SHARED | TS_LOCKED | TS_SHARED_SLEEPERS);
	cr_assert_eq(syscall(SYS_futex, &lock_word, FUTEX_WAKE, 1, NULL, NULL, 0), 1);
	/*
	 * Which one is still asleep on the word, once the other sleeps its rest
	 * (a futex of its own, woken by no one): it has looked, and lost.
	 */
	for (int ms = 0; ms < 50 && left < 0; ms++) {
		unsigned long at[2] = { futex_of(rester_tids[0]), futex_of(rester_tids[1]) };
		unsigned long word_at = (unsigned long)(uintptr_t)&lock_word;

		for (int i = 0; i < 2; i++)
			if (at[i] == word_at && at[!i] != 0 && at[!i] != word_at)
				left = i;
		if (left < 0)
			usleep(1000);
	}
	cr_assert_geq(left, 0, "the woken waiter did not go to rest");
	cr_assert(ts_unlock(&lock_word)); /* while it rests: must wake the other */
	served_or_a_lost_wake_up(2, &before, 0);
	for (int i = 0; i < 2; i++)
		pthread_join(tids[i], NULL);
	ts_sleep_counts(&after);
	cr_assert_eq(after.rests - before.rests, 1, "%llu rests: the scenario did not happen",
	             (unsigned long long)(after.rests - before.rests));
	cr_assert_eq(granted[0], left, "the waiter left asleep (%d) was served after the one "
	             "that rested (%d): our unlock did not wake it", left, granted[0]);
	cr_assert_eq(after.timed_out - before.timed_out, 0, "a sleep ended by its timeout");
}

/*
 * A queue of 2 (TICKET_QUEUE=2): three of five waiters sleep outside it, and
 * are woken as the queue makes room.
 */
Test(wakeup, woken_outside_a_full_queue, .timeout = 30)
{
	long_naps("2");
	rounds_of(5, 20, 2, false);
}

/*
 * Issue 18 item 8: a forked child must not wait for, or make way for, the
 * parent's sleepers.  The library before the redesign (8e726fe) kept a
 * per-process count of threads asleep outside the line; a child inherited
 * it with no thread behind it, and then every 512 contended acquisitions a
 * thread stepped out to "take turns" with that phantom and slept a whole
 * nap (shown against 8e726fe with a program of this shape: 19-21 naps in
 * 10,240 scripted rounds, 0-2 without the parent's sleepers).  Here, with
 * 5 s naps, any sleep the child's waiters end by timeout is a wait for
 * someone who is not there.
 */
static volatile int child_phase;

static void *child_holder(void *arg)
{
	int rounds = (int)(intptr_t)arg;

	for (int r = 0; r < rounds; r++) {
		ts_lock(&lock_word, NULL);
		__atomic_store_n(&child_phase, 4 * r + 1, __ATOMIC_RELEASE); /* come */
		while (tickets_drawn() == 0) /* the other thread queues behind us */
			sched_yield();
		usleep(20);
		ts_unlock(&lock_word);
		while (__atomic_load_n(&child_phase, __ATOMIC_ACQUIRE) != 4 * r + 3)
			sched_yield();
	}
	return NULL;
}

/* In the child: exit status 0, or which check failed. */
static int child_after_fork(int rounds)
{
	struct ts_sleep_counts before, after;
	pthread_t holder;

	alarm(25); /* never outlive the test's 30 s (a mutant may lose every wake-up) */
	/* The parent's waiters are gone: their tickets must be too. */
	if (ts_queued(__atomic_load_n(&lock_word, __ATOMIC_ACQUIRE)) != 0)
		return 10;
	if (!ts_unlock(&lock_word)) /* the pthread_atfork idiom: the forking thread held it */
		return 11;
	if (lock_word != 0)
		return 12;
	ts_sleep_counts(&before);
	if (pthread_create(&holder, NULL, child_holder, (void *)(intptr_t)rounds) != 0)
		return 13;
	for (int r = 0; r < rounds; r++) {
		while (__atomic_load_n(&child_phase, __ATOMIC_ACQUIRE) != 4 * r + 1)
			sched_yield();
		ts_lock(&lock_word, NULL); /* held: a contended acquisition */
		ts_unlock(&lock_word);
		ts_sleep_counts(&after);
		if (after.timed_out != before.timed_out)
			return 14; /* at once: each such sleep lasts 5 s */
		__atomic_store_n(&child_phase, 4 * r + 3, __ATOMIC_RELEASE);
	}
	pthread_join(holder, NULL);
	ts_sleep_counts(&after);
	if (after.timed_out != before.timed_out)
		return 14; /* slept for a waiter that is not there */
	if (after.woken - before.woken < (uint64_t)rounds / 2)
		return 15; /* too few sleeps for the check to mean anything */
	return lock_word == 0 ? 0 : 16;
}

Test(wakeup, a_forked_child_does_not_inherit_the_parents_sleepers, .timeout = 30)
{
	enum { WAITERS = 6, ROUNDS = 1100 }; /* two of the old code's 512-acquisition turns */
	pthread_t tids[WAITERS];
	int status;
	pid_t pid;

	long_naps("2");
	ts_fork_init(); /* the library's constructor does it; the core linked in has none */
	ts_lock(&lock_word, NULL);
	for (int i = 0; i < WAITERS; i++)
		cr_assert_eq(pthread_create(&tids[i], NULL, waiter, (void *)(intptr_t)i), 0);
	while (tickets_drawn() < 2) /* two in the queue, four outside it */
		sched_yield();
	usleep(50000); /* all asleep */
	pid = fork();
	if (pid == 0)
		_exit(child_after_fork(ROUNDS));
	cr_assert_neq(pid, -1);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "the child died: status %#x", status);
	cr_assert_eq(WEXITSTATUS(status), 0,
	             "the child failed check %d (10-12 the inherited lock, 13 pthread_create, "
	             "14 a sleep ended by its timeout, 15 too few sleeps, 16 the word left held)",
	             WEXITSTATUS(status));
	grants = 0;
	cr_assert(ts_unlock(&lock_word));
	for (int i = 0; i < WAITERS; i++)
		pthread_join(tids[i], NULL);
	cr_assert_eq(grants, WAITERS);
}

/*
 * A request the unlock's fast path missed (it loaded the word before the
 * head set TS_WAKE_HEAD, and stored 0 after: parking.c, "Why no lost
 * wake-up") stays in the word.  We hold the lock, a thread queues and falls
 * asleep as the head with TS_WAKE_HEAD; we release with the fast path's
 * byte store alone, as that race would, so the head sleeps on, the request
 * left.  Then we lock again: with @strict (TICKET_QUEUE=0) our exchange takes
 * the free lock past the queue and must give it back, which must wake the
 * head; by default we keep it (the head no longer watches), and our unlock
 * must.  Either way the head's sleep ends by a wake-up, not its 5 s nap.
 */
static void head_woken_after_a_missed_request(bool strict)
{
	struct ts_sleep_counts before, after;
	pthread_t head;
	uint32_t word;

	long_naps(strict ? "0" : NULL);
	grants = 0;
	ts_lock(&lock_word, NULL);
	cr_assert_eq(pthread_create(&head, NULL, waiter, (void *)(intptr_t)0), 0);
	do {
		sched_yield();
		word = __atomic_load_n(&lock_word, __ATOMIC_ACQUIRE);
	} while (!(word & TS_WAKE_HEAD));
	usleep(20000); /* into its futex sleep (the word says it asked) */
	ts_sleep_counts(&before);
	__atomic_store_n(ts_lock_byte_of(&lock_word), 0, __ATOMIC_RELEASE);
	cr_assert(__atomic_load_n(&lock_word, __ATOMIC_ACQUIRE) & TS_WAKE_HEAD,
	          "the request left in the word");
	ts_lock(&lock_word, NULL);
	cr_assert(ts_unlock(&lock_word));
	pthread_join(head, NULL);
	ts_sleep_counts(&after);
	cr_assert_eq(grants, 1);
	cr_assert_eq(after.timed_out - before.timed_out, 0,
	             "the head slept until its nap ran out: no one served its request");
	cr_assert_geq(after.woken - before.woken, 1u, "the head did not sleep: the test proved nothing");
	word = __atomic_load_n(&lock_word, __ATOMIC_ACQUIRE);
	cr_assert(word == 0, "word %#x left", word);
}

Test(wakeup, a_lock_given_back_wakes_the_head_that_asked, .timeout = 60)
{
	head_woken_after_a_missed_request(true);
}

Test(wakeup, a_request_the_unlock_missed_is_served_by_the_next_unlock, .timeout = 60)
{
	head_woken_after_a_missed_request(false);
}

/*
 * README, TICKET_WAIT: "Every sleep is bounded (1 ms, doubling up to 64 ms
 * while nothing moves)"; parking.h: a thread waiting on a lock that never
 * comes free costs 16 wake-ups a second.  The rule itself, as the sleepers
 * apply it after each sleep (ts_nap_after()): 1 ms, then each nap that ran
 * out doubles the next up to 64 ms, where it stays; a wake-up (or a sleep
 * skipped because the word moved) starts over at 1 ms.
 */
Test(wakeup, naps_start_at_1_ms_and_double_up_to_64_ms)
{
	static const uint64_t ms[] = { 2, 4, 8, 16, 32, 64, 64, 64 };
	uint64_t nap = ts_nap_first_ns;

	cr_assert_eq(ts_nap_first_ns, 1000000ull, "the first nap is %llu ns",
	             (unsigned long long)ts_nap_first_ns);
	cr_assert_eq(ts_nap_max_ns, 64000000ull, "the longest nap is %llu ns",
	             (unsigned long long)ts_nap_max_ns);
	for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
		nap = ts_nap_after(nap, TS_SLEEP_TIMEOUT);
		cr_assert_eq(nap, ms[i] * 1000000ull, "after %zu naps that ran out: %llu ns, not %llu ms",
		             i + 1, (unsigned long long)nap, (unsigned long long)ms[i]);
	}
	cr_assert_eq(ts_nap_after(nap, TS_SLEEP_WOKEN), 1000000ull, "a wake-up starts over");
	cr_assert_eq(ts_nap_after(nap, TS_SLEEP_SKIPPED), 1000000ull, "a skipped sleep starts over");
	cr_assert_eq(ts_nap_after(32000000ull, TS_SLEEP_TIMEOUT), 64000000ull);
	cr_assert_eq(ts_nap_after(48000000ull, TS_SLEEP_TIMEOUT), 64000000ull, "past the cap");
}

static void *unserved_waiter(void *arg)
{
	(void)arg;
	ts_lock(&lock_word, NULL);
	cr_assert(ts_unlock(&lock_word));
	return NULL;
}

/*
 * The same, as the waiters live it: we hold the lock for 1.5 s; the head of
 * the queue and a waiter behind it sleep, and nothing wakes them, so every
 * sleep ends by its nap.  Once the naps have grown (after 0.5 s: 1 + 2 + ...
 * + 64 ms is 127 ms), each waiter wakes about 16 times a second: in the
 * next second, 2 x 8 to 2 x 40 sleeps that ran out (loose: a loaded machine
 * stretches the naps).  Without the 64 ms cap the naps would reach 512 ms
 * there, and a waiter would wake two or three times in that second.
 */
Test(wakeup, a_lock_that_never_comes_free_costs_16_wake_ups_a_second, .timeout = 60)
{
	struct ts_sleep_counts before, after;
	pthread_t tids[2];
	uint64_t timeouts;

	setenv("TICKET_SPIN", "1", 1); /* sleep almost at once */
	setenv("TICKET_WAIT", "park", 1);
	setenv("TICKET_STALL_MS", "0", 1);
	ts_lock(&lock_word, NULL);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(pthread_create(&tids[i], NULL, unserved_waiter, NULL), 0);
		while (tickets_drawn() < (unsigned)i + 1)
			sched_yield();
	}
	usleep(500000);
	ts_sleep_counts(&before);
	usleep(1000000);
	ts_sleep_counts(&after);
	cr_assert(ts_unlock(&lock_word));
	for (int i = 0; i < 2; i++)
		pthread_join(tids[i], NULL);
	timeouts = after.timed_out - before.timed_out;
	cr_assert(timeouts >= 2 * 8 && timeouts <= 2 * 40,
	          "two waiters on a lock held throughout: %llu naps ran out in 1 s "
	          "(expected about 2 x 16: naps capped at 64 ms)",
	          (unsigned long long)timeouts);
	cr_log_info("%llu naps ran out in 1 s (two waiters)", (unsigned long long)timeouts);
}
