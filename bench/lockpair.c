/*
 * lockpair - nanoseconds per uncontended lock + unlock pair, for any kind in
 * lock_kinds.h: one thread, a tight loop, the fast paths alone.
 *
 *   lockpair --lock=NAME [--pairs=N] [--rounds=R] [--counter]
 *            [--expect-provider=TEXT]
 *   lockpair --list          the kinds built
 *
 * Runs R rounds of N pairs and prints the best round (the least disturbed by
 * the rest of the machine), as one line:
 *   lock= critical_section=empty|counter ns_per_pair= provider=
 * The process has made (and joined) one thread first, as any program that
 * needs a lock has.  --counter puts one volatile counter++ (a load and a store on the lock's
 * cache line) inside; without it the critical section is empty (a compiler
 * barrier).  Exit status: 0, 2 usage or a kind not built, 3 the provider does
 * not contain --expect-provider's TEXT (see locks.c).
 */
#include "lock_kinds.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static struct {
	union lock_storage lock;
	volatile uint64_t counter;
} __attribute__((aligned(64))) line;

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static inline __attribute__((always_inline)) double
best_round(enum lock_kind k, long pairs, long rounds, bool counter)
{
	struct lock_node node;
	double best = 1e30;

	for (long r = 0; r < rounds; r++) {
		double start = now_ns(), ns;

		for (long i = 0; i < pairs; i++) {
			lock_acquire(k, &line.lock, &node);
			if (counter)
				line.counter++;
			__asm__ volatile("" ::: "memory");
			lock_release(k, &line.lock, &node);
		}
		ns = (now_ns() - start) / (double)pairs;
		if (ns < best)
			best = ns;
	}
	return best;
}

static void *nothing(void *arg)
{
	return arg;
}

/*
 * Once a process has created a thread, glibc's locks use atomic instructions
 * for good; before, pthread_mutex_* (not pthread_spin_*) take a single-thread
 * shortcut without the lock prefix, which would make the mutex look cheaper
 * than it is in any program that needs a lock.  So create one first.
 */
static void make_multithreaded(void)
{
	pthread_t tid;

	if (pthread_create(&tid, NULL, nothing, NULL) == 0)
		pthread_join(tid, NULL);
}

static int bad_usage(const char *what, const char *arg)
{
	fprintf(stderr, "lockpair: %s '%s'\n"
	        "usage: lockpair --lock=NAME [--pairs=N] [--rounds=R] [--counter] "
	        "[--expect-provider=TEXT]\n", what, arg);
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "lock", required_argument, NULL, 'l' },
		{ "pairs", required_argument, NULL, 'n' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "counter", no_argument, NULL, 'c' },
		{ "expect-provider", required_argument, NULL, 'p' },
		{ "list", no_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 },
	};
	const char *lock_name = "spin", *expect = NULL, *provider;
	long pairs = 10000000, rounds = 5;
	bool counter = false;
	enum lock_kind kind;
	char *end;
	int opt;

	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (opt) {
		case 'l': lock_name = optarg; break;
		case 'n':
			pairs = strtol(optarg, &end, 10);
			if (*end != '\0' || pairs < 1)
				return bad_usage("--pairs: expected a count >= 1, not", optarg);
			break;
		case 'r':
			rounds = strtol(optarg, &end, 10);
			if (*end != '\0' || rounds < 1 || rounds > 1000)
				return bad_usage("--rounds: expected 1..1000, not", optarg);
			break;
		case 'c': counter = true; break;
		case 'p': expect = optarg; break;
		case 'L':
			for (int k = 0; k < LOCK_KINDS; k++)
				if (lock_kind_available((enum lock_kind)k))
					printf("%s\n", lock_kind_names[k]);
			return 0;
		default: return bad_usage("bad option", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return bad_usage("unexpected argument", argv[optind]);
	kind = lock_kind_by_name(lock_name);
	if (kind == LOCK_KINDS)
		return bad_usage("unknown lock", lock_name);
	if (!lock_kind_available(kind))
		return bad_usage("not built (Concurrency Kit's headers were missing):", lock_name);
	provider = lock_provider(kind);
	if (expect != NULL && strstr(provider, expect) == NULL) {
		fprintf(stderr, "lockpair: --lock=%s is provided by %s, not by %s\n", lock_name,
		        provider, expect);
		return 3;
	}
	make_multithreaded();
	lock_init(kind, &line.lock);
	printf("lock=%s critical_section=%s ns_per_pair=%.3f provider=%s\n", lock_name,
	       counter ? "counter" : "empty",
	       counter ? LOCK_DISPATCH(kind, best_round, pairs, rounds, true)
	               : LOCK_DISPATCH(kind, best_round, pairs, rounds, false),
	       provider);
	return 0;
}
