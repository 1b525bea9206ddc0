/*
 * `agentd-api config --check | --print | --get KEY... | --render-nginx PREFIX [...]`: the
 * configuration as every agentd program reads it (core/config.h), for operators and for the
 * scripts and units that used to carry a copy of its rules: deploy/up, the systemd units and
 * the integration tests.
 */
#ifndef AGENTD_CONFIGCMD_H
#define AGENTD_CONFIGCMD_H

/* Where `meson install` puts the nginx templates and the web UI, the defaults of
 * --render-nginx's --templates and --www. */
#ifndef AGENTD_NGINX_DATADIR
#define AGENTD_NGINX_DATADIR "/usr/local/share/agentd/nginx"
#endif

/* Runs the command in argv[0..argc) (argv[0] is "config"). Returns the exit status: 0, 1 when
 * the configuration is wrong or the render fails (said on stderr, naming the key), 2 on bad
 * usage. */
int configcmd_main(int argc, char **argv);

#endif
