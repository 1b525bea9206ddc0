#include "configcmd.h"

#include "config.h"
#include "nginxconf.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* What --print shows instead of a credential that is set. */
#define CONFIGCMD_HIDDEN "(set, hidden)"

static const char configcmd_usage[] =
    "usage: agentd-api config --check | --print | --get KEY... |\n"
    "                         --render-nginx PREFIX [--templates DIR] [--www DIR]\n"
    "                                               [--nginx-user USER]\n"
    "\n"
    "  --check         check every key (those nginx is rendered from too); exit 1 naming the\n"
    "                  first wrong one\n"
    "  --print         every key, its value and where it came from (default, file or\n"
    "                  environment); credentials only as set or not\n"
    "  --get KEY...    each KEY's value alone, one a line (for scripts)\n"
    "  --render-nginx PREFIX  render nginx.conf.in and agentd.conf.in from DIR (default\n"
    "                  " AGENTD_NGINX_DATADIR ") into PREFIX/conf, the web root\n"
    "                  DIR (default the templates' html/) in it, and check them with nginx -t;\n"
    "                  as root the workers run as USER (default www-data when it can reach the\n"
    "                  runtime dir and the web root, else root). Run: nginx -p PREFIX/ -c\n"
    "                  conf/nginx.conf -e stderr\n";

static int configcmd_print(const struct config *cfg)
{
	char value[CONFIG_VALUE_MAX];
	struct config_keydoc doc;

	printf("# file: %s\n", cfg->file[0] != '\0' ? cfg->file : "(none)");
	for (size_t i = 0; config_key_doc(i, &doc) == 0; i++) {
		if (config_format(cfg, i, value, sizeof(value)) < 0)
			return 1;
		if (doc.secret && value[0] != '\0')
			snprintf(value, sizeof(value), "%s", CONFIGCMD_HIDDEN);
		printf("%s=%s\t# %s\n", doc.name, value,
		       config_source_name(config_key_source(cfg, i)));
	}
	return 0;
}

static int configcmd_get(const struct config *cfg, int argc, char **argv)
{
	char value[CONFIG_VALUE_MAX];
	struct config_keydoc doc;

	for (int a = 0; a < argc; a++) {
		size_t i;

		for (i = 0; config_key_doc(i, &doc) == 0; i++)
			if (strcmp(doc.name, argv[a]) == 0)
				break;
		if (config_key_doc(i, &doc) < 0) {
			fprintf(stderr, "agentd-api: unknown configuration key %s\n", argv[a]);
			return 1;
		}
		if (config_format(cfg, i, value, sizeof(value)) < 0)
			return 1;
		printf("%s\n", value);
	}
	return 0;
}

static int configcmd_render(const struct config *cfg, int argc, char **argv)
{
	const char *prefix = argv[0], *templates = AGENTD_NGINX_DATADIR, *www = NULL, *user = NULL;
	char www_default[CONFIG_PATH_MAX + 8];
	struct cause cause = {{0}};
	struct nginxconf nc;

	for (int a = 1; a < argc; a += 2) {
		if (a + 1 >= argc) {
			fputs(configcmd_usage, stderr);
			return 2;
		}
		if (strcmp(argv[a], "--templates") == 0)
			templates = argv[a + 1];
		else if (strcmp(argv[a], "--www") == 0)
			www = argv[a + 1];
		else if (strcmp(argv[a], "--nginx-user") == 0)
			user = argv[a + 1];
		else {
			fputs(configcmd_usage, stderr);
			return 2;
		}
	}
	if (prefix[0] == '\0') {
		fputs(configcmd_usage, stderr);
		return 2;
	}
	if (www == NULL) {
		snprintf(www_default, sizeof(www_default), "%s/html", templates);
		www = www_default;
	}
	if (nginxconf_init(&nc, cfg, templates, www, &cause) < 0 ||
	    nginxconf_pick_user(&nc, user, &cause) < 0 ||
	    nginxconf_write(&nc, prefix, &cause) < 0) {
		fprintf(stderr, "agentd-api: %s\n", cause.msg);
		return 1;
	}
	fprintf(stderr,
		"agentd-api: rendered %s/conf/nginx.conf (workers as %s); run: nginx -p %s/ -c "
		"conf/nginx.conf -e stderr\n",
		prefix, nc.worker_user[0] != '\0' ? nc.worker_user : "the caller", prefix);
	return 0;
}

int configcmd_main(int argc, char **argv)
{
	struct cause cause = {{0}};
	struct nginxconf nc;
	struct config cfg;

	const char *cmd = argc > 1 ? argv[1] : "";

	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		fputs(configcmd_usage, stdout);
		return 0;
	}
	if (!(((strcmp(cmd, "--check") == 0 || strcmp(cmd, "--print") == 0) && argc == 2) ||
	      ((strcmp(cmd, "--get") == 0 || strcmp(cmd, "--render-nginx") == 0) && argc > 2))) {
		fputs(configcmd_usage, stderr);
		return 2;
	}
	if (config_load(&cfg, &cause) < 0) {
		fprintf(stderr, "agentd-api: %s\n", cause.msg);
		return 1;
	}
	if (strcmp(cmd, "--print") == 0)
		return configcmd_print(&cfg);
	if (strcmp(cmd, "--get") == 0)
		return configcmd_get(&cfg, argc - 2, argv + 2);
	if (strcmp(cmd, "--render-nginx") == 0)
		return configcmd_render(&cfg, argc - 2, argv + 2);
	/* --check: the keys' own rules held (config_load), then those of the keys nginx is
	 * rendered from. */
	if (nginxconf_init(&nc, &cfg, NULL, NULL, &cause) < 0) {
		fprintf(stderr, "agentd-api: %s\n", cause.msg);
		return 1;
	}
	printf("the configuration is valid (%s)\n", cfg.file[0] != '\0' ? cfg.file : "defaults");
	return 0;
}
