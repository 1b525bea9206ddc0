#include "cageuid.h"

#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define CAGEUID_LOCK     ".lock" /* in the registry: the flock every allocation holds */
#define CAGEUID_PWBUF    4096    /* getpwuid_r's buffer: only whether an entry exists matters */
#define CAGEUID_UID_TOP  65533u  /* nobody (65534) and (uid_t)-1's 16-bit twin stay out */
#define CAGEUID_SHELL    "/bin/bash"
#define CAGEUID_PATH_MAX (PATH_MAX + 64)

int cageuid_parse_range(const char *s, uid_t *min, uid_t *max)
{
	unsigned long lo, hi;
	char *end;

	if (s == NULL || s[0] < '0' || s[0] > '9')
		return -EINVAL;
	errno = 0;
	lo = strtoul(s, &end, 10);
	if (errno != 0 || *end != '-' || end[1] < '0' || end[1] > '9')
		return -EINVAL;
	hi = strtoul(end + 1, &end, 10);
	if (errno != 0 || *end != '\0' || lo < 1 || lo > hi || hi > CAGEUID_UID_TOP)
		return -EINVAL;
	*min = (uid_t)lo;
	*max = (uid_t)hi;
	return 0;
}

int cageuid_name(uid_t uid, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, CAGEUID_NAME_PREFIX "%u", (unsigned)uid);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

static int cageuid_holder(const char *state_dir, const char *session_id, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%s %s\n", state_dir, session_id);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

static int cageuid_entry_path(const struct cageuid_dirs *dirs, uid_t uid, char *out, size_t len)
{
	int n = snprintf(out, len, "%s/%u", dirs->registry, (unsigned)uid);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Reads uid's registry entry into out: 1, or 0 when it has none, or -errno. */
static int cageuid_entry_read(const struct cageuid_dirs *dirs, uid_t uid, char *out, size_t len)
{
	char path[CAGEUID_PATH_MAX];
	ssize_t n;
	int fd, r;

	if ((r = cageuid_entry_path(dirs, uid, path, sizeof(path))) < 0)
		return r;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	n = read(fd, out, len - 1);
	r = n < 0 ? -errno : 1;
	close(fd);
	if (n >= 0)
		out[n] = '\0';
	return r;
}

/* Whether an entry's holder is gone: its state dir (up to the last space) no longer exists. */
static bool cageuid_holder_gone(const char *holder)
{
	char dir[CAGEUID_HOLDER_MAX];
	const char *sp = strrchr(holder, ' ');
	struct stat st;

	if (sp == NULL || (size_t)(sp - holder) >= sizeof(dir))
		return false; /* not ours to judge: kept */
	memcpy(dir, holder, (size_t)(sp - holder));
	dir[sp - holder] = '\0';
	return dir[0] == '/' && stat(dir, &st) < 0 && errno == ENOENT;
}

/* Whether the user database knows uid (as anyone: our own drop-ins included). */
static int cageuid_known(uid_t uid, bool *known)
{
	char buf[CAGEUID_PWBUF];
	struct passwd pw, *found = NULL;
	int e = getpwuid_r(uid, &pw, buf, sizeof(buf), &found);

	/* ERANGE: an entry too big for the buffer is still an entry. */
	if (e == ERANGE) {
		*known = true;
		return 0;
	}
	if (e != 0 && e != ENOENT && e != ESRCH)
		return -EIO;
	*known = found != NULL;
	return 0;
}

/* Whether the passwd drop-in for uid is ours (so getpwuid knowing uid says nothing against it). */
static bool cageuid_dropin_ours(const struct cageuid_dirs *dirs, uid_t uid)
{
	char path[CAGEUID_PATH_MAX], name[CAGEUID_NAME_MAX + 1];
	struct stat st;

	if (dirs->userdb == NULL || cageuid_name(uid, name, sizeof(name)) < 0)
		return false;
	snprintf(path, sizeof(path), "%s/%s.user", dirs->userdb, name);
	return stat(path, &st) == 0;
}

static int cageuid_write_json(const char *path, json_object *o)
{
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	int r = text == NULL ? -ENOMEM : fsutil_write_atomic(path, text, 0644, false);

	json_object_put(o);
	return r;
}

/* ln -sf target linkpath, atomically enough: a stale link is replaced. */
static int cageuid_symlink(const char *target, const char *linkpath)
{
	if (symlink(target, linkpath) == 0)
		return 0;
	if (errno != EEXIST)
		return -errno;
	if (unlink(linkpath) < 0 && errno != ENOENT)
		return -errno;
	return symlink(target, linkpath) < 0 ? -errno : 0;
}

/* nss-systemd's records: NAME.user and NAME.group, and UID.user / GID.group links to them. */
static int cageuid_publish(const struct cageuid_dirs *dirs, uid_t uid, const char *home)
{
	char name[CAGEUID_NAME_MAX + 1], path[CAGEUID_PATH_MAX], leaf[CAGEUID_NAME_MAX + 8],
	    link[CAGEUID_PATH_MAX];
	json_object *u, *g;
	int r;

	if (dirs->userdb == NULL)
		return 0;
	if ((r = cageuid_name(uid, name, sizeof(name))) < 0)
		return r;
	if (mkdir(dirs->userdb, 0755) < 0 && errno != EEXIST)
		return -errno;
	u = json_object_new_object();
	g = json_object_new_object();
	if (u == NULL || g == NULL) {
		json_object_put(u);
		json_object_put(g);
		return -ENOMEM;
	}
	json_object_object_add(u, "userName", json_object_new_string(name));
	json_object_object_add(u, "uid", json_object_new_int64(uid));
	json_object_object_add(u, "gid", json_object_new_int64(uid));
	json_object_object_add(u, "realName", json_object_new_string("agentd session agent"));
	json_object_object_add(u, "homeDirectory", json_object_new_string(home));
	json_object_object_add(u, "shell", json_object_new_string(CAGEUID_SHELL));
	json_object_object_add(g, "groupName", json_object_new_string(name));
	json_object_object_add(g, "gid", json_object_new_int64(uid));
	snprintf(path, sizeof(path), "%s/%s.user", dirs->userdb, name);
	if ((r = cageuid_write_json(path, u)) < 0) {
		json_object_put(g);
		return r;
	}
	snprintf(path, sizeof(path), "%s/%s.group", dirs->userdb, name);
	if ((r = cageuid_write_json(path, g)) < 0)
		return r;
	snprintf(leaf, sizeof(leaf), "%s.user", name);
	snprintf(link, sizeof(link), "%s/%u.user", dirs->userdb, (unsigned)uid);
	if ((r = cageuid_symlink(leaf, link)) < 0)
		return r;
	snprintf(leaf, sizeof(leaf), "%s.group", name);
	snprintf(link, sizeof(link), "%s/%u.group", dirs->userdb, (unsigned)uid);
	return cageuid_symlink(leaf, link);
}

static void cageuid_unpublish(const struct cageuid_dirs *dirs, uid_t uid)
{
	char name[CAGEUID_NAME_MAX + 1], path[CAGEUID_PATH_MAX];
	static const char *const kinds[] = {"user", "group"};

	if (dirs->userdb == NULL || cageuid_name(uid, name, sizeof(name)) < 0)
		return;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s.%s", dirs->userdb, name, kinds[i]);
		unlink(path);
		snprintf(path, sizeof(path), "%s/%u.%s", dirs->userdb, (unsigned)uid, kinds[i]);
		unlink(path);
	}
}

/* Opens the registry (made when missing: root's, 0700) and takes its lock. Returns the fd. */
static int cageuid_lock(const struct cageuid_dirs *dirs, struct cause *cause)
{
	char path[CAGEUID_PATH_MAX];
	int fd, r;

	if ((r = fsutil_mkdir_p(dirs->registry)) < 0)
		return cause_fail(cause, EIO, "cannot make the uid registry %s: %s", dirs->registry,
				  strerror(-r));
	snprintf(path, sizeof(path), "%s/" CAGEUID_LOCK, dirs->registry);
	if ((fd = fsutil_lock(path, LOCK_EX, 0600)) < 0)
		return cause_fail(cause, EIO, "cannot lock %s: %s", path, strerror(-fd));
	return fd;
}

/* Writes uid's entry (holder) and its drop-ins, under the lock. */
static int cageuid_take(const struct cageuid_dirs *dirs, uid_t uid, const char *holder,
			const char *home, struct cause *cause)
{
	char path[CAGEUID_PATH_MAX];
	int r;

	if ((r = cageuid_entry_path(dirs, uid, path, sizeof(path))) < 0 ||
	    (r = fsutil_write_atomic(path, holder, 0600, false)) < 0)
		return cause_fail(cause, EIO, "cannot record uid %u in %s: %s", (unsigned)uid,
				  dirs->registry, strerror(-r));
	if ((r = cageuid_publish(dirs, uid, home)) < 0) {
		cageuid_unpublish(dirs, uid);
		unlink(path);
		return cause_fail(cause, EIO, "cannot publish uid %u in %s: %s", (unsigned)uid,
				  dirs->userdb, strerror(-r));
	}
	return 0;
}

/*
 * Whether uid is free for holder: 1 free, 2 already holder's, 0 taken, -errno. An entry whose
 * holder is gone is removed (with its drop-ins) on the way.
 */
static int cageuid_state(const struct cageuid_dirs *dirs, uid_t uid, const char *holder)
{
	char cur[CAGEUID_HOLDER_MAX], path[CAGEUID_PATH_MAX];
	bool known;
	int r = cageuid_entry_read(dirs, uid, cur, sizeof(cur));

	if (r < 0)
		return r;
	if (r == 1) {
		if (strcmp(cur, holder) == 0)
			return 2;
		if (!cageuid_holder_gone(cur))
			return 0;
		cageuid_unpublish(dirs, uid);
		if (cageuid_entry_path(dirs, uid, path, sizeof(path)) == 0)
			unlink(path);
	}
	/* Our own drop-in without an entry is a leftover of ours, not someone's user. */
	if (cageuid_dropin_ours(dirs, uid))
		return 1;
	if ((r = cageuid_known(uid, &known)) < 0)
		return r;
	return known ? 0 : 1;
}

/* The uid of [min, max] whose registry entry names holder: 1 with *out, 0 when none, -errno. */
static int cageuid_held(const struct cageuid_dirs *dirs, uid_t min, uid_t max, const char *holder,
			uid_t *out)
{
	char cur[CAGEUID_HOLDER_MAX];
	DIR *d = opendir(dirs->registry);
	struct dirent *e;
	int r = 0;

	if (d == NULL)
		return errno == ENOENT ? 0 : -errno;
	while (r == 0 && (e = readdir(d)) != NULL) {
		unsigned long uid;
		char *end;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue; /* the lock, an entry's temporary file */
		errno = 0;
		uid = strtoul(e->d_name, &end, 10);
		if (errno != 0 || *end != '\0' || uid < min || uid > max)
			continue;
		r = cageuid_entry_read(dirs, (uid_t)uid, cur, sizeof(cur));
		if (r == 1 && strcmp(cur, holder) == 0)
			*out = (uid_t)uid;
		else if (r > 0)
			r = 0; /* another holder's */
	}
	closedir(d);
	return r;
}

int cageuid_alloc(const struct cageuid_dirs *dirs, uid_t min, uid_t max, const char *state_dir,
		  const char *session_id, const char *home, uid_t *out, struct cause *cause)
{
	char holder[CAGEUID_HOLDER_MAX];
	uid_t free_uid = 0;
	bool have_free = false;
	int fd, r;

	if (min < 1 || min > max || max > CAGEUID_UID_TOP)
		return cause_fail(cause, EINVAL, "the uid range %u-%u is not valid", (unsigned)min,
				  (unsigned)max);
	if (cageuid_holder(state_dir, session_id, holder, sizeof(holder)) < 0)
		return cause_fail(cause, ENAMETOOLONG, "the state dir's path is too long");
	if ((fd = cageuid_lock(dirs, cause)) < 0)
		return fd;
	/* The uid the session holds already (a creation tried again) wins over the lowest free one.
	 * Only the registry's entries can say so: reading them costs a lookup per uid taken, where
	 * asking the user database about the whole range cost one per uid of it (~0.5 s). */
	if ((r = cageuid_held(dirs, min, max, holder, out)) != 0) {
		if (r > 0)
			r = cageuid_take(dirs, *out, holder, home, cause);
		else
			r = cause_fail(cause, EIO, "cannot read the uid registry %s: %s",
				       dirs->registry, strerror(-r));
		goto out;
	}
	for (uid_t uid = min;; uid++) {
		r = cageuid_state(dirs, uid, holder);
		if (r < 0) {
			r = cause_fail(cause, EIO, "cannot read the uid registry %s: %s",
				       dirs->registry, strerror(-r));
			goto out;
		}
		if (r > 0) {
			free_uid = uid;
			have_free = true;
			break;
		}
		if (uid == max)
			break;
	}
	if (!have_free) {
		r = cause_fail(cause, ENOSPC,
			       "every uid of %u-%u is in use (AGENTD_SESSION_UIDS): delete "
			       "sessions or widen the range",
			       (unsigned)min, (unsigned)max);
		goto out;
	}
	*out = free_uid;
	r = cageuid_take(dirs, free_uid, holder, home, cause);
out:
	close(fd);
	return r;
}

int cageuid_claim(const struct cageuid_dirs *dirs, uid_t uid, const char *state_dir,
		  const char *session_id, const char *home, struct cause *cause)
{
	char holder[CAGEUID_HOLDER_MAX];
	int fd, r;

	if (cageuid_holder(state_dir, session_id, holder, sizeof(holder)) < 0)
		return cause_fail(cause, ENAMETOOLONG, "the state dir's path is too long");
	if ((fd = cageuid_lock(dirs, cause)) < 0)
		return fd;
	r = cageuid_state(dirs, uid, holder);
	if (r < 0)
		r = cause_fail(cause, EIO, "cannot read the uid registry %s: %s", dirs->registry,
			       strerror(-r));
	else if (r == 0)
		r = cause_fail(cause, EBUSY,
			       "uid %u, the session's, is now someone else's (the uid registry "
			       "or the user database has it)",
			       (unsigned)uid);
	else
		r = cageuid_take(dirs, uid, holder, home, cause);
	close(fd);
	return r;
}

int cageuid_release(const struct cageuid_dirs *dirs, uid_t uid, const char *state_dir,
		    const char *session_id)
{
	char holder[CAGEUID_HOLDER_MAX], cur[CAGEUID_HOLDER_MAX], path[CAGEUID_PATH_MAX];
	int fd, r;

	if (cageuid_holder(state_dir, session_id, holder, sizeof(holder)) < 0)
		return -ENAMETOOLONG;
	if ((fd = cageuid_lock(dirs, NULL)) < 0)
		return -EIO;
	r = cageuid_entry_read(dirs, uid, cur, sizeof(cur));
	if (r == 1 && strcmp(cur, holder) == 0) {
		cageuid_unpublish(dirs, uid);
		r = cageuid_entry_path(dirs, uid, path, sizeof(path));
		if (r == 0 && unlink(path) < 0 && errno != ENOENT)
			r = -EIO;
	} else if (r > 0) {
		r = 0; /* another holder's: not ours to give back */
	}
	close(fd);
	return r < 0 ? -EIO : 0;
}
