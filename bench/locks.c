/*
 * locks - one contended lock, any of the kinds in lock_kinds.h, in one
 * harness: the same critical section and the same work between acquisitions
 * for every kind, so that their figures compare.
 *
 *   locks --lock=NAME --threads=T --work=W --seconds=S [--cs=N]
 *         [--expect-provider=TEXT]
 *   locks --list
 *
 * T threads start together (a barrier) and, for S seconds, each: takes the
 * lock; in the critical section checks that no one else is inside, marks
 * itself inside and the owner, makes N read-modify-writes to data on the
 * lock's own cache line, counts the acquisition there, checks it is still the
 * owner, leaves; releases the lock; then does W iterations of private work (a
 * dependent multiply-add each, about a nanosecond, touching no shared memory).
 *
 * Prints one line of key=value fields (provider last, since it is a path):
 *   lock= threads= work= cs= seconds= acquisitions= ops_per_s= min= max=
 *   fairness= user= sys= invariants= provider=
 * min and max are one thread's acquisitions, fairness is min/max; user and
 * sys are the CPU seconds of the whole process (getrusage) from the start of
 * the timed run to the end of the joins.
 *
 * Exit status: 0 all good; 1 mutual exclusion was violated or the counts do
 * not add up (a line on stderr says which); 2 usage, or a kind not built;
 * 3 the provider of the lock's functions does not contain
 * --expect-provider's TEXT (so a runner knows each run used the lock it
 * meant: "libticketspin.so" for the preload, "libc.so" for glibc's).
 */
#include "lock_kinds.h"

#include <errno.h>
#include <getopt.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

/* The lock and everything its critical section writes, on one cache line. */
struct protected_line {
	union lock_storage lock;
	volatile uint32_t inside; /* threads inside: must be 0 on entry */
	volatile uint32_t owner;  /* id of the thread inside */
	volatile uint64_t count;  /* acquisitions, counted inside */
	volatile uint64_t data;   /* the --cs writes go here */
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct protected_line) == 64, "the lock and its data share one line");

struct worker {
	pthread_t tid;
	uint32_t id;
	uint64_t acquisitions;
	uint64_t violations;
	uint64_t sink; /* the private work's result, so it is not optimised away */
	struct lock_node node;
} __attribute__((aligned(64)));

static struct protected_line line;
static _Alignas(64) atomic_int stop;
static pthread_barrier_t start_barrier;
static enum lock_kind kind;
static long work_iterations, cs_writes;

static inline __attribute__((always_inline)) void critical_section(struct worker *w)
{
	if (line.inside != 0)
		w->violations++;
	line.inside = 1;
	line.owner = w->id;
	for (long i = 0; i < cs_writes; i++)
		line.data += (uint64_t)i;
	line.count++;
	if (line.owner != w->id)
		w->violations++;
	line.inside = 0;
}

static inline __attribute__((always_inline)) void private_work(struct worker *w)
{
	uint64_t x = w->sink;

	for (long i = 0; i < work_iterations; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	w->sink = x;
}

static inline __attribute__((always_inline)) int run_kind(enum lock_kind k, struct worker *w)
{
	uint64_t done = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		lock_acquire(k, &line.lock, &w->node);
		critical_section(w);
		lock_release(k, &line.lock, &w->node);
		done++;
		private_work(w);
	}
	w->acquisitions = done;
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	pthread_barrier_wait(&start_barrier);
	LOCK_DISPATCH(kind, run_kind, w);
	return NULL;
}

static double now_seconds(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu_seconds(const struct timeval *tv)
{
	return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: locks --lock=NAME --threads=T --work=W --seconds=S [--cs=N]\n"
	           "             [--expect-provider=TEXT]\n"
	           "       locks --list\n"
	           "locks:");
	for (int k = 0; k < LOCK_KINDS; k++)
		fprintf(f, " %s", lock_kind_names[k]);
	fprintf(f, "\n");
}

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "locks: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	usage(stderr);
	return 2;
}

static bool parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "lock", required_argument, NULL, 'l' },
		{ "threads", required_argument, NULL, 't' },
		{ "work", required_argument, NULL, 'w' },
		{ "seconds", required_argument, NULL, 's' },
		{ "cs", required_argument, NULL, 'c' },
		{ "expect-provider", required_argument, NULL, 'p' },
		{ "list", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *lock_name = NULL, *expect = NULL, *provider;
	long threads = 2;
	double seconds = 1.0, t0, t_stop;
	struct worker *workers;
	struct rusage r0, r1;
	struct timespec sleep_for;
	uint64_t total = 0, min = UINT64_MAX, max = 0, violations = 0, cs_sum = 0;
	char *end;
	int opt;

	work_iterations = 100;
	cs_writes = 4;
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case 'l': lock_name = optarg; break;
		case 't':
			if (!parse_long(optarg, 1, 4096, &threads))
				return bad_usage("--threads '%s': expected 1..4096", optarg);
			break;
		case 'w':
			if (!parse_long(optarg, 0, 100000000, &work_iterations))
				return bad_usage("--work '%s': expected 0..100000000", optarg);
			break;
		case 'c':
			if (!parse_long(optarg, 0, 1000000, &cs_writes))
				return bad_usage("--cs '%s': expected 0..1000000", optarg);
			break;
		case 's':
			seconds = strtod(optarg, &end);
			if (end == optarg || *end != '\0' || !(seconds >= 0.001 && seconds <= 86400))
				return bad_usage("--seconds '%s': expected 0.001..86400", optarg);
			break;
		case 'p': expect = optarg; break;
		case 'L':
			for (int k = 0; k < LOCK_KINDS; k++)
				if (lock_kind_available((enum lock_kind)k))
					printf("%s\n", lock_kind_names[k]);
			return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc)
		return bad_usage("unexpected argument '%s'", argv[optind]);
	if (lock_name == NULL)
		return bad_usage("%s", "--lock is required");
	kind = lock_kind_by_name(lock_name);
	if (kind == LOCK_KINDS)
		return bad_usage("unknown lock '%s'", lock_name);
	if (!lock_kind_available(kind))
		return bad_usage("lock '%s' was not built: Concurrency Kit's headers (Debian "
		                 "libck-dev) were missing when configured", lock_name);
	provider = lock_provider(kind);
	if (expect != NULL && strstr(provider, expect) == NULL) {
		fprintf(stderr, "locks: --lock=%s is provided by %s, not by %s\n", lock_name,
		        provider, expect);
		return 3;
	}

	lock_init(kind, &line.lock);
	if (posix_memalign((void **)&workers, 64, (size_t)threads * sizeof(*workers)) != 0) {
		fprintf(stderr, "locks: out of memory\n");
		return 2;
	}
	memset(workers, 0, (size_t)threads * sizeof(*workers));
	pthread_barrier_init(&start_barrier, NULL, (unsigned)threads + 1);
	for (long i = 0; i < threads; i++) {
		workers[i].id = (uint32_t)i + 1;
		workers[i].sink = (uint64_t)i;
		errno = pthread_create(&workers[i].tid, NULL, worker_main, &workers[i]);
		if (errno != 0) {
			perror("locks: pthread_create");
			return 2;
		}
	}
	pthread_barrier_wait(&start_barrier);
	getrusage(RUSAGE_SELF, &r0);
	t0 = now_seconds();
	sleep_for.tv_sec = (time_t)seconds;
	sleep_for.tv_nsec = (long)((seconds - (double)sleep_for.tv_sec) * 1e9);
	while (nanosleep(&sleep_for, &sleep_for) != 0 && errno == EINTR)
		;
	atomic_store_explicit(&stop, 1, memory_order_relaxed);
	t_stop = now_seconds();
	for (long i = 0; i < threads; i++) {
		pthread_join(workers[i].tid, NULL);
		total += workers[i].acquisitions;
		violations += workers[i].violations;
		min = workers[i].acquisitions < min ? workers[i].acquisitions : min;
		max = workers[i].acquisitions > max ? workers[i].acquisitions : max;
	}
	getrusage(RUSAGE_SELF, &r1);

	for (long i = 0; i < cs_writes; i++)
		cs_sum += (uint64_t)i;
	printf("lock=%s threads=%ld work=%ld cs=%ld seconds=%.4f acquisitions=%llu "
	       "ops_per_s=%.0f min=%llu max=%llu fairness=%.3f user=%.3f sys=%.3f "
	       "invariants=%s provider=%s\n",
	       lock_name, threads, work_iterations, cs_writes, t_stop - t0,
	       (unsigned long long)total, (double)total / (t_stop - t0),
	       (unsigned long long)min, (unsigned long long)max,
	       max > 0 ? (double)min / (double)max : 0.0,
	       cpu_seconds(&r1.ru_utime) - cpu_seconds(&r0.ru_utime),
	       cpu_seconds(&r1.ru_stime) - cpu_seconds(&r0.ru_stime),
	       violations == 0 && line.count == total && line.data == total * cs_sum
	               ? "ok" : "violated",
	       provider);
	if (violations != 0)
		fprintf(stderr, "locks: INVARIANT VIOLATED: %llu times a thread found another "
		        "inside the critical section of --lock=%s\n",
		        (unsigned long long)violations, lock_name);
	if (line.count != total)
		fprintf(stderr, "locks: INVARIANT VIOLATED: the lock's line counted %llu "
		        "acquisitions, the threads %llu\n",
		        (unsigned long long)line.count, (unsigned long long)total);
	if (line.data != total * cs_sum)
		fprintf(stderr, "locks: INVARIANT VIOLATED: the critical sections' data is %llu, "
		        "expected %llu\n", (unsigned long long)line.data,
		        (unsigned long long)(total * cs_sum));
	return violations == 0 && line.count == total && line.data == total * cs_sum ? 0 : 1;
}
