/*
 * stress - validation of the lock under load, in the manner of Concurrency
 * Kit's regressions/ck_spinlock/validate: every acquisition checks, inside the
 * critical section, that it is alone (a plain "inside" flag and owner, which
 * ThreadSanitizer also sees as data protected by the lock), counts with a
 * plain increment, and the totals are checked at the end.  Lock and trylock
 * are mixed, and think times, inside and outside the lock, are random: mostly
 * short pause loops, sometimes a yield, rarely a sleep (so that waiters under
 * TICKET_WAIT=park really park).
 *
 *   stress [-p PROCS [-x]] [-t THREADS] [-n ITERATIONS] [-l LOCKS] [-w SECONDS] [-s SEED]
 *   stress -P [-p PROCS] [-t THREADS] [-w SECONDS]
 *
 * With -p, PROCS processes (fork) of THREADS threads each share the locks in a
 * MAP_SHARED mapping (pthread_spin_init(..., PTHREAD_PROCESS_SHARED)); with
 * -x too, the locks are initialised PTHREAD_PROCESS_PRIVATE all the same, as
 * a real program did (issue 40, item 8: libfabric's shared-memory provider).
 * The core build then prints every process's sleeps, woken and timed out,
 * and the locks made shared (slowpath.c, become_shared()): with -N, a sleep
 * that timed out is a wake-up that did not reach its process.
 * With -P (park check): the parent takes lock 0, the children's threads queue
 * for it, and the parent waits until, in every child, a waiter is asleep in
 * futex(2) on the lock word (read from /proc/PID/task/TID/syscall); then it
 * unlocks with a plain unlock (no wake-up call of its own), and every waiter
 * must get the lock, N times, within the watchdog: no lost wake-up.  Run it
 * with TICKET_WAIT=park TICKET_SPIN=1 TICKET_QUEUE=0.  The core build
 * takes -N MS (every nap MS long) and prints the children's sleeps that were
 * woken and that timed out (parking.c's counts).  With -x the lock is
 * private, and its waiters sleep in their own process's table: a waiter
 * counts as asleep in futex(2) anywhere but in its main thread.
 *
 * The watchdog (-w, default 60 s) turns a hang into a report: the lock words
 * and the progress so far on stderr, exit status 3.
 *
 * Built twice: "stress" calls pthread_spin_* (run it with the library
 * preloaded: what users get), "stress_core" calls the core's ts_lock() etc.
 * directly, so that under ThreadSanitizer the lock's own ordering is what
 * makes the critical sections race-free (TSan intercepts pthread_spin_* and
 * would add happens-before edges of its own).
 *
 * Output: the first line names the provider; the last is a summary.
 * Exit status: 0 all checks held, 1 a check failed, 2 usage, 3 watchdog,
 * 4 (-P) parking could not be observed (no access to /proc/PID/task/TID/syscall).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "symbol_provider.h"

#ifdef STRESS_CORE
#include "parking.h"
#include "slowpath.h"
#include "ticket_lock.h"
typedef ts_word_t stress_lock_t;
#define PROVIDER "core (ts_lock linked in)"
/* As pthread_spin_init() does (spin_api.c): a process-shared lock is marked. */
static int s_init(stress_lock_t *l, int pshared)
{
	__atomic_store_n(l, pshared == PTHREAD_PROCESS_SHARED ? TS_SHARED : 0, __ATOMIC_RELAXED);
	return 0;
}
static int s_lock(stress_lock_t *l)
{
	ts_lock(l, __builtin_return_address(0));
	return 0;
}
static int s_trylock(stress_lock_t *l)
{
	return ts_trylock(l) ? 0 : EBUSY;
}
static int s_unlock(stress_lock_t *l)
{
	return ts_unlock(l) ? 0 : EPERM;
}
#else
typedef pthread_spinlock_t stress_lock_t;
#define PROVIDER provider_of("pthread_spin_lock")
#define s_init pthread_spin_init
#define s_lock pthread_spin_lock
#define s_trylock pthread_spin_trylock
#define s_unlock pthread_spin_unlock
#endif

#define MAX_LOCKS   64
#define MAX_THREADS 256
#define MAX_PROCS   16

struct guarded {
	stress_lock_t lock;
	volatile int inside;     /* 0 or 1, checked inside */
	volatile long owner;     /* who is inside, checked on the way out */
	uint64_t count;          /* plain: protected by the lock only */
} __attribute__((aligned(64)));

/* All of it in one MAP_SHARED mapping, so that -p processes share it. */
struct shared {
	struct guarded locks[MAX_LOCKS];
	uint64_t done[MAX_PROCS][MAX_THREADS]; /* progress, for the watchdog */
	uint64_t trylocks;                      /* acquisitions made by trylock */
	uint64_t violations;
	int go;                                 /* start line for the -P children */
	uint64_t woken, timed_out;              /* the children's sleeps (core build) */
	uint64_t made_shared;                   /* the children's ts_locks_made_shared */
	int started;                            /* start line for the workers */
};

static struct shared *sh;
static int nprocs = 1, nthreads = 4, nlocks = 1, private_across = 0;
static long iterations = 100000;
static unsigned seed0 = 1;
static pid_t children[MAX_PROCS];

static void violation(const char *what, int lock, long who)
{
	__atomic_fetch_add(&sh->violations, 1, __ATOMIC_RELAXED);
	fprintf(stderr, "stress: VIOLATION: %s (lock %d, thread %ld)\n", what, lock, who);
}

static uint32_t xorshift(uint32_t *s)
{
	uint32_t x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

static void spin_pauses(uint32_t n)
{
	while (n-- > 0)
		__builtin_ia32_pause();
}

/* Outside the lock: mostly short, sometimes long, now and then a yield or a nap. */
static void think_outside(uint32_t *rng)
{
	uint32_t r = xorshift(rng);

	switch (r & 7) {
	case 0: case 1: case 2:
		break;
	case 3: case 4:
		spin_pauses((r >> 8) & 63);
		break;
	case 5:
		spin_pauses((r >> 8) & 1023);
		break;
	case 6:
		sched_yield();
		break;
	default:
		if (((r >> 8) & 255) == 0)
			usleep(50);
		break;
	}
}

/* Inside the lock: usually a few pauses, rarely a nap that makes waiters park. */
static void think_inside(uint32_t *rng)
{
	uint32_t r = xorshift(rng);

	if ((r & 4095) == 0)
		usleep(20);
	else if ((r & 15) == 0)
		spin_pauses((r >> 16) & 255);
	else
		spin_pauses((r >> 16) & 7);
}

static void critical(struct guarded *g, int lock, long who, uint32_t *rng)
{
	if (g->inside != 0)
		violation("another thread inside on entry", lock, who);
	g->inside = 1;
	g->owner = who;
	think_inside(rng);
	g->count++;
	if (g->inside != 1 || g->owner != who)
		violation("another thread entered meanwhile", lock, who);
	g->inside = 0;
}

struct worker {
	int proc;
	int thread;
};

static void *worker_main(void *arg)
{
	const struct worker *w = arg;
	long who = (long)w->proc * MAX_THREADS + w->thread;
	uint32_t rng = seed0 * 2654435761u + (uint32_t)who * 40503u + 1;
	uint64_t trylocks = 0;

	if (rng == 0)
		rng = 1;
	/* all threads of all processes start together, so that they contend */
	__atomic_fetch_add(&sh->started, 1, __ATOMIC_RELAXED);
	while (__atomic_load_n(&sh->started, __ATOMIC_RELAXED) < nprocs * nthreads)
		sched_yield();
	for (long i = 0; i < iterations; i++) {
		int n = nlocks == 1 ? 0 : (int)(xorshift(&rng) % (uint32_t)nlocks);
		struct guarded *g = &sh->locks[n];
		uint32_t how = xorshift(&rng) & 3;
		int rc;

		if (how == 0) {
			/* trylock until it works, with think times between attempts */
			while ((rc = s_trylock(&g->lock)) == EBUSY)
				think_outside(&rng);
			trylocks++;
		} else {
			rc = s_lock(&g->lock);
		}
		if (rc != 0) {
			violation("lock or trylock failed", n, who);
			continue;
		}
		critical(g, n, who, &rng);
		if (s_unlock(&g->lock) != 0)
			violation("unlock failed", n, who);
		__atomic_store_n(&sh->done[w->proc][w->thread], (uint64_t)i + 1, __ATOMIC_RELAXED);
		think_outside(&rng);
	}
	__atomic_fetch_add(&sh->trylocks, trylocks, __ATOMIC_RELAXED);
	return NULL;
}

static int run_process(int proc, void *(*body)(void *))
{
	pthread_t tids[MAX_THREADS];
	struct worker ws[MAX_THREADS];

	for (int i = 0; i < nthreads; i++) {
		ws[i] = (struct worker){ proc, i };
		if (pthread_create(&tids[i], NULL, body, &ws[i]) != 0) {
			fprintf(stderr, "stress: pthread_create failed\n");
			return 1;
		}
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(tids[i], NULL);
	return 0;
}

static void watchdog(int sig)
{
	char line[256];
	int len;

	(void)sig;
	len = snprintf(line, sizeof(line), "stress: WATCHDOG: no finish in time; lock words:");
	if (write(STDERR_FILENO, line, (size_t)len) < 0)
		_exit(3);
	for (int i = 0; i < nlocks; i++) {
		len = snprintf(line, sizeof(line), " 0x%08x",
		               (unsigned)__atomic_load_n((uint32_t *)&sh->locks[i].lock,
		                                         __ATOMIC_RELAXED));
		if (write(STDERR_FILENO, line, (size_t)len) < 0)
			_exit(3);
	}
	len = snprintf(line, sizeof(line), "; progress per thread:");
	if (write(STDERR_FILENO, line, (size_t)len) < 0)
		_exit(3);
	for (int p = 0; p < nprocs; p++)
		for (int t = 0; t < nthreads; t++) {
			len = snprintf(line, sizeof(line), " %llu",
			               (unsigned long long)__atomic_load_n(&sh->done[p][t],
			                                                   __ATOMIC_RELAXED));
			if (write(STDERR_FILENO, line, (size_t)len) < 0)
				_exit(3);
		}
	if (write(STDERR_FILENO, "\n", 1) < 0)
		_exit(3);
	for (int p = 0; p < nprocs; p++)
		if (children[p] > 0)
			kill(children[p], SIGKILL);
	_exit(3);
}

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Forks the processes (or runs in this one), each running @body on every thread. */
static int run_all(void *(*body)(void *))
{
	int failed = 0;

	if (nprocs == 1 && body == worker_main)
		return run_process(0, body);
	for (int p = 0; p < nprocs; p++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("stress: fork");
			return 1;
		}
		if (pid == 0) {
			int status;

			alarm(0);
			status = run_process(p, body);
#ifdef STRESS_CORE
			{
				struct ts_sleep_counts counts;

				ts_sleep_counts(&counts);
				__atomic_fetch_add(&sh->woken, counts.woken, __ATOMIC_RELAXED);
				__atomic_fetch_add(&sh->timed_out, counts.timed_out, __ATOMIC_RELAXED);
				__atomic_fetch_add(&sh->made_shared, ts_locks_made_shared,
				                   __ATOMIC_RELAXED);
			}
#endif
			_exit(status);
		}
		children[p] = pid;
	}
	return failed;
}

static int wait_children(void)
{
	int failed = 0;

	for (int p = 0; p < nprocs; p++) {
		int status;

		if (children[p] <= 0)
			continue;
		if (waitpid(children[p], &status, 0) != children[p] || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			fprintf(stderr, "stress: process %d failed (status %#x)\n", p, status);
			failed = 1;
		}
		children[p] = 0;
	}
	return failed;
}

/* -P: waiters of every child process queue behind the parent's lock. */
static void *park_waiter(void *arg)
{
	const struct worker *w = arg;
	long who = (long)w->proc * MAX_THREADS + w->thread;
	uint32_t rng = (uint32_t)who + 1;

	while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE))
		usleep(100);
	for (long i = 0; i < iterations; i++) {
		if (s_lock(&sh->locks[0].lock) != 0) {
			violation("lock failed", 0, who);
			continue;
		}
		critical(&sh->locks[0], 0, who, &rng);
		s_unlock(&sh->locks[0].lock);
		__atomic_store_n(&sh->done[w->proc][w->thread], (uint64_t)i + 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * Threads of @pid asleep in futex(2) on @uaddr: /proc/PID/task/TID/syscall
 * reads "202 0xUADDR ..." (SYS_futex, then its arguments) while blocked there.
 * With @uaddr NULL, in futex(2) anywhere but the main thread (which joins):
 * the sleepers of a private lock, in their process's own table (-x).
 * -1 when that file cannot be read (no permission, no such kernel support).
 */
static int parked_threads(pid_t pid, const void *uaddr)
{
	char path[64];
	int sleeping = 0;
	DIR *dir;
	struct dirent *e;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (dir == NULL)
		return -1;
	while ((e = readdir(dir)) != NULL) {
		char sc_path[sizeof(path) + sizeof(e->d_name) + 16], buf[512];
		unsigned long nr, addr;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(sc_path, sizeof(sc_path), "%s/%s/syscall", path, e->d_name);
		f = fopen(sc_path, "r");
		if (f == NULL) {
			if (errno == ENOENT)
				continue; /* that thread has just exited */
			sleeping = -1;
			break;
		}
		if (fgets(buf, sizeof(buf), f) != NULL && sscanf(buf, "%lu %lx", &nr, &addr) == 2 &&
		    nr == SYS_futex &&
		    (uaddr != NULL ? addr == (unsigned long)(uintptr_t)uaddr
		                   : atoi(e->d_name) != (int)pid))
			sleeping++;
		fclose(f);
	}
	closedir(dir);
	return sleeping;
}

static int park_check(void)
{
	void *uaddr = private_across ? NULL : (void *)&sh->locks[0].lock;
	double start, parked_at, end;
	int all_parked = 0, unobservable = 0;
	char counts[256] = "";
	size_t used = 0;

	s_init(&sh->locks[0].lock, private_across ? PTHREAD_PROCESS_PRIVATE : PTHREAD_PROCESS_SHARED);
	/* fork first: the children wait for "go"; a child does not inherit our hold */
	if (run_all(park_waiter) != 0)
		return 1;
	if (s_lock(&sh->locks[0].lock) != 0)
		return 1;
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
	start = now_seconds();
	/* until, in every child, a waiter sleeps in futex(2) on the lock word */
	while (!all_parked && !unobservable && now_seconds() - start < 10.0) {
		all_parked = 1;
		for (int p = 0; p < nprocs; p++) {
			int n = parked_threads(children[p], uaddr);

			unobservable |= n < 0;
			all_parked &= n >= 1;
		}
		if (!all_parked)
			usleep(1000);
	}
	parked_at = now_seconds();
	for (int p = 0; p < nprocs; p++)
		used += (size_t)snprintf(counts + used, sizeof(counts) - used, "%s%d",
		                         p == 0 ? "" : ",", parked_threads(children[p], uaddr));
	/* a plain unlock: no wake-up call; the waiters must wake each other */
	s_unlock(&sh->locks[0].lock);
	if (wait_children() != 0)
		return 1;
	end = now_seconds();
	printf("park-check procs=%d threads=%d parked=%s (per process, %.3f s after the start) "
	       "all-done=%.3f s after the unlock\n",
	       nprocs, nthreads, counts, parked_at - start, end - parked_at);
#ifdef STRESS_CORE
	printf("children's sleeps: woken=%llu timed_out=%llu; locks made shared=%llu\n",
	       (unsigned long long)__atomic_load_n(&sh->woken, __ATOMIC_RELAXED),
	       (unsigned long long)__atomic_load_n(&sh->timed_out, __ATOMIC_RELAXED),
	       (unsigned long long)__atomic_load_n(&sh->made_shared, __ATOMIC_RELAXED));
#endif
	if (unobservable) {
		fprintf(stderr, "stress: cannot read /proc/PID/task/TID/syscall: parking not checked\n");
		return 4;
	}
	if (!all_parked) {
		fprintf(stderr, "stress: waiters did not park in every process "
		                "(run with TICKET_WAIT=park TICKET_SPIN=1 TICKET_QUEUE=0)\n");
		return 1;
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: stress [-p PROCS [-x]] [-t THREADS] [-n ITERATIONS] [-l LOCKS] "
	                "[-w SECONDS] [-s SEED] | stress -P [-p PROCS] [-t THREADS] [-n N]\n");
	return 2;
}

int main(int argc, char **argv)
{
	int park = 0, opt, timeout = 60, failed = 0;
	uint64_t total = 0, expected;
	double start;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "p:t:n:l:w:s:PN:x")) != -1) {
		switch (opt) {
		case 'p': nprocs = atoi(optarg); break;
		case 't': nthreads = atoi(optarg); break;
		case 'n': iterations = atol(optarg); break;
		case 'l': nlocks = atoi(optarg); break;
		case 'w': timeout = atoi(optarg); break;
		case 's': seed0 = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'P': park = 1; break;
		case 'x': private_across = 1; break;
#ifdef STRESS_CORE
		case 'N': /* every nap this long: a timed-out sleep is then a missed wake-up */
			ts_nap_first_ns = ts_nap_max_ns = strtoull(optarg, NULL, 10) * 1000000ull;
			break;
#endif
		default: return usage();
		}
	}
	if (optind != argc || nprocs < 1 || nprocs > MAX_PROCS || nthreads < 1 ||
	    nthreads > MAX_THREADS || nlocks < 1 || nlocks > MAX_LOCKS || iterations < 0 ||
	    timeout < 1)
		return usage();
	printf("provider %s\n", PROVIDER);

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("stress: mmap");
		return 1;
	}
	for (int i = 0; i < nlocks; i++)
		s_init(&sh->locks[i].lock, nprocs > 1 && !private_across ? PTHREAD_PROCESS_SHARED
		                                                         : PTHREAD_PROCESS_PRIVATE);
	signal(SIGALRM, watchdog);
	alarm((unsigned)timeout);
	start = now_seconds();

	if (park) {
		nlocks = 1;
		failed = park_check();
		expected = (uint64_t)nprocs * nthreads * iterations;
	} else {
		failed = run_all(worker_main);
		if (nprocs > 1 || failed)
			failed = wait_children() || failed;
		expected = (uint64_t)nprocs * nthreads * iterations;
	}
	alarm(0);

	for (int i = 0; i < nlocks; i++) {
		total += sh->locks[i].count;
		if (s_trylock(&sh->locks[i].lock) != 0) {
			fprintf(stderr, "stress: lock %d left held: word 0x%08x\n", i,
			        (unsigned)*(volatile uint32_t *)&sh->locks[i].lock);
			failed = 1;
		} else {
			s_unlock(&sh->locks[i].lock);
		}
	}
	printf("stress procs=%d threads=%d locks=%d iterations=%ld acquisitions=%llu "
	       "expected=%llu trylocks=%llu violations=%llu seconds=%.3f\n",
	       nprocs, nthreads, nlocks, iterations, (unsigned long long)total,
	       (unsigned long long)expected, (unsigned long long)sh->trylocks,
	       (unsigned long long)sh->violations, now_seconds() - start);
#ifdef STRESS_CORE
	if (!park && nprocs > 1)
		printf("sleeps in every process: woken=%llu timed_out=%llu; locks made shared=%llu\n",
		       (unsigned long long)__atomic_load_n(&sh->woken, __ATOMIC_RELAXED),
		       (unsigned long long)__atomic_load_n(&sh->timed_out, __ATOMIC_RELAXED),
		       (unsigned long long)__atomic_load_n(&sh->made_shared, __ATOMIC_RELAXED));
#endif
	if (total != expected || sh->violations != 0)
		failed = 1;
	return failed;
}
