/*
 * cageseccomp: the caged agent's seccomp filter (libseccomp). See cageseccomp.h.
 */
#include "cageseccomp.h"

#include <errno.h>
#include <seccomp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

/* The ioctl requests refused, each with its reason in cageseccomp.h. */
static const unsigned long cage_refused[] = {TIOCSTI, TIOCLINUX};

/* The other ABIs the native one runs (a 32-bit binary's syscalls have numbers of their own). */
static int cage_seccomp_arches(scmp_filter_ctx ctx)
{
	static const struct {
		uint32_t native, compat;
	} compat[] = {
	    {SCMP_ARCH_X86_64, SCMP_ARCH_X86},
	    {SCMP_ARCH_X86_64, SCMP_ARCH_X32},
	    {SCMP_ARCH_AARCH64, SCMP_ARCH_ARM},
	};
	uint32_t native = seccomp_arch_native();
	int r;

	for (size_t i = 0; i < sizeof(compat) / sizeof(compat[0]); i++) {
		if (compat[i].native != native)
			continue;
		r = seccomp_arch_add(ctx, compat[i].compat);
		if (r < 0 && r != -EEXIST)
			return r;
	}
	return 0;
}

int cage_seccomp_fd(struct cause *c)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int fd = -1, r;

	if (ctx == NULL)
		return cause_fail(c, ENOMEM, "seccomp: cannot make a filter");
	/* bwrap sets no_new_privs itself before it loads the filter; nothing to load here. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (r == 0)
		r = cage_seccomp_arches(ctx);
	for (size_t i = 0; r == 0 && i < sizeof(cage_refused) / sizeof(cage_refused[0]); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffUL, cage_refused[i]));
	if (r < 0) {
		cause_fail(c, -r, "seccomp: cannot add the ioctl rules: %s", strerror(-r));
		goto out;
	}
	/* No MFD_CLOEXEC: bwrap, exec'd next, reads it. */
	fd = memfd_create("agentd-cage-seccomp", 0);
	if (fd < 0) {
		r = cause_fail(c, errno, "seccomp: memfd_create: %s", strerror(errno));
		goto out;
	}
	r = seccomp_export_bpf(ctx, fd);
	if (r == 0 && lseek(fd, 0, SEEK_SET) < 0)
		r = -errno;
	if (r < 0) {
		cause_fail(c, -r, "seccomp: cannot write the filter: %s", strerror(-r));
		close(fd);
		fd = -1;
	}
out:
	seccomp_release(ctx);
	return fd >= 0 ? fd : r;
}
