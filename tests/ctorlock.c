/*
 * ctorlock.so - dlopen()ed by reliabilityprobe: its constructor takes the
 * probe's lock while dlopen() holds the dynamic loader's lock.
 */
#include <pthread.h>

extern pthread_spinlock_t probe_lock;

__attribute__((constructor)) static void take_probe_lock(void)
{
	pthread_spin_lock(&probe_lock);
	pthread_spin_unlock(&probe_lock);
}
