/*
 * nginxconf: the checks of the keys nginx is rendered from (AGENTD_LISTEN, AGENTD_RUNTIME_DIR,
 * AGENTD_ALLOWED_HOSTS, AGENTD_ALLOWED_ORIGINS, the Tailscale listener) and the rendering of the
 * templates, the real ones included. Writing files and nginx -t are the integration tests' part
 * (test_edge_host, test_edge_nginx, test_systemd_units).
 */
#include "nginxconf.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A config of the defaults with the given KEY=value settings (NULL-terminated pairs). */
static void cfg_with(struct config *cfg, const char *const *kv)
{
	config_defaults(cfg);
	for (; kv != NULL && kv[0] != NULL; kv += 2) {
		struct cause c = {{0}};

		cr_assert_eq(config_set(cfg, kv[0], kv[1], &c), 0, "%s: %s", kv[0], c.msg);
	}
}

static void host_ok(const char *entry, const char *want)
{
	struct cause c = {{0}};
	char key[NGINXCONF_KEY_MAX * 2];

	cr_assert_eq(nginxconf_host_key(entry, key, sizeof(key), &c), 0, "%s: %s", entry, c.msg);
	cr_assert_str_eq(key, want, "%s", entry);
}

Test(nginxconf, host_keys)
{
	host_ok("Box.Example.COM:8443", "box.example.com:8443");
	host_ok("tail.ts.net", "~*^tail\\.ts\\.net(:[0-9]{1,5})?$");
	host_ok("[fe80::1]", "~*^\\[fe80::1\\](:[0-9]{1,5})?$");
	host_ok("[::1]:8080", "[::1]:8080");
	host_ok("10.0.0.1:08443", "10.0.0.1:8443");
	host_ok("localhost", "~*^localhost(:[0-9]{1,5})?$");
	host_ok("a-b.c1", "~*^a-b\\.c1(:[0-9]{1,5})?$");
}

/* What test_edge_host's render refuses, and more: nothing of these may reach nginx's map. */
Test(nginxconf, host_keys_refuse)
{
	static const char *const bad[] = {
	    "evil.example\";",
	    "a|b",
	    ".*",
	    "~.*",
	    "https://box.example",
	    "box.example/path",
	    "a..b",
	    "bad_name.example",
	    "[::1",
	    "box.example:99999",
	    "box.example:0",
	    "$host",
	    "a{1}",
	    "x;y",
	    "-a.example",
	    "a-.example",
	    "a.example.",
	    "box.example:",
	    "[]",
	    "[::1]x",
	    "box.example:123456",
	    "[fe80::g]",
	    "a:1:2",
	    "",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cause c = {{0}};
		char key[NGINXCONF_KEY_MAX * 2];

		cr_assert_eq(nginxconf_host_key(bad[i], key, sizeof(key), &c), -EINVAL, "%s",
			     bad[i]);
		cr_assert_not_null(strstr(c.msg, "AGENTD_ALLOWED_HOSTS"), "%s: %s", bad[i], c.msg);
	}
}

Test(nginxconf, host_name_length)
{
	char name[NGINXCONF_HOST_NAME_MAX + 8], key[NGINXCONF_KEY_MAX * 2];
	struct cause c = {{0}};

	/* Labels of 9 characters and a dot: 254 characters is one too many. */
	for (size_t i = 0; i < 254; i++)
		name[i] = i % 10 == 9 ? '.' : 'a';
	name[253] = 'a';
	name[254] = '\0';
	cr_assert_eq(nginxconf_host_key(name, key, sizeof(key), &c), -EINVAL);
	cr_assert_not_null(strstr(c.msg, "longer than 253"), "%s", c.msg);
	name[253] = '\0';
	cr_assert_eq(nginxconf_host_key(name, key, sizeof(key), &c), 0, "%s", c.msg);
}

Test(nginxconf, origins)
{
	static const char *const bad[] = {
	    "ftp://a.example",           "https://a.example/", "https://",
	    "https://a.example:x",       "a.example",          "https://a_b.example",
	    "https://a.example:80/path", "HTTPS://a.example"};
	char out[128];
	struct cause c = {{0}};

	cr_assert_eq(nginxconf_origin("https://Host.Example:8443", out, sizeof(out), &c), 0);
	cr_assert_str_eq(out, "https://host.example:8443");
	cr_assert_eq(nginxconf_origin("http://a.example", out, sizeof(out), &c), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(nginxconf_origin(bad[i], out, sizeof(out), &c), -EINVAL, "%s", bad[i]);
		cr_assert_not_null(strstr(c.msg, "AGENTD_ALLOWED_ORIGINS"), "%s", c.msg);
	}
}

static void listen_ok(const char *listen, const char *host, int port)
{
	const char *const kv[] = {"AGENTD_LISTEN", listen, "AGENTD_RUNTIME_DIR", "/run/x", NULL};
	struct nginxconf nc;
	struct config cfg;
	struct cause c = {{0}};

	cfg_with(&cfg, kv);
	cr_assert_eq(nginxconf_init(&nc, &cfg, NULL, NULL, &c), 0, "%s: %s", listen, c.msg);
	cr_assert_str_eq(nc.listen, listen);
	cr_assert_str_eq(nc.listen_host, host, "%s", listen);
	cr_assert_eq(nc.port, port, "%s", listen);
}

/* init_fails KV WANT: nginxconf_init refuses the settings with a cause holding WANT. */
static void init_fails(const char *const *kv, const char *want)
{
	struct nginxconf nc;
	struct config cfg;
	struct cause c = {{0}};

	cfg_with(&cfg, kv);
	cr_assert_lt(nginxconf_init(&nc, &cfg, NULL, NULL, &c), 0, "want: %s", want);
	cr_assert_not_null(strstr(c.msg, want), "cause '%s' lacks '%s'", c.msg, want);
}

Test(nginxconf, listen)
{
	static const char *const bad[] = {"a:b:80",   ":80", "x:0",          "x:99999",
					  "x:123456", "",    "host name:80", "[::1:80",
					  "*:80",     "x:8a"};

	listen_ok("127.0.0.1:8080", "127.0.0.1", 8080);
	listen_ok("8080", "127.0.0.1", 8080);
	listen_ok("0.0.0.0:80", "127.0.0.1", 80);
	listen_ok("[::]:8080", "[::1]", 8080);
	listen_ok("Box.Example:8443", "box.example", 8443);
	listen_ok("[::1]:08080", "[::1]", 8080);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *const kv[] = {"AGENTD_LISTEN", bad[i], NULL};

		init_fails(kv, "AGENTD_LISTEN");
	}
}

Test(nginxconf, runtime_dir_and_tailscale_socket)
{
	char longdir[200];
	const char *const space[] = {"AGENTD_RUNTIME_DIR", "/run/a b", NULL};
	const char *const dollar[] = {"AGENTD_RUNTIME_DIR", "/run/$x", NULL};
	const char *const empty[] = {"AGENTD_RUNTIME_DIR", "", NULL};
	const char *const toolong[] = {"AGENTD_RUNTIME_DIR", longdir, NULL};
	const char *const ts_in_run[] = {"AGENTD_RUNTIME_DIR",
					 "/run/agentd-x",
					 "AGENTD_TAILSCALE_USERS",
					 "alice@example.com",
					 "AGENTD_TAILSCALE_SOCKET",
					 "/run/agentd-x/ts.sock",
					 NULL};
	const char *const ts_bad[] = {"AGENTD_TAILSCALE_VIEWERS", "*", "AGENTD_TAILSCALE_SOCKET",
				      "/run/t s/ts.sock", NULL};
	const char *const ts_off[] = {"AGENTD_TAILSCALE_USERS", " , ", "AGENTD_TAILSCALE_SOCKET",
				      "/run/t s/ts.sock", NULL};
	const char *const hosts[] = {"AGENTD_ALLOWED_HOSTS", "ok.example, bad_host", NULL};
	const char *const origins[] = {"AGENTD_ALLOWED_ORIGINS", "https://ok.example x", NULL};
	struct nginxconf nc;
	struct config cfg;
	struct cause c = {{0}};

	memset(longdir, 'a', sizeof(longdir) - 1);
	longdir[0] = '/';
	longdir[NGINXCONF_SUN_PATH_MAX - strlen(NGINXCONF_LONGEST_SOCK) + 1] = '\0';
	init_fails(space, "AGENTD_RUNTIME_DIR='/run/a b' has characters nginx.conf cannot carry");
	init_fails(dollar, "AGENTD_RUNTIME_DIR");
	init_fails(empty, "AGENTD_RUNTIME_DIR is empty");
	init_fails(toolong, "is too long for unix socket paths");
	longdir[NGINXCONF_SUN_PATH_MAX - strlen(NGINXCONF_LONGEST_SOCK)] = '\0';
	cfg_with(&cfg, toolong);
	cr_assert_eq(nginxconf_init(&nc, &cfg, NULL, NULL, &c), 0, "%s", c.msg);
	init_fails(ts_in_run, "AGENTD_TAILSCALE_SOCKET must not be in /run/agentd-x");
	init_fails(ts_bad, "AGENTD_TAILSCALE_SOCKET='/run/t s/ts.sock'");
	/* Without a Tailscale user there is no such listener, whatever the socket says. */
	cfg_with(&cfg, ts_off);
	cr_assert_eq(nginxconf_init(&nc, &cfg, NULL, NULL, &c), 0, "%s", c.msg);
	cr_assert_str_eq(nc.tailscale_socket, "");
	init_fails(hosts, "AGENTD_ALLOWED_HOSTS: 'bad_host'");
	init_fails(origins, "AGENTD_ALLOWED_ORIGINS: 'x'");
}

Test(nginxconf, abspath)
{
	char out[256];

	cr_assert_eq(nginxconf_abspath("/nonexistent-agentd/./a//b/../c/", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/nonexistent-agentd/a/c");
	cr_assert_eq(nginxconf_abspath("/nonexistent-agentd/../..", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/");
	cr_assert_eq(nginxconf_abspath("/", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/");
	cr_assert_eq(chdir("/tmp"), 0);
	cr_assert_eq(nginxconf_abspath("nonexistent-agentd/x", out, sizeof(out)), 0);
	cr_assert_str_eq(out, "/tmp/nonexistent-agentd/x");
	cr_assert_eq(nginxconf_abspath("/tmp/nonexistent-agentd", out, 8), -ENAMETOOLONG);
}

/* render KV TMPL: agentd.conf's template TMPL rendered with the settings KV, in a new string. */
static char *render(const char *const *kv, const char *tmpl)
{
	struct nginxconf nc;
	struct config cfg;
	struct cause c = {{0}};
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	cr_assert_not_null(out);
	cfg_with(&cfg, kv);
	cr_assert_eq(nginxconf_init(&nc, &cfg, NULL, NULL, &c), 0, "%s", c.msg);
	snprintf(nc.www, sizeof(nc.www), "/srv/www");
	cr_assert_eq(nginxconf_render_agentd(&nc, tmpl, "/run/x/auth-cache", out, &c), 0, "%s",
		     c.msg);
	cr_assert_eq(fclose(out), 0);
	return text;
}

Test(nginxconf, render_placeholders)
{
	const char *const kv[] = {
	    "AGENTD_LISTEN",
	    "127.0.0.1:18080",
	    "AGENTD_RUNTIME_DIR",
	    "/run/x",
	    "AGENTD_ALLOWED_HOSTS",
	    "Box.Example.COM:8443 tail.ts.net,localhost:18080 box.example.com:8443",
	    "AGENTD_ALLOWED_ORIGINS",
	    "https://A.example:8443, http://b.example",
	    NULL};
	char *text =
	    render(kv, "map {\n  @ALLOWED_HOSTS@  \n}\n@CORS_ORIGINS@\n"
		       "listen @LISTEN@; root @WWW_ROOT@; @RUNTIME_DIR@/api.sock @AUTH_CACHE@\n"
		       "@TAILSCALE_LISTEN@\n@TAILSCALE_SOCKET@\n@UNKNOWN@ @ x@\nlast");

	cr_assert_str_eq(text, "map {\n"
			       "    \"127.0.0.1:18080\" 1;\n"
			       "    \"localhost:18080\" 1;\n"
			       "    \"[::1]:18080\" 1;\n"
			       "    \"box.example.com:8443\" 1;\n"
			       "    \"~*^tail\\.ts\\.net(:[0-9]{1,5})?$\" 1;\n"
			       "}\n"
			       "    \"https://a.example:8443\" $http_origin;\n"
			       "    \"http://b.example\" $http_origin;\n"
			       "listen 127.0.0.1:18080; root /srv/www; /run/x/api.sock "
			       "/run/x/auth-cache\n"
			       "@UNKNOWN@ @ x@\n"
			       "last\n");
	free(text);
}

/* On port 80 browsers leave the port out: the loopback names are keys without it too. */
Test(nginxconf, render_port_80_and_tailscale)
{
	const char *const kv[] = {"AGENTD_LISTEN",
				  "0.0.0.0:80",
				  "AGENTD_RUNTIME_DIR",
				  "/run/x",
				  "AGENTD_TAILSCALE_USERS",
				  "*",
				  "AGENTD_TAILSCALE_SOCKET",
				  "/run/ts/nginx.sock",
				  NULL};
	char *text = render(kv, "@ALLOWED_HOSTS@\n@TAILSCALE_LISTEN@\n@TAILSCALE_SOCKET@\n"
				" @TAILSCALE_LISTEN@\n");

	cr_assert_str_eq(text, "    \"127.0.0.1:80\" 1;\n"
			       "    \"127.0.0.1\" 1;\n"
			       "    \"localhost:80\" 1;\n"
			       "    \"localhost\" 1;\n"
			       "    \"[::1]:80\" 1;\n"
			       "    \"[::1]\" 1;\n"
			       "    listen unix:/run/ts/nginx.sock;\n"
			       "    \"unix:/run/ts/nginx.sock\" 1;\n"
			       " @TAILSCALE_LISTEN@\n");
	free(text);
}

/* A value is never read for placeholders again: a path holding "@WWW_ROOT@" stays as it is. */
Test(nginxconf, render_is_one_pass)
{
	const char *const kv[] = {"AGENTD_RUNTIME_DIR", "/run/@WWW_ROOT@", NULL};
	char *text = render(kv, "@RUNTIME_DIR@ @WWW_ROOT@");

	cr_assert_str_eq(text, "/run/@WWW_ROOT@ /srv/www\n");
	free(text);
}

/* Reads a template of the repository. */
static char *read_template(const char *name)
{
	char path[512], *text = malloc(NGINXCONF_TEMPLATE_MAX + 1);
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", AGENTD_NGINX_TEMPLATES, name);
	f = fopen(path, "re");
	cr_assert_not_null(f, "%s", path);
	cr_assert_not_null(text);
	n = fread(text, 1, NGINXCONF_TEMPLATE_MAX, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

/* The real templates: every placeholder outside comments is filled. */
Test(nginxconf, real_templates_leave_no_placeholder)
{
	const char *const kv[] = {"AGENTD_RUNTIME_DIR", "/run/x", "AGENTD_TAILSCALE_USERS", "*",
				  NULL};
	char *tmpl = read_template("agentd.conf.in"), *text = render(kv, tmpl);
	struct nginxconf nc;
	struct config cfg;
	struct cause c = {{0}};
	char *conf = NULL;
	size_t len = 0;
	FILE *out;

	for (const char *line = text; *line != '\0'; line += strcspn(line, "\n") + 1) {
		size_t n = strcspn(line, "\n"), lead = strspn(line, " ");

		if (line[lead] != '#') {
			char copy[4096];

			snprintf(copy, sizeof(copy), "%.*s", (int)n, line);
			/* "@NAME@"; "@agentd_rest" is a named location. */
			for (const char *at = copy; (at = strchr(at, '@')) != NULL; at++) {
				size_t k = strspn(at + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_");

				cr_assert(k == 0 || at[1 + k] != '@', "placeholder left: %s", copy);
			}
		}
		if (line[n] == '\0')
			break;
	}
	cr_assert_not_null(strstr(text, "    listen unix:/run/agentd-tailscale/nginx.sock;\n"));
	cr_assert_not_null(strstr(text, "server unix:/run/x/api.sock;"));
	cr_assert_not_null(strstr(text, "fastcgi_cache_path /run/x/auth-cache "));
	free(tmpl);
	free(text);

	tmpl = read_template("nginx.conf.in");
	out = open_memstream(&conf, &len);
	cr_assert_not_null(out);
	cfg_with(&cfg, kv);
	cr_assert_eq(nginxconf_init(&nc, &cfg, NULL, NULL, &c), 0, "%s", c.msg);
	snprintf(nc.user_line, sizeof(nc.user_line), "user www-data www-data;");
	cr_assert_eq(nginxconf_render_nginx(&nc, tmpl, out), 0);
	cr_assert_eq(fclose(out), 0);
	cr_assert_not_null(strstr(conf, "\nuser www-data www-data;\n"));
	cr_assert_null(strstr(conf, "@USER@"));
	free(tmpl);
	free(conf);
}

/* Whatever AGENTD_ALLOWED_HOSTS holds, a key that gets through carries nothing nginx's map would
 * read as syntax: no quote, '$', ';', brace, blank or backslash but the regex's own escapes. */
Test(nginxconf, host_keys_carry_no_nginx_syntax)
{
	static const char alphabet[] = "aZ09.-:[]\"$;{}\\ \t~*|^()/_%@";
	unsigned int seed = 1;

	for (int round = 0; round < 200000; round++) {
		char entry[16], key[NGINXCONF_KEY_MAX * 2];
		struct cause c = {{0}};
		size_t n;

		seed = seed * 1103515245u + 12345u;
		n = 1 + (seed >> 16) % (sizeof(entry) - 1);
		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			entry[i] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
		}
		entry[n] = '\0';
		if (nginxconf_host_key(entry, key, sizeof(key), &c) < 0)
			continue;
		for (const char *p = key; *p != '\0'; p++) {
			bool regex = key[0] == '~';

			cr_assert(strchr("\"$;{} \t", *p) == NULL ||
				      (regex && *p == '$' && p[1] == '\0') ||
				      (regex && (*p == '{' || *p == '}') &&
				       strstr(key, "{1,5}") != NULL && p > strstr(key, "(:[0-9]")),
				  "'%s' gave the key '%s'", entry, key);
		}
		if (key[0] == '~')
			cr_assert_eq(strncmp(key, "~*^", 3), 0, "%s", key);
	}
}
