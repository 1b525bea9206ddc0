#include "cost.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bytes of the file per read(2): small, as most reads find a few new lines only. */
#define COST_CHUNK (64 * 1024)
/* The nesting of a transcript line claude writes is a handful of levels; tool inputs may nest
 * deeper, and a line nested past this is not a message of ours to count. */
#define COST_JSON_DEPTH 64

/*
 * Anthropic's list prices in US dollars per million tokens (base input, output, cache hits,
 * 5-minute cache writes). Checked in November 2026 against a stored copy of
 * https://docs.anthropic.com/en/docs/about-claude/pricing (Opus 4.1 and 4, Sonnet 4, 3.7 and 3.5,
 * Haiku 3.5 and 3, Opus 3) and public price lists of 2026 (Opus 4.6 and 4.5 at $5/$25, Haiku
 * 4.5 at $1/$5, Sonnet 4.5 and 4.6 as Sonnet 4); cache hits are 0.1 and writes 1.25 times the
 * input price. Longer prefixes first: the first match wins. A model not in the table is priced
 * as the first line, the dearest, so that a budget stops early rather than late.
 */
static const struct cost_price cost_prices[] = {
    {"claude-opus-4-0", 15, 75, 1.50, 18.75},   {"claude-opus-4-1", 15, 75, 1.50, 18.75},
    {"claude-opus-4-5", 5, 25, 0.50, 6.25},     {"claude-opus-4-6", 5, 25, 0.50, 6.25},
    {"claude-opus-4-2", 15, 75, 1.50, 18.75},   {"claude-opus-4", 15, 75, 1.50, 18.75},
    {"claude-3-opus", 15, 75, 1.50, 18.75},     {"claude-sonnet-4", 3, 15, 0.30, 3.75},
    {"claude-3-7-sonnet", 3, 15, 0.30, 3.75},   {"claude-3-5-sonnet", 3, 15, 0.30, 3.75},
    {"claude-haiku-4-5", 1, 5, 0.10, 1.25},     {"claude-3-5-haiku", 0.80, 4, 0.08, 1.00},
    {"claude-3-haiku", 0.25, 1.25, 0.03, 0.30},
};

const struct cost_price *cost_price(const char *model)
{
	for (size_t i = 0; model != NULL && i < sizeof(cost_prices) / sizeof(cost_prices[0]); i++)
		if (strncmp(model, cost_prices[i].prefix, strlen(cost_prices[i].prefix)) == 0)
			return &cost_prices[i];
	return &cost_prices[0];
}

int cost_parse_usd(const char *text, uint64_t *micros)
{
	uint64_t whole = 0, frac = 0;
	const char *p = text;
	int digits = 0, decimals = 0;

	for (; *p >= '0' && *p <= '9'; p++, digits++) {
		if (whole > COST_BUDGET_MAX_MICROS / 1000000)
			return -EINVAL;
		whole = whole * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++, decimals++) {
			if (decimals == 6)
				return -EINVAL; /* finer than a millionth: not exact any more */
			frac = frac * 10 + (uint64_t)(*p - '0');
		}
	if (*p != '\0' || digits == 0)
		return -EINVAL;
	for (int i = decimals; i < 6; i++)
		frac *= 10;
	if (whole > COST_BUDGET_MAX_MICROS / 1000000)
		return -EINVAL;
	*micros = whole * 1000000 + frac;
	return *micros > 0 && *micros <= COST_BUDGET_MAX_MICROS ? 0 : -EINVAL;
}

int cost_usd_from_json(json_object *v, uint64_t *micros)
{
	char text[64];
	double d;

	if (json_object_is_type(v, json_type_int)) {
		if (json_object_get_int64(v) <= 0 ||
		    (uint64_t)json_object_get_int64(v) > COST_BUDGET_MAX_MICROS / 1000000)
			return -EINVAL;
		*micros = (uint64_t)json_object_get_int64(v) * 1000000;
		return 0;
	}
	if (!json_object_is_type(v, json_type_double))
		return -EINVAL;
	d = json_object_get_double(v);
	if (!(d > 0 && d <= (double)(COST_BUDGET_MAX_MICROS / 1000000)))
		return -EINVAL;
	/* The shortest text that reads back as d: 0.1 is 0.1, not 0.10000000000000001. */
	snprintf(text, sizeof(text), "%.6f", d);
	if (cost_parse_usd(text, micros) < 0)
		return -EINVAL;
	return 0;
}

json_object *cost_usd_json(uint64_t micros)
{
	char text[48];
	size_t n = (size_t)snprintf(text, sizeof(text), "%" PRIu64 ".%06" PRIu64, micros / 1000000,
				    micros % 1000000);

	if (micros % 1000000 == 0)
		return json_object_new_int64((int64_t)(micros / 1000000));
	while (n > 0 && text[n - 1] == '0')
		text[--n] = '\0';
	return json_object_new_double_s((double)micros / 1e6, text);
}

void cost_sum(const struct session_cost *a, const struct session_cost *b, struct session_cost *out)
{
	out->usd_micros = a->usd_micros + b->usd_micros;
	out->input_tokens = a->input_tokens + b->input_tokens;
	out->output_tokens = a->output_tokens + b->output_tokens;
	out->cache_read_tokens = a->cache_read_tokens + b->cache_read_tokens;
	out->turns = a->turns + b->turns;
}

static uint64_t cost_minus(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

void cost_delta(const struct session_cost *now, const struct session_cost *was,
		struct session_cost *out)
{
	out->usd_micros = cost_minus(now->usd_micros, was->usd_micros);
	out->input_tokens = cost_minus(now->input_tokens, was->input_tokens);
	out->output_tokens = cost_minus(now->output_tokens, was->output_tokens);
	out->cache_read_tokens = cost_minus(now->cache_read_tokens, was->cache_read_tokens);
	out->turns = cost_minus(now->turns, was->turns);
}

void cost_days_add(struct cost_days *days, int64_t t, const struct session_cost *add)
{
	int64_t day = (t >= 0 ? t : t - 86399) / 86400;
	struct cost_day *d;

	if (add->usd_micros == 0 && add->input_tokens == 0 && add->output_tokens == 0 &&
	    add->cache_read_tokens == 0 && add->turns == 0)
		return;
	if (days->n > 0 && days->d[days->n - 1].day >= day) {
		/* Today, or a clock that went back: the latest day takes it. */
		d = &days->d[days->n - 1];
	} else {
		if (days->n == COST_DAYS_MAX) {
			memmove(&days->d[0], &days->d[1], (COST_DAYS_MAX - 1) * sizeof(days->d[0]));
			days->n--;
		}
		d = &days->d[days->n++];
		memset(d, 0, sizeof(*d));
		d->day = day;
	}
	cost_sum(&d->cost, add, &d->cost);
}

json_object *cost_days_json(const struct cost_days *days)
{
	json_object *a = json_object_new_array();

	for (unsigned i = 0; i < days->n; i++) {
		json_object *e = json_object_new_object();

		json_object_object_add(e, "day", json_object_new_int64(days->d[i].day));
		json_object_object_add(e, "cost", cost_json(&days->d[i].cost));
		json_object_array_add(a, e);
	}
	return a;
}

int cost_days_from_json(json_object *o, struct cost_days *days)
{
	memset(days, 0, sizeof(*days));
	if (!json_object_is_type(o, json_type_array) || json_object_array_length(o) > COST_DAYS_MAX)
		return -EINVAL;
	for (size_t i = 0; i < json_object_array_length(o); i++) {
		json_object *e = json_object_array_get_idx(o, i), *day, *c;
		struct cost_day *d = &days->d[i];

		if (!json_object_is_type(e, json_type_object) ||
		    !json_object_object_get_ex(e, "day", &day) ||
		    !json_object_is_type(day, json_type_int) ||
		    !json_object_object_get_ex(e, "cost", &c) || cost_from_json(c, &d->cost) < 0)
			return -EINVAL;
		d->day = json_object_get_int64(day);
		if (i > 0 && d->day <= days->d[i - 1].day)
			return -EINVAL;
		days->n++;
	}
	return 0;
}

json_object *cost_json(const struct session_cost *c)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "usd", cost_usd_json(c->usd_micros));
	json_object_object_add(o, "inputTokens", json_object_new_int64((int64_t)c->input_tokens));
	json_object_object_add(o, "outputTokens", json_object_new_int64((int64_t)c->output_tokens));
	json_object_object_add(o, "cacheReadTokens",
			       json_object_new_int64((int64_t)c->cache_read_tokens));
	json_object_object_add(o, "turns", json_object_new_int64((int64_t)c->turns));
	return o;
}

/* o[key] as a count from 0 into *out (absent: 0). Returns false when it is of another kind. */
static bool cost_count(json_object *o, const char *key, uint64_t *out)
{
	json_object *v;

	*out = 0;
	if (!json_object_object_get_ex(o, key, &v))
		return true;
	if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
		return false;
	*out = (uint64_t)json_object_get_int64(v);
	return true;
}

int cost_from_json(json_object *o, struct session_cost *c)
{
	json_object *v;
	double usd;

	memset(c, 0, sizeof(*c));
	if (!json_object_is_type(o, json_type_object) ||
	    !cost_count(o, "inputTokens", &c->input_tokens) ||
	    !cost_count(o, "outputTokens", &c->output_tokens) ||
	    !cost_count(o, "cacheReadTokens", &c->cache_read_tokens) ||
	    !cost_count(o, "turns", &c->turns))
		return -EINVAL;
	if (json_object_object_get_ex(o, "usd", &v)) {
		usd = json_object_get_double(v);
		if ((!json_object_is_type(v, json_type_double) &&
		     !json_object_is_type(v, json_type_int)) ||
		    !(usd >= 0 && usd < 1e12))
			return -EINVAL;
		c->usd_micros = (uint64_t)(usd * 1e6 + 0.5);
	}
	return 0;
}

json_object *cost_transcript_json(const struct cost_transcript *t)
{
	json_object *o = json_object_new_object(), *seen = json_object_new_array();

	json_object_object_add(o, "offset", json_object_new_int64((int64_t)t->offset));
	json_object_object_add(o, "cost", cost_json(&t->cost));
	json_object_object_add(o, "next", json_object_new_int64(t->next));
	for (size_t i = 0; i < COST_SEEN_MAX; i++) {
		const struct cost_seen *m = &t->seen[i];
		json_object *e = json_object_new_object();

		json_object_object_add(e, "id", json_object_new_string(m->id));
		json_object_object_add(e, "input", json_object_new_int64((int64_t)m->input));
		json_object_object_add(e, "output", json_object_new_int64((int64_t)m->output));
		json_object_object_add(e, "cacheRead",
				       json_object_new_int64((int64_t)m->cache_read));
		json_object_object_add(e, "cacheWrite",
				       json_object_new_int64((int64_t)m->cache_write));
		json_object_object_add(e, "turn", json_object_new_boolean(m->turn));
		json_object_array_add(seen, e);
	}
	json_object_object_add(o, "seen", seen);
	return o;
}

int cost_transcript_from_json(json_object *o, struct cost_transcript *t)
{
	json_object *v, *seen;
	uint64_t next;

	memset(t, 0, sizeof(*t));
	if (!json_object_is_type(o, json_type_object) || !cost_count(o, "offset", &t->offset) ||
	    !cost_count(o, "next", &next) || next >= COST_SEEN_MAX)
		return -EINVAL;
	t->next = (unsigned)next;
	if (json_object_object_get_ex(o, "cost", &v) && cost_from_json(v, &t->cost) < 0)
		return -EINVAL;
	if (!json_object_object_get_ex(o, "seen", &seen))
		return 0;
	if (!json_object_is_type(seen, json_type_array) ||
	    json_object_array_length(seen) > COST_SEEN_MAX)
		return -EINVAL;
	for (size_t i = 0; i < json_object_array_length(seen); i++) {
		json_object *e = json_object_array_get_idx(seen, i), *id, *turn;
		struct cost_seen *m = &t->seen[i];

		if (!json_object_is_type(e, json_type_object) ||
		    !json_object_object_get_ex(e, "id", &id) ||
		    !json_object_is_type(id, json_type_string) ||
		    json_object_get_string_len(id) > COST_MSG_ID_MAX ||
		    !cost_count(e, "input", &m->input) || !cost_count(e, "output", &m->output) ||
		    !cost_count(e, "cacheRead", &m->cache_read) ||
		    !cost_count(e, "cacheWrite", &m->cache_write))
			return -EINVAL;
		memcpy(m->id, json_object_get_string(id), (size_t)json_object_get_string_len(id));
		m->id[json_object_get_string_len(id)] = '\0';
		m->turn =
		    json_object_object_get_ex(e, "turn", &turn) && json_object_get_boolean(turn);
	}
	return 0;
}

static const char *cost_str(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* The part of now over was (a later line of a message may carry more than an earlier one). */
static uint64_t cost_more(uint64_t now, uint64_t *was)
{
	uint64_t d = now > *was ? now - *was : 0;

	if (now > *was)
		*was = now;
	return d;
}

bool cost_transcript_line(struct cost_transcript *t, const char *line, size_t len)
{
	json_tokener *tok = json_tokener_new_ex(COST_JSON_DEPTH);
	json_object *o = NULL, *msg, *usage;
	const char *type, *entry, *id, *stop;
	struct cost_seen now, *m = NULL;
	const struct cost_price *p;
	bool changed = false;
	double usd;

	memset(&now, 0, sizeof(now));
	if (tok == NULL || len > INT32_MAX)
		goto out;
	o = json_tokener_parse_ex(tok, line, (int)len);
	if (o == NULL || json_tokener_get_parse_end(tok) != len)
		goto out;
	type = cost_str(o, "type");
	entry = cost_str(o, "entrypoint");
	/* Print mode's lines are structured turns: their results are counted already. */
	if (type == NULL || strcmp(type, "assistant") != 0 ||
	    (entry != NULL && strncmp(entry, "sdk", 3) == 0) ||
	    !json_object_object_get_ex(o, "message", &msg) ||
	    !json_object_object_get_ex(msg, "usage", &usage) ||
	    !json_object_is_type(usage, json_type_object) || (id = cost_str(msg, "id")) == NULL ||
	    id[0] == '\0' || strlen(id) > COST_MSG_ID_MAX)
		goto out;
	if (!cost_count(usage, "input_tokens", &now.input) ||
	    !cost_count(usage, "output_tokens", &now.output) ||
	    !cost_count(usage, "cache_read_input_tokens", &now.cache_read) ||
	    !cost_count(usage, "cache_creation_input_tokens", &now.cache_write))
		goto out;
	for (size_t i = 0; i < COST_SEEN_MAX && m == NULL; i++)
		if (strcmp(t->seen[i].id, id) == 0)
			m = &t->seen[i];
	if (m == NULL) {
		m = &t->seen[t->next];
		t->next = (t->next + 1) % COST_SEEN_MAX;
		memset(m, 0, sizeof(*m));
		snprintf(m->id, sizeof(m->id), "%s", id);
	}
	p = cost_price(cost_str(msg, "model"));
	now.input = cost_more(now.input, &m->input);
	now.output = cost_more(now.output, &m->output);
	now.cache_read = cost_more(now.cache_read, &m->cache_read);
	now.cache_write = cost_more(now.cache_write, &m->cache_write);
	usd = (double)now.input * p->input + (double)now.output * p->output +
	      (double)now.cache_read * p->cache_read + (double)now.cache_write * p->cache_write;
	t->cost.usd_micros += (uint64_t)(usd + 0.5);
	t->cost.input_tokens += now.input;
	t->cost.output_tokens += now.output;
	t->cost.cache_read_tokens += now.cache_read;
	/* A turn ends with an answer that asks for no tool (end_turn, max_tokens, ...). */
	stop = cost_str(msg, "stop_reason");
	if (!m->turn && stop != NULL && strcmp(stop, "tool_use") != 0) {
		m->turn = true;
		t->cost.turns++;
	}
	changed = true;
out:
	json_object_put(o);
	json_tokener_free(tok);
	return changed;
}

int cost_transcript_read(struct cost_transcript *t, int fd, bool *changed)
{
	char *chunk = NULL, *line = NULL;
	size_t have = 0, cap = 0;
	bool skip = false;
	uint64_t at, limit;
	struct stat st;
	int r = 0;

	*changed = false;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size < t->offset) {
		t->offset = (uint64_t)st.st_size; /* replaced: what it held was counted */
		*changed = true;
		return 0;
	}
	if ((uint64_t)st.st_size == t->offset)
		return 0;
	limit = (uint64_t)st.st_size - t->offset > COST_READ_MAX ? t->offset + COST_READ_MAX
								 : (uint64_t)st.st_size;
	if ((chunk = malloc(COST_CHUNK)) == NULL)
		return -ENOMEM;
	for (at = t->offset; at < limit;) {
		size_t want = limit - at < COST_CHUNK ? (size_t)(limit - at) : COST_CHUNK;
		ssize_t n = pread(fd, chunk, want, (off_t)at);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			goto out;
		}
		if (n == 0)
			break;
		for (size_t i = 0; i < (size_t)n;) {
			char *nl = memchr(chunk + i, '\n', (size_t)n - i);
			size_t part = nl != NULL ? (size_t)(nl - (chunk + i)) : (size_t)n - i;

			if (!skip && have + part > COST_LINE_MAX) {
				skip = true;
				have = 0;
			}
			if (!skip && part > 0) {
				if (have + part > cap) {
					size_t ncap = cap == 0 ? COST_CHUNK : cap;
					char *bigger;

					while (ncap < have + part)
						ncap *= 2;
					if ((bigger = realloc(line, ncap)) == NULL) {
						r = -ENOMEM;
						goto out;
					}
					line = bigger;
					cap = ncap;
				}
				memcpy(line + have, chunk + i, part);
				have += part;
			}
			i += part;
			if (nl == NULL)
				break;
			i++; /* the newline */
			if (!skip && have > 0 && cost_transcript_line(t, line, have))
				*changed = true;
			have = 0;
			skip = false;
			t->offset = at + i;
			*changed = true;
		}
		at += (uint64_t)n;
	}
	/* A line longer than a whole read never ends within one: its head is left behind, and
	 * the rest reads as no message. */
	if (skip && t->offset + COST_READ_MAX <= at) {
		t->offset = at;
		*changed = true;
	}
out:
	free(line);
	free(chunk);
	return r;
}
