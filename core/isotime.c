#include "isotime.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void isotime_format(int64_t t, char *out, size_t outlen)
{
	time_t tt = (time_t)t;
	struct tm tm;

	/* strftime leaves out undefined when it does not fit. */
	if (gmtime_r(&tt, &tm) == NULL || strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
		if (outlen > 0)
			out[0] = '\0';
	}
}

int isotime_parse(const char *s, int64_t *out)
{
	struct tm tm;
	const char *end;
	int64_t t;

	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (end == NULL || *end != '\0')
		return -EINVAL;
	t = (int64_t)timegm(&tm);
	if (t < 0 || t > ISOTIME_LAST)
		return -EINVAL;
	*out = t;
	return 0;
}

void isotime_format_ms(int64_t ms, char *out, size_t outlen)
{
	char buf[ISOTIME_LEN + 1];
	int64_t r = ms % 1000;

	if (r < 0)
		r += 1000;
	isotime_format((ms - r) / 1000, buf, sizeof(buf));
	if (outlen < ISOTIME_MS_LEN + 1 || strlen(buf) != ISOTIME_LEN) {
		if (outlen > 0)
			out[0] = '\0';
		return;
	}
	/* The seconds' "Z" gives way to ".mmmZ". */
	snprintf(out, outlen, "%.19s.%03dZ", buf, (int)r);
}

int isotime_parse_ms(const char *s, int64_t *out)
{
	char secs[ISOTIME_LEN + 1];
	int64_t t;

	if (strlen(s) != ISOTIME_MS_LEN || s[19] != '.' || s[23] != 'Z' ||
	    !isdigit((unsigned char)s[20]) || !isdigit((unsigned char)s[21]) ||
	    !isdigit((unsigned char)s[22]))
		return -EINVAL;
	memcpy(secs, s, 19);
	secs[19] = 'Z';
	secs[20] = '\0';
	if (isotime_parse(secs, &t) < 0)
		return -EINVAL;
	*out = t * 1000 + (s[20] - '0') * 100 + (s[21] - '0') * 10 + (s[22] - '0');
	return 0;
}
