/*
 * agentd-telegram's settings, from the one agentd configuration (core/config.h: defaults, the
 * AGENTD_CONFIG file, the AGENTD_* environment), checked once at start:
 *   AGENTD_TELEGRAM_TOKEN or AGENTD_TELEGRAM_TOKEN_FILE   the bot's token (BotFather's)
 *   AGENTD_TELEGRAM_USERS    the Telegram user ids served (blank- or comma-separated; empty:
 *                            nobody yet, the bot only tells whoever writes their id)
 *   AGENTD_TELEGRAM_API      the Bot API (default https://api.telegram.org; tests: a fake)
 *   AGENTD_TELEGRAM_STATE    the state file (default $STATE_DIRECTORY/telegram.json under
 *                            systemd, else <AGENTD_STATE_DIR>/telegram.json)
 *   AGENTD_URL               agent-daemon (default http://<AGENTD_LISTEN>)
 *   AGENTD_TOKEN             its token for agent-daemon's door (agentd-api token add telegram)
 *   AGENTD_TELEGRAM_WEB_URL  the web UI as a phone reaches it, for links (default AGENTD_URL)
 */
#ifndef AGENTD_TG_SETTINGS_H
#define AGENTD_TG_SETTINGS_H

#include "cause.h"
#include "config.h"

#include <stdbool.h>
#include <stdint.h>

#define SETTINGS_USERS_MAX      64
#define SETTINGS_TOKEN_MAX      256 /* BotFather's tokens are about 46 characters */
#define SETTINGS_TOKEN_FILE_MAX 4096
#define SETTINGS_URL_MAX        1024
#define SETTINGS_PATH_MAX       1024

struct settings {
	char token[SETTINGS_TOKEN_MAX + 1];
	char api[SETTINGS_URL_MAX];
	int64_t users[SETTINGS_USERS_MAX];
	unsigned nusers;
	char state_path[SETTINGS_PATH_MAX];
	char url[SETTINGS_URL_MAX];
	char agentd_token[CONFIG_VALUE_MAX];
	char web_url[SETTINGS_URL_MAX];
};

/*
 * Fills s from cfg; state_directory is $STATE_DIRECTORY (NULL when unset; the first of several
 * colon-separated paths is used). Returns 0, or -EINVAL / -ENOENT / -errno with cause naming the
 * setting.
 */
int settings_load(struct settings *s, const struct config *cfg, const char *state_directory,
		  struct cause *cause);

/* Parses a user list ("1, 2 3"): positive decimal ids. Returns 0 or -EINVAL (cause says why). */
int settings_parse_users(const char *text, int64_t *out, unsigned max, unsigned *n,
			 struct cause *cause);

/* Whether user is one of s's users. */
bool settings_user_allowed(const struct settings *s, int64_t user);

/* Whether a bot token has the form BotFather gives ("<digits>:<letters, digits, _ and ->"), so
 * it can be put in a URL as it is. */
bool settings_token_valid(const char *token);

#endif
