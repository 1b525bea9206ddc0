#include "agentlaunch.h"

#include "fsutil.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* opencode's plugin: in the agent's own config dir, where opencode installs its plugin SDK once
 * (a directory per session would have it fetched from the npm registry for each). */
#define AL_OPENCODE_PLUGIN ".config/opencode/plugin/agentd-attention.js"
#define AL_UUID_LEN        36 /* codex's thread ids, in its rollout files' names */
/* Read of a codex rollout's first line for its ordinal (the key comes second in a record). */
#define AL_ROLLOUT_HEAD 512
/* Read of its end for the last record, which is small (a turn's end): one longer is not
 * judged. */
#define AL_ROLLOUT_TAIL (64 * 1024)

/* Pushes the blank-separated words of words, each AGENT_ID_WORD in them replaced by id. No
 * quoting, by design: it is configuration, not a shell. */
static int al_push_words(struct claude_argv *out, const char *words, const char *id)
{
	char word[CONFIG_AGENT_WORDS_MAX + SESSION_UUID_LEN];

	for (const char *p = words; *p != '\0';) {
		size_t len, n = 0;
		int r;

		p += strspn(p, " \t");
		len = strcspn(p, " \t");
		for (size_t i = 0; i < len;) {
			size_t idlen = strlen(AGENT_ID_WORD);
			const char *piece = p + i;
			size_t plen = 1;

			if (len - i >= idlen && strncmp(piece, AGENT_ID_WORD, idlen) == 0) {
				piece = id;
				plen = strlen(id);
				i += idlen;
			} else {
				i++;
			}
			if (n + plen >= sizeof(word))
				return -ENAMETOOLONG;
			memcpy(word + n, piece, plen);
			n += plen;
		}
		if (len > 0 && (r = claude_argv_push(out, word, n)) < 0)
			return r;
		p += len;
	}
	return 0;
}

/* A built-in's later-launch words that name the conversation ({id}): the one agentd-host
 * recorded in structured mode, which "the last one" need not find (codex's resume --last lists
 * only the TUI's own conversations, not codex-acp's). NULL for a configured agent. */
static const char *al_resume_by_id(const struct agent *a)
{
	switch (a->kind) {
	case AGENT_CODEX:
		return "resume --no-daemon --dangerously-bypass-hook-trust " AGENT_ID_WORD;
	case AGENT_GEMINI:
		return "--skip-trust --resume=" AGENT_ID_WORD;
	case AGENT_OPENCODE:
		return "--session=" AGENT_ID_WORD;
	default:
		return NULL;
	}
}

int agentlaunch_argv(const struct agent *a, const struct session *s, bool resume,
		     struct claude_argv *out)
{
	return agentlaunch_argv_conversation(a, s, resume, NULL, out);
}

int agentlaunch_argv_conversation(const struct agent *a, const struct session *s, bool resume,
				  const char *conversation, struct claude_argv *out)
{
	char glued[CONFIG_AGENT_SHAPE_MAX + SESSION_PROMPT_MAX];
	const char *later = a->resume, *id = s->agent_session_id;
	int r;

	claude_argv_reset(out);
	if (resume && conversation != NULL && al_resume_by_id(a) != NULL) {
		later = al_resume_by_id(a);
		id = conversation;
	}
	if ((r = al_push_words(out, a->command, s->agent_session_id)) < 0 ||
	    (r = al_push_words(out, resume ? later : a->start, id)) < 0 ||
	    (r = al_push_words(out, a->args, s->agent_session_id)) < 0)
		return r;
	if (out->argc == 0)
		return -EINVAL; /* no executable: agents_check_config refuses that */
	if (resume || s->prompt[0] == '\0' || strcmp(a->prompt, "none") == 0)
		return 0;
	/* "--" ends the options: a prompt such as "--help" stays a prompt. */
	if (strcmp(a->prompt, "--") == 0)
		return (r = claude_argv_push(out, "--", 2)) < 0
			   ? r
			   : claude_argv_push(out, s->prompt, strlen(s->prompt));
	/* Glued to its option, the prompt is the option's value whatever it starts with. */
	r = snprintf(glued, sizeof(glued), "%s%s", a->prompt, s->prompt);
	if (r < 0 || (size_t)r >= sizeof(glued))
		return -ENAMETOOLONG;
	return claude_argv_push(out, glued, (size_t)r);
}

int agentlaunch_dir(const char *home, const struct session *s, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%s/" AGENTLAUNCH_DIR "/%s", home, s->id);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

/* dir/leaf into out; false when too long. */
static bool al_path(char *out, size_t outlen, const char *dir, const char *leaf)
{
	int n = snprintf(out, outlen, "%s/%s", dir, leaf);

	return n >= 0 && (size_t)n < outlen;
}

/* Whether pattern (glob) matches a file. */
static bool al_glob_any(const char *pattern)
{
	glob_t g;
	bool any = glob(pattern, GLOB_NOSORT, NULL, &g) == 0 && g.gl_pathc > 0;

	globfree(&g);
	return any;
}

bool agentlaunch_has_conversation(const struct agent *a, const struct session *s, const char *home)
{
	return agentlaunch_has_conversation_id(a, s, home, NULL);
}

bool agentlaunch_has_conversation_id(const struct agent *a, const struct session *s,
				     const char *home, const char *conversation)
{
	char dir[CONFIG_PATH_MAX], path[CONFIG_PATH_MAX + 128 + ACP_CONVERSATION_MAX];
	int n;

	if (!s->launched)
		return false;
	if (a->kind == AGENT_CUSTOM)
		return a->resumes != AGENT_RESUME_NONE;
	if (agentlaunch_dir(home, s, dir, sizeof(dir)) < 0)
		return false;
	switch (a->kind) {
	case AGENT_CODEX:
		/* sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl: one per conversation. */
		n = snprintf(path, sizeof(path), "%s/codex/sessions/*/*/*/rollout-*%s.jsonl", dir,
			     conversation != NULL ? conversation : "");
		return n > 0 && n < (int)sizeof(path) && al_glob_any(path);
	case AGENT_GEMINI:
		/* tmp/<project>/chats/session-<time>-<first 8 of the id>.jsonl; gemini deletes a
		 * session that got no message, and --resume of it fails. */
		if (snprintf(path, sizeof(path),
			     "%s/gemini/.gemini/tmp/*/chats/session-*-%.8s.json*", dir,
			     conversation != NULL ? conversation : s->agent_session_id) >=
		    (int)sizeof(path))
			return false;
		return al_glob_any(path);
	case AGENT_OPENCODE:
		return al_path(path, sizeof(path), dir, "opencode.db") && access(path, F_OK) == 0;
	default:
		return false;
	}
}

static char *al_read(const char *path);

/* Whether id can be a word of an argv of ours: an agent's session id (UUIDs, ses_...), nothing
 * an option parser or a glob would read otherwise. */
static bool al_conversation_valid(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > ACP_CONVERSATION_MAX || id[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z') ||
		      (id[i] >= '0' && id[i] <= '9') || id[i] == '-' || id[i] == '_'))
			return false;
	return true;
}

int agentlaunch_recorded_conversation(const char *acp_state_path, char *out, size_t outlen)
{
	char *text = al_read(acp_state_path);
	json_object *o = NULL, *v;
	int r = -ENOENT;

	out[0] = '\0';
	if (text == NULL)
		return -errno;
	if (text[0] != '\0' && (o = json_tokener_parse(text)) != NULL &&
	    json_object_object_get_ex(o, "sessionId", &v) &&
	    json_object_is_type(v, json_type_string)) {
		if (!al_conversation_valid(json_object_get_string(v)))
			r = -EINVAL;
		else if ((size_t)json_object_get_string_len(v) >= outlen)
			r = -ENAMETOOLONG;
		else {
			snprintf(out, outlen, "%s", json_object_get_string(v));
			r = 0;
		}
	}
	json_object_put(o);
	free(text);
	return r;
}

/* Whether id is a UUID's text (8-4-4-4-12 hex digits). */
static bool al_uuid_valid(const char *id)
{
	if (strlen(id) != AL_UUID_LEN)
		return false;
	for (size_t i = 0; i < AL_UUID_LEN; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? id[i] != '-' : !isxdigit((unsigned char)id[i]))
			return false;
	}
	return true;
}

int agentlaunch_codex_newest(const struct session *s, const char *home, char *out, size_t outlen)
{
	char dir[CONFIG_PATH_MAX], pattern[CONFIG_PATH_MAX + 64];
	const char *last;
	size_t n;
	int r = -ENOENT;
	glob_t g;

	out[0] = '\0';
	if (agentlaunch_dir(home, s, dir, sizeof(dir)) < 0 ||
	    !al_path(pattern, sizeof(pattern), dir, "codex/sessions/*/*/*/rollout-*.jsonl"))
		return -ENAMETOOLONG;
	if (glob(pattern, 0, NULL, &g) != 0 || g.gl_pathc == 0) {
		globfree(&g);
		return -ENOENT;
	}
	/* Sorted: YYYY/MM/DD/rollout-<YYYY-MM-DDTHH-MM-SS>-<uuid>.jsonl, so the last is the
	 * newest; its id is the UUID before ".jsonl". */
	last = g.gl_pathv[g.gl_pathc - 1];
	n = strlen(last);
	if (n > AL_UUID_LEN + 6) {
		snprintf(out, outlen, "%.*s", AL_UUID_LEN, last + n - 6 - AL_UUID_LEN);
		r = al_uuid_valid(out) ? 0 : -EINVAL;
	}
	if (r < 0)
		out[0] = '\0';
	globfree(&g);
	return r;
}

/* Whether the first line of the rollout at path (its session_meta, ordinal near its start) and
 * its last line carry an "ordinal": codex 0.169's paginated records do, codex-acp 0.16's not. */
static void al_rollout_ordinals(const char *path, bool *first, bool *last)
{
	char buf[AL_ROLLOUT_TAIL + 1];
	ssize_t n;
	char *nl, *line;
	off_t size;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	*first = *last = false;
	if (fd < 0)
		return;
	n = pread(fd, buf, AL_ROLLOUT_HEAD, 0);
	if (n > 0) {
		buf[n] = '\0';
		nl = strchr(buf, '\n');
		*first = memmem(buf, nl != NULL ? (size_t)(nl - buf) : (size_t)n, "\"ordinal\"",
				9) != NULL;
	}
	size = lseek(fd, 0, SEEK_END);
	n = size > 0 ? pread(fd, buf, AL_ROLLOUT_TAIL,
			     size > AL_ROLLOUT_TAIL ? size - AL_ROLLOUT_TAIL : 0)
		     : -1;
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	line = memrchr(buf, '\n', (size_t)n);
	/* A last line longer than the tail read: not known, taken as resumable. */
	if (line == NULL) {
		*last = true;
		return;
	}
	line++;
	*last = memmem(line, strnlen(line, AL_ROLLOUT_HEAD), "\"ordinal\"", 9) != NULL;
}

bool agentlaunch_codex_tui_can_resume(const struct session *s, const char *home, const char *id)
{
	char dir[CONFIG_PATH_MAX], pattern[CONFIG_PATH_MAX + 64 + ACP_CONVERSATION_MAX];
	bool first, last, ok = true;
	glob_t g;

	if (agentlaunch_dir(home, s, dir, sizeof(dir)) < 0 ||
	    snprintf(pattern, sizeof(pattern), "%s/codex/sessions/*/*/*/rollout-*%s.jsonl", dir,
		     id) >= (int)sizeof(pattern))
		return true;
	if (glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0) {
		al_rollout_ordinals(g.gl_pathv[0], &first, &last);
		/* codex 0.169 refuses a paginated rollout whose final record has no ordinal
		 * ("final paginated rollout record ... is missing an ordinal"); one without any
		 * (codex-acp's own) it resumes and goes on writing the same way. */
		ok = !first || last;
	}
	globfree(&g);
	return ok;
}

int64_t agentlaunch_gemini_made_ms(const struct session *s, const char *home)
{
	char dir[CONFIG_PATH_MAX], pattern[CONFIG_PATH_MAX + 128];
	struct tm tm = {0};
	int64_t made = 0;
	const char *base;
	glob_t g;

	if (agentlaunch_dir(home, s, dir, sizeof(dir)) < 0 ||
	    snprintf(pattern, sizeof(pattern), "%s/gemini/.gemini/tmp/*/chats/session-*-%.8s.json*",
		     dir, s->agent_session_id) >= (int)sizeof(pattern))
		return 0;
	if (glob(pattern, 0, NULL, &g) != 0) {
		globfree(&g);
		return 0;
	}
	/* session-YYYY-MM-DDTHH-MM-<id8>.jsonl, the minute in UTC (toISOString). */
	base = strrchr(g.gl_pathv[0], '/');
	base = base != NULL ? base + 1 : g.gl_pathv[0];
	if (sscanf(base, "session-%4d-%2d-%2dT%2d-%2d-", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min) == 5) {
		tm.tm_year -= 1900;
		tm.tm_mon -= 1;
		made = (int64_t)timegm(&tm) * 1000;
	}
	globfree(&g);
	return made > 0 ? made : 0;
}

/* The contents of path (caller frees), "" when it does not exist; NULL with errno otherwise. */
static char *al_read(const char *path)
{
	char *buf = NULL;
	int r = fsutil_read_file(path, AGENTLAUNCH_FILE_MAX, &buf, NULL);

	if (r == -ENOENT)
		return strdup("");
	if (r < 0)
		errno = -r;
	return buf;
}

/* Copies the agent's file src to dst (mode 0600: credentials) when src exists. */
static int al_copy_if_any(const char *src, const char *dst)
{
	char *text = al_read(src);
	int r;

	if (text == NULL)
		return -errno;
	r = text[0] == '\0' ? 0 : fsutil_write_atomic(dst, text, 0600, false);
	free(text);
	return r;
}

/* The directory dir, made if missing, for the agent alone. */
static int al_mkdir(const char *dir)
{
	int r = fsutil_mkdir_p(dir);

	if (r == 0 && chmod(dir, 0700) < 0)
		r = -errno;
	return r;
}

/* A TOML basic string of s (quotes and backslashes escaped; a path has no control bytes). */
static void al_toml_str(char *out, size_t outlen, const char *s)
{
	size_t n = 0;

	for (; *s != '\0' && n + 3 < outlen; s++) {
		if (*s == '"' || *s == '\\')
			out[n++] = '\\';
		out[n++] = *s;
	}
	out[n] = '\0';
}

/* The command of a hook that reports event (an agentd-hook event name). */
static void al_hook_command(char *out, size_t outlen, const char *hook_cmd, const char *event,
			    int wait)
{
	if (wait > 0)
		snprintf(out, outlen, "%s --wait %d %s", hook_cmd, wait, event);
	else
		snprintf(out, outlen, "%s %s", hook_cmd, event);
}

/* [{"hooks":[{"type":"command","command":…,"timeout":…}]}] */
static json_object *al_hook_entry(const char *command, int timeout)
{
	json_object *list = json_object_new_array();
	json_object *entry = claude_hook_entry(command, timeout, NULL);

	if (list == NULL || entry == NULL) {
		json_object_put(list);
		json_object_put(entry);
		return NULL;
	}
	json_object_array_add(list, entry);
	return list;
}

/* A CLI's hook event and the agentd-hook event it reports as. */
struct al_hook_map {
	const char *cli, *ours;
};

/* codex 0.169 runs Claude Code's events (and reads Claude's PermissionRequest decision). */
static const struct al_hook_map al_codex_hooks[] = {
    {"SessionStart", "SessionStart"}, {"UserPromptSubmit", "UserPromptSubmit"},
    {"PreToolUse", "PreToolUse"},     {"PermissionRequest", "PermissionRequest"},
    {"PostToolUse", "PostToolUse"},   {"Stop", "Stop"},
    {"SessionEnd", "SessionEnd"},
};

/* gemini 0.61's events: a turn is BeforeAgent .. AfterAgent; its permission dialog is a
 * Notification "ToolPermission", which no hook can answer. */
static const struct al_hook_map al_gemini_hooks[] = {
    {"SessionStart", "SessionStart"}, {"BeforeAgent", "UserPromptSubmit"},
    {"BeforeTool", "PreToolUse"},     {"AfterTool", "PostToolUse"},
    {"Notification", "Notification"}, {"AfterAgent", "Stop"},
    {"SessionEnd", "SessionEnd"},
};

/*
 * Adds to hooks (an object of event -> list) an entry per event of map, before what the agent's
 * own settings list. ms: gemini's timeouts are milliseconds.
 */
static int al_add_hooks(json_object *hooks, const struct al_hook_map *map, size_t n,
			const char *hook_cmd, int permission_wait, bool ms)
{
	char command[CONFIG_PATH_MAX * 2 + 64];

	if (hook_cmd == NULL)
		return 0; /* structured mode: ACP tells the host what the hooks would */
	for (size_t i = 0; i < n; i++) {
		bool ask = strcmp(map[i].ours, "PermissionRequest") == 0;
		int timeout = ask ? permission_wait + CLAUDE_HOOK_GRACE_S : CLAUDE_HOOK_TIMEOUT_S;
		json_object *entry, *own = NULL;

		/* Without a wait no client can answer: the TUI's dialog asks alone. */
		if (ask && permission_wait == 0)
			continue;
		al_hook_command(command, sizeof(command), hook_cmd, map[i].ours,
				ask ? permission_wait : 0);
		if ((entry = al_hook_entry(command, ms ? timeout * 1000 : timeout)) == NULL)
			return -ENOMEM;
		if (json_object_object_get_ex(hooks, map[i].cli, &own) &&
		    json_object_is_type(own, json_type_array)) {
			for (size_t j = 0; j < json_object_array_length(own); j++)
				json_object_array_add(
				    entry, json_object_get(json_object_array_get_idx(own, j)));
		}
		json_object_object_add(hooks, map[i].cli, entry);
	}
	return 0;
}

/* Writes obj to path (0600) as JSON. */
static int al_write_json(const char *path, json_object *obj)
{
	const char *text = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PRETTY |
								   JSON_C_TO_STRING_NOSLASHESCAPE);

	return text == NULL ? -ENOMEM : fsutil_write_atomic(path, text, 0600, false);
}

static int al_prepare_codex(const struct session *s, const char *home, const char *dir,
			    const char *hook_cmd, int permission_wait, struct cause *cause)
{
	char cdir[CONFIG_PATH_MAX + 16], path[CONFIG_PATH_MAX + 64], src[CONFIG_PATH_MAX + 64];
	char wt[SESSION_PATH_MAX * 2];
	json_object *root = NULL, *hooks;
	char *base = NULL, *text = NULL;
	int r;

	if (!al_path(cdir, sizeof(cdir), dir, "codex"))
		return cause_fail(cause, ENAMETOOLONG, "the agent's directory is too long");
	if ((r = al_mkdir(cdir)) < 0)
		return cause_fail(cause, -r, "cannot make %s: %s", cdir, strerror(-r));
	/* The agent's own configuration (its model and provider), then the worktree trusted:
	 * codex asks "Trust this folder?" otherwise, a dialog that holds the bootstrap prompt. */
	snprintf(src, sizeof(src), "%s/.codex/config.toml", home);
	if ((base = al_read(src)) == NULL) {
		r = cause_fail(cause, errno, "cannot read %s: %s", src, strerror(errno));
		goto out;
	}
	al_toml_str(wt, sizeof(wt), s->worktree);
	if (asprintf(&text, "%s%s[projects.\"%s\"]\ntrust_level = \"trusted\"\n", base,
		     base[0] != '\0' && base[strlen(base) - 1] != '\n' ? "\n\n" : "\n", wt) < 0) {
		text = NULL;
		r = cause_fail(cause, ENOMEM, "out of memory");
		goto out;
	}
	snprintf(path, sizeof(path), "%s/config.toml", cdir);
	if ((r = fsutil_write_atomic(path, text, 0600, false)) < 0) {
		cause_set(cause, "cannot write %s: %s", path, strerror(-r));
		goto out;
	}
	snprintf(src, sizeof(src), "%s/.codex/auth.json", home);
	snprintf(path, sizeof(path), "%s/auth.json", cdir);
	if ((r = al_copy_if_any(src, path)) < 0) {
		cause_set(cause, "cannot copy %s: %s", src, strerror(-r));
		goto out;
	}
	root = json_object_new_object();
	hooks = json_object_new_object();
	if (root == NULL || hooks == NULL) {
		json_object_put(hooks);
		r = cause_fail(cause, ENOMEM, "out of memory");
		goto out;
	}
	json_object_object_add(root, "hooks", hooks);
	if ((r = al_add_hooks(hooks, al_codex_hooks,
			      sizeof(al_codex_hooks) / sizeof(al_codex_hooks[0]), hook_cmd,
			      permission_wait, false)) < 0) {
		cause_set(cause, "out of memory");
		goto out;
	}
	snprintf(path, sizeof(path), "%s/hooks.json", cdir);
	if ((r = al_write_json(path, root)) < 0)
		cause_set(cause, "cannot write %s: %s", path, strerror(-r));
out:
	json_object_put(root);
	free(base);
	free(text);
	return r;
}

static int al_prepare_gemini(const struct session *s, const char *home, const char *dir,
			     const char *hook_cmd, int permission_wait, struct cause *cause)
{
	static const char *const creds[] = {"oauth_creds.json", "google_accounts.json"};
	char gdir[CONFIG_PATH_MAX + 32], path[CONFIG_PATH_MAX + 64], src[CONFIG_PATH_MAX + 64];
	json_object *settings = NULL, *hooks = NULL, *trusted = NULL;
	char *text = NULL;
	int r;

	if (!al_path(gdir, sizeof(gdir), dir, "gemini/.gemini"))
		return cause_fail(cause, ENAMETOOLONG, "the agent's directory is too long");
	if ((r = al_mkdir(gdir)) < 0)
		return cause_fail(cause, -r, "cannot make %s: %s", gdir, strerror(-r));
	/* The agent's own settings (auth type, model, ...), with our hooks added to its own. */
	snprintf(src, sizeof(src), "%s/.gemini/settings.json", home);
	if ((text = al_read(src)) == NULL) {
		r = cause_fail(cause, errno, "cannot read %s: %s", src, strerror(errno));
		goto out;
	}
	settings = text[0] != '\0' ? json_tokener_parse(text) : NULL;
	if (settings != NULL && !json_object_is_type(settings, json_type_object)) {
		json_object_put(settings);
		settings = NULL;
	}
	if (text[0] != '\0' && settings == NULL) {
		r = cause_fail(cause, EINVAL, "%s is not a JSON object", src);
		goto out;
	}
	if (settings == NULL && (settings = json_object_new_object()) == NULL) {
		r = cause_fail(cause, ENOMEM, "out of memory");
		goto out;
	}
	if (!json_object_object_get_ex(settings, "hooks", &hooks) ||
	    !json_object_is_type(hooks, json_type_object)) {
		if ((hooks = json_object_new_object()) == NULL) {
			r = cause_fail(cause, ENOMEM, "out of memory");
			goto out;
		}
		json_object_object_add(settings, "hooks", hooks);
	}
	if ((r = al_add_hooks(hooks, al_gemini_hooks,
			      sizeof(al_gemini_hooks) / sizeof(al_gemini_hooks[0]), hook_cmd,
			      permission_wait, true)) < 0) {
		cause_set(cause, "out of memory");
		goto out;
	}
	snprintf(path, sizeof(path), "%s/settings.json", gdir);
	if ((r = al_write_json(path, settings)) < 0) {
		cause_set(cause, "cannot write %s: %s", path, strerror(-r));
		goto out;
	}
	/* The worktree trusted: gemini's trust dialog restarts the CLI and drops the prompt. */
	if ((trusted = json_object_new_object()) == NULL) {
		r = cause_fail(cause, ENOMEM, "out of memory");
		goto out;
	}
	json_object_object_add(trusted, s->worktree, json_object_new_string("TRUST_FOLDER"));
	snprintf(path, sizeof(path), "%s/trustedFolders.json", gdir);
	if ((r = al_write_json(path, trusted)) < 0) {
		cause_set(cause, "cannot write %s: %s", path, strerror(-r));
		goto out;
	}
	for (size_t i = 0; i < sizeof(creds) / sizeof(creds[0]); i++) {
		snprintf(src, sizeof(src), "%s/.gemini/%s", home, creds[i]);
		snprintf(path, sizeof(path), "%s/%s", gdir, creds[i]);
		if ((r = al_copy_if_any(src, path)) < 0) {
			cause_set(cause, "cannot copy %s: %s", src, strerror(-r));
			goto out;
		}
	}
out:
	json_object_put(settings);
	json_object_put(trusted);
	free(text);
	return r;
}

/*
 * opencode's TUI runs no command hooks, but it loads the JS plugins of its config dir (offline
 * too), and a plugin sees its turns (session.status busy, session.idle), its tools
 * (tool.execute.before/after) and its permission dialog (permission.asked/replied). This one
 * reports them through agentd-hook, spawned with an argv (no shell), as claude's hooks would: a
 * turn, a tool, the dialog as a Notification only the TUI can answer (its permission.ask hook
 * never fires in 1.18), the turn's end. It does nothing unless the launch gave it agentd-hook's
 * words (AGENTLAUNCH_OPENCODE_HOOK_ENV: terminal mode), so the same file serves every session.
 */
static const char al_opencode_plugin[] =
    "// Written by agentd-api: opencode's activity for agent-daemon, reported through agentd-hook\n"
    "// in the sessions it launches in terminal mode (" AGENTLAUNCH_OPENCODE_HOOK_ENV
    " names it);\n"
    "// anywhere else it does nothing.\n"
    "import { spawn } from \"node:child_process\";\n"
    "const HOOK = (process.env." AGENTLAUNCH_OPENCODE_HOOK_ENV
    " || \"\").split(\" \").filter(Boolean);\n"
    "let busy = false;\n"
    "// One report at a time, in the order opencode gave them (a turn's start before its tools).\n"
    "let last = Promise.resolve();\n"
    "const report = (event, payload) => (last = last.then(() => new Promise((resolve) => {\n"
    "  if (HOOK.length === 0) return resolve();\n"
    "  let p;\n"
    "  try {\n"
    "    p = spawn(HOOK[0], [...HOOK.slice(1), event], { stdio: [\"pipe\", \"ignore\", "
    "\"ignore\"] });\n"
    "  } catch {\n"
    "    return resolve();\n"
    "  }\n"
    "  p.on(\"error\", () => resolve());\n"
    "  p.on(\"close\", () => resolve());\n"
    "  p.stdin.on(\"error\", () => {});\n"
    "  p.stdin.end(JSON.stringify({ hook_event_name: event, ...payload }));\n"
    "})));\n"
    "export const AgentdAttention = async () => ({\n"
    "  event: async ({ event }) => {\n"
    "    const p = event.properties || {};\n"
    "    if (event.type === \"session.status\" && p.status && p.status.type === \"busy\") {\n"
    "      if (!busy) await report(\"UserPromptSubmit\", {});\n"
    "      busy = true;\n"
    "    } else if (event.type === \"session.idle\") {\n"
    "      busy = false;\n"
    "      await report(\"Stop\", {});\n"
    "    } else if (event.type === \"permission.asked\") {\n"
    "      await report(\"Notification\", { notification_type: \"permission_prompt\",\n"
    "        message: String(p.permission || \"a tool\") });\n"
    "    } else if (event.type === \"permission.replied\") {\n"
    "      await report(\"PostToolUse\", { tool_name: String(p.permission || \"\") });\n"
    "    }\n"
    "  },\n"
    "  \"tool.execute.before\": async (input, output) =>\n"
    "    report(\"PreToolUse\", { tool_name: String(input.tool), tool_input: output.args || {} "
    "}),\n"
    "  \"tool.execute.after\": async (input) => report(\"PostToolUse\", { tool_name: "
    "String(input.tool) }),\n"
    "});\n";

/* opencode: the attention plugin in the agent's config dir (the same for every session). */
static int al_prepare_opencode(const char *home, struct cause *cause)
{
	char path[CONFIG_PATH_MAX + 64], dir[CONFIG_PATH_MAX + 64];
	char *slash;
	int r;

	if (!al_path(path, sizeof(path), home, AL_OPENCODE_PLUGIN))
		return cause_fail(cause, ENAMETOOLONG, "the agent's HOME %s is too long", home);
	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/')) != NULL)
		*slash = '\0';
	if ((r = fsutil_mkdir_p(dir)) < 0)
		return cause_fail(cause, -r, "cannot make %s: %s", dir, strerror(-r));
	if ((r = fsutil_write_atomic(path, al_opencode_plugin, 0644, false)) < 0)
		return cause_fail(cause, -r, "cannot write %s: %s", path, strerror(-r));
	return 0;
}

int agentlaunch_hook_env(const struct agent *a, const char *hook_cmd, struct claude_env *env)
{
	return a->kind == AGENT_OPENCODE && hook_cmd != NULL
		   ? claude_env_put(env, AGENTLAUNCH_OPENCODE_HOOK_ENV, hook_cmd)
		   : 0;
}

int agentlaunch_prepare(const struct agent *a, const struct session *s, const char *home,
			const char *hook_cmd, int permission_wait, struct cause *cause)
{
	char dir[CONFIG_PATH_MAX];
	int r;

	if (a->kind == AGENT_CLAUDE || a->kind == AGENT_CUSTOM)
		return 0;
	if (agentlaunch_dir(home, s, dir, sizeof(dir)) < 0)
		return cause_fail(cause, ENAMETOOLONG, "the agent's HOME %s is too long", home);
	if ((r = al_mkdir(dir)) < 0)
		return cause_fail(cause, -r, "cannot make %s: %s", dir, strerror(-r));
	if (a->kind == AGENT_CODEX)
		return al_prepare_codex(s, home, dir, hook_cmd, permission_wait, cause);
	if (a->kind == AGENT_GEMINI)
		return al_prepare_gemini(s, home, dir, hook_cmd, permission_wait, cause);
	if (a->kind == AGENT_OPENCODE)
		return al_prepare_opencode(home, cause);
	return 0;
}

int agentlaunch_env(const struct agent *a, const struct session *s, const char *home,
		    struct claude_env *env)
{
	char dir[CONFIG_PATH_MAX], path[CONFIG_PATH_MAX + 32];
	int r = 0;

	if (a->kind == AGENT_CLAUDE || a->kind == AGENT_CUSTOM)
		return 0;
	if (agentlaunch_dir(home, s, dir, sizeof(dir)) < 0)
		return -ENAMETOOLONG;
	switch (a->kind) {
	case AGENT_CODEX:
		if (!al_path(path, sizeof(path), dir, "codex"))
			return -ENAMETOOLONG;
		r = claude_env_put(env, "CODEX_HOME", path);
		break;
	case AGENT_GEMINI:
		if (!al_path(path, sizeof(path), dir, "gemini"))
			return -ENAMETOOLONG;
		/* One process: its relaunch with a larger heap would be a second one in the
		 * pane, and it survives the pane (it catches SIGHUP). */
		if ((r = claude_env_put(env, "GEMINI_CLI_HOME", path)) == 0)
			r = claude_env_put(env, "GEMINI_CLI_NO_RELAUNCH", "1");
		break;
	case AGENT_OPENCODE:
		if (!al_path(path, sizeof(path), dir, "opencode.db"))
			return -ENAMETOOLONG;
		if ((r = claude_env_put(env, "OPENCODE_DB", path)) == 0)
			r = claude_env_put(env, "OPENCODE_DISABLE_AUTOUPDATE", "1");
		break;
	default:
		break;
	}
	return r;
}
