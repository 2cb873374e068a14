/*
 * The TICKET_STATS file and its reader: `ticketspin report PID` after _exit
 * in a forked child and after SIGKILL, `ticketspin top --once` on a running
 * program, a normal exit removing the file (or keeping it), --clean,
 * another user's statistics refused, paths that cannot be used, and a
 * set-user-ID program ignoring TICKET_*.
 *
 * Every run gets a private XDG_RUNTIME_DIR, so that the files are found
 * there and nothing is left in /dev/shm.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "probe_run.h"
#include "stats_file.h"

static char dir[] = "/tmp/ticketspin-stats-fileXXXXXX";
static char xdg[160];

static void make_dir(void)
{
	cr_assert(mkdtemp(dir) != NULL);
	snprintf(xdg, sizeof(xdg), "XDG_RUNTIME_DIR=%s", dir);
}

static void remove_dir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(stats_file, .init = make_dir, .fini = remove_dir);

static int files_in_dir(void)
{
	char cmd[256];
	FILE *ls;
	int n = 0;
	char line[512];

	snprintf(cmd, sizeof(cmd), "ls %s", dir);
	ls = popen(cmd, "r");
	cr_assert_not_null(ls);
	while (fgets(line, sizeof(line), ls) != NULL)
		n += strncmp(line, "ticketspin-stats.", 17) == 0;
	pclose(ls);
	return n;
}

/* `ticketspin ARGS...` (report or top) with our directory; its output in @r. */
static void reader(struct probe_result *r, const char *const *args)
{
	const char *argv[16] = { WRAPPER };

	for (int i = 0; args[i] != NULL && i < 14; i++)
		argv[i + 1] = args[i];
	probe_run(r, (const char *const[]){ xdg, "LD_PRELOAD=", NULL }, argv, 30);
}

/* The row of the lock at @address (as printed by contended), parsed (stats_report.c). */
static bool row_of(const char *text, const char *address, struct ts_report_row *row)
{
	char key[64];
	const char *line;

	snprintf(key, sizeof(key), "stats: %18s ", address);
	if ((line = strstr(text, key)) == NULL)
		return false;
	cr_assert(ts_report_parse_row(line, false, row), "cannot parse: %.300s", line);
	return true;
}

/* "lock 0 ADDRESS acquisitions COUNT" from contended's output */
static void lock0(const char *out, char *address, unsigned long *count)
{
	const char *line = strstr(out, "lock 0 ");

	cr_assert_not_null(line, "%s", out);
	cr_assert_eq(sscanf(line, "lock 0 %31s acquisitions %lu", address, count), 2, "%s", line);
}

Test(stats_file, report_of_a_child_that_ended_with__exit)
{
	struct probe_result run, rep;
	char address[32], pid[16];
	unsigned long count;
	const char *child;
	struct ts_report_row row;

	time_t before = time(NULL), after;
	probe_run(&run, (const char *const[]){ xdg, "TICKET_STATS=1", NULL },
	          (const char *const[]){ CONTENDED, "4", "5000", "1", "fork_exit", NULL }, 60);
	after = time(NULL);
	assert_probe_provider(&run);
	cr_assert_eq(run.status, 0, "%s%s", run.out, run.err);
	child = strstr(run.out, "child ");
	cr_assert_not_null(child, "%s", run.out);
	cr_assert_eq(sscanf(child, "child %15s", pid), 1);
	lock0(run.out, address, &count);
	/* the parent's report (it did not contend), not the child's */
	cr_assert(strstr(run.err, ": 0 locks contended") != NULL, "%s", run.err);

	reader(&rep, (const char *const[]){ "report", pid, NULL });
	cr_assert_eq(rep.status, 0, "%s%s", rep.out, rep.err);
	cr_assert(strstr(rep.out, "ended without a normal exit") != NULL, "%s", rep.out);
	/*
	 * doc/statistics.md, ticketspin(1): the first line says also "when the
	 * process started, and its command line" (the clock read around the
	 * run: no duration asserted)
	 */
	{
		char expect[512];
		const char *started = strstr(rep.out, "; started ");
		struct tm tm = { .tm_isdst = -1 };
		time_t t;

		snprintf(expect, sizeof(expect), "; command: %s 4 5000 1 fork_exit\n", CONTENDED);
		cr_assert_not_null(strstr(rep.out, expect), "not '%s' in:\n%s", expect, rep.out);
		cr_assert_not_null(started, "%s", rep.out);
		cr_assert_not_null(strptime(started + 10, "%Y-%m-%d %H:%M:%S", &tm), "%s", rep.out);
		t = mktime(&tm);
		cr_assert(t >= before && t <= after, "started %ld, not in %ld..%ld:\n%s", (long)t,
		          (long)before, (long)after, rep.out);
	}
	cr_assert(row_of(rep.out, address, &row), "no row for %s:\n%s", address, rep.out);
	cr_assert(row.contended >= 1 && row.contended <= row.total && row.total <= count + 1,
	          "contended %llu total %llu of %lu:\n%s", row.contended, row.total, count + 1,
	          rep.out);
	cr_assert(strncmp(row.sites, "contend_worker+0x", 17) == 0 &&
	          strstr(row.sites, "/contended) ") != NULL, "site: %s", row.sites);
}

/* Starts contended in "wait" mode; returns its pid once it printed "ready". */
static pid_t start_waiting(const char *threads, const char *rounds, char *out_path)
{
	char *envp[512];
	size_t n = 0;
	pid_t pid;
	int fd;
	posix_spawn_file_actions_t actions;

	for (char **e = environ; *e != NULL && n < 500; e++)
		if (strncmp(*e, "XDG_RUNTIME_DIR=", 16) != 0 && strncmp(*e, "TICKET_", 7) != 0)
			envp[n++] = *e;
	envp[n++] = xdg;
	envp[n++] = (char *)"TICKET_STATS=1";
	envp[n] = NULL;
	snprintf(out_path, 128, "%s/out", dir);
	fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert(fd >= 0);
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, fd, STDOUT_FILENO);
	cr_assert_eq(posix_spawn(&pid, CONTENDED, &actions, NULL,
	                         (char *[]){ (char *)CONTENDED, (char *)threads, (char *)rounds,
	                                     (char *)"1", (char *)"wait", NULL },
	                         envp), 0);
	posix_spawn_file_actions_destroy(&actions);
	close(fd);
	for (int waited = 0;; waited++) {
		char text[4096];

		fd = open(out_path, O_RDONLY);
		read_all(fd, text, sizeof(text));
		close(fd);
		if (strstr(text, "ready\n") != NULL)
			break;
		cr_assert(waited < 6000, "contended did not get ready:\n%s", text);
		usleep(10000);
	}
	return pid;
}

/* Whether /proc/PID/stat shows state Z. */
static bool is_zombie(pid_t pid)
{
	char path[64], text[512];
	const char *close_paren;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	cr_assert(fd >= 0, "%s", path);
	read_all(fd, text, sizeof(text));
	close(fd);
	close_paren = strrchr(text, ')');
	return close_paren != NULL && close_paren[1] == ' ' && close_paren[2] == 'Z';
}

Test(stats_file, top_on_a_running_program_then_report_after_sigkill)
{
	struct probe_result live, dead;
	char out_path[128], text[4096], address[32], pid_text[16];
	unsigned long count;
	struct ts_report_row before, after;
	pid_t pid = start_waiting("4", "5000", out_path);
	int fd, status;

	snprintf(pid_text, sizeof(pid_text), "%d", (int)pid);
	fd = open(out_path, O_RDONLY);
	read_all(fd, text, sizeof(text));
	close(fd);
	cr_assert(strstr(text, "libticketspin.so") != NULL, "not under the preload:\n%s", text);
	lock0(text, address, &count);

	reader(&live, (const char *const[]){ "top", "--once", pid_text, NULL });
	kill(pid, SIGKILL);
	/* not waited for yet: a zombie, whose /proc entry is still there without its memory */
	for (int waited = 0; !is_zombie(pid); waited++) {
		cr_assert(waited < 6000, "pid %d did not become a zombie", (int)pid);
		usleep(1000);
	}
	reader(&dead, (const char *const[]){ "report", pid_text, NULL });
	cr_assert(strstr(dead.out, "ended without a normal exit") != NULL, "a zombie:\n%s",
	          dead.out);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	cr_assert_eq(live.status, 0, "%s%s", live.out, live.err);
	cr_assert(strstr(live.out, "ticketspin top - pid ") == live.out, "%s", live.out);
	cr_assert(strstr(live.out, " - running") != NULL, "%s", live.out);
	cr_assert(strstr(live.out, "\033[") == NULL, "--once does not clear the screen");
	cr_assert(row_of(live.out, address, &before), "no row for %s:\n%s", address, live.out);

	reader(&dead, (const char *const[]){ "report", pid_text, NULL });
	cr_assert_eq(dead.status, 0, "%s%s", dead.out, dead.err);
	cr_assert(strstr(dead.out, "ended without a normal exit") != NULL, "%s", dead.out);
	cr_assert(row_of(dead.out, address, &after), "no row for %s:\n%s", address, dead.out);
	/* the program was idle: what the live view saw is what SIGKILL left, exactly */
	cr_assert(before.total == after.total && before.contended == after.contended &&
	          before.holds == after.holds, "live:\n%s\nafter SIGKILL:\n%s", live.out, dead.out);
	/* and it matches the acquisitions the program made (main took the lock once more) */
	cr_assert(after.contended >= 1 && after.contended <= after.total && after.total <= count + 1,
	          "contended %llu total %llu of %lu", after.contended, after.total, count + 1);
	cr_assert(strncmp(after.sites, "contend_worker+0x", 17) == 0, "site: %s", after.sites);
	cr_assert_eq(files_in_dir(), 1, "SIGKILL leaves the file");

	/* --clean removes it now that the process is gone */
	reader(&dead, (const char *const[]){ "report", "--clean", NULL });
	cr_assert_eq(dead.status, 0, "%s", dead.err);
	snprintf(text, sizeof(text), "removed %s/ticketspin-stats.%d (pid %d, no longer running)",
	         dir, (int)pid, (int)pid);
	cr_assert(strstr(dead.out, text) != NULL, "%s", dead.out);
	cr_assert_eq(files_in_dir(), 0);
}

Test(stats_file, clean_keeps_running_processes)
{
	struct probe_result r;
	char out_path[128];
	pid_t pid = start_waiting("2", "100", out_path);
	int status;

	reader(&r, (const char *const[]){ "report", "--clean", NULL });
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, " files removed") != NULL || strstr(r.out, " file removed") != NULL,
	          "%s", r.out);
	cr_assert_eq(files_in_dir(), 1, "the running process's file must stay:\n%s", r.out);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

Test(stats_file, normal_exit_reports_and_removes_the_file_unless_kept)
{
	struct probe_result r, rep;
	char pid[16];

	probe_run(&r, (const char *const[]){ xdg, "TICKET_STATS=1", NULL },
	          (const char *const[]){ CONTENDED, "4", "2000", "1", NULL }, 60);
	assert_probe_provider(&r);
	cr_assert(strstr(r.err, "ticketspin: stats: pid ") != NULL, "%s", r.err);
	cr_assert_eq(files_in_dir(), 0, "a normal exit removes the file");

	probe_run(&r, (const char *const[]){ xdg, "TICKET_STATS=1", "TICKET_STATS_KEEP=1", NULL },
	          (const char *const[]){ CONTENDED, "4", "2000", "1", NULL }, 60);
	cr_assert_eq(r.status, 0);
	cr_assert_eq(files_in_dir(), 1, "TICKET_STATS_KEEP=1 keeps it");
	cr_assert_eq(sscanf(strstr(r.err, "stats: pid "), "stats: pid %15[0-9]", pid), 1);
	reader(&rep, (const char *const[]){ "report", pid, NULL });
	cr_assert_eq(rep.status, 0, "%s", rep.err);
	cr_assert(strstr(rep.out, "exited normally") != NULL, "%s", rep.out);
}

Test(stats_file, no_statistics_for_a_pid)
{
	struct probe_result r;

	reader(&r, (const char *const[]){ "report", "999999999", NULL });
	cr_assert_eq(r.status, 1);
	cr_assert(strstr(r.err, "no statistics for pid 999999999") != NULL, "%s", r.err);
	reader(&r, (const char *const[]){ "top", "--once", NULL });
	cr_assert_eq(r.status, 2, "%s", r.err);
}

/* Root and setpriv are needed to act as another user. */
static void need_root(void)
{
	if (geteuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0)
		cr_skip_test("needs root and setpriv to run as the unprivileged user nobody");
}

Test(stats_file, another_users_statistics_are_refused)
{
	struct probe_result r;
	char out_path[128], pid_text[16], file[64];
	pid_t pid;
	int status;

	need_root();
	/* root's process, its file in /dev/shm (no XDG_RUNTIME_DIR) */
	strcpy(xdg, "XDG_RUNTIME_DIR=");
	pid = start_waiting("2", "100", out_path);
	snprintf(pid_text, sizeof(pid_text), "%d", (int)pid);
	probe_run(&r, (const char *const[]){ "LD_PRELOAD=", "XDG_RUNTIME_DIR=", NULL },
	          (const char *const[]){ "setpriv", "--reuid=nobody", "--regid=nogroup",
	                                 "--clear-groups", STATS_READER, "report", pid_text, NULL },
	          30);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	snprintf(file, sizeof(file), "/dev/shm/ticketspin-stats.%d", (int)pid);
	/* (another test's --clean may have removed it already) */
	cr_assert(unlink(file) == 0 || errno == ENOENT, "%s: %s", file, strerror(errno));
	cr_assert_eq(r.status, 3, "status %d: %s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.err, "belongs to user root (uid 0), not to you") != NULL &&
	          strstr(r.err, "refused") != NULL, "%s", r.err);
	cr_assert_str_eq(r.out, "");
}

Test(stats_file, an_unusable_path_means_no_statistics_and_the_program_runs)
{
	struct probe_result r;
	char env[512], path[200], link_path[200], text[64];
	int fd;

	/* a directory that does not exist */
	snprintf(env, sizeof(env), "TICKET_STATS=%s/no/such/dir/report", dir);
	probe_run(&r, (const char *const[]){ xdg, env, NULL },
	          (const char *const[]){ CONTENDED, "4", "2000", "1", NULL }, 60);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.err, "cannot create") != NULL && strstr(r.err, "running without statistics"),
	          "%s", r.err);
	cr_assert(strchr(strchr(r.err, '\n') + 1, '\n') == NULL, "one line:\n%s", r.err);
	cr_assert_eq(files_in_dir(), 0);

	/* an existing file is neither truncated nor written */
	snprintf(path, sizeof(path), "%s/existing", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	cr_assert_eq(write(fd, "keep me\n", 8), 8);
	close(fd);
	snprintf(env, sizeof(env), "TICKET_STATS=%s", path);
	probe_run(&r, (const char *const[]){ xdg, env, NULL },
	          (const char *const[]){ CONTENDED, "4", "2000", "1", NULL }, 60);
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.err, "never overwritten") != NULL, "%s", r.err);
	fd = open(path, O_RDONLY);
	read_all(fd, text, sizeof(text));
	close(fd);
	cr_assert_str_eq(text, "keep me\n");

	/* a symbolic link is not followed, even to a file that does not exist yet */
	snprintf(link_path, sizeof(link_path), "%s/link", dir);
	snprintf(path, sizeof(path), "%s/target", dir);
	cr_assert_eq(symlink(path, link_path), 0);
	snprintf(env, sizeof(env), "TICKET_STATS=%s", link_path);
	probe_run(&r, (const char *const[]){ xdg, env, NULL },
	          (const char *const[]){ CONTENDED, "4", "2000", "1", NULL }, 60);
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.err, "cannot create") != NULL, "%s", r.err);
	cr_assert_neq(access(path, F_OK), 0, "the link was followed");
}

Test(stats_file, report_file_is_private)
{
	struct probe_result r;
	char env[256], path[200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/report", dir);
	snprintf(env, sizeof(env), "TICKET_STATS=%s", path);
	probe_run(&r, (const char *const[]){ xdg, env, NULL },
	          (const char *const[]){ CONTENDED, "4", "2000", "1", NULL }, 60);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600, "mode %o", st.st_mode & 0777);
}

/*
 * A set-user-ID root program linked with the library, run by nobody with
 * TICKET_STATS naming a new file in a directory only root may write: the
 * file must not be created, and one stderr line says why.
 */
Test(stats_file, set_user_id_program_ignores_ticket_variables)
{
	struct probe_result r;
	char probe_dir[] = "/tmp/ticketspin-setuidXXXXXX", probe[256], cmd[1024], env[512];
	char target[256];
	int secure = -1, euid = -1, pid = 0;
	const char *line;

	need_root();
	cr_assert(mkdtemp(probe_dir) != NULL);
	cr_assert_eq(chmod(probe_dir, 0755), 0);
	snprintf(probe, sizeof(probe), "%s/setuidprobe", probe_dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s && chown root:root %s && chmod 4755 %s", SETUIDPROBE,
	         probe, probe, probe);
	cr_assert_eq(system(cmd), 0);
	snprintf(target, sizeof(target), "%s/created-as-root", probe_dir);
	snprintf(env, sizeof(env), "TICKET_STATS=%s", target);
	probe_run(&r, (const char *const[]){ "LD_PRELOAD=", "XDG_RUNTIME_DIR=", env, NULL },
	          (const char *const[]){ "setpriv", "--reuid=nobody", "--regid=nogroup",
	                                 "--clear-groups", probe, NULL },
	          30);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", probe_dir);
	line = strstr(r.out, "secure ");
	if (line != NULL)
		sscanf(line, "secure %d uid %*d euid %d pid %d", &secure, &euid, &pid);
	if (secure != 1 || euid != 0) {
		system(cmd);
		cr_skip_test("the set-user-ID bit had no effect here (nosuid mount?): %s%s", r.out,
		             r.err);
	}
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert(strstr(r.out, "provider ") == r.out && strstr(r.out, "libticketspin.so") != NULL,
	          "the probe must use the library it is linked with:\n%s", r.out);
	cr_assert_neq(access(target, F_OK), 0, "TICKET_STATS created %s as root", target);
	cr_assert(strstr(r.err, "ignoring every TICKET_* variable") != NULL, "%s", r.err);
	cr_assert(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "one line:\n%s", r.err);
	snprintf(target, sizeof(target), "/dev/shm/ticketspin-stats.%d", pid);
	cr_assert_neq(access(target, F_OK), 0, "a statistics file was made: %s", target);
	cr_assert_eq(system(cmd), 0);
}

/* ---- issue 18: fork, exec chains, files squatted by another user ----------------- */

Test(stats_file, forked_child_that_recorded_nothing_reports_nothing)
{
	struct probe_result r;

	probe_run(&r, (const char *const[]){ xdg, "TICKET_STATS=1", NULL },
	          (const char *const[]){ CONTENDED, "4", "2000", "1", "fork_quiet", NULL }, 60);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	/* the parent's report only (it contended), and no file left by the child */
	cr_assert_eq(count_occurrences(r.err, "ticketspin: stats: pid "), 1, "%s", r.err);
	cr_assert_null(strstr(r.err, ": 0 locks contended"), "the child reported:\n%s", r.err);
	cr_assert_eq(files_in_dir(), 0, "a file was left behind");
}

/* The text of @path, which must exist; "" when @must is false and it does not. */
static void text_of(const char *path, char *buf, size_t size, bool must)
{
	int fd = open(path, O_RDONLY);

	buf[0] = '\0';
	cr_assert(fd >= 0 || !must, "%s: %s", path, strerror(errno));
	if (fd >= 0) {
		read_all(fd, buf, size);
		close(fd);
	}
}

Test(stats_file, per_process_report_files_of_forked_children)
{
	struct probe_result r;
	char env[512], path[512], text[16384], child[16];
	const char *line;

	/* a child that recorded nothing: no report, no file; the parent's has one report */
	snprintf(env, sizeof(env), "TICKET_STATS=%s/rep-%%p", dir);
	probe_run(&r, (const char *const[]){ xdg, env, NULL },
	          (const char *const[]){ CONTENDED, "4", "2000", "1", "fork_quiet", NULL }, 60);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert_not_null(line = strstr(r.out, "child "), "%s", r.out);
	cr_assert_eq(sscanf(line, "child %15[0-9]", child), 1);
	snprintf(path, sizeof(path), "%s/rep-%s", dir, child);
	cr_assert_neq(access(path, F_OK), 0, "%s was created for a child with nothing to report",
	              path);
	snprintf(path, sizeof(path), "ls %s/rep-* | wc -l", dir);
	{
		FILE *ls = popen(path, "r");
		int n = 0;

		cr_assert(ls != NULL && fscanf(ls, "%d", &n) == 1);
		pclose(ls);
		cr_assert_eq(n, 1, "one report file expected (the parent's)");
	}
	snprintf(path, sizeof(path), "sh -c 'cat %s/rep-*'", dir);
	{
		FILE *cat = popen(path, "r");
		size_t n;

		cr_assert_not_null(cat);
		n = fread(text, 1, sizeof(text) - 1, cat);
		text[n] = '\0';
		pclose(cat);
	}
	cr_assert_eq(count_occurrences(text, "stats: pid "), 1, "%s", text);
	cr_assert_null(strstr(text, ": 0 locks contended"), "the child's report went there:\n%s",
	               text);

	/* a child that recorded, then exited normally: its report in its own file */
	snprintf(env, sizeof(env), "TICKET_STATS=%s/work-%%p", dir);
	probe_run(&r, (const char *const[]){ xdg, env, NULL },
	          (const char *const[]){ CONTENDED, "4", "2000", "1", "fork_normal", NULL }, 60);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert_not_null(line = strstr(r.out, "child "), "%s", r.out);
	cr_assert_eq(sscanf(line, "child %15[0-9]", child), 1);
	snprintf(path, sizeof(path), "%s/work-%s", dir, child);
	text_of(path, text, sizeof(text), true);
	snprintf(env, sizeof(env), "stats: pid %s: 1 lock contended", child);
	cr_assert_not_null(strstr(text, env), "%s:\n%s", path, text);
	cr_assert_eq(count_occurrences(text, "stats: pid "), 1, "%s", text);
}

/* A wrapper script: `ticketspin --stats=FILE -- sh SCRIPT` */
static void run_script(struct probe_result *r, const char *script_text, const char *report)
{
	char script[256], stats[512];
	int fd;

	snprintf(script, sizeof(script), "%s/run.sh", dir);
	fd = open(script, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, script_text, strlen(script_text)), (ssize_t)strlen(script_text));
	close(fd);
	snprintf(stats, sizeof(stats), "--stats=%s", report);
	probe_run(r, (const char *const[]){ xdg, NULL },
	          (const char *const[]){ WRAPPER, stats, "--", "/bin/sh", script, NULL }, 60);
	cr_assert_eq(r->status, 0, "%s%s", r->out, r->err);
}

Test(stats_file, wrapper_script_that_execs_the_program)
{
	struct probe_result r, rep;
	char script[1024], report[256], text[16384], name[256], pid[16];
	FILE *ls;

	snprintf(report, sizeof(report), "%s/report", dir);
	snprintf(script, sizeof(script), "#!/bin/sh\nexec %s 4 2000 1\n", CONTENDED);
	run_script(&r, script, report);
	cr_assert_null(strstr(r.err, "cannot create"), "%s", r.err);
	text_of(report, text, sizeof(text), true);
	cr_assert_not_null(strstr(text, ": 1 lock contended"), "no statistics in %s:\n%s%s", report,
	                   text, r.err);

	/* the shell's own file stays: it exec'd, and is reported so */
	snprintf(script, sizeof(script), "ls %s | grep ticketspin-stats.", dir);
	ls = popen(script, "r");
	cr_assert(ls != NULL && fgets(name, sizeof(name), ls) != NULL, "the shell left no file");
	pclose(ls);
	cr_assert_eq(sscanf(name, "ticketspin-stats.%15[0-9]", pid), 1, "%s", name);
	reader(&rep, (const char *const[]){ "report", pid, NULL });
	cr_assert_eq(rep.status, 0, "%s%s", rep.out, rep.err);
	cr_assert_not_null(strstr(rep.out, "replaced itself with exec"), "%s", rep.out);
}

Test(stats_file, wrapper_script_that_runs_the_program_as_a_child)
{
	struct probe_result r;
	char script[1024], report[256], text[16384];

	snprintf(report, sizeof(report), "%s/report", dir);
	snprintf(script, sizeof(script), "#!/bin/sh\n%s 4 2000 1\nexit 0\n", CONTENDED);
	run_script(&r, script, report);
	/* the program's report; the shell, with nothing to add, says nothing */
	text_of(report, text, sizeof(text), true);
	cr_assert_not_null(strstr(text, ": 1 lock contended"), "no statistics in %s:\n%s%s", report,
	                   text, r.err);
	cr_assert_null(strstr(r.err, "ticketspin:"), "%s", r.err);
}

Test(stats_file, a_file_squatted_by_another_user_is_skipped)
{
	struct probe_result top, rep;
	char out_path[128], pid_text[16], squat[256];
	pid_t pid;
	int fd, status;

	need_root();
	pid = start_waiting("2", "100", out_path);
	snprintf(pid_text, sizeof(pid_text), "%d", (int)pid);
	/* nobody's empty file, with the longest (newest-looking) name */
	snprintf(squat, sizeof(squat), "%s/ticketspin-stats.%d.999", dir, (int)pid);
	fd = open(squat, O_WRONLY | O_CREAT | O_EXCL, 0644);
	cr_assert(fd >= 0);
	close(fd);
	cr_assert_eq(chown(squat, 65534, 65534), 0);
	reader(&top, (const char *const[]){ "top", "--once", pid_text, NULL });
	reader(&rep, (const char *const[]){ "report", pid_text, NULL });
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	cr_assert_eq(top.status, 0, "%s%s", top.out, top.err);
	cr_assert_not_null(strstr(top.out, " - running"), "%s", top.out);
	cr_assert_null(strstr(top.err, "belongs to user"), "%s", top.err);
	cr_assert_eq(rep.status, 0, "%s%s", rep.out, rep.err);
	cr_assert_null(strstr(rep.err, "belongs to user"), "%s", rep.err);
	cr_assert_eq(count_occurrences(rep.out, "ticketspin: file "), 1, "%s", rep.out);
}

/* Lock rows ("stats:", after "ticketspin: " at exit, then the lock's address) in a report. */
static int lock_rows(const char *text)
{
	int n = 0;

	for (const char *line = text; line != NULL && *line != '\0';) {
		const char *end = strchr(line, '\n');
		char address[32];

		if (strncmp(line, "ticketspin: ", 12) == 0)
			line += 12;
		n += sscanf(line, "stats: %31s", address) == 1 && strncmp(address, "0x", 2) == 0;
		line = end != NULL ? end + 1 : NULL;
	}
	return n;
}

/*
 * ticketspin(1): `ticketspin report` shows the process's TICKET_STATS_TOP
 * locks by default (--top=N overrides it), 20 when the process set none.
 * contended with @locks contended locks and @env, its file kept; the
 * report of its pid must list @rows locks.
 */
static void report_shows(const char *env, const char *locks, int rows, const char *contended,
                         const char *shown)
{
	struct probe_result r, rep;
	char pid[16];

	probe_run(&r, (const char *const[]){ xdg, "TICKET_STATS=1", "TICKET_STATS_KEEP=1", env, NULL },
	          (const char *const[]){ CONTENDED, "2", "400", locks, NULL }, 60);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert_eq(sscanf(strstr(r.err, "stats: pid "), "stats: pid %15[0-9]", pid), 1, "%s",
	             r.err);
	cr_assert(strstr(r.err, contended) != NULL, "the report at exit: no '%s':\n%s", contended,
	          r.err);
	cr_assert(strstr(r.err, shown) != NULL, "the report at exit: no '%s':\n%s", shown, r.err);
	cr_assert_eq(lock_rows(r.err), rows, "the report at exit:\n%s", r.err);
	reader(&rep, (const char *const[]){ "report", pid, NULL });
	cr_assert_eq(rep.status, 0, "%s", rep.err);
	cr_assert(strstr(rep.out, shown) != NULL, "no '%s' in:\n%s", shown, rep.out);
	cr_assert_eq(lock_rows(rep.out), rows, "ticketspin report %s, %s locks contended, %s: "
	             "expected %d rows:\n%s", pid, locks, env, rows, rep.out);
	/* --top=N overrides the process's setting */
	reader(&rep, (const char *const[]){ "report", "--top=2", pid, NULL });
	cr_assert_eq(rep.status, 0, "%s", rep.err);
	cr_assert_eq(lock_rows(rep.out), 2, "ticketspin report --top=2:\n%s", rep.out);
}

Test(stats_file, report_shows_the_processs_stats_top_locks)
{
	report_shows("TICKET_STATS_TOP=3", "5", 3, "5 locks contended", "3 shown (TICKET_STATS_TOP=3)");
}

Test(stats_file, report_shows_20_locks_by_default)
{
	report_shows("TICKET_VERBOSE=0", "22", 20, "22 locks contended", "20 shown (TICKET_STATS_TOP=20)");
}

/*
 * libticketspin(7), XDG_RUNTIME_DIR: the statistics file goes there "when
 * it is an absolute path to a directory owned by the user and writable by
 * no one else; otherwise /dev/shm".  Our directory made writable by all,
 * then named by a relative path: the file is kept in /dev/shm each time,
 * never in the directory.
 */
static int files_in_dev_shm_of(const char *pid)
{
	char cmd[160];
	FILE *out;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls /dev/shm | grep -c '^ticketspin-stats\\.%s\\(\\.\\|$\\)'", pid);
	out = popen(cmd, "r");
	cr_assert_not_null(out);
	cr_assert_eq(fscanf(out, "%d", &n), 1);
	pclose(out);
	return n;
}

static void kept_in_dev_shm_not_in(const char *xdg_setting)
{
	struct probe_result r;
	char pid[16], cmd[160];

	probe_run(&r, (const char *const[]){ xdg_setting, "TICKET_STATS=1", "TICKET_STATS_KEEP=1",
	                                     NULL },
	          (const char *const[]){ CONTENDED, "4", "2000", "1", NULL }, 60);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert_eq(sscanf(strstr(r.err, "stats: pid "), "stats: pid %15[0-9]", pid), 1, "%s",
	             r.err);
	cr_assert_eq(files_in_dir(), 0, "%s: the file went into that directory, not /dev/shm",
	             xdg_setting);
	cr_assert_eq(files_in_dev_shm_of(pid), 1, "%s: no file of pid %s in /dev/shm", xdg_setting,
	             pid);
	snprintf(cmd, sizeof(cmd), "rm -f /dev/shm/ticketspin-stats.%s /dev/shm/ticketspin-stats.%s.*",
	         pid, pid);
	cr_assert_eq(system(cmd), 0);
}

Test(stats_file, a_runtime_dir_others_can_write_or_a_relative_one_means_dev_shm)
{
	char relative[200];

	cr_assert_eq(chmod(dir, 0777), 0);
	kept_in_dev_shm_not_in(xdg);
	cr_assert_eq(chmod(dir, 0700), 0);
	snprintf(relative, sizeof(relative), "XDG_RUNTIME_DIR=%s", dir + 1); /* no leading '/' */
	cr_assert_eq(chdir("/"), 0);
	kept_in_dev_shm_not_in(relative);
}

/*
 * ticketspin(1), --stats=FILE: "it is never overwritten ...; a report is
 * appended to a file holding the reports of the same run, or of an earlier
 * one".  Two runs, one after the other, report into one file: both reports
 * are there, the first one kept.
 */
Test(stats_file, a_report_file_of_an_earlier_run_is_appended_to)
{
	struct probe_result r;
	char env[512], path[256], text[16384], first[16384];

	snprintf(path, sizeof(path), "%s/both", dir);
	snprintf(env, sizeof(env), "TICKET_STATS=%s", path);
	probe_run(&r, (const char *const[]){ xdg, env, NULL },
	          (const char *const[]){ CONTENDED, "4", "2000", "1", NULL }, 60);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "%s", r.err);
	text_of(path, first, sizeof(first), true);
	cr_assert(strncmp(first, "stats: pid ", 11) == 0, "%s", first);
	probe_run(&r, (const char *const[]){ xdg, env, NULL },
	          (const char *const[]){ CONTENDED, "4", "2000", "1", NULL }, 60);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_null(strstr(r.err, "cannot create"), "%s", r.err);
	text_of(path, text, sizeof(text), true);
	cr_assert(strncmp(text, first, strlen(first)) == 0, "the first report is not kept:\n%s",
	          text);
	cr_assert(strncmp(text + strlen(first), "stats: pid ", 11) == 0,
	          "no second report after the first:\n%s", text);
}
