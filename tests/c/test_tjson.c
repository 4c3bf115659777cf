/* test_tjson.c: the Triple JSON error reader. */
#include <stdlib.h>

#include "tri_test.h"
#include "tri_tjson.h"

static int parse(const char *json, int *code, char *msg, size_t *ml,
                 uint8_t *pb, size_t *pl) {
  return tri_tjson_error_parse(json, strlen(json), code, msg, ml, pb, pl);
}

void test_tjson(void) {
  char msg[512];
  uint8_t pb[4096];
  size_t ml, pl;
  int code;
  CHECK_EQ_INT(parse("{\"code\":\"not_found\",\"message\":\"no such \\\"user\\\"\"}",
                     &code, msg, &ml, pb, &pl), 0);
  CHECK_EQ_INT(code, 5);
  CHECK_STR(msg, ml, "no such \"user\"");
  /* google.rpc.Status{code: 5, message: ...} */
  CHECK_EQ_INT(pb[0], 0x08);
  CHECK_EQ_INT(pb[1], 5);
  CHECK_EQ_INT(pb[2], 0x12);
  CHECK_EQ_INT(pb[3], ml);

  CHECK_EQ_INT(parse("{\"code\":\"code_17\"}", &code, msg, &ml, pb, &pl), 0);
  CHECK_EQ_INT(code, 17);
  CHECK_EQ_INT(ml, 0);
  CHECK_EQ_INT(parse("{\"code\":\"code_99\"}", &code, msg, &ml, pb, &pl), 0);
  CHECK_EQ_INT(code, 2);
  CHECK_EQ_INT(parse("{\"code\":\"code_3\"}", &code, msg, &ml, pb, &pl), 0);
  CHECK_EQ_INT(code, 3);
  CHECK_EQ_INT(parse("{\"code\":\"bogus\"}", &code, msg, &ml, pb, &pl), 0);
  CHECK_EQ_INT(code, 2);

  /* escapes, \u with a surrogate pair, unknown keys skipped */
  CHECK_EQ_INT(parse(" { \"debug\": {\"a\":[1,2,{\"b\":null}]}, \"message\": "
                     "\"caf\\u00e9 \\ud83d\\ude00\\n\", \"code\": \"internal\" } ",
                     &code, msg, &ml, pb, &pl), 0);
  CHECK_EQ_INT(code, 13);
  CHECK_STR(msg, ml, "caf\xc3\xa9 \xf0\x9f\x98\x80\n");

  /* details become Any messages with a type URL */
  const char *with_details =
      "{\"code\":\"invalid_argument\",\"message\":\"m\",\"details\":[{\"type\":"
      "\"google.rpc.ErrorInfo\",\"value\":\"CgNmb28\",\"debug\":{\"x\":1}}]}";
  CHECK_EQ_INT(parse(with_details, &code, msg, &ml, pb, &pl), 0);
  CHECK_EQ_INT(code, 3);
  /* 08 03 12 01 'm' 1a LEN 0a LEN "type.googleapis.com/google.rpc.ErrorInfo" 12 05 ... */
  CHECK_EQ_INT(pb[5], 0x1a);
  const char *url = "type.googleapis.com/google.rpc.ErrorInfo";
  CHECK_EQ_INT(pb[7], 0x0a);
  CHECK_EQ_INT(pb[8], strlen(url));
  CHECK_MEM(pb + 9, strlen(url), url, strlen(url));
  size_t v = 9 + strlen(url);
  CHECK_EQ_INT(pb[v], 0x12);
  CHECK_EQ_INT(pb[v + 1], 5); /* "CgNmb28" decodes to 0a 03 'f' 'o' 'o' */
  CHECK_MEM(pb + v + 2, 5, "\x0a\x03" "foo", 5);
  CHECK_EQ_INT(pb[6], pl - 7);

  /* not an error object: the caller falls back to the HTTP status */
  CHECK_EQ_INT(parse("", &code, msg, &ml, pb, &pl), -1);
  CHECK_EQ_INT(parse("not json", &code, msg, &ml, pb, &pl), -1);
  CHECK_EQ_INT(parse("{\"message\":\"no code\"}", &code, msg, &ml, pb, &pl), -1);
  CHECK_EQ_INT(parse("{\"code\":\"internal\"", &code, msg, &ml, pb, &pl), -1);
  CHECK_EQ_INT(parse("{\"code\":\"a\\x\"}", &code, msg, &ml, pb, &pl), -1);
  CHECK_EQ_INT(parse("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                     "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
                     &code, msg, &ml, pb, &pl), -1);
  CHECK(strcmp(tri_tjson_code_name(1), "canceled") == 0);
}
