/* Placeholder until the libgit2 implementation lands; every call fails cleanly. */
#include "worktree.h"

#include <errno.h>
#include <stdio.h>

int worktree_global_init(void)
{
	return 0;
}
