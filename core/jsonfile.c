#include "jsonfile.h"

#include "fsutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int jsonfile_load(const char *path, size_t max, const char *key, size_t nmax, const char *what,
		  json_object **root, json_object **arr, struct cause *cause)
{
	const char *sep = what != NULL ? " " : "";
	char *text = NULL;
	int r;

	*root = NULL;
	*arr = NULL;
	what = what != NULL ? what : "";
	r = fsutil_read_file(path, max, &text, NULL);
	if (r == -ENOENT)
		return r;
	if (r == -EFBIG || r == -EINVAL)
		return cause_fail(cause, EINVAL, "%s%s%s is not a file of at most %zu bytes", what,
				  sep, path, max);
	if (r < 0)
		return cause_fail(cause, -r, "cannot read %s%s%s: %s", what, sep, path,
				  strerror(-r));
	*root = json_tokener_parse(text);
	free(text);
	if (!json_object_object_get_ex(*root, key, arr) ||
	    !json_object_is_type(*arr, json_type_array) || json_object_array_length(*arr) > nmax) {
		json_object_put(*root);
		*root = NULL;
		*arr = NULL;
		return cause_fail(cause, EINVAL,
				  "%s%s%s is not {\"%s\":[...]} of at most %zu entries", what, sep,
				  path, key, nmax);
	}
	return 0;
}

int jsonfile_save(const char *path, const char *key, json_object *arr, int flags, mode_t mode)
{
	json_object *root = json_object_new_object();
	const char *text;
	int r;

	if (root == NULL)
		return -ENOMEM;
	if (json_object_object_add(root, key, json_object_get(arr)) < 0) {
		json_object_put(arr);
		json_object_put(root);
		return -ENOMEM;
	}
	text = json_object_to_json_string_ext(root, flags);
	r = text == NULL ? -ENOMEM : fsutil_write_atomic(path, text, mode, true);
	json_object_put(root);
	return r;
}
