/*
 * log: the journald decision (JOURNAL_STREAM must name stderr's own device and inode, strictly
 * "<dev>:<ino>" in decimal) and the lines it produces: "<N>prog level: text" on the journal,
 * "HH:MM:SS prog level: text" (unchanged) anywhere else.
 */
#include "log.h"

#include <criterion/criterion.h>

#include <fcntl.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

Test(log, journal_stream_matches_exact_device_and_inode)
{
	cr_assert(log_is_journal_stream("8:12345", 8, 12345));
	cr_assert(log_is_journal_stream("0:0", 0, 0));
	cr_assert(log_is_journal_stream("18446744073709551615:1", (dev_t)UINT64_MAX, 1));
}

Test(log, journal_stream_other_file_is_not_the_journal)
{
	cr_assert_not(log_is_journal_stream("8:12345", 8, 12346), "another inode");
	cr_assert_not(log_is_journal_stream("8:12345", 9, 12345), "another device");
	cr_assert_not(log_is_journal_stream(NULL, 8, 12345), "variable unset");
}

Test(log, journal_stream_malformed_is_not_the_journal)
{
	static const char *const bad[] = {
	    "",
	    ":",
	    "8:",
	    ":12345",
	    "8",
	    "8;12345",
	    "8:12345x",
	    "8:12345 ",
	    " 8:12345",
	    "+8:12345",
	    "-8:12345",
	    "8:-12345",
	    "8:+12345",
	    "8:12:345",
	    "0x8:12345",
	    "8:0x3039",
	    "8::12345",
	    "8: 12345",
	    "99999999999999999999999:12345",
	    "8:99999999999999999999999",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_not(log_is_journal_stream(bad[i], 8, 12345), "'%s' was accepted", bad[i]);
}

Test(log, priority_prefixes_are_syslog_levels)
{
	cr_assert_str_eq(log_priority_prefix(LOG_ERROR), "<3>");
	cr_assert_str_eq(log_priority_prefix(LOG_WARN), "<4>");
	cr_assert_str_eq(log_priority_prefix(LOG_INFO), "<6>");
	cr_assert_str_eq(log_priority_prefix(LOG_DEBUG), "<7>");
}

/* Points stderr at a fresh file, sets JOURNAL_STREAM as told ("match": that file's own numbers),
 * logs one error and one info line, and returns what was written (caller frees). */
static char *log_capture(const char *journal_stream, bool match)
{
	char path[] = "/tmp/agentd-test-log.XXXXXX";
	char env[64], *buf = calloc(1, 4096);
	struct stat st;
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	ssize_t n;

	cr_assert(fd >= 0 && saved >= 0 && buf != NULL);
	unlink(path);
	cr_assert_eq(fstat(fd, &st), 0);
	if (match) {
		snprintf(env, sizeof(env), "%ju:%ju", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino);
		journal_stream = env;
	}
	if (journal_stream != NULL)
		setenv("JOURNAL_STREAM", journal_stream, 1);
	else
		unsetenv("JOURNAL_STREAM");
	cr_assert_eq(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	log_init("test-log");
	log_error("boom %d", 1);
	log_info("fine");
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	n = pread(fd, buf, 4095, 0);
	close(fd);
	cr_assert(n > 0);
	return buf;
}

static bool log_matches(const char *text, const char *pattern)
{
	regex_t re;
	bool ok;

	cr_assert_eq(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
	ok = regexec(&re, text, 0, NULL, 0) == 0;
	regfree(&re);
	return ok;
}

Test(log, journal_lines_start_with_their_priority)
{
	char *out = log_capture(NULL, true);

	cr_assert_str_eq(out, "<3>test-log error: boom 1\n<6>test-log info: fine\n");
	free(out);
}

Test(log, lines_elsewhere_are_unchanged)
{
	static const char *const plain = "^[0-9]{2}:[0-9]{2}:[0-9]{2} test-log error: boom 1\n"
					 "[0-9]{2}:[0-9]{2}:[0-9]{2} test-log info: fine\n$";
	char *out;

	out = log_capture(NULL, false);
	cr_assert(log_matches(out, plain), "no JOURNAL_STREAM: %s", out);
	free(out);
	/* Inherited from a parent whose stderr was the journal, but ours is a file now. */
	out = log_capture("8:1", false);
	cr_assert(log_matches(out, plain), "JOURNAL_STREAM of another file: %s", out);
	free(out);
}
