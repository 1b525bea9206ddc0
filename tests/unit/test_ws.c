/*
 * ws: the server side over a real socketpair, with wslay's own client context as the peer (its
 * frames are captured in memory so they can be delivered whole, byte by byte, or as handshake
 * prefix). Messages and fragments reach on_message, pings are answered, oversize messages close
 * with 1009, a vanished peer is -EPIPE, a full socket blocks sends and counts as queued output,
 * paused reading reads nothing, and the handshake digest matches RFC 6455.
 */
#include "ws.h"

#include <criterion/criterion.h>
#include <wslay/wslay.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CAPTURE_MAX (256 * 1024)

/* The peer: a wslay client whose output is captured and whose input is the socket. */
struct peer {
	wslay_event_context_ptr ctx;
	int fd;
	uint8_t out[CAPTURE_MAX];
	size_t out_len;
	uint16_t close_code;
	int closes;
	int pongs;
	int messages;
	size_t last_len;
};

/* What the server side delivered. */
struct got {
	int messages;
	size_t total;
	uint8_t last[WS_MESSAGE_MAX];
	size_t last_len;
	int pongs;
};

static int fds[2];
static struct peer peer;
static struct got got;

static ssize_t peer_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
			 void *user)
{
	struct peer *p = user;

	if (len > CAPTURE_MAX - p->out_len) {
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	memcpy(p->out + p->out_len, data, len);
	p->out_len += len;
	return (ssize_t)len;
}

static ssize_t peer_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags,
			 void *user)
{
	struct peer *p = user;
	ssize_t n = recv(p->fd, buf, len, 0);

	if (n <= 0) {
		wslay_event_set_error(ctx, n < 0 && errno == EAGAIN ? WSLAY_ERR_WOULDBLOCK
								    : WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	return n;
}

static int peer_genmask(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *user)
{
	memset(buf, 0x5a, len);
	return 0;
}

static void peer_on_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
			void *user)
{
	struct peer *p = user;

	if (arg->opcode == WSLAY_CONNECTION_CLOSE) {
		p->close_code = arg->status_code;
		p->closes++;
	} else if (arg->opcode == WSLAY_PONG)
		p->pongs++;
	else if (arg->opcode == WSLAY_BINARY_FRAME || arg->opcode == WSLAY_TEXT_FRAME) {
		p->messages++;
		p->last_len = arg->msg_length;
	}
}

static void on_message(void *data, const uint8_t *msg, size_t len)
{
	struct got *g = data;

	g->messages++;
	g->total += len;
	cr_assert_leq(len, sizeof(g->last));
	memcpy(g->last, msg, len);
	g->last_len = len;
}

static void on_pong(void *data)
{
	((struct got *)data)->pongs++;
}

static const struct ws_callbacks server_cb = {.on_message = on_message, .on_pong = on_pong};

static void setup(void)
{
	static const struct wslay_event_callbacks cb = {
	    .recv_callback = peer_recv,
	    .send_callback = peer_send,
	    .genmask_callback = peer_genmask,
	    .on_msg_recv_callback = peer_on_msg,
	};

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
	memset(&peer, 0, sizeof(peer));
	memset(&got, 0, sizeof(got));
	peer.fd = fds[1];
	cr_assert_eq(wslay_event_context_client_init(&peer.ctx, &cb, &peer), 0);
}

static void teardown(void)
{
	wslay_event_context_free(peer.ctx);
	close(fds[0]);
	close(fds[1]);
}

TestSuite(ws, .init = setup, .fini = teardown);

/* Has the peer frame a message into peer.out (not yet delivered). */
static void peer_queue(uint8_t opcode, const void *data, size_t len)
{
	struct wslay_event_msg m = {.opcode = opcode, .msg = data, .msg_length = len};

	cr_assert_eq(wslay_event_queue_msg(peer.ctx, &m), 0);
	cr_assert_eq(wslay_event_send(peer.ctx), 0);
}

/* Delivers the captured peer bytes to the server socket in chunks of step, calling ws_recv. */
static void deliver(struct ws *ws, size_t step)
{
	size_t off = 0;

	while (off < peer.out_len) {
		size_t n = peer.out_len - off < step ? peer.out_len - off : step;

		cr_assert_eq(write(fds[1], peer.out + off, n), (ssize_t)n);
		off += n;
		cr_assert_eq(ws_recv(ws), 0);
	}
	peer.out_len = 0;
}

/* Lets the peer read what the server sent. */
static void peer_read(void)
{
	wslay_event_recv(peer.ctx);
}

Test(ws, accept_key_matches_rfc6455)
{
	char out[WS_ACCEPT_LEN + 1];

	cr_assert_eq(ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out), 0);
	cr_assert_str_eq(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

Test(ws, accept_key_rejects_bad_keys)
{
	char out[WS_ACCEPT_LEN + 1];

	cr_assert_eq(ws_accept_key(NULL, out), -EINVAL);
	cr_assert_eq(ws_accept_key("", out), -EINVAL);
	cr_assert_eq(ws_accept_key("dGhlIHNhbXBsZSBub25jZQ", out), -EINVAL);
	cr_assert_eq(ws_accept_key("dGhlIHNhbXBsZSBub25jZQ===", out), -EINVAL);
	cr_assert_eq(ws_accept_key("dGhlIHNhbXBsZSBub25j*Q==", out), -EINVAL);
}

Test(ws, messages_whole_and_byte_by_byte)
{
	struct ws *ws = ws_create(fds[0], &server_cb, &got);

	cr_assert_not_null(ws);
	peer_queue(WSLAY_BINARY_FRAME, "hello", 5);
	deliver(ws, 1 << 20);
	cr_assert_eq(got.messages, 1);
	cr_assert_eq(memcmp(got.last, "hello", 5), 0);
	peer_queue(WSLAY_TEXT_FRAME, "typed text", 10);
	deliver(ws, 1);
	cr_assert_eq(got.messages, 2);
	cr_assert_eq(got.last_len, 10);
	cr_assert_eq(memcmp(got.last, "typed text", 10), 0);
	ws_destroy(ws);
}

static ssize_t fragment_source(wslay_event_context_ptr ctx, uint8_t *buf, size_t len,
			       const union wslay_event_msg_source *source, int *eof, void *user)
{
	int *left = source->data;
	size_t n = len < 1000 ? len : 1000;

	if (n > (size_t)*left)
		n = (size_t)*left;
	memset(buf, 'f', n);
	*left -= (int)n;
	if (*left == 0)
		*eof = 1;
	return (ssize_t)n;
}

Test(ws, fragmented_message_is_delivered_whole)
{
	struct ws *ws = ws_create(fds[0], &server_cb, &got);
	int left = 5000;
	struct wslay_event_fragmented_msg m = {
	    .opcode = WSLAY_BINARY_FRAME,
	    .source = {.data = &left},
	    .read_callback = fragment_source,
	};

	cr_assert_eq(wslay_event_queue_fragmented_msg(peer.ctx, &m), 0);
	cr_assert_eq(wslay_event_send(peer.ctx), 0);
	deliver(ws, 777);
	cr_assert_eq(got.messages, 1);
	cr_assert_eq(got.last_len, 5000);
	ws_destroy(ws);
}

Test(ws, prefix_bytes_come_first)
{
	struct ws *ws = ws_create(fds[0], &server_cb, &got);

	peer_queue(WSLAY_BINARY_FRAME, "early", 5);
	cr_assert_eq(ws_prefix(ws, peer.out, peer.out_len), 0);
	peer.out_len = 0;
	peer_queue(WSLAY_BINARY_FRAME, "later", 5);
	deliver(ws, 1 << 20);
	cr_assert_eq(got.messages, 2);
	cr_assert_eq(memcmp(got.last, "later", 5), 0);
	cr_assert_eq(ws_prefix(ws, "x", WS_PREFIX_MAX + 1), -EOVERFLOW);
	ws_destroy(ws);
}

Test(ws, ping_is_answered)
{
	struct ws *ws = ws_create(fds[0], &server_cb, &got);

	peer_queue(WSLAY_PING, "p", 1);
	deliver(ws, 1 << 20);
	cr_assert(ws_want_write(ws));
	cr_assert_eq(ws_send(ws), 0);
	peer_read();
	cr_assert_eq(peer.pongs, 1);
	ws_destroy(ws);
}

Test(ws, our_ping_gets_a_pong)
{
	struct ws *ws = ws_create(fds[0], &server_cb, &got);

	cr_assert_eq(ws_queue_ping(ws), 0);
	cr_assert_eq(ws_send(ws), 0);
	peer_read(); /* wslay queues the pong */
	cr_assert_eq(wslay_event_send(peer.ctx), 0);
	deliver(ws, 1 << 20);
	cr_assert_eq(got.pongs, 1);
	ws_destroy(ws);
}

Test(ws, oversize_message_closes_with_1009)
{
	static uint8_t big[WS_MESSAGE_MAX + 1];
	struct ws *ws = ws_create(fds[0], &server_cb, &got);
	size_t off = 0;

	memset(big, 'b', sizeof(big));
	peer_queue(WSLAY_BINARY_FRAME, big, sizeof(big));
	while (off < peer.out_len) {
		ssize_t n = write(fds[1], peer.out + off, peer.out_len - off);

		if (n > 0)
			off += (size_t)n;
		/* wslay queues the close itself: not an error of the connection. */
		cr_assert_eq(ws_recv(ws), 0);
		if (!ws_want_read(ws))
			break;
	}
	cr_assert_eq(got.messages, 0);
	cr_assert_not(ws_want_read(ws));
	cr_assert_eq(ws_send(ws), 0);
	peer_read();
	cr_assert_eq(peer.close_code, WS_CLOSE_TOO_BIG);
	ws_destroy(ws);
}

Test(ws, vanished_peer_is_epipe)
{
	struct ws *ws = ws_create(fds[0], &server_cb, &got);

	close(fds[1]);
	fds[1] = -1;
	cr_assert_eq(ws_recv(ws), -EPIPE);
	ws_destroy(ws);
}

Test(ws, full_socket_blocks_and_counts_as_queued)
{
	static uint8_t chunk[32 * 1024];
	struct ws *ws = ws_create(fds[0], &server_cb, &got);
	int i;

	/* The peer never reads: sooner or later the socket is full. */
	for (i = 0; i < 200 && !ws_send_blocked(ws); i++) {
		cr_assert_eq(ws_queue_binary(ws, chunk, sizeof(chunk)), 0);
		cr_assert_eq(ws_send(ws), 0);
	}
	cr_assert(ws_send_blocked(ws), "never blocked after %d frames", i);
	cr_assert(ws_want_write(ws));
	cr_assert_gt(ws_queued_count(ws), 0);
	ws_destroy(ws);
}

Test(ws, paused_reading_reads_nothing)
{
	struct ws *ws = ws_create(fds[0], &server_cb, &got);

	peer_queue(WSLAY_BINARY_FRAME, "x", 1);
	cr_assert_eq(write(fds[1], peer.out, peer.out_len), (ssize_t)peer.out_len);
	ws_pause_read(ws, true);
	cr_assert_eq(ws_recv(ws), 0);
	cr_assert_eq(got.messages, 0);
	ws_pause_read(ws, false);
	cr_assert_eq(ws_recv(ws), 0);
	cr_assert_eq(got.messages, 1);
	ws_destroy(ws);
}

Test(ws, close_handshake)
{
	struct ws *ws = ws_create(fds[0], &server_cb, &got);

	cr_assert_eq(ws_queue_close(ws, WS_CLOSE_GOING_AWAY, "bye"), 0);
	cr_assert_eq(ws_queue_close(ws, WS_CLOSE_GOING_AWAY, "bye"), -EPIPE);
	cr_assert_eq(ws_queue_binary(ws, "late", 4), -EPIPE);
	cr_assert_eq(ws_send(ws), 0);
	peer_read();
	cr_assert_eq(peer.close_code, WS_CLOSE_GOING_AWAY);
	/* The peer's answer finishes the handshake: nothing left to read or write. */
	cr_assert_eq(wslay_event_send(peer.ctx), 0);
	deliver(ws, 1 << 20);
	cr_assert(ws_close_received(ws));
	cr_assert_not(ws_want_read(ws));
	cr_assert_not(ws_want_write(ws));
	ws_destroy(ws);
}

Test(ws, data_after_our_close_is_not_delivered)
{
	struct ws *ws = ws_create(fds[0], &server_cb, &got);

	cr_assert_eq(ws_queue_close(ws, WS_CLOSE_NORMAL, NULL), 0);
	peer_queue(WSLAY_BINARY_FRAME, "ignored", 7);
	deliver(ws, 1 << 20);
	cr_assert_eq(got.messages, 0);
	ws_destroy(ws);
}

Test(ws, garbage_fails_the_connection_with_a_close_frame)
{
	static const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0x00, 0x01, 0x02,
					  0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09};
	struct ws *ws = ws_create(fds[0], &server_cb, &got);

	cr_assert_eq(write(fds[1], garbage, sizeof(garbage)), (ssize_t)sizeof(garbage));
	/* An unreadable frame header fails the connection; wslay still queues a close. */
	cr_assert_eq(ws_recv(ws), -EPROTO);
	cr_assert_eq(got.messages, 0);
	cr_assert_not(ws_want_read(ws));
	cr_assert(ws_want_write(ws), "a close frame is queued");
	cr_assert_eq(ws_send(ws), 0);
	peer_read();
	cr_assert_eq(peer.closes, 1);
	ws_destroy(ws);
}

Test(ws, unmasked_client_frame_is_a_protocol_error)
{
	static const uint8_t unmasked[] = {0x82, 0x03, 'a', 'b', 'c'};
	struct ws *ws = ws_create(fds[0], &server_cb, &got);

	cr_assert_eq(ws_prefix(ws, unmasked, sizeof(unmasked)), 0);
	ws_recv(ws);
	cr_assert_eq(got.messages, 0);
	cr_assert_not(ws_want_read(ws));
	cr_assert_eq(ws_send(ws), 0);
	peer_read();
	cr_assert_eq(peer.close_code, 1002);
	ws_destroy(ws);
}

/* Writes raw client bytes, lets the server read them and answer, and returns the close code the
 * peer got (0: a close without a code; -1: no close at all). */
static int close_code_after(struct ws *ws, const uint8_t *bytes, size_t len)
{
	cr_assert_eq(write(fds[1], bytes, len), (ssize_t)len);
	/* Several reads when len is over WS_RECV_BUDGET. */
	for (size_t i = 0; i <= len / WS_RECV_BUDGET && ws_want_read(ws); i++)
		cr_assert_eq(ws_recv(ws), 0, "refused, not an error of the connection");
	cr_assert_not(ws_want_read(ws), "nothing more is read");
	cr_assert_eq(ws_send(ws), 0);
	peer_read();
	return peer.closes > 0 ? peer.close_code : -1;
}

/* A header announcing 2^63 - 1 bytes is refused at once, before any of them: waiting for
 * the payload would hold the connection until the ping timeout. */
Test(ws, a_huge_frame_header_alone_closes_with_1009)
{
	static const uint8_t huge[] = {0x82, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff,
				       0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00};
	struct ws *ws = ws_create(fds[0], &server_cb, &got);

	cr_assert_eq(close_code_after(ws, huge, sizeof(huge)), WS_CLOSE_TOO_BIG);
	cr_assert_eq(got.messages, 0);
	ws_destroy(ws);
}

/* The same for a header just over the limit, split byte by byte, after a whole message. */
Test(ws, an_oversize_header_is_refused_byte_by_byte_after_good_frames)
{
	static const uint8_t over[] = {0x82, 0xff, 0, 0, 0, 0, 0, 0x01, 0x00, 0x01, 0, 0, 0, 0};
	struct ws *ws = ws_create(fds[0], &server_cb, &got);

	cr_assert_eq(WS_MESSAGE_MAX + 1, 0x10001, "the header above announces WS_MESSAGE_MAX + 1");
	peer_queue(WSLAY_BINARY_FRAME, "hi", 2);
	deliver(ws, 1);
	cr_assert_eq(got.messages, 1);
	for (size_t i = 0; i + 1 < sizeof(over); i++) {
		cr_assert_eq(write(fds[1], &over[i], 1), 1);
		cr_assert_eq(ws_recv(ws), 0);
	}
	cr_assert_eq(close_code_after(ws, &over[sizeof(over) - 1], 1), WS_CLOSE_TOO_BIG);
	ws_destroy(ws);
}

/* A continuation whose header takes the message over the limit, with a good frame before it in
 * the same read: that frame is still delivered. */
Test(ws, a_continuation_over_the_limit_closes_with_1009)
{
	static uint8_t bytes[WS_MESSAGE_MAX];
	struct ws *ws = ws_create(fds[0], &server_cb, &got);
	size_t n = 0;

	/* "ok" whole, then a first fragment of 60000 bytes, then a last one announcing 8000. */
	bytes[n++] = 0x82;
	bytes[n++] = 0x82;
	n += 4;
	bytes[n++] = 'o';
	bytes[n++] = 'k';
	bytes[n++] = 0x02;
	bytes[n++] = 0xfe;
	bytes[n++] = 60000 >> 8;
	bytes[n++] = 60000 & 0xff;
	n += 4 + 60000;
	bytes[n++] = 0x80;
	bytes[n++] = 0xfe;
	bytes[n++] = 8000 >> 8;
	bytes[n++] = 8000 & 0xff;
	n += 4;
	cr_assert_eq(close_code_after(ws, bytes, n), WS_CLOSE_TOO_BIG);
	cr_assert_eq(got.messages, 1, "the frame before is delivered");
	cr_assert_eq(got.last_len, 2);
	ws_destroy(ws);
}

/* RFC 6455 §5.5: control frames are never fragmented and carry at most 125 bytes. */
Test(ws, an_oversize_ping_closes_with_1002)
{
	static const uint8_t ping[] = {0x89, 0xfe, 0x00, 0xc8, 0x00, 0x00, 0x00, 0x00};
	struct ws *ws = ws_create(fds[0], &server_cb, &got);

	cr_assert_eq(close_code_after(ws, ping, sizeof(ping)), 1002);
	ws_destroy(ws);
}

Test(ws, a_fragmented_ping_closes_with_1002)
{
	static const uint8_t ping[] = {0x09, 0x81, 0x00, 0x00, 0x00, 0x00, 'a'};
	struct ws *ws = ws_create(fds[0], &server_cb, &got);

	cr_assert_eq(close_code_after(ws, ping, sizeof(ping)), 1002);
	cr_assert_eq(peer.pongs, 0);
	ws_destroy(ws);
}

Test(ws, an_oversize_close_or_pong_closes_with_1002)
{
	static const uint8_t close_frame[] = {0x88, 0xfe, 0x00, 0x80, 0, 0, 0, 0};
	static const uint8_t pong[] = {0x0a, 0x80, 0, 0, 0, 0};
	struct ws *ws = ws_create(fds[0], &server_cb, &got);

	cr_assert_eq(close_code_after(ws, close_frame, sizeof(close_frame)), 1002);
	ws_destroy(ws);
	teardown();
	setup();
	ws = ws_create(fds[0], &server_cb, &got);
	cr_assert_eq(close_code_after(ws, pong, sizeof(pong)), 1002);
	ws_destroy(ws);
}
