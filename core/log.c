#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

/* Set once before any thread starts; read-only afterwards. */
static const char *log_prog = "agentd";

void log_init(const char *prog)
{
	log_prog = prog;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warn", "info", "debug"};
	char line[2048];
	va_list ap;
	struct timespec ts;
	struct tm tm;
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(line, sizeof(line), "%02d:%02d:%02d %s %s: ", tm.tm_hour, tm.tm_min, tm.tm_sec,
		     log_prog, names[lvl]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* One fputs per line keeps lines from different threads whole. */
	fprintf(stderr, "%s\n", line);
}
