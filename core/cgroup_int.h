/* What cgroup.c and cgprobe.c (the hierarchy's probe) share beyond cgroup.h: not a contract for
 * anyone else. */
#ifndef AGENTD_CGROUP_INT_H
#define AGENTD_CGROUP_INT_H

#include "cgroup.h"

#include <stddef.h>

#define CGROUP_FILE_MAX 4096 /* a counter file we read (memory.events, cpu.stat, oom_control) */
/* Where a hierarchy's session directory is built: base, parent, session and a file name. */
#define CGROUP_FULL_MAX (CGROUP_PATH_MAX + 2 * CGROUP_NAME_MAX + 64)

int cgroup_read_all(const char *path, char *buf, size_t len);

#endif
