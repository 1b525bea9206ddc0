/*
 * store: the view <runtime_dir>/sessions.json. A write patches the entry of its own id and reads
 * no other record (inotify counts the opens in the sessions dir; a record changed or spoiled
 * behind the store's back keeps its entry); across create, update and remove the view stays
 * byte for byte what a rebuild from every record makes; a missing or malformed view is rebuilt.
 */
#include "store.h"

#include "testdir.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define VIEW_TEST_MAX (256 * 1024)

static char rundir[64];
static char view[128];
static struct store st;

static void setup(void)
{
	struct cause c = {{0}};

	testdir_make(rundir, sizeof(rundir), "/tmp/agentd-view-XXXXXX");
	cr_assert_eq(store_init(&st, rundir, rundir, &c), 0, "store_init: %s", c.msg);
	snprintf(view, sizeof(view), "%s/sessions.json", rundir);
}

static void teardown(void)
{
	testdir_remove(rundir);
}

TestSuite(store_view, .init = setup, .fini = teardown);

static void put(const char *name, long issue, enum session_state state)
{
	struct session s;
	struct cause c = {{0}};

	cr_assert_eq(session_init(&s, "/code", "octo", name, issue), 0);
	s.state = state;
	cr_assert_eq(store_write(&st, &s, &c), 0, "store_write %s: %s", s.id, c.msg);
}

/* The file at path (NUL-terminated; caller frees). */
static char *slurp(const char *path)
{
	char *buf = calloc(1, VIEW_TEST_MAX + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	cr_assert_not_null(buf);
	cr_assert_geq(fd, 0, "open %s", path);
	n = read(fd, buf, VIEW_TEST_MAX);
	cr_assert_geq(n, 0);
	close(fd);
	return buf;
}

static void spit(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);

	cr_assert_geq(fd, 0, "open %s", path);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* Whether the view holds needle. */
static bool view_has(const char *needle)
{
	char *v = slurp(view);
	bool has = strstr(v, needle) != NULL;

	free(v);
	return has;
}

static void record_path(const char *id, char *out, size_t outlen)
{
	cr_assert_eq(store_path(&st, id, ".json", out, outlen), 0);
}

/* The view as store_write left it equals the view a rebuild from every record makes. */
static void assert_view_is_rebuild(const char *when)
{
	char *patched = slurp(view), *rebuilt;

	cr_assert_eq(store_rebuild_view(&st), 0);
	rebuilt = slurp(view);
	cr_assert_str_eq(patched, rebuilt, "%s: patched view\n%s\nrebuilt\n%s", when, patched,
			 rebuilt);
	free(patched);
	free(rebuilt);
}

Test(store_view, follows_create_update_remove)
{
	struct session s;
	int fd;

	put("middle", 5, SESSION_CREATING);
	assert_view_is_rebuild("first record");
	put("zeta", 9, SESSION_RUNNING);     /* appended */
	put("alpha", 1, SESSION_RUNNING);    /* inserted first */
	put("middle", 50, SESSION_CREATING); /* "middle-50" sorts between middle-5 and zeta-9 */
	assert_view_is_rebuild("four records");
	cr_assert_eq(store_read(&st, "middle-5", &s, NULL), 0);
	s.state = SESSION_RUNNING;
	s.clients = 3;
	cr_assert_eq(store_write(&st, &s, NULL), 0);
	cr_assert(view_has("\"clients\":3"), "the update is in the view");
	assert_view_is_rebuild("after an update");
	fd = store_lock(&st, "alpha-1");
	cr_assert_geq(fd, 0);
	cr_assert_eq(store_remove(&st, "alpha-1"), 0);
	store_unlock(fd);
	cr_assert(!view_has("alpha-1"), "the removed session left the view");
	assert_view_is_rebuild("after removing the first");
	fd = store_lock(&st, "zeta-9");
	cr_assert_geq(fd, 0);
	cr_assert_eq(store_remove(&st, "zeta-9"), 0);
	store_unlock(fd);
	assert_view_is_rebuild("after removing the last");
	fd = store_lock(&st, "middle-5");
	cr_assert_eq(store_remove(&st, "middle-5"), 0);
	store_unlock(fd);
	fd = store_lock(&st, "middle-50");
	cr_assert_eq(store_remove(&st, "middle-50"), 0);
	store_unlock(fd);
	cr_assert(view_has("[]"), "the view is empty");
}

/* The view holds every session's bootstrap prompt, its "by" and the pending tools' descriptions,
 * and the runtime dir is o+x: only its owner and its group (nginx's workers, through the setgid
 * dir) may read it. */
Test(store_view, is_closed_to_other_users)
{
	struct stat sb;

	put("secret", 3, SESSION_RUNNING);
	cr_assert_eq(stat(view, &sb), 0);
	cr_assert_eq(sb.st_mode & 0007, 0, "mode %o: other users cannot read the view",
		     (unsigned)(sb.st_mode & 0777));
	cr_assert_eq(sb.st_mode & 0040, 0040, "mode %o: its group (nginx) can",
		     (unsigned)(sb.st_mode & 0777));
	cr_assert_eq(store_rebuild_view(&st), 0);
	cr_assert_eq(stat(view, &sb), 0);
	cr_assert_eq(sb.st_mode & 0007, 0, "mode %o after a rebuild",
		     (unsigned)(sb.st_mode & 0777));
}

/* Counts the IN_OPEN events of the sessions dir for files whose name starts with prefix, and
 * (into *all) every IN_OPEN of a named file. */
static int opens_of(int in, const char *prefix, int *all)
{
	char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
	int n = 0;
	ssize_t len;

	while ((len = read(in, buf, sizeof(buf))) > 0)
		for (char *p = buf; p < buf + len;) {
			struct inotify_event *ev = (struct inotify_event *)p;

			if ((ev->mask & IN_OPEN) && ev->len > 0) {
				(*all)++;
				n += strncmp(ev->name, prefix, strlen(prefix)) == 0;
			}
			p += sizeof(*ev) + ev->len;
		}
	return n;
}

Test(store_view, write_opens_no_other_record)
{
	char names[8];
	int in, all = 0;

	for (int i = 0; i < 20; i++) {
		snprintf(names, sizeof(names), "other%d", i);
		put(names, 1, SESSION_RUNNING);
	}
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	cr_assert_geq(in, 0);
	cr_assert_geq(inotify_add_watch(in, st.dir, IN_OPEN), 0);
	put("mine", 2, SESSION_CREATING);
	put("mine", 2, SESSION_RUNNING);
	cr_assert_eq(opens_of(in, "other", &all), 0, "a write opened other records");
	cr_assert_gt(all, 0, "the watch sees the store's own opens");
	close(in);
	assert_view_is_rebuild("after the writes");
}

/* A record changed or spoiled behind the store's back keeps its entry until it is written
 * through the store again (or the next rebuild): a write of another id does not read it. */
Test(store_view, write_leaves_other_entries_alone)
{
	char path[SESSION_PATH_MAX], *v;

	put("alpha", 1, SESSION_RUNNING);
	put("beta", 2, SESSION_RUNNING);
	record_path("alpha-1", path, sizeof(path));
	spit(path, "not json");
	record_path("beta-2", path, sizeof(path));
	chmod(path, 0);
	put("gamma", 3, SESSION_CREATING);
	v = slurp(view);
	cr_assert_not_null(strstr(v, "\"id\":\"alpha-1\""), "view: %s", v);
	cr_assert_not_null(strstr(v, "\"id\":\"beta-2\""), "view: %s", v);
	cr_assert_not_null(strstr(v, "\"id\":\"gamma-3\""), "view: %s", v);
	free(v);
	/* A rebuild skips the spoiled record, as store_list does. */
	cr_assert_eq(store_rebuild_view(&st), 0);
	v = slurp(view);
	cr_assert_null(strstr(v, "alpha-1"), "view: %s", v);
	free(v);
}

Test(store_view, missing_or_malformed_view_is_rebuilt)
{
	const char *bad[] = {
	    "", "{}", "[1]", "[{\"id\":\"b-1\"},{\"id\":\"a-1\"}]", "[{\"id\":5}]", "[] trailing"};
	char *v;

	put("alpha", 1, SESSION_RUNNING);
	put("beta", 2, SESSION_RUNNING);
	cr_assert_eq(unlink(view), 0);
	put("gamma", 3, SESSION_RUNNING);
	v = slurp(view);
	cr_assert_not_null(strstr(v, "\"id\":\"alpha-1\""), "rebuilt view: %s", v);
	free(v);
	assert_view_is_rebuild("after a missing view");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		spit(view, bad[i]);
		put("gamma", 3, SESSION_RUNNING);
		assert_view_is_rebuild(bad[i]);
	}
}
