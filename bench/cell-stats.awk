# cell-stats.awk - what the summary scripts (locks-summary.awk,
# target-matrix.awk) share: the median and range of one column over a cell's
# runs.  Loaded first, with -f, by the runners that use them.
#
# The caller keeps runs[cell] (how many runs) and val[cell, i, col] (run i's
# value in column col).

function sort_values(n, v,    i, j, x) {
	for (i = 2; i <= n; i++) {
		x = v[i]
		for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]
		v[j + 1] = x
	}
}
# median/min/max of column `col` over the cell's runs: sets M, LO, HI; returns n
function stats(cell, col,    n, i, v) {
	n = runs[cell] + 0
	if (n == 0) return 0
	for (i = 1; i <= n; i++) v[i] = val[cell, i, col]
	sort_values(n, v)
	LO = v[1]; HI = v[n]
	M = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
	return n
}
