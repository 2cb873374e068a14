/*
 * leaderexit SECONDS - the main thread calls pthread_exit() while another
 * thread runs on for SECONDS: /proc/PID/stat then shows the leader as a
 * zombie ('Z') and /proc/PID/maps as empty, though the process is alive.
 * test_report_format.sh checks that `ticketspin report` calls it running.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

/*
 * Ends the process itself: with the main thread gone, returning would end
 * it only once every other thread had, and a sanitizer runtime's own
 * background thread (ThreadSanitizer's) never does.
 */
static void *worker(void *arg)
{
	sleep((unsigned)atoi(arg));
	exit(0);
}

int main(int argc, char **argv)
{
	pthread_t thread;

	if (argc != 2 || pthread_create(&thread, NULL, worker, argv[1]) != 0)
		return 2;
	pthread_exit(NULL);
}
