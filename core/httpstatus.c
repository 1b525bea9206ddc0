#include "httpstatus.h"

#include <stddef.h>

static const struct {
	int status;
	const char *reason;
} HTTPSTATUS_TABLE[] = {
    {101, "Switching Protocols"},
    {200, "OK"},
    {201, "Created"},
    {202, "Accepted"},
    {204, "No Content"},
    {303, "See Other"},
    {304, "Not Modified"},
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {402, "Payment Required"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {406, "Not Acceptable"},
    {408, "Request Timeout"},
    {409, "Conflict"},
    {410, "Gone"},
    {411, "Length Required"},
    {413, "Content Too Large"},
    {415, "Unsupported Media Type"},
    {421, "Misdirected Request"},
    {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"},
    {500, "Internal Server Error"},
    {501, "Not Implemented"},
    {502, "Bad Gateway"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
};

const char *httpstatus_reason(int status)
{
	for (size_t i = 0; i < sizeof(HTTPSTATUS_TABLE) / sizeof(HTTPSTATUS_TABLE[0]); i++)
		if (HTTPSTATUS_TABLE[i].status == status)
			return HTTPSTATUS_TABLE[i].reason;
	return "Error";
}
