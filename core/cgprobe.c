/*
 * The probe of the cgroup hierarchies (cgroup.h: cgroup_probe and its kin): which of v1, hybrid
 * or v2 this machine mounts, where, with which controllers, and where this process sits; and a
 * cgroup name's check. cgroup.c makes, joins, reads and removes a session's cgroups.
 */
#include "cgroup.h"
#include "cgroup_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CGROUP_LINE_MAX     4096 /* a mountinfo line: mount options of a cgroup mount are short */
#define CGROUP_MOUNT_FIELDS 64   /* words of a mountinfo line: 10 plus the optional fields */

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void cgroup_unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r != '\0'; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* The CGROUP_C_* bits named in a comma-separated list (v1 super options, /proc/self/cgroup). */
static unsigned cgroup_controllers_of(const char *list)
{
	static const struct {
		const char *name;
		unsigned bit;
	} known[] = {{"memory", CGROUP_C_MEMORY},
		     {"pids", CGROUP_C_PIDS},
		     {"cpu", CGROUP_C_CPU},
		     {"cpuacct", CGROUP_C_CPUACCT},
		     {"freezer", CGROUP_C_FREEZER}};
	unsigned bits = 0;
	const char *p = list;

	while (*p != '\0') {
		size_t n = strcspn(p, ", \n");

		for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (strlen(known[i].name) == n && strncmp(p, known[i].name, n) == 0)
				bits |= known[i].bit;
		p += n;
		if (*p != '\0')
			p++;
	}
	return bits;
}

/* The process's cgroup path in the v1 hierarchy holding bits (or v2 when bits is 0), from
 * /proc/self/cgroup lines "ID:CONTROLLERS:PATH". "/" when the file does not say. */
static void cgroup_self_path(const char *self, unsigned bits, char *out, size_t len)
{
	const char *line = self;

	snprintf(out, len, "/");
	while (line != NULL && *line != '\0') {
		const char *end = strchr(line, '\n');
		const char *c1 = strchr(line, ':');
		const char *c2 = c1 != NULL ? strchr(c1 + 1, ':') : NULL;
		size_t n = end != NULL ? (size_t)(end - line) : strlen(line);

		if (c2 != NULL && c2 < line + n) {
			char ctl[256];
			size_t cl = (size_t)(c2 - c1 - 1);

			if (cl < sizeof(ctl)) {
				memcpy(ctl, c1 + 1, cl);
				ctl[cl] = '\0';
				if ((bits == 0 && cl == 0 && strncmp(line, "0:", 2) == 0) ||
				    (bits != 0 && (cgroup_controllers_of(ctl) & bits) == bits &&
				     cl > 0)) {
					snprintf(out, len, "%.*s", (int)(line + n - c2 - 1),
						 c2 + 1);
					return;
				}
			}
		}
		line = end != NULL ? end + 1 : NULL;
	}
}

/* base = mount point + the process's cgroup relative to the mount's root. */
static int cgroup_base(const char *mnt, const char *root, const char *self, char *out, size_t len)
{
	size_t rl = strlen(root);
	const char *rel = self;

	if (strcmp(root, "/") != 0) {
		/* A bind of a subtree (a container's cgroup namespace shows "/"): a cgroup outside
		 * it is not reachable from here, so the mount itself is the base. */
		if (strncmp(self, root, rl) == 0 && (self[rl] == '/' || self[rl] == '\0'))
			rel = self + rl;
		else
			rel = "";
	}
	while (*rel == '/')
		rel++;
	if (snprintf(out, len, "%s%s%s", mnt, *rel != '\0' ? "/" : "", rel) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

int cgroup_read_all(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	int err = 0;

	if (fd < 0)
		return -errno;
	while (got + 1 < len) {
		ssize_t n = read(fd, buf + got, len - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	close(fd);
	return err;
}

/* The probe, with the process's cgroup list as text (self: "" puts every base at its mount). */
static int cgroup_probe_text(const char *mountinfo, const char *self, struct cgroup_tree *out,
			     struct cause *c)
{
	FILE *f = NULL;
	char *line = NULL;
	char unified_mnt[CGROUP_PATH_MAX] = "", unified_root[CGROUP_PATH_MAX] = "/";
	char ctl[CGROUP_FILE_MAX];
	unsigned have = 0;
	int err = 0;

	memset(out, 0, sizeof(*out));
	out->mode = CGROUP_NONE;
	f = fopen(mountinfo, "re");
	if (f == NULL)
		return cause_fail(c, errno, "cannot read %s: %s", mountinfo, strerror(errno));
	line = malloc(CGROUP_LINE_MAX);
	if (line == NULL) {
		err = -ENOMEM;
		goto out;
	}
	while (fgets(line, CGROUP_LINE_MAX, f) != NULL) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER */
		char *save = NULL, *tok[CGROUP_MOUNT_FIELDS], *fstype = NULL, *super = NULL;
		char *field[5];
		size_t n = 0;

		line[strcspn(line, "\n")] = '\0';
		for (char *s = strtok_r(line, " ", &save); s != NULL && n < CGROUP_MOUNT_FIELDS;
		     s = strtok_r(NULL, " ", &save))
			tok[n++] = s;
		for (size_t i = 6; i + 3 < n; i++) {
			if (strcmp(tok[i], "-") == 0) {
				fstype = tok[i + 1];
				super = tok[i + 3];
				break;
			}
		}
		if (fstype == NULL)
			continue;
		memcpy(field, tok, sizeof(field));
		cgroup_unescape(field[3]);
		cgroup_unescape(field[4]);
		if (strcmp(fstype, "cgroup2") == 0) {
			if (unified_mnt[0] == '\0' && strlen(field[4]) < sizeof(unified_mnt)) {
				snprintf(unified_mnt, sizeof(unified_mnt), "%s", field[4]);
				snprintf(unified_root, sizeof(unified_root), "%s", field[3]);
			}
		} else if (strcmp(fstype, "cgroup") == 0) {
			unsigned bits = cgroup_controllers_of(super) & ~have;
			struct cgroup_hier *h;
			char path[CGROUP_PATH_MAX];

			if (bits == 0 || out->n_v1 >= CGROUP_V1_MAX)
				continue;
			/* Find the process's cgroup by the full list of the mount's controllers. */
			cgroup_self_path(self, cgroup_controllers_of(super), path, sizeof(path));
			h = &out->v1[out->n_v1];
			if (cgroup_base(field[4], field[3], path, h->dir, sizeof(h->dir)) < 0)
				continue;
			h->controllers = cgroup_controllers_of(super);
			have |= h->controllers;
			out->n_v1++;
		}
	}
	if (unified_mnt[0] != '\0') {
		char path[CGROUP_PATH_MAX];

		cgroup_self_path(self, 0, path, sizeof(path));
		err = cgroup_base(unified_mnt, unified_root, path, out->unified,
				  sizeof(out->unified));
		if (err < 0)
			goto out;
	}
	if (have & CGROUP_C_MEMORY) {
		/* Limits live where the memory controller is: v1 here, whatever else is mounted. */
		out->mode = CGROUP_V1;
	} else if (out->unified[0] != '\0') {
		char p[CGROUP_FULL_MAX];

		snprintf(p, sizeof(p), "%s/cgroup.controllers", out->unified);
		if (cgroup_read_all(p, ctl, sizeof(ctl)) == 0) {
			for (char *s = ctl; *s != '\0'; s++)
				if (*s == ' ')
					*s = ',';
			out->v2_controllers = cgroup_controllers_of(ctl);
		}
		out->mode = CGROUP_V2;
		out->n_v1 = 0;
	} else {
		out->n_v1 = 0;
	}
	err = 0;
out:
	free(line);
	fclose(f);
	return err;
}

int cgroup_probe_files(const char *mountinfo, const char *self_cgroup, struct cgroup_tree *out,
		       struct cause *c)
{
	char self[CGROUP_FILE_MAX];
	int err = cgroup_read_all(self_cgroup, self, sizeof(self));

	if (err < 0) {
		memset(out, 0, sizeof(*out));
		out->mode = CGROUP_NONE;
		return cause_fail(c, err, "cannot read %s: %s", self_cgroup, strerror(-err));
	}
	return cgroup_probe_text(mountinfo, self, out, c);
}

int cgroup_probe_root(const char *mountinfo, struct cgroup_tree *out, struct cause *c)
{
	return cgroup_probe_text(mountinfo != NULL ? mountinfo : "/proc/self/mountinfo", "", out,
				 c);
}

int cgroup_probe(const char *mountinfo, struct cgroup_tree *out, struct cause *c)
{
	return cgroup_probe_files(mountinfo != NULL ? mountinfo : "/proc/self/mountinfo",
				  "/proc/self/cgroup", out, c);
}

bool cgroup_name_valid(const char *name, bool path)
{
	size_t len = strlen(name);
	const char *p = name;

	if (len == 0 || len > CGROUP_NAME_MAX)
		return false;
	while (*p != '\0') {
		size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				     "0123456789._-\\");

		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
		if (*p == '\0')
			break;
		if (*p != '/' || !path || p[1] == '\0')
			return false;
		p++;
	}
	return true;
}
