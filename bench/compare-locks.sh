#!/bin/bash
# compare-locks.sh - ticketspin side by side with the locks a user would pick
# instead, on one contended lock: the harness 'locks' run for every lock at
# every thread count and amount of work between acquisitions, repeated, the
# modes interleaved run by run so that drift of the machine hits all alike.
#
#   compare-locks.sh --harness PATH --lib PATH [options]
#
# Prints, per amount of work, tables of throughput, ratio to glibc, fairness
# and CPU use (median [slowest-fastest] of the runs), and writes into the
# output directory NAME.csv (every run), NAME-summary.csv (one row per
# work x threads x lock), NAME.png (throughput against threads) and
# NAME-tails.png (each lock's lock-wait percentiles, per work and threads).
# Exit status: 0 every run succeeded; 1 some failed (reported, kept out of the
# figures, their output in NAME-logs/); 2 usage.
set -u -o pipefail
PROG=compare-locks
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench-lib.sh
. "$here/bench-lib.sh"

usage() {
	cat <<EOF
usage: $PROG --harness PATH --lib PATH [options]

  --harness PATH    the 'locks' program (bench/locks)
  --lib PATH        libticketspin.so, preloaded in the ticketspin modes
  --locks LIST      default glibc,ticketspin,mutex,mutex-adaptive,ck-ticket,
                    ck-ticket-pb,ck-mcs,ck-fas (glibc and ticketspin are
                    pthread_spin_* without and with the preload;
                    glibc-pshared and ticketspin-pshared the same locks
                    initialised PTHREAD_PROCESS_SHARED)
  --mode 'NAME TICKET_VAR=VALUE...'
                    add a ticketspin mode with settings of its own (repeatable)
  --threads LIST    thread counts (default 1,2,3,4,8,16)
  --work LIST       iterations of private work between acquisitions (0,100,1000)
  --cs N            writes to the lock's cache line in the critical section (4)
  --seconds S       length of one run (0.5)
  --repeats N       runs per cell, interleaved (5)
  --hogs N          outside load: N CPU-bound hog processes beside the harness
                    for the whole comparison, at our priority (default 0)
  --hog PATH        the hog program (bench/hog); needed with --hogs
  --out DIR         output directory (bench-out)
  --name NAME       file names (default locks, or locks-hogsN)
  --title TEXT      scenario, in the tables' and graph's titles
  --timeout SEC     time limit of one run (default 60)
  --no-plot         no PNG
  -q, --quiet       no progress lines
EOF
}

harness= lib= hog= locks_list=glibc,ticketspin,mutex,mutex-adaptive,ck-ticket,ck-ticket-pb,ck-mcs,ck-fas
threads_list=1,2,3,4,8,16 work_list=0,100,1000 cs=4 seconds=0.5 repeats=5 hogs=0
out_dir=bench-out name= title= timeout_s=60 plot=1 quiet=0 custom=()
while [ $# -gt 0 ]; do
	case $1 in
	--harness) harness=${2:?}; shift 2 ;;
	--lib) lib=${2:?}; shift 2 ;;
	--locks) locks_list=${2:?}; shift 2 ;;
	--mode) custom+=("${2:?}"); shift 2 ;;
	--threads) threads_list=${2:?}; shift 2 ;;
	--work) work_list=${2:?}; shift 2 ;;
	--cs) cs=${2:?}; shift 2 ;;
	--seconds) seconds=${2:?}; shift 2 ;;
	--repeats) repeats=${2:?}; shift 2 ;;
	--hogs) hogs=${2:?}; shift 2 ;;
	--hog) hog=${2:?}; shift 2 ;;
	--out) out_dir=${2:?}; shift 2 ;;
	--name) name=${2:?}; shift 2 ;;
	--title) title=${2:?}; shift 2 ;;
	--timeout) timeout_s=${2:?}; shift 2 ;;
	--no-plot) plot=0; shift ;;
	-q | --quiet) quiet=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; bench_die "unknown option '$1'" ;;
	esac
done

[ -x "$harness" ] || bench_die "--harness: not an executable: '$harness'"
check_list --threads "$threads_list" 1 4096; IFS=, read -r -a threads <<<"$threads_list"
check_list --work "$work_list" 0 100000000; IFS=, read -r -a works <<<"$work_list"
is_uint "$cs" || bench_die "--cs: '$cs' is not a whole number"
is_uint "$repeats" && [ "$repeats" -ge 1 ] || bench_die "--repeats: '$repeats' is not a whole number >= 1"
is_uint "$hogs" || bench_die "--hogs: '$hogs' is not a whole number"
is_uint "$timeout_s" && [ "$timeout_s" -ge 1 ] || bench_die "--timeout: '$timeout_s'"
awk -v s="$seconds" 'BEGIN { exit !(s + 0 >= 0.001) }' || bench_die "--seconds: '$seconds'"
[ "$hogs" -eq 0 ] || [ -x "$hog" ] || bench_die "--hogs $hogs needs --hog PATH (bench/hog)"

available=$("$harness" --list | tr '\n' ' ')
IFS=, read -r -a names <<<"$locks_list"
for n in "${names[@]}"; do add_named_mode "$n" "$available"; done
for spec in "${custom[@]+"${custom[@]}"}"; do add_custom_mode "$spec"; done
[ ${#mode_label[@]} -gt 0 ] || bench_die "no locks to run"
for p in "${mode_preload[@]}"; do
	if [ "$p" = 1 ]; then
		[ -f "$lib" ] || bench_die "--lib: no such file: '$lib' (build the library first)"
		lib="$(cd "$(dirname "$lib")" && pwd -P)/$(basename "$lib")"
	fi
done
collect_sanitizer_env

[ -n "$name" ] || { name=locks; [ "$hogs" -eq 0 ] || name=locks-hogs$hogs; }
[[ $name =~ ^[A-Za-z0-9_.+-]+$ ]] || bench_die "--name: '$name'"
if [ -z "$title" ]; then
	if [ "$hogs" -eq 0 ]; then title="no outside load"
	else title="outside load: $hogs CPU-bound hog process(es) at our priority"; fi
fi
mkdir -p "$out_dir" || bench_die "cannot create $out_dir"
out_dir=$(cd "$out_dir" && pwd -P)
raw_csv=$out_dir/$name.csv summary_csv=$out_dir/$name-summary.csv logs=$out_dir/$name-logs
rm -rf "$logs" "$out_dir/$name.png" "$out_dir/$name-tails.png"

# the tails bench/locks prints, in microseconds, kept with every run
tail_columns=wait_p50,wait_p99,wait_p999,wait_p9999,wait_max,iter_p50,iter_p99,iter_p999,iter_p9999,iter_max

nmodes=${#mode_label[@]}
total_runs=$((nmodes * ${#threads[@]} * ${#works[@]} * repeats))

# ---- outside load: started and always stopped by us ----------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/$PROG.XXXXXX") || exit 2
hog_pids=()
stop_hogs() {
	local p
	for p in "${hog_pids[@]+"${hog_pids[@]}"}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${hog_pids[@]+"${hog_pids[@]}"}"; do wait "$p" 2>/dev/null; done
	hog_pids=()
}
trap 'stop_hogs; rm -rf "$tmp"' EXIT
trap 'echo "$PROG: interrupted" >&2; exit 130' INT TERM HUP
if [ "$hogs" -gt 0 ]; then
	# a lifetime cap too, in case even the trap and the parent-death signal fail
	lifetime=$(awk -v n="$total_runs" -v s="$seconds" -v t="$timeout_s" 'BEGIN { printf "%d", n * (s + 1) * 3 + t + 60 }')
	for ((i = 0; i < hogs; i++)); do
		env -i "$hog" "$lifetime" &
		hog_pids+=($!)
	done
fi

# ---- runs ---------------------------------------------------------------------
[ $quiet -eq 1 ] || {
	echo "$PROG: ${mode_label[*]}; threads ${threads[*]}; work ${works[*]}; $repeats repeats of $seconds s: $total_runs runs ($title)"
	[ "$hogs" -eq 0 ] || echo "$PROG: hog pids ${hog_pids[*]}"
} >&2

echo "name,hogs,work,threads,lock,repeat,status,ops_per_s,fairness,min,max,user_s,sys_s,seconds,wall_s,provider,$tail_columns" >"$raw_csv"
failures=()
run_no=0
run_one() { # MODE_INDEX WORK THREADS REPEAT
	local mi=$1 w=$2 t=$3 rep=$4 label=${mode_label[$1]} rc status=ok start wall row
	mode_command "$mi" "$lib"
	start=$EPOCHREALTIME
	timeout -k 2 "$timeout_s" "${run_env[@]}" "$harness" --lock="${mode_lock[$mi]}" \
		--threads="$t" --work="$w" --cs="$cs" --seconds="$seconds" \
		--expect-provider="${mode_expect[$mi]}" </dev/null >"$tmp/out" 2>"$tmp/err"
	rc=$?
	wall=$(awk -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.3f", e - s }')
	case $rc in
	0) ;;
	1) status=violated ;;
	3) status=provider ;;
	124 | 137) status=timeout ;;
	*) status=exit-$rc ;;
	esac
	[ "$status" != ok ] || grep -q ' invariants=ok ' "$tmp/out" || status=no-output
	row=$(awk -v pre="$name,$hogs,$w,$t,$label,$rep,$status" -v wall="$wall" '
		/ invariants=/ {
			for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = substr($i, length(kv[1]) + 2) }
		}
		END { printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s", pre, f["ops_per_s"], f["fairness"], f["min"],
			f["max"], f["user"], f["sys"], f["seconds"], wall, f["provider"]
			n = split(tails, t, ",")
			for (i = 1; i <= n; i++) printf ",%s", f[t[i]]
			printf "\n" }' tails="$tail_columns" "$tmp/out")
	echo "$row" >>"$raw_csv"
	if [ "$status" != ok ]; then
		keep_failed_run "$label-w$w-t$t-r$rep" "$label, work $w, $t threads, repeat $rep" \
			"$status" "$rc"
	elif [ $quiet -eq 0 ]; then
		printf '%s: [%d/%d] work %-5s %3s threads %-16s %s\n' "$PROG" "$run_no" "$total_runs" \
			"$w" "$t" "$label" "$(cut -d, -f8,9 <<<"$row" | sed 's/,/ ops\/s, fairness /')" >&2
	fi
}

# Every repeat visits every cell and every mode, starting each time from
# another mode, so slow drift of the machine is shared out.
for ((rep = 1; rep <= repeats; rep++)); do
	for w in "${works[@]}"; do
		for ((ti = 0; ti < ${#threads[@]}; ti++)); do
			for ((k = 0; k < nmodes; k++)); do
				run_no=$((run_no + 1))
				run_one $(((k + rep - 1 + ti) % nmodes)) "$w" "${threads[$ti]}" "$rep"
			done
		done
	done
done
stop_hogs

# ---- tables, summary, graph ----------------------------------------------------
labels_csv=$(IFS=,; echo "${mode_label[*]}")
awk -F, -v labels="$labels_csv" -v tlist="$threads_list" -v wlist="$work_list" \
	-v repeats="$repeats" -v seconds="$seconds" -v cs="$cs" -v hogs="$hogs" \
	-v title="$title" -v summary="$summary_csv" -v dat="$out_dir/$name.dat" \
	-v tails_dat="$out_dir/$name-tails.dat" \
	-f "$here/cell-stats.awk" -f "$here/locks-summary.awk" "$raw_csv"

plotted=0
gp=$(find_gnuplot)
if [ $plot -eq 1 ] && [ -z "$gp" ]; then
	echo "$PROG: gnuplot not found: no graph (Debian: gnuplot-nox); data in $out_dir/$name.dat" >&2
elif [ $plot -eq 1 ]; then
	nworks=${#works[@]}
	{
		echo "set terminal ${gp#*|} size 1100,$((380 * nworks))"
		echo "set output '$out_dir/$name.png'"
		echo "set multiplot layout $nworks,1 title 'one contended lock, $cs writes to its line per critical section; median and range of $repeats runs of $seconds s; $title'"
		xr=$(tr , '\n' <<<"$threads_list" | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%g:%g", lo * 0.8, hi * 1.25 }')
		echo "set logscale x 2; set logscale y; set xrange [$xr]; set xtics ($threads_list)"
		echo "set xlabel 'threads'; set ylabel 'acquisitions/s'; set format y '%.0s%c'"
		echo "set grid; set key outside right top; set datafile missing '?'"
		for ((wi = 0; wi < nworks; wi++)); do
			echo "set title 'work ${works[$wi]} between acquisitions'"
			echo -n "plot "
			for ((mi = 0; mi < nmodes; mi++)); do
				[ $mi -eq 0 ] || echo -n ", "
				echo -n "'$out_dir/$name.dat' index $wi using (\$1*(1+($mi-$nmodes/2.0)*0.012)):$((mi * 3 + 2)):$((mi * 3 + 3)):$((mi * 3 + 4)) with yerrorlines lw 2 pt $((mi + 1)) title '${mode_label[$mi]}'"
			done
			echo
		done
		echo "unset multiplot"
	} >"$out_dir/$name.gp"
	# the latency graph: per work (rows) and thread count (columns), each
	# lock's lock-wait percentiles, medians of the runs'
	{
		echo "set terminal ${gp#*|} size $((300 * ${#threads[@]} + 200)),$((300 * nworks))"
		echo "set output '$out_dir/$name-tails.png'"
		echo "set multiplot layout $nworks,${#threads[@]} title 'lock wait (calling the lock to holding it), medians of $repeats runs of $seconds s; $title'"
		echo "set logscale y; set xrange [0.5:5.5]; set xtics ('p50' 1, 'p99' 2, 'p99.9' 3, 'p99.99' 4, 'max' 5)"
		echo "set ylabel 'microseconds'; set grid; set key top left font ',8'; set datafile missing '?'"
		for ((wi = 0; wi < nworks; wi++)); do
			for ((ti = 0; ti < ${#threads[@]}; ti++)); do
				echo "set title 'work ${works[$wi]}, ${threads[$ti]} threads'"
				echo -n "plot "
				for ((mi = 0; mi < nmodes; mi++)); do
					[ $mi -eq 0 ] || echo -n ", "
					echo -n "'$out_dir/$name-tails.dat' index $((wi * ${#threads[@]} + ti)) using 1:$((mi + 2)) with linespoints lw 2 pt $((mi + 1)) title '${mode_label[$mi]}'"
				done
				echo
			done
		done
		echo "unset multiplot"
	} >"$out_dir/$name-tails.gp"
	if "${gp%%|*}" "$out_dir/$name.gp" >"$tmp/gp.log" 2>&1 && [ -s "$out_dir/$name.png" ] &&
		"${gp%%|*}" "$out_dir/$name-tails.gp" >>"$tmp/gp.log" 2>&1 && [ -s "$out_dir/$name-tails.png" ]; then
		plotted=1
	else
		echo "$PROG: gnuplot failed:" >&2; sed "s/^/$PROG:   /" "$tmp/gp.log" >&2
	fi
fi
echo
echo "every run: $raw_csv"
echo "per cell:  $summary_csv"
[ $plotted -eq 0 ] || echo "graph:     $out_dir/$name.png"
[ $plotted -eq 0 ] || echo "tails:     $out_dir/$name-tails.png"
if [ ${#failures[@]} -gt 0 ]; then
	echo "$PROG: ${#failures[@]} of $total_runs runs failed and are left out (output in $logs/):" >&2
	printf "$PROG:   %s\n" "${failures[@]}" >&2
	exit 1
fi
exit 0
