/* FIFO: waiters that drew their tickets in a known order get the lock in that
 * order, whatever the backoff and the waiting policy (the queue bound off). */
#include "modes.h"
#include "probe_run.h"

#define FIFO_TEST(name, env)                                                              \
	Test(fifo, name)                                                                  \
	{                                                                                 \
		struct probe_result r;                                                    \
		const char *const *mode = env;                                            \
		const char *e[16];                                                        \
		size_t n = 0;                                                             \
		while (*mode != NULL)                                                     \
			e[n++] = *mode++;                                                 \
		e[n++] = "TICKET_QUEUE=0";                                                \
		e[n] = NULL;                                                              \
		probe_run(&r, e, (const char *const[]){ LOCKPROBE, "fifo", "6", NULL }, 60); \
		assert_probe_provider(&r);                                                \
		cr_assert_eq(r.status, 0, "grant order not FIFO:\n%s%s", r.out, r.err);   \
		cr_assert(strstr(r.out, "order 0 1 2 3 4 5\n") != NULL, "%s", r.out);     \
	}

FOR_EACH_MODE(FIFO_TEST)
