#include "nginxconf.h"

#include "fsutil.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Entries of a list key are separated by blanks or commas. */
#define NGINXCONF_SEP " \t,"
/* What nginx.conf can carry unquoted, without '$'. */
#define NGINXCONF_PATH_CHARS "._/+@~-"
#define NGINXCONF_PATH_RULE  "(allowed: A-Z a-z 0-9 . _ / + @ ~ -)"

static bool nginxconf_is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool nginxconf_is_digits(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* An absolute path nginx.conf can carry: no blank, quote, '$', ';' or brace. */
static bool nginxconf_path_ok(const char *p)
{
	if (p[0] != '/')
		return false;
	for (; *p != '\0'; p++)
		if (!nginxconf_is_alnum(*p) && strchr(NGINXCONF_PATH_CHARS, *p) == NULL)
			return false;
	return true;
}

/* 1 to 5 digits naming a port 1..65535 (leading zeros allowed, as the shell's 10# read them). */
static int nginxconf_port(const char *s, size_t n)
{
	long v = 0;

	if (n > 5 || !nginxconf_is_digits(s, n))
		return -1;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (s[i] - '0');
	return v >= 1 && v <= 65535 ? (int)v : -1;
}

static void nginxconf_lower(char *s)
{
	for (; *s != '\0'; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
}

/* A DNS name or IPv4 address: labels of [a-z0-9-], not starting or ending with '-'. */
static bool nginxconf_dns_name(const char *s, size_t n)
{
	size_t start = 0;

	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '.') {
			if (!nginxconf_is_alnum(s[i]) && s[i] != '-')
				return false;
			continue;
		}
		if (i == start || s[start] == '-' || s[i - 1] == '-')
			return false;
		start = i + 1;
	}
	return true;
}

/* "[...]" holding only [0-9a-f:.] (an IPv6 address, lower-case), at least one of them. */
static bool nginxconf_bracketed(const char *s, size_t n)
{
	if (n < 3 || s[0] != '[' || s[n - 1] != ']')
		return false;
	for (size_t i = 1; i + 1 < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') || s[i] == ':' ||
		      s[i] == '.'))
			return false;
	return true;
}

int nginxconf_host_key(const char *entry, char *out, size_t outlen, struct cause *cause)
{
	char h[NGINXCONF_KEY_MAX];
	const char *colon;
	size_t name_len;
	int port = 0, n;

	if (strlen(entry) >= sizeof(h))
		return cause_fail(cause, EINVAL, "AGENTD_ALLOWED_HOSTS: '%.64s...' is too long",
				  entry);
	snprintf(h, sizeof(h), "%s", entry);
	/* Host names are case-insensitive; nginx compares the map's keys likewise. */
	nginxconf_lower(h);
	if (h[0] == '[') {
		const char *close = strchr(h, ']');

		name_len = close == NULL ? strlen(h) : (size_t)(close - h) + 1;
	} else {
		name_len = strcspn(h, ":");
	}
	colon = h[name_len] == ':' ? h + name_len : NULL;
	if (!(h[0] == '[' ? nginxconf_bracketed(h, name_len) : nginxconf_dns_name(h, name_len)) ||
	    (h[name_len] != '\0' && colon == NULL) ||
	    (colon != NULL &&
	     (strlen(colon + 1) > 5 || !nginxconf_is_digits(colon + 1, strlen(colon + 1)))))
		return cause_fail(
		    cause, EINVAL,
		    "AGENTD_ALLOWED_HOSTS: '%s' is not host[:port] (a DNS name like "
		    "machine.tailnet.ts.net, an IPv4 address or [IPv6], no scheme, no "
		    "path)",
		    h);
	if (name_len > NGINXCONF_HOST_NAME_MAX)
		return cause_fail(cause, EINVAL,
				  "AGENTD_ALLOWED_HOSTS: '%.*s' is longer than %d characters",
				  (int)name_len, h, NGINXCONF_HOST_NAME_MAX);
	if (colon != NULL && (port = nginxconf_port(colon + 1, strlen(colon + 1))) < 0)
		return cause_fail(cause, EINVAL, "AGENTD_ALLOWED_HOSTS: '%s': bad port", h);
	if (colon != NULL) {
		n = snprintf(out, outlen, "%.*s:%d", (int)name_len, h, port);
	} else {
		/* A name alone with any port or none: the name is what DNS rebinding forges, and
		 * tailscale serve forwards host or host:8443 as the browser sent it. */
		char re[2 * NGINXCONF_KEY_MAX];
		size_t j = 0;

		for (size_t i = 0; i < name_len; i++) {
			if (h[i] == '.' || h[i] == '[' || h[i] == ']')
				re[j++] = '\\';
			re[j++] = h[i];
		}
		re[j] = '\0';
		n = snprintf(out, outlen, "~*^%s(:[0-9]{1,5})?$", re);
	}
	if (n < 0 || (size_t)n >= outlen)
		return cause_fail(cause, ENAMETOOLONG, "AGENTD_ALLOWED_HOSTS: '%s' is too long", h);
	return 0;
}

int nginxconf_origin(const char *entry, char *out, size_t outlen, struct cause *cause)
{
	const char *p;
	size_t host;

	if (strncmp(entry, "http://", 7) == 0)
		p = entry + 7;
	else if (strncmp(entry, "https://", 8) == 0)
		p = entry + 8;
	else
		goto bad;
	host = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-");
	if (host == 0 ||
	    (p[host] != '\0' &&
	     (p[host] != ':' || !nginxconf_is_digits(p + host + 1, strlen(p + host + 1)))))
		goto bad;
	if (strlen(entry) >= outlen)
		goto bad;
	/* Browsers send origins in lower case. */
	snprintf(out, outlen, "%s", entry);
	nginxconf_lower(out);
	return 0;
bad:
	return cause_fail(
	    cause, EINVAL,
	    "AGENTD_ALLOWED_ORIGINS: '%s' is not an origin like "
	    "https://host.example.ts.net:8443 (scheme://host[:port], no path, no trailing "
	    "slash)",
	    entry);
}

int nginxconf_abspath(const char *path, char *out, size_t outlen)
{
	char norm[PATH_MAX], cwd[PATH_MAX], res[PATH_MAX];
	const char *p;
	size_t len = 0, cut;
	int n;

	if (path[0] != '/') {
		if (getcwd(cwd, sizeof(cwd)) == NULL)
			return -errno;
		if (snprintf(norm, sizeof(norm), "%s/%s", cwd, path) >= (int)sizeof(norm))
			return -ENAMETOOLONG;
		snprintf(cwd, sizeof(cwd), "%s", norm);
		p = cwd;
	} else {
		p = path;
	}
	/* "." and ".." and repeated slashes, by the text. */
	norm[0] = '\0';
	while (*p != '\0') {
		size_t c;

		p += strspn(p, "/");
		c = strcspn(p, "/");
		if (c == 0 || (c == 1 && p[0] == '.')) {
			p += c;
			continue;
		}
		if (c == 2 && p[0] == '.' && p[1] == '.') {
			while (len > 0 && norm[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
			norm[len] = '\0';
			p += c;
			continue;
		}
		if (len + 1 + c >= sizeof(norm))
			return -ENAMETOOLONG;
		norm[len++] = '/';
		memcpy(norm + len, p, c);
		len += c;
		norm[len] = '\0';
		p += c;
	}
	if (len == 0)
		snprintf(norm, sizeof(norm), "/");
	/* The longest part that exists, with its symlinks resolved; the rest as written. */
	for (cut = strlen(norm); cut > 0;) {
		char head[PATH_MAX];

		snprintf(head, sizeof(head), "%.*s", (int)cut, norm);
		if (realpath(head, res) != NULL) {
			n = snprintf(out, outlen, "%s%s", strcmp(res, "/") == 0 ? "" : res,
				     norm + cut);
			if (n == 0)
				n = snprintf(out, outlen, "/");
			return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
		}
		while (cut > 0 && norm[cut - 1] != '/')
			cut--;
		if (cut > 0)
			cut--;
	}
	n = snprintf(out, outlen, "%s", norm);
	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

/* True when list (blank- or comma-separated) holds an entry. */
static bool nginxconf_list_set(const char *list)
{
	return list[strspn(list, NGINXCONF_SEP)] != '\0';
}

/* AGENTD_LISTEN: [host:]port, host a name or address or [IPv6]; sets listen_host and port. */
static int nginxconf_listen(struct nginxconf *nc, const char *listen, struct cause *cause)
{
	const char *colon = strrchr(listen, ':');
	const char *port = colon != NULL ? colon + 1 : listen;
	size_t host_len = colon != NULL ? (size_t)(colon - listen) : 0;
	bool host_ok;

	if (colon == NULL)
		host_ok = true;
	else if (host_len > 0 && listen[0] == '[')
		host_ok = listen[host_len - 1] == ']' && host_len >= 3 &&
			  strspn(listen + 1, "0123456789abcdefABCDEF:.") == host_len - 2;
	else
		host_ok = host_len > 0 &&
			  strspn(listen, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
					 "0123456789.-") == host_len;
	if (!host_ok || strlen(port) > 5 || !nginxconf_is_digits(port, strlen(port)) ||
	    host_len >= sizeof(nc->listen_host) || strlen(listen) >= sizeof(nc->listen))
		return cause_fail(cause, EINVAL, "AGENTD_LISTEN='%s' is not [host:]port", listen);
	if ((nc->port = nginxconf_port(port, strlen(port))) < 0)
		return cause_fail(cause, EINVAL, "AGENTD_LISTEN='%s': bad port", listen);
	snprintf(nc->listen, sizeof(nc->listen), "%s", listen);
	snprintf(nc->listen_host, sizeof(nc->listen_host), "%.*s", (int)host_len, listen);
	/* A wildcard is reached on loopback. */
	if (nc->listen_host[0] == '\0' || strcmp(nc->listen_host, "0.0.0.0") == 0)
		snprintf(nc->listen_host, sizeof(nc->listen_host), "127.0.0.1");
	else if (strcmp(nc->listen_host, "[::]") == 0)
		snprintf(nc->listen_host, sizeof(nc->listen_host), "[::1]");
	nginxconf_lower(nc->listen_host);
	return 0;
}

/* Calls fn on every entry of list; stops at the first failure. */
static int nginxconf_each(const char *list, int (*fn)(const char *entry, void *arg), void *arg)
{
	char *copy = strdup(list), *save = NULL;
	int r = 0;

	if (copy == NULL)
		return -ENOMEM;
	for (char *e = strtok_r(copy, NGINXCONF_SEP, &save); e != NULL && r == 0;
	     e = strtok_r(NULL, NGINXCONF_SEP, &save))
		r = fn(e, arg);
	free(copy);
	return r;
}

static int nginxconf_check_host(const char *entry, void *arg)
{
	char key[NGINXCONF_KEY_MAX * 2];

	return nginxconf_host_key(entry, key, sizeof(key), arg);
}

static int nginxconf_check_origin(const char *entry, void *arg)
{
	char origin[CONFIG_VALUE_MAX];

	return nginxconf_origin(entry, origin, sizeof(origin), arg);
}

int nginxconf_init(struct nginxconf *nc, const struct config *cfg, const char *templates,
		   const char *www, struct cause *cause)
{
	char index[CONFIG_PATH_MAX + 16];
	int r;

	memset(nc, 0, sizeof(*nc));
	nc->cfg = cfg;
	snprintf(nc->user_line, sizeof(nc->user_line), "# not root: the workers run as the caller");
	if ((r = nginxconf_listen(nc, cfg->listen, cause)) < 0)
		return r;
	if (cfg->runtime_dir[0] == '\0')
		return cause_fail(cause, EINVAL, "AGENTD_RUNTIME_DIR is empty");
	if (nginxconf_abspath(cfg->runtime_dir, nc->runtime_dir, sizeof(nc->runtime_dir)) < 0 ||
	    !nginxconf_path_ok(nc->runtime_dir))
		return cause_fail(cause, EINVAL,
				  "AGENTD_RUNTIME_DIR='%s' has characters nginx.conf cannot carry "
				  "%s",
				  cfg->runtime_dir, NGINXCONF_PATH_RULE);
	if (strlen(nc->runtime_dir) + strlen(NGINXCONF_LONGEST_SOCK) > NGINXCONF_SUN_PATH_MAX)
		return cause_fail(cause, EINVAL,
				  "AGENTD_RUNTIME_DIR='%s' is too long for unix socket paths (%d "
				  "bytes)",
				  nc->runtime_dir, NGINXCONF_SUN_PATH_MAX);
	/* The trusted listener for tailscale serve, only when a Tailscale user is configured. */
	if (nginxconf_list_set(cfg->tailscale_users) ||
	    nginxconf_list_set(cfg->tailscale_viewers)) {
		char *slash;
		char dir[CONFIG_PATH_MAX];

		if (nginxconf_abspath(cfg->tailscale_socket, nc->tailscale_socket,
				      sizeof(nc->tailscale_socket)) < 0 ||
		    !nginxconf_path_ok(nc->tailscale_socket))
			return cause_fail(cause, EINVAL,
					  "AGENTD_TAILSCALE_SOCKET='%s' has characters nginx.conf "
					  "cannot carry %s",
					  cfg->tailscale_socket, NGINXCONF_PATH_RULE);
		if (strlen(nc->tailscale_socket) > NGINXCONF_SUN_PATH_MAX)
			return cause_fail(cause, EINVAL,
					  "AGENTD_TAILSCALE_SOCKET='%s' is too long for a unix "
					  "socket path",
					  nc->tailscale_socket);
		snprintf(dir, sizeof(dir), "%s", nc->tailscale_socket);
		slash = strrchr(dir, '/');
		*(slash == dir ? slash + 1 : slash) = '\0';
		if (strcmp(dir, nc->runtime_dir) == 0)
			return cause_fail(
			    cause, EINVAL,
			    "AGENTD_TAILSCALE_SOCKET must not be in %s (the nginx "
			    "group reaches that directory): use a directory of its own",
			    nc->runtime_dir);
	}
	if ((r = nginxconf_each(cfg->allowed_hosts, nginxconf_check_host, cause)) < 0 ||
	    (r = nginxconf_each(cfg->allowed_origins, nginxconf_check_origin, cause)) < 0)
		return r;
	if (www != NULL) {
		if (nginxconf_abspath(www, nc->www, sizeof(nc->www)) < 0 ||
		    !nginxconf_path_ok(nc->www))
			return cause_fail(
			    cause, EINVAL,
			    "the web root '%s' has characters nginx.conf cannot carry "
			    "%s",
			    www, NGINXCONF_PATH_RULE);
		snprintf(index, sizeof(index), "%s/index.html", nc->www);
		if (access(index, R_OK) < 0)
			return cause_fail(cause, ENOENT, "%s is missing", index);
	}
	if (templates != NULL &&
	    nginxconf_abspath(templates, nc->templates, sizeof(nc->templates)) < 0)
		return cause_fail(cause, ENAMETOOLONG, "the template directory's path is too long");
	return 0;
}

/* The nearest ancestor of path that exists (path itself if it does). */
static void nginxconf_existing(const char *path, char *out, size_t outlen)
{
	struct stat sb;

	snprintf(out, outlen, "%s", path);
	while (strcmp(out, "/") != 0 && stat(out, &sb) < 0) {
		char *slash = strrchr(out, '/');

		*(slash == out ? slash + 1 : slash) = '\0';
	}
}

/* Can pw search the runtime dir (or what of it exists: deploy/up and tmpfiles.d make it
 * searchable by the nginx group) and read the web root? The workers open both. */
static bool nginxconf_can_reach(const struct nginxconf *nc, const struct passwd *pw)
{
	char run[CONFIG_PATH_MAX], index[CONFIG_PATH_MAX + 16];
	int status;
	pid_t pid;

	nginxconf_existing(nc->runtime_dir, run, sizeof(run));
	snprintf(index, sizeof(index), "%s/index.html", nc->www);
	pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0) {
		if (initgroups(pw->pw_name, pw->pw_gid) < 0 || setgid(pw->pw_gid) < 0 ||
		    setuid(pw->pw_uid) < 0)
			_exit(1);
		_exit(access(run, X_OK) == 0 && access(index, R_OK) == 0 ? 0 : 1);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return false;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int nginxconf_pick_user(struct nginxconf *nc, const char *user, struct cause *cause)
{
	const struct passwd *pw;
	const struct group *gr;

	if (geteuid() != 0) {
		pw = getpwuid(geteuid());
		snprintf(nc->user_line, sizeof(nc->user_line), "# not root: the workers run as %s",
			 pw != NULL ? pw->pw_name : "the caller");
		return 0;
	}
	if (user != NULL) {
		if ((pw = getpwnam(user)) == NULL)
			return cause_fail(cause, EINVAL, "the nginx user %s does not exist", user);
	} else if ((pw = getpwnam(NGINXCONF_WORKER_USER)) == NULL || !nginxconf_can_reach(nc, pw)) {
		fprintf(
		    stderr,
		    "agentd-api: warning: nginx workers run as root: %s cannot reach %s or %s (a "
		    "parent directory is not searchable)\n",
		    NGINXCONF_WORKER_USER, nc->runtime_dir, nc->www);
		pw = getpwuid(0);
		if (pw == NULL)
			return cause_fail(cause, EINVAL, "root has no passwd entry");
	}
	if (strlen(pw->pw_name) >= sizeof(nc->worker_user))
		return cause_fail(cause, EINVAL, "the nginx user's name is too long");
	snprintf(nc->worker_user, sizeof(nc->worker_user), "%s", pw->pw_name);
	gr = getgrgid(pw->pw_gid);
	if (gr == NULL)
		return cause_fail(cause, EINVAL, "the nginx user %s has no group", nc->worker_user);
	snprintf(nc->user_line, sizeof(nc->user_line), "user %s %s;", nc->worker_user, gr->gr_name);
	return 0;
}

/* The placeholders a line may hold anywhere, and what each becomes. */
struct nginxconf_subst {
	const char *name;
	const char *value;
};

/* Writes line (len bytes) with every placeholder of subst replaced, in one pass: a value is
 * never read for placeholders again. */
static void nginxconf_put_line(FILE *out, const char *line, size_t len,
			       const struct nginxconf_subst *subst, size_t nsubst)
{
	size_t i = 0;

	while (i < len) {
		const struct nginxconf_subst *hit = NULL;

		for (size_t k = 0; line[i] == '@' && k < nsubst && hit == NULL; k++)
			if (strlen(subst[k].name) <= len - i &&
			    memcmp(line + i, subst[k].name, strlen(subst[k].name)) == 0)
				hit = &subst[k];
		if (hit != NULL) {
			fputs(hit->value, out);
			i += strlen(hit->name);
		} else {
			fputc(line[i++], out);
		}
	}
	fputc('\n', out);
}

/* True when line is marker alone, blanks around it allowed when blanks is set. */
static bool nginxconf_marker(const char *line, size_t len, const char *marker, bool blanks)
{
	size_t n = strlen(marker), a = 0;

	if (blanks) {
		while (a < len && (line[a] == ' ' || line[a] == '\t'))
			a++;
		while (len > a && (line[len - 1] == ' ' || line[len - 1] == '\t'))
			len--;
	}
	return len - a == n && memcmp(line + a, marker, n) == 0;
}

/* A growing list of map keys, each written once (nginx refuses a key given twice). */
struct nginxconf_keys {
	char **v;
	size_t n, cap;
};

static int nginxconf_key_add(struct nginxconf_keys *keys, const char *key)
{
	for (size_t i = 0; i < keys->n; i++)
		if (strcmp(keys->v[i], key) == 0)
			return 0;
	if (keys->n == keys->cap) {
		size_t cap = keys->cap == 0 ? 16 : keys->cap * 2;
		char **v = realloc(keys->v, cap * sizeof(*v));

		if (v == NULL)
			return -ENOMEM;
		keys->v = v;
		keys->cap = cap;
	}
	if ((keys->v[keys->n] = strdup(key)) == NULL)
		return -ENOMEM;
	keys->n++;
	return 0;
}

static void nginxconf_keys_free(struct nginxconf_keys *keys)
{
	for (size_t i = 0; i < keys->n; i++)
		free(keys->v[i]);
	free(keys->v);
}

struct nginxconf_collect {
	struct nginxconf_keys *keys;
	struct cause *cause;
	bool origins;
};

static int nginxconf_collect(const char *entry, void *arg)
{
	struct nginxconf_collect *c = arg;
	char key[CONFIG_VALUE_MAX];
	int r = c->origins ? nginxconf_origin(entry, key, sizeof(key), c->cause)
			   : nginxconf_host_key(entry, key, sizeof(key), c->cause);

	return r < 0 ? r : nginxconf_key_add(c->keys, key);
}

/* The Host map's keys: the listen address and the loopback names with the listen port (also
 * without it on port 80, where browsers leave it out), then every AGENTD_ALLOWED_HOSTS entry. */
static int nginxconf_host_keys(const struct nginxconf *nc, struct nginxconf_keys *keys,
			       struct cause *cause)
{
	const char *names[] = {"127.0.0.1", "localhost", "[::1]", nc->listen_host};
	struct nginxconf_collect c = {keys, cause, false};
	char key[sizeof(nc->listen_host) + 8];
	int r;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(key, sizeof(key), "%s:%d", names[i], nc->port);
		if ((r = nginxconf_key_add(keys, key)) < 0 ||
		    (nc->port == 80 && (r = nginxconf_key_add(keys, names[i])) < 0))
			return r;
	}
	return nginxconf_each(nc->cfg->allowed_hosts, nginxconf_collect, &c);
}

int nginxconf_render_nginx(const struct nginxconf *nc, const char *tmpl, FILE *out)
{
	const struct nginxconf_subst subst[] = {{"@USER@", nc->user_line}};

	for (const char *line = tmpl; *line != '\0';) {
		size_t len = strcspn(line, "\n");

		nginxconf_put_line(out, line, len, subst, 1);
		line += len + (line[len] == '\n');
	}
	return ferror(out) ? -EIO : 0;
}

int nginxconf_render_agentd(const struct nginxconf *nc, const char *tmpl, const char *auth_cache,
			    FILE *out, struct cause *cause)
{
	const struct nginxconf_subst subst[] = {
	    {"@LISTEN@", nc->listen},
	    {"@RUNTIME_DIR@", nc->runtime_dir},
	    {"@WWW_ROOT@", nc->www},
	    {"@AUTH_CACHE@", auth_cache},
	};
	struct nginxconf_keys hosts = {0}, origins = {0};
	struct nginxconf_collect c = {&origins, cause, true};
	int r;

	if ((r = nginxconf_host_keys(nc, &hosts, cause)) < 0 ||
	    (r = nginxconf_each(nc->cfg->allowed_origins, nginxconf_collect, &c)) < 0)
		goto out;
	for (const char *line = tmpl; *line != '\0';) {
		size_t len = strcspn(line, "\n");

		if (nginxconf_marker(line, len, "@CORS_ORIGINS@", true)) {
			for (size_t i = 0; i < origins.n; i++)
				fprintf(out, "    \"%s\" $http_origin;\n", origins.v[i]);
		} else if (nginxconf_marker(line, len, "@ALLOWED_HOSTS@", true)) {
			for (size_t i = 0; i < hosts.n; i++)
				fprintf(out, "    \"%s\" 1;\n", hosts.v[i]);
		} else if (nginxconf_marker(line, len, "@TAILSCALE_LISTEN@", false)) {
			if (nc->tailscale_socket[0] != '\0')
				fprintf(out, "    listen unix:%s;\n", nc->tailscale_socket);
		} else if (nginxconf_marker(line, len, "@TAILSCALE_SOCKET@", false)) {
			if (nc->tailscale_socket[0] != '\0')
				fprintf(out, "    \"unix:%s\" 1;\n", nc->tailscale_socket);
		} else {
			nginxconf_put_line(out, line, len, subst, sizeof(subst) / sizeof(subst[0]));
		}
		line += len + (line[len] == '\n');
	}
	r = ferror(out) ? cause_fail(cause, EIO, "cannot render agentd.conf") : 0;
out:
	nginxconf_keys_free(&hosts);
	nginxconf_keys_free(&origins);
	return r;
}

/* Reads dir/name whole (at most NGINXCONF_TEMPLATE_MAX bytes) into a new string. */
static int nginxconf_read(const char *dir, const char *name, char **text, struct cause *cause)
{
	char path[CONFIG_PATH_MAX + 32];
	size_t n = 0;
	FILE *f;
	int r = 0;

	*text = NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "re")) == NULL)
		return cause_fail(cause, errno, "cannot read %s: %s", path, strerror(errno));
	if ((*text = malloc(NGINXCONF_TEMPLATE_MAX + 1)) == NULL) {
		r = cause_fail(cause, ENOMEM, "out of memory");
		goto out;
	}
	n = fread(*text, 1, NGINXCONF_TEMPLATE_MAX + 1, f);
	if (ferror(f))
		r = cause_fail(cause, EIO, "cannot read %s", path);
	else if (n > NGINXCONF_TEMPLATE_MAX)
		r = cause_fail(cause, EFBIG, "%s is larger than %d bytes", path,
			       NGINXCONF_TEMPLATE_MAX);
	else if (memchr(*text, '\0', n) != NULL)
		r = cause_fail(cause, EINVAL, "%s holds a NUL byte", path);
	else
		(*text)[n] = '\0';
out:
	fclose(f);
	if (r < 0) {
		free(*text);
		*text = NULL;
	}
	return r;
}

/* Renders agentd.conf.in (tmpl) into path, atomically. */
static int nginxconf_write_agentd(const struct nginxconf *nc, const char *tmpl,
				  const char *auth_cache, const char *path, struct cause *cause)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	int r;

	if (out == NULL)
		return cause_fail(cause, errno, "out of memory");
	r = nginxconf_render_agentd(nc, tmpl, auth_cache, out, cause);
	if (fclose(out) != 0 && r == 0)
		r = cause_fail(cause, EIO, "cannot render %s", path);
	if (r == 0 && (r = fsutil_write_atomic(path, text, 0644, false)) < 0)
		cause_set(cause, "cannot write %s: %s", path, strerror(-r));
	free(text);
	return r;
}

static int nginxconf_write_nginx(const struct nginxconf *nc, const char *tmpl, const char *path,
				 struct cause *cause)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	int r;

	if (out == NULL)
		return cause_fail(cause, errno, "out of memory");
	r = nginxconf_render_nginx(nc, tmpl, out);
	if (fclose(out) != 0 || r < 0)
		r = cause_fail(cause, EIO, "cannot render %s", path);
	if (r == 0 && (r = fsutil_write_atomic(path, text, 0644, false)) < 0)
		cause_set(cause, "cannot write %s: %s", path, strerror(-r));
	free(text);
	return r;
}

/* The trusted listener's directory: only root (nginx's master binds the socket, tailscaled
 * connects as root) may reach it, so no agent and no nginx worker can speak on it. nginx -t
 * binds the socket: the directory must exist before. */
static int nginxconf_tailscale_dir(const struct nginxconf *nc, struct cause *cause)
{
	char dir[CONFIG_PATH_MAX];
	struct stat sb;
	char *slash;
	int r;

	if (nc->tailscale_socket[0] == '\0')
		return 0;
	snprintf(dir, sizeof(dir), "%s", nc->tailscale_socket);
	slash = strrchr(dir, '/');
	*(slash == dir ? slash + 1 : slash) = '\0';
	if ((r = fsutil_mkdir_p(dir)) < 0)
		return cause_fail(cause, -r, "cannot create %s: %s", dir, strerror(-r));
	if (geteuid() == 0) {
		if (chown(dir, 0, 0) < 0 || chmod(dir, 0700) < 0)
			return cause_fail(cause, errno, "cannot make %s root's alone", dir);
	} else {
		const struct passwd *pw = getpwuid(geteuid());
		const char *me = pw != NULL ? pw->pw_name : "this user";

		fprintf(stderr,
			"agentd-api: warning: not root: %s is %s's; whoever runs as %s can forge "
			"Tailscale identities on %s\n",
			dir, me, me, nc->tailscale_socket);
	}
	/* A socket left by a killed nginx would make the next bind fail. */
	if (lstat(nc->tailscale_socket, &sb) == 0 && S_ISSOCK(sb.st_mode))
		unlink(nc->tailscale_socket);
	return 0;
}

/* nginx -t on PREFIX/conf/nginx.conf: its complaints go to our stderr. */
static int nginxconf_test(const char *prefix, struct cause *cause)
{
	char pfx[CONFIG_PATH_MAX + 2];
	char *argv[] = {"nginx",           "-t", "-q",     "-p", pfx, "-c",
			"conf/nginx.conf", "-e", "stderr", NULL};
	int status;
	pid_t pid;

	snprintf(pfx, sizeof(pfx), "%s/", prefix);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return cause_fail(cause, errno, "cannot run nginx -t: %s", strerror(errno));
	if (pid == 0) {
		dup2(STDERR_FILENO, STDOUT_FILENO);
		execvp(argv[0], argv);
		fprintf(stderr, "agentd-api: cannot run nginx: %s\n", strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return cause_fail(cause, errno, "cannot wait for nginx -t");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return cause_fail(cause, EINVAL, "nginx -t failed for %s/conf/nginx.conf", prefix);
	return 0;
}

int nginxconf_write(const struct nginxconf *nc, const char *prefix_arg, struct cause *cause)
{
	static const char *const subdirs[] = {"conf", "logs", "tmp", "run"};
	char prefix[CONFIG_PATH_MAX], path[CONFIG_PATH_MAX + 32], cache[CONFIG_PATH_MAX + 32];
	char stand_in[CONFIG_PATH_MAX + 32] = "", agentd[CONFIG_PATH_MAX + 32];
	char *tmpl_agentd = NULL, *tmpl_nginx = NULL;
	struct stat sb;
	int r;

	if (nginxconf_abspath(prefix_arg, prefix, sizeof(prefix)) < 0 ||
	    strlen(prefix) + 32 > sizeof(path))
		return cause_fail(cause, ENAMETOOLONG, "the nginx prefix's path is too long");
	if ((r = nginxconf_read(nc->templates, "agentd.conf.in", &tmpl_agentd, cause)) < 0 ||
	    (r = nginxconf_read(nc->templates, "nginx.conf.in", &tmpl_nginx, cause)) < 0)
		goto out;
	for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", prefix, subdirs[i]);
		if ((r = fsutil_mkdir_p(path)) < 0) {
			cause_set(cause, "cannot create %s: %s", path, strerror(-r));
			goto out;
		}
	}
	/*
	 * The door's cache is <runtime dir>/auth-cache (a tmpfs, made at boot by tmpfiles.d: the
	 * credentials it holds never reach a disk). nginx -t makes it, and cannot before the
	 * runtime dir exists (rendering ahead of the first run or of systemd-tmpfiles): the check
	 * then uses a stand-in in PREFIX/tmp, and the include names the real one, which nginx
	 * makes when it starts.
	 */
	snprintf(cache, sizeof(cache), "%s/auth-cache", nc->runtime_dir);
	if (stat(nc->runtime_dir, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
		if (!nginxconf_path_ok(prefix)) {
			r = cause_fail(
			    cause, EINVAL,
			    "the nginx prefix '%s' has characters nginx.conf cannot carry "
			    "%s",
			    prefix, NGINXCONF_PATH_RULE);
			goto out;
		}
		snprintf(stand_in, sizeof(stand_in), "%s/tmp/auth-check", prefix);
	}
	snprintf(agentd, sizeof(agentd), "%s/conf/agentd.conf", prefix);
	snprintf(path, sizeof(path), "%s/conf/nginx.conf", prefix);
	if ((r = nginxconf_write_agentd(nc, tmpl_agentd, stand_in[0] != '\0' ? stand_in : cache,
					agentd, cause)) < 0 ||
	    (r = nginxconf_write_nginx(nc, tmpl_nginx, path, cause)) < 0 ||
	    (r = nginxconf_tailscale_dir(nc, cause)) < 0 || (r = nginxconf_test(prefix, cause)) < 0)
		goto out;
	if (stand_in[0] != '\0') {
		fsutil_rm_tree(stand_in);
		r = nginxconf_write_agentd(nc, tmpl_agentd, cache, agentd, cause);
	}
out:
	free(tmpl_agentd);
	free(tmpl_nginx);
	return r;
}
