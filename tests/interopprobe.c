/*
 * interopprobe - one process-shared lock used by ticketspin and by glibc's
 * own pthread_spin_* (issue 40, item 7): why they cannot share a lock, shown.
 *
 *   interopprobe decrement
 *       Under the preload: a process-shared lock held by us; a thread calls
 *       glibc's pthread_spin_lock on it (libc's own definition, found with
 *       dlsym() in libc.so.6), whose `lock decl` comes before its test: the
 *       held byte 0x10 becomes 0x0f, and glibc's waiter, finding the word
 *       negative (TS_SHARED is bit 31), spins for good.  Our unlock then
 *       finds a byte it never makes, returns EPERM and reports it.  Prints
 *       the words and the unlock's result; exits 0 when they are as said.
 *   interopprobe run SECONDS [THREADS [glibc-init]]
 *       The experiment: a lock in a memfd shared by two processes, one run
 *       with LD_PRELOAD as given and one with LD_PRELOAD removed, THREADS (2)
 *       threads each taking it for SECONDS, each acquisition checking that
 *       no one else is inside (an atomic flag: two holders at once count).
 *       The lock is initialised process-shared by the side with the preload
 *       (word 0x80000000), or with glibc-init by the side without it (1).
 *       Prints per process its lock's provider, acquisitions, the times two
 *       were inside at once, and whether it stalled (no acquisition for its
 *       last second: a hang; the process is then killed), and the word.
 *       Exit status 0: the experiment ran (whatever it found); 2 usage.
 *   interopprobe child FD SECONDS THREADS SIDE INIT   (internal: one side)
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "symbol_provider.h"

extern char **environ;

struct side {
	uint64_t acquisitions;
	uint64_t two_inside;   /* times a holder found another inside */
	int stalled;           /* no acquisition in the last second */
	char provider[160];
};

struct shared {
	pthread_spinlock_t lock;
	int inside;
	int start;
	struct side side[2];
};

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint32_t word_of(const pthread_spinlock_t *l)
{
	return __atomic_load_n((const uint32_t *)l, __ATOMIC_ACQUIRE);
}

/* ---- decrement ------------------------------------------------------------------ */

static int (*glibc_lock)(pthread_spinlock_t *);
static pthread_spinlock_t *dlock;

static void *glibc_locker(void *arg)
{
	(void)arg;
	glibc_lock(dlock); /* never returns: the word stays negative */
	return NULL;
}

static int mode_decrement(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	pthread_t t;
	uint32_t held, seen;
	int rc;

	glibc_lock = libc != NULL ? (int (*)(pthread_spinlock_t *))dlsym(libc, "pthread_spin_lock")
	                          : NULL;
	if (glibc_lock == NULL || (void *)glibc_lock == dlsym(RTLD_DEFAULT, "pthread_spin_lock")) {
		printf("FAILED: glibc's own pthread_spin_lock not found apart from ours\n");
		return 1;
	}
	dlock = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (dlock == MAP_FAILED)
		return 1;
	pthread_spin_init(dlock, PTHREAD_PROCESS_SHARED);
	pthread_spin_lock(dlock);
	held = word_of(dlock);
	pthread_create(&t, NULL, glibc_locker, NULL);
	for (int i = 0; i < 10000 && word_of(dlock) == held; i++)
		usleep(100);
	seen = word_of(dlock);
	rc = pthread_spin_unlock(dlock);
	printf("decrement: held 0x%08x, after glibc's pthread_spin_lock 0x%08x, our unlock %s, "
	       "word now 0x%08x\n",
	       held, seen, rc == EPERM ? "EPERM" : rc == 0 ? "0" : strerror(rc), word_of(dlock));
	fflush(stdout);
	/* glibc's waiter spins on: end the process */
	_exit(seen == held - 1 && rc == EPERM ? 0 : 1);
}

/* ---- run, child ----------------------------------------------------------------- */

static struct shared *sh;
static int me, stop;

static void *taker(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&sh->start, __ATOMIC_ACQUIRE))
		;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		pthread_spin_lock(&sh->lock);
		if (__atomic_exchange_n(&sh->inside, 1, __ATOMIC_RELAXED) != 0)
			__atomic_fetch_add(&sh->side[me].two_inside, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&sh->side[me].acquisitions, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&sh->inside, 0, __ATOMIC_RELAXED);
		pthread_spin_unlock(&sh->lock);
	}
	return NULL;
}

static int mode_child(int fd, double seconds, int threads, int side, int init)
{
	pthread_t t[16];
	double end, last_change;
	uint64_t last = 0;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (sh == MAP_FAILED)
		return 1;
	me = side;
	snprintf(sh->side[me].provider, sizeof(sh->side[me].provider), "%s",
	         provider_of("pthread_spin_lock"));
	if (init) {
		pthread_spin_init(&sh->lock, PTHREAD_PROCESS_SHARED);
		__atomic_store_n(&sh->start, 1, __ATOMIC_RELEASE);
	}
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, taker, NULL);
	end = now_s() + seconds;
	last_change = now_s();
	while (now_s() < end) {
		uint64_t n = __atomic_load_n(&sh->side[me].acquisitions, __ATOMIC_RELAXED);

		usleep(10000);
		if (n != last) {
			last = n;
			last_change = now_s();
		}
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	sh->side[me].stalled = now_s() - last_change >= 1.0;
	if (sh->side[me].stalled)
		_exit(0); /* its threads may never come back */
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return 0;
}

static pid_t spawn_side(const char *self, int fd, const char *seconds, const char *threads,
                        int side, int init)
{
	char fd_arg[16];
	int preload = side == 0;
	pid_t pid;

	snprintf(fd_arg, sizeof(fd_arg), "%d", fd);
	pid = fork();
	if (pid == 0) {
		if (!preload)
			unsetenv("LD_PRELOAD");
		execl(self, self, "child", fd_arg, seconds, threads, side ? "1" : "0", init ? "1" : "0",
		      (char *)NULL);
		_exit(127);
	}
	return pid;
}

static int mode_run(const char *self, const char *seconds, const char *threads, int glibc_init)
{
	int fd = memfd_create("interopprobe", 0);
	pid_t pids[2];

	if (fd < 0 || ftruncate(fd, sizeof(struct shared)) != 0)
		return 1;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (sh == MAP_FAILED)
		return 1;
	/* side 0 runs with the preload, side 1 without; one of them initialises the lock */
	pids[glibc_init] = spawn_side(self, fd, seconds, threads, glibc_init, 1);
	while (!__atomic_load_n(&sh->start, __ATOMIC_ACQUIRE))
		usleep(1000);
	pids[!glibc_init] = spawn_side(self, fd, seconds, threads, !glibc_init, 0);
	for (int i = 0; i < 2; i++) {
		int status;
		double deadline = now_s() + atof(seconds) + 5;

		while (waitpid(pids[i], &status, WNOHANG) == 0) {
			if (now_s() > deadline) {
				kill(pids[i], SIGKILL);
				waitpid(pids[i], &status, 0);
				break;
			}
			usleep(10000);
		}
	}
	for (int i = 0; i < 2; i++)
		printf("side %d (%s): acquisitions %llu, two inside at once %llu, %s\n", i,
		       sh->side[i].provider, (unsigned long long)sh->side[i].acquisitions,
		       (unsigned long long)sh->side[i].two_inside,
		       sh->side[i].stalled ? "STALLED (no acquisition in its last second)"
		                           : "kept going");
	printf("initialised by side %d; word at the end 0x%08x\n", glibc_init, word_of(&sh->lock));
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && strcmp(argv[1], "decrement") == 0) {
		printf("provider %s\n", provider_of("pthread_spin_lock"));
		return mode_decrement();
	}
	if (argc >= 3 && argc <= 5 && strcmp(argv[1], "run") == 0)
		return mode_run(argv[0], argv[2], argc >= 4 ? argv[3] : "2",
		                argc == 5 && strcmp(argv[4], "glibc-init") == 0);
	if (argc == 7 && strcmp(argv[1], "child") == 0)
		return mode_child(atoi(argv[2]), atof(argv[3]), atoi(argv[4]) > 16 ? 16 : atoi(argv[4]),
		                  atoi(argv[5]), atoi(argv[6]));
	fprintf(stderr, "usage: interopprobe decrement | run SECONDS [THREADS [glibc-init]]\n");
	return 2;
}
