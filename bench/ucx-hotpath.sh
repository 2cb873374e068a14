#!/bin/bash
# ucx-hotpath.sh LIB [RUNS] - issue 19's "real uncontended hot path": UCX's
# loopback tag benchmark (one thread; its worker lock is a pthread spinlock
# taken about 2.2 times per message) under glibc, under LIB, and under the
# stand-in preloads of fastpath-variants.c, interleaved, RUNS rounds (9),
# pinned to CPU 0 (on this VM the two virtual CPUs run it at 16 and 25 M
# msg/s: unpinned, the run's CPU decides the figure).  Prints each one's
# messages per second, median [min-max], and its ratio to glibc's median.
# Needs ucx_perftest (Debian: ucx-utils) and a C compiler.  Exit status 2
# when either is missing.
set -u
lib=${1:?usage: ucx-hotpath.sh LIB [RUNS]}
runs=${2:-9}
here=$(cd "$(dirname "$0")" && pwd)
cc=${CC:-cc}
command -v ucx_perftest >/dev/null || { echo "ucx-hotpath: ucx_perftest not found (apt-get install ucx-utils)"; exit 2; }
command -v "$cc" >/dev/null || { echo "ucx-hotpath: no C compiler ($cc)"; exit 2; }
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
variants="GLIBC XCHG CAS CAS_BYTE XCHG_BYTE XCHG_BYTE_LOAD XCHG_BYTE_LOAD_HI XCHG_BYTE_MODE CAS8_LOAD_HI BTS XADD"
for v in $variants; do
	"$cc" -O2 -fPIC -shared -D"VARIANT_$v" -o "$tmp/$v.so" "$here/fastpath-variants.c" ||
		{ echo "ucx-hotpath: building the $v stand-in failed"; exit 2; }
done
names="glibc ticketspin $variants"
for run in $(seq 1 "$runs"); do
	for name in $names; do
		case $name in
		glibc) pre= ;;
		ticketspin) pre=$lib ;;
		*) pre=$tmp/$name.so ;;
		esac
		rate=$(env LD_PRELOAD="$pre" taskset -c 0 ucx_perftest -l -t tag_bw -M multi -n 2000000 2>/dev/null |
			awk '/^Final:/ { print $NF }')
		[ -n "$rate" ] || { echo "ucx-hotpath: ucx_perftest failed under $name"; exit 1; }
		echo "$name $rate"
	done
done >"$tmp/rates"
echo "ucx_perftest -l -t tag_bw -M multi -n 2000000, pinned to CPU 0; $runs interleaved runs; messages/s"
cat >"$tmp/summary.awk" <<'AWK'
{ runs[$1]++; val[$1, runs[$1], 1] = $2 }
END {
	split(order, names, " ")
	stats("glibc", 1); base = M
	for (i = 1; i in names; i++) {
		stats(names[i], 1)
		printf "  %-14s %6.2f M [%.2f-%.2f]  %.3fx glibc\n", names[i], M / 1e6, LO / 1e6,
		       HI / 1e6, M / base
	}
}
AWK
awk -v order="$names" -f "$here/cell-stats.awk" -f "$tmp/summary.awk" "$tmp/rates"
