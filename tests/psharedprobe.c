/*
 * psharedprobe - a PTHREAD_PROCESS_SHARED lock, in a MAP_SHARED mapping,
 * around a process that goes away or stops while one of its threads waits
 * for it (issue 40, items 1 and 2), and many threads on it (item 9).  Run it
 * under the preload; glibc's lock serves every case.
 *
 *   psharedprobe exit ROUNDS   a child process whose two threads wait for
 *                              the lock (the parent holds it) calls exit()
 *   psharedprobe kill ROUNDS   ... is killed (SIGKILL) by the parent
 *   psharedprobe exec ROUNDS   ... has its main thread call execve() (of
 *                              /bin/true), which ends the waiting threads
 *   psharedprobe stop ROUNDS   ... is stopped (SIGSTOP): the parent releases
 *                              the lock and a third process must take it
 *                              1000 times while the child is still stopped;
 *                              then SIGCONT, and the child's waiters finish
 *   psharedprobe throughput PROCS THREADS MS
 *                              PROCS processes of THREADS threads take the
 *                              lock for MS milliseconds; prints each one's
 *                              count and the total rate (no rate asserted);
 *                              fails if a thread never got the lock, or the
 *                              count kept under the lock does not add up
 *
 * In exit, kill and exec, once the child has gone, the parent releases the
 * lock and takes it again, 1000 times: with a ticket left in the word by
 * the child's waiter, that hung for good.  Each round waits for the child's
 * waiters to be in the lock call (announced in the mapping) and then 20 ms
 * more, so that they spin, announce themselves or sleep first.
 *
 * stdout: one line per round, then a summary; exit status 0 when every
 * check held, 1 when one failed or a step did not finish within 10 s (the
 * watchdog names the step), 2 usage.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe_check.h"
#include "symbol_provider.h"

#define MAX_PROCS   8
#define MAX_THREADS 32

struct shared {
	pthread_spinlock_t lock;
	int inside;                 /* under the lock: 1 while someone holds it */
	uint64_t count;             /* under the lock */
	int waiting;                /* the child's threads that called lock */
	int go;                     /* throughput: start line */
	int stop;                   /* throughput: stop */
	uint64_t made[MAX_PROCS][MAX_THREADS];
	uint64_t violations;
};

static struct shared *sh;

static const char *volatile step = "start";
static pid_t watched_child = -1, watched_taker = -1;
static pid_t throughput_pids[MAX_PROCS]; /* killed by the watchdog too */
static int throughput_forked;

/*
 * The watchdog is SIGALRM, not a thread: a thread starting or allocating
 * while the main thread forks can leave the child with an allocator lock
 * held (ASan of GCC 12 takes no lock of its allocator around fork(): every
 * child thread then waited for good in its first allocation).  A child
 * does not inherit the alarm.
 */
static void watchdog(int sig)
{
	char line[128];
	int n;

	(void)sig;
	n = snprintf(line, sizeof(line), "FAILED: hung at: %s (word 0x%08x)\n", step,
	             __atomic_load_n((uint32_t *)&sh->lock, __ATOMIC_RELAXED));
	fflush(stdout);
	if (n > 0)
		(void)!write(1, line, (size_t)n);
	if (watched_child > 0)
		kill(watched_child, SIGKILL);
	if (watched_taker > 0)
		kill(watched_taker, SIGKILL);
	for (int p = 0; p < throughput_forked; p++)
		kill(throughput_pids[p], SIGKILL);
	_exit(1);
}

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* One acquisition, checked: no one else inside. */
static void take_once(void)
{
	pthread_spin_lock(&sh->lock);
	if (__atomic_exchange_n(&sh->inside, 1, __ATOMIC_RELAXED) != 0)
		__atomic_fetch_add(&sh->violations, 1, __ATOMIC_RELAXED);
	sh->count++;
	__atomic_store_n(&sh->inside, 0, __ATOMIC_RELAXED);
	pthread_spin_unlock(&sh->lock);
}

static void *child_waiter(void *arg)
{
	(void)arg;
	__atomic_fetch_add(&sh->waiting, 1, __ATOMIC_RELEASE);
	take_once();
	return NULL;
}

/*
 * The child: two threads wait for the lock the parent holds; once both are
 * in the lock call (and 20 ms on), the main thread does what @mode says.
 */
static void child(const char *mode)
{
	pthread_t t[2];

	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, child_waiter, NULL);
	while (__atomic_load_n(&sh->waiting, __ATOMIC_ACQUIRE) < 2)
		sched_yield();
	sleep_ms(20);
	if (strcmp(mode, "exit") == 0)
		exit(0); /* the waiters end with the process, mid-wait */
	if (strcmp(mode, "exec") == 0) {
		char *const argv[] = { "true", NULL };

		execv("/bin/true", argv);
		_exit(3);
	}
	/* kill and stop: the parent acts; the waiters finish if it lets them */
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	_exit(0);
}

/* A process that takes the lock @n times and exits 0. */
static pid_t taker(int n)
{
	pid_t pid = fork();

	if (pid == 0) {
		for (int i = 0; i < n; i++)
			take_once();
		_exit(0);
	}
	return pid;
}

static bool exited_zero(int status)
{
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int mode_round(const char *mode, long round)
{
	pid_t pid, other;
	int status;
	double t0;
	uint64_t before;

	pthread_spin_init(&sh->lock, PTHREAD_PROCESS_SHARED);
	sh->waiting = 0;
	pthread_spin_lock(&sh->lock);
	step = "the child's threads calling lock";
	pid = fork();
	if (pid < 0) {
		printf("FAILED: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0)
		child(mode);
	watched_child = pid;
	while (__atomic_load_n(&sh->waiting, __ATOMIC_ACQUIRE) < 2)
		sched_yield();
	sleep_ms(20);
	if (strcmp(mode, "stop") == 0) {
		step = "stopping the child";
		kill(pid, SIGSTOP);
		CHECK(waitpid(pid, &status, WUNTRACED) == pid && WIFSTOPPED(status),
		      "round %ld: the child did not stop", round);
		step = "another process taking the lock while the child is stopped";
		before = sh->count;
		t0 = now_ms();
		pthread_spin_unlock(&sh->lock);
		other = taker(1000);
		watched_taker = other;
		CHECK(waitpid(other, &status, 0) == other && exited_zero(status),
		      "round %ld: the taker failed", round);
		watched_taker = -1;
		printf("stop: round %ld: 1000 acquisitions by another process in %.1f ms while the "
		       "child was stopped (word 0x%08x)\n",
		       round, now_ms() - t0, __atomic_load_n((uint32_t *)&sh->lock, __ATOMIC_RELAXED));
		CHECK(sh->count - before == 1000, "round %ld: %llu acquisitions", round,
		      (unsigned long long)(sh->count - before));
		step = "the child's waiters, after SIGCONT";
		kill(pid, SIGCONT);
		CHECK(waitpid(pid, &status, 0) == pid && exited_zero(status),
		      "round %ld: the child failed after SIGCONT", round);
		watched_child = -1;
		return failures ? 1 : 0;
	}
	if (strcmp(mode, "kill") == 0)
		kill(pid, SIGKILL);
	step = "the child going away";
	CHECK(waitpid(pid, &status, 0) == pid, "round %ld: waitpid", round);
	CHECK(strcmp(mode, "kill") == 0 ? WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL
	                                : exited_zero(status),
	      "round %ld: the child ended with status %#x", round, status);
	watched_child = -1;
	step = "taking the lock after the child has gone";
	before = sh->count;
	t0 = now_ms();
	pthread_spin_unlock(&sh->lock);
	for (int i = 0; i < 1000; i++)
		take_once();
	printf("%s: round %ld: 1000 acquisitions in %.1f ms after the child had gone "
	       "(word 0x%08x)\n",
	       mode, round, now_ms() - t0, __atomic_load_n((uint32_t *)&sh->lock, __ATOMIC_RELAXED));
	CHECK(sh->count - before == 1000, "round %ld: %llu acquisitions", round,
	      (unsigned long long)(sh->count - before));
	return failures ? 1 : 0;
}

static int procs_n, threads_n;

struct who {
	int proc, thread;
};

static void *throughput_thread(void *arg)
{
	const struct who *w = arg;
	uint64_t mine = 0;

	while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE))
		sched_yield();
	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
		take_once();
		mine++;
	}
	sh->made[w->proc][w->thread] = mine;
	return NULL;
}

static int mode_throughput(long ms)
{
	pid_t pids[MAX_PROCS];
	uint64_t total = 0, min = UINT64_MAX, max = 0;
	double t0, t1;

	pthread_spin_init(&sh->lock, PTHREAD_PROCESS_SHARED);
	step = "the throughput run";
	for (int p = 0; p < procs_n; p++) {
		pids[p] = fork();
		if (pids[p] == 0) {
			pthread_t t[MAX_THREADS];
			struct who w[MAX_THREADS];

			for (int i = 0; i < threads_n; i++) {
				w[i] = (struct who){ p, i };
				pthread_create(&t[i], NULL, throughput_thread, &w[i]);
			}
			for (int i = 0; i < threads_n; i++)
				pthread_join(t[i], NULL);
			_exit(0);
		}
		throughput_pids[throughput_forked++] = pids[p];
	}
	sleep_ms(50); /* the threads at the start line */
	t0 = now_ms();
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	sleep_ms(ms);
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
	t1 = now_ms();
	for (int p = 0; p < procs_n; p++) {
		int status;

		CHECK(waitpid(pids[p], &status, 0) == pids[p] && exited_zero(status),
		      "process %d failed", p);
	}
	printf("throughput: counts");
	for (int p = 0; p < procs_n; p++)
		for (int i = 0; i < threads_n; i++) {
			uint64_t c = sh->made[p][i];

			printf(" %llu", (unsigned long long)c);
			total += c;
			min = c < min ? c : min;
			max = c > max ? c : max;
		}
	printf("\nthroughput: procs %d threads %d total %llu min %llu max %llu ops_per_s %.0f "
	       "violations %llu\n",
	       procs_n, threads_n, (unsigned long long)total, (unsigned long long)min,
	       (unsigned long long)max, (double)total / ((t1 - t0) / 1e3),
	       (unsigned long long)sh->violations);
	CHECK(min > 0, "a thread never got the lock");
	CHECK(sh->count == total, "the count under the lock is %llu, the threads' %llu",
	      (unsigned long long)sh->count, (unsigned long long)total);
	return failures ? 1 : 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: psharedprobe exit|kill|exec|stop ROUNDS | "
	                "throughput PROCS THREADS MS\n");
	return 2;
}

int main(int argc, char **argv)
{
	signal(SIGALRM, watchdog);

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3)
		return usage();
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("psharedprobe: mmap");
		return 1;
	}
	memset(sh, 0, sizeof(*sh));
	printf("provider %s\n", provider_of("pthread_spin_lock"));
	if (strcmp(argv[1], "throughput") == 0) {
		if (argc != 5)
			return usage();
		procs_n = atoi(argv[2]);
		threads_n = atoi(argv[3]);
		if (procs_n < 1 || procs_n > MAX_PROCS || threads_n < 1 || threads_n > MAX_THREADS ||
		    atol(argv[4]) < 1)
			return usage();
		alarm(10);
		return mode_throughput(atol(argv[4]));
	}
	if (argc != 3 || atol(argv[2]) < 1 ||
	    (strcmp(argv[1], "exit") != 0 && strcmp(argv[1], "kill") != 0 &&
	     strcmp(argv[1], "exec") != 0 && strcmp(argv[1], "stop") != 0))
		return usage();
	for (long r = 0; r < atol(argv[2]); r++) {
		/* a watchdog per round: each round is a step of its own */
		alarm(10);
		if (mode_round(argv[1], r) != 0)
			return 1;
		alarm(0);
	}
	printf("%s: %s rounds, the lock served every time\n", argv[1], argv[2]);
	return failures ? 1 : 0;
}
