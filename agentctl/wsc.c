#include "wsc.h"

#include "jsontext.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <wslay/wslay.h>

#define WSC_GUID       "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WSC_REASON_MAX 123 /* a close frame's reason: 125 bytes less the status */

struct wsc {
	int fd;
	SSL_CTX *ctx;
	SSL *ssl;
	wslay_event_context_ptr ws;
	/* Bytes that came after the upgrade's head, read before the socket. */
	char *early;
	size_t early_len, early_off;
	bool eof;
	uint16_t status;
	char reason[WSC_REASON_MAX + 1];
	wsc_msg_fn on_msg;
	void *arg;
};

int ctl_url_split(const char *url, struct ctl_url *u, struct cause *cause)
{
	const char *p, *hend, *slash;
	size_t hlen;

	memset(u, 0, sizeof(*u));
	if (strncmp(url, "https://", 8) == 0) {
		u->tls = true;
		p = url + 8;
	} else if (strncmp(url, "http://", 7) == 0) {
		p = url + 7;
	} else {
		return cause_fail(cause, EINVAL, "'%s' is not an http:// or https:// URL", url);
	}
	slash = strchr(p, '/');
	if (slash == NULL)
		slash = p + strlen(p);
	if (strchr(p, '@') != NULL && strchr(p, '@') < slash)
		return cause_fail(cause, EINVAL, "'%s': put the token in AGENTD_TOKEN, not the URL",
				  url);
	if (*p == '[') {
		hend = memchr(p, ']', (size_t)(slash - p));
		if (hend == NULL)
			return cause_fail(cause, EINVAL, "'%s': an unclosed [", url);
		hlen = (size_t)(hend - p - 1);
		if (hlen > WSC_HOST_MAX)
			goto bad;
		memcpy(u->host, p + 1, hlen);
		hend++;
	} else {
		hend = memchr(p, ':', (size_t)(slash - p));
		if (hend == NULL)
			hend = slash;
		hlen = (size_t)(hend - p);
		if (hlen > WSC_HOST_MAX)
			goto bad;
		memcpy(u->host, p, hlen);
	}
	if (u->host[0] == '\0')
		goto bad;
	if (*hend == ':') {
		size_t plen = (size_t)(slash - hend - 1);

		if (plen == 0 || plen > 5 || strspn(hend + 1, "0123456789") < plen)
			goto bad;
		memcpy(u->port, hend + 1, plen);
		if (atoi(u->port) < 1 || atoi(u->port) > 65535)
			goto bad;
	} else if (hend != slash) {
		goto bad;
	}
	if ((size_t)(slash - p) >= sizeof(u->hostport))
		goto bad;
	memcpy(u->hostport, p, (size_t)(slash - p));
	if (u->port[0] == '\0')
		snprintf(u->port, sizeof(u->port), "%s", u->tls ? "443" : "80");
	snprintf(u->prefix, sizeof(u->prefix), "%s", slash);
	hlen = strlen(u->prefix);
	while (hlen > 0 && u->prefix[hlen - 1] == '/')
		u->prefix[--hlen] = '\0';
	return 0;
bad:
	return cause_fail(cause, EINVAL, "'%s' is not http[s]://host[:port][/path]", url);
}

/* ---- bytes over TCP or TLS ------------------------------------------------------------------ */

/* Reads up to n bytes: > 0, 0 at the end, or a negative errno (-EAGAIN: nothing yet). */
static ssize_t wsc_read(struct wsc *w, void *p, size_t n)
{
	ssize_t r;

	if (w->early_off < w->early_len) {
		size_t k = w->early_len - w->early_off;

		if (k > n)
			k = n;
		memcpy(p, w->early + w->early_off, k);
		w->early_off += k;
		return (ssize_t)k;
	}
	if (w->ssl != NULL) {
		int k = SSL_read(w->ssl, p, n > INT32_MAX ? INT32_MAX : (int)n);

		if (k > 0)
			return k;
		switch (SSL_get_error(w->ssl, k)) {
		case SSL_ERROR_WANT_READ:
		case SSL_ERROR_WANT_WRITE:
			return -EAGAIN;
		case SSL_ERROR_ZERO_RETURN:
			return 0;
		default:
			/* A peer that drops TCP without close_notify: an end like any other. */
			return k == 0 ? 0 : -EIO;
		}
	}
	while ((r = recv(w->fd, p, n, 0)) < 0 && errno == EINTR)
		;
	if (r < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return r;
}

static ssize_t wsc_write(struct wsc *w, const void *p, size_t n)
{
	ssize_t r;

	if (w->ssl != NULL) {
		int k = SSL_write(w->ssl, p, n > INT32_MAX ? INT32_MAX : (int)n);

		if (k > 0)
			return k;
		switch (SSL_get_error(w->ssl, k)) {
		case SSL_ERROR_WANT_READ:
		case SSL_ERROR_WANT_WRITE:
			return -EAGAIN;
		default:
			return -EIO;
		}
	}
	while ((r = send(w->fd, p, n, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (r < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return r;
}

/* Waits until fd is ready for events, or until deadline. */
static int wsc_wait(int fd, short events, time_t deadline)
{
	struct pollfd pfd = {.fd = fd, .events = events};
	time_t now = time(NULL);
	int r;

	if (now >= deadline)
		return -ETIMEDOUT;
	r = poll(&pfd, 1, (int)(deadline - now) * 1000);
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	return r == 0 ? -ETIMEDOUT : 0;
}

/* Writes all of p (the upgrade request), within deadline. */
static int wsc_write_all(struct wsc *w, const char *p, size_t n, time_t deadline)
{
	while (n > 0) {
		ssize_t k = wsc_write(w, p, n);
		int r;

		if (k == -EAGAIN) {
			if ((r = wsc_wait(w->fd, POLLOUT | POLLIN, deadline)) < 0)
				return r;
			continue;
		}
		if (k < 0)
			return (int)k;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int wsc_connect(struct wsc *w, const struct ctl_url *u, struct cause *cause)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
	int r, err = ECONNREFUSED;

	r = getaddrinfo(u->host, u->port, &hints, &res);
	if (r != 0)
		return cause_fail(cause, EHOSTUNREACH, "%s: %s", u->host, gai_strerror(r));
	for (struct addrinfo *a = res; a != NULL; a = a->ai_next) {
		w->fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (w->fd < 0) {
			err = errno;
			continue;
		}
		if (connect(w->fd, a->ai_addr, a->ai_addrlen) == 0)
			break;
		err = errno;
		close(w->fd);
		w->fd = -1;
	}
	freeaddrinfo(res);
	if (w->fd < 0)
		return cause_fail(cause, err, "cannot connect to %s:%s: %s", u->host, u->port,
				  strerror(err));
	return 0;
}

static int wsc_tls(struct wsc *w, const struct ctl_url *u, struct cause *cause)
{
	unsigned long e;

	w->ctx = SSL_CTX_new(TLS_client_method());
	if (w->ctx == NULL || SSL_CTX_set_default_verify_paths(w->ctx) != 1)
		goto fail;
	SSL_CTX_set_min_proto_version(w->ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(w->ctx, SSL_VERIFY_PEER, NULL);
	w->ssl = SSL_new(w->ctx);
	if (w->ssl == NULL || SSL_set_tlsext_host_name(w->ssl, u->host) != 1 ||
	    SSL_set1_host(w->ssl, u->host) != 1 || SSL_set_fd(w->ssl, w->fd) != 1)
		goto fail;
	SSL_set_mode(w->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (SSL_connect(w->ssl) == 1)
		return 0;
fail:
	e = ERR_get_error();
	if (w->ssl != NULL && SSL_get_verify_result(w->ssl) != X509_V_OK)
		return cause_fail(cause, EPROTO, "TLS with %s: %s", u->host,
				  X509_verify_cert_error_string(SSL_get_verify_result(w->ssl)));
	return cause_fail(cause, EPROTO, "TLS with %s: %s", u->host,
			  e != 0 ? ERR_reason_error_string(e) : "the handshake failed");
}

/* ---- the upgrade ---------------------------------------------------------------------------- */

/* The value of header name in head (NUL-terminated lines), or NULL; copied into out. */
static const char *wsc_header(const char *head, const char *name, char *out, size_t size)
{
	size_t n = strlen(name);

	for (const char *l = strstr(head, "\r\n"); l != NULL; l = strstr(l + 2, "\r\n")) {
		const char *v = l + 2, *e;

		if (strncasecmp(v, name, n) != 0 || v[n] != ':')
			continue;
		v += n + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		e = strstr(v, "\r\n");
		if (e == NULL)
			e = v + strlen(v);
		while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		snprintf(out, size, "%.*s", (int)(e - v), v);
		return out;
	}
	return NULL;
}

/* Reads the refused upgrade's JSON body for its error and code. */
static int wsc_refused(struct wsc *w, const char *head, size_t body_have, long status,
		       time_t deadline, struct wsc_refusal *ref, struct cause *cause)
{
	char len_s[32], *body = NULL;
	struct cause jc = {{0}};
	size_t want = 0, have = body_have;
	json_object *root = NULL, *v;
	const char *err = NULL;

	ref->status = status;
	if (wsc_header(head, "Content-Length", len_s, sizeof(len_s)) != NULL)
		want = strtoul(len_s, NULL, 10);
	if (want > WSC_BODY_MAX)
		want = WSC_BODY_MAX;
	body = calloc(1, WSC_BODY_MAX + 1);
	if (body != NULL) {
		if (have > want)
			have = want;
		memcpy(body, w->early, have);
		while (have < want) {
			ssize_t k = wsc_read(w, body + have, want - have);

			if (k == -EAGAIN && wsc_wait(w->fd, POLLIN, deadline) == 0)
				continue;
			if (k <= 0)
				break;
			have += (size_t)k;
		}
		root = jsontext_parse(body, have, 16, &jc);
	}
	if (root != NULL && json_object_object_get_ex(root, "error", &v) &&
	    json_object_is_type(v, json_type_string))
		err = json_object_get_string(v);
	if (root != NULL && json_object_object_get_ex(root, "code", &v) &&
	    json_object_is_type(v, json_type_string))
		snprintf(ref->code, sizeof(ref->code), "%s", json_object_get_string(v));
	if (err != NULL)
		cause_set(cause, "%s (HTTP %ld)", err, status);
	else
		cause_set(cause, "the server answered HTTP %ld", status);
	json_object_put(root);
	free(body);
	return -EPERM;
}

static int wsc_upgrade(struct wsc *w, const struct ctl_url *u, const char *path, const char *token,
		       struct wsc_refusal *ref, struct cause *cause)
{
	unsigned char key[16], digest[SHA_DIGEST_LENGTH];
	char key64[32], accept[64], want[128], got[128], *req = NULL, *head = NULL, *end;
	time_t deadline = time(NULL) + WSC_UPGRADE_S;
	size_t have = 0, cat;
	long status;
	int n, r;

	if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key))
		return cause_fail(cause, EIO, "no random bytes");
	EVP_EncodeBlock((unsigned char *)key64, key, sizeof(key));
	n = asprintf(
	    &req,
	    "GET %s%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	    "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
	    "User-Agent: agentctl\r\n%s%s%s\r\n",
	    u->prefix, path, u->hostport, key64,
	    token != NULL && *token ? "Authorization: Bearer " : "",
	    token != NULL && *token ? token : "", token != NULL && *token ? "\r\n" : "");
	if (n < 0)
		return cause_fail(cause, ENOMEM, "out of memory");
	r = wsc_write_all(w, req, (size_t)n, deadline);
	memset(req, 0, (size_t)n);
	free(req);
	if (r < 0)
		return cause_fail(cause, -r, "cannot send the upgrade: %s", strerror(-r));
	head = malloc(WSC_HEAD_MAX + 1);
	if (head == NULL)
		return cause_fail(cause, ENOMEM, "out of memory");
	for (;;) {
		ssize_t k;

		head[have] = '\0';
		if ((end = strstr(head, "\r\n\r\n")) != NULL)
			break;
		if (have == WSC_HEAD_MAX) {
			r = cause_fail(cause, EPROTO, "the answer's head is over %d bytes",
				       WSC_HEAD_MAX);
			goto out;
		}
		k = wsc_read(w, head + have, WSC_HEAD_MAX - have);
		if (k == -EAGAIN) {
			if ((r = wsc_wait(w->fd, POLLIN, deadline)) < 0) {
				r = cause_fail(cause, -r, "no answer to the upgrade");
				goto out;
			}
			continue;
		}
		if (k <= 0) {
			r = cause_fail(cause, EPROTO, "the server closed the connection");
			goto out;
		}
		have += (size_t)k;
	}
	end[2] = '\0'; /* the head's lines, each ending in CRLF */
	cat = (size_t)(end + 4 - head);
	if (sscanf(head, "HTTP/1.%*1d %ld", &status) != 1) {
		r = cause_fail(cause, EPROTO, "not an HTTP answer");
		goto out;
	}
	/* What follows the head: the first frames, or a refusal's body. */
	if (have > cat) {
		w->early = malloc(have - cat);
		if (w->early == NULL) {
			r = cause_fail(cause, ENOMEM, "out of memory");
			goto out;
		}
		memcpy(w->early, head + cat, have - cat);
		w->early_len = have - cat;
	}
	if (status != 101) {
		w->early_off = w->early_len;
		r = wsc_refused(w, head, w->early_len, status, deadline, ref, cause);
		goto out;
	}
	snprintf(want, sizeof(want), "%s" WSC_GUID, key64);
	SHA1((const unsigned char *)want, strlen(want), digest);
	EVP_EncodeBlock((unsigned char *)accept, digest, sizeof(digest));
	if (wsc_header(head, "Sec-WebSocket-Accept", got, sizeof(got)) == NULL ||
	    strcmp(got, accept) != 0) {
		r = cause_fail(cause, EPROTO, "the server's Sec-WebSocket-Accept is wrong");
		goto out;
	}
	r = 0;
out:
	free(head);
	return r;
}

/* ---- wslay ---------------------------------------------------------------------------------- */

static ssize_t wsc_recv_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
			   void *user)
{
	struct wsc *w = user;
	ssize_t k = wsc_read(w, buf, len);

	if (k == -EAGAIN) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (k <= 0) {
		w->eof = true;
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	return k;
}

static ssize_t wsc_send_cb(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
			   void *user)
{
	struct wsc *w = user;
	ssize_t k = wsc_write(w, data, len);

	if (k == -EAGAIN) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (k < 0) {
		w->eof = true;
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	return k;
}

static int wsc_genmask_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *user)
{
	if (getrandom(buf, len, 0) != (ssize_t)len) {
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	return 0;
}

static void wsc_msg_cb(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *m,
		       void *user)
{
	struct wsc *w = user;

	if (m->opcode == WSLAY_CONNECTION_CLOSE) {
		size_t n = m->msg_length > 2 ? m->msg_length - 2 : 0;

		w->status = m->status_code;
		if (n > WSC_REASON_MAX)
			n = WSC_REASON_MAX;
		if (n > 0)
			memcpy(w->reason, m->msg + 2, n);
		w->reason[n] = '\0';
		return;
	}
	if (m->opcode == WSLAY_TEXT_FRAME || m->opcode == WSLAY_BINARY_FRAME)
		w->on_msg(w->arg, m->opcode, m->msg, m->msg_length);
}

int wsc_open(struct wsc **out, const struct ctl_url *u, const char *path, const char *token,
	     wsc_msg_fn on_msg, void *arg, struct wsc_refusal *ref, struct cause *cause)
{
	static const struct wslay_event_callbacks cbs = {
	    .recv_callback = wsc_recv_cb,
	    .send_callback = wsc_send_cb,
	    .genmask_callback = wsc_genmask_cb,
	    .on_msg_recv_callback = wsc_msg_cb,
	};
	struct wsc *w = calloc(1, sizeof(*w));
	struct timeval tv = {.tv_sec = WSC_CONNECT_S};
	int r;

	*out = NULL;
	memset(ref, 0, sizeof(*ref));
	if (w == NULL)
		return cause_fail(cause, ENOMEM, "out of memory");
	w->fd = -1;
	w->on_msg = on_msg;
	w->arg = arg;
	if ((r = wsc_connect(w, u, cause)) < 0)
		goto fail;
	/* The TLS handshake is blocking: bounded by the socket's timeouts. */
	setsockopt(w->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(w->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (u->tls && (r = wsc_tls(w, u, cause)) < 0)
		goto fail;
	if ((r = fcntl(w->fd, F_SETFL, fcntl(w->fd, F_GETFL) | O_NONBLOCK)) < 0) {
		r = cause_fail(cause, errno, "fcntl: %s", strerror(errno));
		goto fail;
	}
	if ((r = wsc_upgrade(w, u, path, token, ref, cause)) < 0)
		goto fail;
	if (wslay_event_context_client_init(&w->ws, &cbs, w) != 0) {
		r = cause_fail(cause, ENOMEM, "out of memory");
		goto fail;
	}
	wslay_event_config_set_max_recv_msg_length(w->ws, WSC_MSG_MAX);
	*out = w;
	return 0;
fail:
	wsc_destroy(w);
	return r;
}

int wsc_fd(const struct wsc *w)
{
	return w->fd;
}

int wsc_send(struct wsc *w, int opcode, const void *p, size_t n)
{
	struct wslay_event_msg m = {.opcode = (uint8_t)opcode, .msg = p, .msg_length = n};
	int r = wslay_event_queue_msg(w->ws, &m);

	if (r == WSLAY_ERR_NOMEM)
		return -ENOMEM;
	return r != 0 ? -EPIPE : 0;
}

void wsc_close(struct wsc *w, uint16_t status, const char *reason)
{
	wslay_event_queue_close(w->ws, status, (const uint8_t *)reason, strlen(reason));
}

bool wsc_want_read(const struct wsc *w)
{
	return wslay_event_want_read(w->ws) != 0;
}

bool wsc_want_write(const struct wsc *w)
{
	return wslay_event_want_write(w->ws) != 0;
}

bool wsc_pending(const struct wsc *w)
{
	return w->early_off < w->early_len || (w->ssl != NULL && SSL_pending(w->ssl) > 0);
}

int wsc_io(struct wsc *w)
{
	if (wslay_event_want_read(w->ws) && wslay_event_recv(w->ws) != 0)
		return w->eof ? 1 : -EPROTO;
	if (wslay_event_want_write(w->ws) && wslay_event_send(w->ws) != 0)
		return w->eof ? 1 : -EPROTO;
	if (w->eof)
		return 1;
	/* Both sides closed: the handshake is over. */
	if (!wslay_event_want_read(w->ws) && !wslay_event_want_write(w->ws))
		return 1;
	return 0;
}

uint16_t wsc_ended(const struct wsc *w, const char **reason)
{
	*reason = w->reason;
	return w->status;
}

void wsc_destroy(struct wsc *w)
{
	if (w == NULL)
		return;
	if (w->ws != NULL)
		wslay_event_context_free(w->ws);
	if (w->ssl != NULL)
		SSL_free(w->ssl);
	if (w->ctx != NULL)
		SSL_CTX_free(w->ctx);
	if (w->fd >= 0)
		close(w->fd);
	free(w->early);
	free(w);
}
