/* What gitstore.c and gitkeep.c (the keeping of a session's commits in the store) share beyond
 * gitstore.h: not a contract for anyone else. */
#ifndef AGENTD_GITSTORE_INT_H
#define AGENTD_GITSTORE_INT_H

#include <git2.h>
#include <stdbool.h>
#include <stddef.h>

bool gitstore_borrows(const char *store, const char *path);
int gitstore_open_up(const char *root);
int gitstore_repo(struct gitrepo *r, const char *dir, const char *owner, const char *name,
		  struct cause *cause);

#endif
