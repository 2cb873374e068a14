# locks-summary.awk - from compare-locks.sh's CSV of every run: the summary
# CSV (one row per work x threads x lock), the graph's data, and the tables.
#
# Input (-F,): name,hogs,work,threads,lock,repeat,status,ops_per_s,fairness,
#   min,max,user_s,sys_s,seconds,wall_s,provider[,wait_p50,wait_p99,
#   wait_p999,wait_p9999,wait_max,iter_p50,iter_p99,iter_p999,iter_p9999,
#   iter_max] (bench/locks's tails, microseconds); only status "ok" counts.
# Variables: labels, tlist, wlist (comma-separated), repeats, seconds, cs,
#   hogs, title, summary (path), dat (path), tails_dat (path: the latency
#   graph's data, one block per work x threads, a row per percentile).
# Every figure is a median over the runs that succeeded, with the slowest
# and fastest run beside it: single runs on a noisy machine vary too much to
# be shown alone.  Ratios are each run's throughput over glibc's median in
# the same cell, so their range says how far a single run strays.

# sort_values() and stats(): cell-stats.awk, loaded before this file.
function human(x) {
	if (x >= 1e9) return sprintf("%.3gG", x / 1e9)
	if (x >= 1e6) return sprintf("%.3gM", x / 1e6)
	if (x >= 1e3) return sprintf("%.3gk", x / 1e3)
	return sprintf("%.3g", x)
}
function usec(x) {
	return x >= 1000 ? sprintf("%.0f", x) : x >= 10 ? sprintf("%.1f", x) : sprintf("%.2f", x)
}
# One cell of a table: what @kind shows of @cell ("-" or "FAILED" without it).
function cell_text(kind, cell) {
	if (kind == "ops")
		return (cell in om) ? sprintf("%s [%s-%s]", human(om[cell]), human(olo[cell]), human(ohi[cell])) : "FAILED"
	if (kind == "ratio")
		return (cell in rm) ? sprintf("%.2f [%.2f-%.2f]", rm[cell], rlo[cell], rhi[cell]) : "-"
	if (kind == "fair")
		return (cell in fm) ? sprintf("%.2f [%.2f-%.2f]", fm[cell], flo[cell], fhi[cell]) : "-"
	if (kind == "wait")
		return tail[cell, 19] != "" ? sprintf("%s / %s", usec(tail[cell, 19]), usec(tail[cell, 20])) : "-"
	if (kind == "iter")
		return tail[cell, 25] != "" ? sprintf("%s / %s", usec(tail[cell, 25]), usec(tail[cell, 26])) : "-"
	return (cell in cm) ? sprintf("%.2f [%.2f-%.2f]", cm[cell], clo[cell], chi[cell]) : "-"
}
# A table of work W[@w]: a row per lock, a column per thread count.
function table(what, kind, w,    i, j) {
	header(what)
	for (i = 1; i <= nl; i++) {
		printf "%-15s", L[i]
		for (j = 1; j <= nt; j++) printf " %21s", cell_text(kind, W[w] SUBSEP T[j] SUBSEP L[i])
		printf "\n"
	}
}
function header(what,    j) {
	printf "%s\n%-15s", what, "lock"
	for (j = 1; j <= nt; j++) printf " %21s", T[j] (T[j] == 1 ? " thread " : " threads")
	printf "\n"
}

NR > 1 { name_of_run = $1 }
NR > 1 && $7 == "ok" {
	cell = $3 SUBSEP $4 SUBSEP $5
	n = ++runs[cell]
	val[cell, n, "ops"] = $8 + 0
	val[cell, n, "fair"] = $9 + 0
	val[cell, n, "cpu"] = ($12 + $13) / ($14 > 0 ? $14 : 1)
	val[cell, n, "user"] = $12 + 0
	val[cell, n, "sys"] = $13 + 0
	for (k = 17; k <= 26 && k <= NF; k++) val[cell, n, "t" k] = $k + 0
	has_tails[cell] = NF >= 26
}

END {
	nl = split(labels, L, ","); nt = split(tlist, T, ","); nw = split(wlist, W, ",")
	has_glibc = 0
	for (i = 1; i <= nl; i++) if (L[i] == "glibc") has_glibc = 1
	print "name,hogs,work,threads,lock,runs_ok,runs,ops_median,ops_min,ops_max,ratio_to_glibc,run_ratio_min,run_ratio_max,fairness_median,fairness_min,fairness_max,cpu_median,cpu_min,cpu_max,user_median,sys_median,wait_p50_us,wait_p99_us,wait_p999_us,wait_p9999_us,wait_max_us,iter_p50_us,iter_p99_us,iter_p999_us,iter_p9999_us,iter_max_us" > summary
	printf "" > dat
	if (tails_dat != "") printf "" > tails_dat
	scenario = hogs > 0 ? "OUTSIDE LOAD (" title ")" : title
	for (w = 1; w <= nw; w++) {
		for (j = 1; j <= nt; j++) {
			g = W[w] SUBSEP T[j] SUBSEP "glibc"
			gmed[w, j] = stats(g, "ops") ? M : 0
			for (i = 1; i <= nl; i++) {
				cell = W[w] SUBSEP T[j] SUBSEP L[i]
				if (!stats(cell, "ops")) {
					printf "%s,%d,%s,%s,%s,0,%d,,,,,,,,,,,,,,,,,,,,,,,,\n", name_of_run, hogs, W[w], T[j], L[i], repeats > summary
					continue
				}
				om[cell] = M; olo[cell] = LO; ohi[cell] = HI
				if (gmed[w, j] > 0) {
					rm[cell] = M / gmed[w, j]; rlo[cell] = LO / gmed[w, j]; rhi[cell] = HI / gmed[w, j]
				}
				stats(cell, "fair"); fm[cell] = M; flo[cell] = LO; fhi[cell] = HI
				stats(cell, "cpu"); cm[cell] = M; clo[cell] = LO; chi[cell] = HI
				stats(cell, "user"); um = M
				stats(cell, "sys"); sm = M
				printf "%s,%d,%s,%s,%s,%d,%d,%.0f,%.0f,%.0f,%s,%s,%s,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f",
					name_of_run, hogs, W[w], T[j], L[i], runs[cell], repeats, om[cell], olo[cell], ohi[cell],
					(cell in rm) ? sprintf("%.3f", rm[cell]) : "", (cell in rm) ? sprintf("%.3f", rlo[cell]) : "",
					(cell in rm) ? sprintf("%.3f", rhi[cell]) : "", fm[cell], flo[cell], fhi[cell],
					cm[cell], clo[cell], chi[cell], um, sm > summary
				for (k = 17; k <= 26; k++) {
					tail[cell, k] = has_tails[cell] && stats(cell, "t" k) ? M : ""
					printf ",%s", tail[cell, k] == "" ? "" : sprintf("%.3f", tail[cell, k]) > summary
				}
				printf "\n" > summary
			}
		}

		# the graph's data: one block per work, columns median min max per lock
		if (w > 1) printf "\n\n" > dat
		printf "# work %s: threads, then median min max per lock: %s\n", W[w], labels > dat
		for (j = 1; j <= nt; j++) {
			printf "%s", T[j] > dat
			for (i = 1; i <= nl; i++) {
				cell = W[w] SUBSEP T[j] SUBSEP L[i]
				if (cell in om) printf " %.0f %.0f %.0f", om[cell], olo[cell], ohi[cell] > dat
				else printf " ? ? ?" > dat
			}
			printf "\n" > dat
		}

		# the latency graph's data: a block per threads, a row per percentile
		# (p50 p99 p99.9 p99.99 max of the lock wait), a column per lock
		for (j = 1; j <= nt; j++) {
			if (w > 1 || j > 1) printf "\n\n" > tails_dat
			printf "# work %s, %s threads: percentile, then the lock wait in us per lock: %s\n", W[w], T[j], labels > tails_dat
			for (k = 17; k <= 21; k++) {
				printf "%d", k - 16 > tails_dat
				for (i = 1; i <= nl; i++) {
					cell = W[w] SUBSEP T[j] SUBSEP L[i]
					printf " %s", ((tail[cell, k] != "" && tail[cell, k] + 0 > 0) ? tail[cell, k] : "?") > tails_dat
				}
				printf "\n" > tails_dat
			}
		}

		printf "== Contended, work %s between acquisitions; %s\n", W[w], scenario
		printf "   one lock, %s writes to its cache line per critical section; %s s runs,\n", cs, seconds
		printf "   median [slowest-fastest] of %d interleaved runs\n", repeats
		table("throughput, acquisitions/s", "ops", w)
		if (has_glibc)
			table("\nratio to glibc's median (above 1: faster); [slowest-fastest run]", "ratio", w)
		table("\nfairness, min/max acquisitions per thread", "fair", w)
		table("\nlock wait p99.9 / p99.99, microseconds (medians of the runs')", "wait", w)
		table("\niterations p99.99 / max, microseconds (one call of the lock to the next)", "iter", w)
		table("\nCPU used, (user+sys)/wall seconds of the harness process", "cpu", w)
		printf "\n"
	}
}
