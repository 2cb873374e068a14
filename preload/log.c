#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
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
	while (write(STDERR_FILENO, line, len) < 0 && errno == EINTR)
		;
	errno = saved_errno;
}
