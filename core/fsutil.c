/*
 * Filesystem helpers of the git modules: mkdir -p, rm -r that never follows a symlink, and the
 * identity of two paths. Plain POSIX; nothing here knows about git.
 */
#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
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
