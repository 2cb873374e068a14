/*
 * contend - threads take one pthread spinlock in a loop; the critical section
 * writes data on the lock's cache line, then each thread thinks outside it.
 * Usage: contend THREADS SECONDS [CS_STEPS [THINK_LOOPS]].
 * Prints one line: threads, acquisitions/s, fairness (min/max acquisitions
 * per thread), provider of pthread_spin_lock; with CONTEND_PER_THREAD set,
 * a second line with each thread's acquisitions.  Uses only the standard API, so it runs with and without the
 * preload.  Checks mutual exclusion and exits 1 on a violation.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct shared {
	pthread_spinlock_t lock; /* the data it protects shares its cache line */
	uint32_t owner_count;
	uint64_t counter;
	uint64_t scratch[5];
} __attribute__((aligned(64)));

static struct shared s;
static atomic_int stop;
static atomic_int violations;
static int cs_len = 4, think_len = 50;

struct worker {
	pthread_t tid;
	uint64_t acquisitions;
} __attribute__((aligned(64)));

static void *run(void *arg)
{
	struct worker *w = arg;
	uint64_t local = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		pthread_spin_lock(&s.lock);
		if (++s.owner_count != 1)
			atomic_fetch_add(&violations, 1);
		for (int i = 0; i < cs_len; i++)
			s.scratch[i % 5] += s.counter++;
		s.owner_count--;
		pthread_spin_unlock(&s.lock);
		local++;
		for (volatile int i = 0; i < think_len; i++)
			;
	}
	w->acquisitions = local;
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 2;
	double seconds = argc > 2 ? atof(argv[2]) : 1.0;
	struct worker *workers;
	struct timespec t0, t1;
	uint64_t total = 0, min = UINT64_MAX, max = 0;

	if (argc > 3) cs_len = atoi(argv[3]);
	if (argc > 4) think_len = atoi(argv[4]);
	workers = calloc((size_t)threads, sizeof(*workers));
	pthread_spin_init(&s.lock, PTHREAD_PROCESS_PRIVATE);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < threads; i++)
		pthread_create(&workers[i].tid, NULL, run, &workers[i]);
	usleep((useconds_t)(seconds * 1e6));
	atomic_store(&stop, 1);
	for (int i = 0; i < threads; i++) {
		pthread_join(workers[i].tid, NULL);
		total += workers[i].acquisitions;
		if (workers[i].acquisitions < min) min = workers[i].acquisitions;
		if (workers[i].acquisitions > max) max = workers[i].acquisitions;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double el = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	Dl_info info;
	if (!dladdr(dlsym(RTLD_DEFAULT, "pthread_spin_lock"), &info))
		info.dli_fname = "?";
	printf("%d %.0f %.3f %s\n", threads, total / el, max ? (double)min / max : 0.0,
	       info.dli_fname);
	if (getenv("CONTEND_PER_THREAD")) { for (int i = 0; i < threads; i++) printf(" %llu", (unsigned long long)workers[i].acquisitions); printf("\n"); }
	if (violations || s.counter != total * (uint64_t)cs_len) {
		fprintf(stderr, "contend: mutual exclusion violated\n");
		return 1;
	}
	return 0;
}
