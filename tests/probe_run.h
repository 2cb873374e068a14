/*
 * probe_run.h - run a child (usually lockprobe) with extra environment
 * variables, capturing its output and exit status.
 */
#ifndef TICKETSPIN_TEST_PROBE_RUN_H
#define TICKETSPIN_TEST_PROBE_RUN_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct probe_result {
	int status;      /* exit status, or 128 + signal */
	char out[16384]; /* stdout */
	char err[16384]; /* stderr */
};

static inline void read_all(int fd, char *buf, size_t size)
{
	size_t used = 0;
	ssize_t n;

	while (used + 1 < size && (n = read(fd, buf + used, size - 1 - used)) > 0)
		used += (size_t)n;
	buf[used] = '\0';
}

/*
 * Fills @envp (512 entries) with the current environment plus @env
 * ("NAME=VALUE" strings, NULL-terminated; "NAME=" with nothing after it
 * removes NAME), NULL-terminated.
 */
static inline void probe_environment(char **envp, const char *const *env)
{
	size_t n = 0;

	for (char **e = environ; *e != NULL && n < 400; e++) {
		int overridden = 0;

		for (const char *const *o = env; o != NULL && *o != NULL; o++) {
			size_t len = strcspn(*o, "=") + 1;
			if (strncmp(*e, *o, len) == 0)
				overridden = 1;
		}
		if (!overridden)
			envp[n++] = *e;
	}
	for (const char *const *o = env; o != NULL && *o != NULL; o++)
		if ((*o)[strcspn(*o, "=") + 1] != '\0')
			envp[n++] = (char *)*o;
	envp[n] = NULL;
}

/*
 * Runs @argv with the current environment plus @env (see probe_environment),
 * with a time limit of @seconds.  Output beyond the buffers is dropped.
 */
static inline void probe_run(struct probe_result *r, const char *const *env,
                             const char *const *argv, int seconds)
{
	char *envp[512];
	char out_path[] = "/tmp/ticketspin-probe-outXXXXXX";
	char err_path[] = "/tmp/ticketspin-probe-errXXXXXX";
	int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
	posix_spawn_file_actions_t actions;
	pid_t pid;
	int status;

	cr_assert(out_fd >= 0 && err_fd >= 0);
	probe_environment(envp, env);

	/* The time limit is ours: a timeout(1) child would load the preload too. */
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&actions, err_fd, STDERR_FILENO);
	cr_assert_eq(posix_spawnp(&pid, argv[0], &actions, NULL, (char **)argv, envp), 0,
	             "cannot run %s", argv[0]);
	posix_spawn_file_actions_destroy(&actions);
	for (long waited_ms = 0; waitpid(pid, &status, WNOHANG) == 0; waited_ms += 10) {
		if (waited_ms >= seconds * 1000L) {
			kill(pid, SIGKILL);
			cr_assert_eq(waitpid(pid, &status, 0), pid);
			break;
		}
		usleep(10000);
	}

	r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	lseek(out_fd, 0, SEEK_SET);
	lseek(err_fd, 0, SEEK_SET);
	read_all(out_fd, r->out, sizeof(r->out));
	read_all(err_fd, r->err, sizeof(r->err));
	close(out_fd);
	close(err_fd);
	unlink(out_path);
	unlink(err_path);
}

/* Reads the file at @path, which a run must have written, into @buf. */
static inline void read_text_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);

	cr_assert(fd >= 0, "%s was not written", path);
	read_all(fd, buf, size);
	close(fd);
}

/* Occurrences of @needle in @text. */
static inline int count_occurrences(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

/* Removes a test's temporary directory and everything in it. */
static inline void remove_tree(const char *dir)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

/* Asserts the child's first line names libticketspin.so as the provider. */
#define assert_probe_provider(r)                                                        \
	cr_assert(strncmp((r)->out, "provider ", 9) == 0 &&                             \
	          strstr(strtok(strdup((r)->out), "\n"), "libticketspin.so") != NULL,   \
	          "the probe did not run with libticketspin.so:\n%s", (r)->out)

#endif
