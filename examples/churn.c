/*
 * churn - thread churn around one spinlock: the pattern of stress-ng's
 * "pthread" stressor (stress-pthread.c, Debian's stress-ng 0.15.06), which
 * issue 9 saw fall into a state where both CPUs spin in user space.
 *
 * Each of --processes P processes (stress-ng --pthread 8 runs 8) loops in
 * rounds until --seconds have passed:
 *
 *   1. it locks a gate mutex and creates up to --threads N threads (fewer if
 *      pthread_create fails with EAGAIN, or the time is up), with glibc's
 *      default stack (--stack-kib N: a calloc'd stack of N KiB);
 *   2. each new thread takes the process's spinlock (initialised
 *      PTHREAD_PROCESS_SHARED) once, to count itself, then waits at the gate
 *      until the round is released;
 *   3. the main thread unlocks the gate and polls the count under the same
 *      spinlock, up to --polls (1000) times without sleeping, until every
 *      thread created has counted itself (or it gives up and goes on);
 *   4. it releases the round and joins every thread.
 *
 * As in stress-ng, a waiting thread loops on pthread_cond_timedwait() with a
 * deadline computed from CLOCK_MONOTONIC on a condition variable that uses
 * CLOCK_REALTIME: the deadline is always past, so the call returns at once and
 * the threads take turns on the gate mutex and sched_yield() until released.
 * That busy crowd is part of the load the spinlock sees.
 *
 * stress-ng 0.15.06 also calloc()s a 16 KiB stack per thread and sets it in
 * an attribute, but creates the thread with no attributes, so its threads
 * run on glibc's default (cached) stacks; so do ours, without the calloc.
 *
 * Where this departs from stress-ng: the threads make none of stress-ng's
 * other system calls (robust lists, tgkill, thread area, setns,
 * set_tid_address), and the main thread sends no SIGUSR1 (so the threads do
 * not wait in sigtimedwait()); the time limit is a deadline, not SIGALRM.
 * By default the spinlock is per process, a static variable as in stress-ng;
 * --shared-lock puts one lock in a MAP_SHARED mapping used by every process
 * (a harsher variant stress-ng does not have).  --mutex uses a
 * pthread_mutex_t instead of the spinlock, for comparison.
 *
 * One operation is one thread created (and counted); throughput is threads
 * per second over all processes, and per_thread_ops/fairness are per
 * process.  The report adds the rounds, the rounds whose polling gave up,
 * the CPU time used by all processes (getrusage: self + children), and the
 * mean and largest wait of a counting thread for the lock.
 *
 * Invariants, checked inside the lock (one thread at a time: an inside counter
 * and an owner, as in Concurrency Kit's validate programs) and after each
 * round (every thread created counted itself exactly once: the count, read
 * under the lock after the joins, equals the threads created), and at the end
 * (every process exited normally, the counts add up).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

/* A lock and what it protects.  In a MAP_SHARED mapping with --shared-lock. */
struct churn_lock {
	pthread_spinlock_t spin;
	pthread_mutex_t mutex;
	uint32_t inside;   /* holders of the lock: must be exactly 1 inside */
	uint32_t pad;
	uint64_t owner;    /* who is inside: (process << 32) | thread slot + 1 */
	volatile uint64_t scratch; /* written --cs times inside the lock */
} __attribute__((aligned(64)));

/* One process's results, in a MAP_SHARED mapping the parent reads. */
struct churn_process {
	uint64_t count;        /* threads counted this round; under the lock */
	uint64_t counted;      /* threads counted in finished rounds */
	uint64_t created;      /* threads created */
	uint64_t rounds;
	uint64_t limited;      /* rounds cut short by EAGAIN */
	uint64_t gave_up;      /* rounds whose polling ended before all had counted */
	uint64_t wait_sum_ns;  /* counting threads' waits for the lock; under the lock */
	uint64_t wait_max_ns;
	uint64_t violations;
	char first_violation[160];
} __attribute__((aligned(64)));

#define MAX_PROCESSES 256

static long processes = 1, polls = 1000, stack_kib = 0, cs = 0;
static bool use_mutex, shared_lock, no_lock;

static struct churn_lock private_lock;   /* the default: one per process */
static struct churn_lock *lock;          /* the lock this process uses */
static struct churn_process *results;    /* all processes' */
static struct churn_process *me;         /* this process's */
static long my_index;

/* The round's gate, as in stress-ng: held by main while it creates. */
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER; /* CLOCK_REALTIME */
static volatile bool released;

static void violated(const char *fmt, unsigned long long a, unsigned long long b)
{
	if (__atomic_fetch_add(&me->violations, 1, __ATOMIC_RELAXED) == 0)
		snprintf(me->first_violation, sizeof(me->first_violation), fmt, a, b);
}

static void churn_lock(void)
{
	if (no_lock)
		return;
	if (use_mutex)
		pthread_mutex_lock(&lock->mutex);
	else
		pthread_spin_lock(&lock->spin);
}

static void churn_unlock(void)
{
	if (no_lock)
		return;
	if (use_mutex)
		pthread_mutex_unlock(&lock->mutex);
	else
		pthread_spin_unlock(&lock->spin);
}

/* Inside the lock: nobody else may be.  Then --cs writes to the lock's line. */
static void enter(uint64_t who)
{
	uint32_t inside = __atomic_add_fetch(&lock->inside, 1, __ATOMIC_RELAXED);

	if (inside != 1)
		violated("%llu holders inside the lock at once (owner %#llx)", inside,
		         __atomic_load_n(&lock->owner, __ATOMIC_RELAXED));
	__atomic_store_n(&lock->owner, who, __ATOMIC_RELAXED);
	for (long i = 0; i < cs; i++)
		lock->scratch = lock->scratch + 1;
}

static void leave(uint64_t who)
{
	uint64_t owner = __atomic_load_n(&lock->owner, __ATOMIC_RELAXED);

	if (owner != who)
		violated("the lock's owner changed under its holder (%#llx, expected %#llx)",
		         owner, who);
	__atomic_sub_fetch(&lock->inside, 1, __ATOMIC_RELAXED);
}

static void *counting_thread(void *arg)
{
	uint64_t who = ((uint64_t)(my_index + 1) << 32) | (uint64_t)(uintptr_t)arg;
	uint64_t t0 = ex_now_ns(), waited;

	churn_lock();
	waited = ex_now_ns() - t0;
	enter(who);
	me->count++; /* plain: the lock protects it (--no-lock shows races) */
	me->wait_sum_ns += waited;
	if (waited > me->wait_max_ns)
		me->wait_max_ns = waited;
	leave(who);
	churn_unlock();

	/* Wait to be released, exactly as stress-ng's threads do (see the top). */
	pthread_mutex_lock(&gate);
	while (!released) {
		struct timespec deadline;

		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_nsec += 10000000;
		if (deadline.tv_nsec >= 1000000000) {
			deadline.tv_nsec -= 1000000000;
			deadline.tv_sec++;
		}
		pthread_cond_timedwait(&gate_cond, &gate, &deadline);
		sched_yield();
	}
	pthread_mutex_unlock(&gate);
	return NULL;
}

/* One process's rounds until @deadline_ns.  Returns its exit status. */
static int churn_process(uint64_t deadline_ns)
{
	long n = ex_settings->threads;
	pthread_t *tids = calloc((size_t)n, sizeof(*tids));
	void **stacks = calloc((size_t)n, sizeof(*stacks));
	size_t stack_size = (size_t)stack_kib * 1024;
	const uint64_t main_who = (uint64_t)(my_index + 1) << 32;
	bool out_of_time = false;

	if (tids == NULL || stacks == NULL) {
		fprintf(stderr, "churn: out of memory\n");
		return 2;
	}
	if (stack_size != 0 && stack_size < (size_t)PTHREAD_STACK_MIN)
		stack_size = (size_t)PTHREAD_STACK_MIN;
	while (!out_of_time) {
		long created = 0, j;
		bool all_counted = false;

		churn_lock();
		me->count = 0;
		churn_unlock();
		released = false;

		pthread_mutex_lock(&gate);
		for (long i = 0; i < n; i++) {
			pthread_attr_t attr;
			int err;

			pthread_attr_init(&attr);
			if (stack_size != 0) {
				stacks[i] = calloc(1, stack_size);
				if (stacks[i] == NULL) {
					pthread_attr_destroy(&attr);
					me->limited++;
					break;
				}
				pthread_attr_setstack(&attr, stacks[i], stack_size);
			}
			err = pthread_create(&tids[i], &attr, counting_thread,
			                     (void *)(uintptr_t)(i + 1));
			pthread_attr_destroy(&attr);
			if (err != 0) {
				free(stacks[i]);
				stacks[i] = NULL;
				if (err == EAGAIN) { /* out of resources: a smaller round */
					me->limited++;
					break;
				}
				fprintf(stderr, "churn: pthread_create: %s\n", strerror(err));
				return 2;
			}
			created++;
			if (ex_now_ns() >= deadline_ns) {
				out_of_time = true;
				break;
			}
		}
		me->rounds++;
		me->created += (uint64_t)created;
		pthread_mutex_unlock(&gate);

		/* Poll without sleeping, as stress-ng does, until all have counted. */
		for (j = 0; j < polls && !all_counted; j++) {
			if (ex_now_ns() >= deadline_ns) {
				out_of_time = true;
				break;
			}
			churn_lock();
			enter(main_who);
			all_counted = me->count == (uint64_t)created;
			leave(main_who);
			churn_unlock();
		}
		if (!all_counted)
			me->gave_up++;

		pthread_mutex_lock(&gate);
		released = true;
		pthread_cond_broadcast(&gate_cond);
		pthread_mutex_unlock(&gate);
		for (long i = 0; i < created; i++) {
			pthread_join(tids[i], NULL);
			free(stacks[i]);
			stacks[i] = NULL;
		}

		churn_lock();
		enter(main_who);
		if (me->count != (uint64_t)created)
			violated("a round's threads counted themselves %llu times, %llu threads "
			         "were created", me->count, (unsigned long long)created);
		me->counted += me->count;
		leave(main_who);
		churn_unlock();
	}
	free(tids);
	free(stacks);
	return 0;
}

static void *shared_mapping(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("churn: mmap");
		exit(2);
	}
	return p;
}

static void init_lock(struct churn_lock *l)
{
	pthread_mutexattr_t attr;

	/* Process-shared, like stress-ng's spinlock, whether or not it is shared. */
	pthread_spin_init(&l->spin, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&l->mutex, &attr);
	pthread_mutexattr_destroy(&attr);
}

static double seconds_of(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	struct ex_common common = { .threads = 1024, .seconds = 1.0 };
	const struct ex_option options[] = {
		{ "processes", EX_LONG, &processes, 1, MAX_PROCESSES,
		  "processes, each making its own rounds of threads (stress-ng --pthread N)" },
		{ "polls", EX_LONG, &polls, 1, 100000000,
		  "most polls of the count per round, without sleeping (stress-ng: 1000)" },
		{ "stack-kib", EX_LONG, &stack_kib, 0, 65536,
		  "each thread's own calloc'd stack, KiB; 0: glibc's default (as stress-ng)" },
		{ "cs", EX_LONG, &cs, 0, 10000000,
		  "writes to the lock's cache line inside the lock (stress-ng: 0, one increment)" },
		{ "mutex", EX_FLAG, &use_mutex, 0, 0,
		  "use a pthread_mutex_t instead of the spinlock" },
		{ "shared-lock", EX_FLAG, &shared_lock, 0, 0,
		  "one lock for all processes, in a MAP_SHARED mapping (stress-ng: one each)" },
		{ "no-lock", EX_FLAG, &no_lock, 0, 0,
		  "skip the lock (to see the invariant checks fail)" },
		{ NULL, EX_FLAG, NULL, 0, 0, NULL },
	};
	struct churn_lock *shared = NULL;
	static struct ex_thread units[MAX_PROCESSES]; /* one per process, for the report */
	static pid_t pids[MAX_PROCESSES];
	struct ex_report *r;
	struct rusage self, children;
	uint64_t t0, deadline, created = 0, counted = 0, rounds = 0, limited = 0, gave_up = 0;
	uint64_t wait_sum = 0, wait_max = 0;
	double elapsed;
	bool failed_to_start = false;

	ex_parse(argc, argv, "churn",
	         "Rounds of up to --threads short-lived threads, each taking one spinlock once\n"
	         "to count itself while the main thread polls the count under the same lock\n"
	         "(stress-ng's pthread stressor); --processes such processes.",
	         &common, options);
	ex_settings->no_latency = true; /* one acquisition per thread: see wait_* */

	results = shared_mapping((size_t)processes * sizeof(*results));
	if (shared_lock) {
		shared = shared_mapping(sizeof(*shared));
		init_lock(shared);
	}

	fflush(stdout);
	t0 = ex_now_ns();
	deadline = t0 + (uint64_t)(common.seconds * 1e9);
	for (long p = 0; p < processes; p++) {
		pids[p] = fork();
		if (pids[p] < 0) {
			perror("churn: fork");
			failed_to_start = true;
			break;
		}
		if (pids[p] == 0) {
			my_index = p;
			me = &results[p];
			if (shared_lock) {
				lock = shared;
			} else {
				lock = &private_lock;
				init_lock(lock);
			}
			/* exit(), not _exit(): the preload's TICKET_STATS report runs */
			exit(churn_process(deadline));
		}
	}

	for (long p = 0; p < processes; p++) {
		int status;

		if (pids[p] <= 0)
			continue;
		while (waitpid(pids[p], &status, 0) < 0 && errno == EINTR)
			;
		pids[p] = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0
		          : WIFEXITED(status) ? -WEXITSTATUS(status) : -128 - WTERMSIG(status);
	}
	elapsed = (double)(ex_now_ns() - t0) / 1e9;
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &children);

	for (long p = 0; p < processes; p++) {
		const struct churn_process *c = &results[p];

		units[p].ops = c->created;
		units[p].id = (int)p;
		created += c->created;
		counted += c->counted;
		rounds += c->rounds;
		limited += c->limited;
		gave_up += c->gave_up;
		wait_sum += c->wait_sum_ns;
		wait_max = c->wait_max_ns > wait_max ? c->wait_max_ns : wait_max;
	}
	r = ex_report_new_units("churn", units, processes, elapsed);
	ex_report_long(r, "processes", processes);
	ex_report_string(r, "lock", no_lock ? "none" : use_mutex ? "mutex" : "spin");
	ex_report_string(r, "lock_scope", shared_lock ? "shared" : "per-process");
	ex_report_long(r, "polls", polls);
	ex_report_long(r, "stack_kib", stack_kib);
	ex_report_long(r, "cs", cs);
	ex_report_long(r, "rounds", (long long)rounds);
	ex_report_long(r, "rounds_limited", (long long)limited);
	ex_report_long(r, "rounds_gave_up", (long long)gave_up);
	ex_report_long(r, "created", (long long)created);
	ex_report_double(r, "user_seconds", seconds_of(self.ru_utime) + seconds_of(children.ru_utime));
	ex_report_double(r, "sys_seconds", seconds_of(self.ru_stime) + seconds_of(children.ru_stime));
	ex_report_double(r, "wait_mean_ns", counted > 0 ? (double)wait_sum / (double)counted : 0);
	ex_report_long(r, "wait_max_ns", (long long)wait_max);

	for (long p = 0; p < processes; p++) {
		const struct churn_process *c = &results[p];

		if (c->violations > 0)
			ex_violation(r, "process %ld: %llu times; first: %s", p,
			             (unsigned long long)c->violations, c->first_violation);
		if (pids[p] < -128)
			ex_violation(r, "process %ld died of signal %d", p, (int)(-pids[p] - 128));
		else if (pids[p] < 0)
			failed_to_start = true; /* it said why on stderr */
	}
	if (counted != created)
		ex_violation(r, "the threads counted themselves %llu times, %llu were created",
		             (unsigned long long)counted, (unsigned long long)created);
	if (failed_to_start) {
		fprintf(stderr, "churn: a process could not run its rounds\n");
		ex_report_finish(r);
		return 2;
	}
	return ex_report_finish(r);
}
