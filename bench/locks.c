/*
 * locks - one contended lock, any of the kinds in lock_kinds.h, in one
 * harness: the same critical section and the same work between acquisitions
 * for every kind, so that their figures compare.
 *
 *   locks --lock=NAME --threads=T --work=W --seconds=S [--cs=N]
 *         [--layout=same-line|other-line] [--touch=BYTES [--touch-lines=L]]
 *         [--expect-provider=TEXT] [--histogram]
 *   locks --list
 *
 * T threads start together (a barrier) and, for S seconds, each: takes the
 * lock; in the critical section checks that no one else is inside, marks
 * itself inside and the owner, makes N read-modify-writes to the critical
 * section's data, counts the acquisition there, checks it is still the
 * owner, leaves; releases the lock; then does W iterations of private work (a
 * dependent multiply-add each, about a nanosecond, touching no shared memory)
 * and, with --touch, walks its private memory.
 *
 * The shape of the program around the lock, so that a result can be checked
 * beyond one harness's habits:
 *   --layout=same-line   (default) the critical section's data shares the
 *                        lock's cache line: a waiter's look at the lock
 *                        takes the line the holder is writing
 *   --layout=other-line  the data is on a line of its own, 128 bytes from
 *                        the lock (outside the pair of lines an adjacent-line
 *                        prefetcher fetches together): the holder's writes
 *                        and the waiters' looks at the lock do not collide,
 *                        and each acquisition moves two lines, not one
 *   --touch=BYTES        each thread owns a buffer of BYTES (a multiple of
 *                        64, default 0: none) and, after the W iterations,
 *                        makes one read-modify-write per cache line to L of
 *                        its lines (--touch-lines, default all of them),
 *                        going on where the last walk stopped: private work
 *                        that competes with the lock for the cache
 *
 * Prints one line of key=value fields (provider last, since it is a path):
 *   lock= threads= work= cs= layout= touch= touch_lines= seconds=
 *   acquisitions= ops_per_s= min= max= fairness= cpu_fairness= rate_fairness=
 *   user= sys= wait_p50= wait_p99= wait_p999= wait_p9999= wait_max=
 *   iter_p50= iter_p99= iter_p999= iter_p9999= iter_max= invariants= provider=
 * min and max are one thread's acquisitions, fairness is min/max; user and
 * sys are the CPU seconds of the whole process (getrusage) from the start of
 * the timed run to the end of the joins.  cpu_fairness is the fewest / the
 * most CPU seconds one thread ran in its timed run (its own clock, read as
 * it starts and as it stops), rate_fairness the fewest / the most
 * acquisitions per CPU second of one thread: a lock whose rate_fairness is
 * near 1 gave each thread its acquisitions in proportion to the CPU time it
 * ran, and its fairness is then the CPU time's (which a thread asleep in
 * the lock's queue does not get).  The tails, in microseconds, over every
 * acquisition of every thread (latency_hist.h: upper bounds within 6%):
 * wait_* is the time from calling the lock to holding it, iter_* the time
 * from one call of the lock to the thread's next, which counts time off the
 * CPU wherever it falls (a lock that makes its threads wait outside the
 * lock call, or sleep after it, is not flattered).  Both clock reads are
 * one rdtsc each, the same for every lock; the histograms are written
 * after the release.  --histogram prints both histograms whole on stderr.
 *
 * Exit status: 0 all good; 1 mutual exclusion was violated or the counts do
 * not add up (a line on stderr says which); 2 usage, a kind not built, or out
 * of memory;
 * 3 the provider of the lock's functions does not contain
 * --expect-provider's TEXT (so a runner knows each run used the lock it
 * meant: "libticketspin.so" for the preload, "libc.so" for glibc's).
 */
#include "latency_hist.h"
#include "lock_kinds.h"

#include <errno.h>
#include <stddef.h>
#include <getopt.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

/* Everything the critical section reads and writes. */
struct cs_data {
	volatile uint32_t inside; /* threads inside: must be 0 on entry */
	volatile uint32_t owner;  /* id of the thread inside */
	volatile uint64_t count;  /* acquisitions, counted inside */
	volatile uint64_t data;   /* the --cs writes go here */
};

/*
 * The lock, the data of --layout=same-line beside it on its cache line, and
 * the data of --layout=other-line 128 bytes on.  Only one of the two copies
 * is used in a run.
 */
struct protected_lines {
	union lock_storage lock;
	struct cs_data same_line;
	_Alignas(128) struct cs_data other_line;
};
_Static_assert(offsetof(struct protected_lines, same_line) + sizeof(struct cs_data) <= 64,
               "same-line: the lock and its data share one line");
_Static_assert(offsetof(struct protected_lines, other_line) == 128,
               "other-line: the data is outside the lock's pair of lines");

enum layout { LAYOUT_SAME_LINE, LAYOUT_OTHER_LINE };
static const char *const layout_names[] = { "same-line", "other-line" };

struct worker {
	pthread_t tid;
	uint32_t id;
	uint64_t acquisitions;
	double cpu_seconds; /* the thread's CPU time in its timed run */
	uint64_t violations;
	uint64_t sink; /* the private work's result, so it is not optimised away */
	uint64_t *touch_buffer; /* --touch: this thread's own, one word used per line */
	size_t touch_next;      /* the line the next walk starts at */
	struct lock_node node;
	struct lat_hist *wait;  /* ticks from calling the lock to holding it */
	struct lat_hist *iter;  /* ticks from one call of the lock to the next */
} __attribute__((aligned(64)));

enum { CACHE_LINE = 64, WORDS_PER_LINE = CACHE_LINE / sizeof(uint64_t) };

static _Alignas(128) struct protected_lines lines;
static _Alignas(64) atomic_int stop;
static pthread_barrier_t start_barrier;
static enum lock_kind kind;
static enum layout layout;
static long work_iterations, cs_writes, touch_bytes, touch_lines;
static atomic_bool alloc_failed;

static inline __attribute__((always_inline)) void critical_section(struct cs_data *d,
                                                                   struct worker *w)
{
	if (d->inside != 0)
		w->violations++;
	d->inside = 1;
	d->owner = w->id;
	for (long i = 0; i < cs_writes; i++)
		d->data += (uint64_t)i;
	d->count++;
	if (d->owner != w->id)
		w->violations++;
	d->inside = 0;
}

static double thread_cpu_seconds(void)
{
	struct timespec t;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0)
		return 0;
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline __attribute__((always_inline)) void private_work(struct worker *w)
{
	uint64_t x = w->sink;

	for (long i = 0; i < work_iterations; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	w->sink = x;
	if (touch_lines > 0) {
		/* independent read-modify-writes, as updates to a private structure */
		size_t line_no = w->touch_next, buffer_lines = (size_t)touch_bytes / CACHE_LINE;
		uint64_t *buffer = w->touch_buffer;

		for (long i = 0; i < touch_lines; i++) {
			buffer[line_no * WORDS_PER_LINE]++;
			if (++line_no == buffer_lines)
				line_no = 0;
		}
		w->touch_next = line_no;
	}
}

/* D is a constant for each caller, so that each layout gets a loop of its own. */
static inline __attribute__((always_inline)) void run_on(enum lock_kind k, struct cs_data *d,
                                                         struct worker *w)
{
	uint64_t done = 0;
	double cpu_start = thread_cpu_seconds();
	uint64_t called, held, last_called = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		called = bench_ticks();
		lock_acquire(k, &lines.lock, &w->node);
		held = bench_ticks();
		critical_section(d, w);
		lock_release(k, &lines.lock, &w->node);
		done++;
		/* after the release: the histograms' stores are not in the critical section */
		lat_record(w->wait, held - called);
		if (last_called != 0)
			lat_record(w->iter, called - last_called);
		last_called = called;
		private_work(w);
	}
	w->acquisitions = done;
	w->cpu_seconds = thread_cpu_seconds() - cpu_start;
}

static inline __attribute__((always_inline)) int run_kind(enum lock_kind k, struct worker *w)
{
	if (layout == LAYOUT_OTHER_LINE)
		run_on(k, &lines.other_line, w);
	else
		run_on(k, &lines.same_line, w);
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	/* the buffer is this thread's and its pages are in before the clock starts */
	if (touch_bytes > 0) {
		if (posix_memalign((void **)&w->touch_buffer, 4096, (size_t)touch_bytes) == 0)
			memset(w->touch_buffer, 0, (size_t)touch_bytes);
		else
			atomic_store(&alloc_failed, true);
	}
	/* this thread's own pages, as its buffer's */
	w->wait = calloc(1, sizeof(*w->wait));
	w->iter = calloc(1, sizeof(*w->iter));
	if (w->wait == NULL || w->iter == NULL)
		atomic_store(&alloc_failed, true);
	pthread_barrier_wait(&start_barrier);
	if (!atomic_load(&alloc_failed))
		LOCK_DISPATCH(kind, run_kind, w);
	return NULL;
}

/* The words the walks incremented, in all: acquisitions x touch_lines. */
static uint64_t touches_counted(const struct worker *w)
{
	uint64_t sum = 0;

	for (long i = 0; w->touch_buffer != NULL && i < touch_bytes / CACHE_LINE; i++)
		sum += w->touch_buffer[i * WORDS_PER_LINE];
	return sum;
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

/*
 * --histogram: every non-empty bucket of @h on stderr, one line each: the
 * bucket's range in microseconds, its count, and the share of samples at
 * or above it.
 */
static void print_histogram(const char *name, const struct lat_hist *h, double ns_per_tick)
{
	uint64_t above = h->samples;

	fprintf(stderr, "%s histogram: from_us to_us count share_at_or_above\n", name);
	for (unsigned b = 0; b < LAT_BUCKETS; b++) {
		if (h->count[b] == 0)
			continue;
		fprintf(stderr, "%s %.3f %.3f %llu %.3g\n", name,
		        b == 0 ? 0.0 : (double)(lat_bucket_top(b - 1) + 1) * ns_per_tick / 1e3,
		        (double)lat_bucket_top(b) * ns_per_tick / 1e3,
		        (unsigned long long)h->count[b], (double)above / (double)h->samples);
		above -= h->count[b];
	}
}

/* NAME_p50= NAME_p99= NAME_p999= NAME_p9999= NAME_max=, in microseconds. */
static void print_tails(const char *name, const struct lat_hist *h, double ns_per_tick)
{
	static const struct { const char *suffix; double q; } at[] = {
		{ "p50", 0.5 }, { "p99", 0.99 }, { "p999", 0.999 }, { "p9999", 0.9999 },
	};

	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		printf("%s_%s=%.3f ", name, at[i].suffix,
		       (double)lat_quantile(h, at[i].q) * ns_per_tick / 1e3);
	printf("%s_max=%.3f ", name, (double)h->max * ns_per_tick / 1e3);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: locks --lock=NAME --threads=T --work=W --seconds=S [--cs=N]\n"
	           "             [--layout=same-line|other-line] [--touch=BYTES [--touch-lines=L]]\n"
	           "             [--expect-provider=TEXT] [--histogram]\n"
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
		{ "layout", required_argument, NULL, 'y' },
		{ "touch", required_argument, NULL, 'T' },
		{ "touch-lines", required_argument, NULL, 'n' },
		{ "expect-provider", required_argument, NULL, 'p' },
		{ "histogram", no_argument, NULL, 'H' },
		{ "list", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *lock_name = NULL, *expect = NULL, *provider;
	long threads = 2;
	double seconds = 1.0, t0, t_stop, ns_per_tick;
	uint64_t tsc0, tsc_stop;
	static struct lat_hist wait_all, iter_all;
	struct worker *workers;
	struct rusage r0, r1;
	struct timespec sleep_for;
	uint64_t total = 0, min = UINT64_MAX, max = 0, violations = 0, cs_sum = 0;
	double cpu, rate, cpu_min = 0, cpu_max = 0, rate_min = 0, rate_max = 0;
	uint64_t touches_missing = 0;
	struct cs_data *d;
	bool touch_lines_given = false, counts_ok, histogram = false;
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
		case 'y':
			if (strcmp(optarg, "same-line") == 0)
				layout = LAYOUT_SAME_LINE;
			else if (strcmp(optarg, "other-line") == 0)
				layout = LAYOUT_OTHER_LINE;
			else
				return bad_usage("--layout '%s': expected same-line or other-line",
				                 optarg);
			break;
		case 'T':
			if (!parse_long(optarg, 0, 1L << 30, &touch_bytes) ||
			    touch_bytes % CACHE_LINE != 0)
				return bad_usage("--touch '%s': expected a multiple of 64, 0..2^30",
				                 optarg);
			break;
		case 'n':
			if (!parse_long(optarg, 1, 1L << 24, &touch_lines))
				return bad_usage("--touch-lines '%s': expected 1..16777216", optarg);
			touch_lines_given = true;
			break;
		case 'p': expect = optarg; break;
		case 'H': histogram = true; break;
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
	if (touch_lines_given && touch_bytes == 0)
		return bad_usage("%s", "--touch-lines needs --touch=BYTES");
	if (!touch_lines_given)
		touch_lines = touch_bytes / CACHE_LINE;
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

	lock_init(kind, &lines.lock);
	d = layout == LAYOUT_OTHER_LINE ? &lines.other_line : &lines.same_line;
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
	tsc0 = bench_ticks();
	sleep_for.tv_sec = (time_t)seconds;
	sleep_for.tv_nsec = (long)((seconds - (double)sleep_for.tv_sec) * 1e9);
	while (nanosleep(&sleep_for, &sleep_for) != 0 && errno == EINTR)
		;
	atomic_store_explicit(&stop, 1, memory_order_relaxed);
	t_stop = now_seconds();
	tsc_stop = bench_ticks();
	ns_per_tick = tsc_stop > tsc0 ? (t_stop - t0) * 1e9 / (double)(tsc_stop - tsc0) : 0;
	for (long i = 0; i < threads; i++) {
		pthread_join(workers[i].tid, NULL);
		if (workers[i].wait != NULL && workers[i].iter != NULL) {
			lat_merge(&wait_all, workers[i].wait);
			lat_merge(&iter_all, workers[i].iter);
		}
		total += workers[i].acquisitions;
		violations += workers[i].violations;
		min = workers[i].acquisitions < min ? workers[i].acquisitions : min;
		max = workers[i].acquisitions > max ? workers[i].acquisitions : max;
		cpu = workers[i].cpu_seconds;
		rate = cpu > 0 ? (double)workers[i].acquisitions / cpu : 0;
		if (i == 0 || cpu < cpu_min)
			cpu_min = cpu;
		if (i == 0 || cpu > cpu_max)
			cpu_max = cpu;
		if (i == 0 || rate < rate_min)
			rate_min = rate;
		if (i == 0 || rate > rate_max)
			rate_max = rate;
	}
	getrusage(RUSAGE_SELF, &r1);
	if (atomic_load(&alloc_failed)) {
		fprintf(stderr, "locks: out of memory (--touch=%ld, histograms)\n", touch_bytes);
		return 2;
	}
	for (long i = 0; i < threads; i++)
		if (touches_counted(&workers[i]) != workers[i].acquisitions * (uint64_t)touch_lines)
			touches_missing++;

	for (long i = 0; i < cs_writes; i++)
		cs_sum += (uint64_t)i;
	counts_ok = violations == 0 && d->count == total && d->data == total * cs_sum &&
	            touches_missing == 0;
	printf("lock=%s threads=%ld work=%ld cs=%ld layout=%s touch=%ld touch_lines=%ld "
	       "seconds=%.4f acquisitions=%llu "
	       "ops_per_s=%.0f min=%llu max=%llu fairness=%.3f cpu_fairness=%.3f "
	       "rate_fairness=%.3f user=%.3f sys=%.3f ",
	       lock_name, threads, work_iterations, cs_writes, layout_names[layout], touch_bytes,
	       touch_lines, t_stop - t0,
	       (unsigned long long)total, (double)total / (t_stop - t0),
	       (unsigned long long)min, (unsigned long long)max,
	       max > 0 ? (double)min / (double)max : 0.0,
	       cpu_max > 0 ? cpu_min / cpu_max : 0.0, rate_max > 0 ? rate_min / rate_max : 0.0,
	       cpu_seconds(&r1.ru_utime) - cpu_seconds(&r0.ru_utime),
	       cpu_seconds(&r1.ru_stime) - cpu_seconds(&r0.ru_stime));
	print_tails("wait", &wait_all, ns_per_tick);
	print_tails("iter", &iter_all, ns_per_tick);
	if (histogram) {
		print_histogram("wait", &wait_all, ns_per_tick);
		print_histogram("iter", &iter_all, ns_per_tick);
	}
	printf("invariants=%s provider=%s\n", counts_ok ? "ok" : "violated", provider);
	if (violations != 0)
		fprintf(stderr, "locks: INVARIANT VIOLATED: %llu times a thread found another "
		        "inside the critical section of --lock=%s\n",
		        (unsigned long long)violations, lock_name);
	if (d->count != total)
		fprintf(stderr, "locks: INVARIANT VIOLATED: the critical section counted %llu "
		        "acquisitions, the threads %llu\n",
		        (unsigned long long)d->count, (unsigned long long)total);
	if (d->data != total * cs_sum)
		fprintf(stderr, "locks: INVARIANT VIOLATED: the critical sections' data is %llu, "
		        "expected %llu\n", (unsigned long long)d->data,
		        (unsigned long long)(total * cs_sum));
	if (touches_missing != 0)
		fprintf(stderr, "locks: INVARIANT VIOLATED: the --touch walks of %llu threads do "
		        "not add up to their acquisitions x %ld lines\n",
		        (unsigned long long)touches_missing, touch_lines);
	return counts_ok ? 0 : 1;
}
