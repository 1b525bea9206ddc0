#include "authcache.h"

#include "fsutil.h"
#include "log.h"
#include "tokencmd.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int authcache_init(struct authcache *ac, const struct config *cfg)
{
	memset(ac, 0, sizeof(*ac));
	pthread_mutex_init(&ac->lock, NULL);
	ac->policy.ts_users = cfg->tailscale_users;
	ac->policy.ts_viewers = cfg->tailscale_viewers;
	if (config_state_path(cfg, TOKENCMD_STORE, ac->path, sizeof(ac->path)) < 0 ||
	    config_state_path(cfg, TOKENCMD_LOCK, ac->lock_path, sizeof(ac->lock_path)) < 0)
		return -ENAMETOOLONG;
	return 0;
}

void authcache_finish(struct authcache *ac)
{
	tokens_free(&ac->t);
	pthread_mutex_destroy(&ac->lock);
}

static bool authcache_same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Copies the newer last_used of each name in from into to. Returns true when to changed. */
static bool authcache_merge_used(struct tokens *to, const struct tokens *from)
{
	bool changed = false;

	for (size_t i = 0; i < to->n; i++)
		for (size_t j = 0; j < from->n; j++)
			if (strcmp(to->v[i].name, from->v[j].name) == 0 &&
			    from->v[j].last_used > to->v[i].last_used) {
				to->v[i].last_used = from->v[j].last_used;
				changed = true;
			}
	return changed;
}

/* Loads the store again when the file is not the one loaded. Called with the lock held. */
static void authcache_refresh(struct authcache *ac)
{
	struct cause cause = {{0}};
	struct tokens fresh = {0};
	struct stat st;
	int r;

	if (stat(ac->path, &st) < 0) {
		if (errno == ENOENT) {
			if (!ac->loaded || !ac->missing) {
				tokens_free(&ac->t);
				ac->loaded = ac->missing = true;
				ac->broken = ac->dirty = false;
			}
			return;
		}
		if (!ac->loaded || !ac->broken)
			log_error("cannot read the token store %s: %s: every request is refused",
				  ac->path, strerror(errno));
		tokens_free(&ac->t);
		ac->loaded = ac->broken = true;
		ac->missing = false;
		memset(&ac->st, 0, sizeof(ac->st));
		return;
	}
	if (ac->loaded && !ac->missing && authcache_same_file(&st, &ac->st))
		return;
	r = tokens_load(ac->path, &fresh, &cause);
	ac->loaded = true;
	ac->st = st;
	ac->missing = r == -ENOENT;
	if (r < 0 && r != -ENOENT) {
		if (!ac->broken)
			log_error("%s: every request is refused until the token store is fixed",
				  cause.msg);
		tokens_free(&ac->t);
		ac->broken = true;
		ac->dirty = false;
		return;
	}
	if (ac->broken)
		log_info("the token store %s is readable again", ac->path);
	ac->broken = false;
	/* Uses noted since the last write survive the reload. */
	if (authcache_merge_used(&fresh, &ac->t))
		ac->dirty = true;
	tokens_free(&ac->t);
	ac->t = fresh;
}

/* Writes the last_used times noted since the last write into the file as it is now. Called
 * with the lock held, when due. A busy lock (a `token` command runs) waits for the next use. */
static void authcache_flush(struct authcache *ac, int64_t now)
{
	struct cause cause = {{0}};
	struct tokens file = {0};
	struct stat st;
	int fd, r;

	ac->last_flush = now;
	fd = fsutil_lock(ac->lock_path, LOCK_EX | LOCK_NB, 0600);
	if (fd < 0) {
		/* Held: another process writes the times now. */
		if (fd != -EWOULDBLOCK)
			log_warn("cannot lock %s: %s: last-used times not written", ac->lock_path,
				 strerror(-fd));
		return;
	}
	r = tokens_load(ac->path, &file, &cause);
	if (r == 0 && authcache_merge_used(&file, &ac->t)) {
		r = tokens_save(ac->path, &file, &cause);
		if (r < 0)
			log_warn("%s: last-used times not written", cause.msg);
	}
	/* The file as written (or as found) is the one loaded now: no reload of our own write. */
	if (r == 0 && stat(ac->path, &st) == 0) {
		authcache_merge_used(&file, &ac->t);
		tokens_free(&ac->t);
		ac->t = file;
		file.v = NULL;
		ac->st = st;
		ac->dirty = false;
	}
	tokens_free(&file);
	close(fd); /* releases the lock */
}

int authcache_decide(struct authcache *ac, const struct auth_input *in, int64_t now,
		     struct auth_result *out)
{
	pthread_mutex_lock(&ac->lock);
	authcache_refresh(ac);
	auth_decide(in, ac->broken ? NULL : &ac->t, &ac->policy, out);
	if (out->token != NULL && out->token->last_used != now) {
		out->token->last_used = now;
		ac->dirty = true;
	}
	out->token = NULL;
	if (ac->dirty && now - ac->last_flush >= AUTHCACHE_FLUSH_SECS)
		authcache_flush(ac, now);
	pthread_mutex_unlock(&ac->lock);
	return out->status;
}
