/*
 * The reason phrases of the HTTP status codes agentd-api and agentd-bridge answer with (RFC 9110
 * §15), one table for both daemons.
 */
#ifndef AGENTD_HTTPSTATUS_H
#define AGENTD_HTTPSTATUS_H

/* The phrase of status ("Not Found"), or "Error" for a code the table does not have. */
const char *httpstatus_reason(int status);

#endif
