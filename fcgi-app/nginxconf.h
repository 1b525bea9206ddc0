/*
 * The nginx configuration in front of agent-daemon, rendered from nginx/nginx.conf.in and
 * nginx/agentd.conf.in (`agentd-api config --render-nginx PREFIX`, which deploy/up runs): the
 * one place that checks and writes what nginx is told from the configuration: the listen
 * address, the Host allow-list (AGENTD_ALLOWED_HOSTS), the CORS origins
 * (AGENTD_ALLOWED_ORIGINS), the daemons' sockets in the runtime dir and the Tailscale listener.
 * Nothing reaches the rendered files that did not pass a rule here: no quote, '$', ';', brace or
 * regex character comes from the configuration.
 */
#ifndef AGENTD_NGINXCONF_H
#define AGENTD_NGINXCONF_H

#include "cause.h"
#include "config.h"

#include <stdio.h>

/* sizeof(sockaddr_un.sun_path) - 1: the longest path a unix socket can have. */
#define NGINXCONF_SUN_PATH_MAX 107
/* The longest socket name in the runtime dir: every socket there fits when this one does. */
#define NGINXCONF_LONGEST_SOCK "/bridge.sock"
/* The longest DNS name (RFC 1035). */
#define NGINXCONF_HOST_NAME_MAX 253
/* A template is a few dozen KiB; a bound keeps a wrong path from being read whole. */
#define NGINXCONF_TEMPLATE_MAX (1024 * 1024)
/* A map key: a host name, its regex escapes and a port fit. */
#define NGINXCONF_KEY_MAX 600
/* The first user tried for the workers as root (Debian's nginx user). */
#define NGINXCONF_WORKER_USER "www-data"

/* What the templates are filled with, all checked (nginxconf_init). */
struct nginxconf {
	const struct config *cfg; /* AGENTD_ALLOWED_HOSTS and _ORIGINS, read when written */
	char listen[256];         /* AGENTD_LISTEN as written: nginx's listen directive */
	char listen_host[256];    /* its host, lower-case, a wildcard as loopback */
	int port;                 /* its port */
	char runtime_dir[CONFIG_PATH_MAX];      /* AGENTD_RUNTIME_DIR, absolute and normalised */
	char tailscale_socket[CONFIG_PATH_MAX]; /* "" unless a Tailscale user is configured */
	char www[CONFIG_PATH_MAX];              /* the web root nginx serves */
	char templates[CONFIG_PATH_MAX];        /* the directory of the two templates */
	char user_line[512];                    /* nginx.conf's @USER@ line */
	char worker_user[CONFIG_USER_MAX + 1];  /* the workers' user ("" when not root) */
};

/*
 * Checks every key nginx is rendered from and fills nc (user_line says "not root" until
 * nginxconf_pick_user). templates and www are directories; NULL checks the keys alone (what
 * `agentd-api config --check` does). Returns 0, or -EINVAL with cause naming the key.
 */
int nginxconf_init(struct nginxconf *nc, const struct config *cfg, const char *templates,
		   const char *www, struct cause *cause);

/*
 * One AGENTD_ALLOWED_HOSTS entry as the key of nginx's Host map, written to out: "host:port"
 * exactly, or for a host without a port a case-insensitive regex that matches it with any port
 * or none ("~*^name\.example(:[0-9]{1,5})?$"). The entry is lower-cased; it must be a DNS name,
 * an IPv4 address or a bracketed IPv6 address, then an optional :port (1..65535). Returns 0, or
 * -EINVAL with cause naming AGENTD_ALLOWED_HOSTS.
 */
int nginxconf_host_key(const char *entry, char *out, size_t outlen, struct cause *cause);

/* One AGENTD_ALLOWED_ORIGINS entry, lower-cased into out: http(s)://host[:port], nothing else.
 * Returns 0, or -EINVAL with cause naming AGENTD_ALLOWED_ORIGINS. */
int nginxconf_origin(const char *entry, char *out, size_t outlen, struct cause *cause);

/*
 * As root, the workers' user: user if not NULL (it must exist), else www-data when it can
 * search the runtime dir (or its nearest existing ancestor) and read the web root's index.html,
 * else root with a warning on stderr. Not root, the workers are the caller's. Returns 0 or
 * -EINVAL with cause set.
 */
int nginxconf_pick_user(struct nginxconf *nc, const char *user, struct cause *cause);

/* Writes nginx.conf.in (tmpl) rendered to out. Returns 0 or -EIO. */
int nginxconf_render_nginx(const struct nginxconf *nc, const char *tmpl, FILE *out);

/* Writes agentd.conf.in (tmpl) rendered to out, with the door's cache in auth_cache. Returns 0,
 * -EIO, or -EINVAL (cause set) for a host or origin that breaks its rule. */
int nginxconf_render_agentd(const struct nginxconf *nc, const char *tmpl, const char *auth_cache,
			    FILE *out, struct cause *cause);

/*
 * Renders both templates into PREFIX/conf (making PREFIX/{conf,logs,tmp,run}), makes the
 * Tailscale listener's directory root's alone, and checks the result with nginx -t. Written
 * only once every rule passed. Returns 0, or a negative errno with cause set.
 */
int nginxconf_write(const struct nginxconf *nc, const char *prefix, struct cause *cause);

/* path made absolute and normalised as `realpath -m` does: symlinks of the part that exists
 * resolved, "." and ".." of the rest removed. Returns 0 or -ENAMETOOLONG. */
int nginxconf_abspath(const char *path, char *out, size_t outlen);

#endif
