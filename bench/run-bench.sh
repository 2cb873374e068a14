#!/bin/bash
# run-bench.sh LIB UNCONTENDED CONTEND - the benchmark suite behind 'make bench'.
#
# Runs glibc and ticketspin side by side, interleaved run by run so that the
# drift of a noisy machine hits every mode alike, and prints medians and
# ratios to glibc.  Knobs: BENCH_REPEATS (3), BENCH_SECONDS (1),
# BENCH_THREADS ("1 2 3 4 8 16").
set -eu
lib=$1 uncontended=$2 contend=$3
repeats=${BENCH_REPEATS:-3}
seconds=${BENCH_SECONDS:-1}
threads=${BENCH_THREADS:-"1 2 3 4 8 16"}

[ -f "$lib" ] || { echo "run-bench: library not found: $lib" >&2; exit 1; }
# Every mode starts from a clean environment: no inherited TICKET_* or preload.
clean_env() { env -u LD_PRELOAD $(env | sed -n 's/^\(TICKET_[A-Z_]*\)=.*/-u \1/p') "$@"; }

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

# run MODE COMMAND...: one run, provider checked, output on stdout
run() {
    local mode=$1; shift
    local out
    case $mode in
        glibc) out=$(clean_env "$@") ;;
        ticketspin) out=$(clean_env LD_PRELOAD="$lib" "$@") ;;
        plain) out=$(clean_env LD_PRELOAD="$lib" TICKET_DELAY=off TICKET_WAIT=spin TICKET_QUEUE=0 "$@") ;;
    esac
    case "$mode:$out" in
        glibc:*libticketspin*|ticketspin:*libc.so*|plain:*libc.so*)
            echo "run-bench: $mode run used the wrong provider: $out" >&2; exit 1 ;;
    esac
    echo "$out"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== Uncontended lock+unlock pair, ns (best of 5 rounds per run, median of $repeats runs)"
printf '%-34s %8s %10s %6s\n' "critical section" glibc ticketspin ratio
for cs in 0 1; do
    for r in $(seq "$repeats"); do
        for mode in glibc ticketspin; do
            run "$mode" "$uncontended" 50000000 "$cs" | awk '{print $1}' >> "$tmp/unc.$mode.$cs"
        done
    done
    g=$(median < "$tmp/unc.glibc.$cs"); t=$(median < "$tmp/unc.ticketspin.$cs")
    awk -v g="$g" -v t="$t" -v cs="$cs" 'BEGIN {
        printf "%-34s %8.2f %10.2f %6.2f\n", cs ? "one counter++ (a load and a store)" : "empty", g, t, t / g }'
done
echo
echo "== Contended: one lock, short critical section writing the lock's cache line,"
echo "   short think time; $seconds s per run, median of $repeats runs (fairness:"
echo "   min/max acquisitions per thread).  plain = TICKET_DELAY=off TICKET_WAIT=spin TICKET_QUEUE=0"
for t in $threads; do
    for r in $(seq "$repeats"); do
        for mode in glibc ticketspin plain; do
            run "$mode" "$contend" "$t" "$seconds" | awk '{print $2, $3}' >> "$tmp/c.$mode.$t"
        done
    done
done
printf '%7s | %12s %5s | %12s %5s %6s | %12s %5s %6s\n' threads glibc fair ticketspin fair ratio plain fair ratio
for t in $threads; do
    for mode in glibc ticketspin plain; do
        eval "ops_$mode=\$(awk '{print \$1}' '$tmp/c.$mode.$t' | median)"
        eval "fair_$mode=\$(awk '{print \$2}' '$tmp/c.$mode.$t' | median)"
    done
    awk -v t="$t" -v g="$ops_glibc" -v gf="$fair_glibc" -v s="$ops_ticketspin" \
        -v sf="$fair_ticketspin" -v p="$ops_plain" -v pf="$fair_plain" 'BEGIN {
        printf "%7d | %12.0f %5.2f | %12.0f %5.2f %6.2f | %12.0f %5.2f %6.3f\n",
               t, g, gf, s, sf, s / g, p, pf, p / g }'
done
