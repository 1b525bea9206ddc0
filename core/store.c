#include "store.h"

#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int store_path(const struct store *st, const char *id, const char *suffix, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%s/%s%s", st->dir, id, suffix);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

static int store_mkdir(const char *path, struct cause *cause)
{
	if (mkdir(path, 0750) < 0 && errno != EEXIST)
		return cause_fail(cause, errno, "cannot create %s: %s", path, strerror(errno));
	return 0;
}

int store_init(struct store *st, const char *runtime_dir, struct cause *cause)
{
	int n = snprintf(st->dir, sizeof(st->dir), "%s/sessions", runtime_dir);
	int r;

	if (n < 0 || (size_t)n >= sizeof(st->dir))
		return cause_fail(cause, ENAMETOOLONG, "runtime directory path is too long");
	r = store_mkdir(runtime_dir, cause);
	if (r < 0)
		return r;
	return store_mkdir(st->dir, cause);
}

static int store_flock(int fd)
{
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

static int store_lock_path(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640), r;

	if (fd < 0)
		return -errno;
	if ((r = store_flock(fd)) < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* Whether fd is still the file at path: a lock file removed (or replaced) while we waited for it
 * locks nothing any more. */
static int store_lock_current(int fd, const char *path)
{
	struct stat a, b;

	if (fstat(fd, &a) < 0)
		return -errno;
	if (stat(path, &b) < 0)
		return errno == ENOENT ? 0 : -errno;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static bool store_has_record(const struct store *st, const char *id)
{
	char path[SESSION_PATH_MAX];

	return store_path(st, id, ".json", path, sizeof(path)) == 0 && access(path, F_OK) == 0;
}

/*
 * The session lock file exists while the record does: store_lock_create makes it, store_remove
 * and store_unlock_session remove it while they hold it. Whoever opened it before that waits,
 * then finds it is no longer the file at its path and starts over, so one holder at a time holds
 * the lock of an id.
 */
static int store_lock_id(const struct store *st, const char *id, bool create)
{
	char path[SESSION_PATH_MAX];
	int r = session_id_valid(id) ? store_path(st, id, ".lock", path, sizeof(path)) : -EINVAL;

	if (r < 0)
		return r;
	for (int tries = 0; tries < STORE_LOCK_TRIES; tries++) {
		int fd = open(path, O_RDWR | O_CLOEXEC);

		/* A record without a lock file (written before lock files were removed) still
		 * gets its lock; an unknown id gets none and no file. */
		if (fd < 0 && errno == ENOENT && (create || store_has_record(st, id)))
			fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
		if (fd < 0)
			return -errno;
		r = store_flock(fd);
		if (r == 0)
			r = store_lock_current(fd, path);
		if (r == 1)
			return fd;
		close(fd);
		if (r < 0)
			return r;
	}
	return -EAGAIN;
}

int store_lock(const struct store *st, const char *id)
{
	return store_lock_id(st, id, false);
}

int store_lock_create(const struct store *st, const char *id)
{
	return store_lock_id(st, id, true);
}

/* Removes the lock file of id; the caller holds it and releases it next. */
static void store_unlink_lock(const struct store *st, const char *id)
{
	char path[SESSION_PATH_MAX];

	if (store_path(st, id, ".lock", path, sizeof(path)) == 0)
		unlink(path);
}

void store_unlock_session(const struct store *st, const char *id, int fd)
{
	if (fd >= 0 && session_id_valid(id) && !store_has_record(st, id))
		store_unlink_lock(st, id);
	store_unlock(fd);
}

int store_lock_all(const struct store *st)
{
	char path[SESSION_PATH_MAX];
	int r = store_path(st, "", ".store.lock", path, sizeof(path));

	return r < 0 ? r : store_lock_path(path);
}

static int store_lock_all_view(const struct store *st)
{
	char path[SESSION_PATH_MAX];
	int r = store_path(st, "", ".view.lock", path, sizeof(path));

	return r < 0 ? r : store_lock_path(path);
}

void store_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* closing the only descriptor releases the flock */
}

static int store_read_path(const char *path, struct session *out, struct cause *cause)
{
	char *buf = NULL;
	json_object *obj = NULL;
	json_tokener *tok = NULL;
	struct stat sb;
	ssize_t got = 0;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : cause_fail(cause, errno, "%s", strerror(errno));
	if (fstat(fd, &sb) < 0 || sb.st_size > SESSION_RECORD_MAX) {
		r = cause_fail(cause, EINVAL, "record %s is too large", path);
		goto out;
	}
	buf = malloc((size_t)sb.st_size + 1);
	if (buf == NULL) {
		r = -ENOMEM;
		goto out;
	}
	while (got < sb.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)(sb.st_size - got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	tok = json_tokener_new();
	if (tok == NULL) {
		r = -ENOMEM;
		goto out;
	}
	obj = json_tokener_parse_ex(tok, buf, (int)got);
	if (obj == NULL || json_tokener_get_parse_end(tok) != (size_t)got) {
		r = cause_fail(cause, EINVAL, "record %s is not valid JSON", path);
		goto out;
	}
	r = session_from_json(out, obj, cause);
out:
	json_object_put(obj);
	if (tok != NULL)
		json_tokener_free(tok); /* json-c's free is not NULL-safe */
	free(buf);
	close(fd);
	return r;
}

int store_read(const struct store *st, const char *id, struct session *out, struct cause *cause)
{
	char path[SESSION_PATH_MAX];
	int r = session_id_valid(id) ? store_path(st, id, ".json", path, sizeof(path)) : -EINVAL;

	if (r < 0)
		return cause_fail(cause, r, "invalid session id");
	r = store_read_path(path, out, cause);
	if (r == 0 && strcmp(out->id, id) != 0)
		return cause_fail(cause, EINVAL, "record %s holds id %s", path, out->id);
	return r;
}

static int store_write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int store_write_file(const char *path, const char *text, mode_t mode, bool sync)
{
	char tmp[SESSION_PATH_MAX + 8];
	int fd, r;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	r = store_write_all(fd, text, strlen(text));
	if (r == 0 && sync && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

int store_rebuild_view(const struct store *st)
{
	char path[SESSION_PATH_MAX + 8];
	struct session *list = NULL;
	json_object *arr = NULL;
	size_t n = 0;
	int fd, r;

	if (snprintf(path, sizeof(path), "%s.json", st->dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = store_lock_all_view(st);
	if (fd < 0)
		return fd;
	r = store_list(st, &list, &n);
	if (r < 0)
		goto out;
	arr = json_object_new_array_ext((int)n);
	for (size_t i = 0; i < n; i++)
		json_object_array_add(arr, session_to_json(&list[i], false));
	/* Derived data: no fsync, it is rebuilt from the records whenever they change. */
	r = store_write_file(path,
			     json_object_to_json_string_ext(
				 arr, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
			     0644, false);
out:
	json_object_put(arr);
	free(list);
	store_unlock(fd);
	return r;
}

int store_write(const struct store *st, struct session *s, struct cause *cause)
{
	char path[SESSION_PATH_MAX];
	json_object *obj;
	int r;

	s->updated_at = (int64_t)time(NULL);
	if (!session_id_valid(s->id))
		return cause_fail(cause, EINVAL, "invalid session id");
	if ((r = store_path(st, s->id, ".json", path, sizeof(path))) < 0)
		return cause_fail(cause, -r, "record path is too long");
	obj = session_to_json(s, true);
	if (obj == NULL)
		return cause_fail(cause, ENOMEM, "out of memory");
	/* The temp name is per session and writers hold the session lock: no two share it. */
	r = store_write_file(path,
			     json_object_to_json_string_ext(
				 obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
			     0640, true);
	json_object_put(obj);
	if (r < 0)
		return cause_fail(cause, r, "cannot write record %s: %s", path, strerror(-r));
	store_rebuild_view(st);
	return 0;
}

int store_remove(const struct store *st, const char *id)
{
	char path[SESSION_PATH_MAX];
	int r = session_id_valid(id) ? store_path(st, id, ".json", path, sizeof(path)) : -EINVAL;

	if (r < 0)
		return r;
	if (unlink(path) < 0)
		return -errno;
	store_rebuild_view(st);
	/* Last: from here on another process may take a new lock of id (see store_lock_id). */
	store_unlink_lock(st, id);
	return 0;
}

static int store_cmp(const void *a, const void *b)
{
	return strcmp(((const struct session *)a)->id, ((const struct session *)b)->id);
}

int store_list(const struct store *st, struct session **out, size_t *n)
{
	struct session *list = NULL;
	size_t count = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int r = 0;

	*out = NULL;
	*n = 0;
	d = opendir(st->dir);
	if (d == NULL)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		char path[SESSION_PATH_MAX];
		struct cause cause = {{0}};
		size_t len = strlen(de->d_name);

		if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0 || de->d_name[0] == '.')
			continue;
		if (count == STORE_MAX_RECORDS) {
			r = -E2BIG;
			break;
		}
		if (count == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct session *nl = realloc(list, ncap * sizeof(*nl));

			if (nl == NULL) {
				r = -ENOMEM;
				break;
			}
			list = nl;
			cap = ncap;
		}
		if (snprintf(path, sizeof(path), "%s/%s", st->dir, de->d_name) >= (int)sizeof(path))
			continue;
		r = store_read_path(path, &list[count], &cause);
		if (r == -ENOENT) { /* removed between readdir and open */
			r = 0;
			continue;
		}
		if (r == 0 && (strlen(list[count].id) != len - 5 ||
			       strncmp(list[count].id, de->d_name, len - 5) != 0)) {
			r = -EINVAL;
			cause_set(&cause, "it holds session %s", list[count].id);
		}
		if (r < 0) {
			log_warn("skipping record %s: %s", path, cause.msg);
			r = 0;
			continue;
		}
		count++;
	}
	closedir(d);
	if (r < 0) {
		free(list);
		return r;
	}
	if (count > 1)
		qsort(list, count, sizeof(*list), store_cmp); /* list is NULL when empty */
	*out = list;
	*n = count;
	return 0;
}
