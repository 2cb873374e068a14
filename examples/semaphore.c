/*
 * semaphore - the microbenchmark of the ticket-spinlock backoff series
 * (cover letter, Rik van Riel, December 2012), in user space: threads
 * repeatedly take and release one counting semaphore.
 *
 * Like the kernel's struct semaphore, the semaphore is a spinlock plus the
 * count and the wait data it protects, all on one cache line, so waiters
 * polling the lock slow down the holder that writes the count.  down() takes
 * a permit or sleeps on a futex; up() returns it and wakes a sleeper.  With
 * the default --permits (as many as threads) no one ever sleeps and the run
 * measures the spinlock alone; fewer permits add sleeping and waking.
 *
 * One operation is one down() plus one up(); throughput is operations per
 * second.  The latency sampled is that of down().
 *
 * Invariants, checked inside the critical section and at the end: one thread
 * at a time inside the spinlock; 0 <= count <= permits; count + held ==
 * permits; at the end count == permits and downs == ups == operations.
 */
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

struct semaphore {
	pthread_spinlock_t lock;
	int32_t count;      /* permits available */
	int32_t permits;    /* the most there can be */
	int32_t held;       /* permits taken and not yet returned */
	uint32_t waiters;   /* threads that went to sleep in down() */
	uint32_t wake_seq;  /* futex word: bumped by up() when there are waiters */
	uint32_t inside;    /* threads inside the spinlock: must be exactly 1 */
	uint32_t pad;
	uint64_t downs, ups, sleeps;
	volatile uint64_t scratch; /* written in the critical section */
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct semaphore) == 64, "the semaphore is one cache line");

static struct semaphore sem;
static long cs = 8, hold = 0, think = 50, permits = 0;
static bool no_lock;

static atomic_long violations;
static char first_violation[200];

static void violated(const char *what, long long a, long long b)
{
	if (atomic_fetch_add(&violations, 1) == 0)
		snprintf(first_violation, sizeof(first_violation), "%s (%lld, %lld)", what, a, b);
}

static void sem_lock(struct semaphore *s)
{
	if (!no_lock)
		pthread_spin_lock(&s->lock);
	if (__atomic_add_fetch(&s->inside, 1, __ATOMIC_RELAXED) != 1)
		violated("two threads inside the spinlock", s->inside, 1);
	for (long i = 0; i < cs; i++)
		s->scratch = s->scratch + (uint64_t)i;
}

static void sem_unlock(struct semaphore *s)
{
	if (s->count < 0 || s->count > s->permits)
		violated("count out of range", s->count, s->permits);
	if (s->count + s->held != s->permits)
		violated("count + held != permits", s->count + s->held, s->permits);
	if (__atomic_sub_fetch(&s->inside, 1, __ATOMIC_RELAXED) != 0)
		violated("two threads inside the spinlock", s->inside + 1, 1);
	if (!no_lock)
		pthread_spin_unlock(&s->lock);
}

static void down(struct semaphore *s)
{
	sem_lock(s);
	while (s->count <= 0) {
		uint32_t seq = s->wake_seq;

		/* Without the lock the state may be corrupt: never sleep on it. */
		if (no_lock) {
			violated("down() found no permit without the lock", s->count, 0);
			break;
		}

		s->waiters++;
		s->sleeps++;
		sem_unlock(s);
		syscall(SYS_futex, &s->wake_seq, FUTEX_WAIT_PRIVATE, seq, NULL, NULL, 0);
		sem_lock(s);
		s->waiters--;
	}
	s->count--;
	s->held++;
	s->downs++;
	sem_unlock(s);
}

static void up(struct semaphore *s)
{
	bool wake;

	sem_lock(s);
	if (s->held <= 0)
		violated("up() without a permit held", s->held, 0);
	s->held--;
	s->count++;
	s->ups++;
	wake = s->waiters > 0;
	if (wake)
		s->wake_seq++;
	sem_unlock(s);
	if (wake)
		syscall(SYS_futex, &s->wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *worker(void *arg)
{
	struct ex_thread *t = arg;

	while (ex_running()) {
		if (ex_sample_this(t)) {
			uint64_t t0 = ex_now_ns();

			down(&sem);
			ex_record_latency(t, ex_now_ns() - t0);
		} else {
			down(&sem);
		}
		ex_think(t, hold);
		up(&sem);
		t->ops++;
		ex_think(t, think);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct ex_common common = { .threads = 2, .seconds = 1.0 };
	const struct ex_option options[] = {
		{ "permits", EX_LONG, &permits, 0, INT_MAX,
		  "the semaphore's count; 0: as many as threads (no one sleeps)" },
		{ "cs", EX_LONG, &cs, 0, 10000000,
		  "writes to the semaphore's cache line inside the spinlock" },
		{ "hold", EX_LONG, &hold, 0, 100000000,
		  "work units (~1 ns) between down() and up(), outside the spinlock" },
		{ "think", EX_LONG, &think, 0, 100000000, "work units (~1 ns) after up()" },
		{ "no-lock", EX_FLAG, &no_lock, 0, 0,
		  "skip the spinlock (to see the invariant checks fail)" },
		{ NULL, EX_FLAG, NULL, 0, 0, NULL },
	};
	struct ex_thread *threads;
	struct ex_report *r;
	double elapsed;
	uint64_t total;

	ex_parse(argc, argv, "semaphore",
	         "Threads take and release one counting semaphore whose spinlock shares\n"
	         "a cache line with the count and wait data it protects.",
	         &common, options);
	if (permits == 0)
		permits = common.threads;
	pthread_spin_init(&sem.lock, PTHREAD_PROCESS_PRIVATE);
	sem.count = (int32_t)permits;
	sem.permits = (int32_t)permits;

	threads = ex_run(worker, NULL, &elapsed);
	total = ex_total_ops(threads);

	r = ex_report_new("semaphore", threads, elapsed);
	ex_report_long(r, "permits", permits);
	ex_report_long(r, "cs", cs);
	ex_report_long(r, "hold", hold);
	ex_report_long(r, "think", think);
	ex_report_long(r, "sleeps", (long long)sem.sleeps);
	if (no_lock)
		ex_report_string(r, "lock", "none");
	if (violations > 0)
		ex_violation(r, "%ld times during the run; first: %s", (long)violations,
		             first_violation);
	if (sem.count != sem.permits || sem.held != 0)
		ex_violation(r, "at the end count=%d held=%d, expected %d and 0", sem.count,
		             sem.held, sem.permits);
	if (sem.downs != total || sem.ups != total)
		ex_violation(r, "downs=%llu ups=%llu but the threads completed %llu operations",
		             (unsigned long long)sem.downs, (unsigned long long)sem.ups,
		             (unsigned long long)total);
	pthread_spin_destroy(&sem.lock);
	return ex_report_finish(r);
}
