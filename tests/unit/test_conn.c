/* The connection core on a socketpair: scripted peers that send byte by byte, too much, or
 * never read. */
#include "conn.h"
#include "http.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct pair {
	uv_loop_t loop;
	struct conn c;
	int peer;
};

static void pair_open(struct pair *p)
{
	int sv[2];

	cr_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
	cr_assert(uv_loop_init(&p->loop) == 0);
	cr_assert(conn_init(&p->c, &p->loop, sv[0], p) == 0);
	p->peer = sv[1];
}

static void pair_closed(uv_handle_t *h)
{
	(void)h;
}

static void pair_finish(struct pair *p)
{
	conn_close(&p->c, pair_closed);
	uv_run(&p->loop, UV_RUN_DEFAULT);
	conn_release(&p->c);
	close(p->peer);
	cr_assert(uv_loop_close(&p->loop) == 0);
}

Test(conn, head_fed_one_byte_at_a_time)
{
	static const char head[] = "GET /sessions/x/terminal HTTP/1.1\r\nHost: h\r\n\r\n";
	struct http_request *req = http_request_create();
	struct pair p;
	int r = 0;

	pair_open(&p);
	for (size_t i = 0; i < strlen(head); i++) {
		cr_assert(r == 0);
		cr_assert(write(p.peer, head + i, 1) == 1);
		r = conn_read_head(&p.c, req);
	}
	cr_assert(r == 1);
	cr_assert(strcmp(http_request_path(req), "/sessions/x/terminal") == 0);
	http_request_destroy(req);
	pair_finish(&p);
}

Test(conn, oversize_head_is_eoverflow)
{
	struct http_request *req = http_request_create();
	char line[1024];
	struct pair p;
	int r = 0;

	pair_open(&p);
	cr_assert(write(p.peer, "GET / HTTP/1.1\r\n", 16) == 16);
	memset(line, 'a', sizeof(line));
	memcpy(line, "X-Pad: ", 7);
	line[sizeof(line) - 2] = '\r';
	line[sizeof(line) - 1] = '\n';
	for (int i = 0; i < 2 * HTTP_HEAD_MAX / (int)sizeof(line) && r == 0; i++) {
		cr_assert(write(p.peer, line, sizeof(line)) == (ssize_t)sizeof(line));
		r = conn_read_head(&p.c, req);
	}
	cr_assert(r == -EOVERFLOW);
	http_request_destroy(req);
	pair_finish(&p);
}

Test(conn, garbage_is_ebadmsg_and_eof_is_epipe)
{
	struct http_request *req = http_request_create();
	struct pair p;

	pair_open(&p);
	cr_assert(conn_read_head(&p.c, req) == 0);
	cr_assert(write(p.peer, "\x01\x02\r\n\r\n", 6) == 6);
	cr_assert(conn_read_head(&p.c, req) == -EBADMSG);
	http_request_destroy(req);
	req = http_request_create();
	shutdown(p.peer, SHUT_WR);
	cr_assert(conn_read_head(&p.c, req) == -EPIPE);
	http_request_destroy(req);
	pair_finish(&p);
}

Test(conn, output_waits_for_a_peer_that_never_reads)
{
	static char chunk[64 * 1024];
	struct pair p;
	char buf[4096];
	uint64_t total = 0;
	ssize_t n;

	pair_open(&p);
	for (int i = 0; i < 32; i++) {
		cr_assert(conn_queue(&p.c, chunk, sizeof(chunk)) == 0);
		total += sizeof(chunk);
	}
	cr_assert(conn_write(&p.c) == 0); /* socket full, the rest stays queued */
	cr_assert(!conn_out_empty(&p.c));
	cr_assert(p.c.out_bytes + p.c.sent == total);
	while (!conn_out_empty(&p.c)) {
		while ((n = read(p.peer, buf, sizeof(buf))) > 0)
			;
		cr_assert(conn_write(&p.c) >= 0);
	}
	cr_assert(p.c.sent == total && p.c.out_bytes == 0);
	pair_finish(&p);
}

Test(conn, error_answer_then_linger_until_eof)
{
	struct pair p;
	char buf[HTTP_RESPONSE_MAX];
	char big[2 * HTTP_RESPONSE_MAX];
	ssize_t n;

	pair_open(&p);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cr_assert(conn_queue_error(&p.c, 409, "not_running", big, NULL) == 0);
	cr_assert(conn_write(&p.c) == 1);
	conn_shut_write(&p.c);
	n = read(p.peer, buf, sizeof(buf) - 1);
	cr_assert(n > 0);
	buf[n] = '\0';
	cr_assert(strncmp(buf, "HTTP/1.1 409 ", 13) == 0);
	cr_assert(strstr(buf, "request failed") != NULL); /* too long a sentence is replaced */
	cr_assert(read(p.peer, buf, sizeof(buf)) == 0);   /* half-closed */
	cr_assert(write(p.peer, "late", 4) == 4);
	cr_assert(conn_drain(&p.c) == 0);
	cr_assert(p.c.lingered == 4);
	shutdown(p.peer, SHUT_WR);
	cr_assert(conn_drain(&p.c) == 1);
	pair_finish(&p);
}

Test(conn, linger_is_bounded)
{
	static char chunk[16 * 1024];
	struct pair p;
	int r = 0;

	pair_open(&p);
	for (size_t sent = 0; sent <= CONN_LINGER_MAX + sizeof(chunk) && r == 0;) {
		ssize_t n = write(p.peer, chunk, sizeof(chunk));

		if (n > 0)
			sent += (size_t)n;
		r = conn_drain(&p.c);
	}
	cr_assert(r == 1);
	cr_assert(p.c.lingered > CONN_LINGER_MAX);
	pair_finish(&p);
}
