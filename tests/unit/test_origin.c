#include <criterion/criterion.h>

Test(origin, placeholder)
{
	cr_assert(1);
}
