#!/bin/bash
# `ticketspin report` and `ticketspin top` layouts (tools/ticketspin-stats.c):
#   - not on a terminal, the default is the library's wide layout, unchanged
#     (the same bytes as --wide): a stable format for scripts and logs;
#   - --width=N and a terminal of N columns (under script(1)) fit every line
#     in N columns, the most useful columns first (lock, contended, wait
#     mean/p99/max, hold mean, call site), more as the width allows;
#   - --csv has a fixed header and one line per lock with every column;
#   - the three agree on each lock's numbers.
# The statistics come from tests/contended under the freshly built library,
# in a private XDG_RUNTIME_DIR.  Run by 'make check' from the build's tests/.
set -u

wrapper=../tools/ticketspin
contended=./contended
lib=${TICKETSPIN_LIB:-../preload/.libs/libticketspin.so}
failures=0

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

for f in "$wrapper" "$contended" "$lib"; do
	[ -e "$f" ] || { echo "ERROR: $f not found"; exit 99; }
done
XDG_RUNTIME_DIR=$(mktemp -d "${TMPDIR:-/tmp}/ticketspin-format.XXXXXX") || exit 99
export XDG_RUNTIME_DIR
trap 'rm -rf "$XDG_RUNTIME_DIR"' EXIT

# 4 workers, 2 locks: both contended (contended.c makes sure of it)
out=$(env -u LD_PRELOAD "$wrapper" --lib="$lib" --stats-keep --stats="$XDG_RUNTIME_DIR/at-exit" \
	"$contended" 4 20000 2 2>&1) || { echo "ERROR: contended failed: $out"; exit 99; }
case $out in
provider*libticketspin.so*) ;;
*) echo "ERROR: not run under the library: $out"; exit 99 ;;
esac
lock0=$(printf '%s\n' "$out" | awk '$1 == "lock" && $2 == 0 { print $3 }')
pid=$(sed -n 's/^stats: pid \([0-9]*\):.*/\1/p' "$XDG_RUNTIME_DIR/at-exit" | head -n 1)
[ -n "$lock0" ] && [ -n "$pid" ] || { echo "ERROR: no lock or pid in: $out"; exit 99; }
echo "contended: pid $pid, lock 0 at $lock0"

# COLUMNS unset: not on a terminal, the default is then the wide layout
report() {
	env -u LD_PRELOAD -u COLUMNS "$wrapper" report "$@"
}

# the wide layout: the library's, "stats: LOCK TOTAL CONTENDED ..."
wide=$(report --wide "$pid") || fail "report --wide failed"
contended_wide=$(printf '%s\n' "$wide" | awk -v l="$lock0" '$1 == "stats:" && $2 == l { print $4 }')
[ -n "$contended_wide" ] && [ "$contended_wide" -ge 1 ] ||
	fail "no row for $lock0 in the wide report: $wide"
default=$(report "$pid")
[ "$default" = "$wide" ] || fail "not on a terminal, the default is not --wide:
$default"

# fitted layouts: no line longer than asked, the first columns always there
check_fitted() { # WIDTH TEXT WHAT
	local width=$1 text=$2 what=$3 long header row
	long=$(printf '%s\n' "$text" | tr -d '\r' | awk -v w="$width" 'length($0) > w')
	[ -z "$long" ] || fail "$what: lines over $width columns:
$long"
	header=$(printf '%s\n' "$text" | tr -d '\r' | grep '^lock ')
	case $header in
	"lock "*contended*mean*p99*max*mean*"top call site"*) ;;
	*) fail "$what: columns missing or out of order: '$header'" ;;
	esac
	row=$(printf '%s\n' "$text" | tr -d '\r' | awk -v l="$lock0" '$1 == l')
	[ "$(printf '%s\n' "$row" | awk '{ print $2 }')" = "$contended_wide" ] ||
		fail "$what: contended of $lock0 is not the wide report's $contended_wide: '$row'"
	case $row in
	*contend_worker+0x*) ;;
	*) fail "$what: no call site in '$row'" ;;
	esac
	# ticketspin(1), --width: "the call site's object is shown without its
	# directory" (cut with "..." when the width is short)
	case $row in
	*'(/'* | */contended\)*) fail "$what: the call site's object with its directory: '$row'" ;;
	*'(contended)'* | *'(c'*'...' | *'(...') ;;
	*) fail "$what: no object in the call site: '$row'" ;;
	esac
	echo "ok: $what"
}
check_fitted 80 "$(report --width=80 "$pid")" "report --width=80"
text=$(report --width=250 "$pid")
check_fitted 250 "$text" "report --width=250"
for title in p99.9 total threads waited ahead polls delay yields parks rests skips dozed line steals wait-ms; do
	printf '%s\n' "$text" | grep -q "^lock .* $title " ||
		fail "--width=250: no column $title"
done
check_fitted 80 "$(env -u LD_PRELOAD "$wrapper" top --once --width=80 "$pid")" "top --once --width=80"
# not on a terminal, COLUMNS is the width asked for; a value that is no width is ignored
check_fitted 120 "$(env -u LD_PRELOAD COLUMNS=120 "$wrapper" report "$pid")" "report, COLUMNS=120"
check_fitted 120 "$(env -u LD_PRELOAD COLUMNS=120 "$wrapper" top --once "$pid")" "top --once, COLUMNS=120"
[ "$(env -u LD_PRELOAD COLUMNS=12x "$wrapper" report "$pid")" = "$wide" ] ||
	fail "COLUMNS=12x is not ignored"
# a terminal of 90 columns
if command -v script >/dev/null 2>&1; then
	tty_text=$(TERM=dumb script -qec "stty cols 90 rows 40; $wrapper report $pid" /dev/null)
	check_fitted 90 "$tty_text" "report on a 90-column terminal"
else
	echo "script(1) not found: terminal width not tested"
fi

# CSV: the documented header, every field of every row
header='time,pid,state,lock,total,contended,per_s,wait_total_ms,waited,wait_mean_us,wait_p99_us,wait_p999_us,wait_max_us,hold_mean_us,hold_p99_us,hold_max_us,holds,ahead_avg,ahead_max,polls,delay_now,delay_max,yields,parks,rests,skips,dozed,line,threads,steals,sites,site1,site1_share,site2,site2_share,site3,site3_share'
csv=$(report --csv "$pid") || fail "report --csv failed"
[ "$(printf '%s\n' "$csv" | head -n 1)" = "$header" ] || fail "CSV header changed: $(printf '%s\n' "$csv" | head -n 1)"
rows=$(printf '%s\n' "$csv" | tail -n +2)
[ "$(printf '%s\n' "$rows" | grep -c .)" -eq 2 ] || fail "CSV: not 2 rows: $csv"
# fields, with the quoted call sites (no comma in them here) taken as one
bad=$(printf '%s\n' "$rows" | awk -F, '{ gsub(/"[^"]*"/, "S") } NF != 37')
[ -z "$bad" ] || fail "CSV rows without 37 fields: $bad"
row=$(printf '%s\n' "$rows" | awk -F, -v l="$lock0" '$4 == l')
[ "$(printf '%s\n' "$row" | cut -d, -f2,3,6)" = "$pid,exited,$contended_wide" ] ||
	fail "CSV row of $lock0 disagrees (pid, state, contended $contended_wide): $row"
case $row in
*'"contend_worker+0x'*'/contended)",'[0-9]*) ;;
*) fail "CSV: no call site in $row" ;;
esac
top_csv=$(env -u LD_PRELOAD "$wrapper" top --once --csv "$pid")
[ "$(printf '%s\n' "$top_csv" | head -n 1)" = "$header" ] || fail "top --csv: another header"
# ticketspin(1), --csv: "time (seconds since the epoch, when read)" (the
# clock read around the command, no duration asserted); "per_s (top after
# its first screen, else empty)": report's and top --once's are empty
before=$(date +%s)
csv=$(report --csv "$pid")
after=$(date +%s)
# (top's CSV was read earlier, before "before": only its upper bound holds)
for r in "$(printf '%s\n' "$csv" | sed -n 2p)" "$(printf '%s\n' "$top_csv" | sed -n 2p)"; do
	t=$(printf '%s\n' "$r" | cut -d, -f1)
	t=${t%%.*}
	lo=$before
	[ "$r" = "$(printf '%s\n' "$csv" | sed -n 2p)" ] || lo=0
	case $t in
	'' | *[!0-9]*) fail "CSV: time is not seconds: $r" ;;
	*) [ "$t" -ge "$lo" ] && [ "$t" -le "$after" ] ||
		fail "CSV: time $t is not when read ($lo..$after)" ;;
	esac
	[ -z "$(printf '%s\n' "$r" | cut -d, -f7)" ] || fail "CSV: per_s not empty: $r"
done
echo "ok: CSV"

# bad values
err=$(report --width=10 "$pid" 2>&1)
[ $? -eq 2 ] && printf '%s\n' "$err" | grep -q "width='10' is not valid" ||
	fail "--width=10 not refused: $err"

# the ranges ticketspin(1) gives: --width 40 to 10000 columns, top's
# --interval 0.1 to 3600 seconds (default 1); one past either end is a bad
# option, status 2
for width in 40 10000; do
	report --width="$width" "$pid" >/dev/null 2>&1 || fail "--width=$width refused"
done
for width in 39 10001; do
	err=$(report --width="$width" "$pid" 2>&1)
	[ $? -eq 2 ] && printf '%s\n' "$err" | grep -q "width='$width' is not valid" ||
		fail "--width=$width not refused: $err"
done
for interval in 0.1 3600; do
	env -u LD_PRELOAD "$wrapper" top --once --interval="$interval" "$pid" >/dev/null 2>&1 ||
		fail "top --interval=$interval refused"
done
for interval in 0.09 3601 0; do
	err=$(env -u LD_PRELOAD "$wrapper" top --once --interval="$interval" "$pid" 2>&1)
	[ $? -eq 2 ] && printf '%s\n' "$err" | grep -q "interval='$interval' is not valid" ||
		fail "top --interval=$interval not refused: $err"
done
echo "ok: --width 40..10000, --interval 0.1..3600"

# top of a PID with no statistics: status 1, as for report (ticketspin(1),
# EXIT STATUS: "1 when there are no statistics for a PID")
for command in report top; do
	err=$(env -u LD_PRELOAD "$wrapper" "$command" 999999999 2>&1)
	status=$?
	[ $status -eq 1 ] && printf '%s\n' "$err" | grep -q "no statistics for pid 999999999" ||
		fail "$command of a pid with no statistics: status $status: $err"
done
echo "ok: report and top of a pid with no statistics exit 1"

# report without PID and no files: status 1, as its help says ("1 when
# there are no statistics"); /dev/shm is searched too, so only when it holds
# no file of ours
empty=$XDG_RUNTIME_DIR/empty
mkdir "$empty" || exit 99
if [ -z "$(find /dev/shm -maxdepth 1 -name 'ticketspin-stats.*' -user "$(id -u)" 2>/dev/null)" ]; then
	out=$(XDG_RUNTIME_DIR=$empty report 2>&1)
	status=$?
	if [ $status -ne 1 ] || ! printf '%s\n' "$out" | grep -q "no statistics files of yours"; then
		fail "report with no files: status $status (not 1): $out"
	else
		echo "ok: report with no files exits 1"
	fi
else
	echo "files of ours in /dev/shm: report with no files not tested"
fi

# top, when the process it watches exits (and its file goes): one line
# saying so, status 0, no raw error
XDG_RUNTIME_DIR=$empty LD_PRELOAD=$lib TICKET_STATS=$empty/at-exit sleep 1 &
sleeper=$!
for _ in 1 2 3 4 5 6 7 8 9 10; do
	[ -e "$empty/ticketspin-stats.$sleeper" ] && break
	sleep 0.1
done
out=$(XDG_RUNTIME_DIR=$empty env -u LD_PRELOAD -u COLUMNS "$wrapper" top --interval=0.2 \
	"$sleeper" 2>&1)
status=$?
wait "$sleeper"
last=$(printf '%s\n' "$out" | tail -n 1)
if [ $status -ne 0 ] || printf '%s\n' "$out" | grep -q "No such file" ||
   ! printf '%s\n' "$out" | grep -q "pid $sleeper exited"; then
	fail "top of a process that exits: status $status, last line '$last'"
else
	echo "ok: top of a process that exits: '$last'"
fi

# a live process whose main thread has called pthread_exit(): its leader is
# a zombie in /proc, but report must call it running, not dead
XDG_RUNTIME_DIR=$empty LD_PRELOAD=$lib TICKET_STATS=1 TICKET_STATS_KEEP=1 ./leaderexit 2 &
leader=$!
for _ in 1 2 3 4 5 6 7 8 9 10; do
	[ "$(cut -d ' ' -f 3 "/proc/$leader/stat" 2>/dev/null)" = Z ] &&
		[ -e "$empty/ticketspin-stats.$leader" ] && break
	sleep 0.1
done
out=$(XDG_RUNTIME_DIR=$empty report "$leader" 2>&1 | head -n 1)
list=$(XDG_RUNTIME_DIR=$empty report 2>&1 | awk -v p="$leader" '$1 == p { print $2 }')
wait "$leader"
case $out in
"ticketspin: pid $leader: running;"*)
	[ "$list" = running ] && echo "ok: a live process with its main thread gone is running" ||
		fail "report's list calls the live pid $leader '$list'" ;;
*) fail "report calls the live pid $leader: $out" ;;
esac

# --top's defaults, as ticketspin(1) and both --help texts give them: report
# shows the process's TICKET_STATS_TOP locks, top 20.  A process of 2
# contended locks run with --stats-top=1: report lists 1, top --once both.
for command in report top; do
	env -u LD_PRELOAD "$wrapper" "$command" --help |
		grep -q "(report: default the process's\$" ||
		fail "$command --help does not give report's and top's --top defaults apart"
done
env -u LD_PRELOAD "$wrapper" top --help | grep -q "TICKET_STATS_TOP; top: default 20," ||
	fail "top --help does not say top's --top default is 20"
out=$(env -u LD_PRELOAD "$wrapper" --lib="$lib" --stats-keep --stats-top=1 --delay=off \
	--stats="$XDG_RUNTIME_DIR/top-1" "$contended" 4 20000 2 2>&1) ||
	{ echo "ERROR: contended failed: $out"; exit 99; }
pid1=$(sed -n 's/^stats: pid \([0-9]*\):.*/\1/p' "$XDG_RUNTIME_DIR/top-1" | head -n 1)
[ -n "$pid1" ] || { echo "ERROR: no pid in: $(cat "$XDG_RUNTIME_DIR/top-1")"; exit 99; }
lock_rows() { # the wide layout's rows: "stats: 0x..."
	printf '%s\n' "$1" | awk '$1 == "stats:" && $2 ~ /^0x/' | grep -c .
}
n=$(lock_rows "$(report --wide "$pid1")")
[ "$n" -eq 1 ] || fail "report of a process with TICKET_STATS_TOP=1: $n rows, not 1"
n=$(lock_rows "$(env -u LD_PRELOAD -u COLUMNS "$wrapper" top --once --wide "$pid1")")
[ "$n" -eq 2 ] || fail "top --once (default 20) of a process with TICKET_STATS_TOP=1: $n rows, not 2"
echo "ok: --top defaults: report the process's TICKET_STATS_TOP, top 20"

# the same process ran with --delay=off: doc/statistics.md, "delay now/max":
# "`-` when the delay is not tuned"; ticketspin(1), --csv: "delay_now,
# delay_max (empty when not tuned)"
wide1=$(env -u LD_PRELOAD -u COLUMNS "$wrapper" top --once --wide "$pid1")
n=$(printf '%s\n' "$wide1" | awk '$1 == "stats:" && $2 ~ /^0x/ && $17 == "-/-"' | grep -c .)
[ "$n" -eq 2 ] || fail "--delay=off: the delay is not '-/-' in both rows:
$wide1"
rows1=$(env -u LD_PRELOAD "$wrapper" top --once --csv "$pid1" | tail -n +2)
bad=$(printf '%s\n' "$rows1" | awk -F, '{ gsub(/"[^"]*"/, "S") } $21 != "" || $22 != ""')
[ -n "$rows1" ] && [ -z "$bad" ] || fail "--delay=off: CSV delay_now, delay_max not empty: $rows1"
echo "ok: an untuned delay is '-', and empty in the CSV"

# doc/statistics.md, "top call sites": the report at exit names call sites
# with dladdr, "which sees only exported symbols: a program not linked with
# -rdynamic shows object+0xoffset"; "ticketspin report reads the objects'
# symbol tables and names static functions too".  lockprobe (no -rdynamic)
# contends in its static hammer_thread().
probe_dir=$XDG_RUNTIME_DIR/probe
mkdir "$probe_dir" || exit 99
at_exit=$(XDG_RUNTIME_DIR=$probe_dir LD_PRELOAD=$lib TICKET_STATS=1 TICKET_STATS_KEEP=1 \
	./lockprobe hammer 4 1 20000 1000 2>&1 >/dev/null) ||
	{ echo "ERROR: lockprobe failed: $at_exit"; exit 99; }
probe_pid=$(printf '%s\n' "$at_exit" | sed -n 's/^ticketspin: stats: pid \([0-9]*\):.*/\1/p' | head -n 1)
[ -n "$probe_pid" ] || { echo "ERROR: no report at exit: $at_exit"; exit 99; }
printf '%s\n' "$at_exit" | grep -q "^ticketspin: stats: .* [^ ]*/lockprobe+0x[0-9a-f]* [0-9]*%" ||
	fail "at exit, lockprobe's call site is not object+0xoffset: $at_exit"
printf '%s\n' "$at_exit" | grep -q "hammer_thread" &&
	fail "at exit, dladdr named a static function: $at_exit"
probe_report=$(XDG_RUNTIME_DIR=$probe_dir report --wide "$probe_pid")
printf '%s\n' "$probe_report" | grep -q "^stats: .* hammer_thread+0x[0-9a-f]* ([^ ]*/lockprobe) [0-9]*%" ||
	fail "ticketspin report does not name the static hammer_thread: $probe_report"
echo "ok: call sites: object+0xoffset at exit, the static function in report"

if [ $failures -gt 0 ]; then
	echo "$failures failure(s)"
	exit 1
fi
echo "all layouts agree"
