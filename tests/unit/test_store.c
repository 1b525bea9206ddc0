/*
 * store: records as files in a real temporary runtime dir. Round trip, atomic replacement (a
 * concurrent reader never sees a partial record, no temp file stays), flock exclusion between
 * processes, sorted listing that skips corrupt files, removal, size limit, id/file mismatch.
 */
#include "store.h"

#include "testdir.h"

#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char rundir[64];
static struct store st;

static void setup(void)
{
	struct cause c = {{0}};

	testdir_make(rundir, sizeof(rundir), "/tmp/agentd-store-XXXXXX");
	testdir_janitor(rundir, NULL, NULL);
	cr_assert_eq(store_init(&st, rundir, rundir, &c), 0, "store_init: %s", c.msg);
}

static void teardown(void)
{
	testdir_remove(rundir);
}

TestSuite(store, .init = setup, .fini = teardown);

static void make(struct session *s, const char *name, long issue)
{
	cr_assert_eq(session_init(s, "/code", "octo", name, issue), 0);
}

static void write_ok(struct session *s)
{
	struct cause c = {{0}};

	cr_assert_eq(store_write(&st, s, &c), 0, "store_write %s: %s", s->id, c.msg);
}

static void put_file(const char *leaf, const char *text, size_t len)
{
	char path[SESSION_PATH_MAX + 64];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", st.dir, leaf);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	cr_assert_geq(fd, 0, "open %s", path);
	cr_assert_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
}

/* Counts directory entries whose name contains needle. */
static int count_entries(const char *dir, const char *needle)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	cr_assert_not_null(d);
	while ((de = readdir(d)) != NULL)
		if (strstr(de->d_name, needle) != NULL)
			n++;
	closedir(d);
	return n;
}

Test(store, init_creates_dir)
{
	struct stat sb;
	struct store other;
	struct cause c = {{0}};
	char path[128];

	cr_assert_eq(stat(st.dir, &sb), 0);
	cr_assert(S_ISDIR(sb.st_mode));
	cr_assert_eq(sb.st_mode & 07777, 0750);
	snprintf(path, sizeof(path), "%s/sessions", rundir);
	cr_assert_str_eq(st.dir, path);
	cr_assert_eq(store_init(&other, rundir, rundir, &c), 0, "init is idempotent: %s", c.msg);
	/* A runtime dir that does not exist yet is created (one level). */
	snprintf(path, sizeof(path), "%s/fresh", rundir);
	cr_assert_eq(store_init(&other, path, path, &c), 0, "%s", c.msg);
	cr_assert_eq(stat(other.dir, &sb), 0);
}

/* Records an older version kept in <runtime_dir>/sessions/ move to the state dir once; one the
 * state dir has already is left where it was (nothing replaced, nothing lost). */
Test(store, init_moves_records_from_the_runtime_dir)
{
	struct store other;
	struct session a, b, got;
	struct cause c = {{0}};
	char state[128], path[256];

	make(&a, "moved", 1);
	write_ok(&a);
	make(&b, "both", 2);
	write_ok(&b);
	snprintf(state, sizeof(state), "%s/state", rundir);
	cr_assert_eq(mkdir(state, 0700), 0);
	snprintf(path, sizeof(path), "%s/sessions", state);
	cr_assert_eq(mkdir(path, 0750), 0);
	snprintf(path, sizeof(path), "%s/sessions/both-2.json", state);
	cr_assert_eq(symlink("/dev/null", path), 0); /* "already there": must not be replaced */
	cr_assert_eq(store_init(&other, state, rundir, &c), 0, "%s", c.msg);
	cr_assert_eq(store_read(&other, "moved-1", &got, &c), 0, "%s", c.msg);
	cr_assert_str_eq(got.id, "moved-1");
	snprintf(path, sizeof(path), "%s/sessions/moved-1.json", rundir);
	cr_assert_neq(access(path, F_OK), 0, "the old record is gone");
	snprintf(path, sizeof(path), "%s/sessions/both-2.json", rundir);
	cr_assert_eq(access(path, F_OK), 0, "a record the state dir has stays where it was");
	snprintf(path, sizeof(path), "%s/sessions.json", rundir);
	cr_assert_str_eq(other.view, path);
	/* Once moved, nothing is moved again. */
	unlink(path);
	cr_assert_eq(store_init(&other, state, rundir, &c), 0, "%s", c.msg);
	cr_assert_eq(store_read(&other, "moved-1", &got, &c), 0, "%s", c.msg);
}

Test(store, init_errors)
{
	struct store other;
	struct cause c = {{0}};
	char *longdir = malloc(SESSION_PATH_MAX + 1);
	char path[128];

	cr_assert_not_null(longdir);
	memset(longdir, 'd', SESSION_PATH_MAX);
	longdir[0] = '/';
	longdir[SESSION_PATH_MAX] = '\0';
	cr_assert_eq(store_init(&other, longdir, longdir, &c), -ENAMETOOLONG);
	cr_assert_neq(c.msg[0], '\0');
	free(longdir);
	snprintf(path, sizeof(path), "%s/no/such/parent", rundir);
	c.msg[0] = '\0';
	cr_assert_eq(store_init(&other, path, path, &c), -ENOENT);
	cr_assert_not_null(strstr(c.msg, path), "cause '%s' names the path", c.msg);
	/* A file where the directory should be. */
	snprintf(path, sizeof(path), "%s/sessions/x-1.json", rundir);
	put_file("x-1.json", "{}", 2);
	cr_assert_lt(store_init(&other, path, path, &c), 0);
}

Test(store, write_read_round_trip)
{
	struct session a, b;
	struct cause c = {{0}};
	time_t before = time(NULL);

	make(&a, "socket.io", 3);
	a.state = SESSION_ATTACHED;
	a.mode = SESSION_STRUCTURED;
	a.clients = 2;
	a.launched = true;
	a.updated_at = 5; /* store_write stamps it */
	snprintf(a.prompt, sizeof(a.prompt), "multi\nline \"prompt\" \x1f \xff\xfe non-UTF-8 ;");
	write_ok(&a);
	cr_assert_geq(a.updated_at, before);
	cr_assert_leq(a.updated_at, time(NULL));
	cr_assert_eq(store_read(&st, "socket.io-3", &b, &c), 0, "store_read: %s", c.msg);
	cr_assert_str_eq(b.id, a.id);
	cr_assert_str_eq(b.owner, "octo");
	cr_assert_str_eq(b.name, "socket.io");
	cr_assert_eq(b.issue, 3);
	cr_assert_str_eq(b.worktree, a.worktree);
	cr_assert_str_eq(b.branch, "feat/issue-3");
	cr_assert_str_eq(b.tmux_name, "socket_io-3");
	cr_assert_eq(b.state, SESSION_ATTACHED);
	cr_assert_eq(b.mode, SESSION_STRUCTURED);
	cr_assert_str_eq(b.agent_session_id, a.agent_session_id);
	cr_assert_eq(b.clients, 2);
	cr_assert(b.launched);
	cr_assert_str_eq(b.prompt, a.prompt);
	cr_assert_eq(b.created_at, a.created_at);
	cr_assert_eq(b.updated_at, a.updated_at);
	cr_assert_eq(b.last_activity, a.last_activity);

	/* A failed record keeps its error. */
	a.state = SESSION_FAILED;
	snprintf(a.error, sizeof(a.error), "tmux: duplicate session");
	write_ok(&a);
	cr_assert_eq(store_read(&st, "socket.io-3", &b, &c), 0, "%s", c.msg);
	cr_assert_eq(b.state, SESSION_FAILED);
	cr_assert_str_eq(b.error, "tmux: duplicate session");
}

Test(store, write_leaves_no_temp_and_private_mode)
{
	struct session a;
	char path[SESSION_PATH_MAX];
	struct stat sb;

	make(&a, "n", 1);
	for (int i = 0; i < 20; i++)
		write_ok(&a);
	cr_assert_eq(count_entries(st.dir, ".tmp"), 0, "a temp file stayed behind");
	cr_assert_eq(store_path(&st, "n-1", ".json", path, sizeof(path)), 0);
	cr_assert_eq(stat(path, &sb), 0);
	cr_assert_eq(sb.st_mode & 0007, 0, "records are not world-readable");
}

Test(store, read_missing_is_enoent)
{
	struct session b;
	struct cause c = {{0}};

	cr_assert_eq(store_read(&st, "nothing-1", &b, &c), -ENOENT);
}

Test(store, read_corrupt_is_einval)
{
	struct session a, b;
	struct cause c = {{0}};
	const char *docs[] = {"", "{", "{\"id\":", "not json", "[]", "{}", "\xff\xfe\x00"};
	char text[8192];
	json_object *o;
	int n;

	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		put_file("bad-1.json", docs[i], strlen(docs[i]));
		c.msg[0] = '\0';
		cr_assert_eq(store_read(&st, "bad-1", &b, &c), -EINVAL, "doc '%s'", docs[i]);
		cr_assert_neq(c.msg[0], '\0');
	}
	/* A valid record followed by trailing garbage, or by a second record. */
	make(&a, "bad", 1);
	o = session_to_json(&a, true);
	n = snprintf(text, sizeof(text), "%s x",
		     json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	put_file("bad-1.json", text, (size_t)n);
	cr_assert_eq(store_read(&st, "bad-1", &b, &c), -EINVAL, "trailing garbage");
	n = snprintf(text, sizeof(text), "%s%s",
		     json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
		     json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	put_file("bad-1.json", text, (size_t)n);
	cr_assert_eq(store_read(&st, "bad-1", &b, &c), -EINVAL, "two records");
	/* And the record alone is fine (the test can tell). */
	n = snprintf(text, sizeof(text), "%s",
		     json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	put_file("bad-1.json", text, (size_t)n);
	cr_assert_eq(store_read(&st, "bad-1", &b, &c), 0, "%s", c.msg);
	json_object_put(o);
}

Test(store, oversize_record_rejected)
{
	struct session a, b;
	struct cause c = {{0}};
	json_object *o;
	const char *rec;
	char *text = malloc(SESSION_RECORD_MAX + 2);
	size_t len, pad;

	cr_assert_not_null(text);
	make(&a, "big", 1);
	o = session_to_json(&a, true);
	rec = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	len = strlen(rec);
	/* Leading blanks make the file any size while keeping it one valid document. */
	pad = SESSION_RECORD_MAX - len;
	memset(text, ' ', pad);
	memcpy(text + pad, rec, len);
	put_file("big-1.json", text, SESSION_RECORD_MAX);
	cr_assert_eq(store_read(&st, "big-1", &b, &c), 0, "exactly the limit: %s", c.msg);
	memset(text, ' ', pad + 1);
	memcpy(text + pad + 1, rec, len);
	put_file("big-1.json", text, SESSION_RECORD_MAX + 1);
	cr_assert_eq(store_read(&st, "big-1", &b, &c), -EINVAL, "one byte over");
	cr_assert_not_null(strstr(c.msg, "too large"), "cause: %s", c.msg);
	json_object_put(o);
	free(text);
}

Test(store, huge_file_rejected_quickly)
{
	struct session b;
	struct cause c = {{0}};
	char path[SESSION_PATH_MAX + 64];
	int fd;

	/* A sparse 10 GB file: must be refused by size, not read. */
	snprintf(path, sizeof(path), "%s/huge-1.json", st.dir);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 10LL * 1024 * 1024 * 1024), 0);
	close(fd);
	cr_assert_eq(store_read(&st, "huge-1", &b, &c), -EINVAL);
}

Test(store, id_mismatch_detected)
{
	struct session a, b;
	struct cause c = {{0}};
	char from[SESSION_PATH_MAX], to[SESSION_PATH_MAX];

	make(&a, "a", 1);
	write_ok(&a);
	cr_assert_eq(store_path(&st, "a-1", ".json", from, sizeof(from)), 0);
	cr_assert_eq(store_path(&st, "b-2", ".json", to, sizeof(to)), 0);
	cr_assert_eq(rename(from, to), 0);
	cr_assert_eq(store_read(&st, "b-2", &b, &c), -EINVAL);
	cr_assert_not_null(strstr(c.msg, "a-1"), "cause '%s' names the id found", c.msg);
}

Test(store, hostile_ids_never_read_other_files)
{
	struct session a, b;
	struct cause c = {{0}};
	char path[256];
	const char *ids[] = {"../sessions/x-1", "./x-1", "x-1/../x-1", "../x-1", "/x-1", "x-1\n"};

	make(&a, "x", 1);
	write_ok(&a);
	/* The same record just outside the store, too. */
	{
		char inside[SESSION_PATH_MAX];

		cr_assert_eq(store_path(&st, "x-1", ".json", inside, sizeof(inside)), 0);
		snprintf(path, sizeof(path), "%s/x-1.json", rundir);
		cr_assert_eq(link(inside, path), 0);
	}
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		cr_assert_neq(store_read(&st, ids[i], &b, &c), 0, "store_read('%s') succeeded",
			      ids[i]);
}

Test(store, remove_outside_store_refused)
{
	char victim[128];
	struct stat sb;
	int fd;

	/* No request may delete outside the store: an id with '/' must not reach unlink. */
	snprintf(victim, sizeof(victim), "%s/victim.json", rundir);
	fd = open(victim, O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_lt(store_remove(&st, "../victim"), 0);
	cr_assert_eq(stat(victim, &sb), 0, "store_remove(\"../victim\") deleted %s", victim);
}

Test(store, invalid_ids_refused_everywhere)
{
	const char *ids[] = {"../x-1", "a/b-1", "x-0", "", "x-1\n", "..-1", "/etc/passwd-1"};
	struct session a, b;
	struct cause c = {{0}};
	char outside[128];
	struct stat sb;

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		cr_assert_eq(store_lock(&st, ids[i]), -EINVAL, "store_lock('%s')", ids[i]);
		cr_assert_eq(store_lock_create(&st, ids[i]), -EINVAL, "store_lock_create('%s')",
			     ids[i]);
		cr_assert_eq(store_remove(&st, ids[i]), -EINVAL, "store_remove('%s')", ids[i]);
		cr_assert_eq(store_read(&st, ids[i], &b, &c), -EINVAL, "store_read('%s')", ids[i]);
	}
	/* A record whose id was tampered with is not written anywhere. */
	make(&a, "x", 1);
	snprintf(a.id, sizeof(a.id), "../x-1");
	cr_assert_eq(store_write(&st, &a, &c), -EINVAL);
	snprintf(outside, sizeof(outside), "%s/x-1.json", rundir);
	cr_assert_neq(stat(outside, &sb), 0, "a record was written outside the store");
	cr_assert_eq(count_entries(st.dir, "x-1"), 0);
}

Test(store, remove)
{
	struct session a, b;
	struct cause c = {{0}};
	char lock[SESSION_PATH_MAX];
	struct stat sb;
	int fd;

	make(&a, "gone", 5);
	write_ok(&a);
	fd = store_lock(&st, "gone-5");
	cr_assert_geq(fd, 0);
	store_unlock(fd);
	cr_assert_eq(store_remove(&st, "gone-5"), 0);
	cr_assert_eq(store_read(&st, "gone-5", &b, &c), -ENOENT);
	cr_assert_eq(store_remove(&st, "gone-5"), -ENOENT);
	cr_assert_eq(store_remove(&st, "never-1"), -ENOENT);
	/* The lock file goes with the record (store_lock checks it still holds the file). */
	cr_assert_eq(store_path(&st, "gone-5", ".lock", lock, sizeof(lock)), 0);
	cr_assert_neq(stat(lock, &sb), 0, "the lock file of a removed session stayed");
	cr_assert_eq(count_entries(st.dir, "gone-5"), 0);
}

/* rev orders the versions of a record for clients: one up with every write, also when the writer
 * made the session afresh (a create over a failed one). */
Test(store, rev_rises_with_every_write)
{
	struct session a, fresh, got;
	struct cause c = {{0}};

	make(&a, "rev", 1);
	cr_assert_eq(a.rev, 0);
	write_ok(&a);
	cr_assert_eq(a.rev, 1);
	write_ok(&a);
	cr_assert_eq(a.rev, 2);
	cr_assert_eq(store_read(&st, "rev-1", &got, &c), 0, "%s", c.msg);
	cr_assert_eq(got.rev, 2, "rev on disk: %llu", (unsigned long long)got.rev);
	make(&fresh, "rev", 1);
	write_ok(&fresh);
	cr_assert_eq(fresh.rev, 3, "a fresh struct written over the record: rev %llu",
		     (unsigned long long)fresh.rev);
}

static void collect_gone(void *ctx, const char *id)
{
	char *seen = ctx;

	strncat(seen, id, 255 - strlen(seen));
	strncat(seen, " ", 255 - strlen(seen));
}

/* A removed record stays readable as .gone/<id>.json until the bridge forgets it. */
Test(store, removed_record_kept_until_forgotten)
{
	struct session a, b;
	struct cause c = {{0}};
	char seen[256] = "", junk[SESSION_PATH_MAX + 64];
	FILE *f;

	make(&a, "gone", 6);
	write_ok(&a);
	cr_assert_eq(store_remove(&st, "gone-6"), 0);
	cr_assert_eq(store_read(&st, "gone-6", &b, &c), -ENOENT);
	cr_assert_eq(store_read_gone(&st, "gone-6", &b, &c), 0, "%s", c.msg);
	cr_assert_str_eq(b.id, "gone-6");
	snprintf(junk, sizeof(junk), "%s/" STORE_GONE_DIR "/not an id.json", st.dir);
	f = fopen(junk, "w");
	cr_assert_not_null(f);
	fclose(f);
	store_gone_each(&st, collect_gone, seen);
	cr_assert_str_eq(seen, "gone-6 ");
	store_forget_gone(&st, "gone-6");
	store_forget_gone(&st, "gone-6"); /* absent: fine */
	store_forget_gone(&st, "../gone-6");
	cr_assert_eq(store_read_gone(&st, "gone-6", &b, &c), -ENOENT);
	seen[0] = '\0';
	store_gone_each(&st, collect_gone, seen);
	cr_assert_str_eq(seen, "");
}

Test(store, list_sorted_and_skips_corrupt)
{
	const char *names[] = {"socket.io", "b", "a", "a", "zz"};
	const long issues[] = {3, 1, 2, 10, 1};
	const char *want[] = {"a-10", "a-2", "b-1", "socket.io-3", "zz-1"};
	struct session s, *list = NULL;
	size_t n = 99;
	char sub[SESSION_PATH_MAX + 64];
	int fd;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		make(&s, names[i], issues[i]);
		write_ok(&s);
	}
	/* Noise: corrupt records, a temp file, hidden files, locks, a directory. */
	put_file("corrupt-1.json", "{not json", 9);
	put_file("empty-1.json", "", 0);
	put_file("schema-1.json", "{\"id\":\"schema-1\"}", 17);
	put_file("c-1.json.tmp", "{", 1);
	put_file(".hidden-1.json", "{", 1);
	put_file(".json", "{", 1);
	put_file("README", "x", 1);
	snprintf(sub, sizeof(sub), "%s/dir-1.json", st.dir);
	cr_assert_eq(mkdir(sub, 0750), 0);
	fd = store_lock(&st, "b-1");
	cr_assert_geq(fd, 0);
	store_unlock(fd);
	fd = store_lock_all(&st);
	cr_assert_geq(fd, 0);
	store_unlock(fd);

	cr_assert_eq(store_list(&st, &list, &n), 0);
	cr_assert_eq(n, 5, "listed %zu records", n);
	for (size_t i = 0; i < n; i++)
		cr_assert_str_eq(list[i].id, want[i], "position %zu", i);
	cr_assert_str_eq(list[3].tmux_name, "socket_io-3");
	free(list);
}

/* A repository name may start with a dot (".github"): its records are sessions like any other,
 * listed (GET /sessions, /events' snapshot, the session count of the limit and /healthz), in the
 * view rebuilt from the records, and moved by the migration from the runtime dir. */
Test(store, records_of_names_starting_with_a_dot_are_listed)
{
	struct session a, b, got, *list = NULL;
	struct store other;
	struct cause c = {{0}};
	char state[128], path[SESSION_PATH_MAX + 64], *view = NULL;
	size_t n = 0, len = 0;
	FILE *f;

	make(&a, ".github", 1);
	write_ok(&a);
	make(&b, "plain", 2);
	write_ok(&b);
	cr_assert_eq(store_list(&st, &list, &n), 0);
	cr_assert_eq(n, 2, "listed %zu records of 2", n);
	cr_assert_str_eq(list[0].id, ".github-1");
	cr_assert_str_eq(list[1].id, "plain-2");
	free(list);

	cr_assert_eq(store_rebuild_view(&st), 0);
	f = fopen(st.view, "r");
	cr_assert_not_null(f);
	cr_assert_geq(getdelim(&view, &len, '\0', f), 0);
	fclose(f);
	cr_assert_not_null(strstr(view, "\"id\":\".github-1\""), "view: %s", view);
	free(view);

	snprintf(state, sizeof(state), "%s/state", rundir);
	cr_assert_eq(mkdir(state, 0700), 0);
	cr_assert_eq(store_init(&other, state, rundir, &c), 0, "%s", c.msg);
	cr_assert_eq(store_read(&other, ".github-1", &got, &c), 0, "not moved: %s", c.msg);
	snprintf(path, sizeof(path), "%s/sessions/.github-1.json", rundir);
	cr_assert_neq(access(path, F_OK), 0, "the old record is gone");
}

Test(store, list_skips_oversize_record)
{
	struct session a, *list = NULL;
	size_t n = 0;
	char *text = malloc(SESSION_RECORD_MAX + 1);

	/* One oversized file must cost only itself, not the whole listing (GET /sessions). */
	cr_assert_not_null(text);
	memset(text, ' ', SESSION_RECORD_MAX + 1);
	put_file("big-1.json", text, SESSION_RECORD_MAX + 1);
	make(&a, "ok", 1);
	write_ok(&a);
	cr_assert_eq(store_list(&st, &list, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(list[0].id, "ok-1");
	free(list);
	free(text);
}

Test(store, list_skips_record_under_wrong_name)
{
	struct session a, *list = NULL;
	char from[SESSION_PATH_MAX], to[SESSION_PATH_MAX];
	size_t n = 0;

	/* A copied record ("cp a-1.json b-2.json") would list a-1 twice. */
	make(&a, "a", 1);
	write_ok(&a);
	cr_assert_eq(store_path(&st, "a-1", ".json", from, sizeof(from)), 0);
	cr_assert_eq(store_path(&st, "b-2", ".json", to, sizeof(to)), 0);
	cr_assert_eq(link(from, to), 0);
	cr_assert_eq(store_list(&st, &list, &n), 0);
	cr_assert_eq(n, 1, "a record under another id's file name was listed (%zu records)", n);
	cr_assert_str_eq(list[0].id, "a-1");
	free(list);
}

Test(store, list_empty_and_missing)
{
	struct session *list = (struct session *)1;
	size_t n = 7;
	struct store none;

	cr_assert_eq(store_list(&st, &list, &n), 0);
	cr_assert_eq(n, 0);
	free(list);
	snprintf(none.dir, sizeof(none.dir), "%s/absent", rundir);
	cr_assert_eq(store_list(&none, &list, &n), -ENOENT);
}

Test(store, list_many)
{
	struct session s, *list = NULL;
	size_t n = 0;
	char prev[SESSION_ID_MAX + 1] = "";

	for (long i = 1; i <= 200; i++) {
		make(&s, i % 2 ? "odd" : "even", i);
		write_ok(&s);
	}
	cr_assert_eq(store_list(&st, &list, &n), 0);
	cr_assert_eq(n, 200);
	for (size_t i = 0; i < n; i++) {
		cr_assert_lt(strcmp(prev, list[i].id), 0, "not sorted at %zu", i);
		snprintf(prev, sizeof(prev), "%s", list[i].id);
	}
	free(list);
}

Test(store, write_errors_have_cause)
{
	struct session a;
	struct cause c = {{0}};
	struct store gone;

	make(&a, "n", 1);
	snprintf(gone.dir, sizeof(gone.dir), "%s/absent", rundir);
	cr_assert_eq(store_write(&gone, &a, &c), -ENOENT);
	cr_assert_neq(c.msg[0], '\0');
}

Test(store, path_too_long)
{
	char out[16];

	cr_assert_eq(store_path(&st, "x-1", ".json", out, sizeof(out)), -ENAMETOOLONG);
}

/* ---- atomicity ---- */

Test(store, reader_never_sees_partial_record, .timeout = 60)
{
	struct session a, b;
	struct cause c = {{0}};
	int go[2];
	pid_t pid;
	int status, seen_a = 0, seen_b = 0;

	make(&a, "race", 1);
	memset(a.prompt, 'A', SESSION_PROMPT_MAX);
	a.prompt[SESSION_PROMPT_MAX] = '\0';
	write_ok(&a);
	cr_assert_eq(pipe2(go, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* Writer: alternates two large records until the parent closes the pipe. */
		struct pollfd pfd = {.fd = go[0], .events = POLLIN};
		char ch;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(go[1]);
		if (read(go[0], &ch, 1) != 1) /* wait for the start signal */
			_exit(2);
		for (unsigned i = 0;; i++) {
			memset(a.prompt, i % 2 ? 'B' : 'A', SESSION_PROMPT_MAX);
			a.clients = (int)(i % 1000);
			if (store_write(&st, &a, NULL) != 0)
				_exit(3);
			if (poll(&pfd, 1, 0) != 0) /* EOF: the parent is done */
				_exit(0);
		}
	}
	close(go[0]);
	cr_assert_eq(write(go[1], "g", 1), 1);
	for (int i = 0; i < 1000; i++) {
		int r = store_read(&st, "race-1", &b, &c);

		cr_assert_eq(r, 0, "read %d: %d (%s)", i, r, c.msg);
		cr_assert_eq(strlen(b.prompt), SESSION_PROMPT_MAX);
		cr_assert(strspn(b.prompt, "A") == SESSION_PROMPT_MAX ||
			      strspn(b.prompt, "B") == SESSION_PROMPT_MAX,
			  "read %d saw a mixed record", i);
		if (b.prompt[0] == 'A')
			seen_a++;
		else
			seen_b++;
	}
	close(go[1]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer status %d", status);
	cr_assert_eq(count_entries(st.dir, ".tmp"), 0);
	cr_log_info("reader saw %d A and %d B records", seen_a, seen_b);
}

/* ---- locks ---- */

/* In a child: tries the lock file at path without blocking; exits 0 if taken, 1 if busy. */
static int try_lock_in_child(const char *path)
{
	pid_t pid = fork();
	int status;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fd;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);

		if (fd < 0)
			_exit(2);
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			_exit(0);
		_exit(errno == EWOULDBLOCK ? 1 : 3);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

Test(store, lock_excludes_second_locker)
{
	char path[SESSION_PATH_MAX];
	int fd;

	cr_assert_eq(store_path(&st, "s-1", ".lock", path, sizeof(path)), 0);
	fd = store_lock_create(&st, "s-1");
	cr_assert_geq(fd, 0);
	cr_assert_eq(try_lock_in_child(path), 1, "a second process took a held lock");
	store_unlock(fd);
	cr_assert_eq(try_lock_in_child(path), 0, "the lock was not released");
	/* Taking it again works, and is again exclusive. */
	fd = store_lock_create(&st, "s-1");
	cr_assert_geq(fd, 0);
	cr_assert_eq(try_lock_in_child(path), 1);
	store_unlock(fd);
}

Test(store, locks_are_per_session_and_store_wide)
{
	char p1[SESSION_PATH_MAX], p2[SESSION_PATH_MAX], pall[SESSION_PATH_MAX];
	int f1, fall;

	cr_assert_eq(store_path(&st, "s-1", ".lock", p1, sizeof(p1)), 0);
	cr_assert_eq(store_path(&st, "s-2", ".lock", p2, sizeof(p2)), 0);
	f1 = store_lock_create(&st, "s-1");
	cr_assert_geq(f1, 0);
	cr_assert_eq(try_lock_in_child(p1), 1);
	cr_assert_eq(try_lock_in_child(p2), 0, "another session's lock is independent");
	fall = store_lock_all(&st);
	cr_assert_geq(fall, 0, "the store-wide lock is independent of a session lock");
	cr_assert_eq(store_path(&st, "", ".store.lock", pall, sizeof(pall)), 0);
	cr_assert_eq(try_lock_in_child(pall), 1, "a second process took the store-wide lock");
	store_unlock(fall);
	cr_assert_eq(try_lock_in_child(pall), 0);
	store_unlock(f1);
	store_unlock(-1); /* NULL-safe */
}

Test(store, lock_fd_is_cloexec)
{
	int fd = store_lock_create(&st, "s-1");

	cr_assert_geq(fd, 0);
	/* Spawned programs (tmux, git) must not inherit and so prolong a session lock. */
	cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	store_unlock(fd);
}

Test(store, blocking_lock_waits_for_holder, .timeout = 30)
{
	int to_child[2], from_child[2];
	struct pollfd pfd;
	pid_t pid;
	int fd, status;
	char ch;

	cr_assert_eq(pipe2(to_child, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(from_child, O_CLOEXEC), 0);
	fd = store_lock_create(&st, "w-1");
	cr_assert_geq(fd, 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int cfd;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(to_child[1]); /* so that the parent's close is our EOF */
		close(from_child[0]);
		close(fd); /* the child must not hold the parent's lock through the copy */
		if (write(from_child[1], "r", 1) != 1) /* ready: about to block */
			_exit(2);
		cfd = store_lock_create(&st, "w-1");
		if (cfd < 0 || write(from_child[1], "L", 1) != 1)
			_exit(3);
		/* Hold it until told, so the parent can see it is exclusive. */
		if (read(to_child[0], &ch, 1) < 0)
			_exit(4);
		store_unlock(cfd);
		_exit(0);
	}
	cr_assert_eq(read(from_child[0], &ch, 1), 1);
	cr_assert_eq(ch, 'r');
	/* The child is in (or about to enter) flock; it must not get the lock while we hold it. */
	pfd = (struct pollfd){.fd = from_child[0], .events = POLLIN};
	cr_assert_eq(poll(&pfd, 1, 300), 0, "the child got a lock we hold");
	store_unlock(fd);
	cr_assert_eq(poll(&pfd, 1, 10000), 1, "the child never got the released lock");
	cr_assert_eq(read(from_child[0], &ch, 1), 1);
	cr_assert_eq(ch, 'L');
	{
		char path[SESSION_PATH_MAX];

		cr_assert_eq(store_path(&st, "w-1", ".lock", path, sizeof(path)), 0);
		cr_assert_eq(try_lock_in_child(path), 1, "the child's lock is exclusive");
	}
	close(to_child[1]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}

/* A request about an unknown id, or a refused create, leaves no file in the store. */
Test(store, unknown_id_creates_no_file)
{
	struct session a;
	int fd;

	cr_assert_eq(store_lock(&st, "nobody-1"), -ENOENT);
	cr_assert_eq(store_remove(&st, "nobody-1"), -ENOENT);
	cr_assert_eq(count_entries(st.dir, "nobody"), 0, "locking an unknown id made a file");
	/* A create that is refused: locked, nothing written, released. */
	fd = store_lock_create(&st, "refused-1");
	cr_assert_geq(fd, 0);
	store_unlock_session(&st, "refused-1", fd);
	cr_assert_eq(count_entries(st.dir, "refused"), 0, "a refused create left a file");
	cr_assert_eq(store_lock(&st, "refused-1"), -ENOENT);
	/* A create that wrote its record keeps the lock file, and store_lock finds it. */
	make(&a, "kept", 2);
	fd = store_lock_create(&st, "kept-2");
	cr_assert_geq(fd, 0);
	write_ok(&a);
	store_unlock_session(&st, "kept-2", fd);
	cr_assert_eq(count_entries(st.dir, "kept-2.lock"), 1);
	fd = store_lock(&st, "kept-2");
	cr_assert_geq(fd, 0);
	cr_assert_eq(store_remove(&st, "kept-2"), 0);
	store_unlock(fd);
	cr_assert_eq(count_entries(st.dir, "kept"), 0, "a deleted session left a file");
}

/* A record written before lock files were removed with it (no lock file) still gets its lock. */
Test(store, record_without_lock_file_is_lockable)
{
	struct session a;
	int fd;

	make(&a, "old", 3);
	write_ok(&a);
	cr_assert_eq(count_entries(st.dir, "old-3.lock"), 0);
	fd = store_lock(&st, "old-3");
	cr_assert_geq(fd, 0);
	cr_assert_eq(count_entries(st.dir, "old-3.lock"), 1);
	store_unlock(fd);
}

/*
 * The unlink-while-locked race: a process that opened the lock file and waits in flock while the
 * holder deletes the session must not believe it holds a lock. It finds the session gone, and a
 * new session of the same id has a new lock that excludes the old waiter.
 */
Test(store, waiter_on_removed_lock_file_starts_over, .timeout = 30)
{
	int from_child[2];
	struct session a;
	pid_t pid;
	int fd, status;
	char ch;

	cr_assert_eq(pipe2(from_child, O_CLOEXEC), 0);
	make(&a, "race", 4);
	fd = store_lock_create(&st, "race-4");
	cr_assert_geq(fd, 0);
	write_ok(&a);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int cfd;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(from_child[0]);
		close(fd);
		if (write(from_child[1], "r", 1) != 1)
			_exit(2);
		cfd = store_lock(&st, "race-4"); /* opens the old file, waits in flock */
		_exit(cfd == -ENOENT ? 0 : 1);
	}
	close(from_child[1]);
	cr_assert_eq(read(from_child[0], &ch, 1), 1);
	/* Let the child reach flock on the old file (if it is slower, it finds no file: also
	 * right). */
	poll(NULL, 0, 200);
	cr_assert_eq(store_remove(&st, "race-4"), 0);
	store_unlock(fd);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "a waiter on a removed lock file believed it held the lock (status %d)", status);
	cr_assert_eq(count_entries(st.dir, "race"), 0);
}

/* A new lock file made while an old waiter still holds the removed one: both may hold "a" lock,
 * but only the one on the file at the path is the lock; store_lock never returns the other. */
Test(store, recreated_session_lock_excludes_stale_waiter, .timeout = 30)
{
	char path[SESSION_PATH_MAX];
	struct session a;
	int fd, fd2, stale;

	make(&a, "again", 5);
	fd = store_lock_create(&st, "again-5");
	cr_assert_geq(fd, 0);
	write_ok(&a);
	cr_assert_eq(store_path(&st, "again-5", ".lock", path, sizeof(path)), 0);
	stale = open(path, O_RDWR | O_CLOEXEC); /* a process that opened the old file */
	cr_assert_geq(stale, 0);
	cr_assert_eq(store_remove(&st, "again-5"), 0);
	store_unlock(fd);
	cr_assert_eq(flock(stale, LOCK_EX | LOCK_NB), 0, "the old file is free now");
	/* The session is created again: its lock is a new file, not the stale one. */
	fd2 = store_lock_create(&st, "again-5");
	cr_assert_geq(fd2, 0);
	cr_assert_eq(try_lock_in_child(path), 1, "the new lock is held");
	write_ok(&a);
	store_unlock_session(&st, "again-5", fd2);
	close(stale);
}
