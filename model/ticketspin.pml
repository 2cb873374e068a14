/*
 * ticketspin.pml - the lock protocol of preload/ticket_lock.h,
 * preload/slowpath.c and preload/parking.c, for SPIN (issue 12).
 *
 * What is mirrored, and how (see model/README.md for the properties and the
 * verdicts):
 *
 *  - One lock word, scaled: each half is 4 bits instead of 16, tickets still
 *    advance by four (TS_TICKET_STEP), so a half holds four tickets and the
 *    two flag bits, with the C's masking arithmetic (ts_serving, ts_next,
 *    ts_tickets_between, ts_word_is_free).  Four tickets for at most three
 *    waiters is the C's limit scaled down (16,384 tickets, 16,383 waiters),
 *    and every run of four or more acquisitions wraps "serving" and "next".
 *  - x86-TSO: each machine instruction is one atomic step.  Locked
 *    read-modify-writes (fetch-add, fetch-or, compare-and-swap) first drain
 *    the thread's store buffer and act on memory.  Plain loads read the
 *    thread's own buffered store first (store forwarding), then memory.  The
 *    plain stores (the 16-bit unlock store of ts_unlock() and
 *    ts_unlock_slow(); under -DMUT_PARK_STORE also the mutated park) enter a
 *    per-thread store buffer of depth one (asserted), which the process
 *    "memory" drains at any moment.  The futex system calls drain the buffer
 *    too (the kernel takes locks and barriers before it compares or wakes).
 *  - Futexes: FUTEX_WAIT_BITSET compares the word with the value read and
 *    enqueues atomically (sleeps only while the word still holds that
 *    value); FUTEX_WAKE_BITSET wakes every sleeper whose ticket bit matches.
 *    The outsiders' table is one slot (one lock): sequence word, sleepers
 *    count, FUTEX_WAIT_PRIVATE on the sequence, FUTEX_WAKE_PRIVATE of one
 *    sleeper (any one: the kernel's FIFO order is one of the choices).
 *  - Naps: with TIMEOUT_INLINE / TIMEOUT_OUTSIDE (default 1) a sleep on the
 *    lock word / on the parking slot may end at any moment (the nap ran out,
 *    or a spurious wake: EINTR, a bit shared by tickets 32 apart).  With 0,
 *    only a wake-up ends it: an end state with a sleeper is then a wake-up
 *    that only the timeout would have delivered.
 *  - Policy is nondeterministic, guarded only by what the C checks on the
 *    word: when to stall-check (note_stall's fetch-or), when to sleep, when a
 *    turn has been unclaimed long enough to borrow (may_borrow's spin budget
 *    and reborrows), whether the streak allows taking turns and others wait
 *    outside, whether lending mode is dropped (ts_stalled_recently), when an
 *    outsider's spin allowance runs out.  So every tuning of TICKET_SPIN,
 *    TS_TURN_BATCH, TS_REBORROW_MAX, TS_NEXT_IN_LINE_PATIENCE,
 *    TS_STALL_MEMORY_MS and the nap schedule is covered.  TICKET_WAIT=park
 *    (the default) is modelled; spin and yield never sleep, a subset.
 *
 * Ghost state (not in the C) checks the properties: in_cs (mutual
 * exclusion), expect (the ticket to be served next), has/tk (who holds which
 * ticket), want (a lock() call is waiting: the progress claim).
 *
 * Configuration (spin -D...): NT threads (2 or 3), NACQ lock/unlock pairs
 * each, QMAX = TICKET_QUEUE (0: strict FIFO), TRYLOCK (each acquisition may
 * be a pthread_spin_trylock), UNLOCK_LOCKED (the unlock as one locked
 * instruction: closes the documented race, see README), PROGRESS (the LTL
 * claim), and the MUT_* mutations (README).
 */

#ifndef NT
#define NT 2
#endif
#ifndef NACQ
#define NACQ 2
#endif
#ifndef QMAX
#define QMAX 1
#endif
#ifndef TIMEOUT_INLINE
#define TIMEOUT_INLINE 1
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

/* ticket_lock.h, scaled: 4-bit halves instead of 16-bit ones. */
#define HB          4                 /* bits in a half (16 in the C) */
#define HMASK       15                /* a half (0xffff) */
#define HIGH        240               /* the "next" half, in place */
#define WMASK       255               /* the word (uint32_t wrap-around) */
#define STEP        4                 /* TS_TICKET_STEP */
#define TMASK       12                /* TS_TICKET_MASK (0xfffc) */
#define HANDOFF     1                 /* TS_HANDOFF */
#define BORROWED    2                 /* TS_BORROWED */
#define LENDING     16                /* TS_LENDING  (bit 16) */
#define SLEEPERS    32                /* TS_SLEEPERS (bit 17) */
#define NEXT_STEP   64                /* TS_NEXT_STEP */
#define UNLOCK_FLAGS (LENDING | SLEEPERS | HANDOFF | BORROWED)

#define serving(w)     ((w) & TMASK)                          /* ts_serving() */
#define next(w)        (((w) >> HB) & TMASK)                  /* ts_next() */
#define between(f, t)  ((((t) - (f)) & TMASK) / STEP)         /* ts_tickets_between() */
#define is_free(w)     ((((((w) ^ ((w) >> HB)) & TMASK)) | ((w) & (HANDOFF | BORROWED))) == 0)
#define is_last(w, t)  (next(w) == (((t) + STEP) & HMASK))    /* is_last_in_line() */

/* Memory. */
#ifndef INIT_TICKET
#define INIT_TICKET 8            /* a free word two tickets before wrap-around */
#endif
byte word = (INIT_TICKET << HB) | INIT_TICKET; /* the lock word (pthread_spinlock_t), free */
bool bfull[NT];          /* store buffer, depth one: an entry is pending */
bool bwhole[NT];         /* the entry is a 32-bit store (MUT_PARK_STORE only) */
byte bval[NT];           /* its value: the "serving" half, or the whole word */
bool isleep[NT];         /* asleep in FUTEX_WAIT_BITSET on the lock word */
byte ibit[NT];           /* ... with the bit of this ticket (ticket_bit()) */
byte seq;                /* parking_slot.seq */
byte sleepers;           /* parking_slot.sleepers */
bool osleep[NT];         /* asleep in FUTEX_WAIT_PRIVATE on parking_slot.seq */

/* Ghosts. */
byte in_cs;              /* threads in the critical section */
byte expect = INIT_TICKET; /* the ticket whose holder must be the next one served */
bool has[NT];            /* holds a ticket (drawn, not yet withdrawn or unlocked) */
byte tk[NT];             /* ... this one */
bool want[NT];           /* in pthread_spin_lock(), not yet the owner */
byte done;               /* threads finished */

/* What the memory holds for thread @me: its own buffered store, else memory. */
#define view(me) (bfull[me] -> (bwhole[me] -> bval[me] : ((word & HIGH) | bval[me])) : word)

/* The store buffer drains into memory (the oldest, here the only, entry). */
inline drain(me)
{
	if
	:: bfull[me] && bwhole[me] -> word = bval[me]; bfull[me] = 0; bwhole[me] = 0
	:: bfull[me] && !bwhole[me] -> word = (word & HIGH) | bval[me]; bfull[me] = 0
	:: else
	fi
}

/* A plain load (mov): acquire on x86. */
inline load(me, dst)
{
	atomic { dst = view(me) }
}

/* The 16-bit plain store of "serving" (mov to the low half): into the buffer. */
inline store_low(me, v)
{
	atomic { assert(!bfull[me]); bfull[me] = 1; bwhole[me] = 0; bval[me] = v }
}

/* lock cmpxchg: on failure @expected takes the word, as __atomic_compare_exchange_n. */
inline cas(me, expected, desired, ok)
{
	atomic {
		drain(me);
		if
		:: word == expected -> word = desired; ok = 1
		:: else -> expected = word; ok = 0
		fi
	}
}

/* Ghost: a ticket drawn by fetch-add is held by no one else. */
inline drew(me, t)
{
	assert(!(has[0] && tk[0] == t) && !(has[1] && tk[1] == t));
#if NT > 2
	assert(!(has[2] && tk[2] == t));
#endif
	has[me] = 1; tk[me] = t
}

/* ts_wake_ticket() (parking.c): FUTEX_WAKE_BITSET, every sleeper of the bit. */
inline wake_one_bit(i, t)
{
	if
	:: isleep[i] && ibit[i] == (t) -> isleep[i] = 0; ibit[i] = 0
	:: else
	fi
}
inline ts_wake_ticket(me, t)
{
	atomic {
		drain(me);
		wake_one_bit(0, t);
		wake_one_bit(1, t);
#if NT > 2
		wake_one_bit(2, t);
#endif
	}
}

/*
 * ts_sleep_in_line() (parking.c).  The fetch-or of TS_SLEEPERS, the
 * decision, and FUTEX_WAIT_BITSET on the value the fetch-or returned.
 */
inline ts_sleep_in_line(me, t, nil, w)
{
#ifdef MUT_PARK_STORE
	/* Mutation: the fetch-or as a plain load and a plain 32-bit store. */
	atomic { w = view(me) | SLEEPERS }
	atomic { assert(!bfull[me]); bfull[me] = 1; bwhole[me] = 1; bval[me] = w }
#else
	atomic { drain(me); w = word | SLEEPERS; word = w }
#endif
	if
	:: (nil -> (between(serving(w), t) == 0 && !(w & BORROWED)) : between(serving(w), t) < 2)
		/* TS_SLEEP_SKIPPED */
	:: else ->
		atomic {
			drain(me);
			if
			:: word == w -> isleep[me] = 1; ibit[me] = t
			:: else      /* EAGAIN: the word changed */
			fi
		}
		atomic {
			if
			:: !isleep[me]                     /* woken (or never slept) */
#if TIMEOUT_INLINE
			:: isleep[me] -> isleep[me] = 0; ibit[me] = 0    /* the nap ran out */
#endif
			fi
		}
	fi
}

/*
 * ts_wake_outsider() (parking.c) after its load of the sleepers count found
 * someone: bump the sequence, FUTEX_WAKE_PRIVATE of one sleeper.
 */
inline wake_outsider_rest(me)
{
	atomic { drain(me); seq++ }
	atomic {
		drain(me);
		if
		:: osleep[0] -> osleep[0] = 0
		:: osleep[1] -> osleep[1] = 0
#if NT > 2
		:: osleep[2] -> osleep[2] = 0
#endif
		:: else
		fi
	}
}

/* ts_wake_outsider() (parking.c); @res: someone was counted asleep. */
inline ts_wake_outsider(me, res)
{
	atomic { res = (sleepers != 0) }
	if
	:: res -> wake_outsider_rest(me)
	:: else
	fi
}

/* ts_sleep_outside() (parking.c), on the one slot. */
inline ts_sleep_outside(me, only_if_full, s, w)
{
	atomic { s = seq }
	atomic { drain(me); sleepers++ }
	load(me, w);
	if
	:: !only_if_full || between(serving(w), next(w)) >= QMAX ->
		atomic {
			drain(me);
			if
			:: seq == s -> osleep[me] = 1
			:: else
			fi
		}
		atomic {
			if
			:: !osleep[me]
#if TIMEOUT_OUTSIDE == 1
			:: osleep[me] -> osleep[me] = 0
#elif TIMEOUT_OUTSIDE == 2
			:: osleep[me] && !only_if_full -> osleep[me] = 0  /* only after taking turns */
#endif
			fi
		}
	:: else
	fi;
	atomic { drain(me); sleepers--; s = 0; w = 0 }
}

/*
 * withdraw() (slowpath.c): give back our ticket, the last one drawn when we
 * read @w, setting @set.  Only when last in line (the callers check it).
 */
inline withdraw(me, w, set, ok)
{
	atomic {
		drain(me);
		tmp = (w + 256 - NEXT_STEP) & WMASK;
		if
		:: set & BORROWED -> tmp = tmp & (WMASK - HANDOFF)
		:: else
		fi;
		if
		:: word == w -> word = tmp | set; ok = 1; has[me] = 0; tk[me] = 0; t = 0
		:: else -> w = word; ok = 0
		fi;
		tmp = 0
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
 * critical section, pthread_spin_unlock().  Locals that are dead are reset
 * to 0, so that states differing only in stale values are one state.
 */
proctype thread(byte me)
{
	byte n;              /* acquisitions done */
	byte t;              /* our ticket ("ticket" in ts_lock_slow) */
	byte w;              /* the word as we last read it ("word") */
	byte low;            /* the unlock's new "serving" half; "behind" in after_served */
	byte tmp;            /* withdraw()'s new word; after_served()'s "drop" */
	byte lt;             /* ghost: the turn we borrowed */
	byte s;              /* parking_slot.seq as read */
	bool ok;             /* a CAS succeeded / the word read was free */
	bool lent;           /* we hold a borrowed turn (BORROWED), no ticket */
	bool took_turns;     /* TOOK_TURNS, else STEPPED_OUT */
	bool gave_place;     /* ts_wake_outsider() found a sleeper */
	bool came_out;       /* this acquisition waited outside (came_from_outside) */
	bool slow;           /* the unlock went out of line */
	bool streak_ok;      /* entry->streak >= TS_TURN_BATCH, as far as we know */

	if   /* the streak before the model starts: anything */
	:: streak_ok = 1
	:: streak_ok = 0
	fi;

acquire:
	if
	:: n == NACQ -> goto finish
	:: else
	fi;
#if TRYLOCK
	if
	:: true
	:: true ->
		/* ts_trylock() (ticket_lock.h): a plain load, then lock cmpxchg. */
		atomic { w = view(me); ok = is_free(w) }
		if
		:: ok ->
			atomic {
				drain(me);
				if
				:: word == w -> word = (w + NEXT_STEP) & WMASK; t = next(w); drew(me, t)
				:: else -> ok = 0
				fi;
				w = 0
			}
		:: else -> w = 0
		fi;
		if
		:: ok -> ok = 0; goto critical
		:: else -> n++; goto acquire      /* trylock failed: one attempt done */
		fi
	fi;
#endif
	/* ts_lock() (ticket_lock.h): lock xadd of TS_NEXT_STEP. */
	atomic {
		want[me] = 1;
		drain(me);
		ok = is_free(word);
		t = next(word);
		word = (word + NEXT_STEP) & WMASK;
		drew(me, t);
		w = (ok -> 0 : word)     /* old + TS_NEXT_STEP, passed to ts_lock_slow() */
	}
	if
	:: ok -> ok = 0; goto critical      /* the fast path: nothing else */
	:: else
	fi;

	/*
	 * ts_lock_slow() (slowpath.c), then wait_in_line(): both start from the
	 * word the fetch-add returned; the first load comes after a backoff.
	 */
wil_loop:
	if
	:: between(serving(w), t) == 0 && !(w & (HANDOFF | BORROWED)) -> goto served
	:: between(serving(w), t) == 0 && (w & HANDOFF) ->
		/*
		 * Claim our turn: an atomic AND clearing TS_HANDOFF (lock btr),
		 * which succeeds when the flag was still set, whatever the "next"
		 * half did meanwhile; then the word is loaded again.
		 */
		atomic {
			drain(me);
			if
			:: word & HANDOFF -> word = word & (WMASK - HANDOFF); ok = 1
			:: else
			fi;
			w = word
		}
		if
		:: ok -> ok = 0; goto served
		:: else -> goto wil_loop
		fi
	:: else
	fi;
	/* Too many in line: the last one steps out. */
	if
#ifdef MUT_WITHDRAW_NOT_LAST
	:: QMAX != 0 && between(serving(w), t) >= QMAX ->
#else
	:: QMAX != 0 && between(serving(w), t) >= QMAX && is_last(w, t) ->
#endif
		withdraw(me, w, LENDING, ok);
		if
		:: ok -> ok = 0; took_turns = 0; goto left_line
		:: else -> goto wil_loop
		fi
	:: else
	fi;
	/* Taking turns: the streak, and (crowded or outsiders) as a choice. */
	if
	:: between(serving(w), t) > 0 && streak_ok && is_last(w, t) ->
		if
		:: true ->
			withdraw(me, w, 0, ok);
			if
			:: ok -> ok = 0; took_turns = 1; goto left_line
			:: else -> goto wil_loop
			fi
		:: true
		fi
	:: else
	fi;
	/* Borrow a turn left unclaimed (may_borrow): the spin budget as a choice. */
	if
	:: between(serving(w), t) > 0 && is_last(w, t) && QMAX != 0 &&
	   (w & (HANDOFF | BORROWED)) == HANDOFF ->
		if
		:: true ->
			withdraw(me, w, BORROWED, ok);
			if
			:: ok -> ok = 0; lent = 1; lt = serving(w); goto critical
			:: else -> goto wil_loop
			fi
		:: true
		fi
	:: else
	fi;
	/* The stall check, and give_way(): both when the policy says. */
	if
	:: true ->
		/* note_stall() */
		if
		:: QMAX != 0 && !(w & LENDING) ->
			atomic { drain(me); w = word | LENDING; word = w }
		:: else
		fi;
		if
		:: true ->
			/* give_way() -> ts_sleep_in_line(), next_in_line = ahead <= 1 */
			ok = (between(serving(w), t) <= 1);
			ts_sleep_in_line(me, t, ok, w);
			atomic { ok = 0; w = view(me) }
			goto wil_loop
		:: true
		fi
	:: true
	fi;
	/* Pause, look again. */
	load(me, w);
	goto wil_loop;

left_line:
	/* ts_lock_slow()'s loop: STEPPED_OUT or TOOK_TURNS. */
	atomic {
		came_out = 1;
		streak_ok = 0;
		w = 0;
		if   /* ts_wake_outsider()'s load: our place, to the longest asleep */
		:: took_turns -> took_turns = 0; gave_place = (sleepers != 0)
		:: else
		fi
	}
	if
	:: gave_place -> wake_outsider_rest(me)
	:: else
	fi;

	/* wait_outside(w, gave_place) (slowpath.c) */
	if
	:: gave_place -> gave_place = 0; ts_sleep_outside(me, 0, s, w)
	:: else
	fi;
wo_loop:
	load(me, w);
	if
	:: between(serving(w), next(w)) < QMAX -> goto draw_again
	:: else
	fi;
	/* may_borrow(): HANDOFF without BORROWED; the spin budget as a choice. */
	if
	:: QMAX != 0 && (w & (HANDOFF | BORROWED)) == HANDOFF ->
		if
		:: true ->
			cas(me, w, (w & (WMASK - HANDOFF)) | BORROWED, ok);
			if
			:: ok -> ok = 0; lent = 1; lt = serving(w); goto critical
			:: else -> goto wo_loop
			fi
		:: true
		fi
	:: else
	fi;
	/* spun >= spin_allowance: sleep while the line is full. */
	if
	:: ts_sleep_outside(me, 1, s, w)
	:: true
	fi;
	goto wo_loop;

draw_again:
	/* Back in ts_lock_slow(): draw a ticket again. */
	atomic {
		drain(me);
		ok = is_free(word);
		t = next(word);
		word = (word + NEXT_STEP) & WMASK;
		drew(me, t);
		w = word                 /* old + TS_NEXT_STEP */
	}
	if
	:: ok -> ok = 0; goto served
	:: else -> goto wil_loop
	fi;

served:
	/* after_served() (slowpath.c), @w the word our acquiring load or claim read. */
	atomic {
		assert(between(t, next(w)) >= 1);
		low = between(t, next(w)) - 1;       /* behind */
		tmp = ((w & SLEEPERS) && low <= 1 -> SLEEPERS : 0);
		if   /* !ts_stalled_recently(): a choice */
		:: w & LENDING -> tmp = tmp | LENDING
		:: true
		fi
	}
	if
	:: tmp != 0 -> cas(me, w, w & (WMASK - tmp), ok); atomic { ok = 0; tmp = 0 }
	:: else
	fi;
#ifndef MUT_NO_SUCCESSOR_WAKE
	if
	:: w & SLEEPERS -> ts_wake_ticket(me, (t + STEP) & HMASK)
	:: else
	fi;
#endif
	if   /* came in from outside, no one behind us: pass the room on */
	:: low == 0 && came_out -> ts_wake_outsider(me, ok); ok = 0
	:: else
	fi;
	/* ts_lock_slow() returns: we own the lock. */

critical:
	atomic {
		if   /* the streak after an acquisition: anything */
		:: streak_ok = 1
		:: streak_ok = 0
		fi;
		want[me] = 0;
		came_out = 0;
		w = 0;
		low = 0;
		in_cs++;
		assert(in_cs == 1);
		if
		:: lent ->
			/* a borrowed turn: the served waiter keeps its ticket */
			assert(lt == expect);
			assert((has[0] && tk[0] == lt) || (has[1] && tk[1] == lt)
#if NT > 2
			       || (has[2] && tk[2] == lt)
#endif
			);
			lt = 0
		:: else -> assert(t == expect)    /* tickets served in order, none skipped */
		fi
	}
	atomic {
		in_cs--;
		if
		:: !lent -> expect = (expect + STEP) & HMASK; has[me] = 0; tk[me] = 0; t = 0
		:: else
		fi
	}

	/* ts_unlock() (ticket_lock.h) and ts_unlock_slow() (slowpath.c) */
#if UNLOCK_LOCKED
	atomic { drain(me);
#endif
	load(me, w);
	if
	:: (w & UNLOCK_FLAGS) || serving(w) == next(w) ->
		/* ts_unlock_slow(): never refused for the real holder */
		assert(!is_free(w));
		assert(((w & BORROWED) != 0) == lent);
		if
		:: w & BORROWED ->
#ifdef MUT_BORROW_ADVANCES
			low = (serving(w) + STEP) & HMASK
#else
			low = serving(w) | HANDOFF         /* give the turn back */
#endif
		:: else ->
			assert(!(w & HANDOFF));
			low = (serving(w) + STEP) & HMASK;
			if
			:: (w & LENDING) && next(w) != low -> low = low | HANDOFF
			:: else
			fi
		fi;
		slow = 1
	:: else ->
		low = (serving(w) + STEP) & HMASK
	fi;
	store_low(me, low);
#if UNLOCK_LOCKED
	drain(me) }
#endif
	if
#ifndef MUT_NO_UNLOCK_WAKE
	:: slow && (w & SLEEPERS) && (low & TMASK) != next(w) -> ts_wake_ticket(me, low & TMASK)
#endif
	:: else
	fi;
	atomic { n++; w = 0; low = 0; slow = 0; lent = 0 }
	goto acquire;

finish:
	atomic { done++ }
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
	/* Every lock() returned, every unlock landed. */
	(done == NT && !bfull[0] && !bfull[1]
#if NT > 2
	 && !bfull[2]
#endif
	);
	/* No ticket left outstanding or skipped; no turn lent; no one counted asleep. */
	assert(serving(word) == next(word) && serving(word) == expect);
	assert(!(word & BORROWED));
	assert(sleepers == 0 && in_cs == 0);
}

#ifdef PROGRESS
/* Every pthread_spin_lock() call returns (under weak fairness, spin -f). */
ltl progress {
	[] ((want[0] -> <> !want[0]) && (want[1] -> <> !want[1])
#if NT > 2
	    && (want[2] -> <> !want[2])
#endif
	)
}
#endif
