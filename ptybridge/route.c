#include "route.h"

#include "pathmatch.h"

bool route_match(const char *pattern, const char *path)
{
	return pathmatch(pattern, path, NULL);
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
