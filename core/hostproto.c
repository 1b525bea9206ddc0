#include "hostproto.h"

#include <errno.h>
#include <stdio.h>

int hostproto_path(const struct config *cfg, const char *id, const char *leaf, char *out,
		   size_t outlen)
{
	int n = snprintf(out, outlen, "%s/sessions/%s/%s", cfg->runtime_dir, id, leaf);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}
