#include <criterion/criterion.h>

Test(claude, placeholder)
{
	cr_assert(1);
}
