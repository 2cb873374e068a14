#!/bin/bash
# compare-uncontended.sh - the cost of an uncontended lock + unlock pair, for
# ticketspin and the locks a user would pick instead: the program 'lockpair'
# (best of several rounds per run) for every lock, with an empty critical
# section and with one counter++, repeated, the modes interleaved run by run.
#
#   compare-uncontended.sh --harness PATH --lib PATH [options]
#
# Prints a table (ns per pair: median [min-max] of the runs, and ratios to
# glibc's spinlock and to Concurrency Kit's inline ticket lock), and writes
# NAME.csv (every run), NAME-summary.csv and NAME.png into the output
# directory.  Exit status: 0; 1 some runs failed; 2 usage.
set -u -o pipefail
PROG=compare-uncontended
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench-lib.sh
. "$here/bench-lib.sh"

usage() {
	cat <<EOF
usage: $PROG --harness PATH --lib PATH [options]

  --harness PATH  the 'lockpair' program (bench/lockpair)
  --lib PATH      libticketspin.so, preloaded in the ticketspin modes
  --locks LIST    as compare-locks.sh (default: all eight)
  --mode 'NAME TICKET_VAR=VALUE...'   a ticketspin mode of your own
  --pairs N       pairs per round (10000000); 5 rounds per run, the best kept
  --repeats N     runs per lock and critical section (5)
  --out DIR       output directory (bench-out)
  --name NAME     file names (uncontended)
  --no-plot       no PNG
  -q, --quiet     no progress lines
EOF
}

harness= lib= locks_list=glibc,ticketspin,mutex,mutex-adaptive,ck-ticket,ck-ticket-pb,ck-mcs,ck-fas
pairs=10000000 repeats=5 out_dir=bench-out name=uncontended plot=1 quiet=0 custom=()
while [ $# -gt 0 ]; do
	case $1 in
	--harness) harness=${2:?}; shift 2 ;;
	--lib) lib=${2:?}; shift 2 ;;
	--locks) locks_list=${2:?}; shift 2 ;;
	--mode) custom+=("${2:?}"); shift 2 ;;
	--pairs) pairs=${2:?}; shift 2 ;;
	--repeats) repeats=${2:?}; shift 2 ;;
	--out) out_dir=${2:?}; shift 2 ;;
	--name) name=${2:?}; shift 2 ;;
	--no-plot) plot=0; shift ;;
	-q | --quiet) quiet=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; bench_die "unknown option '$1'" ;;
	esac
done
[ -x "$harness" ] || bench_die "--harness: not an executable: '$harness'"
is_uint "$pairs" && [ "$pairs" -ge 1 ] || bench_die "--pairs: '$pairs'"
is_uint "$repeats" && [ "$repeats" -ge 1 ] || bench_die "--repeats: '$repeats'"
[[ $name =~ ^[A-Za-z0-9_.+-]+$ ]] || bench_die "--name: '$name'"

available=$("$harness" --list | tr '\n' ' ')
IFS=, read -r -a names <<<"$locks_list"
for n in "${names[@]}"; do add_named_mode "$n" "$available"; done
for spec in "${custom[@]+"${custom[@]}"}"; do add_custom_mode "$spec"; done
[ ${#mode_label[@]} -gt 0 ] || bench_die "no locks to run"
for p in "${mode_preload[@]}"; do
	if [ "$p" = 1 ]; then
		[ -f "$lib" ] || bench_die "--lib: no such file: '$lib'"
		lib="$(cd "$(dirname "$lib")" && pwd -P)/$(basename "$lib")"
	fi
done
collect_sanitizer_env
mkdir -p "$out_dir" || bench_die "cannot create $out_dir"
out_dir=$(cd "$out_dir" && pwd -P)
raw_csv=$out_dir/$name.csv
rm -f "$out_dir/$name.png"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/$PROG.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'echo "$PROG: interrupted" >&2; exit 130' INT TERM HUP

nmodes=${#mode_label[@]}
sections=(empty counter)
total_runs=$((nmodes * 2 * repeats))
echo "name,critical_section,lock,repeat,status,ns_per_pair,provider" >"$raw_csv"
failures=()
run_no=0
for ((rep = 1; rep <= repeats; rep++)); do
	for ((si = 0; si < 2; si++)); do
		for ((k = 0; k < nmodes; k++)); do
			mi=$(((k + rep - 1 + si) % nmodes))
			label=${mode_label[$mi]}
			run_no=$((run_no + 1))
			mode_command "$mi" "$lib"
			counter=()
			[ $si -eq 0 ] || counter=(--counter)
			timeout -k 2 120 "${run_env[@]}" "$harness" --lock="${mode_lock[$mi]}" \
				--pairs="$pairs" --rounds=5 "${counter[@]+"${counter[@]}"}" \
				--expect-provider="${mode_expect[$mi]}" </dev/null >"$tmp/out" 2>"$tmp/err"
			rc=$?
			ns=$(sed -n 's/.* ns_per_pair=\([0-9.]*\) .*/\1/p' "$tmp/out")
			provider=$(sed -n 's/.* provider=//p' "$tmp/out")
			status=ok
			[ $rc -eq 0 ] || status=exit-$rc
			[ $rc -ne 3 ] || status=provider
			[ "$status" != ok ] || [ -n "$ns" ] || status=no-output
			echo "$name,${sections[$si]},$label,$rep,$status,$ns,$provider" >>"$raw_csv"
			if [ "$status" != ok ]; then
				failures+=("$label, ${sections[$si]}, repeat $rep: $status: $(tail -n 1 "$tmp/err")")
				echo "$PROG: FAILED: ${failures[-1]}" >&2
			elif [ $quiet -eq 0 ]; then
				printf '%s: [%d/%d] %-8s %-16s %s ns\n' "$PROG" "$run_no" "$total_runs" \
					"${sections[$si]}" "$label" "$ns" >&2
			fi
		done
	done
done

labels_csv=$(IFS=,; echo "${mode_label[*]}")
awk -F, -v labels="$labels_csv" -v repeats="$repeats" -v pairs="$pairs" \
	-v summary="$out_dir/$name-summary.csv" -v dat="$out_dir/$name.dat" '
function stats(key,    n, i, j, v, x) {
	n = cnt[key]
	for (i = 1; i <= n; i++) v[i] = val[key, i]
	for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
	LO = v[1]; HI = v[n]
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
NR > 1 && $5 == "ok" { key = $2 SUBSEP $3; val[key, ++cnt[key]] = $6 + 0 }
END {
	nl = split(labels, L, ","); S[1] = "empty"; S[2] = "counter"
	for (s = 1; s <= 2; s++)
		for (i = 1; i <= nl; i++) {
			key = S[s] SUBSEP L[i]
			if (cnt[key] > 0) { med[key] = stats(key); lo[key] = LO; hi[key] = HI }
		}
	print "critical_section,lock,runs_ok,runs,ns_median,ns_min,ns_max,ratio_to_glibc,ratio_to_ck_ticket" > summary
	printf "== Uncontended lock+unlock pair, ns (one thread; best of 5 rounds of %d pairs per run;\n", pairs
	printf "   median [min-max] of %d interleaved runs; ratios of the medians)\n", repeats
	printf "%-15s %20s %7s %7s   %20s %7s %7s\n", "lock", "empty", "/glibc", "/ck-tkt", "one counter++", "/glibc", "/ck-tkt"
	printf "# lock, then median min max for empty and for counter\n" > dat
	for (i = 1; i <= nl; i++) {
		printf "%-15s", L[i]
		printf "%s", L[i] > dat
		for (s = 1; s <= 2; s++) {
			key = S[s] SUBSEP L[i]; g = S[s] SUBSEP "glibc"; c = S[s] SUBSEP "ck-ticket"
			rg = ((key in med) && (g in med)) ? sprintf("%.2f", med[key] / med[g]) : ""
			rc = ((key in med) && (c in med)) ? sprintf("%.2f", med[key] / med[c]) : ""
			if (key in med) {
				printf " %20s %7s %7s ", sprintf("%.2f [%.2f-%.2f]", med[key], lo[key], hi[key]), rg == "" ? "-" : rg, rc == "" ? "-" : rc
				printf "%s,%s,%d,%d,%.3f,%.3f,%.3f,%s,%s\n", S[s], L[i], cnt[key], repeats, med[key], lo[key], hi[key], rg, rc > summary
				printf " %.3f %.3f %.3f", med[key], lo[key], hi[key] > dat
			} else {
				printf " %20s %7s %7s ", "FAILED", "-", "-"
				printf "%s,%s,0,%d,,,,,\n", S[s], L[i], repeats > summary
				printf " ? ? ?" > dat
			}
		}
		printf "\n"; printf "\n" > dat
	}
}' "$raw_csv"

gp=$(find_gnuplot)
plotted=0
if [ $plot -eq 1 ] && [ -n "$gp" ]; then
	cat >"$out_dir/$name.gp" <<EOF
set terminal ${gp#*|} size 1000,500
set output '$out_dir/$name.png'
set title 'uncontended lock+unlock pair: median and range of $repeats runs (best of 5 rounds each)'
set ylabel 'ns per pair'
set yrange [0:*]
set style data histogram
set style histogram errorbars gap 1 lw 1
set style fill solid 0.6 border -1
set xtics rotate by -20
set grid ytics
set key top left
set datafile missing '?'
plot '$out_dir/$name.dat' using 2:3:4:xtic(1) title 'empty critical section', '' using 5:6:7 title 'one counter++'
EOF
	if "${gp%%|*}" "$out_dir/$name.gp" >"$tmp/gp.log" 2>&1 && [ -s "$out_dir/$name.png" ]; then
		plotted=1
	else
		echo "$PROG: gnuplot failed:" >&2; sed "s/^/$PROG:   /" "$tmp/gp.log" >&2
	fi
elif [ $plot -eq 1 ]; then
	echo "$PROG: gnuplot not found: no graph" >&2
fi
echo
echo "every run: $raw_csv"
echo "per cell:  $out_dir/$name-summary.csv"
[ $plotted -eq 0 ] || echo "graph:     $out_dir/$name.png"
if [ ${#failures[@]} -gt 0 ]; then
	echo "$PROG: ${#failures[@]} of $total_runs runs failed and are left out" >&2
	exit 1
fi
exit 0
