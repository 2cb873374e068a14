/*
 * log.h - one line at a time to stderr, never stdout.
 *
 * Safe where stdio may not be: formats into a stack buffer and writes it with
 * a single write(2), so concurrent lines do not interleave, no stdio lock is
 * taken and nothing is allocated.  Lines are prefixed with "ticketspin: ".
 */
#ifndef TICKETSPIN_LOG_H
#define TICKETSPIN_LOG_H

void ts_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
