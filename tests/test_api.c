/* The five functions' contracts, through the preloaded library. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#include "provider.h"
#include "ticket_lock.h"

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
	cr_assert_eq(word(&lock), 0);
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

Test(api, lock_and_unlock_one_ticket_each)
{
	pthread_spinlock_t lock;

	assert_ticketspin_provides_all();
	pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE);
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(pthread_spin_lock(&lock), 0);
		cr_assert_eq(pthread_spin_unlock(&lock), 0);
	}
	/* Five tickets drawn and five served: both halves moved by five steps. */
	cr_assert_eq(word(&lock), 5u * TS_TICKET_STEP * 0x10001u, "word %#x", word(&lock));
}

Test(api, a_word_glibc_initialised_is_taken_over)
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
