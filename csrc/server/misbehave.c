/*
 * misbehave.c: the x-misbehave fault modes (see misbehave.h).
 */
#include "server/misbehave.h"

#include <string.h>

#include "server/request.h"
#include "server/respond.h"
#include "server/runtime.h"
#include "tri_clock.h"
#include "tri_error.h"
#include "tri_wire.h"

#define GOAWAY_LINGER_MIN_MS 100    /* x-misbehave: goaway: open at least... */
#define GOAWAY_LINGER_MAX_MS 1000   /* ...and at most this long after it */

static const char *const MISBEHAVE[] = {
    "", "rst-mid-response", "goaway", "bad-hpack", "bad-grpc-status",
    "wrong-content-type", "tiny-window", "never-answer"};

/* goaway: GOAWAY(NO_ERROR) with the last stream id just below this stream,
 * so this one (and any later one) is refused while the streams below it go
 * on.  The connection then closes once those are done, but not before
 * GOAWAY_LINGER_MIN_MS (the client reads the GOAWAY before the FIN, and
 * nothing unread makes our close a reset) and not after
 * GOAWAY_LINGER_MAX_MS (what is still open then is cut). */
static void misbehave_goaway(srv_stream *st) {
  srv_conn *c = st->conn;
  int32_t last = st->id > 2 ? st->id - 2 : 0;
  static const char why[] = "x-misbehave: goaway";
  st->finished = 1; /* nghttp2 closes it once the GOAWAY is sent */
  srv_timer_remove(c->w, st);
  if (nghttp2_submit_goaway(c->sess, NGHTTP2_FLAG_NONE, last, NGHTTP2_NO_ERROR,
                            (const uint8_t *)why, sizeof(why) - 1)) {
    srv_conn_kill(c);
    return;
  }
  if (!c->linger_max) {
    int64_t now = tri__now();
    c->linger_min = now + GOAWAY_LINGER_MIN_MS * 1000000LL;
    c->linger_max = now + GOAWAY_LINGER_MAX_MS * 1000000LL;
    c->w->n_linger++;
  }
  srv_mark_dirty(c);
}

/* bad-hpack: a HEADERS frame for this stream whose header block is one
 * HPACK "indexed header field" with index 0, which RFC 7541 §6.1 makes a
 * decoding error.  The frame is written raw into the output queue between
 * nghttp2's frames (always at a frame boundary); our HPACK encoder state
 * is untouched.  The client must fail the connection (COMPRESSION_ERROR). */
static void misbehave_hpack(srv_stream *st) {
  uint32_t id = (uint32_t)st->id;
  const uint8_t frame[10] = {0, 0, 1, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS,
                             (uint8_t)(id >> 24 & 0x7f), (uint8_t)(id >> 16),
                             (uint8_t)(id >> 8), (uint8_t)id, 0x80};
  st->finished = 1;
  srv_timer_remove(st->conn->w, st);
  if (tri_outq_stage(&st->conn->out, frame, sizeof(frame)))
    srv_conn_kill(st->conn);
  srv_mark_dirty(st->conn);
}

/* wrong-content-type: 200, content-type text/html, an HTML body, the end
 * of the stream (no trailers, no grpc-status). */
static void misbehave_content_type(srv_stream *st) {
  static const char html[] = "<html><body>not a gRPC server</body></html>\n";
  tri_buf *b = tri_pool_get(pool_of(st->conn), sizeof(html) - 1, 0);
  if (!b) {
    srv_fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
    return;
  }
  memcpy(tri_buf_begin(b), html, sizeof(html) - 1);
  b->len = sizeof(html) - 1;
  st->finished = 1;
  st->plain_end = 1;
  srv_timer_remove(st->conn->w, st);
  srv_q_push(st, b);
  nghttp2_nv nv[] = {
      {(uint8_t *)":status", (uint8_t *)"200", 7, 3, NGHTTP2_NV_FLAG_NONE},
      {(uint8_t *)"content-type", (uint8_t *)"text/html; charset=utf-8", 12, 24,
       NGHTTP2_NV_FLAG_NONE}};
  nghttp2_data_provider prd = srv_provider(st);
  if (nghttp2_submit_response(st->conn->sess, st->id, nv, 2, &prd)) {
    srv_submit_failed(st);
    return;
  }
  st->headers_sent = 1;
  srv_mark_dirty(st->conn);
}

/* tiny-window: SETTINGS_INITIAL_WINDOW_SIZE = 1 for the rest of this
 * connection (see tri_server.h). */
static void tiny_window(srv_conn *c) {
  if (c->tiny) return;
  nghttp2_settings_entry iv = {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1};
  if (nghttp2_submit_settings(c->sess, NGHTTP2_FLAG_NONE, &iv, 1) == 0)
    c->tiny = 1;
  srv_mark_dirty(c);
}

int srv_misbehave(srv_stream *st) {
  switch (st->mb) {
  case MB_NEVER: /* no answer, no deadline: only the client ends it */
    st->never = 1;
    st->deadline = 0;
    srv_timer_remove(st->conn->w, st);
    return 1;
  case MB_GOAWAY:
    misbehave_goaway(st);
    return 1;
  case MB_BAD_HPACK:
    misbehave_hpack(st);
    return 1;
  case MB_WRONG_CT:
    misbehave_content_type(st);
    return 1;
  case MB_TINY_WINDOW:
    tiny_window(st->conn);
    return 0;
  case MB_BAD_STATUS:
    if (st->wire == WIRE_TRIPLE) {
      srv_fail(st, TRI_CODE_INVALID_ARGUMENT,
           "x-misbehave: bad-grpc-status is a gRPC-wire mode");
      return 1;
    }
    return 0;
  default: /* rst-mid-response acts on the answer */
    return 0;
  }
}

uint8_t srv_misbehave_mode(const uint8_t *v, size_t vl) {
  for (int i = 1; i < (int)(sizeof(MISBEHAVE) / sizeof(MISBEHAVE[0])); i++)
    if (srv_token_is(v, vl, MISBEHAVE[i])) return (uint8_t)i;
  return MB_NONE;
}
