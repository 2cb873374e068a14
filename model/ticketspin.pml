/*
 * ticketspin.pml - the lock protocol of preload/ticket_lock.h,
 * preload/slowpath.c and preload/parking.c, for SPIN (issue 17; the lock
 * byte, the ticket queue and bounded stealing).
 *
 * What is mirrored, and how (model/README.md has the properties and the
 * verdicts):
 *
 *  - One lock word, scaled: the lock byte (TS_LOCKED alone, as in the C), a
 *    2-bit bypass count, TS_WATCHING, TS_SLEEPERS, 2-bit "head" and "next"
 *    tickets instead of 6-bit ones, and the unlock's requests TS_WAKE_HEAD
 *    and TS_WAKE_NEXT above them (bits 16 and 17; the C's bits 22 and 30),
 *    with the C's masking arithmetic (ts_head, ts_next, ts_tickets_between,
 *    ts_queued, with_head, with_next).  TS_QUEUE_CAPACITY scales to 3 (the
 *    ticket mask, as in the C); QCAP is cfg->queue_capacity (TICKET_QUEUE);
 *    BYPASS is cfg->bypass_max (TICKET_BYPASS, 0: strict FIFO).
 *    TS_STATS_DUE and TS_SHARED are not modelled.
 *  - x86-TSO: each machine instruction is one atomic step.  Locked
 *    read-modify-writes (compare-and-swap, the lock's exchange of the lock
 *    byte, fetch-or, fetch-add) and the
 *    futex system calls first drain the thread's store buffer and act on
 *    memory.  Plain loads (relaxed, acquire and seq_cst loads are all a mov)
 *    read the thread's own buffered store first, then memory.  The unlock's
 *    plain byte store of 0 (ts_unlock) enters a per-thread
 *    store buffer of depth one (asserted: every path from one unlock to the
 *    next passes a locked instruction), which the process "memory" drains
 *    at any moment; draining it writes the low byte only, so the flags and
 *    tickets that others changed meanwhile with atomic operations survive
 *    (and so does a request set since the unlock's load: the next unlock
 *    serves it).  The unlock's slow path and the give-back release with a
 *    compare-and-swap that clears the lock byte and the requests: one
 *    atomic step here (its failed attempts change nothing).
 *  - Futexes: FUTEX_WAIT_BITSET compares the word with the value read and
 *    enqueues atomically; FUTEX_WAKE_BITSET wakes every sleeper of the
 *    ticket's bit (tickets are distinct here: bit = ticket).  One parking
 *    slot (one lock): seq for the queue, outside_seq for the outsiders.
 *  - Naps: with TIMEOUT_QUEUE / TIMEOUT_HEAD / TIMEOUT_OUTSIDE (default 1) a
 *    sleep in the queue / as head / outside may end at any moment (the nap
 *    ran out, or a spurious wake).  With 0 only a wake-up ends it: an end
 *    state with a sleeper is then a wake-up only the nap would deliver.
 *  - Policy as choice, guarded only by what the C checks on the word: when a
 *    look finds nothing to do, the waiter may look again or sleep (the spin
 *    budget, TS_HEAD_PATIENCE); behind the head (not strict) it may look
 *    again only as the next after a watching head while TS_SLEEPERS is
 *    clear (TS_NEXT_SPIN_NS) or while the escape condition holds (the head,
 *    watching or not, leaves the lock free and we are last in line); the
 *    escape (TS_ESCAPE_NS) may happen at any look where its condition
 *    holds; an outsider may pause or sleep.  So every tuning of the budgets
 *    and clocks is covered.  The head's sleep being a choice at every look,
 *    a woken head that watches a spin budget first (the C since 53f5309,
 *    the model helper's F2) is one of the behaviours, not a distinct one.
 *    TICKET_WAIT=park (the default) is modelled; spin and yield leave out
 *    sleeps (WAIT_SPIN=1: give_way() yields, which is a look here).  A rest
 *    (must_rest(), TICKET_REST_US) is a step that looks at
 *    the word again, once per acquisition: the sleep itself is only time,
 *    which the interleavings already cover; REST=0 leaves it out.  So a
 *    rest skipped because this thread rested last on the lock (rest_is_due(),
 *    a hint by lock hash and a clock) is that same step: nothing to add;
 *    nor for one skipped after a rest in which no one took the lock
 *    (rest(): the skip is the rest's step with the word unchanged).  The
 *    rest's mark (TS_REST_MARK) is a value of the free lock byte that
 *    only a compare-and-swap from free to free writes or removes: no field
 *    modelled changes, and a compare-and-swap it makes fail retries from
 *    the same modelled word, a stutter.
 *    The active set (active.c, TICKET_ACTIVE) is a gate before the ticket,
 *    holding nothing of the word: its sleep in the line is only time too.
 *    What it changes in the word's protocol is the outsider's give-back: a
 *    lock its exchange took and may keep (may_steal) is released with no
 *    critical section, once per acquisition; ACTIVE=1 adds that choice.
 *
 * Ghost state (not in the C): in_cs (mutual exclusion), has/tk (who holds
 * which ticket), watch_on/watch_tk/bypassed (the watch of the head of the
 * queue and the steals counted against it: the bypass bound), wseen,
 * hseen/qseen/qahead (the critical sections entered past the watch, the
 * head, a ticket: I6), want (a lock() call waiting: the progress claim),
 * done.
 *
 * Configuration (spin -D...): NT threads (2 or 3), NACQ lock/unlock pairs
 * each, QCAP, BYPASS, TRYLOCK (each acquisition may be a trylock),
 * NACQ0 (thread 0's pairs, default NACQ: one busy thread beside two that
 * lock once), UNLOCK_LOCKED (the unlock's load and store as one locked
 * instruction: closes the head's documented window), PROGRESS (the LTL
 * claim), FORK (thread 0 may fork between acquisitions; see below),
 * WAIT_SPIN (no sleep in the queue, as head or outside), I6's bounds
 * (WATCH_BOUND, TENURE_BOUND, QUEUE_BOUND, COUNT_TRYLOCK: below), and the
 * MUT_* mutations (README).
 *
 * FORK: at a moment when the lock is not held (a lock held at fork() stays
 * held in the child, as glibc's), thread 0 calls fork() and the run goes on
 * as the child: the other threads no longer take steps (provided clause),
 * their buffered stores are lost, and fork.c's handler empties the queue if
 * any of them had noted the lock (ts_fork_queued(), which slowpath.c does
 * before the ticket can be drawn).  The child's thread 0 must then finish its
 * acquisitions and leave the lock free with an empty queue (the end-state
 * assertions), and with PROGRESS its lock() calls must return.
 */

#ifndef NT
#define NT 2
#endif
#ifndef NACQ
#define NACQ 2
#endif
#ifndef BYPASS
#define BYPASS 1
#endif
#ifndef QCAP
#define QCAP 3
#endif
#ifndef NACQ0
#define NACQ0 NACQ
#endif
#ifndef TIMEOUT_QUEUE
#define TIMEOUT_QUEUE 1
#endif
#ifndef TIMEOUT_HEAD
#define TIMEOUT_HEAD 1
#endif
#ifndef TIMEOUT_OUTSIDE
#define TIMEOUT_OUTSIDE 1
#endif
#ifndef UNLOCK_LOCKED
#define UNLOCK_LOCKED 0
#endif
#ifndef TRYLOCK
#define TRYLOCK 0
#endif
#ifndef WAIT_SPIN
#define WAIT_SPIN 0               /* TICKET_WAIT=spin or yield: give_way() never sleeps */
#endif

#define STRICT (BYPASS == 0)      /* strict_fifo(): TICKET_BYPASS=0 or TICKET_QUEUE=0 */

/* ticket_lock.h, scaled. */
#define LOCKED      1             /* TS_LOCKED */
#define LOCK_BYTE   255           /* TS_LOCK_BYTE */
#define NOT_BYTE    261888        /* ~TS_LOCK_BYTE (an 18-bit word) */
#define BYP_ONE     256           /* TS_BYPASS_ONE */
#define BYP_MASK    768           /* TS_BYPASS_MASK: 2 bits */
#define WATCHING    1024          /* TS_WATCHING */
#define SLEEPERS    2048          /* TS_SLEEPERS */
#define HEAD_SHIFT  12
#define NEXT_SHIFT  14
#define TMASK       3             /* TS_TICKET_MASK: 2-bit tickets */
#define HEAD_FIELD  12288
#define NEXT_FIELD  49152
#define WAKE_HEAD   65536         /* TS_WAKE_HEAD: above the lock byte, as in the C */
#define WAKE_NEXT   131072        /* TS_WAKE_NEXT */
#define REQUESTS    196608        /* TS_REQUESTS (TS_STATS_DUE not modelled) */
#define WMASK       262143

#define lockb(w)       ((w) & LOCK_BYTE)                        /* ts_lock_byte() */
#define bypass(w)      (((w) & BYP_MASK) / BYP_ONE)             /* ts_bypass() */
#define head(w)        (((w) >> HEAD_SHIFT) & TMASK)            /* ts_head() */
#define nextt(w)       (((w) >> NEXT_SHIFT) & TMASK)            /* ts_next() */
#define between(f, t)  (((t) + TMASK + 1 - (f)) & TMASK)        /* ts_tickets_between() */
#define queued(w)      between(head(w), nextt(w))               /* ts_queued() */
#define with_next(w, n) (((w) & (WMASK - NEXT_FIELD)) | (((n) & TMASK) << NEXT_SHIFT))
#define with_head(w, h) (((w) & (WMASK - HEAD_FIELD)) | (((h) & TMASK) << HEAD_SHIFT))
#define unwatched(w)   ((w) & (WMASK - WATCHING - BYP_MASK))    /* & ~(TS_WATCHING | TS_BYPASS_MASK) */
/* slowpath.c: stolen(), of a word whose lock byte is free */
#define stolen(w)      (queued(w) == 0 -> LOCKED : ((w) | LOCKED) + (((w) & WATCHING) -> BYP_ONE : 0))
/* slowpath.c: trylocked(): as stolen(), the count saturating at the field's top */
#define BYP_TOP     3             /* TS_BYPASS_MAX, scaled to the 2-bit field */
#define trylocked(w)   ((((w) & WATCHING) && bypass(w) >= BYP_TOP) -> ((w) | LOCKED) : stolen(w))

#ifndef ACTIVE
#define ACTIVE 0                  /* TICKET_ACTIVE != 0: an outsider gives back a lock it may keep */
#endif
#ifndef REST
#define REST 1                    /* TICKET_REST_US != 0 */
#endif
/* slowpath.c: must_rest(), for a thread that may not steal */
#ifndef PATIENCE
#define PATIENCE 0                /* TICKET_BYPASS_NS != 0: a watching head may fill the count */
#endif
#define must_rest(w) (REST && !STRICT && ((w) & WATCHING) && bypass(w) >= BYPASS)

/* slowpath.c: may_steal() */
#ifdef MUT_STEAL_UNBOUNDED
/* Mutation: steal without checking the bypass count. */
#define may_steal(w) (lockb(w) == 0 && (queued(w) == 0 || !STRICT))
#else
#define may_steal(w) (lockb(w) == 0 && (queued(w) == 0 || \
	(!STRICT && (!((w) & WATCHING) || bypass(w) < BYPASS))))
#endif

/*
 * wait_in_queue(): the last in line, the head (watching or not: asleep, or
 * not running) leaving the lock free.
 */
#ifdef MUT_ESCAPE_NOT_LAST
#define escape_cond(w, t) (lockb(w) == 0)
#else
#define escape_cond(w, t) (lockb(w) == 0 && nextt(w) == (((t) + 1) & TMASK))
#endif

/*
 * I6 (README: the acquisitions past a waiter).  One watch of the head sees
 * at most TICKET_BYPASS steals (I3) and the holder it began under, whose
 * critical section may come after the watch began: BYPASS + 1 entries by
 * lock().  A head's whole tenure, or a ticket's whole wait, has no bound in
 * count unless strict (a head that does not watch, asleep, not yet looking
 * or passed by an escape, stops no stealer): TENURE_BOUND and QUEUE_BOUND
 * assert one anyway, so that SPIN shows how it fails.  In strict FIFO the
 * holder at the draw and the tickets ahead are all that can pass.
 * COUNT_TRYLOCK counts trylocks too, which nothing bounds (POSIX: a trylock
 * takes any free lock).  WATCH_BOUND may be lowered to see the holder's +1.
 */
#ifndef WATCH_BOUND
#define WATCH_BOUND (BYPASS + 1)
#endif
#if defined(TENURE_BOUND) || defined(QUEUE_BOUND)
#define SEEN 1
#endif
#ifndef TENURE_BOUND
#define TENURE_BOUND (STRICT -> 1 : 255)
#endif
#ifndef QUEUE_BOUND
#define QUEUE_BOUND 255
#endif
/*
 * The per-waiter counts multiply states: kept only where a bound is asserted
 * on them, and not in the progress runs, whose safety the safety runs check.
 */
#ifndef SEEN
#ifdef PROGRESS
#define SEEN 0
#else
#define SEEN STRICT
#endif
#endif
#ifndef COUNT_TRYLOCK
#define COUNT_TRYLOCK 0
#endif

/* Ghost: a watch of the head begins (holding ticket t) or ends, its counts (I3, I6) with it. */
#define watch_begins(t)  watch_on = 1; watch_tk = t; bypassed = 0; wseen = 0
#define watch_ends()     watch_on = 0; bypassed = 0; wseen = 0

/* Memory. */
int word;                /* the lock word (pthread_spinlock_t), 0: free */
bool bfull[NT];          /* store buffer, depth one: the unlock's byte store of 0 pending */
bool isleep[NT];         /* asleep in FUTEX_WAIT_BITSET on parking_slot.seq */
byte ibit[NT];           /* ... with the bit of this ticket (ticket_bit()) */
byte seq;                /* parking_slot.seq */
bool osleep[NT];         /* asleep in FUTEX_WAIT_PRIVATE on parking_slot.outside_seq */
byte oseq;               /* parking_slot.outside_seq */

/* Ghosts. */
byte in_cs;              /* threads in the critical section */
bool has[NT];            /* holds a ticket (drawn, not yet taken or given back) */
byte tk[NT];             /* ... this one */
bool watch_on;           /* the head of the queue watches (it set TS_WATCHING, or joined with it) */
byte watch_tk;           /* ... holding this ticket */
byte bypassed;           /* steals since that watch began */
byte wseen;              /* critical sections entered by others since that watch began (I6) */
#if SEEN
byte hseen[NT];          /* ... while this thread holds the ticket at the head */
byte qseen[NT];          /* ... while it holds a ticket */
byte qahead[NT];         /* ... and the tickets ahead of it when it drew */
#define seen_clear(i)    hseen[i] = 0; qseen[i] = 0; qahead[i] = 0
#else
#define seen_clear(i)    skip
#endif
byte queue_len;          /* scratch for the capacity assertion (0 between steps) */
bool want[NT];           /* in pthread_spin_lock(), not yet the owner */
byte done;               /* threads finished */
bool finished[NT];       /* ... this one */
bool noted[NT];          /* FORK: fork.c's note, the thread may queue for the lock */
bool forked;             /* FORK: thread 0 forked; the run is the child's */
byte fork_pid;           /* ... its _pid, the one process of the child */

/* What the memory holds for thread @me: its own buffered byte store, else memory. */
#define view(me) (bfull[me] -> (word & NOT_BYTE) : word)

/* The store buffer drains into memory: the low byte only. */
inline drain(me)
{
	if
	:: bfull[me] -> word = word & NOT_BYTE; bfull[me] = 0
	:: else
	fi
}

/* A plain load (mov). */
inline load(me, dst)
{
	atomic { dst = view(me) }
}

/* The unlock's byte store of 0 (mov to the lock byte): into the buffer. */
inline store_byte0(me)
{
	atomic { assert(!bfull[me]); bfull[me] = 1 }
}

/* Ghost: a ticket drawn is held by no one else; I6's counts for it start. */
inline drew(me, tt)
{
	assert(!(has[0] && tk[0] == tt) && !(has[1] && tk[1] == tt));
#if NT > 2
	assert(!(has[2] && tk[2] == tt));
#endif
	has[me] = 1; tk[me] = tt;
#if SEEN
	hseen[me] = 0; qseen[me] = 0; qahead[me] = between(head(word), tt)
#else
	skip
#endif
}

/*
 * Ghost (I6): thread @me enters its critical section, past @i if @i waits.
 * The head is the word's, not the watch's: a head asleep or not yet looking
 * is still the one passed.
 */
#if SEEN
inline entry_seen(i, me)
{
	if
	:: i != me && has[i] ->
		qseen[i]++;
		assert(qseen[i] <= (STRICT -> qahead[i] + 1 : QUEUE_BOUND));
		if
		:: tk[i] == head(word) -> hseen[i]++; assert(hseen[i] <= TENURE_BOUND)
		:: else
		fi
	:: else
	fi
}
#endif
inline entered(me, tried)
{
	if
	:: !tried || COUNT_TRYLOCK ->
#if SEEN
		entry_seen(0, me);
		entry_seen(1, me);
#if NT > 2
		entry_seen(2, me);
#endif
#endif
		if
		:: watch_on -> wseen++; assert(wseen <= WATCH_BOUND)
		:: else
		fi
	:: else
	fi
}

/*
 * stolen() taking the lock, with the ghost check of I3: a steal counted in
 * "bypass" is counted against the head that watches, and no more than
 * TICKET_BYPASS of them while it watches.  @w: the word the CAS expects.
 */
inline steal(me, w, ok)
{
	atomic {
		drain(me);
		if
		:: word == w ->
			/* stolen(): with no one in the queue, all zero but TS_LOCKED */
			word = stolen(w);
			if
			:: w & WATCHING ->
				assert(watch_on && queued(w) > 0 && head(w) == watch_tk);
				bypassed++;
				assert(bypassed <= BYPASS)
			:: else
			fi;
			ok = 1
		:: else -> w = word; ok = 0
		fi
	}
}

/*
 * ts_trylock_slow() taking the free lock past any queue, the bound included
 * (a trylock never waits its turn: POSIX lets it fail only on a held lock):
 * no bound holds it, so it is not counted in "bypassed", which checks
 * TICKET_BYPASS against the steals of threads that would wait.  @w: the
 * word the CAS expects.
 */
inline trylock_take(me, w, ok)
{
	atomic {
		drain(me);
		if
		:: word == w ->
			word = trylocked(w);
			if
			:: w & WATCHING -> assert(watch_on && queued(w) > 0 && head(w) == watch_tk)
			:: else
			fi;
			ok = 1
		:: else -> w = word; ok = 0
		fi
	}
}

/* ts_wake_ticket() (parking.c): bump seq, FUTEX_WAKE_BITSET of the ticket's bit. */
inline wake_bit(i, tt)
{
	if
	:: isleep[i] && ibit[i] == (tt) -> isleep[i] = 0; ibit[i] = 0
	:: else
	fi
}
inline ts_wake_ticket(me, tt)
{
	atomic { drain(me); seq++ }
	atomic {
		wake_bit(0, tt);
		wake_bit(1, tt);
#if NT > 2
		wake_bit(2, tt);
#endif
	}
}

/* ts_wake_outside() (parking.c): bump outside_seq, FUTEX_WAKE_PRIVATE of all. */
inline ts_wake_outside(me)
{
	atomic { drain(me); oseq++ }
	atomic {
		osleep[0] = 0; osleep[1] = 0;
#if NT > 2
		osleep[2] = 0;
#endif
	}
}

/* The drain of the store buffers, at any moment. */
active proctype memory()
{
end:
	do
	:: atomic { bfull[0] -> drain(0) }
	:: atomic { bfull[1] -> drain(1) }
#if NT > 2
	:: atomic { bfull[2] -> drain(2) }
#endif
	od
}

/*
 * A thread of the program: NACQ times pthread_spin_lock() (or trylock),
 * critical section, pthread_spin_unlock().  Dead locals are reset to 0, so
 * that states differing only in stale values are one state.
 */
#ifdef FORK
/* (Only with FORK: a provided clause turns SPIN's partial-order reduction off.) */
proctype thread(byte me) provided (!forked || _pid == fork_pid)
#else
proctype thread(byte me)
#endif
{
	byte n;              /* acquisitions done (or trylocks tried) */
	int w;               /* the word as we last saw it ("word", "seen") */
	int x;               /* a word being built, or read by parking.c */
	byte t;              /* our ticket */
	byte s;              /* parking_slot.seq / outside_seq as read */
	bool ok;             /* a CAS succeeded */
	bool slow;           /* the unlock went out of line */
	bool rested;         /* this acquisition has rested (lock_queued()) */
	bool outsider;       /* this acquisition gave the lock back as an outsider (ACTIVE) */
#if TRYLOCK
	bool tried;          /* this acquisition is a trylock's (I6 bounds lock()'s) */
#endif

acquire:
	if
	:: n == (me == 0 -> NACQ0 : NACQ) -> goto finish
	:: else
	fi;
#ifdef FORK
	if
	:: me == 0 && !forked ->
		/* fork(): a system call, so our own buffer drains first */
		atomic { drain(me) }
		atomic {
			if
			:: (word & LOCKED) == 0 ->
				fork_pid = _pid; /* first: the provided clause is checked at every step */
				forked = 1;
				/* the child has no other thread, and none of their stores */
				bfull[1] = 0; want[1] = 0;
#if NT > 2
				bfull[2] = 0; want[2] = 0;
#endif
				/* fork.c's in_child(): empty the noted locks' queues */
				if
				:: (noted[1]
#if NT > 2
				    || noted[2]
#endif
				   ) ->
					word = word & LOCKED;
					has[1] = 0; noted[1] = 0; seen_clear(1);
#if NT > 2
					has[2] = 0; noted[2] = 0; seen_clear(2);
#endif
					watch_on = 0; wseen = 0
				:: else
				fi
			:: else          /* the lock is held: no fork here */
			fi
		}
	:: true
	fi;
#endif
#if TRYLOCK
	if
	:: true
	:: true ->
		/* ts_trylock() (ticket_lock.h): lock cmpxchg from 0. */
		atomic {
			drain(me);
			if
			:: word == 0 -> word = LOCKED; ok = 1
			:: else -> w = word; ok = 0
			fi
		}
		if
		:: ok -> ok = 0; tried = 1; goto critical
		:: else
		fi;
try_slow:
		/* ts_trylock_slow() (slowpath.c): take the lock while it is free. */
		if
		:: !(lockb(w) & LOCKED) ->
			trylock_take(me, w, ok);
			if
			:: ok -> ok = 0; w = 0; tried = 1; goto critical
			:: else -> goto try_slow
			fi
		:: else -> w = 0; n++; goto acquire      /* EBUSY: one attempt done */
		fi
	fi;
#endif
	/*
	 * ts_lock() (ticket_lock.h): xchg of the lock byte to TS_LOCKED (s: the
	 * byte it replaced), then a plain load of the tickets.
	 */
	atomic {
		want[me] = 1;
		rested = 0;
		outsider = 0;
		drain(me);
		s = lockb(word);
		word = (word & NOT_BYTE) | LOCKED
	}
	if
	:: s & LOCKED -> s = 0; load(me, w); goto lock_slow    /* held: ts_lock_slow() */
	:: else
	fi;
	load(me, x);
	if
	:: queued(x) == 0 -> x = 0; goto critical
	:: else
	fi;
	/*
	 * ts_lock_slow() -> keep_or_give_back() (slowpath.c): we hold the lock,
	 * a queue behind it.  The word as seen (x), judged as if free.  The C
	 * loads the word again first; one load stands for both here: nothing
	 * of ours happens between them, and the queue cannot empty while we
	 * hold the lock (a take or an escape needs it free), so the later load
	 * sees what this one could have seen had it come later.
	 */
keep_or_give_back:
	if
#ifdef MUT_KEEP_UNCOUNTED
	/* Mutation: kept as it is while the head watches, the steal not counted. */
	:: may_steal(x & NOT_BYTE) && queued(x) > 0 ->
#else
	:: may_steal(x & NOT_BYTE) && queued(x) > 0 && !(x & WATCHING) ->
#endif
		/* stolen() leaves the word as it is: kept, nothing written */
		x = 0; goto critical
	:: may_steal(x & NOT_BYTE) && (queued(x) == 0 || (x & WATCHING)) ->
		/* counted in the word (compare-and-swap), as steal() counts */
		atomic {
			drain(me);
			if
			:: word == x ->
				word = stolen(x & NOT_BYTE);
				if
				:: x & WATCHING ->
					assert(watch_on && queued(x) > 0 && head(x) == watch_tk);
					bypassed++;
					assert(bypassed <= BYPASS)
				:: else
				fi;
				ok = 1
			:: else -> x = word; ok = 0
			fi
		}
		if
		:: ok -> ok = 0; x = 0; goto critical
		:: else -> goto keep_or_give_back
		fi
#if ACTIVE
	:: may_steal(x & NOT_BYTE) && !outsider ->
		/*
		 * ts_active_outsider() (active.c): not a member of the lock's
		 * active set while others wait in its line: give it back, and go
		 * to the gate, whose sleep holds nothing of the word (only time,
		 * which the interleavings cover).  Once per acquisition: the
		 * gate admits it, and lock_queued() asks no more.
		 */
		outsider = 1;
		goto give_back
#endif
	:: !may_steal(x & NOT_BYTE) ->
give_back:
		/* the word judged, as free, goes on to lock_slow (must_rest() sees the bound) */
		w = x & NOT_BYTE;
		/* release(): give it back as an unlock would, before any critical section */
		atomic { drain(me); x = word; word = word & (WMASK - LOCK_BYTE - REQUESTS) }
		if
#ifndef MUT_GIVE_BACK_NO_WAKE
		:: x & (WAKE_HEAD | WAKE_NEXT) -> ts_wake_ticket(me, head(x))
#endif
		:: else
		fi;
		x = 0;
		goto lock_slow
	fi;

	/* ts_lock_slow() (slowpath.c), from the word the CAS returned. */
lock_slow:
	if
	:: may_steal(w) ->
		steal(me, w, ok);
		if
		:: ok -> ok = 0; w = 0; goto critical
		:: else -> goto lock_slow
		fi
	:: !may_steal(w) && !rested && must_rest(w) ->
		/* ts_rest() (parking.c): sleep, holding nothing; then look again. */
		rested = 1;
		load(me, w);
		goto lock_slow
#ifdef MUT_JOIN_NO_CAP
	/* Mutation: join without checking the capacity. */
	:: !may_steal(w) && (rested || !must_rest(w)) ->
#else
	:: !may_steal(w) && (rested || !must_rest(w)) && queued(w) < QCAP ->
#endif
		/* Draw a ticket: CAS next + 1; at the front of an empty queue, watch (I3). */
		atomic {
			drain(me);
			x = with_next(w, nextt(w) + 1);
			if
			:: queued(w) == 0 && !STRICT -> x = unwatched(x) | WATCHING
			:: else
			fi;
			if
			:: word == w ->
				word = x;
				t = nextt(w);
				drew(me, t);
#if defined(FORK) && !defined(MUT_FORK_NOTE_LATE)
				noted[me] = 1;
#endif
				queue_len = queued(x);
				assert(queue_len <= QCAP);          /* I2: the capacity */
				queue_len = 0;
				if
				:: queued(w) == 0 && !STRICT ->
					watch_begins(t)
				:: else
				fi;
				w = x; ok = 1
			:: else -> w = word; ok = 0
			fi;
			x = 0
		}
		if
#ifdef MUT_FORK_NOTE_LATE
		/* Mutation: the note a step after the draw (as the C before this stop). */
		:: ok -> ok = 0; noted[me] = 1; goto wait_in_queue
#else
		:: ok -> ok = 0; goto wait_in_queue
#endif
		:: else -> goto lock_slow
		fi
	:: else -> goto wait_outside
	fi;

	/* wait_outside() (slowpath.c): the queue is full. */
wait_outside:
	if
	:: queued(w) >= QCAP && !may_steal(w) ->
		if
		:: true          /* pause */
#if !WAIT_SPIN
		:: true ->
			/* ts_sleep_outside() (parking.c), the spin budget spent */
			atomic { s = oseq }
			load(me, x);
			if
			:: queued(x) < QCAP           /* TS_SLEEP_SKIPPED (the configured capacity) */
			:: else ->
				atomic {
					drain(me);
					if
					:: oseq == s -> osleep[me] = 1
					:: else
					fi
				}
				atomic {
					if
					:: !osleep[me]
#if TIMEOUT_OUTSIDE
					:: osleep[me] -> osleep[me] = 0
#endif
					fi
				}
			fi;
			atomic { s = 0; x = 0 }
#endif
		fi;
		load(me, w);
		goto wait_outside
	:: else -> goto lock_slow
	fi;

	/* wait_in_queue() (slowpath.c), holding ticket t, from the word w. */
wait_in_queue:
	if
	:: between(head(w), t) == 0 && lockb(w) == 0 ->
		/* take_as_head() */
		atomic {
			drain(me);
			x = (with_head(w, t + 1) | LOCKED) & (WMASK - WAKE_HEAD);  /* ours: we run */
#ifndef MUT_TAKE_KEEPS_WATCHING
			x = unwatched(x);
#else
			/* Mutation: take_as_head() does not clear TS_WATCHING. */
			x = x & (WMASK - BYP_MASK);
#endif
			if
			:: w & SLEEPERS ->
				/* s: "behind", the tickets after ours */
				s = between(t, nextt(w)) - 1;
				if
				:: s > 0 -> x = x | WAKE_NEXT
				:: else
				fi;
				if
#ifdef MUT_SLEEPERS_TWO_BEHIND
				/* Mutation: TS_SLEEPERS dropped with two waiters behind. */
				:: s <= 2 -> x = x & (WMASK - SLEEPERS)
#else
				:: s <= 1 -> x = x & (WMASK - SLEEPERS)
#endif
				:: else
				fi
			:: else
			fi;
			if
			:: between(t, nextt(w)) == 1 ->
				/* the queue is empty: all zero again (I2) */
				x = x & (WMASK - HEAD_FIELD - NEXT_FIELD)
			:: else
			fi;
			if
			:: word == w ->
				word = x;
				assert(has[me] && tk[me] == t);
				has[me] = 0; tk[me] = 0; seen_clear(me);
				watch_ends();  /* the head's watch ends */
				s = (queued(w) >= QCAP);        /* the queue was full */
				ok = 1
			:: else -> w = word; ok = 0; s = 0
			fi;
			x = 0
		}
		if
		:: ok && s -> ts_wake_outside(me)
		:: else
		fi;
		if
		:: ok -> ok = 0; s = 0; t = 0; w = 0; goto critical
		:: else -> goto wait_in_queue
		fi
	:: between(head(w), t) == 0 && lockb(w) != 0 && !STRICT && !(w & WATCHING) ->
		/* The head watches (I3): the count starts now. */
		atomic {
			drain(me);
			if
			:: word == w ->
				w = unwatched(w) | WATCHING; word = w;
				watch_begins(t)
			:: else -> w = word
			fi
		}
		goto wait_in_queue
	:: PATIENCE && between(head(w), t) == 0 && lockb(w) != 0 && !STRICT && (w & WATCHING) &&
	   bypass(w) < BYPASS ->
		/*
		 * head_out_of_patience() (TICKET_BYPASS_NS): the watching head fills
		 * the count to TICKET_BYPASS itself; when, and whether the lock was
		 * saturated enough, is the clock's and the steals' rate: at any look.
		 * Not a steal: "bypassed" does not count it.
		 */
		atomic {
			drain(me);
			if
			:: word == w -> w = (w & (WMASK - BYP_MASK)) + BYPASS * BYP_ONE; word = w
			:: else -> w = word
			fi
		}
		goto wait_in_queue
	:: PATIENCE && between(head(w), t) == 0 && lockb(w) != 0 && !STRICT && (w & WATCHING) &&
	   bypass(w) < BYPASS -> skip /* patient still: look on */
	:: else
	fi;
	if
	:: between(head(w), t) > 0 ->
		if
		:: !STRICT && escape_cond(w, t) ->
			/* escape(): give our ticket back, take the lock, end the watch */
			atomic {
				drain(me);
#ifdef MUT_ESCAPE_KEEPS_WATCHING
				/* Mutation: escape() keeps TS_WATCHING and the bypass count. */
				x = with_next(w, nextt(w) + TMASK) | LOCKED;
#else
				x = unwatched(with_next(w, nextt(w) + TMASK)) | LOCKED;
#endif
				if
				:: queued(x) <= 1 ->
					/* only the head is left: its wake-up, if it sleeps, is due */
					x = x & (WMASK - SLEEPERS)
				:: else
				fi;
				if
				:: word == w ->
					word = x;
					/* I2: only the last ticket goes back, and it is ours */
					assert(has[me] && ((nextt(w) + TMASK) & TMASK) == t);
					has[me] = 0; tk[me] = 0; seen_clear(me);
					watch_ends();
					s = (queued(w) >= QCAP);        /* the queue was full */
					ok = 1
				:: else -> w = word; ok = 0; s = 0
				fi;
				x = 0
			}
#ifndef MUT_ESCAPE_NO_WAKE_OUTSIDE
			/* room in a full queue: wake the outsiders (the fixed R2) */
			if
			:: ok && s -> ts_wake_outside(me)
			:: else
			fi;
#endif
			if
			:: ok -> ok = 0; s = 0; t = 0; w = 0; goto critical
			:: else -> goto wait_in_queue
			fi
		:: STRICT || escape_cond(w, t) ||
		   (between(head(w), t) == 1 && (w & WATCHING) && !(w & SLEEPERS)) ->
			/* keep looking (TS_NEXT_SPIN_NS: the next after a watching head, no one asleep; or the escape's clock) */
			goto look
#if WAIT_SPIN
		:: true -> goto look     /* give_way() yields: a look */
#else
		:: true ->
			/* give_way() -> ts_sleep_in_queue() (parking.c) */
			atomic { s = seq }
			atomic { drain(me); x = word | SLEEPERS; word = x }
			if
			:: head(x) == t         /* TS_SLEEP_SKIPPED */
			:: else ->
				atomic {
					drain(me);
					if
					:: seq == s -> isleep[me] = 1; ibit[me] = t
					:: else      /* EAGAIN */
					fi
				}
				atomic {
					if
					:: !isleep[me]
#if TIMEOUT_QUEUE
					:: isleep[me] -> isleep[me] = 0; ibit[me] = 0
#endif
					fi
				}
			fi;
			atomic { s = 0; x = 0; w = view(me) }
			goto wait_in_queue
#endif
		fi
	:: else ->
		/* The head, the lock held. */
		if
		:: goto look
#if !WAIT_SPIN
		:: true ->
			/* give_way() -> ts_sleep_as_head() (parking.c), patience spent */
			atomic { s = seq }
			load(me, x);
sleep_as_head:
			if
			:: head(x) != t || lockb(x) == 0 -> goto slept   /* TS_SLEEP_SKIPPED */
			:: else ->
				atomic {
					drain(me);
					if
					:: word == x ->
						word = unwatched(x) | WAKE_HEAD;
						if
						:: x & WATCHING -> watch_ends()
						:: else
						fi;
						ok = 1
					:: else -> x = word; ok = 0
					fi
				}
				if
				:: ok -> ok = 0
				:: else -> goto sleep_as_head
				fi
			fi;
			/* An unlock whose store landed since: no sleep. */
			load(me, x);
			if
			:: lockb(x) == 0
			:: else ->
				atomic {
					drain(me);
					if
					:: seq == s -> isleep[me] = 1; ibit[me] = t
					:: else
					fi
				}
				atomic {
					if
					:: !isleep[me]
#if TIMEOUT_HEAD
					:: isleep[me] -> isleep[me] = 0; ibit[me] = 0
#endif
					fi
				}
			fi;
slept:
			atomic { s = 0; x = 0; w = view(me) }
			goto wait_in_queue
#endif
		fi
	fi;
look:
	/* Pause, look again (relaxed load). */
	load(me, w);
	goto wait_in_queue;

critical:
	atomic {
		want[me] = 0;
#ifdef FORK
		noted[me] = 0;
#endif
		in_cs++;
		assert(in_cs == 1);
#if TRYLOCK
		entered(me, tried);
		tried = 0
#else
		entered(me, 0)
#endif
	}
	atomic { in_cs-- }

	/* ts_unlock() (ticket_lock.h) and ts_unlock_slow() (slowpath.c) */
#if UNLOCK_LOCKED
	atomic { drain(me);
#endif
	/*
	 * The C loads the lock byte and the requests' half apart; one load here:
	 * the lock byte is ours while we hold it (an exchange writes back the
	 * same value), so only the half's load can see anything change.
	 */
	load(me, w);
	if
	:: (w & (LOCK_BYTE | REQUESTS)) != LOCKED ->
		assert(lockb(w) & LOCKED);      /* never refused for the holder */
		/* release(): a compare-and-swap clears the lock byte and the requests */
		atomic { drain(me); w = word; word = word & (WMASK - LOCK_BYTE - REQUESTS) }
		slow = 1
	:: else ->
		store_byte0(me)
	fi;
#if UNLOCK_LOCKED
	drain(me) }
#endif
	if
#ifdef MUT_NO_WAKE_NEXT
	/* Mutation: the unlock wakes only on TS_WAKE_HEAD. */
	:: slow && (w & WAKE_HEAD) -> ts_wake_ticket(me, head(w))
#else
	:: slow && (w & (WAKE_HEAD | WAKE_NEXT)) -> ts_wake_ticket(me, head(w))
#endif
	:: else
	fi;
	atomic { n++; w = 0; slow = 0 }
	goto acquire;

finish:
	atomic { done++; finished[me] = 1 }
}

init
{
	atomic {
		run thread(0);
		run thread(1);
#if NT > 2
		run thread(2);
#endif
	}
	/* Every lock() returned, every unlock landed (FORK: the child's, once forked). */
	((done == NT || (forked && finished[0])) && !bfull[0] && !bfull[1]
#if NT > 2
	 && !bfull[2]
#endif
	);
	/* Free, no ticket outstanding, no request left, no one asleep. */
	assert(lockb(word) == 0 && queued(word) == 0 && (word & REQUESTS) == 0 && in_cs == 0);
	assert(!has[0] && !has[1]
#if NT > 2
	       && !has[2]
#endif
	);
}

#ifdef PROGRESS
/* Every pthread_spin_lock() call returns (under weak fairness, pan -a -f). */
ltl progress {
	[] ((want[0] -> <> !want[0]) && (want[1] -> <> !want[1])
#if NT > 2
	    && (want[2] -> <> !want[2])
#endif
	)
}
#endif
