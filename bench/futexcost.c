/*
 * futexcost - what a shared (not FUTEX_PRIVATE_FLAG) futex costs beside a
 * private one, in contended park and wake-up (issue 40, item 8).
 *
 *   futexcost --threads=T --seconds=S --flag=private|shared
 *             [--memory=private|shared] [--mode=ring|mutex]
 *
 * --mode=ring (the default): T threads pass a token round a ring on one
 * futex word, each sleeping on its own bit (FUTEX_WAIT_BITSET, as the
 * library's waiters sleep on their ticket's bit) until the token is its,
 * then passing it on and waking the next one's bit: every hand-over is one
 * wake-up and one sleep, a contended park and wake-up and nothing else.
 * --mode=mutex: T threads take one futex-based mutex (Drepper's "Futexes are tricky",
 * mutex 2: 0 free, 1 held, 2 held with waiters) with no spinning at all, so
 * that every contended acquisition sleeps and every release that finds
 * waiters wakes one: the park and wake-up path is all that is measured.  The
 * sleeps are the library's: FUTEX_WAIT_BITSET with an absolute
 * CLOCK_MONOTONIC deadline (64 ms, as the longest nap), the wake-ups
 * FUTEX_WAKE_BITSET; with --flag=private both carry FUTEX_PRIVATE_FLAG.
 * --memory says where the word lies: a private anonymous mapping (the
 * default; the kernel then keys even a shared futex by the process's mm,
 * after looking the page up) or a MAP_SHARED one (keyed by the page's
 * object).
 *
 * Prints one line: mode= flag= memory= threads= seconds= ops_per_s= waits= wakes=
 * timeouts= (waits that ran out: none expected).  Exit status 0, or 1 if
 * the critical section's count does not add up, 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct shared_state {
	_Alignas(64) uint32_t word;
	uint64_t count; /* under the mutex */
	_Alignas(64) atomic_int stop;
};

static struct shared_state *st;
static int wait_op, wake_op;
static pthread_barrier_t start;
static _Atomic uint64_t waits, wakes, timeouts;

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void park(uint32_t *w, uint32_t value)
{
	uint64_t at = now_ns() + 64000000ull;
	struct timespec deadline = { (time_t)(at / 1000000000ull), (long)(at % 1000000000ull) };

	if (syscall(SYS_futex, w, wait_op, value, &deadline, NULL, FUTEX_BITSET_MATCH_ANY) != 0 &&
	    errno == ETIMEDOUT)
		atomic_fetch_add_explicit(&timeouts, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&waits, 1, memory_order_relaxed);
}

static void mutex_lock(uint32_t *w)
{
	uint32_t c = 0;

	if (__atomic_compare_exchange_n(w, &c, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	if (c != 2)
		c = __atomic_exchange_n(w, 2, __ATOMIC_ACQUIRE);
	while (c != 0) {
		park(w, 2);
		c = __atomic_exchange_n(w, 2, __ATOMIC_ACQUIRE);
	}
}

static void mutex_unlock(uint32_t *w)
{
	if (__atomic_fetch_sub(w, 1, __ATOMIC_RELEASE) != 1) {
		__atomic_store_n(w, 0, __ATOMIC_RELEASE);
		syscall(SYS_futex, w, wake_op, 1, NULL, NULL, FUTEX_BITSET_MATCH_ANY);
		atomic_fetch_add_explicit(&wakes, 1, memory_order_relaxed);
	}
}

static bool ring = true;
static uint64_t *ring_base;
static int nthreads;

/* The ring: thread @id waits for the token, bumps the count, passes it on. */
static void ring_turns(int id, uint64_t *done)
{
	uint32_t *w = &st->word;
	uint32_t next = (uint32_t)(id + 1) % (uint32_t)nthreads;

	while (!atomic_load_explicit(&st->stop, memory_order_relaxed)) {
		uint32_t tok = __atomic_load_n(w, __ATOMIC_ACQUIRE);

		if ((tok & 0xffffu) != (uint32_t)id) {
			uint64_t at = now_ns() + 64000000ull;
			struct timespec deadline = { (time_t)(at / 1000000000ull),
			                             (long)(at % 1000000000ull) };

			if (syscall(SYS_futex, w, wait_op, tok, &deadline, NULL, 1u << (id & 31)) != 0 &&
			    errno == ETIMEDOUT)
				atomic_fetch_add_explicit(&timeouts, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&waits, 1, memory_order_relaxed);
			continue;
		}
		st->count++;
		(*done)++;
		/* the upper half changes with every pass: no sleeper's value is ever stale */
		__atomic_store_n(w, ((tok & 0xffff0000u) + 0x10000u) | next, __ATOMIC_RELEASE);
		syscall(SYS_futex, w, wake_op, 1, NULL, NULL, 1u << (next & 31));
		atomic_fetch_add_explicit(&wakes, 1, memory_order_relaxed);
	}
	/* let the others see the stop */
	__atomic_fetch_add(w, 0x10000u, __ATOMIC_RELEASE);
	syscall(SYS_futex, w, wake_op, INT_MAX, NULL, NULL, FUTEX_BITSET_MATCH_ANY);
}

static void *worker(void *arg)
{
	uint64_t *done = arg;

	pthread_barrier_wait(&start);
	if (ring) {
		ring_turns((int)(done - ring_base) / 8, done);
		return NULL;
	}
	while (!atomic_load_explicit(&st->stop, memory_order_relaxed)) {
		mutex_lock(&st->word);
		st->count++;
		mutex_unlock(&st->word);
		(*done)++;
	}
	return NULL;
}

static int usage(void)
{
	fprintf(stderr, "usage: futexcost --threads=T --seconds=S --flag=private|shared "
	                "[--memory=private|shared] [--mode=ring|mutex]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "seconds", required_argument, NULL, 's' },
		{ "flag", required_argument, NULL, 'f' },
		{ "memory", required_argument, NULL, 'm' },
		{ "mode", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int threads = 4, opt;
	double seconds = 1.0, t0, t1;
	bool private_flag = true, shared_memory = false;
	pthread_t *tids;
	uint64_t *done, total = 0;

	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case 't': threads = atoi(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'f':
			if (strcmp(optarg, "private") != 0 && strcmp(optarg, "shared") != 0)
				return usage();
			private_flag = strcmp(optarg, "private") == 0;
			break;
		case 'm':
			if (strcmp(optarg, "private") != 0 && strcmp(optarg, "shared") != 0)
				return usage();
			shared_memory = strcmp(optarg, "shared") == 0;
			break;
		case 'M':
			if (strcmp(optarg, "ring") != 0 && strcmp(optarg, "mutex") != 0)
				return usage();
			ring = strcmp(optarg, "ring") == 0;
			break;
		case 'h': usage(); return 0;
		default: return usage();
		}
	}
	nthreads = threads;
	if (optind != argc || threads < 1 || threads > 1024 || !(seconds > 0 && seconds <= 3600))
		return usage();
	wait_op = FUTEX_WAIT_BITSET | (private_flag ? FUTEX_PRIVATE_FLAG : 0);
	wake_op = FUTEX_WAKE_BITSET | (private_flag ? FUTEX_PRIVATE_FLAG : 0);
	st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE,
	          (shared_memory ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS, -1, 0);
	tids = calloc((size_t)threads, sizeof(*tids));
	done = calloc((size_t)threads * 8, sizeof(*done)); /* a line each */
	if (st == MAP_FAILED || tids == NULL || done == NULL) {
		perror("futexcost");
		return 2;
	}
	memset(st, 0, sizeof(*st));
	ring_base = done;
	pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
	for (int i = 0; i < threads; i++)
		pthread_create(&tids[i], NULL, worker, &done[i * 8]);
	pthread_barrier_wait(&start);
	t0 = (double)now_ns() / 1e9;
	{
		struct timespec d = { (time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9) };

		while (nanosleep(&d, &d) != 0 && errno == EINTR)
			;
	}
	atomic_store(&st->stop, 1);
	t1 = (double)now_ns() / 1e9;
	for (int i = 0; i < threads; i++) {
		pthread_join(tids[i], NULL);
		total += done[i * 8];
	}
	printf("mode=%s flag=%s memory=%s threads=%d seconds=%.3f ops_per_s=%.0f waits=%llu wakes=%llu "
	       "timeouts=%llu\n",
	       ring ? "ring" : "mutex", private_flag ? "private" : "shared", shared_memory ? "shared" : "private", threads,
	       t1 - t0, (double)total / (t1 - t0), (unsigned long long)waits,
	       (unsigned long long)wakes, (unsigned long long)timeouts);
	return st->count == total ? 0 : 1;
}
