/*
 * Filesystem helpers of the git modules: mkdir -p, rm -r that never follows a symlink, and the
 * identity of two paths. Plain POSIX; nothing here knows about git.
 */
#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define FSUTIL_NFTW_FDS 16
#define FSUTIL_COPY_BUF (64 * 1024)

int fsutil_mkdir_p(const char *path)
{
	char buf[FSUTIL_PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Creates the parent directories of path. */
int fsutil_mkdir_parent(const char *path)
{
	char buf[FSUTIL_PATH_MAX];
	char *slash;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	slash = strrchr(buf, '/');
	if (slash == NULL || slash == buf)
		return 0;
	*slash = '\0';
	return fsutil_mkdir_p(buf);
}

static int fsutil_rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

/* rm -r without following symlinks; a missing path is fine. */
int fsutil_rm_tree(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (nftw(path, fsutil_rm_entry, FSUTIL_NFTW_FDS, FTW_DEPTH | FTW_PHYS) != 0)
		return errno != 0 ? -errno : -EIO;
	return 0;
}

/* True when a and b name the same existing file (whatever symlinks or trailing slashes). */
bool fsutil_same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

int fsutil_write_all(int fd, const void *data, size_t len)
{
	const char *buf = data;

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

int fsutil_read_file(const char *path, size_t max, char **text, size_t *len)
{
	struct stat sb;
	size_t got = 0;
	int fd, r = 0;

	*text = NULL;
	if (len != NULL)
		*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) < 0) {
		r = -errno;
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {
		r = -EINVAL;
		goto out;
	}
	if (sb.st_size < 0 || (size_t)sb.st_size > max) {
		r = -EFBIG;
		goto out;
	}
	if ((*text = malloc((size_t)sb.st_size + 1)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	/* Up to the size fstat saw: a file growing meanwhile is read as it was. */
	while (got < (size_t)sb.st_size) {
		ssize_t n = read(fd, *text + got, (size_t)sb.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			goto out;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	(*text)[got] = '\0';
	if (len != NULL)
		*len = got;
out:
	if (r < 0) {
		free(*text);
		*text = NULL;
	}
	close(fd);
	return r;
}

int fsutil_write_atomic(const char *path, const char *text, mode_t mode, bool sync)
{
	char tmp[FSUTIL_PATH_MAX + 8];
	int fd, r;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	r = fsutil_write_all(fd, text, strlen(text));
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

int fsutil_write_new(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode), r;

	if (fd < 0)
		return -errno;
	r = fsutil_write_all(fd, text, strlen(text));
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

/* Copies the open file in to a new file at tmp (mode), synced. Returns 0 or -errno. */
static int fsutil_copy_fd(int in, const char *tmp, mode_t mode)
{
	char buf[FSUTIL_COPY_BUF];
	int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode), r = 0;
	ssize_t n;

	if (out < 0)
		return -errno;
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (r = fsutil_write_all(out, buf, (size_t)n)) < 0) {
			r = r < 0 ? r : -errno;
			break;
		}
	}
	if (r == 0 && fsync(out) < 0)
		r = -errno;
	if (close(out) < 0 && r == 0)
		r = -errno;
	return r;
}

int fsutil_move(const char *from, const char *to)
{
	char tmp[FSUTIL_PATH_MAX + 8];
	struct stat st;
	int in, r;

	/* link refuses an existing to: nothing is ever replaced. */
	if (link(from, to) == 0)
		return unlink(from) < 0 ? -errno : 0;
	if (errno != EXDEV)
		return -errno;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", to) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	if (access(to, F_OK) == 0)
		return -EEXIST;
	in = open(from, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return -errno;
	unlink(tmp); /* a copy an earlier move left unfinished */
	if (fstat(in, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = -EINVAL;
	else
		r = fsutil_copy_fd(in, tmp, st.st_mode & 07777);
	close(in);
	if (r == 0 && link(tmp, to) < 0)
		r = -errno;
	unlink(tmp);
	if (r == 0 && unlink(from) < 0)
		r = -errno;
	return r;
}

static bool fsutil_skipped(const char *rel, const char *const *skip, size_t nskip)
{
	for (size_t i = 0; i < nskip; i++)
		if (strcmp(rel, skip[i]) == 0)
			return true;
	return false;
}

/* Gives the thread the identity of the side it works on next (nothing without sides). */
static void fsutil_as(const struct fsutil_sides *sides, bool writing)
{
	if (sides != NULL)
		sides->side(sides->ctx, writing);
}

static int fsutil_copy_file(int sfd, int dfd, const char *name, mode_t mode,
			    const struct fsutil_sides *sides)
{
	char buf[64 * 1024];
	int in, out = -1, r = 0;
	ssize_t n;

	fsutil_as(sides, false);
	if ((in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return -errno;
	fsutil_as(sides, true);
	out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0777);
	if (out < 0) {
		r = -errno;
		goto out;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			goto out;
		}
		if ((r = fsutil_write_all(out, buf, (size_t)n)) < 0)
			goto out;
	}
	/* The umask took bits the template's file has. */
	if (fchmod(out, mode & 0777) < 0)
		r = -errno;
out:
	if (out >= 0)
		close(out);
	close(in);
	return r;
}

/* Copies the entries of the open directory sfd into dfd; rel is sfd's path relative to the
 * tree's top ("" at the top), in a buffer of FSUTIL_PATH_MAX. */
static int fsutil_copy_dir(int sfd, int dfd, char *rel, const char *const *skip, size_t nskip,
			   int depth, const struct fsutil_sides *sides)
{
	size_t base = strlen(rel);
	int dup_fd = dup(sfd), r = 0;
	DIR *d;
	struct dirent *e;

	if (depth > FSUTIL_COPY_DEPTH_MAX)
		return -ELOOP;
	if (dup_fd < 0 || (d = fdopendir(dup_fd)) == NULL) {
		r = -errno;
		if (dup_fd >= 0)
			close(dup_fd);
		return r;
	}
	while (r == 0 && (errno = 0, e = readdir(d)) != NULL) {
		struct stat st;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (snprintf(rel + base, FSUTIL_PATH_MAX - base, "%s%s", base ? "/" : "",
			     e->d_name) >= (int)(FSUTIL_PATH_MAX - base)) {
			r = -ENAMETOOLONG;
			break;
		}
		if (fsutil_skipped(rel, skip, nskip))
			continue;
		fsutil_as(sides, false);
		if (fstatat(sfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
		} else if (S_ISDIR(st.st_mode)) {
			int cs, cd;

			cs =
			    openat(sfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			r = cs < 0 ? -errno : 0;
			fsutil_as(sides, true);
			if (r == 0 && mkdirat(dfd, e->d_name, 0700) < 0)
				r = -errno;
			cd = r == 0 ? openat(dfd, e->d_name,
					     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
				    : -1;
			if (r == 0 && cd < 0)
				r = -errno;
			if (r == 0 && (r = fsutil_copy_dir(cs, cd, rel, skip, nskip, depth + 1,
							   sides)) == 0) {
				fsutil_as(sides, true);
				if (fchmod(cd, st.st_mode & 0777) < 0)
					r = -errno;
			}
			if (cs >= 0)
				close(cs);
			if (cd >= 0)
				close(cd);
		} else if (S_ISREG(st.st_mode)) {
			r = fsutil_copy_file(sfd, dfd, e->d_name, st.st_mode, sides);
		} else if (S_ISLNK(st.st_mode)) {
			char target[FSUTIL_PATH_MAX];
			ssize_t n = readlinkat(sfd, e->d_name, target, sizeof(target));

			if (n < 0)
				r = -errno;
			else if ((size_t)n >= sizeof(target))
				r = -ENAMETOOLONG;
			else if ((target[n] = '\0', fsutil_as(sides, true),
				  symlinkat(target, dfd, e->d_name)) < 0)
				r = -errno;
		}
		/* Sockets, FIFOs and devices are not a HOME's to copy. */
		rel[base] = '\0';
		fsutil_as(sides, false); /* readdir goes on on the source */
	}
	if (r == 0 && errno != 0 && e == NULL)
		r = -errno;
	rel[base] = '\0';
	closedir(d);
	return r;
}

int fsutil_copy_tree(const char *src, const char *dst, const char *const *skip, size_t nskip)
{
	return fsutil_copy_tree_as(src, dst, skip, nskip, NULL);
}

int fsutil_copy_tree_as(const char *src, const char *dst, const char *const *skip, size_t nskip,
			const struct fsutil_sides *sides)
{
	char *rel = calloc(1, FSUTIL_PATH_MAX);
	int sfd = -1, dfd = -1, r;

	if (rel == NULL)
		return -ENOMEM;
	fsutil_as(sides, false);
	sfd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = sfd < 0 ? -errno : 0;
	fsutil_as(sides, true);
	dfd = r == 0 ? open(dst, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (r == 0 && dfd < 0)
		r = -errno;
	if (r == 0)
		r = fsutil_copy_dir(sfd, dfd, rel, skip, nskip, 0, sides);
	if (sfd >= 0)
		close(sfd);
	if (dfd >= 0)
		close(dfd);
	free(rel);
	return r;
}

int fsutil_flock(int fd, int op)
{
	while (flock(fd, op) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

int fsutil_lock(const char *path, int op, mode_t mode)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode), r;

	if (fd < 0)
		return -errno;
	if ((r = fsutil_flock(fd, op)) < 0) {
		close(fd);
		return r;
	}
	return fd;
}
