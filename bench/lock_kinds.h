/*
 * lock_kinds.h - the locks the benchmarks compare, behind one interface.
 *
 *   spin            pthread_spin_*: glibc's without a preload, ticketspin's
 *                   with libticketspin.so LD_PRELOADed (called through the
 *                   PLT, as any program calls them)
 *   spin-pshared    the same, initialised PTHREAD_PROCESS_SHARED (used by
 *                   the threads of one process, in its private memory)
 *   mutex           pthread_mutex_* with the default attributes
 *   mutex-adaptive  pthread_mutex_* of type PTHREAD_MUTEX_ADAPTIVE_NP
 *   ck-ticket       Concurrency Kit's ck_spinlock_ticket (inline)
 *   ck-ticket-pb    ck_spinlock_ticket_lock_pb, shift 0 (as CK's own
 *                   regression benchmark): proportional backoff
 *   ck-mcs          ck_spinlock_mcs: a queue lock, one node per thread
 *   ck-fas          ck_spinlock_fas: fetch-and-store test-and-set, not FIFO
 *
 * Contract: lock_acquire()/lock_release() are always_inline and take the kind
 * as an argument, so that a caller which dispatches on a constant kind (see
 * LOCK_DISPATCH) gets a loop of its own per kind, with CK's locks inlined as
 * a program using them would have them; the pthread ones stay calls.
 * Without Concurrency Kit's headers (Debian libck-dev) the ck-* kinds exist
 * but lock_kind_available() says no.
 */
#ifndef TICKETSPIN_BENCH_LOCK_KINDS_H
#define TICKETSPIN_BENCH_LOCK_KINDS_H

#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#ifdef HAVE_CK_SPINLOCK_H
#include <ck_spinlock.h>
#define BENCH_HAVE_CK 1
#else
#define BENCH_HAVE_CK 0
#endif

enum lock_kind {
	LOCK_SPIN,
	LOCK_SPIN_PSHARED,
	LOCK_MUTEX,
	LOCK_MUTEX_ADAPTIVE,
	LOCK_CK_TICKET,
	LOCK_CK_TICKET_PB,
	LOCK_CK_MCS,
	LOCK_CK_FAS,
	LOCK_KINDS
};

static const char *const lock_kind_names[LOCK_KINDS] = {
	"spin", "spin-pshared", "mutex", "mutex-adaptive", "ck-ticket", "ck-ticket-pb", "ck-mcs", "ck-fas",
};

/* The lock itself; pthread_mutex_t (40 bytes) is the largest. */
union lock_storage {
	pthread_spinlock_t spin;
	pthread_mutex_t mutex;
#if BENCH_HAVE_CK
	ck_spinlock_ticket_t ticket;
	ck_spinlock_mcs_t mcs; /* the queue's tail */
	ck_spinlock_fas_t fas;
#endif
};

/* What a thread brings to each acquisition: its MCS queue node. */
struct lock_node {
#if BENCH_HAVE_CK
	ck_spinlock_mcs_context_t mcs;
#else
	char unused;
#endif
};

static inline bool lock_kind_available(enum lock_kind kind)
{
	return kind < LOCK_CK_TICKET || BENCH_HAVE_CK;
}

/* The kind called NAME, or LOCK_KINDS. */
static inline enum lock_kind lock_kind_by_name(const char *name)
{
	for (int k = 0; k < LOCK_KINDS; k++)
		if (strcmp(name, lock_kind_names[k]) == 0)
			return (enum lock_kind)k;
	return LOCK_KINDS;
}

static inline void lock_init(enum lock_kind kind, union lock_storage *l)
{
	memset(l, 0, sizeof(*l));
	switch (kind) {
	case LOCK_SPIN:
		pthread_spin_init(&l->spin, PTHREAD_PROCESS_PRIVATE);
		break;
	case LOCK_SPIN_PSHARED:
		pthread_spin_init(&l->spin, PTHREAD_PROCESS_SHARED);
		break;
	case LOCK_MUTEX:
		pthread_mutex_init(&l->mutex, NULL);
		break;
	case LOCK_MUTEX_ADAPTIVE: {
		pthread_mutexattr_t attr;

		pthread_mutexattr_init(&attr);
		pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
		pthread_mutex_init(&l->mutex, &attr);
		pthread_mutexattr_destroy(&attr);
		break;
	}
#if BENCH_HAVE_CK
	case LOCK_CK_TICKET:
	case LOCK_CK_TICKET_PB:
		ck_spinlock_ticket_init(&l->ticket);
		break;
	case LOCK_CK_MCS:
		ck_spinlock_mcs_init(&l->mcs);
		break;
	case LOCK_CK_FAS:
		ck_spinlock_fas_init(&l->fas);
		break;
#endif
	default:
		break;
	}
}

static inline __attribute__((always_inline)) void
lock_acquire(enum lock_kind kind, union lock_storage *l, struct lock_node *n)
{
	(void)n;
	switch (kind) {
	case LOCK_SPIN:
	case LOCK_SPIN_PSHARED:
		pthread_spin_lock(&l->spin);
		break;
	case LOCK_MUTEX:
	case LOCK_MUTEX_ADAPTIVE:
		pthread_mutex_lock(&l->mutex);
		break;
#if BENCH_HAVE_CK
	case LOCK_CK_TICKET:
		ck_spinlock_ticket_lock(&l->ticket);
		break;
	case LOCK_CK_TICKET_PB:
		ck_spinlock_ticket_lock_pb(&l->ticket, 0);
		break;
	case LOCK_CK_MCS:
		ck_spinlock_mcs_lock(&l->mcs, &n->mcs);
		break;
	case LOCK_CK_FAS:
		ck_spinlock_fas_lock(&l->fas);
		break;
#endif
	default:
		break;
	}
}

static inline __attribute__((always_inline)) void
lock_release(enum lock_kind kind, union lock_storage *l, struct lock_node *n)
{
	(void)n;
	switch (kind) {
	case LOCK_SPIN:
	case LOCK_SPIN_PSHARED:
		pthread_spin_unlock(&l->spin);
		break;
	case LOCK_MUTEX:
	case LOCK_MUTEX_ADAPTIVE:
		pthread_mutex_unlock(&l->mutex);
		break;
#if BENCH_HAVE_CK
	case LOCK_CK_TICKET:
	case LOCK_CK_TICKET_PB:
		ck_spinlock_ticket_unlock(&l->ticket);
		break;
	case LOCK_CK_MCS:
		ck_spinlock_mcs_unlock(&l->mcs, &n->mcs);
		break;
	case LOCK_CK_FAS:
		ck_spinlock_fas_unlock(&l->fas);
		break;
#endif
	default:
		break;
	}
}

/*
 * The object whose code runs for this kind: the file that provides
 * pthread_spin_lock or pthread_mutex_lock at run time (libc.so.6, or
 * libticketspin.so when preloaded), "inline" for Concurrency Kit's.
 */
static inline const char *lock_provider(enum lock_kind kind)
{
	const char *symbol = kind == LOCK_SPIN || kind == LOCK_SPIN_PSHARED ? "pthread_spin_lock"
	                                                                    : "pthread_mutex_lock";
	void *address;
	Dl_info info;

	if (kind >= LOCK_CK_TICKET)
		return "inline";
	address = dlsym(RTLD_DEFAULT, symbol);
	if (address == NULL || !dladdr(address, &info) || info.dli_fname == NULL)
		return "unknown";
	return info.dli_fname;
}

/*
 * Calls FN(LOCK_x, ...) for the kind in KIND, each with a constant kind, so
 * that FN, if always_inline, is compiled once per kind.  Evaluates to FN's
 * value; KIND must be a valid kind.
 */
#define LOCK_DISPATCH(kind, fn, ...)                                                  \
	((kind) == LOCK_SPIN             ? fn(LOCK_SPIN, __VA_ARGS__)                 \
	 : (kind) == LOCK_SPIN_PSHARED   ? fn(LOCK_SPIN_PSHARED, __VA_ARGS__)         \
	 : (kind) == LOCK_MUTEX          ? fn(LOCK_MUTEX, __VA_ARGS__)                \
	 : (kind) == LOCK_MUTEX_ADAPTIVE ? fn(LOCK_MUTEX_ADAPTIVE, __VA_ARGS__)       \
	 : (kind) == LOCK_CK_TICKET      ? fn(LOCK_CK_TICKET, __VA_ARGS__)            \
	 : (kind) == LOCK_CK_TICKET_PB   ? fn(LOCK_CK_TICKET_PB, __VA_ARGS__)         \
	 : (kind) == LOCK_CK_MCS         ? fn(LOCK_CK_MCS, __VA_ARGS__)               \
	                                 : fn(LOCK_CK_FAS, __VA_ARGS__))

#endif
