/*
 * The comparison bench, briefly (never its timings): the harness runs every
 * lock kind with two threads and its counts add up, in each of its shapes
 * (--layout, --touch); its 'spin' lock is
 * ticketspin's under the preload and glibc's without it, and it refuses to
 * run with the wrong provider; the runners write one CSV row per cell, and
 * the hogs of the outside-load scenario do not outlive it.
 *
 * The tests run with the library in LD_PRELOAD; "LD_PRELOAD=" removes it.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe_run.h"

#define HARNESS BENCH_BUILDDIR "/locks"
#define LOCKPAIR BENCH_BUILDDIR "/lockpair"
#define NO_PRELOAD "LD_PRELOAD=", "TICKET_VERBOSE=", "TICKET_STATS="

static const char *const kinds[] = {
	"spin", "mutex", "mutex-adaptive", "ck-ticket", "ck-ticket-pb", "ck-mcs", "ck-fas",
};

/* The value of " key=" in a harness line, as a number (-1 if absent). */
static double field(const char *out, const char *key)
{
	char pattern[64];
	const char *p;

	snprintf(pattern, sizeof(pattern), " %s=", key);
	p = strstr(out, pattern);
	return p != NULL ? strtod(p + strlen(pattern), NULL) : -1;
}

/* Rows of a target-matrix CSV whose 22nd field, transfer_ns, is a number above 0. */
static int count_transfer_figures(const char *csv)
{
	int count = 0;

	for (const char *line = csv; *line != '\0';) {
		const char *end = strchr(line, '\n');
		const char *p = line;
		char *after;

		if (end == NULL)
			end = line + strlen(line);
		for (int commas = 0; p < end && commas < 21; p++)
			commas += *p == ',';
		if (p < end && strtod(p, &after) > 0 && *after == ',')
			count++;
		line = *end == '\n' ? end + 1 : end;
	}
	return count;
}

/*
 * The tails of a harness line: NAME_p50 <= p99 <= p999 <= p9999 <= max,
 * all present, the median above 0 (every acquisition is timed).
 */
static void assert_tails(const char *out, const char *name)
{
	static const char *const order[] = { "p50", "p99", "p999", "p9999", "max" };
	double last = 0;

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		char key[32];
		double v;

		snprintf(key, sizeof(key), "%s_%s", name, order[i]);
		v = field(out, key);
		cr_assert(v >= 0, "%s missing: %s", key, out);
		cr_assert(i > 0 || v > 0, "%s is 0: %s", key, out);
		cr_assert(v >= last, "%s below the percentile before it: %s", key, out);
		last = v;
	}
}

static bool kind_built(const char *kind)
{
	static struct probe_result list;
	static char listed[sizeof(list.out) + 1];
	char line[64];

	if (listed[0] == '\0') {
		probe_run(&list, NULL, (const char *const[]){ HARNESS, "--list", NULL }, 30);
		cr_assert_eq(list.status, 0, "%s", list.err);
		snprintf(listed, sizeof(listed), "\n%s", list.out);
	}
	snprintf(line, sizeof(line), "\n%s\n", kind);
	return strstr(listed, line) != NULL;
}

Test(harness, every_lock_kind_with_two_threads_counts_add_up)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		struct probe_result r;
		char lock[64];
		double total, min, max;

		if (!kind_built(kinds[i])) {
			cr_log_warn("%s not built (no Concurrency Kit headers): skipped", kinds[i]);
			continue;
		}
		snprintf(lock, sizeof(lock), "--lock=%s", kinds[i]);
		probe_run(&r, NULL,
		          (const char *const[]){ HARNESS, lock, "--threads=2", "--work=10",
		                                 "--seconds=0.05", NULL },
		          60);
		cr_assert_eq(r.status, 0, "%s: status %d\n%s%s", kinds[i], r.status, r.out, r.err);
		cr_assert(strstr(r.out, " invariants=ok ") != NULL, "%s", r.out);
		total = field(r.out, "acquisitions");
		min = field(r.out, "min");
		max = field(r.out, "max");
		cr_assert(total > 0 && min >= 0 && max >= min, "%s", r.out);
		cr_assert_eq(total, min + max, "two threads: the total is their sum: %s", r.out);
		cr_assert(field(r.out, "user") >= 0 && field(r.out, "sys") >= 0, "%s", r.out);
		/* ratios of the threads' CPU times and of their acquisitions per CPU second */
		cr_assert(field(r.out, "cpu_fairness") > 0 && field(r.out, "cpu_fairness") <= 1,
		          "%s", r.out);
		cr_assert(field(r.out, "rate_fairness") >= 0 && field(r.out, "rate_fairness") <= 1,
		          "%s", r.out);
		assert_tails(r.out, "wait");
		assert_tails(r.out, "iter");
		/* an iteration holds its lock wait: its median is not below the wait's */
		cr_assert(field(r.out, "iter_p50") >= field(r.out, "wait_p50"), "%s", r.out);
	}
}

Test(harness, spin_is_ticketspin_under_the_preload_and_glibc_without)
{
	struct probe_result r;

	probe_run(&r, NULL,
	          (const char *const[]){ HARNESS, "--lock=spin", "--threads=2", "--seconds=0.05",
	                                 "--expect-provider=libticketspin.so", NULL },
	          60);
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.out, " provider=") != NULL &&
	          strstr(strstr(r.out, " provider="), "libticketspin.so") != NULL, "%s", r.out);

	/* the check can fail: without the preload the harness refuses to run */
	probe_run(&r, (const char *const[]){ NO_PRELOAD, NULL },
	          (const char *const[]){ HARNESS, "--lock=spin", "--threads=2", "--seconds=0.05",
	                                 "--expect-provider=libticketspin.so", NULL },
	          60);
	cr_assert_eq(r.status, 3, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.err, "libc.so") != NULL, "%s", r.err);
}

/*
 * --histogram: every acquisition is in the lock wait's histogram (its counts
 * add up to the acquisitions) and every iteration but each thread's first
 * in the iterations' (each thread's first call has no call before it).
 */
Test(harness, histograms_count_every_acquisition)
{
	static char hist[1 << 16]; /* up to 740 buckets of about 35 characters */
	char path[] = "/tmp/ticketspin-hist-XXXXXX";
	struct probe_result r;
	double total, counted[2] = { 0, 0 };
	const char *line;
	int fd = mkstemp(path);

	cr_assert(fd >= 0);
	close(fd);
	probe_run(&r, NULL,
	          (const char *const[]){ "sh", "-c", "exec \"$0\" --lock=mutex --threads=2 --work=10 "
	                                 "--seconds=0.05 --histogram 2>\"$1\"", HARNESS, path, NULL },
	          60);
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	read_text_file(path, hist, sizeof(hist));
	unlink(path);
	cr_assert(strlen(hist) < sizeof(hist) - 1, "histograms longer than the buffer");
	cr_assert(strstr(hist, "wait histogram: from_us to_us count share_at_or_above\n") != NULL,
	          "%s", hist);
	cr_assert(strstr(hist, "iter histogram: from_us to_us count share_at_or_above\n") != NULL,
	          "%s", hist);
	total = field(r.out, "acquisitions");
	for (line = hist; line != NULL && *line != '\0'; line = strchr(line, '\n'), line += line != NULL) {
		double from, to, count, share;
		char name[8];

		if (sscanf(line, "%7s %lf %lf %lf %lf", name, &from, &to, &count, &share) == 5) {
			cr_assert(from <= to && count > 0 && share > 0 && share <= 1, "%.80s", line);
			counted[strcmp(name, "iter") == 0] += count;
		}
	}
	cr_assert(total > 2, "%s", r.out);
	cr_assert_eq(counted[0], total, "the waits counted: %.0f of %.0f", counted[0], total);
	cr_assert_eq(counted[1], total - 2, "the iterations counted: %.0f of %.0f - 2", counted[1],
	             total);
}

Test(harness, shapes_layout_and_touch)
{
	static const char *const shapes[][3] = {
		{ "--layout=same-line", "--touch=0", " layout=same-line touch=0 touch_lines=0 " },
		{ "--layout=other-line", "--touch=4096",
		  " layout=other-line touch=4096 touch_lines=64 " },
		{ "--layout=other-line", "--touch=262144",
		  " layout=other-line touch=262144 touch_lines=3 " },
	};

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		struct probe_result r;
		double total;

		probe_run(&r, NULL,
		          (const char *const[]){ HARNESS, "--lock=spin", "--threads=2", "--work=0",
		                                 "--seconds=0.05", shapes[i][0], shapes[i][1],
		                                 i == 2 ? "--touch-lines=3" : NULL, NULL },
		          60);
		cr_assert_eq(r.status, 0, "case %zu: status %d\n%s%s", i, r.status, r.out, r.err);
		cr_assert(strstr(r.out, shapes[i][2]) != NULL, "case %zu: %s", i, r.out);
		cr_assert(strstr(r.out, " invariants=ok ") != NULL, "%s", r.out);
		total = field(r.out, "acquisitions");
		cr_assert(total > 0 && total == field(r.out, "min") + field(r.out, "max"), "%s",
		          r.out);
	}
}

Test(harness, usage_errors)
{
	static const char *const bad[][3] = {
		{ "--lock=nosuch", NULL }, { "--lock=spin", "--threads=0" },
		{ "--lock=spin", "--seconds=x" }, { "--threads=2", NULL },
		{ "--lock=spin", "--layout=diagonal" }, { "--lock=spin", "--touch=100" },
		{ "--lock=spin", "--touch-lines=4" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct probe_result r;

		probe_run(&r, NULL, (const char *const[]){ HARNESS, bad[i][0], bad[i][1], NULL }, 30);
		cr_assert_eq(r.status, 2, "case %zu: status %d\n%s%s", i, r.status, r.out, r.err);
	}
}

Test(harness, uncontended_pair)
{
	struct probe_result r;

	probe_run(&r, NULL,
	          (const char *const[]){ LOCKPAIR, "--lock=spin", "--pairs=1000", "--rounds=2",
	                                 "--counter", "--expect-provider=libticketspin.so", NULL },
	          60);
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(field(r.out, "ns_per_pair") > 0, "%s", r.out);
	cr_assert(strstr(r.out, " critical_section=counter ") != NULL, "%s", r.out);
}

/* ---- the runners ----------------------------------------------------------- */

Test(runner, tiny_contended_run_one_row_per_cell)
{
	struct probe_result r;
	char dir[] = "/tmp/ticketspin-bench-XXXXXX", path[4200], text[16384];

	cr_assert(mkdtemp(dir) != NULL);
	probe_run(&r, NULL,
	          (const char *const[]){ "bash", BENCH_SRCDIR "/compare-locks.sh", "-q",
	                                 "--harness", HARNESS, "--lib", TICKETSPIN_LIB_PATH,
	                                 "--locks", "glibc,ticketspin,mutex,ck-ticket",
	                                 "--threads", "1,2", "--work", "0,10", "--seconds",
	                                 "0.02", "--repeats", "1", "--out", dir, "--name", "tiny",
	                                 "--no-plot", NULL },
	          120);
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.out, "== Contended, work 10 between acquisitions") != NULL, "%s", r.out);
	cr_assert(strstr(r.out, "ratio to glibc's median") != NULL, "%s", r.out);
	/* tails beside every throughput: a table of each per work */
	cr_assert_eq(count_occurrences(r.out, "\nlock wait p99.9 / p99.99, microseconds"), 2,
	             "%s", r.out);
	cr_assert_eq(count_occurrences(r.out, "\niterations p99.99 / max, microseconds"), 2,
	             "%s", r.out);

	snprintf(path, sizeof(path), "%s/tiny.csv", dir);
	read_text_file(path, text, sizeof(text));
	cr_assert(strncmp(text, "name,hogs,work,threads,lock,repeat,status,ops_per_s,", 52) == 0,
	          "%s", text);
	cr_assert(strstr(text, ",provider,wait_p50,wait_p99,wait_p999,wait_p9999,wait_max,"
	                       "iter_p50,iter_p99,iter_p999,iter_p9999,iter_max\n") != NULL,
	          "%s", text);
	cr_assert_eq(count_occurrences(text, ",ok,"), 16, "%s", text);
	cr_assert(strstr(text, ",ticketspin,1,ok,") != NULL, "%s", text);

	snprintf(path, sizeof(path), "%s/tiny-summary.csv", dir);
	read_text_file(path, text, sizeof(text));
	cr_assert_eq(count_occurrences(text, "\n"), 1 + 2 * 2 * 4, "one row per cell:\n%s", text);
	cr_assert(strstr(text, "\ntiny,0,10,2,glibc,1,1,") != NULL, "%s", text);
	cr_assert(strstr(text, ",wait_p999_us,wait_p9999_us,wait_max_us,") != NULL, "%s", text);
	remove_tree(dir);
}

/*
 * The tail target, judged from a CSV whose figures are known (--report):
 * at threads <= CPUs ours must not exceed mutex's lock-wait p99.9, nor 1.5x
 * its p99.99 and its iterations' p99.99; above, 1.5x its iterations' p99.99
 * and a lock wait of 2 ms at p99.99.  Throughput, slowest run and fairness
 * pass in every cell, so the tail alone decides.
 */
Test(runner, target_matrix_judges_the_tails)
{
	static const char *const header =
		"load,hogs,shape,layout,touch,touch_lines,cs,work,threads,lock,repeat,status,"
		"ops_per_s,fairness,min,max,user_s,sys_s,seconds,wall_s,provider,transfer_ns,cpus,"
		"wait_p50,wait_p99,wait_p999,wait_p9999,wait_max,iter_p50,iter_p99,iter_p999,"
		"iter_p9999,iter_max\n";
	/* threads, lock, wait p99.9, wait p99.99, iterations p99.99 (us) */
	static const struct { int threads; const char *lock; double w999, w9999, i9999; } rows[] = {
		{ 2, "glibc", 5, 30, 40 },   { 2, "mutex", 4, 30, 40 },
		{ 2, "pass2", 4, 45, 60 },   { 2, "slow999", 4.5, 10, 10 },
		{ 2, "slow9999", 1, 46, 10 }, { 2, "slowiter", 1, 10, 61 },
		{ 4, "glibc", 5, 30, 900 },  { 4, "mutex", 4, 30, 1000 },
		{ 4, "pass4", 400, 1900, 1500 }, { 4, "wait2ms", 10, 2100, 100 },
		{ 4, "iter4", 1, 10, 1600 },
	};
	static const struct { const char *lock; int threads; const char *mark; } want[] = {
		{ "pass2", 2, "pass" },     { "slow999", 2, "FAIL" }, { "slow9999", 2, "FAIL" },
		{ "slowiter", 2, "FAIL" },  { "pass4", 4, "pass" },   { "wait2ms", 4, "FAIL" },
		{ "iter4", 4, "FAIL" },
	};
	char dir[] = "/tmp/ticketspin-bench-XXXXXX", path[4200], text[16384];
	struct probe_result r;
	FILE *f;

	cr_assert(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/crafted.csv", dir);
	f = fopen(path, "w");
	cr_assert(f != NULL);
	fputs(header, f);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		for (int rep = 1; rep <= 5; rep++)
			fprintf(f, "idle,0,same-line,same-line,0,0,4,0,%d,%s,%d,ok,1000000,0.9,9,10,"
			        "0.5,0,0.5,0.6,x,,2,0.05,0.1,%g,%g,%g,0.1,0.2,0.3,%g,%g\n",
			        rows[i].threads, rows[i].lock, rep, rows[i].w999, rows[i].w9999,
			        rows[i].i9999 / 2, rows[i].i9999, rows[i].i9999 * 2);
	fclose(f);
	probe_run(&r, NULL,
	          (const char *const[]){ "bash", BENCH_SRCDIR "/target-matrix.sh", "--report", path,
	                                 "--out", dir, "--name", "judged", NULL },
	          60);
	cr_assert_eq(r.status, 3, "some cells miss: status %d\n%s%s", r.status, r.out, r.err);
	snprintf(path, sizeof(path), "%s/judged-summary.csv", dir);
	read_text_file(path, text, sizeof(text));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char row[128];
		const char *p, *end, *mark;

		snprintf(row, sizeof(row), "\nidle,0,same-line,0,%d,%s,", want[i].threads,
		         want[i].lock);
		p = strstr(text, row);
		cr_assert(p != NULL, "%s: no row\n%s", want[i].lock, text);
		end = strchr(p + 1, '\n');
		cr_assert(end != NULL);
		/* ...,target_best,target_slow,target_fair,target_tail,all */
		mark = end;
		for (int commas = 0; commas < 2; mark--)
			commas += mark[-1] == ',';
		cr_assert(strncmp(mark + 1, want[i].mark, strlen(want[i].mark)) == 0,
		          "%s at %d threads: tail %s expected:\n%.*s", want[i].lock, want[i].threads,
		          want[i].mark, (int)(end - p), p);
	}
	remove_tree(dir);
}

/* The runner printed "hog pids P Q" on stderr: those processes are gone. */
static void assert_hogs_gone(const char *err, int hogs)
{
	const char *p = strstr(err, "hog pids ");

	cr_assert(p != NULL, "%s", err);
	p += strlen("hog pids ");
	for (int i = 0; i < hogs; i++) {
		char *end;
		long pid = strtol(p, &end, 10);

		cr_assert(pid > 0, "%s", err);
		cr_assert(kill((pid_t)pid, 0) != 0, "hog %ld still runs after the bench", pid);
		p = end;
	}
}

Test(runner, hogs_are_stopped_with_the_run)
{
	struct probe_result r;
	char dir[] = "/tmp/ticketspin-bench-XXXXXX", path[4200], text[16384];

	cr_assert(mkdtemp(dir) != NULL);
	probe_run(&r, NULL,
	          (const char *const[]){ "bash", BENCH_SRCDIR "/compare-locks.sh", "--harness",
	                                 HARNESS, "--lib", TICKETSPIN_LIB_PATH, "--locks",
	                                 "glibc,ticketspin", "--threads", "2", "--work", "10",
	                                 "--seconds", "0.02", "--repeats", "1", "--hogs", "2",
	                                 "--hog", BENCH_BUILDDIR "/hog", "--out", dir,
	                                 "--no-plot", NULL },
	          120);
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.out, "OUTSIDE LOAD (outside load: 2 CPU-bound hog") != NULL, "%s", r.out);
	snprintf(path, sizeof(path), "%s/locks-hogs2-summary.csv", dir);
	read_text_file(path, text, sizeof(text));
	cr_assert_eq(count_occurrences(text, "\n"), 1 + 2, "%s", text);
	assert_hogs_gone(r.err, 2);
	remove_tree(dir);
}

Test(runner, tiny_uncontended_run)
{
	struct probe_result r;
	char dir[] = "/tmp/ticketspin-bench-XXXXXX", path[4200], text[16384];

	cr_assert(mkdtemp(dir) != NULL);
	probe_run(&r, NULL,
	          (const char *const[]){ "bash", BENCH_SRCDIR "/compare-uncontended.sh", "-q",
	                                 "--harness", LOCKPAIR, "--lib", TICKETSPIN_LIB_PATH,
	                                 "--locks", "glibc,ticketspin,mutex", "--pairs", "1000",
	                                 "--repeats", "1", "--out", dir, "--no-plot", NULL },
	          120);
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	snprintf(path, sizeof(path), "%s/uncontended-summary.csv", dir);
	read_text_file(path, text, sizeof(text));
	cr_assert_eq(count_occurrences(text, "\n"), 1 + 2 * 3, "%s", text);
	cr_assert(strstr(text, "\nempty,glibc,1,1,") != NULL, "%s", text);
	remove_tree(dir);
}

/*
 * The target matrix, tiny: both loads, two shapes, glibc, ticketspin, mutex
 * and one variant of ticketspin; never its verdicts, only that it gives one.
 */
Test(runner, target_matrix_tables_marks_and_csv)
{
	struct probe_result r;
	char dir[] = "/tmp/ticketspin-bench-XXXXXX", path[4200], text[16384];

	cr_assert(mkdtemp(dir) != NULL);
	probe_run(&r, NULL,
	          (const char *const[]){ "bash", BENCH_SRCDIR "/target-matrix.sh", "--harness",
	                                 HARNESS, "--lib", TICKETSPIN_LIB_PATH, "--hog",
	                                 BENCH_BUILDDIR "/hog", "--probe", BENCH_BUILDDIR "/cacheline",
	                                 "--hogs", "2", "--threads", "2",
	                                 "--work", "0", "--shapes",
	                                 "same-line,other-line:touch=4096:lines=2", "--variant",
	                                 "fifo=TICKET_QUEUE=0", "--repeats", "1", "--seconds",
	                                 "0.05", "--out", dir, NULL },
	          120);
	/* 0: every cell meets the targets, 3: some does not; both are verdicts */
	cr_assert(r.status == 0 || r.status == 3, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.out, "== load: idle (no outside load); shape: same-line\n") != NULL,
	          "%s", r.out);
	cr_assert(strstr(r.out, "== load: hogs (2 CPU-bound processes beside the harness); "
	                        "shape: other-line:touch=4096:lines=2\n") != NULL, "%s", r.out);
	cr_assert_eq(count_occurrences(r.out, " xglibc xmutex w99.9/w99.99/i99.99  best  slow  fair  tail"), 2 * 4,
	             "a column group per ticketspin column, per table:\n%s", r.out);
	cr_assert(strstr(r.out, "\nticketspin: ") != NULL && strstr(r.out, "\nfifo: ") != NULL,
	          "%s", r.out);
	cr_assert(strstr(r.out, " of 4 cells meet all targets\n") != NULL, "%s", r.out);
	/* --probe: each table says what a cache-line transfer cost during it */
	cr_assert_eq(count_occurrences(r.out, "   cache-line transfer, measured before each cell's "
	                                      "runs: median "), 4, "%s", r.out);
	assert_hogs_gone(r.err, 2);

	snprintf(path, sizeof(path), "%s/target-matrix.csv", dir);
	read_text_file(path, text, sizeof(text));
	cr_assert(strncmp(text, "load,hogs,shape,layout,touch,touch_lines,cs,work,threads,lock,",
	                  62) == 0, "%s", text);
	cr_assert_eq(count_occurrences(text, ",ok,"), 2 * 2 * 4, "%s", text);
	cr_assert_eq(count_occurrences(text, ",other-line:touch=4096:lines=2,other-line,4096,2,4,"),
	             2 * 4, "%s", text);
	cr_assert(strstr(text, ",hogs,2,") == NULL && strstr(text, "\nhogs,2,same-line,") != NULL,
	          "%s", text);
	cr_assert(strstr(text, ",provider,transfer_ns,cpus,wait_p50,wait_p99,wait_p999,wait_p9999,"
	                       "wait_max,iter_p50,iter_p99,iter_p999,iter_p9999,iter_max\n") != NULL,
	          "%s", text);
	/* every run carries the probe's figure, in ns: a number after the provider */
	cr_assert_eq(count_occurrences(text, "libticketspin.so,"), 2 * 2 * 2, "%s", text);
	cr_assert_eq(count_transfer_figures(text), 2 * 2 * 4, "%s", text);

	snprintf(path, sizeof(path), "%s/target-matrix-summary.csv", dir);
	read_text_file(path, text, sizeof(text));
	cr_assert_eq(count_occurrences(text, "\n"), 1 + 2 * 2 * 4, "%s", text);
	cr_assert_eq(count_occurrences(text, ",meets\n") + count_occurrences(text, ",miss\n"),
	             2 * 2 * 2, "the two ticketspin columns are judged in every cell:\n%s", text);
	cr_assert_eq(r.status == 3, strstr(text, ",miss\n") != NULL, "status %d\n%s", r.status,
	             text);

	/* --report: the same verdict from the CSV alone, from the file given twice
	 * (a matrix run in two parts, concatenated), with twice the runs per cell */
	{
		struct probe_result again;
		char twice[4300], counts[4096], *p;
		const char *counts_start = strstr(r.out, "\n== Targets met");
		FILE *f;

		cr_assert(counts_start != NULL, "%s", r.out);
		snprintf(counts, sizeof(counts), "%.*s", (int)strcspn(counts_start + 1, "("),
		         counts_start);
		snprintf(twice, sizeof(twice), "%s/twice.csv", dir);
		snprintf(path, sizeof(path), "%s/target-matrix.csv", dir);
		read_text_file(path, text, sizeof(text));
		f = fopen(twice, "w");
		cr_assert(f != NULL);
		fprintf(f, "%s%s", text, text);
		fclose(f);
		probe_run(&again, NULL,
		          (const char *const[]){ "bash", BENCH_SRCDIR "/target-matrix.sh", "--report",
		                                 twice, "--out", dir, "--name", "again", NULL },
		          60);
		cr_assert_eq(again.status, r.status, "status %d\n%s%s", again.status, again.out,
		             again.err);
		cr_assert(strstr(again.out, "median [slowest-fastest] of 2 interleaved runs") != NULL,
		          "%s", again.out);
		/* each run twice: the same medians, so the same marks and counts */
		p = strstr(again.out, counts);
		cr_assert(p != NULL, "live:\n%s\nreport:\n%s", r.out, again.out);
		snprintf(path, sizeof(path), "%s/again-summary.csv", dir);
		read_text_file(path, text, sizeof(text));
		cr_assert_eq(count_occurrences(text, "\n"), 1 + 2 * 2 * 4, "%s", text);
	}
	remove_tree(dir);
}

/* --variant-lib: a column preloads another build of the library. */
Test(runner, target_matrix_variant_with_a_library_of_its_own)
{
	struct probe_result r;
	char dir[] = "/tmp/ticketspin-bench-XXXXXX", other[4200], path[4300], text[16384];
	char variant_lib[4400];
	const char *row, *row_end;

	cr_assert(mkdtemp(dir) != NULL);
	snprintf(other, sizeof(other), "%s/other-build", dir);
	cr_assert_eq(mkdir(other, 0700), 0);
	snprintf(path, sizeof(path), "%s/libticketspin.so", other);
	cr_assert_eq(symlink(TICKETSPIN_LIB_PATH, path), 0);
	snprintf(variant_lib, sizeof(variant_lib), "other=%s", path);
	probe_run(&r, NULL,
	          (const char *const[]){ "bash", BENCH_SRCDIR "/target-matrix.sh", "-q",
	                                 "--harness", HARNESS, "--lib", TICKETSPIN_LIB_PATH,
	                                 "--loads", "idle", "--threads", "2", "--work", "0",
	                                 "--shapes", "same-line", "--variant", "other=",
	                                 "--variant-lib", variant_lib, "--repeats", "1",
	                                 "--seconds", "0.02", "--out", dir, NULL },
	          120);
	cr_assert(r.status == 0 || r.status == 3, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.out, "\nother: 0 of 1 cells") != NULL ||
	                  strstr(r.out, "\nother: 1 of 1 cells") != NULL, "%s", r.out);
	snprintf(path, sizeof(path), "%s/target-matrix.csv", dir);
	read_text_file(path, text, sizeof(text));
	/*
	 * the provider, followed by the probe's figure (empty: no --probe) and
	 * the CPUs, is the library as preloaded, by the path given
	 */
	row = strstr(text, ",other,1,ok,");
	cr_assert(row != NULL, "%s", text);
	row_end = strchr(row, '\n');
	cr_assert(row_end != NULL);
	cr_assert(strstr(row, "/other-build/libticketspin.so,,") != NULL &&
	                  strstr(row, "/other-build/libticketspin.so,,") < row_end,
	          "%s", text);
	cr_assert_eq(count_occurrences(text, "/other-build/"), 1, "%s", text);
	remove_tree(dir);
}

/* A run whose lock is not the one meant stops the matrix: here the "library"
 * preloaded is libc itself, so pthread_spin_lock stays glibc's. */
Test(runner, target_matrix_stops_when_a_run_has_the_wrong_provider)
{
	struct probe_result r;
	char dir[] = "/tmp/ticketspin-bench-XXXXXX", path[4200], text[16384], libc[4096];
	const char *p;

	probe_run(&r, NULL,
	          (const char *const[]){ HARNESS, "--lock=mutex", "--threads=1",
	                                 "--seconds=0.01", NULL },
	          60);
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	p = strstr(r.out, " provider=");
	cr_assert(p != NULL, "%s", r.out);
	snprintf(libc, sizeof(libc), "%.*s", (int)strcspn(p + 10, "\n"), p + 10);

	cr_assert(mkdtemp(dir) != NULL);
	probe_run(&r, NULL,
	          (const char *const[]){ "bash", BENCH_SRCDIR "/target-matrix.sh", "-q",
	                                 "--harness", HARNESS, "--lib", libc, "--loads", "idle",
	                                 "--threads", "2", "--work", "0", "--shapes", "same-line",
	                                 "--repeats", "1", "--seconds", "0.02", "--out", dir,
	                                 NULL },
	          120);
	cr_assert_eq(r.status, 1, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.err, "STOPPED: the run of 'ticketspin' did not use the lock it meant") !=
	                  NULL, "%s", r.err);
	cr_assert(strstr(r.out, "cells meet all targets") == NULL, "no verdict:\n%s", r.out);
	snprintf(path, sizeof(path), "%s/target-matrix.csv", dir);
	read_text_file(path, text, sizeof(text));
	cr_assert(strstr(text, ",ticketspin,1,provider,") != NULL, "%s", text);
	remove_tree(dir);
}

/* So does a variant whose setting ticketspin refused (it would run its default). */
Test(runner, target_matrix_stops_when_a_setting_is_refused)
{
	struct probe_result r;
	char dir[] = "/tmp/ticketspin-bench-XXXXXX";

	cr_assert(mkdtemp(dir) != NULL);
	probe_run(&r, NULL,
	          (const char *const[]){ "bash", BENCH_SRCDIR "/target-matrix.sh", "-q",
	                                 "--harness", HARNESS, "--lib", TICKETSPIN_LIB_PATH,
	                                 "--loads", "idle", "--threads", "2", "--work", "0",
	                                 "--shapes", "same-line", "--variant",
	                                 "bad=TICKET_QUEUE=bogus", "--repeats", "1", "--seconds",
	                                 "0.02", "--out", dir, NULL },
	          120);
	cr_assert_eq(r.status, 1, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.err, "STOPPED: ticketspin refused a setting of 'bad'") != NULL, "%s",
	          r.err);
	cr_assert(strstr(r.out, "cells meet all targets") == NULL, "no verdict:\n%s", r.out);
	remove_tree(dir);
}

Test(runner, target_matrix_usage_errors)
{
	static const char *const bad[][2] = {
		{ "--shapes", "diagonal" },          { "--shapes", "same-line:lines=4" },
		{ "--shapes", "other-line:touch=100" }, { "--loads", "busy" },
		{ "--variant", "fifo=LD_PRELOAD=x" },  { "--locks", "glibc,mutex" },
		{ "--fairness-of", "best" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct probe_result r;

		probe_run(&r, NULL,
		          (const char *const[]){ "bash", BENCH_SRCDIR "/target-matrix.sh", "--harness",
		                                 HARNESS, "--lib", TICKETSPIN_LIB_PATH, "--loads",
		                                 "idle", bad[i][0], bad[i][1], NULL },
		          30);
		cr_assert_eq(r.status, 2, "%s %s: status %d\n%s%s", bad[i][0], bad[i][1], r.status,
		             r.out, r.err);
	}
}
