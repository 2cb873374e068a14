# target-matrix.awk - from target-matrix.sh's CSV of every run: the table of
# one load x shape with a mark per target (mode "table"), or the counts of
# cells meeting the targets and the summary CSV (mode "final").
#
# Input (-F,): load,hogs,shape,layout,touch,touch_lines,cs,work,threads,
#   lock,repeat,status,ops_per_s,fairness,min,max,user_s,sys_s,seconds,
#   wall_s,provider[,transfer_ns[,cpus,wait_p50,wait_p99,wait_p999,
#   wait_p9999,wait_max,iter_p50,iter_p99,iter_p999,iter_p9999,iter_max]]
#   (header lines anywhere are skipped: files may be concatenated;
#   transfer_ns, a cache-line transfer's cost measured before the run's
#   group, may be missing or empty; a CSV from before the tails has no
#   tails, and its tail marks are "?"); only status "ok" counts in the
#   figures, any other status makes the cell of its lock miss.
# Variables: mode (table|final), only_load and only_shape (mode table),
#   labels (every lock, in column order), judged (the ticketspin columns),
#   tlist, wlist, loads, shapes (comma-separated), repeats, seconds, cs, hogs,
#   fairness_of (worst|median), summary (path, mode final).
# The targets are issue 39's (target-matrix.sh); their thresholds are here,
# in one place.

# sort_values() and stats(): cell-stats.awk, loaded before this file.
function mps(x) {
	x /= 1e6
	return x >= 100 ? sprintf("%.0f", x) : x >= 10 ? sprintf("%.1f", x) : sprintf("%.2f", x)
}
# the mark of one target: "-" its reference lock is not run, "?" it has no
# successful run in this cell, else pass or FAIL
function mark(have_ref, ref_ok, ok) {
	if (!have_ref) return "-"
	if (!ref_ok) return "?"
	return ok ? "pass" : "FAIL"
}
function describe(shape,    p, n, i, layout, touch, lines, d) {
	n = split(shape, p, ":")
	layout = p[1]; touch = 0; lines = ""
	for (i = 2; i <= n; i++) {
		if (p[i] ~ /^touch=/) touch = substr(p[i], 7) + 0
		if (p[i] ~ /^lines=/) lines = substr(p[i], 7) + 0
	}
	d = layout == "other-line" ? "the critical section's data 128 bytes from the lock" : "the critical section's data on the lock's cache line"
	if (touch > 0)
		d = d sprintf("; private work also read-modify-writes %s of a %d-byte buffer per acquisition",
			lines == "" ? "every line" : lines " lines", touch)
	return d
}

# The median over a cell's runs of a tail column ("" if no run has it).
function tail_of(cell, col) {
	if (!stats(cell, col) || M == "") return ""
	return M
}

# Judges one cell of one judged column: sets the globals below; returns
# 1 if every checked target is met.
#   r_glibc r_mutex r_best r_slow: ratios ("" if not known); fair_judged
#   w999 w9999 i9999 (ours), mw999 mw9999 mi9999 (mutex's): tails in us
#   t_best t_slow t_fair t_tail: marks
function judge(ld, sh, w, t, lab,    cell, g, m, ok, gmed, mmed, med, best, have_tails, tail_ok) {
	cell = ld SUBSEP sh SUBSEP w SUBSEP t SUBSEP lab
	r_glibc = r_mutex = r_best = r_slow = fair_judged = ""
	w999 = w9999 = i9999 = mw999 = mw9999 = mi9999 = ""
	t_best = t_slow = t_fair = t_tail = "?"
	if (!stats(cell, "ops")) return 0
	med = M
	r_slow = LO / med
	stats(cell, "fair")
	fair_judged = fairness_of == "median" ? M : LO
	g = ld SUBSEP sh SUBSEP w SUBSEP t SUBSEP "glibc"
	m = ld SUBSEP sh SUBSEP w SUBSEP t SUBSEP "mutex"
	if (stats(g, "ops")) { gmed = M; r_glibc = med / gmed }
	if (stats(m, "ops")) { mmed = M; r_mutex = med / mmed }
	if (r_glibc != "" || r_mutex != "") {
		best = gmed > mmed ? gmed : mmed
		r_best = med / best
	}
	w999 = tail_of(cell, "w999"); w9999 = tail_of(cell, "w9999"); i9999 = tail_of(cell, "i9999")
	mw999 = tail_of(m, "w999"); mw9999 = tail_of(m, "w9999"); mi9999 = tail_of(m, "i9999")
	have_tails = w999 != "" && w9999 != "" && i9999 != "" && mw999 != "" && mw9999 != "" && mi9999 != ""
	if (t + 0 <= cpus + 0)
		tail_ok = w999 <= mw999 && w9999 <= TAIL_RATIO * mw9999 && i9999 <= TAIL_RATIO * mi9999
	else
		tail_ok = i9999 <= TAIL_RATIO * mi9999 && w9999 <= OVERSUB_WAIT_MAX_US
	t_best = mark(has_lock["mutex"] || has_lock["glibc"], r_best != "", r_best >= (w + 0 < STRICT_BELOW_WORK ? BEST_MIN_SHORT : BEST_MIN_LONG))
	t_slow = mark(1, 1, r_slow >= SLOW_MIN)
	t_fair = mark(1, 1, fair_judged >= FAIR_MIN)
	t_tail = mark(has_lock["mutex"] && cpus != "", have_tails, tail_ok)
	ok = t_best == "pass" && t_slow == "pass" && t_fair == "pass" && t_tail == "pass"
	return ok && !failed[cell]
}

# A tail in microseconds, short: "0.52", "37", "2.1k".
function us(x) {
	if (x == "") return "-"
	return x >= 1000 ? sprintf("%.1fk", x / 1000) : x >= 10 ? sprintf("%.0f", x) : sprintf("%.2f", x)
}

# How many of a block's n probes lie more than 1.5x away from their median m:
# one is a disturbed probe; more, a machine that changed mode for a while (a
# transfer costs about 50 ns in the one and 220 ns in the other here).
function probes_far_from(block, n, m,    i, x, far) {
	for (i = 1; i <= n; i++) {
		x = val[block, i, "transfer"]
		far += x > 1.5 * m || x * 1.5 < m
	}
	return far
}

function table(ld, sh,    i, j, w, t, lab, cell, line, met, n, cnt_m, cnt_g, cnt_s, cnt_f, k, far) {
	printf "\n== load: %s; shape: %s\n", ld == "idle" ? "idle (no outside load)" : "hogs (" hogs " CPU-bound processes beside the harness)", sh
	printf "   %s; %s writes per critical section\n", describe(sh), cs
	printf "   M/s: median [slowest-fastest] of %d interleaved runs of %s s; fair: fairness median/worst;\n", repeats, seconds
	printf "   x: ratio of medians; targets: best: >= %.2fx the better of glibc and mutex (work < %d) or %.2fx,\n", BEST_MIN_SHORT, STRICT_BELOW_WORK, BEST_MIN_LONG
	printf "   slow: slowest >= %.2fx median, fair: %s run's fairness >= %.2f;\n", SLOW_MIN, fairness_of, FAIR_MIN
	printf "   tails (us, medians of the runs'): w99.9/w99.99 lock wait, i99.99 iterations; tail: at threads <= %s CPUs\n", cpus
	printf "   w99.9 <= mutex's, w99.99 and i99.99 <= %.1fx mutex's; above, i99.99 <= %.1fx mutex's and w99.99 <= %d us\n", TAIL_RATIO, TAIL_RATIO, OVERSUB_WAIT_MAX_US
	if ((n = stats(ld SUBSEP sh, "transfer")) > 0) {
		far = probes_far_from(ld SUBSEP sh, n, M)
		printf "   cache-line transfer, measured before each cell's runs: median %.0f ns [%.0f-%.0f] over %d probes%s\n", M, LO, HI, n,
			(far >= 2 ? sprintf("; %d of them more than 1.5x from the median (the machine changed mode: see target-matrix.sh)", far) : "")
	}
	# header
	line = sprintf("%7s %6s |", "threads", "work")
	for (i = 1; i <= nl; i++) if (!is_judged[L[i]]) line = line sprintf(" %-26s", L[i])
	for (j = 1; j <= nj; j++) line = line sprintf(" | %-86s", J[j])
	sub(/ +$/, "", line)
	print line
	line = sprintf("%7s %6s |", "", "")
	for (i = 1; i <= nl; i++) if (!is_judged[L[i]]) line = line sprintf(" %7s %18s", "M/s", "w99.9/w99.99/i99.99")
	for (j = 1; j <= nj; j++)
		line = line sprintf(" | %-20s %9s %6s %6s %18s %5s %5s %5s %5s", "M/s [slow-fast]", "fair", "xglibc", "xmutex", "w99.9/w99.99/i99.99", "best", "slow", "fair", "tail")
	print line
	for (i = 1; i <= nw; i++) {
		w = W[i]
		for (k = 1; k <= nt; k++) {
			t = T[k]
			line = sprintf("%7s %6s |", t, w)
			for (n = 1; n <= nl; n++) {
				if (is_judged[L[n]]) continue
				cell = ld SUBSEP sh SUBSEP w SUBSEP t SUBSEP L[n]
				line = line sprintf(" %7s %18s", stats(cell, "ops") ? mps(M) (failed[cell] ? "!" : "") : "FAILED",
					us(tail_of(cell, "w999")) "/" us(tail_of(cell, "w9999")) "/" us(tail_of(cell, "i9999")))
			}
			for (j = 1; j <= nj; j++) {
				lab = J[j]
				cell = ld SUBSEP sh SUBSEP w SUBSEP t SUBSEP lab
				met = judge(ld, sh, w, t, lab)
				if (!stats(cell, "ops")) {
					line = line sprintf(" | %-20s %9s %6s %6s %18s %5s %5s %5s %5s", "FAILED", "-", "-", "-", "-", "?", "?", "?", "?")
					continue
				}
				line = line sprintf(" | %-20s", sprintf("%s [%s-%s]%s", mps(M), mps(LO), mps(HI), failed[cell] ? " runs FAILED" : ""))
				stats(cell, "fair")
				line = line sprintf(" %9s %6s %6s %18s %5s %5s %5s %5s", sprintf("%.2f/%.2f", M, LO),
					r_glibc == "" ? "-" : sprintf("%.2f", r_glibc), r_mutex == "" ? "-" : sprintf("%.2f", r_mutex),
					us(w999) "/" us(w9999) "/" us(i9999), t_best, t_slow, t_fair, t_tail)
			}
			print line
		}
	}
	for (j = 1; j <= nj; j++) {
		lab = J[j]
		n = met = cnt_b = cnt_s = cnt_f = cnt_t = 0
		for (i = 1; i <= nw; i++) for (k = 1; k <= nt; k++) {
			n++
			met += judge(ld, sh, W[i], T[k], J[j])
			cnt_b += t_best == "pass"; cnt_s += t_slow == "pass"; cnt_f += t_fair == "pass"; cnt_t += t_tail == "pass"
		}
		printf "%s: %d of %d cells meet all targets (best %d/%d, slow %d/%d, fair %d/%d, tail %d/%d)\n", lab, met, n,
			cnt_b, n, cnt_s, n, cnt_f, n, cnt_t, n
	}
}

BEGIN {
	BEST_MIN_SHORT = 1.0; BEST_MIN_LONG = 0.95; STRICT_BELOW_WORK = 100
	TAIL_RATIO = 1.5; OVERSUB_WAIT_MAX_US = 2000
	SLOW_MIN = 0.5
	FAIR_MIN = 0.5
}

$1 != "load" {
	cell = $1 SUBSEP $3 SUBSEP $8 SUBSEP $9 SUBSEP $10
	if ($12 != "ok") { failed[cell]++; next }
	n = ++runs[cell]
	val[cell, n, "ops"] = $13 + 0
	val[cell, n, "fair"] = $14 + 0
	# the probe's value: one per group of runs (a cell's, every lock's)
	if (NF >= 33 && $27 != "") {
		if (cpus == "") cpus = $23 + 0
		val[cell, n, "w999"] = $26 + 0; val[cell, n, "w9999"] = $27 + 0
		val[cell, n, "i9999"] = $32 + 0
	} else
		val[cell, n, "w999"] = val[cell, n, "w9999"] = val[cell, n, "i9999"] = ""
	if (NF >= 22 && $22 != "" && !(($1, $3, $8, $9, $11) in probed)) {
		probed[$1, $3, $8, $9, $11] = 1
		n = ++runs[$1 SUBSEP $3]
		val[$1 SUBSEP $3, n, "transfer"] = $22 + 0
	}
}

END {
	nl = split(labels, L, ","); nj = split(judged, J, ",")
	nt = split(tlist, T, ","); nw = split(wlist, W, ",")
	nld = split(loads, LD, ","); nsh = split(shapes, SH, ",")
	for (i = 1; i <= nl; i++) has_lock[L[i]] = 1
	for (j = 1; j <= nj; j++) is_judged[J[j]] = 1

	if (mode == "table") {
		table(only_load, only_shape)
		exit 0
	}

	print "load,hogs,shape,work,threads,lock,runs_ok,runs_failed,ops_median,ops_min,ops_max,fairness_median,fairness_min,ratio_to_glibc,ratio_to_mutex,ratio_to_best,slowest_to_median,wait_p999_us,wait_p9999_us,iter_p9999_us,mutex_wait_p999_us,mutex_wait_p9999_us,mutex_iter_p9999_us,target_best,target_slow,target_fair,target_tail,all" > summary
	for (a = 1; a <= nld; a++) for (b = 1; b <= nsh; b++) {
		ld = LD[a]; sh = SH[b]
		for (i = 1; i <= nw; i++) for (k = 1; k <= nt; k++) for (n = 1; n <= nl; n++) {
			lab = L[n]; w = W[i]; t = T[k]
			cell = ld SUBSEP sh SUBSEP w SUBSEP t SUBSEP lab
			if (!stats(cell, "ops") && !failed[cell]) continue # not run (yet)
			if (is_judged[lab]) {
				met = judge(ld, sh, w, t, lab)
				cells[lab]++; cells_met[lab] += met
				block[ld, sh, lab]++; block_met[ld, sh, lab] += met
			}
			row = sprintf("%s,%d,%s,%s,%s,%s,%d,%d", ld, ld == "idle" ? 0 : hogs, sh, w, t, lab, runs[cell], failed[cell])
			if (stats(cell, "ops")) {
				row = row sprintf(",%.0f,%.0f,%.0f", M, LO, HI)
				stats(cell, "fair"); row = row sprintf(",%.3f,%.3f", M, LO)
			} else
				row = row ",,,,,"
			if (is_judged[lab])
				row = row sprintf(",%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s", r_glibc == "" ? "" : sprintf("%.3f", r_glibc),
					r_mutex == "" ? "" : sprintf("%.3f", r_mutex), r_best == "" ? "" : sprintf("%.3f", r_best),
					r_slow == "" ? "" : sprintf("%.3f", r_slow), w999, w9999, i9999, mw999, mw9999, mi9999,
					t_best, t_slow, t_fair, t_tail, met ? "meets" : "miss")
			else
				row = row ",,,,,,,,,,,,,,,"
			print row > summary
		}
	}
	printf "\n== Targets met, per load and shape\n"
	for (a = 1; a <= nld; a++) for (b = 1; b <= nsh; b++) for (j = 1; j <= nj; j++)
		if (block[LD[a], SH[b], J[j]] > 0)
			printf "   %-5s %-40s %-12s %3d of %3d cells\n", LD[a], SH[b], J[j], block_met[LD[a], SH[b], J[j]], block[LD[a], SH[b], J[j]]
	for (j = 1; j <= nj; j++)
		printf "%s: %d of %d cells meet all targets\n", J[j], cells_met[J[j]], cells[J[j]]
	if (repeats < 7)
		printf "(%d runs per cell: a quick look; a verdict takes at least 5)\n", repeats
}
