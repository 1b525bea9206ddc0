#include "transcript.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_object *transcript_get(json_object *o, const char *key)
{
	json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
	return v;
}

void transcript_init(void)
{
	/* glibc ignores the size when it allocates the buffer itself (it takes st_blksize: 1 KiB
	 * on a tty, so a batch went out as a write per KiB): give it one. It lives as long as
	 * stdout, to the end of the process. */
	char *buf = malloc(TRANSCRIPT_BUFFER);

	setvbuf(stdout, buf, _IOFBF, buf != NULL ? TRANSCRIPT_BUFFER : BUFSIZ);
}

static void transcript_content(json_object *content, const char *who)
{
	size_t n =
	    json_object_is_type(content, json_type_array) ? json_object_array_length(content) : 0;

	if (json_object_is_type(content, json_type_string))
		printf("%s: %s\n", who, json_object_get_string(content));
	for (size_t i = 0; i < n; i++) {
		json_object *b = json_object_array_get_idx(content, i);
		const char *type = json_object_get_string(transcript_get(b, "type"));

		if (type == NULL)
			continue;
		if (strcmp(type, "text") == 0)
			printf("%s: %s\n", who, json_object_get_string(transcript_get(b, "text")));
		else if (strcmp(type, "tool_use") == 0)
			printf("%s wants to use %s: %s\n", who,
			       json_object_get_string(transcript_get(b, "name")),
			       json_object_to_json_string_ext(transcript_get(b, "input"),
							      JSON_C_TO_STRING_PLAIN));
		else if (strcmp(type, "tool_result") == 0)
			printf("tool result received\n");
	}
}

void transcript_event(const char *name, json_object *obj)
{
	json_object *msg = transcript_get(obj, "message");

	/* A user line with isReplay is claude's echo of a prompt (--replay-user-messages): the
	 * host printed the prompt when it sent it. */
	if (strcmp(name, "assistant") == 0)
		transcript_content(transcript_get(msg, "content"), "claude");
	else if (strcmp(name, "user") == 0 &&
		 !json_object_get_boolean(transcript_get(obj, "isReplay")))
		transcript_content(transcript_get(msg, "content"), "user");
	else if (strcmp(name, "result") == 0)
		printf("-- turn finished: %s\n",
		       json_object_get_string(transcript_get(obj, "subtype")));
	else if (strcmp(name, "control_request") == 0)
		printf("-- permission requested for %s (answer it from the API)\n",
		       json_object_get_string(
			   transcript_get(transcript_get(obj, "request"), "tool_name")));
}

void transcript_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

void transcript_flush(void)
{
	fflush(stdout);
}
