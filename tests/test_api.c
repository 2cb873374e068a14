/* The five functions' contracts, through the preloaded library. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>

#include "provider.h"
#include "ticket_lock.h"

/* A broken lock hangs its test: fail it instead (and let make mutants go on). */
TestSuite(api, .timeout = 60);

static uint32_t word(pthread_spinlock_t *lock)
{
	return __atomic_load_n((uint32_t *)lock, __ATOMIC_RELAXED);
}

Test(api, init_accepts_private_and_shared_only)
{
	pthread_spinlock_t lock = 12345;

	assert_ticketspin_provides_all();
	cr_assert_eq(pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE), 0);
	cr_assert_eq(word(&lock), 0, "init stores the unlocked word 0");
	lock = 12345;
	cr_assert_eq(pthread_spin_init(&lock, PTHREAD_PROCESS_SHARED), 0);
	cr_assert_eq(word(&lock), TS_SHARED, "a process-shared lock is marked: %#x", word(&lock));
	cr_assert(ts_word_is_idle(word(&lock)));
	lock = 12345;
	cr_assert_eq(pthread_spin_init(&lock, 2), EINVAL);
	cr_assert_eq(pthread_spin_init(&lock, -1), EINVAL);
	cr_assert_eq(lock, 12345, "a refused init leaves the word alone");
}

Test(api, zero_filled_lock_works_without_init)
{
	static pthread_spinlock_t lock; /* zero-filled */

	assert_ticketspin_provides_all();
	cr_assert_eq(pthread_spin_lock(&lock), 0);
	cr_assert_eq(pthread_spin_trylock(&lock), EBUSY);
	cr_assert_eq(pthread_spin_unlock(&lock), 0);
	cr_assert_eq(pthread_spin_trylock(&lock), 0);
	cr_assert_eq(pthread_spin_unlock(&lock), 0);
	cr_assert_eq(pthread_spin_destroy(&lock), 0);
}

Test(api, trylock_never_waits_and_never_leaves_a_ticket)
{
	pthread_spinlock_t lock;
	uint32_t held;

	assert_ticketspin_provides_all();
	pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE);
	cr_assert_eq(pthread_spin_lock(&lock), 0);
	held = word(&lock);
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(pthread_spin_trylock(&lock), EBUSY);
	cr_assert_eq(word(&lock), held, "a failed trylock changed the word: %#x -> %#x", held,
	             word(&lock));
	cr_assert_eq(pthread_spin_unlock(&lock), 0);
	/* No ticket was left behind: the lock is free again. */
	cr_assert_eq(pthread_spin_trylock(&lock), 0);
	cr_assert_eq(pthread_spin_unlock(&lock), 0);
}

Test(api, uncontended_lock_and_unlock_draw_no_ticket)
{
	pthread_spinlock_t lock;

	assert_ticketspin_provides_all();
	pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE);
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(pthread_spin_lock(&lock), 0);
		cr_assert_eq(word(&lock), TS_LOCKED, "held: the lock byte only, %#x", word(&lock));
		cr_assert_eq(pthread_spin_unlock(&lock), 0);
		/* No ticket drawn: the word is 0 again, as pthread_spin_init left it. */
		cr_assert_eq(word(&lock), 0, "word %#x after unlock %d", word(&lock), i);
	}
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(pthread_spin_trylock(&lock), 0);
		cr_assert_eq(word(&lock), TS_LOCKED, "%#x", word(&lock));
		cr_assert_eq(pthread_spin_unlock(&lock), 0);
		cr_assert_eq(word(&lock), 0, "word %#x after trylock and unlock", word(&lock));
	}
}

/* A process-shared lock keeps its mark through lock, trylock and unlock. */
Test(api, process_shared_lock_keeps_its_mark)
{
	pthread_spinlock_t lock;

	assert_ticketspin_provides_all();
	cr_assert_eq(pthread_spin_init(&lock, PTHREAD_PROCESS_SHARED), 0);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(pthread_spin_lock(&lock), 0);
		cr_assert_eq(word(&lock), TS_SHARED | TS_LOCKED, "%#x", word(&lock));
		cr_assert_eq(pthread_spin_trylock(&lock), EBUSY);
		cr_assert_eq(pthread_spin_unlock(&lock), 0);
		cr_assert_eq(word(&lock), TS_SHARED, "%#x", word(&lock));
		cr_assert_eq(pthread_spin_trylock(&lock), 0);
		cr_assert_eq(pthread_spin_unlock(&lock), 0);
		cr_assert_eq(word(&lock), TS_SHARED, "%#x", word(&lock));
	}
	cr_assert_eq(pthread_spin_unlock(&lock), 0, "unlock of a free shared lock, unchecked");
	cr_assert_eq(word(&lock), TS_SHARED, "%#x", word(&lock));
	cr_assert_eq(pthread_spin_destroy(&lock), 0);
}

/*
 * By default (TICKET_CHECK_UNLOCK unset) the unlock's fast path does not
 * read the lock byte (ticket_lock.h): an unlock of a free lock whose word
 * carries no request returns 0 and leaves the word as it was, as glibc's
 * does; with a request in the word the slow path looks, and says EPERM.
 * test_misuse checks the reports with TICKET_CHECK_UNLOCK=1, which marks
 * the word at its init (TS_UNLOCK_DUE); here the word stays all zero.
 */
Test(api, unlock_of_a_free_lock_unchecked)
{
	pthread_spinlock_t lock;

	assert_ticketspin_provides_all();
	cr_assert_eq(pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE), 0);
	cr_assert_eq(pthread_spin_unlock(&lock), 0);
	cr_assert_eq(word(&lock), 0, "%#x", word(&lock));
	cr_assert_eq(pthread_spin_lock(&lock), 0);
	cr_assert_eq(pthread_spin_unlock(&lock), 0);
	cr_assert_eq(pthread_spin_unlock(&lock), 0, "one unlock too many, unchecked");
	cr_assert_eq(word(&lock), 0, "%#x", word(&lock));
	*(volatile uint32_t *)(void *)&lock = TS_WAKE_HEAD | (1u << TS_NEXT_SHIFT);
	cr_assert_eq(pthread_spin_unlock(&lock), EPERM, "a request sends it to the slow path");
	cr_assert_eq(word(&lock), TS_WAKE_HEAD | (1u << TS_NEXT_SHIFT), "%#x", word(&lock));
}

/* A hang here is a failure, not a stuck `make check`: hence the timeout. */
Test(api, a_word_glibc_initialised_is_taken_over, .timeout = 10)
{
	pthread_spinlock_t lock = 1; /* glibc's unlocked value */

	assert_ticketspin_provides_all();
	cr_assert_eq(pthread_spin_lock(&lock), 0);
	cr_assert_eq(pthread_spin_trylock(&lock), EBUSY);
	cr_assert_eq(pthread_spin_unlock(&lock), 0);
	cr_assert_eq(pthread_spin_trylock(&lock), 0, "after one lock the word is ours: %#x",
	             word(&lock));
	cr_assert_eq(pthread_spin_unlock(&lock), 0);
}

static pthread_spinlock_t small_stack_lock;
static int small_stack_count;

static void *small_stack_thread(void *arg)
{
	for (int i = 0; i < 1000; i++) {
		pthread_spin_lock(&small_stack_lock);
		small_stack_count++;
		pthread_spin_unlock(&small_stack_lock);
	}
	return arg;
}

/*
 * The library's static TLS must leave room in the smallest stack glibc
 * accepts: with it preloaded, a thread of PTHREAD_STACK_MIN bytes is still
 * created (a 16 KiB delay table once made that EINVAL), and it can contend.
 */
Test(api, threads_with_the_smallest_stacks_can_be_created)
{
	pthread_attr_t attr;
	pthread_t tids[2];

	assert_ticketspin_provides_all();
	cr_assert_eq(pthread_spin_init(&small_stack_lock, PTHREAD_PROCESS_PRIVATE), 0);
	cr_assert_eq(pthread_attr_init(&attr), 0);
	cr_assert_eq(pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN), 0);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&tids[i], &attr, small_stack_thread, NULL), 0,
		             "pthread_create with a PTHREAD_STACK_MIN stack failed");
	for (int i = 0; i < 2; i++)
		pthread_join(tids[i], NULL);
	cr_assert_eq(small_stack_count, 2000);
}
