#include "transcript.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static json_object *transcript_get(json_object *o, const char *key)
{
	json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
	return v;
}

static void transcript_on_timer(uv_timer_t *timer);
static void transcript_on_poll(uv_poll_t *poll, int status, int events);

/* ---- the budget --------------------------------------------------------------------------- */

void transcript_budget_init(struct transcript_budget *b, uint64_t now)
{
	memset(b, 0, sizeof(*b));
	b->tokens = TRANSCRIPT_BURST_BYTES;
	b->refilled = now;
}

static void transcript_budget_refill(struct transcript_budget *b, uint64_t now)
{
	uint64_t add;

	if (now <= b->refilled)
		return;
	add = (now - b->refilled) * TRANSCRIPT_RATE_BYTES / 1000;
	if (add == 0)
		return; /* too soon for a byte: the time counts at the next refill */
	if (add >= (uint64_t)(TRANSCRIPT_BURST_BYTES - b->tokens))
		b->tokens = TRANSCRIPT_BURST_BYTES;
	else
		b->tokens += (int64_t)add;
	b->refilled = now;
}

bool transcript_budget_admit(struct transcript_budget *b, uint64_t now)
{
	transcript_budget_refill(b, now);
	/* While events are being skipped, the flood goes on until a quiet spell: printing again
	 * at each refill would cut it into a note and a line, a note and a line. */
	if (b->tokens > 0 && (b->skipped == 0 || now >= b->last_skip + TRANSCRIPT_QUIET_MS))
		return true;
	b->skipped++;
	b->last_skip = now;
	return false;
}

void transcript_budget_charge(struct transcript_budget *b, size_t bytes)
{
	/* One line is at most HOSTPROTO_LINE_MAX bytes, printed once or twice: far from the
	 * bottom of an int64_t. */
	b->tokens -= (int64_t)bytes;
}

uint64_t transcript_budget_over(struct transcript_budget *b, uint64_t now, bool force)
{
	uint64_t n = b->skipped;

	if (n == 0 || (!force && now < b->last_skip + TRANSCRIPT_QUIET_MS))
		return 0;
	b->skipped = 0;
	return n;
}

/* ---- the pane ----------------------------------------------------------------------------- */

static void transcript_on_quiet(uv_timer_t *timer);

void transcript_init(struct transcript *t, uv_loop_t *loop, const char *id)
{
	char path[256];

	memset(t, 0, sizeof(*t));
	t->id = id;
	t->fd = -1;
	uv_timer_init(loop, &t->timer);
	t->timer.data = t;
	uv_timer_init(loop, &t->quiet);
	t->quiet.data = t;
	t->handles = true;
	transcript_budget_init(&t->budget, uv_now(loop));
	/* A description of our own: O_NONBLOCK on the one stdout shares would reach claude's
	 * stderr (the same pane) too. */
	if (isatty(STDOUT_FILENO) && ttyname_r(STDOUT_FILENO, path, sizeof(path)) == 0)
		t->fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (t->fd >= 0 && uv_poll_init(loop, &t->poll, t->fd) < 0) {
		close(t->fd);
		t->fd = -1;
	}
	if (t->fd < 0)
		return;
	t->poll.data = t;
}

/* Room for n more bytes; false when there is no memory (the text is then dropped). */
static bool transcript_room(struct transcript *t, size_t n)
{
	size_t want = t->cap > 0 ? t->cap : TRANSCRIPT_BUFFER;
	char *grown;

	if (t->len + n <= t->cap)
		return true;
	while (want < t->len + n)
		want *= 2;
	grown = realloc(t->buf, want);
	if (grown == NULL)
		return false;
	t->buf = grown;
	t->cap = want;
	return true;
}

static void transcript_vprintf(struct transcript *t, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void transcript_vprintf(struct transcript *t, const char *fmt, va_list ap)
{
	va_list again;
	int n;

	va_copy(again, ap);
	n = vsnprintf(t->buf != NULL ? t->buf + t->len : NULL, t->cap - t->len, fmt, ap);
	if (n >= 0 && (size_t)n >= t->cap - t->len) {
		if (transcript_room(t, (size_t)n + 1))
			n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, again);
		else
			n = -1;
	}
	va_end(again);
	if (n > 0)
		t->len += (size_t)n;
}

static void transcript_printf(struct transcript *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void transcript_printf(struct transcript *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	transcript_vprintf(t, fmt, ap);
	va_end(ap);
}

/* Appends text with its control characters made visible (as JSON writes them: \u001b), apart
 * from newlines and tabs: a prompt or claude's text is shown, never obeyed by the terminal of
 * whoever watches the pane (an ESC ] title or ESC [2J clear, a C1 CSI). */
static void transcript_visible(struct transcript *t, const char *text)
{
	const unsigned char *p = (const unsigned char *)(text != NULL ? text : "(null)");

	for (; *p != '\0'; p++) {
		unsigned c = *p;

		if (c == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) /* U+0080..U+009F in UTF-8 */
			c = *++p;
		else if ((c >= 0x20 && c != 0x7f) || c == '\n' || c == '\t') {
			if (transcript_room(t, 1))
				t->buf[t->len++] = (char)c;
			continue;
		}
		transcript_printf(t, "\\u%04x", c);
	}
}

/* "who: text" and a newline, the text made visible. */
static void transcript_said_line(struct transcript *t, const char *who, const char *text)
{
	transcript_printf(t, "%s: ", who);
	transcript_visible(t, text);
	transcript_printf(t, "\n");
}

static void transcript_content(struct transcript *t, json_object *content, const char *who)
{
	size_t n =
	    json_object_is_type(content, json_type_array) ? json_object_array_length(content) : 0;

	if (json_object_is_type(content, json_type_string))
		transcript_said_line(t, who, json_object_get_string(content));
	for (size_t i = 0; i < n; i++) {
		json_object *b = json_object_array_get_idx(content, i);
		const char *type = json_object_get_string(transcript_get(b, "type"));

		if (type == NULL)
			continue;
		if (strcmp(type, "text") == 0)
			transcript_said_line(t, who,
					     json_object_get_string(transcript_get(b, "text")));
		else if (strcmp(type, "tool_use") == 0) {
			/* json-c escapes what is below U+0020, not DEL nor U+0080..U+009F. */
			transcript_printf(t, "%s wants to use ", who);
			transcript_visible(t, json_object_get_string(transcript_get(b, "name")));
			transcript_printf(t, ": ");
			transcript_visible(
			    t, json_object_to_json_string_ext(transcript_get(b, "input"),
							      JSON_C_TO_STRING_PLAIN));
			transcript_printf(t, "\n");
		} else if (strcmp(type, "tool_result") == 0)
			transcript_printf(t, "tool result received\n");
	}
}

/* The loop's time (ms); 0 once the handles are closed. */
static uint64_t transcript_now(const struct transcript *t)
{
	return t->handles ? uv_now(t->timer.loop) : 0;
}

/* "19512" as "19,512": the count of skipped events is read at a glance. */
static void transcript_count(uint64_t n, char *out, size_t size)
{
	char digits[24];
	int len = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)n);
	size_t o = 0;

	for (int i = 0; i < len && o + 2 < size; i++) {
		if (i > 0 && (len - i) % 3 == 0)
			out[o++] = ',';
		out[o++] = digits[i];
	}
	out[o] = '\0';
}

/* The line that says how many events were skipped, once the flood is over (or force). */
static void transcript_skipped(struct transcript *t, uint64_t now, bool force)
{
	uint64_t n = transcript_budget_over(&t->budget, now, force);
	char count[32];

	if (n == 0)
		return;
	transcript_count(n, count, sizeof(count));
	transcript_printf(t, "-- %s event%s not shown here (GET /sessions/%s/events has %s)\n",
			  count, n == 1 ? "" : "s", t->id != NULL ? t->id : "<id>",
			  n == 1 ? "it" : "them all");
}

/* What decides a turn (its end, a permission to answer) prints whatever the budget. */
static bool transcript_always(const char *name)
{
	return strcmp(name, "result") == 0 || strcmp(name, "control_request") == 0;
}

bool transcript_wants(struct transcript *t, const char *name)
{
	bool always = transcript_always(name);
	uint64_t now = transcript_now(t);

	/* Events it never prints are neither counted nor charged. */
	if (!always && strcmp(name, "assistant") != 0 && strcmp(name, "user") != 0)
		return false;
	if (!always && !transcript_budget_admit(&t->budget, now))
		return false; /* skipped before any work on it */
	transcript_skipped(t, now, always);
	return true;
}

void transcript_print(struct transcript *t, const char *name, json_object *obj)
{
	json_object *msg = transcript_get(obj, "message");
	size_t before = t->len;

	/* A user line with isReplay is claude's echo of a prompt (--replay-user-messages): the
	 * host printed the prompt when it sent it. */
	if (strcmp(name, "assistant") == 0)
		transcript_content(t, transcript_get(msg, "content"),
				   t->agent != NULL ? t->agent : "claude");
	else if (strcmp(name, "user") == 0 &&
		 !json_object_get_boolean(transcript_get(obj, "isReplay")))
		transcript_content(t, transcript_get(msg, "content"), "user");
	else if (strcmp(name, "result") == 0)
		transcript_said_line(t, "-- turn finished",
				     json_object_get_string(transcript_get(obj, "subtype")));
	else if (strcmp(name, "control_request") == 0) {
		transcript_printf(t, "-- permission requested for ");
		transcript_visible(t, json_object_get_string(transcript_get(
					  transcript_get(obj, "request"), "tool_name")));
		transcript_printf(t, " (answer it from the API)\n");
	}
	if (!transcript_always(name))
		transcript_budget_charge(&t->budget, t->len - before);
}

void transcript_event(struct transcript *t, const char *name, json_object *obj)
{
	if (transcript_wants(t, name))
		transcript_print(t, name, obj);
}

void transcript_note(struct transcript *t, const char *fmt, ...)
{
	va_list ap;

	transcript_skipped(t, transcript_now(t), true);
	va_start(ap, fmt);
	transcript_vprintf(t, fmt, ap);
	va_end(ap);
	transcript_printf(t, "\n");
}

void transcript_said(struct transcript *t, const char *who, const char *text)
{
	transcript_skipped(t, transcript_now(t), true);
	transcript_said_line(t, who, text);
}

/* Drops the first n bytes (written). */
static void transcript_consume(struct transcript *t, size_t n)
{
	if (n == 0)
		return; /* nothing written (maybe no buffer yet) */
	memmove(t->buf, t->buf + n, t->len - n);
	t->len -= n;
	if (t->len == 0 && t->cap > TRANSCRIPT_BUFFER) {
		/* A burst went by: give its memory back. */
		free(t->buf);
		t->buf = NULL;
		t->cap = 0;
	}
}

/* Writes what the tty takes now (all of it when blocking is set: waits for room). When the
 * pane is gone, the rest is dropped: nobody would read it. */
static void transcript_write(struct transcript *t, bool blocking)
{
	int fd = t->fd >= 0 ? t->fd : STDOUT_FILENO;
	size_t done = 0;

	while (done < t->len) {
		ssize_t n = write(fd, t->buf + done, t->len - done);

		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN && blocking) {
			struct pollfd p = {.fd = fd, .events = POLLOUT};

			if (poll(&p, 1, -1) >= 0 || errno == EINTR)
				continue;
		}
		if (n < 0 && errno == EAGAIN)
			break;
		done = t->len; /* the pane is gone: nobody reads the rest */
		break;
	}
	transcript_consume(t, done);
}

/* One write now: what does not fit waits for the tty to have room. */
static void transcript_write_now(struct transcript *t)
{
	uv_loop_t *loop = t->timer.loop;

	t->last_write = uv_now(loop);
	transcript_write(t, t->fd < 0 || t->len > TRANSCRIPT_BACKLOG_MAX);
	if (t->fd < 0)
		return;
	if (t->len > 0 && !t->polling) {
		uv_poll_start(&t->poll, UV_WRITABLE, transcript_on_poll);
		t->polling = true;
	} else if (t->len == 0 && t->polling) {
		uv_poll_stop(&t->poll);
		t->polling = false;
	}
}

static void transcript_on_timer(uv_timer_t *timer)
{
	struct transcript *t = timer->data;

	t->timer_on = false;
	if (!t->polling && t->len > 0)
		transcript_write_now(t);
}

static void transcript_on_poll(uv_poll_t *poll, int status, int events)
{
	struct transcript *t = poll->data;

	/* The tty has room: the rest goes on (an error: the write finds out). */
	transcript_write_now(t);
}

static void transcript_on_quiet(uv_timer_t *timer)
{
	struct transcript *t = timer->data;

	t->quiet_on = false;
	transcript_skipped(t, uv_now(timer->loop), false);
	transcript_flush(t); /* the line, or the timer again while events are still skipped */
}

void transcript_flush(struct transcript *t)
{
	uint64_t now, next;

	if (t->handles && t->budget.skipped > 0 && !t->quiet_on) {
		now = uv_now(t->quiet.loop);
		next = t->budget.last_skip + TRANSCRIPT_QUIET_MS;
		uv_timer_start(&t->quiet, transcript_on_quiet, next > now ? next - now : 0, 0);
		t->quiet_on = true;
	}
	if (t->len == 0 || !t->handles) {
		if (!t->handles && t->len > 0)
			transcript_write(t, true);
		return;
	}
	if (t->fd < 0 || t->len > TRANSCRIPT_BACKLOG_MAX) {
		transcript_write_now(t);
		return;
	}
	if (t->polling || t->timer_on)
		return; /* written when the tty has room, or at the interval's end */
	now = uv_now(t->timer.loop);
	next = t->last_write + TRANSCRIPT_INTERVAL_MS;
	if (t->last_write == 0 || now >= next) {
		transcript_write_now(t);
		return;
	}
	uv_timer_start(&t->timer, transcript_on_timer, next - now, 0);
	t->timer_on = true;
}

void transcript_close(struct transcript *t)
{
	if (!t->handles)
		return;
	transcript_skipped(t, 0, true);
	transcript_write(t, true);
	t->handles = false;
	uv_close((uv_handle_t *)&t->timer, NULL);
	uv_close((uv_handle_t *)&t->quiet, NULL);
	if (t->fd >= 0)
		uv_close((uv_handle_t *)&t->poll, NULL);
}

void transcript_free(struct transcript *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	free(t->buf);
	t->buf = NULL;
	t->len = t->cap = 0;
}
