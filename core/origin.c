#include "origin.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define ORIGIN_MAX 1024

bool origin_listed(const char *origin, const char *allowed)
{
	size_t olen;

	if (origin == NULL || allowed == NULL)
		return false;
	olen = strlen(origin);
	for (const char *p = allowed; *p != '\0';) {
		size_t len;

		p += strspn(p, " ,\t");
		len = strcspn(p, " ,\t");
		if (len > 0 && len == olen && strncasecmp(p, origin, len) == 0)
			return true;
		p += len;
	}
	return false;
}

bool origin_allowed(const char *origin, const char *scheme, const char *host, const char *allowed)
{
	char own[ORIGIN_MAX];
	int n;

	if (origin == NULL)
		return true;
	if (origin_listed(origin, allowed))
		return true;
	if (scheme == NULL || host == NULL || host[0] == '\0')
		return false;
	n = snprintf(own, sizeof(own), "%s://%s", scheme, host);
	if (n < 0 || (size_t)n >= sizeof(own))
		return false;
	return strcasecmp(own, origin) == 0;
}
