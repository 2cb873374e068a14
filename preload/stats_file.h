/*
 * stats_file.h - the layout of a process's TICKET_STATS file, shared by the
 * library (which writes it) and the ticketspin-stats program (which reads it
 * for `ticketspin report` and `ticketspin top`).
 *
 * One file per process image, created when the process starts with
 * TICKET_STATS on: "ticketspin-stats.PID" (".PID.N" when that name is taken,
 * e.g. by the image before an exec, or a dead process whose pid was reused;
 * ".PID.rHEX", random, when all of those are: another user may squat on
 * them, so readers check a file is the process's own before believing it),
 * in $XDG_RUNTIME_DIR when set and ours, else in /dev/shm.  It is a tmpfs
 * file, mapped MAP_SHARED: whatever the process recorded is in it the moment
 * it is recorded, so it survives _exit, exec, and every signal, SIGKILL
 * included.
 *
 *   [struct ts_file_header]      one page-aligned block
 *   [struct ts_thread_slot] x N  one per thread recording at once: claimed
 *                                at a thread's first record, handed on to a
 *                                later thread at its exit, with what it
 *                                holds (N grows with the file; pages never
 *                                touched stay holes)
 *
 * Each slot is written by its own thread only, with plain stores: no shared
 * atomics.  Readers take what they find and tolerate fields being updated
 * while they read (a count may be one short); a record is published only
 * after it is initialised (its key is stored last, RELEASE).  Readers must
 * read with pread(), not through a mapping: a read fault on a hole of a
 * shared tmpfs mapping would allocate the page.
 *
 * Times are in clock units (header.clock): TSC ticks, or nanoseconds when
 * the TSC is not invariant; readers convert with the pair (tsc0, ns0) taken
 * at creation and one of their own (the TSC is system-wide).
 *
 * The format is versioned (TS_FILE_VERSION); a reader refuses another one.
 */
#ifndef TICKETSPIN_STATS_FILE_H
#define TICKETSPIN_STATS_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TS_FILE_MAGIC    0x7473746174737331ull /* "1sstatst" */
#define TS_FILE_VERSION  9u /* 3: rests; 4: spins; 5: line; 6: skips; 7: dozes for spins;
                            * 8: "timed" and the wait histogram only the waits that waited;
                            * 9: "released", exact totals; no segments, no inits */
#define TS_FILE_PREFIX   "ticketspin-stats."

#define TS_LOCK_SLOTS_LOG2 9
#define TS_LOCK_SLOTS      (1u << TS_LOCK_SLOTS_LOG2)
#define TS_LOCK_LIMIT      (TS_LOCK_SLOTS / 4 * 3) /* locks per thread; probes stay short */
#define TS_SITE_SLOTS_LOG2 10
#define TS_SITE_SLOTS      (1u << TS_SITE_SLOTS_LOG2)
#define TS_SITE_LIMIT      (TS_SITE_SLOTS / 4 * 3)
#define TS_MODULE_LIMIT    256u   /* loaded objects remembered, for naming call sites */
#define TS_MAX_THREADS     65536u /* slots per file */

/*
 * Log-scale histogram of times in clock units: bucket 0 holds values below
 * 2^TS_HIST_LOW; then two buckets per power of two, [2^k, 1.5 x 2^k) and
 * [1.5 x 2^k, 2^(k+1)); the last bucket holds everything above.
 */
#define TS_HIST_LOW     4
#define TS_HIST_BUCKETS 64

static inline unsigned ts_hist_bucket(uint64_t v)
{
	unsigned k, b;

	if (v < (1u << TS_HIST_LOW))
		return 0;
	k = 63u - (unsigned)__builtin_clzll(v);
	b = 1 + 2 * (k - TS_HIST_LOW) + (unsigned)((v >> (k - 1)) & 1);
	return b < TS_HIST_BUCKETS ? b : TS_HIST_BUCKETS - 1;
}

/* The smallest value above bucket @b (the last bucket has none: UINT64_MAX). */
static inline uint64_t ts_hist_upper(unsigned b)
{
	unsigned k;

	if (b == 0)
		return 1u << TS_HIST_LOW;
	if (b >= TS_HIST_BUCKETS - 1)
		return UINT64_MAX;
	k = (b - 1) / 2 + TS_HIST_LOW;
	return (b - 1) % 2 == 0 ? (3ull << (k - 1)) : (2ull << k);
}

enum ts_clock_kind { TS_CLOCK_TSC = 1, TS_CLOCK_NS = 2 };

enum ts_image_state {
	TS_RUNNING = 1, /* or ended without a normal exit: readers tell which */
	TS_EXITED = 2,  /* exit() or return from main; the report was written */
	TS_EXECED = 3,  /* the process exec'd: set by the next image's library */
};

/* One thread's view of one lock. */
struct ts_lock_rec {
	uint64_t lock; /* the key; 0 while the slot is free; stored last */
	uint64_t contended;
	/*
	 * Releases of the lock by this thread since it was first contended in
	 * the process (or re-initialised after that): every acquisition's,
	 * fast path included, counted after the release (stats.c).  Summed
	 * over the threads, the lock's exact total.  A thread may release a
	 * lock it never waited for: its record may have contended == 0.
	 */
	uint64_t released;
	uint64_t latest; /* clock of the latest record, whose delay is "now" */
	uint64_t ahead_sum, polls, yields, parks, rests, skips, dozes, line, borrows;
	/*
	 * Waits that waited: with a start time, and not served at the first
	 * look (a wait of none, which would put the percentiles below the
	 * mean); their count is the report's "waited".
	 */
	uint64_t timed, wait_sum, wait_max;
	uint64_t holds, hold_sum, hold_max;  /* hold samples */
	uint32_t delay_now, delay_max;
	uint32_t ahead_max;
	uint32_t pad;
	uint64_t wait_hist[TS_HIST_BUCKETS];
	uint64_t hold_hist[TS_HIST_BUCKETS];
};

/* Contended acquisitions of one lock from one call site, in one thread. */
struct ts_site_rec {
	uint64_t lock; /* the key, with caller; 0 while free; stored last */
	uint64_t caller;
	uint64_t count;
};

/*
 * The thread's latest contended acquisition, written while the lock is held
 * (the cheap part), folded into the aggregates once the thread has released
 * the lock (the rest).  Readers fold it themselves when it is not yet (seq
 * != folded).  seq is odd while the record is being written.
 */
struct ts_pending {
	uint64_t seq;
	uint64_t lock, caller;
	uint64_t begin, served; /* clock; begin 0: the wait was not timed; served 0: at_once */
	uint64_t hold;          /* a hold sample of the holder before us, clock; 0: none */
	uint32_t polls, yields, parks, rests, skips, dozes, line, borrows;
	uint32_t delay;
	uint16_t ahead, pad;
	/*
	 * 1: served at its first look (a wait of none), with no clock read on
	 * the way to the lock nor while holding it: counted, but neither a
	 * wait nor a hold sample.
	 */
	uint32_t at_once;
};

struct ts_thread_slot {
	uint32_t claimed; /* 1 once the thread owns the slot */
	uint32_t tid;
	uint64_t folded;  /* seq of the latest pending record folded */
	struct ts_pending pending;
	uint32_t nlocks, nsites;
	uint64_t dropped_locks; /* contended acquisitions not recorded: lock table full */
	uint64_t dropped_sites; /* recorded, but not their call site: site table full */
	uint64_t dropped_releases; /* releases not counted: lock table full (totals short) */
	uint32_t last_lock, last_site; /* indices of the latest records: the next is likely the same */
	struct ts_lock_rec locks[TS_LOCK_SLOTS];
	struct ts_site_rec sites[TS_SITE_SLOTS];
} __attribute__((aligned(4096)));

/* A loaded object, to name call sites once the process is gone. */
struct ts_module {
	uint64_t base;       /* load bias (dl_iterate_phdr's dlpi_addr) */
	uint64_t start, end; /* its mapped PT_LOAD segments */
	uint32_t elf_type;   /* ET_EXEC or ET_DYN */
	uint32_t pad;
	char path[240];
};

struct ts_file_header {
	uint64_t magic;
	uint32_t version, header_size, slot_size, max_threads;
	int32_t pid, ppid;
	uint32_t uid, state;       /* enum ts_image_state */
	uint64_t start_time;       /* /proc/PID/stat field 22: tells a reused pid apart */
	uint64_t created_ns;       /* CLOCK_REALTIME */
	uint32_t clock;            /* enum ts_clock_kind */
	uint32_t stats_top;
	uint64_t tsc0, ns0;        /* a (clock, CLOCK_MONOTONIC ns) pair taken at creation */
	uint64_t exit_clock, exit_ns; /* the same at a normal exit, 0 before */
	uint32_t threads;          /* slots claimed (may exceed those backed by the file);
	                            * each may have served several threads in turn */
	uint32_t unrecorded_threads; /* threads that could not have a slot */
	uint32_t delay_tuned;      /* TICKET_DELAY=auto: the delay column means something */
	uint32_t nmodules;
	char command[256];         /* /proc/self/cmdline, arguments separated by spaces */
	char exe[256];             /* /proc/self/exe */
	struct ts_module modules[TS_MODULE_LIMIT];
} __attribute__((aligned(4096)));

/* File offset of slot @i. */
static inline uint64_t ts_slot_offset(uint32_t i)
{
	return sizeof(struct ts_file_header) + (uint64_t)i * sizeof(struct ts_thread_slot);
}

/*
 * Folds @slot's pending record into its aggregates, if not yet done.
 * Used by the writer (at its next contended acquisition) and by readers
 * (on their private copy).
 */
void ts_slot_fold(struct ts_thread_slot *slot);

/* The records a steal was counted in (NULL: dropped, the table full). */
struct ts_steal_recs {
	struct ts_lock_rec *lock;
	struct ts_site_rec *site;
};

/*
 * Counts a steal of @lock from @caller in @slot, with @yields turns ended
 * before it: a contended acquisition with no wait, no hold sample and no
 * delay, so no pending record; and its release if @released (the writer).
 * @recs receives the records it went to, so that the writer can count the
 * next steals of the same lock and call site there directly (they stay
 * the slot's while the slot is).
 */
void ts_slot_count_steal(struct ts_thread_slot *slot, uint64_t lock, uint64_t caller,
                         uint32_t yields, bool released, struct ts_steal_recs *recs);

/* Counts one release of @lock in @slot (the writer, after an unlock). */
void ts_slot_count_release(struct ts_thread_slot *slot, uint64_t lock);

/* Where a call site is, as "function+0xoff (object)" or "object+0xoff". */
typedef void (*ts_describe_fn)(uint64_t address, char *buf, size_t size, void *arg);

struct ts_merged_lock;
struct ts_report {
	uint32_t nlocks;
	struct ts_merged_lock *locks;
	uint64_t contended;
	uint32_t threads;
	uint64_t dropped_locks, dropped_sites, dropped_releases;
	uint32_t unrecorded_threads;
	void *memory;
	size_t bytes;
};

struct ts_report_options {
	const char *prefix;   /* before every line, e.g. "ticketspin: " */
	uint32_t top;         /* most locks shown */
	uint32_t sites;       /* call sites shown per lock */
	ts_describe_fn describe;
	void *describe_arg;
	double ticks_per_ns;  /* clock units per nanosecond */
	int header;           /* print the "stats: pid ..." summary line */
	/* top: rank by contended acquisitions since @previous (NULL: in total) */
	const struct ts_report *previous;
	double interval_s;
};


/*
 * Reads the statistics file open on @fd (header and every backed slot,
 * with pread) and merges it into @report.  Returns 0, or -1 with errno
 * (EINVAL: not a statistics file of this version; ENOMEM).  @header
 * receives the file's header.
 */
int ts_report_read(int fd, struct ts_file_header *header, struct ts_report *report);

/* Writes the report's lines to @out; returns the number of contended locks. */
long ts_report_write(int out, const struct ts_file_header *header, const struct ts_report *report,
                     const struct ts_report_options *options);

void ts_report_free(struct ts_report *report);

/*
 * One lock's row of ts_report_write()'s layout, read back: the ticketspin
 * command lays the rows out again to fit a width or as CSV, and the tests
 * check them.  The parser lives beside the writer, so that a column is
 * added, renamed or moved in one file.
 */
struct ts_report_row {
	unsigned long long lock, total, contended, holds;
	unsigned long long waited;                           /* acquisitions that waited */
	double wait_total_ms, wait_mean, wait_p99, wait_p999, wait_max; /* ms; us... */
	char hold_mean[24], hold_p99[24], hold_max[24];      /* us, or "-" */
	double ahead_avg, polls;
	unsigned ahead_max;
	char delay_now[24], delay_max[24];                   /* units, or "-" */
	unsigned long long yields, parks, rests, skips, dozes, line;
	unsigned threads;
	unsigned long long borrows;                          /* the "steals" column */
	bool has_rate;
	double rate;                                         /* per second, with has_rate */
	char sites[1024];                                    /* "-", or the call sites */
};

/*
 * Parses the lock's row that starts at @line ("stats: 0x..."; the prefix
 * already skipped) and ends at a newline or the string's end; @has_rate: it
 * was written with options.previous (the /s column).  False when it is not
 * a lock's row or does not parse.
 */
bool ts_report_parse_row(const char *line, bool has_rate, struct ts_report_row *row);

/* Clock units per nanosecond for @header, from its creation pair and now. */
double ts_ticks_per_ns(const struct ts_file_header *header);

#endif
