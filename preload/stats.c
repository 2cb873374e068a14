/*
 * stats.c - TICKET_STATS: who contends which lock, from where, and what the
 * delay tuner did; a generalisation of the 2013 debugging patch that printed
 * the largest delay and the backtrace that pushed it there.
 *
 * Recording (ts_stats_record, called by the slow path once per contended
 * acquisition, with the lock held) touches only the calling thread's own
 * table: no shared atomics, no malloc, no locks.  The table is allocated with
 * mmap on the thread's first record and pushed onto a global list with one
 * CAS; it is never freed, so the records of threads that have exited are
 * still there when the report is written.  The fast paths record nothing.
 *
 * "total" acquisitions: the fast path cannot count, so totals come from the
 * ticket numbers the slow path sees.  Tickets are served one per acquisition
 * (lock or trylock), in order, so the distance between two served tickets is
 * the number of acquisitions in between, modulo the ticket space (16384
 * tickets: TS_TICKET_MASK / TS_TICKET_STEP + 1).  Each thread keeps, per
 * lock, segments of observations (ticket and CLOCK_MONOTONIC time, taken
 * while holding the lock, hence ordered like the tickets): a segment ends
 * when the thread's next observation comes more than SEG_GAP_NS later, a gap
 * that could hide a whole ticket space, or after a pthread_spin_init() of the
 * lock (init_epochs[]).  The merge chains the segments in
 * time order (see total_of).  The result counts the acquisitions from the
 * lock's first contended acquisition to its last; it is exact unless 16384
 * or more acquisitions pass with no contended one in between (then it is
 * short by a multiple of 16384), or a thread closes more than SEG_LIMIT
 * segments.  A borrowed turn (slowpath.c) is served under another waiter's
 * ticket: it is counted apart and added to the total.  pthread_spin_init()
 * restarts a lock's tickets: each thread logs its inits (ts_stats_init), and
 * the merge restarts the count there.  Memory reused for another lock
 * without pthread_spin_init continues the count of the same address.
 *
 * The report is merged and written at exit by a destructor, while other
 * threads may still run: a record being updated at that moment may be read
 * half-updated (its last acquisition missed or its last ticket mismatched);
 * a record is published (its key stored, RELEASE) only once initialised, so
 * nothing is read uninitialised.
 */
#include "stats.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "options.h"
#include "slowpath.h"
#include "ticket_lock.h"

#define LOCK_SLOTS_LOG2 10
#define LOCK_SLOTS      (1u << LOCK_SLOTS_LOG2)
#define LOCK_LIMIT      (LOCK_SLOTS / 4 * 3) /* locks per thread; probes stay short */
#define SITE_SLOTS_LOG2 11
#define SITE_SLOTS      (1u << SITE_SLOTS_LOG2)
#define SITE_LIMIT      (SITE_SLOTS / 4 * 3)
#define SEG_LIMIT       65536u /* closed segments kept per thread (2.5 MB, touched as used) */
#define INIT_LIMIT      4096u  /* pthread_spin_init() calls kept per thread */
/*
 * A thread's own observations more than this apart start a new segment: the
 * gap could hide a whole ticket space of acquisitions (16384 at 4 ns each).
 */
#define SEG_GAP_NS      ((uint64_t)(TS_TICKET_MASK / TS_TICKET_STEP + 1) * 4)

/*
 * A run of one thread's observations of one lock, each within SEG_GAP_NS of
 * the one before: its first and last (ticket and time) and the sum of the
 * ticket distances between consecutive ones.
 */
struct segment {
	const void *lock; /* NULL: not started */
	uint64_t first_ns, last_ns;
	uint64_t span;
	uint32_t epoch;   /* init_epochs[] of the lock when the segment began */
	uint16_t first_ticket, last_ticket;
};

/* A pthread_spin_init(): the lock's tickets start again from 0. */
struct init_rec {
	const void *lock;
	uint64_t ns;
};

/* One thread's view of one lock. */
struct lock_rec {
	const void *lock; /* the key; NULL while the slot is free; stored last */
	uint64_t contended;
	uint64_t latest_ns; /* of the latest record, whose delay is "now" */
	struct segment seg; /* the current segment */
	uint64_t ahead_sum;
	uint64_t polls, yields, parks, borrows;
	uint32_t delay_now, delay_max;
	uint16_t ahead_max;
};

/* Contended acquisitions of one lock from one call site, in one thread. */
struct site_rec {
	const void *lock; /* the key, with caller; NULL while free; stored last */
	const void *caller;
	uint64_t count;
};

struct thread_stats {
	struct thread_stats *next;
	uint32_t nlocks, nsites;
	uint64_t dropped_locks; /* contended acquisitions not recorded: table full */
	uint64_t dropped_sites; /* recorded, but their call site not: table full */
	uint32_t nsegs;         /* closed segments in segs[] */
	uint32_t ninits;        /* in inits[] */
	uint64_t dropped_inits; /* not kept: inits[] full */
	uint64_t dropped_segs;  /* not kept: segs[] full (their acquisitions are not in totals) */
	struct lock_rec locks[LOCK_SLOTS];
	struct site_rec sites[SITE_SLOTS];
	struct segment segs[SEG_LIMIT];
	struct init_rec inits[INIT_LIMIT];
};

static struct thread_stats *all_threads;  /* pushed with CAS, never popped */
/*
 * pthread_spin_init() calls, per hash of the lock address: a segment must not
 * run across one (its span would take the restart for a wrap).  Written only
 * by ts_stats_init, read by ts_stats_record.
 */
#define EPOCH_BITS 8
static uint32_t init_epochs[1u << EPOCH_BITS];
static uint64_t unrecorded_threads;       /* threads whose table mmap failed */
static __thread struct thread_stats *mine;
static __thread bool mine_failed;

static struct thread_stats *my_table(void)
{
	struct thread_stats *t = mine;

	if (__builtin_expect(t != NULL, 1))
		return t;
	if (mine_failed)
		return NULL;
	t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED) {
		mine_failed = true;
		__atomic_fetch_add(&unrecorded_threads, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	/* RELEASE: whoever reads the list head sees the zeroed table behind it. */
	t->next = __atomic_load_n(&all_threads, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&all_threads, &t->next, t, true, __ATOMIC_RELEASE,
	                                    __ATOMIC_RELAXED))
		;
	mine = t;
	return t;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct lock_rec *lock_rec_of(struct thread_stats *t, const void *lock)
{
	uint32_t i = ts_lock_hash(lock) >> (32 - LOCK_SLOTS_LOG2);

	for (uint32_t n = 0; n < LOCK_SLOTS; n++, i = (i + 1) & (LOCK_SLOTS - 1)) {
		struct lock_rec *r = &t->locks[i];

		if (r->lock == lock)
			return r;
		if (r->lock != NULL)
			continue;
		if (t->nlocks >= LOCK_LIMIT)
			return NULL;
		t->nlocks++;
		/* RELEASE pairs with the ACQUIRE load in the merge. */
		__atomic_store_n(&r->lock, lock, __ATOMIC_RELEASE);
		return r;
	}
	return NULL;
}

static struct site_rec *site_rec_of(struct thread_stats *t, const void *lock, const void *caller)
{
	uint32_t i = ts_lock_hash((const char *)lock + ((uintptr_t)caller << 4)) >>
	             (32 - SITE_SLOTS_LOG2);

	for (uint32_t n = 0; n < SITE_SLOTS; n++, i = (i + 1) & (SITE_SLOTS - 1)) {
		struct site_rec *s = &t->sites[i];

		if (s->lock == lock && s->caller == caller)
			return s;
		if (s->lock != NULL)
			continue;
		if (t->nsites >= SITE_LIMIT)
			return NULL;
		t->nsites++;
		s->caller = caller;
		__atomic_store_n(&s->lock, lock, __ATOMIC_RELEASE); /* as above */
		return s;
	}
	return NULL;
}

void ts_stats_record(const void *lock, uint16_t ticket, const void *caller,
                     const struct ts_wait_stats *wait, uint32_t delay)
{
	struct thread_stats *t = my_table();
	uint64_t now;
	struct lock_rec *r;
	struct site_rec *s;

	if (t == NULL)
		return;
	now = now_ns();
	r = lock_rec_of(t, lock);
	if (r == NULL) {
		t->dropped_locks++;
		return;
	}
	if (wait->borrows == 0) {
		/* (a borrowed turn is served under another waiter's ticket: not one of ours) */
		struct segment *g = &r->seg;
		uint32_t epoch = __atomic_load_n(&init_epochs[ts_lock_hash(lock) >> (32 - EPOCH_BITS)],
		                                 __ATOMIC_RELAXED);

		/* a gap that could hide a wrap, or a re-initialisation, ends the segment */
		if (g->lock != NULL && (g->epoch != epoch || now - g->last_ns > SEG_GAP_NS)) {
			if (t->nsegs < SEG_LIMIT) {
				t->segs[t->nsegs] = *g;
				/* RELEASE pairs with the ACQUIRE load in the merge. */
				__atomic_store_n(&t->nsegs, t->nsegs + 1, __ATOMIC_RELEASE);
				g->lock = NULL;
			} else {
				t->dropped_segs++; /* the total may be short from here */
				if (g->epoch != epoch)
					g->lock = NULL; /* must end, cannot be kept */
				/* else the segment goes on across the gap */
			}
		}
		if (g->lock != NULL) {
			g->span += ts_tickets_between(g->last_ticket, ticket);
		} else {
			*g = (struct segment){ .first_ns = now, .epoch = epoch, .first_ticket = ticket };
			__atomic_store_n(&g->lock, lock, __ATOMIC_RELEASE); /* as above */
		}
		g->last_ticket = ticket;
		g->last_ns = now;
	}
	r->latest_ns = now;
	r->contended++;
	r->borrows += wait->borrows;
	r->ahead_sum += wait->ahead;
	if (wait->ahead > r->ahead_max)
		r->ahead_max = wait->ahead;
	r->polls += wait->polls;
	r->yields += wait->yields;
	r->parks += wait->parks;
	r->delay_now = delay;
	if (delay > r->delay_max)
		r->delay_max = delay;
	s = site_rec_of(t, lock, caller);
	if (s != NULL)
		s->count++;
	else
		t->dropped_sites++;
}

void ts_stats_init(const void *lock)
{
	struct thread_stats *t = my_table();

	__atomic_fetch_add(&init_epochs[ts_lock_hash(lock) >> (32 - EPOCH_BITS)], 1,
	                   __ATOMIC_RELAXED);
	if (t == NULL)
		return;
	if (t->ninits >= INIT_LIMIT) {
		t->dropped_inits++;
		return;
	}
	t->inits[t->ninits] = (struct init_rec){ lock, now_ns() };
	/* RELEASE pairs with the ACQUIRE load in the merge. */
	__atomic_store_n(&t->ninits, t->ninits + 1, __ATOMIC_RELEASE);
}

/* ---- the report ------------------------------------------------------- */

struct merged {
	const void *lock;
	uint64_t total, contended, ahead_sum, polls, yields, parks, borrows;
	uint64_t latest_ns;    /* of the latest record, whose delay is "now" */
	uint32_t delay_now, delay_max, ahead_max, threads;
	const void *site;      /* the call site with the most contended acquisitions */
	uint64_t site_count;
	uint32_t sites;
};

static int by_lock_address(const void *a, const void *b)
{
	const struct lock_rec *x = a, *y = b;

	if (x->lock != y->lock)
		return (uintptr_t)x->lock < (uintptr_t)y->lock ? -1 : 1;
	return 0;
}

static int init_by_lock(const void *a, const void *b)
{
	const struct init_rec *x = a, *y = b;

	if (x->lock != y->lock)
		return (uintptr_t)x->lock < (uintptr_t)y->lock ? -1 : 1;
	return 0;
}

static int segment_by_lock(const void *a, const void *b)
{
	const struct segment *x = a, *y = b;

	if (x->lock != y->lock)
		return (uintptr_t)x->lock < (uintptr_t)y->lock ? -1 : 1;
	return 0;
}

static int by_lock_then_caller(const void *a, const void *b)
{
	const struct site_rec *x = a, *y = b;

	if (x->lock != y->lock)
		return (uintptr_t)x->lock < (uintptr_t)y->lock ? -1 : 1;
	if (x->caller != y->caller)
		return (uintptr_t)x->caller < (uintptr_t)y->caller ? -1 : 1;
	return 0;
}

static int by_lock(const void *key, const void *elem)
{
	const struct merged *m = elem;

	if (key == m->lock)
		return 0;
	return (uintptr_t)key < (uintptr_t)m->lock ? -1 : 1;
}

static int most_contended_first(const void *a, const void *b)
{
	const struct merged *x = a, *y = b;

	if (x->contended != y->contended)
		return x->contended > y->contended ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return (uintptr_t)x->lock < (uintptr_t)y->lock ? -1 : (x->lock != y->lock);
}

/* An observation that starts or ends a segment, or a re-initialisation. */
enum point_kind { FIRST, LAST, INIT };

struct point {
	uint64_t ns;
	uint16_t ticket;   /* INIT: the ticket "served" just before 0 */
	uint8_t kind;
	uint32_t rec;      /* FIRST, LAST: index of the segment among the lock's */
};

static int by_time(const void *a, const void *b)
{
	const struct point *x = a, *y = b;
	int16_t d = (int16_t)(uint16_t)(x->ticket - y->ticket);

	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	if (d != 0 && x->kind != INIT && y->kind != INIT) /* same clock reading */
		return d < 0 ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return 0;
}

/*
 * The acquisitions from the lock's first contended acquisition to its last.
 * Every ticket distance we know falls short of the truth by a multiple of
 * the ticket space, if at all: the distance between two observations
 * adjacent in time, and each segment's own span (the sum of distances
 * between its thread's consecutive observations).  Chaining them from the
 * first observation to the last gives a count congruent to the truth; the
 * longest chain is the best of them.  The observations' clock readings order
 * them, since each was read with the lock held.  A pthread_spin_init() of the
 * lock (@inits, sorted by time) restarts its tickets from 0: the chain counts
 * nothing across it, and from it to the next observation the tickets from 0;
 * a span across it is not used.  @points has room for 2 x @n + @ninits.
 */
static uint64_t total_of(const struct segment *r, size_t n, const struct init_rec *inits,
                         size_t ninits, struct point *points, uint64_t *best,
                         uint32_t *first_at)
{
	size_t np = 0, start;
	size_t last_init = 0; /* index + 1 of the latest INIT point so far; 0: none */

	for (size_t i = 0; i < n; i++) {
		points[np++] = (struct point){ r[i].first_ns, r[i].first_ticket, FIRST, (uint32_t)i };
		points[np++] = (struct point){ r[i].last_ns, r[i].last_ticket, LAST, (uint32_t)i };
	}
	for (size_t i = 0; i < ninits; i++)
		points[np++] = (struct point){ inits[i].ns, (uint16_t)(0u - TS_TICKET_STEP) & TS_TICKET_MASK,
		                               INIT, 0 };
	qsort(points, np, sizeof(*points), by_time);
	/* initialisations before the first observation or after the last do not count */
	for (start = 0; points[start].kind == INIT; start++)
		;
	while (points[np - 1].kind == INIT)
		np--;
	for (size_t p = start; p < np; p++)
		if (points[p].kind == FIRST)
			first_at[points[p].rec] = (uint32_t)p;
	best[start] = 1; /* the first contended acquisition itself */
	for (size_t p = start + 1; p < np; p++) {
		if (points[p].kind == INIT) {
			best[p] = best[p - 1];
			last_init = p + 1;
			continue;
		}
		best[p] = best[p - 1] + ts_tickets_between(points[p - 1].ticket, points[p].ticket);
		if (points[p].kind == LAST && first_at[points[p].rec] + 1 > last_init) {
			const struct segment *own = &r[points[p].rec];
			uint64_t via_span = best[first_at[points[p].rec]] + own->span;

			if (via_span > best[p])
				best[p] = via_span;
		}
	}
	return best[np - 1];
}

/*
 * Merges one lock's per-thread records.  Borrowed turns consume no ticket:
 * they are added to the total (which the segments add to later).
 */
static void merge_lock(struct merged *m, const struct lock_rec *r, size_t n)
{
	*m = (struct merged){ .lock = r[0].lock };
	for (size_t i = 0; i < n; i++) {
		m->borrows += r[i].borrows;
		m->total += r[i].borrows;
		m->contended += r[i].contended;
		m->ahead_sum += r[i].ahead_sum;
		m->polls += r[i].polls;
		m->yields += r[i].yields;
		m->parks += r[i].parks;
		if (r[i].ahead_max > m->ahead_max)
			m->ahead_max = r[i].ahead_max;
		if (r[i].delay_max > m->delay_max)
			m->delay_max = r[i].delay_max;
		if (i == 0 || r[i].latest_ns >= m->latest_ns) {
			m->latest_ns = r[i].latest_ns;
			m->delay_now = r[i].delay_now;
		}
		m->threads++;
	}
}

static void write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

static void put_line(int fd, const char *prefix, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void put_line(int fd, const char *prefix, const char *fmt, ...)
{
	char line[1024];
	size_t len = strlen(prefix);
	va_list ap;

	if (len > 64)
		len = 64;
	memcpy(line, prefix, len);
	va_start(ap, fmt);
	vsnprintf(line + len, sizeof(line) - len - 1, fmt, ap);
	va_end(ap);
	len = strlen(line);
	line[len++] = '\n';
	write_all(fd, line, len);
}

/* "function+0xoff (object)", or "object+0xoff" (for addr2line) without a symbol. */
static void describe_site(const void *caller, char *buf, size_t size)
{
	Dl_info info;
	const char *object;

	if (caller == NULL || dladdr(caller, &info) == 0) {
		snprintf(buf, size, "%p", caller);
		return;
	}
	object = info.dli_fname != NULL && info.dli_fname[0] != '\0' ? info.dli_fname
	                                                               : program_invocation_name;
	if (info.dli_sname != NULL && info.dli_saddr != NULL) {
		snprintf(buf, size, "%s+%#lx (%s)", info.dli_sname,
		         (unsigned long)((uintptr_t)caller - (uintptr_t)info.dli_saddr), object);
	} else {
		const ElfW(Ehdr) *elf = info.dli_fbase;
		uintptr_t offset = (uintptr_t)caller;

		/* addr2line wants file offsets in PIE and shared objects, addresses in others */
		if (elf == NULL || elf->e_type != ET_EXEC)
			offset -= (uintptr_t)info.dli_fbase;
		snprintf(buf, size, "%s+%#lx", object, (unsigned long)offset);
	}
}

static void format_delay(uint32_t delay, char *buf, size_t size)
{
	if (delay == 0)
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%.2f", (double)delay / TS_DELAY_ONE);
}

static void *map(size_t bytes)
{
	void *p;

	if (bytes == 0)
		bytes = 1;
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

long ts_stats_report(int fd, const char *prefix, uint32_t top)
{
	struct thread_stats *head = __atomic_load_n(&all_threads, __ATOMIC_ACQUIRE);
	size_t nthreads = 0, nlocks = 0, nsites = 0, nsegs = 0, ninits = 0, nmerged = 0, shown;
	uint64_t dropped_locks = 0, dropped_sites = 0, dropped_inits = 0, dropped_segs = 0;
	uint64_t contended = 0;
	struct lock_rec *locks;
	struct segment *segs;
	struct init_rec *inits;
	struct site_rec *sites;
	struct merged *merged;
	struct point *points;
	uint64_t *best;
	uint32_t *first_at;
	size_t bytes;
	char *memory;

	for (struct thread_stats *t = head; t != NULL; t = t->next) {
		uint32_t n = __atomic_load_n(&t->nlocks, __ATOMIC_RELAXED);

		nthreads += n > 0; /* threads that only initialised locks do not count */
		nlocks += n;
		nsites += __atomic_load_n(&t->nsites, __ATOMIC_RELAXED);
		nsegs += __atomic_load_n(&t->nsegs, __ATOMIC_ACQUIRE);
		ninits += __atomic_load_n(&t->ninits, __ATOMIC_ACQUIRE);
	}
	nsegs += nlocks; /* the current segments */
	bytes = nlocks * (sizeof(*locks) + sizeof(*merged)) +
	        nsegs * (sizeof(*segs) + 2 * sizeof(*points) + 2 * sizeof(*best) +
	                 sizeof(*first_at)) +
	        ninits * (sizeof(*inits) + sizeof(*points) + sizeof(*best)) +
	        nsites * sizeof(*sites);
	memory = map(bytes);
	if (memory == NULL) {
		put_line(fd, prefix, "stats: no memory for the report (%zu bytes)", bytes);
		return -1;
	}
	locks = (struct lock_rec *)memory;
	merged = (struct merged *)(locks + nlocks);
	segs = (struct segment *)(merged + nlocks);
	inits = (struct init_rec *)(segs + nsegs);
	points = (struct point *)(inits + ninits);
	best = (uint64_t *)(points + 2 * nsegs + ninits);
	sites = (struct site_rec *)(best + 2 * nsegs + ninits);
	first_at = (uint32_t *)(sites + nsites);

	/* Snapshot: threads may still be recording; take no more than we counted. */
	{
		size_t l = 0, s = 0, g = 0, k = 0;

		for (struct thread_stats *t = head; t != NULL; t = t->next) {
			uint32_t closed = __atomic_load_n(&t->nsegs, __ATOMIC_ACQUIRE);

			dropped_locks += t->dropped_locks;
			dropped_sites += t->dropped_sites;
			dropped_inits += t->dropped_inits;
			dropped_segs += t->dropped_segs;
			for (uint32_t i = 0, m = __atomic_load_n(&t->ninits, __ATOMIC_ACQUIRE);
			     i < m && k < ninits; i++)
				inits[k++] = t->inits[i];
			for (uint32_t i = 0; i < closed && g < nsegs; i++)
				segs[g++] = t->segs[i];
			for (uint32_t i = 0; i < LOCK_SLOTS && l < nlocks; i++) {
				if (__atomic_load_n(&t->locks[i].lock, __ATOMIC_ACQUIRE) == NULL ||
				    t->locks[i].contended == 0)
					continue;
				locks[l] = t->locks[i];
				if (__atomic_load_n(&t->locks[i].seg.lock, __ATOMIC_ACQUIRE) != NULL &&
				    g < nsegs)
					segs[g++] = locks[l].seg;
				l++;
			}
			for (uint32_t i = 0; i < SITE_SLOTS && s < nsites; i++)
				if (__atomic_load_n(&t->sites[i].lock, __ATOMIC_ACQUIRE) != NULL)
					sites[s++] = t->sites[i];
		}
		nlocks = l;
		nsites = s;
		nsegs = g;
		ninits = k;
	}

	qsort(locks, nlocks, sizeof(*locks), by_lock_address);
	for (size_t i = 0, j; i < nlocks; i = j) {
		for (j = i; j < nlocks && locks[j].lock == locks[i].lock; j++)
			;
		merge_lock(&merged[nmerged], &locks[i], j - i);
		contended += merged[nmerged].contended;
		nmerged++;
	}

	qsort(segs, nsegs, sizeof(*segs), segment_by_lock);
	qsort(inits, ninits, sizeof(*inits), init_by_lock);
	for (size_t i = 0, j, k = 0; i < nsegs; i = j) {
		struct merged *m;
		size_t first_init;

		for (j = i; j < nsegs && segs[j].lock == segs[i].lock; j++)
			;
		while (k < ninits && (uintptr_t)inits[k].lock < (uintptr_t)segs[i].lock)
			k++;
		for (first_init = k; k < ninits && inits[k].lock == segs[i].lock; k++)
			;
		m = bsearch(segs[i].lock, merged, nmerged, sizeof(*merged), by_lock);
		if (m != NULL)
			m->total += total_of(&segs[i], j - i, &inits[first_init], k - first_init,
			                     points, best, first_at);
	}

	qsort(sites, nsites, sizeof(*sites), by_lock_then_caller);
	for (size_t i = 0, j; i < nsites; i = j) {
		uint64_t count = 0;
		struct merged *m;

		for (j = i; j < nsites && sites[j].lock == sites[i].lock &&
		            sites[j].caller == sites[i].caller; j++)
			count += sites[j].count;
		m = bsearch(sites[i].lock, merged, nmerged, sizeof(*merged), by_lock);
		if (m == NULL)
			continue;
		m->sites++;
		if (count > m->site_count) {
			m->site_count = count;
			m->site = sites[i].caller;
		}
	}

	qsort(merged, nmerged, sizeof(*merged), most_contended_first);
	shown = nmerged < top ? nmerged : top;
	put_line(fd, prefix,
	         "stats: pid %d: %zu lock%s contended, %llu contended acquisitions in %zu "
	         "thread%s; %zu shown (TICKET_STATS_TOP=%u), most contended first",
	         (int)getpid(), nmerged, nmerged == 1 ? "" : "s", (unsigned long long)contended,
	         nthreads, nthreads == 1 ? "" : "s", shown, top);
	if (dropped_locks > 0 || dropped_sites > 0 || dropped_inits > 0 || dropped_segs > 0 ||
	    unrecorded_threads > 0)
		put_line(fd, prefix,
		         "stats: not recorded (per-thread tables full: %u locks, %u call sites, %u "
		         "inits, %u segments): %llu contended acquisitions, %llu call sites, %llu "
		         "inits, %llu segments (totals may be short); %llu thread%s without a table",
		         LOCK_LIMIT, SITE_LIMIT, INIT_LIMIT, SEG_LIMIT,
		         (unsigned long long)dropped_locks, (unsigned long long)dropped_sites,
		         (unsigned long long)dropped_inits, (unsigned long long)dropped_segs,
		         (unsigned long long)unrecorded_threads, unrecorded_threads == 1 ? "" : "s");
	if (shown > 0)
		put_line(fd, prefix, "stats: %18s %10s %10s %13s %7s %15s %8s %8s %7s %7s  %s",
		         "lock", "total", "contended", "ahead avg/max", "polls", "delay now/max",
		         "yields", "parks", "threads", "borrows",
		         "top call site (its share of contended)");
	for (size_t i = 0; i < shown; i++) {
		const struct merged *m = &merged[i];
		char site[512], now[24], max[24], ahead[32], delay[56];

		describe_site(m->site, site, sizeof(site));
		format_delay(m->delay_now, now, sizeof(now));
		format_delay(m->delay_max, max, sizeof(max));
		snprintf(ahead, sizeof(ahead), "%.2f/%u", (double)m->ahead_sum / m->contended,
		         m->ahead_max);
		snprintf(delay, sizeof(delay), "%s/%s", now, max);
		put_line(fd, prefix,
		         "stats: %18p %10llu %10llu %13s %7.1f %15s %8llu %8llu %7u %7llu  %s %llu%%%s",
		         m->lock, (unsigned long long)m->total, (unsigned long long)m->contended,
		         ahead, (double)m->polls / m->contended, delay,
		         (unsigned long long)m->yields, (unsigned long long)m->parks,
		         m->threads, (unsigned long long)m->borrows,
		         site, (unsigned long long)(m->site_count * 100 / m->contended),
		         m->sites > 1 ? " (of several sites)" : "");
	}
	munmap(memory, bytes == 0 ? 1 : bytes);
	return (long)nmerged;
}

/* ---- at exit, and across fork -------------------------------------------- */

/* TICKET_STATS=FILE: "%p" in FILE becomes the pid, "%%" a percent sign. */
static void expand_name(const char *pattern, char *out, size_t size)
{
	size_t o = 0;

	for (const char *p = pattern; *p != '\0' && o + 1 < size; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			o += (size_t)snprintf(out + o, size - o, "%d", (int)getpid());
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			out[o++] = '%';
			p++;
		} else {
			out[o++] = *p;
		}
		if (o >= size)
			o = size - 1;
	}
	out[o] = '\0';
}

__attribute__((destructor)) static void stats_at_exit(void)
{
	const struct ts_config *cfg = ts_config();
	char name[4096];
	int fd = STDERR_FILENO;

	if (cfg->stats == NULL)
		return;
	if (cfg->stats[0] != '\0') {
		expand_name(cfg->stats, name, sizeof(name));
		fd = open(name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
		if (fd < 0) {
			ts_log("TICKET_STATS=%s: cannot write %s: %s; reporting on stderr",
			       cfg->stats, name, strerror(errno));
			fd = STDERR_FILENO;
		}
	}
	ts_stats_report(fd, fd == STDERR_FILENO ? "ticketspin: " : "", cfg->stats_top);
	if (fd != STDERR_FILENO)
		close(fd);
}

/* A forked child starts afresh: its copies of the parent's tables are the
 * parent's to report. */
static void forget_parent(void)
{
	__atomic_store_n(&all_threads, NULL, __ATOMIC_RELAXED);
	unrecorded_threads = 0;
	mine = NULL;
	mine_failed = false;
}

/* Not conditional on TICKET_STATS: reading the configuration here would fix
 * it before the tests that link the core set their environment. */
__attribute__((constructor)) static void stats_init(void)
{
	pthread_atfork(NULL, NULL, forget_parent);
}
