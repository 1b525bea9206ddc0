/*
 * Small JSON state files of one shape, {"<key>":[...]}: the token store, the push subscriptions
 * and the pairing links. Read within a bound (never through a symlink), the array checked, and
 * written atomically, so every such file is read and written the same way.
 */
#ifndef AGENTD_JSONFILE_H
#define AGENTD_JSONFILE_H

#include "cause.h"

#include <json-c/json.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * Reads path (a regular file of at most max bytes) and finds the array under key (at most nmax
 * entries). what names the file in cause ("the token store", NULL for the path alone). Returns 0
 * with *root (the caller puts it) and *arr (borrowed from *root), -ENOENT when the file does not
 * exist (cause untouched), or another -errno with cause: -EINVAL for a file too large, not JSON,
 * or of another shape.
 */
int jsonfile_load(const char *path, size_t max, const char *key, size_t nmax, const char *what,
		  json_object **root, json_object **arr, struct cause *cause);

/* Replaces path with {"<key>": arr} (arr is not taken: the caller still puts it), written by
 * json-c with flags (JSON_C_TO_STRING_*), mode, fsync'ed. Returns 0 or -errno. */
int jsonfile_save(const char *path, const char *key, json_object *arr, int flags, mode_t mode);

#endif
