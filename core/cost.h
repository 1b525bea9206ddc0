/*
 * What a session's agent cost (docs/API.md "cost"): exact amounts in millionths of a US dollar,
 * a session's budget, and claude's transcripts read for the turns of terminal mode.
 *
 * Structured turns are counted from their results (claude's own total_cost_usd and usage), by
 * the bridge's hub. Terminal turns leave no result anywhere a daemon sees: claude writes each
 * assistant message with its usage into its transcript (<config>/projects/<cwd key>/<id>.jsonl),
 * several lines per message (one per content block, same message id). A cost_transcript follows
 * one such file: the offset read so far, the last messages seen (a message whose lines straddle
 * two reads is counted once, with its largest usage), and the sum. Lines that claude's print
 * mode wrote (entrypoint "sdk-cli": the structured turns) are skipped: their results are
 * counted already. The transcript has no prices: terminal turns' dollars come from the price
 * table in cost.c (cost_price), and the session's cost says they are an estimate.
 */
#ifndef AGENTD_COST_H
#define AGENTD_COST_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A budget above a million dollars is a typo, not a budget. */
#define COST_BUDGET_MAX_MICROS (1000000ULL * 1000000ULL)
/* Messages remembered across reads: claude writes one message's lines together, so the last
 * few are all a read boundary can split. */
#define COST_SEEN_MAX 8
/* Anthropic's message ids are "msg_" and 24 to 30 characters; room to spare. */
#define COST_MSG_ID_MAX 64
/* A line longer than this (a huge tool input or result) is skipped unparsed: reading it whole
 * would hold that much memory in a request. Its message's other lines still count. */
#define COST_LINE_MAX (8 * 1024 * 1024)
/* Bytes read per call: a long transcript is taken in over a few calls, none stalls a request. */
#define COST_READ_MAX (32 * 1024 * 1024)

/* What the session's agent cost, summed over its turns: kept in the record, so it survives
 * restarts and mode switches. */
struct session_cost {
	uint64_t usd_micros; /* millionths of a US dollar: exact sums, no float drift */
	uint64_t input_tokens, output_tokens, cache_read_tokens;
	uint64_t turns;
};

/* Days of a session's cost kept apart for GET /usage: a month, which keeps the record small (a
 * record is at most SESSION_RECORD_MAX). Older days stay in the session's total only. */
#define COST_DAYS_MAX 31

/* What the session's agent cost on one UTC day. */
struct cost_day {
	int64_t day; /* days since 1970-01-01 (UTC) */
	struct session_cost cost;
};

struct cost_days {
	unsigned n; /* oldest first */
	struct cost_day d[COST_DAYS_MAX];
};

/* One message of a transcript, as counted so far. */
struct cost_seen {
	char id[COST_MSG_ID_MAX + 1]; /* "": unused */
	uint64_t input, output, cache_read, cache_write;
	bool turn; /* its end of turn was counted */
};

struct cost_transcript {
	uint64_t offset;          /* bytes of the file taken in: whole lines only */
	struct session_cost cost; /* what the terminal turns of the file cost */
	struct cost_seen seen[COST_SEEN_MAX];
	unsigned next; /* where the next new message goes in seen */
};

/* Prices of a model, in US dollars per million tokens (= millionths of a dollar per token). */
struct cost_price {
	const char *prefix;
	double input, output, cache_read, cache_write;
};

/* The price of model (claude's model id): the table's longest prefix that matches, else the
 * table's highest prices (a budget then errs on the side of stopping early). */
const struct cost_price *cost_price(const char *model);

/* Parses a budget in dollars ("0.5", "12", at most 6 decimals, > 0, at most
 * COST_BUDGET_MAX_MICROS) into millionths. Returns 0 or -EINVAL. */
int cost_parse_usd(const char *text, uint64_t *micros);

/* As cost_parse_usd, for a JSON number of a request body. */
int cost_usd_from_json(json_object *v, uint64_t *micros);

/* micros as a JSON number written from its digits (json-c would print 0.0001 as
 * 0.00010000000000000001). */
json_object *cost_usd_json(uint64_t micros);

/* The sum of a and b, into out. */
void cost_sum(const struct session_cost *a, const struct session_cost *b, struct session_cost *out);

/* What now has more than was (each field; never below 0), into out. */
void cost_delta(const struct session_cost *now, const struct session_cost *was,
		struct session_cost *out);

/* Adds add to the day of unix time t in days, dropping the oldest day when a new one does not
 * fit (and adding nothing for a day older than every day kept when none is free). */
void cost_days_add(struct cost_days *days, int64_t t, const struct session_cost *add);

/* The record's form of days ([{"day":N,"cost":{...}}]) and back (-EINVAL). */
json_object *cost_days_json(const struct cost_days *days);
int cost_days_from_json(json_object *o, struct cost_days *days);

/* c as the API's {"usd","inputTokens","outputTokens","cacheReadTokens","turns"}. */
json_object *cost_json(const struct session_cost *c);

/* c from that form (a record's); -EINVAL when a field is of another type or out of range. */
int cost_from_json(json_object *o, struct session_cost *c);

/* The record's form of t, and back (-EINVAL when it is not that form). */
json_object *cost_transcript_json(const struct cost_transcript *t);
int cost_transcript_from_json(json_object *o, struct cost_transcript *t);

/* Takes in one line of a transcript (len bytes, no newline). Returns true when it changed t. */
bool cost_transcript_line(struct cost_transcript *t, const char *line, size_t len);

/*
 * Reads fd (a regular file: the transcript, opened by the caller as the agent) from t->offset, at
 * most COST_READ_MAX bytes, taking in each whole line; a last line without its newline is left
 * for the next call. A file shorter than t->offset was replaced: nothing is counted again, the
 * offset goes to its end. Sets *changed when t changed. Returns 0 or -errno.
 */
int cost_transcript_read(struct cost_transcript *t, int fd, bool *changed);

#endif
