/*
 * Signals as a file descriptor for the clients' single poll loops (agentd-telegram, agentd-push,
 * agentctl): the signals are blocked and read from a signalfd between network rounds, so a stop
 * never interrupts libcurl or a state write halfway.
 */
#ifndef AGENTD_CLIENT_SIGFD_H
#define AGENTD_CLIENT_SIGFD_H

#include <signal.h>
#include <stddef.h>

/* Blocks the n signals (the mask before goes to *old unless old is NULL) and returns a
 * non-blocking, close-on-exec signalfd that reads them, or -errno. */
int sigfd_open(const int *signals, size_t n, sigset_t *old);

/* The next pending signal's number read from fd, or 0 when none is pending. */
int sigfd_next(int fd);

#endif
