/*
 * stats.c - TICKET_STATS inside the process: the shared statistics file
 * (stats_file.h), what the slow path records into it, and the report at a
 * normal exit.  Formatting is stats_report.c's, shared with ticketspin-stats.
 *
 * What it costs, and where.  The fast paths record nothing (ticket_lock.h).
 * What a contended acquisition costs is placed where it delays the least:
 *  - on the way to the lock, one clock read when the wait begins, but none
 *    when the first look already finds our turn (at 2 threads, a fifth of
 *    the contended acquisitions with no work between them, two thirds with
 *    100 iterations): that look comes during the hand-over, and a clock read
 *    before it cost 2 threads a tenth of their throughput;
 *  - while the lock is held, one clock read and a dozen plain stores into
 *    the thread's own pending record (ts_stats_record), where the hold
 *    sample starts; a steal, three thread-local stores (ts_stats_steal);
 *  - after the release, the rest: the hold sample (one clock read) and
 *    folding the record into the per-lock aggregates (hash lookups,
 *    histograms).  The slow path sets TS_UNLOCK_DUE in the lock word, which
 *    sends the unlock out of line to ts_stats_after_unlock(): the
 *    uncontended unlock tests nothing more.
 * The totals are exact from a lock's first contended acquisition: TS_UNLOCK_DUE
 * stays in the word (no unlock clears it; pthread_spin_init() sets it again
 * for a lock seen contended), so every later unlock of the lock, fast path
 * or not, comes out of line and counts a release in the thread's own record
 * of the lock (one hash lookup, usually the first slot probed), after the
 * release.  With TICKET_STATS unset nothing sets the bit: the fast paths are
 * the same instructions either way.
 * No shared atomics: each thread claims a slot of the file once (one
 * fetch-add) and writes only there.  `make bench` measures the result.
 *
 * The clock is the TSC (rdtsc), when CPUID says it is invariant, else
 * CLOCK_MONOTONIC.  Measured here (Xeon under KVM, clocksource tsc):
 * rdtsc 12 ns, clock_gettime(CLOCK_MONOTONIC) through the vDSO 26 ns,
 * rdtscp 20 ns (loops of 20 M reads).  The TSC is not serialising, so a
 * reading may move a few instructions earlier or later, which is far below
 * what is measured.  Ticks are converted by readers from a (TSC,
 * CLOCK_MONOTONIC) pair taken when the file is made and one taken when the
 * report is made.
 *
 * Wait time: from the slow path's first look at the lock (one backoff after
 * the ticket is drawn, see wait_in_line()) to the acquisition, every
 * contended acquisition with a start time; one served at that first look
 * has none, and the report leaves it out of the wait figures (stats_report.c).
 *
 * Hold time: from the clock read as a contended acquisition became ours
 * (ts_stats_record) to the one just after its release
 * (ts_stats_after_unlock); acquisitions on the fast path have none.
 *
 * Security.  The file is created with O_CREAT | O_EXCL | O_NOFOLLOW, mode
 * 0600: never truncating or following a link to an existing file, never
 * readable by another user; an existing name (a stale file of a reused pid,
 * or the image before an exec) gets the next free suffix.  It goes in
 * $XDG_RUNTIME_DIR only when that is an absolute directory owned by us and
 * writable by no one else, else in /dev/shm.  Later opens (to grow the file,
 * and to read it for the report) use O_NOFOLLOW and check that the inode is
 * still the one created.  The TICKET_STATS=FILE report file is checked at
 * start-up (so that a path that cannot be used is known before anything is
 * recorded: one stderr line, and the program runs on without statistics) and
 * created the same way at a normal exit (not before: an image that execs
 * must leave the name to the next); a file already there is appended to
 * only when it is a regular file of ours holding our reports (another image
 * of the same run wrote it), never otherwise.  In an AT_SECURE process
 * options.c ignores TICKET_STATS altogether.
 */
#include "stats.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "maps.h"
#include "options.h"
#include "parking.h"
#include "slowpath.h"
#include "stats_file.h"
#include "ticket_lock.h"


enum { FILE_NONE, FILE_CREATING, FILE_READY, FILE_FAILED };

static int file_state = FILE_NONE;
static struct ts_file_header *header;  /* mapped while FILE_READY */
static char file_path[PATH_MAX];
static dev_t file_dev;
static ino_t file_ino;
static uint64_t file_size;             /* under grow_lock */
static pthread_mutex_t grow_lock = PTHREAD_MUTEX_INITIALIZER;
static bool use_tsc;

/* TICKET_STATS=FILE: where the report goes at exit. */
static char report_path[PATH_MAX];
static bool report_to_file;    /* else stderr */
static bool report_nowhere;    /* a forked child without %p in FILE: keep the shared file */
static bool any_recorded;      /* a contended acquisition was folded (stats_at_exit) */

/*
 * initial-exec: read inside the critical section, where a __tls_get_addr
 * call would cost; the library is preloaded or linked in, so its TLS is
 * static (dlopen() of it is not supported anyway: it must interpose).
 */
#define TLS_IE __attribute__((tls_model("initial-exec")))
static __thread struct ts_thread_slot *mine TLS_IE;
static __thread bool mine_failed TLS_IE;

/*
 * Hashes of the locks recorded contended (a bit each, set once, never
 * cleared): read-mostly, so the check in ts_stats_record() costs a load of
 * a line all CPUs share.  A collision only marks a lock at its init that
 * was never contended: its releases are counted, and it is not reported.
 */
#define CONTENDED_BITS 14
static uint64_t contended_hashes[(1u << CONTENDED_BITS) / 64];

static bool seen_contended(uint32_t hash)
{
	uint32_t bit = hash >> (32 - CONTENDED_BITS);

	return __atomic_load_n(&contended_hashes[bit / 64], __ATOMIC_RELAXED) >> (bit % 64) & 1;
}

static void note_contended(uint32_t hash)
{
	uint32_t bit = hash >> (32 - CONTENDED_BITS);

	if (!seen_contended(hash))
		__atomic_fetch_or(&contended_hashes[bit / 64], 1ull << (bit % 64), __ATOMIC_RELAXED);
}

static inline uint64_t stats_clock(void)
{
	struct timespec ts;

	if (__builtin_expect(use_tsc, 1))
		return __builtin_ia32_rdtsc();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPUID 0x80000007 EDX bit 8: the TSC runs at a constant rate in every state. */
static bool tsc_is_invariant(void)
{
	unsigned a, b, c, d;

	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0));
	if (a < 0x80000007u)
		return false;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0));
	return (d >> 8) & 1;
}

/* ---- creating the file ------------------------------------------------------ */

static size_t read_small_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	size_t used = 0;

	if (fd < 0)
		return 0;
	while (used + 1 < size && (n = read(fd, buf + used, size - 1 - used)) > 0)
		used += (size_t)n;
	close(fd);
	buf[used] = '\0';
	return used;
}

/* /proc/self/stat field 22, the start time in clock ticks after boot. */
static uint64_t process_start_time(void)
{
	char buf[1024];
	char *p;

	if (read_small_file("/proc/self/stat", buf, sizeof(buf)) == 0 ||
	    (p = strrchr(buf, ')')) == NULL)
		return 0;
	/* after ") ": field 3 (state) ... field 22 */
	for (int field = 2; field < 22 && p != NULL; field++)
		p = strchr(p + 1, ' ');
	return p != NULL ? strtoull(p + 1, NULL, 10) : 0;
}

static void note_module(const struct ts_mapping *map, void *arg)
{
	struct ts_file_header *h = arg;
	ElfW(Ehdr) eh;
	struct iovec local = { &eh, sizeof(eh) }, remote = { (void *)(uintptr_t)map->base, sizeof(eh) };
	uint64_t base;

	/*
	 * The ELF header at the object's base tells a loaded object from a data
	 * file mapped whole; read without a fault should the mapping go meanwhile.
	 */
	if (syscall(SYS_process_vm_readv, (long)getpid(), &local, 1ul, &remote, 1ul, 0ul) !=
	    (long)sizeof(eh)) {
		if (errno != ENOSYS && errno != EPERM)
			return; /* gone meanwhile */
		/*
		 * A seccomp filter refuses the call: note it as a shared object
		 * unread (a data file mapped whole is noted too, harmlessly; a
		 * non-PIE program's call sites get object offsets, not names).
		 */
		memset(&eh, 0, sizeof(eh));
		memcpy(eh.e_ident, ELFMAG, SELFMAG);
		eh.e_type = ET_DYN;
	}
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
		return;
	/* readers subtract the base to get the object's addresses (0 for ET_EXEC) */
	base = eh.e_type == ET_EXEC ? 0 : map->base;
	for (uint32_t i = 0; i < h->nmodules; i++)
		if (h->modules[i].base == base && strcmp(h->modules[i].path, map->path) == 0)
			return; /* known */
	if (h->nmodules >= TS_MODULE_LIMIT)
		return;
	struct ts_module *m = &h->modules[h->nmodules];
	m->base = base;
	m->start = map->start;
	m->end = map->end;
	m->elf_type = eh.e_type;
	snprintf(m->path, sizeof(m->path), "%s", map->path);
	/* RELEASE: a reader that counts the module sees it whole. */
	__atomic_store_n(&h->nmodules, h->nmodules + 1, __ATOMIC_RELEASE);
}

/*
 * Remembers the loaded objects (again, after a dlopen), to name call sites.
 * From /proc/self/maps (maps.h), not dl_iterate_phdr(): this runs in the lock
 * path, where the dynamic loader's lock must not be taken.
 */
static void note_modules(void)
{
	pthread_mutex_lock(&grow_lock);
	ts_maps_each(note_module, header);
	pthread_mutex_unlock(&grow_lock);
}

static bool module_known(uint64_t address)
{
	uint32_t n = __atomic_load_n(&header->nmodules, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < n; i++)
		if (address >= header->modules[i].start && address < header->modules[i].end)
			return true;
	return false;
}

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

/* Creates @path, new, ours alone; its inode in @dev and @ino.  -1 with errno. */
static int create_new(const char *path, int flags, dev_t *dev, ino_t *ino)
{
	struct stat st;
	int fd = open(path, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		unlink(path);
		errno = e;
		return -1;
	}
	*dev = st.st_dev;
	*ino = st.st_ino;
	return fd;
}

/* Opens @path again, only if it is still the file we created. */
static int reopen_ours(const char *path, int flags, dev_t dev, ino_t ino)
{
	struct stat st;
	int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || st.st_dev != dev || st.st_ino != ino) {
		close(fd);
		errno = ESTALE;
		return -1;
	}
	return fd;
}

/* $XDG_RUNTIME_DIR when it is a directory of ours that no one else can write. */
static const char *stats_directory(const struct ts_config *cfg)
{
	struct stat st;

	if (cfg->runtime_dir != NULL && stat(cfg->runtime_dir, &st) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_uid == geteuid() && (st.st_mode & 022) == 0 &&
	    strlen(cfg->runtime_dir) < sizeof(file_path) - 64)
		return cfg->runtime_dir;
	return "/dev/shm";
}

/*
 * The names a file is looked for under: ".PID", then ".PID.N" (the image
 * before an exec, or a dead process whose pid was reused, took the name),
 * then names no one can guess: another user may have created every
 * predictable one (readers skip files that are not the process's own).
 */
#define NAME_TRIES 16
#define RANDOM_NAME_TRIES 8

/*
 * @path, a name taken, may be the file of this process's image before an
 * exec: ours, the same pid and start time, and still "running".  That image
 * ran no exit code; say what became of it, or readers take it for a crash.
 */
static void mark_previous_image(const char *path, uint64_t start_time)
{
	struct stat st;
	uint64_t magic = 0, started = 0;
	uint32_t uid_state[2] = { 0, 0 };
	int32_t pid = 0;
	uint32_t execed = TS_EXECED;
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    (uint64_t)st.st_size >= sizeof(struct ts_file_header) &&
	    pread(fd, &magic, sizeof(magic), offsetof(struct ts_file_header, magic)) == sizeof(magic) &&
	    pread(fd, &pid, sizeof(pid), offsetof(struct ts_file_header, pid)) == sizeof(pid) &&
	    pread(fd, uid_state, sizeof(uid_state), offsetof(struct ts_file_header, uid)) ==
	            sizeof(uid_state) &&
	    pread(fd, &started, sizeof(started), offsetof(struct ts_file_header, start_time)) ==
	            sizeof(started) &&
	    magic == TS_FILE_MAGIC && pid == (int32_t)getpid() && uid_state[0] == st.st_uid &&
	    uid_state[1] == TS_RUNNING && started != 0 && started == start_time)
		(void)!pwrite(fd, &execed, sizeof(execed), offsetof(struct ts_file_header, state));
	close(fd);
}

static bool create_stats_file(const struct ts_config *cfg)
{
	const char *dir = stats_directory(cfg);
	int fd = -1;
	struct ts_file_header *h;
	char cmdline[sizeof(h->command)];
	size_t len;
	uint64_t start_time;

	start_time = process_start_time();
	for (int n = 0; n < NAME_TRIES + RANDOM_NAME_TRIES; n++) {
		uint64_t r = 0;

		if (n == 0)
			snprintf(file_path, sizeof(file_path), "%s/%s%d", dir, TS_FILE_PREFIX,
			         (int)getpid());
		else if (n < NAME_TRIES)
			snprintf(file_path, sizeof(file_path), "%s/%s%d.%d", dir, TS_FILE_PREFIX,
			         (int)getpid(), n);
		else if (syscall(SYS_getrandom, &r, sizeof(r), 0) == (long)sizeof(r))
			snprintf(file_path, sizeof(file_path), "%s/%s%d.r%016llx", dir, TS_FILE_PREFIX,
			         (int)getpid(), (unsigned long long)r);
		else
			break;
		fd = create_new(file_path, O_RDWR, &file_dev, &file_ino);
		if (fd >= 0 || errno != EEXIST)
			break;
		mark_previous_image(file_path, start_time);
	}
	if (fd < 0) {
		ts_log("TICKET_STATS: cannot create %s: %s; running without statistics", file_path,
		       strerror(errno));
		return false;
	}
	h = MAP_FAILED;
	if (ftruncate(fd, sizeof(*h)) == 0)
		h = mmap(NULL, sizeof(*h), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (h == MAP_FAILED) {
		ts_log("TICKET_STATS: cannot map %s: %s; running without statistics", file_path,
		       strerror(errno));
		unlink(file_path);
		return false;
	}
	file_size = sizeof(*h);
	use_tsc = tsc_is_invariant();
	h->version = TS_FILE_VERSION;
	h->header_size = sizeof(*h);
	h->slot_size = sizeof(struct ts_thread_slot);
	h->max_threads = TS_MAX_THREADS;
	h->pid = (int32_t)getpid();
	h->ppid = (int32_t)getppid();
	h->uid = (uint32_t)geteuid();
	h->state = TS_RUNNING;
	h->start_time = start_time;
	{
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		h->created_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	}
	h->clock = use_tsc ? TS_CLOCK_TSC : TS_CLOCK_NS;
	h->stats_top = cfg->stats_top;
	h->delay_tuned = ts_delay_tuned(cfg);
	h->ns0 = ts_now_ns();
	h->tsc0 = stats_clock();
	len = read_small_file("/proc/self/cmdline", cmdline, sizeof(cmdline));
	for (size_t i = 0; i + 1 < len; i++)
		if (cmdline[i] == '\0')
			cmdline[i] = ' ';
	memcpy(h->command, cmdline, sizeof(h->command));
	h->command[sizeof(h->command) - 1] = '\0';
	if (readlink("/proc/self/exe", h->exe, sizeof(h->exe) - 1) < 0)
		snprintf(h->exe, sizeof(h->exe), "%s", program_invocation_name);
	header = h;
	note_modules();
	/* Last: a reader that sees the magic sees a whole header. */
	__atomic_store_n(&h->magic, TS_FILE_MAGIC, __ATOMIC_RELEASE);
	return true;
}

/*
 * TICKET_STATS=FILE that another image of the run (a wrapper's helper, the
 * parent of a program run by a shell) has written already: open for
 * appending only if it is a regular file of ours that holds our reports (it
 * begins with one), never any other file.  -1 with errno EEXIST otherwise.
 * (An earlier run's report is appended to as well: nothing tells the two
 * apart that a script's pauses would not defeat, and appending loses
 * nothing.)
 */
#define REPORT_START "stats: pid "

static int open_our_report(const char *path)
{
	char start[sizeof(REPORT_START) - 1];
	struct stat st;
	int fd = open(path, O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0) {
		errno = EEXIST;
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    pread(fd, start, sizeof(start), 0) != (ssize_t)sizeof(start) ||
	    memcmp(start, REPORT_START, sizeof(start)) != 0) {
		close(fd);
		errno = EEXIST;
		return -1;
	}
	return fd;
}

/*
 * TICKET_STATS=FILE's path for this process ("%p": its pid, a forked
 * child's at its exit), relative to the directory the process started in:
 * it is created at exit, when the program may have changed directory.
 */
static char report_cwd[PATH_MAX];

static void report_name(const struct ts_config *cfg)
{
	char name[PATH_MAX];

	size_t dir_len = strlen(report_cwd), name_len;

	expand_name(cfg->stats, name, sizeof(name));
	name_len = strlen(name);
	if (name[0] != '/' && dir_len != 0 && dir_len + 1 + name_len < sizeof(report_path)) {
		memcpy(report_path, report_cwd, dir_len);
		report_path[dir_len] = '/';
		memcpy(report_path + dir_len + 1, name, name_len + 1);
	} else {
		memcpy(report_path, name, name_len + 1); /* (too long: as given) */
	}
}

/*
 * TICKET_STATS=FILE: checked now, so that an unusable path is known at once
 * (another file is there, or its directory cannot take it), but created only
 * at a normal exit, when there is a report to write.  An image that never
 * gets there (a shell that execs the real program, a wrapper script's
 * interpreter) must not claim the name its successor will write to; and
 * images that do (a helper the wrapper runs, a shell that runs the program
 * as its child) leave it to the ones with something to report.
 */
static bool check_report_file(const struct ts_config *cfg)
{
	char dir[PATH_MAX];
	struct stat st;
	char *slash;

	report_to_file = cfg->stats[0] != '\0';
	if (!report_to_file || report_nowhere)
		return true;
	if (cfg->stats[0] != '/' && report_cwd[0] == '\0' &&
	    getcwd(report_cwd, sizeof(report_cwd)) == NULL)
		report_cwd[0] = '\0';
	report_name(cfg);
	snprintf(dir, sizeof(dir), "%s", report_path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		dir[1] = '\0';
	else if (slash != NULL)
		*slash = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	if (lstat(report_path, &st) == 0) {
		int fd = open_our_report(report_path);

		if (fd >= 0) {
			close(fd);
			return true; /* another image of the run reported there: we append */
		}
		errno = EEXIST;
	} else if (errno == ENOENT && faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) == 0 &&
	           stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
		return true;
	}
	ts_log("TICKET_STATS=%s: cannot create %s: %s (an existing file is never "
	       "overwritten); running without statistics",
	       cfg->stats, report_path, strerror(errno));
	return false;
}

bool ts_stats_start(void)
{
	int state = __atomic_load_n(&file_state, __ATOMIC_ACQUIRE);
	const struct ts_config *cfg;

	if (__builtin_expect(state == FILE_READY, 1))
		return true; /* ACQUIRE pairs with the RELEASE store below */
	if (state == FILE_FAILED)
		return false;
	cfg = ts_config();
	if (cfg->stats == NULL)
		return false;
	state = FILE_NONE;
	if (__atomic_compare_exchange_n(&file_state, &state, FILE_CREATING, false, __ATOMIC_ACQUIRE,
	                                __ATOMIC_ACQUIRE)) {
		bool ok = check_report_file(cfg) && create_stats_file(cfg);

		__atomic_store_n(&file_state, ok ? FILE_READY : FILE_FAILED, __ATOMIC_RELEASE);
		return ok;
	}
	/* Another thread is creating the file: microseconds. */
	while ((state = __atomic_load_n(&file_state, __ATOMIC_ACQUIRE)) == FILE_CREATING)
		__builtin_ia32_pause();
	return state == FILE_READY;
}

/* ---- the calling thread's slot --------------------------------------------------- */

static void fold(struct ts_thread_slot *t);

/*
 * Slots of threads that have exited, mapped and ready for the next thread
 * that records (under grow_lock).  A slot keeps what its threads recorded:
 * the report adds the records of every thread that had it, as it adds those
 * of different slots, so a thread's exit loses nothing; and the file and the
 * mappings stay bounded by the threads alive at once, not by the threads
 * ever created (a server that makes a thread per request would otherwise
 * run out of mappings, vm.max_map_count, after some 65,000).
 */
static struct ts_thread_slot *free_slots[TS_MAX_THREADS];
static void count_steal(bool released);
static __thread struct {
	uintptr_t lock, caller;
	uint32_t yields;
} steal TLS_IE; /* see ts_stats_steal() */
/* Where the last steal was counted: valid while @slot is the thread's (count_steal()). */
static __thread struct {
	struct ts_thread_slot *slot;
	uintptr_t lock, caller;
	struct ts_steal_recs recs;
} steal_recs TLS_IE;

static uint32_t nfree_slots;
static pthread_key_t slot_key;
static bool slot_key_made;

/*
 * The exiting thread's slot goes back (pthread key destructor, in that
 * thread): its pending record folded, and no more records from it, which
 * would go to a slot another thread may have by then.
 */
static void give_back_slot(void *arg)
{
	struct ts_thread_slot *t = arg;

	if (t == NULL || t != mine)
		return; /* a slot of the parent, in a forked child: not ours to give */
	if (steal.lock != 0)
		count_steal(false);
	if (t->folded != t->pending.seq)
		fold(t);
	mine = NULL;
	mine_failed = true;
	steal_recs.slot = NULL;
	pthread_mutex_lock(&grow_lock);
	if (nfree_slots < TS_MAX_THREADS)
		free_slots[nfree_slots++] = t;
	pthread_mutex_unlock(&grow_lock);
}

static struct ts_thread_slot *reuse_slot(void)
{
	struct ts_thread_slot *slot = NULL;

	pthread_mutex_lock(&grow_lock);
	if (nfree_slots > 0)
		slot = free_slots[--nfree_slots];
	pthread_mutex_unlock(&grow_lock);
	return slot;
}

/* Gives the slot back when the thread exits; false when it cannot be arranged. */
static void keep_until_exit(struct ts_thread_slot *slot)
{
	if (slot_key_made)
		(void)pthread_setspecific(slot_key, slot);
}

static struct ts_thread_slot *claim_slot(void)
{
	struct ts_thread_slot *slot = MAP_FAILED;
	uint32_t i;
	int fd;

	if (!ts_stats_start())
		return NULL;
	if ((slot = reuse_slot()) != NULL) {
		slot->tid = (uint32_t)syscall(SYS_gettid);
		keep_until_exit(slot);
		return slot;
	}
	slot = MAP_FAILED;
	i = __atomic_fetch_add(&header->threads, 1, __ATOMIC_RELAXED);
	if (i >= TS_MAX_THREADS)
		goto fail;
	pthread_mutex_lock(&grow_lock);
	/*
	 * Opened again by name each time, never kept: the program may close
	 * our descriptor and reuse its number for a file of its own.
	 */
	fd = reopen_ours(file_path, O_RDWR, file_dev, file_ino);
	if (fd >= 0) {
		if (ts_slot_offset(i + 1) > file_size && ftruncate(fd, (off_t)ts_slot_offset(i + 1)) == 0)
			file_size = ts_slot_offset(i + 1);
		if (ts_slot_offset(i + 1) <= file_size)
			slot = mmap(NULL, sizeof(*slot), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			            (off_t)ts_slot_offset(i));
		close(fd);
	}
	pthread_mutex_unlock(&grow_lock);
	if (slot == MAP_FAILED)
		goto fail;
	slot->tid = (uint32_t)syscall(SYS_gettid);
	__atomic_store_n(&slot->claimed, 1, __ATOMIC_RELEASE);
	keep_until_exit(slot);
	return slot;
fail:
	__atomic_fetch_add(&header->unrecorded_threads, 1, __ATOMIC_RELAXED);
	return NULL;
}

static struct ts_thread_slot *my_slot(void)
{
	struct ts_thread_slot *t = mine;
	int cancel_state;

	if (__builtin_expect(t != NULL, 1))
		return t;
	if (mine_failed)
		return NULL;
	/*
	 * Claiming a slot (and making the file, in a forked child) opens and
	 * reads files: cancellation points, and the caller may hold a ticket,
	 * which a cancellation would leave in line for ever.  No cancellation,
	 * then, until done; a pending one acts at the thread's next
	 * cancellation point, as with glibc's lock.
	 */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
	t = claim_slot();
	mine_failed = t == NULL;
	mine = t;
	pthread_setcancelstate(cancel_state, NULL);
	return t;
}

/* Folds the pending record; names a new call site's object if it is new. */
/*
 * After @t's tables took a contended acquisition (they had @sites call
 * sites before): the report at exit is due, and a new call site's object is
 * named if it is new.
 */
static void recorded(struct ts_thread_slot *t, uint32_t sites)
{
	if (!__atomic_load_n(&any_recorded, __ATOMIC_RELAXED))
		__atomic_store_n(&any_recorded, true, __ATOMIC_RELAXED);
	if (t->nsites != sites && !module_known(t->sites[t->last_site].caller))
		note_modules(); /* a dlopen()ed object */
}

static void fold(struct ts_thread_slot *t)
{
	uint32_t sites = t->nsites;

	ts_slot_fold(t);
	recorded(t, sites);
}

/* ---- the slow path's calls ------------------------------------------------------ */

void ts_stats_wait_begin(struct ts_wait_stats *wait, bool served_at_once)
{
	struct ts_thread_slot *t = my_slot();

	if (t == NULL)
		return;
	wait->at_once = served_at_once;
	if (!served_at_once)
		wait->begin = stats_clock();
	if (t->folded != t->pending.seq)
		fold(t); /* the lock was released by another thread: no one did it */
}

void ts_stats_after_unlock(const void *lock, bool checked)
{
	struct ts_thread_slot *t = mine;
	struct ts_pending *p;

	if (__builtin_expect(t == NULL, 0)) {
		/*
		 * A thread's first release of a marked lock it never waited for;
		 * a process without TICKET_STATS whose lock is marked for
		 * TICKET_CHECK_UNLOCK, or shares a marked lock with one that has
		 * it (process-shared): nothing to count with.
		 */
		if (ts_config()->stats == NULL)
			return;
		if (!seen_contended(ts_lock_hash(lock)) || (t = my_slot()) == NULL)
			return;
	}
	/*
	 * TICKET_CHECK_UNLOCK marks every lock at its init: only those seen
	 * contended are counted, or the tables would fill with the locks a
	 * program never contends.
	 */
	if (__builtin_expect(checked, 0) && !seen_contended(ts_lock_hash(lock)))
		return;
	if (steal.lock == (uintptr_t)lock) {
		count_steal(true); /* and the release, with one lookup */
		return;
	}
	p = &t->pending;
	if (t->folded != p->seq && p->lock == (uintptr_t)lock) {
		if (p->served != 0) {
			uint64_t seq = p->seq;
			uint64_t held = stats_clock() - p->served;

			/*
			 * The hold: from the clock read as the lock became ours
			 * to now, just after the release.  A "negative" one (the
			 * two CPUs' TSCs disagree, seen under KVM, after a
			 * migration) is no sample.  Rewritten as
			 * ts_stats_record() writes it: readers skip it meanwhile.
			 */
			__atomic_store_n(&p->seq, seq + 1, __ATOMIC_RELAXED);
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
			p->hold = (int64_t)held > 0 ? held : 0;
			__atomic_store_n(&p->seq, seq + 2, __ATOMIC_RELEASE);
		}
		fold(t);
	}
	ts_slot_count_release(t, (uintptr_t)lock);
}

void ts_stats_record(const void *lock, const void *caller, const struct ts_wait_stats *wait,
                     uint32_t delay)
{
	struct ts_thread_slot *t = mine;
	struct ts_pending *p;
	uint32_t hash = ts_lock_hash(lock);
	uint64_t served, seq;

	if (__builtin_expect(t == NULL, 0) && (t = my_slot()) == NULL)
		return;
	/*
	 * Read while holding the lock, where the hold sample starts; not for a
	 * wait of none, which then has no hold sample: no clock read at all on
	 * its way to the lock and in it.
	 */
	served = wait->at_once ? 0 : stats_clock();
	if (__builtin_expect(t->folded != t->pending.seq, 0))
		fold(t); /* no ts_stats_wait_begin() before this one (the tests) */
	p = &t->pending;
	seq = p->seq + 1;
	/* odd while written; readers skip it then (x86 keeps stores in order) */
	__atomic_store_n(&p->seq, seq, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	p->lock = (uintptr_t)lock;
	p->caller = (uintptr_t)caller;
	p->begin = wait->begin;
	p->at_once = wait->at_once;
	p->served = served;
	p->hold = 0; /* taken by fold() */
	p->polls = wait->polls;
	p->yields = wait->yields;
	p->parks = wait->parks;
	p->rests = wait->rests;
	p->skips = wait->skips;
	p->dozes = wait->dozes;
	p->line = wait->line;
	p->borrows = wait->borrows;
	p->delay = delay;
	p->ahead = wait->ahead;
	__atomic_store_n(&p->seq, seq + 1, __ATOMIC_RELEASE);
	note_contended(hash); /* before the unlock: an init after it must mark the lock */
}

/*
 * A steal recorded while the lock is held and counted after its release:
 * three stores in the critical section, the rest (the slot's tables) once
 * the others may have the lock.  Counted by our unlock of that lock, or,
 * if another thread released it, at our next steal or the thread's exit.
 */
static void count_steal(bool released)
{
	struct ts_thread_slot *t = my_slot();
	uint32_t sites;

	if (t == NULL) {
		steal.lock = 0;
		return;
	}
	/*
	 * A holder's burst steals the same lock from the same call site again
	 * and again: counted straight into the records the last one went to,
	 * without the tables' lookups (at 16 threads on 2 CPUs, five in six
	 * acquisitions are steals).  The same increments as ts_slot_count_steal().
	 */
	if (steal_recs.slot == t && steal_recs.lock == steal.lock &&
	    steal_recs.caller == steal.caller) {
		struct ts_lock_rec *r = steal_recs.recs.lock;

		r->released += released;
		r->contended++;
		r->borrows++;
		r->yields += steal.yields;
		steal_recs.recs.site->count++;
		steal.lock = 0;
		return;
	}
	sites = t->nsites;
	ts_slot_count_steal(t, steal.lock, steal.caller, steal.yields, released, &steal_recs.recs);
	recorded(t, sites);
	steal_recs.slot = steal_recs.recs.lock != NULL && steal_recs.recs.site != NULL ? t : NULL;
	steal_recs.lock = steal.lock;
	steal_recs.caller = steal.caller;
	steal.lock = 0;
}

void ts_stats_steal(const void *lock, const void *caller, bool yielded, bool first)
{
	if (__builtin_expect(steal.lock != 0, 0))
		count_steal(false); /* the last one's lock was released by another thread */
	steal.lock = (uintptr_t)lock;
	steal.caller = (uintptr_t)caller;
	steal.yields = yielded;
	if (first)
		note_contended(ts_lock_hash(lock)); /* before the unlock, as in ts_stats_record() */
}

bool ts_stats_init(const void *lock)
{
	/*
	 * Only a lock already seen contended is marked: a server initialises
	 * thousands of locks it never contends, whose releases would fill the
	 * threads' tables (issue 19).
	 */
	return seen_contended(ts_lock_hash(lock));
}

/* ---- the report ---------------------------------------------------------------- */

/* "function+0xoff (object)", or "object+0xoff" (for addr2line) without a symbol. */
static void describe_site(uint64_t address, char *buf, size_t size, void *arg)
{
	const void *caller = (const void *)(uintptr_t)address;
	Dl_info info;
	const char *object;

	(void)arg;
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

long ts_stats_report(int fd, const char *prefix, uint32_t top)
{
	struct ts_file_header h;
	struct ts_report report;
	struct ts_report_options options = {
		.prefix = prefix, .top = top, .sites = 3, .describe = describe_site, .header = 1,
	};
	int in;
	long n;

	if (!ts_stats_start() || (in = reopen_ours(file_path, O_RDONLY, file_dev, file_ino)) < 0) {
		/* no file (a forked child that recorded nothing, or no statistics) */
		memset(&h, 0, sizeof(h));
		memset(&report, 0, sizeof(report));
		h.pid = (int32_t)getpid();
		options.ticks_per_ns = 1;
		return ts_report_write(fd, &h, &report, &options);
	}
	if (ts_report_read(in, &h, &report) != 0) {
		ts_log("stats: cannot read %s: %s", file_path, strerror(errno));
		close(in);
		return -1;
	}
	close(in);
	options.ticks_per_ns = ts_ticks_per_ns(&h);
	n = ts_report_write(fd, &h, &report, &options);
	ts_report_free(&report);
	return n;
}

const char *ts_stats_file(void)
{
	return __atomic_load_n(&file_state, __ATOMIC_ACQUIRE) == FILE_READY ? file_path : NULL;
}

/* ---- at exit, and across fork -------------------------------------------- */

/* Whether this image has recorded a contended acquisition. */
static bool recorded_anything(void)
{
	return __atomic_load_n(&any_recorded, __ATOMIC_RELAXED) ||
	       (mine != NULL && mine->pending.seq != 0);
}

/*
 * Whether the report would list nothing: no contended acquisition, folded
 * or still pending in any thread's slot, and nothing dropped.  The file is
 * read back as the report reads it, since another thread's last record may
 * not be folded yet; when it cannot be read, there is something to say.
 */
static bool nothing_to_report(void)
{
	struct ts_file_header h;
	struct ts_report report;
	bool nothing;
	int in;

	if (recorded_anything())
		return false;
	if ((in = reopen_ours(file_path, O_RDONLY, file_dev, file_ino)) < 0)
		return false;
	if (ts_report_read(in, &h, &report) != 0) {
		close(in);
		return false;
	}
	close(in);
	nothing = report.nlocks == 0 && report.contended == 0 && report.dropped_locks == 0 &&
	          report.dropped_sites == 0 && report.dropped_releases == 0 &&
	          report.unrecorded_threads == 0;
	ts_report_free(&report);
	return nothing;
}

__attribute__((destructor)) static void stats_at_exit(void)
{
	const struct ts_config *cfg = ts_config();
	int fd = STDERR_FILENO;
	bool skip = false;

	if (cfg->stats == NULL || report_nowhere)
		return;
	/*
	 * FILE_FAILED: said so at start-up.  FILE_NONE: a forked child that
	 * recorded nothing (its file is made at its first record): nothing to
	 * report and no file to leave behind.
	 */
	if (__atomic_load_n(&file_state, __ATOMIC_ACQUIRE) != FILE_READY)
		return;
	header->exit_ns = ts_now_ns();
	header->exit_clock = stats_clock();
	if (report_to_file && nothing_to_report()) {
		/*
		 * Nothing contended: no file.  A program's helpers that
		 * never contend would each leave a report of no locks (27
		 * from glusterd's); the file stays free for an image that
		 * has something to say.  TICKET_VERBOSE=1 says why there is
		 * none.
		 */
		if (cfg->verbose)
			ts_log("stats: pid %d: no lock contended; no report written to %s",
			       (int)getpid(), cfg->stats);
		skip = true;
	} else if (report_to_file) {
		dev_t dev;
		ino_t ino;

		/* claimed only now (check_report_file); "%p" is our pid, a forked child's too */
		report_name(cfg);
		fd = create_new(report_path, O_WRONLY | O_APPEND, &dev, &ino);
		if (fd < 0 && errno == EEXIST) {
			/*
			 * Another image of the run wrote FILE first: with nothing
			 * to add, say nothing; else append to its report.
			 */
			if (!recorded_anything())
				skip = true;
			else
				fd = open_our_report(report_path);
		}
		if (fd < 0 && !skip) {
			ts_log("TICKET_STATS=%s: cannot create %s: %s (an existing file is never "
			       "overwritten); reporting on stderr",
			       cfg->stats, report_path, strerror(errno));
			fd = STDERR_FILENO;
		}
	}
	if (!skip)
		ts_stats_report(fd, fd == STDERR_FILENO ? "ticketspin: " : "", cfg->stats_top);
	if (!skip && fd != STDERR_FILENO)
		close(fd);
	__atomic_store_n(&header->state, TS_EXITED, __ATOMIC_RELEASE);
	if (!cfg->stats_keep) {
		struct stat st;

		/* only our own file: the name could have been replaced meanwhile */
		if (lstat(file_path, &st) == 0 && st.st_dev == file_dev && st.st_ino == file_ino)
			unlink(file_path);
	}
}

/*
 * A forked child gets its own file, made when it first records (or at its
 * exit): many children exec at once, and their files would only be left
 * behind.  Its mappings of the parent's file are dropped, so it cannot
 * write there.  (Other threads' slots stay mapped in the child, unused.)
 */
static void forget_parent(void)
{
	if (__atomic_load_n(&file_state, __ATOMIC_RELAXED) == FILE_READY) {
		munmap(header, sizeof(*header));
		if (mine != NULL)
			munmap(mine, sizeof(*mine));
	}
	header = NULL;
	file_size = 0;
	pthread_mutex_init(&grow_lock, NULL);
	mine = NULL;
	mine_failed = false;
	steal_recs.slot = NULL; /* a new slot may be mapped where the unmapped one was */
	any_recorded = false;
	nfree_slots = 0; /* the parent's slots: not to be written (they stay mapped, unused) */
	/* Without "%p" the child's report would overwrite the parent's: it keeps its file. */
	if (report_to_file && strstr(ts_config()->stats, "%p") == NULL)
		report_nowhere = true;
	if (__atomic_load_n(&file_state, __ATOMIC_RELAXED) != FILE_FAILED)
		__atomic_store_n(&file_state, FILE_NONE, __ATOMIC_RELAXED);
}

/* Not conditional on TICKET_STATS: reading the configuration here would fix
 * it before the tests that link the core set their environment. */
__attribute__((constructor)) static void stats_init(void)
{
	pthread_atfork(NULL, NULL, forget_parent);
	slot_key_made = pthread_key_create(&slot_key, give_back_slot) == 0;
}
