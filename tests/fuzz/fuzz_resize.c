/*
 * The terminal's resize message (terminal_parse_resize: 0x01 "<cols>;<rows>"). Input: one
 * client message. The answer must match a plain reading of the grammar, and a message formatted
 * from an accepted size must parse back to it.
 */
#include "fuzz.h"

#include "ptyproc.h"
#include "terminal.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* Digits in msg[*i..len): their value (saturated above PTY_SIZE_MAX), or false if none. */
static bool digits(const uint8_t *msg, size_t len, size_t *i, unsigned long *v)
{
	size_t start = *i;

	*v = 0;
	for (; *i < len && msg[*i] >= '0' && msg[*i] <= '9'; (*i)++)
		if (*v <= PTY_SIZE_MAX)
			*v = *v * 10 + (msg[*i] - '0');
	return *i > start;
}

static int model(const uint8_t *msg, size_t len, unsigned *cols, unsigned *rows)
{
	unsigned long c, r;
	size_t i = 1;

	if (len < 1 || msg[0] != 0x01)
		return 0;
	if (!digits(msg, len, &i, &c) || i >= len || msg[i] != ';')
		return 0;
	i++;
	if (!digits(msg, len, &i, &r) || i != len)
		return 0;
	if (c < 1 || c > PTY_SIZE_MAX || r < 1 || r > PTY_SIZE_MAX)
		return -ERANGE;
	*cols = (unsigned)c;
	*rows = (unsigned)r;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned cols = 0, rows = 0, mc = 0, mr = 0, c2 = 0, r2 = 0;
	int r = terminal_parse_resize(data, size, &cols, &rows);
	int m = model(data, size, &mc, &mr);
	char again[32];
	int n;

	FUZZ_CHECK(r == m, "terminal_parse_resize = %d, the grammar says %d", r, m);
	if (r != 1)
		return 0;
	FUZZ_CHECK(cols == mc && rows == mr, "%ux%u, the grammar says %ux%u", cols, rows, mc, mr);
	FUZZ_CHECK(cols >= 1 && cols <= PTY_SIZE_MAX && rows >= 1 && rows <= PTY_SIZE_MAX,
		   "size %ux%u out of range", cols, rows);
	n = snprintf(again, sizeof(again), "\x01%u;%u", cols, rows);
	FUZZ_CHECK(terminal_parse_resize((const uint8_t *)again, (size_t)n, &c2, &r2) == 1 &&
		       c2 == cols && r2 == rows,
		   "formatted size does not parse back");
	return 0;
}
