/*
 * latency_hist.h - log-linear histograms of short intervals, for the
 * benchmarks' tails: every sample counted, none stored.
 *
 * A sample is a count of time-stamp-counter ticks (bench_ticks()).  Values
 * below 16 have a bucket each; above, each power of two is cut into 16
 * buckets, so a bucket is at most 1/16 (6%) wider than its lower bound,
 * whatever the scale: nanoseconds and tens of milliseconds are measured
 * with the same relative precision.  The exact maximum is kept beside.
 *
 * Contract: one histogram per thread (no atomics), merged after the threads
 * are joined; bench_ticks() costs the same whatever lock is measured (one
 * rdtsc, about 8 ns here), and ticks are turned into nanoseconds once, at
 * the end, by the ratio of ticks to CLOCK_MONOTONIC over the whole run
 * (x86-64 with an invariant TSC, which is what Linux's "tsc" clocksource
 * and constant_tsc mean: checked by the caller, not here).
 */
#ifndef TICKETSPIN_BENCH_LATENCY_HIST_H
#define TICKETSPIN_BENCH_LATENCY_HIST_H

#include <stdint.h>
#include <x86intrin.h>

#define LAT_SUB_BITS 4u
#define LAT_SUB      (1u << LAT_SUB_BITS)
#define LAT_BUCKETS  ((64u - LAT_SUB_BITS + 1u) * LAT_SUB)

struct lat_hist {
	uint64_t count[LAT_BUCKETS];
	uint64_t samples;
	uint64_t max;
};

static inline __attribute__((always_inline)) uint64_t bench_ticks(void)
{
	return __rdtsc();
}

static inline __attribute__((always_inline)) unsigned lat_bucket(uint64_t v)
{
	unsigned e;

	if (v < LAT_SUB)
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v); /* >= LAT_SUB_BITS */
	return (e - LAT_SUB_BITS + 1u) * LAT_SUB +
	       (unsigned)((v >> (e - LAT_SUB_BITS)) & (LAT_SUB - 1u));
}

/* The largest value that lands in bucket @b. */
static inline uint64_t lat_bucket_top(unsigned b)
{
	unsigned e, m;

	if (b < LAT_SUB)
		return b;
	e = b / LAT_SUB + LAT_SUB_BITS - 1u;
	m = b % LAT_SUB;
	return (((uint64_t)(LAT_SUB + m + 1u)) << (e - LAT_SUB_BITS)) - 1u;
}

static inline __attribute__((always_inline)) void lat_record(struct lat_hist *h, uint64_t v)
{
	h->count[lat_bucket(v)]++;
	h->samples++;
	if (v > h->max)
		h->max = v;
}

static inline void lat_merge(struct lat_hist *into, const struct lat_hist *from)
{
	for (unsigned b = 0; b < LAT_BUCKETS; b++)
		into->count[b] += from->count[b];
	into->samples += from->samples;
	if (from->max > into->max)
		into->max = from->max;
}

/*
 * The value at quantile @q (0..1): the top of the bucket that holds the
 * sample of rank ceil(q x samples), never above the exact maximum; 0 with
 * no samples.  An upper bound within 6%.
 */
static inline uint64_t lat_quantile(const struct lat_hist *h, double q)
{
	uint64_t rank = (uint64_t)(q * (double)h->samples);
	uint64_t seen = 0;

	if (h->samples == 0)
		return 0;
	if ((double)rank < q * (double)h->samples)
		rank++;
	if (rank == 0)
		rank = 1;
	for (unsigned b = 0; b < LAT_BUCKETS; b++) {
		seen += h->count[b];
		if (seen >= rank) {
			uint64_t top = lat_bucket_top(b);

			return top < h->max ? top : h->max;
		}
	}
	return h->max;
}

#endif
