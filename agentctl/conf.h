/*
 * agentctl's settings: where agent-daemon is (AGENTD_URL) and the token it presents
 * (AGENTD_TOKEN). The environment wins; what it does not set comes from the settings file,
 * $XDG_CONFIG_HOME/agentd/agentctl.conf (default ~/.config/agentd/agentctl.conf), KEY=value
 * lines with '#' comments. The file holds a credential: it is refused when it is not the user's
 * own or when anyone else may read or write it (mode 0600, as ssh wants its keys).
 */
#ifndef AGENTD_CTL_CONF_H
#define AGENTD_CTL_CONF_H

#include "cause.h"

#include <stdbool.h>
#include <stddef.h>

#define CTL_CONF_URL_DEFAULT "http://127.0.0.1:8080"
#define CTL_CONF_URL_MAX     1024        /* a base URL: scheme, host, port, a path prefix */
#define CTL_CONF_TOKEN_MAX   512         /* agentd-api's tokens are 43 characters */
#define CTL_CONF_FILE_MAX    (16 * 1024) /* two settings and comments */
#define CTL_CONF_PATH_MAX    4096

struct ctl_conf {
	char url[CTL_CONF_URL_MAX + 1];     /* without a trailing '/' */
	char token[CTL_CONF_TOKEN_MAX + 1]; /* "" = none */
	char path[CTL_CONF_PATH_MAX];       /* the settings file looked at ("" = none) */
};

/* Where the settings file is for these XDG_CONFIG_HOME and HOME (either NULL or ""). Writes ""
 * when neither is set. */
void ctl_conf_path(char *out, size_t size, const char *xdg_config_home, const char *home);

/*
 * Fills c: env_url and env_token (NULL or "": unset) first, then the file at path (NULL or "":
 * none; a missing file is no error) for what they leave unset, then the default URL. Returns 0, or
 * -EACCES (the file is readable or writable by others, or not the user's: cause says how to
 * fix it), -EINVAL (a malformed line, an unknown key, a URL that is not http:// or https://, a
 * token with a blank), -EFBIG, -ENAMETOOLONG (a value over its limit) or another -errno of
 * reading the file, each with cause set.
 */
int ctl_conf_load(struct ctl_conf *c, const char *path, const char *env_url, const char *env_token,
		  struct cause *cause);

/* Parses the text of a settings file (len bytes), setting only what is unset in c. Returns 0 or
 * -EINVAL / -ENAMETOOLONG with cause set (naming the line). */
int ctl_conf_parse(struct ctl_conf *c, const char *text, size_t len, struct cause *cause);

#endif
