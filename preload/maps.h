/*
 * maps.h - which loaded object an address belongs to, read from
 * /proc/self/maps, for the misuse report made while a thread waits in line
 * (misuse.c) and for naming call sites in the statistics (stats.c).  Not for
 * the stall report, which is on by default and makes no system call but its
 * write (stall.c): these reads are open(), read() and process_vm_readv(),
 * which a seccomp filter may forbid.  And for the fork repair (fork.c):
 * which lock words the child owns.
 *
 * Why not dladdr() or dl_iterate_phdr(): both take the dynamic loader's lock.
 * A thread that holds a ticket and waits for that lock deadlocks with a
 * thread in dlopen() whose constructor (or a signal handler on a thread that
 * holds the loader's lock) waits for the spinlock.  Reading /proc/self/maps
 * takes no user-space lock, allocates nothing, and is done with raw system
 * calls (syscall() is no cancellation point, unlike open() and read()).  The
 * symbol names come from the object's own dynamic symbol table, read in
 * memory: exported names only, so reports also give "object+offset", which
 * `addr2line -f -e object offset` turns into any function and line.
 */
#ifndef TICKETSPIN_MAPS_H
#define TICKETSPIN_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ticket_lock.h"

struct ts_mapping {
	uint64_t base;       /* start of the object's mapping at file offset 0 (0: none seen) */
	uint64_t start, end; /* the object's consecutive mappings around the address */
	char path[240];      /* absolute path, truncated to fit */
};

/*
 * Fills @out with the file-backed object whose mappings contain @address;
 * false when no file mapping does (heap, stack, anonymous memory) or
 * /proc/self/maps cannot be read.  No lock, no allocation.
 */
bool ts_maps_find(uint64_t address, struct ts_mapping *out);

/*
 * Calls @fn for every file-backed object mapped from offset 0 (an ELF file's
 * header: every loaded object), in address order, with its consecutive
 * mappings.  No lock, no allocation.
 */
void ts_maps_each(void (*fn)(const struct ts_mapping *m, void *arg), void *arg);

/*
 * "0x55d0c3a4b040 (prog+0x4040, name+0x10)": the address, the object's file
 * name and the offset from its base, what addr2line -e takes, and the
 * dynamic symbol around it when the object exports one; just the address
 * for memory no file backs.  Takes no lock, makes no cancellation point.
 */
void ts_maps_describe(char *buf, size_t size, const void *address);

/*
 * For each of the @n lock words @words, @ours[i]: the word lies in a
 * writable private mapping of this process (mapped, and not MAP_SHARED).
 * False for every word not mapped (MADV_DONTFORK memory in a fork's child),
 * shared, or read-only, and for all when /proc/self/maps cannot be read (the
 * return value).  Raw open, read and close, a stack buffer, no lock, no
 * allocation: async-signal-safe, for a fork's child handler.  O(n x lines).
 */
bool ts_maps_words_private(ts_word_t *const *words, size_t n, bool *ours);

#endif
