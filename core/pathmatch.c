#include "pathmatch.h"

#include <string.h>

/* Captures len bytes of s as the next segment. False when m has no room for it. */
static bool pathmatch_capture(struct pathmatch *m, const char *s, size_t len)
{
	if (m == NULL)
		return true;
	if (len >= PATHMATCH_SEGMENT_MAX || m->n == PATHMATCH_ARGS_MAX)
		return false;
	memcpy(m->args[m->n], s, len);
	m->args[m->n][len] = '\0';
	m->n++;
	return true;
}

bool pathmatch(const char *pattern, const char *path, struct pathmatch *m)
{
	const char *p = pattern, *s = path;

	if (m != NULL)
		m->n = 0;
	while (*p != '\0' && *s != '\0') {
		if (p[0] == '*' && p[1] == '*')
			return p[2] == '\0' && pathmatch_capture(m, s, strlen(s));
		if (*p == '*') {
			size_t len = strcspn(s, "/");

			if (len == 0 || !pathmatch_capture(m, s, len))
				return false;
			s += len;
			p++;
			continue;
		}
		if (*p != *s)
			return false;
		p++;
		s++;
	}
	return *p == '\0' && *s == '\0';
}
