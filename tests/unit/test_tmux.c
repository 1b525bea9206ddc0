#include <criterion/criterion.h>

Test(tmux, placeholder)
{
	cr_assert(1);
}
