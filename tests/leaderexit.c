/*
 * leaderexit SECONDS - the main thread calls pthread_exit() while another
 * thread runs on for SECONDS: /proc/PID/stat then shows the leader as a
 * zombie ('Z') and /proc/PID/maps as empty, though the process is alive.
 * test_report_format.sh checks that `ticketspin report` calls it running.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static void *worker(void *arg)
{
	sleep((unsigned)atoi(arg));
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t thread;

	if (argc != 2 || pthread_create(&thread, NULL, worker, argv[1]) != 0)
		return 2;
	pthread_exit(NULL);
}
