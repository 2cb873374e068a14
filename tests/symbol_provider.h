/*
 * symbol_provider.h - which loaded object provides a symbol at run time, for
 * the test programs and the Criterion tests alike (see provider.h).
 */
#ifndef TICKETSPIN_TEST_SYMBOL_PROVIDER_H
#define TICKETSPIN_TEST_SYMBOL_PROVIDER_H

#include <dlfcn.h>

static inline const char *provider_of_address(const void *address)
{
	Dl_info info;

	if (address == NULL || dladdr(address, &info) == 0 || info.dli_fname == NULL)
		return "(none)";
	return info.dli_fname;
}

/* The file name of the object providing @name, or "(none)". */
static inline const char *provider_of(const char *name)
{
	return provider_of_address(dlsym(RTLD_DEFAULT, name));
}

#endif
