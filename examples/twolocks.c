/*
 * twolocks - Eric Dumazet's regression against the first auto-tuning patch
 * (January 2013): the same threads contend on two (or more) locks with very
 * different hold times.
 *
 * With one tuned delay per thread ("TICKET_DELAY_TABLE=single") the delay
 * learned while waiting behind the long holder is applied to the short lock
 * too, so waiters on the short lock sleep long past its release; a delay per
 * thread and per lock ("hashed", the final patch) keeps the two apart.
 *
 * Each round a thread takes every lock once, in order: lock i, a critical
 * section of cs_i writes to the lock's cache line, unlock, think.  The
 * critical sections are spaced geometrically from --cs-short (lock 0) to
 * --cs-long (the last lock).  One operation is one round; throughput is
 * rounds per second.  The mean sampled wait per lock shows which one pays.
 *
 * Invariants: one thread at a time inside each lock; every lock's count of
 * acquisitions equals the number of rounds completed.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define MAX_LOCKS 64

struct guarded {
	pthread_spinlock_t lock;
	uint32_t inside;    /* threads inside: must be exactly 1 */
	uint64_t count;     /* acquisitions, counted inside */
	long cs;            /* this lock's critical section length */
	volatile uint64_t data[5];
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct guarded) == 64, "one lock and its data per cache line");

struct waits {
	uint64_t ns[MAX_LOCKS];
	uint64_t n[MAX_LOCKS];
};

static struct guarded *locks;
static long nlocks = 2, cs_short = 20, cs_long = 2000, think = 100;
static bool no_lock;
static atomic_long violations;

static void *worker(void *arg)
{
	struct ex_thread *t = arg;
	struct waits *w = t->arg;

	while (ex_running()) {
		bool sample = ex_sample_this(t);

		for (long i = 0; i < nlocks; i++) {
			struct guarded *g = &locks[i];
			uint64_t t0 = sample ? ex_now_ns() : 0;

			if (!no_lock)
				pthread_spin_lock(&g->lock);
			if (sample) {
				uint64_t ns = ex_now_ns() - t0;

				ex_record_latency(t, ns);
				w->ns[i] += ns;
				w->n[i]++;
			}
			if (__atomic_add_fetch(&g->inside, 1, __ATOMIC_RELAXED) != 1)
				atomic_fetch_add(&violations, 1);
			g->count++;
			for (long k = 0; k < g->cs; k++)
				g->data[k % 5] = g->data[k % 5] + (uint64_t)k;
			if (__atomic_sub_fetch(&g->inside, 1, __ATOMIC_RELAXED) != 0)
				atomic_fetch_add(&violations, 1);
			if (!no_lock)
				pthread_spin_unlock(&g->lock);
			ex_think(t, think);
		}
		t->ops++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct ex_common common = { .threads = 2, .seconds = 1.0 };
	const struct ex_option options[] = {
		{ "locks", EX_LONG, &nlocks, 2, MAX_LOCKS, "number of locks" },
		{ "cs-short", EX_LONG, &cs_short, 0, 10000000,
		  "critical section of the first lock (writes to its cache line)" },
		{ "cs-long", EX_LONG, &cs_long, 0, 10000000,
		  "critical section of the last lock; the others lie geometrically between" },
		{ "think", EX_LONG, &think, 0, 100000000,
		  "work units (~1 ns) after each unlock" },
		{ "no-lock", EX_FLAG, &no_lock, 0, 0,
		  "skip the spinlocks (to see the invariant checks fail)" },
		{ NULL, EX_FLAG, NULL, 0, 0, NULL },
	};
	struct ex_thread *threads;
	struct ex_report *r;
	struct waits *waits;
	void **args;
	double elapsed;
	uint64_t total;

	ex_parse(argc, argv, "twolocks",
	         "The same threads contend on locks with very different hold times:\n"
	         "one tuned delay per thread loses, one per thread and lock wins.",
	         &common, options);
	if (posix_memalign((void **)&locks, 64, (size_t)nlocks * sizeof(*locks)) != 0 ||
	    (waits = calloc((size_t)common.threads, sizeof(*waits))) == NULL ||
	    (args = calloc((size_t)common.threads, sizeof(*args))) == NULL) {
		fprintf(stderr, "twolocks: out of memory\n");
		return 2;
	}
	memset(locks, 0, (size_t)nlocks * sizeof(*locks));
	for (long i = 0; i < nlocks; i++) {
		double f = (double)i / (double)(nlocks - 1);

		pthread_spin_init(&locks[i].lock, PTHREAD_PROCESS_PRIVATE);
		if (cs_short > 0 && cs_long > 0)
			locks[i].cs = lround((double)cs_short * pow((double)cs_long / (double)cs_short, f));
		else
			locks[i].cs = lround((double)cs_short + ((double)cs_long - (double)cs_short) * f);
	}
	for (long i = 0; i < common.threads; i++)
		args[i] = &waits[i];

	threads = ex_run(worker, args, &elapsed);
	total = ex_total_ops(threads);

	r = ex_report_new("twolocks", threads, elapsed);
	ex_report_long(r, "locks", nlocks);
	ex_report_long(r, "think", think);
	for (long i = 0; i < nlocks; i++) {
		char key[40];
		uint64_t ns = 0, n = 0;

		for (long k = 0; k < common.threads; k++) {
			ns += waits[k].ns[i];
			n += waits[k].n[i];
		}
		snprintf(key, sizeof(key), "lock%ld_cs", i);
		ex_report_long(r, key, locks[i].cs);
		snprintf(key, sizeof(key), "lock%ld_wait_mean_ns", i);
		ex_report_double(r, key, n > 0 ? (double)ns / (double)n : NAN);
		if (locks[i].count != total)
			ex_violation(r, "lock %ld was taken %llu times in %llu rounds", i,
			             (unsigned long long)locks[i].count,
			             (unsigned long long)total);
	}
	if (no_lock)
		ex_report_string(r, "lock", "none");
	if (violations > 0)
		ex_violation(r, "two threads inside one lock, %ld times", (long)violations);
	for (long i = 0; i < nlocks; i++)
		pthread_spin_destroy(&locks[i].lock);
	return ex_report_finish(r);
}
