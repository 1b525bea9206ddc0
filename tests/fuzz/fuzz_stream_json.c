/*
 * agentd-host reading claude's stdout (host_claude_line: stream-json lines, can_use_tool and
 * control_cancel_request, results) — what a compromised or confused claude can send. Input: the
 * bytes claude writes, cut into lines as claudeproc cuts them (empty lines skipped). Each line
 * goes through the host's real event path into an event log on a memfd, with no subscriber and no
 * claude to answer. Then the log is read back: every line must be an event the codec takes apart,
 * ids must run 1, 2, 3… without gap, every name must be SSE-safe, and every event's data must be
 * exactly one JSON value in valid UTF-8 (clients parse it, and a WebSocket text frame must be
 * UTF-8: a line with trailing bytes after its object, or with invalid bytes, must not pass).
 */
#include "fuzz.h"

#include "config.h"
#include "evlog.h"
#include "host.h"
#include "hostproto.h"
#include "jsontext.h"
#include "linecheck.h"

#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FUZZ_READ_CHUNK (64 * 1024)

static struct config fuzz_cfg;
static uv_loop_t fuzz_loop;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);

	(void)argc;
	(void)argv;
	/* The transcript goes to the pane (stdout): not to the fuzzer's output. */
	if (devnull < 0 || dup2(devnull, STDOUT_FILENO) < 0)
		abort();
	close(devnull);
	config_defaults(&fuzz_cfg);
	if (uv_loop_init(&fuzz_loop) < 0)
		abort();
	return 0;
}

/* True when text (len bytes) is exactly one JSON value, surrounding whitespace allowed. */
static bool one_json_value(const char *text, size_t len)
{
	json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
	json_object *o;
	size_t end;
	bool ok;

	if (tok == NULL)
		abort();
	o = json_tokener_parse_ex(tok, text, (int)len);
	end = json_tokener_get_parse_end(tok);
	ok = o != NULL || (json_tokener_get_error(tok) == json_tokener_success);
	while (end < len && strchr(" \t\r", text[end]) != NULL)
		end++;
	ok = ok && end == len;
	json_object_put(o);
	json_tokener_free(tok);
	return ok;
}

/* linecheck (host/linecheck.h) never says yes where json-c, as the host uses it, says no, and
 * finds the same "type". */
static void check_linecheck(struct host *h, const char *line, size_t len)
{
	struct linecheck lc;
	json_object *obj, *type = NULL;

	if (!jsontext_utf8_valid(line, len) || !linecheck_object(line, len, &lc))
		return;
	obj = claudeproc_parse(h, line, len);
	FUZZ_CHECK(obj != NULL, "linecheck takes a line json-c refuses: %.*s", (int)len, line);
	json_object_object_get_ex(obj, "type", &type);
	if (lc.type == NULL) {
		FUZZ_CHECK(type == NULL, "json-c finds a type linecheck does not: %.*s", (int)len,
			   line);
	} else {
		FUZZ_CHECK(json_object_is_type(type, json_type_string) &&
			       (size_t)json_object_get_string_len(type) == lc.type_len &&
			       memcmp(json_object_get_string(type), lc.type, lc.type_len) == 0,
			   "json-c's type is not linecheck's: %.*s", (int)len, line);
	}
	json_object_put(obj);
}

static void check_log(const struct evlog *log)
{
	uint64_t want = 1;
	off_t at = 0;

	for (;;) {
		struct evlog_batch *b = NULL;

		FUZZ_CHECK(evlog_read(log, at, FUZZ_READ_CHUNK, &b) == 0, "log read failed");
		if (b->len == 0) {
			evlog_batch_unref(b);
			break;
		}
		for (size_t i = 0; i < b->n; i++) {
			const struct evlog_entry *e = &b->ev[i];
			struct hostproto_event ev;

			FUZZ_CHECK(e->len > 0 && b->data[e->off + e->len - 1] == '\n', "torn line");
			FUZZ_CHECK(hostproto_event_parse(b->data + e->off, e->len - 1, &ev) == 0,
				   "a log line the codec refuses: %.*s", (int)(e->len - 1),
				   b->data + e->off);
			FUZZ_CHECK(ev.id == want, "id %llu where %llu was due",
				   (unsigned long long)ev.id, (unsigned long long)want);
			FUZZ_CHECK(hostproto_event_name_valid(ev.name, ev.name_len), "bad name");
			FUZZ_CHECK(jsontext_utf8_valid(ev.data, ev.data_len),
				   "event %llu's data is not UTF-8", (unsigned long long)ev.id);
			FUZZ_CHECK(one_json_value(ev.data, ev.data_len),
				   "event %llu's data is not one JSON value: %.*s",
				   (unsigned long long)ev.id, (int)ev.data_len, ev.data);
			want++;
		}
		at = b->at + (off_t)b->len;
		evlog_batch_unref(b);
	}
	FUZZ_CHECK(want - 1 == log->last_id, "log holds %llu events, last id %llu",
		   (unsigned long long)(want - 1), (unsigned long long)log->last_id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct host *h = calloc(1, sizeof(*h));
	char path[64];
	int fd = memfd_create("events.log", MFD_CLOEXEC);
	size_t start = 0;

	if (h == NULL || fd < 0)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	h->loop = &fuzz_loop;
	h->cfg = &fuzz_cfg;
	h->id = "fuzz-1";
	/* A transcript with its budget (to /dev/null): what it prints is fuzzed too, and a long
	 * input reaches the events it skips. */
	transcript_init(&h->transcript, &fuzz_loop, h->id);
	if (evlog_open(&h->log, path) < 0)
		abort();
	h->claude.tok = json_tokener_new();
	if (h->claude.tok == NULL)
		abort();
	/* Cut as claudeproc does: at '\n', empty lines skipped, the last line only when ended. */
	for (size_t i = 0; i < size && i - start <= HOSTPROTO_LINE_MAX; i++) {
		if (data[i] != '\n')
			continue;
		if (i > start) {
			check_linecheck(h, (const char *)data + start, i - start);
			host_batch_begin(h);
			host_claude_line(h, (const char *)data + start, i - start);
			host_batch_end(h);
		}
		start = i + 1;
	}
	check_log(&h->log);
	perms_close_all(h);
	transcript_close(&h->transcript);
	uv_run(&fuzz_loop, UV_RUN_DEFAULT); /* the permission and transcript timers close */
	transcript_free(&h->transcript);
	json_tokener_free(h->claude.tok);
	evlog_batch_unref(h->batch);
	evlog_close(&h->log);
	close(fd);
	free(h);
	return 0;
}
