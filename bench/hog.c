/*
 * hog - outside load for the benchmarks: a CPU-bound loop, one per CPU,
 * started beside the harness at the runner's priority.
 *
 *   hog [MAX_SECONDS]
 *
 * Loops until killed.  It must never outlive the bench that started it, so
 * besides the runner's trap it dies by itself when its parent dies
 * (PR_SET_PDEATHSIG) and after MAX_SECONDS (default 3600) in any case.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	pid_t parent = getppid();
	long max_seconds = argc > 1 ? atol(argv[1]) : 3600;
	volatile unsigned long spin = 0;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		perror("hog: prctl(PR_SET_PDEATHSIG)");
	if (getppid() != parent) /* the parent died before prctl took effect */
		return 0;
	alarm((unsigned)(max_seconds > 0 ? max_seconds : 3600));
	for (;;)
		spin++;
}
