#!/bin/bash
# run-bench.sh LIB BENCH_BUILDDIR OUT - the library's part of 'make bench'.
#
# In order, all into OUT (default bench-out/):
#   1. the cost of one cache-line transfer between two CPUs (cacheline), and
#      the limit it sets on a FIFO lock handed over between two threads;
#   2. the uncontended lock+unlock pair for every lock (compare-uncontended.sh);
#   3. one contended lock, every lock, threads x work (compare-locks.sh);
#   4. the same under outside load: one CPU-bound hog per CPU beside the
#      harness (compare-locks.sh --hogs), glibc, pthread_mutex and ticketspin.
# Every run starts from a clean environment (no inherited TICKET_* or
# LD_PRELOAD); modes are interleaved run by run; figures are medians with the
# slowest and fastest run.  Knobs (environment):
#   BENCH_REPEATS (5)          runs per cell
#   BENCH_SECONDS (0.5)        length of one contended run
#   BENCH_THREADS (1,2,3,4,8,16), BENCH_WORK (0,100,1000)
#   BENCH_LOCKS                locks of scenario 3 (default: all eight)
#   BENCH_HOGS (CPUs)          hogs of scenario 4; BENCH_HOG_THREADS (2,3,4,8)
#   BENCH_PAIRS (10000000)     pairs per round of the uncontended runs
#   BENCH_ONLY                 a comma-separated subset of: cacheline,
#                              uncontended,contended,outside
# Exit status: 1 if any scenario had a failed run (the others still run).
set -u -o pipefail
lib=$1 bin=$2 out=${3:-bench-out}
here=$(cd "$(dirname "$0")" && pwd)
repeats=${BENCH_REPEATS:-5}
seconds=${BENCH_SECONDS:-0.5}
threads=${BENCH_THREADS:-1,2,3,4,8,16}
work=${BENCH_WORK:-0,100,1000}
locks=${BENCH_LOCKS:-glibc,ticketspin,mutex,mutex-adaptive,ck-ticket,ck-ticket-pb,ck-mcs,ck-fas}
hogs=${BENCH_HOGS:-$(nproc)}
hog_threads=${BENCH_HOG_THREADS:-2,3,4,8}
pairs=${BENCH_PAIRS:-10000000}
only=,${BENCH_ONLY:-cacheline,uncontended,contended,outside},
status=0
start=$SECONDS
mkdir -p "$out"

if [[ $only == *,cacheline,* ]]; then
	echo "== Cache-line transfer between two CPUs (bench/cacheline: a flag bounced between"
	echo "   two threads pinned to two CPUs; one transfer = half a round trip)"
	line=$("$bin/cacheline") || status=1
	echo "$line" | tee "$out/cacheline.txt"
	# A FIFO lock at 2 threads with no work between acquisitions moves the
	# lock's line at least twice per hand-over (the waiter reads the released
	# line; the former holder takes its next ticket, pulling it back), three
	# times when the new holder's writes must then fetch it once more.
	awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } }
	     END { if (f["transfer_ns_best"] > 0) {
	             t = f["transfer_ns_best"]
	             printf "   one transfer: %.1f ns (fastest round; median round %.1f ns)\n", t, f["transfer_ns_median"]
	             printf "   limit of a FIFO lock handed over at every acquisition, 2 threads, no work:\n"
	             printf "     2 transfers per hand-over: %.2f M acquisitions/s\n", 1e3 / (2 * t)
	             printf "     3 transfers per hand-over: %.2f M acquisitions/s\n", 1e3 / (3 * t) } }' \
		"$out/cacheline.txt" | tee -a "$out/cacheline.txt"
	echo
fi

if [[ $only == *,uncontended,* ]]; then
	bash "$here/compare-uncontended.sh" --harness "$bin/lockpair" --lib "$lib" --locks "$locks" \
		--pairs "$pairs" --repeats "$repeats" --out "$out" -q || status=1
	echo
fi

if [[ $only == *,contended,* ]]; then
	bash "$here/compare-locks.sh" --harness "$bin/locks" --lib "$lib" --locks "$locks" \
		--threads "$threads" --work "$work" --seconds "$seconds" --repeats "$repeats" \
		--out "$out" -q || status=1
	echo
fi

if [[ $only == *,outside,* ]]; then
	bash "$here/compare-locks.sh" --harness "$bin/locks" --lib "$lib" --locks glibc,mutex,ticketspin \
		--threads "$hog_threads" --work 100 --seconds "$seconds" --repeats "$repeats" \
		--hogs "$hogs" --hog "$bin/hog" --out "$out" -q || status=1
	echo
fi

echo "run-bench: $((SECONDS - start)) s; results in $(cd "$out" && pwd)/"
exit $status
