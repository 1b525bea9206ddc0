/*
 * What the Bot API answers, as agentd-telegram reads it (telegram/botapi.c): an answer's body
 * with an HTTP status (first byte: 200, 400, 409, 429 or 502). ok only for a 200 whose body says
 * so; a refusal has a description; a 429 always waits 1 s to a day; a 5xx or 429 is transient;
 * every update of a result is read without harm, a message has a text, a sender and a chat, a
 * press has an id, and a sender's name fits RENDER_NAME_MAX.
 */
#include "fuzz.h"

#include "botapi.h"

#include <curl/curl.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const long statuses[] = {200, 400, 409, 429, 502};
	struct xfer_result res = {.error = ""};
	struct botapi_answer a;
	json_object *root;
	char *body;

	if (size < 1)
		return 0;
	body = fuzz_strndup(data + 1, size - 1);
	res.status = statuses[data[0] % 5];
	res.curl_code = CURLE_OK;
	res.body = body;
	res.body_len = size - 1;
	botapi_parse_answer(&res, &a, &root);
	FUZZ_CHECK(!a.ok || res.status == 200, "ok with HTTP %ld", res.status);
	FUZZ_CHECK(a.ok || a.description[0] != '\0', "a refusal without a description");
	FUZZ_CHECK(a.retry_after >= 0 && a.retry_after <= 86400, "retry_after %d", a.retry_after);
	FUZZ_CHECK(a.ok || a.error_code != 429 || a.retry_after >= 1, "a 429 without a wait");
	FUZZ_CHECK(a.ok || !(res.status == 502 || a.error_code == 429) || a.transient,
		   "not transient");
	if (a.ok && json_object_is_type(a.result, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(a.result); i++) {
			struct botapi_update u;

			if (botapi_parse_update(json_object_array_get_idx(a.result, i), &u) < 0)
				continue;
			FUZZ_CHECK(u.update_id >= 0, "update id");
			FUZZ_CHECK(u.kind != BOTAPI_MESSAGE ||
				       (u.text != NULL && u.user != 0 && u.chat != 0),
				   "a message without text, sender or chat");
			FUZZ_CHECK(u.kind != BOTAPI_CALLBACK ||
				       (u.callback_id != NULL && u.user != 0),
				   "a press without id or sender");
			FUZZ_CHECK(strlen(u.user_name) <= RENDER_NAME_MAX, "a name of %zu bytes",
				   strlen(u.user_name));
		}
	}
	json_object_put(root);
	free(body);
	return 0;
}
