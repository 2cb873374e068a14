/*
 * misuse.c - reports of misused locks: once per lock, rate-limited, one line
 * each on stderr.  See misuse.h for what is detected and what happens next.
 *
 * Everything here runs only after a fast path has found a misuse, so it may
 * be slow, but it must stay safe where a spinlock is used: no allocation, no
 * stdio, no locks of our own (the tables are updated with atomics).  The
 * report of a suspect word is made by a thread holding a ticket: it names
 * addresses from /proc/self/maps (maps.h), never with dladdr(), which takes
 * the dynamic loader's lock, and makes no cancellation point.  The unlock and
 * destroy reports hold no ticket and name the caller's function with dladdr();
 * a program that misuses a spinlock while another thread waits for that lock
 * inside the loader is not a case we try to serve.
 */
#include "misuse.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "maps.h"

static uint64_t detected[TS_MISUSE_KINDS];

uint64_t ts_misuse_count(enum ts_misuse_kind kind)
{
	return kind < TS_MISUSE_KINDS ? __atomic_load_n(&detected[kind], __ATOMIC_RELAXED) : 0;
}

/*
 * Locks already reported, per kind: an open-addressed set of keys that are
 * never removed.  When the probe finds no room, we report again (the rate
 * limit still bounds the output).  A lock freed and reused at the same address
 * is not reported again for the same kind; the message says so.
 */
#define SEEN_SLOTS 1024u
#define SEEN_PROBE 16u
static uintptr_t seen[SEEN_SLOTS];

static bool first_report(const void *lock, enum ts_misuse_kind kind)
{
	/* User-space addresses have 47 bits: shifting by 2 loses nothing. */
	uintptr_t key = ((uintptr_t)lock << 2 | (uintptr_t)kind) | (uintptr_t)1 << 63;
	uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ull;

	for (unsigned i = 0; i < SEEN_PROBE; i++) {
		uintptr_t *slot = &seen[((h >> 40) + i) % SEEN_SLOTS];
		uintptr_t old = __atomic_load_n(slot, __ATOMIC_RELAXED);

		if (old == 0 && __atomic_compare_exchange_n(slot, &old, key, false,
		                                            __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return true;
		if (old == key)
			return false;
	}
	return true;
}

/* Reports beyond the first TS_MISUSE_BURST (all kinds together): one a second. */
static struct ts_rate_limit misuse_rate = TS_RATE_LIMIT(TS_MISUSE_BURST);

/* Counts the misuse; true when it should be printed (first for this lock, rate allowing). */
static bool should_report(const void *lock, enum ts_misuse_kind kind, uint64_t *skipped)
{
	__atomic_fetch_add(&detected[kind], 1, __ATOMIC_RELAXED);
	*skipped = 0;
	return first_report(lock, kind) && ts_rate_allows(&misuse_rate, skipped);
}

/* The names in a report made by a thread that holds no ticket (dladdr() may be used). */
struct report_names {
	char where[160], from[160], note[96];
};

/*
 * True when a report of @kind on @lock is due (should_report()); then @n
 * names the lock, the @caller and the reports the rate limit skipped.
 */
static bool report_due(const void *lock, enum ts_misuse_kind kind, const void *caller,
                       struct report_names *n)
{
	uint64_t skipped;

	if (!should_report(lock, kind, &skipped))
		return false;
	ts_describe_address(n->where, sizeof(n->where), lock);
	ts_describe_address(n->from, sizeof(n->from), caller);
	ts_suppressed_note(n->note, sizeof(n->note), skipped);
	return true;
}

/*
 * The unlock of a lock we held whose byte glibc's lock decremented.  Nothing
 * we could write serves both: glibc's waiter takes only a positive word and
 * makes it 0, which is our free word (doc/reliability.md).  So the word is
 * left as it is: our next locker takes it (0x03-0x0f is free to us), and
 * glibc's waiter, which finds it negative on a process-shared lock, waits.
 */
static void unlock_decremented(const void *lock, uint32_t word, const void *caller)
{
	struct report_names n;

	if (!report_due(lock, TS_MISUSE_DECREMENTED, caller, &n))
		return;
	ts_log("misuse: pthread_spin_unlock(%s) called from %s: the lock byte is 0x%02x, our "
	       "held 0x%02x decremented (word 0x%08x), as glibc's pthread_spin_lock leaves a lock "
	       "it finds held: code without ticketspin uses this lock (a process started "
	       "without the preload, a statically linked or set-user-ID program?), and the two "
	       "encodings cannot share it (doc/reliability.md); returned EPERM, lock left "
	       "unchanged (reported once per lock)%s",
	       n.where, n.from, ts_lock_byte(word), TS_LOCKED, word, n.note);
}

void ts_misuse_unlock_unheld(const void *lock, uint32_t word, const void *caller)
{
	struct report_names n;

	if (ts_byte_is_decremented(ts_lock_byte(word))) {
		unlock_decremented(lock, word, caller);
		return;
	}
	if (!report_due(lock, TS_MISUSE_UNLOCK_UNHELD, caller, &n))
		return;
	ts_log("misuse: pthread_spin_unlock(%s) called from %s: the lock is not held "
	       "(word 0x%08x); returned EPERM, lock left unchanged "
	       "(reported once per lock)%s",
	       n.where, n.from, word, n.note);
}

void ts_misuse_destroy_held(const void *lock, uint32_t word, const void *caller)
{
	struct report_names n;
	unsigned waiting = ts_queued(word);

	if (!report_due(lock, TS_MISUSE_DESTROY_HELD, caller, &n))
		return;
	ts_log("misuse: pthread_spin_destroy(%s) called from %s: the lock is held "
	       "(word 0x%08x, %u thread%s waiting); returned 0 as glibc does, lock left "
	       "unchanged (reported once per lock)%s",
	       n.where, n.from, word, waiting, waiting == 1 ? "" : "s", n.note);
}

/*
 * Threads on the whole system (every process, every namespace): the 4th field
 * of /proc/loadavg, "running/total".  sysinfo(2) has it too, but in 16 bits.
 * Cached for a second, unless @fresh; 0 when unknown.
 *
 * Read with raw system calls: open(), read() and close() are cancellation
 * points in glibc, and this runs in pthread_spin_lock() with a ticket drawn,
 * which a cancellation there would leave in line for ever (syscall() is not a
 * cancellation point).
 */
static uint64_t threads_cache; /* count << 32 | second the count was read (low 32 bits) */

static uint32_t system_threads(bool fresh)
{
	uint64_t cached = __atomic_load_n(&threads_cache, __ATOMIC_RELAXED);
	uint32_t now = (uint32_t)ts_coarse_seconds();
	uint32_t count = 0;
	char buf[128];
	long n, fd;

	if (!fresh && cached != 0 && (uint32_t)cached == now)
		return (uint32_t)(cached >> 32);
	fd = syscall(SYS_openat, AT_FDCWD, "/proc/loadavg", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = syscall(SYS_read, (int)fd, buf, sizeof(buf) - 1);
		syscall(SYS_close, (int)fd);
		if (n > 0) {
			char *slash;

			buf[n] = '\0';
			slash = strchr(buf, '/');
			if (slash != NULL)
				count = (uint32_t)strtoul(slash + 1, NULL, 10);
		}
	}
	if (count == 0) {
		struct sysinfo si;

		/* 16 bits: only trust it when it cannot have wrapped. */
		if (sysinfo(&si) == 0 && si.procs < 0x8000u)
			count = si.procs;
	}
	if (count != 0)
		__atomic_store_n(&threads_cache, (uint64_t)count << 32 | now, __ATOMIC_RELAXED);
	return count;
}

bool ts_misuse_suspect_word(const void *lock, uint32_t word, uint8_t ticket,
                            const void *caller)
{
	char where[160], from[160], note[96];
	unsigned ahead = ts_tickets_between(ts_head(word), ticket);
	uint32_t threads = 0;
	uint64_t skipped;

	/*
	 * Every ticket ahead of ours but the holder's belongs to a thread waiting
	 * for this lock, and we are a thread too: ahead <= threads on the system.
	 * (A ticket orphaned by a cancelled or killed waiter breaks this, and then
	 * the lock is broken anyway.)  Unknown thread count: nothing is suspect.
	 */
	if (ts_word_is_foreign(word))
		goto suspect;
	if (ahead <= TS_MISUSE_AHEAD_CHEAP)
		return false;
	threads = system_threads(false);
	if (threads == 0 || ahead <= threads)
		return false;
	/*
	 * The cached count may be up to a second old, and a burst of new threads
	 * (each of which may have drawn a ticket since) outgrows it: judge only
	 * on a count read now.
	 */
	threads = system_threads(true);
	if (threads == 0 || ahead <= threads)
		return false;
suspect:
	if (!should_report(lock, TS_MISUSE_SUSPECT_WORD, &skipped))
		return true;
	/* Not dladdr(): we hold a ticket (maps.h) */
	ts_maps_describe(where, sizeof(where), lock);
	ts_maps_describe(from, sizeof(from), caller);
	ts_suppressed_note(note, sizeof(note), skipped);
	if (ts_word_is_foreign(word))
		ts_log("misuse: pthread_spin_lock(%s) called from %s: word 0x%08x is not a valid "
		       "ticket lock: it has bits this library never sets (%u tickets ahead of ours, "
		       "head %u, ours %u); glibc's own spinlock leaves such words: is the lock also "
		       "used by a process without the preload (set-user-ID, statically linked), "
		       "or overwritten?  Waiting %s anyway, possibly forever "
		       "(reported once per lock)%s",
		       where, from, word, ahead, ts_head(word), ticket,
		       (word & TS_SHARED) ? "for it" : "in line", note);
	else
		ts_log("misuse: pthread_spin_lock(%s) called from %s: word 0x%08x is not a valid "
		       "ticket lock: %u tickets ahead of ours (head %u, ours %u) but only %u threads "
		       "on the system; not initialised with pthread_spin_init, overwritten, or "
		       "written by another lock implementation?  Waiting in line anyway, possibly "
		       "forever (reported once per lock)%s",
		       where, from, word, ahead, ts_head(word), ticket, threads, note);
	return true;
}
