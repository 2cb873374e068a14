/*
 * misuseprobe - misuses pthread_spin_* on purpose, in a child process, so that
 * tests can check what the library reports on stderr and that the program
 * keeps working.  Built with -rdynamic, so that reports name the functions
 * below as callers.
 *
 *   misuseprobe unlock          unlock of a lock no one holds, many times, three
 *                               locks (the third process-shared, then free with
 *                               a queue)
 *   misuseprobe destroy         destroy of a held lock, then of one with a waiter,
 *                               then of free ones (no report)
 *   misuseprobe flood N         N distinct locks each unlocked once too often
 *   misuseprobe foreign WORD    a lock word another implementation left free
 *                               ("glibc+BITS": glibc's own pthread_spin_init's
 *                               word, with BITS set too)
 *   misuseprobe suspect WORD S  a waiter queues on a lock whose word is WORD;
 *                               S=1: then serve the tickets ahead of it (as
 *                               if their waiters had taken and released the
 *                               lock) and check it gets the lock; S=0: leave
 *                               it waiting and exit
 *
 * stdout: "provider ...", then one line per check; exit status 0 when every
 * check held, 1 when one failed, 2 usage.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe_check.h"
#include "symbol_provider.h"
#include "ticket_lock.h"

#define NOINLINE __attribute__((noinline, visibility("default")))

static uint32_t word_of(pthread_spinlock_t *lock)
{
	return __atomic_load_n((uint32_t *)lock, __ATOMIC_ACQUIRE);
}

/* Waiters in the lock's queue (the holder has no ticket). */
static unsigned tickets_in_line(pthread_spinlock_t *lock)
{
	return ts_queued(word_of(lock));
}

/* exported (-rdynamic): reports name them */
pthread_spinlock_t probe_lock_a, probe_lock_b, probe_lock_c;
static int counter;

static void *hammer_a(void *arg)
{
	for (long i = 0; i < (long)(intptr_t)arg; i++) {
		pthread_spin_lock(&probe_lock_a);
		counter++;
		pthread_spin_unlock(&probe_lock_a);
	}
	return NULL;
}

/* The empty asm after each call keeps it from being a tail call, so that the
 * report names these functions as callers. */
NOINLINE int probe_unlock_unheld(pthread_spinlock_t *lock)
{
	int rc = pthread_spin_unlock(lock);

	__asm__ volatile("" ::: "memory");
	return rc;
}

static int mode_unlock(void)
{
	pthread_t tids[4];
	uint32_t before;
	int rc, eperm = 0;

	pthread_spin_init(&probe_lock_a, PTHREAD_PROCESS_PRIVATE);
	before = word_of(&probe_lock_a);
	rc = probe_unlock_unheld(&probe_lock_a);
	printf("unlock of a fresh lock: %s, word 0x%08x -> 0x%08x\n",
	       rc == EPERM ? "EPERM" : strerror(rc), before, word_of(&probe_lock_a));
	CHECK(rc == EPERM, "unlock of a fresh lock returned %d", rc);
	CHECK(word_of(&probe_lock_a) == before, "word changed");

	/* lock, unlock, then one unlock too many, 1000 times over */
	for (int i = 0; i < 1000; i++) {
		CHECK(pthread_spin_lock(&probe_lock_a) == 0, "lock");
		CHECK(pthread_spin_unlock(&probe_lock_a) == 0, "unlock");
		before = word_of(&probe_lock_a);
		eperm += probe_unlock_unheld(&probe_lock_a) == EPERM;
		CHECK(word_of(&probe_lock_a) == before, "word changed by an extra unlock");
	}
	printf("extra unlocks after lock+unlock: %d of 1000 returned EPERM, word 0x%08x\n", eperm,
	       word_of(&probe_lock_a));
	CHECK(eperm == 1000, "only %d EPERM", eperm);

	/* the lock still works: 4 threads, counted */
	for (int i = 0; i < 4; i++)
		pthread_create(&tids[i], NULL, hammer_a, (void *)(intptr_t)20000);
	for (int i = 0; i < 4; i++)
		pthread_join(tids[i], NULL);
	printf("after misuse, 4 threads x 20000: counter %d\n", counter);
	CHECK(counter == 80000, "counter %d", counter);
	CHECK(pthread_spin_trylock(&probe_lock_a) == 0, "trylock after the run");
	CHECK(pthread_spin_unlock(&probe_lock_a) == 0, "unlock after trylock");

	/* another lock: reported on its own */
	pthread_spin_init(&probe_lock_b, PTHREAD_PROCESS_PRIVATE);
	rc = probe_unlock_unheld(&probe_lock_b);
	printf("unlock of a second fresh lock: %s\n", rc == EPERM ? "EPERM" : strerror(rc));
	CHECK(rc == EPERM, "second lock: %d", rc);

	/* a process-shared lock: its mark is not a holder */
	pthread_spin_init(&probe_lock_c, PTHREAD_PROCESS_SHARED);
	before = word_of(&probe_lock_c);
	rc = probe_unlock_unheld(&probe_lock_c);
	printf("unlock of a fresh shared lock: %s, word 0x%08x -> 0x%08x\n",
	       rc == EPERM ? "EPERM" : strerror(rc), before, word_of(&probe_lock_c));
	CHECK(rc == EPERM, "shared lock: %d", rc);
	CHECK(word_of(&probe_lock_c) == before, "word changed");
	/*
	 * Free, with a waiter in the queue about to take it (as between an
	 * unlock and the head's take; no thread here): the lock byte is 0, so
	 * no one holds it.
	 */
	before = word_of(&probe_lock_c) | 1u << TS_NEXT_SHIFT | TS_SLEEPERS; /* its init's marks kept */
	__atomic_store_n((uint32_t *)&probe_lock_c, before, __ATOMIC_RELEASE);
	rc = probe_unlock_unheld(&probe_lock_c);
	printf("unlock of a free lock with a queue: %s, word 0x%08x -> 0x%08x\n",
	       rc == EPERM ? "EPERM" : strerror(rc), before, word_of(&probe_lock_c));
	CHECK(rc == EPERM, "free lock with a queue: %d", rc);
	CHECK(word_of(&probe_lock_c) == before, "word changed");
	return failures ? 1 : 0;
}

NOINLINE int probe_destroy_held(pthread_spinlock_t *lock)
{
	int rc = pthread_spin_destroy(lock);

	__asm__ volatile("" ::: "memory");
	return rc;
}

pthread_spinlock_t probe_destroy_a, probe_destroy_b, probe_destroy_c;

static void *wait_b(void *arg)
{
	(void)arg;
	pthread_spin_lock(&probe_destroy_b);
	pthread_spin_unlock(&probe_destroy_b);
	return NULL;
}

static int mode_destroy(void)
{
	pthread_t tid;
	uint32_t before;
	int rc;

	pthread_spin_init(&probe_destroy_a, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_lock(&probe_destroy_a);
	before = word_of(&probe_destroy_a);
	rc = probe_destroy_held(&probe_destroy_a);
	printf("destroy of a held lock: returned %d, word 0x%08x -> 0x%08x\n", rc, before,
	       word_of(&probe_destroy_a));
	CHECK(rc == 0, "destroy of a held lock returned %d", rc);
	CHECK(word_of(&probe_destroy_a) == before, "destroy changed the word");
	CHECK(pthread_spin_unlock(&probe_destroy_a) == 0, "unlock after destroy");
	rc = pthread_spin_destroy(&probe_destroy_a);
	printf("destroy of the same lock, free: returned %d\n", rc);
	CHECK(rc == 0, "destroy of a free lock returned %d", rc);

	pthread_spin_init(&probe_destroy_b, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_lock(&probe_destroy_b);
	pthread_create(&tid, NULL, wait_b, NULL);
	while (tickets_in_line(&probe_destroy_b) < 1)
		sched_yield();
	rc = probe_destroy_held(&probe_destroy_b);
	printf("destroy of a lock with a waiter: returned %d\n", rc);
	CHECK(rc == 0, "returned %d", rc);
	pthread_spin_unlock(&probe_destroy_b);
	pthread_join(tid, NULL);
	printf("lock with a waiter, after use: word 0x%08x\n", word_of(&probe_destroy_b));
	CHECK(pthread_spin_destroy(&probe_destroy_b) == 0, "final destroy");

	/*
	 * Free locks are not reported (the test counts the reports): a
	 * process-shared one after use, and one whose queue flags a past wait
	 * left behind (the head's watch, its bypass count, a sleeper's mark).
	 */
	pthread_spin_init(&probe_destroy_c, PTHREAD_PROCESS_SHARED);
	CHECK(pthread_spin_lock(&probe_destroy_c) == 0, "lock shared");
	CHECK(pthread_spin_unlock(&probe_destroy_c) == 0, "unlock shared");
	rc = probe_destroy_held(&probe_destroy_c);
	printf("destroy of a free shared lock (word 0x%08x): returned %d\n",
	       word_of(&probe_destroy_c), rc);
	CHECK(rc == 0, "returned %d", rc);
	__atomic_store_n((uint32_t *)&probe_destroy_c,
	                 5u << TS_NEXT_SHIFT | 5u << TS_HEAD_SHIFT | TS_WATCHING | TS_SLEEPERS |
	                         3u << TS_BYPASS_SHIFT,
	                 __ATOMIC_RELEASE);
	rc = probe_destroy_held(&probe_destroy_c);
	printf("destroy of a free lock with flags left (word 0x%08x): returned %d\n",
	       word_of(&probe_destroy_c), rc);
	CHECK(rc == 0, "returned %d", rc);
	return failures ? 1 : 0;
}

static int mode_flood(int n)
{
	pthread_spinlock_t *locks = calloc((size_t)n + 1, sizeof(*locks));
	int eperm = 0;

	for (int i = 0; i <= n; i++)
		pthread_spin_init(&locks[i], PTHREAD_PROCESS_PRIVATE); /* marked with TICKET_CHECK_UNLOCK */
	for (int i = 0; i < n; i++)
		eperm += probe_unlock_unheld(&locks[i]) == EPERM;
	sleep(1);
	usleep(100000);
	eperm += probe_unlock_unheld(&locks[n]) == EPERM;
	printf("flood: %d of %d extra unlocks returned EPERM\n", eperm, n + 1);
	CHECK(eperm == n + 1, "%d EPERM", eperm);
	free((void *)locks);
	return failures ? 1 : 0;
}

pthread_spinlock_t probe_suspect_lock;
static volatile int suspect_acquired, suspect_started;

NOINLINE void *probe_suspect_waiter(void *arg)
{
	(void)arg;
	__atomic_store_n(&suspect_started, 1, __ATOMIC_RELEASE);
	pthread_spin_lock(&probe_suspect_lock);
	__atomic_store_n(&suspect_acquired, 1, __ATOMIC_RELEASE);
	pthread_spin_unlock(&probe_suspect_lock);
	return NULL;
}

static int mode_suspect(uint32_t word, int serve)
{
	pthread_t tid;
	unsigned ahead = ts_queued(word); /* every ticket in the queue is ahead of the waiter's */
	uint32_t seen;

	__atomic_store_n((uint32_t *)&probe_suspect_lock, word, __ATOMIC_RELEASE);
	pthread_create(&tid, NULL, probe_suspect_waiter, NULL);
	while (!__atomic_load_n(&suspect_started, __ATOMIC_ACQUIRE))
		sched_yield();
	usleep(300000); /* the waiter draws a ticket, or waits outside a full queue */
	printf("suspect word 0x%08x: %u tickets ahead of the waiter; after 0.3 s: %s\n", word,
	       ahead, suspect_acquired ? "acquired" : "still waiting");
	CHECK(!suspect_acquired, "the waiter got a lock that was not free");
	if (!serve) {
		fflush(stdout);
		_exit(failures ? 1 : 0); /* the waiter cannot finish */
	}
	/*
	 * Serve the phantom tickets ahead of the waiter at once, as if their
	 * waiters had all taken the lock and released it: head := the waiter's
	 * ticket (the first after the phantoms), lock byte := 0, whatever flags
	 * the waiter set meanwhile.  A waiter in the queue is then at its head
	 * with the lock free; one waiting outside a full queue finds room.
	 * Either way it must get the lock, without any wake-up from us (a
	 * sleeper's nap is bounded).
	 */
	seen = word_of(&probe_suspect_lock);
	while (!__atomic_compare_exchange_n((uint32_t *)&probe_suspect_lock, &seen,
	                                    (seen & ~(TS_HEAD_FIELD | TS_LOCK_BYTE)) |
	                                            (uint32_t)ts_next(word) << TS_HEAD_SHIFT,
	                                    false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
	pthread_join(tid, NULL);
	printf("after serving the %u tickets ahead: %s, word 0x%08x\n", ahead,
	       suspect_acquired ? "acquired" : "NOT acquired", word_of(&probe_suspect_lock));
	CHECK(suspect_acquired, "not acquired");
	CHECK(pthread_spin_trylock(&probe_suspect_lock) == 0, "trylock afterwards");
	return failures ? 1 : 0;
}

pthread_spinlock_t probe_foreign_lock;

/*
 * The word glibc's own pthread_spin_init() leaves (1 on x86-64), from libc
 * itself, not from the preload; 0 when it cannot be found.
 */
static uint32_t glibc_init_word(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	int (*init)(pthread_spinlock_t *, int) = NULL;
	pthread_spinlock_t lock = 0x5a5a5a5a;

	if (libc != NULL)
		init = (int (*)(pthread_spinlock_t *, int))dlsym(libc, "pthread_spin_init");
	if (init == NULL || init(&lock, PTHREAD_PROCESS_PRIVATE) != 0)
		return 0;
	return (uint32_t)lock;
}

/*
 * A word another implementation left free (glibc: 1) works as a free ticket
 * lock.  WORD "glibc+BITS": the word glibc's pthread_spin_init() made, with
 * BITS (a queue, say) set too.
 */
static int mode_foreign(const char *arg)
{
	uint32_t word;
	int rc;

	if (strncmp(arg, "glibc+", 6) == 0) {
		uint32_t init = glibc_init_word();

		printf("glibc's pthread_spin_init left 0x%08x\n", init);
		CHECK(init != 0, "glibc's pthread_spin_init not found");
		word = init | (uint32_t)strtoul(arg + 6, NULL, 0);
	} else {
		word = (uint32_t)strtoul(arg, NULL, 0);
	}

	__atomic_store_n((uint32_t *)&probe_foreign_lock, word, __ATOMIC_RELEASE);
	rc = pthread_spin_lock(&probe_foreign_lock);
	printf("word 0x%08x: lock returned %d", word, rc);
	CHECK(rc == 0, "lock");
	rc = pthread_spin_unlock(&probe_foreign_lock);
	printf(", unlock %d", rc);
	CHECK(rc == 0, "unlock");
	rc = pthread_spin_trylock(&probe_foreign_lock);
	printf(", trylock %d", rc);
	CHECK(rc == 0, "trylock");
	rc = pthread_spin_unlock(&probe_foreign_lock);
	printf(", unlock %d, word now 0x%08x\n", rc, word_of(&probe_foreign_lock));
	CHECK(rc == 0, "unlock");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		return 2;
	printf("provider %s\n", provider_of("pthread_spin_lock"));
	if (strcmp(argv[1], "unlock") == 0 && argc == 2)
		return mode_unlock();
	if (strcmp(argv[1], "destroy") == 0 && argc == 2)
		return mode_destroy();
	if (strcmp(argv[1], "flood") == 0 && argc == 3)
		return mode_flood(atoi(argv[2]));
	if (strcmp(argv[1], "suspect") == 0 && argc == 4)
		return mode_suspect((uint32_t)strtoul(argv[2], NULL, 0), atoi(argv[3]));
	if (strcmp(argv[1], "foreign") == 0 && argc == 3)
		return mode_foreign(argv[2]);
	fprintf(stderr, "misuseprobe: bad arguments\n");
	return 2;
}
