/*
 * agentctl: the operator's command line of agent-daemon (README.md, "Daily use"; agentctl.1). It
 * parses the command line (cli.h), loads the settings (conf.h) and runs one command: attach over
 * the terminal WebSocket (attach.h), every other over the HTTP API (cmds.h).
 */
#include "attach.h"
#include "cli.h"
#include "cmds.h"
#include "conf.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct cause cause = {{0}};
	struct ctl_args args;
	struct ctl_conf *conf = NULL;
	char path[CTL_CONF_PATH_MAX];
	int rc;

	if (ctl_args_parse(argc, argv, &args, &cause) < 0) {
		fprintf(stderr, "agentctl: %s\n", cause.msg);
		ctl_usage(stderr, args.cmd);
		return CTL_EXIT_USAGE;
	}
	if (args.help) {
		ctl_usage(stdout, args.cmd);
		return CTL_EXIT_OK;
	}
	signal(SIGPIPE, SIG_IGN);
	conf = calloc(1, sizeof(*conf));
	if (conf == NULL) {
		fprintf(stderr, "agentctl: out of memory\n");
		return CTL_EXIT_FAILURE;
	}
	ctl_conf_path(path, sizeof(path), getenv("XDG_CONFIG_HOME"), getenv("HOME"));
	if (ctl_conf_load(conf, path, getenv("AGENTD_URL"), getenv("AGENTD_TOKEN"), &cause) < 0) {
		fprintf(stderr, "agentctl: %s\n", cause.msg);
		rc = CTL_EXIT_USAGE;
		goto out;
	}
	if (args.cmd == CTL_CMD_ATTACH) {
		rc = ctl_attach(conf, args.id);
		goto out;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "agentctl: libcurl cannot start\n");
		rc = CTL_EXIT_FAILURE;
		goto out;
	}
	rc = ctl_run(&args, conf);
	curl_global_cleanup();
out:
	memset(conf, 0, sizeof(*conf));
	free(conf);
	return rc;
}
