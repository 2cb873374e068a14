/*
 * probes.c - the USDT probes' semaphores (probes.h): one per probe, as
 * sys/sdt.h with _SDT_HAS_SEMAPHORES expects, each named
 * ticketspin_NAME_semaphore and placed in .probes, where tracers find
 * them by the address that the probe's note gives.  A tracer that attaches
 * increments the probe's semaphore (the kernel through the uprobe's
 * reference counter, gdb by writing the process's memory); the slow path
 * reads only acquired's, to decide whether to time a wait.
 */
#include "probes.h"

#ifdef HAVE_SYS_SDT_H
#define TS_PROBE_SEMAPHORE_DEFINE(name) \
	unsigned short ticketspin_##name##_semaphore __attribute__((section(".probes"))) = 0
TS_PROBE_SEMAPHORE_DEFINE(wait_begin);
TS_PROBE_SEMAPHORE_DEFINE(acquired);
TS_PROBE_SEMAPHORE_DEFINE(sleep);
TS_PROBE_SEMAPHORE_DEFINE(wake);
TS_PROBE_SEMAPHORE_DEFINE(rest);
TS_PROBE_SEMAPHORE_DEFINE(doze);
TS_PROBE_SEMAPHORE_DEFINE(stall);
#else
/* ISO C wants a translation unit to declare something. */
typedef int ts_probes_unused;
#endif
