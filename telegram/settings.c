#include "settings.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool settings_token_valid(const char *token)
{
	const char *colon = strchr(token, ':');
	size_t n = strlen(token);

	if (colon == NULL || colon == token || colon[1] == '\0' || n > SETTINGS_TOKEN_MAX)
		return false;
	for (const char *p = token; p < colon; p++)
		if (*p < '0' || *p > '9')
			return false;
	for (const char *p = colon + 1; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
			return false;
	return true;
}

int settings_parse_users(const char *text, int64_t *out, unsigned max, unsigned *n,
			 struct cause *cause)
{
	const char *p = text;

	*n = 0;
	while (*p != '\0') {
		char *end;
		long long v;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '\0')
			break;
		if (*p < '0' || *p > '9')
			return cause_fail(cause, EINVAL,
					  "AGENTD_TELEGRAM_USERS: '%.32s' is not a user id", p);
		errno = 0;
		v = strtoll(p, &end, 10);
		if (errno != 0 || v <= 0 ||
		    (*end != '\0' && *end != ' ' && *end != '\t' && *end != ','))
			return cause_fail(cause, EINVAL,
					  "AGENTD_TELEGRAM_USERS: '%.32s' is not a user id", p);
		if (*n == max)
			return cause_fail(cause, EINVAL,
					  "AGENTD_TELEGRAM_USERS: more than %u users", max);
		out[(*n)++] = v;
		p = end;
	}
	return 0;
}

bool settings_user_allowed(const struct settings *s, int64_t user)
{
	for (unsigned i = 0; i < s->nusers; i++)
		if (s->users[i] == user)
			return true;
	return false;
}

static int settings_read_token(const char *path, char *out, size_t outlen, struct cause *cause)
{
	char text[SETTINGS_TOKEN_FILE_MAX + 1];
	struct stat sb;
	ssize_t n;
	size_t len = 0, start = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return cause_fail(cause, errno, "AGENTD_TELEGRAM_TOKEN_FILE: cannot open %s: %s",
				  path, strerror(errno));
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_size > SETTINGS_TOKEN_FILE_MAX) {
		close(fd);
		return cause_fail(cause, EINVAL,
				  "AGENTD_TELEGRAM_TOKEN_FILE: %s is not a small regular file",
				  path);
	}
	while ((n = read(fd, text + len, SETTINGS_TOKEN_FILE_MAX - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (n < 0)
		return cause_fail(cause, EIO, "AGENTD_TELEGRAM_TOKEN_FILE: cannot read %s", path);
	text[len] = '\0';
	/* The token alone, without the blanks and newline an editor adds. */
	while (start < len && strchr(" \t\r\n", text[start]) != NULL)
		start++;
	while (len > start && strchr(" \t\r\n", text[len - 1]) != NULL)
		text[--len] = '\0';
	if (len - start >= outlen) {
		memset(text, 0, sizeof(text));
		return cause_fail(cause, EINVAL,
				  "AGENTD_TELEGRAM_TOKEN_FILE: the token is too long");
	}
	memcpy(out, text + start, len - start + 1);
	memset(text, 0, sizeof(text));
	return 0;
}

static bool settings_http_url(const char *u)
{
	return (strncmp(u, "http://", 7) == 0 && u[7] != '\0' && u[7] != '/') ||
	       (strncmp(u, "https://", 8) == 0 && u[8] != '\0' && u[8] != '/');
}

/* Copies url without trailing slashes. */
static int settings_url(char *out, size_t outlen, const char *url, const char *key,
			struct cause *cause)
{
	size_t n = strlen(url);

	if (!settings_http_url(url) || strpbrk(url, " \t\r\n\"'\\") != NULL)
		return cause_fail(cause, EINVAL, "%s: '%.64s' is not an http:// or https:// URL",
				  key, url);
	while (n > 0 && url[n - 1] == '/')
		n--;
	if (n >= outlen)
		return cause_fail(cause, ENAMETOOLONG, "%s is too long", key);
	memcpy(out, url, n);
	out[n] = '\0';
	return 0;
}

/* http://<AGENTD_LISTEN>, with a wildcard address replaced by loopback. */
static int settings_default_url(char *out, size_t outlen, const char *listen, struct cause *cause)
{
	const char *colon = strrchr(listen, ':');
	char host[256];
	size_t hlen;
	int n;

	if (colon == NULL) {
		n = snprintf(out, outlen, "http://127.0.0.1:%s", listen);
		return n < 0 || (size_t)n >= outlen
			   ? cause_fail(cause, ENAMETOOLONG, "AGENTD_LISTEN")
			   : 0;
	}
	hlen = (size_t)(colon - listen);
	if (hlen >= sizeof(host))
		return cause_fail(cause, EINVAL, "AGENTD_LISTEN is too long");
	memcpy(host, listen, hlen);
	host[hlen] = '\0';
	if (hlen == 0 || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "*") == 0)
		snprintf(host, sizeof(host), "127.0.0.1");
	else if (strcmp(host, "[::]") == 0)
		snprintf(host, sizeof(host), "[::1]");
	n = snprintf(out, outlen, "http://%s%s", host, colon);
	return n < 0 || (size_t)n >= outlen ? cause_fail(cause, ENAMETOOLONG, "AGENTD_LISTEN") : 0;
}

int settings_load(struct settings *s, const struct config *cfg, const char *state_directory,
		  struct cause *cause)
{
	int r, n;

	memset(s, 0, sizeof(*s));
	if (cfg->telegram_token[0] != '\0') {
		if (strlen(cfg->telegram_token) >= sizeof(s->token))
			return cause_fail(cause, EINVAL, "AGENTD_TELEGRAM_TOKEN is too long");
		memcpy(s->token, cfg->telegram_token, strlen(cfg->telegram_token) + 1);
	} else if (cfg->telegram_token_file[0] != '\0') {
		r = settings_read_token(cfg->telegram_token_file, s->token, sizeof(s->token),
					cause);
		if (r < 0)
			return r;
	} else {
		return cause_fail(cause, EINVAL,
				  "no bot token: set AGENTD_TELEGRAM_TOKEN or "
				  "AGENTD_TELEGRAM_TOKEN_FILE (BotFather gives it)");
	}
	if (!settings_token_valid(s->token))
		return cause_fail(cause, EINVAL,
				  "the bot token is not of the form BotFather gives "
				  "(<digits>:<letters, digits, _ and ->)");
	r = settings_url(s->api, sizeof(s->api), cfg->telegram_api, "AGENTD_TELEGRAM_API", cause);
	if (r < 0)
		return r;
	/* An empty list is allowed: the first run (README.md), where the bot only tells whoever
	 * writes their id. */
	r = settings_parse_users(cfg->telegram_users, s->users, SETTINGS_USERS_MAX, &s->nusers,
				 cause);
	if (r < 0)
		return r;
	if (cfg->url[0] != '\0')
		r = settings_url(s->url, sizeof(s->url), cfg->url, "AGENTD_URL", cause);
	else
		r = settings_default_url(s->url, sizeof(s->url), cfg->listen, cause);
	if (r < 0)
		return r;
	if (cfg->telegram_web_url[0] != '\0')
		r = settings_url(s->web_url, sizeof(s->web_url), cfg->telegram_web_url,
				 "AGENTD_TELEGRAM_WEB_URL", cause);
	else
		snprintf(s->web_url, sizeof(s->web_url), "%s", s->url);
	if (r < 0)
		return r;
	if (strpbrk(cfg->token, " \t\r\n") != NULL)
		return cause_fail(cause, EINVAL, "AGENTD_TOKEN contains a blank");
	memcpy(s->agentd_token, cfg->token, strlen(cfg->token) + 1);
	if (cfg->telegram_state[0] != '\0') {
		n = snprintf(s->state_path, sizeof(s->state_path), "%s", cfg->telegram_state);
	} else if (state_directory != NULL && *state_directory != '\0') {
		size_t len = strcspn(state_directory, ":");

		n = snprintf(s->state_path, sizeof(s->state_path), "%.*s/telegram.json", (int)len,
			     state_directory);
	} else {
		n = snprintf(s->state_path, sizeof(s->state_path), "%s/telegram.json",
			     cfg->state_dir);
	}
	if (n < 0 || (size_t)n >= sizeof(s->state_path))
		return cause_fail(cause, ENAMETOOLONG, "the state file's path is too long");
	if (s->state_path[0] != '/')
		return cause_fail(cause, EINVAL, "AGENTD_TELEGRAM_STATE must be an absolute path");
	return 0;
}
