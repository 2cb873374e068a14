/* The 14-bit tickets wrap: more than 65,536 acquisitions, with threads waiting
 * across the wrap (the lock starts six tickets before it). */
#include "modes.h"
#include "probe_run.h"

#define WRAP_TEST(name, env)                                                              \
	Test(wrap, name)                                                                  \
	{                                                                                 \
		struct probe_result r;                                                    \
		probe_run(&r, env, (const char *const[]){ LOCKPROBE, "wrap", "3", "30000", \
		                                          NULL }, 120);                   \
		assert_probe_provider(&r);                                                \
		cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);                          \
		cr_assert(strstr(r.out, "acquisitions 90000 expected 90000") != NULL,     \
		          "%s", r.out);                                                   \
	}

FOR_EACH_MODE(WRAP_TEST)

Test(wrap, single_thread_round_trip_returns_to_the_same_word)
{
	struct probe_result r;

	probe_run(&r, NULL, (const char *const[]){ LOCKPROBE, "wrap", "1", "70000", NULL }, 60);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
}
