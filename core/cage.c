#include "cage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CAGE_NAME_MAX 128 /* a variable's name */

static int cage_id(const char *s, unsigned long *out)
{
	char *end;

	if (s == NULL || s[0] < '0' || s[0] > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoul(s, &end, 10);
	/* 0 is root: the cage never runs an agent as root. */
	return errno != 0 || *end != '\0' || *out == 0 || *out >= 65534 ? -EINVAL : 0;
}

static int cage_add(const char **list, size_t *n, const char *path, const char *opt,
		    struct cause *cause)
{
	if (path == NULL || path[0] != '/')
		return cause_fail(cause, EINVAL, "%s needs an absolute path", opt);
	if (*n >= CAGE_PATHS_MAX)
		return cause_fail(cause, E2BIG, "too many %s paths", opt);
	list[(*n)++] = path;
	return 0;
}

int cage_parse(int argc, char **argv, struct cage_opts *o, struct cause *cause)
{
	unsigned long id;
	int i, r;

	memset(o, 0, sizeof(*o));
	o->bwrap = CAGE_BWRAP_DEFAULT;
	o->seccomp_fd = -1;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--") == 0)
			break;
		if (v == NULL)
			return cause_fail(cause, EINVAL, "%s needs a value", a);
		i++;
		if (strcmp(a, "--uid") == 0 || strcmp(a, "--gid") == 0) {
			if (cage_id(v, &id) < 0)
				return cause_fail(cause, EINVAL, "%s: not an unprivileged id", a);
			if (a[2] == 'u')
				o->uid = (uid_t)id, o->have_uid = true;
			else
				o->gid = (gid_t)id;
		} else if (strcmp(a, "--user") == 0) {
			o->user = v;
		} else if (strcmp(a, "--home") == 0) {
			o->home = v;
		} else if (strcmp(a, "--chdir") == 0) {
			o->chdir = v;
		} else if (strcmp(a, "--cgroup") == 0) {
			o->cgroup = v;
		} else if (strcmp(a, "--systemd") == 0) {
			o->systemd = v;
		} else if (strcmp(a, "--secrets") == 0) {
			o->secrets = v;
		} else if (strcmp(a, "--bwrap") == 0) {
			o->bwrap = v;
		} else if (strcmp(a, "--hide") == 0) {
			if ((r = cage_add(o->hide, &o->nhide, v, a, cause)) < 0)
				return r;
		} else if (strcmp(a, "--bind") == 0) {
			if ((r = cage_add(o->bind, &o->nbind, v, a, cause)) < 0)
				return r;
		} else if (strcmp(a, "--ro") == 0) {
			if ((r = cage_add(o->ro, &o->nro, v, a, cause)) < 0)
				return r;
		} else if (strcmp(a, "--ro-try") == 0) {
			if ((r = cage_add(o->ro_try, &o->nro_try, v, a, cause)) < 0)
				return r;
		} else {
			return cause_fail(cause, EINVAL, "unknown option %s", a);
		}
	}
	if (!o->have_uid || o->gid == 0)
		return cause_fail(cause, EINVAL, "--uid and --gid are required");
	if (o->user == NULL || o->user[0] == '\0' || o->home == NULL || o->home[0] != '/')
		return cause_fail(cause, EINVAL, "--user and an absolute --home are required");
	if (o->chdir != NULL && o->chdir[0] != '/')
		return cause_fail(cause, EINVAL, "--chdir needs an absolute path");
	if (i >= argc - 1)
		return cause_fail(cause, EINVAL, "no command after --");
	if (argc - i - 1 > CAGE_ARGV_MAX)
		return cause_fail(cause, E2BIG, "the command has too many words");
	o->argv = argv + i + 1;
	return 0;
}

static bool cage_var_name(const char *s)
{
	if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
		return false;
	for (; *s != '\0'; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

void cage_secrets_free(struct cage_secrets *s)
{
	for (size_t i = 0; i < s->n; i++) {
		/* explicit_bzero: the wipe is not optimised away before free. */
		explicit_bzero(s->words[i], strlen(s->words[i]));
		free(s->words[i]);
	}
	s->n = 0;
}

/* Reads the regular file name (in dirfd) into "NAME=value". Returns the word or NULL, with *err. */
static char *cage_secret_word(int dirfd, const char *name, int *err)
{
	size_t nlen = strlen(name), len = 0;
	char *w = malloc(nlen + 1 + CAGE_SECRET_MAX + 2);
	struct stat st;
	ssize_t n;
	int fd;

	*err = 0;
	if (w == NULL) {
		*err = ENOMEM;
		return NULL;
	}
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		*err = fd < 0 && errno == ELOOP ? 0 : (fd < 0 ? errno : 0); /* a symlink: skipped */
		if (fd >= 0)
			close(fd);
		free(w);
		return NULL;
	}
	memcpy(w, name, nlen);
	w[nlen] = '=';
	while ((n = read(fd, w + nlen + 1 + len, CAGE_SECRET_MAX + 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (n < 0 || len > CAGE_SECRET_MAX || memchr(w + nlen + 1, '\0', len) != NULL) {
		*err = n < 0 ? EIO : (len > CAGE_SECRET_MAX ? E2BIG : EINVAL);
		explicit_bzero(w, nlen + 1 + len);
		free(w);
		return NULL;
	}
	if (len > 0 && w[nlen + len] == '\n')
		len--;
	if (len > 0 && w[nlen + len] == '\r')
		len--;
	w[nlen + 1 + len] = '\0';
	return w;
}

int cage_secrets_read(const char *dir, struct cage_secrets *out, struct cause *cause)
{
	struct dirent *e;
	DIR *d;
	int r = 0, err;

	out->n = 0;
	if (dir == NULL || dir[0] == '\0')
		return 0;
	d = opendir(dir);
	if (d == NULL)
		return errno == ENOENT
			   ? 0
			   : cause_fail(cause, EIO, "cannot read the secrets directory %s: %s", dir,
					strerror(errno));
	while ((e = readdir(d)) != NULL) {
		char *w;

		if (e->d_name[0] == '.')
			continue; /* hidden entries, . and .. */
		if (!cage_var_name(e->d_name) || strlen(e->d_name) > CAGE_NAME_MAX) {
			r = cause_fail(cause, EINVAL,
				       "%s/%s: not a variable's name ([A-Za-z_][A-Za-z0-9_]*)", dir,
				       e->d_name);
			break;
		}
		w = cage_secret_word(dirfd(d), e->d_name, &err);
		if (w == NULL) {
			if (err == 0)
				continue; /* not a regular file */
			r = cause_fail(cause, err, "the secret %s cannot be used: %s", e->d_name,
				       err == E2BIG    ? "too long"
				       : err == EINVAL ? "it holds a NUL byte"
						       : strerror(err));
			break;
		}
		if (out->n >= CAGE_SECRETS_MAX) {
			explicit_bzero(w, strlen(w));
			free(w);
			r = cause_fail(cause, E2BIG, "more than %d secrets in %s", CAGE_SECRETS_MAX,
				       dir);
			break;
		}
		out->words[out->n++] = w;
	}
	closedir(d);
	if (r < 0)
		cage_secrets_free(out);
	return r;
}

void cage_set_seccomp(struct cage_opts *o, int fd)
{
	o->seccomp_fd = fd;
	snprintf(o->seccomp_text, sizeof(o->seccomp_text), "%d", fd);
}

int cage_bwrap_argv(const struct cage_opts *o, const char *bwrap, char **out, size_t outmax)
{
	size_t n = 0, argc = 0, need;

	while (o->argv[argc] != NULL)
		argc++;
	need = CAGE_FIXED_WORDS + 3 * (o->nhide + o->nbind + o->nro + o->nro_try) + 3 + argc;
	if (need > outmax)
		return -E2BIG;
	out[n++] = (char *)bwrap;
	/* The agent's processes die with the pane (a daemonised grandchild too: the pid
	 * namespace's init goes). No --new-session: it takes the TUI's controlling tty away. */
	out[n++] = "--die-with-parent";
	out[n++] = "--unshare-pid";
	out[n++] = "--unshare-ipc";
	out[n++] = "--unshare-uts";
	/* The host read-only: the agent writes only where it is given, and nothing another session
	 * could read back (/var/tmp, /dev/shm) is shared. */
	out[n++] = "--ro-bind";
	out[n++] = "/";
	out[n++] = "/";
	/* The pane's tty and /dev/null & co. stay the host's device nodes. */
	out[n++] = "--dev-bind";
	out[n++] = "/dev";
	out[n++] = "/dev";
	out[n++] = "--tmpfs";
	out[n++] = "/dev/shm";
	out[n++] = "--proc";
	out[n++] = "/proc";
	out[n++] = "--tmpfs";
	out[n++] = "/tmp";
	out[n++] = "--tmpfs";
	out[n++] = "/var/tmp";
	/* Hidden first, then bound back: a bind inside a hidden dir shows only itself. */
	for (size_t i = 0; i < o->nhide; i++) {
		out[n++] = "--tmpfs";
		out[n++] = (char *)o->hide[i];
	}
	for (size_t i = 0; i < o->nro; i++) {
		out[n++] = "--ro-bind";
		out[n++] = (char *)o->ro[i];
		out[n++] = (char *)o->ro[i];
	}
	for (size_t i = 0; i < o->nro_try; i++) {
		out[n++] = "--ro-bind-try";
		out[n++] = (char *)o->ro_try[i];
		out[n++] = (char *)o->ro_try[i];
	}
	for (size_t i = 0; i < o->nbind; i++) {
		out[n++] = "--bind";
		out[n++] = (char *)o->bind[i];
		out[n++] = (char *)o->bind[i];
	}
	out[n++] = "--bind";
	out[n++] = (char *)o->home;
	out[n++] = (char *)o->home;
	if (o->chdir != NULL) {
		out[n++] = "--chdir";
		out[n++] = (char *)o->chdir;
	}
	/* Loaded by bwrap last, right before it execs the agent. */
	if (o->seccomp_fd >= 0) {
		out[n++] = "--seccomp";
		out[n++] = (char *)o->seccomp_text;
	}
	out[n++] = "--";
	for (size_t i = 0; i < argc; i++)
		out[n++] = o->argv[i];
	out[n] = NULL;
	return 0;
}
