#!/bin/bash
# The USDT probes (preload/probes.h, doc/tracing.md), in the built library:
#   1. readelf -n lists a stapsdt note for each probe, provider ticketspin,
#      with its number of arguments and a semaphore (sys/sdt.h's, which
#      the slow path reads before it times a wait);
#   2. no probe lies inside the five exported functions (the fast paths
#      stay as test_fastpath.sh wants them);
#   3. where perf can attach uprobes here, wait_begin and acquired fire
#      during a contended run (tests/contended: main holds the lock while
#      a worker queues), and acquired reports a wait's length: its
#      semaphore was seen set, so the wait was timed.  Where perf is missing
#      or the kernel refuses, part 3 says why and is skipped.
# A build without sys/sdt.h (configure warned) has no probes: skipped.
# Run by 'make check' from the build's tests/.
set -u

lib=${TICKETSPIN_LIB:-../preload/.libs/libticketspin.so}
config_h=../config.h
contended=./contended
failures=0

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

for f in "$lib" "$config_h"; do
	[ -e "$f" ] || { echo "ERROR: $f not found"; exit 99; }
done
command -v readelf >/dev/null || { echo "SKIP: readelf not found (binutils)"; exit 77; }
if ! grep -q '^#define HAVE_SYS_SDT_H 1' "$config_h"; then
	echo "SKIP: built without sys/sdt.h, so without probes" \
	     "(install systemtap-sdt-dev and run configure again)"
	exit 77
fi

# name and number of arguments of every probe (probes.h)
want="wait_begin:2 acquired:3 sleep:3 wake:3 rest:2 doze:2 stall:3"

# One line per stapsdt note: provider name location semaphore nargs.
notes=$(LC_ALL=C readelf -n "$lib" | awk '
	/^ *Provider:/ { prov = $2 }
	/^ *Name:/ { name = $2 }
	/^ *Location:/ { loc = $2; sub(/,$/, "", loc); sem = $NF }
	/^ *Arguments:/ {
		print prov, name, loc, sem, NF - 1
		prov = name = loc = sem = ""
	}')
echo "== stapsdt notes (provider name location semaphore arguments):"
printf '%s\n' "$notes" | sed 's/^/   /'

for probe in $want; do
	name=${probe%%:*}
	nargs=${probe##*:}
	lines=$(printf '%s\n' "$notes" | awk -v n="$name" '$1 == "ticketspin" && $2 == n')
	if [ -z "$lines" ]; then
		fail "no probe ticketspin:$name in $lib"
		continue
	fi
	printf '%s\n' "$lines" | awk -v k="$nargs" '$5 != k { exit 1 }' ||
		fail "ticketspin:$name: not $nargs arguments at every site"
	printf '%s\n' "$lines" | awk '$4 ~ /^0x0*$/ { exit 1 }' ||
		fail "ticketspin:$name: a site without a semaphore"
done
others=$(printf '%s\n' "$notes" | awk '$1 != "ticketspin" && NF' | sort -u)
[ -z "$others" ] || fail "notes of another provider: $others"
names=$(printf '%s\n' "$notes" | awk 'NF { print $2 }' | sort -u | tr '\n' ' ')
for name in $names; do
	case " $want " in
	*" $name:"*) ;;
	*) fail "ticketspin:$name is not in this test's list (nor, then, in doc/tracing.md?)" ;;
	esac
done

# 2. Not on a fast path: no location inside an exported function.
ranges=$(LC_ALL=C readelf -W --dyn-syms "$lib" |
	awk '$4 == "FUNC" && $7 != "UND" && $8 ~ /^pthread_spin_/ { print $8, $2, $3 }')
[ -n "$ranges" ] || fail "no pthread_spin_* function found in $lib"
while read -r fn start size; do
	[ -n "$fn" ] || continue
	while read -r _ name loc _; do
		[ -n "$loc" ] || continue
		(( loc >= 0x$start && loc < 0x$start + size )) &&
			fail "ticketspin:$name at $loc, inside $fn: a probe on a fast path"
	done <<<"$notes"
done <<<"$ranges"

# 3. Does a probe fire?  perf adds uprobes through tracefs (it mounts it
# itself where allowed); a kernel without uprobes, an unprivileged user or a
# container refuses.  perf names SDT events sdt_PROVIDER:NAME, for the whole
# system, with no group of our own: runs of this test take turns (flock),
# and events of that name that are not ours (a user's perf session, or a
# run that was killed) are left alone, and the part skipped.  perf's
# build-id cache goes to the temporary directory, not to ~/.debug.
skip_firing() {
	echo "SKIP (whether the probes fire): $1"
}
events="sdt_ticketspin:wait_begin sdt_ticketspin:acquired"
if [ $failures -eq 0 ]; then
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/ticketspin-usdt.XXXXXX") || exit 99
	added=""
	cleanup() {
		for event in $added; do
			perf probe -q -d "$event" >/dev/null 2>&1
		done
		rm -rf "$tmp"
	}
	trap cleanup EXIT
	export PERF_BUILDID_DIR=$tmp/debug
	if ! command -v perf >/dev/null; then
		skip_firing "perf not found (Debian: linux-perf)"
	elif ! command -v flock >/dev/null; then
		skip_firing "flock not found (util-linux), to take turns with other runs"
	elif [ ! -x "$contended" ]; then
		echo "ERROR: $contended not found"
		exit 99
	elif ! exec 9>"${TMPDIR:-/tmp}/ticketspin-test-usdt.lock" || ! flock -w 120 9; then
		skip_firing "another run of this test held the lock for 2 minutes"
	else
		for event in $events; do
			if ! perf probe -q -x "$lib" -a "$event" >"$tmp/probe.log" 2>&1; then
				skip_firing "perf probe cannot add $event here: $(tr '\n' ' ' <"$tmp/probe.log" | cut -c1-300)"
				break
			fi
			added="$added $event"
		done
	fi
	if [ -n "$added" ] && [ "$added" = " $events" ]; then
		if ! perf record -q -N -o "$tmp/perf.data" -e sdt_ticketspin:wait_begin \
		          -e sdt_ticketspin:acquired -- "$contended" 2 2000 1 >"$tmp/record.log" 2>&1; then
			skip_firing "perf record refused: $(tr '\n' ' ' <"$tmp/record.log" | cut -c1-300)"
		else
			perf script -i "$tmp/perf.data" -F event,trace >"$tmp/script.txt" 2>"$tmp/script.log"
			begins=$(grep -c 'sdt_ticketspin:wait_begin:' "$tmp/script.txt")
			acquired=$(grep -c 'sdt_ticketspin:acquired:' "$tmp/script.txt")
			# arg2: the wait's length in ns, 0 if the semaphore read 0 (and
			# missing where the compiler made it a constant, which perf
			# cannot fetch): count only lengths that are there and not 0
			timed=$(grep 'sdt_ticketspin:acquired:' "$tmp/script.txt" |
				grep -cE ' arg2=[1-9]')
			echo "== perf: $begins wait_begin, $acquired acquired ($timed with a wait's length); the first:"
			head -n 4 "$tmp/script.txt" | sed 's/^ */   /'
			[ "$begins" -gt 0 ] || fail "wait_begin never fired in a contended run"
			[ "$acquired" -gt 0 ] || fail "acquired never fired in a contended run"
			[ "$timed" -gt 0 ] ||
				fail "acquired never reported a wait's length (its semaphore not read?)"
		fi
	fi
fi

[ $failures -eq 0 ] && echo "probes: as they should be"
[ $failures -eq 0 ]
