/*
 * test_h2_rules.c: the HTTP/2 message rules (RFC 9113 §8.1-8.3) a response
 * must follow, end to end: scripted server frames through a detached
 * connection (no socket, no thread).  Every malformed response below must
 * end its call with the status and message listed, on the gRPC and the
 * Triple wire, whether the bytes come at once or one at a time and whether
 * the unary call keeps its response or only counts it; and the other call
 * on the connection (stream 3, answered correctly after it) must succeed:
 * a malformed response costs its own stream, not the connection.  Each case
 * runs with the rules applied by the client (tri_resp_check) and again with
 * nghttp2 applying them (tri__conn_nghttp2_rules): the outcomes must be the
 * ones listed either way.
 */
#include "detached_call.h"
#include "session_script.h"
#include "tri_call.h"
#include "tri_channel.h"
#include "tri_conn.h"
#include "tri_error.h"
#include "tri_int.h"
#include "tri_test.h"
#include "tri_wire.h"

/* One step of a scripted answer on stream 1. */
typedef struct {
  char kind; /* 'H' HEADERS, 'D' DATA, 0: the end of the list */
  int end_stream;
  const char *const *nv; /* 'H': name/value pairs, NULL-terminated */
  const char *data;      /* 'D': the payload (bytes as given) */
  size_t len;
} step;

#define HDR(end, ...) \
  { 'H', end, (const char *const[]){__VA_ARGS__, NULL}, NULL, 0 }
#define DATA(end, bytes) \
  { 'D', end, NULL, bytes, sizeof(bytes) - 1 }

/* A gRPC message "hello" (prefix + payload) and its Triple body. */
#define GRPC_HELLO "\0\0\0\0\5hello"
#define OK_GRPC ":status", "200", "content-type", "application/grpc"
#define OK_TRIPLE ":status", "200", "content-type", "application/proto"
#define STATUS_0 "grpc-status", "0"

/* A fault found after the block's grpc-status was read still resets the
 * stream, but the call ends with that status (the reset adds nothing to a
 * status already received): "... in trailers" below end OK. */
typedef struct {
  const char *name;
  int wire; /* TRI_WIRE_GRPC or TRI_WIRE_TRIPLE */
  step steps[6];
  int code;            /* the unary call's final status */
  const char *message; /* its message ("" when none) */
} rule_case;

static const char RESET[] = "stream reset by peer: PROTOCOL_ERROR (0x1)";

static const rule_case cases[] = {
    {"good gRPC answer",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC), DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_OK,
     ""},
    {":status of two digits",
     TRI_WIRE_GRPC,
     {HDR(0, ":status", "20", "content-type", "application/grpc"),
      DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {":status of four digits",
     TRI_WIRE_GRPC,
     {HDR(0, ":status", "2000", "content-type", "application/grpc"),
      DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {":status not a number",
     TRI_WIRE_GRPC,
     {HDR(0, ":status", "2x0", "content-type", "application/grpc"),
      DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {":status 101",
     TRI_WIRE_GRPC,
     {HDR(0, ":status", "101", "content-type", "application/grpc"),
      DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {":status empty",
     TRI_WIRE_GRPC,
     {HDR(0, ":status", "", "content-type", "application/grpc"),
      DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {":status twice",
     TRI_WIRE_GRPC,
     {HDR(0, ":status", "200", ":status", "200", "content-type",
          "application/grpc"),
      DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"no :status",
     TRI_WIRE_GRPC,
     {HDR(0, "content-type", "application/grpc"), DATA(0, GRPC_HELLO),
      HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"no :status, trailers-only",
     TRI_WIRE_GRPC,
     {HDR(1, "content-type", "application/grpc", "grpc-status", "5")},
     5,
     ""},
    {"pseudo-header after a regular one",
     TRI_WIRE_GRPC,
     {HDR(0, "content-type", "application/grpc", ":status", "200"),
      DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"unknown pseudo-header",
     TRI_WIRE_GRPC,
     {HDR(0, ":status", "200", ":foo", "x", "content-type", "application/grpc"),
      DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"request pseudo-header :path",
     TRI_WIRE_GRPC,
     {HDR(0, ":status", "200", ":path", "/x", "content-type",
          "application/grpc"),
      DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"request pseudo-header :method",
     TRI_WIRE_GRPC,
     {HDR(0, ":status", "200", ":method", "GET", "content-type",
          "application/grpc"),
      DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"pseudo-header in trailers",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC), DATA(0, GRPC_HELLO), HDR(1, ":status", "200", STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"pseudo-header name ':' alone",
     TRI_WIRE_GRPC,
     {HDR(0, ":status", "200", ":", "x", "content-type", "application/grpc"),
      DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"pseudo-header with a bad value",
     TRI_WIRE_GRPC,
     {HDR(0, ":status", "20\x01", "content-type", "application/grpc"),
      DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"uppercase name",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "X-Meta", "a"), DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"uppercase name in trailers",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC), DATA(0, GRPC_HELLO),
      HDR(1, STATUS_0, "Grpc-Message", "x")},
     TRI_CODE_OK,
     ""},
    {"connection",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "connection", "close"), DATA(0, GRPC_HELLO),
      HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"keep-alive",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "keep-alive", "5"), DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"proxy-connection",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "proxy-connection", "x"), DATA(0, GRPC_HELLO),
      HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"transfer-encoding",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "transfer-encoding", "chunked"), DATA(0, GRPC_HELLO),
      HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"upgrade",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "upgrade", "h2c"), DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"connection in trailers",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC), DATA(0, GRPC_HELLO),
      HDR(1, STATUS_0, "connection", "close")},
     TRI_CODE_OK,
     ""},
    {"te other than trailers",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "te", "gzip"), DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"te: Trailers (any case)",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "te", "Trailers"), DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_OK,
     ""},
    {"content-length matching the DATA",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "content-length", "10"), DATA(0, GRPC_HELLO),
      HDR(1, STATUS_0)},
     TRI_CODE_OK,
     ""},
    {"content-length under the DATA",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "content-length", "3"), DATA(0, GRPC_HELLO),
      HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"content-length over the DATA, trailers end",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "content-length", "11"), DATA(0, GRPC_HELLO),
      HDR(1, STATUS_0)},
     TRI_CODE_OK,
     ""},
    {"content-length over the DATA, DATA ends",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "content-length", "11"), DATA(1, GRPC_HELLO)},
     TRI_CODE_INTERNAL,
     RESET},
    {"content-length not a number",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "content-length", "1O"), DATA(0, GRPC_HELLO),
      HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"content-length twice",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "content-length", "10", "content-length", "10"),
      DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"content-length again in trailers",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "content-length", "10"), DATA(0, GRPC_HELLO),
      HDR(1, STATUS_0, "content-length", "10")},
     TRI_CODE_OK,
     ""},
    {"trailers without END_STREAM",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC), DATA(0, GRPC_HELLO), HDR(0, STATUS_0)},
     TRI_CODE_OK,
     ""},
    {"trailers without END_STREAM, then DATA",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC), HDR(0, "x-t", "1"), DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"1xx, then the answer",
     TRI_WIRE_GRPC,
     {HDR(0, ":status", "100"), HDR(0, OK_GRPC), DATA(0, GRPC_HELLO),
      HDR(1, STATUS_0)},
     TRI_CODE_OK,
     ""},
    {"1xx with END_STREAM",
     TRI_WIRE_GRPC,
     {HDR(1, ":status", "103", "link", "</x>")},
     TRI_CODE_INTERNAL,
     RESET},
    {"DATA after a 1xx",
     TRI_WIRE_GRPC,
     {HDR(0, ":status", "100"), DATA(0, GRPC_HELLO), HDR(1, OK_GRPC, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"final answer after a 1xx lacks :status",
     TRI_WIRE_GRPC,
     {HDR(0, ":status", "100"), HDR(0, "content-type", "application/grpc"),
      DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"content-length in a 1xx",
     TRI_WIRE_GRPC,
     {HDR(0, ":status", "100", "content-length", "0"), HDR(0, OK_GRPC),
      DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"metadata value with a leading space",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "x-bad", " lead"), DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"metadata value with a trailing tab",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "x-bad", "trail\t"), DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"metadata value with a control byte",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "x-bad", "a\x01b"), DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"metadata value with LF",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "x-bad", "a\nb"), DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"metadata value with inner space, tab and UTF-8",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "x-ok", "a b\tc\xc3\xa9"), DATA(0, GRPC_HELLO),
      HDR(1, STATUS_0)},
     TRI_CODE_OK,
     ""},
    {"grpc-status with DEL",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC), DATA(0, GRPC_HELLO), HDR(1, "grpc-status", "0\x7f")},
     TRI_CODE_INTERNAL,
     RESET},
    {"name with a space",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "x bad", "v"), DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"name with token punctuation",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "x-!#$%&'*+.^_`|~9", "v"), DATA(0, GRPC_HELLO),
      HDR(1, STATUS_0)},
     TRI_CODE_OK,
     ""},
    {"name with a colon inside",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "x:y", "v"), DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"empty name",
     TRI_WIRE_GRPC,
     {HDR(0, OK_GRPC, "", "v"), DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"content-type with a trailing tab",
     TRI_WIRE_GRPC,
     {HDR(0, ":status", "200", "content-type", "text/html\t"),
      DATA(0, GRPC_HELLO), HDR(1, STATUS_0)},
     TRI_CODE_INTERNAL,
     RESET},
    {"good Triple answer",
     TRI_WIRE_TRIPLE,
     {HDR(0, OK_TRIPLE), DATA(1, "hello")},
     TRI_CODE_OK,
     ""},
    {"Triple: content-length matching",
     TRI_WIRE_TRIPLE,
     {HDR(0, OK_TRIPLE, "content-length", "5"), DATA(1, "hello")},
     TRI_CODE_OK,
     ""},
    {"Triple: content-length over the body",
     TRI_WIRE_TRIPLE,
     {HDR(0, OK_TRIPLE, "content-length", "6"), DATA(1, "hello")},
     TRI_CODE_INTERNAL,
     RESET},
    {"Triple: content-length under the body",
     TRI_WIRE_TRIPLE,
     {HDR(0, OK_TRIPLE, "content-length", "4"), DATA(1, "hello")},
     TRI_CODE_INTERNAL,
     RESET},
    {"Triple: bad :status",
     TRI_WIRE_TRIPLE,
     {HDR(0, ":status", "2OO", "content-type", "application/proto"),
      DATA(1, "hello")},
     TRI_CODE_INTERNAL,
     RESET},
    {"Triple: connection-specific header",
     TRI_WIRE_TRIPLE,
     {HDR(0, OK_TRIPLE, "transfer-encoding", "chunked"), DATA(1, "hello")},
     TRI_CODE_INTERNAL,
     RESET},
    {"Triple: trailers-only with END_STREAM on a 1xx",
     TRI_WIRE_TRIPLE,
     {HDR(1, ":status", "100")},
     TRI_CODE_INTERNAL,
     RESET},
};

static const char *const good_grpc[] = {OK_GRPC, NULL};
static const char *const good_triple[] = {OK_TRIPLE, NULL};
static const char *const trailers_ok[] = {STATUS_0, NULL};

/* The script of `rc`: its steps on stream 1, then a correct answer on 3. */
static void build(script *s, const rule_case *rc) {
  script_init(s);
  for (const step *st = rc->steps; st->kind; st++) {
    if (st->kind == 'H') script_headers(s, 1, st->end_stream, st->nv);
    else
      script_frame(s, NGHTTP2_DATA, st->end_stream ? NGHTTP2_FLAG_END_STREAM : 0,
                   1, st->data, st->len);
  }
  if (rc->wire == TRI_WIRE_GRPC) {
    script_headers(s, 3, 0, good_grpc);
    script_frame(s, NGHTTP2_DATA, 0, 3, GRPC_HELLO, 10);
    script_headers(s, 3, 1, trailers_ok);
  } else {
    script_headers(s, 3, 0, good_triple);
    script_frame(s, NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 3, "hello", 5);
  }
}

/* Runs `rc` once: bytes whole or one at a time, the unary call on stream 1
 * keeping or counting its response. */
static void run_case(const rule_case *rc, const script *s, int bytewise,
                     int discard, int by_nghttp2) {
  tri_channel_opts o;
  tri_channel_opts_init(&o);
  o.host = "127.0.0.1";
  o.port = "1";
  o.wire = rc->wire;
  tri_channel *ch;
  tri_conn *conn;
  tri__conn_nghttp2_rules = by_nghttp2;
  int rv = tri_channel_new(&ch, &o) || tri__conn_new_detached(&conn, ch);
  tri__conn_nghttp2_rules = 0;
  if (rv) {
    CHECK(0);
    return;
  }
  detached_settings(conn);
  tri_call *calls[2];
  for (int i = 0; i < 2; i++) {
    tri_call_new(ch, &calls[i], "/s/M", 4, -1,
                 i == 0 && discard ? TRI_CALL_DISCARD_BODY : 0);
    tri_call_set_request_borrowed(calls[i], (const uint8_t *)"req", 3);
    detached_submit(conn, calls[i]);
  }
  if (bytewise) {
    for (size_t i = 0; i < s->len; i++) tri__conn_feed(conn, s->p + i, 1);
  } else {
    tri__conn_feed(conn, s->p, s->len);
  }
  tri__conn_tick(conn); /* what is still queued (a RST_STREAM) goes out */
  const char *m;
  size_t n;
  int failed_before = tri_test_failures;
  CHECK(tri_call_done(calls[0]));
  CHECK_EQ_INT(tri_call_code(calls[0]), rc->code);
  tri_call_message(calls[0], &m, &n);
  CHECK_STR(m, n, rc->message);
  CHECK(tri_call_done(calls[1]));
  CHECK_EQ_INT(tri_call_code(calls[1]), TRI_CODE_OK);
  CHECK(!conn->dead);
  if (tri_test_failures != failed_before)
    fprintf(stderr, "  in case \"%s\" (%s, %s%s%s): %d \"%.*s\"\n", rc->name,
            rc->wire == TRI_WIRE_GRPC ? "gRPC" : "Triple",
            bytewise ? "byte by byte" : "whole", discard ? ", counted" : "",
            by_nghttp2 ? ", nghttp2's rules" : "", tri_call_code(calls[0]),
            (int)n, m);
  detached_teardown(ch, conn, calls, 2);
}

void test_h2_rules(void) {
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    script s;
    build(&s, &cases[i]);
    for (int variant = 0; variant < 8; variant++)
      run_case(&cases[i], &s, variant & 1, (variant >> 1) & 1, variant >> 2);
    script_free(&s);
  }
}
