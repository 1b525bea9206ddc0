#include "hostsock.h"

#include "config.h"
#include "hostproto.h"
#include "session.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define HOSTSOCK_LEAF        "host.sock"
#define HOSTSOCK_PROC_FD_DIR "/proc/self/fd/%d/" HOSTSOCK_LEAF

/* The uid the session's host runs as: the record's own uid, else the agent user's. */
static uid_t hostsock_uid(const struct bridge *b, const char *id)
{
	struct session *s = malloc(sizeof(*s));
	uid_t uid = b->host_uid;

	if (s != NULL && store_read(&b->store, id, s, NULL) == 0 && s->uid != 0)
		uid = (uid_t)s->uid;
	free(s);
	return uid;
}

int hostsock_connect(const struct bridge *b, const char *id)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct ucred cred = {0};
	socklen_t credlen = sizeof(cred);
	char path[CONFIG_PATH_MAX];
	int fd = -1, dir = -1, r;

	r = hostproto_path(b->cfg, id, HOSTSOCK_LEAF, path, sizeof(path));
	if (r < 0)
		return r;
	if (strlen(path) >= sizeof(addr.sun_path)) {
		/* sun_path holds 108 bytes: reach a long path through the directory's fd. */
		r = hostproto_path(b->cfg, id, "", path, sizeof(path));
		if (r < 0)
			return r;
		dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dir < 0)
			return -errno;
		snprintf(path, sizeof(path), HOSTSOCK_PROC_FD_DIR, dir);
	}
	memcpy(addr.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	/* A unix socket connects at once or fails at once (EAGAIN: its backlog is full). */
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		r = -errno;
		close(fd);
		goto out;
	}
	/* The directory is the agent's: what is at that path may be its symlink to another
	 * socket (tmux's, the API's). Only the session's own listener is its host: its own uid's
	 * when it is caged with one (so that no other session's uid can speak as its host), else
	 * the agent user's. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &credlen) < 0)
		r = -errno;
	else
		r = cred.uid == hostsock_uid(b, id) ? fd : -EPERM;
	if (r < 0)
		close(fd);
out:
	if (dir >= 0)
		close(dir);
	return r;
}
