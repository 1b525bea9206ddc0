/*
 * agentd-telegram's state file (telegram/state.c) read from whatever a file holds. A text that
 * state_from_json accepts holds only what the bot writes: chats, follows and approvals with valid
 * session ids, request ids and keys, counts within their limits; written back with
 * state_to_json it is accepted again, and writing that gives the same text (a fixpoint); a new
 * approval gets a key no other has.
 */
#include "fuzz.h"

#include "hostproto.h"
#include "state.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct state *st = state_create(), *again = NULL;
	struct cause cause = {{0}};
	char *text = NULL, *text2 = NULL;

	if (st == NULL)
		abort();
	if (state_from_json(st, (const char *)data, size, &cause) < 0)
		goto out;
	FUZZ_CHECK(st->nchats <= STATE_CHATS_MAX && st->napprovals <= STATE_APPROVALS_MAX &&
		       st->nturns <= STATE_TURNS_MAX && st->nrefused <= STATE_REFUSED_MAX,
		   "counts");
	for (unsigned i = 0; i < st->nchats; i++) {
		FUZZ_CHECK(st->chats[i].nfollows <= STATE_FOLLOW_MAX, "follows");
		for (unsigned j = 0; j < st->chats[i].nfollows; j++)
			FUZZ_CHECK(session_id_valid(st->chats[i].follows[j]), "a follow");
	}
	for (unsigned i = 0; i < st->napprovals; i++) {
		const struct state_approval *a = &st->approvals[i];

		FUZZ_CHECK(session_id_valid(a->session), "an approval's session");
		FUZZ_CHECK(hostproto_request_id_valid(a->request_id), "an approval's request");
		FUZZ_CHECK(a->key[0] == 'k' && strlen(a->key) <= STATE_KEY_MAX, "a key");
		FUZZ_CHECK(a->text != NULL && strlen(a->text) <= STATE_TEXT_MAX, "a text");
	}
	text = state_to_json(st);
	FUZZ_CHECK(text != NULL, "written");
	again = state_create();
	FUZZ_CHECK(state_from_json(again, text, strlen(text), &cause) == 0, "read again: %s",
		   cause.msg);
	text2 = state_to_json(again);
	FUZZ_CHECK(strcmp(text, text2) == 0, "not a fixpoint:\n%s\n%s", text, text2);
	if (st->napprovals < STATE_APPROVALS_MAX) {
		struct state_approval *a =
		    state_approval_add(st, 1, "widgets-1", "r", "Bash", false, "t", NULL);

		FUZZ_CHECK(a != NULL, "added");
		for (unsigned i = 0; i + 1 < st->napprovals; i++)
			FUZZ_CHECK(strcmp(st->approvals[i].key, a->key) != 0, "a key twice: %s",
				   a->key);
	}
out:
	free(text);
	free(text2);
	state_destroy(st);
	state_destroy(again);
	return 0;
}
