#include "split.h"

#include <stdint.h>

size_t split_char(const char *s, size_t len, size_t *units)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t cp;
	size_t n;

	*units = 1;
	if (u[0] < 0x80)
		return 1;
	if (u[0] >= 0xc2 && u[0] <= 0xdf)
		n = 2, cp = u[0] & 0x1f;
	else if (u[0] >= 0xe0 && u[0] <= 0xef)
		n = 3, cp = u[0] & 0x0f;
	else if (u[0] >= 0xf0 && u[0] <= 0xf4)
		n = 4, cp = u[0] & 0x07;
	else
		return 1;
	if (n > len)
		return 1;
	for (size_t i = 1; i < n; i++) {
		if ((u[i] & 0xc0) != 0x80)
			return 1;
		cp = (cp << 6) | (u[i] & 0x3f);
	}
	/* Overlong forms, surrogates and values past U+10FFFF are not characters. */
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 1;
	if (cp > 0xffff)
		*units = 2;
	return n;
}

size_t split_units(const char *s, size_t len)
{
	size_t i = 0, total = 0, u;

	while (i < len) {
		i += split_char(s + i, len - i, &u);
		total += u;
	}
	return total;
}

size_t split_prefix(const char *s, size_t len, size_t max)
{
	size_t i = 0, total = 0, u, n;

	while (i < len) {
		n = split_char(s + i, len - i, &u);
		if (total + u > max)
			break;
		total += u;
		i += n;
	}
	return i;
}

size_t split_point(const char *s, size_t len, size_t max)
{
	size_t fit = split_prefix(s, len, max), nl = 0, blank = 0, u;

	if (fit == len)
		return len;
	if (fit == 0) /* max is smaller than the first character: take it anyway */
		return split_char(s, len, &u);
	/* Only a cut in the second half: an early newline would make a needlessly short message. */
	for (size_t i = fit / 2; i < fit; i++) {
		if (s[i] == '\n')
			nl = i + 1;
		else if (s[i] == ' ' || s[i] == '\t')
			blank = i + 1;
	}
	if (nl > 0)
		return nl;
	if (blank > 0)
		return blank;
	return fit;
}
