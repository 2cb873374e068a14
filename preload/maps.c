/*
 * maps.c - loaded objects from /proc/self/maps, without the loader's lock;
 * see maps.h.
 *
 * The file is read in page-sized pieces into a stack buffer with raw system
 * calls; a line longer than the buffer (a path near PATH_MAX) is skipped.
 * The kernel builds each read from the live mappings, so a dlopen() or
 * dlclose() in another thread may show a mapping twice or not at all: the
 * result is a best effort, which is all a report needs.
 */
#include "maps.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

struct line {
	uint64_t start, end, offset;
	const char *path; /* NULL: anonymous or a pseudo-file ([heap], [stack]) */
	size_t path_len;
	bool writable;    /* perms "rw.." */
	bool shared;      /* perms "...s": MAP_SHARED */
};

static const char *parse_hex(const char *p, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	const char *first = p;

	for (; p < end; p++) {
		unsigned d;

		if (*p >= '0' && *p <= '9')
			d = (unsigned)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			d = (unsigned)(*p - 'a' + 10);
		else
			break;
		v = v << 4 | d;
	}
	*out = v;
	return p == first ? NULL : p;
}

static const char *skip_field(const char *p, const char *end)
{
	while (p < end && *p != ' ')
		p++;
	while (p < end && *p == ' ')
		p++;
	return p;
}

/* "start-end perms offset dev inode   path" */
static bool parse_line(const char *p, const char *end, struct line *l)
{
	if ((p = parse_hex(p, end, &l->start)) == NULL || p >= end || *p != '-' ||
	    (p = parse_hex(p + 1, end, &l->end)) == NULL)
		return false;
	p = skip_field(p, end); /* to perms */
	if (end - p < 4)
		return false;
	l->writable = p[1] == 'w';
	l->shared = p[3] == 's';
	p = skip_field(p, end); /* to offset */
	if ((p = parse_hex(p, end, &l->offset)) == NULL)
		return false;
	p = skip_field(p, end); /* to dev */
	p = skip_field(p, end); /* to inode */
	p = skip_field(p, end); /* to the path, if any */
	l->path = p < end && *p == '/' ? p : NULL;
	l->path_len = l->path != NULL ? (size_t)(end - p) : 0;
	/* " (deleted)" and the like stay part of the path: harmless for naming */
	return true;
}

/*
 * Calls @fn for each line; stops when it returns false.  The line's path
 * points into a buffer reused for the next line.  False if the file could
 * not be opened.  Raw system calls, a stack buffer, and string functions
 * that POSIX lists as async-signal-safe: a fork's child handler may call it.
 */
static bool each_line(bool (*fn)(const struct line *l, void *arg), void *arg)
{
	char buf[4096];
	size_t used = 0;
	bool skipping = false; /* inside a line too long for the buffer */
	long fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	for (;;) {
		long n = syscall(SYS_read, (int)fd, buf + used, sizeof(buf) - used);
		char *p, *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
		p = buf;
		while ((nl = memchr(p, '\n', used - (size_t)(p - buf))) != NULL) {
			struct line l;

			if (!skipping && parse_line(p, nl, &l) && !fn(&l, arg)) {
				syscall(SYS_close, (int)fd);
				return true;
			}
			skipping = false;
			p = nl + 1;
		}
		used -= (size_t)(p - buf);
		memmove(buf, p, used);
		if (used == sizeof(buf)) { /* no newline in a whole buffer */
			used = 0;
			skipping = true;
		}
	}
	syscall(SYS_close, (int)fd);
	return true;
}

/* The object being assembled from consecutive lines with one path. */
struct walk {
	struct ts_mapping cur;
	bool open;             /* cur holds an object */
	uint64_t want;         /* ts_maps_find: the address */
	bool found;            /* the address is in cur */
	bool done;
	void (*fn)(const struct ts_mapping *m, void *arg);
	void *arg;
	struct ts_mapping *out;
};

static bool same_path(const struct ts_mapping *m, const struct line *l)
{
	size_t len = l->path_len < sizeof(m->path) - 1 ? l->path_len : sizeof(m->path) - 1;

	return strncmp(m->path, l->path, len) == 0 && m->path[len] == '\0';
}

/* Ends the object in w->cur: hands it on; false to stop the walk. */
static bool close_object(struct walk *w)
{
	if (!w->open)
		return true;
	w->open = false;
	if (w->fn != NULL && w->cur.base != 0)
		w->fn(&w->cur, w->arg);
	if (w->found) {
		*w->out = w->cur;
		w->done = true;
		return false;
	}
	return true;
}

static bool walk_line(const struct line *l, void *arg)
{
	struct walk *w = arg;

	if (w->open && l->path == NULL && l->start == w->cur.end) {
		/*
		 * Anonymous and right after the object's last file page: its .bss
		 * (a sanitizer build's padded globals reach it): still the object.
		 */
		w->cur.end = l->end;
		if (w->want != 0 && l->start <= w->want && w->want < l->end)
			w->found = true;
		return true;
	}
	if (w->open && (l->path == NULL || !same_path(&w->cur, l) || l->offset == 0)) {
		/* anonymous lines inside an object (its .bss) end it: fine for naming */
		if (!close_object(w))
			return false;
	}
	if (l->path == NULL) {
		if (w->want != 0 && l->start <= w->want && w->want < l->end) {
			w->done = true; /* no file backs it */
			return false;
		}
		return true;
	}
	if (!w->open) {
		size_t len = l->path_len < sizeof(w->cur.path) - 1 ? l->path_len : sizeof(w->cur.path) - 1;

		memcpy(w->cur.path, l->path, len);
		w->cur.path[len] = '\0';
		w->cur.base = l->offset == 0 ? l->start : 0;
		w->cur.start = l->start;
		w->open = true;
	}
	w->cur.end = l->end;
	if (w->want != 0 && l->start <= w->want && w->want < l->end)
		w->found = true;
	return true;
}

bool ts_maps_find(uint64_t address, struct ts_mapping *out)
{
	struct walk w = { .want = address, .out = out };

	if (address == 0)
		return false;
	each_line(walk_line, &w);
	if (!w.done && w.open && w.found)
		*out = w.cur, w.done = true;
	return w.done && w.found;
}

void ts_maps_each(void (*fn)(const struct ts_mapping *m, void *arg), void *arg)
{
	struct walk w = { .fn = fn, .arg = arg };
	struct ts_mapping unused;

	w.out = &unused;
	each_line(walk_line, &w);
	close_object(&w);
}

struct private_check {
	ts_word_t *const *words;
	size_t n;
	bool *ours;
};

static bool check_line(const struct line *l, void *arg)
{
	struct private_check *c = arg;

	for (size_t i = 0; i < c->n; i++) {
		uint64_t a = (uint64_t)(uintptr_t)c->words[i];

		/* the whole word in the line: a word is 4-aligned, a line page-aligned */
		if (l->start <= a && a + sizeof(ts_word_t) <= l->end)
			c->ours[i] = l->writable && !l->shared;
	}
	return true;
}

bool ts_maps_words_private(ts_word_t *const *words, size_t n, bool *ours)
{
	struct private_check c = { words, n, ours };

	for (size_t i = 0; i < n; i++)
		ours[i] = false;
	return each_line(check_line, &c);
}

#if __SIZEOF_POINTER__ == 8
#define ELFCLASS_NATIVE ELFCLASS64
#define SYM_TYPE(info) ELF64_ST_TYPE(info)
#else
#define ELFCLASS_NATIVE ELFCLASS32
#define SYM_TYPE(info) ELF32_ST_TYPE(info)
#endif

/* ---- symbol names, from the object's dynamic symbol table in memory ---- */

/*
 * Copies @len bytes of our own memory at @addr: through process_vm_readv(),
 * which fails with EFAULT where a plain read would fault (an object unloaded
 * meanwhile, a damaged table).  False when it cannot (a seccomp filter may
 * refuse the call): the report then names no symbol.
 */
static bool read_memory(uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	return syscall(SYS_process_vm_readv, (long)getpid(), &local, 1ul, &remote, 1ul, 0ul) ==
	       (long)len;
}

struct dynamic_info {
	uint64_t bias, symtab, strtab, strsz, hash, gnu_hash;
};

/* The object's load bias and its dynamic table's addresses. */
static bool dynamic_info(const struct ts_mapping *m, struct dynamic_info *d)
{
	ElfW(Ehdr) eh;
	uint64_t dyn = 0, first_load = UINT64_MAX;

	memset(d, 0, sizeof(*d));
	if (!read_memory(m->base, &eh, sizeof(eh)) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS_NATIVE || eh.e_phentsize != sizeof(ElfW(Phdr)) ||
	    eh.e_phnum > 64)
		return false;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		ElfW(Phdr) ph;

		if (!read_memory(m->base + eh.e_phoff + i * sizeof(ph), &ph, sizeof(ph)))
			return false;
		if (ph.p_type == PT_LOAD && first_load == UINT64_MAX)
			first_load = ph.p_vaddr & ~(uint64_t)(ph.p_align > 1 ? ph.p_align - 1 : 0);
		else if (ph.p_type == PT_DYNAMIC)
			dyn = ph.p_vaddr;
	}
	if (dyn == 0 || first_load == UINT64_MAX)
		return false;
	d->bias = m->base - first_load;
	for (unsigned i = 0; i < 512; i++) {
		ElfW(Dyn) e;

		if (!read_memory(d->bias + dyn + i * sizeof(e), &e, sizeof(e)) || e.d_tag == DT_NULL)
			break;
		/*
		 * The loader relocates these in place on x86-64; an object whose
		 * table is read-only keeps them relative to the bias.
		 */
		uint64_t v = e.d_un.d_ptr < d->bias ? e.d_un.d_ptr + d->bias : e.d_un.d_ptr;

		switch (e.d_tag) {
		case DT_SYMTAB: d->symtab = v; break;
		case DT_STRTAB: d->strtab = v; break;
		case DT_STRSZ: d->strsz = e.d_un.d_val; break;
		case DT_HASH: d->hash = v; break;
		case DT_GNU_HASH: d->gnu_hash = v; break;
		}
	}
	return d->symtab != 0 && d->strtab != 0 && (d->hash != 0 || d->gnu_hash != 0);
}

/* How many entries the dynamic symbol table has: from DT_HASH, else DT_GNU_HASH. */
static uint32_t symbol_count(const struct dynamic_info *d)
{
	uint32_t words[4], count = 0;

	if (d->hash != 0)
		return read_memory(d->hash, words, 8) ? words[1] : 0;
	/* nbuckets, symoffset, bloom words, bloom shift; then the bloom, buckets, chains */
	if (!read_memory(d->gnu_hash, words, sizeof(words)) || words[0] > (1u << 24) ||
	    words[2] > (1u << 24))
		return 0;
	uint64_t buckets = d->gnu_hash + 16 + (uint64_t)words[2] * sizeof(ElfW(Addr));
	uint64_t chains = buckets + (uint64_t)words[0] * 4;

	for (uint32_t b = 0; b < words[0]; b++) {
		uint32_t start;

		if (!read_memory(buckets + b * 4ull, &start, 4))
			return 0;
		if (start + 1 > count)
			count = start + 1;
	}
	if (count == 0 || count <= words[1])
		return count;
	/* the last bucket's chain ends at the entry with bit 0 set */
	for (uint32_t i = count - 1; i < (1u << 24); i++) {
		uint32_t h;

		if (!read_memory(chains + (uint64_t)(i - words[1]) * 4, &h, 4))
			return 0;
		if (h & 1)
			return i + 1;
	}
	return 0;
}

/* The defined function or object of @m covering @address: its name and start. */
static bool find_symbol(const struct ts_mapping *m, uint64_t address, char *name, size_t size,
                        uint64_t *start)
{
	struct dynamic_info d;
	uint32_t n;
	ElfW(Sym) chunk[64];

	if (!dynamic_info(m, &d) || (n = symbol_count(&d)) == 0 || n > (1u << 24))
		return false;
	for (uint32_t i = 0; i < n; i += 64) {
		uint32_t k = n - i < 64 ? n - i : 64;

		if (!read_memory(d.symtab + (uint64_t)i * sizeof(ElfW(Sym)), chunk, k * sizeof(ElfW(Sym))))
			return false;
		for (uint32_t j = 0; j < k; j++) {
			const ElfW(Sym) *s = &chunk[j];
			unsigned type = SYM_TYPE(s->st_info);
			uint64_t from = d.bias + s->st_value;

			if ((type != STT_FUNC && type != STT_OBJECT && type != STT_GNU_IFUNC) ||
			    s->st_shndx == SHN_UNDEF || address < from ||
			    address >= from + (s->st_size != 0 ? s->st_size : 1) ||
			    (d.strsz != 0 && s->st_name >= d.strsz))
				continue;
			/* a name cut short by the buffer or a table that ends early: still a name */
			memset(name, 0, size);
			for (size_t got = 0; got + 1 < size; got += 16) {
				size_t want = size - 1 - got < 16 ? size - 1 - got : 16;

				if (!read_memory(d.strtab + s->st_name + got, name + got, want))
					break;
				if (memchr(name + got, '\0', want) != NULL)
					break;
			}
			name[size - 1] = '\0';
			*start = from;
			return name[0] != '\0';
		}
	}
	return false;
}

void ts_maps_describe(char *buf, size_t size, const void *address)
{
	struct ts_mapping m;
	const char *file;
	char symbol[128];
	uint64_t symbol_start;

	if (!ts_maps_find((uintptr_t)address, &m) || m.base == 0) {
		snprintf(buf, size, "%p", address);
		return;
	}
	file = strrchr(m.path, '/');
	file = file != NULL ? file + 1 : m.path;
	if (find_symbol(&m, (uintptr_t)address, symbol, sizeof(symbol), &symbol_start))
		snprintf(buf, size, "%p (%s+%#lx, %s+%#lx)", address, file,
		         (unsigned long)((uintptr_t)address - m.base), symbol,
		         (unsigned long)((uintptr_t)address - symbol_start));
	else
		snprintf(buf, size, "%p (%s+%#lx)", address, file,
		         (unsigned long)((uintptr_t)address - m.base));
}
