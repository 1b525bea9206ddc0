#include <criterion/criterion.h>

Test(store, placeholder)
{
	cr_assert(1);
}
