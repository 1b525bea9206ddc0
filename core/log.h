/*
 * Logging to stderr, one line per message, prefixed with the program name and level. The
 * supervisor (deploy/up, systemd) captures stderr; there is no log file to manage.
 */
#ifndef AGENTD_LOG_H
#define AGENTD_LOG_H

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* Names the program in every line; call once from main(). prog is borrowed for the process life. */
void log_init(const char *prog);

void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)

#endif
