/*
 * The launch of an agent in its pane (create.h: create_tmux_session, create_respawn,
 * create_pane_start): the agent's program, environment, HOME and argv (claude's, another CLI's,
 * or agentd-host's in structured mode), the cage around it, and the tmux session or respawn that
 * runs it. The creation worker that comes first is create.c.
 */
#include "create.h"

#include "acp.h"
#include "acplaunch.h"
#include "agentlaunch.h"
#include "agents.h"
#include "cagecmd.h"
#include "claude.h"
#include "hookproto.h"
#include "hostproto.h"
#include "isotime.h"
#include "log.h"
#include "proc.h"
#include "sessioncg.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LAUNCH_REAP_WAIT_MS 5000 /* for the agent that respawn-pane -k replaced */
#define LAUNCH_REAP_POLL_MS 20

/*
 * A terminal launch's --settings file (the hooks that report to the bridge), written anew so it
 * says what today's configuration says. Returns 0 or -errno with cause.
 */
static int create_settings(const struct app *app, char *path, size_t pathlen, struct cause *cause)
{
	if (app->hook_bin[0] == '\0')
		return cause_fail(cause, ENOENT,
				  "agentd-hook was not found beside agentd-api; build it or set "
				  "AGENTD_HOOK");
	return claude_hook_settings_write(app->cfg, app->hook_bin, path, pathlen, cause);
}

/* The row of s's agent in the table; -ENOENT with cause when the configuration lost it. */
static int create_find_agent(const struct app *app, const struct session *s, struct agent *a,
			     struct cause *cause)
{
	char known[AGENTS_LIST_MAX];

	if (agents_find(app->cfg, s->agent, a) == 0)
		return 0;
	agents_list(app->cfg, known, sizeof(known));
	return cause_fail(cause, ENOENT, "the agent %s of %s is not configured (known: %s)",
			  s->agent, s->id, known);
}

/* The executable of a's terminal argv: the first word of its command. */
static void create_agent_exe(const struct agent *a, char *out, size_t outlen)
{
	const char *p = a->command + strspn(a->command, " \t");
	size_t n = strcspn(p, " \t");

	snprintf(out, outlen, "%.*s", (int)(n < outlen ? n : outlen - 1), p);
}

/*
 * Checks, as the agent user, that it can run the agent's executable, and agentd-host in
 * structured mode or agentd-hook (the CLI's hooks) in terminal mode: a program it cannot run
 * (e.g. installed under /root) would only give a dead pane, or a TUI whose hooks fail.
 */
static int create_check_programs(const struct app *app, const struct agent *a,
				 enum session_mode mode, struct cause *cause)
{
	char path[CONFIG_PATH_MAX], exe[CONFIG_PATH_MAX];
	struct agentuser_fs fs;
	int r;

	if ((r = agentuser_fs_enter(&app->agent, &fs)) < 0)
		return cause_fail(cause, -r, "cannot take the agent user's identity: %s",
				  strerror(-r));
	create_agent_exe(a, exe, sizeof(exe));
	/* Structured: the program the pane runs is the agent's ACP mode (codex: codex-acp). */
	if (mode == SESSION_STRUCTURED && a->acp_command != NULL) {
		const char *p = a->acp_command + strspn(a->acp_command, " \t");
		size_t n = strcspn(p, " \t");

		snprintf(exe, sizeof(exe), "%.*s", (int)(n < sizeof(exe) ? n : sizeof(exe) - 1), p);
	}
	r = proc_which(exe, path, sizeof(path));
	if (r < 0) {
		cause_set(cause,
			  "the agent executable '%s' was not found or %s cannot run it (%s); "
			  "install the %s CLI where that user can, or set %s",
			  exe, app->agent.name, strerror(-r), a->name,
			  a->kind == AGENT_CLAUDE ? "AGENTD_CLAUDE"
			  : mode == SESSION_STRUCTURED && a->acp_command != NULL
			      ? "AGENTD_AGENT_<NAME>_ACP"
			      : "AGENTD_AGENT_<NAME>_COMMAND");
	} else if (mode == SESSION_STRUCTURED &&
		   (r = proc_which(app->host_bin, path, sizeof(path))) < 0) {
		cause_set(cause,
			  "agentd-host (%s) was not found or %s cannot run it (%s); build it or "
			  "set AGENTD_HOST_BIN",
			  app->host_bin, app->agent.name, strerror(-r));
	} else if (mode == SESSION_TERMINAL && app->hook_bin[0] != '\0' &&
		   (r = proc_which(app->hook_bin, path, sizeof(path))) < 0) {
		cause_set(cause, "agentd-hook (%s) cannot be run by %s: %s", app->hook_bin,
			  app->agent.name, strerror(-r));
	}
	agentuser_fs_leave(&fs);
	return r;
}

/* The agent's environment (claude_env) from ours, with HOME the agent user's home, and s's
 * ports when it has some (ours never: they are the session's alone). */
static int create_agent_env(const struct app *app, const struct session *s, struct claude_env *env,
			    struct cause *cause)
{
	extern char **environ;
	static const char *const drop[] = {"HOME=", "PORT=", "AGENTD_PORT_RANGE="};
	char port[8], range[16];
	char home[CONFIG_PATH_MAX + 8];
	char **from;
	int r;

	if (agentuser_home_word(&app->agent, home, sizeof(home)) < 0)
		return cause_fail(cause, ENAMETOOLONG, "the agent's home directory is too long");
	from = proc_env_edit(environ, drop, sizeof(drop) / sizeof(drop[0]), home);
	if (from == NULL)
		return cause_fail(cause, ENOMEM, "out of memory");
	r = claude_env(app->cfg, from, env);
	free(from);
	if (r == 0 && s->port_first != 0) {
		snprintf(port, sizeof(port), "%u", s->port_first);
		snprintf(range, sizeof(range), "%u-%u", s->port_first, s->port_last);
		if ((r = claude_env_put(env, "PORT", port)) == 0)
			r = claude_env_put(env, "AGENTD_PORT_RANGE", range);
	}
	if (r < 0)
		cause_set(cause, "the variables of AGENTD_AGENT_ENV are too many or too long: %s",
			  strerror(-r));
	return r;
}

/* The agent's HOME as its CLI sees it: the session's own when caged. */
static void create_agent_home(const struct app *app, const struct session *s, char *home,
			      size_t len)
{
	char why[8];

	if (!cagecmd_enabled(app, why, sizeof(why)) ||
	    snprintf(home, len, "%s/%s", app->cfg->homes_dir, s->id) >= (int)len)
		snprintf(home, len, "%s", app->agent.home);
}

/*
 * The conversation of a built-in other than claude across its two modes: the id agentd-host
 * recorded in structured mode (its acp.json), which a terminal launch resumes by that id; and,
 * when it recorded none, what a structured launch's host is to load (agentd-host --resume): the
 * terminal mode's conversation, gemini's by agentSessionId (with the minute it was made),
 * codex's newest rollout by its id, opencode's the newest it lists (their homes are the
 * session's own).
 */
struct create_conversation {
	char id[ACP_CONVERSATION_MAX + 1];     /* "" when none usable */
	const char *resume;                    /* structured: --resume, or NULL */
	char newest[ACP_CONVERSATION_MAX + 1]; /* codex's, that resume points to */
	int64_t made_ms;
};

/* Reads the id agentd-host recorded for s into conv->id ("" when none or not one). */
static void create_recorded_conversation(const struct app *app, const struct agent *a,
					 const struct session *s, struct create_conversation *conv)
{
	char path[CONFIG_PATH_MAX];
	int r;

	conv->id[0] = '\0';
	if (a->kind == AGENT_CLAUDE || a->kind == AGENT_CUSTOM ||
	    hostproto_state_path(app->cfg, s->id, ACP_STATE_NAME, path, sizeof(path)) < 0)
		return;
	r = agentlaunch_recorded_conversation(path, conv->id, sizeof(conv->id));
	if (r < 0 && r != -ENOENT)
		log_warn("session %s: %s holds no usable conversation id (%s): not resumed by it",
			 s->id, path, strerror(-r));
}

/* Whether the agent has a conversation of s to go on with (read as the agent: HOME is its):
 * claude's transcript, or what agentlaunch_has_conversation says of the others. conv (NULL for
 * claude) is filled for a launch in mode (above). */
static bool create_has_transcript(const struct app *app, const struct agent *a,
				  const struct session *s, enum session_mode mode,
				  struct create_conversation *conv)
{
	char home[CONFIG_PATH_MAX];
	struct session *launched = NULL;
	struct agentuser_fs fs;
	struct agent_user au;
	bool has = false;

	if (conv != NULL) {
		conv->resume = NULL;
		conv->made_ms = 0;
		create_recorded_conversation(app, a, s, conv);
	}
	create_agent_home(app, s, home, sizeof(home));
	cagecmd_user(app, s->uid, &au);
	if (agentuser_fs_enter(&au, &fs) < 0)
		return false;
	if (a->kind == AGENT_CLAUDE || conv == NULL) {
		has = claude_has_transcript(s, home, getenv("CLAUDE_CONFIG_DIR"));
	} else if ((launched = malloc(sizeof(*launched))) != NULL) {
		/* Asked of a session that ran: the launch count is not what is asked. */
		*launched = *s;
		launched->launched = true;
		/* The recorded conversation when the agent still has it (gemini drops one that
		 * got no message), else the terminal's own. */
		has = conv->id[0] != '\0' &&
		      agentlaunch_has_conversation_id(a, launched, home, conv->id);
		if (!has) {
			conv->id[0] = '\0';
			has = agentlaunch_has_conversation(a, launched, home);
		}
		if (has && mode == SESSION_STRUCTURED && conv->id[0] == '\0') {
			if (a->kind == AGENT_GEMINI) {
				conv->resume = s->agent_session_id;
				conv->made_ms = agentlaunch_gemini_made_ms(s, home);
			} else if (a->kind == AGENT_CODEX) {
				if (agentlaunch_codex_newest(s, home, conv->newest,
							     sizeof(conv->newest)) == 0)
					conv->resume = conv->newest;
			} else if (a->kind == AGENT_OPENCODE) {
				conv->resume = ACP_RESUME_NEWEST;
			}
		}
		free(launched);
	}
	agentuser_fs_leave(&fs);
	return has;
}

int create_switch_check(const struct app *app, const struct session *s, enum session_mode mode,
			struct cause *cause)
{
	struct create_conversation conv = {{0}, NULL, {0}, 0};
	char home[CONFIG_PATH_MAX];
	struct agentuser_fs fs;
	struct agent_user au;
	struct agent a;
	bool ok;

	if (mode != SESSION_TERMINAL || s->mode == mode ||
	    agents_find(app->cfg, s->agent, &a) < 0 || a.kind != AGENT_CODEX)
		return 0;
	create_recorded_conversation(app, &a, s, &conv);
	if (conv.id[0] == '\0')
		return 0;
	create_agent_home(app, s, home, sizeof(home));
	cagecmd_user(app, s->uid, &au);
	if (agentuser_fs_enter(&au, &fs) < 0)
		return 0; /* the launch says why */
	ok = agentlaunch_codex_tui_can_resume(s, home, conv.id);
	agentuser_fs_leave(&fs);
	if (ok)
		return 0;
	return cause_fail(cause, EXDEV,
			  "codex's TUI (0.169) cannot resume conversation %s: the TUI began it and "
			  "codex-acp (0.16) has written to it since, in a rollout format the TUI "
			  "refuses; the conversation goes on in structured mode",
			  conv.id);
}

/* The structured argv of s's agent: claude's stream-json behind agentd-host, or the agent's ACP
 * mode behind agentd-host --acp (which resumes the agent's session itself). */
static int create_structured_argv(const struct app *app, const struct agent *a,
				  const struct session *s, const char *first_prompt,
				  const struct create_conversation *conv, struct claude_argv *out)
{
	if (a->kind == AGENT_CLAUDE)
		return claude_structured_argv(app->cfg, s, app->host_bin, s->launched, first_prompt,
					      out);
	return acplaunch_argv(app->cfg, a, s, app->host_bin, first_prompt,
			      s->launched ? conv->resume : NULL, conv->made_ms, out);
}

/* The terminal argv of s's agent: claude's (with its settings file), or the table's. */
static int create_terminal_argv(const struct app *app, const struct agent *a,
				const struct session *s, const char *settings,
				const struct create_conversation *conv, struct claude_argv *out)
{
	if (a->kind == AGENT_CLAUDE)
		return claude_terminal_argv(app->cfg, s, settings, out);
	return agentlaunch_argv_conversation(a, s, s->launched,
					     conv->id[0] != '\0' ? conv->id : NULL, out);
}

/*
 * Writes, as the agent, the files a terminal launch of a CLI other than claude needs (its own
 * home with agentd-hook's hooks: agentlaunch.h), and adds its variables to env. After the pane's
 * command is built: a caged session's HOME is made then. Returns 0 or -errno with cause.
 */
static int create_prepare_agent(const struct app *app, const struct agent *a,
				const struct session *s, enum session_mode mode,
				struct claude_env *env, struct cause *cause)
{
	char home[CONFIG_PATH_MAX], sock[CONFIG_PATH_MAX], hook[CONFIG_PATH_MAX * 2 + 16];
	struct agentuser_fs fs;
	int r;

	if (a->kind == AGENT_CLAUDE)
		return 0;
	create_agent_home(app, s, home, sizeof(home));
	if ((r = agentlaunch_env(a, s, home, env)) < 0)
		return cause_fail(cause, -r, "the agent's variables are too many or too long: %s",
				  strerror(-r));
	if (a->kind == AGENT_CUSTOM)
		return 0;
	/* Structured: the CLI's home and trust, no hooks (ACP asks for permissions itself, and a
	 * hook waiting for a decision would hold the agent's tool). */
	if (mode == SESSION_STRUCTURED) {
		if ((r = agentuser_fs_enter(&app->agent, &fs)) < 0)
			return cause_fail(cause, -r, "cannot take the agent user's identity: %s",
					  strerror(-r));
		r = agentlaunch_prepare(a, s, home, NULL, 0, cause);
		agentuser_fs_leave(&fs);
		return r;
	}
	if (app->hook_bin[0] == '\0')
		return cause_fail(cause, ENOENT,
				  "agentd-hook was not found beside agentd-api; build it or set "
				  "AGENTD_HOOK");
	/* The CLIs run their hooks with a shell, as claude does: plain paths only. */
	if (config_runtime_path(app->cfg, HOOKPROTO_SOCKET_NAME, sock, sizeof(sock)) < 0 ||
	    !config_path_plain(sock) || !config_path_plain(app->hook_bin))
		return cause_fail(cause, EINVAL,
				  "agentd-hook %s or its socket %s is not a plain absolute path",
				  app->hook_bin, sock);
	snprintf(hook, sizeof(hook), "%s --socket %s", app->hook_bin, sock);
	if ((r = agentuser_fs_enter(&app->agent, &fs)) < 0)
		return cause_fail(cause, -r, "cannot take the agent user's identity: %s",
				  strerror(-r));
	r = agentlaunch_prepare(a, s, home, hook, app->cfg->terminal_permission_wait, cause);
	agentuser_fs_leave(&fs);
	if (r == 0 && (r = agentlaunch_hook_env(a, hook, env)) < 0)
		cause_set(cause, "the agent's variables are too many or too long: %s",
			  strerror(-r));
	return r;
}

/* The pane's command around argv: agentd-cage when sessions are caged, else setpriv (or argv). */
static int create_pane_command(const struct app *app, const struct session *s,
			       enum session_mode mode, char *const *argv, struct cagecmd *cage,
			       char **cmd, size_t max, struct cause *cause)
{
	char why[128];
	int r;

	if (cagecmd_enabled(app, why, sizeof(why)))
		return cagecmd_build(app, s, mode, argv, cage, cmd, max, cause);
	if ((r = agentuser_command(&app->agent, argv, cmd, max)) < 0)
		cause_set(cause, "cannot build the claude command line: %s", strerror(-r));
	return r;
}

/*
 * Starts s's pane: claude (its argv built here), or setup (the setup command's argv) when it is
 * not NULL; in a new tmux session, or with respawn in the one the setup command left. Returns 0
 * or -errno with cause.
 */
int create_pane_start(const struct app *app, const struct session *s, char *const *setup,
		      bool respawn, struct cause *cause)
{
	char *cmd[CLAUDE_ARGV_MAX + CAGECMD_PREFIX + 1];
	struct cagecmd *cage = NULL;
	char settings[CONFIG_PATH_MAX];
	struct claude_env *env = NULL;
	struct claude_argv *cargv = NULL;
	struct tmux_meta *meta = NULL;
	struct session *copy = NULL;
	struct create_conversation conv = {{0}, NULL, {0}, 0};
	struct tmux_new req;
	struct agent agent;
	int r;

	if ((r = create_find_agent(app, s, &agent, cause)) < 0 ||
	    (r = create_check_programs(app, &agent, s->mode, cause)) < 0)
		return r;
	cargv = malloc(sizeof(*cargv));
	meta = calloc(1, sizeof(*meta));
	env = malloc(sizeof(*env));
	copy = malloc(sizeof(*copy));
	cage = malloc(sizeof(*cage));
	if (cargv == NULL || meta == NULL || env == NULL || copy == NULL || cage == NULL) {
		r = cause_fail(cause, ENOMEM, "out of memory");
		goto out;
	}
	if (s->mode == SESSION_TERMINAL && agent.kind == AGENT_CLAUDE &&
	    (r = create_settings(app, settings, sizeof(settings), cause)) < 0)
		goto out;
	/* A session its agent ran with before (started over after it was lost or failed, or
	 * brought back after a reboot) continues its conversation: --resume (or the agent's resume
	 * words), and no bootstrap prompt, when the agent has it (claude refuses --session-id once
	 * its transcript exists). */
	*copy = *s;
	/* The session's uid is its again at every launch: after a reboot emptied the registry. */
	if (copy->uid != 0 && (r = cagecmd_uid_take(app, copy, cause)) < 0)
		goto out;
	copy->launched = s->launched && create_has_transcript(app, &agent, s, s->mode, &conv);
	/* Structured: the bootstrap prompt becomes the first user message (agentd-host --prompt).
	 */
	r = s->mode == SESSION_STRUCTURED
		? create_structured_argv(app, &agent, copy, copy->launched ? NULL : s->prompt,
					 &conv, cargv)
		: create_terminal_argv(app, &agent, copy, settings, &conv, cargv);
	if (r < 0) {
		cause_set(cause, "cannot build the %s command line: %s", agent.name, strerror(-r));
		goto out;
	}
	if ((r = create_pane_command(app, s, s->mode, setup != NULL ? setup : cargv->argv, cage,
				     cmd, sizeof(cmd) / sizeof(cmd[0]) - 1, cause)) < 0)
		goto out;
	snprintf(meta->id, sizeof(meta->id), "%s", s->id);
	snprintf(meta->owner, sizeof(meta->owner), "%s", s->owner);
	snprintf(meta->repo, sizeof(meta->repo), "%s", s->name);
	snprintf(meta->issue, sizeof(meta->issue), "%ld", s->issue);
	snprintf(meta->mode, sizeof(meta->mode), "%s", session_mode_name(s->mode));
	snprintf(meta->agent_session, sizeof(meta->agent_session), "%s", s->agent_session_id);
	isotime_format(s->created_at, meta->created, sizeof(meta->created));
	snprintf(meta->prompt, sizeof(meta->prompt), "%s", s->prompt);
	if ((r = create_agent_env(app, s, env, cause)) < 0 ||
	    (r = create_prepare_agent(app, &agent, s, s->mode, env, cause)) < 0)
		goto out;
	req = (struct tmux_new){s->tmux_name, s->worktree, env->words, cmd, meta};
	/* new-session starts the server (with our -f config) when none runs, unless it is another
	 * unit's: then tmux -N refuses, and this check says why in words. */
	if (app->tmux.no_start && tmux_server_running(&app->tmux) != 1) {
		r = cause_fail(cause, ENOTCONN,
			       "the tmux server does not run (agentd-tmux.service starts it)");
		goto out;
	}
	/* Its share of the machine first: the pane joins the cgroup as it starts. */
	if ((r = sessioncg_create(app, s, cause)) < 0)
		goto out;
	r = respawn ? tmux_respawn(&app->tmux, s->tmux_name, s->id, env->words, cmd, cause)
		    : tmux_new_session(&app->tmux, &req, cause);
	if (r == -EEXIST)
		cause_set(cause, "a tmux session named %s already exists", s->tmux_name);
	if (r == 0 && copy->launched && setup == NULL)
		log_info("session %s: %s started in %s mode (resumed)", s->id, agent.name,
			 session_mode_name(s->mode));
out:
	free(cage);
	free(copy);
	free(cargv);
	free(meta);
	free(env);
	return r;
}

int create_tmux_session(const struct app *app, const struct session *s, struct cause *cause)
{
	return create_pane_start(app, s, NULL, false, cause);
}

/* Waits for pid to exit; past the deadline its process group is killed. */
static void create_reap_old(pid_t pid)
{
	struct timespec pause = {0, LAUNCH_REAP_POLL_MS * 1000000L};

	for (int waited = 0; waited < LAUNCH_REAP_WAIT_MS; waited += LAUNCH_REAP_POLL_MS) {
		if (kill(pid, 0) < 0 && errno == ESRCH)
			return;
		nanosleep(&pause, NULL);
	}
	log_warn("pane process %d outlived respawn-pane; killing its process group", (int)pid);
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
}

int create_respawn(const struct app *app, struct session *s, enum session_mode mode,
		   struct cause *cause)
{
	char *cmd[CLAUDE_ARGV_MAX + CAGECMD_PREFIX + 1];
	char settings[CONFIG_PATH_MAX];
	struct claude_argv *argv = malloc(sizeof(*argv));
	struct claude_env *env = malloc(sizeof(*env));
	struct session *copy = malloc(sizeof(*copy));
	struct cagecmd *cage = malloc(sizeof(*cage));
	struct create_conversation conv = {{0}, NULL, {0}, 0};
	struct agent agent;
	pid_t old = 0;
	int r;

	if (argv == NULL || env == NULL || copy == NULL || cage == NULL) {
		r = cause_fail(cause, ENOMEM, "out of memory");
		goto out;
	}
	/* Checked before anything is killed: a missing program would only give a dead pane. */
	if ((r = create_find_agent(app, s, &agent, cause)) < 0 ||
	    (r = create_check_programs(app, &agent, mode, cause)) < 0)
		goto out;
	if (mode == SESSION_TERMINAL && agent.kind == AGENT_CLAUDE &&
	    (r = create_settings(app, settings, sizeof(settings), cause)) < 0)
		goto out;
	*copy = *s;
	copy->mode = mode;
	copy->launched = create_has_transcript(app, &agent, s, mode, &conv);
	r = mode == SESSION_STRUCTURED
		? create_structured_argv(app, &agent, copy, NULL, &conv, argv)
		: create_terminal_argv(app, &agent, copy, settings, &conv, argv);
	if (r < 0) {
		cause_set(cause, "cannot build the %s command line: %s", agent.name, strerror(-r));
		goto out;
	}
	if ((r = create_pane_command(app, copy, mode, argv->argv, cage, cmd,
				     sizeof(cmd) / sizeof(cmd[0]) - 1, cause)) < 0)
		goto out;
	/* Today's values of the agent's variables (the session keeps those of its creation too). */
	if ((r = create_agent_env(app, s, env, cause)) < 0 ||
	    (r = create_prepare_agent(app, &agent, copy, mode, env, cause)) < 0)
		goto out;
	/* A live agent is waited for after respawn-pane -k, so two never run for one session; a
	 * dead pane's process is gone already. Each call checks that the tmux session is this
	 * session's (-EPERM otherwise). */
	if (s->state != SESSION_EXITED) {
		old = tmux_pane_pid(&app->tmux, s->tmux_name, s->id, cause);
		if (old == -EPERM) {
			r = old;
			goto out;
		}
	}
	if ((r = sessioncg_create(app, s, cause)) < 0 ||
	    (r = tmux_respawn(&app->tmux, s->tmux_name, s->id, env->words, cmd, cause)) < 0)
		goto out;
	if (old > 0)
		create_reap_old(old);
	if (mode != s->mode)
		tmux_set_option(&app->tmux, s->tmux_name, s->id, "@agentd_mode",
				session_mode_name(mode), NULL);
	tmux_signal(&app->tmux); /* the liveness watcher watches the new process */
	s->mode = mode;
	s->state = s->clients > 0 ? SESSION_ATTACHED : SESSION_RUNNING;
	session_launch(s);
	s->error[0] = '\0';
	s->last_activity = (int64_t)time(NULL);
	log_info("session %s: %s started in %s mode (%s)", s->id, agent.name,
		 session_mode_name(mode), copy->launched ? "resumed" : "new conversation");
out:
	free(cage);
	free(copy);
	free(env);
	free(argv);
	return r;
}
