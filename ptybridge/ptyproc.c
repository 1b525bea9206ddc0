#include "ptyproc.h"

#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

struct ptyproc {
	uv_poll_t poll;
	uv_timer_t hold; /* ends a coalescing pause */
	int handles;     /* handles still open: freed when both are closed */
	int fd;
	pid_t pid;
	bool reaped;
	bool paused;
	bool holding; /* coalescing: not reading until the hold timer fires */
	uint64_t last_read_ns;
	bool hungup;
	bool closing;
	int events; /* what the poll handle currently watches */
	char *scratch;
	struct ptyproc_callbacks cb;
	void *data;
	char *pending; /* keystrokes not yet written; allocated only while there are some */
	size_t pending_len, pending_cap;
};

static void ptyproc_on_poll(uv_poll_t *handle, int status, int events);

static void ptyproc_update(struct ptyproc *p)
{
	int want = 0;

	if (p->closing)
		return;
	if (!p->paused && !p->holding && !p->hungup)
		want |= UV_READABLE;
	if (p->pending_len > 0 && !p->hungup)
		want |= UV_WRITABLE;
	if (want == p->events)
		return;
	p->events = want;
	if (want == 0)
		uv_poll_stop(&p->poll);
	else
		uv_poll_start(&p->poll, want, ptyproc_on_poll);
}

/* Runs in the child between fork and exec: only async-signal-safe calls. */
static void ptyproc_exec_child(const struct ptyproc_spec *spec)
{
	struct sigaction dfl;
	sigset_t none;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	for (int s = 1; s < NSIG; s++)
		sigaction(s, &dfl, NULL); /* ignored dispositions would survive exec */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	close_range(3, ~0U, 0);
	execve(spec->path, spec->argv, spec->envp);
	_exit(127);
}

int ptyproc_spawn(struct ptyproc **out, uv_loop_t *loop, const struct ptyproc_spec *spec,
		  char *scratch, const struct ptyproc_callbacks *cb, void *data)
{
	struct winsize wsz = {.ws_row = spec->rows, .ws_col = spec->cols};
	sigset_t all, old;
	struct ptyproc *p;
	int master = -1, flags, r;
	pid_t pid;

	if (spec->cols < 1 || spec->cols > PTY_SIZE_MAX || spec->rows < 1 ||
	    spec->rows > PTY_SIZE_MAX)
		return -ERANGE;
	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	/* Blocked across fork so no handler of ours runs in the child before exec resets them. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = forkpty(&master, NULL, NULL, &wsz);
	if (pid == 0)
		ptyproc_exec_child(spec);
	r = -errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		free(p);
		return r;
	}
	flags = fcntl(master, F_GETFL);
	if (fcntl(master, F_SETFD, FD_CLOEXEC) < 0 || flags < 0 ||
	    fcntl(master, F_SETFL, flags | O_NONBLOCK) < 0) {
		r = -errno;
		goto fail;
	}
	r = uv_poll_init(loop, &p->poll, master);
	if (r < 0)
		goto fail;
	uv_timer_init(loop, &p->hold); /* cannot fail on Linux */
	p->poll.data = p;
	p->hold.data = p;
	p->handles = 2;
	p->fd = master;
	p->pid = pid;
	p->scratch = scratch;
	p->cb = *cb;
	p->data = data;
	ptyproc_update(p);
	*out = p;
	return 0;
fail:
	close(master);
	kill(pid, SIGHUP);
	free(p);
	return r; /* the child is reaped by the SIGCHLD owner like any other */
}

static void ptyproc_on_close(uv_handle_t *handle)
{
	struct ptyproc *p = handle->data;

	if (--p->handles > 0)
		return;
	close(p->fd);
	free(p->pending);
	free(p);
}

void ptyproc_destroy(struct ptyproc *p)
{
	if (p == NULL || p->closing)
		return;
	p->closing = true;
	if (!p->reaped)
		kill(p->pid, SIGHUP);
	uv_close((uv_handle_t *)&p->poll, ptyproc_on_close);
	uv_close((uv_handle_t *)&p->hold, ptyproc_on_close);
}

pid_t ptyproc_pid(const struct ptyproc *p)
{
	return p->pid;
}

void ptyproc_set_reaped(struct ptyproc *p)
{
	p->reaped = true;
}

static void ptyproc_hangup(struct ptyproc *p)
{
	p->hungup = true;
	ptyproc_update(p);
	if (p->cb.on_hangup != NULL)
		p->cb.on_hangup(p->data);
}

static void ptyproc_on_hold(uv_timer_t *timer)
{
	struct ptyproc *p = timer->data;

	p->holding = false;
	ptyproc_update(p);
}

static void ptyproc_read(struct ptyproc *p)
{
	uint64_t now = uv_hrtime();
	size_t got = 0;
	bool hup = false;

	/* Coalesce what is there now into one frame; level-triggered polling brings us back for
	 * the rest, after other clients had their turn. */
	while (got < PTY_FRAME_MAX) {
		ssize_t n = read(p->fd, p->scratch + got, PTY_FRAME_MAX - got);

		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		hup = true; /* EIO once the slave side is closed by everyone */
		break;
	}
	if (got > 0 && got < PTY_FRAME_MAX && !hup && now - p->last_read_ns < PTY_BURST_NS) {
		p->holding = true;
		uv_timer_start(&p->hold, ptyproc_on_hold, PTY_COALESCE_MS, 0);
	}
	if (got > 0)
		p->last_read_ns = now;
	if (got > 0 && p->cb.on_output != NULL)
		p->cb.on_output(p->data, p->scratch, got);
	if (p->closing || !hup)
		return;
	ptyproc_hangup(p);
}

/* Writes pending input. Returns 0 (possibly with some left) or -EIO. */
static int ptyproc_flush(struct ptyproc *p)
{
	size_t off = 0;

	while (off < p->pending_len) {
		ssize_t n = write(p->fd, p->pending + off, p->pending_len - off);

		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		return -EIO;
	}
	if (off == p->pending_len) {
		free(p->pending);
		p->pending = NULL;
		p->pending_len = p->pending_cap = 0;
	} else if (off > 0) {
		memmove(p->pending, p->pending + off, p->pending_len - off);
		p->pending_len -= off;
	}
	return 0;
}

static void ptyproc_on_poll(uv_poll_t *handle, int status, int events)
{
	struct ptyproc *p = handle->data;

	if (status < 0)
		events = UV_READABLE; /* a read shows what is wrong (EIO = hangup) */
	if ((events & UV_WRITABLE) && p->pending_len > 0) {
		if (ptyproc_flush(p) < 0) {
			free(p->pending);
			p->pending = NULL;
			p->pending_len = p->pending_cap = 0;
			ptyproc_hangup(p);
			return;
		}
		if (p->pending_len == 0) {
			ptyproc_update(p);
			if (p->cb.on_drained != NULL)
				p->cb.on_drained(p->data);
			if (p->closing)
				return;
		}
	}
	if ((events & (UV_READABLE | UV_DISCONNECT)) && !p->paused && !p->hungup)
		ptyproc_read(p);
	if (!p->closing)
		ptyproc_update(p);
}

int ptyproc_write(struct ptyproc *p, const void *data, size_t len)
{
	const char *s = data;

	if (p->hungup)
		return -EIO;
	if (p->pending_len == 0) {
		while (len > 0) {
			ssize_t n = write(p->fd, s, len);

			if (n > 0) {
				s += n;
				len -= (size_t)n;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			return -EIO;
		}
		if (len == 0)
			return 0;
	}
	if (len > PTY_INPUT_MAX - p->pending_len)
		return -EOVERFLOW;
	if (p->pending_len + len > p->pending_cap) {
		size_t cap = p->pending_len + len;
		char *n = realloc(p->pending, cap);

		if (n == NULL)
			return -ENOMEM;
		p->pending = n;
		p->pending_cap = cap;
	}
	memcpy(p->pending + p->pending_len, s, len);
	p->pending_len += len;
	ptyproc_update(p);
	return 0;
}

size_t ptyproc_pending(const struct ptyproc *p)
{
	return p->pending_len;
}

int ptyproc_resize(struct ptyproc *p, unsigned cols, unsigned rows)
{
	struct winsize wsz;

	if (cols < 1 || cols > PTY_SIZE_MAX || rows < 1 || rows > PTY_SIZE_MAX)
		return -ERANGE;
	memset(&wsz, 0, sizeof(wsz));
	wsz.ws_col = (unsigned short)cols;
	wsz.ws_row = (unsigned short)rows;
	return ioctl(p->fd, TIOCSWINSZ, &wsz) < 0 ? -errno : 0;
}

void ptyproc_pause(struct ptyproc *p)
{
	p->paused = true;
	ptyproc_update(p);
}

void ptyproc_resume(struct ptyproc *p)
{
	p->paused = false;
	ptyproc_update(p);
}

bool ptyproc_paused(const struct ptyproc *p)
{
	return p->paused;
}
