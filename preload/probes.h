/*
 * probes.h - USDT probes (provider "ticketspin") on the slow path, for
 * perf, bpftrace, SystemTap and gdb (doc/tracing.md).  Never in
 * ticket_lock.h's fast paths: an uncontended lock or unlock stays as
 * test_fastpath.sh wants it, with no probe and no extra load.
 *
 * Cost when not traced: each probe is one nop and a note in
 * .note.stapsdt; its arguments are values the code already has in hand
 * (the compiler only has to keep them in registers or memory).  The one
 * value that is not at hand, a wait's length, needs two clock reads: those
 * are made only while a tracer is attached, which the probe's semaphore
 * tells (TS_PROBE_ENABLED(acquired), one load of a variable that tracers
 * increment).  sys/sdt.h with _SDT_HAS_SEMAPHORES gives every probe a
 * semaphore; they are all defined in probes.c.
 *
 * The probes and their arguments (every one from the waiting thread):
 *
 *   wait_begin(lock, caller)     pthread_spin_lock could not take the lock
 *                                at once (held, or free but not ours: the
 *                                bound, or a queue in strict FIFO): the
 *                                thread starts waiting (its doze, rest,
 *                                ticket or sleep outside the queue follow).
 *                                caller: pthread_spin_lock's return address.
 *   acquired(lock, wait_ns, how) the wait that wait_begin opened ended with
 *                                the lock taken, after wait_ns nanoseconds;
 *                                how: 0 stolen (no ticket), 1 at the head of
 *                                the queue, 2 escaped (the last in line past
 *                                a head that does not run).  wait_ns is 0
 *                                when a tracer attached during the wait.
 *   sleep(lock, ticket, where)   about to sleep on a futex: where 0 behind
 *                                the head, 1 at the head, 2 outside a full
 *                                queue, 3 on a process-shared lock's word
 *                                (ticket -1 for those two).
 *   wake(lock, ticket, how)      that sleep ended: how 1 woken (or the word
 *                                changed first), 2 its nap timed out.
 *   rest(lock, us)               a rest before queueing (slowpath.c, step 4)
 *                                of us microseconds begins.
 *   doze(lock, us)               a doze before queueing (step 7) begins.
 *   stall(lock, waited_ns, caller)  a wait passed TICKET_STALL_MS (the
 *                                stderr line follows unless rate-limited);
 *                                waited_ns as that line counts: from the
 *                                first spin budget without progress.
 *
 * Without sys/sdt.h (configure warns) every probe is defined away and
 * TS_PROBE_ENABLED() is false: the build works, with nothing to trace.
 */
#ifndef TICKETSPIN_PROBES_H
#define TICKETSPIN_PROBES_H

#include "config.h"

/* how, in acquired */
#define TS_PROBE_HOW_STOLEN  0
#define TS_PROBE_HOW_HEAD    1
#define TS_PROBE_HOW_ESCAPED 2
/* where, in sleep */
#define TS_PROBE_SLEEP_BEHIND  0
#define TS_PROBE_SLEEP_HEAD    1
#define TS_PROBE_SLEEP_OUTSIDE 2
#define TS_PROBE_SLEEP_SHARED  3

#ifdef HAVE_SYS_SDT_H
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

/*
 * The semaphores: how many tracers watch each probe.  In .probes, where
 * the tracers (the kernel's uprobe reference counter, or gdb) look for
 * them (defined in probes.c); hidden, like everything of the library but
 * its five functions.
 */
#define TS_PROBE_SEMAPHORE(name) \
	extern unsigned short ticketspin_##name##_semaphore __attribute__((visibility("hidden")))
TS_PROBE_SEMAPHORE(wait_begin);
TS_PROBE_SEMAPHORE(acquired);
TS_PROBE_SEMAPHORE(sleep);
TS_PROBE_SEMAPHORE(wake);
TS_PROBE_SEMAPHORE(rest);
TS_PROBE_SEMAPHORE(doze);
TS_PROBE_SEMAPHORE(stall);

/* Is a tracer attached to probe @name?  Relaxed: a hint, read in passing. */
#define TS_PROBE_ENABLED(name) \
	__builtin_expect(__atomic_load_n(&ticketspin_##name##_semaphore, __ATOMIC_RELAXED) != 0, 0)
#define TS_PROBE2(name, a, b)    STAP_PROBE2(ticketspin, name, a, b)
#define TS_PROBE3(name, a, b, c) STAP_PROBE3(ticketspin, name, a, b, c)
#else
/* The arguments are values at hand: naming them costs nothing, and keeps
 * variables used only by a probe from "unused" warnings. */
#define TS_PROBE_ENABLED(name)   0
#define TS_PROBE2(name, a, b)    do { (void)(a); (void)(b); } while (0)
#define TS_PROBE3(name, a, b, c) do { (void)(a); (void)(b); (void)(c); } while (0)
#endif

#endif
