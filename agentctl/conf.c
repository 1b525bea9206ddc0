#include "conf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void ctl_conf_path(char *out, size_t size, const char *xdg_config_home, const char *home)
{
	int n;

	if (xdg_config_home != NULL && *xdg_config_home == '/')
		n = snprintf(out, size, "%s/agentd/agentctl.conf", xdg_config_home);
	else if (home != NULL && *home != '\0')
		n = snprintf(out, size, "%s/.config/agentd/agentctl.conf", home);
	else
		n = snprintf(out, size, "%s", "");
	if (n < 0 || (size_t)n >= size)
		snprintf(out, size, "%s", "");
}

/* Checks and stores one value. */
static int ctl_conf_set(char *dst, size_t max, const char *key, const char *v, size_t n,
			struct cause *cause)
{
	if (n > max)
		return cause_fail(cause, ENAMETOOLONG, "%s is longer than %zu bytes", key, max);
	memcpy(dst, v, n);
	dst[n] = '\0';
	return 0;
}

static bool ctl_blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r';
}

int ctl_conf_parse(struct ctl_conf *c, const char *text, size_t len, struct cause *cause)
{
	const char *p = text, *end = text + len;
	unsigned line = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl != NULL ? nl : end, *eq, *k, *ke, *v, *ve;
		int r = 0;

		line++;
		k = p;
		p = nl != NULL ? nl + 1 : end;
		while (k < le && ctl_blank(*k))
			k++;
		if (k == le || *k == '#')
			continue;
		eq = memchr(k, '=', (size_t)(le - k));
		if (eq == NULL)
			return cause_fail(cause, EINVAL, "line %u: not KEY=value", line);
		ke = eq;
		while (ke > k && ctl_blank(ke[-1]))
			ke--;
		v = eq + 1;
		ve = le;
		while (v < ve && ctl_blank(*v))
			v++;
		while (ve > v && ctl_blank(ve[-1]))
			ve--;
		if (memchr(v, '\0', (size_t)(ve - v)) != NULL)
			return cause_fail(cause, EINVAL, "line %u: a NUL byte", line);
		/* A value may be quoted, as in a shell file that sets the same variables. */
		if (ve - v >= 2 && (*v == '"' || *v == '\'') && ve[-1] == *v) {
			v++;
			ve--;
		}
		if ((size_t)(ke - k) == strlen("AGENTD_URL") && memcmp(k, "AGENTD_URL", 10) == 0) {
			if (c->url[0] == '\0')
				r = ctl_conf_set(c->url, CTL_CONF_URL_MAX, "AGENTD_URL", v,
						 (size_t)(ve - v), cause);
		} else if ((size_t)(ke - k) == strlen("AGENTD_TOKEN") &&
			   memcmp(k, "AGENTD_TOKEN", 12) == 0) {
			if (c->token[0] == '\0')
				r = ctl_conf_set(c->token, CTL_CONF_TOKEN_MAX, "AGENTD_TOKEN", v,
						 (size_t)(ve - v), cause);
		} else {
			return cause_fail(cause, EINVAL,
					  "line %u: unknown key '%.*s' (AGENTD_URL, AGENTD_TOKEN)",
					  line, (int)(ke - k > 64 ? 64 : ke - k), k);
		}
		if (r < 0) {
			struct cause why = *cause;

			return cause_fail(cause, -r, "line %u: %s", line, why.msg);
		}
	}
	return 0;
}

/* Reads the settings file, if there is one and it is safe to read. */
static int ctl_conf_read(struct ctl_conf *c, const char *path, struct cause *cause)
{
	struct cause why = {{0}};
	char *text = NULL;
	struct stat st;
	ssize_t n;
	size_t len = 0;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return cause_fail(cause, errno, "%s: %s", path, strerror(errno));
	}
	if (fstat(fd, &st) < 0) {
		r = cause_fail(cause, errno, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = cause_fail(cause, EINVAL, "%s is not a file", path);
		goto out;
	}
	if (st.st_uid != getuid()) {
		r = cause_fail(cause, EACCES, "%s is not yours: it holds your token", path);
		goto out;
	}
	if ((st.st_mode & 077) != 0) {
		r = cause_fail(cause, EACCES,
			       "%s may be read or written by others (mode %03o): it holds your "
			       "token; chmod 600 %s",
			       path, (unsigned)(st.st_mode & 0777), path);
		goto out;
	}
	if (st.st_size > CTL_CONF_FILE_MAX) {
		r = cause_fail(cause, EFBIG, "%s is larger than %d bytes", path, CTL_CONF_FILE_MAX);
		goto out;
	}
	text = malloc(CTL_CONF_FILE_MAX + 1);
	if (text == NULL) {
		r = cause_fail(cause, ENOMEM, "out of memory");
		goto out;
	}
	while ((n = read(fd, text + len, CTL_CONF_FILE_MAX + 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = cause_fail(cause, errno, "%s: %s", path, strerror(errno));
			goto out;
		}
		len += (size_t)n;
		if (len > CTL_CONF_FILE_MAX) {
			r = cause_fail(cause, EFBIG, "%s is larger than %d bytes", path,
				       CTL_CONF_FILE_MAX);
			goto out;
		}
	}
	r = ctl_conf_parse(c, text, len, &why);
	if (r < 0)
		cause_set(cause, "%s: %s", path, why.msg);
out:
	if (text != NULL) {
		memset(text, 0, CTL_CONF_FILE_MAX + 1);
		free(text);
	}
	close(fd);
	return r;
}

int ctl_conf_load(struct ctl_conf *c, const char *path, const char *env_url, const char *env_token,
		  struct cause *cause)
{
	size_t n;
	int r;

	memset(c, 0, sizeof(*c));
	if (env_url != NULL && *env_url != '\0' &&
	    (r = ctl_conf_set(c->url, CTL_CONF_URL_MAX, "AGENTD_URL", env_url, strlen(env_url),
			      cause)) < 0)
		return r;
	if (env_token != NULL && *env_token != '\0' &&
	    (r = ctl_conf_set(c->token, CTL_CONF_TOKEN_MAX, "AGENTD_TOKEN", env_token,
			      strlen(env_token), cause)) < 0)
		return r;
	if (path != NULL && *path != '\0') {
		snprintf(c->path, sizeof(c->path), "%s", path);
		if ((r = ctl_conf_read(c, path, cause)) < 0)
			return r;
	}
	if (c->url[0] == '\0')
		snprintf(c->url, sizeof(c->url), "%s", CTL_CONF_URL_DEFAULT);
	if (strncmp(c->url, "http://", 7) != 0 && strncmp(c->url, "https://", 8) != 0)
		return cause_fail(cause, EINVAL,
				  "AGENTD_URL '%s' is not an http:// or https:// URL", c->url);
	for (const char *p = c->url; *p != '\0'; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return cause_fail(cause, EINVAL, "AGENTD_URL contains a blank");
	for (const char *p = c->token; *p != '\0'; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return cause_fail(cause, EINVAL, "AGENTD_TOKEN contains a blank");
	n = strlen(c->url);
	while (n > 0 && c->url[n - 1] == '/')
		c->url[--n] = '\0';
	return 0;
}
