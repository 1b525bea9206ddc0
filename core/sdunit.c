/*
 * sdunit: the sessions' slices and scopes as systemd's transient units, over sd-bus. See sdunit.h.
 */
#include "sdunit.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-login.h>
#include <time.h>
#include <unistd.h>

#define SDUNIT_DEST  "org.freedesktop.systemd1"
#define SDUNIT_PATH  "/org/freedesktop/systemd1"
#define SDUNIT_IFACE "org.freedesktop.systemd1.Manager"
/* The manager's socket for root's clients: systemctl's own way in when no bus daemon runs. */
#define SDUNIT_PRIVATE "unix:path=/run/systemd/private"
#define SDUNIT_POLL_MS 5 /* re-check interval while a start or stop job runs */

int sdunit_slice_name(const char *id, char *out, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;
	int w = snprintf(out, len, "agentd-sessions-");

	if (w < 0 || (size_t)w >= len)
		return -ENAMETOOLONG;
	n = (size_t)w;
	if (id[0] == '\0')
		return -EINVAL;
	for (const char *p = id; *p != '\0'; p++) {
		unsigned char ch = (unsigned char)*p;
		bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			     (ch >= '0' && ch <= '9') || ch == '_' || (ch == '.' && p != id);

		if (ch < 0x20 || ch == '/' || ch >= 0x7f)
			return -EINVAL;
		/* '-' would make another slice level; the rest is what unit names cannot hold. */
		if (plain) {
			if (n + 1 >= len)
				return -ENAMETOOLONG;
			out[n++] = (char)ch;
		} else {
			if (n + 4 >= len)
				return -ENAMETOOLONG;
			out[n++] = '\\';
			out[n++] = 'x';
			out[n++] = hex[ch >> 4];
			out[n++] = hex[ch & 15];
		}
	}
	if (n + sizeof(".slice") > len || n + sizeof(".slice") > SDUNIT_NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(out + n, ".slice", sizeof(".slice"));
	return 0;
}

int sdunit_scope_name(const char *id, char *out, size_t len)
{
	int w;

	if (!cgroup_name_valid(id, false) || id[0] == '.')
		return -EINVAL;
	w = snprintf(out, len, "agentd-session-%s.scope", id);
	if (w < 0 || (size_t)w >= len || w >= SDUNIT_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

int sdunit_open(sd_bus **out, struct cause *c)
{
	sd_bus *bus = NULL;
	int r;

	*out = NULL;
	if (geteuid() == 0) {
		r = sd_bus_new(&bus);
		if (r >= 0)
			r = sd_bus_set_address(bus, SDUNIT_PRIVATE);
		if (r >= 0)
			r = sd_bus_start(bus);
		if (r >= 0)
			goto done;
		bus = sd_bus_unref(bus);
	}
	r = sd_bus_open_system(&bus);
	if (r < 0)
		return cause_fail(c, -r, "cannot reach systemd (%s nor the system bus): %s",
				  &SDUNIT_PRIVATE[strlen("unix:path=")], strerror(-r));
done:
	sd_bus_set_method_call_timeout(bus, SDUNIT_CALL_USEC);
	*out = bus;
	return 0;
}

/* A bus error for a person; the errno systemd's error maps to. */
static int sdunit_fail(struct cause *c, const sd_bus_error *e, int r, const char *what,
		       const char *unit)
{
	return cause_fail(c, -r, "%s %s: %s", what, unit,
			  e != NULL && e->message != NULL ? e->message : strerror(-r));
}

static void sdunit_sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static long sdunit_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sdunit_active(sd_bus *bus, const char *unit)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	char *path = NULL, *state = NULL;
	int r;

	r = sd_bus_path_encode(SDUNIT_PATH "/unit", unit, &path);
	if (r < 0)
		return r;
	/* Asking a unit's object loads it when systemd does not know it: "inactive". */
	r = sd_bus_get_property_string(bus, SDUNIT_DEST, path, "org.freedesktop.systemd1.Unit",
				       "ActiveState", &e, &state);
	if (r >= 0)
		r = strcmp(state, "inactive") != 0 && strcmp(state, "failed") != 0;
	free(state);
	free(path);
	sd_bus_error_free(&e);
	return r;
}

/* The limits as systemd's properties, into an open a(sv). systemd maps them onto v1 or v2 itself
 * (MemoryMax onto memory.limit_in_bytes under v1; MemorySwapMax exists only in v2). */
static int sdunit_append_limits(sd_bus_message *m, const struct cgroup_limits *l)
{
	int r;

	r = sd_bus_message_append(m, "(sv)(sv)(sv)", "MemoryAccounting", "b", 1, "TasksAccounting",
				  "b", 1, "CPUAccounting", "b", 1);
	if (r >= 0)
		r = sd_bus_message_append(
		    m, "(sv)(sv)", "MemoryMax", "t", l->memory_max > 0 ? l->memory_max : UINT64_MAX,
		    "MemorySwapMax", "t", l->memory_max > 0 ? (uint64_t)0 : UINT64_MAX);
	if (r >= 0)
		r = sd_bus_message_append(m, "(sv)", "TasksMax", "t",
					  l->tasks_max > 0 ? (uint64_t)l->tasks_max : UINT64_MAX);
	/* A thousandth of a CPU is a millisecond of CPU time per second. */
	if (r >= 0)
		r = sd_bus_message_append(m, "(sv)", "CPUQuotaPerSecUSec", "t",
					  l->cpu_milli > 0 ? (uint64_t)l->cpu_milli * 1000
							   : UINT64_MAX);
	return r;
}

int sdunit_slice_start(sd_bus *bus, const char *slice, const struct cgroup_limits *l,
		       struct cause *c)
{
	sd_bus_message *m = NULL, *reply = NULL;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	bool again = false;
	int r;

start:
	r = sd_bus_message_new_method_call(bus, &m, SDUNIT_DEST, SDUNIT_PATH, SDUNIT_IFACE,
					   again ? "SetUnitProperties" : "StartTransientUnit");
	if (r >= 0)
		r = again ? sd_bus_message_append(m, "sb", slice, 1)
			  : sd_bus_message_append(m, "ss", slice, "fail");
	if (r >= 0)
		r = sd_bus_message_open_container(m, 'a', "(sv)");
	if (r >= 0 && !again)
		/* No Slice=: a slice's parent is the one its name says, SDUNIT_PARENT_SLICE. */
		r = sd_bus_message_append(m, "(sv)(sv)", "Description", "s",
					  "agentd session's share of the machine", "CollectMode",
					  "s", "inactive-or-failed");
	if (r >= 0)
		r = sdunit_append_limits(m, l);
	if (r >= 0)
		r = sd_bus_message_close_container(m);
	if (r >= 0 && !again)
		r = sd_bus_message_append(m, "a(sa(sv))", 0);
	if (r < 0) {
		cause_fail(c, -r, "cannot build the call for %s: %s", slice, strerror(-r));
		goto out;
	}
	r = sd_bus_call(bus, m, 0, &e, &reply);
	if (r < 0 && !again && sd_bus_error_has_name(&e, "org.freedesktop.systemd1.UnitExists")) {
		/* Still there (its session runs: a mode switch): its limits written again. */
		m = sd_bus_message_unref(m);
		sd_bus_error_free(&e);
		again = true;
		goto start;
	}
	if (r < 0)
		sdunit_fail(c, &e, r, again ? "cannot set the limits of" : "cannot start", slice);
out:
	sd_bus_message_unref(reply);
	sd_bus_message_unref(m);
	sd_bus_error_free(&e);
	return r < 0 ? r : 0;
}

/* 1 when the calling process is in unit (its name=systemd or unified cgroup says so). */
static int sdunit_self_in(const char *unit)
{
	char *mine = NULL;
	int r = sd_pid_get_unit(0, &mine);

	if (r < 0)
		return r;
	r = strcmp(mine, unit) == 0;
	free(mine);
	return r;
}

int sdunit_scope_join(sd_bus *bus, const char *scope, const char *slice, struct cause *c)
{
	sd_bus_message *m = NULL, *reply = NULL;
	sd_bus_error e = SD_BUS_ERROR_NULL;
	long deadline = sdunit_now_ms() + SDUNIT_WAIT_MS;
	uint32_t pid = (uint32_t)getpid();
	int r;

	for (;;) {
		r = sd_bus_message_new_method_call(bus, &m, SDUNIT_DEST, SDUNIT_PATH, SDUNIT_IFACE,
						   "StartTransientUnit");
		if (r >= 0)
			r = sd_bus_message_append(m, "ss", scope, "fail");
		if (r >= 0)
			r = sd_bus_message_open_container(m, 'a', "(sv)");
		/* No accounting of its own: the slice counts and limits (sdunit.h says why). A
		 * stop SIGKILLs at once, as DELETE does under deploy/up. */
		if (r >= 0)
			r = sd_bus_message_append(
			    m, "(sv)(sv)(sv)(sv)(sv)(sv)(sv)(sv)", "Description", "s",
			    "agentd session's agent", "Slice", "s", slice, "CollectMode", "s",
			    "inactive-or-failed", "MemoryAccounting", "b", 0, "TasksAccounting",
			    "b", 0, "CPUAccounting", "b", 0, "KillSignal", "i", SIGKILL, "PIDs",
			    "au", 1, pid);
		if (r >= 0)
			r = sd_bus_message_close_container(m);
		if (r >= 0)
			r = sd_bus_message_append(m, "a(sa(sv))", 0);
		if (r < 0) {
			cause_fail(c, -r, "cannot build the call for %s: %s", scope, strerror(-r));
			goto out;
		}
		r = sd_bus_call(bus, m, 0, &e, &reply);
		m = sd_bus_message_unref(m);
		reply = sd_bus_message_unref(reply);
		if (r >= 0)
			break;
		if (!sd_bus_error_has_name(&e, "org.freedesktop.systemd1.UnitExists")) {
			sdunit_fail(c, &e, r, "cannot start", scope);
			goto out;
		}
		sd_bus_error_free(&e);
		/* The scope of a launch whose processes linger (a mode switch): joined. */
		r = sd_bus_call_method(bus, SDUNIT_DEST, SDUNIT_PATH, SDUNIT_IFACE,
				       "AttachProcessesToUnit", &e, NULL, "ssau", scope, "", 1,
				       pid);
		if (r >= 0)
			break;
		/* ... or an ended one systemd has not collected yet: tried again. */
		if (sdunit_now_ms() >= deadline) {
			sdunit_fail(c, &e, r, "cannot start or join", scope);
			goto out;
		}
		sd_bus_error_free(&e);
		sdunit_sleep_ms(SDUNIT_POLL_MS);
	}
	/* The start job moves the pid at the manager's next turn, after its answer. */
	while ((r = sdunit_self_in(scope)) == 0 && sdunit_now_ms() < deadline)
		sdunit_sleep_ms(1);
	if (r <= 0) {
		r = r < 0 ? r : -ETIMEDOUT;
		cause_fail(c, -r, "not moved into %s: %s", scope, strerror(-r));
		goto out;
	}
	r = 0;
out:
	sd_bus_message_unref(reply);
	sd_bus_message_unref(m);
	sd_bus_error_free(&e);
	return r;
}

int sdunit_stop(sd_bus *bus, const char *unit, struct cause *c)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	long deadline = sdunit_now_ms() + SDUNIT_WAIT_MS;
	int r;

	if ((r = sdunit_active(bus, unit)) <= 0)
		return r < 0 ? cause_fail(c, -r, "cannot ask systemd about %s: %s", unit,
					  strerror(-r))
			     : 0;
	/* Every process below the unit at once (a slice's kill is recursive), then the stop
	 * finds nothing to wait for. */
	r = sd_bus_call_method(bus, SDUNIT_DEST, SDUNIT_PATH, SDUNIT_IFACE, "KillUnit", &e, NULL,
			       "ssi", unit, "all", SIGKILL);
	sd_bus_error_free(&e);
	r = sd_bus_call_method(bus, SDUNIT_DEST, SDUNIT_PATH, SDUNIT_IFACE, "StopUnit", &e, NULL,
			       "ss", unit, "replace");
	if (r < 0 && !sd_bus_error_has_name(&e, "org.freedesktop.systemd1.NoSuchUnit")) {
		sdunit_fail(c, &e, r, "cannot stop", unit);
		sd_bus_error_free(&e);
		return r;
	}
	sd_bus_error_free(&e);
	while ((r = sdunit_active(bus, unit)) > 0 && sdunit_now_ms() < deadline)
		sdunit_sleep_ms(SDUNIT_POLL_MS);
	if (r > 0)
		return cause_fail(c, ETIMEDOUT, "%s would not stop in %d ms", unit, SDUNIT_WAIT_MS);
	return r < 0 ? cause_fail(c, -r, "cannot ask systemd about %s: %s", unit, strerror(-r)) : 0;
}
