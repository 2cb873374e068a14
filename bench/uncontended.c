/*
 * uncontended - nanoseconds per pthread_spin_lock + pthread_spin_unlock pair
 * on one thread, i.e. the fast paths alone.  Prints "<ns per pair> <provider>".
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv)
{
	long pairs = argc > 1 ? atol(argv[1]) : 50000000;
	int with_counter = argc > 2 && atoi(argv[2]) != 0;
	static volatile long counter;
	static pthread_spinlock_t lock __attribute__((aligned(64)));
	Dl_info info;
	double start, best = 1e30;

	pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE);
	for (int round = 0; round < 5; round++) {
		start = now_ns();
		for (long i = 0; i < pairs; i++) {
			pthread_spin_lock(&lock);
			if (with_counter)
				counter++;
			__asm__ volatile("" ::: "memory");
			pthread_spin_unlock(&lock);
		}
		double ns = (now_ns() - start) / (double)pairs;
		if (ns < best)
			best = ns;
	}
	if (!dladdr(dlsym(RTLD_DEFAULT, "pthread_spin_lock"), &info))
		info.dli_fname = "?";
	printf("%.3f %s\n", best, info.dli_fname);
	return 0;
}
