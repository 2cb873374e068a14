/*
 * cacheline - the cost of moving one cache line between two CPUs, and the
 * limit that sets on a FIFO lock handed over between two threads.
 *
 *   cacheline [--round-trips=N] [--rounds=R]
 *
 * Two threads, pinned to the first two CPUs we may run on, bounce a counter
 * on one cache line: the first writes an odd value and waits for the next
 * even one, the second waits for the odd value and writes the even one.  A
 * round trip moves the line twice (there and back), so one transfer is half a
 * round trip.  R rounds of N round trips; prints the fastest round (the
 * hardware's cost, least disturbed by other work on the machine) and the
 * median, one key=value line (the waiting loops poll without a pause, which
 * would add its own latency to what is measured):
 *   cpus=A,B transfer_ns_best= transfer_ns_median= round_trips=N rounds=R
 * With fewer than two CPUs it prints "cpus=1 (a transfer needs two CPUs)"
 * and exits 0.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static _Alignas(64) atomic_uint_fast64_t ball;
static _Alignas(64) long round_trips = 200000;
static int cpu_a, cpu_b;

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	errno = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (errno != 0)
		perror("cacheline: pthread_setaffinity_np");
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* The second player: answers every odd value with the next even one. */
static void *answer(void *arg)
{
	long total = *(long *)arg;

	pin(cpu_b);
	for (uint64_t v = 1; v < (uint64_t)total * 2; v += 2) {
		while (atomic_load_explicit(&ball, memory_order_acquire) != v)
			;
		atomic_store_explicit(&ball, v + 1, memory_order_release);
	}
	return NULL;
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "round-trips", required_argument, NULL, 'n' },
		{ "rounds", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	long rounds = 21, total;
	double *per_round;
	cpu_set_t allowed;
	pthread_t partner;
	int opt, found = 0;

	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case 'n': round_trips = atol(optarg); break;
		case 'r': rounds = atol(optarg); break;
		default:
			fprintf(stderr, "usage: cacheline [--round-trips=N] [--rounds=R]\n");
			return 2;
		}
	}
	if (round_trips < 1 || rounds < 1) {
		fprintf(stderr, "cacheline: --round-trips and --rounds must be >= 1\n");
		return 2;
	}
	sched_getaffinity(0, sizeof(allowed), &allowed);
	for (int cpu = 0; cpu < CPU_SETSIZE && found < 2; cpu++) {
		if (CPU_ISSET(cpu, &allowed)) {
			if (found++ == 0)
				cpu_a = cpu;
			else
				cpu_b = cpu;
		}
	}
	if (found < 2) {
		printf("cpus=1 (a transfer needs two CPUs)\n");
		return 0;
	}
	per_round = calloc((size_t)rounds, sizeof(*per_round));
	total = round_trips * rounds;
	pin(cpu_a);
	if ((errno = pthread_create(&partner, NULL, answer, &total)) != 0) {
		perror("cacheline: pthread_create");
		return 2;
	}
	uint64_t v = 0;
	for (long r = 0; r < rounds; r++) {
		double start = now_ns();

		for (long i = 0; i < round_trips; i++) {
			atomic_store_explicit(&ball, ++v, memory_order_release);
			++v;
			while (atomic_load_explicit(&ball, memory_order_acquire) != v)
				;
		}
		per_round[r] = (now_ns() - start) / (double)round_trips / 2;
	}
	pthread_join(partner, NULL);
	qsort(per_round, (size_t)rounds, sizeof(*per_round), compare_double);
	printf("cpus=%d,%d transfer_ns_best=%.1f transfer_ns_median=%.1f round_trips=%ld "
	       "rounds=%ld\n", cpu_a, cpu_b, per_round[0], per_round[rounds / 2], round_trips,
	       rounds);
	return 0;
}
