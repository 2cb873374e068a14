#!/bin/bash
# tsan-check.sh - what 'make check' runs for each test in a ThreadSanitizer
# build (./configure --enable-sanitizers=tsan sets it as LOG_COMPILER).
#
# Criterion cannot run under ThreadSanitizer: its BoxFort arena fails to map
# ("Could not initialize inheritable arena", Snaipe/Criterion#274, open).  So
# instead of running a Criterion test binary, we run, for each, the
# TSan-instrumented probe programs its tests drive, with the same modes and
# similar sizes, and require exit status 0 and not one ThreadSanitizer report.
# Tests with no equivalent here are skipped (exit 77), saying so.
#
# LD_PRELOAD is libtsan.so:libticketspin.so (AM_TESTS_ENVIRONMENT): TSan's
# pthread_spin_* interceptors run first and call ours.  misuseprobe runs with
# TSAN_OPTIONS=report_mutex_bugs=0:report_destroy_locked=0, since it misuses locks on purpose and TSan
# would (rightly) report that too; data races are still reported, except the
# one probe_destroy_held() commits on purpose (destroy while a thread waits).
#
#   tsan-check.sh ./test_NAME
set -u
test_name=$(basename "${1:?usage: tsan-check.sh ./test_NAME}")
here=$(pwd)
srcdir=$(cd "$(dirname "$0")" && pwd)
runs=0
failures=()

mapfile -t modes < <(sed -n 's/^[[:space:]]*X(\([a-z_0-9]*\), MODE_ENV(\(.*\)))[[:space:]\\]*$/\1 \2/p' \
	"$srcdir/modes.h" | tr -d '",')

# fail WHAT [FIRST_MESSAGE]: a failure, named now and again in the summary,
# the log's last lines (what a truncated log keeps), with its first message
fail() {
	failures+=("$1${2:+: $2}")
	echo "FAIL $1"
}

# check NAME [ENV...] -- PROGRAM ARGS... ; then optional: expect STRING
check() {
	local name=$1 envs=() out err rc
	shift
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	runs=$((runs + 1))
	err=$(mktemp)
	out=$(env "${envs[@]}" "$@" 2>"$err")
	rc=$?
	if [ $rc -ne 0 ] || grep -q "ThreadSanitizer" "$err"; then
		fail "$name (status $rc): ${envs[*]} $*" \
		     "$(tail -n 1 <<<"$out"): $(grep -m 1 -E 'ThreadSanitizer|stress|ticketspin' "$err" ||
		                               head -n 1 "$err")"
		echo "$out"
		cat "$err"
	else
		echo "ok   $name: $(tail -n 1 <<<"$out")"
	fi
	last_out=$out
	last_err=$(cat "$err")
	rm -f "$err"
}

expect() { # WHERE STRING
	if ! grep -qF -- "$2" <<<"$([ "$1" = out ] && echo "$last_out" || echo "$last_err")"; then
		fail "expected on std$1: $2"
	fi
}

for_each_mode() { # FUNCTION
	local entry name envs
	for entry in "${modes[@]}"; do
		read -r name envs <<<"$entry"
		read -r -a mode_env <<<"$envs"
		"$1" "$name"
	done
}

mutex() {
	check "mutex $1" "${mode_env[@]}" -- "$here/lockprobe" hammer 4 3 5000
}
fifo() {
	check "fifo $1" "${mode_env[@]}" TICKET_QUEUE=0 -- "$here/lockprobe" fifo 6
	expect out "order 0 1 2 3 4 5"
}
wrap() {
	check "wrap $1" "${mode_env[@]}" -- "$here/lockprobe" wrap 4 2000
}
stress() {
	local t n spin=0
	[[ " ${mode_env[*]} " == *" TICKET_WAIT=spin "* ]] && spin=1
	for t in 1 2 3 5 8 16; do
		n=$((20000 / t))
		[ $spin -eq 1 ] && [ "$t" -gt 2 ] && n=$((2000 / t))
		check "stress $1 -t $t" "${mode_env[@]}" -- "$here/spinstress_core" -t "$t" -n "$n" -l 2
		check "stress $1 -t $t" "${mode_env[@]}" -- "$here/spinstress" -t "$t" -n "$n" -l 2
	done
}
pshared() {
	check "pshared $1" "${mode_env[@]}" -- "$here/spinstress" -p 2 -t 2 -n 2000 -l 2 -w 50
	check "pshared $1" "${mode_env[@]}" -- "$here/spinstress" -p 3 -t 3 -n 500 -l 2 -w 50
}

# destroying a lock while a thread waits for it is a race by definition: the
# misuse that probe_destroy_held() commits on purpose, and only that, is suppressed
suppressions=$(mktemp)
trap 'rm -f "$suppressions"' EXIT
echo "race:probe_destroy_held" >"$suppressions"
misuse=(TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}report_mutex_bugs=0:report_destroy_locked=0:suppressions=$suppressions")
case "$test_name" in
test_interpose)
	# glibc's unlock returns 0 on a free lock; ours, called by TSan's interceptor,
	# EPERM when asked to check (TICKET_CHECK_UNLOCK=1: the fast path does not)
	check interpose "${misuse[@]}" TICKET_CHECK_UNLOCK=1 -- "$here/misuseprobe" unlock
	expect out "unlock of a fresh lock: EPERM"
	expect err "ticketspin: misuse: pthread_spin_unlock("
	;;
test_mutex) for_each_mode mutex ;;
test_fifo)
	for_each_mode fifo
	check "progress" -- "$here/lockprobe" progress 8 300
	check "progress shared" -- "$here/lockprobe" progress 8 300 shared
	;;
test_wrap) for_each_mode wrap ;;
test_misuse)
	check "misuse unlock" "${misuse[@]}" TICKET_CHECK_UNLOCK=1 -- "$here/misuseprobe" unlock
	expect out "1000 of 1000 returned EPERM"
	expect err "returned EPERM, lock left unchanged"
	check "misuse destroy" "${misuse[@]}" -- "$here/misuseprobe" destroy
	expect err "1 thread waiting); returned 0 as glibc does"
	check "misuse flood" "${misuse[@]}" TICKET_CHECK_UNLOCK=1 -- "$here/misuseprobe" flood 100
	expect err "earlier reports suppressed by the rate limit"
	# held, 62 phantom tickets in the queue: the most a waiter can find ahead
	check "misuse suspect" "${misuse[@]}" TICKET_WAIT=yield TICKET_QUEUE=0 -- \
		"$here/misuseprobe" suspect 0x3e000030 1
	expect out ": acquired"
	expect err "tickets ahead of ours"
	check "misuse foreign" "${misuse[@]}" -- "$here/misuseprobe" foreign 1
	;;
test_stress) for_each_mode stress ;;
test_pshared)
	for_each_mode pshared
	check "park check" TICKET_WAIT=park TICKET_SPIN=1 TICKET_QUEUE=0 -- \
		"$here/spinstress" -P -p 2 -t 3 -n 300 -w 50
	check "park check default" TICKET_WAIT=park TICKET_SPIN=1 -- \
		"$here/spinstress" -P -p 2 -t 3 -n 300 -w 50
	;;
test_stall)
	# long waits: reported once per waiter, the lock still handed over in order
	check "stall in line" TICKET_STALL_MS=200 TICKET_QUEUE=0 -- "$here/lockprobe" hold 3 800
	expect err "ticketspin: stall: pthread_spin_lock("
	check "stall default" TICKET_STALL_MS=200 -- "$here/lockprobe" hold 3 800
	expect err "ticketspin: stall: pthread_spin_lock("
	# two in the queue (TICKET_QUEUE=2), two outside it
	check "stall outside" TICKET_STALL_MS=200 TICKET_QUEUE=2 -- "$here/lockprobe" hold 4 800
	expect err "outside a full line"
	;;
test_liveness)
	# churn's invariants under TSan (no timing bounds here: TSan is slow)
	check "churn" -- "$here/../examples/churn" --seconds 1 --processes 2 --threads 256
	expect out "invariants=ok"
	# contended threads beside two CPU hogs, killed however this ends
	hogs=()
	for _ in 1 2; do (while :; do :; done) & hogs+=($!); done
	trap 'kill "${hogs[@]}" 2>/dev/null; rm -f "$suppressions"' EXIT
	for t in 2 4; do
		check "outside load, $t threads" -- "$here/../examples/semaphore" --threads $t \
			--seconds 1 --no-latency
		expect out "invariants=ok"
	done
	kill "${hogs[@]}" 2>/dev/null
	;;
*)
	echo "$test_name: not run under ThreadSanitizer (Criterion cannot run there," \
	     "Snaipe/Criterion#274; tests/tsan-check.sh has no equivalent for it)"
	exit 77
	;;
esac
for f in "${failures[@]}"; do
	echo "failed: $f"
done
echo "$test_name under ThreadSanitizer: $runs runs, ${#failures[@]} failed"
[ ${#failures[@]} -eq 0 ]
