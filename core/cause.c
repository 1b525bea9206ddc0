#include "cause.h"

#include <stdarg.h>
#include <stdio.h>

void cause_set(struct cause *c, const char *fmt, ...)
{
	va_list ap;

	if (c == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
	va_end(ap);
}

int cause_fail(struct cause *c, int err, const char *fmt, ...)
{
	va_list ap;

	if (c != NULL) {
		va_start(ap, fmt);
		vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
		va_end(ap);
	}
	return err > 0 ? -err : err;
}
