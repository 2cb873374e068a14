/* The preloaded library provides all five functions and exports nothing else. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "provider.h"

/* References bound to glibc's symbol versions, as in a binary linked against
 * glibc: our unversioned definitions must still win. */
extern int spin_lock_v225(pthread_spinlock_t *);
extern int spin_unlock_v225(pthread_spinlock_t *);
extern int spin_init_v225(pthread_spinlock_t *, int);
extern int spin_trylock_v225(pthread_spinlock_t *);
extern int spin_destroy_v225(pthread_spinlock_t *);
__asm__(".symver spin_lock_v225, pthread_spin_lock@GLIBC_2.2.5");
__asm__(".symver spin_unlock_v225, pthread_spin_unlock@GLIBC_2.2.5");
__asm__(".symver spin_init_v225, pthread_spin_init@GLIBC_2.2.5");
__asm__(".symver spin_trylock_v225, pthread_spin_trylock@GLIBC_2.2.5");
__asm__(".symver spin_destroy_v225, pthread_spin_destroy@GLIBC_2.2.5");

Test(interpose, all_five_resolve_to_ticketspin)
{
	assert_ticketspin_provides_all();
}

Test(interpose, glibc_versioned_references_resolve_to_ticketspin)
{
	const struct {
		const char *name;
		const void *address;
	} refs[] = {
		{ "pthread_spin_lock@GLIBC_2.2.5", (const void *)spin_lock_v225 },
		{ "pthread_spin_unlock@GLIBC_2.2.5", (const void *)spin_unlock_v225 },
		{ "pthread_spin_init@GLIBC_2.2.5", (const void *)spin_init_v225 },
		{ "pthread_spin_trylock@GLIBC_2.2.5", (const void *)spin_trylock_v225 },
		{ "pthread_spin_destroy@GLIBC_2.2.5", (const void *)spin_destroy_v225 },
	};

	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++)
		cr_assert(strstr(provider_of_address(refs[i].address), "libticketspin.so") != NULL,
		          "%s is provided by %s", refs[i].name, provider_of_address(refs[i].address));
	/* Prove the references above really are bound to GLIBC_2.2.5. */
	char line[512];
	FILE *readelf;

	snprintf(line, sizeof(line), "readelf --dyn-syms -W /proc/%d/exe", (int)getpid());
	readelf = popen(line, "r");
	int versioned = 0;

	cr_assert_not_null(readelf);
	while (fgets(line, sizeof(line), readelf) != NULL)
		versioned += strstr(line, "pthread_spin_") != NULL &&
		             strstr(line, "@GLIBC_2.2.5") != NULL;
	pclose(readelf);
	cr_assert_eq(versioned, 5, "the test binary binds %d of 5 functions to GLIBC_2.2.5",
	             versioned);
}

Test(interpose, versioned_references_use_our_encoding)
{
	pthread_spinlock_t lock;

	cr_assert_eq(spin_init_v225(&lock, PTHREAD_PROCESS_PRIVATE), 0);
	cr_assert_eq(lock, 0, "our init stores 0 (glibc's stores 1), got %d", lock);
	cr_assert_eq(spin_lock_v225(&lock), 0);
	cr_assert_eq(spin_trylock_v225(&lock), EBUSY);
	cr_assert_eq(spin_unlock_v225(&lock), 0);
	cr_assert_eq(spin_destroy_v225(&lock), 0);
}

Test(interpose, exports_only_the_five)
{
	char command[4096];
	char line[512];
	FILE *nm;
	int exported = 0;

	snprintf(command, sizeof(command), "nm -D --defined-only '%s'",
	         provider_of("pthread_spin_lock"));
	nm = popen(command, "r");
	cr_assert_not_null(nm);
	while (fgets(line, sizeof(line), nm) != NULL) {
		char type, name[256];

		if (sscanf(line, "%*s %c %255s", &type, name) != 2)
			continue;
		cr_expect(strncmp(name, "pthread_spin_", 13) == 0, "unexpected export: %s", name);
		exported++;
	}
	cr_assert_eq(pclose(nm), 0, "nm failed");
	cr_assert_eq(exported, 5, "expected 5 exports, found %d", exported);
}
