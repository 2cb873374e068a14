/*
 * stall.c - one line on stderr for a wait that lasts longer than
 * TICKET_STALL_MS; see stall.h.
 *
 * The line says what the waiting thread already knows: the lock's address,
 * the return address of pthread_spin_lock(), the tickets and the word, the
 * time waited, and the process id, and makes no system call but the
 * write() of the line (the clock of the rate limit is the vDSO's).  It names
 * no object or symbol: reading /proc/self/maps and the objects' symbol
 * tables took open(), read() and process_vm_readv(), and a seccomp filter
 * that allows what a program's locks need (futex, write) killed the
 * program at its first long wait (issue 40, item 6).  The thread is still
 * waiting when the line appears: `ticketspin where PID ADDRESS...` names
 * the addresses from the process's maps meanwhile (tools/ticketspin), and
 * addr2line does from the object and offset it gives.
 */
#include "stall.h"

#include "log.h"
#include "probes.h"
#include "ticket_lock.h"

#include <stdio.h>

static struct ts_rate_limit stall_rate = TS_RATE_LIMIT(TS_STALL_BURST);

void ts_stall_check(struct ts_stall_watch *watch, const struct ts_config *cfg,
                    const void *lock, const void *caller, unsigned ahead, uint32_t word,
                    bool outside, uint64_t now_ns)
{
	char queue[96], note[96], names[96];
	uint64_t waited_ms, skipped;
	int pid = ts_pid();

	if (cfg->stall_ms == 0 || watch->reported)
		return;
	if (watch->since_ns == 0) {
		watch->since_ns = now_ns;
		return;
	}
	waited_ms = (now_ns - watch->since_ns) / 1000000u;
	if (waited_ms < cfg->stall_ms)
		return;
	watch->reported = true; /* once per wait, printed or suppressed */
	/* Before the rate limit: a tracer sees every stall, printed or not. */
	TS_PROBE3(stall, lock, now_ns - watch->since_ns, caller);
	if (!ts_rate_allows(&stall_rate, &skipped))
		return;
	ts_suppressed_note(note, sizeof(note), skipped);
	if (outside)
		snprintf(queue, sizeof(queue), "outside a full line (%u tickets in line, word 0x%08x)",
		         ts_queued(word), word);
	else if (word & TS_SHARED)
		snprintf(queue, sizeof(queue), "process-shared, no queue (word 0x%08x)", word);
	else
		snprintf(queue, sizeof(queue), "%u ticket%s ahead (word 0x%08x)", ahead,
		         ahead == 1 ? "" : "s", word);
	/* The pid as noted at start and in a fork's child: getpid() would be a system call. */
	if (pid > 0)
		snprintf(names, sizeof(names), "; names: ticketspin where %d %p %p", pid, lock,
		         caller);
	else
		names[0] = '\0';
	ts_log("stall: pthread_spin_lock(%p) called from %p has waited %llu ms, %s; still "
	       "waiting (TICKET_STALL_MS=%u)%s%s",
	       lock, caller, (unsigned long long)waited_ms, queue, cfg->stall_ms, note, names);
}
