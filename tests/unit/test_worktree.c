#include <criterion/criterion.h>

Test(worktree, placeholder)
{
	cr_assert(1);
}
