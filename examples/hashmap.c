/*
 * hashmap - a chained hash table with one spinlock per bucket, under a skewed
 * (Zipf) key distribution: many locks, a few of them hot.
 *
 * Every key 0..K-1 is inserted up front; an operation draws a key from a Zipf
 * distribution (exponent --zipf; 0 is uniform), locks its bucket, walks the
 * chain to the key and either reads its value or adds one to it (--update is
 * the fraction of updates).  Buckets are one cache line each: lock, chain
 * head and counters; entries live apart, as in most hash tables.  One
 * operation is one lookup or update; throughput is operations per second.
 *
 * Invariants: one thread at a time inside each bucket; every key is found;
 * at the end the values sum to the updates made, and the buckets' operation
 * counts sum to the operations completed.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

struct entry {
	uint64_t key;
	uint64_t value;
	int32_t next; /* index of the next entry in the chain, -1 at the end */
};

struct bucket {
	pthread_spinlock_t lock;
	uint32_t inside;  /* threads inside: must be exactly 1 */
	int32_t head;     /* first entry, -1 if none */
	uint32_t length;
	uint64_t ops;     /* operations on this bucket, counted inside */
} __attribute__((aligned(64)));

struct counts {
	uint64_t updates;
	uint64_t missing; /* lookups that did not find their key */
};

static struct bucket *buckets;
static struct entry *entries;
static double *cdf; /* cdf[r]: probability of a rank <= r */
static long nbuckets = 256, nkeys = 4096, think = 50;
static double zipf = 0.99, update = 0.5;
static bool no_lock;
static atomic_long violations;

static inline uint64_t hash_key(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return key;
}

/* Rank r of the Zipf distribution is key r: key 0 is the hottest. */
static long draw_key(struct ex_thread *t)
{
	double u = ex_uniform(t);
	long lo = 0, hi = nkeys - 1;

	while (lo < hi) {
		long mid = lo + (hi - lo) / 2;

		if (cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void *worker(void *arg)
{
	struct ex_thread *t = arg;
	struct counts *c = t->arg;

	while (ex_running()) {
		uint64_t key = (uint64_t)draw_key(t);
		struct bucket *b = &buckets[hash_key(key) % (uint64_t)nbuckets];
		bool write = ex_uniform(t) < update;
		bool sample = ex_sample_this(t);
		uint64_t t0 = sample ? ex_now_ns() : 0;
		int32_t e;

		if (!no_lock)
			pthread_spin_lock(&b->lock);
		if (sample)
			ex_record_latency(t, ex_now_ns() - t0);
		if (__atomic_add_fetch(&b->inside, 1, __ATOMIC_RELAXED) != 1)
			atomic_fetch_add(&violations, 1);
		b->ops++;
		for (e = b->head; e >= 0 && entries[e].key != key; e = entries[e].next)
			;
		if (e < 0) {
			c->missing++;
		} else if (write) {
			entries[e].value++;
			c->updates++;
		} else {
			t->sink += entries[e].value;
		}
		if (__atomic_sub_fetch(&b->inside, 1, __ATOMIC_RELAXED) != 0)
			atomic_fetch_add(&violations, 1);
		if (!no_lock)
			pthread_spin_unlock(&b->lock);
		t->ops++;
		ex_think(t, think);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct ex_common common = { .threads = 2, .seconds = 1.0 };
	const struct ex_option options[] = {
		{ "buckets", EX_LONG, &nbuckets, 1, 1 << 24, "buckets, one spinlock each" },
		{ "keys", EX_LONG, &nkeys, 1, 1 << 24, "keys in the table" },
		{ "zipf", EX_DOUBLE, &zipf, 0, 10, "Zipf exponent of the key distribution; 0: uniform" },
		{ "update", EX_DOUBLE, &update, 0, 1, "fraction of operations that update" },
		{ "think", EX_LONG, &think, 0, 100000000, "work units (~1 ns) after each operation" },
		{ "no-lock", EX_FLAG, &no_lock, 0, 0,
		  "skip the spinlocks (to see the invariant checks fail)" },
		{ NULL, EX_FLAG, NULL, 0, 0, NULL },
	};
	struct ex_thread *threads;
	struct ex_report *r;
	struct counts *counts;
	void **args;
	double elapsed, sum = 0;
	uint64_t total, updates = 0, missing = 0, values = 0, bucket_ops = 0, hottest = 0;

	ex_parse(argc, argv, "hashmap",
	         "A hash table with a spinlock per bucket under a skewed (Zipf) key\n"
	         "distribution.",
	         &common, options);
	if (posix_memalign((void **)&buckets, 64, (size_t)nbuckets * sizeof(*buckets)) != 0 ||
	    (entries = calloc((size_t)nkeys, sizeof(*entries))) == NULL ||
	    (cdf = calloc((size_t)nkeys, sizeof(*cdf))) == NULL ||
	    (counts = calloc((size_t)common.threads, sizeof(*counts))) == NULL ||
	    (args = calloc((size_t)common.threads, sizeof(*args))) == NULL) {
		fprintf(stderr, "hashmap: out of memory\n");
		return 2;
	}
	memset(buckets, 0, (size_t)nbuckets * sizeof(*buckets));
	for (long i = 0; i < nbuckets; i++) {
		pthread_spin_init(&buckets[i].lock, PTHREAD_PROCESS_PRIVATE);
		buckets[i].head = -1;
	}
	for (long k = 0; k < nkeys; k++) {
		struct bucket *b = &buckets[hash_key((uint64_t)k) % (uint64_t)nbuckets];

		entries[k].key = (uint64_t)k;
		entries[k].next = b->head;
		b->head = (int32_t)k;
		b->length++;
		sum += pow((double)(k + 1), -zipf);
		cdf[k] = sum;
	}
	for (long k = 0; k < nkeys; k++)
		cdf[k] /= sum;
	cdf[nkeys - 1] = 1.0;
	for (long i = 0; i < common.threads; i++)
		args[i] = &counts[i];

	threads = ex_run(worker, args, &elapsed);
	total = ex_total_ops(threads);

	for (long i = 0; i < common.threads; i++) {
		updates += counts[i].updates;
		missing += counts[i].missing;
	}
	for (long k = 0; k < nkeys; k++)
		values += entries[k].value;
	for (long i = 0; i < nbuckets; i++) {
		bucket_ops += buckets[i].ops;
		hottest = buckets[i].ops > hottest ? buckets[i].ops : hottest;
	}

	r = ex_report_new("hashmap", threads, elapsed);
	ex_report_long(r, "buckets", nbuckets);
	ex_report_long(r, "keys", nkeys);
	ex_report_double(r, "zipf", zipf);
	ex_report_double(r, "update", update);
	ex_report_long(r, "think", think);
	ex_report_long(r, "updates", (long long)updates);
	ex_report_double(r, "hottest_bucket_share", total > 0 ? (double)hottest / (double)total : 0);
	if (no_lock)
		ex_report_string(r, "lock", "none");
	if (violations > 0)
		ex_violation(r, "two threads inside one bucket, %ld times", (long)violations);
	if (missing > 0)
		ex_violation(r, "%llu lookups did not find their key", (unsigned long long)missing);
	if (values != updates)
		ex_violation(r, "the values sum to %llu after %llu updates",
		             (unsigned long long)values, (unsigned long long)updates);
	if (bucket_ops != total)
		ex_violation(r, "the buckets counted %llu operations, the threads %llu",
		             (unsigned long long)bucket_ops, (unsigned long long)total);
	for (long i = 0; i < nbuckets; i++)
		pthread_spin_destroy(&buckets[i].lock);
	return ex_report_finish(r);
}
