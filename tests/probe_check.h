/*
 * probe_check.h - the failure count and CHECK() of the probe programs
 * (misuseprobe, reliabilityprobe): a check that does not hold prints one
 * "FAILED: ..." line on stdout and counts; the program's exit status says
 * whether any failed.  One translation unit per program includes it.
 */
#ifndef TICKETSPIN_TEST_PROBE_CHECK_H
#define TICKETSPIN_TEST_PROBE_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                  \
	do {                                              \
		if (!(cond)) {                            \
			printf("FAILED: " __VA_ARGS__);   \
			printf("\n");                     \
			failures++;                       \
		}                                         \
	} while (0)

#endif
