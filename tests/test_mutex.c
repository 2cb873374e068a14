/* Mutual exclusion, 2..8 threads, several locks, lock and trylock mixed, in
 * every mode; counts are checked inside the critical section and after. */
#include "modes.h"
#include "probe_run.h"

static void hammer(const char *const *env, const char *threads, const char *nlocks,
                   const char *iterations)
{
	struct probe_result r;

	probe_run(&r, env, (const char *const[]){ LOCKPROBE, "hammer", threads, nlocks,
	                                          iterations, NULL }, 120);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "hammer %s threads, %s locks: status %d\n%s%s", threads,
	             nlocks, r.status, r.out, r.err);
}

#define MUTEX_TESTS(name, env)                          \
	Test(mutex, name##_2_threads_1_lock)            \
	{                                               \
		hammer(env, "2", "1", "100000");        \
	}                                               \
	Test(mutex, name##_4_threads_3_locks)           \
	{                                               \
		hammer(env, "4", "3", "40000");         \
	}                                               \
	Test(mutex, name##_8_threads_2_locks)           \
	{                                               \
		hammer(env, "8", "2", "10000");         \
	}

FOR_EACH_MODE(MUTEX_TESTS)
