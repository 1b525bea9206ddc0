#include "attach.h"

#include "cli.h"
#include "sigfd.h"
#include "wsc.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <wslay/wslay.h>

#define CTL_ATTACH_LINGER_S 2 /* after a detach: how long the close handshake may take */

struct ctl_attach {
	struct wsc *ws;
	int out_fd;
	bool out_failed;
};

size_t ctl_attach_resize_frame(char *out, size_t size, unsigned cols, unsigned rows)
{
	int n;

	if (cols < 1 || cols > 1000 || rows < 1 || rows > 1000)
		return 0;
	n = snprintf(out, size, "\x01%u;%u", cols, rows);
	return n < 0 || (size_t)n >= size ? 0 : (size_t)n;
}

/* The local terminal's size, from stdout or stdin. */
static bool ctl_attach_size(unsigned *cols, unsigned *rows)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0 && ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0)
		return false;
	*cols = ws.ws_col;
	*rows = ws.ws_row;
	return ws.ws_col > 0 && ws.ws_row > 0;
}

static void ctl_attach_resize(struct ctl_attach *a)
{
	unsigned cols, rows;
	char frame[32];
	size_t n;

	if (ctl_attach_size(&cols, &rows) &&
	    (n = ctl_attach_resize_frame(frame, sizeof(frame), cols, rows)) > 0)
		wsc_send(a->ws, WSLAY_TEXT_FRAME, frame, n);
}

/* The pane's bytes: to stdout as they come. */
static void ctl_attach_output(void *arg, int opcode, const uint8_t *p, size_t n)
{
	struct ctl_attach *a = arg;

	while (n > 0 && !a->out_failed) {
		ssize_t k = write(a->out_fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			if (errno == EAGAIN) {
				struct pollfd pfd = {.fd = a->out_fd, .events = POLLOUT};

				poll(&pfd, 1, 1000);
				continue;
			}
			a->out_failed = true;
			break;
		}
		p += k;
		n -= (size_t)k;
	}
}

/* Maps a refused upgrade to an exit code. */
static int ctl_attach_refusal(long status)
{
	if (status == 404)
		return CTL_EXIT_NOT_FOUND;
	if (status == 401 || status == 403)
		return CTL_EXIT_DENIED;
	return CTL_EXIT_FAILURE;
}

int ctl_attach(const struct ctl_conf *conf, const char *id)
{
	struct ctl_attach a = {.out_fd = STDOUT_FILENO};
	struct wsc_refusal ref;
	struct cause cause = {{0}};
	struct termios saved, raw;
	struct ctl_url u;
	bool tty_raw = false, stdin_open = true, detached = false;
	time_t linger_until = 0;
	unsigned cols = 0, rows = 0;
	char path[512];
	const char *reason;
	/* Resizes, and the ends of an attach (a detach in the terminal itself is a key). */
	static const int signals[] = {SIGWINCH, SIGTERM, SIGHUP, SIGINT};
	sigset_t old;
	uint16_t status;
	int sigfd = -1, rc = CTL_EXIT_FAILURE, r = 0;

	if (ctl_url_split(conf->url, &u, &cause) < 0) {
		fprintf(stderr, "agentctl: %s\n", cause.msg);
		return CTL_EXIT_USAGE;
	}
	if (ctl_attach_size(&cols, &rows) && cols <= 1000 && rows <= 1000)
		snprintf(path, sizeof(path), "/sessions/%s/terminal?cols=%u&rows=%u", id, cols,
			 rows);
	else
		snprintf(path, sizeof(path), "/sessions/%s/terminal", id);
	sigemptyset(&old);
	if ((sigfd = sigfd_open(signals, 4, &old)) < 0) {
		fprintf(stderr, "agentctl: cannot set up signals: %s\n", strerror(-sigfd));
		goto out;
	}
	if (wsc_open(&a.ws, &u, path, conf->token, ctl_attach_output, &a, &ref, &cause) < 0) {
		fprintf(stderr, "agentctl: %s: %s\n", id, cause.msg);
		rc = ref.status != 0 ? ctl_attach_refusal(ref.status) : CTL_EXIT_FAILURE;
		goto out;
	}
	fprintf(stderr, "agentctl: attached to %s; %s detaches\r\n", id, CTL_ATTACH_DETACH_NAME);
	if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0) {
		raw = saved;
		cfmakeraw(&raw);
		tty_raw = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
	}
	for (;;) {
		struct pollfd pfd[3] = {
		    {.fd = sigfd, .events = POLLIN},
		    {.fd = wsc_fd(a.ws), .events = 0},
		    {.fd = stdin_open && !detached ? STDIN_FILENO : -1, .events = POLLIN},
		};
		int timeout = -1;

		if (wsc_want_read(a.ws))
			pfd[1].events |= POLLIN;
		if (wsc_want_write(a.ws))
			pfd[1].events |= POLLOUT;
		if (wsc_pending(a.ws))
			timeout = 0;
		else if (detached)
			timeout = 200;
		if (detached && time(NULL) >= linger_until)
			break;
		if (poll(pfd, 3, timeout) < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
		if (pfd[0].revents & POLLIN) {
			int signo;

			while ((signo = sigfd_next(sigfd)) > 0) {
				if (signo == SIGWINCH) {
					ctl_attach_resize(&a);
				} else if (!detached) {
					wsc_close(a.ws, 1000, "detached");
					detached = true;
					linger_until = time(NULL) + CTL_ATTACH_LINGER_S;
				}
			}
		}
		if (pfd[2].revents & (POLLIN | POLLHUP | POLLERR)) {
			char buf[CTL_ATTACH_READ_MAX];
			ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
			char *key;

			if (n > 0 &&
			    (key = memchr(buf, CTL_ATTACH_DETACH_KEY, (size_t)n)) != NULL) {
				n = key - buf;
				stdin_open = false;
			} else if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
				stdin_open = false;
			}
			if (n > 0)
				wsc_send(a.ws, WSLAY_BINARY_FRAME, buf, (size_t)n);
			if (!stdin_open) {
				wsc_close(a.ws, 1000, "detached");
				detached = true;
				linger_until = time(NULL) + CTL_ATTACH_LINGER_S;
			}
		}
		if ((r = wsc_io(a.ws)) != 0)
			break;
		if (a.out_failed && !detached) {
			wsc_close(a.ws, 1000, "detached");
			detached = true;
			linger_until = time(NULL) + CTL_ATTACH_LINGER_S;
		}
	}
	if (tty_raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	status = wsc_ended(a.ws, &reason);
	if (detached) {
		fprintf(stderr, "\r\nagentctl: detached from %s\n", id);
		rc = CTL_EXIT_OK;
	} else if (status == 1000) {
		fprintf(stderr, "\r\nagentctl: %s: %s\n", id, *reason ? reason : "session ended");
		rc = CTL_EXIT_OK;
	} else if (status == 1008) {
		fprintf(stderr, "\r\nagentctl: %s: access ended (%s)\n", id, reason);
		rc = CTL_EXIT_DENIED;
	} else if (status != 0) {
		fprintf(stderr, "\r\nagentctl: %s: closed with %u %s\n", id, status, reason);
	} else {
		fprintf(stderr, "\r\nagentctl: %s: the connection ended%s%s\n", id,
			r < 0 ? ": " : "", r < 0 ? strerror(-r) : "");
	}
out:
	wsc_destroy(a.ws);
	if (sigfd >= 0)
		close(sigfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}
