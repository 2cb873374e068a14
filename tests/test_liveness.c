/*
 * Liveness under the patterns of issue 9, with generous bounds: a run that
 * takes far longer than it should fails, but no throughput or timing ratio is
 * ever asserted (this is a shared 2-core machine).
 *
 *  - churn: examples/churn, stress-ng's pthread stressor pattern (rounds of
 *    short-lived threads, each taking one spinlock once, while the main thread
 *    polls under the same lock), 2 processes of up to 256 threads per round
 *    for 1 s, must finish within 30 s with its invariants intact;
 *  - outside load: 2 CPU-bound hog processes keep both CPUs busy while
 *    examples/semaphore runs 2 and then 4 contended threads for 1 s; each run
 *    must finish within 20 s, every thread must have made progress, and the
 *    invariants must hold.  The hogs are killed at the end, on failure too
 *    (and die with the test process, and by themselves after a minute).
 *
 * Every run under the preload checks that libticketspin.so provided the lock
 * (the program's provider= line and the library's TICKET_VERBOSE line); one
 * run without it shows that check failing on glibc's lock.  The programs run
 * in a process group of their own, so a time limit kills churn's forked
 * processes too.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe_run.h"

#define PRELOADED "TICKET_VERBOSE=1", "TICKET_STATS="
#define NO_PRELOAD "LD_PRELOAD=", "TICKET_VERBOSE=", "TICKET_STATS="

struct group_run {
	int status;       /* exit status, 128 + signal, or -1 when killed at the limit */
	double seconds;   /* wall time */
	char out[16384];
	char err[16384];
};

/*
 * Runs @argv (with the environment changes @env, see probe_environment) in a new
 * process group; after @limit seconds the whole group is killed and the
 * status is -1.
 */
static void run_group(struct group_run *r, const char *const *env, const char *const *argv,
                      int limit)
{
	char *envp[512];
	char out_path[] = "/tmp/ticketspin-live-outXXXXXX";
	char err_path[] = "/tmp/ticketspin-live-errXXXXXX";
	int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
	posix_spawn_file_actions_t actions;
	posix_spawnattr_t attr;
	struct timespec t0, t1;
	pid_t pid;
	int status = 0;
	bool killed = false;

	cr_assert(out_fd >= 0 && err_fd >= 0);
	probe_environment(envp, env);

	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&actions, err_fd, STDERR_FILENO);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&attr, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(posix_spawn(&pid, argv[0], &actions, &attr, (char **)argv, envp), 0,
	             "cannot run %s", argv[0]);
	posix_spawn_file_actions_destroy(&actions);
	posix_spawnattr_destroy(&attr);
	for (long waited_ms = 0; waitpid(pid, &status, WNOHANG) == 0; waited_ms += 10) {
		if (waited_ms >= limit * 1000L) {
			kill(-pid, SIGKILL);
			cr_assert_eq(waitpid(pid, &status, 0), pid);
			killed = true;
			break;
		}
		usleep(10000);
	}
	kill(-pid, SIGKILL); /* anything of the group left behind */
	clock_gettime(CLOCK_MONOTONIC, &t1);

	r->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	r->status = killed ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	lseek(out_fd, 0, SEEK_SET);
	lseek(err_fd, 0, SEEK_SET);
	read_all(out_fd, r->out, sizeof(r->out));
	read_all(err_fd, r->err, sizeof(r->err));
	close(out_fd);
	close(err_fd);
	unlink(out_path);
	unlink(err_path);
}

/* The number after " KEY=" (or at the start of a line) in @out, or -1. */
static double number_after(const char *out, const char *key)
{
	size_t len = strlen(key);

	for (const char *p = strstr(out, key); p != NULL; p = strstr(p + 1, key))
		if ((p == out || p[-1] == ' ' || p[-1] == '\n') && p[len] == '=')
			return strtod(p + len + 1, NULL);
	return -1;
}

static void assert_ticketspin_ran(const struct group_run *r)
{
	const char *provider = strstr(r->out, "\nprovider=");

	cr_assert(provider != NULL && strstr(strtok(strdup(provider + 1), "\n"), "libticketspin.so"),
	          "the program did not run with libticketspin.so:\n%s", r->out);
	cr_assert(strstr(r->err, "ticketspin: delay=") != NULL,
	          "no TICKET_VERBOSE line from the library:\n%s", r->err);
}

static void churn_path(char *buf, size_t size)
{
	snprintf(buf, size, "%s/churn", EXAMPLES);
}

Test(liveness, churn_finishes_under_the_preload)
{
	struct group_run r;
	char path[4096];

	churn_path(path, sizeof(path));
	run_group(&r, (const char *const[]){ PRELOADED, NULL },
	          (const char *const[]){ path, "--seconds", "1", "--processes", "2", "--threads",
	                                 "256", NULL },
	          30);
	cr_assert_neq(r.status, -1, "churn (1 s of work) was still running after 30 s:\n%s%s",
	              r.out, r.err);
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	assert_ticketspin_ran(&r);
	cr_assert(strstr(r.out, "\ninvariants=ok\n") != NULL, "%s", r.out);
	cr_assert_gt(number_after(r.out, "rounds"), 0, "%s", r.out);
	cr_assert_gt(number_after(r.out, "created"), 0, "%s", r.out);
	/* both processes made threads, and the count made under the lock agrees */
	cr_assert_gt(number_after(r.out, "min"), 0, "a process created no thread:\n%s", r.out);
	cr_assert(strstr(r.out, " lock=spin ") != NULL, "%s", r.out);
}

/* The provider check can fail: without the preload churn names glibc. */
Test(liveness, churn_without_the_preload_names_glibc)
{
	struct group_run r;
	char path[4096];

	churn_path(path, sizeof(path));
	run_group(&r, (const char *const[]){ NO_PRELOAD, NULL },
	          (const char *const[]){ path, "--seconds", "0.2", "--processes", "2", "--threads",
	                                 "64", NULL },
	          30);
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.out, "\nprovider=") != NULL, "%s", r.out);
	cr_assert(strstr(r.out, "libticketspin.so") == NULL, "%s", r.out);
	cr_assert(strstr(r.out, "libc.so") != NULL, "%s", r.out);
	cr_assert(strstr(r.err, "ticketspin:") == NULL, "%s", r.err);
}

/* The invariant checks are real: without the lock they catch the races. */
Test(liveness, churn_checks_fire_without_the_lock)
{
	struct group_run r;
	char path[4096];

	churn_path(path, sizeof(path));
	/*
	 * A race is likely, not certain, in a short run: allow ten tries (three
	 * were not always enough in a sanitizer build on a loaded machine).  The
	 * main thread's polls, each "inside" for --cs writes, overlap the threads
	 * that count themselves meanwhile (in a sanitizer build too, where
	 * threads start slowly and rarely overlap each other).
	 */
	for (int attempt = 0; attempt < 10; attempt++) {
		run_group(&r, (const char *const[]){ PRELOADED, NULL },
		          (const char *const[]){ path, "--seconds", "0.3", "--processes", "2",
		                                 "--threads", "256", "--cs", "5000", "--no-lock",
		                                 NULL },
		          30);
		if (r.status != 0)
			break;
	}
	cr_assert_eq(r.status, 1, "churn --no-lock: status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.err, "INVARIANT VIOLATED") != NULL, "%s", r.err);
	cr_assert(strstr(r.out, "invariants=violated") != NULL, "%s", r.out);
}

/* ---- outside load ----------------------------------------------------- */

#define HOGS 2
static pid_t hogs[HOGS];

static void start_hogs(void)
{
	for (int i = 0; i < HOGS; i++) {
		hogs[i] = fork();
		cr_assert_geq(hogs[i], 0, "fork: %s", strerror(errno));
		if (hogs[i] == 0) {
			volatile unsigned long spin = 0;

			/* die with the test process, and by ourselves after a minute */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			alarm(60);
			for (;;)
				spin++;
		}
	}
}

/* Criterion calls this after the test, whether it passed or not. */
static void kill_hogs(void)
{
	for (int i = 0; i < HOGS; i++) {
		if (hogs[i] > 0) {
			kill(hogs[i], SIGKILL);
			waitpid(hogs[i], NULL, 0);
			hogs[i] = 0;
		}
	}
}

Test(liveness, contended_threads_progress_under_outside_load, .fini = kill_hogs)
{
	static const char *const thread_counts[] = { "2", "4" };
	char path[4096];

	snprintf(path, sizeof(path), "%s/semaphore", EXAMPLES);
	start_hogs();
	for (size_t i = 0; i < sizeof(thread_counts) / sizeof(thread_counts[0]); i++) {
		struct group_run r;

		/* every hog still running: otherwise the load is not there */
		for (int h = 0; h < HOGS; h++)
			cr_assert_eq(waitpid(hogs[h], NULL, WNOHANG), 0, "hog %d is gone", h);
		run_group(&r, (const char *const[]){ PRELOADED, NULL },
		          (const char *const[]){ path, "--threads", thread_counts[i], "--seconds",
		                                 "1", "--no-latency", NULL },
		          20);
		cr_assert_neq(r.status, -1,
		              "semaphore, %s threads (1 s of work) beside %d CPU hogs was still "
		              "running after 20 s:\n%s%s", thread_counts[i], HOGS, r.out, r.err);
		cr_assert_eq(r.status, 0, "%s threads: status %d\n%s%s", thread_counts[i], r.status,
		             r.out, r.err);
		assert_ticketspin_ran(&r);
		cr_assert(strstr(r.out, "\ninvariants=ok\n") != NULL, "%s", r.out);
		cr_assert_eq(number_after(r.out, "threads"), atof(thread_counts[i]), "%s", r.out);
		cr_assert_gt(number_after(r.out, "min"), 0,
		             "%s threads beside %d CPU hogs: a thread made no progress:\n%s",
		             thread_counts[i], HOGS, r.out);
	}
}
