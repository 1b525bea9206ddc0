#include "store.h"

#include "fsutil.h"

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

/*
 * True when leaf is a record's file name, "<id>.json" with a valid id, which goes to id. A
 * repository name may start with a dot (".github"), so a leading dot says nothing: the store's own
 * files that are no records (locks, temp files, .gone/) do not end in ".json" or hold no valid id.
 */
static bool store_record_leaf(const char *leaf, char id[SESSION_ID_MAX + 1])
{
	size_t len = strlen(leaf);

	if (len <= 5 || len - 5 > SESSION_ID_MAX || strcmp(leaf + len - 5, ".json") != 0)
		return false;
	memcpy(id, leaf, len - 5);
	id[len - 5] = '\0';
	return session_id_valid(id);
}

/*
 * Moves the *.json files of an older version's records dir from_dir (its records, or its .gone
 * records) into to_dir; the caller holds the store-wide lock. A file to_dir has already stays
 * where it is: nothing is replaced, nothing lost. Returns how many stayed.
 */
static int store_migrate_dir(const char *from_dir, const char *to_dir)
{
	char from[SESSION_PATH_MAX * 2], to[SESSION_PATH_MAX * 2], id[SESSION_ID_MAX + 1];
	struct dirent *de;
	DIR *d = opendir(from_dir);
	int r, left = 0;

	if (d == NULL)
		return 0;
	if (mkdir(to_dir, 0750) < 0 && errno != EEXIST) {
		closedir(d);
		return 1;
	}
	while ((de = readdir(d)) != NULL) {
		if (!store_record_leaf(de->d_name, id))
			continue;
		if (snprintf(from, sizeof(from), "%s/%s", from_dir, de->d_name) >=
			(int)sizeof(from) ||
		    snprintf(to, sizeof(to), "%s/%s", to_dir, de->d_name) >= (int)sizeof(to)) {
			left++;
			continue;
		}
		r = fsutil_move(from, to);
		if (r < 0) {
			log_warn("%s stays where it is: cannot move it to %s: %s", from, to,
				 strerror(-r));
			left++;
		}
	}
	closedir(d);
	return left;
}

/* The records an older version kept in <runtime_dir>/sessions/ move to the state dir, once. */
static void store_migrate(const struct store *st, const char *runtime_dir)
{
	char legacy[SESSION_PATH_MAX], from[SESSION_PATH_MAX + 8], to[SESSION_PATH_MAX + 8];
	struct stat sb;
	int fd, left;

	if (snprintf(legacy, sizeof(legacy), "%s/sessions", runtime_dir) >= (int)sizeof(legacy) ||
	    lstat(legacy, &sb) < 0 || !S_ISDIR(sb.st_mode) || fsutil_same_file(legacy, st->dir))
		return;
	fd = store_lock_all(st);
	if (fd < 0)
		return;
	left = store_migrate_dir(legacy, st->dir);
	if (snprintf(from, sizeof(from), "%s/" STORE_GONE_DIR, legacy) < (int)sizeof(from) &&
	    snprintf(to, sizeof(to), "%s/" STORE_GONE_DIR, st->dir) < (int)sizeof(to))
		left += store_migrate_dir(from, to);
	/* Only lock files are left, which lock nothing once the records are elsewhere. */
	if (left == 0 && fsutil_rm_tree(legacy) == 0)
		log_info("moved the session records from %s to %s (they outlive a reboot there)",
			 legacy, st->dir);
	store_unlock(fd);
}

int store_init(struct store *st, const char *state_dir, const char *runtime_dir,
	       struct cause *cause)
{
	int n = snprintf(st->dir, sizeof(st->dir), "%s/sessions", state_dir);
	int r;

	if (n < 0 || (size_t)n >= sizeof(st->dir))
		return cause_fail(cause, ENAMETOOLONG, "state directory path is too long");
	n = snprintf(st->view, sizeof(st->view), "%s/sessions.json", runtime_dir);
	if (n < 0 || (size_t)n >= sizeof(st->view))
		return cause_fail(cause, ENAMETOOLONG, "runtime directory path is too long");
	if ((r = store_mkdir(state_dir, cause)) < 0 || (r = store_mkdir(runtime_dir, cause)) < 0 ||
	    (r = store_mkdir(st->dir, cause)) < 0)
		return r;
	store_migrate(st, runtime_dir);
	return 0;
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
		r = fsutil_flock(fd, LOCK_EX);
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

	return r < 0 ? r : fsutil_lock(path, LOCK_EX, 0640);
}

static int store_lock_all_view(const struct store *st)
{
	char path[SESSION_PATH_MAX];
	int r = store_path(st, "", ".view.lock", path, sizeof(path));

	return r < 0 ? r : fsutil_lock(path, LOCK_EX, 0640);
}

void store_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* closing the only descriptor releases the flock */
}

/* Parses buf[0..len) as one JSON value with nothing after it. Returns it, or NULL. */
static json_object *store_parse(const char *buf, size_t len)
{
	json_tokener *tok = json_tokener_new();
	json_object *obj;

	if (tok == NULL)
		return NULL;
	obj = json_tokener_parse_ex(tok, buf, (int)len);
	if (obj != NULL && json_tokener_get_parse_end(tok) != len) {
		json_object_put(obj);
		obj = NULL;
	}
	json_tokener_free(tok); /* json-c's free is not NULL-safe */
	return obj;
}

/* The "id" of a view entry, or NULL when it has none. */
static const char *store_entry_id(json_object *e)
{
	json_object *v;

	if (!json_object_object_get_ex(e, "id", &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

char *store_encode(const struct session *s)
{
	json_object *obj = session_to_json(s, true);
	char *text;

	if (obj == NULL)
		return NULL;
	text = strdup(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
							      JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(obj);
	return text;
}

int store_decode(const char *text, size_t len, struct session *out, struct cause *cause)
{
	json_object *obj;
	int r;

	if (len > SESSION_RECORD_MAX)
		return cause_fail(cause, EINVAL, "the record is too large");
	obj = store_parse(text, len);
	if (obj == NULL)
		return cause_fail(cause, EINVAL, "the record is not valid JSON");
	r = session_from_json(out, obj, cause);
	json_object_put(obj);
	return r;
}

static int store_read_path(const char *path, struct session *out, struct cause *cause)
{
	char *buf = NULL;
	size_t len = 0;
	int r = fsutil_read_file(path, SESSION_RECORD_MAX, &buf, &len);

	if (r == -ENOENT)
		return r;
	if (r == -EFBIG)
		return cause_fail(cause, EINVAL, "record %s is too large", path);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return cause_fail(cause, -r, "%s", strerror(-r));
	r = store_decode(buf, len, out, cause);
	if (r < 0 && cause != NULL) {
		char why[sizeof(cause->msg)];

		snprintf(why, sizeof(why), "%s", cause->msg);
		cause_set(cause, "record %s: %s", path, why);
	}
	free(buf);
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

static int store_view_path(const struct store *st, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%s", st->view);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

/* Writes arr as the view. Derived data: no fsync, the records are the truth. */
static int store_view_write(const char *path, json_object *arr)
{
	return fsutil_write_atomic(
	    path,
	    json_object_to_json_string_ext(arr,
					   JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
	    STORE_VIEW_MODE, false);
}

/* The view from every record; the caller holds the view lock. */
static int store_view_from_records(const struct store *st, const char *path)
{
	struct session *list = NULL;
	json_object *arr = NULL;
	size_t n = 0;
	int r = store_list(st, &list, &n);

	if (r < 0)
		return r;
	arr = json_object_new_array_ext((int)n);
	for (size_t i = 0; i < n; i++)
		json_object_array_add(arr, session_to_json(&list[i], false));
	r = store_view_write(path, arr);
	json_object_put(arr);
	free(list);
	return r;
}

int store_rebuild_view(const struct store *st)
{
	char path[SESSION_PATH_MAX + 8];
	int fd, r = store_view_path(st, path, sizeof(path));

	if (r < 0)
		return r;
	fd = store_lock_all_view(st);
	if (fd < 0)
		return fd;
	r = store_view_from_records(st, path);
	store_unlock(fd);
	return r;
}

/* Reads the view as a JSON array whose every element has a string "id", in strictly ascending
 * order (as store_view_from_records writes it). Returns it, or NULL when the file is missing, too
 * large or not such an array: the caller then rebuilds from the records. */
static json_object *store_view_read(const char *path)
{
	json_object *arr = NULL;
	const char *prev = NULL;
	char *buf = NULL;
	size_t len = 0;
	size_t n;

	if (fsutil_read_file(path, STORE_VIEW_MAX, &buf, &len) < 0)
		return NULL;
	arr = store_parse(buf, len);
	free(buf);
	if (arr == NULL || !json_object_is_type(arr, json_type_array))
		goto bad;
	n = json_object_array_length(arr);
	for (size_t i = 0; i < n; i++) {
		const char *id = store_entry_id(json_object_array_get_idx(arr, i));

		if (id == NULL || (prev != NULL && strcmp(prev, id) >= 0))
			goto bad;
		prev = id;
	}
	return arr;
bad:
	json_object_put(arr);
	return NULL;
}

/*
 * Brings the entry of id in the view in line with its record, reading only the view and that
 * record: a write costs the same with one session or with thousands. The entry comes from the
 * record as it is on disk now, under the view lock, so concurrent writers of one id leave the
 * last record in the view whatever order they patch in; a missing or unreadable record drops the
 * entry, as store_list skips it. A view that is missing or malformed is rebuilt from every record.
 */
static int store_view_patch(const struct store *st, const char *id)
{
	char path[SESSION_PATH_MAX + 8];
	json_object *old = NULL, *arr = NULL, *entry = NULL;
	struct session s;
	bool placed = false;
	size_t n;
	int fd, r = store_view_path(st, path, sizeof(path));

	if (r < 0)
		return r;
	fd = store_lock_all_view(st);
	if (fd < 0)
		return fd;
	old = store_view_read(path);
	if (old == NULL) {
		r = store_view_from_records(st, path);
		goto out;
	}
	if (store_read(st, id, &s, NULL) == 0 && (entry = session_to_json(&s, false)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	n = json_object_array_length(old);
	arr = json_object_new_array_ext((int)n + 1);
	if (arr == NULL) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(old, i);
		int cmp = strcmp(store_entry_id(e), id);

		if (cmp >= 0 && !placed) {
			placed = true;
			if (entry != NULL)
				json_object_array_add(arr, json_object_get(entry));
		}
		if (cmp != 0)
			json_object_array_add(arr, json_object_get(e));
	}
	if (!placed && entry != NULL)
		json_object_array_add(arr, json_object_get(entry));
	/* As store_list, which gives up over STORE_MAX_RECORDS: the view is then left as it is. */
	r = json_object_array_length(arr) > STORE_MAX_RECORDS ? -E2BIG
							      : store_view_write(path, arr);
out:
	json_object_put(entry);
	json_object_put(arr);
	json_object_put(old);
	store_unlock(fd);
	return r;
}

/*
 * Sets s->rev one above the newest version of its record: the one on disk (a writer that made s
 * afresh, as a create over a failed session does, does not know it), else s's own. The caller
 * holds the lock of the id, so no write slips between.
 */
static void store_next_rev(const struct store *st, struct session *s)
{
	struct session *disk = malloc(sizeof(*disk));

	if (disk != NULL && store_read(st, s->id, disk, NULL) == 0 && disk->rev > s->rev)
		s->rev = disk->rev;
	free(disk);
	s->rev++;
}

int store_write(const struct store *st, struct session *s, struct cause *cause)
{
	char path[SESSION_PATH_MAX];
	char *text;
	int r;

	s->updated_at = (int64_t)time(NULL);
	if (!session_id_valid(s->id))
		return cause_fail(cause, EINVAL, "invalid session id");
	store_next_rev(st, s);
	if ((r = store_path(st, s->id, ".json", path, sizeof(path))) < 0)
		return cause_fail(cause, -r, "record path is too long");
	if ((text = store_encode(s)) == NULL)
		return cause_fail(cause, ENOMEM, "out of memory");
	/* The temp name is per session and writers hold the session lock: no two share it. */
	r = fsutil_write_atomic(path, text, 0640, true);
	free(text);
	if (r < 0)
		return cause_fail(cause, r, "cannot write record %s: %s", path, strerror(-r));
	store_view_patch(st, s->id);
	return 0;
}

/* <dir>/.gone/<id>.json: outside the records (no reader lists it), one file per deleted id. */
static int store_gone_path(const struct store *st, const char *id, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%s/" STORE_GONE_DIR "/%s.json", st->dir, id);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

int store_read_gone(const struct store *st, const char *id, struct session *out,
		    struct cause *cause)
{
	char path[SESSION_PATH_MAX];
	int r = session_id_valid(id) ? store_gone_path(st, id, path, sizeof(path)) : -EINVAL;

	if (r < 0)
		return cause_fail(cause, -r, "invalid session id");
	r = store_read_path(path, out, cause);
	if (r == 0 && strcmp(out->id, id) != 0)
		return cause_fail(cause, EINVAL, "record %s holds id %s", path, out->id);
	return r;
}

void store_forget_gone(const struct store *st, const char *id)
{
	char path[SESSION_PATH_MAX];

	if (session_id_valid(id) && store_gone_path(st, id, path, sizeof(path)) == 0)
		(void)unlink(path);
}

void store_gone_each(const struct store *st, void (*fn)(void *ctx, const char *id), void *ctx)
{
	char dir[SESSION_PATH_MAX], id[SESSION_ID_MAX + 1];
	struct dirent *de;
	DIR *d;
	int n = snprintf(dir, sizeof(dir), "%s/" STORE_GONE_DIR, st->dir);

	if (n < 0 || (size_t)n >= sizeof(dir) || (d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		if (store_record_leaf(de->d_name, id))
			fn(ctx, id);
	closedir(d);
}

int store_remove(const struct store *st, const char *id)
{
	char path[SESSION_PATH_MAX], gone[SESSION_PATH_MAX], dir[SESSION_PATH_MAX];
	int n;
	int r = session_id_valid(id) ? store_path(st, id, ".json", path, sizeof(path)) : -EINVAL;

	if (r < 0)
		return r;
	n = snprintf(dir, sizeof(dir), "%s/" STORE_GONE_DIR, st->dir);
	if (n < 0 || (size_t)n >= sizeof(dir) || (mkdir(dir, 0750) < 0 && errno != EEXIST) ||
	    store_gone_path(st, id, gone, sizeof(gone)) < 0 || rename(path, gone) < 0) {
		if (unlink(path) < 0)
			return -errno;
	}
	store_view_patch(st, id);
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
		char path[SESSION_PATH_MAX], id[SESSION_ID_MAX + 1];
		struct cause cause = {{0}};

		if (!store_record_leaf(de->d_name, id))
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
		if (r == 0 && strcmp(list[count].id, id) != 0) {
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
