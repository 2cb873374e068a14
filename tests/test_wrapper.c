/*
 * The ticketspin command, from the build tree: its options reach the library
 * (seen through TICKET_VERBOSE's report), it keeps LD_PRELOAD's entries, and
 * it passes on the command's exit status; bad options give status 2.
 *
 * The tests run with the library already in LD_PRELOAD; most of them clear
 * it, so that only the wrapper can have put it there.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "probe_run.h"

#define NO_PRELOAD "LD_PRELOAD=", "TICKET_VERBOSE=", "TICKET_STATS=", "TICKET_DELAY=", \
	"TICKET_DELAY_TABLE="

static void wrap(struct probe_result *r, const char *const *env, const char *const *argv)
{
	probe_run(r, env, argv, 60);
}

Test(wrapper, options_reach_the_library)
{
	struct probe_result r;

	wrap(&r, (const char *const[]){ NO_PRELOAD, NULL },
	     (const char *const[]){ WRAPPER, "--delay=off", "--table=single", "--verbose", "--",
	                            CONTENDED, "2", "1000", "1", NULL });
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	assert_probe_provider(&r);
	cr_assert(strstr(r.err, "ticketspin: delay=off ") != NULL, "%s", r.err);
	cr_assert(strstr(r.err, " table=single ") != NULL, "%s", r.err);
	cr_assert(strstr(r.err, " stats=off ") != NULL, "%s", r.err);

	wrap(&r, (const char *const[]){ NO_PRELOAD, NULL },
	     (const char *const[]){ WRAPPER, "--delay=250", "--verbose", "--stats",
	                            "--stats-top=3", CONTENDED, "4", "5000", "1", NULL });
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert(strstr(r.err, "ticketspin: delay=fixed factor=250 ") != NULL, "%s", r.err);
	cr_assert(strstr(r.err, " stats=stderr stats_top=3 ") != NULL, "%s", r.err);
	cr_assert(strstr(r.err, "ticketspin: stats: pid ") != NULL, "%s", r.err);
	cr_assert(strstr(r.err, " contend_worker+0x") != NULL, "%s", r.err);
	cr_assert(strstr(r.out, "stats:") == NULL, "%s", r.out);
}

/*
 * TICKET_VERBOSE=1 prints its line when the library is loaded (its
 * constructor reads the settings), not at the first pthread_spin_* call:
 * the README promises "one stderr line: it is loaded", and a program that
 * never takes a spinlock (sh) shows it too, before its own output.
 * Through the wrapper as well.
 */
Test(wrapper, verbose_prints_at_load)
{
	struct probe_result r;
	char preload[4096];

	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", getenv("TICKETSPIN_LIB"));
	/* before the program's own first line: at load, not at exit */
	wrap(&r, (const char *const[]){ NO_PRELOAD, preload, "TICKET_VERBOSE=1", NULL },
	     (const char *const[]){ "/bin/sh", "-c", "echo main >&2", NULL });
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strncmp(r.err, "ticketspin: delay=", 18) == 0, "no line at load: '%s'", r.err);
	cr_assert_eq(count_occurrences(r.err, "\n"), 2, "not one line and main's: '%s'", r.err);
	cr_assert(strstr(r.err, "\nmain\n") != NULL, "%s", r.err);
	cr_assert_str_eq(r.out, "");

	wrap(&r, (const char *const[]){ NO_PRELOAD, NULL },
	     (const char *const[]){ WRAPPER, "--verbose", "/bin/sh", "-c", "echo main >&2", NULL });
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strncmp(r.err, "ticketspin: delay=", 18) == 0, "no line at load: '%s'", r.err);
}

/* The number a shell pipeline @format (with one %s, for @dir) prints. */
static int count_in(const char *format, const char *dir)
{
	char cmd[256];
	FILE *out;
	int n = -1;

	snprintf(cmd, sizeof(cmd), format, dir);
	out = popen(cmd, "r");
	cr_assert(out != NULL);
	cr_assert_eq(fscanf(out, "%d", &n), 1);
	pclose(out);
	return n;
}

/* Files named ticketspin-stats.* in @dir. */
static int stats_files_in(const char *dir)
{
	return count_in("ls %s | grep -c '^ticketspin-stats\\.'", dir);
}

/*
 * --stats-keep reaches the library as TICKET_STATS_KEEP: the shared
 * statistics file stays after a normal exit (and without it, goes), and no
 * other setting changes (the report still lists up to 20 locks).
 */
Test(wrapper, stats_keep_keeps_the_file_and_only_that)
{
	struct probe_result r;
	char dir[] = "/tmp/ticketspin-wrapper-keepXXXXXX", xdg[128];

	cr_assert(mkdtemp(dir) != NULL);
	snprintf(xdg, sizeof(xdg), "XDG_RUNTIME_DIR=%s", dir);
	wrap(&r, (const char *const[]){ NO_PRELOAD, xdg, "TICKET_STATS_KEEP=", "TICKET_STATS_TOP=",
	                                NULL },
	     (const char *const[]){ WRAPPER, "--stats", "--verbose", CONTENDED, "2", "1000", "1",
	                            NULL });
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	assert_probe_provider(&r);
	cr_assert_eq(stats_files_in(dir), 0, "without --stats-keep the file goes");

	wrap(&r, (const char *const[]){ NO_PRELOAD, xdg, "TICKET_STATS_KEEP=", "TICKET_STATS_TOP=",
	                                NULL },
	     (const char *const[]){ WRAPPER, "--stats", "--stats-keep", "--verbose", CONTENDED, "2",
	                            "1000", "1", NULL });
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	assert_probe_provider(&r);
	cr_assert(strstr(r.err, " stats=stderr stats_top=20 ") != NULL, "%s", r.err);
	cr_assert_eq(stats_files_in(dir), 1, "--stats-keep keeps the file:\n%s", r.err);
	remove_tree(dir);
}

Test(wrapper, stats_file_relative_to_the_current_directory)
{
	struct probe_result r;
	char dir[] = "/tmp/ticketspin-wrapper-XXXXXX", path[128], text[16384], cwd[4096];
	int fd;

	cr_assert(mkdtemp(dir) != NULL);
	cr_assert(getcwd(cwd, sizeof(cwd)) != NULL);
	cr_assert_eq(chdir(dir), 0);
	wrap(&r, (const char *const[]){ NO_PRELOAD, NULL },
	     (const char *const[]){ WRAPPER, "--stats=report", CONTENDED, "4", "5000", "1", NULL });
	cr_assert_eq(chdir(cwd), 0);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert(strstr(r.err, "stats:") == NULL, "%s", r.err);
	snprintf(path, sizeof(path), "%s/report", dir);
	fd = open(path, O_RDONLY);
	cr_assert(fd >= 0, "no %s", path);
	read_all(fd, text, sizeof(text));
	close(fd);
	unlink(path);
	rmdir(dir);
	cr_assert(strncmp(text, "stats: pid ", 11) == 0, "%s", text);
	cr_assert(strstr(text, "1 lock contended") != NULL, "%s", text);
}

/* Entries in @dir other than . and .. (a directory counts) */
static int entries_in(const char *dir)
{
	return count_in("ls -A %s | wc -l", dir);
}

/*
 * TICKET_STATS=FILE: a process that contended no lock writes no report
 * file (a program's helpers would each leave one of no locks); with
 * TICKET_VERBOSE=1, one stderr line says so.  One that did writes it.
 */
Test(wrapper, no_report_file_when_nothing_contended)
{
	struct probe_result r;
	char dir[] = "/tmp/ticketspin-wrapper-emptyXXXXXX", stats[128], xdg[128];

	cr_assert(mkdtemp(dir) != NULL);
	snprintf(stats, sizeof(stats), "TICKET_STATS=%s/report.%%p", dir);
	/* the shared files elsewhere: an exec'ed image's stays (for report PID) */
	snprintf(xdg, sizeof(xdg), "XDG_RUNTIME_DIR=%s/shared", dir);
	cr_assert_eq(mkdir(xdg + strlen("XDG_RUNTIME_DIR="), 0700), 0);
	/* sh and its two children: three images, none takes a lock */
	wrap(&r, (const char *const[]){ stats, xdg, "TICKET_STATS_KEEP=", NULL },
	     (const char *const[]){ "/bin/sh", "-c", "/bin/true; /bin/true", NULL });
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.err, "");
	cr_assert_eq(entries_in(dir), 1, "report files left for nothing contended");

	wrap(&r, (const char *const[]){ stats, xdg, "TICKET_STATS_KEEP=", "TICKET_VERBOSE=1", NULL },
	     (const char *const[]){ "/bin/true", NULL });
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.err, ": no lock contended; no report written to ") != NULL, "%s", r.err);
	cr_assert_eq(count_occurrences(r.err, "\n"), 2, "settings, then one line: %s", r.err);
	cr_assert_eq(entries_in(dir), 1);

	wrap(&r, (const char *const[]){ stats, xdg, "TICKET_STATS_KEEP=", NULL },
	     (const char *const[]){ CONTENDED, "4", "5000", "1", NULL });
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(entries_in(dir), 2, "no report of a contended run");
	remove_tree(dir);
}

Test(wrapper, keeps_ld_preload_entries)
{
	struct probe_result r;

	wrap(&r, (const char *const[]){ "LD_PRELOAD=libm.so.6", NULL },
	     (const char *const[]){ WRAPPER, "sh", "-c", "echo \"preload=$LD_PRELOAD\"", NULL });
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert(strstr(r.out, "preload=") != NULL && strstr(r.out, "libticketspin.so:libm.so.6\n"),
	          "%s", r.out);
	cr_assert(strstr(r.out, "preload=/") != NULL, "absolute path first: %s", r.out);

	/* and the library, first in line, provides the functions */
	wrap(&r, (const char *const[]){ "LD_PRELOAD=libm.so.6", NULL },
	     (const char *const[]){ WRAPPER, CONTENDED, "none", "10", NULL });
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	assert_probe_provider(&r);
}

Test(wrapper, passes_the_exit_status)
{
	struct probe_result r;

	wrap(&r, NULL, (const char *const[]){ WRAPPER, "sh", "-c", "exit 7", NULL });
	cr_assert_eq(r.status, 7, "%s", r.err);
	wrap(&r, NULL, (const char *const[]){ WRAPPER, "--", "false", NULL });
	cr_assert_eq(r.status, 1, "%s", r.err);
	wrap(&r, NULL, (const char *const[]){ WRAPPER, "sh", "-c", "kill -TERM $$", NULL });
	cr_assert_eq(r.status, 128 + SIGTERM, "%s", r.err);
	wrap(&r, NULL, (const char *const[]){ WRAPPER, "no-such-command-ticketspin", NULL });
	cr_assert_eq(r.status, 127);
	cr_assert(strstr(r.err, "ticketspin: no-such-command-ticketspin: command not found") != NULL,
	          "%s", r.err);
	wrap(&r, NULL, (const char *const[]){ WRAPPER, "/etc/passwd", NULL });
	cr_assert_eq(r.status, 126, "%s", r.err);
}

Test(wrapper, arguments_after_double_dash_are_the_command)
{
	struct probe_result r;

	wrap(&r, NULL, (const char *const[]){ WRAPPER, "--", "sh", "-c", "echo \"$0 $1\"", "--verbose",
	                                      "--delay=x", NULL });
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "--verbose --delay=x\n");
}

static void bad_option(const char *option, const char *message)
{
	struct probe_result r;

	wrap(&r, NULL, (const char *const[]){ WRAPPER, option, "true", NULL });
	cr_assert_eq(r.status, 2, "%s: status %d", option, r.status);
	cr_assert(strstr(r.err, message) != NULL, "%s:\n%s", option, r.err);
	cr_assert_str_eq(r.out, "");
}

Test(wrapper, bad_options)
{
	bad_option("--delay=fast",
	           "--delay='fast' is not valid: accepted: auto, series, off or an integer 1..100000");
	bad_option("--delay=0", "--delay='0' is not valid");
	bad_option("--delay=100001", "--delay='100001' is not valid");
	bad_option("--table=tree", "--table='tree' is not valid: accepted: hashed or single");
	bad_option("--stats=", "--stats= needs a file name");
	bad_option("--stats-top=0", "--stats-top='0' is not valid");
	bad_option("--frobnicate", "unknown option '--frobnicate'; 'ticketspin --help' lists them");
	bad_option("--wait=sleep", "--wait='sleep' is not valid: accepted: park, yield or spin");
	bad_option("--strict=1", "--strict takes no value");

	struct probe_result r;
	wrap(&r, NULL, (const char *const[]){ WRAPPER, "--verbose", NULL });
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "no command given") != NULL, "%s", r.err);
}

Test(wrapper, help_and_version)
{
	struct probe_result r;

	wrap(&r, NULL, (const char *const[]){ WRAPPER, "--help", NULL });
	cr_assert_eq(r.status, 0);
	cr_assert(strncmp(r.out, "Usage: ticketspin [OPTION]... [--] COMMAND [ARG]...", 50) == 0,
	          "%s", r.out);
	cr_assert(strstr(r.out, "libticketspin.so") != NULL, "%s", r.out);
	wrap(&r, NULL, (const char *const[]){ WRAPPER, "--version", NULL });
	cr_assert_eq(r.status, 0);
	cr_assert(strncmp(r.out, "ticketspin ", 11) == 0 && strchr(r.out, '@') == NULL, "%s", r.out);
}

Test(wrapper, lib_option)
{
	struct probe_result r;

	wrap(&r, (const char *const[]){ NO_PRELOAD, NULL },
	     (const char *const[]){ WRAPPER, "--lib=/nonexistent/libticketspin.so", "true", NULL });
	cr_assert_eq(r.status, 127);
	cr_assert(strstr(r.err, "cannot find the library /nonexistent/libticketspin.so") != NULL,
	          "%s", r.err);
	char lib[4096];
	snprintf(lib, sizeof(lib), "--lib=%s", getenv("TICKETSPIN_LIB"));
	wrap(&r, (const char *const[]){ NO_PRELOAD, NULL },
	     (const char *const[]){ WRAPPER, lib, CONTENDED, "none", "10", NULL });
	cr_assert_eq(r.status, 0, "%s", r.err);
	assert_probe_provider(&r);
}
