/*
 * provider.h - which object provides a symbol at run time.
 *
 * Every test that exercises the lock through pthread_spin_* first asserts that
 * the preloaded libticketspin.so provides it: a contention test that passes
 * with glibc's lock proves nothing about ours.
 */
#ifndef TICKETSPIN_TEST_PROVIDER_H
#define TICKETSPIN_TEST_PROVIDER_H

#include <criterion/criterion.h>
#include <string.h>

#include "symbol_provider.h"

static inline int provided_by_ticketspin(const char *name)
{
	return strstr(provider_of(name), "libticketspin.so") != NULL;
}

#define assert_ticketspin_provides_all()                                                   \
	do {                                                                               \
		static const char *const names_[] = {                                      \
			"pthread_spin_init", "pthread_spin_destroy", "pthread_spin_lock",  \
			"pthread_spin_trylock", "pthread_spin_unlock",                     \
		};                                                                         \
		for (size_t i_ = 0; i_ < sizeof(names_) / sizeof(names_[0]); i_++)        \
			cr_assert(provided_by_ticketspin(names_[i_]),                      \
			          "%s is provided by %s, not libticketspin.so (is it "     \
			          "LD_PRELOADed?)", names_[i_], provider_of(names_[i_]));  \
	} while (0)

#endif
