/*
 * common.h - what the example programs share: option parsing, the timed
 * thread harness, per-thread statistics (fairness, sampled latency) and the
 * report in text, CSV or JSON.
 *
 * The examples use only the standard pthread_spin_* API, so each runs
 * unmodified with glibc's lock or with libticketspin.so LD_PRELOADed.
 *
 * Output contract (ticketspin-compare relies on it): in the default text
 * format one line reads "throughput=<operations per second>", and one reads
 * "provider=<object that provides pthread_spin_lock>".  Results go to stdout,
 * diagnostics to stderr.  Exit status: 0 the run's invariants held, 1 an
 * invariant was violated, 2 usage error or the run could not start.
 */
#ifndef TICKETSPIN_EXAMPLES_COMMON_H
#define TICKETSPIN_EXAMPLES_COMMON_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

enum ex_format { EX_TEXT, EX_CSV, EX_JSON };

/* Settings every example has. */
struct ex_common {
	long threads;
	double seconds;
	bool csv, json;
	bool no_latency;
	long seed;
	enum ex_format format; /* from csv/json, after parsing */
};

enum ex_kind { EX_LONG, EX_DOUBLE, EX_FLAG };

/*
 * One command-line option: --name VALUE, --name=VALUE, or --name for flags,
 * parsed with getopt_long (so an unambiguous prefix of a name works too).
 */
struct ex_option {
	const char *name;
	enum ex_kind kind;
	void *value; /* long *, double * or bool * */
	double min, max;
	const char *help;
};

/*
 * Parses argv with getopt_long into @common (which holds the defaults on
 * entry) and the example's own @options (terminated by a NULL name).  Prints usage on --help
 * (exit 0) and an error plus usage on a bad option (exit 2).
 */
void ex_parse(int argc, char **argv, const char *name, const char *summary,
              struct ex_common *common, const struct ex_option *options);

/* Per-thread statistics, one cache line apart from each other. */
struct ex_thread {
	uint64_t ops;       /* operations completed */
	uint64_t sink;      /* keeps think-time work from being optimised away */
	uint64_t rng;       /* per-thread xorshift state */
	uint32_t *samples;  /* sampled latencies, ns */
	uint32_t nsamples;
	uint64_t seen;      /* latencies offered, for reservoir sampling */
	uint64_t lat_max;
	int id;
	void *arg;          /* the example's per-thread data, if any */
} __attribute__((aligned(64)));

/* Run state, read by the workers. */
extern atomic_int ex_stop;
extern struct ex_common *ex_settings;

static inline bool ex_running(void)
{
	return !atomic_load_explicit(&ex_stop, memory_order_relaxed);
}

static inline uint64_t ex_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t ex_random(struct ex_thread *t)
{
	/* xorshift64* */
	uint64_t x = t->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	return x * 2685821657736338717ull;
}

/* A uniform double in [0, 1). */
static inline double ex_uniform(struct ex_thread *t)
{
	return (double)(ex_random(t) >> 11) * (1.0 / 9007199254740992.0);
}

/*
 * @n units of private work (about a nanosecond each): a dependent chain of
 * multiply-adds that touches no shared memory.  Used for think time.
 */
static inline void ex_think(struct ex_thread *t, long n)
{
	uint64_t x = t->sink;

	for (long i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	t->sink = x;
}

/* Should this operation's latency be measured?  (Every 16th, when enabled.) */
static inline bool ex_sample_this(const struct ex_thread *t)
{
	return !ex_settings->no_latency && (t->ops & 15) == 0;
}

void ex_record_latency(struct ex_thread *t, uint64_t ns);

/*
 * Runs @worker on ex_settings->threads threads for ex_settings->seconds; each
 * gets its own struct ex_thread (arg = @args[i] when @args is not NULL) and
 * loops while ex_running().  Returns the array of threads; *elapsed gets the
 * measured wall time in seconds.
 */
struct ex_thread *ex_run(void *(*worker)(void *), void **args, double *elapsed);

/* The report: common statistics plus the example's own key=value fields. */
struct ex_report;

struct ex_report *ex_report_new(const char *example, const struct ex_thread *threads,
                                double elapsed);
/*
 * The same over @n units that are not the worker threads (churn's processes,
 * whose threads live for one acquisition): ops, per_thread_ops and fairness
 * are then per unit; the threads field stays ex_settings->threads.
 */
struct ex_report *ex_report_new_units(const char *example, const struct ex_thread *units,
                                      long n, double elapsed);
void ex_report_long(struct ex_report *r, const char *key, long long value);
void ex_report_double(struct ex_report *r, const char *key, double value);
void ex_report_string(struct ex_report *r, const char *key, const char *value);

/* Records a violated invariant: a line on stderr, and the exit status becomes 1. */
void ex_violation(struct ex_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints the report in the chosen format and returns the exit status. */
int ex_report_finish(struct ex_report *r);

/* Sum of ops over all threads. */
uint64_t ex_total_ops(const struct ex_thread *threads);

#endif
