#include "ws.h"

#include <openssl/evp.h>
#include <wslay/wslay.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define WS_GUID           "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_KEY_LEN        24 /* base64 of 16 bytes */
#define WS_SHA1_LEN       20
#define WS_CTRL_MAX       125 /* a control frame's payload (RFC 6455 §5.5) */
#define WS_CLOSE_PROTOCOL 1002

/*
 * The frame headers of the client's byte stream, followed as the bytes are read and before wslay
 * sees them. wslay checks a message's size only once payload bytes come, so a header announcing
 * 2^63 - 1 bytes alone would hold the connection until the ping timeout; and it fails a fragmented
 * or over-long control frame without a close code. Only those are judged here; everything else is
 * wslay's.
 */
struct ws_scan {
	uint8_t hdr[14];    /* the header being read: 2 bytes, the extended length, the mask */
	size_t hdr_len;     /* bytes of it so far */
	uint64_t frame_len; /* what the current header announced */
	uint64_t skip;      /* payload bytes of the current frame still to pass */
	uint64_t msg_len;   /* bytes the data frames of the current message announced */
	uint16_t refusal;   /* the close code the stream earned (0: none) */
};

struct ws {
	wslay_event_context_ptr ctx;
	int fd;
	struct ws_callbacks cb;
	void *data;
	uint8_t *prefix;
	size_t prefix_len, prefix_off;
	size_t budget;    /* bytes ws_recv may still read in this call */
	bool read_paused; /* input backpressure from the owner */
	bool blocked;     /* the last send hit EAGAIN */
	bool closing;     /* we queued a close: data messages are no longer delivered */
	int err;          /* the errno behind a callback failure */
	struct ws_scan scan;
};

/* The extended length's bytes of a header whose second byte is b1. */
static size_t ws_scan_ext(uint8_t b1)
{
	return (b1 & 0x7f) == 126 ? 2 : (b1 & 0x7f) == 127 ? 8 : 0;
}

/* Takes in the header's latest byte (hdr_len >= 2): returns the close code the header earned as
 * soon as it can tell, or 0. */
static uint16_t ws_scan_header(struct ws_scan *sc)
{
	bool fin = (sc->hdr[0] & 0x80) != 0;
	uint8_t opcode = sc->hdr[0] & 0x0f, len7 = sc->hdr[1] & 0x7f;
	size_t ext = ws_scan_ext(sc->hdr[1]), whole = 2 + ext + ((sc->hdr[1] & 0x80) ? 4 : 0);
	uint64_t len = len7;

	if (sc->hdr_len == 2 && opcode >= WSLAY_CONNECTION_CLOSE && opcode <= WSLAY_PONG &&
	    (!fin || len7 > WS_CTRL_MAX))
		return WS_CLOSE_PROTOCOL;
	if (sc->hdr_len == 2 + ext) {
		for (size_t i = 0; i < ext; i++)
			len = (i == 0 ? 0 : len << 8) | sc->hdr[2 + i];
		sc->frame_len = len;
		if (opcode == WSLAY_CONTINUATION_FRAME)
			sc->msg_len =
			    len > UINT64_MAX - sc->msg_len ? UINT64_MAX : sc->msg_len + len;
		else if (opcode == WSLAY_TEXT_FRAME || opcode == WSLAY_BINARY_FRAME)
			sc->msg_len = len;
		/* (a control frame does not count: it may come between fragments) */
		if (!(opcode & 0x08) && sc->msg_len > WS_MESSAGE_MAX)
			return WS_CLOSE_TOO_BIG;
	}
	if (sc->hdr_len == whole) {
		sc->skip = sc->frame_len; /* the payload follows */
		sc->hdr_len = 0;
	}
	return 0;
}

/* Follows len bytes of the stream. Returns how many of them come before the header of a frame
 * that earned a refusal (len when none did). */
static size_t ws_scan(struct ws_scan *sc, const uint8_t *buf, size_t len)
{
	size_t off = 0, start = 0; /* start: where the current header began in buf */

	while (off < len && sc->refusal == 0) {
		if (sc->skip > 0) {
			uint64_t n = len - off < sc->skip ? len - off : sc->skip;

			sc->skip -= n;
			off += (size_t)n;
			continue;
		}
		if (sc->hdr_len == 0)
			start = off;
		sc->hdr[sc->hdr_len++] = buf[off++];
		if (sc->hdr_len >= 2 && (sc->refusal = ws_scan_header(sc)) != 0)
			return start;
	}
	return len;
}

/* The stream earned a refusal: the close frame goes out with its code, nothing more is read. */
static void ws_refuse(struct ws *ws)
{
	wslay_event_queue_close(ws->ctx, ws->scan.refusal, NULL, 0);
	wslay_event_shutdown_read(ws->ctx);
	ws->closing = true;
}

/* Reads what the prefix or the socket has into buf (up to len). Returns the count, or -1 with
 * wslay's error set. */
static ssize_t ws_read_some(struct ws *ws, uint8_t *buf, size_t len)
{
	ssize_t n;

	if (ws->prefix_off < ws->prefix_len) {
		n = (ssize_t)(ws->prefix_len - ws->prefix_off);
		if ((size_t)n > len)
			n = (ssize_t)len;
		memcpy(buf, ws->prefix + ws->prefix_off, (size_t)n);
		ws->prefix_off += (size_t)n;
		return n;
	}
	if (ws->read_paused || ws->budget == 0) {
		wslay_event_set_error(ws->ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (len > ws->budget)
		len = ws->budget;
	do
		n = recv(ws->fd, buf, len, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			wslay_event_set_error(ws->ctx, WSLAY_ERR_WOULDBLOCK);
		} else {
			ws->err = -errno;
			wslay_event_set_error(ws->ctx, WSLAY_ERR_CALLBACK_FAILURE);
		}
		return -1;
	}
	if (n == 0) {
		ws->err = -EPIPE;
		wslay_event_set_error(ws->ctx, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	ws->budget -= (size_t)n;
	return n;
}

/* wslay gets the bytes up to a refused frame's header (the frames before it are delivered);
 * asking for more then refuses the stream, and wslay stops as if the socket had nothing. */
static ssize_t ws_recv_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
			  void *user_data)
{
	struct ws *ws = user_data;
	ssize_t n;
	size_t kept;

	(void)flags;
	if (ws->scan.refusal == 0) {
		n = ws_read_some(ws, buf, len);
		if (n < 0)
			return -1;
		kept = ws_scan(&ws->scan, buf, (size_t)n);
		if (kept > 0)
			return (ssize_t)kept;
	}
	ws_refuse(ws);
	wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
	return -1;
}

static ssize_t ws_send_cb(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
			  void *user_data)
{
	struct ws *ws = user_data;
	int sflags = MSG_NOSIGNAL | ((flags & WSLAY_MSG_MORE) ? MSG_MORE : 0);
	ssize_t n;

	do
		n = send(ws->fd, data, len, sflags);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			ws->blocked = true;
			wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		} else {
			ws->err = -errno;
			wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		}
		return -1;
	}
	return n;
}

static void ws_on_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
		      void *user_data)
{
	struct ws *ws = user_data;

	switch (arg->opcode) {
	case WSLAY_TEXT_FRAME:
	case WSLAY_BINARY_FRAME:
		if (!ws->closing && ws->cb.on_message != NULL)
			ws->cb.on_message(ws->data, arg->msg, arg->msg_length);
		break;
	case WSLAY_PONG:
		if (ws->cb.on_pong != NULL)
			ws->cb.on_pong(ws->data);
		break;
	default:
		break; /* wslay answers pings and close frames itself */
	}
}

struct ws *ws_create(int fd, const struct ws_callbacks *cb, void *data)
{
	static const struct wslay_event_callbacks callbacks = {
	    .recv_callback = ws_recv_cb,
	    .send_callback = ws_send_cb,
	    .on_msg_recv_callback = ws_on_msg,
	};
	struct ws *ws = calloc(1, sizeof(*ws));

	if (ws == NULL)
		return NULL;
	ws->fd = fd;
	ws->cb = *cb;
	ws->data = data;
	if (wslay_event_context_server_init(&ws->ctx, &callbacks, ws) != 0) {
		free(ws);
		errno = ENOMEM;
		return NULL;
	}
	wslay_event_config_set_max_recv_msg_length(ws->ctx, WS_MESSAGE_MAX);
	return ws;
}

void ws_destroy(struct ws *ws)
{
	if (ws == NULL)
		return;
	wslay_event_context_free(ws->ctx);
	free(ws->prefix);
	free(ws);
}

int ws_prefix(struct ws *ws, const void *bytes, size_t len)
{
	if (len == 0)
		return 0;
	if (len > WS_PREFIX_MAX || ws->prefix != NULL)
		return -EOVERFLOW;
	ws->prefix = malloc(len);
	if (ws->prefix == NULL)
		return -ENOMEM;
	memcpy(ws->prefix, bytes, len);
	ws->prefix_len = len;
	ws->prefix_off = 0;
	return 0;
}

int ws_recv(struct ws *ws)
{
	int r;

	ws->budget = WS_RECV_BUDGET;
	r = wslay_event_recv(ws->ctx);
	if (ws->prefix != NULL && ws->prefix_off == ws->prefix_len) {
		free(ws->prefix);
		ws->prefix = NULL;
		ws->prefix_len = ws->prefix_off = 0;
	}
	if (r == 0)
		return 0;
	if (r == WSLAY_ERR_NOMEM)
		return -ENOMEM;
	return ws->err < 0 ? ws->err : -EPROTO;
}

int ws_send(struct ws *ws)
{
	int r;

	ws->blocked = false;
	r = wslay_event_send(ws->ctx);
	if (r == 0)
		return 0;
	if (r == WSLAY_ERR_NOMEM)
		return -ENOMEM;
	return ws->err < 0 ? ws->err : -EPROTO;
}

static int ws_queue(struct ws *ws, uint8_t opcode, const void *data, size_t len)
{
	struct wslay_event_msg msg = {.opcode = opcode, .msg = data, .msg_length = len};
	int r = wslay_event_queue_msg(ws->ctx, &msg);

	if (r == 0)
		return 0;
	return r == WSLAY_ERR_NOMEM ? -ENOMEM : -EPIPE;
}

int ws_queue_binary(struct ws *ws, const void *data, size_t len)
{
	return ws_queue(ws, WSLAY_BINARY_FRAME, data, len);
}

int ws_queue_text(struct ws *ws, const void *data, size_t len)
{
	return ws_queue(ws, WSLAY_TEXT_FRAME, data, len);
}

int ws_queue_ping(struct ws *ws)
{
	return ws_queue(ws, WSLAY_PING, "agentd", 6);
}

int ws_queue_close(struct ws *ws, uint16_t code, const char *reason)
{
	size_t len = reason != NULL ? strlen(reason) : 0;
	int r;

	if (len > WS_CLOSE_REASON_MAX)
		len = WS_CLOSE_REASON_MAX;
	r = wslay_event_queue_close(ws->ctx, code, (const uint8_t *)reason, len);
	if (r != 0)
		return r == WSLAY_ERR_NOMEM ? -ENOMEM : -EPIPE;
	ws->closing = true;
	return 0;
}

size_t ws_queued_bytes(const struct ws *ws)
{
	return wslay_event_get_queued_msg_length(ws->ctx);
}

size_t ws_queued_count(const struct ws *ws)
{
	return wslay_event_get_queued_msg_count(ws->ctx);
}

void ws_pause_read(struct ws *ws, bool paused)
{
	ws->read_paused = paused;
}

bool ws_want_read(const struct ws *ws)
{
	return wslay_event_want_read(ws->ctx) != 0;
}

bool ws_want_write(const struct ws *ws)
{
	return wslay_event_want_write(ws->ctx) != 0;
}

bool ws_send_blocked(const struct ws *ws)
{
	return ws->blocked;
}

bool ws_close_received(const struct ws *ws)
{
	return wslay_event_get_close_received(ws->ctx) != 0;
}

static bool ws_base64_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '+' || c == '/';
}

int ws_accept_key(const char *key, char out[WS_ACCEPT_LEN + 1])
{
	char buf[WS_KEY_LEN + sizeof(WS_GUID)];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (key == NULL || strlen(key) != WS_KEY_LEN || key[22] != '=' || key[23] != '=')
		return -EINVAL;
	for (int i = 0; i < 22; i++)
		if (!ws_base64_char(key[i]))
			return -EINVAL;
	memcpy(buf, key, WS_KEY_LEN);
	memcpy(buf + WS_KEY_LEN, WS_GUID, sizeof(WS_GUID) - 1);
	if (EVP_Digest(buf, WS_KEY_LEN + sizeof(WS_GUID) - 1, md, &mdlen, EVP_sha1(), NULL) != 1 ||
	    mdlen != WS_SHA1_LEN)
		return -EINVAL;
	EVP_EncodeBlock((unsigned char *)out, md, (int)mdlen);
	out[WS_ACCEPT_LEN] = '\0';
	return 0;
}
