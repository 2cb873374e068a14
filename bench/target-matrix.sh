#!/bin/bash
# target-matrix.sh - issue 39's targets, checked in one command: bench/locks
# for every load x shape x work x threads, glibc's spinlock, pthread_mutex and
# ticketspin (and any variants of it) interleaved run by run, and per cell a
# PASS/FAIL mark for each target.
#
#   target-matrix.sh --harness PATH --lib PATH --hog PATH [--probe PATH] [options]
#   target-matrix.sh --report CSV [--out DIR --name NAME]  (no runs)
#
# Targets, per cell, for every ticketspin column (the preloaded modes):
#   best   median >= 1.0x the better of glibc's and pthread_mutex's medians
#          at work below 100, >= 0.95x at 100 and above (there the lock is
#          not the bottleneck and the noise is)
#   slow   the slowest run >= 0.5x the median (one behaviour, not two)
#   fair   fairness (fewest / most acquisitions per thread) >= 0.5, in the
#          worst run (--fairness-of median: the median of the runs')
#   tail   against pthread_mutex's tails (bench/locks: each run's
#          percentiles over every acquisition; the medians of the runs'):
#          with threads <= CPUs, the lock wait's p99.9 <= mutex's, its
#          p99.99 <= 1.5x mutex's, and the iterations' p99.99 <= 1.5x
#          mutex's; with more threads than CPUs, the iterations' p99.99 <=
#          1.5x mutex's and the lock wait's p99.99 <= 2 ms
# A target whose reference lock is not in --locks is not checked ("-").
#
# Order: per load (hogs started once for it), per shape, every repeat visits
# every cell and every lock, starting each time from another lock, so that
# the drift of a noisy machine hits all alike.  Each load x shape table is
# printed as soon as its runs are done; the count of cells meeting every
# target comes last.  Writes OUT/NAME.csv (every run) and
# OUT/NAME-summary.csv (one row per load x shape x work x threads x lock,
# with the marks).
#
# With --probe (bench/cacheline), the cost of one cache-line transfer
# between the first two CPUs is measured before each group of runs (one cell,
# every lock) and kept with each run: this VM moves between modes where a
# transfer costs under 100 ns and over 200 ns, minutes apart, and the
# locks' figures move with it (two threads, work 100: pthread_mutex 14.9
# M/s in the one, 8.6 in the other).  Each table says over what range it was
# measured, and how many probes lay more than 1.5x from its median.  Beside
# the hogs the probe's threads share their CPUs with them (it read 360-430 ns
# in nearly every run): there it says nothing of the mode.
#
# Exit status: 0 every run succeeded and every cell meets every target;
# 3 every run succeeded but some cell misses a target; 1 some run failed
# (kept out of the figures, its output in OUT/NAME-logs/), and at once, with
# no tables, when a run's lock was not the one meant (--expect-provider) or
# ticketspin refused one of its TICKET_* settings (a line on its stderr);
# 2 usage.
set -u -o pipefail
PROG=target-matrix
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench-lib.sh
. "$here/bench-lib.sh"

default_shapes=same-line,other-line,other-line:touch=262144:lines=16
usage() {
	cat <<EOF
usage: $PROG --harness PATH --lib PATH [--hog PATH] [options]

  --harness PATH    the 'locks' program (bench/locks)
  --lib PATH        libticketspin.so, preloaded in the ticketspin columns
  --hog PATH        the hog program (bench/hog); needed for the hogs load
  --probe PATH      the cacheline program (bench/cacheline): a cache-line
                    transfer's cost, measured before each cell's runs
  --locks LIST      default glibc,ticketspin,mutex; also ck-ticket,
                    mutex-adaptive... (shown, not judged); leave ticketspin
                    out to judge the --variant columns only
  --ticket-env 'VAR=VALUE...'
                    TICKET_* settings of the ticketspin column
  --variant NAME='VAR=VALUE...'
                    one more ticketspin column, with settings of its own
                    (repeatable; 'NAME=' for the defaults under another name)
  --variant-lib NAME=PATH
                    the variant NAME preloads PATH instead of --lib: another
                    build of libticketspin.so (main's, say), side by side
  --threads LIST    thread counts (default 2,3,4,8,16)
  --work LIST       iterations of private work between acquisitions
                    (default 0,30,100,1000)
  --loads LIST      idle and/or hogs (default idle,hogs)
  --hogs N          CPU-bound processes of the hogs load (default: CPUs, $(nproc))
  --shapes LIST     harness shapes, each LAYOUT[:touch=BYTES[:lines=L]] with
                    LAYOUT same-line or other-line (bench/locks --layout,
                    --touch, --touch-lines); default
                    $default_shapes:
                    the data on the lock's line, on a line of its own, and
                    on its own line with private work that updates 16 lines
                    of a 256 KiB buffer per acquisition (beyond L1: misses)
  --cs N            writes in the critical section (default 4)
  --seconds S       length of one run (default 0.5)
  --repeats N       runs per lock and cell, interleaved (default 7)
  --fairness-of worst|median
                    the fairness judged: the worst run's (default) or the
                    median of the runs'
  --out DIR         output directory (default bench-out)
  --name NAME       file names (default target-matrix)
  --timeout SEC     time limit of one run (default 60)
  -q, --quiet       no progress lines
  --report CSV      no runs: the tables, counts and summary of the runs in
                    CSV (this program's NAME.csv, or several concatenated:
                    a matrix run in parts); --fairness-of, --out, --name apply
EOF
}

harness= lib= hog= probe= locks_list=glibc,ticketspin,mutex ticket_env= variants=() variant_libs=()
threads_list=2,3,4,8,16 work_list=0,30,100,1000 loads_list=idle,hogs hogs=$(nproc)
shapes_list=$default_shapes cs=4 seconds=0.5 repeats=7 fairness_of=worst
out_dir=bench-out name=target-matrix timeout_s=60 quiet=0 report=
while [ $# -gt 0 ]; do
	case $1 in
	--harness) harness=${2:?}; shift 2 ;;
	--lib) lib=${2:?}; shift 2 ;;
	--hog) hog=${2:?}; shift 2 ;;
	--probe) probe=${2:?}; shift 2 ;;
	--locks) locks_list=${2:?}; shift 2 ;;
	--ticket-env) ticket_env=${2?}; shift 2 ;;
	--variant) variants+=("${2:?}"); shift 2 ;;
	--variant-lib) variant_libs+=("${2:?}"); shift 2 ;;
	--threads) threads_list=${2:?}; shift 2 ;;
	--work) work_list=${2:?}; shift 2 ;;
	--loads) loads_list=${2:?}; shift 2 ;;
	--hogs) hogs=${2:?}; shift 2 ;;
	--shapes) shapes_list=${2:?}; shift 2 ;;
	--cs) cs=${2:?}; shift 2 ;;
	--seconds) seconds=${2:?}; shift 2 ;;
	--repeats) repeats=${2:?}; shift 2 ;;
	--fairness-of) fairness_of=${2:?}; shift 2 ;;
	--out) out_dir=${2:?}; shift 2 ;;
	--name) name=${2:?}; shift 2 ;;
	--timeout) timeout_s=${2:?}; shift 2 ;;
	-q | --quiet) quiet=1; shift ;;
	--report) report=${2:?}; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; bench_die "unknown option '$1'" ;;
	esac
done

summarise() { # MODE [LOAD SHAPE]: tables of one block, or the final counts and summary CSV
	awk -F, -v mode="$1" -v only_load="${2:-}" -v only_shape="${3:-}" \
		-v labels="$labels_csv" -v judged="$judged_csv" -v tlist="$threads_list" \
		-v wlist="$work_list" -v loads="$loads_list" -v shapes="$shapes_list" \
		-v repeats="$repeats" -v seconds="$seconds" -v cs="$cs" -v hogs="$hogs" \
		-v fairness_of="$fairness_of" -v summary="$summary_csv" \
		-f "$here/cell-stats.awk" -f "$here/target-matrix.awk" "$raw_csv"
}

case $fairness_of in worst | median) ;; *) bench_die "--fairness-of: '$fairness_of' (worst or median)" ;; esac
[[ $name =~ ^[A-Za-z0-9_.+-]+$ ]] || bench_die "--name: '$name'"
if [ -n "$report" ]; then
	[ -f "$report" ] || bench_die "--report: no such file: '$report'"
	IFS= read -r head <"$report"
	[[ $head == load,hogs,shape,layout,touch,touch_lines,cs,work,threads,lock,repeat,status,* ]] ||
		bench_die "--report: '$report' is not a CSV of $PROG's runs"
	# the lists in order of first appearance (numbers sorted), the most runs
	# of a lock in a cell, the length of a run, the hogs, the failed runs
	{
		read -r loads_list; read -r shapes_list; read -r work_list; read -r threads_list
		read -r labels_csv; read -r judged_csv; read -r repeats; read -r seconds; read -r hogs
		read -r cs; read -r failed_runs
	} < <(awk -F, '
		function add(list, v) { return index("," list ",", "," v ",") ? list : list == "" ? v : list "," v }
		function numeric(list,    n, a, i, j, x, out) {
			n = split(list, a, ",")
			for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > x + 0; j--) a[j + 1] = a[j]; a[j + 1] = x }
			for (i = 1; i <= n; i++) out = out (i > 1 ? "," : "") a[i]
			return out
		}
		$1 == "load" { next }
		{
			ld = add(ld, $1); sh = add(sh, $3); cs = add(cs, $7); wk = add(wk, $8); th = add(th, $9)
			lk = add(lk, $10)
			if (++rows[$1, $3, $8, $9, $10] > repeats) repeats = rows[$1, $3, $8, $9, $10]
			if ($12 == "ok" && (secs == "" || $19 + 0 < secs)) secs = $19 + 0
			if ($1 == "hogs") hogs = $2
			if ($12 != "ok") failed++
		}
		END {
			n = split(lk, L, ",")
			for (i = 1; i <= n; i++)
				if (L[i] !~ /^(glibc|mutex|mutex-adaptive|ck-ticket|ck-ticket-pb|ck-mcs|ck-fas)$/) judged = add(judged, L[i])
			print ld; print sh; print numeric(wk); print numeric(th); print lk; print judged
			print repeats + 0; printf "%.2g\n", secs; print hogs + 0; print cs; print failed + 0
		}' "$report")
	[ -n "$judged_csv" ] || bench_die "--report: no ticketspin column in '$report'"
	mkdir -p "$out_dir" || bench_die "cannot create $out_dir"
	out_dir=$(cd "$out_dir" && pwd -P)
	raw_csv=$(cd "$(dirname "$report")" && pwd -P)/$(basename "$report")
	summary_csv=$out_dir/$name-summary.csv
	[ "$raw_csv" != "$summary_csv" ] || bench_die "--report: the summary would overwrite '$report': choose another --name"
	IFS=, read -r -a loads <<<"$loads_list"
	IFS=, read -r -a shapes <<<"$shapes_list"
	for ld in "${loads[@]}"; do
		for sh in "${shapes[@]}"; do summarise table "$ld" "$sh"; done
	done
	summarise final
	echo
	echo "runs:      $raw_csv"
	echo "per cell:  $summary_csv"
	[ "$failed_runs" -eq 0 ] || { echo "$PROG: $failed_runs runs in $report failed and are left out" >&2; exit 1; }
	grep -q ',miss$' "$summary_csv" && exit 3
	exit 0
fi

[ -x "$harness" ] || bench_die "--harness: not an executable: '$harness'"
check_list --threads "$threads_list" 1 4096; IFS=, read -r -a threads <<<"$threads_list"
check_list --work "$work_list" 0 100000000; IFS=, read -r -a works <<<"$work_list"
IFS=, read -r -a loads <<<"$loads_list"
[ ${#loads[@]} -gt 0 ] || bench_die "--loads: empty list"
for l in "${loads[@]}"; do
	case $l in idle | hogs) ;; *) bench_die "--loads: '$l' is neither idle nor hogs" ;; esac
done
is_uint "$cs" || bench_die "--cs: '$cs' is not a whole number"
is_uint "$repeats" && [ "$repeats" -ge 1 ] || bench_die "--repeats: '$repeats' is not a whole number >= 1"
is_uint "$hogs" && [ "$hogs" -ge 1 ] || bench_die "--hogs: '$hogs' is not a whole number >= 1"
is_uint "$timeout_s" && [ "$timeout_s" -ge 1 ] || bench_die "--timeout: '$timeout_s'"
awk -v s="$seconds" 'BEGIN { exit !(s + 0 >= 0.001) }' || bench_die "--seconds: '$seconds'"
if [[ ,$loads_list, == *,hogs,* ]]; then
	[ -x "$hog" ] || bench_die "the hogs load needs --hog PATH (bench/hog)"
fi
[ -z "$probe" ] || [ -x "$probe" ] || bench_die "--probe: not an executable: '$probe'"

# Shapes: LAYOUT[:touch=BYTES[:lines=L]] -> the harness's options.
shapes=() shape_args=() shape_layout=() shape_touch=() shape_lines=()
IFS=, read -r -a shapes <<<"$shapes_list"
[ ${#shapes[@]} -gt 0 ] || bench_die "--shapes: empty list"
for s in "${shapes[@]}"; do
	IFS=: read -r -a parts <<<"$s"
	layout=${parts[0]:-} touch=0 lines=
	case $layout in same-line | other-line) ;; *) bench_die "--shapes: '$s': begins with same-line or other-line" ;; esac
	for p in "${parts[@]:1}"; do
		case $p in
		touch=*) touch=${p#touch=}; is_uint "$touch" && [ "$touch" -gt 0 ] && [ $((touch % 64)) -eq 0 ] ||
			bench_die "--shapes: '$s': touch= takes a multiple of 64 bytes" ;;
		lines=*) lines=${p#lines=}; is_uint "$lines" && [ "$lines" -ge 1 ] ||
			bench_die "--shapes: '$s': lines= takes a whole number >= 1" ;;
		*) bench_die "--shapes: '$s': '$p' is neither touch=BYTES nor lines=L" ;;
		esac
	done
	[ -z "$lines" ] || [ "$touch" -gt 0 ] || bench_die "--shapes: '$s': lines= needs touch="
	args="--layout=$layout"
	[ "$touch" -eq 0 ] || args+=" --touch=$touch"
	[ -z "$lines" ] || args+=" --touch-lines=$lines"
	[[ $s =~ ^[A-Za-z0-9:=_.+-]+$ ]] || bench_die "--shapes: '$s'"
	shape_args+=("$args") shape_layout+=("$layout") shape_touch+=("$touch")
	shape_lines+=("${lines:-$((touch / 64))}")
done

# Locks and ticketspin columns.
available=$("$harness" --list | tr '\n' ' ')
IFS=, read -r -a names <<<"$locks_list"
for n in "${names[@]}"; do add_named_mode "$n" "$available"; done
if [ -n "$ticket_env" ]; then
	found=0
	for i in "${!mode_label[@]}"; do
		[ "${mode_label[$i]}" = ticketspin ] || continue
		read -r -a words <<<"$ticket_env"
		for w in "${words[@]}"; do
			[[ $w =~ ^TICKET_[A-Z_]+=[^[:space:]]*$ ]] || bench_die "--ticket-env: '$w' is not TICKET_VAR=VALUE"
		done
		mode_env[$i]="${words[*]}" found=1
	done
	[ $found -eq 1 ] || bench_die "--ticket-env: ticketspin is not in --locks"
fi
for v in "${variants[@]+"${variants[@]}"}"; do
	[[ $v == *=* ]] || bench_die "--variant '$v': expected NAME='VAR=VALUE...'"
	case ${v%%=*} in glibc | mutex) bench_die "--variant '$v': ${v%%=*} names a reference lock" ;; esac
	read -r -a words <<<"${v#*=}"
	for w in "${words[@]+"${words[@]}"}"; do
		[[ $w =~ ^TICKET_[A-Z_]+=[^[:space:]]*$ ]] || bench_die "--variant '$v': '$w' is not TICKET_VAR=VALUE"
	done
	add_custom_mode "${v%%=*} ${v#*=}"
done
[ ${#mode_label[@]} -gt 0 ] || bench_die "no locks to run"
declare -A lib_of=()
for vl in "${variant_libs[@]+"${variant_libs[@]}"}"; do
	[[ $vl == ?*=?* ]] || bench_die "--variant-lib '$vl': expected NAME=PATH"
	found=0
	for v in "${variants[@]+"${variants[@]}"}"; do [ "${v%%=*}" != "${vl%%=*}" ] || found=1; done
	[ $found -eq 1 ] || bench_die "--variant-lib '$vl': no --variant named '${vl%%=*}'"
	lib_of[${vl%%=*}]=${vl#*=}
done
# the library each mode preloads, as an absolute path (none for the others)
mode_lib=() judged=()
for i in "${!mode_label[@]}"; do
	mode_lib+=("")
	[ "${mode_preload[$i]}" = 1 ] || continue
	judged+=("${mode_label[$i]}")
	l=${lib_of[${mode_label[$i]}]:-$lib}
	[ -f "$l" ] || bench_die "no such library: '$l' (--lib, --variant-lib; build the library first)"
	mode_lib[i]="$(cd "$(dirname "$l")" && pwd -P)/$(basename "$l")"
done
[ ${#judged[@]} -gt 0 ] || bench_die "no ticketspin column to judge: add ticketspin to --locks or a --variant"
collect_sanitizer_env

mkdir -p "$out_dir" || bench_die "cannot create $out_dir"
out_dir=$(cd "$out_dir" && pwd -P)
raw_csv=$out_dir/$name.csv summary_csv=$out_dir/$name-summary.csv logs=$out_dir/$name-logs
rm -rf "$logs" "$summary_csv"

# the tails bench/locks prints, in microseconds, kept with every run; and the
# CPUs the harness may run on (the tails' targets depend on threads <= CPUs)
tail_fields=(wait_p50 wait_p99 wait_p999 wait_p9999 wait_max iter_p50 iter_p99 iter_p999 iter_p9999 iter_max)
tail_columns=$(IFS=,; echo "${tail_fields[*]}")
cpus=$(nproc)

nmodes=${#mode_label[@]}
runs_per_block=$((nmodes * ${#threads[@]} * ${#works[@]} * repeats))
total_runs=$((runs_per_block * ${#loads[@]} * ${#shapes[@]}))
labels_csv=$(IFS=,; echo "${mode_label[*]}")
judged_csv=$(IFS=,; echo "${judged[*]}")

# ---- outside load: started and always stopped by us ----------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/$PROG.XXXXXX") || exit 2
hog_pids=()
stop_hogs() {
	local p
	for p in "${hog_pids[@]+"${hog_pids[@]}"}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${hog_pids[@]+"${hog_pids[@]}"}"; do wait "$p" 2>/dev/null; done
	hog_pids=()
}
start_hogs() {
	local i lifetime
	# a lifetime cap too, in case even the trap and the parent-death signal fail
	lifetime=$(awk -v n="$((runs_per_block * ${#shapes[@]}))" -v s="$seconds" -v t="$timeout_s" \
		'BEGIN { printf "%d", n * (s + 1) * 3 + t + 60 }')
	for ((i = 0; i < hogs; i++)); do
		env -i "$hog" "$lifetime" &
		hog_pids+=($!)
	done
}
trap 'stop_hogs; rm -rf "$tmp"' EXIT
trap 'echo "$PROG: interrupted" >&2; exit 130' INT TERM HUP

# ---- runs ---------------------------------------------------------------------
[ $quiet -eq 1 ] || {
	echo "$PROG: ${mode_label[*]}; threads ${threads[*]}; work ${works[*]}; loads ${loads[*]} (hogs: $hogs); shapes ${shapes[*]}"
	awk -v n="$total_runs" -v r="$repeats" -v s="$seconds" 'BEGIN {
		printf "'"$PROG"': %d runs (%d repeats of %s s), at least %.0f min (more on a loaded machine)\n", n, r, s, n * (s + 0.05) / 60 }'
} >&2

echo "load,hogs,shape,layout,touch,touch_lines,cs,work,threads,lock,repeat,status,ops_per_s,fairness,min,max,user_s,sys_s,seconds,wall_s,provider,transfer_ns,cpus,$tail_columns" >"$raw_csv"
failures=()
run_no=0 started=$SECONDS transfer_ns=
# The cost of one cache-line transfer now (bench/cacheline's best of three
# short rounds, about 50 ms), into transfer_ns; empty without --probe or
# when the probe fails (one CPU, say).
probe_transfer() {
	local kv
	transfer_ns=
	[ -n "$probe" ] || return 0
	for kv in $("$probe" --rounds=3 --round-trips=10000 2>/dev/null </dev/null); do
		[[ $kv != transfer_ns_best=* ]] || transfer_ns=${kv#transfer_ns_best=}
	done
	[[ $transfer_ns =~ ^[0-9]+(\.[0-9]+)?$ ]] || transfer_ns=
}
# Forks nothing but the run itself: on a loaded 2-CPU machine every extra
# process costs tens of milliseconds, per run.
run_one() { # LOAD SHAPE_INDEX MODE_INDEX WORK THREADS REPEAT
	local load=$1 si=$2 mi=$3 w=$4 t=$5 rep=$6 label=${mode_label[$3]} rc status=ok start wall_us row
	local nhogs=0 tag line= kv eta
	local -a fields
	local -A f=()
	[ "$load" = idle ] || nhogs=$hogs
	mode_command "$mi" "${mode_lib[$mi]}"
	start=${EPOCHREALTIME/[.,]/}
	# shellcheck disable=SC2086 # the shape's options, checked above
	timeout -k 2 "$timeout_s" "${run_env[@]}" "$harness" --lock="${mode_lock[$mi]}" \
		--threads="$t" --work="$w" --cs="$cs" --seconds="$seconds" ${shape_args[$si]} \
		--expect-provider="${mode_expect[$mi]}" </dev/null >"$tmp/out" 2>"$tmp/err"
	rc=$?
	wall_us=$((${EPOCHREALTIME/[.,]/} - start))
	case $rc in
	0) ;;
	1) status=violated ;;
	3) status=provider ;;
	124 | 137) status=timeout ;;
	*) status=exit-$rc ;;
	esac
	while IFS= read -r kv; do [[ $kv != *" invariants="* ]] || line=$kv; done <"$tmp/out"
	[ "$status" != ok ] || [[ $line == *" invariants=ok "* ]] || status=no-output
	# a TICKET_* value the library refused: the run had its default instead
	if [ "$status" = ok ] && [ "${mode_preload[$mi]}" = 1 ]; then
		while IFS= read -r kv; do [[ $kv != "ticketspin: TICKET_"*=* ]] || status=setting; done <"$tmp/err"
	fi
	read -r -a fields <<<"$line"
	for kv in "${fields[@]+"${fields[@]}"}"; do f[${kv%%=*}]=${kv#*=}; done
	row="$load,$nhogs,${shapes[$si]},${shape_layout[$si]},${shape_touch[$si]},${shape_lines[$si]},$cs,$w,$t,$label,$rep,$status"
	row+=",${f[ops_per_s]:-},${f[fairness]:-},${f[min]:-},${f[max]:-},${f[user]:-},${f[sys]:-},${f[seconds]:-}"
	row+=",$(printf '%d.%03d' $((wall_us / 1000000)) $((wall_us % 1000000 / 1000))),${f[provider]:-},$transfer_ns,$cpus"
	for kv in "${tail_fields[@]}"; do row+=",${f[$kv]:-}"; done
	echo "$row" >>"$raw_csv"
	tag="$load, ${shapes[$si]}, work $w, $t threads, $label, repeat $rep"
	if [ "$status" != ok ]; then
		keep_failed_run "$load-${shapes[$si]//[:=]/_}-w$w-t$t-$label-r$rep" "$tag" "$status" "$rc"
		case $status in
		provider) echo "$PROG: STOPPED: the run of '$label' did not use the lock it meant (the provider of its functions does not contain '${mode_expect[$mi]}'); no figure of this matrix can be trusted" >&2 ;;
		setting) echo "$PROG: STOPPED: ticketspin refused a setting of '$label' (${mode_env[$mi]}) and ran with its default instead" >&2 ;;
		esac
		if [ "$status" = provider ] || [ "$status" = setting ]; then
			echo "$PROG: every run so far: $raw_csv" >&2
			exit 1
		fi
	elif [ $quiet -eq 0 ]; then
		eta=$(((SECONDS - started) * (total_runs - run_no) / run_no))
		printf '%s: [%d/%d, %d min %02d s left] %s: %s ops/s, fairness %s\n' "$PROG" "$run_no" \
			"$total_runs" $((eta / 60)) $((eta % 60)) "$tag" "${f[ops_per_s]}" "${f[fairness]}" >&2
	fi
}

for load in "${loads[@]}"; do
	[ "$load" = idle ] || { start_hogs; [ $quiet -eq 1 ] || echo "$PROG: hog pids ${hog_pids[*]}" >&2; }
	for ((si = 0; si < ${#shapes[@]}; si++)); do
		for ((rep = 1; rep <= repeats; rep++)); do
			for w in "${works[@]}"; do
				for ((ti = 0; ti < ${#threads[@]}; ti++)); do
					probe_transfer
					for ((k = 0; k < nmodes; k++)); do
						run_no=$((run_no + 1))
						run_one "$load" "$si" $(((k + rep - 1 + ti) % nmodes)) "$w" "${threads[$ti]}" "$rep"
					done
				done
			done
		done
		summarise table "$load" "${shapes[$si]}"
	done
	stop_hogs
done

summarise final
echo
echo "every run: $raw_csv"
echo "per cell:  $summary_csv"
if [ ${#failures[@]} -gt 0 ]; then
	echo "$PROG: ${#failures[@]} of $total_runs runs failed and are left out (output in $logs/):" >&2
	printf "$PROG:   %s\n" "${failures[@]}" >&2
	exit 1
fi
grep -q ',miss$' "$summary_csv" && exit 3
exit 0
