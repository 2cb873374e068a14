/*
 * fastpath-variants.c - stand-in preloads for ucx-hotpath.sh: the five
 * functions with nothing but a fast path, to tell what a real uncontended hot
 * path pays for being a preload, for its read-modify-write and for its
 * unlock.  Not locks to use: the waiting is a bare spin, and they keep no
 * protocol beside the lock byte.  Built by ucx-hotpath.sh as:
 *   -DVARIANT_GLIBC    glibc's x86-64 algorithm (1 = free; lock decrements,
 *                      unlock stores 1): the price of the preload alone
 *   -DVARIANT_XCHG     ticketspin's encoding (0 = free, 0x10 held), lock by
 *                      exchange, unlock a plain store
 *   -DVARIANT_CAS      lock by compare-and-swap from 0 (ticketspin's), unlock
 *                      a plain store
 *   -DVARIANT_CAS_BYTE ticketspin's two fast paths: compare-and-swap from 0;
 *                      unlock loads the word and stores the lock byte only
 *                      when no flag asks for the slow path
 * and three that ask what a fast path built on an exchange would cost: the
 * lock exchanges the lock byte alone (so that the rest of the word, where a
 * queue and its flags would live, is left alone), the unlock loads the word
 * and stores the lock byte unless a flag outside the lock byte is set:
 *   -DVARIANT_XCHG_BYTE       nothing else
 *   -DVARIANT_XCHG_BYTE_LOAD  the lock then loads the word, to refuse a free
 *                             lock with a queue behind it
 *   -DVARIANT_XCHG_BYTE_LOAD_HI  the lock then loads the upper half alone
 *                             (where the tickets are), which does not
 *                             overlap the byte just exchanged
 *   -DVARIANT_XCHG_BYTE_MODE  the lock first tests a process-wide flag (a
 *                             strict-FIFO mode would take the
 *                             compare-and-swap path instead)
 * and -DVARIANT_CAS8_LOAD_HI: a compare-and-swap of the lock byte alone
 * from free (flags in a held lock byte stay), then the XCHG_BYTE_LOAD_HI
 * load; and two other read-modify-writes that take a free lock without refusing
 * it, with ticketspin's unlock: -DVARIANT_BTS (lock bts of the held bit,
 * which would leave flags in the lock byte intact) and -DVARIANT_XADD
 * (fetch-add of the held bit, taken when the word was 0).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>

#define API __attribute__((visibility("default")))

#if defined(VARIANT_XCHG_BYTE) || defined(VARIANT_XCHG_BYTE_LOAD) ||                              \
	defined(VARIANT_XCHG_BYTE_LOAD_HI) || defined(VARIANT_XCHG_BYTE_MODE)
#define XCHG_BYTE 1
#define FLAGS_OUTSIDE_LOCK_BYTE 0xe000u
/* a process-wide mode, as a strict-FIFO setting would be; never set here */
__attribute__((visibility("hidden"))) int strict_mode;
#endif
#ifdef VARIANT_GLIBC
#define FREE 1
#define HELD 0 /* glibc's: a trylock's word must read as held to lock's decrement */
#else
#define FREE 0
#define HELD 0x10
#endif

#ifndef VARIANT_GLIBC
static __attribute__((noinline)) int spin_then_take(pthread_spinlock_t *lock)
{
	for (;;) {
		int expected = FREE;

		while (__atomic_load_n(lock, __ATOMIC_RELAXED) != FREE)
			__builtin_ia32_pause();
		if (__atomic_compare_exchange_n(lock, &expected, HELD, 0, __ATOMIC_ACQUIRE,
		                                __ATOMIC_RELAXED))
			return 0;
	}
}

/* ticketspin's fast path: a compare-and-swap from free. */
static inline int lock_by_cas(pthread_spinlock_t *lock)
{
	int expected = FREE;

	if (__atomic_compare_exchange_n(lock, &expected, HELD, 0, __ATOMIC_ACQUIRE,
	                                __ATOMIC_RELAXED))
		return 0;
	return spin_then_take(lock);
}
#endif

API int pthread_spin_init(pthread_spinlock_t *lock, int pshared)
{
	(void)pshared;
	*lock = FREE;
	return 0;
}

API int pthread_spin_destroy(pthread_spinlock_t *lock)
{
	(void)lock;
	return 0;
}

#if defined(VARIANT_XCHG_BYTE_LOAD_HI) || defined(VARIANT_CAS8_LOAD_HI)
/* A 16-bit load of the upper half (where a queue would be), which does not
 * overlap the lock byte just written. */
static inline int upper_half_set(pthread_spinlock_t *lock)
{
	return __atomic_load_n((uint16_t *)lock + 1, __ATOMIC_RELAXED) != 0;
}
#endif

API int pthread_spin_lock(pthread_spinlock_t *lock)
{
#if defined(VARIANT_GLIBC)
	while (__atomic_sub_fetch(lock, 1, __ATOMIC_ACQUIRE) != 0)
		while (__atomic_load_n(lock, __ATOMIC_RELAXED) <= 0)
			__builtin_ia32_pause();
	return 0;
#elif defined(VARIANT_BTS)
	unsigned char was_held;

	__asm__ __volatile__("lock btsl $4, %1" : "=@ccc"(was_held), "+m"(*lock) : : "memory");
	if (!was_held)
		return 0;
	return spin_then_take(lock);
#elif defined(VARIANT_XADD)
	if (__atomic_fetch_add((uint32_t *)lock, (uint32_t)HELD, __ATOMIC_ACQUIRE) == FREE)
		return 0;
	return spin_then_take(lock);
#elif defined(XCHG_BYTE)
#ifdef VARIANT_XCHG_BYTE_MODE
	if (__builtin_expect(strict_mode, 0))
		return lock_by_cas(lock);
#endif
	if (__atomic_exchange_n((uint8_t *)lock, HELD, __ATOMIC_ACQUIRE) == FREE) {
#ifdef VARIANT_XCHG_BYTE_LOAD
		if (__builtin_expect((__atomic_load_n((uint32_t *)lock, __ATOMIC_RELAXED) & ~0xffu) != 0,
		                     0))
			return spin_then_take(lock);
#endif
#ifdef VARIANT_XCHG_BYTE_LOAD_HI
		if (__builtin_expect(upper_half_set(lock), 0))
			return spin_then_take(lock);
#endif
		return 0;
	}
	return spin_then_take(lock);
#elif defined(VARIANT_CAS8_LOAD_HI)
	uint8_t expected = FREE;

	if (__atomic_compare_exchange_n((uint8_t *)lock, &expected, HELD, 0, __ATOMIC_ACQUIRE,
	                                __ATOMIC_RELAXED)) {
		if (__builtin_expect(upper_half_set(lock), 0))
			return spin_then_take(lock);
		return 0;
	}
	return spin_then_take(lock);
#elif defined(VARIANT_XCHG)
	if (__atomic_exchange_n(lock, HELD, __ATOMIC_ACQUIRE) == FREE)
		return 0;
	return spin_then_take(lock);
#else
	return lock_by_cas(lock);
#endif
}

API int pthread_spin_trylock(pthread_spinlock_t *lock)
{
	int expected = FREE;

	return __atomic_compare_exchange_n(lock, &expected, HELD, 0, __ATOMIC_ACQUIRE,
	                                   __ATOMIC_RELAXED) ? 0 : EBUSY;
}

#if defined(VARIANT_CAS_BYTE) || defined(XCHG_BYTE) || defined(VARIANT_BTS) ||                   \
	defined(VARIANT_XADD) || defined(VARIANT_CAS8_LOAD_HI)
static __attribute__((noinline)) int unlock_flagged(pthread_spinlock_t *lock)
{
	__atomic_store_n(lock, FREE, __ATOMIC_RELEASE);
	return 0;
}
#endif

API int pthread_spin_unlock(pthread_spinlock_t *lock)
{
#if defined(XCHG_BYTE)
	uint32_t word = __atomic_load_n((uint32_t *)lock, __ATOMIC_RELAXED);

	if (__builtin_expect(word & FLAGS_OUTSIDE_LOCK_BYTE, 0))
		return unlock_flagged(lock);
	__atomic_store_n((uint8_t *)lock, FREE, __ATOMIC_RELEASE);
#elif defined(VARIANT_CAS_BYTE) || defined(VARIANT_BTS) || defined(VARIANT_XADD) ||              \
	defined(VARIANT_CAS8_LOAD_HI)
	uint32_t word = __atomic_load_n((uint32_t *)lock, __ATOMIC_RELAXED);

	if ((uint8_t)word != HELD)
		return unlock_flagged(lock);
	__atomic_store_n((uint8_t *)lock, FREE, __ATOMIC_RELEASE);
#else
	__atomic_store_n(lock, FREE, __ATOMIC_RELEASE);
#endif
	return 0;
}
