#include "testdir.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void testdir_make(char *dir, size_t len, const char *template)
{
	cr_assert_lt(snprintf(dir, len, "%s", template), (int)len);
	cr_assert_not_null(mkdtemp(dir), "mkdtemp %s", template);
}

static int testdir_rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void testdir_remove(const char *dir)
{
	nftw(dir, testdir_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void testdir_janitor(const char *dir, void (*before)(void *arg), void *arg)
{
	int p[2], status;
	pid_t pid;

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char ch;

		if (fork() != 0)
			_exit(0);
		for (int fd = 0; fd < 1024; fd++)
			if (fd != p[0])
				close(fd);
		while (read(p[0], &ch, 1) < 0 && errno == EINTR)
			;
		if (before != NULL)
			before(arg);
		testdir_remove(dir);
		_exit(0);
	}
	close(p[0]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
}

void testdir_write(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "fopen %s", path);
	fputs(text, f);
	fclose(f);
}
