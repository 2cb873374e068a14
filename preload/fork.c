/*
 * fork.c - emptying, in a forked child, the queues of the locks that other
 * threads waited for; see fork.h.
 *
 * Each thread that ever queues claims one entry of a fixed table, once,
 * with an atomic exchange on a free entry (no lock: a signal handler may
 * queue while its thread claims), and gives it back when it exits (a
 * thread-specific key's destructor).  While it queues, its entry names the
 * lock.  The child's fork handler runs with one thread: every ticket in the
 * queues the table names belongs to a thread that is gone, so those queues
 * are emptied, with the waiters' flags (but for process-shared locks, whose
 * word the parent shares, waiter and all).  The lock byte is left alone: a
 * lock held at fork() by another thread stays held in the child, as with
 * glibc; one held by the forking thread (the pthread_atfork idiom) is
 * released by its own unlock.
 *
 * A thread beyond the table's size waits unnoted: its lock is not repaired
 * in a child (rare: as many threads queueing in one process).
 *
 * The repair writes only words the child owns (issue 40, items 3 and 4):
 *  - not a word in MAP_SHARED memory, even of a lock initialised
 *    PTHREAD_PROCESS_PRIVATE (POSIX allows it there, and a real program,
 *    libfabric's, keeps one so): the parent's threads still wait in that
 *    queue, and emptying it left them stuck for good;
 *  - not a word the child does not have: MADV_DONTFORK memory, or a file
 *    mapping unmapped meanwhile; the child died of SIGSEGV there.
 * So when the table names a lock (rare: a thread was waiting at the fork),
 * the child reads /proc/self/maps (maps.c: raw open and read, a stack
 * buffer, async-signal-safe, as a child handler of pthread_atfork must be
 * in a multithreaded parent) and repairs only the words in its writable
 * private mappings.  A fork with no waiter reads nothing.  If the file
 * cannot be read (no /proc, a seccomp filter), nothing is repaired: a
 * ghost ticket costs the child the slow path by default, or hangs its
 * strict FIFO locks, but a repaired word the child does not own would
 * crash it or hang the parent.
 */
#include "fork.h"

#include "active.h"
#include "log.h"
#include "maps.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#define TS_FORK_ENTRIES 4096

static struct {
	uint32_t claimed;      /* 1 while a live thread owns the entry */
	ts_word_t *queued_for; /* the lock its thread queues for, or NULL */
} entries[TS_FORK_ENTRIES];

/* Entries ever claimed: the child looks no further. */
static uint32_t entries_used;
static pthread_key_t release_key;
static bool key_made;

static __thread int my_entry __attribute__((tls_model("initial-exec"))) = -1;

static void release_entry(void *arg)
{
	int entry = (int)(intptr_t)arg - 1;

	entries[entry].queued_for = NULL;
	__atomic_store_n(&entries[entry].claimed, 0, __ATOMIC_RELEASE);
}

static int claim_entry(void)
{
	for (uint32_t i = 0; i < TS_FORK_ENTRIES; i++) {
		if (__atomic_exchange_n(&entries[i].claimed, 1, __ATOMIC_ACQUIRE) != 0)
			continue;
		/* The high-water mark, for the child's scan. */
		uint32_t used = __atomic_load_n(&entries_used, __ATOMIC_RELAXED);

		while (used < i + 1 &&
		       !__atomic_compare_exchange_n(&entries_used, &used, i + 1, false,
		                                    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			;
		if (key_made)
			pthread_setspecific(release_key, (void *)(intptr_t)(i + 1));
		return i;
	}
	return -2; /* full: never try again in this thread */
}

ts_word_t *ts_fork_queued(ts_word_t *lock)
{
	ts_word_t *before;

	if (__builtin_expect(my_entry == -1, 0))
		my_entry = claim_entry();
	if (my_entry < 0)
		return NULL;
	before = entries[my_entry].queued_for;
	__atomic_store_n(&entries[my_entry].queued_for, lock, __ATOMIC_RELAXED);
	return before;
}

void ts_fork_queued_done(ts_word_t *before)
{
	if (my_entry >= 0)
		__atomic_store_n(&entries[my_entry].queued_for, before, __ATOMIC_RELAXED);
}

static void empty_queue(ts_word_t *lock)
{
	uint32_t word = __atomic_load_n(lock, __ATOMIC_RELAXED);
	uint32_t emptied;

	/*
	 * A process-shared lock's word is the parent's too, where the waiter
	 * still exists: its ticket is real.
	 */
	if (word & TS_SHARED)
		return;
	do {
		emptied = word & (TS_SHARED | TS_LOCKED | TS_UNLOCK_DUE);
	} while (!__atomic_compare_exchange_n(lock, &word, emptied, false, __ATOMIC_RELAXED,
	                                      __ATOMIC_RELAXED));
}

/*
 * The child's repair list: the distinct locks the table names.  Static, not
 * on the forking thread's stack, which may be small: the child has only one
 * thread, and no other fork handler of ours runs meanwhile.
 */
static ts_word_t *to_repair[TS_FORK_ENTRIES];
static bool owned[TS_FORK_ENTRIES];

static size_t note_for_repair(size_t n, ts_word_t *lock)
{
	for (size_t k = 0; k < n; k++)
		if (to_repair[k] == lock)
			return n;
	to_repair[n] = lock;
	return n + 1;
}

/* In the child: the only thread left is the one that forked. */
static void in_child(void)
{
	uint32_t used = __atomic_load_n(&entries_used, __ATOMIC_ACQUIRE);
	size_t n = 0;

	for (uint32_t i = 0; i < used; i++) {
		ts_word_t *lock = entries[i].queued_for;

		if ((int)i == my_entry)
			continue; /* fork() from a signal handler of a waiter: its wait goes on */
		entries[i].queued_for = NULL;
		entries[i].claimed = 0;
		if (lock != NULL)
			n = note_for_repair(n, lock);
	}
	/* Only words of the child's own memory (see above); none if the maps are unreadable. */
	if (n > 0 && ts_maps_words_private(to_repair, n, owned)) {
		for (size_t k = 0; k < n; k++)
			if (owned[k])
				empty_queue(to_repair[k]);
	}
	ts_active_after_fork();
	ts_note_pid(); /* the stall report's */
}

void ts_fork_init(void)
{
	key_made = pthread_key_create(&release_key, release_entry) == 0;
	pthread_atfork(NULL, NULL, in_child);
}
