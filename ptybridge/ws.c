#include "ws.h"

#include <openssl/evp.h>
#include <wslay/wslay.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define WS_GUID     "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_KEY_LEN  24 /* base64 of 16 bytes */
#define WS_SHA1_LEN 20

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
};

static ssize_t ws_recv_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
			  void *user_data)
{
	struct ws *ws = user_data;
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
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (len > ws->budget)
		len = ws->budget;
	do
		n = recv(ws->fd, buf, len, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		} else {
			ws->err = -errno;
			wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		}
		return -1;
	}
	if (n == 0) {
		ws->err = -EPIPE;
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	ws->budget -= (size_t)n;
	return n;
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
