/*
 * log.h - one line at a time to stderr, never stdout, and what the reports
 * (misuse.c, stall.c) share: naming an address, and a rate limit.
 *
 * Safe where stdio may not be: formats into a stack buffer and writes it with
 * a single write(2), so concurrent lines do not interleave, no stdio lock is
 * taken and nothing is allocated; the write is a raw system call, no
 * cancellation point (reports are made by threads holding a ticket).  Lines
 * are prefixed with "ticketspin: ".
 */
#ifndef TICKETSPIN_LOG_H
#define TICKETSPIN_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void ts_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * "0x55d0c3a4b040 (prog+0x4040)", or "(libfoo.so+0x10, name+0x10)" when a
 * dynamic symbol covers @address; just the address for heap and stack.  The
 * offset is what addr2line -e takes.  Calls dladdr(), which takes the dynamic
 * loader's lock: never for a thread holding a ticket (see maps.h, whose
 * ts_maps_describe() the reports made in line use instead).
 */
void ts_describe_address(char *buf, size_t size, const void *address);

/*
 * A report rate limit: the first @burst reports always pass, later ones at
 * most one a second.  Zero-initialise with TS_RATE_LIMIT(burst).
 */
struct ts_rate_limit {
	uint64_t burst;
	uint64_t started;
	int64_t last_second;
	uint64_t suppressed;
};
#define TS_RATE_LIMIT(n) { .burst = (n), .last_second = -1 }

/*
 * May a report be printed now?  *@skipped receives how many were suppressed
 * since the last one printed; ts_suppressed_note() words it for the line.
 */
bool ts_rate_allows(struct ts_rate_limit *limit, uint64_t *skipped);
void ts_suppressed_note(char *buf, size_t size, uint64_t skipped);

/*
 * The process id, for the reports made in line, which make no system call
 * but their write (stall.c): noted by the library's constructor and by the
 * child's fork handler (ts_note_pid(), which calls getpid(), an
 * async-signal-safe call).  0 before the constructor has run.
 */
void ts_note_pid(void);
int ts_pid(void);

/* CLOCK_MONOTONIC_COARSE seconds (0 if unavailable). */
int64_t ts_coarse_seconds(void);

#endif
