/* The 6-bit queue tickets wrap: three threads queue for a held lock whose
 * queue starts two tickets before the wrap (tickets 62, 63, 0), then
 * contend for it, lock and trylock mixed; every acquisition is counted, a
 * holder sees the queue span the wrap, and the queue ends empty. */
#include "modes.h"
#include "probe_run.h"

/* "spans N" from lockprobe wrap: holders that saw tickets queued across the wrap. */
static long wraps_of(const struct probe_result *r)
{
	const char *line = strstr(r->out, "spans ");

	cr_assert_not_null(line, "no spans line:\n%s", r->out);
	return strtol(line + 6, NULL, 10);
}

#define WRAP_TEST(name, env)                                                              \
	Test(wrap, name)                                                                  \
	{                                                                                 \
		struct probe_result r;                                                    \
		probe_run(&r, env, (const char *const[]){ LOCKPROBE, "wrap", "3", "30000", \
		                                          NULL }, 120);                   \
		assert_probe_provider(&r);                                                \
		cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);                          \
		cr_assert(strstr(r.out, "acquisitions 90003 expected 90003") != NULL,     \
		          "%s", r.out);                                                   \
		cr_assert_geq(wraps_of(&r), 1, "no queue across the wrap: the test proved " \
		              "nothing\n%s", r.out);                                      \
	}

FOR_EACH_MODE(WRAP_TEST)

/* Strict FIFO: every contended acquisition goes through the queue. */
WRAP_TEST(strict_fifo, MODE_ENV("TICKET_QUEUE=0"))

/*
 * Alone, a thread never queues: no ticket is drawn, and its first steal
 * from the (empty) queue restarts it at 0: the idle lock is the all-zero
 * word the fast path takes.
 */
Test(wrap, single_thread_round_trip_returns_to_the_same_word)
{
	struct probe_result r;

	probe_run(&r, NULL, (const char *const[]){ LOCKPROBE, "wrap", "1", "70000", NULL }, 60);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert(strstr(r.out, "spans 0 word 0x3e3e0000 -> 0x00000000") != NULL, "%s", r.out);
}
