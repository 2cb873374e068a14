#!/bin/sh
# verify.sh - runs SPIN on model/ticketspin.pml: the real model in each
# configuration, and each seeded bug (mutation), printing SPIN's verdict
# lines.  Exits non-zero when a configuration's verdict is not the expected
# one: errors for the real model where none are expected, or a mutation (or a
# documented reliance on a nap's timeout) that SPIN does not reject.  A
# mutation must be rejected by the property named for it.  A table of all
# runs comes last.
#
#   verify.sh [--quick] [SRCDIR]
#
# --quick is the reduced set that 'make check' runs (under a minute);
# without it, every configuration of the table in model/README.md.
# Environment: SPIN (default: spin), CC (default: cc), NICE (default: nice;
# empty to run pan at normal priority), WORKDIR (default:
# ./run), where each configuration gets a directory with pan, its output
# and, for a rejected configuration, the trail (replay it with the spin
# command printed).
set -u

quick=0
if [ "${1:-}" = "--quick" ]; then
	quick=1
	shift
fi
srcdir=${1:-$(dirname "$0")}
model=$(cd "$srcdir" && pwd)/ticketspin.pml
SPIN=${SPIN:-spin}
CC=${CC:-cc}
NICE=${NICE-nice}
WORKDIR=${WORKDIR:-run}

if ! command -v "$SPIN" >/dev/null 2>&1; then
	echo "verify.sh: SPIN ('$SPIN') not found: install it (./bootstrap --deps installs the Debian package spin)" >&2
	exit 1
fi
mkdir -p "$WORKDIR" || exit 1
WORKDIR=$(cd "$WORKDIR" && pwd)

failures=0
ran=0
table=$WORKDIR/table.txt
: >"$table"
# The quick runs are small: compiling pan.c fast matters more than pan's speed.
opt=-O2
[ $quick -eq 1 ] && opt=-O0
# ... except the two biggest quick runs, whose pan runs more than twice as
# fast at -O2 for 2-3 s more compiling (2 CPUs: fork-2t-strict-live 28 s ->
# 12 s + 3, safety-3t-b1 9 s -> 4 s + 2; the same states, the same verdict).
# In CC FLAGS: the last -O wins.
big=-O2

# check NAME EXPECT "SPIN -D FLAGS" "CC FLAGS" "PAN FLAGS" "WHAT" [CAUGHT]
#   EXPECT: pass (errors: 0) or fail (SPIN must report an error); CAUGHT, for
#   fail: an extended regular expression the error (pan:1:) must match, so
#   that a mutation is caught by the property meant to catch it.
check() {
	name=$1 expect=$2 dflags=$3 ccflags=$4 panflags=$5 what=$6 caught=${7:-}
	dir=$WORKDIR/$name
	rm -rf "$dir" && mkdir -p "$dir" || exit 1
	cp "$model" "$dir/" || exit 1
	printf '== %s: %s\n   spin %s; cc %s; pan %s\n' "$name" "$what" "$dflags" "$ccflags" "$panflags"
	# shellcheck disable=SC2086
	if ! (cd "$dir" && "$SPIN" $dflags -a ticketspin.pml >spin.log 2>&1 &&
	      $CC $opt -w $ccflags -o pan pan.c >cc.log 2>&1); then
		echo "   could not build the verifier:"; cat "$dir/spin.log" "$dir/cc.log" 2>/dev/null
		failures=$((failures + 1))
		return
	fi
	start=$(date +%s)
	# shellcheck disable=SC2086
	(cd "$dir" && $NICE ./pan $panflags >pan.out 2>&1)
	end=$(date +%s)
	ran=$((ran + 1))
	grep -E '^pan:1:|errors:|states, stored|pan: elapsed time' "$dir/pan.out" | sed 's/^/   /'
	errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$dir/pan.out" | head -1)
	error=$(sed -n 's/^pan:1: \(.*\) (at depth.*/\1/p' "$dir/pan.out" | head -1)
	incomplete=$(grep -c 'max search depth too small\|out of memory\|reached -DMEMLIM' "$dir/pan.out")
	if [ -z "$errors" ]; then
		verdict="NO VERDICT"
	elif [ "$expect" = pass ] && [ "$errors" -eq 0 ] && [ "$incomplete" -eq 0 ]; then
		verdict="ok: errors: 0, as expected"
	elif [ "$expect" = fail ] && [ "$errors" -gt 0 ] && [ -n "$caught" ] &&
	     ! printf '%s\n' "$error" | grep -Eq "$caught"; then
		verdict="UNEXPECTED: rejected, but not by /$caught/ (trail: cd $dir && spin -t -p $dflags ticketspin.pml)"
	elif [ "$expect" = fail ] && [ "$errors" -gt 0 ]; then
		verdict="ok: rejected, as expected (trail: cd $dir && spin -t -p $dflags ticketspin.pml)"
	elif [ "$expect" = pass ]; then
		verdict="UNEXPECTED: errors: $errors (incomplete search: $incomplete) (trail: cd $dir && spin -t -p $dflags ticketspin.pml)"
	else
		verdict="UNEXPECTED: not rejected"
	fi
	printf '   verdict: %s (%ss wall)\n' "$verdict" $((end - start))
	states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$dir/pan.out" | head -1)
	case $error in
	*bypassed*) error="assertion: the bypass bound (I3)" ;;
	*watch_on*) error="assertion: a steal counted with no head watching (I3)" ;;
	*wseen*) error="assertion: the acquisitions past one watch (I6)" ;;
	*hseen*) error="assertion: the acquisitions past a head (I6)" ;;
	*qseen*) error="assertion: the acquisitions past a ticket (I6)" ;;
	*word\&255*) error="assertion: the end state (lock free, queue empty)" ;;
	*in_cs*) error="assertion: mutual exclusion" ;;
	*queue_len*) error="assertion: the queue's capacity (I2)" ;;
	*has\[*) error="assertion: a ticket given back or drawn twice (I2)" ;;
	"") error=- ;;
	esac
	printf '%-28s %-5s %-7s %-10s %5ss  %-12s %s\n' "$name" "$expect" "${errors:-?}" "${states:-?}" \
		$((end - start)) "${verdict%%:*}" "$error" >>"$table"
	case $verdict in
	ok:*) ;;
	*) failures=$((failures + 1)) ;;
	esac
}

# Compile-time options of pan: SAFETY (no cycle detection) with partial order
# reduction and state compression for the safety and end-state checks;
# -a -f (acceptance cycles under weak fairness) for the progress claim.
SAFE="-DSAFETY -DCOLLAPSE"
LIVE="-DCOLLAPSE"
M="-m100000"
# The lost wake-up checks: no nap ends but by a wake-up, in the queue and
# as head; the unlock as one locked instruction, which closes the head's
# documented window (R1).
NOWAIT="-DTIMEOUT_QUEUE=0 -DTIMEOUT_HEAD=0 -DUNLOCK_LOCKED=1"

# The real model, safety, naps as the C (any sleep may time out): mutual
# exclusion, tickets (I2), the bypass bound (I3), the acquisitions past a
# watch (I6; in strict FIFO past a head and a ticket too), unlock never
# refused, no deadlock (every end state valid).
check safety-2t-b1 pass "-DNT=2 -DNACQ=2 -DBYPASS=1" "$SAFE" "$M" \
	"2 threads x 2, TICKET_BYPASS=1: mutual exclusion, tickets, bypass bound, end states"
check safety-3t-b1 pass "-DNT=3 -DNACQ=1 -DBYPASS=1" "$SAFE $big" "$M" \
	"3 threads x 1, TICKET_BYPASS=1: mutual exclusion, tickets, bypass bound, end states"
# TICKET_BYPASS_NS: the head may fill the count itself at any look (its
# clock and the steals' rate are not modelled).  At 3 threads that grew
# safety-3t-b1 from millions of states to 300 million (10 minutes): the
# quick set checks 2 threads, the full one 3.
check safety-2t-b1-patience pass "-DNT=2 -DNACQ=2 -DBYPASS=1 -DPATIENCE=1" "$SAFE" "$M" \
	"2 threads x 2, TICKET_BYPASS=1, the head out of patience fills the count"
if [ $quick -eq 0 ]; then
	check safety-3t-b1-patience pass "-DNT=3 -DNACQ=1 -DBYPASS=1 -DPATIENCE=1" "$SAFE $big" "$M" \
		"3 threads x 1, TICKET_BYPASS=1, the head out of patience fills the count"
fi
# Strict FIFO: the quick set's one run of I6's bounds past a head and a
# ticket (the progress runs leave those counts out).
check safety-2t-strict pass "-DNT=2 -DNACQ=2 -DBYPASS=0 -DTRYLOCK=1" "$SAFE" "$M" \
	"2 threads x 2 (lock or trylock), strict FIFO (TICKET_BYPASS=0)"
if [ $quick -eq 0 ]; then
	check safety-2t3-b1-try pass "-DNT=2 -DNACQ=3 -DBYPASS=1 -DTRYLOCK=1" "$SAFE" "$M" \
		"2 threads x 3 (lock or trylock), TICKET_BYPASS=1"
	check safety-2t-b2-try pass "-DNT=2 -DNACQ=2 -DBYPASS=2 -DTRYLOCK=1" "$SAFE" "$M" \
		"2 threads x 2 (lock or trylock), TICKET_BYPASS=2"
	check safety-3t-b2-try pass "-DNT=3 -DNACQ=1 -DBYPASS=2 -DTRYLOCK=1" "$SAFE" "$M" \
		"3 threads x 1 (lock or trylock), TICKET_BYPASS=2"
	check safety-3t-q2 pass "-DNT=3 -DNACQ=1 -DBYPASS=1 -DQCAP=2" "$SAFE" "$M" \
		"3 threads x 1, TICKET_QUEUE=2 (a full queue)"
	check safety-3t-strict pass "-DNT=3 -DNACQ=1 -DBYPASS=0" "$SAFE" "$M" \
		"3 threads x 1, strict FIFO (TICKET_BYPASS=0)"
fi

# TICKET_WAIT=spin (or yield): no sleep anywhere, so no watch ends but by
# the head's take or an escape (I6's bound-*-spin runs below: even so a
# head's count has no bound).
if [ $quick -eq 0 ]; then
	check safety-2t-b1-spin pass "-DNT=2 -DNACQ=2 -DBYPASS=1 -DWAIT_SPIN=1" "$SAFE" "$M" \
		"2 threads x 2, TICKET_BYPASS=1, TICKET_WAIT=spin"
	check safety-3t-b1-spin pass "-DNT=3 -DNACQ=1 -DBYPASS=1 -DWAIT_SPIN=1" "$SAFE" "$M" \
		"3 threads x 1, TICKET_BYPASS=1, TICKET_WAIT=spin"
fi

# The active set (TICKET_ACTIVE): an outsider gives back a lock it could
# keep, once per acquisition, and goes to the gate (only time).
check safety-2t-b1-active pass "-DNT=2 -DNACQ=2 -DBYPASS=1 -DACTIVE=1" "$SAFE" "$M" \
	"2 threads x 2, TICKET_BYPASS=1, active set's give-back: mutual exclusion, tickets, bypass bound"
if [ $quick -eq 0 ]; then
	check safety-3t-b1-active pass "-DNT=3 -DNACQ=1 -DBYPASS=1 -DACTIVE=1" "$SAFE" "$M" \
		"3 threads x 1, TICKET_BYPASS=1, active set's give-back"
	check progress-2t-b1-active pass "-DNT=2 -DNACQ=2 -DBYPASS=1 -DACTIVE=1 -DPROGRESS" "$LIVE" "-a -f $M" \
		"2 threads x 2, active set's give-back: every lock() returns (LTL, weak fairness)"
fi

# The real model: progress under weak fairness, naps as the C.
check progress-2t-b1 pass "-DNT=2 -DNACQ=2 -DBYPASS=1 -DPROGRESS" "$LIVE" "-a -f $M" \
	"2 threads x 2: every lock() returns (LTL, weak fairness)"
if [ $quick -eq 0 ]; then
	check progress-3t-b1 pass "-DNT=3 -DNACQ=1 -DBYPASS=1 -DPROGRESS" "$LIVE" "-a -f $M" \
		"3 threads x 1: every lock() returns (LTL, weak fairness)"
	check progress-2t-strict pass "-DNT=2 -DNACQ=2 -DBYPASS=0 -DPROGRESS" "$LIVE" "-a -f $M" \
		"2 threads x 2, strict FIFO: every lock() returns (LTL, weak fairness)"
fi

# No lost wake-up.  In the queue: no nap needed, with the unlock as the C.
check wakeup-queue-3t pass "-DNT=3 -DNACQ=1 -DTIMEOUT_QUEUE=0" "$SAFE" "$M" \
	"3 threads x 1, sleeps in the queue never time out (unlock as the C): none left asleep"
if [ $quick -eq 0 ]; then
	check wakeup-queue-2t3 pass "-DNT=2 -DNACQ=3 -DTIMEOUT_QUEUE=0" "$SAFE" "$M" \
		"2 threads x 3, sleeps in the queue never time out (unlock as the C): none left asleep"
	# Every sleep in the queue and as head, with R1 closed.
	check wakeup-3t pass "-DNT=3 -DNACQ=1 $NOWAIT" "$SAFE" "$M" \
		"3 threads x 1, no sleep times out, locked unlock: none left asleep"
	check wakeup-3t-strict pass "-DNT=3 -DNACQ=1 -DBYPASS=0 $NOWAIT" "$SAFE" "$M" \
		"3 threads x 1, strict FIFO, no sleep times out, locked unlock: none left asleep"
	check wakeup-3t-live pass "-DNT=3 -DNACQ=1 -DPROGRESS $NOWAIT" "$LIVE" "-a -f $M" \
		"3 threads x 1, no sleep times out, locked unlock: every lock() returns"
fi

# Outsiders: no sleep outside a full queue relies on its nap (R2 fixed: an
# escape from a full queue wakes them, as a take does).  Thread 0 locks
# twice, the others once: a run where an outsider sleeps while the last in
# line escapes (mut-escape-no-wake-outside shows it).  (3, 1, 1) took 145
# million states with the compare-and-swap fast path, and over 400 million
# (19 GB, stopped) with the exchange's: (2, 1, 1) takes 115 million.
if [ $quick -eq 0 ]; then
	check wakeup-outside-3t-q2 pass "-DNT=3 -DNACQ=1 -DNACQ0=2 -DQCAP=2 -DTIMEOUT_OUTSIDE=0" "$SAFE" "$M" \
		"3 threads (2, 1, 1 acquisitions), TICKET_QUEUE=2, sleeps outside never time out: none left asleep"
fi

# fork() (fork.c): thread 0 forks when the lock is free; the child's queue is
# emptied if another thread had noted the lock.  -E: the other threads stop
# mid-protocol in the child, which SPIN would call invalid end states; the
# child's own end state is checked by init's assertions, its lock() by the
# LTL claim.
check fork-2t-b1 pass "-DNT=2 -DNACQ=2 -DBYPASS=1 -DFORK" "$SAFE" "-E $M" \
	"2 threads x 2, thread 0 may fork: the child's lock ends free with an empty queue"
check fork-2t-strict-live pass "-DNT=2 -DNACQ=2 -DBYPASS=0 -DFORK -DPROGRESS" "$LIVE $big" "-a -f -E $M" \
	"2 threads x 2, strict FIFO, thread 0 may fork: every lock() of the child returns"
if [ $quick -eq 0 ]; then
	check fork-2t-b1-live pass "-DNT=2 -DNACQ=2 -DBYPASS=1 -DFORK -DPROGRESS" "$LIVE" "-a -f -E $M" \
		"2 threads x 2, thread 0 may fork: every lock() of the child returns"
fi

# The reliances on a nap's timeout (README): each must show its counterexample.
check timeout-R1-head-window fail "-DNT=2 -DNACQ=2 -DTIMEOUT_HEAD=0" "$SAFE" "$M" \
	"R1 (documented, parking.c): the unlock's load before the head's TS_WAKE_HEAD, its store after" \
	"invalid end state"

# I6's counts that have no bound (README): each must show its counterexample.
# Thread 0 takes the lock three times past thread 1's one ticket, one more
# than a watch allows: as head, thread 1 is passed again after its sleep ended
# the watch; with no sleep at all, after an escape did.
check bound-tenure-2t fail "-DNT=2 -DNACQ=1 -DNACQ0=3 -DBYPASS=1 -DTENURE_BOUND=2" "$SAFE" "$M" \
	"a head's tenure has no bound in count: passed again once asleep (TICKET_BYPASS + 1 = 2 asserted)" hseen
if [ $quick -eq 0 ]; then
	check bound-tenure-2t-spin fail "-DNT=2 -DNACQ=1 -DNACQ0=3 -DBYPASS=1 -DTENURE_BOUND=2 -DWAIT_SPIN=1" "$SAFE" "$M" \
		"the same with no sleep (TICKET_WAIT=spin): passed again after an escape" hseen
	check bound-queue-2t-spin fail "-DNT=2 -DNACQ=1 -DNACQ0=5 -DBYPASS=1 -DQCAP=2 -DQUEUE_BOUND=4 -DWAIT_SPIN=1" "$SAFE" "$M" \
		"a ticket's wait has no bound in count, no one asleep: TICKET_QUEUE x (TICKET_BYPASS + 1) = 4 asserted" qseen
	check bound-watch-2t3-trylock fail "-DNT=2 -DNACQ=3 -DBYPASS=1 -DTRYLOCK=1 -DCOUNT_TRYLOCK=1" "$SAFE" "$M" \
		"trylocks pass a watching head past the bound (POSIX): a watch's bound counting them fails" wseen
fi

# Seeded bugs: SPIN must reject each one.
check mut-steal-unbounded fail "-DNT=2 -DNACQ=3 -DBYPASS=1 -DMUT_STEAL_UNBOUNDED" "$SAFE" "$M" \
	"mutation: steal without checking the bypass count" bypassed
check mut-take-keeps-watching fail "-DNT=2 -DNACQ=2 -DBYPASS=1 -DMUT_TAKE_KEEPS_WATCHING" "$SAFE" "$M" \
	"mutation: take_as_head() does not clear TS_WATCHING" watch_on
check mut-keep-uncounted fail "-DNT=2 -DNACQ=1 -DNACQ0=3 -DBYPASS=1 -DMUT_KEEP_UNCOUNTED" "$SAFE" "$M" \
	"mutation: keep_or_give_back() keeps the lock uncounted while the head watches (I3 does not see it)" wseen
check mut-no-wake-next fail "-DNT=3 -DNACQ=1 -DTIMEOUT_QUEUE=0 -DMUT_NO_WAKE_NEXT" "$SAFE" "$M" \
	"mutation: the unlock does not wake on TS_WAKE_NEXT (sleeps in the queue never time out)" "invalid end state"
if [ $quick -eq 0 ]; then
	check mut-escape-not-last fail "-DNT=3 -DNACQ=2 -DBYPASS=1 -DMUT_ESCAPE_NOT_LAST" "$SAFE" "$M" \
		"mutation: escape when not last in line" "has\\["
	check mut-sleepers-two-behind fail "-DNT=3 -DNACQ=2 -DTIMEOUT_QUEUE=0 -DMUT_SLEEPERS_TWO_BEHIND" "$SAFE" "$M" \
		"mutation: take_as_head() drops TS_SLEEPERS with two waiters behind (sleeps in the queue never time out)" \
		"invalid end state"
	check mut-escape-no-wake-outside fail "-DNT=3 -DNACQ=1 -DNACQ0=2 -DQCAP=2 -DTIMEOUT_OUTSIDE=0 -DMUT_ESCAPE_NO_WAKE_OUTSIDE" "$SAFE" "$M" \
		"mutation: escape() from a full queue does not wake the outsiders (R2; sleeps outside never time out)" \
		"invalid end state"
	check mut-escape-keeps-watching fail "-DNT=3 -DNACQ=1 -DNACQ0=2 -DBYPASS=1 -DMUT_ESCAPE_KEEPS_WATCHING" "$SAFE" "$M" \
		"mutation: escape() keeps TS_WATCHING and the bypass count (I3)" watch_on
	check mut-fork-note-late fail "-DNT=2 -DNACQ=2 -DBYPASS=1 -DFORK -DMUT_FORK_NOTE_LATE" "$SAFE" "-E $M" \
		"mutation: fork.c's note a step after the ticket is drawn (the C before 2026-12-04): a ghost ticket in the child" \
		"word&255"
	check mut-fork-note-late-strict fail "-DNT=2 -DNACQ=2 -DBYPASS=0 -DFORK -DPROGRESS -DMUT_FORK_NOTE_LATE" "$LIVE" "-a -f -E $M" \
		"mutation: the same in strict FIFO: the child's lock() waits behind the ghost forever" \
		"acceptance cycle"
	check mut-give-back-no-wake fail "-DNT=3 -DNACQ=1 -DBYPASS=0 $NOWAIT -DMUT_GIVE_BACK_NO_WAKE" "$SAFE" "$M" \
		"mutation: a lock given back after the exchange does not wake the head that asked (no sleep times out, locked unlock)" \
		"invalid end state"
	check mut-join-no-cap fail "-DNT=3 -DNACQ=2 -DBYPASS=1 -DQCAP=2 -DMUT_JOIN_NO_CAP" "$SAFE" "$M" \
		"mutation: join the queue without checking its capacity" queue_len
fi

echo
printf '%-28s %-5s %-7s %-10s %6s  %-12s %s\n' configuration want errors states time verdict "error found"
cat "$table"
echo "verify.sh: $ran configurations run, $failures with an unexpected verdict"
[ $failures -eq 0 ]
