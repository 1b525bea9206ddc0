/*
 * agentd-telegram's SSE reader (telegram/sseread.c) on whatever a server sends. Input: a data
 * limit (first byte), then the stream. Read whole, and read in pieces of 1 to 37 bytes, it gives
 * the same events; every event's name fits SSEREAD_NAME_MAX, its data fits the limit (or it is
 * flagged oversize with no data), has no CR, and has an id only when an "id:" field of digits was
 * read.
 */
#include "fuzz.h"

#include "sseread.h"

#include <string.h>

#define FUZZ_SSE_EVENTS_MAX 4096

struct fuzz_seen {
	size_t data_max;
	size_t n;
	uint64_t hash; /* of every event, in order */
};

static uint64_t fuzz_mix(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211ULL;
	return h;
}

static int fuzz_event(void *arg, const struct sseread_event *ev)
{
	struct fuzz_seen *s = arg;
	size_t name_len = strlen(ev->name);

	FUZZ_CHECK(name_len > 0 && name_len <= SSEREAD_NAME_MAX, "name of %zu bytes", name_len);
	FUZZ_CHECK(ev->data_len <= s->data_max, "data of %zu bytes over %zu", ev->data_len,
		   s->data_max);
	FUZZ_CHECK(strlen(ev->data) == ev->data_len || memchr(ev->data, 0, ev->data_len) != NULL,
		   "data length");
	FUZZ_CHECK(memchr(ev->data, '\r', ev->data_len) == NULL, "a CR in the data");
	FUZZ_CHECK(!ev->oversize || ev->data_len == 0, "oversize with data");
	FUZZ_CHECK(ev->has_id || ev->id == 0, "an id without has_id");
	s->n++;
	s->hash = fuzz_mix(s->hash, &ev->id, sizeof(ev->id));
	s->hash = fuzz_mix(s->hash, &ev->has_id, sizeof(ev->has_id));
	s->hash = fuzz_mix(s->hash, &ev->oversize, sizeof(ev->oversize));
	s->hash = fuzz_mix(s->hash, ev->name, name_len + 1);
	s->hash = fuzz_mix(s->hash, ev->data, ev->data_len + 1);
	return s->n < FUZZ_SSE_EVENTS_MAX ? 0 : -1;
}

static struct fuzz_seen fuzz_read(const uint8_t *data, size_t size, size_t data_max, size_t piece)
{
	struct fuzz_seen s = {.data_max = data_max, .hash = 14695981039346656037ULL};
	struct sseread r;

	sseread_init(&r, data_max);
	for (size_t off = 0; off < size; off += piece) {
		size_t n = off + piece > size ? size - off : piece;

		if (sseread_feed(&r, (const char *)data + off, n, fuzz_event, &s) < 0)
			break;
	}
	sseread_finish(&r);
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_seen whole, pieces;
	size_t data_max, piece;

	if (size < 1)
		return 0;
	data_max = data[0] % 64 + 1;
	piece = data[0] % 37 + 1;
	whole = fuzz_read(data + 1, size - 1, data_max, size);
	pieces = fuzz_read(data + 1, size - 1, data_max, piece);
	if (whole.n < FUZZ_SSE_EVENTS_MAX && pieces.n < FUZZ_SSE_EVENTS_MAX) {
		FUZZ_CHECK(whole.n == pieces.n, "%zu events whole, %zu in pieces of %zu", whole.n,
			   pieces.n, piece);
		FUZZ_CHECK(whole.hash == pieces.hash, "different events in pieces of %zu", piece);
	}
	return 0;
}
