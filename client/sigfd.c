#include "sigfd.h"

#include <errno.h>
#include <sys/signalfd.h>
#include <unistd.h>

int sigfd_open(const int *signals, size_t n, sigset_t *old)
{
	sigset_t mask;
	int fd;

	sigemptyset(&mask);
	for (size_t i = 0; i < n; i++)
		sigaddset(&mask, signals[i]);
	if (sigprocmask(SIG_BLOCK, &mask, old) < 0)
		return -errno;
	fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

int sigfd_next(int fd)
{
	struct signalfd_siginfo si;

	return read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si) ? (int)si.ssi_signo : 0;
}
