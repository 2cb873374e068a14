#!/bin/bash
# soak.sh LIB [OUTDIR] - 'make soak': real Debian programs that call
# pthread_spin_* (they import it: objdump -T), each run SOAK_RUNS times with
# glibc's spinlock and SOAK_RUNS times with LIB preloaded, interleaved, each
# run under timeout(1) and measured by time(1).  Prints a table (median and
# slowest wall time and user CPU of each) and fails when a run under the
# preload is slower than SOAK_LIMIT x glibc's median, in wall time or in user
# CPU, or when any run fails.
#
# The programs (see doc/reliability.md, "Soak"):
#   stress-ng --pthread 8   issue 9's program: 8 processes create rounds of
#                           1024 threads that each take a process-shared
#                           spinlock once, while the main thread polls it
#   stress-ng --procfs 2    4 threads per process read /proc files, taking a
#                           spinlock around the shared path name
#   unbound-host            libunbound (its caches' locks are spinlocks)
#                           answering from a local zone: no network
# The stress-ng stressors do a fixed amount of work (--pthread-ops,
# --procfs-ops; -t only as a backstop), not a fixed time: a time-bounded
# stressor uses whatever CPU it is given, so its CPU time would measure the
# machine's other load rather than the lock, and its wall time is fixed.
#
# Knobs (environment): SOAK_RUNS (20), SOAK_PTHREAD_OPS (12000 threads,
# about 2 s here), SOAK_PROCFS_OPS (600, about 2.5 s), SOAK_TIMEOUT (60 s per
# run), SOAK_LIMIT (1.5), SOAK_USER_FLOOR (0.05 s) and
# SOAK_WALL_FLOOR (0.1 s): times below the floors never fail (near-zero
# medians would turn noise into failures), SOAK_ONLY (a regular expression
# choosing programs by name).
#
# 'soak.sh --table OUTDIR/runs.csv' prints the table of an earlier run again.
#
# Each preloaded run must print the library's TICKET_VERBOSE line and each
# glibc run must not, so a preload that did not apply is a failure.  Exit
# status: 0 pass, 1 fail, 2 usage or a program missing (./bootstrap --deps).
set -u
lib=${1:?usage: soak.sh LIB [OUTDIR]}
out=${2:-soak-out}
runs=${SOAK_RUNS:-20}
pthread_ops=${SOAK_PTHREAD_OPS:-12000}
procfs_ops=${SOAK_PROCFS_OPS:-600}
timeout_s=${SOAK_TIMEOUT:-60}
limit=${SOAK_LIMIT:-1.5}
user_floor=${SOAK_USER_FLOOR:-0.05}
wall_floor=${SOAK_WALL_FLOOR:-0.1}
only=${SOAK_ONLY:-.}
time_cmd=/usr/bin/time

# table CSV: the table of a soak's runs.csv, on stdout; status 1 when a
# ticketspin run is above the limits or any run failed.
table() {
	awk -F, -v limit="$limit" -v uf="$user_floor" -v wf="$wall_floor" '
function sort(a, n,   i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
}
function median(a, n) { sort(a, n); return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
NR == 1 { next }
!($1 in seen) { seen[$1] = 1; order = order " " $1 }
{
	k = $1 SUBSEP $2; i = ++cnt[k]
	wall[k, i] = $5; user[k, i] = $6; sys[k, i] = $7
	if ($8 != "") failed[k]++
}
function column(src, k, what,   tmp, i, n, m) {
	n = cnt[k]
	for (i = 1; i <= n; i++) tmp[i] = src[k, i]
	if (n == 0) return 0
	if (what == "med") return median(tmp, n)
	m = tmp[1]; for (i = 2; i <= n; i++) if (tmp[i] > m) m = tmp[i]
	return m
}
END {
	np = split(order, progs, " ")
	printf "%-18s %-10s %4s %6s %8s %8s %8s %8s %7s %7s %9s %9s  %s\n", "program", "lib", "runs",
	       "failed", "wall med", "wall max", "user med", "user max", "sys med", "sys max",
	       "wall max/g", "user max/g", "verdict"
	bad_total = 0
	for (p = 1; p <= np; p++) {
		g = progs[p] SUBSEP "glibc"; t = progs[p] SUBSEP "ticketspin"
		gw = column(wall, g, "med"); gu = column(user, g, "med")
		wall_limit = limit * gw > wf ? limit * gw : wf
		user_limit = limit * gu > uf ? limit * gu : uf
		bad = failed[g] + failed[t]
		for (i = 1; i <= cnt[t]; i++)
			if (wall[t, i] > wall_limit || user[t, i] > user_limit) bad++
		bad_total += bad
		for (s = 1; s <= 2; s++) {
			k = s == 1 ? g : t
			printf "%-18s %-10s %4d %6d %8.2f %8.2f %8.3f %8.3f %7.2f %7.2f %9.2f %9.2f  %s\n",
			       s == 1 ? progs[p] : "", s == 1 ? "glibc" : "ticketspin", cnt[k], failed[k],
			       column(wall, k, "med"), column(wall, k, "max"), column(user, k, "med"),
			       column(user, k, "max"), column(sys, k, "med"), column(sys, k, "max"),
			       (gw > 0 ? column(wall, k, "max") / gw : 0),
			       (gu > 0 ? column(user, k, "max") / gu : 0),
			       s == 1 ? "" : bad ? "FAIL: " bad " runs failed or above the limits" \
			                         : sprintf("pass (limits: %.2f s wall, %.3f s user)", wall_limit, user_limit)
		}
	}
	printf "(seconds; max: the slowest run; x/g: ratio to glibc'\''s median; a ticketspin run fails\n"
	printf " above %.2fx glibc'\''s median wall or user CPU, floors %.2f s wall and %.2f s user)\n", limit, wf, uf
	exit bad_total > 0
}' "$1"
}

if [ "$lib" = --table ]; then # soak.sh --table CSV: the table of an earlier run
	table "${2:?usage: soak.sh --table CSV}"
	exit
fi
case $lib in /*) ;; *) lib=$PWD/$lib ;; esac
[ -f "$lib" ] || { echo "soak: no library at $lib" >&2; exit 2; }
for tool in "$time_cmd" stress-ng unbound-host timeout; do
	command -v "$tool" >/dev/null || {
		echo "soak: $tool is missing: run ./bootstrap --deps" >&2; exit 2; }
done
mkdir -p "$out/logs" || exit 2
out=$(cd "$out" && pwd)
work=$(mktemp -d) || exit 2
trap 'rm -rf "$work"' EXIT

# libunbound answers from a static local zone: never a packet on the network.
cat >"$work/unbound.conf" <<'EOF'
server:
    do-not-query-localhost: yes
    local-zone: "soak.test." static
    local-data: "a.soak.test. 300 IN A 127.0.0.1"
    local-data: "a.soak.test. 300 IN AAAA ::1"
    local-data: "a.soak.test. 300 IN MX 10 a.soak.test."
EOF

# name|command (run in $work; stress-ng writes nothing for these stressors)
programs=(
	"stress-ng-pthread|stress-ng --pthread 8 --pthread-ops $pthread_ops -t 600"
	"stress-ng-procfs|stress-ng --procfs 2 --procfs-ops $procfs_ops -t 600"
	"unbound-host|unbound-host -C $work/unbound.conf a.soak.test"
)
selected=()
for entry in "${programs[@]}"; do
	[[ ${entry%%|*} =~ $only ]] && selected+=("$entry")
done
[ ${#selected[@]} -gt 0 ] || { echo "soak: SOAK_ONLY=$only chooses no program" >&2; exit 2; }

csv=$out/runs.csv
echo "program,lib,run,status,wall_s,user_s,sys_s,failure" >"$csv"

# run_one NAME LIB(glibc|ticketspin) RUN COMMAND...
run_one() {
	local name=$1 which=$2 run=$3 log=$out/logs/$1-$2-$3 status note="" env_cmd
	shift 3
	if [ "$which" = ticketspin ]; then
		env_cmd=(env LD_PRELOAD="$lib" TICKET_VERBOSE=1)
	else
		env_cmd=(env -u LD_PRELOAD -u TICKET_VERBOSE)
	fi
	# time(1) outside timeout(1), so a killed run is measured too; timeout(1)
	# kills the program's whole process group (stress-ng's stressors too).
	(cd "$work" && "$time_cmd" -f '%e %U %S' -o "$log.time" \
		timeout -k 5 "$timeout_s" "${env_cmd[@]}" "$@" >"$log.out" 2>"$log.err")
	status=$?
	read -r wall user sys < <(tail -n 1 "$log.time")
	if [ $status -eq 124 ] || [ $status -eq 137 ]; then
		note="killed after $timeout_s s"
	elif [ $status -ne 0 ]; then
		note="exit status $status"
	elif [ "$which" = ticketspin ] && ! grep -q '^ticketspin: delay=' "$log.err"; then
		note="no TICKET_VERBOSE line: the preload did not apply"
	elif [ "$which" = glibc ] && grep -q '^ticketspin:' "$log.err"; then
		note="libticketspin.so was loaded in a glibc run"
	fi
	echo "$name,$which,$run,$status,$wall,$user,$sys,$note" >>"$csv"
	[ -z "$note" ] || echo "soak: $name under $which, run $run: $note (logs: $log.*)" >&2
}

start=$SECONDS
echo "soak: ${#selected[@]} programs, $runs runs each with glibc and with $lib, interleaved;" \
     "each run killed after $timeout_s s"
for ((run = 1; run <= runs; run++)); do
	for entry in "${selected[@]}"; do
		name=${entry%%|*}
		read -r -a cmd <<<"${entry#*|}"
		# alternate which goes first, so drift of the machine hits both alike
		if ((run % 2)); then order=(glibc ticketspin); else order=(ticketspin glibc); fi
		for which in "${order[@]}"; do
			run_one "$name" "$which" "$run" "${cmd[@]}"
		done
	done
	printf '.' >&2
done
echo >&2

table "$csv" | tee "$out/summary.txt"
status=${PIPESTATUS[0]}
echo "soak: $((SECONDS - start)) s; every run in $csv, logs in $out/logs/;" \
     "$( [ "$status" -eq 0 ] && echo PASS || echo FAIL)"
exit "$status"
