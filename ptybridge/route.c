#include "route.h"

#include <string.h>

bool route_match(const char *pattern, const char *path)
{
	const char *p = pattern, *s = path;

	while (*p != '\0') {
		if (*p == '*') {
			size_t len = strcspn(s, "/");

			if (len == 0)
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
	return *s == '\0';
}

const struct bridge_route *route_find(const struct bridge_route *const *tables, size_t n,
				      const char *path)
{
	for (size_t t = 0; t < n; t++)
		for (const struct bridge_route *r = tables[t]; r->pattern != NULL; r++)
			if (route_match(r->pattern, path))
				return r;
	return NULL;
}
