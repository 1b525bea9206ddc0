/*
 * WebSocket frames as the bridge receives them (ptybridge/ws.c over wslay). Input: one byte
 * choosing how many of the bytes come with the handshake (ws_prefix, up to WS_PREFIX_MAX), one
 * byte of flags (bit 0: queue a text message and a ping first, so our sends interleave), then
 * the bytes the client sends. They are written into the peer end of a socketpair, which is then
 * shut, and ws_recv/ws_send run until the connection is over. The messages delivered must not
 * depend on how the bytes were split between the prefix and the socket; every message fits
 * WS_MESSAGE_MAX, none comes after the peer's close, and ws_recv ends with a documented code.
 */
#include "fuzz.h"

#include "ws.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define INPUT_MAX  (96 * 1024) /* well under a socketpair's buffer: the write never blocks */
#define ROUNDS_MAX 4096

struct run {
	struct ws *ws;
	size_t messages, bytes, pongs;
	uint64_t digest; /* FNV-1a over every message's length and bytes, in order */
	bool after_close;
	int r;
	bool close_received;
};

static void digest(uint64_t *h, const void *p, size_t len)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++) {
		*h ^= b[i];
		*h *= 0x100000001b3ULL;
	}
}

static void on_message(void *data, const uint8_t *msg, size_t len)
{
	struct run *run = data;

	FUZZ_CHECK(len <= WS_MESSAGE_MAX, "a message of %zu bytes", len);
	if (ws_close_received(run->ws))
		run->after_close = true;
	run->messages++;
	run->bytes += len;
	digest(&run->digest, &len, sizeof(len));
	digest(&run->digest, msg, len);
}

static void on_pong(void *data)
{
	struct run *run = data;

	run->pongs++;
}

static void drain(int fd)
{
	char sink[16384];

	while (read(fd, sink, sizeof(sink)) > 0)
		;
}

static void run_one(const uint8_t *bytes, size_t size, size_t prefix, bool queue_first,
		    struct run *run)
{
	static const struct ws_callbacks cb = {.on_message = on_message, .on_pong = on_pong};
	int sv[2];
	int rounds;

	memset(run, 0, sizeof(*run));
	run->digest = 0xcbf29ce484222325ULL;
	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0,
		   "socketpair: %d", errno);
	run->ws = ws_create(sv[0], &cb, run);
	FUZZ_CHECK(run->ws != NULL, "ws_create");
	FUZZ_CHECK(ws_prefix(run->ws, bytes, prefix) == 0, "ws_prefix of %zu bytes", prefix);
	if (size > prefix)
		FUZZ_CHECK(write(sv[1], bytes + prefix, size - prefix) == (ssize_t)(size - prefix),
			   "write to the socketpair");
	shutdown(sv[1], SHUT_WR);
	if (queue_first) {
		FUZZ_CHECK(ws_queue_text(run->ws, "hello", 5) == 0, "ws_queue_text");
		FUZZ_CHECK(ws_queue_ping(run->ws) == 0, "ws_queue_ping");
	}
	for (rounds = 0; rounds < ROUNDS_MAX; rounds++) {
		int s;

		run->r = ws_recv(run->ws);
		s = ws_send(run->ws);
		FUZZ_CHECK(s == 0 || s == -EPIPE || s == -EPROTO || s == -ECONNRESET,
			   "ws_send returned %d", s);
		drain(sv[1]);
		if (run->r != 0 || !ws_want_read(run->ws))
			break;
	}
	FUZZ_CHECK(rounds < ROUNDS_MAX, "no end after %d rounds of ws_recv", rounds);
	FUZZ_CHECK(run->r == 0 || run->r == -EPIPE || run->r == -EPROTO, "ws_recv returned %d",
		   run->r);
	/* ws_recv said 0 and wants no more: the peer closed, or wslay failed the connection and
	 * queued a close itself (a protocol error such as an unmasked frame). */
	if (run->r == 0)
		FUZZ_CHECK(ws_close_received(run->ws) || ws_queue_ping(run->ws) == -EPIPE,
			   "reading stopped without a close");
	run->close_received = ws_close_received(run->ws);
	FUZZ_CHECK(!run->after_close, "a message after the peer's close");
	FUZZ_CHECK(run->bytes <= size, "%zu message bytes from %zu input bytes", run->bytes, size);
	/* Once a close is queued, the peer's data is not delivered any more. */
	FUZZ_CHECK(ws_queue_close(run->ws, WS_CLOSE_NORMAL, "bye") == 0 ||
		       ws_queue_text(run->ws, "x", 1) == -EPIPE,
		   "queueing after a close");
	ws_destroy(run->ws);
	close(sv[0]);
	close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run a, b;
	size_t prefix;
	bool queue_first;

	if (size < 2 || size - 2 > INPUT_MAX)
		return -1;
	prefix = (size_t)data[0] * 32;
	queue_first = data[1] & 1;
	data += 2;
	size -= 2;
	if (prefix > size)
		prefix = size;
	if (prefix > WS_PREFIX_MAX)
		prefix = WS_PREFIX_MAX;
	run_one(data, size, 0, queue_first, &a);
	if (prefix == 0)
		return 0;
	run_one(data, size, prefix, queue_first, &b);
	FUZZ_CHECK(a.messages == b.messages && a.digest == b.digest,
		   "%zu messages through the socket, %zu with a prefix of %zu bytes", a.messages,
		   b.messages, prefix);
	FUZZ_CHECK(a.pongs == b.pongs, "pongs differ");
	FUZZ_CHECK(a.close_received == b.close_received, "close differs");
	/* A peer whose last frame is both malformed and cut short by its close: wslay fails the
	 * connection (0, a close queued) when the bytes that show the error come in the read before
	 * the end, and the end is seen first (-EPIPE) when they come with it. Either way the
	 * connection is over with the same messages delivered; which one depends only on where the
	 * reads split the bytes. */
	FUZZ_CHECK(a.r == b.r || ((a.r == 0 || a.r == -EPIPE) && (b.r == 0 || b.r == -EPIPE)),
		   "ws_recv ends with %d and %d", a.r, b.r);
	return 0;
}
