#include "policies.h"

#include "create.h"
#include "log.h"
#include "stop.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static int64_t policies_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void policies_wake(int64_t *wake_ms, int64_t at)
{
	if (*wake_ms == 0 || at < *wake_ms)
		*wake_ms = at;
}

struct policy_defaults policies_defaults(const struct config *cfg)
{
	struct policy_defaults d = {POLICY_RESTART_ON_FAILURE, cfg->max_restarts, 0};

	policy_restart_parse(cfg->restart_policy, &d.restart);
	if (cfg->session_timeout[0] != '\0')
		policy_parse_duration(cfg->session_timeout, &d.timeout);
	return d;
}

void policies_started(struct session *s)
{
	struct session_policy *p = &s->policy;

	p->restarts = 0;
	p->restart_at_ms = 0;
	p->stop_at_ms = 0;
	p->timeout_at = p->timeout != 0 ? (int64_t)time(NULL) + p->timeout : 0;
}

/* s just exited: why, and whether a restart is due (and when). */
static void policies_exited(const struct app *app, struct session *s, int64_t now)
{
	struct policy_defaults def = policies_defaults(app->cfg);
	struct session_policy *p = &s->policy;

	if (p->stop_at_ms != 0) {
		/* The daemon stopped it at its timeout: no restart. */
		p->stop_at_ms = 0;
		s->exit_reason = SESSION_EXIT_TIMEOUT;
		return;
	}
	if (!policy_wants_restart(p, &def, s->exit_status, s->exit_signal[0] != '\0'))
		return;
	if (p->restarts >= (uint32_t)policy_max_restarts(p, &def)) {
		s->exit_reason = SESSION_EXIT_RESTART_LIMIT;
		log_warn("session %s: its agent ended (status %d) after %u restarts; no more "
			 "(maxRestarts)",
			 s->id, s->exit_status, p->restarts);
		return;
	}
	p->restart_at_ms = now + policy_backoff_ms(p->restarts, app->cfg->restart_backoff_ms);
}

/* The restart the policy scheduled, now due. */
static void policies_restart(const struct app *app, struct session *s, int64_t now,
			     int64_t *wake_ms)
{
	struct policy_defaults def = policies_defaults(app->cfg);
	struct session_policy *p = &s->policy;
	struct cause cause = {{0}};

	p->restart_at_ms = 0;
	p->restarts++;
	if (create_respawn(app, s, s->mode, &cause) == 0) {
		log_info("session %s: restarted by its policy (%u of %d)", s->id, p->restarts,
			 policy_max_restarts(p, &def));
		return;
	}
	log_warn("session %s: restart %u failed: %s", s->id, p->restarts, cause.msg);
	if (p->restarts >= (uint32_t)policy_max_restarts(p, &def)) {
		s->exit_reason = SESSION_EXIT_RESTART_LIMIT;
		return;
	}
	p->restart_at_ms = now + policy_backoff_ms(p->restarts, app->cfg->restart_backoff_ms);
	policies_wake(wake_ms, p->restart_at_ms);
}

/* A running session past its timeout: the interrupt, then the kill after the grace. */
static bool policies_timeout(const struct app *app, struct session *s, int64_t now,
			     int64_t *wake_ms)
{
	struct session_policy *p = &s->policy;
	int64_t kill_at = p->stop_at_ms + (int64_t)app->cfg->stop_grace * 1000;
	struct cause cause = {{0}};

	if (p->stop_at_ms == 0 && now < p->timeout_at * 1000) {
		policies_wake(wake_ms, p->timeout_at * 1000);
		return false;
	}
	if (p->stop_at_ms == 0) {
		log_info("session %s: past its timeout of %lld s; stopping it", s->id,
			 (long long)p->timeout);
		if (stop_interrupt(app, s, &cause) < 0)
			log_warn("session %s: cannot interrupt its agent: %s", s->id, cause.msg);
		p->stop_at_ms = now;
		policies_wake(wake_ms, now + (int64_t)app->cfg->stop_grace * 1000);
		return true;
	}
	if (now < kill_at) {
		policies_wake(wake_ms, kill_at);
		return false;
	}
	if (stop_kill(app, s, &cause) < 0)
		log_warn("session %s: cannot kill its agent: %s", s->id, cause.msg);
	return false;
}

bool policies_apply(const struct app *app, struct session *s, const struct session *before,
		    int64_t *wake_ms)
{
	struct session_policy *p = &s->policy;
	int64_t now = policies_now_ms();
	bool changed = false;

	/* Lost (or failed): nothing of its agent is left to restart or stop. */
	if (s->state != SESSION_EXITED && s->state != SESSION_RUNNING &&
	    s->state != SESSION_ATTACHED && (p->restart_at_ms != 0 || p->stop_at_ms != 0)) {
		p->restart_at_ms = 0;
		p->stop_at_ms = 0;
		changed = true;
	}
	if (s->state == SESSION_EXITED && before->state != SESSION_EXITED) {
		policies_exited(app, s, now);
		changed = true;
	}
	if (s->state == SESSION_EXITED && p->restart_at_ms != 0) {
		if (now >= p->restart_at_ms) {
			policies_restart(app, s, now, wake_ms);
			changed = true;
		} else {
			policies_wake(wake_ms, p->restart_at_ms);
		}
	}
	if ((s->state == SESSION_RUNNING || s->state == SESSION_ATTACHED) && p->timeout_at != 0 &&
	    policies_timeout(app, s, now, wake_ms))
		changed = true;
	return changed;
}
