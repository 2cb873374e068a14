/*
 * stats_report.c - reading a TICKET_STATS file: folding a thread's pending
 * record, merging every thread's records per lock, and writing the report.
 *
 * Compiled into the library (for the report at a normal exit, which reads
 * the process's own file exactly as `ticketspin report` does, so the two
 * cannot disagree) and into ticketspin-stats (report, top).  Allocates with
 * mmap only: at exit, malloc's locks may be held by threads still running.
 *
 * "total" acquisitions: counted exactly, at the release.  The slow path
 * marks a lock it records (TS_UNLOCK_DUE in the word) and the mark stays
 * until pthread_spin_init(), which sets it again for a lock already seen
 * contended; every unlock of a marked lock goes out of line and counts one
 * release (ts_slot_count_release()), fast path or not.  So the total counts
 * every acquisition from the lock's first contended one on; those of a lock
 * never contended are not seen, and neither is it.
 *
 * The file may be read while the process writes it: a record being updated
 * at that moment may be read half-updated (an acquisition missed or counted
 * twice); nothing is read uninitialised, since keys are stored last.
 */
#include "stats_file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ticket_lock.h"

#define TOP_SITES 3 /* call sites kept per merged lock */
#define DELAY_ONE 256.0 /* slowpath.h's TS_DELAY_ONE: the tuned delay is fixed point */

/* The same Fibonacci hash as slowpath.c's ts_lock_hash(), for the tables. */
static uint32_t key_hash(uint64_t key)
{
	uint32_t hash = (uint32_t)(((key >> 2) * 0x9e3779b97f4a7c15ull) >> 32);

	return hash != 0 ? hash : 1;
}

/* ---- folding a pending record ------------------------------------------ */

static struct ts_lock_rec *lock_rec_of(struct ts_thread_slot *t, uint64_t lock)
{
	uint32_t i = t->last_lock & (TS_LOCK_SLOTS - 1);

	if (t->locks[i].lock == lock)
		return &t->locks[i];
	i = key_hash(lock) >> (32 - TS_LOCK_SLOTS_LOG2);
	for (uint32_t n = 0; n < TS_LOCK_SLOTS; n++, i = (i + 1) & (TS_LOCK_SLOTS - 1)) {
		struct ts_lock_rec *r = &t->locks[i];

		if (r->lock == lock) {
			t->last_lock = i;
			return r;
		}
		if (r->lock != 0)
			continue;
		if (t->nlocks >= TS_LOCK_LIMIT)
			return NULL;
		t->nlocks++;
		t->last_lock = i;
		/* RELEASE: a reader that sees the key sees the zeroed record. */
		__atomic_store_n(&r->lock, lock, __ATOMIC_RELEASE);
		return r;
	}
	return NULL;
}

static struct ts_site_rec *site_rec_of(struct ts_thread_slot *t, uint64_t lock, uint64_t caller)
{
	uint32_t i = t->last_site & (TS_SITE_SLOTS - 1);

	if (t->sites[i].lock == lock && t->sites[i].caller == caller)
		return &t->sites[i];
	i = key_hash(lock + (caller << 4)) >> (32 - TS_SITE_SLOTS_LOG2);
	for (uint32_t n = 0; n < TS_SITE_SLOTS; n++, i = (i + 1) & (TS_SITE_SLOTS - 1)) {
		struct ts_site_rec *s = &t->sites[i];

		if (s->lock == lock && s->caller == caller) {
			t->last_site = i;
			return s;
		}
		if (s->lock != 0)
			continue;
		if (t->nsites >= TS_SITE_LIMIT)
			return NULL;
		t->nsites++;
		t->last_site = i;
		s->caller = caller;
		__atomic_store_n(&s->lock, lock, __ATOMIC_RELEASE); /* as above */
		return s;
	}
	return NULL;
}

void ts_slot_count_release(struct ts_thread_slot *t, uint64_t lock)
{
	struct ts_lock_rec *r = lock_rec_of(t, lock);

	if (r != NULL)
		r->released++;
	else
		t->dropped_releases++;
}

void ts_slot_count_steal(struct ts_thread_slot *t, uint64_t lock, uint64_t caller,
                         uint32_t yields, bool released, struct ts_steal_recs *recs)
{
	struct ts_lock_rec *r = lock_rec_of(t, lock);
	struct ts_site_rec *s;

	recs->lock = NULL;
	recs->site = NULL;
	if (r == NULL) {
		t->dropped_locks++;
		t->dropped_releases += released;
		return;
	}
	r->released += released;
	r->contended++;
	r->borrows++;
	r->yields += yields;
	s = site_rec_of(t, lock, caller);
	if (s != NULL)
		s->count++;
	else
		t->dropped_sites++;
	recs->lock = r;
	recs->site = s;
}

void ts_slot_fold(struct ts_thread_slot *t)
{
	const struct ts_pending *p = &t->pending;
	uint64_t seq = __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE);
	struct ts_lock_rec *r;
	struct ts_site_rec *s;

	if (seq == t->folded || (seq & 1) != 0)
		return; /* nothing new, or being written (a reader's copy of a live slot) */
	r = lock_rec_of(t, p->lock);
	if (r == NULL) {
		t->dropped_locks++;
		goto done;
	}
	if (!p->at_once)
		r->latest = p->served;
	r->contended++;
	r->borrows += p->borrows;
	r->ahead_sum += p->ahead;
	if (p->ahead > r->ahead_max)
		r->ahead_max = p->ahead;
	r->polls += p->polls;
	r->yields += p->yields;
	r->parks += p->parks;
	r->rests += p->rests;
	r->skips += p->skips;
	r->dozes += p->dozes;
	r->line += p->line;
	r->delay_now = p->delay;
	if (p->delay > r->delay_max)
		r->delay_max = p->delay;
	/*
	 * Only the waits that waited make the wait figures: one served at its
	 * first look is no wait to time (counted in "contended" all the same).
	 * Counted as a wait of none, such acquisitions (a fifth to two thirds
	 * of them at 2 threads) put the p99 below the mean (issue 41).
	 */
	if (p->begin != 0 && !p->at_once) {
		uint64_t wait = p->served > p->begin ? p->served - p->begin : 0;

		r->timed++;
		r->wait_sum += wait;
		if (wait > r->wait_max)
			r->wait_max = wait;
		r->wait_hist[ts_hist_bucket(wait)]++;
	}
	if (p->hold != 0) {
		r->holds++;
		r->hold_sum += p->hold;
		if (p->hold > r->hold_max)
			r->hold_max = p->hold;
		r->hold_hist[ts_hist_bucket(p->hold)]++;
	}
	s = site_rec_of(t, p->lock, p->caller);
	if (s != NULL)
		s->count++;
	else
		t->dropped_sites++;
done:
	__atomic_store_n(&t->folded, seq, __ATOMIC_RELEASE);
}

/* ---- memory: mmap only ---------------------------------------------------- */

struct vec {
	char *data;
	size_t len, cap; /* in elements */
	size_t elem;
};

static void *vec_push(struct vec *v)
{
	if (v->len == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 4096 / v->elem + 1;
		void *p = v->data == NULL
		                  ? mmap(NULL, cap * v->elem, PROT_READ | PROT_WRITE,
		                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
		                  : mremap(v->data, v->cap * v->elem, cap * v->elem, MREMAP_MAYMOVE);

		if (p == MAP_FAILED)
			return NULL;
		v->data = p;
		v->cap = cap;
	}
	return v->data + v->elem * v->len++;
}

static void vec_free(struct vec *v)
{
	if (v->data != NULL)
		munmap(v->data, v->cap * v->elem);
	v->data = NULL;
	v->len = v->cap = 0;
}

/* ---- merging ---------------------------------------------------------------- */

struct ts_merged_lock {
	uint64_t lock, total, contended, ahead_sum, polls, yields, parks, rests, skips, dozes;
	uint64_t line, borrows;
	uint64_t latest; /* of the latest record, whose delay is "now" */
	uint32_t delay_now, delay_max, ahead_max, threads;
	uint64_t timed, wait_sum, wait_max, holds, hold_sum, hold_max;
	uint64_t wait_hist[TS_HIST_BUCKETS], hold_hist[TS_HIST_BUCKETS];
	uint64_t site[TOP_SITES], site_count[TOP_SITES];
	uint32_t sites; /* distinct call sites */
};

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int lock_rec_by_lock(const void *a, const void *b)
{
	return cmp_u64(((const struct ts_lock_rec *)a)->lock, ((const struct ts_lock_rec *)b)->lock);
}

static int site_by_lock_then_caller(const void *a, const void *b)
{
	const struct ts_site_rec *x = a, *y = b;

	return x->lock != y->lock ? cmp_u64(x->lock, y->lock) : cmp_u64(x->caller, y->caller);
}

static int merged_by_lock(const void *key, const void *elem)
{
	return cmp_u64(*(const uint64_t *)key, ((const struct ts_merged_lock *)elem)->lock);
}

static void add_hist(uint64_t *to, const uint64_t *from)
{
	for (unsigned b = 0; b < TS_HIST_BUCKETS; b++)
		to[b] += from[b];
}

/* Merges one lock's per-thread records (sorted, @n of them). */
static void merge_lock(struct ts_merged_lock *m, const struct ts_lock_rec *r, size_t n)
{
	memset(m, 0, sizeof(*m));
	m->lock = r[0].lock;
	for (size_t i = 0; i < n; i++) {
		m->borrows += r[i].borrows;
		m->total += r[i].released;
		m->contended += r[i].contended;
		m->ahead_sum += r[i].ahead_sum;
		m->polls += r[i].polls;
		m->yields += r[i].yields;
		m->parks += r[i].parks;
		m->rests += r[i].rests;
		m->skips += r[i].skips;
		m->dozes += r[i].dozes;
		m->line += r[i].line;
		if (r[i].ahead_max > m->ahead_max)
			m->ahead_max = r[i].ahead_max;
		if (r[i].delay_max > m->delay_max)
			m->delay_max = r[i].delay_max;
		if (i == 0 || r[i].latest >= m->latest) {
			m->latest = r[i].latest;
			m->delay_now = r[i].delay_now;
		}
		m->timed += r[i].timed;
		m->wait_sum += r[i].wait_sum;
		if (r[i].wait_max > m->wait_max)
			m->wait_max = r[i].wait_max;
		m->holds += r[i].holds;
		m->hold_sum += r[i].hold_sum;
		if (r[i].hold_max > m->hold_max)
			m->hold_max = r[i].hold_max;
		add_hist(m->wait_hist, r[i].wait_hist);
		add_hist(m->hold_hist, r[i].hold_hist);
		m->threads += r[i].contended > 0; /* not those that only released it */
	}
}

static bool read_at(int fd, void *buf, size_t len, uint64_t offset)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = pread(fd, p, len, (off_t)offset);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
		offset += (uint64_t)n;
	}
	return true;
}

double ts_ticks_per_ns(const struct ts_file_header *h)
{
	struct timespec ts;
	uint64_t ns, ticks;

	if (h->clock != TS_CLOCK_TSC)
		return 1.0;
	if (h->exit_ns > h->ns0 + 1000000) { /* the process's own pair, at its exit */
		ns = h->exit_ns;
		ticks = h->exit_clock;
	} else {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ticks = __builtin_ia32_rdtsc();
		ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	}
	if (ns <= h->ns0 || ticks <= h->tsc0)
		return 1.0;
	return (double)(ticks - h->tsc0) / (double)(ns - h->ns0);
}

int ts_report_read(int fd, struct ts_file_header *h, struct ts_report *report)
{
	struct vec locks = { .elem = sizeof(struct ts_lock_rec) };
	struct vec sites = { .elem = sizeof(struct ts_site_rec) };
	struct vec merged = { .elem = sizeof(struct ts_merged_lock) };
	struct ts_thread_slot *slot;
	struct stat st;
	uint32_t backed, nslots;
	int err = ENOMEM;

	memset(report, 0, sizeof(*report));
	if (!read_at(fd, h, sizeof(*h), 0) || h->magic != TS_FILE_MAGIC ||
	    h->version != TS_FILE_VERSION || h->header_size != sizeof(*h) ||
	    h->slot_size != sizeof(struct ts_thread_slot) || fstat(fd, &st) != 0) {
		errno = EINVAL;
		return -1;
	}
	h->command[sizeof(h->command) - 1] = '\0';
	h->exe[sizeof(h->exe) - 1] = '\0';
	if (h->nmodules > TS_MODULE_LIMIT)
		h->nmodules = TS_MODULE_LIMIT;
	for (uint32_t i = 0; i < h->nmodules; i++)
		h->modules[i].path[sizeof(h->modules[i].path) - 1] = '\0';
	backed = (uint64_t)st.st_size <= sizeof(*h)
	                 ? 0
	                 : (uint32_t)(((uint64_t)st.st_size - sizeof(*h)) / sizeof(*slot));
	nslots = h->threads < backed ? h->threads : backed;
	if (nslots > TS_MAX_THREADS)
		nslots = TS_MAX_THREADS; /* (a damaged count, a huge sparse file) */
	report->unrecorded_threads = h->unrecorded_threads;
	if (h->threads > backed)
		report->unrecorded_threads += h->threads - backed; /* claiming, or failed to grow */

	slot = mmap(NULL, sizeof(*slot), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (slot == MAP_FAILED)
		return -1;
	for (uint32_t i = 0; i < nslots; i++) {
		uint64_t at = ts_slot_offset(i);

		if (!read_at(fd, &slot->claimed, sizeof(slot->claimed), at) || slot->claimed != 1 ||
		    !read_at(fd, slot, sizeof(*slot), at) || slot->claimed != 1)
			continue;
		if (slot->nlocks > TS_LOCK_LIMIT)
			slot->nlocks = TS_LOCK_LIMIT; /* (a damaged file must not make us run away) */
		if (slot->nsites > TS_SITE_LIMIT)
			slot->nsites = TS_SITE_LIMIT;
		ts_slot_fold(slot); /* the latest acquisition, if the thread had no next */

		report->dropped_locks += slot->dropped_locks;
		report->dropped_sites += slot->dropped_sites;
		report->dropped_releases += slot->dropped_releases;
		for (uint32_t k = 0; k < TS_LOCK_SLOTS; k++) {
			struct ts_lock_rec *x;

			if (slot->locks[k].lock == 0)
				continue;
			if ((x = vec_push(&locks)) == NULL)
				goto fail;
			*x = slot->locks[k];
		}
		/* threads that only initialised or released do not count */
		for (uint32_t k = 0; k < TS_LOCK_SLOTS; k++) {
			if (slot->locks[k].lock != 0 && slot->locks[k].contended != 0) {
				report->threads++;
				break;
			}
		}
		for (uint32_t k = 0; k < TS_SITE_SLOTS; k++) {
			struct ts_site_rec *x;

			if (slot->sites[k].lock == 0)
				continue;
			if ((x = vec_push(&sites)) == NULL)
				goto fail;
			*x = slot->sites[k];
		}
	}
	munmap(slot, sizeof(*slot));
	slot = NULL;

	if (locks.len > 0) /* qsort's array may not be NULL, even when empty */
		qsort(locks.data, locks.len, locks.elem, lock_rec_by_lock);
	for (size_t i = 0, j; i < locks.len; i = j) {
		struct ts_lock_rec *r = (struct ts_lock_rec *)locks.data;
		struct ts_merged_lock *m;

		for (j = i; j < locks.len && r[j].lock == r[i].lock; j++)
			;
		if ((m = vec_push(&merged)) == NULL)
			goto fail;
		merge_lock(m, &r[i], j - i);
		if (m->contended == 0) { /* released, never contended (a shared hash at init) */
			merged.len--;
			continue;
		}
		/*
		 * A contended acquisition not yet released (the report is read
		 * while the process runs, or its holder never unlocked) is one
		 * more than the releases say.
		 */
		if (m->total < m->contended)
			m->total = m->contended;
		report->contended += m->contended;
	}
	vec_free(&locks);

	if (sites.len > 0)
		qsort(sites.data, sites.len, sites.elem, site_by_lock_then_caller);
	for (size_t i = 0, j; i < sites.len; i = j) {
		struct ts_site_rec *s = (struct ts_site_rec *)sites.data;
		uint64_t count = 0;
		struct ts_merged_lock *m;

		for (j = i; j < sites.len && s[j].lock == s[i].lock && s[j].caller == s[i].caller; j++)
			count += s[j].count;
		m = bsearch(&s[i].lock, merged.data, merged.len, merged.elem, merged_by_lock);
		if (m == NULL)
			continue;
		m->sites++;
		/* keep the TOP_SITES largest, largest first */
		for (int t = 0; t < TOP_SITES; t++) {
			if (count > m->site_count[t]) {
				for (int u = TOP_SITES - 1; u > t; u--) {
					m->site_count[u] = m->site_count[u - 1];
					m->site[u] = m->site[u - 1];
				}
				m->site_count[t] = count;
				m->site[t] = s[i].caller;
				break;
			}
		}
	}
	vec_free(&sites);

	report->nlocks = (uint32_t)merged.len;
	report->locks = (struct ts_merged_lock *)merged.data;
	report->memory = merged.data;
	report->bytes = merged.cap * merged.elem;
	return 0;
fail:
	if (slot != NULL)
		munmap(slot, sizeof(*slot));
	vec_free(&locks);
	vec_free(&sites);
	vec_free(&merged);
	errno = err;
	return -1;
}

void ts_report_free(struct ts_report *report)
{
	if (report->memory != NULL)
		munmap(report->memory, report->bytes);
	memset(report, 0, sizeof(*report));
}

/* ---- writing ----------------------------------------------------------- */

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
	char line[2048];
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

/* The time below which @q of the values in @hist fall, in clock units (an
 * upper bound: the top of the bucket, but never above @max). */
static uint64_t quantile(const uint64_t *hist, double q, uint64_t max)
{
	uint64_t n = 0, seen = 0;

	for (unsigned b = 0; b < TS_HIST_BUCKETS; b++)
		n += hist[b];
	if (n == 0)
		return 0;
	for (unsigned b = 0; b < TS_HIST_BUCKETS; b++) {
		seen += hist[b];
		if ((double)seen >= q * (double)n) {
			uint64_t upper = ts_hist_upper(b);
			return upper < max ? upper : max;
		}
	}
	return max;
}

static int by_contended(const void *a, const void *b, void *arg)
{
	const struct ts_merged_lock *x = *(struct ts_merged_lock *const *)a;
	const struct ts_merged_lock *y = *(struct ts_merged_lock *const *)b;
	const struct ts_report *previous = arg;
	uint64_t cx = x->contended, cy = y->contended;

	if (previous != NULL) {
		const struct ts_merged_lock *px = bsearch(&x->lock, previous->locks, previous->nlocks,
		                                          sizeof(*px), merged_by_lock);
		const struct ts_merged_lock *py = bsearch(&y->lock, previous->locks, previous->nlocks,
		                                          sizeof(*py), merged_by_lock);
		cx -= px != NULL && px->contended <= cx ? px->contended : 0;
		cy -= py != NULL && py->contended <= cy ? py->contended : 0;
	}
	if (cx != cy)
		return cx > cy ? -1 : 1;
	if (x->contended != y->contended)
		return x->contended > y->contended ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return cmp_u64(x->lock, y->lock);
}

static void format_delay(uint32_t delay, char *buf, size_t size)
{
	if (delay == 0)
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%.2f", (double)delay / DELAY_ONE);
}

long ts_report_write(int out, const struct ts_file_header *h, const struct ts_report *report,
                     const struct ts_report_options *o)
{
	const char *prefix = o->prefix != NULL ? o->prefix : "";
	double us = o->ticks_per_ns > 0 ? o->ticks_per_ns * 1000.0 : 1000.0; /* units per us */
	uint32_t shown = report->nlocks < o->top ? report->nlocks : o->top;
	struct ts_merged_lock **order = NULL;
	size_t order_bytes = (report->nlocks + 1) * sizeof(*order);

	if (report->nlocks > 0) {
		order = mmap(NULL, order_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		             -1, 0);
		if (order == MAP_FAILED) {
			put_line(out, prefix, "stats: no memory for the report");
			return -1;
		}
		for (uint32_t i = 0; i < report->nlocks; i++)
			order[i] = &report->locks[i];
		qsort_r(order, report->nlocks, sizeof(*order), by_contended, (void *)o->previous);
	}
	if (o->header)
		put_line(out, prefix,
		         "stats: pid %d: %u lock%s contended, %llu contended acquisitions in %u "
		         "thread%s; %u shown (TICKET_STATS_TOP=%u), most contended first",
		         h->pid, report->nlocks, report->nlocks == 1 ? "" : "s",
		         (unsigned long long)report->contended, report->threads,
		         report->threads == 1 ? "" : "s", shown, o->top);
	if (report->dropped_locks > 0 || report->dropped_sites > 0 ||
	    report->dropped_releases > 0 || report->unrecorded_threads > 0)
		put_line(out, prefix,
		         "stats: not recorded (per-thread tables full: %u locks, %u call sites): "
		         "%llu contended acquisitions, %llu call sites, %llu releases (totals may "
		         "be short); %u thread%s without a table",
		         TS_LOCK_LIMIT, TS_SITE_LIMIT, (unsigned long long)report->dropped_locks,
		         (unsigned long long)report->dropped_sites,
		         (unsigned long long)report->dropped_releases, report->unrecorded_threads,
		         report->unrecorded_threads == 1 ? "" : "s");
	if (shown > 0) {
		put_line(out, prefix, "stats: %18s %10s %10s  %-58s  %-36s", "", "", "",
		         "wait (of those that waited): total ms; n; mean, p99, p99.9, max us",
		         "hold (sampled): mean, p99, max us; n");
		put_line(out, prefix,
		         "stats: %18s %10s %10s %9s %10s %9s %9s %9s %9s %9s %9s %9s %7s %13s %7s %15s "
		         "%8s %8s %8s %8s %8s %8s %7s %7s%s  %s",
		         "lock", "total", "contended", "total", "waited", "mean", "p99", "p99.9",
		         "max", "mean", "p99", "max", "n", "ahead avg/max", "polls", "delay now/max",
		         "yields", "parks",
		         "rests", "skips", "dozed", "line", "threads", "steals",
		         o->previous != NULL ? "     /s" : "",
		         "top call sites (share of contended)");
	}
	for (uint32_t i = 0; i < shown; i++) {
		const struct ts_merged_lock *m = order[i];
		char sites[1024] = "", now[24], max[24], ahead[32], delay[56], hold[4][24], rate[24] = "";
		size_t used = 0;
		double wait_mean = m->timed ? (double)m->wait_sum / (double)m->timed / us : 0;

		for (int s = 0; s < TOP_SITES && m->site_count[s] > 0; s++) {
			char name[512];

			o->describe(m->site[s], name, sizeof(name), o->describe_arg);
			/* (a damaged file's counts may sum to 0: no division by it) */
			used += (size_t)snprintf(sites + used, sizeof(sites) - used, "%s%s %llu%%",
			                         s > 0 ? ", " : "", name,
			                         m->contended != 0 ? (unsigned long long)(m->site_count[s] *
			                                                                  100 / m->contended)
			                                           : 0ull);
			if (used >= sizeof(sites))
				break;
		}
		if (m->sites > TOP_SITES && used < sizeof(sites))
			snprintf(sites + used, sizeof(sites) - used, " (of %u sites)", m->sites);
		format_delay(m->delay_now, now, sizeof(now));
		format_delay(m->delay_max, max, sizeof(max));
		snprintf(ahead, sizeof(ahead), "%.2f/%u", (double)m->ahead_sum / (double)m->contended,
		         m->ahead_max);
		snprintf(delay, sizeof(delay), "%s/%s", now, max);
		if (m->holds > 0) {
			snprintf(hold[0], sizeof(hold[0]), "%.3f", (double)m->hold_sum / m->holds / us);
			snprintf(hold[1], sizeof(hold[1]), "%.3f",
			         (double)quantile(m->hold_hist, 0.99, m->hold_max) / us);
			snprintf(hold[2], sizeof(hold[2]), "%.3f", (double)m->hold_max / us);
		} else {
			strcpy(hold[0], "-");
			strcpy(hold[1], "-");
			strcpy(hold[2], "-");
		}
		snprintf(hold[3], sizeof(hold[3]), "%llu", (unsigned long long)m->holds);
		if (o->previous != NULL) {
			const struct ts_merged_lock *p = bsearch(&m->lock, o->previous->locks,
			                                         o->previous->nlocks, sizeof(*p),
			                                         merged_by_lock);
			uint64_t before = p != NULL && p->contended <= m->contended ? p->contended : 0;

			snprintf(rate, sizeof(rate), " %6.0f",
			         o->interval_s > 0 ? (double)(m->contended - before) / o->interval_s : 0);
		}
		put_line(out, prefix,
		         "stats: %#18llx %10llu %10llu %9.3f %10llu %9.3f %9.3f %9.3f %9.3f %9s %9s "
		         "%9s %7s %13s %7.1f %15s %8llu %8llu %8llu %8llu %8llu %8llu %7u %7llu%s  %s",
		         (unsigned long long)m->lock, (unsigned long long)m->total,
		         (unsigned long long)m->contended, (double)m->wait_sum / us / 1000.0,
		         (unsigned long long)m->timed, wait_mean,
		         (double)quantile(m->wait_hist, 0.99, m->wait_max) / us,
		         (double)quantile(m->wait_hist, 0.999, m->wait_max) / us,
		         (double)m->wait_max / us, hold[0], hold[1], hold[2], hold[3], ahead,
		         (double)m->polls / (double)m->contended, delay,
		         (unsigned long long)m->yields, (unsigned long long)m->parks,
		         (unsigned long long)m->rests, (unsigned long long)m->skips,
		         (unsigned long long)m->dozes,
		         (unsigned long long)m->line, m->threads,
		         (unsigned long long)m->borrows, rate, sites[0] != '\0' ? sites : "-");
	}
	if (order != NULL)
		munmap(order, order_bytes);
	return (long)report->nlocks;
}

/* ---- reading a row back --------------------------------------------------- */

bool ts_report_parse_row(const char *line, bool has_rate, struct ts_report_row *r)
{
	char ahead[64], delay[64], *slash;
	const char *p;
	size_t len;
	int used = 0;

	memset(r, 0, sizeof(*r));
	if (strncmp(line, "stats: ", 7) != 0)
		return false;
	p = line + 7 + strspn(line + 7, " ");
	if (strncmp(p, "0x", 2) != 0)
		return false; /* a header line: a lock's row starts with its address */
	/* The columns in ts_report_write()'s order. */
	if (sscanf(p,
	           "%llx %llu %llu %lf %llu %lf %lf %lf %lf %23s %23s %23s %llu %63s %lf %63s %llu "
	           "%llu %llu %llu %llu %llu %u %llu%n",
	           &r->lock, &r->total, &r->contended, &r->wait_total_ms, &r->waited,
	           &r->wait_mean, &r->wait_p99, &r->wait_p999, &r->wait_max, r->hold_mean,
	           r->hold_p99, r->hold_max, &r->holds, ahead, &r->polls, delay, &r->yields,
	           &r->parks, &r->rests, &r->skips, &r->dozes, &r->line, &r->threads, &r->borrows,
	           &used) != 24 || used == 0)
		return false;
	p += used;
	if (has_rate) {
		used = 0;
		if (sscanf(p, "%lf%n", &r->rate, &used) != 1 || used == 0)
			return false;
		r->has_rate = true;
		p += used;
	}
	if (sscanf(ahead, "%lf/%u", &r->ahead_avg, &r->ahead_max) != 2)
		return false;
	if ((slash = strchr(delay, '/')) == NULL)
		return false;
	*slash = '\0';
	snprintf(r->delay_now, sizeof(r->delay_now), "%.23s", delay);
	snprintf(r->delay_max, sizeof(r->delay_max), "%.23s", slash + 1);
	p += strspn(p, " ");
	len = strcspn(p, "\n");
	if (len == 0 || len >= sizeof(r->sites))
		return false;
	memcpy(r->sites, p, len);
	r->sites[len] = '\0';
	return true;
}
