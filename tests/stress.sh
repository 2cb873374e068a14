#!/bin/bash
# stress.sh - the long stress run ('make stress'; 'make check' runs a short one).
#
#   stress.sh BUILDDIR     (run with LD_PRELOAD set to the library, as 'make stress' does)
#
# Every mode and policy of tests/modes.h, threads 1..16, through the preloaded
# pthread_spin_* (spinstress) and with the core linked in (spinstress_core);
# then process-shared locks (2..4 processes x 1..4 threads) in every mode, and
# the park check (waiters asleep in several processes, all woken).
# STRESS_SCALE (default 5: about 3 minutes on 2 cores) multiplies the
# iteration counts; STRESS_SEED picks
# the random think times (default: a new seed per run, printed).
# STRESS_RUN_LIMIT (default 60 s; the slowest run here takes about 6) is
# each run's watchdog: a run still going then reports the lock words and
# fails (and `timeout` kills it 30 s later if the report hangs too): a stall
# that ends by itself (247 s once, a sleep in the active set's line with no
# deadline, under the 600 s watchdog of before) is a hang to a user.
set -u
builddir=${1:?usage: stress.sh BUILDDIR}
srcdir=$(cd "$(dirname "$0")" && pwd)
scale=${STRESS_SCALE:-5}
seed=${STRESS_SEED:-$RANDOM}
run_limit=${STRESS_RUN_LIMIT:-60}
failed=0
runs=0
start=$SECONDS

# name and environment of each mode, from modes.h (one source of truth)
mapfile -t modes < <(sed -n 's/^[[:space:]]*X(\([a-z_0-9]*\), MODE_ENV(\(.*\)))[[:space:]\\]*$/\1 \2/p' \
	"$srcdir/modes.h" | tr -d '",')
if [ "${#modes[@]}" -eq 0 ]; then
	echo "stress.sh: no modes found in $srcdir/modes.h" >&2
	exit 2
fi

run() { # NAME ENV... -- PROGRAM ARGS...
	local name=$1 envs=() out rc
	shift
	while [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	runs=$((runs + 1))
	out=$(timeout -k 5 $((run_limit + 30)) env "${envs[@]}" "$@" -s "$seed" 2>&1)
	rc=$?
	[ $rc -eq 124 ] && out+=$'\n'"killed after $((run_limit + 30)) s: no watchdog report"
	if [ $rc -eq 0 ]; then
		printf 'PASS %-12s %s\n' "$name" "$(tail -n 1 <<<"$out")"
	else
		failed=$((failed + 1))
		printf 'FAIL %-12s status %d: %s\n%s\n' "$name" "$rc" "$*" "$out"
	fi
}

echo "stress.sh: seed $seed, scale $scale, ${#modes[@]} modes"
for entry in "${modes[@]}"; do
	read -r name envs <<<"$entry"
	read -r -a env_array <<<"$envs"
	spin=0
	[[ " $envs " == *" TICKET_WAIT=spin "* ]] && spin=1
	for threads in $(seq 1 16); do
		total=$((200000 * scale))
		# waiters that never yield, more of them than CPUs: each hand-over
		# may wait for a time slice, so fewer acquisitions
		[ $spin -eq 1 ] && [ "$threads" -gt 2 ] && total=$((20000 * scale))
		n=$((total / threads))
		for prog in spinstress spinstress_core; do
			run "$name" "${env_array[@]}" -- "$builddir/$prog" -t "$threads" -n "$n" \
				-l $((threads % 3 + 1)) -w "$run_limit"
		done
	done
	for procs in 2 3 4; do
		for threads in 1 2 4; do
			n=$((20000 * scale / threads))
			[ $spin -eq 1 ] && n=$((2000 * scale / threads))
			run "$name" "${env_array[@]}" -- "$builddir/spinstress" -p "$procs" \
				-t "$threads" -n "$n" -l 2 -w "$run_limit"
		done
	done
done
for procs in 2 3 4; do
	for i in 1 2 3; do
		run park-check TICKET_WAIT=park TICKET_SPIN=1 TICKET_QUEUE=0 -- \
			"$builddir/spinstress" -P -p "$procs" -t 3 -n $((1000 * scale)) -w "$run_limit"
	done
done
echo "stress.sh: $runs runs, $failed failed, $((SECONDS - start)) s (seed $seed)"
[ $failed -eq 0 ]
