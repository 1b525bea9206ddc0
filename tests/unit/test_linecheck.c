/* agentd-host's quick look at claude's lines (host/linecheck.h): plain objects are taken with
 * their top-level type, and whatever it says yes to json-c takes as the host uses it (the same
 * type); anything outside its subset is left to json-c. */
#include "linecheck.h"

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

/* json-c as claudeproc_parse uses it: one object, then only spaces, tabs, carriage returns. */
static json_object *jsonc(const char *line, size_t len)
{
	json_tokener *tok = json_tokener_new();
	json_object *obj = json_tokener_parse_ex(tok, line, (int)len);
	size_t end = obj != NULL ? json_tokener_get_parse_end(tok) : 0;

	while (end < len && strchr(" \t\r", line[end]) != NULL)
		end++;
	if (obj != NULL && (!json_object_is_type(obj, json_type_object) || end != len)) {
		json_object_put(obj);
		obj = NULL;
	}
	json_tokener_free(tok);
	return obj;
}

/* linecheck takes line, with type want (NULL: none), and so does json-c. */
static void yes(const char *line, const char *want)
{
	struct linecheck lc;
	json_object *obj = jsonc(line, strlen(line)), *type = NULL;

	cr_assert(linecheck_object(line, strlen(line), &lc), "%s", line);
	cr_assert_not_null(obj, "json-c refuses %s", line);
	json_object_object_get_ex(obj, "type", &type);
	if (want == NULL) {
		cr_assert_null(lc.type, "%s", line);
		cr_assert_null(type);
	} else {
		cr_assert_eq(lc.type_len, strlen(want), "%s", line);
		cr_assert_eq(memcmp(lc.type, want, lc.type_len), 0, "%s", line);
		cr_assert_str_eq(json_object_get_string(type), want);
	}
	json_object_put(obj);
}

/* linecheck leaves line to json-c. */
static void ask(const char *line)
{
	struct linecheck lc;

	cr_assert_not(linecheck_object(line, strlen(line), &lc), "%s", line);
}

Test(linecheck, plain_objects_with_their_type)
{
	yes("{\"type\":\"assistant\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":"
	    "\"text\",\"text\":\"hi\"}]},\"seq\":12,\"ts\":-0}",
	    "assistant");
	yes("{}", NULL);
	yes("{\"a\":[],\"b\":{},\"c\":[1,[2,[3]]],\"d\":null,\"e\":true,\"f\":false}", NULL);
	yes("{ \"type\" : \"system\" , \"x\" : [ 1 , { \"y\" : \"z\" } ] }", "system");
	yes("{\"type\":\"user\"} \t\r", "user");
	yes("{\"s\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u001b\",\"type\":\"x\"}", "x");
	yes("{\"type\":\"user\",\"type\":\"result\"}", "result"); /* json-c keeps the last */
	yes("{\"type\":\"\"}", "");
	yes("{\"type\":\"caf\xc3\xa9\"}", "caf\xc3\xa9");
	yes("{\"n\":123456789012345678,\"m\":-123456789012345678}", NULL);
	yes("{\"type\":\"assistant\",\"nested\":{\"type\":\"not this one\"}}", "assistant");
}

Test(linecheck, json_c_judges_the_rest)
{
	ask("");
	ask(" {}");         /* json-c skips it; its own to say */
	ask("[]");          /* not an object */
	ask("{} /* c */");  /* json-c's comments */
	ask("{}\n");        /* only spaces, tabs, carriage returns after */
	ask("{\"a\":1,}");  /* trailing comma */
	ask("{'a':1}");     /* single quotes */
	ask("{\"a\":01}");  /* leading zero */
	ask("{\"a\":1.5}"); /* a fraction: json-c converts it */
	ask("{\"a\":1e3}");
	ask("{\"a\":1234567890123456789}"); /* past LINECHECK_DIGITS_MAX */
	ask("{\"a\":-}");
	ask("{\"a\":True}");
	ask("{\"a\":NaN}");
	ask("{\"a\":\"\x01\"}");           /* a raw control byte */
	ask("{\"a\":\"\\ud83d\\ude00\"}"); /* surrogates */
	ask("{\"a\":\"\\x\"}");
	ask("{\"a\":\"\\u12\"}");
	ask("{\"a\":\"open}");
	ask("{\"a\"\t:1}"); /* inner whitespace other than spaces */
	ask("{\"type\":1}");
	ask("{\"type\":\"a\\u0062\"}"); /* a type with an escape */
	ask("{\"typ\\u0065\":\"x\"}");  /* a top-level key with an escape */
	ask("{\"a\":1}x");
	ask("{\"a\":1");
	ask("{\"a\" 1}");
	ask("{1:2}");
}

Test(linecheck, depth)
{
	char line[256];
	size_t n = 0;

	/* LINECHECK_DEPTH_MAX objects deep: taken; one more: json-c's (its own limit is 32). */
	for (int i = 0; i < LINECHECK_DEPTH_MAX - 1; i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "{\"a\":");
	n += (size_t)snprintf(line + n, sizeof(line) - n, "{}");
	for (int i = 0; i < LINECHECK_DEPTH_MAX - 1; i++)
		line[n++] = '}';
	line[n] = '\0';
	yes(line, NULL);
	memmove(line + 5, line, n + 1);
	memcpy(line, "{\"a\":", 5);
	strcat(line, "}");
	ask(line);
}
