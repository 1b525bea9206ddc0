/*
 * The agentd-hook ↔ agentd-bridge codec (core/hookproto): the report line the bridge reads from a
 * hook (the agent's word) and the answer lines the hook reads back. What a decoder accepts must
 * encode into a line it decodes to the same thing: the event, the payload (when it is small enough
 * to be carried whole) and the request id of a report; the decision or the request id of an
 * answer.
 */
#include "fuzz.h"

#include "hookproto.h"

#include <string.h>

static void check_report(const char *line, size_t len)
{
	struct hook_report rep, back;
	struct cause cause = {{0}};
	char *again;

	if (hookproto_report_decode(line, len, &rep, &cause) < 0) {
		FUZZ_CHECK(rep.payload == NULL, "a refused report leaves no payload");
		FUZZ_CHECK(cause.msg[0] != '\0', "a refused report says why");
		return;
	}
	FUZZ_CHECK(rep.request_id[0] == '\0' || rep.event == HOOK_PERMISSION_REQUEST,
		   "a request id only with PermissionRequest");
	again = hookproto_report_encode(rep.event, rep.payload, rep.request_id);
	FUZZ_CHECK(again != NULL, "an accepted report encodes");
	FUZZ_CHECK(hookproto_report_decode(again, strlen(again) - 1, &back, &cause) == 0,
		   "its encoding decodes: %s", cause.msg);
	FUZZ_CHECK(back.event == rep.event, "same event");
	FUZZ_CHECK(strcmp(back.request_id, rep.request_id) == 0, "same request id");
	/* Members are dropped only when the payload would not fit. */
	if (strlen(json_object_to_json_string_ext(rep.payload, JSON_C_TO_STRING_PLAIN)) <
	    HOOKPROTO_PAYLOAD_MAX / 2)
		FUZZ_CHECK(json_object_equal(back.payload, rep.payload), "same payload");
	hookproto_report_clear(&back);
	hookproto_report_clear(&rep);
	free(again);
}

static void check_answer(const char *line, size_t len)
{
	char rid[HOSTPROTO_REQUEST_ID_MAX + 1], rid2[HOSTPROTO_REQUEST_ID_MAX + 1];
	char interim[HOOKPROTO_INTERIM_MAX];
	json_object *d = NULL, *d2 = NULL;
	struct cause cause = {{0}};
	char *again;
	int r = hookproto_answer_decode(line, len, &d, rid, &cause);

	if (r < 0) {
		FUZZ_CHECK(d == NULL, "a refused answer leaves no decision");
		return;
	}
	if (r == 1) {
		FUZZ_CHECK(d == NULL, "an interim line has no decision");
		FUZZ_CHECK(hookproto_interim_encode(rid, interim) > 0, "its id encodes");
		FUZZ_CHECK(
		    hookproto_answer_decode(interim, strlen(interim) - 1, &d2, rid2, &cause) == 1,
		    "and decodes");
		FUZZ_CHECK(strcmp(rid, rid2) == 0, "to the same id");
		return;
	}
	FUZZ_CHECK(d == NULL || hookproto_decision_check(d, NULL) == 0, "a decision checked");
	again = hookproto_answer_encode(d);
	FUZZ_CHECK(again != NULL, "an accepted answer encodes");
	FUZZ_CHECK(hookproto_answer_decode(again, strlen(again) - 1, &d2, rid2, &cause) == 0,
		   "its encoding decodes: %s", cause.msg);
	FUZZ_CHECK((d == NULL && d2 == NULL) || json_object_equal(d, d2), "same decision");
	json_object_put(d);
	json_object_put(d2);
	free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = fuzz_strndup(data, size);

	check_report(line, size);
	check_answer(line, size);
	free(line);
	return 0;
}
