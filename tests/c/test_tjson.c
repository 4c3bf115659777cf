/* test_tjson.c: the Triple JSON error reader. */
#include <stdio.h>
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

  /* dubbo-js: the gRPC code as a number, with a UTF-8 message and details
   * (dubbo-js packages/dubbo/src/protocol-triple/error-json.ts errorToJson) */
  const char *js = "{\"status\":5,\"message\":\"unicode \xc3\xa9 \xe2\x9c\x93 100%\","
                   "\"details\":[{\"type\":\"google.rpc.ErrorInfo\",\"value\":\"CgNmb28\"}]}";
  CHECK_EQ_INT(parse(js, &code, msg, &ml, pb, &pl), 0);
  CHECK_EQ_INT(code, 5);
  CHECK_STR(msg, ml, "unicode \xc3\xa9 \xe2\x9c\x93 100%");
  CHECK_EQ_INT(pb[0], 0x08);
  CHECK_EQ_INT(pb[1], 5);
  CHECK_EQ_INT(pb[2 + 2 + ml], 0x1a); /* the detail follows the message */
  CHECK_EQ_INT(parse("{\"status\":16}", &code, msg, &ml, pb, &pl), 0);
  CHECK_EQ_INT(code, 16);
  CHECK_EQ_INT(parse("{\"status\":0,\"message\":\"m\"}", &code, msg, &ml, pb, &pl), 0);
  CHECK_EQ_INT(code, 2); /* an error body never means OK */
  CHECK_EQ_INT(parse("{\"status\":99}", &code, msg, &ml, pb, &pl), 0);
  CHECK_EQ_INT(code, 2);
  CHECK_EQ_INT(parse("{\"status\":-1}", &code, msg, &ml, pb, &pl), -1);
  CHECK_EQ_INT(parse("{\"status\":5.5}", &code, msg, &ml, pb, &pl), -1);
  CHECK_EQ_INT(parse("{\"status\":true}", &code, msg, &ml, pb, &pl), -1);
  /* a "code" wins over a "status", in either order */
  CHECK_EQ_INT(parse("{\"status\":5,\"code\":\"aborted\"}", &code, msg, &ml, pb, &pl), 0);
  CHECK_EQ_INT(code, 10);
  CHECK_EQ_INT(parse("{\"code\":\"aborted\",\"status\":5}", &code, msg, &ml, pb, &pl), 0);
  CHECK_EQ_INT(code, 10);
  /* Dubbo Java: the HTTP status as a string (AbstractServerHttpChannelObserver
   * buildErrorResponse), read through Java's code->HTTP table */
  static const struct { const char *http; int code; } java[] = {
      {"499", 1}, {"404", 5}, {"501", 12}, {"504", 4}, {"500", 13}, {"409", 10},
      {"429", 8}, {"400", 3}, {"401", 16}, {"403", 7}, {"503", 14}, {"418", 2}};
  for (size_t i = 0; i < sizeof(java) / sizeof(java[0]); i++) {
    char body[96];
    snprintf(body, sizeof(body), "{\"status\":\"%s\",\"message\":\"x\"}", java[i].http);
    CHECK_EQ_INT(parse(body, &code, msg, &ml, pb, &pl), 0);
    CHECK_EQ_INT(code, java[i].code);
    CHECK_STR(msg, ml, "x");
  }
  CHECK_EQ_INT(parse("{\"status\":\"not_found\"}", &code, msg, &ml, pb, &pl), 0);
  CHECK_EQ_INT(code, 5);
  CHECK_EQ_INT(parse("{\"status\":\"4\\u00304\"}", &code, msg, &ml, pb, &pl), 0);
  CHECK_EQ_INT(code, 2); /* escaped digits are not an HTTP status */
  CHECK_EQ_INT(parse("{\"status\":\"40\"}", &code, msg, &ml, pb, &pl), 0);
  CHECK_EQ_INT(code, 2);

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
