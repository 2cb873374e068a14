/*
 * reliabilityprobe - situations real programs create around a spinlock
 * (issue 18), run in a child so that tests can check the lock keeps working.
 * Built with -rdynamic: ctorlock.so's constructor takes probe_lock.
 *
 *   reliabilityprobe cancel HOLD_MS  a thread with a deferred cancel pending
 *       calls pthread_spin_lock() on a lock held for HOLD_MS: it must get
 *       the lock (no cancellation point in it), and the next locker too
 *   reliabilityprobe dlopen LIB HOLD_MS  a thread waits in line for
 *       probe_lock (and reports a stall, with TICKET_STALL_MS) while
 *       another dlopen()s LIB, whose constructor takes probe_lock: both
 *       must get it
 *   reliabilityprobe churn PAIRS  PAIRS times two short-lived threads that
 *       initialise a lock and contend for probe_lock once, then exit
 *   reliabilityprobe fork ROUNDS  ROUNDS forks while a thread waits in
 *       probe_lock's queue: the child must find the lock usable
 *   reliabilityprobe forkunread  one fork with a waiter, in a process that
 *       cannot read /proc/self/maps: the child must repair nothing, and its
 *       lock must work past the ghost's ticket
 *   reliabilityprobe forkshared ROUNDS  ROUNDS times, four threads contend
 *       for a PTHREAD_PROCESS_PRIVATE lock in MAP_SHARED memory while
 *       another forks 20 times (the children exit at once): every thread
 *       must finish (the child's fork repair must leave the word alone)
 *   reliabilityprobe dontfork ROUNDS  ROUNDS forks while a thread waits for
 *       a lock in MADV_DONTFORK memory: no child may crash
 *   reliabilityprobe seccomp HOLD_MS  under a seccomp filter that allows
 *       only what a pthread program's locks need (futex, write, the clock,
 *       sleeps, thread creation and exit) and kills the process on any other
 *       system call, a thread waits HOLD_MS for probe_lock (run it with
 *       TICKET_STALL_MS below HOLD_MS: the stall report must not kill it)
 *
 * stdout: "provider ...", then one line per step; exit status 0 when every
 * check held, 1 when one failed (or a step did not finish within 10 s), 2 usage.
 */
#include <dlfcn.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe_check.h"
#include "symbol_provider.h"
#include "ticket_lock.h"

pthread_spinlock_t probe_lock; /* exported (-rdynamic): ctorlock.so takes it */

/* Threads holding or queued for the lock: the queue's tickets, and the holder. */
static unsigned tickets_in_line(void)
{
	uint32_t word = __atomic_load_n((uint32_t *)&probe_lock, __ATOMIC_ACQUIRE);

	return ts_queued(word) + (ts_is_held(word) ? 1u : 0u);
}

static void sleep_ms(long ms)
{
	nanosleep(&(struct timespec){ ms / 1000, (ms % 1000) * 1000000L }, NULL);
}

/* Waits until @n tickets are in line (holder included); false after 10 s. */
static bool wait_for_line(unsigned n)
{
	for (int i = 0; i < 10000; i++) {
		if (tickets_in_line() >= n)
			return true;
		sleep_ms(1);
	}
	return false;
}

/* A step that hangs: say which, and fail, rather than be killed silently. */
static const char *volatile step = "start";

static void *watchdog(void *arg)
{
	(void)arg;
	sleep(10);
	printf("FAILED: hung at: %s\n", step);
	fflush(stdout);
	_exit(1);
}

/* ---- cancel ---------------------------------------------------------------- */

static volatile int cancelled_got_lock;

static void *cancelled_locker(void *arg)
{
	(void)arg;
	/* deferred (the default), pending before the lock is even called */
	pthread_cancel(pthread_self());
	pthread_spin_lock(&probe_lock);
	cancelled_got_lock = 1;
	pthread_spin_unlock(&probe_lock);
	pthread_testcancel(); /* the cancellation acts here */
	return NULL;
}

static int mode_cancel(long hold_ms)
{
	pthread_t t;
	void *result = NULL;

	pthread_spin_init(&probe_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_lock(&probe_lock);
	pthread_create(&t, NULL, cancelled_locker, NULL);
	step = "the cancelled thread drawing its ticket";
	CHECK(wait_for_line(2), "the thread never queued");
	sleep_ms(hold_ms);
	pthread_spin_unlock(&probe_lock);
	step = "joining the cancelled thread";
	pthread_join(t, &result);
	printf("cancelled thread: %s, %s\n", cancelled_got_lock ? "got the lock" : "never got the lock",
	       result == PTHREAD_CANCELED ? "cancelled after" : "not cancelled");
	CHECK(cancelled_got_lock, "cancelled inside pthread_spin_lock");
	CHECK(result == PTHREAD_CANCELED, "the cancellation was lost");
	step = "the next locker";
	pthread_spin_lock(&probe_lock);
	pthread_spin_unlock(&probe_lock);
	printf("next locker: acquired, %u tickets in line\n", tickets_in_line());
	CHECK(tickets_in_line() == 0, "a ticket was left in line");
	return failures ? 1 : 0;
}

/* ---- dlopen ------------------------------------------------------------------ */

static volatile int waiter_got_lock;

static void *line_waiter(void *arg)
{
	(void)arg;
	pthread_spin_lock(&probe_lock);
	waiter_got_lock = 1;
	pthread_spin_unlock(&probe_lock);
	return NULL;
}

static void *opener(void *arg)
{
	return dlopen(arg, RTLD_NOW | RTLD_LOCAL);
}

static int mode_dlopen(const char *lib, long hold_ms)
{
	pthread_t w, d;
	void *handle = NULL;

	pthread_spin_init(&probe_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_lock(&probe_lock);
	pthread_create(&w, NULL, line_waiter, NULL);
	step = "the waiter drawing its ticket";
	CHECK(wait_for_line(2), "the waiter never queued");
	pthread_create(&d, NULL, opener, (void *)lib);
	step = "the constructor drawing its ticket";
	CHECK(wait_for_line(3), "the constructor never queued");
	/* the waiter reports its stall now, while dlopen() holds the loader's lock */
	sleep_ms(hold_ms);
	pthread_spin_unlock(&probe_lock);
	step = "the waiter in line";
	pthread_join(w, NULL);
	step = "dlopen() whose constructor takes the lock";
	pthread_join(d, &handle);
	printf("waiter: %s; dlopen: %s\n", waiter_got_lock ? "acquired" : "no",
	       handle != NULL ? "done" : dlerror());
	CHECK(waiter_got_lock && handle != NULL, "a step failed");
	return failures ? 1 : 0;
}

/* ---- churn ----------------------------------------------------------------------- */

/*
 * A pair: the holder takes probe_lock and keeps it until the waiter has
 * drawn a ticket behind it, so that each pair contends (recorded) whatever
 * the scheduler does.
 */
static void *short_lived(void *arg)
{
	pthread_spinlock_t own;
	bool holder = arg != NULL;

	pthread_spin_init(&own, PTHREAD_PROCESS_PRIVATE); /* enough to claim a slot */
	if (holder) {
		pthread_spin_lock(&probe_lock);
		while (tickets_in_line() < 2)
			sched_yield();
		pthread_spin_unlock(&probe_lock);
	} else {
		while (tickets_in_line() < 1)
			sched_yield();
		pthread_spin_lock(&probe_lock);
		pthread_spin_unlock(&probe_lock);
	}
	pthread_spin_destroy(&own);
	return NULL;
}

/* @pairs times, two threads that contend for probe_lock once, then exit. */
static int mode_churn(long pairs)
{
	pthread_spin_init(&probe_lock, PTHREAD_PROCESS_PRIVATE);
	step = "thread churn";
	for (long i = 0; i < pairs; i++) {
		pthread_t t[2];

		for (int k = 0; k < 2; k++)
			if (pthread_create(&t[k], NULL, short_lived, k == 0 ? (void *)1 : NULL) != 0) {
				printf("FAILED: pthread_create after %ld pairs\n", i);
				return 1;
			}
		for (int k = 0; k < 2; k++)
			pthread_join(t[k], NULL);
	}
	printf("churn: %ld threads done\n", 2 * pairs);
	return failures ? 1 : 0;
}

/* ---- fork ------------------------------------------------------------------- */

static void *wait_for_probe_lock(void *arg)
{
	(void)arg;
	pthread_spin_lock(&probe_lock);
	pthread_spin_unlock(&probe_lock);
	return NULL;
}

/*
 * The idiom's first half: the parent holds probe_lock and a thread queues for
 * it (two tickets in line), to be forked while it waits.  Returns the thread.
 */
static pthread_t queue_a_waiter(void)
{
	pthread_t waiter;

	step = "a waiter queues";
	pthread_spin_lock(&probe_lock);
	pthread_create(&waiter, NULL, wait_for_probe_lock, NULL);
	while (tickets_in_line() < 2)
		sched_yield();
	return waiter;
}

/*
 * The parent's half after the fork: releases probe_lock, joins @waiter, which
 * gets it, and waits for @child.  Returns the child's wait status.
 */
static int release_and_wait_for(pthread_t waiter, pid_t child)
{
	int status;

	pthread_spin_unlock(&probe_lock);
	pthread_join(waiter, NULL);
	step = "the child";
	waitpid(child, &status, 0);
	return status;
}

/*
 * @rounds times, the pthread_atfork idiom with a waiter: the parent holds
 * probe_lock, a thread queues for it, the parent forks while it waits; the
 * child releases the lock (as the idiom's child handler does) and must then
 * take it a thousand times, with no thread of its own in the queue; the
 * parent does the same and joins its waiter.
 */
static int mode_fork(long rounds)
{
	pthread_spin_init(&probe_lock, PTHREAD_PROCESS_PRIVATE);
	for (long r = 0; r < rounds; r++) {
		pthread_t waiter = queue_a_waiter();
		pid_t child = fork();
		int status;

		if (child == 0) {
			alarm(10);
			pthread_spin_unlock(&probe_lock);
			for (int i = 0; i < 1000; i++) {
				pthread_spin_lock(&probe_lock);
				pthread_spin_unlock(&probe_lock);
			}
			/* the ghost's ticket is gone: the word is idle, all zero */
			_exit(tickets_in_line() == 0 && *(volatile uint32_t *)&probe_lock == 0 ? 0 : 3);
		}
		status = release_and_wait_for(waiter, child);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "round %ld: the child %s", r,
		      WIFEXITED(status) ? "found its lock's queue not empty" : "hung (or crashed)");
		if (failures)
			break;
	}
	printf("fork: %ld rounds\n", rounds);
	return failures ? 1 : 0;
}

/*
 * forkunread: one round of mode_fork's idiom in a process that cannot read
 * /proc/self/maps (the test runs it with a tmpfs over /proc): the child's
 * fork repair, which reads the maps to find its own memory, must repair
 * nothing (doc/limits.md: "and every lock when the child cannot read
 * /proc/self/maps"), so the ghost's ticket stays in the child's queue; and
 * the lock still works by default, past the ghost (its lockers steal or
 * escape).
 */
static int mode_forkunread(void)
{
	pthread_t waiter;
	int status;
	pid_t child;
	FILE *maps = fopen("/proc/self/maps", "r");

	step = "the maps";
	CHECK(maps == NULL, "/proc/self/maps can be read: nothing tested");
	if (maps != NULL) {
		fclose(maps);
		return 1;
	}
	pthread_spin_init(&probe_lock, PTHREAD_PROCESS_PRIVATE);
	waiter = queue_a_waiter();
	child = fork();
	if (child == 0) {
		uint32_t word;

		alarm(10);
		pthread_spin_unlock(&probe_lock);
		word = *(volatile uint32_t *)&probe_lock;
		if (ts_queued(word) != 1)
			_exit(3); /* repaired */
		for (int i = 0; i < 1000; i++) {
			pthread_spin_lock(&probe_lock);
			pthread_spin_unlock(&probe_lock);
		}
		_exit(0);
	}
	status = release_and_wait_for(waiter, child);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child %s",
	      !WIFEXITED(status) ? "hung (or crashed)" :
	      WEXITSTATUS(status) == 3 ? "emptied its queue without reading its maps" :
	                                 "failed");
	printf("forkunread: %s\n", failures ? "failed" : "the ghost's ticket stayed, the lock worked");
	return failures ? 1 : 0;
}

/* ---- forkshared, dontfork ---------------------------------------------------- */

#define SHARED_THREADS 4
#define SHARED_FORKS 20

static pthread_spinlock_t *shared_lock;
static uint64_t shared_counter; /* under *shared_lock */
static uint64_t shared_made[SHARED_THREADS];
static volatile int forks_done;

/* Takes the lock until the forks are done: each fork finds waiters in line, most of the time. */
static void *contender(void *arg)
{
	uint64_t *made = arg;

	*made = 0;
	while (!forks_done || *made < 1000) {
		pthread_spin_lock(shared_lock);
		shared_counter++;
		pthread_spin_unlock(shared_lock);
		(*made)++;
	}
	return NULL;
}

/* Forks SHARED_FORKS times; the children exit at once. */
static long fork_while_they_contend(void)
{
	long forks = 0;

	while (forks < SHARED_FORKS) {
		pid_t child = fork();
		int status;

		if (child == 0)
			_exit(0);
		if (child < 0)
			break;
		waitpid(child, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a child %s",
		      WIFEXITED(status) ? "failed" : "crashed");
		forks++;
	}
	return forks;
}

/*
 * A PTHREAD_PROCESS_PRIVATE lock in MAP_SHARED memory (POSIX allows it):
 * the parent's waiters are in its queue at each fork, and the children must
 * not empty it (the parent's threads were stuck for good).  The watchdog
 * names the round that hangs.
 */
static int mode_forkshared(long rounds)
{
	static char what[64];

	for (long r = 0; r < rounds; r++) {
		pthread_t t[SHARED_THREADS];
		long forks;

		shared_lock = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		                   -1, 0);
		CHECK(shared_lock != MAP_FAILED, "mmap");
		if (shared_lock == MAP_FAILED)
			return 1;
		pthread_spin_init(shared_lock, PTHREAD_PROCESS_PRIVATE);
		uint64_t sum = 0;

		shared_counter = 0;
		forks_done = 0;
		snprintf(what, sizeof(what), "round %ld: the contenders", r);
		step = what;
		for (int k = 0; k < SHARED_THREADS; k++)
			pthread_create(&t[k], NULL, contender, &shared_made[k]);
		forks = fork_while_they_contend();
		forks_done = 1;
		for (int k = 0; k < SHARED_THREADS; k++) {
			pthread_join(t[k], NULL);
			sum += shared_made[k];
		}
		CHECK(shared_counter == sum, "round %ld: counter %llu, acquisitions %llu", r,
		      (unsigned long long)shared_counter, (unsigned long long)sum);
		CHECK(*(volatile uint32_t *)shared_lock == 0, "round %ld: word %#x left", r,
		      *(volatile uint32_t *)shared_lock);
		printf("forkshared: round %ld, %ld forks\n", r, forks);
		munmap((void *)shared_lock, 4096);
		if (failures)
			break;
	}
	printf("forkshared: %ld rounds\n", rounds);
	return failures ? 1 : 0;
}

static void *wait_for_shared_lock(void *arg)
{
	(void)arg;
	pthread_spin_lock(shared_lock);
	pthread_spin_unlock(shared_lock);
	return NULL;
}

/*
 * A lock in MADV_DONTFORK memory, waited for at each fork: the child does
 * not have the page, and its fork repair must not touch it (it died of
 * SIGSEGV).
 */
static int mode_dontfork(long rounds)
{
	shared_lock = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(shared_lock != MAP_FAILED, "mmap");
	if (shared_lock == MAP_FAILED)
		return 1;
	CHECK(madvise((void *)shared_lock, 4096, MADV_DONTFORK) == 0, "madvise");
	pthread_spin_init(shared_lock, PTHREAD_PROCESS_PRIVATE);
	for (long r = 0; r < rounds; r++) {
		pthread_t waiter;
		int status;
		pid_t child;

		step = "a waiter queues";
		pthread_spin_lock(shared_lock);
		pthread_create(&waiter, NULL, wait_for_shared_lock, NULL);
		while (ts_queued(__atomic_load_n((uint32_t *)shared_lock, __ATOMIC_ACQUIRE)) < 1)
			sched_yield();
		child = fork();
		if (child == 0)
			_exit(0);
		pthread_spin_unlock(shared_lock);
		pthread_join(waiter, NULL);
		step = "the child";
		waitpid(child, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "round %ld: the child %s%s", r,
		      WIFEXITED(status) ? "failed" : "was killed by ",
		      WIFEXITED(status) ? "" : strsignal(WTERMSIG(status)));
		if (failures)
			break;
	}
	printf("dontfork: %ld rounds\n", rounds);
	return failures ? 1 : 0;
}

/* ---- seccomp -------------------------------------------------------------- */

/* What glibc's threads and locks need; everything else kills the process. */
static const int allowed_syscalls[] = {
	SYS_futex, SYS_write, SYS_clock_gettime, SYS_gettimeofday, SYS_nanosleep,
	SYS_clock_nanosleep, SYS_sched_yield, SYS_exit, SYS_exit_group, SYS_mmap,
	SYS_munmap, SYS_mprotect, SYS_rt_sigprocmask, SYS_rt_sigreturn, SYS_madvise, SYS_brk,
	SYS_getpid, SYS_gettid, SYS_tgkill, SYS_rseq, SYS_set_robust_list, SYS_clone,
	SYS_clone3, SYS_restart_syscall,
};

static bool install_filter(void)
{
	enum { N = sizeof(allowed_syscalls) / sizeof(allowed_syscalls[0]) };
	struct sock_filter prog[4 + 2 * N + 1];
	struct sock_fprog fprog = { .len = 0, .filter = prog };
	unsigned short n = 0;

	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	                                         offsetof(struct seccomp_data, arch));
	prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	                                         offsetof(struct seccomp_data, nr));
	for (int i = 0; i < N; i++) {
		prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
		                                         (unsigned)allowed_syscalls[i], 0, 1);
		prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	}
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	fprog.len = n;
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
	       prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) == 0;
}

/*
 * The lock is held for @hold_ms while a thread waits for it, all under the
 * filter (which this thread and the threads it creates inherit): the stall
 * report comes in that time, and a system call it makes beyond the list
 * kills the process (status 128 + SIGSYS).
 */
static int mode_seccomp(long hold_ms)
{
	pthread_t t;

	pthread_spin_init(&probe_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_lock(&probe_lock);
	if (!install_filter()) {
		printf("FAILED: cannot install the seccomp filter\n");
		return 1;
	}
	printf("seccomp: filter installed\n");
	step = "the waiter under the filter";
	pthread_create(&t, NULL, line_waiter, NULL);
	CHECK(wait_for_line(2), "the thread never queued");
	sleep_ms(hold_ms);
	pthread_spin_unlock(&probe_lock);
	pthread_join(t, NULL);
	printf("seccomp: the waiter %s\n", waiter_got_lock ? "got the lock" : "never got the lock");
	CHECK(waiter_got_lock, "the waiter never got the lock");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	pthread_t dog;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("provider %s\n", provider_of("pthread_spin_lock"));
	printf("probe_lock %p\n", (void *)&probe_lock);
	pthread_create(&dog, NULL, watchdog, NULL);
	if (argc == 3 && strcmp(argv[1], "cancel") == 0)
		return mode_cancel(atol(argv[2]));
	if (argc == 3 && strcmp(argv[1], "churn") == 0)
		return mode_churn(atol(argv[2]));
	if (argc == 4 && strcmp(argv[1], "dlopen") == 0)
		return mode_dlopen(argv[2], atol(argv[3]));
	if (argc == 3 && strcmp(argv[1], "fork") == 0)
		return mode_fork(atol(argv[2]));
	if (argc == 2 && strcmp(argv[1], "forkunread") == 0)
		return mode_forkunread();
	if (argc == 3 && strcmp(argv[1], "forkshared") == 0)
		return mode_forkshared(atol(argv[2]));
	if (argc == 3 && strcmp(argv[1], "dontfork") == 0)
		return mode_dontfork(atol(argv[2]));
	if (argc == 3 && strcmp(argv[1], "seccomp") == 0)
		return mode_seccomp(atol(argv[2]));
	fprintf(stderr, "usage: reliabilityprobe cancel HOLD_MS | dlopen LIB HOLD_MS | churn PAIRS"
	                " | fork ROUNDS | forkunread | forkshared ROUNDS | dontfork ROUNDS"
	                " | seccomp HOLD_MS\n");
	return 2;
}
