#include <criterion/criterion.h>

Test(session, placeholder)
{
	cr_assert(1);
}
