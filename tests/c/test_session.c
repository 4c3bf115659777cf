/*
 * test_session.c: the response path of a connection, driven with scripted
 * server frames through a detached connection (no socket, no thread).
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

typedef struct {
  tri_channel *ch;
  tri_conn *conn;
  tri_call *calls[4];
  int n;
} harness;

static void setup_wire(harness *h, int wire) {
  memset(h, 0, sizeof(*h));
  tri_channel_opts o;
  tri_channel_opts_init(&o);
  o.host = "127.0.0.1";
  o.port = "1";
  o.wire = wire;
  tri_channel_new(&h->ch, &o);
  tri__conn_new_detached(&h->conn, h->ch);
  detached_settings(h->conn); /* the scripts answer calls started after it */
}

static void setup(harness *h) { setup_wire(h, TRI_WIRE_GRPC); }

/* Starts a call on the detached connection (stream ids 1, 3, 5...). */
static tri_call *start(harness *h, const char *path, int flags) {
  tri_call *c;
  tri_call_new(h->ch, &c, path, strlen(path), -1, flags);
  if (!(flags & TRI_CALL_CLIENT_STREAMING))
    tri_call_set_request_borrowed(c, (const uint8_t *)"req", 3);
  detached_submit(h->conn, c);
  h->calls[h->n++] = c;
  return c;
}

static void teardown(harness *h) {
  detached_teardown(h->ch, h->conn, h->calls, h->n);
}

static const char *ok_headers[] = {":status", "200", "content-type",
                                   "application/grpc", "x-init", "a", NULL};

/* Feeds the script whole and byte by byte: the outcome must not depend on
 * how the bytes are split.  A unary call runs both ways again with
 * TRI_CALL_DISCARD_BODY: every check must hold without the copy. */
typedef void (*check_fn)(harness *h, tri_call *c);

static void run_both_ways(const script *sc, int flags, check_fn check) {
  int runs = flags & TRI_CALL_SERVER_STREAMING ? 2 : 4;
  for (int run = 0; run < runs; run++) {
    int split = run & 1;
    harness h;
    setup(&h);
    tri_call *c =
        start(&h, "/s/M", flags | (run >= 2 ? TRI_CALL_DISCARD_BODY : 0));
    if (split) {
      for (size_t i = 0; i < sc->len; i++) tri__conn_feed(h.conn, sc->p + i, 1);
    } else {
      tri__conn_feed(h.conn, sc->p, sc->len);
    }
    check(&h, c);
    teardown(&h);
  }
}

static void check_ok(harness *h, tri_call *c) {
  CHECK(tri_call_done(c));
  CHECK_EQ_INT(tri_call_code(c), 0);
  const uint8_t *p;
  size_t n, size = 0;
  tri_call_response(c, &p, &n);
  if (c->flags & TRI_CALL_DISCARD_BODY) /* checked and counted, not kept */
    CHECK(p == NULL && n == 0);
  else
    CHECK_MEM(p, n, "hello", 5);
  CHECK_EQ_INT(tri_call_response_size(c, &size), 1);
  CHECK_EQ_INT(size, 5);
  size_t it = 0;
  int kind, seen_init = 0, seen_trail = 0;
  const char *k, *v;
  size_t kn, vn;
  while (tri_call_md_next(c, &it, &kind, &k, &kn, &v, &vn) == 0) {
    if (kind == TRI_MD_INITIAL && kn == 6 && !memcmp(k, "x-init", 6)) seen_init = 1;
    if (kind == TRI_MD_TRAILING && kn == 7 && !memcmp(k, "x-trail", 7)) seen_trail = 1;
  }
  CHECK(seen_init && seen_trail);
}

/* A message under TRI_CALL_OWNABLE_MIN stays in the call: nothing to take. */
static void check_ok_kept(harness *h, tri_call *c) {
  CHECK(tri_call_take_response(c) == NULL);
  check_ok(h, c);
}

static void unary_ok(void) {
  script s;
  script_init(&s);
  script_headers(&s, 1, 0, ok_headers);
  script_message(&s, 1, 0, "hello", 5, 0);
  const char *trailers[] = {"grpc-status", "0", "x-trail", "b", NULL};
  script_headers(&s, 1, 1, trailers);
  run_both_ways(&s, 0, check_ok);
  run_both_ways(&s, TRI_CALL_OWNABLE_RESPONSES, check_ok_kept);
  script_free(&s);
}

static void check_status5(harness *h, tri_call *c) {
  CHECK_EQ_INT(tri_call_code(c), 5);
  const char *m;
  size_t n;
  tri_call_message(c, &m, &n);
  CHECK_STR(m, n, "caf\xc3\xa9 % x");
}

static void error_status_and_trailers_only(void) {
  script s;
  script_init(&s);
  const char *only[] = {":status", "200", "content-type", "application/grpc",
                        "grpc-status", "5", "grpc-message", "caf%C3%A9 %25 x", NULL};
  script_headers(&s, 1, 1, only);
  run_both_ways(&s, 0, check_status5);
  script_free(&s);
}

static int expect_code;
static int expect_unprocessed; /* tri_call_unprocessed of the failures below */

static void check_code(harness *h, tri_call *c) {
  CHECK(tri_call_done(c));
  CHECK_EQ_INT(tri_call_code(c), expect_code);
  CHECK_EQ_INT(tri_call_unprocessed(c), expect_unprocessed);
}

static void failures(void) {
  script s;
  /* RST_STREAM REFUSED_STREAM -> UNAVAILABLE */
  script_init(&s);
  script_rst(&s, 1, NGHTTP2_REFUSED_STREAM);
  expect_code = TRI_CODE_UNAVAILABLE;
  expect_unprocessed = TRI_UNPROCESSED_REFUSED; /* transparent retry is safe */
  run_both_ways(&s, 0, check_code);
  script_free(&s);
  /* GOAWAY whose last-stream-id (0) is below the call's stream: not processed */
  script_init(&s);
  uint8_t goaway[8] = {0, 0, 0, 0, 0, 0, 0, NGHTTP2_NO_ERROR};
  script_frame(&s, NGHTTP2_GOAWAY, 0, 0, goaway, sizeof(goaway));
  run_both_ways(&s, 0, check_code);
  script_free(&s);
  /* REFUSED_STREAM after the response began: the server saw it */
  script_init(&s);
  script_headers(&s, 1, 0, ok_headers);
  script_rst(&s, 1, NGHTTP2_REFUSED_STREAM);
  expect_unprocessed = 0;
  run_both_ways(&s, 0, check_code);
  script_free(&s);
  /* bad envelope flags -> INTERNAL */
  script_init(&s);
  script_headers(&s, 1, 0, ok_headers);
  script_message(&s, 1, 0x40, "x", 1, 0);
  expect_code = TRI_CODE_INTERNAL;
  run_both_ways(&s, 0, check_code);
  script_free(&s);
  /* message cut short, then the stream ends -> INTERNAL */
  script_init(&s);
  script_headers(&s, 1, 0, ok_headers);
  uint8_t partial[7] = {0, 0, 0, 0, 10, 'a', 'b'};
  script_frame(&s, NGHTTP2_DATA, 0, 1, partial, sizeof(partial));
  const char *t0[] = {"grpc-status", "0", NULL};
  script_headers(&s, 1, 1, t0);
  run_both_ways(&s, 0, check_code);
  script_free(&s);
  /* HTTP 503 without grpc-status -> UNAVAILABLE */
  script_init(&s);
  const char *h503[] = {":status", "503", NULL};
  script_headers(&s, 1, 1, h503);
  expect_code = TRI_CODE_UNAVAILABLE;
  run_both_ways(&s, 0, check_code);
  script_free(&s);
  /* no grpc-status at all -> INTERNAL */
  script_init(&s);
  script_headers(&s, 1, 0, ok_headers);
  script_message(&s, 1, 0, "hello", 5, 1);
  expect_code = TRI_CODE_INTERNAL;
  run_both_ways(&s, 0, check_code);
  script_free(&s);
  /* garbage: a connection-level protocol error fails the call */
  script_init(&s);
  script_put(&s, "\x00\x00\x04\x99\x00\x00\x00\x00\x00garbage-garbage", 24);
  script_frame(&s, NGHTTP2_WINDOW_UPDATE, 0, 0, "\x00\x00\x00\x00", 4);
  expect_code = TRI_CODE_INTERNAL;
  run_both_ways(&s, 0, check_code);
  script_free(&s);
}

static void check_stream(harness *h, tri_call *c) {
  CHECK_EQ_INT(tri_call_code(c), 0);
  tri_buf *m;
  int got = 0;
  while (tri_call_read(c, 0, &m) == 1) {
    CHECK_EQ_INT(m->len, 3);
    tri_call_msg_release(c, m);
    got++;
  }
  CHECK_EQ_INT(got, 3);
}

static void server_stream(void) {
  script s;
  script_init(&s);
  script_headers(&s, 1, 0, ok_headers);
  for (int i = 0; i < 3; i++) script_message(&s, 1, 0, "abc", 3, 0);
  const char *t0[] = {"grpc-status", "0", NULL};
  script_headers(&s, 1, 1, t0);
  run_both_ways(&s, TRI_CALL_SERVER_STREAMING, check_stream);
  script_free(&s);
}

/* Two unary calls on one connection (streams 1 and 3); `sc` answers both.
 * Returns with h set up (the caller tears it down). */
static void two_calls(harness *h, const script *sc, int bytewise) {
  setup(h);
  start(h, "/s/M", 0);
  start(h, "/s/M", 0);
  if (bytewise) {
    for (size_t i = 0; i < sc->len; i++) tri__conn_feed(h->conn, sc->p + i, 1);
  } else {
    tri__conn_feed(h->conn, sc->p, sc->len);
  }
}

/* A response header block over grpc.max_metadata_size (8 KiB) fails that
 * call alone, initial metadata or trailers; the other call on the
 * connection, answered after it (HPACK state shared), succeeds. */
static void metadata_limit(void) {
  static char big[9001];
  memset(big, 'b', sizeof(big) - 1);
  const char *big_initial[] = {
      ":status", "200", "content-type", "application/grpc", "x-big", big, NULL};
  const char *big_trailers[] = {"grpc-status", "0", "x-big", big, NULL};
  const char *t0[] = {"grpc-status", "0", "x-trail", "b", NULL};
  for (int trailers = 0; trailers < 2; trailers++) {
    for (int bytewise = 0; bytewise < 2; bytewise++) {
      script s;
      script_init(&s);
      script_headers(&s, 1, 0, trailers ? ok_headers : big_initial);
      script_headers(&s, 3, 0, ok_headers);
      script_message(&s, 1, 0, "hello", 5, 0);
      script_headers(&s, 1, 1, trailers ? big_trailers : t0);
      script_message(&s, 3, 0, "hello", 5, 0);
      script_headers(&s, 3, 1, t0);
      harness h;
      two_calls(&h, &s, bytewise);
      CHECK(tri_call_done(h.calls[0]));
      CHECK_EQ_INT(tri_call_code(h.calls[0]), TRI_CODE_RESOURCE_EXHAUSTED);
      const char *m;
      size_t n;
      tri_call_message(h.calls[0], &m, &n);
      CHECK(n > 0 &&
            memmem(m, n, trailers ? "trailing" : "initial", trailers ? 8 : 7));
      check_ok(&h, h.calls[1]);
      CHECK(!h.conn->dead);
      teardown(&h);
      script_free(&s);
    }
  }
}

static const char *expect_message_has;

static void check_code_and_message(harness *h, tri_call *c) {
  check_code(h, c);
  const char *m;
  size_t n;
  tri_call_message(c, &m, &n);
  CHECK(n > 0 && memmem(m, n, expect_message_has, strlen(expect_message_has)) &&
        !memmem(m, n, "from peer", 9));
}

/* An HTTP 200 that is not gRPC is UNKNOWN (grpc's HTTP-to-gRPC mapping);
 * an error nghttp2 finds in the server's bytes is worded as the client's. */
static void not_grpc_and_local_errors(void) {
  expect_unprocessed = 0;
  const char *html[] = {":status", "200", "content-type", "text/html", NULL};
  const char *t0[] = {"grpc-status", "0", NULL};
  for (int with_status = 0; with_status < 2; with_status++) {
    script s;
    script_init(&s);
    script_headers(&s, 1, 0, html);
    if (with_status) {
      script_message(&s, 1, 0, "hello", 5, 0);
      script_headers(&s, 1, 1, t0);
    } else {
      script_frame(&s, NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1, "<html/>", 7);
    }
    expect_code = TRI_CODE_UNKNOWN;
    expect_message_has = "\"text/html\"";
    run_both_ways(&s, 0, check_code_and_message);
    script_free(&s);
  }
  script s;
  script_init(&s);
  script_put(&s, "\x00\x00\x04\x99\x00\x00\x00\x00\x00garbage-garbage", 24);
  script_frame(&s, NGHTTP2_WINDOW_UPDATE, 0, 0, "\x00\x00\x00\x00", 4);
  expect_code = TRI_CODE_INTERNAL;
  expect_message_has = "detected by the client";
  run_both_ways(&s, 0, check_code_and_message);
  script_free(&s);
}

/* TRI_CALL_DISCARD_BODY keeps the envelope checks that need no payload
 * (second message, declared length over the limit) and still inflates a
 * compressed message within the limit; an error leaves no response size. */
static void discard_body(void) {
  static const char *gz_headers[] = {":status", "200", "content-type", "application/grpc",
                                     "grpc-encoding", "gzip", NULL};
  const char *t0[] = {"grpc-status", "0", NULL};
  for (int c_case = 0; c_case < 5; c_case++) {
    for (int split = 0; split < 2; split++) {
      harness h;
      setup(&h);
      tri_call *c = start(&h, "/s/M", TRI_CALL_DISCARD_BODY);
      script s;
      script_init(&s);
      script_settings(&s);
      script_headers(&s, 1, 0, c_case >= 2 ? gz_headers : ok_headers);
      int want = TRI_CODE_OK;
      size_t want_size = 0;
      if (c_case == 0) { /* a second message */
        script_message(&s, 1, 0, "hello", 5, 0);
        script_message(&s, 1, 0, "again", 5, 0);
        want = TRI_CODE_INTERNAL;
      } else if (c_case == 1) { /* declares more than max_recv_bytes */
        uint8_t prefix[6] = {0, 0x7f, 0, 0, 0, 'x'};
        script_frame(&s, NGHTTP2_DATA, 0, 1, prefix, sizeof(prefix));
        want = TRI_CODE_RESOURCE_EXHAUSTED;
      } else if (c_case == 4) { /* compressed but corrupt */
        script_message(&s, 1, 1, "not gzip", 8, 0);
        want = TRI_CODE_INTERNAL;
      } else { /* compressed: inflated (2: fits; 3: over the limit), then dropped */
        size_t n = c_case == 2 ? 3000 : (size_t)h.ch->opts.max_recv_bytes + 1;
        uint8_t *plain = calloc(1, n);
        tri_buf *z = NULL;
        CHECK_EQ_INT(tri_gzip_compress(&h.ch->zpool, &h.ch->pool, plain, n, 0, &z), 0);
        script_message(&s, 1, 1, tri_buf_begin(z), z->len, 0);
        tri_pool_put(&h.ch->pool, z);
        free(plain);
        want = c_case == 2 ? TRI_CODE_OK : TRI_CODE_RESOURCE_EXHAUSTED;
        want_size = c_case == 2 ? n : 0;
      }
      script_headers(&s, 1, 1, t0);
      if (split) {
        for (size_t i = 0; i < s.len; i++) tri__conn_feed(h.conn, s.p + i, 1);
      } else {
        tri__conn_feed(h.conn, s.p, s.len);
      }
      script_free(&s);
      CHECK(tri_call_done(c));
      CHECK_EQ_INT(tri_call_code(c), want);
      const uint8_t *p;
      size_t n, size = 1;
      tri_call_response(c, &p, &n);
      CHECK(p == NULL);
      CHECK_EQ_INT(tri_call_response_size(c, &size), want == TRI_CODE_OK);
      CHECK_EQ_INT(size, want_size);
      teardown(&h);
    }
  }
}

/* Triple unary: the body's encoding is the response header block's
 * content-encoding.  The same field in the trailers, after the body, is
 * ignored: the call is OK, with or without TRI_CALL_DISCARD_BODY.  In the
 * header block an encoding we do not have fails the call either way. */
static void triple_encoding_only_from_headers(void) {
  for (int in_headers = 0; in_headers < 2; in_headers++) {
    for (int discard = 0; discard < 2; discard++) {
      harness h;
      setup_wire(&h, TRI_WIRE_TRIPLE);
      tri_call *c = start(&h, "/s/M", discard ? TRI_CALL_DISCARD_BODY : 0);
      const char *head[] = {":status", "200", "content-type", "application/proto",
                            in_headers ? "content-encoding" : NULL, "br", NULL};
      const char *tail[] = {"trailer-x", "1", in_headers ? NULL : "content-encoding",
                            "br", NULL};
      script s;
      script_init(&s);
      script_headers(&s, 1, 0, head);
      script_frame(&s, NGHTTP2_DATA, 0, 1, "hello", 5);
      script_headers(&s, 1, 1, tail);
      tri__conn_feed(h.conn, s.p, s.len);
      script_free(&s);
      CHECK(tri_call_done(c));
      size_t size = 0;
      if (in_headers) {
        CHECK_EQ_INT(tri_call_code(c), TRI_CODE_INTERNAL);
        const char *m;
        size_t mn;
        tri_call_message(c, &m, &mn);
        CHECK_STR(m, mn, "unknown content-encoding");
        CHECK_EQ_INT(tri_call_response_size(c, &size), 0);
      } else {
        CHECK_EQ_INT(tri_call_code(c), TRI_CODE_OK);
        CHECK_EQ_INT(tri_call_response_size(c, &size), 1);
        CHECK_EQ_INT(size, 5);
        const uint8_t *p;
        size_t n;
        tri_call_response(c, &p, &n);
        if (discard)
          CHECK(p == NULL);
        else
          CHECK_MEM(p, n, "hello", 5);
      }
      teardown(&h);
    }
  }
}

/* Which stream an in-place read bets on after a stream's DATA frame
 * (rx_next_sid, tri_conn.h): the one that followed it last; when that one
 * ends, the one that followed the ended stream, as a server taking turns
 * skips it. */
static void bet_skips_an_ended_stream(void) {
  harness h;
  setup(&h);
  for (int i = 0; i < 3; i++) start(&h, "/s/M", 0); /* streams 1, 3, 5 */
  static const uint8_t msg[40] = {0, 0, 0, 0, 30};   /* a 30-byte message */
  const char *t0[] = {"grpc-status", "0", NULL};
  script s;
  script_init(&s);
  for (int sid = 1; sid <= 5; sid += 2) script_headers(&s, sid, 0, ok_headers);
  for (int sid = 1; sid <= 5; sid += 2) script_frame(&s, NGHTTP2_DATA, 0, sid, msg, 20);
  tri__conn_feed(h.conn, s.p, s.len);
  CHECK_EQ_INT(h.calls[0]->rx_next_sid, 3);
  CHECK_EQ_INT(h.calls[1]->rx_next_sid, 5);
  s.len = 0; /* the next turn: 1, then 3's rest and its end */
  script_frame(&s, NGHTTP2_DATA, 0, 1, msg + 20, 5);
  script_frame(&s, NGHTTP2_DATA, 0, 3, msg + 20, 15);
  script_headers(&s, 3, 1, t0);
  tri__conn_feed(h.conn, s.p, s.len);
  CHECK(tri_call_done(h.calls[1]));
  CHECK_EQ_INT(tri_call_code(h.calls[1]), TRI_CODE_OK);
  CHECK_EQ_INT(h.calls[0]->rx_next_sid, 5); /* 1 is followed by 5 now */
  script_free(&s);
  teardown(&h);
}

/* One gRPC message of n bytes in DATA frames of at most 16 KiB (the default
 * SETTINGS_MAX_FRAME_SIZE). */
static void script_long_message(script *s, int32_t sid, const uint8_t *msg, size_t n) {
  uint8_t *buf = malloc(n + 5);
  buf[0] = 0;
  buf[1] = (uint8_t)(n >> 24);
  buf[2] = (uint8_t)(n >> 16);
  buf[3] = (uint8_t)(n >> 8);
  buf[4] = (uint8_t)n;
  memcpy(buf + 5, msg, n);
  for (size_t at = 0; at < n + 5; at += 16384) {
    size_t part = n + 5 - at < 16384 ? n + 5 - at : 16384;
    script_frame(s, NGHTTP2_DATA, 0, sid, buf + at, part);
  }
  free(buf);
}

/* TRI_CALL_OWNABLE_RESPONSES: a message of TRI_CALL_OWNABLE_MIN bytes or more
 * arrives in a detached buffer, with the headroom in front and a spare byte
 * after, which the caller takes over (unary: tri_call_take_response; stream:
 * tri_call_read) and keeps after the channel is gone; without the flag it
 * stays in the pool (nothing to take; a small message: unary_ok). */
static void ownable_responses(void) {
  size_t n = TRI_CALL_OWNABLE_MIN + 100;
  uint8_t *msg = malloc(n);
  for (size_t i = 0; i < n; i++) msg[i] = (uint8_t)(i * 7);
  const char *t0[] = {"grpc-status", "0", NULL};
  for (int mode = 0; mode < 3; mode++) { /* unary, stream, unary without the flag */
    script s;
    script_init(&s);
    script_headers(&s, 1, 0, ok_headers);
    script_long_message(&s, 1, msg, n);
    if (mode == 1) script_message(&s, 1, 0, "small", 5, 0);
    script_headers(&s, 1, 1, t0);
    harness h;
    setup(&h);
    int flags = mode == 2 ? 0 : TRI_CALL_OWNABLE_RESPONSES;
    tri_call *c = start(&h, "/s/M", flags | (mode == 1 ? TRI_CALL_SERVER_STREAMING : 0));
    tri__conn_feed(h.conn, s.p, s.len);
    CHECK_EQ_INT(tri_call_code(c), 0);
    tri_buf *kept = NULL;
    if (mode == 1) {
      tri_buf *small;
      CHECK_EQ_INT(tri_call_read(c, 0, &kept), 1);
      CHECK_EQ_INT(tri_call_read(c, 0, &small), 1);
      CHECK(!tri_buf_detached(small));
      CHECK_MEM(tri_buf_begin(small), small->len, "small", 5);
      tri_call_msg_release(c, small);
    } else {
      kept = tri_call_take_response(c);
    }
    const uint8_t *p;
    size_t len, size = 0;
    if (mode == 2) {
      CHECK(kept == NULL); /* pooled: stays in the call */
      tri_call_response(c, &p, &len);
      CHECK_MEM(p, len, msg, n);
    } else if (mode == 0) {
      CHECK(tri_call_take_response(c) == NULL); /* taken once */
      tri_call_response(c, &p, &len);
      CHECK(p == NULL);
      CHECK_EQ_INT(tri_call_response_size(c, &size), 1);
      CHECK_EQ_INT(size, n);
    }
    teardown(&h); /* call and channel gone: a taken message is still the caller's */
    if (kept) {
      CHECK(tri_buf_detached(kept));
      CHECK(kept->off >= TRI_CALL_OWNABLE_HEADROOM);
      CHECK(tri_buf_tailroom(kept) >= 1);
      CHECK_MEM(tri_buf_begin(kept), kept->len, msg, n);
      tri_buf_free(kept);
    }
    script_free(&s);
  }
  free(msg);
}

void test_session(void) {
  unary_ok();
  error_status_and_trailers_only();
  failures();
  server_stream();
  metadata_limit();
  not_grpc_and_local_errors();
  discard_body();
  triple_encoding_only_from_headers();
  bet_skips_an_ended_stream();
  ownable_responses();
}
