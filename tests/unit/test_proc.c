#include <criterion/criterion.h>

Test(proc, placeholder)
{
	cr_assert(1);
}
