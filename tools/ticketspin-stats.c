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
#include <sys/ioctl.h>
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

/* start_time_of(): the process is there, but its start time cannot be read */
#define START_UNKNOWN UINT64_MAX

/*
 * Whether thread group @pid has a thread other than its leader: a leader
 * that called pthread_exit() shows as a zombie ('Z') in /proc/PID/stat while
 * the other threads run on, and the process is alive.
 */
static bool has_other_threads(int pid)
{
	char path[64];
	DIR *dir;
	struct dirent *e;
	bool found = false;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	if ((dir = opendir(path)) == NULL)
		return false;
	while (!found && (e = readdir(dir)) != NULL)
		found = e->d_name[0] >= '1' && e->d_name[0] <= '9' && atoi(e->d_name) != pid;
	closedir(dir);
	return found;
}

/*
 * /proc/PID/stat field 22, the start time; 0 only when the process is known
 * to be gone (no /proc/PID, or a zombie or dying process: its memory is
 * gone, it will not run again), START_UNKNOWN when it cannot be told (a
 * failure to open or read other than "no such process", as under a shortage
 * of memory or file descriptors): a report must never call a live process
 * dead, so a doubt counts as alive.
 */
static uint64_t start_time_of(int pid)
{
	char path[64], buf[1024], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if ((f = fopen(path, "re")) == NULL)
		return errno == ENOENT || errno == ESRCH ? 0 : START_UNKNOWN;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ' || p[2] == '\0')
		return n == 0 ? 0 : START_UNKNOWN; /* empty: it went while we read */
	if (strchr("Xx", p[2]) != NULL || (p[2] == 'Z' && !has_other_threads(pid)))
		return 0; /* field 3, the state */
	for (int field = 2; field < 22 && p != NULL; field++)
		p = strchr(p + 1, ' ');
	return p != NULL ? strtoull(p + 1, NULL, 10) : START_UNKNOWN;
}

/* Whether a process started at @started (start_time_of) is not the one of @h. */
static bool gone(const struct ts_file_header *h, uint64_t started)
{
	return started == 0 ||
	       (started != START_UNKNOWN && h->start_time != 0 && started != h->start_time);
}

/* Whether process @pid still has @path mapped (an exec drops it). */
static bool maps_file(int pid, const char *path)
{
	char maps[64], line[PATH_MAX + 256];
	char real[PATH_MAX];
	bool found = false, any = false;
	FILE *f;

	if (realpath(path, real) == NULL)
		snprintf(real, sizeof(real), "%s", path);
	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	if ((f = fopen(maps, "re")) == NULL)
		return true; /* cannot tell: say it runs */
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		any = true;
		line[strcspn(line, "\n")] = '\0';
		found = strstr(line, real) != NULL || strstr(line, path) != NULL;
	}
	fclose(f);
	/* no mapping at all: the leader is a zombie whose threads run on (cannot tell) */
	return found || !any;
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
	if (gone(h, started))
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

/* ---- formatting: fit the terminal, --wide, --csv ------------------------------ */

/*
 * The library writes a report with every column (ts_report_write, shared
 * with the report at exit): rows about 270 characters wide.  That is the
 * --wide layout, and the default when stdout is not a terminal, so that
 * scripts and logs see one stable format.  On a terminal, or with
 * --width=N, the rows are cut down to fit: the most useful columns first
 * (lock, call site, contended, wait mean/p99/max, hold mean), then more as
 * room allows.  --csv writes every column, one header line and one line per
 * lock, for scripts.
 *
 * The fitted and CSV layouts are made from the library's wide rows, parsed
 * back (the merged per-lock records are private to preload/stats_report.c);
 * call sites go through as tokens ("@N", describe_token) so that their
 * names, which may hold any character, need no parsing.  A row that does not
 * parse falls back to the wide layout, with a warning.
 */
enum layout { LAYOUT_WIDE, LAYOUT_FIT, LAYOUT_CSV };

static void usage_error(const char *fmt, const char *arg);

struct format {
	enum layout layout;
	unsigned width;  /* LAYOUT_FIT: columns; 0: the terminal's, at each screen */
	bool csv_header; /* printed once */
};

/* Call sites named during one report, by token. */
struct site_names {
	char **name;
	size_t n, cap;
	const struct ts_file_header *header;
};

static void describe_token(uint64_t address, char *buf, size_t size, void *arg)
{
	struct site_names *s = arg;
	char name[1024];

	describe_site(address, name, sizeof(name), (void *)s->header);
	if (s->n == s->cap) {
		size_t cap = s->cap != 0 ? 2 * s->cap : 64;
		char **grown = realloc(s->name, cap * sizeof(*grown));

		if (grown == NULL) {
			snprintf(buf, size, "@-1");
			return;
		}
		s->name = grown;
		s->cap = cap;
	}
	if ((s->name[s->n] = strdup(name)) == NULL) {
		snprintf(buf, size, "@-1");
		return;
	}
	snprintf(buf, size, "@%zu", s->n++);
}

static void site_names_free(struct site_names *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->name[i]);
	free(s->name);
	memset(s, 0, sizeof(*s));
}

#define ROW_SITES 3

/*
 * One lock's row of the wide report: its columns as the library reads them
 * back (ts_report_parse_row()), and its call sites, which wide_text() wrote
 * as our tokens ("@N share%").
 */
struct row {
	struct ts_report_row f;
	unsigned sites; /* how many call sites the lock has */
	int nsite;
	long site[ROW_SITES];
	unsigned share[ROW_SITES];
};

/*
 * Parses one lock's row of ts_report_write's wide layout ("stats: " prefix)
 * into @r; false when @line does not parse.
 */
static bool parse_row(const char *line, bool has_rate, struct row *r)
{
	const char *p;
	int used;

	memset(r, 0, sizeof(*r));
	if (!ts_report_parse_row(line, has_rate, &r->f))
		return false;
	p = r->f.sites;
	if (strcmp(p, "-") == 0)
		return true;
	while (*p == '@' && r->nsite < ROW_SITES) {
		used = 0;
		if (sscanf(p, "@%ld %u%%%n", &r->site[r->nsite], &r->share[r->nsite], &used) != 2 ||
		    used == 0)
			return false;
		r->nsite++;
		p += used;
		if (strncmp(p, ", ", 2) == 0)
			p += 2;
	}
	r->sites = (unsigned)r->nsite;
	if (*p == ' ' && sscanf(p, " (of %u sites)", &r->sites) != 1)
		return false;
	return true;
}

/* The wide report of @h, with call sites as tokens into @names; malloc'ed. */
static char *wide_text(const struct ts_file_header *h, const struct ts_report *report,
                       const struct ts_report_options *wide, struct site_names *names)
{
	struct ts_report_options o = *wide;
	int fd = memfd_create("ticketspin-report", MFD_CLOEXEC);
	char *text = NULL;
	off_t size;

	if (fd < 0)
		return NULL;
	names->header = h;
	o.describe = describe_token;
	o.describe_arg = names;
	o.prefix = "";
	o.header = 0;
	ts_report_write(fd, h, report, &o);
	size = lseek(fd, 0, SEEK_END);
	if (size >= 0 && (text = malloc((size_t)size + 1)) != NULL) {
		if (pread(fd, text, (size_t)size, 0) != size) {
			free(text);
			text = NULL;
		} else {
			text[size] = '\0';
		}
	}
	close(fd);
	return text;
}

/* The rows of @text (the locks', in the library's order); malloc'ed, NULL on a bad row. */
static struct row *parse_rows(char *text, bool has_rate, size_t *count)
{
	struct row *rows = NULL;
	size_t n = 0, cap = 0;

	for (char *line = text, *next; line != NULL && *line != '\0'; line = next) {
		struct row r;

		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		if (strncmp(line, "stats: ", 7) != 0)
			continue;
		/* a lock's row starts with its address, right-aligned; other lines with words */
		if (strncmp(line + 7 + strspn(line + 7, " "), "0x", 2) != 0)
			continue;
		if (!parse_row(line, has_rate, &r)) {
			free(rows);
			return NULL;
		}
		if (n == cap) {
			struct row *grown = realloc(rows, (cap = cap ? 2 * cap : 32) * sizeof(*rows));

			if (grown == NULL) {
				free(rows);
				return NULL;
			}
			rows = grown;
		}
		rows[n++] = r;
	}
	*count = n;
	if (rows == NULL)
		rows = malloc(sizeof(*rows)); /* none: not an error */
	return rows;
}

/* $COLUMNS when it is a width we can fit (40..10000, digits only), else 0. */
static unsigned columns_variable(void)
{
	const char *columns = getenv("COLUMNS");
	char *end;
	long n;

	if (columns == NULL || columns[0] < '0' || columns[0] > '9')
		return 0;
	n = strtol(columns, &end, 10);
	return *end == '\0' && n >= 40 && n <= 10000 ? (unsigned)n : 0;
}

/*
 * The width to fit: --width's; on a terminal, its width (else $COLUMNS, else
 * 80); not on a terminal, $COLUMNS when set (a user who sets it, as in
 * "COLUMNS=120 ticketspin report PID | less", asks for that width), else 0:
 * the wide layout, the stable format for scripts and logs.
 */
static unsigned screen_width(const struct format *f)
{
	struct winsize ws;

	if (f->width != 0)
		return f->width;
	if (!isatty(STDOUT_FILENO))
		return columns_variable();
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return columns_variable() != 0 ? columns_variable() : 80;
}

/* The rows a terminal shows, or 0 when not a terminal (or unknown). */
static unsigned screen_rows(void)
{
	struct winsize ws;

	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0)
		return ws.ws_row;
	return 0;
}

/* Prose for the fitted layout: words wrapped at @width, continuation indented. */
static void put_wrapped(const char *text, unsigned width)
{
	size_t len = strlen(text), start = 0, indent = 0;

	while (len - start > width - indent) {
		size_t cut = start + (width - indent);

		while (cut > start && text[cut] != ' ')
			cut--;
		if (cut == start)
			cut = start + (width - indent); /* one long word: cut it */
		printf("%*s%.*s\n", (int)indent, "", (int)(cut - start), text + start);
		start = cut;
		while (text[start] == ' ')
			start++;
		indent = 2;
	}
	printf("%*s%s\n", (int)indent, "", text + start);
}

/* Microseconds, in at most 7 characters, 3 significant digits or more. */
static void human_us(double us, char *buf, size_t size)
{
	if (us < 10)
		snprintf(buf, size, "%.3f", us);
	else if (us < 100)
		snprintf(buf, size, "%.2f", us);
	else if (us < 1000)
		snprintf(buf, size, "%.1f", us);
	else
		snprintf(buf, size, "%.0f", us);
}

static void human_text_us(const char *text, char *buf, size_t size)
{
	if (strcmp(text, "-") == 0)
		snprintf(buf, size, "-");
	else
		human_us(strtod(text, NULL), buf, size);
}

/* "function+0x1a (libfoo.so.1)": the object's directory left out. */
static void short_site(const char *name, char *buf, size_t size)
{
	const char *open = strrchr(name, '(');
	size_t len = strlen(name);

	if (open != NULL && open > name && open[-1] == ' ' && len > 0 && name[len - 1] == ')') {
		const char *base = strrchr(open, '/');

		snprintf(buf, size, "%.*s(%s", (int)(open - name), name, base != NULL ? base + 1 : open + 1);
	} else if (name[0] == '/') {
		const char *plus = strrchr(name, '+');
		const char *base = strrchr(name, '/');

		snprintf(buf, size, "%s", plus != NULL && base < plus ? base + 1 : name);
	} else {
		snprintf(buf, size, "%s", name);
	}
}

enum column_id {
	COL_LOCK, COL_CONTENDED, COL_RATE, COL_WAITED, COL_WAIT_MEAN, COL_WAIT_P99, COL_WAIT_P999,
	COL_WAIT_MAX, COL_HOLD_MEAN, COL_HOLD_P99, COL_HOLD_MAX, COL_HOLDS, COL_TOTAL, COL_THREADS,
	COL_AHEAD, COL_POLLS, COL_DELAY, COL_YIELDS, COL_PARKS, COL_RESTS, COL_SKIPS, COL_DOZES,
	COL_LINE, COL_BORROWS, COL_WAIT_MS, COL_SITE,
	NCOLUMNS
};

/* In display order; each is taken, by @rank, while there is room. */
static const struct column {
	const char *group; /* over the titles of a run of columns */
	const char *title;
	int rank; /* 0 first */
	bool left; /* aligned left */
} columns[NCOLUMNS] = {
	[COL_LOCK] = { "", "lock", 0, true },
	[COL_CONTENDED] = { "", "contended", 2, false },
	[COL_RATE] = { "", "/s", 3, false },
	/* the wait figures are of the acquisitions that waited, "waited" of them */
	[COL_WAITED] = { "", "waited", 11, false },
	[COL_WAIT_MEAN] = { "wait", "mean", 4, false },
	[COL_WAIT_P99] = { "wait", "p99", 5, false },
	[COL_WAIT_P999] = { "wait", "p99.9", 8, false },
	[COL_WAIT_MAX] = { "wait", "max", 6, false },
	[COL_HOLD_MEAN] = { "hold", "mean", 7, false },
	[COL_HOLD_P99] = { "hold", "p99", 12, false },
	[COL_HOLD_MAX] = { "hold", "max", 13, false },
	[COL_HOLDS] = { "hold", "n", 14, false },
	[COL_TOTAL] = { "", "total", 9, false },
	[COL_THREADS] = { "", "threads", 10, false },
	[COL_AHEAD] = { "", "ahead", 15, false },
	[COL_POLLS] = { "", "polls", 16, false },
	[COL_DELAY] = { "", "delay", 17, false },
	[COL_YIELDS] = { "", "yields", 18, false },
	[COL_PARKS] = { "", "parks", 19, false },
	[COL_RESTS] = { "", "rests", 20, false },
	[COL_SKIPS] = { "", "skips", 21, false },
	[COL_DOZES] = { "", "dozed", 22, false },
	[COL_LINE] = { "", "line", 23, false },
	[COL_BORROWS] = { "", "steals", 24, false },
	[COL_WAIT_MS] = { "", "wait-ms", 25, false },
	[COL_SITE] = { "", "top call site (share)", 1, true },
};

#define CELL 32
#define SITE_MIN 24 /* the call site column's least width */
#define FIRST_OPTIONAL_RANK 8 /* columns below it come before the call site's whole width */

struct cells {
	char cell[NCOLUMNS][CELL];
	char site[512]; /* COL_SITE's, whole */
};

static const char *cell_text(const struct cells *c, int column)
{
	return column == COL_SITE ? c->site : c->cell[column];
}

static void row_cells(const struct row *r, const struct site_names *names, struct cells *c)
{
	const struct ts_report_row *f = &r->f;
	char site[480];

	snprintf(c->cell[COL_LOCK], CELL, "%#llx", f->lock);
	snprintf(c->cell[COL_CONTENDED], CELL, "%llu", f->contended);
	snprintf(c->cell[COL_RATE], CELL, "%.0f", f->rate);
	human_us(f->wait_mean, c->cell[COL_WAIT_MEAN], CELL);
	human_us(f->wait_p99, c->cell[COL_WAIT_P99], CELL);
	human_us(f->wait_p999, c->cell[COL_WAIT_P999], CELL);
	snprintf(c->cell[COL_WAITED], CELL, "%llu", f->waited);
	human_us(f->wait_max, c->cell[COL_WAIT_MAX], CELL);
	human_text_us(f->hold_mean, c->cell[COL_HOLD_MEAN], CELL);
	snprintf(c->cell[COL_TOTAL], CELL, "%llu", f->total);
	snprintf(c->cell[COL_THREADS], CELL, "%u", f->threads);
	human_text_us(f->hold_p99, c->cell[COL_HOLD_P99], CELL);
	human_text_us(f->hold_max, c->cell[COL_HOLD_MAX], CELL);
	snprintf(c->cell[COL_HOLDS], CELL, "%llu", f->holds);
	snprintf(c->cell[COL_AHEAD], CELL, "%.2f/%u", f->ahead_avg, f->ahead_max);
	snprintf(c->cell[COL_POLLS], CELL, "%.1f", f->polls);
	snprintf(c->cell[COL_DELAY], CELL, "%.12s/%.12s", f->delay_now, f->delay_max);
	snprintf(c->cell[COL_YIELDS], CELL, "%llu", f->yields);
	snprintf(c->cell[COL_PARKS], CELL, "%llu", f->parks);
	snprintf(c->cell[COL_RESTS], CELL, "%llu", f->rests);
	snprintf(c->cell[COL_SKIPS], CELL, "%llu", f->skips);
	snprintf(c->cell[COL_DOZES], CELL, "%llu", f->dozes);
	snprintf(c->cell[COL_LINE], CELL, "%llu", f->line);
	snprintf(c->cell[COL_BORROWS], CELL, "%llu", f->borrows);
	snprintf(c->cell[COL_WAIT_MS], CELL, "%.3f", f->wait_total_ms);
	if (r->nsite == 0 || r->site[0] < 0 || (size_t)r->site[0] >= names->n) {
		snprintf(c->site, sizeof(c->site), "-");
	} else {
		short_site(names->name[r->site[0]], site, sizeof(site));
		if (r->sites > 1)
			snprintf(c->site, sizeof(c->site), "%u%% of %u: %s", r->share[0], r->sites, site);
		else
			snprintf(c->site, sizeof(c->site), "%u%% %s", r->share[0], site);
	}
}

/* The rows in columns that fit @width, most useful first. */
static void write_fitted(const struct row *rows, size_t n, const struct site_names *names,
                         unsigned width, bool has_rate)
{
	struct cells *cells = calloc(n + 1, sizeof(*cells));
	size_t w[NCOLUMNS];
	bool shown[NCOLUMNS] = { false };
	size_t used = 0, site_full;

	if (cells == NULL)
		return;
	for (int c = 0; c < NCOLUMNS; c++)
		w[c] = strlen(columns[c].title);
	for (size_t i = 0; i < n; i++) {
		row_cells(&rows[i], names, &cells[i]);
		for (int c = 0; c < NCOLUMNS; c++)
			if (strlen(cell_text(&cells[i], c)) > w[c])
				w[c] = strlen(cell_text(&cells[i], c));
	}
	/*
	 * The most useful columns first, the call site at its least width; then
	 * the call site whole, if there is room; then the other columns while
	 * they fit; the call site takes what is left of the line.
	 */
	site_full = w[COL_SITE];
	if (w[COL_SITE] > SITE_MIN)
		w[COL_SITE] = SITE_MIN;
	for (int rank = 0; rank < NCOLUMNS; rank++) {
		for (int c = 0; c < NCOLUMNS; c++) {
			if (columns[c].rank != rank || (c == COL_RATE && !has_rate))
				continue;
			if (rank == FIRST_OPTIONAL_RANK && shown[COL_SITE] && site_full > w[COL_SITE] &&
			    width > used) {
				size_t more = site_full - w[COL_SITE];

				more = more < width - used ? more : width - used;
				w[COL_SITE] += more;
				used += more;
			}
			if (c == COL_LOCK || used + 1 + w[c] <= width) {
				shown[c] = true;
				used += (used > 0) + w[c];
			}
		}
	}
	if (shown[COL_SITE] && width > used)
		w[COL_SITE] += width - used;
	/* the groups' line: "--wait--" over the columns of a group */
	{
		char line[4096];
		size_t len = 0, at = 0;
		bool any = false;

		memset(line, ' ', sizeof(line));
		for (int c = 0; c < NCOLUMNS; c++) {
			size_t span;

			if (!shown[c])
				continue;
			if (at > 0)
				at++;
			if (columns[c].group[0] == '\0' || (c > 0 && shown[c - 1] &&
			                                    strcmp(columns[c - 1].group, columns[c].group) == 0)) {
				at += w[c];
				continue;
			}
			span = w[c];
			for (int k = c + 1; k < NCOLUMNS && strcmp(columns[k].group, columns[c].group) == 0; k++)
				if (shown[k])
					span += 1 + w[k];
			if (at + span < sizeof(line) - 1) {
				size_t label = strlen(columns[c].group);

				if (span >= label + 2) {
					memset(line + at, '-', span);
					memcpy(line + at + (span - label) / 2, columns[c].group, label);
				} else {
					memcpy(line + at, columns[c].group, label < span ? label : span);
				}
				len = at + span;
				any = true;
			}
			at += w[c];
		}
		while (len > 0 && line[len - 1] == ' ')
			len--;
		line[len] = '\0';
		if (any)
			puts(line);
	}
	for (size_t i = 0; i <= n; i++) {
		char line[4096];
		size_t len = 0;

		for (int c = 0; c < NCOLUMNS && len + w[c] + 2 < sizeof(line); c++) {
			const char *text = i == 0 ? columns[c].title : cell_text(&cells[i - 1], c);
			int wc = (int)w[c];

			if (!shown[c])
				continue;
			if (len > 0)
				line[len++] = ' ';
			if (c == COL_SITE && strlen(text) > w[c] && wc > 3) /* cut: say so */
				len += (size_t)snprintf(line + len, sizeof(line) - len, "%.*s...", wc - 3,
				                        text);
			else if (columns[c].left)
				len += (size_t)snprintf(line + len, sizeof(line) - len, "%-*.*s", wc, wc, text);
			else
				len += (size_t)snprintf(line + len, sizeof(line) - len, "%*s", wc, text);
		}
		while (len > 0 && line[len - 1] == ' ')
			len--;
		line[len < width ? len : width] = '\0';
		puts(line);
	}
	free(cells);
}

static void csv_field(const char *text)
{
	putchar('"');
	for (; *text != '\0'; text++) {
		if (*text == '"')
			putchar('"');
		putchar(*text);
	}
	putchar('"');
}

/* "-" (no sample) is an empty field */
static const char *csv_value(const char *text)
{
	return strcmp(text, "-") == 0 ? "" : text;
}

static void write_csv(const struct row *rows, size_t n, const struct site_names *names,
                      const struct ts_file_header *h, const char *state, double now,
                      struct format *f)
{
	if (!f->csv_header) {
		printf("time,pid,state,lock,total,contended,per_s,wait_total_ms,waited,wait_mean_us,"
		       "wait_p99_us,wait_p999_us,wait_max_us,hold_mean_us,hold_p99_us,hold_max_us,holds,"
		       "ahead_avg,ahead_max,polls,delay_now,delay_max,yields,parks,rests,skips,dozed,line,"
		       "threads,steals,"
		       "sites,site1,site1_share,site2,site2_share,site3,site3_share\n");
		f->csv_header = true;
	}
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		const struct ts_report_row *f = &r->f;
		char rate[32] = "";

		if (f->has_rate)
			snprintf(rate, sizeof(rate), "%.0f", f->rate);
		printf("%.3f,%d,%s,%#llx,%llu,%llu,%s,%.3f,%llu,%.3f,%.3f,%.3f,%.3f,%s,%s,%s,%llu,%.2f,"
		       "%u,%.1f,%s,%s,%llu,%llu,%llu,%llu,%llu,%llu,%u,%llu,%u",
		       now, h->pid, state, f->lock, f->total, f->contended, rate, f->wait_total_ms,
		       f->waited, f->wait_mean, f->wait_p99, f->wait_p999, f->wait_max, csv_value(f->hold_mean),
		       csv_value(f->hold_p99), csv_value(f->hold_max), f->holds, f->ahead_avg,
		       f->ahead_max, f->polls, csv_value(f->delay_now), csv_value(f->delay_max),
		       f->yields, f->parks, f->rests, f->skips, f->dozes, f->line, f->threads, f->borrows,
		       r->sites);
		for (int s = 0; s < ROW_SITES; s++) {
			putchar(',');
			if (s < r->nsite && r->site[s] >= 0 && (size_t)r->site[s] < names->n) {
				csv_field(names->name[r->site[s]]);
				printf(",%u", r->share[s]);
			} else {
				putchar(',');
			}
		}
		putchar('\n');
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *const state_word[] = { "running", "exited", "ended", "exec" };

/*
 * Writes the report of @h in format @f: the summary lines (not in CSV), then
 * the rows.  @o is set up as for ts_report_write.
 */
static void write_report(const struct ts_file_header *h, const struct ts_report *report,
                         const struct ts_report_options *o, enum state state, struct format *f)
{
	unsigned width = f->layout == LAYOUT_FIT ? screen_width(f) : 0;
	struct site_names names = { 0 };
	struct row *rows = NULL;
	char *text = NULL;
	size_t n = 0;

	if (f->layout == LAYOUT_WIDE || (f->layout == LAYOUT_FIT && width == 0)) {
		fflush(stdout);
		ts_report_write(STDOUT_FILENO, h, report, o);
		return;
	}
	if ((text = wide_text(h, report, o, &names)) == NULL ||
	    (rows = parse_rows(text, o->previous != NULL, &n)) == NULL) {
		fprintf(stderr, "%s: cannot %s the report's rows; printing them whole\n", me,
		        text == NULL ? "write" : "parse");
		fflush(stdout);
		ts_report_write(STDOUT_FILENO, h, report, o);
	} else if (f->layout == LAYOUT_CSV) {
		write_csv(rows, n, &names, h, state_word[state], now_s(), f);
	} else {
		char line[512];

		snprintf(line, sizeof(line),
		         "%u lock%s contended, %llu contended acquisitions in %u thread%s; %zu shown, "
		         "most contended first; times in microseconds",
		         report->nlocks, report->nlocks == 1 ? "" : "s",
		         (unsigned long long)report->contended, report->threads,
		         report->threads == 1 ? "" : "s", n);
		put_wrapped(line, width);
		if (report->dropped_locks > 0 || report->dropped_sites > 0 ||
		    report->dropped_releases > 0 || report->unrecorded_threads > 0) {
			snprintf(line, sizeof(line),
			         "not recorded, per-thread tables full: %llu contended acquisitions, "
			         "%llu call sites, %llu releases (totals may be short); %u "
			         "thread%s without a table (--wide shows the limits)",
			         (unsigned long long)report->dropped_locks,
			         (unsigned long long)report->dropped_sites,
			         (unsigned long long)report->dropped_releases, report->unrecorded_threads,
			         report->unrecorded_threads == 1 ? "" : "s");
			put_wrapped(line, width);
		}
		if (n > 0)
			write_fitted(rows, n, &names, width, o->previous != NULL);
	}
	fflush(stdout);
	free(rows);
	free(text);
	site_names_free(&names);
}

/* --wide, --csv, --width=N: true when @arg is one of them (set in @f). */
static bool format_option(const char *arg, struct format *f)
{
	if (strcmp(arg, "--wide") == 0) {
		f->layout = LAYOUT_WIDE;
	} else if (strcmp(arg, "--csv") == 0) {
		f->layout = LAYOUT_CSV;
	} else if (strncmp(arg, "--width=", 8) == 0) {
		char *end;
		long n = strtol(arg + 8, &end, 10);

		if (end == arg + 8 || *end != '\0' || n < 40 || n > 10000)
			usage_error("--width='%s' is not valid: accepted: columns, 40..10000", arg + 8);
		f->layout = LAYOUT_FIT;
		f->width = (unsigned)n;
	} else {
		return false;
	}
	return true;
}

/* ---- report --------------------------------------------------------------- */

static int report_file(const char *path, int pid, uint32_t top, struct format *f)
{
	struct ts_file_header *h = new_header();
	struct ts_report report;
	struct ts_report_options o = { .prefix = "", .sites = 3, .describe = describe_site,
	                               .header = 1 };
	char started[64], line[1024];
	enum state state;
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
	state = state_of(h, path);
	snprintf(line, sizeof(line), "ticketspin: pid %d: %s; started %s; command: %s", h->pid,
	         state_text(state), started, h->command);
	if (f->layout == LAYOUT_FIT && screen_width(f) != 0) {
		put_wrapped(line, screen_width(f));
	} else if (f->layout != LAYOUT_CSV) {
		printf("%s\n", line);
		printf("ticketspin: file %s\n", path);
	}
	o.top = top != 0 ? top : (h->stats_top != 0 ? h->stats_top : 20);
	o.describe_arg = h;
	o.ticks_per_ns = ts_ticks_per_ns(h);
	write_report(h, &report, &o, state, f);
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
	/* none: status 1, "when there are no statistics" (usage()), as for a PID */
	if (shown == 0) {
		fprintf(stderr, "%s: no statistics files of yours in %s%s/dev/shm\n", me,
		        directories[0] != NULL ? directories[0] : "",
		        directories[0] != NULL ? " or " : "");
		return 1;
	}
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
			if (gone(h, started)) {
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
	struct format f = { .layout = LAYOUT_FIT };

	for (int i = 0; i < argc; i++) {
		if (strncmp(argv[i], "--top=", 6) == 0)
			top = parse_top(argv[i] + 6);
		else if (format_option(argv[i], &f))
			continue;
		else if (strcmp(argv[i], "--clean") == 0)
			clean = true;
		else if (parse_pid(argv[i]) != 0)
			pids++;
		else
			usage_error("report: '%s' is not a PID: accepted: --top=N, --wide, --csv, "
			            "--width=N, --clean, PID...",
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
			r = report_file(files[k].path, pid, top, &f);
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
		live = !gone(h, started) && h->state == TS_RUNNING;
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
	struct format f = { .layout = LAYOUT_FIT };

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--once") == 0) {
			once = true;
		} else if (format_option(argv[i], &f)) {
			continue;
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
			            "--wide, --csv, --width=N, and one PID", argv[i]);
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

		errno = 0;
		if ((rc = open_file(path, pid, &fd, true)) != 0) {
			/*
			 * The file went: a normal exit removes it (without
			 * TICKET_STATS_KEEP=1), between two screens.  That is
			 * the end of watching, not an error: one line, status 0.
			 */
			if (rc == -2 && errno == ENOENT) {
				restore_tty();
				fflush(stdout);
				printf("%s: pid %d exited (its statistics file is gone; "
				       "TICKET_STATS_KEEP=1 keeps it)\n", me, pid);
				free(h);
				if (have_previous)
					ts_report_free(&previous);
				return 0;
			}
			rc = open_file(path, pid, &fd, false); /* again, saying why */
			if (rc == 0)
				close(fd);
			return rc == -1 ? 3 : 1;
		}
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
		o.top = top != 0 ? top : 20;
		if (f.layout != LAYOUT_CSV) {
			unsigned width = f.layout == LAYOUT_FIT ? screen_width(&f) : 0;
			unsigned rows = screen_rows();
			char line[1024];

			if (!once)
				fputs("\033[H\033[2J", stdout); /* home, clear */
			snprintf(line, sizeof(line), "ticketspin top - pid %d - %s - %s%s", pid,
			         clock_text, state_text(state), once ? "" : " - q quits");
			if (width != 0)
				put_wrapped(line, width);
			else
				printf("%s\n", line);
			snprintf(line, sizeof(line), "command: %s", h->command);
			if (width != 0)
				put_wrapped(line, width);
			else
				printf("%s\n", line);
			printf("%s\n", have_previous ? "locks ranked by contended acquisitions in the "
			                               "last interval (/s: per second)"
			                             : "locks ranked by contended acquisitions since start");
			/* a refreshed screen: no more rows than the terminal has (8 for the rest) */
			if (!once && width != 0 && rows > 8 + 1 && o.top > rows - 8)
				o.top = rows - 8;
		}
		fflush(stdout);
		o.describe_arg = h;
		o.ticks_per_ns = ts_ticks_per_ns(h);
		o.previous = have_previous ? &previous : NULL;
		o.interval_s = interval;
		write_report(h, &report, &o, state, &f);
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
	printf("Usage: %s report [--top=N] [--wide|--csv|--width=N] [PID]...\n"
	       "       %s report --clean\n"
	       "       %s top [--once] [--top=N] [--interval=SECONDS]\n"
	       "                      [--wide|--csv|--width=N] PID\n"
	       "Read the statistics that processes run with TICKET_STATS (ticketspin --stats)\n"
	       "keep in a shared-memory file, named by pid, in $XDG_RUNTIME_DIR or /dev/shm.\n"
	       "\n"
	       "  report PID...  the report of each PID, running or not: after a normal exit\n"
	       "                 (with TICKET_STATS_KEEP=1), _exit, exec or any signal,\n"
	       "                 SIGKILL included; without PID, list the files there are\n"
	       "  report --clean remove the files of processes that no longer exist\n"
	       "  top PID        the most contended locks of a running process, every second\n"
	       "                 (--interval); q quits; --once prints one screen and exits\n"
	       "  --top=N        how many locks to show (report: default the process's\n"
	       "                 TICKET_STATS_TOP; top: default 20, no more than fit on a\n"
	       "                 terminal)\n"
	       "  --wide         every column, as the report at exit (the default when the\n"
	       "                 output is not a terminal and COLUMNS is not set: a stable\n"
	       "                 format)\n"
	       "  --width=N      fit N columns, as on a terminal, where the default fits its\n"
	       "                 width: lock, call site, contended, wait mean/p99/max, hold\n"
	       "                 mean first, then more columns as they fit\n"
	       "  --csv          every column as CSV, one header line, for scripts; top\n"
	       "                 appends rows at each interval\n"
	       "\n"
	       "Not on a terminal, $COLUMNS (if set) is the width to fit, as --width.\n"
	       "\n"
	       "Only your own processes' statistics can be read.  Exit status: 0 (top: also\n"
	       "when the process exits while watched: one line says so), 1 when there are\n"
	       "no statistics (report without PID: no files at all), 2 for a bad option,\n"
	       "3 when they are another user's.\n",
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
