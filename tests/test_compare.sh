#!/bin/bash
# ticketspin-compare on any command (issue 41, item 4):
#   - a command that prints no throughput line (tests/lockprobe hammer, which
#     takes a spinlock) is compared by its wall, user and sys time: a row for glibc
#     and for each mode with "median [min-max]" of each, every run in the CSV
#     with its three times, at no thread count ("-"), the repeats interleaved
#     (repeat 2 starts from the second mode);
#   - a command that never calls pthread_spin_* (true) runs, with a warning;
#     one that does (lockprobe) gets none;
#   - {threads} sweeps as before, and the title shows the command as run,
#     with T and the counts in place of {threads}, on stdout and in the graph;
#   - --threads without {threads} is a usage error (exit status 2), and so
#     is a --lib that is not there;
#   - the defaults (modes, thread counts, repeats, output directory) and
#     each default mode's TICKET_* settings are the man page's; --mode adds
#     a mode, --env sets a variable in every ticketspin mode;
#   - SIGINT and SIGTERM end it with status 130;
#   - a bare example name is found among the example programs
#     (TICKETSPIN_EXAMPLES_DIR here, the build tree's or $(libexecdir)'s
#     otherwise), and is "not found" where it is not.
# Tiny runs only: nothing here depends on how fast a mode is.  COMPARE may
# name another copy of the script (to see this test fail against it).
# Run by 'make check' (tests/Makefile.am) from the build's tests/ directory.
set -u

compare=${COMPARE:-../tools/ticketspin-compare}
# absolute: one case runs it from another directory
case $compare in /*) ;; *) compare=$PWD/$compare ;; esac
lockprobe=$PWD/lockprobe
semaphore=$(cd ../examples 2>/dev/null && pwd -P)/semaphore
lib=${TICKETSPIN_LIB:-../preload/.libs/libticketspin.so}
# ThreadSanitizer's runtime interposes pthread_spin_* itself: under a TSan
# build the commands' provider is its runtime, and every ticketspin run is
# refused as not ours, rightly.
if command -v objdump >/dev/null && objdump -p "$lib" | grep -qE 'NEEDED +libtsan\.so'; then
	echo "a ThreadSanitizer build: its runtime provides pthread_spin_*"
	exit 77
fi
failures=0

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

for f in "$compare" "$lockprobe" "$semaphore" "$lib"; do
	[ -e "$f" ] || { echo "ERROR: $f not found"; exit 99; }
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/ticketspin-test-compare.XXXXXX") || exit 99
trap 'rm -rf "$dir"' EXIT
have_gnuplot=0
command -v gnuplot >/dev/null 2>&1 && have_gnuplot=1

# run ARG...: ticketspin-compare with ARGs (and a time limit that turns a hang
# into a failure soon); status in $status, output in $dir/stdout and
# $dir/stderr
run() {
	"$compare" --timeout 20 "$@" >"$dir/stdout" 2>"$dir/stderr"
	status=$?
}
show() {
	echo "--- stdout"; cat "$dir/stdout"; echo "--- stderr"; cat "$dir/stderr"
}

# ---- a command with no throughput line: wall, user and sys ----------------
run -q -r 2 -m glibc,off,auto --lib "$lib" -o "$dir/out" -n spin -- "$lockprobe" hammer 2 1 20000
if [ "$status" -ne 0 ]; then
	fail "lockprobe: status $status, not 0"; show
else
	grep -q '^time, seconds: median \[min-max\] of 2 runs' "$dir/stdout" ||
		{ fail "lockprobe: no time table"; show; }
	# mode, then wall, user and sys: "0.012 [0.011-0.013]" each
	cell='[0-9]+\.[0-9]{3} \[[0-9]+\.[0-9]{3}-[0-9]+\.[0-9]{3}\]'
	for mode in glibc off auto; do
		grep -Eq "^$mode +$cell +$cell +$cell +" "$dir/stdout" ||
			{ fail "lockprobe: no '$mode' row with wall, user and sys"; show; }
	done
	csv=$dir/out/spin.csv
	head -n 1 "$csv" | grep -q '^name,mode,threads,repeat,throughput,wall_seconds,user_seconds,sys_seconds,' ||
		fail "lockprobe: CSV header: $(head -n 1 "$csv")"
	# six runs, every one ok, at no thread count, its three times numbers
	good=$(awk -F, 'NR > 1 && $3 == "-" && $NF == "ok" &&
	                $6 ~ /^[0-9]+\.[0-9]+$/ && $7 ~ /^[0-9]+\.[0-9]+$/ && $8 ~ /^[0-9]+\.[0-9]+$/' "$csv" | wc -l)
	[ "$good" -eq 6 ] || { fail "lockprobe: $good of 6 runs ok with three times:"; cat "$csv"; }
	order=$(awk -F, 'NR > 1 { printf "%s ", $2 }' "$csv")
	[ "$order" = "glibc off auto off auto glibc " ] ||
		fail "lockprobe: runs not interleaved as expected: $order"
	grep -q '^glibc,-,2,2,' "$dir/out/spin-summary.csv" ||
		{ fail "lockprobe: summary:"; cat "$dir/out/spin-summary.csv"; }
	grep -q 'do not call pthread_spin_lock' "$dir/stderr" &&
		fail "lockprobe takes a spinlock, but was said not to: $(cat "$dir/stderr")"
	if [ $have_gnuplot -eq 1 ]; then
		[ -s "$dir/out/spin.png" ] || { fail "lockprobe: no graph"; show; }
	fi
fi
[ $failures -eq 0 ] && echo "ok: lockprobe compared by wall, user and sys time, interleaved"

# ---- a command that never calls pthread_spin_*: runs, with a warning ------
f0=$failures
run -q -r 1 -m glibc,auto --lib "$lib" -o "$dir/out" -n true --no-plot -- true
[ "$status" -eq 0 ] || { fail "true: status $status, not 0"; show; }
grep -q 'do not call pthread_spin_lock' "$dir/stderr" ||
	{ fail "true: no warning that it does not call pthread_spin_lock"; show; }
[ $failures -eq $f0 ] && echo "ok: true runs in every mode, with a warning"

# ---- a sweep, the title, and an example found by its bare name ------------
f0=$failures
mkdir -p "$dir/libexec" && ln -s "$semaphore" "$dir/libexec/ts-semaphore" || exit 99
TICKETSPIN_EXAMPLES_DIR=$dir/libexec \
	run -q -t 1,2 -r 1 -m glibc,auto --lib "$lib" -o "$dir/out" -n sweep -- \
	ts-semaphore --threads {threads} --seconds 0.05
if [ "$status" -ne 0 ]; then
	fail "sweep: status $status, not 0"; show
else
	shown='ts-semaphore --threads T --seconds 0.05 (T = 1,2)'
	grep -qxF "== sweep: $shown" "$dir/stdout" || { fail "sweep: title on stdout"; show; }
	grep -q '{threads}' "$dir/stdout" && fail "sweep: {threads} shown on stdout"
	for t in 1 2; do
		grep -Eq "^ +$t +[0-9.]+[kMG]? +[0-9.]+[kMG]?$" "$dir/stdout" ||
			{ fail "sweep: no throughput row at $t threads"; show; }
	done
	ok=$(grep -c ',ok$' "$dir/out/sweep.csv")
	[ "$ok" -eq 4 ] || { fail "sweep: $ok of 4 runs ok"; cat "$dir/out/sweep.csv"; }
	if [ $have_gnuplot -eq 1 ]; then
		grep -qxF "set title '$shown'" "$dir/out/sweep.gp" ||
			{ fail "sweep: the graph's title:"; grep title "$dir/out/sweep.gp"; }
		[ -s "$dir/out/sweep.png" ] || { fail "sweep: no graph"; show; }
	fi
fi
[ $failures -eq $f0 ] && echo "ok: a sweep of an example found by name, its title as run"

# without the examples directory the name is not found
f0=$failures
TICKETSPIN_EXAMPLES_DIR=$dir/nowhere \
	run -q -m glibc --lib "$lib" -o "$dir/out" -- ts-semaphore --seconds 0.05
[ "$status" -eq 2 ] && grep -q "command not found: ts-semaphore" "$dir/stderr" ||
	{ fail "ts-semaphore without its directory: status $status"; show; }
[ $failures -eq $f0 ] && echo "ok: an example outside the examples directory is not found"

# ---- a throughput with no sweep: one bar per mode ------------------------
f0=$failures
run -q -r 1 -m glibc,auto --lib "$lib" -o "$dir/out" -n bars -- \
	"$semaphore" --threads 2 --seconds 0.05
if [ "$status" -ne 0 ]; then
	fail "bars: status $status, not 0"; show
else
	grep -Eq '^ +- +[0-9.]+[kMG]? +[0-9.]+[kMG]?$' "$dir/stdout" ||
		{ fail "bars: no throughput row at no thread count"; show; }
	if [ $have_gnuplot -eq 1 ]; then
		[ -s "$dir/out/bars.png" ] || { fail "bars: no graph"; show; }
	fi
fi
[ $failures -eq $f0 ] && echo "ok: a throughput with no sweep"

# ---- --threads without {threads}: a usage error ---------------------------
f0=$failures
run -t 1,2 --lib "$lib" -o "$dir/out" -- true
[ "$status" -eq 2 ] && grep -q 'no {threads} placeholder' "$dir/stderr" ||
	{ fail "-t without {threads}: status $status"; show; }
[ $failures -eq $f0 ] && echo "ok: --threads without {threads} refused"

# ---- a library that is not there: a usage error ---------------------------
f0=$failures
run -q -m glibc,auto --lib "$dir/no-such-lib.so" -o "$dir/out" -- true
[ "$status" -eq 2 ] && grep -q -- "--lib: no such file: $dir/no-such-lib.so" "$dir/stderr" ||
	{ fail "--lib of a missing file: status $status, not 2"; show; }
[ $failures -eq $f0 ] && echo "ok: a missing library is a usage error (status 2)"

# ---- the defaults (ticketspin-compare(1)): --threads 1,2,4,8, --modes
# glibc,off,10,50,250,auto-single,auto-hashed,auto, --repeats 3, --out
# ./ticketspin-compare-out, the name from COMMAND ----------------------------
f0=$failures
mkdir "$dir/cwd" || exit 99
(cd "$dir/cwd" && "$compare" --timeout 20 -q --no-plot --lib "$lib" -- true {threads}) \
	>"$dir/stdout" 2>"$dir/stderr"
status=$?
csv=$dir/cwd/ticketspin-compare-out/true.csv
if [ "$status" -ne 0 ] || ! [ -f "$csv" ]; then
	fail "defaults: status $status, no $csv"; show
else
	column_set() { awk -F, -v c="$1" 'NR > 1 { print $c }' "$csv" | sort -u | tr '\n' ' '; }
	[ "$(column_set 2)" = "10x 250x 50x auto auto-hashed auto-single glibc off " ] ||
		fail "defaults: modes $(column_set 2)"
	[ "$(column_set 3)" = "1 2 4 8 " ] || fail "defaults: thread counts $(column_set 3)"
	[ "$(column_set 4)" = "1 2 3 " ] || fail "defaults: repeats $(column_set 4)"
	[ "$(grep -c ',ok$' "$csv")" -eq 96 ] ||
		{ fail "defaults: not 8 modes x 4 thread counts x 3 repeats ok:"; cat "$csv"; }
fi
[ $failures -eq $f0 ] && echo "ok: the defaults: 8 modes, threads 1,2,4,8, 3 repeats, ./ticketspin-compare-out"

# The command of the two cases below, run as sh -c "$write_envs" FILE: appends
# to FILE, on one line, the TICKET_* variables it got (but the two every
# preloaded mode sets), sorted.
write_envs='env | grep "^TICKET_" | grep -v -e "^TICKET_VERBOSE=1$" -e "^TICKET_STRICT=1$" |
	sort | tr "\n" " " >>"$0"; echo >>"$0"'
# modes_and_envs CSV: "mode|variables", a line per run: each run's mode from
# CSV beside the line its command wrote to $dir/envs (both in run order)
modes_and_envs() {
	awk -F, 'NR > 1 { print $2 }' "$1" | paste -d '|' - "$dir/envs"
}

# ---- each mode's settings, as ticketspin-compare(1) gives them: glibc no
# preload; off and N TICKET_DELAY=off and =N, auto-single and auto-hashed
# TICKET_DELAY=series with their table, all four strict FIFO
# (TICKET_QUEUE=0); auto TICKET_DELAY=auto.  The command writes the TICKET_*
# variables it got (but the two every preloaded mode sets) in run order,
# the order of the CSV's rows. --------------------------------------------
f0=$failures
: >"$dir/envs"
run -q --no-plot -r 1 --lib "$lib" -o "$dir/out" -n envs -- \
	sh -c "$write_envs" "$dir/envs"
if [ "$status" -ne 0 ]; then
	fail "modes' settings: status $status"; show
else
	got=$(modes_and_envs "$dir/out/envs.csv")
	expect='glibc|
off|TICKET_DELAY=off TICKET_QUEUE=0 
10x|TICKET_DELAY=10 TICKET_QUEUE=0 
50x|TICKET_DELAY=50 TICKET_QUEUE=0 
250x|TICKET_DELAY=250 TICKET_QUEUE=0 
auto-single|TICKET_DELAY=series TICKET_DELAY_TABLE=single TICKET_QUEUE=0 
auto-hashed|TICKET_DELAY=series TICKET_DELAY_TABLE=hashed TICKET_QUEUE=0 
auto|TICKET_DELAY=auto '
	[ "$(printf '%s\n' "$got" | sort)" = "$(printf '%s\n' "$expect" | sort)" ] ||
		fail "modes' settings, mode|variables:
$got"
fi
[ $failures -eq $f0 ] && echo "ok: each default mode's settings"

# ---- --mode 'NAME VAR=VALUE...' adds a mode of one's own; --env VAR=VALUE
# sets a variable in every ticketspin mode (not in glibc's) -----------------
f0=$failures
: >"$dir/envs"
run -q --no-plot -r 1 -m glibc,auto --mode 'mine TICKET_DELAY=7 TICKET_BYPASS=3' \
	-e TICKET_SPIN=99 --lib "$lib" -o "$dir/out" -n envs2 -- \
	sh -c "$write_envs" "$dir/envs"
if [ "$status" -ne 0 ]; then
	fail "--mode and --env: status $status"; show
else
	got=$(modes_and_envs "$dir/out/envs2.csv")
	expect='glibc|
auto|TICKET_DELAY=auto TICKET_SPIN=99 
mine|TICKET_BYPASS=3 TICKET_DELAY=7 TICKET_SPIN=99 '
	[ "$(printf '%s\n' "$got" | sort)" = "$(printf '%s\n' "$expect" | sort)" ] ||
		fail "--mode and --env, mode|variables:
$got"
fi
[ $failures -eq $f0 ] && echo "ok: --mode adds a mode, --env sets a variable in every ticketspin mode"

# ---- interrupted: status 130 (ticketspin-compare(1), EXIT STATUS) ---------
# (SIGINT as from a terminal, and SIGTERM, which would give 143 without the
# script's trap; the run under way ends first.  An asynchronous command
# ignores SIGINT, and so does everything started where SIGINT was ignored
# already (a CI job in the background), which no trap in a non-interactive
# shell can undo: env --default-signal gives the command the default back.)
for sig in INT TERM; do
	f0=$failures
	rm -f "$dir/out/intr.csv"
	( exec env --default-signal=INT "$compare" --timeout 20 -q -r 100 -m glibc --no-plot -o "$dir/out" \
		-n intr -- sleep 0.2 ) >"$dir/stdout" 2>"$dir/stderr" &
	pid=$!
	for _ in $(seq 100); do
		[ "$(cat "$dir/out/intr.csv" 2>/dev/null | grep -c .)" -ge 2 ] && break
		sleep 0.05
	done
	kill -s "$sig" "$pid"
	wait "$pid"
	status=$?
	[ "$status" -eq 130 ] || { fail "SIG$sig: status $status, not 130"; show; }
	[ $failures -eq $f0 ] && echo "ok: SIG$sig: status 130"
done

if [ $failures -gt 0 ]; then
	echo "$failures failure(s)"
	exit 1
fi
exit 0
