/*
 * The example programs, the sysbench script and ticketspin-compare, briefly:
 * under the preload each example's invariants hold and it names
 * libticketspin.so as the provider; without the lock (--no-lock) its checks
 * fire; without the preload the provider is glibc.  ticketspin-compare makes
 * its table, CSV and PNG on a tiny run, keeps the good runs when some fail,
 * and notices a library that is not ours.
 *
 * The tests run with the library in LD_PRELOAD; "LD_PRELOAD=" removes it.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "probe_run.h"

#define PRELOADED "TICKET_VERBOSE=1", "TICKET_STATS="
#define NO_PRELOAD "LD_PRELOAD=", "TICKET_VERBOSE=", "TICKET_STATS="

static const char *const example_names[] = { "semaphore", "twolocks", "hashmap" };

static void example_path(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", EXAMPLES, name);
}

static double throughput_of(const char *out)
{
	const char *p = strstr(out, "throughput=");

	return p != NULL ? strtod(p + strlen("throughput="), NULL) : -1;
}

/* The value of the line "key=..." in @out, or "" (in a static buffer). */
static const char *line_value(const char *out, const char *key)
{
	static char value[1024];
	const char *p = out;
	size_t len = strlen(key);

	value[0] = '\0';
	while (p != NULL && *p != '\0') {
		if (strncmp(p, key, len) == 0 && p[len] == '=') {
			size_t n = strcspn(p + len + 1, "\n");

			snprintf(value, sizeof(value), "%.*s", (int)n, p + len + 1);
			break;
		}
		p = strchr(p, '\n');
		if (p != NULL)
			p++;
	}
	return value;
}

static void assert_ours(const struct probe_result *r)
{
	cr_assert(strstr(line_value(r->out, "provider"), "libticketspin.so") != NULL,
	          "the program did not run with libticketspin.so:\n%s", r->out);
	cr_assert(strstr(r->err, "ticketspin: delay=") != NULL,
	          "no TICKET_VERBOSE line from the library:\n%s", r->err);
}

static void run_example(struct probe_result *r, const char *const *env, const char *name,
                        const char *threads, const char *const *extra)
{
	char path[4096];
	const char *argv[32] = { path, "--threads", threads, "--seconds", "0.2" };
	size_t n = 5;

	example_path(path, sizeof(path), name);
	for (; extra != NULL && *extra != NULL && n < 30; extra++)
		argv[n++] = *extra;
	argv[n] = NULL;
	probe_run(r, env, argv, 60);
}

Test(examples, invariants_hold_under_the_preload)
{
	static const char *const threads[] = { "1", "2", "3" };

	for (size_t i = 0; i < sizeof(example_names) / sizeof(example_names[0]); i++) {
		for (size_t t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
			struct probe_result r;

			run_example(&r, (const char *const[]){ PRELOADED, NULL }, example_names[i],
			            threads[t], NULL);
			cr_assert_eq(r.status, 0, "%s, %s threads: status %d\n%s%s",
			             example_names[i], threads[t], r.status, r.out, r.err);
			assert_ours(&r);
			cr_assert_str_eq(line_value(r.out, "invariants"), "ok", "%s", r.out);
			cr_assert_gt(throughput_of(r.out), 0, "%s", r.out);
			cr_assert(strstr(r.out, "per_thread_ops: ") != NULL, "%s", r.out);
			cr_assert(strstr(r.out, "latency_ns: p50=") != NULL, "%s", r.out);
		}
	}
}

Test(examples, semaphore_that_sleeps)
{
	struct probe_result r;

	run_example(&r, (const char *const[]){ PRELOADED, NULL }, "semaphore", "4",
	            (const char *const[]){ "--permits", "1", "--hold", "200", NULL });
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	assert_ours(&r);
	cr_assert_str_eq(line_value(r.out, "invariants"), "ok", "%s", r.out);
	cr_assert(strstr(r.out, " permits=1 ") != NULL, "%s", r.out);
}

Test(examples, twolocks_more_locks_and_hashmap_uniform)
{
	struct probe_result r;

	run_example(&r, (const char *const[]){ PRELOADED, NULL }, "twolocks", "3",
	            (const char *const[]){ "--locks", "4", "--cs-short", "5", "--cs-long", "500",
	                                   NULL });
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.out, " lock3_cs=500 ") != NULL, "%s", r.out);
	run_example(&r, (const char *const[]){ PRELOADED, NULL }, "hashmap", "3",
	            (const char *const[]){ "--zipf", "0", "--buckets", "4", "--update", "1",
	                                   NULL });
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert_str_eq(line_value(r.out, "invariants"), "ok", "%s", r.out);
}

/* The checks are real: without the lock, they catch the races. */
Test(examples, checks_fire_without_the_lock)
{
	for (size_t i = 0; i < sizeof(example_names) / sizeof(example_names[0]); i++) {
		struct probe_result r;
		int attempt;

		/* A race is likely, not certain, in a short run: allow three tries. */
		for (attempt = 0; attempt < 3; attempt++) {
			run_example(&r, (const char *const[]){ PRELOADED, NULL }, example_names[i],
			            "2",
			            (const char *const[]){ "--no-lock", "--think", "0", "--no-latency",
			                                   NULL });
			if (r.status != 0)
				break;
		}
		cr_assert_eq(r.status, 1, "%s --no-lock: status %d\n%s%s", example_names[i],
		             r.status, r.out, r.err);
		cr_assert(strstr(r.err, "INVARIANT VIOLATED") != NULL, "%s", r.err);
		cr_assert(strstr(r.out, "invariants=violated") != NULL, "%s", r.out);
	}
}

/* The provider check can fail: without the preload the examples name glibc. */
Test(examples, without_the_preload_the_provider_is_glibc)
{
	for (size_t i = 0; i < sizeof(example_names) / sizeof(example_names[0]); i++) {
		struct probe_result r;

		run_example(&r, (const char *const[]){ NO_PRELOAD, NULL }, example_names[i], "2",
		            NULL);
		cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
		cr_assert(strstr(line_value(r.out, "provider"), "libticketspin.so") == NULL,
		          "%s", r.out);
		cr_assert(strstr(line_value(r.out, "provider"), "libc.so") != NULL, "%s", r.out);
		cr_assert(strstr(r.err, "ticketspin:") == NULL, "%s", r.err);
	}
}

Test(examples, csv_and_json)
{
	struct probe_result r;

	run_example(&r, (const char *const[]){ PRELOADED, NULL }, "hashmap", "2",
	            (const char *const[]){ "--csv", NULL });
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert(strncmp(r.out, "example,threads,seconds,throughput,", 35) == 0, "%s", r.out);
	cr_assert(strstr(r.out, "\nhashmap,2,") != NULL, "%s", r.out);
	cr_assert(strstr(r.out, "libticketspin.so,ok\n") != NULL, "%s", r.out);

	run_example(&r, (const char *const[]){ PRELOADED, NULL }, "semaphore", "2",
	            (const char *const[]){ "--json", NULL });
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert(r.out[0] == '{' && strstr(r.out, "}\n") != NULL, "%s", r.out);
	cr_assert(strstr(r.out, "\"example\":\"semaphore\"") != NULL, "%s", r.out);
	cr_assert(strstr(r.out, "\"invariants\":\"ok\"") != NULL, "%s", r.out);
	cr_assert(strstr(r.out, "\"lat_p99_ns\":") != NULL, "%s", r.out);
}

Test(examples, bad_options)
{
	static const char *const bad[][3] = {
		{ "--threads", "0", NULL }, { "--seconds", "x", NULL }, { "--bogus", NULL, NULL },
		{ "--csv", "--json", NULL }, { "--threads", NULL, NULL },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct probe_result r;
		char path[4096];
		const char *argv[] = { path, bad[i][0], bad[i][1], NULL };

		example_path(path, sizeof(path), "semaphore");
		probe_run(&r, NULL, argv, 30);
		cr_assert_eq(r.status, 2, "%s %s: status %d\n%s%s", bad[i][0],
		             bad[i][1] ? bad[i][1] : "", r.status, r.out, r.err);
		cr_assert(strstr(r.err, "semaphore: ") != NULL, "%s", r.err);
	}
}

/* The examples parse with getopt_long: --name=VALUE, --name VALUE, unambiguous
 * prefixes; and say what is wrong with a bad argument. */
Test(examples, getopt_long_forms)
{
	static const char *const bad[][3] = {
		{ "--csv=1", "bad option '--csv=1': unknown, ambiguous, or a flag given a value" },
		{ "--se", "bad option '--se': unknown, ambiguous" }, /* --seconds or --seed */
		{ "--threads", "--threads needs a value" },
		{ "--threads=", "--threads '': expected an integer 1..4096" },
		{ "extra", "unexpected argument 'extra'" },
	};
	struct probe_result r;
	char path[4096];

	example_path(path, sizeof(path), "semaphore");
	probe_run(&r, (const char *const[]){ "LD_PRELOAD=", NULL },
	          (const char *const[]){ path, "--thr=3", "--sec", "0.05", "--permits=2", "--csv",
	                                 NULL }, 30);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert(strstr(r.out, "\nsemaphore,3,") != NULL, "--thr=3 is --threads=3:\n%s", r.out);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		probe_run(&r, (const char *const[]){ "LD_PRELOAD=", NULL },
		          (const char *const[]){ path, bad[i][0], NULL }, 30);
		cr_assert_eq(r.status, 2, "%s: status %d\n%s%s", bad[i][0], r.status, r.out, r.err);
		cr_assert(strstr(r.err, bad[i][1]) != NULL, "%s:\n%s", bad[i][0], r.err);
		cr_assert_str_eq(r.out, "", "%s", bad[i][0]);
	}
}

/* ---- sysbench ------------------------------------------------------------ */

static void need_sysbench(void)
{
	if (SYSBENCH[0] == '\0')
		cr_skip_test("sysbench was not found by configure (./bootstrap --deps installs it)");
}

static void run_sysbench(struct probe_result *r, const char *const *env, const char *const *extra)
{
	const char *argv[32] = { SYSBENCH, SPINLOCK_LUA, "--threads=2", "--time=1" };
	size_t n = 4;

	for (; extra != NULL && *extra != NULL && n < 30; extra++)
		argv[n++] = *extra;
	argv[n++] = "run";
	argv[n] = NULL;
	probe_run(r, env, argv, 60);
}

Test(sysbench, workers_share_the_locks_under_the_preload)
{
	struct probe_result r;

	need_sysbench();
	run_sysbench(&r, (const char *const[]){ PRELOADED, NULL },
	             (const char *const[]){ "--locks=3", NULL });
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	assert_ours(&r);
	cr_assert_str_eq(line_value(r.out, "invariants"), "ok", "%s", r.out);
	cr_assert(strstr(r.out, "sysbench-spinlock: locks=3 cs=10 think=100 threads=2\n") != NULL,
	          "%s", r.out);
	cr_assert(strstr(r.out, "per_thread_ops: total=") != NULL, "%s", r.out);
}

/* sysbench's own report stays, unchanged, and our lines come after it. */
Test(sysbench, its_own_report_stays_and_ours_follows)
{
	static const char *const sections[] = {
		"\nGeneral statistics:\n    total time:                          ",
		"\n    total number of events:              ",
		"\nLatency (ms):\n         min:  ", "\n         95th percentile:  ",
		"\nThreads fairness:\n    events (avg/stddev):           ",
	};
	struct probe_result r;
	const char *last = NULL;

	need_sysbench();
	run_sysbench(&r, (const char *const[]){ PRELOADED, NULL }, NULL);
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		const char *p = strstr(r.out, sections[i]);

		cr_assert(p != NULL, "sysbench's report lacks \"%s\":\n%s", sections[i], r.out);
		cr_assert(last == NULL || p > last, "out of order: %s\n%s", sections[i], r.out);
		last = p;
	}
	cr_assert(strstr(last, "\nsysbench-spinlock: locks=1 ") != NULL, "%s", r.out);
	cr_assert(strstr(last, "\nprovider=") != NULL, "%s", r.out);
	cr_assert(strstr(last, "\ninvariants=ok\n") != NULL, "%s", r.out);
	cr_assert(strstr(r.out, "throughput=") == NULL, "our old report is gone:\n%s", r.out);
}

/* Shared for real: two workers without the lock collide on it. */
Test(sysbench, checks_fire_without_the_lock)
{
	struct probe_result r;

	need_sysbench();
	run_sysbench(&r, (const char *const[]){ PRELOADED, NULL },
	             (const char *const[]){ "--no-lock=on", "--think=0", NULL });
	cr_assert_eq(r.status, 1, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.err, "INVARIANT VIOLATED: two threads inside one lock") != NULL,
	          "%s", r.err);
}

Test(sysbench, without_the_preload_the_provider_is_glibc)
{
	struct probe_result r;

	need_sysbench();
	run_sysbench(&r, (const char *const[]){ NO_PRELOAD, NULL }, NULL);
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(line_value(r.out, "provider"), "libc.so") != NULL, "%s", r.out);
	cr_assert_str_eq(line_value(r.out, "invariants"), "ok", "%s", r.out);
}

/* ---- ticketspin-compare ---------------------------------------------------- */

Test(compare, tiny_run_makes_table_csv_and_png)
{
	struct probe_result r;
	char dir[] = "/tmp/ticketspin-compare-XXXXXX", path[4200], text[16384], sem[4096];
	unsigned char magic[8] = { 0 };
	int fd;

	cr_assert(mkdtemp(dir) != NULL);
	example_path(sem, sizeof(sem), "semaphore");
	probe_run(&r, NULL,
	          (const char *const[]){ COMPARE, "-q", "-t", "1,2", "-r", "1", "-m",
	                                 "glibc,off,50,auto-single,auto-hashed", "-o", dir,
	                                 "-n", "tiny", "--", sem, "--threads", "{threads}",
	                                 "--seconds", "0.05", NULL },
	          120);
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.out, "   glibc          off          50x  auto-single  auto-hashed\n") !=
	          NULL, "%s", r.out);
	cr_assert(strstr(r.out, "ratio to glibc") != NULL, "%s", r.out);
	cr_assert(strstr(r.out, "FAILED") == NULL, "%s", r.out);

	snprintf(path, sizeof(path), "%s/tiny.csv", dir);
	read_text_file(path, text, sizeof(text));
	{
		static const char header[] = "name,mode,threads,repeat,throughput,wall_seconds,"
		                             "user_seconds,sys_seconds,latency_avg_ms,"
		                             "latency_pct_ms,status\n";

		cr_assert(strncmp(text, header, strlen(header)) == 0, "%s", text);
	}
	cr_assert_eq(count_occurrences(text, ",ok\n"), 10, "%s", text);
	cr_assert(strstr(text, "tiny,auto-hashed,2,1,") != NULL, "%s", text);

	snprintf(path, sizeof(path), "%s/tiny-summary.csv", dir);
	read_text_file(path, text, sizeof(text));
	cr_assert(strstr(text, "\nglibc,1,1,1,") != NULL && strstr(text, ",1.000\n") != NULL,
	          "%s", text);

	snprintf(path, sizeof(path), "%s/tiny.png", dir);
	fd = open(path, O_RDONLY);
	cr_assert(fd >= 0, "no PNG: %s%s", r.out, r.err);
	cr_assert_eq(read(fd, magic, sizeof(magic)), 8);
	close(fd);
	cr_assert(memcmp(magic, "\x89PNG\r\n\x1a\n", 8) == 0, "%s is not a PNG", path);
	remove_tree(dir);
}

Test(compare, failed_runs_are_reported_and_the_rest_kept)
{
	struct probe_result r;
	char dir[] = "/tmp/ticketspin-compare-XXXXXX", path[4200], text[16384], sem[4096];

	cr_assert(mkdtemp(dir) != NULL);
	example_path(sem, sizeof(sem), "semaphore");
	/* semaphore refuses 5000 threads (exit status 2) */
	probe_run(&r, NULL,
	          (const char *const[]){ COMPARE, "-q", "-t", "1,5000", "-r", "1", "-m", "glibc,off",
	                                 "-o", dir, "-n", "part", "--no-plot", "--", sem,
	                                 "--threads", "{threads}", "--seconds", "0.05", NULL },
	          120);
	cr_assert_eq(r.status, 1, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.err, "FAILED: mode glibc, 5000 threads, repeat 1: exit status 2") != NULL,
	          "%s", r.err);
	cr_assert(strstr(r.err, "FAILED: mode off, 5000 threads, repeat 1: exit status 2") != NULL,
	          "%s", r.err);
	cr_assert(strstr(r.err, "2 of 4 runs failed") != NULL, "%s", r.err);
	snprintf(path, sizeof(path), "%s/part.csv", dir);
	read_text_file(path, text, sizeof(text));
	cr_assert_eq(count_occurrences(text, ",ok\n"), 2, "%s", text);
	cr_assert_eq(count_occurrences(text, ",exit-2\n"), 2, "%s", text);
	cr_assert(strstr(r.out, "FAILED") != NULL, "%s", r.out);
	remove_tree(dir);
}

/* The provider check can fail: a library that is not ours does not count. */
Test(compare, a_library_that_is_not_ours_fails)
{
	struct probe_result r;
	char dir[] = "/tmp/ticketspin-compare-XXXXXX", sem[4096];

	cr_assert(mkdtemp(dir) != NULL);
	example_path(sem, sizeof(sem), "semaphore");
	probe_run(&r, NULL,
	          (const char *const[]){ COMPARE, "-q", "-t", "2", "-r", "1", "-m", "off", "--lib",
	                                 "/lib/x86_64-linux-gnu/libm.so.6", "-o", dir,
	                                 "--no-plot", "--", sem, "--threads", "{threads}",
	                                 "--seconds", "0.05", NULL },
	          120);
	cr_assert_eq(r.status, 1, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.err, "FAILED: mode off, 2 threads, repeat 1: libticketspin.so did not load") !=
	          NULL, "%s", r.err);
	remove_tree(dir);
}

Test(compare, usage_errors)
{
	static const char *const bad[][6] = {
		{ "--", "/nonexistent/program", "{threads}", NULL },
		{ "-t", "1,x", "--", "true", "{threads}", NULL },
		{ "-m", "glibc,fastest", "--", "true", "{threads}", NULL },
		{ "-t", "1,2", "--", "true", "no-placeholder", NULL },
		{ "--bogus", NULL },
		{ NULL },
	};
	static const char *const expect[] = {
		"command not found: /nonexistent/program", "--threads: 'x'",
		"unknown mode 'fastest'", "no {threads} placeholder", "unknown option '--bogus'",
		"no COMMAND given",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct probe_result r;
		const char *argv[8] = { COMPARE };

		for (size_t k = 0; k < 6 && bad[i][k] != NULL; k++)
			argv[k + 1] = bad[i][k];
		probe_run(&r, NULL, argv, 30);
		cr_assert_eq(r.status, 2, "case %zu: status %d\n%s%s", i, r.status, r.out, r.err);
		cr_assert(strstr(r.err, expect[i]) != NULL, "case %zu: %s", i, r.err);
	}
}

Test(compare, sysbench_script)
{
	struct probe_result r;
	char dir[] = "/tmp/ticketspin-compare-XXXXXX", path[4200], text[16384];

	need_sysbench();
	cr_assert(mkdtemp(dir) != NULL);
	probe_run(&r, NULL,
	          (const char *const[]){ COMPARE, "-q", "-t", "2", "-r", "1", "-m",
	                                 "glibc,auto-hashed", "-o", dir, "--no-plot", "--",
	                                 SYSBENCH, SPINLOCK_LUA, "--threads={threads}",
	                                 "--time=1", "run", NULL },
	          120);
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	snprintf(path, sizeof(path), "%s/sysbench-spinlock.csv", dir);
	read_text_file(path, text, sizeof(text));
	cr_assert_eq(count_occurrences(text, ",ok\n"), 2, "%s", text);
	/* the throughput is sysbench's events over its total time; its latency follows */
	{
		const char *row = strstr(text, "\nsysbench-spinlock,glibc,2,1,");
		double throughput, wall, user, sys, latency_avg, latency_pct;
		char status[8];

		cr_assert(row != NULL, "%s", text);
		cr_assert_eq(sscanf(row, "\nsysbench-spinlock,glibc,2,1,%lf,%lf,%lf,%lf,%lf,%lf,%7[a-z]",
		                    &throughput, &wall, &user, &sys, &latency_avg, &latency_pct,
		                    status), 7, "%s", text);
		cr_assert(throughput > 0 && latency_avg >= 0 && latency_pct >= 0, "%s", text);
		cr_assert_str_eq(status, "ok");
	}
	remove_tree(dir);
}
