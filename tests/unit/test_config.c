#include <criterion/criterion.h>

Test(config, placeholder)
{
	cr_assert(1);
}
