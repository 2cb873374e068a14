/*
 * Stress, short (issue 6): the spinstress validation program (counts checked
 * inside the lock, lock and trylock mixed, random think times) in every mode
 * and policy, with 1, 2, 3, 5, 8 and 16 threads on two locks, through the
 * preloaded pthread_spin_*; and spinstress_core, which calls the core's lock
 * directly (what the ThreadSanitizer build checks).  The long run is
 * 'make stress' (tests/stress.sh).
 */
#include "modes.h"
#include "probe_run.h"

static void stress(const char *prog, const char *const *env, int threads)
{
	struct probe_result r;
	char t[16], n[16];
	int spin = 0;

	for (const char *const *e = env; e != NULL && *e != NULL; e++)
		spin |= strcmp(*e, "TICKET_WAIT=spin") == 0;
	/*
	 * About 20,000 acquisitions in all; 2,000 when waiters never give the CPU
	 * away and outnumber the two CPUs (each hand-over may then wait for a
	 * time slice: that is the reference ticket lock's behaviour, not a bug).
	 */
	snprintf(t, sizeof(t), "%d", threads);
	snprintf(n, sizeof(n), "%d", (spin && threads > 2 ? 2000 : 20000) / threads);
	probe_run(&r, env, (const char *const[]){ prog, "-t", t, "-n", n, "-l", "2", "-w", "100",
	                                          NULL }, 120);
	cr_assert_eq(r.status, 0, "%s -t %s -n %s: status %d\n%s%s", prog, t, n, r.status, r.out,
	             r.err);
	cr_assert(strstr(r.out, "violations=0"), "%s", r.out);
}

#define STRESS_TESTS(name, env)                                         \
	Test(stress, name)                                              \
	{                                                               \
		static const int threads[] = { 1, 2, 3, 5, 8, 16 };     \
		for (size_t i = 0; i < sizeof(threads) / sizeof(threads[0]); i++) \
			stress(SPINSTRESS, env, threads[i]);            \
		struct probe_result r;                                  \
		probe_run(&r, env, (const char *const[]){ SPINSTRESS, "-n", "0", NULL }, 30); \
		assert_probe_provider(&r);                              \
	}

FOR_EACH_MODE(STRESS_TESTS)

Test(stress, core_linked)
{
	static const int threads[] = { 1, 2, 4, 8 };

	for (size_t i = 0; i < sizeof(threads) / sizeof(threads[0]); i++)
		stress(SPINSTRESS_CORE, NULL, threads[i]);
}
