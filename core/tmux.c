#include "tmux.h"

#include "fsutil.h"
#include "proc.h"

#include <json-c/json.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TMUX_OUT_MAX           (4 * 1024 * 1024)
#define TMUX_PROMPT_STORED_MAX 12000
/* tmux sends a client's command to the server in one message of at most 16 KiB (argv words with
 * their NULs, plus a header): a command we build stays below this to be sure it fits. */
#define TMUX_MESSAGE_SAFE (12 * 1024)
#define TMUX_PREFIX_WORDS 6 /* tmux_cmd_init's: bin -u -S <socket> -f <conf> */
/* A tmux command, no shell: run by the server itself in the hook, never by /bin/sh. */
#define TMUX_HOOK_COMMAND "wait-for -S " TMUX_CHANNEL

/* A tmux invocation under construction: argv words own their storage. */
struct tmux_cmd {
	char *argv[TMUX_ARGV_MAX + 1];
	size_t argc;
	int err;
};

/* Bytes the words after the socket and config arguments take in tmux's message. */
static size_t tmux_cmd_bytes(const struct tmux_cmd *c)
{
	size_t n = 0;

	for (size_t i = TMUX_PREFIX_WORDS; i < c->argc; i++)
		n += strlen(c->argv[i]) + 1;
	return n;
}

static void tmux_cmd_finish(struct tmux_cmd *c)
{
	for (size_t i = 0; i < c->argc; i++)
		free(c->argv[i]);
	c->argc = 0;
}

/* Appends a word as is (for tmux's own flags and our fixed words). */
static void tmux_raw(struct tmux_cmd *c, const char *w)
{
	if (c->err != 0)
		return;
	if (c->argc >= TMUX_ARGV_MAX) {
		c->err = -E2BIG;
		return;
	}
	c->argv[c->argc] = strdup(w);
	if (c->argv[c->argc] == NULL) {
		c->err = -ENOMEM;
		return;
	}
	c->argv[++c->argc] = NULL;
}

/* Appends a word that may come from outside: escaped so it cannot end the tmux command. */
static void tmux_word(struct tmux_cmd *c, const char *w)
{
	size_t len = strlen(w) + 2;
	char *buf;

	if (c->err != 0)
		return;
	if (len > TMUX_WORD_MAX) {
		c->err = -ENAMETOOLONG;
		return;
	}
	buf = malloc(len);
	if (buf == NULL) {
		c->err = -ENOMEM;
		return;
	}
	tmux_escape_word(w, buf, len);
	tmux_raw(c, buf);
	free(buf);
}

static void tmux_target(struct tmux_cmd *c, const char *name, const char *suffix)
{
	char t[256];

	if (snprintf(t, sizeof(t), "=%s%s", name, suffix) >= (int)sizeof(t)) {
		c->err = -ENAMETOOLONG;
		return;
	}
	tmux_raw(c, "-t");
	tmux_word(c, t);
}

static void tmux_cmd_init(struct tmux_cmd *c, const struct tmux *t)
{
	memset(c, 0, sizeof(*c));
	tmux_raw(c, t->bin);
	/* UTF-8 output although the environment names no locale: else tmux writes '_' for our
	 * field separator and for every non-ASCII byte. */
	tmux_raw(c, "-u");
	tmux_raw(c, "-S");
	tmux_raw(c, t->socket);
	tmux_raw(c, "-f");
	tmux_raw(c, t->conf);
	if (t->no_start)
		tmux_raw(c, "-N");
}

static void tmux_trim(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = '\0';
}

/* Words safe inside a tmux format argument: nothing that ends or opens one (',' '}' '#'). */
static bool tmux_format_safe(const char *w)
{
	for (; *w != '\0'; w++)
		if (!((*w >= 'a' && *w <= 'z') || (*w >= 'A' && *w <= 'Z') ||
		      (*w >= '0' && *w <= '9') || *w == '.' || *w == '_' || *w == '-' || *w == '+'))
			return false;
	return true;
}

int tmux_guard_format(const char *name, const char *id, char *out, size_t outlen)
{
	int n;

	if (!tmux_format_safe(name) || !tmux_format_safe(id) || name[0] == '\0')
		return -EINVAL;
	n = snprintf(out, outlen, "#{&&:#{==:#{session_name},%s},#{==:#{@agentd_id},%s}}", name,
		     id);
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

/*
 * Starts the command with the check that session name exists and belongs to id: has-session fails
 * when it is gone, and if-shell -F (a format, no shell) fails on the command it cannot parse,
 * TMUX_GUARD_FAIL, when @agentd_id is another; either failure ends the command sequence before
 * the commands that follow run. One tmux call, so nothing can change in between.
 */
static void tmux_guard(struct tmux_cmd *c, const char *name, const char *id)
{
	char fmt[TMUX_GUARD_MAX] = "";
	int r = tmux_guard_format(name, id, fmt, sizeof(fmt));

	if (r < 0 && c->err == 0)
		c->err = r;
	tmux_raw(c, "has-session");
	tmux_target(c, name, "");
	tmux_raw(c, ";");
	tmux_raw(c, "if-shell");
	tmux_raw(c, "-F");
	tmux_target(c, name, ":");
	tmux_raw(c, fmt);
	tmux_raw(c, "");
	tmux_raw(c, TMUX_GUARD_FAIL);
	tmux_raw(c, ";");
}

/* What a guarded command's failure (tmux_exec returned 1, out holds tmux's message) means. */
static int tmux_guard_result(const char *out)
{
	if (strstr(out, TMUX_GUARD_FAIL) != NULL)
		return -EPERM;
	if (strstr(out, "can't find session") != NULL || strstr(out, "no server running") != NULL ||
	    strstr(out, "no current target") != NULL || strstr(out, "error connecting") != NULL)
		return -ENOENT;
	return -EIO;
}

/*
 * Runs the command. Returns 0 on exit status 0, 1 on another exit status (out holds tmux's
 * message), or -errno when tmux could not be run.
 */
static int tmux_exec(struct tmux_cmd *c, char *out, size_t outlen, struct cause *cause)
{
	/* No environment: the client that starts the server gives it its global environment, which
	 * every pane inherits; the agent's variables go with -e (see tmux.h). */
	static char *const no_env[] = {NULL};
	struct proc_opts opts = {.envp = no_env, .cwd = NULL, .keep_fd = -1, .new_session = true};
	char small[1024];
	int st = 0, r;

	if (c->err != 0) {
		r = cause_fail(cause, c->err, "tmux command too long");
		goto out;
	}
	if (out == NULL) {
		out = small;
		outlen = sizeof(small);
	}
	r = proc_run(c->argv, &opts, out, outlen, &st);
	if (r < 0) {
		cause_set(cause, "cannot run %s: %s", c->argv[0], strerror(-r));
		goto out;
	}
	tmux_trim(out);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		cause_set(cause, "tmux: %s", out[0] ? out : "failed");
		r = 1;
	}
out:
	tmux_cmd_finish(c);
	return r;
}

int tmux_init(struct tmux *t, const struct config *cfg)
{
	int r;

	t->no_start = false;
	if (snprintf(t->bin, sizeof(t->bin), "%s", cfg->tmux) >= (int)sizeof(t->bin))
		return -ENAMETOOLONG;
	if ((r = config_runtime_path(cfg, "tmux.sock", t->socket, sizeof(t->socket))) < 0)
		return r;
	return config_runtime_path(cfg, "tmux.conf", t->conf, sizeof(t->conf));
}

int tmux_write_conf(const struct tmux *t, struct cause *cause)
{
	char text[1024];
	int n, r;

	/* remain-on-exit keeps a dead agent's last screen; exit-empty off keeps the server (and so
	 * the socket the bridge attaches to) alive with zero sessions; the hooks tell agentd-api
	 * at once when an agent dies or a session goes (tmux_wait); of a new pane, whoever made it
	 * tells (tmux_signal). No prefix key and no key
	 * bindings: the server runs as root, and a terminal client's C-b c would open a root shell
	 * (or C-b : run any tmux command); every key goes to the agent. */
	n = snprintf(text, sizeof(text),
		     "set -g prefix None\n"
		     "set -g prefix2 None\n"
		     "unbind-key -a -T prefix\n"
		     "unbind-key -a -T root\n"
		     "set -g remain-on-exit on\n"
		     "set -g status off\n"
		     "set -g history-limit %d\n"
		     "set -g exit-empty off\n"
		     "set -g default-terminal tmux-256color\n"
		     "set -g window-size latest\n"
		     "set-hook -g pane-died \"%s\"\n"
		     "set-hook -g session-closed \"%s\"\n",
		     TMUX_HISTORY_LIMIT, TMUX_HOOK_COMMAND, TMUX_HOOK_COMMAND);
	if (n < 0 || (size_t)n >= sizeof(text))
		return cause_fail(cause, ENAMETOOLONG, "tmux config too long");
	if ((r = fsutil_write_atomic(t->conf, text, 0640, true)) < 0)
		return cause_fail(cause, -r, "cannot write %s: %s", t->conf, strerror(-r));
	return 0;
}

/* Runs the set-environment commands gathered in c (if any) and starts a new batch. */
static int tmux_env_flush(const struct tmux *t, struct tmux_cmd *c, size_t *pending,
			  struct cause *cause)
{
	int r = 0;

	if (*pending > 0)
		r = tmux_exec(c, NULL, 0, cause);
	else
		tmux_cmd_finish(c);
	*pending = 0;
	tmux_cmd_init(c, t);
	return r == 1 ? -EIO : r;
}

/*
 * Empties the server's global environment, which every pane inherits: a server started by an
 * older agentd (or by hand) holds the whole environment of whoever started it.
 */
static int tmux_clear_global_env(const struct tmux *t, struct cause *cause)
{
	struct tmux_cmd c;
	char *buf = malloc(TMUX_OUT_MAX), *line, *save = NULL;
	size_t pending = 0;
	int r;

	if (buf == NULL)
		return cause_fail(cause, ENOMEM, "out of memory");
	tmux_cmd_init(&c, t);
	tmux_raw(&c, "show-environment");
	tmux_raw(&c, "-g");
	r = tmux_exec(&c, buf, TMUX_OUT_MAX, cause);
	if (r != 0) {
		r = r == 1 ? -EIO : r;
		goto out;
	}
	tmux_cmd_init(&c, t);
	for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');

		/* "-NAME" is already marked removed. */
		if (line[0] == '-' || eq == NULL || eq == line)
			continue;
		*eq = '\0';
		if ((c.argc + 6 > TMUX_ARGV_MAX ||
		     tmux_cmd_bytes(&c) + strlen(line) + 64 > TMUX_MESSAGE_SAFE) &&
		    (r = tmux_env_flush(t, &c, &pending, cause)) < 0)
			break;
		if (pending > 0)
			tmux_raw(&c, ";");
		tmux_raw(&c, "set-environment");
		tmux_raw(&c, "-gu");
		tmux_raw(&c, "--");
		tmux_word(&c, line);
		pending++;
	}
	if (r == 0)
		r = tmux_env_flush(t, &c, &pending, cause);
	tmux_cmd_finish(&c);
out:
	free(buf);
	return r;
}

int tmux_start_server(const struct tmux *t, struct cause *cause)
{
	struct tmux_cmd c;
	int r;

	tmux_cmd_init(&c, t);
	tmux_raw(&c, "start-server");
	r = tmux_exec(&c, NULL, 0, cause);
	if (r != 0)
		return r == 1 ? -EIO : r;
	return tmux_clear_global_env(t, cause);
}

int tmux_escape_word(const char *in, char *out, size_t outlen)
{
	size_t n = strlen(in);
	bool esc = n > 0 && in[n - 1] == ';';

	if (n + (esc ? 1 : 0) + 1 > outlen)
		return -ENAMETOOLONG;
	if (esc) {
		memcpy(out, in, n - 1);
		out[n - 1] = '\\';
		out[n] = ';';
		out[n + 1] = '\0';
	} else {
		memcpy(out, in, n + 1);
	}
	return 0;
}

static void tmux_set_meta(struct tmux_cmd *c, const char *name, const char *key, const char *val)
{
	tmux_raw(c, ";");
	tmux_raw(c, "set-option");
	tmux_target(c, name, ":");
	tmux_word(c, key);
	tmux_word(c, val);
}

/* The prompt is free text: stored JSON-encoded so newlines and our field separator cannot break
 * list-sessions lines. A prompt too long to fit tmux's command message is not stored. */
static void tmux_set_prompt(struct tmux_cmd *c, const char *prompt)
{
	json_object *js = json_object_new_string(prompt);
	const char *enc =
	    js != NULL ? json_object_to_json_string_ext(js, JSON_C_TO_STRING_PLAIN) : NULL;

	tmux_word(c, "@agentd_prompt");
	tmux_word(c, enc != NULL && strlen(enc) <= TMUX_PROMPT_STORED_MAX ? enc : "");
	json_object_put(js);
}

static void tmux_decode_prompt(const char *enc, char *out, size_t outlen)
{
	json_object *js = enc[0] != '\0' ? json_tokener_parse(enc) : NULL;

	out[0] = '\0';
	if (js != NULL && json_object_is_type(js, json_type_string))
		snprintf(out, outlen, "%s", json_object_get_string(js));
	json_object_put(js);
}

int tmux_new_session(const struct tmux *t, const struct tmux_new *req, struct cause *cause)
{
	struct tmux_cmd c;
	char out[4096];
	struct stat sb;
	bool prompt_stored = false;
	int r;

	/* tmux silently falls back to its own cwd for a missing directory: the agent must never run
	 * outside its worktree. */
	if (stat(req->cwd, &sb) < 0)
		return cause_fail(cause, errno, "cannot use %s as the session directory: %s",
				  req->cwd, strerror(errno));
	if (!S_ISDIR(sb.st_mode))
		return cause_fail(cause, ENOTDIR, "%s is not a directory", req->cwd);
	tmux_cmd_init(&c, t);
	tmux_raw(&c, "new-session");
	tmux_raw(&c, "-d");
	tmux_raw(&c, "-E"); /* no update-environment: the session environment is -e's alone */
	tmux_raw(&c, "-s");
	tmux_word(&c, req->name);
	tmux_raw(&c, "-c");
	tmux_word(&c, req->cwd);
	tmux_raw(&c, "-x");
	tmux_raw(&c, "200");
	tmux_raw(&c, "-y");
	tmux_raw(&c, "50");
	for (size_t i = 0; req->env != NULL && req->env[i] != NULL; i++) {
		tmux_raw(&c, "-e");
		tmux_word(&c, req->env[i]);
	}
	tmux_raw(&c, "--");
	for (size_t i = 0; req->argv[i] != NULL; i++)
		tmux_word(&c, req->argv[i]);
	if (req->meta != NULL) {
		const struct tmux_meta *m = req->meta;

		tmux_set_meta(&c, req->name, "@agentd_id", m->id);
		tmux_set_meta(&c, req->name, "@agentd_owner", m->owner);
		tmux_set_meta(&c, req->name, "@agentd_repo", m->repo);
		tmux_set_meta(&c, req->name, "@agentd_issue", m->issue);
		tmux_set_meta(&c, req->name, "@agentd_mode", m->mode);
		tmux_set_meta(&c, req->name, "@agentd_agent_session", m->agent_session);
		tmux_set_meta(&c, req->name, "@agentd_created", m->created);
	}
	/* The prompt is in the argv already: stored in the same command while both fit tmux's
	 * message (one tmux round trip less per creation), else by a second command. JSON
	 * encoding makes a byte at most 6 ("\u001f"). */
	if (req->meta != NULL && req->meta->prompt[0] != '\0' &&
	    tmux_cmd_bytes(&c) + 6 * strlen(req->meta->prompt) + 64 <= TMUX_MESSAGE_SAFE) {
		tmux_raw(&c, ";");
		tmux_raw(&c, "set-option");
		tmux_target(&c, req->name, ":");
		tmux_set_prompt(&c, req->meta->prompt);
		prompt_stored = true;
	}
	r = tmux_exec(&c, out, sizeof(out), cause);
	if (r == 1)
		return strstr(out, "duplicate session") != NULL ? -EEXIST : -EIO;
	if (r < 0 || req->meta == NULL || req->meta->prompt[0] == '\0' || prompt_stored)
		return r;
	tmux_cmd_init(&c, t);
	tmux_raw(&c, "set-option");
	tmux_target(&c, req->name, ":");
	tmux_set_prompt(&c, req->meta->prompt);
	/* Metadata only: the record holds the prompt too; recovery without it reads "". */
	tmux_exec(&c, out, sizeof(out), NULL);
	return 0;
}

int tmux_has_session(const struct tmux *t, const char *name)
{
	struct tmux_cmd c;
	int r;

	tmux_cmd_init(&c, t);
	tmux_raw(&c, "has-session");
	tmux_target(&c, name, "");
	r = tmux_exec(&c, NULL, 0, NULL);
	if (r < 0)
		return r;
	return r == 0 ? 1 : 0;
}

int tmux_kill_session(const struct tmux *t, const char *name, const char *id, struct cause *cause)
{
	struct tmux_cmd c;
	char out[1024];
	int r;

	tmux_cmd_init(&c, t);
	tmux_guard(&c, name, id);
	tmux_raw(&c, "kill-session");
	tmux_target(&c, name, "");
	r = tmux_exec(&c, out, sizeof(out), cause);
	return r == 1 ? tmux_guard_result(out) : r;
}

int tmux_set_option(const struct tmux *t, const char *name, const char *id, const char *key,
		    const char *value, struct cause *cause)
{
	struct tmux_cmd c;
	char out[1024];
	int r;

	tmux_cmd_init(&c, t);
	tmux_guard(&c, name, id);
	tmux_raw(&c, "set-option");
	tmux_target(&c, name, ":");
	tmux_word(&c, key);
	tmux_word(&c, value);
	r = tmux_exec(&c, out, sizeof(out), cause);
	return r == 1 ? tmux_guard_result(out) : r;
}

int tmux_respawn(const struct tmux *t, const char *name, const char *id, char *const *env,
		 char *const *argv, struct cause *cause)
{
	struct tmux_cmd c;
	char out[1024];
	int r;

	tmux_cmd_init(&c, t);
	tmux_guard(&c, name, id);
	tmux_raw(&c, "respawn-pane");
	tmux_raw(&c, "-k");
	tmux_target(&c, name, ":");
	for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
		tmux_raw(&c, "-e");
		tmux_word(&c, env[i]);
	}
	tmux_raw(&c, "--");
	for (size_t i = 0; argv[i] != NULL; i++)
		tmux_word(&c, argv[i]);
	r = tmux_exec(&c, out, sizeof(out), cause);
	return r == 1 ? tmux_guard_result(out) : r;
}

int tmux_pane_pid(const struct tmux *t, const char *name, const char *id, struct cause *cause)
{
	struct tmux_cmd c;
	char out[256];
	long pid;
	int r;

	tmux_cmd_init(&c, t);
	tmux_guard(&c, name, id);
	tmux_raw(&c, "display-message");
	tmux_raw(&c, "-p");
	tmux_target(&c, name, ":");
	tmux_raw(&c, "#{pane_pid}");
	r = tmux_exec(&c, out, sizeof(out), cause);
	if (r == 1)
		return tmux_guard_result(out);
	if (r < 0)
		return r;
	pid = strtol(out, NULL, 10);
	return pid > 0 ? (int)pid : cause_fail(cause, EIO, "tmux gave no pane pid for %s", name);
}

int tmux_server_pid(const struct tmux *t, struct cause *cause)
{
	struct tmux_cmd c;
	char out[256];
	long pid;
	int r;

	tmux_cmd_init(&c, t);
	tmux_raw(&c, "display-message");
	tmux_raw(&c, "-p");
	tmux_raw(&c, "#{pid}");
	r = tmux_exec(&c, out, sizeof(out), cause);
	if (r == 1)
		return cause_fail(cause, ENOENT, "the tmux server does not run");
	if (r < 0)
		return r;
	pid = strtol(out, NULL, 10);
	return pid > 0 && pid <= INT_MAX ? (int)pid
					 : cause_fail(cause, EIO, "tmux gave no server pid");
}

int tmux_server_running(const struct tmux *t)
{
	struct tmux_cmd c;
	int r;

	tmux_cmd_init(&c, t);
	tmux_raw(&c, "list-sessions");
	tmux_raw(&c, "-F");
	tmux_raw(&c, "#{session_name}");
	r = tmux_exec(&c, NULL, 0, NULL);
	if (r < 0)
		return r;
	return r == 0 ? 1 : 0;
}

/* Separates fields of one list-sessions line; tmux passes our format through unchanged. */
#define TMUX_SEP "\x1f"

static void tmux_field(char **cursor, char *out, size_t outlen)
{
	char *p = *cursor, *sep = strstr(p, TMUX_SEP);
	size_t n;

	if (sep != NULL)
		*sep = '\0';
	n = strnlen(p, outlen - 1); /* a longer field is cut to what out holds */
	memcpy(out, p, n);
	out[n] = '\0';
	*cursor = sep != NULL ? sep + 1 : p + strlen(p);
}

/* Reads #{pane_dead}, #{pane_dead_status}, #{pane_dead_signal}, #{pane_dead_time}, #{pane_pid},
 * #{pid} into ti. */
static void tmux_pane_fields(char **cursor, struct tmux_info *ti)
{
	char num[32];

	tmux_field(cursor, num, sizeof(num));
	ti->pane_dead = num[0] == '1';
	tmux_field(cursor, num, sizeof(num));
	ti->dead_status = num[0] != '\0' ? (int)strtol(num, NULL, 10) : -1;
	tmux_field(cursor, num, sizeof(num));
	ti->dead_signal = (int)strtol(num, NULL, 10);
	tmux_field(cursor, num, sizeof(num));
	ti->dead_time = strtol(num, NULL, 10);
	tmux_field(cursor, num, sizeof(num));
	ti->pane_pid = strtol(num, NULL, 10);
	tmux_field(cursor, num, sizeof(num));
	ti->server_pid = strtol(num, NULL, 10);
}

int tmux_list(const struct tmux *t, struct tmux_info **out, size_t *n, struct cause *cause)
{
	static const char fmt[] =
	    "#{session_name}" TMUX_SEP "#{session_path}" TMUX_SEP "#{window_activity}" TMUX_SEP
	    "#{pane_dead}" TMUX_SEP "#{pane_dead_status}" TMUX_SEP "#{pane_dead_signal}" TMUX_SEP
	    "#{pane_dead_time}" TMUX_SEP "#{pane_pid}" TMUX_SEP "#{pid}" TMUX_SEP
	    "#{@agentd_id}" TMUX_SEP "#{@agentd_owner}" TMUX_SEP "#{@agentd_repo}" TMUX_SEP
	    "#{@agentd_issue}" TMUX_SEP "#{@agentd_mode}" TMUX_SEP
	    "#{@agentd_agent_session}" TMUX_SEP "#{@agentd_created}" TMUX_SEP "#{@agentd_prompt}";
	struct tmux_info *list = NULL;
	char prompt[TMUX_PROMPT_STORED_MAX + 1];
	size_t count = 0;
	struct tmux_cmd c;
	char *buf, *line, *save = NULL;
	int r;

	*out = NULL;
	*n = 0;
	buf = malloc(TMUX_OUT_MAX);
	if (buf == NULL)
		return -ENOMEM;
	tmux_cmd_init(&c, t);
	tmux_raw(&c, "list-sessions");
	tmux_raw(&c, "-F");
	tmux_raw(&c, fmt);
	r = tmux_exec(&c, buf, TMUX_OUT_MAX, cause);
	if (r == 1) {
		/* No server (or no socket yet) is simply no sessions. */
		r = (strstr(buf, "no server running") != NULL ||
		     strstr(buf, "error connecting") != NULL)
			? 0
			: -EIO;
		goto out;
	}
	if (r < 0)
		goto out;
	for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		struct tmux_info *ti;
		char num[32];

		if (count == TMUX_LIST_MAX)
			break;
		ti = realloc(list, (count + 1) * sizeof(*list));
		if (ti == NULL) {
			r = -ENOMEM;
			goto out;
		}
		list = ti;
		ti = &list[count++];
		memset(ti, 0, sizeof(*ti));
		tmux_field(&line, ti->name, sizeof(ti->name));
		tmux_field(&line, ti->path, sizeof(ti->path));
		tmux_field(&line, num, sizeof(num));
		ti->activity = strtol(num, NULL, 10);
		tmux_pane_fields(&line, ti);
		tmux_field(&line, ti->meta.id, sizeof(ti->meta.id));
		tmux_field(&line, ti->meta.owner, sizeof(ti->meta.owner));
		tmux_field(&line, ti->meta.repo, sizeof(ti->meta.repo));
		tmux_field(&line, ti->meta.issue, sizeof(ti->meta.issue));
		tmux_field(&line, ti->meta.mode, sizeof(ti->meta.mode));
		tmux_field(&line, ti->meta.agent_session, sizeof(ti->meta.agent_session));
		tmux_field(&line, ti->meta.created, sizeof(ti->meta.created));
		tmux_field(&line, prompt, TMUX_PROMPT_STORED_MAX + 1);
		tmux_decode_prompt(prompt, ti->meta.prompt, sizeof(ti->meta.prompt));
	}
	r = 0;
out:
	free(buf);
	if (r < 0) {
		free(list);
		return r;
	}
	*out = list;
	*n = count;
	return 0;
}

/* tmux's words for a server that is not there (or went away under a waiting client). */
static bool tmux_no_server(const char *out)
{
	return strstr(out, "no server running") != NULL ||
	       strstr(out, "error connecting") != NULL || strstr(out, "server exited") != NULL ||
	       strstr(out, "lost server") != NULL;
}

int tmux_install_hooks(const struct tmux *t, struct cause *cause)
{
	static const char *const hooks[] = {"pane-died", "session-closed"};
	struct tmux_cmd c;
	char out[1024];
	int r;

	tmux_cmd_init(&c, t);
	for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++) {
		tmux_raw(&c, "set-hook");
		tmux_raw(&c, "-g");
		tmux_raw(&c, hooks[i]);
		tmux_raw(&c, TMUX_HOOK_COMMAND);
		tmux_raw(&c, ";");
	}
	/* An older agentd's server also woke the watcher on session-created: each creation then
	 * paid for a pass, while the record still said creating, that the pass ignores. */
	tmux_raw(&c, "set-hook");
	tmux_raw(&c, "-gu");
	tmux_raw(&c, "session-created");
	r = tmux_exec(&c, out, sizeof(out), cause);
	if (r == 1)
		return tmux_no_server(out) ? -ENOENT : -EIO;
	return r;
}

int tmux_wait(const struct tmux *t, struct cause *cause)
{
	struct tmux_cmd c;
	char out[1024];
	int r;

	tmux_cmd_init(&c, t);
	tmux_raw(&c, "wait-for");
	tmux_raw(&c, TMUX_CHANNEL);
	r = tmux_exec(&c, out, sizeof(out), cause);
	if (r == 1)
		return tmux_no_server(out) ? -ENOENT : -EIO;
	return r;
}

int tmux_signal(const struct tmux *t)
{
	struct tmux_cmd c;
	char out[1024];
	int r;

	tmux_cmd_init(&c, t);
	tmux_raw(&c, "wait-for");
	tmux_raw(&c, "-S");
	tmux_raw(&c, TMUX_CHANNEL);
	r = tmux_exec(&c, out, sizeof(out), NULL);
	if (r == 1)
		return tmux_no_server(out) ? -ENOENT : -EIO;
	return r;
}

int tmux_pane_state(const struct tmux *t, const char *name, struct tmux_info *out)
{
	struct tmux_cmd c;
	char buf[512], found[128], *cursor = buf;
	int r;

	memset(out, 0, sizeof(*out));
	out->dead_status = -1;
	snprintf(out->name, sizeof(out->name), "%s", name);
	tmux_cmd_init(&c, t);
	tmux_raw(&c, "display-message");
	tmux_raw(&c, "-p");
	tmux_target(&c, name, ":");
	/* display-message answers even for a target it cannot find (with empty formats): the
	 * session's own name tells whether it was found. */
	tmux_raw(&c,
		 "#{session_name}" TMUX_SEP "#{pane_dead}" TMUX_SEP "#{pane_dead_status}" TMUX_SEP
		 "#{pane_dead_signal}" TMUX_SEP "#{pane_dead_time}" TMUX_SEP "#{pane_pid}" TMUX_SEP
		 "#{pid}" TMUX_SEP "#{@agentd_id}");
	r = tmux_exec(&c, buf, sizeof(buf), NULL);
	if (r < 0)
		return r;
	if (r ==
	    1) /* no such session, or no server, means it is not there; anything else is an error */
		return tmux_no_server(buf) || strstr(buf, "can't find") != NULL ? 0 : -EIO;
	tmux_field(&cursor, found, sizeof(found));
	if (strcmp(found, name) != 0)
		return 0;
	tmux_pane_fields(&cursor, out);
	tmux_field(&cursor, out->meta.id, sizeof(out->meta.id));
	out->meta.id[strcspn(out->meta.id, "\n")] = '\0';
	return 1;
}

int tmux_capture(const struct tmux *t, const char *name, const char *id, int history, char *out,
		 size_t outlen, struct cause *cause)
{
	struct tmux_cmd c;
	char start[16];
	int r;

	snprintf(start, sizeof(start), "-%d", history);

	tmux_cmd_init(&c, t);
	tmux_guard(&c, name, id);
	tmux_raw(&c, "capture-pane");
	tmux_raw(&c, "-p");
	tmux_raw(&c, "-J");
	tmux_raw(&c, "-S");
	tmux_raw(&c, start);
	tmux_target(&c, name, ":");
	r = tmux_exec(&c, out, outlen, cause);
	return r == 1 ? tmux_guard_result(out) : r;
}

int tmux_reap(const struct tmux *t, struct cause *cause)
{
	struct tmux_cmd c;

	tmux_cmd_init(&c, t);
	tmux_raw(&c, "new-session");
	tmux_raw(&c, "-d");
	tmux_raw(&c, "-s");
	tmux_raw(&c, TMUX_REAP_SESSION);
	tmux_raw(&c, "--");
	tmux_raw(&c, TMUX_REAP_PROGRAM);
	tmux_raw(&c, "agentd-reap"); /* two words: tmux execs them without a shell */
	tmux_raw(&c, ";");
	tmux_raw(&c, "kill-session");
	tmux_target(&c, TMUX_REAP_SESSION, "");
	return tmux_exec(&c, NULL, 0, cause) == 0 ? 0 : -EIO;
}
