/*
 * Reliability in the situations real programs create (issue 18): deferred
 * cancellation, dlopen() while a waiter reports a stall, a burst of new
 * threads.  The probes run under the preload; the misuse check is called
 * directly (linked with the core).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>

#include "misuse.h"
#include "stats_file.h"
#include "probe_run.h"

static void run_probe(struct probe_result *r, const char *const *env, const char *const *argv)
{
	probe_run(r, env, argv, 30);
	assert_probe_provider(r);
	cr_assert_eq(r->status, 0, "status %d\n%s%s", r->status, r->out, r->err);
}

/* The stall report gives probe_lock's address, as the probe printed it. */
static void assert_report_names_probe_lock(const struct probe_result *r)
{
	const char *printed = strstr(r->out, "probe_lock 0x");
	char lock[64];

	cr_assert_not_null(printed, "%s", r->out);
	snprintf(lock, sizeof(lock), "pthread_spin_lock(%.*s)", (int)strcspn(printed + 11, "\n"),
	         printed + 11);
	cr_assert_not_null(strstr(r->err, lock), "no report of %s:\n%s", lock, r->err);
	cr_assert_not_null(strstr(r->err, "; names: ticketspin where "), "%s", r->err);
}

/* ---- 1. nothing in pthread_spin_lock() is a cancellation point ----------------- */

static void cancel_run(const char *const *env)
{
	struct probe_result r;

	run_probe(&r, env, (const char *const[]){ RELIABILITYPROBE, "cancel", "300", NULL });
	cr_assert_not_null(strstr(r.out, "cancelled thread: got the lock, cancelled after"), "%s",
	                   r.out);
	cr_assert_not_null(strstr(r.out, "next locker: acquired"), "%s", r.out);
}

Test(cancel, first_statistics_record_is_no_cancellation_point)
{
	cancel_run((const char *const[]){ "TICKET_STATS=1", "TICKET_STALL_MS=0", "TICKET_QUEUE=", NULL });
}

Test(cancel, first_statistics_record_unbounded_line)
{
	cancel_run((const char *const[]){ "TICKET_STATS=1", "TICKET_STALL_MS=0", "TICKET_QUEUE=0", NULL });
}

Test(cancel, stall_report_is_no_cancellation_point)
{
	struct probe_result r;

	cancel_run((const char *const[]){ "TICKET_STATS=", "TICKET_STALL_MS=100", "TICKET_QUEUE=0", NULL });
	/* the report was made (or the test proves nothing) */
	probe_run(&r, (const char *const[]){ "TICKET_STATS=", "TICKET_STALL_MS=100", "TICKET_QUEUE=0", NULL },
	          (const char *const[]){ RELIABILITYPROBE, "cancel", "300", NULL }, 30);
	cr_assert_not_null(strstr(r.err, "ticketspin: stall: "), "no stall report:\n%s", r.err);
}

/*
 * Issue 40, item 6: the stall report makes no system call but its write
 * (it opened /proc/self/maps and called process_vm_readv): a program under
 * a seccomp filter that allows what its locks and threads need survives a
 * wait past TICKET_STALL_MS, and the report is printed.
 */
Test(seccomp, stall_report_under_a_filter_allowing_only_what_locks_need)
{
	struct probe_result r;
	const char *preload = getenv("LD_PRELOAD");

	/* A sanitizer's runtime makes calls of its own (sigaltstack, the leak check's maps). */
	if (preload != NULL && (strstr(preload, "libasan") || strstr(preload, "libtsan") ||
	                        strstr(preload, "libubsan")))
		cr_skip_test("a sanitizer runtime is preloaded: %s", preload);

	probe_run(&r, (const char *const[]){ "TICKET_STATS=", "TICKET_STALL_MS=50", NULL },
	          (const char *const[]){ RELIABILITYPROBE, "seccomp", "300", NULL }, 30);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "status %d (159: killed by SIGSYS, a system call the filter "
	             "does not allow)\n%s%s", r.status, r.out, r.err);
	cr_assert_not_null(strstr(r.out, "seccomp: the waiter got the lock"), "%s", r.out);
	assert_report_names_probe_lock(&r);
}

/* ---- 3. the stall report takes no loader lock ---------------------------------- */

Test(dlopen, stall_report_while_a_constructor_waits_in_line)
{
	struct probe_result r;

	run_probe(&r, (const char *const[]){ "TICKET_STATS=", "TICKET_STALL_MS=50", "TICKET_QUEUE=0", NULL },
	          (const char *const[]){ RELIABILITYPROBE, "dlopen", CTORLOCK, "400", NULL });
	cr_assert_not_null(strstr(r.out, "waiter: acquired; dlopen: done"), "%s", r.out);
	cr_assert_geq(count_occurrences(r.err, "ticketspin: stall: "), 1, "no stall report:\n%s",
	              r.err);
	/*
	 * Described with what the waiter knows, named by no one in line (not
	 * by the loader, not from /proc/self/maps: issue 40, item 6): the
	 * lock's address, and the command that names it from outside.
	 */
	assert_report_names_probe_lock(&r);
}

Test(dlopen, statistics_of_a_dlopened_caller)
{
	struct probe_result r;

	/* with statistics: a new call site's object is noted in line */
	run_probe(&r, (const char *const[]){ "TICKET_STATS=1", "TICKET_STALL_MS=50", "TICKET_QUEUE=0", NULL },
	          (const char *const[]){ RELIABILITYPROBE, "dlopen", CTORLOCK, "400", NULL });
	cr_assert_not_null(strstr(r.out, "waiter: acquired; dlopen: done"), "%s", r.out);
	cr_assert_not_null(strstr(r.err, "ctorlock.so"), "the dlopen()ed call site is not named:\n%s",
	                   r.err);
}

/* ---- 11. a burst of new threads is no misuse -------------------------------------- */

static unsigned loadavg_threads(void)
{
	char buf[128] = "";
	FILE *f = fopen("/proc/loadavg", "r");
	char *slash;

	cr_assert_not_null(f);
	cr_assert_not_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	slash = strchr(buf, '/');
	cr_assert_not_null(slash);
	return (unsigned)strtoul(slash + 1, NULL, 10);
}

static pthread_barrier_t burst_done;

static void *parked(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&burst_done);
	return NULL;
}

#define BURST 200

Test(misuse, burst_of_new_threads_is_not_a_suspect_word)
{
	static ts_word_t lock;
	pthread_t t[BURST];
	unsigned before, after, ahead;
	bool suspect;

	before = loadavg_threads();
	/* 6-bit tickets: at most 62 ahead; more threads than that, no scenario */
	if (before + BURST / 2 > TS_QUEUE_CAPACITY - 1)
		cr_skip_test("%u threads on the system: no queue can hold more tickets than that",
		             before);
	/* a word with 33 tickets ahead: primes the cached thread count */
	cr_assert(!ts_misuse_suspect_word(&lock, 0, 33, NULL));
	pthread_barrier_init(&burst_done, NULL, BURST + 1);
	for (int i = 0; i < BURST; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, parked, NULL), 0);
	/* more tickets than threads before the burst, fewer than now */
	ahead = before + BURST / 2;
	suspect = ts_misuse_suspect_word(&lock, 0, (uint8_t)ahead, NULL);
	after = loadavg_threads();
	pthread_barrier_wait(&burst_done);
	for (int i = 0; i < BURST; i++)
		pthread_join(t[i], NULL);
	cr_assert_geq(after, ahead, "the system lost threads meanwhile (%u, then %u): retry", before,
	              after);
	cr_assert(!suspect, "%u tickets ahead judged impossible with %u threads on the system",
	          ahead, after);
	cr_assert_eq(ts_misuse_count(TS_MISUSE_SUSPECT_WORD), 0);
}

/* ---- 4. statistics under thread churn ------------------------------------------------ */

Test(churn, statistics_file_bounded_by_the_threads_alive)
{
	char dir[] = "/tmp/ticketspin-churnXXXXXX", xdg[128], cmd[300], name[256];
	struct probe_result r;
	struct stat st;
	FILE *ls;
	bool have;

	cr_assert(mkdtemp(dir) != NULL);
	snprintf(xdg, sizeof(xdg), "XDG_RUNTIME_DIR=%s", dir);
	/* 3000 threads, at most 3 alive at once (main, a pair) */
	probe_run(&r, (const char *const[]){ xdg, "TICKET_STATS=1", "TICKET_STATS_KEEP=1", NULL },
	          (const char *const[]){ RELIABILITYPROBE, "churn", "1500", NULL }, 120);
	snprintf(cmd, sizeof(cmd), "ls %s | grep ticketspin-stats.", dir);
	ls = popen(cmd, "r");
	have = ls != NULL && fgets(name, sizeof(name), ls) != NULL;
	if (ls != NULL)
		pclose(ls);
	name[strcspn(name, "\n")] = '\0';
	snprintf(cmd, sizeof(cmd), "%s/%s", dir, name);
	cr_assert(have && stat(cmd, &st) == 0, "no statistics file kept");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert_not_null(strstr(r.out, "churn: 3000 threads done"), "%s", r.out);
	cr_assert_leq((uint64_t)st.st_size, ts_slot_offset(8),
	              "a file of %lld bytes (%llu slots) for at most 3 threads alive at once",
	              (long long)st.st_size,
	              (unsigned long long)(((uint64_t)st.st_size - sizeof(struct ts_file_header)) /
	                                   sizeof(struct ts_thread_slot)));
	/* what the exited threads recorded is still counted */
	cr_assert_not_null(strstr(r.err, "ticketspin: stats: pid "), "%s", r.err);
	cr_assert_null(strstr(r.err, " 0 locks contended"), "%s", r.err);
	cr_assert_null(strstr(r.err, "not recorded"), "%s", r.err);
}

/*
 * Issue 18 item 2: a thread waits in the queue when another forks (the
 * pthread_atfork idiom: the forking thread holds the lock); the child's
 * queue must not keep the waiter's ticket, which no thread of the child will
 * ever serve.  In strict FIFO it would hang the child's first locker; by
 * default it would leave it on the slow path for good.
 */
static void fork_rounds(const char *const *env)
{
	struct probe_result r;

	probe_run(&r, env, (const char *const[]){ RELIABILITYPROBE, "fork", "20", NULL }, 60);
	cr_assert(strstr(r.out, "libticketspin") != NULL, "not preloaded:\n%s", r.out);
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.out, "fork: 20 rounds") != NULL, "%s", r.out);
}

Test(fork, a_waiter_at_fork_leaves_no_ticket_in_the_child)
{
	fork_rounds(NULL);
}

Test(fork, a_waiter_at_fork_leaves_no_ticket_in_the_child_strict_fifo)
{
	fork_rounds((const char *const[]){ "TICKET_QUEUE=0", NULL });
}

/*
 * Issue 40, item 3: the fork repair leaves a word in MAP_SHARED memory
 * alone, even of a PTHREAD_PROCESS_PRIVATE lock: the parent's threads wait
 * in that queue (emptied by a child, they were stuck for good in strict
 * FIFO, and left ghost tickets in the word by default).  Ten rounds of
 * four contenders and twenty forks, in each mode.
 */
static void forkshared_rounds(const char *const *env)
{
	struct probe_result r;

	probe_run(&r, env, (const char *const[]){ RELIABILITYPROBE, "forkshared", "10", NULL }, 60);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.out, "forkshared: 10 rounds") != NULL, "%s", r.out);
}

Test(fork, a_private_lock_in_shared_memory_is_not_repaired_by_a_child)
{
	forkshared_rounds((const char *const[]){ "TICKET_STALL_MS=", NULL });
}

Test(fork, a_private_lock_in_shared_memory_is_not_repaired_by_a_child_strict_fifo)
{
	forkshared_rounds((const char *const[]){ "TICKET_STALL_MS=", "TICKET_QUEUE=0", NULL });
}

/*
 * doc/limits.md, fork: not repaired "every lock when the child cannot read
 * /proc/self/maps (no /proc, a seccomp filter), which the repair reads to
 * tell them apart": the probe runs in a mount namespace with a tmpfs over
 * /proc (needs root and unshare(1)); its child must leave the ghost's
 * ticket in the queue, and its lock still works by default.
 */
Test(fork, a_child_that_cannot_read_its_maps_repairs_nothing)
{
	struct probe_result r;

#ifdef __SANITIZE_ADDRESS__
	/* ASan's leak check reads /proc at the probe's exit: not there, by design */
	cr_skip_test("an ASan build: its leak check needs the /proc this probe hides");
#endif
	if (geteuid() != 0 || access("/usr/bin/unshare", X_OK) != 0)
		cr_skip_test("needs root and unshare(1) for a /proc the probe cannot read");
	probe_run(&r, NULL, (const char *const[]){ "/usr/bin/unshare", "-m", "/bin/sh", "-c",
	                                           "mount -t tmpfs none /proc && exec \"$0\" forkunread",
	                                           RELIABILITYPROBE, NULL }, 60);
	if (strstr(r.out, "provider ") == NULL)
		cr_skip_test("no mount namespace here: %s", r.err);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert(strstr(r.out, "forkunread: the ghost's ticket stayed, the lock worked") != NULL,
	          "%s", r.out);
}

/*
 * Issue 40, item 4: a lock in MADV_DONTFORK memory, waited for at fork: the
 * child does not have it, and its repair must not touch it (children died
 * of SIGSEGV).
 */
Test(fork, a_waited_lock_in_dontfork_memory_does_not_crash_the_child)
{
	struct probe_result r;

	probe_run(&r, NULL, (const char *const[]){ RELIABILITYPROBE, "dontfork", "20", NULL }, 60);
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "status %d\n%s%s", r.status, r.out, r.err);
	cr_assert(strstr(r.out, "dontfork: 20 rounds") != NULL, "%s", r.out);
}

/*
 * Issue 18 item 10: glibc's unlocked word (1) is a free lock: trylock takes
 * it (it returned EBUSY forever), and destroy of such a word reports
 * nothing (it reported "4294967295 threads waiting").
 */
Test(glibc_word, trylock_takes_glibc_unlocked_word)
{
	pthread_spinlock_t lock = 1;

	cr_assert_eq(pthread_spin_trylock(&lock), 0, "word %#x", (unsigned)lock);
	cr_assert_eq(pthread_spin_trylock(&lock), EBUSY);
	cr_assert_eq(pthread_spin_unlock(&lock), 0);
	cr_assert_eq(lock, 0, "word %#x", (unsigned)lock);
	lock = 1;
	cr_assert_eq(pthread_spin_destroy(&lock), 0);
	cr_assert_eq(ts_misuse_count(TS_MISUSE_DESTROY_HELD), 0);
}
