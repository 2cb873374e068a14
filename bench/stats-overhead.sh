#!/bin/bash
# stats-overhead.sh LIB LOCKS LOCKPAIR - what TICKET_STATS costs: the
# same programs with statistics off and on, runs interleaved (off, on, off,
# on, ...) so that the drift of a noisy machine hits both alike.  Prints,
# per thread count, the median throughput of each and the median and range
# of the on/off ratios of adjacent pairs; and the uncontended lock+unlock
# pair in ns.  Knobs: STATS_BENCH_RUNS (5), STATS_BENCH_SECONDS (0.5),
# STATS_BENCH_THREADS ("2 4 16"), STATS_BENCH_WORK ("0 30 100": where the
# lock is the bottleneck, and where it is less).  Run by 'make bench'.
set -eu
lib=$1 locks=$2 lockpair=$3
runs=${STATS_BENCH_RUNS:-5}
seconds=${STATS_BENCH_SECONDS:-0.5}
threads=${STATS_BENCH_THREADS:-"2 4 16"}
works=${STATS_BENCH_WORK:-"0 30 100"}

[ -f "$lib" ] || { echo "stats-overhead: library not found: $lib" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -m 700 "$tmp/run"

# No inherited TICKET_* or preload; statistics files go to a private directory.
clean_env() { env -u LD_PRELOAD $(env | sed -n 's/^\(TICKET_[A-Z_]*\)=.*/-u \1/p') "$@"; }

# run off|on COMMAND...: one run, its stdout; the provider must be ours
run() {
    local mode=$1 out
    shift
    if [ "$mode" = on ]; then
        out=$(clean_env LD_PRELOAD="$lib" XDG_RUNTIME_DIR="$tmp/run" TICKET_STATS=1 "$@" 2>"$tmp/err")
        grep -q "ticketspin: stats: pid " "$tmp/err" ||
            { echo "stats-overhead: no report with stats on:" >&2; cat "$tmp/err" >&2; exit 1; }
    else
        out=$(clean_env LD_PRELOAD="$lib" "$@")
    fi
    case $out in
    *libticketspin*) ;;
    *) echo "stats-overhead: $mode run did not use the library: $out" >&2; exit 1 ;;
    esac
    echo "$out"
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
range() { sort -g | awk 'NR==1 {lo=$1} {hi=$1} END {printf "%.2f-%.2f", lo, hi}'; }

# field NAME: the value of NAME= in the harness's key=value line
field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }

echo "== TICKET_STATS overhead: bench/locks, $seconds s per run, $runs runs of each, interleaved"
echo "   ratio = stats on / stats off, of adjacent runs: median and range"
printf '%4s %7s | %12s | %12s | %6s %11s\n' work threads "off ops/s" "on ops/s" ratio range
for w in $works; do
for t in $threads; do
    : > "$tmp/off" ; : > "$tmp/on"; : > "$tmp/ratio"
    for r in $(seq "$runs"); do
        off=$(run off "$locks" --lock=spin --threads="$t" --work="$w" --seconds="$seconds" | field ops_per_s)
        on=$(run on "$locks" --lock=spin --threads="$t" --work="$w" --seconds="$seconds" | field ops_per_s)
        echo "$off" >> "$tmp/off"
        echo "$on" >> "$tmp/on"
        awk -v a="$off" -v b="$on" 'BEGIN {print b / a}' >> "$tmp/ratio"
    done
    printf '%4d %7d | %12.0f | %12.0f | %6.2f %11s\n' "$w" "$t" "$(median < "$tmp/off")" \
        "$(median < "$tmp/on")" "$(median < "$tmp/ratio")" "$(range < "$tmp/ratio")"
done
done
echo
echo "== Uncontended lock+unlock pair, ns (best of 5 rounds per run), $runs runs of each"
printf '%7s | %12s | %12s | %6s %11s\n' "" "off ns" "on ns" ratio range
: > "$tmp/off" ; : > "$tmp/on"; : > "$tmp/ratio"
for r in $(seq "$runs"); do
    off=$(run off "$lockpair" --lock=spin | field ns_per_pair)
    on=$(run on "$lockpair" --lock=spin | field ns_per_pair)
    echo "$off" >> "$tmp/off"
    echo "$on" >> "$tmp/on"
    awk -v a="$off" -v b="$on" 'BEGIN {print b / a}' >> "$tmp/ratio"
done
printf '%7s | %12.2f | %12.2f | %6.2f %11s\n' pair "$(median < "$tmp/off")" \
    "$(median < "$tmp/on")" "$(median < "$tmp/ratio")" "$(range < "$tmp/ratio")"
