#!/bin/bash
# churn-bench.sh LIB CHURN [OUTDIR] - the churn scenario of 'make bench'
# (issue 9): examples/churn, stress-ng's pthread stressor pattern, with
# glibc's spinlock, with pthread_mutex (no preload) and with LIB preloaded,
# interleaved, each run under timeout(1), and a table of the median and the
# slowest run of each: wall time, user and system CPU, threads created per
# second, fairness between the processes, and the ratios to glibc's median.
#
# Knobs (environment):
#   CHURN_RUNS       runs per mode (5; the target is checked over 50)
#   CHURN_SECONDS    length of one run (2)
#   CHURN_PROCESSES  processes (8, as stress-ng --pthread 8)
#   CHURN_THREADS    threads per round (1024, stress-ng's default)
#   CHURN_TIMEOUT    seconds before a run is killed and reported (10 x SECONDS + 30)
#   CHURN_LIMIT      the target: no ticketspin run's wall or user CPU above
#                    LIMIT x glibc's median (1.5)
#   CHURN_FLOOR      user CPU below this many seconds never misses the target (0.05)
#
# Every run is checked: exit status 0 (invariants held), not killed by the
# timeout, and the provider is libticketspin.so under the preload and glibc
# otherwise.  Exit status: 0 all runs good and the target met, 1 otherwise
# (the table is printed either way), 2 usage.
set -u
lib=${1:?usage: churn-bench.sh LIB CHURN [OUTDIR]}
churn=${2:?usage: churn-bench.sh LIB CHURN [OUTDIR]}
out=${3:-bench-out/churn}
runs=${CHURN_RUNS:-5}
seconds=${CHURN_SECONDS:-2}
processes=${CHURN_PROCESSES:-8}
threads=${CHURN_THREADS:-1024}
limit=${CHURN_LIMIT:-1.5}
floor=${CHURN_FLOOR:-0.05}
timeout_s=${CHURN_TIMEOUT:-$(awk -v s="$seconds" 'BEGIN { printf "%d", 10 * s + 30 }')}
time_cmd=/usr/bin/time

[ -f "$lib" ] || { echo "churn-bench: no library at $lib" >&2; exit 2; }
[ -x "$churn" ] || { echo "churn-bench: no churn program at $churn" >&2; exit 2; }
[ -x "$time_cmd" ] || { echo "churn-bench: $time_cmd missing (Debian package 'time'; ./bootstrap --deps)" >&2; exit 2; }
mkdir -p "$out/logs" || exit 2
csv=$out/runs.csv
summary=$out/summary.txt

modes=(glibc-spin glibc-mutex ticketspin)
args=(--threads "$threads" --seconds "$seconds" --processes "$processes" --csv)

# run_one MODE RUN: one run, one line appended to runs.csv.
#   mode,run,status,wall,user,sys,throughput,fairness,provider,note
run_one() {
	local mode=$1 run=$2 log=$out/logs/$1-$2 cmd=() status note="" provider want
	case $mode in
	glibc-spin)  cmd=(env -u LD_PRELOAD "$churn" "${args[@]}"); want=libc.so ;;
	glibc-mutex) cmd=(env -u LD_PRELOAD "$churn" "${args[@]}" --mutex); want=libc.so ;;
	ticketspin)  cmd=(env LD_PRELOAD="$lib" TICKET_VERBOSE=1 "$churn" "${args[@]}"); want=libticketspin.so ;;
	esac
	# time(1) outside timeout(1): a killed run still has its wall and CPU time.
	# timeout(1) signals its whole process group, so churn's children too.
	"$time_cmd" -f '%e %U %S' -o "$log.time" \
		timeout -k 5 "$timeout_s" "${cmd[@]}" >"$log.out" 2>"$log.err"
	status=$?
	read -r wall user sys < <(tail -n 1 "$log.time")
	provider=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i }
		NR == 2 { print $col["provider"] }' "$log.out")
	if [ $status -eq 124 ] || [ $status -eq 137 ]; then
		note="killed after ${timeout_s} s (hang?)"
	elif [ $status -ne 0 ]; then
		note="exit status $status"
	elif [[ "$provider" != *"$want"* ]]; then
		note="provider $provider, expected $want"
	elif [ "$mode" = ticketspin ] && ! grep -q '^ticketspin: delay=' "$log.err"; then
		note="no TICKET_VERBOSE line: was the library loaded?"
	fi
	awk -F, -v mode="$mode" -v run="$run" -v wall="$wall" -v user="$user" -v sys="$sys" \
	    -v note="$note" -v status="$status" '
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i }
		NR == 2 { tp = $col["throughput"]; fair = $col["fairness"]; prov = $col["provider"] }
		END { printf "%s,%d,%s,%s,%s,%s,%s,%s,%s,%s\n", mode, run, status, wall, user, sys,
		             tp == "" ? "nan" : tp, fair == "" ? "nan" : fair, prov, note }' \
		"$log.out" >>"$csv"
	[ -z "$note" ] || echo "churn-bench: $mode run $run: $note (logs: $log.*)" >&2
}

echo "mode,run,status,wall_s,user_s,sys_s,threads_per_s,fairness,provider,failure" >"$csv"
echo "churn: $processes processes, up to $threads threads per round, $seconds s per run," \
     "$runs runs per mode, interleaved; each run killed after $timeout_s s"
echo "   command: $churn ${args[*]}"
for ((run = 1; run <= runs; run++)); do
	# each repeat starts from another mode, so drift hits all alike
	for ((k = 0; k < ${#modes[@]}; k++)); do
		run_one "${modes[$(((run + k) % ${#modes[@]}))]}" "$run"
	done
	printf '.' >&2
done
echo >&2

# The table: per mode, the median and the largest of each column; a failed
# run counts in the wall and CPU columns (a hang is the slowest run), not in
# throughput or fairness.
awk -F, -v limit="$limit" -v floor="$floor" -v order="${modes[*]}" '
function sort(a, n,   i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
}
function median(a, n) { sort(a, n); return n == 0 ? "nan" : n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
function largest(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] > m) m = a[i]; return n ? m : "nan" }
function copy(src, m, dst, n,   i, k) { n = 0; for (i = 1; i <= cnt[m]; i++) if ((m, i) in src) dst[++n] = src[m, i]; return n }
function stat(src, m, what,   tmp, n) { delete tmp; n = copy(src, m, tmp); return what == "med" ? median(tmp, n) : largest(tmp, n) }
NR == 1 { next }
{
	m = $1; i = ++cnt[m]
	wall[m, i] = $4; user[m, i] = $5; sys[m, i] = $6
	if ($10 == "") { tp[m, i] = $7; fair[m, i] = $8 } else failed[m]++
}
END {
	n = split(order, ms, " ")
	gw = stat(wall, "glibc-spin", "med"); gu = stat(user, "glibc-spin", "med")
	printf "%-12s %4s %6s %9s %9s %9s %9s %8s %8s %12s %8s %11s %11s\n", "mode", "runs", "failed",
	       "wall med", "wall max", "user med", "user max", "sys med", "sys max",
	       "threads/s", "fairness", "wall max/g", "user max/g"
	for (k = 1; k <= n; k++) {
		m = ms[k]
		wmax = stat(wall, m, "max"); umax = stat(user, m, "max")
		printf "%-12s %4d %6d %9.2f %9.2f %9.3f %9.3f %8.2f %8.2f %12.0f %8.2f %11.2f %11.2f\n",
		       m, cnt[m], failed[m], stat(wall, m, "med"), wmax, stat(user, m, "med"), umax,
		       stat(sys, m, "med"), stat(sys, m, "max"), stat(tp, m, "med"), stat(fair, m, "med"),
		       (gw > 0 ? wmax / gw : 0), (gu > 0 ? umax / gu : 0)
	}
	printf "(medians over the runs; max: the slowest run; threads/s and fairness (min/max of the\n"
	printf " processes'\'' threads created): medians of the good runs; x/g: ratio to glibc-spin'\''s median)\n"
	# the target: no ticketspin run above limit x glibc-spin median, in wall or user CPU
	bad = 0
	for (i = 1; i <= cnt["ticketspin"]; i++) {
		if (wall["ticketspin", i] > limit * gw) bad++
		else if (user["ticketspin", i] > floor && user["ticketspin", i] > limit * gu) bad++
	}
	printf "target: %d of %d ticketspin runs above %.2fx glibc'\''s median wall (%.2f s) or user CPU (%.3f s, floor %.2f s): %s\n",
	       bad, cnt["ticketspin"], limit, gw, gu, floor, (bad == 0 && failed["ticketspin"] == 0 ? "met" : "MISSED")
	exit bad > 0 || failed["ticketspin"] + failed["glibc-spin"] + failed["glibc-mutex"] > 0
}' "$csv" | tee "$summary"
status=${PIPESTATUS[0]}
echo "churn-bench: every run in $csv, logs in $out/logs/"
exit "$status"
