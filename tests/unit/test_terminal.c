/*
 * terminal: the client message classifier of API.md. Exactly 0x01 "<cols>;<rows>" with both in
 * 1..PTY_SIZE_MAX is a resize; the same shape out of range is ignored (-ERANGE), also with more
 * digits than any integer holds; everything else, including a lone 0x01 (Ctrl-A), is keystrokes.
 */
#include "ptyproc.h"
#include "terminal.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <string.h>

struct resize_case {
	const char *msg;
	int want;
	unsigned cols, rows;
};

static const struct resize_case cases[] = {
    {"\00180;24", 1, 80, 24},
    {"\0011;1", 1, 1, 1},
    {"\0011000;1000", 1, 1000, 1000},
    {"\0010080;024", 1, 80, 24},
    {"\0010;0", -ERANGE, 0, 0},
    {"\0011001;24", -ERANGE, 0, 0},
    {"\00180;1001", -ERANGE, 0, 0},
    {"\00199999;99999", -ERANGE, 0, 0},
    {"\00199999999999999999999999999;1", -ERANGE, 0, 0},
    {"\001", 0, 0, 0},
    {"\001abc", 0, 0, 0},
    {"\00180;", 0, 0, 0},
    {"\001;24", 0, 0, 0},
    {"\00180;24;", 0, 0, 0},
    {"\00180;24\r", 0, 0, 0},
    {"\00180x24", 0, 0, 0},
    {"\001-80;24", 0, 0, 0},
    {"\001 80;24", 0, 0, 0},
    {"80;24", 0, 0, 0},
    {"hello\r", 0, 0, 0},
    {"", 0, 0, 0},
};

Test(terminal, resize_messages)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct resize_case *c = &cases[i];
		unsigned cols = 0, rows = 0;
		int r =
		    terminal_parse_resize((const uint8_t *)c->msg, strlen(c->msg), &cols, &rows);

		cr_assert_eq(r, c->want, "case %zu: got %d, want %d", i, r, c->want);
		if (r == 1) {
			cr_assert_eq(cols, c->cols, "case %zu", i);
			cr_assert_eq(rows, c->rows, "case %zu", i);
		}
	}
}

Test(terminal, resize_with_embedded_nul_is_keystrokes)
{
	static const uint8_t msg[] = {0x01, '8', '0', 0x00, ';', '2', '4'};
	unsigned cols, rows;

	cr_assert_eq(terminal_parse_resize(msg, sizeof(msg), &cols, &rows), 0);
}

Test(terminal, long_message_is_keystrokes)
{
	static uint8_t msg[64 * 1024];
	unsigned cols, rows;

	memset(msg, '7', sizeof(msg));
	msg[0] = 0x01;
	cr_assert_eq(terminal_parse_resize(msg, sizeof(msg), &cols, &rows), 0);
	msg[100] = ';';
	cr_assert_eq(terminal_parse_resize(msg, sizeof(msg), &cols, &rows), -ERANGE);
}
