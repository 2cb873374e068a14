/*
 * active.c - the active set: while a lock is saturated, at most
 * TICKET_ACTIVE threads contend for it; the others sleep off-CPU, holding
 * nothing, in a FIFO line, and are rotated in (after Dice and Kogan's
 * Generic Concurrency Restriction, and Malthusian locks).
 *
 * Why.  With more threads than CPUs the queue (slowpath.c) restricts by
 * sleeping: every waiter behind a watching head sleeps, and is woken when it
 * becomes the head.  Each take then waits for a wake-up, and a woken head
 * that is not yet running is a lock that runs one thread at a time: at 8 and
 * 16 threads on two CPUs, work 100 on the lock's own line, ticketspin ran
 * 8 M/s with the CPUs idle a quarter to three quarters of the time, where
 * pthread_mutex, whose waiters stay asleep while two threads keep the lock
 * between them for a scheduler time slice, ran 12 (doc/benchmarks.md).  An
 * active set keeps the threads that circulate few and running: the members
 * contend as that many threads alone would (steals, the bound, the rest),
 * and the others are woken once per turn, not at every hand-over.
 *
 * The set.  Per lock hash (locks sharing a hash share a set), TICKET_ACTIVE
 * slots, each naming its member, since when, and its thread's CPU clock.  A
 * member's turn is TICKET_ACTIVE_US of its CPU time, or TS_ACTIVE_WALL_TURNS
 * times that in wall time if it does not run that long; once it is over,
 * the first thread of the passive line may take the slot (evict it).
 * Threads come to ts_active_admit() when they failed to take the lock and
 * hold no ticket, or when they are not members while the line is not empty
 * (ts_active_outsider(): no stealing past the line):
 *  1. A member passes.
 *  2. If the lock is not saturated (its last watching head was bypassed
 *     fewer than TS_SATURATED_BYPASSED times before it took the lock),
 *     anyone passes, even while others wait in the line.
 *  3. While no one waits in the line, a free slot is taken.
 *  4. Anyone else joins the line: a number drawn from the room, and a sleep
 *     until the room serves it.  The first of the line takes a free slot,
 *     or the slot whose turn ended first, as soon as it ends (it sleeps
 *     until then), and passes the line on to the next.
 * At low contention nothing is restricted, and the cost is a load of the
 * room (ts_active_outsider()) on the slow path.  The line itself is served
 * by turns only: letting its first pass whenever the hint said "not
 * saturated" (it flips at every take near the threshold) drained the whole
 * line at once, each woken thread waking the next, and filled the CPUs with
 * threads that preempted the holder.  But newcomers pass it while the hint
 * says "not saturated" (step 2), and no one counts as an outsider then: a
 * line that everyone joined once it had formed never dissolved, and where
 * the lock is not the bottleneck (16 threads, work 1000) evicted members
 * rejoined it for good, so that two threads ran where sixteen could and the
 * CPUs idled at each hand-over (doc/benchmarks.md, 7 December 2026,
 * evening).  So the line empties by turns once contention falls, and the
 * set restricts only while the lock is saturated.  Turns of wall time gave
 * a member that a CPU hog preempted for its turn nothing, and one that ran
 * a hundred thousand acquisitions; the CPU time is read (clock_gettime() of
 * the member's thread clock, a system call, no cancellation point) only by
 * the first of the line, once a turn of wall time is over.  An evicted
 * member is not told: it goes on until its next acquisition that is not a
 * fast path's, finds the slot gone, and joins the line.  So the hand-over
 * leaves no CPU idle while the newcomer wakes; a member that exited or
 * forked away holds its slot one turn at most (its clock is gone), one that
 * blocks or lost its CPU TS_ACTIVE_WALL_TURNS turns.  A thread is a member
 * of one set at a time: coming to another lock's gate frees its slot, so a
 * thread that sleeps in one line while holding another lock frees its place
 * there first.
 *
 * Bounds.  A passive thread holds no ticket and nothing of the lock's word:
 * the queue's bounds (slowpath.c) do not count it and it holds up no one.
 * With P threads ahead of it in the line and A slots, it waits at most
 * about P / A + 1 turns (TICKET_ACTIVE_US of CPU time each, and at most
 * TS_ACTIVE_WALL_TURNS times that of wall time) and P wake-ups, and then
 * contends for a turn, as a member, under the queue's bounds.  Every sleep
 * is bounded: the first of the line sleeps until the next turn ends, the
 * others TS_ACTIVE_LINE_NAP_NS at most; one that finds the line stuck at the
 * same number after that nap (its first vanished, or has not had a CPU for
 * that long) moves it on.
 *
 * Ordering.  Sleepers sleep on the room's "serving" word with their number's
 * bit, and only while it still holds the value they read; whoever moves it
 * on or frees a slot wakes the bit of the number served.  A slot freed
 * between the first's look and its sleep is a missed wake-up: it costs the
 * rest of a turn at most (the first's sleep ends when a turn does).  Slots
 * change owner by compare-and-swap only; a slot's owner and the line are
 * hints that order no access to the lock's data (the lock's word does).
 */
#include "active.h"

#include "backoff.h"
#include "parking.h"
#include "slowpath.h"

#include <limits.h>
#include <pthread.h>
#include <linux/futex.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TS_ACTIVE_ROOMS 64u
/* The longest sleep in the line behind its first (a missed wake-up's cost). */
#define TS_ACTIVE_LINE_NAP_NS 50000000ull

#define SLOT_FREE ((uintptr_t)0)

struct active_slot {
	uintptr_t owner;       /* SLOT_FREE, or a member's token */
	uint64_t since_ns;     /* when the owner took it (CLOCK_MONOTONIC) */
	uint64_t cpu_since_ns; /* the owner's CPU time then */
	clockid_t cpu_clock;   /* the owner's thread CPU clock */
};

static struct active_room {
	uint32_t serving; /* the number of the first of the line; its futex word */
	uint32_t drawn;   /* the next number to hand out: drawn - serving are in line */
	struct active_slot slot[TS_ACTIVE_MAX];
} rooms[TS_ACTIVE_ROOMS] __attribute__((aligned(64)));

/* Process-wide counts, for the tests: written only on the way into and out of the line. */
static struct ts_active_counts counts;

void ts_active_counts(struct ts_active_counts *out)
{
	out->joined = __atomic_load_n(&counts.joined, __ATOMIC_RELAXED);
	out->evicted = __atomic_load_n(&counts.evicted, __ATOMIC_RELAXED);
}

/* This thread's membership: the room and slot it took.  Its token: &me.token. */
struct membership {
	struct active_room *room;
	uint32_t slot;
	uint64_t token;
};
static __thread struct membership me __attribute__((tls_model("initial-exec")));

static uintptr_t my_token(void)
{
	return (uintptr_t)&me.token; /* 8-aligned, never SLOT_FREE */
}

uint32_t ts_active_cpus(void)
{
	cpu_set_t set;
	int n;

	/* sched_getaffinity(): a system call, no file opened, no cancellation point. */
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 1;
	n = CPU_COUNT(&set);
	return n > 0 ? (uint32_t)n : 1u;
}

static struct active_room *room_of(uint32_t hash)
{
	return &rooms[hash % TS_ACTIVE_ROOMS];
}

static uint64_t turn_ns(const struct ts_config *cfg)
{
	return (uint64_t)cfg->active_us * 1000u;
}

/* The longest a turn lasts in wall time: no turn that begins now ends later. */
static uint64_t wall_turns_ns(const struct ts_config *cfg)
{
	return TS_ACTIVE_WALL_TURNS * turn_ns(cfg);
}

/* @clock's time, or false if its thread is gone.  A system call, no cancellation point. */
static bool cpu_time_ns(clockid_t clock, uint64_t *ns)
{
	struct timespec ts;

	if (clock_gettime(clock, &ts) != 0)
		return false;
	*ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return true;
}

/* This thread's CPU clock, which other threads can read (pthread_getcpuclockid(): no system call). */
static clockid_t my_cpu_clock(void)
{
	clockid_t clock;

	if (pthread_getcpuclockid(pthread_self(), &clock) != 0)
		return CLOCK_MONOTONIC; /* cannot happen for the calling thread; then turns are wall time */
	return clock;
}

static uint64_t my_cpu_time_ns(clockid_t clock)
{
	uint64_t ns;

	return cpu_time_ns(clock, &ns) ? ns : 0;
}

/*
 * When @slot's turn ends, as seen at @now: the end of TICKET_ACTIVE_US of its
 * owner's CPU time (from now on, at the earliest), capped by the wall-time
 * limit; @now or earlier if it has ended (or its owner exited).  The slot's
 * fields may be a previous owner's, read while a new one writes them: a hint,
 * which moves a turn's end, never the lock's safety.
 */
static uint64_t turn_end_ns(const struct ts_config *cfg, struct active_slot *slot, uint64_t now)
{
	uint64_t turn = turn_ns(cfg);
	uint64_t since = __atomic_load_n(&slot->since_ns, __ATOMIC_RELAXED);
	uint64_t cpu_since = __atomic_load_n(&slot->cpu_since_ns, __ATOMIC_RELAXED);
	clockid_t clock = __atomic_load_n(&slot->cpu_clock, __ATOMIC_RELAXED);
	uint64_t wall_end = since + wall_turns_ns(cfg);
	uint64_t cpu_now, cpu_used, cpu_end;

	if (now < since + turn)
		return since + turn; /* it cannot have run that long yet: no need to ask */
	if (now >= wall_end || !cpu_time_ns(clock, &cpu_now))
		return now;
	cpu_used = cpu_now - cpu_since;
	if (cpu_used >= turn)
		return now;
	cpu_end = now + (turn - cpu_used);
	return cpu_end < wall_end ? cpu_end : wall_end;
}

static bool line_empty(struct active_room *room)
{
	/* Relaxed: a hint for the slow path; the line itself decides. */
	return __atomic_load_n(&room->drawn, __ATOMIC_RELAXED) ==
	       __atomic_load_n(&room->serving, __ATOMIC_RELAXED);
}

static bool is_member(struct active_room *room)
{
	return me.room == room &&
	       __atomic_load_n(&room->slot[me.slot].owner, __ATOMIC_RELAXED) == my_token();
}

static uint32_t number_bit(uint32_t number)
{
	return 1u << (number % 32u);
}

/* Wakes the first of @room's line, if it sleeps. */
static void wake_first(struct active_room *room)
{
	uint32_t serving = __atomic_load_n(&room->serving, __ATOMIC_SEQ_CST);

	if (__atomic_load_n(&room->drawn, __ATOMIC_SEQ_CST) != serving)
		syscall(SYS_futex, &room->serving, FUTEX_WAKE_BITSET_PRIVATE, INT_MAX, NULL, NULL,
		        number_bit(serving));
}

/* The first of the line, @number, leaves it: the next is served. */
static void serve_next(struct active_room *room, uint32_t number)
{
	uint32_t expected = number;

	if (__atomic_compare_exchange_n(&room->serving, &expected, number + 1u, false,
	                                __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		wake_first(room);
}

/* Gives back our slot, if we still hold one. */
static void leave_set(void)
{
	struct active_room *room = me.room;
	uintptr_t mine = my_token();

	me.room = NULL;
	if (room != NULL &&
	    __atomic_compare_exchange_n(&room->slot[me.slot].owner, &mine, SLOT_FREE, false,
	                                __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		wake_first(room);
}

/*
 * Takes a slot of @room: a free one, or (@evict) one whose turn is over.
 * Else returns false with @*turn_ends_ns the end of the earliest turn
 * (UINT64_MAX when every slot was taken under us).
 */
static bool claim(const struct ts_config *cfg, struct active_room *room, uint64_t now,
                  bool evict, uint64_t *turn_ends_ns)
{
	uint64_t earliest = UINT64_MAX;

	for (uint32_t i = 0; i < cfg->active; i++) {
		struct active_slot *slot = &room->slot[i];
		uintptr_t owner = __atomic_load_n(&slot->owner, __ATOMIC_SEQ_CST);
		clockid_t clock;

		if (owner != SLOT_FREE) {
			uint64_t ends = evict ? turn_end_ns(cfg, slot, now) : UINT64_MAX;

			if (now < ends) {
				if (ends < earliest)
					earliest = ends;
				continue;
			}
		}
		if (!__atomic_compare_exchange_n(&slot->owner, &owner, my_token(), false,
		                                 __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			continue; /* taken under us: its turn has no end yet (UINT64_MAX) */
		__atomic_store_n(&slot->since_ns, now, __ATOMIC_RELAXED);
		clock = my_cpu_clock();
		__atomic_store_n(&slot->cpu_clock, clock, __ATOMIC_RELAXED);
		__atomic_store_n(&slot->cpu_since_ns, my_cpu_time_ns(clock), __ATOMIC_RELAXED);
		if (owner != SLOT_FREE)
			__atomic_fetch_add(&counts.evicted, 1, __ATOMIC_RELAXED);
		me.room = room;
		me.slot = i;
		return true;
	}
	*turn_ends_ns = earliest;
	return false;
}

/* FUTEX_WAIT_BITSET on @room's serving word while it holds @serving, until @deadline_ns. */
static void sleep_in_line(struct active_room *room, uint32_t serving, uint32_t number,
                          uint64_t deadline_ns)
{
	struct timespec at = { (time_t)(deadline_ns / 1000000000u),
	                       (long)(deadline_ns % 1000000000u) };

	/* A raw futex wait: no cancellation point; absolute CLOCK_MONOTONIC deadline. */
	syscall(SYS_futex, &room->serving, FUTEX_WAIT_BITSET_PRIVATE, serving, &at, NULL,
	        number_bit(number));
}

/* Waits in @room's line until a slot is ours. */
static void wait_in_line(const struct ts_config *cfg, struct active_room *room)
{
	uint32_t number = __atomic_fetch_add(&room->drawn, 1, __ATOMIC_SEQ_CST);

	__atomic_fetch_add(&counts.joined, 1, __ATOMIC_RELAXED);

	for (;;) {
		uint32_t serving = __atomic_load_n(&room->serving, __ATOMIC_SEQ_CST);
		uint64_t now = ts_now_ns();
		uint64_t deadline;

		if ((int32_t)(number - serving) <= 0) {
			/* First (or passed over while slow to wake: first anyway). */
			if (claim(cfg, room, now, true, &deadline)) {
				serve_next(room, number);
				return;
			}
			/*
			 * Bounded: any turn, even one that begins now, ends
			 * within wall_turns_ns().  A slot taken between our look
			 * and our compare-and-swap had no end yet, and the
			 * first of the line slept until a wake-up that an owner
			 * which exits never gives: 247 s in one `make stress`
			 * run (TICKET_ACTIVE=1, four threads).
			 */
			if (deadline > now + wall_turns_ns(cfg))
				deadline = now + wall_turns_ns(cfg);
			sleep_in_line(room, serving, number, deadline);
			continue;
		}
		deadline = now + TS_ACTIVE_LINE_NAP_NS;
		sleep_in_line(room, serving, number, deadline);
		if (__atomic_load_n(&room->serving, __ATOMIC_SEQ_CST) == serving &&
		    ts_now_ns() >= deadline)
			serve_next(room, serving); /* a whole nap, no one served: the first vanished */
	}
}

bool ts_active_admit(const struct ts_config *cfg, uint32_t hash, uint32_t word)
{
	struct active_room *room;
	uint64_t unused;

	/* Strict FIFO restricts nothing; a shared lock's waiters are in other processes too. */
	if (cfg->active == 0 || cfg->wait != TS_WAIT_PARK || cfg->bypass_max == 0 ||
	    (word & TS_SHARED))
		return false;
	room = room_of(hash);
	if (is_member(room))
		return false;
	if (me.room != NULL)
		leave_set(); /* one set at a time (or our slot was taken: nothing to give back) */
	/*
	 * Low contention: nothing is restricted, line or no line (step 2).
	 * Saturated is the lock's last watching head bypassed
	 * TS_SATURATED_BYPASSED times or more (slowpath.c).  Below that, a
	 * thread that failed to take the lock gets it within a critical
	 * section, and restricting it cost fairness where the private work is
	 * long (doc/benchmarks.md, "5 December 2026 (afternoon)").
	 */
	if (!ts_lock_saturated(hash))
		return false;
	if (line_empty(room) && claim(cfg, room, ts_now_ns(), false, &unused))
		return false;
	wait_in_line(cfg, room);
	return true;
}

bool ts_active_outsider(const struct ts_config *cfg, ts_word_t *lock, uint32_t word)
{
	struct active_room *room;
	uint32_t hash;

	if (cfg->active == 0 || (word & TS_SHARED))
		return false;
	hash = ts_lock_hash(lock);
	room = room_of(hash);
	/* The gate's tests (ts_active_admit()): it would not restrict us, so neither does this. */
	return !line_empty(room) && !is_member(room) && ts_lock_saturated(hash);
}

void ts_active_after_fork(void)
{
	memset(rooms, 0, sizeof(rooms));
	me.room = NULL;
}
