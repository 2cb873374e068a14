/*
 * fork.h - the queues a fork() leaves behind (fork.c).
 *
 * A thread that waits in a lock's queue when another thread calls fork()
 * does not exist in the child, but its ticket does: in strict FIFO the
 * child's first locker would wait behind it forever (by default, the child
 * steals past it, or escapes it, but pays the slow path at every
 * acquisition).  So every thread that may queue notes the lock before it
 * can draw a ticket (a fork between the draw and the note would leave the
 * ticket behind: the SPIN model's F3), and the child, in which no other
 * thread exists, empties those locks' queues.
 */
#ifndef TICKETSPIN_FORK_H
#define TICKETSPIN_FORK_H

#include "ticket_lock.h"

/*
 * The calling thread queues for @lock from now on; returns what it waited
 * for before (a signal handler may queue while its thread does), to give
 * back to ts_fork_queued_done().  Plain stores to the thread's own entry.
 */
ts_word_t *ts_fork_queued(ts_word_t *lock);
void ts_fork_queued_done(ts_word_t *before);

/* Registers the fork handlers; called once, from the library's constructor. */
void ts_fork_init(void);

#endif
