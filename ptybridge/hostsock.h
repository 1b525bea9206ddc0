/*
 * The bridge's client of agentd-host's socket (core/hostproto.h): one connected socket to a
 * session's host.sock, checked to be the host's. Used by the relay (requests, streams) and the
 * attention hub (permission answers from the terminal), so neither depends on the other for it.
 */
#ifndef AGENTD_BRIDGE_HOSTSOCK_H
#define AGENTD_BRIDGE_HOSTSOCK_H

#include "bridge.h"

/* Connects a non-blocking socket to session id's host.sock (a long path through its
 * directory's fd). Returns the fd, or -errno (-ENOENT, -ECONNREFUSED, -EAGAIN: not listening
 * yet or its backlog is full; -EPERM: the listener is not the session's uid (its record's, else
 * b->host_uid), so not a host). */
int hostsock_connect(const struct bridge *b, const char *id);

#endif
