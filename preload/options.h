/*
 * options.h - the library's configuration, read from TICKET_* environment
 * variables.  options.c is the only file that reads the environment, with
 * secure_getenv(); in an AT_SECURE process it ignores every TICKET_* variable.
 *
 * Contract: ts_config() may be called from any thread at any time, including
 * before our constructor has run (another library's constructor may take a
 * spinlock first).  The first call parses the environment exactly once; every
 * call returns the same, then immutable, settings.
 */
#ifndef TICKETSPIN_OPTIONS_H
#define TICKETSPIN_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

enum ts_delay_mode {
	TS_DELAY_OFF,   /* plain ticket spin: one pause between polls */
	TS_DELAY_FIXED, /* factor x tickets-ahead pauses between polls */
	TS_DELAY_AUTO,  /* auto-tuned proportional backoff, the next in line tuned too */
	TS_DELAY_SERIES, /* the series' auto-tuning exactly: the next in line polls tightly */
};

enum ts_delay_table {
	TS_TABLE_HASHED, /* per thread, per lock (hash of the address) */
	TS_TABLE_SINGLE, /* per thread, one delay for every lock */
};

enum ts_wait_policy {
	TS_WAIT_SPIN,  /* never give the CPU away (reference ticket lock) */
	TS_WAIT_YIELD, /* sched_yield() when the queue stops moving */
	TS_WAIT_PARK,  /* sleep on a futex, woken when the turn comes near */
};

struct ts_config {
	enum ts_delay_mode delay_mode;
	uint32_t delay_factor;   /* TS_DELAY_FIXED: pauses per ticket ahead */
	uint32_t delay_min;      /* TS_DELAY_AUTO bounds, in whole pause units */
	uint32_t delay_max;
	enum ts_delay_table table;
	unsigned hash_bits;      /* TS_TABLE_HASHED: 2^hash_bits entries */
	enum ts_wait_policy wait;
	uint32_t spin_budget;    /* pauses without progress before yielding/parking */
	uint32_t bypass_max;     /* most steals past a watching head; 0: strict FIFO */
	uint32_t bypass_ns;      /* and for at most this long, then the lock is the head's; 0: no time bound */
	uint32_t queue_capacity; /* most tickets in the queue; more wait outside */
	uint32_t rest_us;        /* a stealer stopped at the bound sleeps this long first; 0: never */
	uint32_t turn_us;        /* stealing past a head that does not watch: yield after this long; 0: never */
	uint32_t doze_us;        /* found held behind a head that does not watch, on a lock not saturated: sleep this long before queueing (up to TS_DOZES_MAX times); 0: never */
	uint32_t active;         /* most threads contending for a saturated lock (active.c); 0: off */
	uint32_t active_us;      /* a member's turn in the active set */
	uint32_t stall_ms;       /* report a wait longer than this (stall.c); 0: never */
	const char *stats;       /* NULL (off), "" (stderr) or a file name */
	uint32_t stats_top;
	bool stats_keep;         /* keep the shared statistics file after a normal exit */
	const char *runtime_dir; /* XDG_RUNTIME_DIR (absolute), or NULL: where that file goes */
	bool check_unlock;       /* every unlock checks that the lock is held (ts_unlock()) */
	bool strict;
	bool verbose;
};

/* cfg->check_unlock, set once the configuration is read (options.c) */
extern bool ts_unlock_checks;

#define TS_DELAY_FACTOR_MAX 100000u
#define TS_DELAY_LIMIT      1000000u /* largest TICKET_DELAY_MIN/MAX */
/*
 * The delay table is static TLS (backoff.c): every thread's stack must hold
 * it, including threads created with PTHREAD_STACK_MIN (16 KiB) stacks, which
 * a 1024-entry table made fail with EINVAL.  64 entries is the seed's size.
 */
#define TS_HASH_BITS_MAX    6u
#define TS_STALL_MS_MAX     86400000u /* a day */
#define TS_REST_US_MAX      100000u   /* 100 ms: a rest is a turn, not a timeout */
#define TS_TURN_US_MAX      100000u
#define TS_DOZE_US_MAX      100000u
/*
 * TICKET_BYPASS's default: half what the field holds (TS_BYPASS_MAX).  In
 * two matrices of bench/locks (doc/benchmarks.md, 6 December 2026) it met
 * the targets in 107 and 50 cells against 103 and 47 with 63, as fast
 * (medians' ratio 1.019 and 1.036), and a running head waits for half as
 * many steals at most.
 */
#define TS_BYPASS_DEFAULT   31u
#define TS_BYPASS_NS_MIN    100u
#define TS_BYPASS_NS_MAX    1000000u  /* 1 ms: beyond it the count bounds first anyway */
#define TS_ACTIVE_US_MIN    100u
#define TS_ACTIVE_US_MAX    100000u

const struct ts_config *ts_config(void);

/* Is the delay auto-tuned (TICKET_DELAY=auto or series)? */
static inline bool ts_delay_tuned(const struct ts_config *cfg)
{
	return cfg->delay_mode == TS_DELAY_AUTO || cfg->delay_mode == TS_DELAY_SERIES;
}

/* Parses the environment into @out without touching the process-wide copy;
 * returns the number of invalid variables.  For the tests. */
unsigned ts_config_parse(struct ts_config *out);

#endif
