/* httpstatus: the one reason-phrase table both daemons answer with. */
#include "httpstatus.h"

#include <criterion/criterion.h>

Test(httpstatus, known_codes_have_their_rfc_9110_phrase)
{
	cr_assert_str_eq(httpstatus_reason(101), "Switching Protocols");
	cr_assert_str_eq(httpstatus_reason(200), "OK");
	cr_assert_str_eq(httpstatus_reason(404), "Not Found");
	cr_assert_str_eq(httpstatus_reason(413), "Content Too Large");
	cr_assert_str_eq(httpstatus_reason(431), "Request Header Fields Too Large");
	cr_assert_str_eq(httpstatus_reason(503), "Service Unavailable");
}

Test(httpstatus, an_unknown_code_is_error)
{
	cr_assert_str_eq(httpstatus_reason(299), "Error");
	cr_assert_str_eq(httpstatus_reason(-1), "Error");
	cr_assert_str_eq(httpstatus_reason(0), "Error");
}
