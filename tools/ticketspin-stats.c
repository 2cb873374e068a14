/*
 * ticketspin-stats - reads the TICKET_STATS files that processes running
 * with libticketspin.so keep (preload/stats_file.h); `ticketspin report` and
 * `ticketspin top` run it.
 *
 *   ticketspin-stats report [--top=N] [PID...]   the report of each PID's
 *       file(s), whether the process runs, exited, called _exit or exec, or
 *       was killed; without PID, a list of the files there are
 *   ticketspin-stats report --clean              removes the files of
 *       processes that no longer exist
 *   ticketspin-stats top [--once] [--top=N] [--interval=S] PID
 *
 * Files are looked for in $XDG_RUNTIME_DIR and /dev/shm.  Only the owner of
 * a file may read it: a file of another user's is skipped (anyone may create
 * a file with the name a process would use), and a pid with no file of ours
 * whose process is another user's is refused with a message, even for root
 * (whose reading would not be refused by the file mode): run the command as
 * that user.  The file's contents are not trusted: sizes and
 * counts are checked before use (a damaged file gives a damaged report, not
 * a crash).  Call sites are named from the objects the process had loaded,
 * recorded in the file, by reading their ELF symbol tables (.symtab, else
 * .dynsym), so static functions are named too when the object is not
 * stripped.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "stats_file.h"

static const char *me = "ticketspin";

/* ---- naming call sites --------------------------------------------------- */

struct elf_file {
	char path[240];
	const unsigned char *data;
	size_t size;
	bool failed;
};

#define ELF_CACHE 32
static struct elf_file elf_cache[ELF_CACHE];

static const struct elf_file *elf_open(const char *path)
{
	struct elf_file *free_slot = NULL;
	struct stat st;
	int fd;

	for (int i = 0; i < ELF_CACHE; i++) {
		if (elf_cache[i].path[0] == '\0') {
			if (free_slot == NULL)
				free_slot = &elf_cache[i];
		} else if (strcmp(elf_cache[i].path, path) == 0) {
			return &elf_cache[i];
		}
	}
	if (free_slot == NULL)
		free_slot = &elf_cache[0]; /* (keeps it simple: the first goes) */
	if (free_slot->data != NULL)
		munmap((void *)free_slot->data, free_slot->size);
	memset(free_slot, 0, sizeof(*free_slot));
	snprintf(free_slot->path, sizeof(free_slot->path), "%s", path);
	/* O_NONBLOCK: a damaged file may name a FIFO, whose open would wait */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size < sizeof(Elf64_Ehdr)) {
		free_slot->failed = true;
	} else {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);

		if (p == MAP_FAILED) {
			free_slot->failed = true;
		} else {
			free_slot->data = p;
			free_slot->size = (size_t)st.st_size;
		}
	}
	if (fd >= 0)
		close(fd);
	return free_slot;
}

/* The function of @elf that contains @vaddr: its name and offset. */
static bool elf_symbol(const struct elf_file *elf, uint64_t vaddr, char *name, size_t size,
                       uint64_t *offset)
{
	const Elf64_Ehdr *eh = (const void *)elf->data;
	const Elf64_Shdr *sh;
	static const uint32_t kinds[] = { SHT_SYMTAB, SHT_DYNSYM };

	if (elf->failed || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    eh->e_shoff > elf->size || eh->e_shnum > (elf->size - eh->e_shoff) / sizeof(*sh))
		return false;
	sh = (const void *)(elf->data + eh->e_shoff);
	for (int k = 0; k < 2; k++) {
		for (unsigned s = 0; s < eh->e_shnum; s++) {
			const Elf64_Shdr *strtab;
			const Elf64_Sym *sym;
			size_t n;

			if (sh[s].sh_type != kinds[k] || sh[s].sh_link >= eh->e_shnum ||
			    sh[s].sh_entsize != sizeof(Elf64_Sym) || sh[s].sh_offset > elf->size ||
			    sh[s].sh_size > elf->size - sh[s].sh_offset)
				continue;
			strtab = &sh[sh[s].sh_link];
			if (strtab->sh_offset > elf->size || strtab->sh_size > elf->size - strtab->sh_offset)
				continue;
			sym = (const void *)(elf->data + sh[s].sh_offset);
			n = sh[s].sh_size / sizeof(*sym);
			for (size_t i = 0; i < n; i++) {
				unsigned type = ELF64_ST_TYPE(sym[i].st_info);

				if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
				    sym[i].st_shndx == SHN_UNDEF || sym[i].st_name >= strtab->sh_size ||
				    vaddr < sym[i].st_value || vaddr >= sym[i].st_value + sym[i].st_size)
					continue;
				/*
				 * Within the string table: its last string need not be
				 * terminated, and reading on could pass the mapping's end.
				 */
				size_t room = strtab->sh_size - sym[i].st_name;
				size_t len = strnlen((const char *)elf->data + strtab->sh_offset +
				                             sym[i].st_name,
				                     room < size - 1 ? room : size - 1);

				memcpy(name, elf->data + strtab->sh_offset + sym[i].st_name, len);
				name[len] = '\0';
				*offset = vaddr - sym[i].st_value;
				return name[0] != '\0';
			}
		}
	}
	return false;
}

/* "function+0xoff (object)", or "object+0xoff" (for addr2line) without a symbol. */
static void describe_site(uint64_t address, char *buf, size_t size, void *arg)
{
	const struct ts_file_header *h = arg;

	for (uint32_t i = 0; i < h->nmodules; i++) {
		const struct ts_module *m = &h->modules[i];
		char name[256];
		uint64_t offset;

		if (address < m->start || address >= m->end)
			continue;
		if (elf_symbol(elf_open(m->path), address - m->base, name, sizeof(name), &offset))
			snprintf(buf, size, "%s+%#llx (%s)", name, (unsigned long long)offset, m->path);
		else
			snprintf(buf, size, "%s+%#llx", m->path, (unsigned long long)(address - m->base));
		return;
	}
	if (address == 0)
		snprintf(buf, size, "(nil)");
	else
		snprintf(buf, size, "%#llx", (unsigned long long)address);
}

/* ---- finding files --------------------------------------------------------- */

struct found {
	char path[PATH_MAX];
	int pid;
};

static const char *directories[2];

static void init_directories(void)
{
	const char *runtime = getenv("XDG_RUNTIME_DIR");

	directories[0] = runtime != NULL && runtime[0] == '/' ? runtime : NULL;
	directories[1] = "/dev/shm";
	if (directories[0] != NULL && strcmp(directories[0], directories[1]) == 0)
		directories[0] = NULL;
}

/* Every statistics file (of @pid, or all when 0), by name; returns the count. */
static size_t find_files(int pid, struct found *out, size_t max)
{
	size_t n = 0;

	for (int d = 0; d < 2; d++) {
		DIR *dir;
		struct dirent *e;

		if (directories[d] == NULL || (dir = opendir(directories[d])) == NULL)
			continue;
		while ((e = readdir(dir)) != NULL && n < max) {
			const char *rest;
			char *end;
			long p;

			if (strncmp(e->d_name, TS_FILE_PREFIX, strlen(TS_FILE_PREFIX)) != 0)
				continue;
			rest = e->d_name + strlen(TS_FILE_PREFIX);
			p = strtol(rest, &end, 10);
			if (end == rest || (*end != '\0' && *end != '.') || p <= 0 || (pid != 0 && p != pid))
				continue;
			snprintf(out[n].path, sizeof(out[n].path), "%s/%s", directories[d], e->d_name);
			out[n].pid = (int)p;
			n++;
		}
		closedir(dir);
	}
	return n;
}

static const char *user_name(uid_t uid)
{
	static char buf[64];
	struct passwd *pw = getpwuid(uid);

	if (pw != NULL)
		return pw->pw_name;
	snprintf(buf, sizeof(buf), "uid %u", (unsigned)uid);
	return buf;
}

static void refuse_other_user(int pid, uid_t owner)
{
	fprintf(stderr,
	        "%s: pid %d belongs to user %s (uid %u), not to you (uid %u): reading another "
	        "user's statistics is refused; run this as that user\n",
	        me, pid, user_name(owner), (unsigned)owner, (unsigned)getuid());
}

/* Opens @path for reading if it is a regular file of ours; 0, -1 (not ours: refused), -2. */
static int open_file(const char *path, int pid, int *fd_out, bool quiet)
{
	struct stat st;
	int fd;

	/* the owner first: opening another user's file would only say "permission denied" */
	if (lstat(path, &st) == 0 && st.st_uid != getuid()) {
		if (!quiet)
			refuse_other_user(pid, st.st_uid);
		return -1;
	}
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (!quiet)
			fprintf(stderr, "%s: %s: %s\n", me, path, strerror(errno));
		return -2;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -2;
	}
	if (st.st_uid != getuid()) {
		close(fd);
		if (!quiet)
			refuse_other_user(pid, st.st_uid);
		return -1;
	}
	*fd_out = fd;
	return 0;
}

/*
 * Whether @path is a file of ours (regular, owned by us, not a link); any
 * other is not the process's own: another user may create files with the
 * names the library tries (stats_file.h), to be skipped, not believed.
 */
static bool owned_by_us(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid();
}

/* ---- the state of the process behind a file ----------------------------------- */

/*
 * /proc/PID/stat field 22, the start time; 0 when the process does not exist
 * or has ended (a zombie, or dying: its memory is gone, it will not run again).
 */
static uint64_t start_time_of(int pid)
{
	char path[64], buf[1024], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ' || strchr("ZXx", p[2]) != NULL)
		return 0; /* field 3, the state */
	for (int field = 2; field < 22 && p != NULL; field++)
		p = strchr(p + 1, ' ');
	return p != NULL ? strtoull(p + 1, NULL, 10) : 0;
}

/* Whether process @pid still has @path mapped (an exec drops it). */
static bool maps_file(int pid, const char *path)
{
	char maps[64], line[PATH_MAX + 256];
	char real[PATH_MAX];
	bool found = false;
	FILE *f;

	if (realpath(path, real) == NULL)
		snprintf(real, sizeof(real), "%s", path);
	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	if ((f = fopen(maps, "re")) == NULL)
		return true; /* cannot tell: say it runs */
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		found = strstr(line, real) != NULL || strstr(line, path) != NULL;
	}
	fclose(f);
	return found;
}

enum state { RUNNING, EXITED, ENDED, EXECED };

/*
 * A zeroed header buffer, as aligned as the type says (a page: the file's
 * layout); calloc() would give 16 bytes, which is undefined behaviour to
 * access through the type.  Freed with free().
 */
static struct ts_file_header *new_header(void)
{
	struct ts_file_header *h =
		aligned_alloc(_Alignof(struct ts_file_header), sizeof(struct ts_file_header));

	if (h != NULL)
		memset(h, 0, sizeof(*h));
	return h;
}

static enum state state_of(const struct ts_file_header *h, const char *path)
{
	uint64_t started = start_time_of(h->pid);

	if (h->state == TS_EXITED)
		return EXITED;
	if (h->state == TS_EXECED)
		return EXECED; /* marked by the next image */
	if (started == 0 || (h->start_time != 0 && started != h->start_time))
		return ENDED;
	return maps_file(h->pid, path) ? RUNNING : EXECED;
}

static const char *state_text(enum state s)
{
	switch (s) {
	case RUNNING: return "running";
	case EXITED: return "exited normally (its report was printed then)";
	case EXECED: return "replaced itself with exec (the process runs on as another image)";
	default: return "ended without a normal exit (_exit, a signal such as SIGKILL, or a crash)";
	}
}

static void when(uint64_t realtime_ns, char *buf, size_t size)
{
	time_t t = (time_t)(realtime_ns / 1000000000u);
	struct tm tm;

	if (localtime_r(&t, &tm) == NULL || strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm) == 0)
		snprintf(buf, size, "?");
}

/* ---- report --------------------------------------------------------------- */

static int report_file(const char *path, int pid, uint32_t top)
{
	struct ts_file_header *h = new_header();
	struct ts_report report;
	struct ts_report_options o = { .prefix = "", .sites = 3, .describe = describe_site,
	                               .header = 1 };
	char started[64];
	int fd, rc;

	if (h == NULL)
		return 1;
	if ((rc = open_file(path, pid, &fd, false)) != 0) {
		free(h);
		return rc == -1 ? 3 : 1;
	}
	if (ts_report_read(fd, h, &report) != 0) {
		fprintf(stderr, "%s: %s: %s\n", me, path,
		        errno == EINVAL ? "not a statistics file of this version" : strerror(errno));
		close(fd);
		free(h);
		return 1;
	}
	close(fd);
	when(h->created_ns, started, sizeof(started));
	printf("ticketspin: pid %d: %s; started %s; command: %s\n", h->pid,
	       state_text(state_of(h, path)), started, h->command);
	printf("ticketspin: file %s\n", path);
	fflush(stdout);
	o.top = top != 0 ? top : (h->stats_top != 0 ? h->stats_top : 20);
	o.describe_arg = h;
	o.ticks_per_ns = ts_ticks_per_ns(h);
	ts_report_write(STDOUT_FILENO, h, &report, &o);
	ts_report_free(&report);
	free(h);
	return 0;
}

static int compare_found(const void *a, const void *b)
{
	const struct found *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	/* ".PID" before ".PID.1" before ".PID.2": creation order */
	if (strlen(x->path) != strlen(y->path))
		return strlen(x->path) < strlen(y->path) ? -1 : 1;
	return strcmp(x->path, y->path);
}

#define MAX_FILES 4096

static int cmd_list(void)
{
	static struct found files[MAX_FILES];
	size_t n = find_files(0, files, MAX_FILES), shown = 0;

	qsort(files, n, sizeof(files[0]), compare_found);
	for (size_t i = 0; i < n; i++) {
		struct ts_file_header *h = new_header();
		int fd;

		if (h == NULL || open_file(files[i].path, files[i].pid, &fd, true) != 0) {
			free(h);
			continue;
		}
		if (pread(fd, h, sizeof(*h), 0) == (ssize_t)sizeof(*h) && h->magic == TS_FILE_MAGIC) {
			h->command[sizeof(h->command) - 1] = '\0';
			if (shown++ == 0)
				printf("%8s  %-8s  %s\n", "PID", "STATE", "COMMAND");
			printf("%8d  %-8s  %s\n", h->pid,
			       (const char *[]){ "running", "exited", "ended", "exec" }
			               [state_of(h, files[i].path)],
			       h->command);
		}
		close(fd);
		free(h);
	}
	if (shown == 0)
		printf("%s: no statistics files of yours in %s%s/dev/shm\n", me,
		       directories[0] != NULL ? directories[0] : "",
		       directories[0] != NULL ? " or " : "");
	return 0;
}

static int cmd_clean(void)
{
	static struct found files[MAX_FILES];
	size_t n = find_files(0, files, MAX_FILES), removed = 0;

	for (size_t i = 0; i < n; i++) {
		struct ts_file_header *h = new_header();
		uint64_t started;
		int fd;

		if (h == NULL || open_file(files[i].path, files[i].pid, &fd, true) != 0) {
			free(h);
			continue;
		}
		if (pread(fd, h, sizeof(*h), 0) == (ssize_t)sizeof(*h) && h->magic == TS_FILE_MAGIC &&
		    h->pid == files[i].pid) {
			started = start_time_of(h->pid);
			if (started == 0 || (h->start_time != 0 && started != h->start_time)) {
				if (unlink(files[i].path) == 0) {
					printf("removed %s (pid %d, no longer running)\n", files[i].path,
					       h->pid);
					removed++;
				} else {
					fprintf(stderr, "%s: cannot remove %s: %s\n", me, files[i].path,
					        strerror(errno));
				}
			}
		}
		close(fd);
		free(h);
	}
	printf("%zu file%s removed\n", removed, removed == 1 ? "" : "s");
	return 0;
}

/* No file for @pid: say why as well as we can. */
static int nothing_for(int pid)
{
	char proc[64];
	struct stat st;

	snprintf(proc, sizeof(proc), "/proc/%d", pid);
	if (stat(proc, &st) == 0 && st.st_uid != getuid()) {
		refuse_other_user(pid, st.st_uid);
		return 3;
	}
	fprintf(stderr,
	        "%s: no statistics for pid %d in %s%s/dev/shm (was it run with TICKET_STATS, "
	        "or ticketspin --stats?  A normal exit removes the file unless "
	        "TICKET_STATS_KEEP=1)\n",
	        me, pid, directories[0] != NULL ? directories[0] : "",
	        directories[0] != NULL ? " or " : "");
	return 1;
}

static int parse_pid(const char *arg)
{
	char *end;
	long pid = strtol(arg, &end, 10);

	if (end == arg || *end != '\0' || pid <= 0 || pid > INT_MAX)
		return 0;
	return (int)pid;
}

static void usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", me);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry '%s --help' for more information.\n", me);
	exit(2);
}

static uint32_t parse_top(const char *value)
{
	char *end;
	long n = strtol(value, &end, 10);

	if (end == value || *end != '\0' || n < 1 || n > 1000000)
		usage_error("--top='%s' is not valid: accepted: an integer 1..1000000", value);
	return (uint32_t)n;
}

static int cmd_report(int argc, char **argv)
{
	static struct found files[MAX_FILES];
	uint32_t top = 0;
	bool clean = false;
	int rc = 0, pids = 0;

	for (int i = 0; i < argc; i++) {
		if (strncmp(argv[i], "--top=", 6) == 0)
			top = parse_top(argv[i] + 6);
		else if (strcmp(argv[i], "--clean") == 0)
			clean = true;
		else if (parse_pid(argv[i]) != 0)
			pids++;
		else
			usage_error("report: '%s' is not a PID: accepted: --top=N, --clean, PID...",
			            argv[i]);
	}
	if (clean) {
		if (pids > 0)
			usage_error("report: %s takes no PID", "--clean");
		return cmd_clean();
	}
	if (pids == 0)
		return cmd_list();
	for (int i = 0; i < argc; i++) {
		int pid = parse_pid(argv[i]);
		size_t n;

		if (pid == 0 || argv[i][0] == '-')
			continue;
		n = find_files(pid, files, MAX_FILES);
		if (n == 0) {
			int r = nothing_for(pid);
			rc = rc > r ? rc : r;
			continue;
		}
		qsort(files, n, sizeof(files[0]), compare_found);
		size_t reported = 0;

		for (size_t k = 0; k < n; k++) {
			int r;

			if (!owned_by_us(files[k].path))
				continue; /* not the process's own (see owned_by_us) */
			r = report_file(files[k].path, pid, top);
			rc = rc > r ? rc : r;
			reported++;
		}
		if (reported == 0) {
			int r = nothing_for(pid);
			rc = rc > r ? rc : r;
		}
	}
	return rc;
}

/* ---- top -------------------------------------------------------------------- */

static struct termios saved_tty;
static bool tty_raw;

static void restore_tty(void)
{
	if (tty_raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tty);
	tty_raw = false;
}

static void on_signal(int sig)
{
	restore_tty();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Waits @seconds, or less if 'q' is typed; true when 'q' was. */
static bool wait_or_quit(double seconds)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		double left;
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
		char c;

		clock_gettime(CLOCK_MONOTONIC, &now);
		left = seconds - (double)(now.tv_sec - start.tv_sec) -
		       (double)(now.tv_nsec - start.tv_nsec) / 1e9;
		if (left <= 0)
			return false;
		if (!tty_raw) {
			nanosleep(&(struct timespec){ (time_t)left,
			                             (long)((left - (double)(time_t)left) * 1e9) },
			          NULL);
			return false;
		}
		if (poll(&p, 1, (int)(left * 1000) + 1) > 0 && read(STDIN_FILENO, &c, 1) == 1 &&
		    (c == 'q' || c == 'Q'))
			return true;
	}
}

/*
 * The file of @pid's running image: among its files that are ours and say
 * they are @pid's, one of the running process (its start time) if any, the
 * newest.  Files of other users, and ours that do not hold @pid's header,
 * are skipped (see owned_by_us).
 */
static bool current_file(int pid, char *path, size_t size)
{
	static struct found files[MAX_FILES];
	size_t n = find_files(pid, files, MAX_FILES);
	struct ts_file_header *h = new_header();
	uint64_t started = start_time_of(pid), best_created = 0;
	bool best_live = false, found = false;

	if (h == NULL)
		return false;
	for (size_t i = 0; i < n; i++) {
		int fd;
		bool live;

		if (!owned_by_us(files[i].path) || open_file(files[i].path, pid, &fd, true) != 0)
			continue;
		if (pread(fd, h, sizeof(*h), 0) != (ssize_t)sizeof(*h) || h->magic != TS_FILE_MAGIC ||
		    h->version != TS_FILE_VERSION || h->pid != pid) {
			close(fd);
			continue;
		}
		close(fd);
		live = started != 0 && h->start_time == started && h->state == TS_RUNNING;
		if (!found || (live && !best_live) ||
		    (live == best_live && h->created_ns >= best_created)) {
			size_t len = strnlen(files[i].path, size - 1);

			memcpy(path, files[i].path, len);
			path[len] = '\0';
			best_live = live;
			best_created = h->created_ns;
			found = true;
		}
	}
	free(h);
	return found;
}

static int cmd_top(int argc, char **argv)
{
	uint32_t top = 0;
	bool once = false;
	double interval = 1.0;
	int pid = 0, fd, rc;
	char path[PATH_MAX];
	struct ts_report previous = { 0 }, report;
	struct ts_file_header *h = new_header();
	bool have_previous = false;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--once") == 0) {
			once = true;
		} else if (strncmp(argv[i], "--top=", 6) == 0) {
			top = parse_top(argv[i] + 6);
		} else if (strncmp(argv[i], "--interval=", 11) == 0) {
			char *end;

			interval = strtod(argv[i] + 11, &end);
			if (end == argv[i] + 11 || *end != '\0' || !(interval >= 0.1 && interval <= 3600))
				usage_error("--interval='%s' is not valid: accepted: seconds, 0.1..3600",
				            argv[i] + 11);
		} else if (pid == 0 && parse_pid(argv[i]) != 0) {
			pid = parse_pid(argv[i]);
		} else {
			usage_error("top: '%s' is not valid: accepted: --once, --top=N, --interval=S, "
			            "and one PID", argv[i]);
		}
	}
	if (pid == 0)
		usage_error("top: %s", "needs a PID");
	if (h == NULL)
		return 1;
	if (!current_file(pid, path, sizeof(path)))
		return nothing_for(pid);
	if ((rc = open_file(path, pid, &fd, false)) != 0)
		return rc == -1 ? 3 : 1;
	close(fd);

	if (!once && isatty(STDIN_FILENO)) {
		struct termios raw;

		if (tcgetattr(STDIN_FILENO, &saved_tty) == 0) {
			raw = saved_tty;
			raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
			raw.c_cc[VMIN] = 0;
			raw.c_cc[VTIME] = 0;
			if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0) {
				tty_raw = true;
				atexit(restore_tty);
				signal(SIGINT, on_signal);
				signal(SIGTERM, on_signal);
			}
		}
	}
	for (;;) {
		struct ts_report_options o = { .prefix = "", .sites = 3, .describe = describe_site,
		                               .header = 1 };
		char clock_text[64];
		enum state state;
		struct timespec ts;

		if (open_file(path, pid, &fd, false) != 0)
			return 1;
		if (ts_report_read(fd, h, &report) != 0) {
			fprintf(stderr, "%s: %s: %s\n", me, path,
			        errno == EINVAL ? "not a statistics file of this version" : strerror(errno));
			close(fd);
			return 1;
		}
		close(fd);
		state = state_of(h, path);
		clock_gettime(CLOCK_REALTIME, &ts);
		when((uint64_t)ts.tv_sec * 1000000000u, clock_text, sizeof(clock_text));
		if (!once)
			fputs("\033[H\033[2J", stdout); /* home, clear */
		printf("ticketspin top - pid %d - %s - %s%s\n", pid, clock_text, state_text(state),
		       once ? "" : " - q quits");
		printf("command: %s\n", h->command);
		printf("%s\n", have_previous ? "locks ranked by contended acquisitions in the last "
		                               "interval (/s: per second)"
		                             : "locks ranked by contended acquisitions since start");
		fflush(stdout);
		o.top = top != 0 ? top : 20;
		o.describe_arg = h;
		o.ticks_per_ns = ts_ticks_per_ns(h);
		o.previous = have_previous ? &previous : NULL;
		o.interval_s = interval;
		ts_report_write(STDOUT_FILENO, h, &report, &o);
		if (have_previous)
			ts_report_free(&previous);
		previous = report;
		have_previous = true;
		if (once || state != RUNNING)
			break;
		if (wait_or_quit(interval))
			break;
	}
	ts_report_free(&previous);
	restore_tty();
	free(h);
	return 0;
}

static void usage(void)
{
	printf("Usage: %s report [--top=N] [PID]...\n"
	       "       %s report --clean\n"
	       "       %s top [--once] [--top=N] [--interval=SECONDS] PID\n"
	       "Read the statistics that processes run with TICKET_STATS (ticketspin --stats)\n"
	       "keep in a shared-memory file, named by pid, in $XDG_RUNTIME_DIR or /dev/shm.\n"
	       "\n"
	       "  report PID...  the report of each PID, running or not: after a normal exit\n"
	       "                 (with TICKET_STATS_KEEP=1), _exit, exec or any signal,\n"
	       "                 SIGKILL included; without PID, list the files there are\n"
	       "  report --clean remove the files of processes that no longer exist\n"
	       "  top PID        the most contended locks of a running process, every second\n"
	       "                 (--interval); q quits; --once prints one screen and exits\n"
	       "  --top=N        how many locks to show (default: the process's TICKET_STATS_TOP)\n"
	       "\n"
	       "Only your own processes' statistics can be read.  Exit status: 0, 1 when there\n"
	       "are no statistics, 2 for a bad option, 3 when they are another user's.\n",
	       me, me, me);
}

int main(int argc, char **argv)
{
	init_directories();
	if (argc < 2)
		usage_error("%s", "a command is needed: report or top");
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage();
			return 0;
		}
	}
	if (strcmp(argv[1], "report") == 0)
		return cmd_report(argc - 2, argv + 2);
	if (strcmp(argv[1], "top") == 0)
		return cmd_top(argc - 2, argv + 2);
	usage_error("unknown command '%s': accepted: report, top", argv[1]);
	return 2;
}
