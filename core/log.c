#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Set once before any thread starts; read-only afterwards. */
static const char *log_prog = "agentd";
static bool log_journal;

/* Parses one decimal number ending at stop; *s moves past it. Returns false on anything else. */
static bool log_parse_u64(const char **s, char stop, uintmax_t *out)
{
	char *end;

	if (**s < '0' || **s > '9')
		return false;
	errno = 0;
	*out = strtoumax(*s, &end, 10);
	if (errno != 0 || *end != stop)
		return false;
	*s = end;
	return true;
}

bool log_is_journal_stream(const char *journal_stream, dev_t dev, ino_t ino)
{
	const char *s = journal_stream;
	uintmax_t d, i;

	if (s == NULL || !log_parse_u64(&s, ':', &d))
		return false;
	s++;
	if (!log_parse_u64(&s, '\0', &i))
		return false;
	return d == (uintmax_t)dev && i == (uintmax_t)ino;
}

const char *log_priority_prefix(enum log_level lvl)
{
	/* syslog(3) priorities: LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG. */
	static const char *const prefix[] = {"<3>", "<4>", "<6>", "<7>"};

	return lvl >= LOG_ERROR && lvl <= LOG_DEBUG ? prefix[lvl] : "<6>";
}

void log_init(const char *prog)
{
	struct stat st;

	log_prog = prog;
	log_journal = fstat(STDERR_FILENO, &st) == 0 &&
		      log_is_journal_stream(getenv("JOURNAL_STREAM"), st.st_dev, st.st_ino);
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warn", "info", "debug"};
	char line[2048];
	va_list ap;
	struct timespec ts;
	struct tm tm;
	int n;

	if (log_journal) {
		/* journald stamps the time itself. */
		n = snprintf(line, sizeof(line), "%s%s %s: ", log_priority_prefix(lvl), log_prog,
			     names[lvl]);
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		n = snprintf(line, sizeof(line), "%02d:%02d:%02d %s %s: ", tm.tm_hour, tm.tm_min,
			     tm.tm_sec, log_prog, names[lvl]);
	}
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* One fputs per line keeps lines from different threads whole. */
	fprintf(stderr, "%s\n", line);
}
