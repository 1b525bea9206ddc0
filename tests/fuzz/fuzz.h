/*
 * Shared by the libFuzzer harnesses of tests/fuzz: the entry point's prototype (libFuzzer calls
 * it; -Wmissing-prototypes wants one) and FUZZ_CHECK, which turns a broken invariant of a parser
 * into a crash that libFuzzer records with its input. assert() is not used: it vanishes under
 * NDEBUG, and a harness must check in every build type.
 */
#ifndef AGENTD_FUZZ_H
#define AGENTD_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(cond, ...)                                                                      \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: invariant broken: %s: ", __FILE__, __LINE__,       \
				#cond);                                                            \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* A NUL-terminated copy of size bytes (caller frees); aborts when out of memory. */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s == NULL)
		abort();
	for (size_t i = 0; i < size; i++)
		s[i] = (char)data[i];
	s[size] = '\0';
	return s;
}

#endif
