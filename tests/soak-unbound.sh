#!/bin/bash
# soak-unbound.sh LIB [OUTDIR] - 'make soak': a real server under load.  The
# unbound DNS resolver (its message and rrset caches take a pthread spinlock
# per lookup) serves a local auth-zone on 127.0.0.1 at a high port, with
# UNBOUND_THREADS threads; dnsperf loads it for UNBOUND_SECONDS per run.
# Runs alternate glibc's spinlock and LIB (UNBOUND_RUNS each, interleaved).
# In each run, tests/dnscheck.py asks for every name of the zone before and
# after the load: every answer must be the zone's, nothing lost.  Then QPS,
# as median [min-max] per lock, and one more run under 'ticketspin --stats'
# whose report shows unbound's contended locks.  Loopback only: the server
# listens on 127.0.0.1 and may query no address (do-not-query-address).
#
# unbound is taken from PATH or /usr/sbin; when it is not installed, the
# Debian package is fetched with 'apt-get download' and unpacked into
# OUTDIR/unbound-root (dpkg -x): installing it would start a system resolver
# on port 53.  dnsperf must be installed (./bootstrap --deps).
#
# Knobs: UNBOUND_RUNS (5), UNBOUND_SECONDS (3), UNBOUND_THREADS (2),
# UNBOUND_PORT (25353), UNBOUND_CLIENTS (dnsperf -c, 8).
# Exit status: 0 pass, 1 a wrong or missing answer, a lost query, a failed
# run or a preload that did not apply; 2 usage or a program missing.
#
# Latency: dnsperf -v reports every query with its response time; each run's
# p50, p99, p99.9 and max over those go into runs.csv, and the medians of the
# runs' figures per lock are printed beside the QPS (the -v output costs the
# client the same for both locks).
set -u
lib=${1:?usage: soak-unbound.sh LIB [OUTDIR]}
out=${2:-soak-out}/unbound
runs=${UNBOUND_RUNS:-5}
seconds=${UNBOUND_SECONDS:-3}
threads=${UNBOUND_THREADS:-2}
port=${UNBOUND_PORT:-25353}
clients=${UNBOUND_CLIENTS:-8}
names=1000
here=$(cd "$(dirname "$0")" && pwd)
wrapper=${TICKETSPIN_WRAPPER:-$here/../tools/ticketspin}
python=$(command -v /usr/bin/python3 || command -v python3) || { echo "soak-unbound: python3 not found"; exit 2; }
command -v dnsperf >/dev/null || { echo "soak-unbound: dnsperf not found (./bootstrap --deps)"; exit 2; }
[ -x "$wrapper" ] || { echo "soak-unbound: $wrapper not found"; exit 2; }

rm -rf "$out" && mkdir -p "$out" || exit 2
unbound=$(command -v unbound || ls /usr/sbin/unbound 2>/dev/null)
if [ -z "$unbound" ]; then
	echo "soak-unbound: unbound is not installed: unpacking Debian's package into $out/unbound-root"
	(cd "$out" && apt-get download unbound >download.log 2>&1 && dpkg -x unbound_*.deb unbound-root) ||
		{ cat "$out/download.log"; echo "soak-unbound: cannot fetch unbound"; exit 2; }
	unbound=$out/unbound-root/usr/sbin/unbound
fi
if ldd "$unbound" | grep -q "not found"; then
	echo "soak-unbound: $unbound lacks libraries:"; ldd "$unbound" | grep "not found"; exit 2
fi

# the zone: h$i.example.test. A 10.0.i/250.i%250, and the queries for dnsperf
zone=$out/example.test.zone
{
	printf '$ORIGIN example.test.\n$TTL 86400\n'
	printf '@ IN SOA ns.example.test. hostmaster.example.test. 1 3600 600 86400 3600\n'
	printf '@ IN NS ns\nns IN A 127.0.0.1\n'
	for ((i = 0; i < names; i++)); do printf 'h%d IN A 10.0.%d.%d\n' $i $((i / 250)) $((i % 250)); done
} >"$zone"
"$python" "$here/dnscheck.py" --queries $names "$out/queries" || exit 2

# for-upstream only: answers go through the resolver and its caches (the
# spinlocks), as for any name it resolves
cat >"$out/unbound.conf" <<EOF
server:
	interface: 127.0.0.1
	port: $port
	do-ip6: no
	# one socket for the threads: another server on the port makes this one
	# fail to start instead of sharing the queries with it
	so-reuseport: no
	num-threads: $threads
	do-daemonize: no
	username: ""
	chroot: ""
	directory: "$out"
	pidfile: ""
	use-syslog: no
	logfile: ""
	verbosity: 0
	access-control: 127.0.0.0/8 allow
	do-not-query-address: 0.0.0.0/0
	do-not-query-address: ::/0
	module-config: "iterator"
	# test. is one of unbound's default local zones (RFC 6761), answered NXDOMAIN
	local-zone: "test." nodefault
auth-zone:
	name: "example.test."
	zonefile: "$zone"
	for-upstream: yes
	for-downstream: no
	fallback-enabled: no
remote-control:
	control-enable: no
EOF
"$unbound-checkconf" "$out/unbound.conf" >/dev/null 2>&1 ||
	[ ! -x "$unbound-checkconf" ] || { "$unbound-checkconf" "$out/unbound.conf"; exit 2; }

failures=0
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

server_pid=
stop_server() {
	[ -n "$server_pid" ] || return 0
	kill -TERM "$server_pid" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$server_pid" 2>/dev/null
	wait "$server_pid" 2>/dev/null
	server_pid=
}
trap stop_server EXIT

# start_server LOCK LOG [WRAPPER-OPTIONS...]: unbound in the background
start_server() {
	local lock=$1 log=$2
	shift 2
	if [ "$lock" = glibc ]; then
		env -u LD_PRELOAD TICKET_VERBOSE=1 "$unbound" -d -c "$out/unbound.conf" >"$log" 2>&1 &
	else
		env -u LD_PRELOAD "$wrapper" --lib="$lib" --verbose "$@" -- \
			"$unbound" -d -c "$out/unbound.conf" >"$log" 2>&1 &
	fi
	server_pid=$!
	# no query before the zone is loaded: the answer to it would be cached
	for _ in $(seq 100); do
		grep -q "start of service" "$log" && return 0
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
	done
	fail "$lock: unbound did not start: $(cat "$log")"
	stop_server
	return 1
}

# the preload applied exactly when asked: the library's TICKET_VERBOSE line
check_provider() {
	local lock=$1 log=$2
	if [ "$lock" = glibc ] && grep -q '^ticketspin: delay=' "$log"; then
		fail "glibc run has the library: $(head -3 "$log")"
	elif [ "$lock" = ticketspin ] && ! grep -q '^ticketspin: delay=' "$log"; then
		fail "ticketspin run without the library: $(head -3 "$log")"
	fi
}

echo "lock,run,qps,sent,completed,lost,noerror,p50_us,p99_us,p999_us,max_us" >"$out/runs.csv"
echo "soak-unbound: $unbound, $threads threads, 127.0.0.1:$port, $names names;" \
	"$runs runs of ${seconds}s per lock, interleaved"
for ((run = 1; run <= runs; run++)); do
	for lock in glibc ticketspin; do
		log=$out/$lock.$run.log
		start_server "$lock" "$log" || continue
		before=$("$python" "$here/dnscheck.py" "$port" $names) || fail "$lock run $run, before: $before"
		dnsperf -B -s 127.0.0.1 -p "$port" -d "$out/queries" -l "$seconds" -c "$clients" -T 2 -v \
			>"$out/dnsperf.$lock.$run" 2>&1 || fail "$lock run $run: dnsperf failed: $(tail -5 "$out/dnsperf.$lock.$run")"
		after=$("$python" "$here/dnscheck.py" "$port" $names) || fail "$lock run $run, after: $after"
		stop_server
		check_provider "$lock" "$log"
		awk -v lock="$lock" -v run="$run" '
			/Queries sent:/ { sent = $3 }
			/Queries completed:/ { completed = $3 }
			/Queries lost:/ { lost = $3 }
			/Response codes:/ { noerror = ($3 == "NOERROR") ? $4 : 0 }
			/Queries per second:/ { qps = $4 }
			END { printf "%s,%d,%s,%s,%s,%s,%s", lock, run, qps, sent, completed, lost, noerror }' \
			"$out/dnsperf.$lock.$run" >>"$out/runs.csv"
		# every query's response time, sorted: its percentiles (mawk has no sort)
		awk '/^> / { printf "%.0f\n", $NF * 1e6 }' "$out/dnsperf.$lock.$run" | sort -n |
			awk 'function at(q,   r) { r = int(q * NR); if (r < q * NR) r++; if (r < 1) r = 1; return l[r] }
				{ l[NR] = $1 }
				END { if (NR > 0) printf ",%s,%s,%s,%s\n", at(0.5), at(0.99), at(0.999), l[NR]; else printf ",,,,\n" }' \
			>>"$out/runs.csv"
		tail -n 1 "$out/runs.csv" | awk -F, '{ printf "  %-10s run %d: %s qps, %s sent, %s lost; latency p99 %s us, p99.9 %s us\n", $1, $2, $3, $4, $6, $9, $10 }'
		tail -n 1 "$out/runs.csv" | awk -F, '$6 != 0 || $7 != $5 || $3 == "" { exit 1 }' ||
			fail "$lock run $run: queries lost or not NOERROR: $(tail -n 1 "$out/runs.csv")"
	done
done

echo
echo "QPS and response time (dnsperf, ${seconds}s, $clients clients; median [min-max] of $runs runs;"
echo "the latencies in microseconds, each the median of the runs' own percentile):"
awk -F, 'NR > 1 && $3 != "" { n[$1]++; for (c = 3; c <= 11; c++) L[$1, c, n[$1]] = $c }
	# the median of column c over the runs of lock l; lo and hi its extremes
	function med(l, c,   a, i, j, t, k) {
		k = n[l]; for (i = 1; i <= k; i++) a[i] = L[l, c, i] + 0
		for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		lo = a[1]; hi = a[k]
		return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	END {
		for (l = 1; l <= 2; l++) {
			lock = l == 1 ? "glibc" : "ticketspin"
			if (!n[lock]) continue
			m = med(lock, 3); qlo = lo; qhi = hi
			p50 = med(lock, 8); p99 = med(lock, 9); p999 = med(lock, 10); pmax = med(lock, 11)
			printf "  %-10s %8.0f [%.0f-%.0f] qps; latency p50 %.0f, p99 %.0f, p99.9 %.0f, max %.0f us\n",
				lock, m, qlo, qhi, p50, p99, p999, pmax
			if (l == 1) { g = m; g99 = p99; g999 = p999 }
			else if (g > 0) printf "  ticketspin/glibc: qps %.3f, p99 %.2f, p99.9 %.2f\n", m / g,
				(g99 > 0 ? p99 / g99 : 0), (g999 > 0 ? p999 / g999 : 0)
		}
	}' "$out/runs.csv" | tee "$out/qps.txt"

# one more run with statistics: which of unbound's locks are contended
echo
echo "ticketspin --stats: unbound's contended locks under the same load"
log=$out/stats.log
if start_server ticketspin "$log" --stats="$out/stats-at-exit.txt" --stats-keep --stats-top=8; then
	dnsperf -B -s 127.0.0.1 -p "$port" -d "$out/queries" -l "$seconds" -c "$clients" -T 2 >"$out/dnsperf.stats" 2>&1
	stats_pid=$server_pid
	stop_server
	env -u LD_PRELOAD "$wrapper" report --width=150 "$stats_pid" | tee "$out/stats-report.txt"
	grep -q '^0x' "$out/stats-report.txt" || fail "no contended lock in unbound's statistics"
	# Issue 19: unbound initialises some 12,600 locks; the per-thread tables must hold what it contends.
	! grep -q 'per-thread tables full' "$out/stats-report.txt" ||
		fail "unbound's statistics overflowed a per-thread table: totals short"
	env -u LD_PRELOAD "$wrapper" report --csv "$stats_pid" >"$out/stats-report.csv"
	rm -f "${XDG_RUNTIME_DIR:-/dev/shm}/ticketspin-stats.$stats_pid" "/dev/shm/ticketspin-stats.$stats_pid"
fi

echo
if [ $failures -gt 0 ]; then
	echo "soak-unbound: $failures failure(s); logs in $out"
	exit 1
fi
echo "soak-unbound: every answer right, nothing lost; logs in $out"
