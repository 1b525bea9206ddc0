/*
 * cageseccomp: the seccomp filter of a caged agent, handed to bubblewrap (`--seccomp FD`), which
 * loads it last, just before it execs the agent.
 *
 * It refuses, with EPERM, the two ioctls that write into a terminal's input or its console:
 * TIOCSTI (push a byte into a tty's input queue: typed by the agent as if by the person at the
 * pane) and TIOCLINUX (the Linux console's selection and paste). A caged agent's only tty is its
 * own pane (see docs/DESIGN.md, "No --new-session, and TIOCSTI"), but what a tool it runs pushes
 * there is read by the agent's own TUI as the person's keys; and a kernel with
 * dev.tty.legacy_tiocsti on lets any process do it. Everything else is allowed: the cage's other
 * layers (uid, namespaces, cgroups) do the rest, and a filter that refuses more would break the
 * tools an agent runs.
 *
 * The request is compared on its low 32 bits, as the kernel reads it (an `unsigned int`): a
 * request with high bits set reaches the same ioctl and is refused too. The compat ABIs (i386 and
 * x32 on x86_64, arm on aarch64) get the same rule: a 32-bit binary's ioctl is another syscall
 * number.
 */
#ifndef AGENTD_CAGESECCOMP_H
#define AGENTD_CAGESECCOMP_H

#include "cause.h"

/*
 * Writes the compiled filter (classic BPF, as bwrap's --seccomp reads it) to a new anonymous file
 * and returns its descriptor, at offset 0 and inheritable (bwrap reads it after exec). -errno with
 * cause.
 */
int cage_seccomp_fd(struct cause *c);

#endif
