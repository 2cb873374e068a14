/*
 * setuidprobe - linked directly against libticketspin.so (not preloaded, so
 * that the dynamic loader's own LD_PRELOAD filtering in secure mode cannot
 * hide what the library does), for the set-user-ID test: made root's and
 * set-user-ID by the test, run by an unprivileged user.
 *
 * Prints the provider of pthread_spin_lock, AT_SECURE, the real and
 * effective uids and its pid, takes a lock once (so the library is used),
 * and exits normally.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <unistd.h>

int main(void)
{
	static pthread_spinlock_t lock;
	Dl_info info;

	if (!dladdr(dlsym(RTLD_DEFAULT, "pthread_spin_lock"), &info) || info.dli_fname == NULL)
		info.dli_fname = "(none)";
	printf("provider %s\n", info.dli_fname);
	printf("secure %lu uid %d euid %d pid %d\n", getauxval(AT_SECURE), (int)getuid(),
	       (int)geteuid(), (int)getpid());
	pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_lock(&lock);
	pthread_spin_unlock(&lock);
	return 0;
}
