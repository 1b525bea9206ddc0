/*
 * The checkout of a repository's new, empty working directory, for a session's worktree (a
 * worktree of the bare clone) and for its own repository (the store layout) alike: libgit2's
 * checkout, made cheaper where nothing can differ. Without any attribute or setting that could
 * convert a file, the per-file attribute lookups (a dozen system calls a file) are skipped; a big
 * tree is then written by GITCO_THREADS threads, each on its share of the files (writing files is
 * most of a checkout, four fifths of it in the kernel making inodes, which runs on both cores).
 * Threads take the calling thread's credentials: a checkout made with a session's file identity
 * (setfsuid) writes every file as that identity.
 */
#ifndef AGENTD_GITCHECKOUT_H
#define AGENTD_GITCHECKOUT_H

#include <git2.h>

/*
 * Checks br out into the working directory (path, new and empty) of repo, whose HEAD names br,
 * and writes its index: a safe checkout as git_worktree_add's default, split between threads
 * when no filter can apply and the tree is big. Returns 0 or a libgit2 error (its message in
 * git_error_last(), in this thread).
 */
int gitcheckout_fresh(git_repository *repo, const char *path, git_reference *br);

#endif
