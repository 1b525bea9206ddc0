/* core/jsonfile: {"<key>":[...]} state files read within their bounds and written atomically. */
#include "jsonfile.h"
#include "testdir.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define T_MAX 256

static char dir[64];

static void setup(void)
{
	testdir_make(dir, sizeof(dir), "/tmp/agentd-jsonfile-XXXXXX");
}

static void teardown(void)
{
	testdir_remove(dir);
}

TestSuite(jsonfile, .init = setup, .fini = teardown);

static void at(char *out, const char *name)
{
	snprintf(out, T_MAX, "%s/%s", dir, name);
}

/* jsonfile_load of path with key "items", at most 3 entries and 64 bytes. */
static int load(const char *path, json_object **root, json_object **arr, struct cause *c)
{
	return jsonfile_load(path, 64, "items", 3, "the list", root, arr, c);
}

Test(jsonfile, save_then_load_gives_the_array_back_with_the_mode)
{
	char path[T_MAX];
	json_object *arr = json_object_new_array(), *root, *got;
	struct cause c = {{0}};
	struct stat st;

	at(path, "a.json");
	json_object_array_add(arr, json_object_new_int(1));
	json_object_array_add(arr, json_object_new_string("two"));
	cr_assert_eq(jsonfile_save(path, "items", arr, JSON_C_TO_STRING_PLAIN, 0600), 0);
	cr_assert_eq(json_object_array_length(arr), 2, "the caller's array is left as it was");
	json_object_put(arr);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	cr_assert_eq(load(path, &root, &got, &c), 0, "%s", c.msg);
	cr_assert_eq(json_object_array_length(got), 2);
	cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(got, 1)), "two");
	json_object_put(root);
}

Test(jsonfile, a_missing_file_is_enoent_and_says_nothing)
{
	char path[T_MAX];
	json_object *root, *arr;
	struct cause c = {{0}};

	at(path, "none.json");
	cr_assert_eq(load(path, &root, &arr, &c), -ENOENT);
	cr_assert_null(root);
	cr_assert_str_eq(c.msg, "");
}

Test(jsonfile, refuses_what_is_too_large_not_json_of_another_shape_or_a_link)
{
	static const char *const bad[] = {
	    "{\"items\":[1,2,3,4]}", /* more entries than allowed */
	    "{\"items\":{}}",        /* not an array */
	    "{\"other\":[]}",        /* not the key */
	    "[1,2]",                 /* not an object */
	    "{\"items\":[",          /* not JSON */
	    "{\"items\":[\"0123456789012345678901234567890123456789012345678901\"]}", /* 66 bytes */
	};
	char path[T_MAX], link[T_MAX];
	json_object *root, *arr;
	struct cause c;

	at(path, "bad.json");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&c, 0, sizeof(c));
		testdir_write(path, bad[i]);
		cr_assert_eq(load(path, &root, &arr, &c), -EINVAL, "%s", bad[i]);
		cr_assert_null(root);
		cr_assert(strstr(c.msg, "the list ") == c.msg && strstr(c.msg, path) != NULL, "%s",
			  c.msg);
	}
	testdir_write(path, "{\"items\":[]}");
	at(link, "link.json");
	cr_assert_eq(symlink(path, link), 0);
	cr_assert_lt(load(link, &root, &arr, &c), 0, "a symlink is not followed");
	cr_assert_neq(load(link, &root, &arr, &c), -ENOENT);
	cr_assert_null(root);
}
