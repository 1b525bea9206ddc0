/*
 * The bridge↔host codec (core/hostproto): what agentd-host reads from a bridge connection, what
 * the bridge reads back, and the event lines both write and read. Each parser gets the input as a
 * line; what it accepts must format back into a line it parses to the same thing. The line reader
 * gets the same input fed in pieces of every size and must cut it exactly as a plain split does.
 */
#include "fuzz.h"

#include "hostproto.h"

#include <stdbool.h>
#include <string.h>

#define FUZZ_READER_MAX 64 /* a small limit, so that over-long lines are common */
#define FUZZ_LINES_MAX  4096

struct lines {
	size_t n;
	size_t len[FUZZ_LINES_MAX];
	bool over[FUZZ_LINES_MAX];
	const char *text[FUZZ_LINES_MAX]; /* copies of accepted lines */
};

static int collect(void *arg, const char *line, size_t len)
{
	struct lines *l = arg;

	FUZZ_CHECK(l->n < FUZZ_LINES_MAX, "too many lines");
	l->over[l->n] = line == NULL;
	l->len[l->n] = len;
	l->text[l->n] = line != NULL ? fuzz_strndup((const uint8_t *)line, len) : NULL;
	l->n++;
	return 0;
}

static void lines_free(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free((char *)l->text[i]);
}

/* Fed in pieces whose sizes come from the input itself; compared with a plain split. */
static void check_reader(const uint8_t *data, size_t size)
{
	static struct lines got;
	struct hostproto_reader rd;
	size_t at = 0, start = 0, i = 0, k = 0;

	memset(&got, 0, sizeof(got));
	hostproto_reader_init(&rd, FUZZ_READER_MAX);
	while (at < size) {
		size_t piece = 1 + (size_t)data[k++ % size] % 37;

		piece = piece < size - at ? piece : size - at;
		FUZZ_CHECK(
		    hostproto_reader_feed(&rd, (const char *)data + at, piece, collect, &got) == 0,
		    "feed");
		at += piece;
	}
	for (size_t p = 0; p < size; p++) {
		size_t len;

		if (data[p] != '\n')
			continue;
		len = p - start;
		FUZZ_CHECK(i < got.n, "line %zu missing", i);
		if (len > FUZZ_READER_MAX) {
			FUZZ_CHECK(got.over[i], "line %zu of %zu bytes not reported as too long", i,
				   len);
		} else {
			FUZZ_CHECK(!got.over[i] && got.len[i] == len &&
				       memcmp(got.text[i], data + start, len) == 0,
				   "line %zu differs", i);
		}
		i++;
		start = p + 1;
	}
	/* The unfinished tail: kept when it fits, else reported (once) and skipped. */
	if (size - start > FUZZ_READER_MAX) {
		FUZZ_CHECK(i + 1 == got.n && got.over[i], "an over-long tail is reported");
		FUZZ_CHECK(hostproto_reader_pending(&rd) == 0, "an over-long tail is not kept");
	} else {
		FUZZ_CHECK(i == got.n, "%zu lines, %zu expected", got.n, i);
		FUZZ_CHECK(hostproto_reader_pending(&rd) == size - start, "the tail is kept");
	}
	lines_free(&got);
	hostproto_reader_free(&rd);
}

static bool same_json(json_object *a, json_object *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && json_object_equal(a, b));
}

static void check_request(const char *line, size_t len)
{
	struct hostproto_request req, again;
	const char *why = NULL;
	size_t out_len = 0;
	char *out;

	if (hostproto_request_parse(line, len, &req, &why) < 0) {
		FUZZ_CHECK(why != NULL && *why != '\0', "a refused request says why");
		return;
	}
	out = hostproto_request_format(&req, &out_len);
	FUZZ_CHECK(out != NULL, "an accepted request formats");
	FUZZ_CHECK(out_len > 0 && out[out_len - 1] == '\n', "a request line ends in a newline");
	FUZZ_CHECK(hostproto_request_parse(out, out_len - 1, &again, &why) == 0,
		   "the formatted request parses: %s", why);
	FUZZ_CHECK(again.kind == req.kind, "kind");
	switch (req.kind) {
	case HOSTPROTO_SUBSCRIBE:
		FUZZ_CHECK(again.after == req.after, "after");
		break;
	case HOSTPROTO_PROMPT:
		FUZZ_CHECK(same_json(again.prompt, req.prompt), "prompt");
		break;
	case HOSTPROTO_PERMISSION:
		FUZZ_CHECK(strcmp(again.request_id, req.request_id) == 0 &&
			       hostproto_request_id_valid(req.request_id),
			   "request id");
		FUZZ_CHECK(again.allow == req.allow && again.interrupt == req.interrupt, "flags");
		FUZZ_CHECK((again.message == NULL) == (req.message == NULL) &&
			       (req.message == NULL || strcmp(again.message, req.message) == 0),
			   "message");
		FUZZ_CHECK(same_json(again.updated_input, req.updated_input), "updatedInput");
		FUZZ_CHECK(same_json(again.updated_permissions, req.updated_permissions),
			   "updatedPermissions");
		break;
	case HOSTPROTO_INTERRUPT:
		break;
	}
	hostproto_request_release(&again);
	hostproto_request_release(&req);
	free(out);
}

static void check_answer(const char *line, size_t len)
{
	struct hostproto_answer a, again;
	char out[HOSTPROTO_ANSWER_MAX];
	int n = -1;

	if (hostproto_answer_parse(line, len, &a) < 0)
		return;
	switch (a.type) {
	case HOSTPROTO_ACCEPTED:
		n = hostproto_accepted_format(a.after, a.queued, out, sizeof(out));
		break;
	case HOSTPROTO_OK:
		n = hostproto_ok_format(out, sizeof(out));
		break;
	case HOSTPROTO_ERROR:
		if (a.code != NULL && a.error != NULL)
			n = hostproto_error_format(a.status, a.code, a.error, out, sizeof(out));
		break;
	}
	if (n > 0) {
		FUZZ_CHECK(out[n - 1] == '\n', "an answer line ends in a newline");
		FUZZ_CHECK(hostproto_answer_parse(out, (size_t)n - 1, &again) == 0,
			   "the formatted answer parses");
		FUZZ_CHECK(again.type == a.type && again.after == a.after &&
			       again.status == a.status,
			   "the answer round-trips");
		FUZZ_CHECK(a.type != HOSTPROTO_ERROR || (strcmp(again.code, a.code) == 0 &&
							 strcmp(again.error, a.error) == 0),
			   "the error round-trips");
		hostproto_answer_release(&again);
	}
	hostproto_answer_release(&a);
}

static void check_event(const char *line, size_t len)
{
	char head[HOSTPROTO_EVENT_HEAD_MAX], name[HOSTPROTO_NAME_MAX], *rebuilt;
	struct hostproto_event ev, again;
	int h;

	if (hostproto_event_parse(line, len, &ev) < 0)
		return;
	FUZZ_CHECK(ev.name >= line && ev.name + ev.name_len <= line + len, "name inside the line");
	FUZZ_CHECK(ev.data >= line && ev.data + ev.data_len <= line + len && ev.data_len > 0,
		   "data inside the line");
	FUZZ_CHECK(hostproto_event_name_valid(ev.name, ev.name_len), "a valid name");
	memcpy(name, ev.name, ev.name_len);
	name[ev.name_len] = '\0';
	h = hostproto_event_head(ev.id, name, head);
	FUZZ_CHECK(h > 0, "the head formats");
	rebuilt = malloc((size_t)h + ev.data_len + 2);
	FUZZ_CHECK(rebuilt != NULL, "malloc");
	memcpy(rebuilt, head, (size_t)h);
	memcpy(rebuilt + h, ev.data, ev.data_len);
	rebuilt[(size_t)h + ev.data_len] = '}';
	FUZZ_CHECK(hostproto_event_parse(rebuilt, (size_t)h + ev.data_len + 1, &again) == 0,
		   "the rebuilt line parses");
	FUZZ_CHECK(again.id == ev.id && again.name_len == ev.name_len &&
		       memcmp(again.name, ev.name, ev.name_len) == 0 &&
		       again.data_len == ev.data_len &&
		       memcmp(again.data, ev.data, ev.data_len) == 0,
		   "the rebuilt line is the same event");
	free(rebuilt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = fuzz_strndup(data, size), type[64], name[HOSTPROTO_NAME_MAX];

	check_request(line, size);
	check_answer(line, size);
	check_event(line, size);
	if (size > 0)
		check_reader(data, size);
	/* The event name of claude's "type": always a valid name. */
	snprintf(type, sizeof(type), "%s", line);
	hostproto_event_name(type, name);
	FUZZ_CHECK(hostproto_event_name_valid(name, strlen(name)), "a derived name is valid");
	free(line);
	return 0;
}
