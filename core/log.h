/*
 * Logging to stderr, one line per message, prefixed with the program name and level. The
 * supervisor (deploy/up, systemd) captures stderr; there is no log file to manage. When stderr is
 * systemd's journal stream, each line starts with its syslog priority instead of the time
 * ("<3>" error, "<4>" warning, "<6>" info, "<7>" debug), which journald strips and records, so
 * `journalctl -p err` works; anywhere else the lines are as they always were.
 */
#ifndef AGENTD_LOG_H
#define AGENTD_LOG_H

#include <stdbool.h>
#include <sys/types.h>

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* Names the program in every line and decides once whether stderr is the journal; call once
 * from main(), before any thread starts. prog is borrowed for the process life. */
void log_init(const char *prog);

void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * True when journal_stream (the JOURNAL_STREAM variable, "<device>:<inode>" in decimal, NULL if
 * unset) names the file whose fstat gave dev and ino: systemd's documented test that stderr is
 * still the journal stream it set up, not a file or pipe a child inherited the variable past.
 */
bool log_is_journal_stream(const char *journal_stream, dev_t dev, ino_t ino);

/* The syslog priority prefix of lvl ("<3>", "<4>", "<6>", "<7>"). */
const char *log_priority_prefix(enum log_level lvl);

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)

#endif
