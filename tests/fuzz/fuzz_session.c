/*
 * Session input (core/session.c): the POST /sessions body and ids from URL paths. Input: JSON
 * text. It is read the way the API reads a create body (jsontext_parse at depth 8, then
 * session_parse_create),
 * and the way the daemons read a record (session_from_json); the whole text is also tried as an
 * id. Invariants: a body that validates gives a session whose derived names validate again; a
 * record that decodes re-encodes to a fixpoint; an id is valid exactly when it is
 * "<valid name>-<canonical issue>", and its tmux name maps back to it.
 */
#include "fuzz.h"

#include "jsontext.h"
#include "session.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define API_JSON_DEPTH 8 /* fcgi-app/api_sessions.c */

static void check_id(const char *id)
{
	char name[SESSION_ID_MAX + 2], tmux[SESSION_ID_MAX + 1], back[SESSION_ID_MAX + 1];
	const char *dash = strrchr(id, '-');
	bool valid = session_id_valid(id), model = false;

	if (dash != NULL && (size_t)(dash - id) < sizeof(name) && strlen(id) <= SESSION_ID_MAX) {
		const char *d = dash + 1;
		size_t nd = strspn(d, "0123456789");

		memcpy(name, id, (size_t)(dash - id));
		name[dash - id] = '\0';
		model = session_name_valid(name) && nd >= 1 && nd <= 10 && d[nd] == '\0' &&
			d[0] != '0' && session_issue_valid(strtoll(d, NULL, 10));
	}
	FUZZ_CHECK(valid == model, "session_id_valid('%s') = %d", id, valid);
	if (!valid)
		return;
	session_tmux_name(id, tmux, sizeof(tmux));
	FUZZ_CHECK(strlen(tmux) == strlen(id), "tmux name of '%s' has another length", id);
	FUZZ_CHECK(strpbrk(tmux, ".:") == NULL, "tmux name '%s' holds '.' or ':'", tmux);
	FUZZ_CHECK(session_tmux_name_valid(id, tmux), "tmux name '%s' refused", tmux);
	for (size_t i = 0; i <= strlen(tmux); i++)
		back[i] = tmux[i] == '_' ? '.' : tmux[i] == SESSION_TMUX_UNDERSCORE ? '_' : tmux[i];
	FUZZ_CHECK(strcmp(back, id) == 0, "tmux name '%s' does not map back to '%s'", tmux, id);
}

static void check_create(json_object *root)
{
	char rendered[SESSION_PROMPT_MAX + 1];
	struct session_create in;
	struct session s, d;
	struct cause cause = {{0}};
	json_object *rec;
	int r;

	if (session_parse_create(root, &in, &cause) < 0) {
		FUZZ_CHECK(cause.msg[0] != '\0', "a refused body says why");
		return;
	}
	r = session_init(&s, "/code", in.owner, in.name, in.issue);
	FUZZ_CHECK(r == 0, "session_init of a valid body: %d", r);
	FUZZ_CHECK(session_id_valid(s.id), "derived id '%s' is invalid", s.id);
	FUZZ_CHECK(session_tmux_name_valid(s.id, s.tmux_name), "derived tmux name refused");
	FUZZ_CHECK(strncmp(s.worktree, "/code/", 6) == 0 && strchr(s.worktree + 6, '/') == NULL,
		   "worktree '%s' leaves the base directory", s.worktree);
	if (in.prompt != NULL) {
		r = session_render_prompt(in.prompt, in.owner, in.name, in.issue, rendered,
					  sizeof(rendered));
		FUZZ_CHECK(r == 0 || r == -ENAMETOOLONG, "render: %d", r);
		if (r == 0)
			FUZZ_CHECK(strlen(rendered) < sizeof(rendered),
				   "rendered prompt overflows");
		else
			rendered[0] = '\0';
		memcpy(s.prompt, rendered, strlen(rendered) + 1);
	}
	rec = session_to_json(&s, true);
	FUZZ_CHECK(rec != NULL, "out of memory");
	r = session_from_json(&d, rec, &cause);
	FUZZ_CHECK(r == 0, "a new session's record is refused: %s", cause.msg);
	FUZZ_CHECK(strcmp(d.id, s.id) == 0 && strcmp(d.owner, s.owner) == 0 &&
		       strcmp(d.name, s.name) == 0 && d.issue == s.issue &&
		       strcmp(d.prompt, s.prompt) == 0 && strcmp(d.tmux_name, s.tmux_name) == 0,
		   "record round trip changed the session");
	json_object_put(rec);
}

static void check_record(json_object *root)
{
	struct session a, b;
	struct cause cause = {{0}};
	json_object *ja, *jb;

	if (session_from_json(&a, root, &cause) != 0) {
		FUZZ_CHECK(cause.msg[0] != '\0', "record refused without a cause");
		return;
	}
	FUZZ_CHECK(session_id_valid(a.id) && session_owner_valid(a.owner) &&
		       session_tmux_name_valid(a.id, a.tmux_name),
		   "decoded record with invalid names");
	FUZZ_CHECK(session_state_name(a.state) != NULL && session_mode_name(a.mode) != NULL,
		   "decoded record with an unnamed state or mode");
	ja = session_to_json(&a, true);
	FUZZ_CHECK(ja != NULL, "out of memory");
	FUZZ_CHECK(session_from_json(&b, ja, &cause) == 0, "re-encoded record refused: %s",
		   cause.msg);
	jb = session_to_json(&b, true);
	FUZZ_CHECK(jb != NULL, "out of memory");
	FUZZ_CHECK(strcmp(json_object_to_json_string(ja), json_object_to_json_string(jb)) == 0,
		   "record encoding is not a fixpoint:\n%s\n%s", json_object_to_json_string(ja),
		   json_object_to_json_string(jb));
	json_object_put(ja);
	json_object_put(jb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_strndup(data, size);
	json_object *root;

	check_id(text);
	root = jsontext_parse((const char *)data, size, API_JSON_DEPTH, NULL);
	if (root != NULL) {
		check_create(root);
		check_record(root);
		json_object_put(root);
	}
	free(text);
	return 0;
}
