/*
 * Each session's own uid (and a gid of the same number), so the kernel's own rules (file
 * ownership, signals, ptrace, /proc/<pid>/environ) keep one session's agent from another's.
 *
 * The ids come from a range (AGENTD_SESSION_UIDS, default 61184-65519: systemd's dynamic users',
 * above adduser's and below 65534/65535 and the 16-bit boundary a user namespace may map). A uid is
 * the host's, not a stack's: two agentd stacks on one host (parallel test stacks, a second
 * deployment) must never hand out the same one. So the registry is host-wide: one file per uid in
 * CAGEUID_REGISTRY, taken under an flock of the registry's lock file, and a uid the user database
 * already knows (getpwuid: /etc/passwd, LDAP, another program's /run/userdb entry) is never taken.
 * A registry entry names its holder, "<state dir> <session id>", so the same session gets the same
 * uid back (restarts, reboots, --resume), and an entry whose state dir is gone (a removed test
 * stack) is free again.
 *
 * whoami, ssh, Node's os.userInfo() and git's ident need a passwd entry for the uid: it is
 * published as nss-systemd's JSON drop-ins in /run/userdb (read with or without systemd running;
 * Debian's default nsswitch "passwd: files systemd"), named CAGEUID_NAME_PREFIX<uid>, removed with
 * the uid. Nothing is written to /etc/passwd.
 */
#ifndef AGENTD_CAGEUID_H
#define AGENTD_CAGEUID_H

#include "cause.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define CAGEUID_DEFAULT_MIN 61184u /* systemd's dynamic users: 0xEF00 */
#define CAGEUID_DEFAULT_MAX 65519u /* 0xFFEF: below nobody (65534) and the 16-bit boundary */
#define CAGEUID_REGISTRY    "/run/agentd-uids" /* host-wide: every stack takes its uids here */
#define CAGEUID_USERDB      "/run/userdb"      /* nss-systemd's drop-in directory */
#define CAGEUID_NAME_PREFIX "agentd-"          /* the published user's name: agentd-<uid> */
#define CAGEUID_NAME_MAX    32                 /* a user name, as useradd allows it */
#define CAGEUID_HOLDER_MAX  4200 /* "<state dir> <session id>": a path and an id, with room */

/* Where the registry and the drop-ins are (the constants above; a unit test's temporary dirs). */
struct cageuid_dirs {
	const char *registry;
	const char *userdb; /* NULL: publish nothing */
};

/*
 * Parses "MIN-MAX" (decimal, 1 <= MIN <= MAX < 65534). Returns 0 or -EINVAL.
 */
int cageuid_parse_range(const char *s, uid_t *min, uid_t *max);

/*
 * Gives the session (state_dir, session_id) a uid from [min, max]: the one it holds already, or
 * the lowest one that no entry of the registry holds and the user database does not know. Writes
 * the registry entry and, when dirs->userdb is set, the passwd/group drop-ins with home. Safe
 * against any number of processes and stacks doing the same at once. Returns 0 with *out, or a
 * negative errno with cause: -ENOSPC (the range is used up), -EIO.
 */
int cageuid_alloc(const struct cageuid_dirs *dirs, uid_t min, uid_t max, const char *state_dir,
		  const char *session_id, const char *home, uid_t *out, struct cause *cause);

/*
 * Takes uid back for (state_dir, session_id), as the session's record says (after a reboot
 * emptied /run): 0 when it is the session's again (entry and drop-ins written), -EBUSY when
 * another holder has it or the user database knows it as someone else, -EIO.
 */
int cageuid_claim(const struct cageuid_dirs *dirs, uid_t uid, const char *state_dir,
		  const char *session_id, const char *home, struct cause *cause);

/*
 * Gives uid back: removes its drop-ins and its registry entry, when (state_dir, session_id) holds
 * it (another holder's entry is left alone). Returns 0 (also when there was none) or -EIO.
 */
int cageuid_release(const struct cageuid_dirs *dirs, uid_t uid, const char *state_dir,
		    const char *session_id);

/* Writes the name published for uid (CAGEUID_NAME_PREFIX<uid>). Returns 0 or -ENAMETOOLONG. */
int cageuid_name(uid_t uid, char *out, size_t outlen);

#endif
