/*
 * `ticketspin report` on damaged and crafted statistics files (issue 18
 * item 5): the reader must never die of a signal, whatever the file holds.
 * A real file (contended, kept with TICKET_STATS_KEEP=1) is truncated, has
 * bytes flipped, and has counts crafted (sums that overflow to 0, counts
 * past the tables, strings without their NUL, a module whose ELF string
 * table ends without one); ticketspin-stats reads each version and must
 * exit with a status.
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "probe_run.h"
#include "stats_file.h"

static char dir[] = "/tmp/ticketspin-fuzzXXXXXX";
static char xdg[160], path[256], pid_text[16];
static unsigned char *original;
static size_t original_size;

/*
 * A buffer as aligned as the file's structures (a page): the test casts it
 * to them.  The file's size is a whole number of pages.
 */
static unsigned char *page_buffer(size_t size)
{
	return aligned_alloc(4096, (size + 4095) / 4096 * 4096);
}

/* A real file of a contended run: 4 threads, one lock. */
static void make_original(void)
{
	struct probe_result r;
	char cmd[300];
	FILE *ls;
	int fd;
	struct stat st;

	cr_assert(mkdtemp(dir) != NULL);
	snprintf(xdg, sizeof(xdg), "XDG_RUNTIME_DIR=%s", dir);
	probe_run(&r, (const char *const[]){ xdg, "TICKET_STATS=1", "TICKET_STATS_KEEP=1", NULL },
	          (const char *const[]){ CONTENDED, "4", "3000", "1", NULL }, 60);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	snprintf(cmd, sizeof(cmd), "ls %s | grep ticketspin-stats.", dir);
	ls = popen(cmd, "r");
	cr_assert(ls != NULL && fgets(cmd, sizeof(cmd), ls) != NULL, "no file kept");
	pclose(ls);
	cmd[strcspn(cmd, "\n")] = '\0';
	cr_assert_eq(sscanf(cmd, "ticketspin-stats.%15[0-9]", pid_text), 1, "%s", cmd);
	snprintf(path, sizeof(path), "%s/%s", dir, cmd);
	fd = open(path, O_RDONLY);
	cr_assert(fd >= 0 && fstat(fd, &st) == 0);
	original_size = (size_t)st.st_size;
	original = page_buffer(original_size);
	cr_assert_not_null(original);
	cr_assert_eq(pread(fd, original, original_size, 0), (ssize_t)original_size);
	close(fd);
}

static void remove_all(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
	free(original);
}

TestSuite(fuzz, .init = make_original, .fini = remove_all, .timeout = 240);

static void write_version(const unsigned char *data, size_t size)
{
	int fd;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, data, size), (ssize_t)size);
	close(fd);
}

/* The reader on the current version: a status, never a signal. */
static void read_version(struct probe_result *r, const char *what, bool top)
{
	const char *argv[] = { STATS_READER, top ? "top" : "report", top ? "--once" : pid_text,
		               top ? pid_text : NULL, NULL };

	probe_run(r, (const char *const[]){ xdg, "LD_PRELOAD=", NULL }, argv, 60);
	cr_assert_lt(r->status, 128, "%s: the reader died (status %d, 137: killed at the time "
	             "limit):\n%s%s", what, r->status, r->out, r->err);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

Test(fuzz, the_original_reads)
{
	struct probe_result r;

	write_version(original, original_size);
	read_version(&r, "original", false);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert_not_null(strstr(r.out, ": 1 lock contended"), "%s", r.out);
}

Test(fuzz, truncations)
{
	struct probe_result r;
	size_t lengths[] = { 0, 7, 100, sizeof(struct ts_file_header) - 1,
		             sizeof(struct ts_file_header), sizeof(struct ts_file_header) + 5000,
		             (size_t)ts_slot_offset(1) - 1, (size_t)ts_slot_offset(1) + 12345 };
	char what[64];

	for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]) + 12; i++) {
		size_t len = i < sizeof(lengths) / sizeof(lengths[0]) ? lengths[i]
		                                                        : next_random() % original_size;

		if (len > original_size)
			len = original_size;
		write_version(original, len);
		snprintf(what, sizeof(what), "truncated to %zu bytes", len);
		read_version(&r, what, false);
	}
}

Test(fuzz, byte_flips)
{
	struct probe_result r;
	unsigned char *copy = page_buffer(original_size);
	char what[64];

	cr_assert_not_null(copy);
	for (int round = 0; round < 60; round++) {
		int flips = 1 + (int)(next_random() % 64);

		memcpy(copy, original, original_size);
		for (int f = 0; f < flips; f++) {
			/* the header's fields after the magic and version, or a slot's */
			size_t at = round % 2 == 0
			                    ? 16 + next_random() % (offsetof(struct ts_file_header, modules) - 16)
			                    : (size_t)ts_slot_offset((uint32_t)(next_random() % 4)) +
			                              next_random() % sizeof(struct ts_thread_slot);

			if (at < original_size)
				copy[at] ^= (unsigned char)(1u << (next_random() % 8));
		}
		write_version(copy, original_size);
		snprintf(what, sizeof(what), "round %d, %d bit flips", round, flips);
		read_version(&r, what, round % 10 == 9);
	}
	free(copy);
}

static struct ts_thread_slot *slot_in(unsigned char *data, uint32_t i)
{
	return (struct ts_thread_slot *)(void *)(data + ts_slot_offset(i));
}

Test(fuzz, crafted_counts)
{
	struct probe_result r;
	unsigned char *copy = page_buffer(original_size);
	struct ts_file_header *h = (struct ts_file_header *)(void *)copy;
	uint32_t backed = (uint32_t)((original_size - sizeof(*h)) / sizeof(struct ts_thread_slot));
	struct ts_thread_slot *t;
	int found = -1;

	cr_assert_not_null(copy);
	cr_assert_geq(backed, 1);
	/* contended counts of one lock summing to 2^64: 0 (was SIGFPE) */
	memcpy(copy, original, original_size);
	t = slot_in(copy, 0);
	for (int k = 0; k < (int)TS_LOCK_SLOTS && found < 0; k++)
		if (t->locks[k].lock != 0 && t->locks[k].contended != 0)
			found = k;
	for (uint32_t i = 1; found < 0 && i < backed; i++) {
		t = slot_in(copy, i);
		for (int k = 0; k < (int)TS_LOCK_SLOTS && found < 0; k++)
			if (t->locks[k].lock != 0 && t->locks[k].contended != 0)
				found = k;
	}
	cr_assert_geq(found, 0, "no lock record in the file");
	{
		uint64_t others = 0, lock = t->locks[found].lock;

		for (uint32_t i = 0; i < backed; i++) {
			struct ts_thread_slot *u = slot_in(copy, i);

			u->folded = u->pending.seq; /* no pending record to add */
			for (int k = 0; k < (int)TS_LOCK_SLOTS; k++)
				if (u->locks[k].lock == lock && !(u == t && k == found))
					others += u->locks[k].contended;
		}
		t->locks[found].contended = 1ull << 63;
		for (int k = 0; k < (int)TS_LOCK_SLOTS; k++)
			if (t->locks[k].lock == 0) {
				/* the same lock again: the sum of all wraps to 0 */
				t->locks[k] = t->locks[found];
				t->locks[k].contended = (1ull << 63) - others;
				break;
			}
	}
	write_version(copy, original_size);
	read_version(&r, "contended counts summing to 2^64", false);

	/* counts past every table, strings without their NUL */
	memcpy(copy, original, original_size);
	h->threads = UINT32_MAX;
	h->nmodules = UINT32_MAX;
	h->tsc0 = UINT64_MAX;
	h->ns0 = 1;
	memset(h->command, 'c', sizeof(h->command));
	memset(h->exe, 'e', sizeof(h->exe));
	for (uint32_t i = 0; i < TS_MODULE_LIMIT; i++)
		memset(h->modules[i].path, 'm', sizeof(h->modules[i].path));
	for (uint32_t i = 0; i < backed; i++) {
		t = slot_in(copy, i);
		t->nlocks = t->nsites = UINT32_MAX;
		t->last_lock = t->last_site = UINT32_MAX;
		t->pending.seq += 2; /* a pending record to fold, with damaged fields */
		t->pending.lock = 0x1234;
		t->pending.served = 1;
		t->pending.begin = UINT64_MAX;
		t->pending.hold = UINT64_MAX;
		t->pending.ahead = UINT16_MAX;
		t->locks[0].released = UINT64_MAX;
		t->locks[0].contended = 0;
	}
	write_version(copy, original_size);
	read_version(&r, "counts past the tables", false);
	read_version(&r, "counts past the tables (top)", true);
	free(copy);
}

/* A module whose string table's last string has no NUL and ends the file. */
Test(fuzz, elf_string_table_without_nul)
{
	struct probe_result r;
	unsigned char *copy = page_buffer(original_size);
	struct ts_file_header *h = (struct ts_file_header *)(void *)copy;
	static unsigned char elf[8192];
	Elf64_Ehdr *eh = (Elf64_Ehdr *)(void *)elf;
	Elf64_Shdr *sh = (Elf64_Shdr *)(void *)(elf + 64);
	Elf64_Sym *sym = (Elf64_Sym *)(void *)(elf + 256);
	char elf_path[300];
	uint64_t caller = 0;
	int fd;

	cr_assert_not_null(copy);
	memcpy(copy, original, original_size);
	/* a call site the file holds */
	for (uint32_t i = 0; ts_slot_offset(i + 1) <= original_size && caller == 0; i++)
		for (int k = 0; k < (int)TS_SITE_SLOTS && caller == 0; k++)
			if (slot_in(copy, i)->sites[k].lock != 0)
				caller = slot_in(copy, i)->sites[k].caller;
	cr_assert_neq(caller, 0, "no call site in the file");

	memset(elf, 0, sizeof(elf));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_type = ET_DYN;
	eh->e_shoff = 64;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = 3;
	sh[1] = (Elf64_Shdr){ .sh_type = SHT_SYMTAB, .sh_offset = 256, .sh_size = 2 * sizeof(*sym),
		              .sh_entsize = sizeof(*sym), .sh_link = 2 };
	sh[2] = (Elf64_Shdr){ .sh_type = SHT_STRTAB, .sh_offset = sizeof(elf) - 8, .sh_size = 8 };
	sym[1] = (Elf64_Sym){ .st_name = 0, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
		              .st_shndx = 1, .st_value = 0xf0, .st_size = 0x100 };
	memcpy(elf + sizeof(elf) - 8, "fuzzname", 8); /* no NUL, and the file ends */
	snprintf(elf_path, sizeof(elf_path), "%s/fuzz.so", dir);
	fd = open(elf_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, elf, sizeof(elf)), (ssize_t)sizeof(elf));
	close(fd);

	h->nmodules = 1;
	memset(&h->modules[0], 0, sizeof(h->modules[0]));
	h->modules[0].base = caller - 0x100;
	h->modules[0].start = caller - 0x100;
	h->modules[0].end = caller + 0x1000;
	h->modules[0].elf_type = ET_DYN;
	snprintf(h->modules[0].path, sizeof(h->modules[0].path), "%s", elf_path);
	write_version(copy, original_size);
	read_version(&r, "a string table without its NUL", false);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert_not_null(strstr(r.out, "fuzzname+0x10 ("), "the name runs past its table:\n%s",
	                   r.out);

	/* a module that names a FIFO: not opened for good */
	snprintf(elf_path, sizeof(elf_path), "%s/fifo", dir);
	cr_assert_eq(mkfifo(elf_path, 0600), 0);
	snprintf(h->modules[0].path, sizeof(h->modules[0].path), "%s", elf_path);
	write_version(copy, original_size);
	read_version(&r, "a module that is a FIFO", false);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	free(copy);
}
