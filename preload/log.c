#include "log.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TS_LOG_LINE_MAX 512

void ts_log(const char *fmt, ...)
{
	static const char prefix[] = "ticketspin: ";
	char line[TS_LOG_LINE_MAX];
	int saved_errno = errno;
	va_list ap;
	size_t len;

	memcpy(line, prefix, sizeof(prefix) - 1);
	va_start(ap, fmt);
	vsnprintf(line + sizeof(prefix) - 1, sizeof(line) - sizeof(prefix), fmt, ap);
	va_end(ap);
	len = strlen(line);
	if (len == sizeof(line) - 1)
		len--; /* truncated: keep room for the newline */
	line[len++] = '\n';
	/* syscall(): write() is a cancellation point, and this runs in line (stall.c) */
	while (syscall(SYS_write, STDERR_FILENO, line, len) < 0 && errno == EINTR)
		;
	errno = saved_errno;
}

void ts_describe_address(char *buf, size_t size, const void *address)
{
	Dl_info info;
	const char *file;

	if (address == NULL || dladdr(address, &info) == 0 || info.dli_fbase == NULL) {
		snprintf(buf, size, "%p", address);
		return;
	}
	file = info.dli_fname != NULL ? strrchr(info.dli_fname, '/') : NULL;
	file = file != NULL ? file + 1 : info.dli_fname;
	if (file == NULL || file[0] == '\0')
		file = program_invocation_short_name; /* the main program has no l_name */
	if (info.dli_sname != NULL && info.dli_saddr != NULL)
		snprintf(buf, size, "%p (%s+%#lx, %s+%#lx)", address, file,
		         (unsigned long)((const char *)address - (const char *)info.dli_fbase),
		         info.dli_sname,
		         (unsigned long)((const char *)address - (const char *)info.dli_saddr));
	else
		snprintf(buf, size, "%p (%s+%#lx)", address, file,
		         (unsigned long)((const char *)address - (const char *)info.dli_fbase));
}

static int noted_pid;

void ts_note_pid(void)
{
	__atomic_store_n(&noted_pid, (int)getpid(), __ATOMIC_RELAXED);
}

int ts_pid(void)
{
	return __atomic_load_n(&noted_pid, __ATOMIC_RELAXED);
}

int64_t ts_coarse_seconds(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0)
		return 0;
	return (int64_t)ts.tv_sec;
}

bool ts_rate_allows(struct ts_rate_limit *limit, uint64_t *skipped)
{
	int64_t now, last;

	*skipped = 0;
	if (__atomic_fetch_add(&limit->started, 1, __ATOMIC_RELAXED) < limit->burst)
		return true;
	now = ts_coarse_seconds();
	last = __atomic_load_n(&limit->last_second, __ATOMIC_RELAXED);
	if (now != last && __atomic_compare_exchange_n(&limit->last_second, &last, now, false,
	                                               __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		*skipped = __atomic_exchange_n(&limit->suppressed, 0, __ATOMIC_RELAXED);
		return true;
	}
	__atomic_fetch_add(&limit->suppressed, 1, __ATOMIC_RELAXED);
	return false;
}

void ts_suppressed_note(char *buf, size_t size, uint64_t skipped)
{
	if (skipped == 0)
		buf[0] = '\0';
	else
		snprintf(buf, size, " [%llu earlier report%s suppressed by the rate limit]",
		         (unsigned long long)skipped, skipped == 1 ? "" : "s");
}
