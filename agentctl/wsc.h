/*
 * A small WebSocket client for agentctl attach: the terminal WebSocket the web UI uses
 * (docs/API.md, Terminal), over plain TCP for http:// and TLS (OpenSSL, the system's CAs, the
 * host name checked) for https:// such as tailscale serve. The HTTP upgrade is written and read
 * here; framing is wslay's. libcurl 7.88 (Debian 12) is built without its WebSocket API.
 */
#ifndef AGENTD_CTL_WSC_H
#define AGENTD_CTL_WSC_H

#include "cause.h"
#include "conf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WSC_HOST_MAX 255
#define WSC_HEAD_MAX (16 * 1024)   /* nginx's answer head: a few short headers */
#define WSC_BODY_MAX (16 * 1024)   /* the JSON error of a refused upgrade */
#define WSC_MSG_MAX  (1024 * 1024) /* the bridge sends a terminal's bytes in small frames */
#define WSC_CONNECT_S                                                                              \
	15 /* connect, TLS and the upgrade (which waits up to 30 s for a                           \
	      creating session: docs/API.md) each within their own timeout */
#define WSC_UPGRADE_S 40

/* AGENTD_URL taken apart. */
struct ctl_url {
	bool tls;
	char host[WSC_HOST_MAX + 1]; /* without [] for IPv6 */
	char port[6];
	char hostport[WSC_HOST_MAX + 9];   /* as the Host header says it */
	char prefix[CTL_CONF_URL_MAX + 1]; /* a path before the API's ("" or "/x") */
};

/* Splits url (http[s]://host[:port][/prefix]). Returns 0 or -EINVAL with cause set. */
int ctl_url_split(const char *url, struct ctl_url *u, struct cause *cause);

struct wsc;

/* What a refused upgrade answered. */
struct wsc_refusal {
	long status; /* the HTTP status (0: none) */
	char code[64];
};

/* A message: its opcode (WSLAY_TEXT_FRAME, WSLAY_BINARY_FRAME) and bytes, borrowed. */
typedef void (*wsc_msg_fn)(void *arg, int opcode, const uint8_t *p, size_t n);

/*
 * Connects to u, upgrades GET <prefix><path> (path with its query) with token (NULL or "":
 * none) and returns the client in *out. Returns 0; -ECONNREFUSED and others (cannot connect or
 * TLS fails), -EPROTO (not a WebSocket answer), or -EPERM when the server refused the upgrade (ref
 * has its status and code), each with cause set.
 */
int wsc_open(struct wsc **out, const struct ctl_url *u, const char *path, const char *token,
	     wsc_msg_fn on_msg, void *arg, struct wsc_refusal *ref, struct cause *cause);

/* The socket, for poll. */
int wsc_fd(const struct wsc *w);

/* Queues a message (copied). Returns 0 or -ENOMEM / -EPIPE (closing). */
int wsc_send(struct wsc *w, int opcode, const void *p, size_t n);

/* Queues a close with status and reason. */
void wsc_close(struct wsc *w, uint16_t status, const char *reason);

/* Whether to poll for POLLIN / POLLOUT, and whether TLS holds read bytes poll cannot see. */
bool wsc_want_read(const struct wsc *w);
bool wsc_want_write(const struct wsc *w);
bool wsc_pending(const struct wsc *w);

/*
 * Reads and writes what the socket allows (on_msg is called for each message). Returns 0 while
 * the connection lives, 1 when it ended (wsc_ended tells how), or a negative errno.
 */
int wsc_io(struct wsc *w);

/* How it ended: the close status received (0: none, the connection dropped) and its reason. */
uint16_t wsc_ended(const struct wsc *w, const char **reason);

/* Closes the socket and frees w. NULL-safe. */
void wsc_destroy(struct wsc *w);

#endif
