/*
 * contended - a known contended program for the TICKET_STATS tests.
 *
 *   contended THREADS N LOCKS [exit|_exit|wait|fork_exit]
 *       THREADS workers run contend_worker(): N times lock 0, and, when
 *       LOCKS is 2 or more (up to 24), every fourth time locks 1 to LOCKS - 1
 *       too (from another call site).
 *       Main holds each lock until every worker has come to it and one
 *       waits in its queue, so each lock is contended at least once.  "_exit" leaves through
 *       _exit(0) instead of returning from main.  "wait" prints "ready"
 *       after the work and then waits to be killed.  "hold50" holds each
 *       lock 50 ms (asleep) once a ticket is drawn, instead of 10 ms.  "fork_exit" does the
 *       work in a forked child, which leaves through _exit(0); the parent
 *       prints "child PID" and returns from main.  "fork_normal": the same,
 *       but the child returns from main.  "fork_quiet": a forked child
 *       exits at once (exit(0), no lock used), then the parent does the work.
 *   contended none N
 *       one thread, N uncontended acquisitions.
 *
 * Prints the provider, then "lock K ADDRESS acquisitions COUNT" per lock.
 * Linked with -rdynamic so that dladdr() can name contend_worker.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ticket_lock.h"

struct counted {
	pthread_spinlock_t lock;
	unsigned long count; /* acquisitions, counted inside */
} __attribute__((aligned(64)));

static struct counted locks[24];
static int nlocks;
static long rounds;
static int arrived; /* workers about to take lock 0 for the first time */

/* Waiters in the lock's queue (the holder has no ticket). */
static unsigned tickets_drawn(pthread_spinlock_t *lock)
{
	return ts_queued(__atomic_load_n((uint32_t *)lock, __ATOMIC_ACQUIRE));
}

static void __attribute__((noinline)) critical(struct counted *c)
{
	c->count++;
	for (int i = 0; i < 20; i++)
		__builtin_ia32_pause();
}

void *contend_worker(void *arg)
{
	(void)arg;
	__atomic_fetch_add(&arrived, 1, __ATOMIC_RELEASE);
	for (long i = 0; i < rounds; i++) {
		pthread_spin_lock(&locks[0].lock);
		critical(&locks[0]);
		pthread_spin_unlock(&locks[0].lock);
		for (int k = 1; k < nlocks && i % 4 == 0; k++) {
			pthread_spin_lock(&locks[k].lock);
			critical(&locks[k]);
			pthread_spin_unlock(&locks[k].lock);
		}
	}
	return NULL;
}

static const char *provider(void)
{
	Dl_info info;
	void *address = dlsym(RTLD_DEFAULT, "pthread_spin_lock");

	if (address == NULL || !dladdr(address, &info) || info.dli_fname == NULL)
		return "(none)";
	return info.dli_fname;
}

int main(int argc, char **argv)
{
	pthread_t tids[64];
	int threads;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("provider %s\n", provider());
	for (int k = 0; k < 24; k++)
		pthread_spin_init(&locks[k].lock, PTHREAD_PROCESS_PRIVATE);
	if (argc == 3 && strcmp(argv[1], "none") == 0) {
		nlocks = 1;
		rounds = atol(argv[2]);
		contend_worker(NULL);
	} else if (argc == 5 && strcmp(argv[4], "fork_quiet") == 0) {
		pid_t child = fork();
		int status;

		if (child == 0)
			exit(0); /* a normal exit, nothing recorded */
		if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			return 1;
		printf("child %d\n", (int)child);
		argv[4] = (char *)"exit";
		return main(argc, argv);
	} else if (argc == 5 && (strcmp(argv[4], "fork_normal") == 0 ||
	                         strcmp(argv[4], "fork_exit") == 0)) {
		pid_t child = fork();
		int status;

		if (child == 0) {
			/* the work, then out as the name says: main's return, or _exit(0) */
			argv[4] = (char *)(strcmp(argv[4], "fork_normal") == 0 ? "exit" : "_exit");
			return main(argc, argv);
		}
		if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			return 1;
		printf("child %d\n", (int)child);
		return 0;
	} else if (argc == 4 || argc == 5) {
		threads = atoi(argv[1]);
		rounds = atol(argv[2]);
		nlocks = atoi(argv[3]);
		if (threads < 1 || threads > 64 || rounds < 1 || nlocks < 1 || nlocks > 24)
			return 2;
		for (int k = 0; k < nlocks; k++)
			pthread_spin_lock(&locks[k].lock);
		for (int i = 0; i < threads; i++)
			if (pthread_create(&tids[i], NULL, contend_worker, NULL) != 0)
				return 1;
		/*
		 * Every worker comes to lock 0, then, in its first round, to lock 1
		 * and the others.
		 * Some may wait outside a full queue (TICKET_QUEUE) instead of
		 * queuing: wait for one ticket in the queue, and a little more.
		 */
		for (int k = 0; k < nlocks; k++) {
			while (__atomic_load_n(&arrived, __ATOMIC_ACQUIRE) < threads ||
			       tickets_drawn(&locks[k].lock) < 1)
				sched_yield();
			usleep(argc == 5 && strcmp(argv[4], "hold50") == 0 ? 50000 : 10000);
			pthread_spin_unlock(&locks[k].lock);
		}
		for (int i = 0; i < threads; i++)
			pthread_join(tids[i], NULL);
	} else {
		fprintf(stderr, "usage: contended THREADS N LOCKS [exit|_exit|wait|fork_exit|hold50] | "
		                "contended none N\n");
		return 2;
	}
	for (int k = 0; k < nlocks; k++)
		printf("lock %d %p acquisitions %lu\n", k, (void *)&locks[k].lock, locks[k].count);
	if (argc == 5 && strcmp(argv[4], "_exit") == 0)
		_exit(0);
	if (argc == 5 && strcmp(argv[4], "wait") == 0) {
		printf("ready\n");
		for (;;)
			pause();
	}
	return 0;
}
