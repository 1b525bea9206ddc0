#include "claude.h"

#include "hookproto.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a terminal program needs, when AGENTD_AGENT_ENV does not give it. */
static const char *const claude_terminal_env[] = {"COLORTERM=truecolor", "LANG=C.UTF-8"};

void claude_argv_reset(struct claude_argv *out)
{
	out->argc = 0;
	out->used = 0;
	out->argv[0] = NULL;
}

int claude_argv_push(struct claude_argv *out, const char *word, size_t len)
{
	if (out->argc >= CLAUDE_ARGV_MAX)
		return -E2BIG;
	if (out->used + len + 1 > sizeof(out->buf))
		return -ENAMETOOLONG;
	memcpy(out->buf + out->used, word, len);
	out->buf[out->used + len] = '\0';
	out->argv[out->argc++] = out->buf + out->used;
	out->argv[out->argc] = NULL;
	out->used += len + 1;
	return 0;
}

int claude_argv_pushf(struct claude_argv *out, const char *prefix, const char *value)
{
	char word[CONFIG_PATH_MAX + 64];
	int n = snprintf(word, sizeof(word), "%s%s", prefix, value);

	if (n < 0 || (size_t)n >= sizeof(word))
		return -ENAMETOOLONG;
	return claude_argv_push(out, word, (size_t)n);
}

int claude_argv_words(struct claude_argv *out, const char *words)
{
	int r;

	for (const char *p = words != NULL ? words : ""; *p != '\0';) {
		size_t len;

		p += strspn(p, " \t");
		len = strcspn(p, " \t");
		if (len > 0 && (r = claude_argv_push(out, p, len)) < 0)
			return r;
		p += len;
	}
	return 0;
}

int claude_terminal_argv(const struct config *cfg, const struct session *s, const char *settings,
			 struct claude_argv *out)
{
	int r;

	claude_argv_reset(out);
	if ((r = claude_argv_push(out, cfg->claude, strlen(cfg->claude))) < 0)
		return r;
	if (s->launched)
		r = claude_argv_pushf(out, "--resume=", s->agent_session_id);
	else
		r = claude_argv_pushf(out, "--session-id=", s->agent_session_id);
	if (r < 0 ||
	    (settings != NULL && (r = claude_argv_pushf(out, "--settings=", settings)) < 0) ||
	    (r = claude_argv_words(out, cfg->claude_args)) < 0)
		return r;
	/* "--" ends the options: a prompt such as "--dangerously-skip-permissions" stays a prompt.
	 */
	if (!s->launched && s->prompt[0] != '\0' &&
	    ((r = claude_argv_push(out, "--", 2)) < 0 ||
	     (r = claude_argv_push(out, s->prompt, strlen(s->prompt))) < 0))
		return r;
	return 0;
}

int claude_structured_argv(const struct config *cfg, const struct session *s, const char *host_bin,
			   bool has_transcript, const char *first_prompt, struct claude_argv *out)
{
	static const char *const fixed[] = {"-p",
					    "--input-format",
					    "stream-json",
					    "--output-format",
					    "stream-json",
					    "--verbose",
					    "--replay-user-messages",
					    "--permission-prompt-tool",
					    "stdio"};
	char timeout[16];
	int r;

	claude_argv_reset(out);
	if ((r = claude_argv_push(out, host_bin, strlen(host_bin))) < 0)
		return r;
	/* The host's pane has only the agent's environment: its own settings come as words. */
	if ((r = claude_argv_push(out, "--set", 5)) < 0 ||
	    (r = claude_argv_pushf(out, "AGENTD_RUNTIME_DIR=", cfg->runtime_dir)) < 0 ||
	    (r = claude_argv_push(out, "--set", 5)) < 0 ||
	    (r = claude_argv_pushf(out, "AGENTD_STATE_DIR=", cfg->state_dir)) < 0 ||
	    (r = claude_argv_push(out, "--set", 5)) < 0)
		return r;
	snprintf(timeout, sizeof(timeout), "%d", cfg->permission_timeout);
	if ((r = claude_argv_pushf(out, "AGENTD_PERMISSION_TIMEOUT=", timeout)) < 0)
		return r;
	/* The host passes a stop on to claude and kills it only after the grace the daemon waits:
	 * claude gets all of it to write its transcript. */
	snprintf(timeout, sizeof(timeout), "%d", cfg->stop_grace);
	if ((r = claude_argv_push(out, "--set", 5)) < 0 ||
	    (r = claude_argv_pushf(out, "AGENTD_STOP_GRACE=", timeout)) < 0)
		return r;
	/* The prompt is the value of --prompt, which the host sends as a stream-json message: it
	 * never reaches claude's argv. */
	if (first_prompt != NULL && first_prompt[0] != '\0' &&
	    ((r = claude_argv_push(out, "--prompt", 8)) < 0 ||
	     (r = claude_argv_push(out, first_prompt, strlen(first_prompt))) < 0))
		return r;
	if ((r = claude_argv_push(out, s->id, strlen(s->id))) < 0 ||
	    (r = claude_argv_push(out, "--", 2)) < 0 ||
	    (r = claude_argv_push(out, cfg->claude, strlen(cfg->claude))) < 0)
		return r;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if ((r = claude_argv_push(out, fixed[i], strlen(fixed[i]))) < 0)
			return r;
	r = claude_argv_pushf(out,
			      has_transcript ? "--resume=" : "--session-id=", s->agent_session_id);
	if (r < 0)
		return r;
	return claude_argv_words(out, cfg->claude_args);
}

int claude_transcript_path(const struct session *s, const char *home, const char *config_dir,
			   char *out, size_t len)
{
	char dir[CONFIG_PATH_MAX], mangled[SESSION_PATH_MAX];
	size_t i;

	if (config_dir != NULL && config_dir[0] != '\0')
		snprintf(dir, sizeof(dir), "%s", config_dir);
	else if (home != NULL && home[0] != '\0')
		snprintf(dir, sizeof(dir), "%s/.claude", home);
	else
		return -ENOENT;
	for (i = 0; s->worktree[i] != '\0' && i + 1 < sizeof(mangled); i++)
		mangled[i] =
		    (s->worktree[i] == '/' || s->worktree[i] == '.') ? '-' : s->worktree[i];
	mangled[i] = '\0';
	if (snprintf(out, len, "%s/projects/%s/%s.jsonl", dir, mangled, s->agent_session_id) >=
	    (int)len)
		return -ENAMETOOLONG;
	return 0;
}

bool claude_has_transcript(const struct session *s, const char *home, const char *config_dir)
{
	char path[CONFIG_PATH_MAX * 2];

	return claude_transcript_path(s, home, config_dir, path, sizeof(path)) == 0 &&
	       access(path, F_OK) == 0;
}

/* The value of name in from (an environ), or NULL. */
static const char *claude_env_get(char *const *from, const char *name, size_t len)
{
	for (size_t i = 0; from != NULL && from[i] != NULL; i++)
		if (strncmp(from[i], name, len) == 0 && from[i][len] == '=')
			return from[i] + len + 1;
	return NULL;
}

/* Appends "name=value" unless name is there already (the first one wins). */
static int claude_env_add(struct claude_env *out, size_t *n, size_t *used, const char *name,
			  size_t len, const char *value)
{
	size_t need = len + 1 + strlen(value) + 1;

	if (claude_env_get(out->words, name, len) != NULL)
		return 0;
	if (*n >= CLAUDE_ENV_MAX)
		return -E2BIG;
	if (*used + need > sizeof(out->buf))
		return -ENAMETOOLONG;
	out->words[*n] = out->buf + *used;
	snprintf(out->words[*n], need, "%.*s=%s", (int)len, name, value);
	out->words[++*n] = NULL;
	*used += need;
	return 0;
}

int claude_env(const struct config *cfg, char *const *from, struct claude_env *out)
{
	size_t n = 0, used = 0;
	int r;

	out->words[0] = NULL;
	for (const char *p = cfg->agent_env; *p != '\0';) {
		const char *val;
		size_t len;

		p += strspn(p, " \t,");
		len = strcspn(p, " \t,=");
		if (len > 0 && (val = claude_env_get(from, p, len)) != NULL &&
		    (r = claude_env_add(out, &n, &used, p, len, val)) < 0)
			return r;
		p += len;
		p += strspn(p, "="); /* a stray '=' is no part of a name */
	}
	for (size_t i = 0; i < sizeof(claude_terminal_env) / sizeof(claude_terminal_env[0]); i++) {
		const char *w = claude_terminal_env[i], *eq = strchr(w, '=');

		if ((r = claude_env_add(out, &n, &used, w, (size_t)(eq - w), eq + 1)) < 0)
			return r;
	}
	return 0;
}

int claude_env_put(struct claude_env *env, const char *name, const char *value)
{
	size_t n = 0, used = 0;

	while (env->words[n] != NULL)
		n++;
	if (n > 0)
		used = (size_t)(env->words[n - 1] - env->buf) + strlen(env->words[n - 1]) + 1;
	return claude_env_add(env, &n, &used, name, strlen(name), value);
}

/* The hook events of the settings, and whether each is a PermissionRequest (which waits). */
static const enum hook_event claude_hook_events[] = {
    HOOK_SESSION_START, HOOK_USER_PROMPT_SUBMIT,    HOOK_PRE_TOOL_USE, HOOK_PERMISSION_REQUEST,
    HOOK_POST_TOOL_USE, HOOK_POST_TOOL_USE_FAILURE, HOOK_NOTIFICATION, HOOK_STOP,
    HOOK_SESSION_END,
};

json_object *claude_hook_entry(const char *command, int timeout, const char *matcher)
{
	json_object *entry = json_object_new_object(), *hooks = json_object_new_array();
	json_object *hook = json_object_new_object();

	if (entry == NULL || hooks == NULL || hook == NULL) {
		json_object_put(entry);
		json_object_put(hooks);
		json_object_put(hook);
		return NULL;
	}
	json_object_object_add(hook, "type", json_object_new_string("command"));
	json_object_object_add(hook, "command", json_object_new_string(command));
	json_object_object_add(hook, "timeout", json_object_new_int(timeout));
	json_object_array_add(hooks, hook);
	if (matcher != NULL)
		json_object_object_add(entry, "matcher", json_object_new_string(matcher));
	json_object_object_add(entry, "hooks", hooks);
	return entry;
}

char *claude_hook_settings(const struct config *cfg, const char *hook_bin, struct cause *cause)
{
	char sock[CONFIG_PATH_MAX], command[CONFIG_PATH_MAX * 2 + 128];
	json_object *root = NULL, *hooks = NULL;
	char *text = NULL;

	if (!config_path_plain(hook_bin)) {
		cause_set(cause, "agentd-hook's path %s is not a plain absolute path", hook_bin);
		errno = EINVAL;
		return NULL;
	}
	if (config_runtime_path(cfg, HOOKPROTO_SOCKET_NAME, sock, sizeof(sock)) < 0 ||
	    !config_path_plain(sock)) {
		cause_set(cause,
			  "the hook socket %s/%s is not a plain absolute path (AGENTD_RUNTIME_DIR)",
			  cfg->runtime_dir, HOOKPROTO_SOCKET_NAME);
		errno = EINVAL;
		return NULL;
	}
	root = json_object_new_object();
	hooks = json_object_new_object();
	if (root == NULL || hooks == NULL)
		goto fail;
	json_object_object_add(root, "hooks", hooks);
	for (size_t i = 0; i < sizeof(claude_hook_events) / sizeof(claude_hook_events[0]); i++) {
		enum hook_event e = claude_hook_events[i];
		const char *name = hookproto_event_name(e);
		json_object *list, *entry;
		int timeout = CLAUDE_HOOK_TIMEOUT_S;

		if (e == HOOK_PERMISSION_REQUEST) {
			/* Without a wait no client can answer: the TUI's dialog asks alone. */
			if (cfg->terminal_permission_wait == 0)
				continue;
			snprintf(command, sizeof(command), "%s --socket %s --wait %d %s", hook_bin,
				 sock, cfg->terminal_permission_wait, name);
			timeout = cfg->terminal_permission_wait + CLAUDE_HOOK_GRACE_S;
		} else {
			snprintf(command, sizeof(command), "%s --socket %s %s", hook_bin, sock,
				 name);
		}
		list = json_object_new_array();
		entry = claude_hook_entry(command, timeout, "*");
		if (list == NULL || entry == NULL) {
			json_object_put(list);
			json_object_put(entry);
			goto fail;
		}
		json_object_array_add(list, entry);
		json_object_object_add(hooks, name, list);
	}
	text = strdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
							       JSON_C_TO_STRING_NOSLASHESCAPE));
	if (text == NULL)
		goto fail;
	json_object_put(root);
	return text;
fail:
	json_object_put(root);
	if (hooks != NULL && root == NULL)
		json_object_put(hooks);
	cause_set(cause, "out of memory");
	errno = ENOMEM;
	return NULL;
}

int claude_hook_settings_write(const struct config *cfg, const char *hook_bin, char *path,
			       size_t pathlen, struct cause *cause)
{
	char *text = claude_hook_settings(cfg, hook_bin, cause);
	char tmp[CONFIG_PATH_MAX + 16];
	size_t len, done = 0;
	int fd = -1, r = 0;

	if (text == NULL)
		return -errno;
	if (config_runtime_path(cfg, CLAUDE_SETTINGS_NAME, path, pathlen) < 0 ||
	    snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp)) {
		r = cause_fail(cause, ENAMETOOLONG, "the runtime directory's path is too long");
		goto out;
	}
	/* A temp file of its own: two creation workers may write at once. */
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		r = cause_fail(cause, errno, "cannot create %s: %s", tmp, strerror(errno));
		goto out;
	}
	len = strlen(text);
	while (done < len) {
		ssize_t n = write(fd, text + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = cause_fail(cause, errno, "cannot write %s: %s", tmp, strerror(errno));
			goto out;
		}
		done += (size_t)n;
	}
	/* claude reads it as the agent's user, which may be another one. */
	if (fchmod(fd, 0644) < 0 || fsync(fd) < 0 || rename(tmp, path) < 0) {
		r = cause_fail(cause, errno, "cannot write %s: %s", path, strerror(errno));
		goto out;
	}
out:
	if (fd >= 0) {
		close(fd);
		if (r < 0)
			unlink(tmp);
	}
	free(text);
	return r;
}
