/*
 * lockprobe - exercises pthread_spin_* in a child process, so that tests can
 * choose the TICKET_* environment the library reads at start-up.
 *
 *   lockprobe provider                 print who provides each function
 *   lockprobe hammer THREADS LOCKS N [HOLD_NS]
 *                                      mutual exclusion, lock and trylock mixed;
 *                                      HOLD_NS: time spent inside each time
 *   lockprobe fifo WAITERS [ROUNDS [LINGER_US]]
 *                                      grant order of waiters queued in order
 *   lockprobe wrap THREADS N [HOLD_NS] N acquisitions each (and, with more
 *                                      than one thread, one each queued first),
 *                                      the queue's head starting two tickets
 *                                      before the 7-bit ticket space wraps;
 *                                      prints how many holders saw the queue
 *                                      span the wrap ("spans N") and the word
 *   lockprobe progress THREADS MS [shared]
 *                                      THREADS threads take the lock over and
 *                                      over for MS milliseconds; prints each
 *                                      one's count; fails if one never got it;
 *                                      "shared": the lock is initialised
 *                                      PTHREAD_PROCESS_SHARED
 *   lockprobe full CAPACITY            a thread locks a held lock whose queue
 *                                      holds CAPACITY tickets (the word set by
 *                                      hand): it must wait outside, drawing no
 *                                      ticket (the queue never wraps into
 *                                      looking empty), trylock must fail; then
 *                                      the queue is emptied and it gets the lock
 *   lockprobe hold WAITERS HOLD_MS     WAITERS threads wait while the main thread
 *                                      holds the lock for HOLD_MS (asleep);
 *                                      prints the CPU time the process used
 *                                      meanwhile ("cpu_ms N")
 *
 * Exit status: 0 invariants held, 1 an invariant failed, 2 usage.
 * The first line of output names the provider of pthread_spin_lock.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

#include "symbol_provider.h"
#include "ticket_lock.h"


struct guarded {
	pthread_spinlock_t lock;
	int inside;         /* threads inside the critical section: must be 0 or 1 */
	uint64_t count;     /* acquisitions, counted inside */
} __attribute__((aligned(64)));

static struct guarded *locks;
static int nlocks;
static long per_thread;
static long hold_ns;
static atomic_long violations;
/* wrap: holders that saw the queue span the wrap (counted inside the lock) */
static int watch_head;
static long head_wraps;
/* Workers wait here so that they start together, not one time slice apart. */
static pthread_barrier_t start_line;

static void critical(struct guarded *g)
{
	if (__atomic_add_fetch(&g->inside, 1, __ATOMIC_RELAXED) != 1)
		atomic_fetch_add(&violations, 1);
	g->count++;
	if (watch_head) {
		/* tickets queued on both sides of the wrap: the head above next */
		uint32_t word = __atomic_load_n((uint32_t *)&g->lock, __ATOMIC_RELAXED);

		if (ts_queued(word) > 0 && ts_head(word) > ts_next(word))
			head_wraps++;
	}
	if (hold_ns > 0) {
		struct timespec start, now;

		clock_gettime(CLOCK_MONOTONIC, &start);
		do
			clock_gettime(CLOCK_MONOTONIC, &now);
		while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) <
		       hold_ns);
	}
	if (__atomic_sub_fetch(&g->inside, 1, __ATOMIC_RELAXED) != 0)
		atomic_fetch_add(&violations, 1);
}

static void *hammer_thread(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u + 1;

	pthread_barrier_wait(&start_line);
	for (long i = 0; i < per_thread; i++) {
		struct guarded *g = &locks[rand_r(&seed) % nlocks];

		if (rand_r(&seed) % 4 == 0) {
			int rc;

			while ((rc = pthread_spin_trylock(&g->lock)) == EBUSY)
				sched_yield();
			if (rc != 0) {
				atomic_fetch_add(&violations, 1);
				continue;
			}
		} else if (pthread_spin_lock(&g->lock) != 0) {
			atomic_fetch_add(&violations, 1);
			continue;
		}
		critical(g);
		if (pthread_spin_unlock(&g->lock) != 0)
			atomic_fetch_add(&violations, 1);
	}
	return NULL;
}

static int run_threads(int threads, void *(*body)(void *))
{
	pthread_t *tids = calloc((size_t)threads, sizeof(*tids));

	pthread_barrier_init(&start_line, NULL, (unsigned)threads);
	for (int i = 0; i < threads; i++)
		if (pthread_create(&tids[i], NULL, body, (void *)(uintptr_t)i) != 0)
			return -1;
	for (int i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	return 0;
}

static int check_totals(long expected)
{
	uint64_t total = 0;

	for (int i = 0; i < nlocks; i++) {
		total += locks[i].count;
		if (pthread_spin_trylock(&locks[i].lock) != 0) {
			printf("lock %d left held\n", i);
			return 1;
		}
		pthread_spin_unlock(&locks[i].lock);
	}
	printf("acquisitions %llu expected %ld violations %ld\n", (unsigned long long)total,
	       expected, atomic_load(&violations));
	return total == (uint64_t)expected && atomic_load(&violations) == 0 ? 0 : 1;
}

static int hammer(int threads, int nlock, long n)
{
	nlocks = nlock;
	per_thread = n;
	locks = aligned_alloc(64, sizeof(*locks) * (size_t)nlock);
	memset(locks, 0, sizeof(*locks) * (size_t)nlock);
	for (int i = 0; i < nlock; i++)
		pthread_spin_init(&locks[i].lock, PTHREAD_PROCESS_PRIVATE);
	if (run_threads(threads, hammer_thread) != 0)
		return 1;
	return check_totals((long)threads * n);
}

/* fifo: waiter i draws its ticket only after waiter i-1 has drawn its own. */
static pthread_spinlock_t fifo_lock;
static int grant_order[64];
static int granted;

/* Waiters in the queue (the holder has no ticket). */
static unsigned tickets_drawn(void)
{
	return ts_queued(__atomic_load_n((uint32_t *)&fifo_lock, __ATOMIC_ACQUIRE));
}

static void *fifo_thread(void *arg)
{
	pthread_spin_lock(&fifo_lock);
	grant_order[granted++] = (int)(uintptr_t)arg;
	pthread_spin_unlock(&fifo_lock);
	return NULL;
}

/*
 * Each round: the main thread holds the lock while waiters draw tickets one
 * after another, then lingers (so that waiters may park) and unlocks.  The
 * grant order must be the drawing order.
 */
static int fifo(int waiters, int rounds, long linger_us)
{
	pthread_t tids[64];
	int ok = 1;

	if (waiters < 1 || waiters > 64 || rounds < 1)
		return 2;
	for (int round = 0; round < rounds && ok; round++) {
		granted = 0;
		pthread_spin_init(&fifo_lock, PTHREAD_PROCESS_PRIVATE);
		pthread_spin_lock(&fifo_lock);
		for (int i = 0; i < waiters; i++) {
			pthread_create(&tids[i], NULL, fifo_thread, (void *)(uintptr_t)i);
			while (tickets_drawn() < (unsigned)i + 1)
				sched_yield();
		}
		if (linger_us > 0)
			usleep((useconds_t)linger_us);
		pthread_spin_unlock(&fifo_lock);
		for (int i = 0; i < waiters; i++)
			pthread_join(tids[i], NULL);
		printf("order");
		for (int i = 0; i < waiters; i++) {
			printf(" %d", grant_order[i]);
			ok &= grant_order[i] == i;
		}
		printf("\n");
		ok &= granted == waiters;
	}
	return ok ? 0 : 1;
}

/* wrap: start two tickets before the 7-bit ticket space wraps. */
#define WRAP_START 62u

static void *wrap_queuer(void *arg)
{
	(void)arg;
	pthread_spin_lock(&locks[0].lock);
	critical(&locks[0]);
	pthread_spin_unlock(&locks[0].lock);
	return NULL;
}

/*
 * With more than one thread, the queue is made to cross the wrap first: the
 * main thread holds the lock, its word set by hand to "held, an empty queue
 * at 62" (an emptied queue restarts at 0, so a steal would not keep it
 * there), until THREADS threads queue for it (tickets 62, 63, 0...), then
 * the hammer runs from wherever that left the word.
 */
static int wrap(int threads, long n)
{
	uint32_t start = WRAP_START << TS_NEXT_SHIFT | WRAP_START << TS_HEAD_SHIFT, end;
	long queued_first = threads > 1 ? threads : 0;
	pthread_t tids[64];
	int rc;

	if (threads < 1 || threads > 64)
		return 2;
	nlocks = 1;
	per_thread = n;
	locks = aligned_alloc(64, sizeof(*locks));
	memset(locks, 0, sizeof(*locks));
	/* head == next (an empty queue), free */
	__atomic_store_n((uint32_t *)&locks[0].lock, queued_first > 0 ? 0 : start, __ATOMIC_RELEASE);
	watch_head = 1;
	if (queued_first > 0) {
		/*
		 * Held by us (taken through the API, so that ThreadSanitizer's
		 * interceptors see a lock before the unlock), with the empty
		 * queue set where its tickets will wrap.
		 */
		pthread_spin_lock(&locks[0].lock);
		__atomic_store_n((uint32_t *)&locks[0].lock, start | TS_LOCKED, __ATOMIC_RELEASE);
		for (int i = 0; i < queued_first; i++) {
			pthread_create(&tids[i], NULL, wrap_queuer, NULL);
			while (ts_queued(__atomic_load_n((uint32_t *)&locks[0].lock,
			                                 __ATOMIC_ACQUIRE)) < (unsigned)i + 1)
				sched_yield();
		}
		pthread_spin_unlock(&locks[0].lock);
		for (int i = 0; i < queued_first; i++)
			pthread_join(tids[i], NULL);
	}
	if (run_threads(threads, hammer_thread) != 0)
		return 1;
	rc = check_totals((long)threads * n + queued_first);
	end = __atomic_load_n((uint32_t *)&locks[0].lock, __ATOMIC_ACQUIRE);
	printf("spans %ld word 0x%08x -> 0x%08x\n", head_wraps, start, end);
	/* every ticket drawn was served or given back: an empty queue, and free */
	if (ts_queued(end) != 0 || ts_lock_byte(end) != 0) {
		printf("tickets left in the queue or the lock held\n");
		rc = 1;
	}
	return rc;
}

/* full: the thread that finds the queue full. */
static int full_calling, full_got;

static void *full_arrival(void *arg)
{
	(void)arg;
	__atomic_store_n(&full_calling, 1, __ATOMIC_RELEASE);
	pthread_spin_lock(&locks[0].lock);
	__atomic_store_n(&full_got, 1, __ATOMIC_RELEASE);
	critical(&locks[0]);
	pthread_spin_unlock(&locks[0].lock);
	return NULL;
}

/*
 * Mutual exclusion must not depend on how many wait (issue 18, item 13):
 * with a ticket space of 64, a 64th ticket would make the queue look
 * empty.  The word is set by hand to "held, CAPACITY queued" (CAPACITY
 * threads need not exist for that): one more locker waits outside.
 */
static int full(unsigned capacity)
{
	uint32_t word = TS_LOCKED | capacity << TS_NEXT_SHIFT, now;
	pthread_t t;
	int rc = 0, busy;

	if (capacity < 2 || capacity > TS_TICKET_MASK)
		return 2;
	nlocks = 1;
	locks = aligned_alloc(64, sizeof(*locks));
	memset(locks, 0, sizeof(*locks));
	pthread_spin_lock(&locks[0].lock); /* through the API, for ThreadSanitizer */
	__atomic_store_n((uint32_t *)&locks[0].lock, word, __ATOMIC_RELEASE);
	pthread_create(&t, NULL, full_arrival, NULL);
	while (!__atomic_load_n(&full_calling, __ATOMIC_ACQUIRE))
		sched_yield();
	usleep(50000); /* (a late arrival makes the checks below vacuous, never false) */
	now = __atomic_load_n((uint32_t *)&locks[0].lock, __ATOMIC_ACQUIRE);
	busy = pthread_spin_trylock(&locks[0].lock);
	printf("full %u: word 0x%08x -> 0x%08x, trylock %s, arrival %s\n", capacity, word, now,
	       busy == EBUSY ? "EBUSY" : "took it",
	       __atomic_load_n(&full_got, __ATOMIC_ACQUIRE) ? "took it" : "waits");
	if (ts_next(now) != ts_next(word) || ts_head(now) != ts_head(word)) {
		printf("the arrival drew a ticket from a full queue\n");
		rc = 1;
	}
	if (busy != EBUSY || __atomic_load_n(&full_got, __ATOMIC_ACQUIRE)) {
		printf("mutual exclusion broken: the held lock was taken\n");
		rc = 1;
	}
	if (busy == 0)
		return rc; /* (the word is no longer ours to repair) */
	/* as if every ticket in the queue had been served: held, the queue empty */
	__atomic_store_n((uint32_t *)&locks[0].lock, TS_LOCKED, __ATOMIC_RELEASE);
	pthread_spin_unlock(&locks[0].lock);
	pthread_join(t, NULL);
	now = __atomic_load_n((uint32_t *)&locks[0].lock, __ATOMIC_ACQUIRE);
	if (!full_got || now != 0 || locks[0].count != 1) {
		printf("the arrival did not get the lock once (count %llu), or left 0x%08x\n",
		       (unsigned long long)locks[0].count, now);
		rc = 1;
	}
	return rc;
}

/* progress: every thread takes the lock, over and over, until told to stop. */
static pthread_spinlock_t progress_lock;
static long progress_count[64];
static int progress_inside;
static int progress_stop;

static void *progress_thread(void *arg)
{
	int id = (int)(uintptr_t)arg;
	long mine = 0;

	pthread_barrier_wait(&start_line);
	while (!__atomic_load_n(&progress_stop, __ATOMIC_RELAXED)) {
		if (pthread_spin_lock(&progress_lock) != 0) {
			atomic_fetch_add(&violations, 1);
			break;
		}
		if (++progress_inside != 1)
			atomic_fetch_add(&violations, 1);
		mine++;
		progress_inside--;
		pthread_spin_unlock(&progress_lock);
	}
	progress_count[id] = mine;
	return NULL;
}

static void *progress_timer(void *arg)
{
	long ms = (long)(intptr_t)arg;
	struct timespec nap = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&nap, NULL);
	__atomic_store_n(&progress_stop, 1, __ATOMIC_RELAXED);
	return NULL;
}

/*
 * progress: THREADS threads contend for one lock for MS milliseconds.  The
 * promise checked: every thread gets the lock (a count above 0), whatever
 * the others do; the counts are printed, no ratio is asserted.
 */
static int progress(int threads, long ms, int pshared)
{
	pthread_t timer;
	long min = -1, max = 0, total = 0;

	if (threads < 1 || threads > 64 || ms < 1)
		return 2;
	pthread_spin_init(&progress_lock, pshared);
	pthread_create(&timer, NULL, progress_timer, (void *)(intptr_t)ms);
	if (run_threads(threads, progress_thread) != 0)
		return 1;
	pthread_join(timer, NULL);
	printf("counts");
	for (int i = 0; i < threads; i++) {
		printf(" %ld", progress_count[i]);
		total += progress_count[i];
		if (min < 0 || progress_count[i] < min)
			min = progress_count[i];
		if (progress_count[i] > max)
			max = progress_count[i];
	}
	printf("\nprogress threads %d min %ld max %ld total %ld violations %ld\n", threads, min,
	       max, total, atomic_load(&violations));
	return min > 0 && atomic_load(&violations) == 0 ? 0 : 1;
}

static pthread_spinlock_t held_lock;

static void *held_waiter(void *arg)
{
	(void)arg;
	pthread_spin_lock(&held_lock);
	pthread_spin_unlock(&held_lock);
	return NULL;
}

static double cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

/*
 * hold: what waiters cost while a lock does not come free.  The main thread
 * sleeps while holding the lock (as a program that blocks in a critical
 * section would); the process's CPU time meanwhile is the waiters'.
 */
static int hold(int waiters, long hold_ms)
{
	pthread_t tids[64];
	struct timespec nap = { hold_ms / 1000, (hold_ms % 1000) * 1000000L };
	double before;

	if (waiters < 1 || waiters > 64 || hold_ms < 1)
		return 2;
	pthread_spin_init(&held_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_lock(&held_lock);
	for (int i = 0; i < waiters; i++)
		pthread_create(&tids[i], NULL, held_waiter, NULL);
	before = cpu_ms();
	nanosleep(&nap, NULL);
	printf("cpu_ms %.0f\n", cpu_ms() - before);
	pthread_spin_unlock(&held_lock);
	for (int i = 0; i < waiters; i++)
		pthread_join(tids[i], NULL);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		return 2;
	printf("provider %s\n", provider_of("pthread_spin_lock"));
	if (strcmp(argv[1], "provider") == 0) {
		printf("init %s\ndestroy %s\ntrylock %s\nunlock %s\n",
		       provider_of("pthread_spin_init"), provider_of("pthread_spin_destroy"),
		       provider_of("pthread_spin_trylock"), provider_of("pthread_spin_unlock"));
		return 0;
	}
	if (strcmp(argv[1], "hammer") == 0 && (argc == 5 || argc == 6)) {
		hold_ns = argc == 6 ? atol(argv[5]) : 0;
		return hammer(atoi(argv[2]), atoi(argv[3]), atol(argv[4]));
	}
	if (strcmp(argv[1], "fifo") == 0 && argc >= 3 && argc <= 5)
		return fifo(atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 1, argc > 4 ? atol(argv[4]) : 0);
	if (strcmp(argv[1], "wrap") == 0 && (argc == 4 || argc == 5)) {
		hold_ns = argc == 5 ? atol(argv[4]) : 0;
		return wrap(atoi(argv[2]), atol(argv[3]));
	}
	if (strcmp(argv[1], "full") == 0 && argc == 3)
		return full((unsigned)atoi(argv[2]));
	if (strcmp(argv[1], "hold") == 0 && argc == 4)
		return hold(atoi(argv[2]), atol(argv[3]));
	if (strcmp(argv[1], "progress") == 0 && (argc == 4 || argc == 5))
		return progress(atoi(argv[2]), atol(argv[3]),
		                argc == 5 && strcmp(argv[4], "shared") == 0 ? PTHREAD_PROCESS_SHARED
		                                                            : PTHREAD_PROCESS_PRIVATE);
	fprintf(stderr, "lockprobe: bad arguments\n");
	return 2;
}
