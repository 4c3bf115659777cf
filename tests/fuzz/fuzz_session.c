/* fuzz_session.c: the response path of a connection fed raw server bytes
 * (after an empty SETTINGS): three calls are open (unary on stream 1,
 * server streaming on 3, bidi on 5); whatever the bytes, every call must
 * end with a status and nothing may leak or crash.  Each input runs four
 * times, on the gRPC and the Triple wire, with the unary call keeping its
 * response and with TRI_CALL_DISCARD_BODY: on each wire the unary call must
 * end with the same status either way (every check holds without the copy),
 * and when OK with the same response length.  A fifth and sixth run per wire
 * leave the HTTP/2 message rules to nghttp2 (tri__conn_nghttp2_rules) instead
 * of the client's own (tri_resp_check): every call must end with the same
 * status and message as with ours. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tri_call.h"
#include "tri_channel.h"
#include "tri_conn.h"
#include "tri_int.h"

static tri_call *start(tri_channel *ch, tri_conn *conn, int flags) {
  tri_call *c;
  if (tri_call_new(ch, &c, "/f/M", 4, -1, flags)) abort();
  if (!(flags & TRI_CALL_CLIENT_STREAMING))
    tri_call_set_request_borrowed(c, (const uint8_t *)"req", 3);
  c->started = 1;
  c->conn = conn;
  tri__conn_ref(conn);
  atomic_fetch_add(&c->refs, 1);
  tri__conn_push(conn, &c->submit_op.node);
  tri__conn_run_ops(conn);
  return c;
}

/* How a case ended: each call's status and message, and the unary call's
 * response length (-1: none). */
typedef struct {
  int code[3];
  char msg[3][600];
  long long resp_len;
} outcome;

/* Feeds the input to a fresh connection (by_nghttp2: nghttp2 applies the
 * HTTP/2 message rules). */
static void run_case(const uint8_t *data, size_t size, int wire, int unary_flags,
                     int by_nghttp2, outcome *out) {
  tri_channel_opts o;
  tri_channel_opts_init(&o);
  o.host = "127.0.0.1";
  o.port = "1";
  o.wire = wire;
  o.max_recv_bytes = 1 << 16;
  tri_channel *ch;
  tri_conn *conn;
  tri__conn_nghttp2_rules = by_nghttp2;
  if (tri_channel_new(&ch, &o) || tri__conn_new_detached(&conn, ch)) abort();
  tri__conn_nghttp2_rules = 0;
  tri_call *calls[3] = {start(ch, conn, unary_flags),
                        start(ch, conn, TRI_CALL_SERVER_STREAMING),
                        start(ch, conn, TRI_CALL_CLIENT_STREAMING | TRI_CALL_SERVER_STREAMING)};
  static const uint8_t settings[9] = {0, 0, 0, 4, 0, 0, 0, 0, 0};
  tri__conn_feed(conn, settings, sizeof(settings));
  /* Two pieces, to exercise state carried across reads. */
  size_t half = size / 2;
  if (tri__conn_feed(conn, data, half) == 0) tri__conn_feed(conn, data + half, size - half);
  for (int i = 0; i < 3; i++) {
    tri_buf *m;
    if (calls[i]->flags & TRI_CALL_SERVER_STREAMING)
      while (tri_call_read(calls[i], 0, &m) == 1) tri_call_msg_release(calls[i], m);
  }
  tri__conn_kill(conn, 1, "fuzz case over");
  for (int i = 0; i < 3; i++) {
    if (!tri_call_done(calls[i])) abort(); /* every call ends */
    const char *m;
    size_t mn;
    tri_call_message(calls[i], &m, &mn);
    out->code[i] = tri_call_code(calls[i]);
    snprintf(out->msg[i], sizeof(out->msg[i]), "%.*s", (int)mn, m);
  }
  const uint8_t *p;
  size_t n, kept;
  tri_call_response(calls[0], &p, &kept);
  int got = tri_call_response_size(calls[0], &n);
  if ((unary_flags & TRI_CALL_DISCARD_BODY) && p) abort(); /* nothing kept */
  if (!(unary_flags & TRI_CALL_DISCARD_BODY) && got && (!p || kept != n))
    abort();
  out->resp_len = got ? (long long)n : -1;
  for (int i = 0; i < 3; i++) tri_call_release(calls[i]);
  tri__conn_unref(conn);
  tri__conn_free(conn);
  tri_channel_del(ch);
}

/* The one difference allowed: a malformed response that ended its stream
 * (END_STREAM).  nghttp2 keeps such a stream half-closed until our
 * RST_STREAM goes out, and a frame on it meanwhile is a connection error
 * (STREAM_CLOSED); with our rules the stream is closed at once, and a later
 * frame on it is ignored, as on any closed stream (its header block is
 * still decoded: a bad one is a connection error of its own).  The call fails
 * either way. */
static int allowed_difference(const outcome *ours, const outcome *theirs) {
  return ours->code[0] == theirs->code[0] &&
         strstr(theirs->msg[0], "(STREAM_CLOSED): it closed the connection");
}

static int same(const outcome *a, const outcome *b) {
  for (int i = 0; i < 3; i++)
    if (a->code[i] != b->code[i] || strcmp(a->msg[i], b->msg[i])) return 0;
  return a->resp_len == b->resp_len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const int wires[2] = {TRI_WIRE_GRPC, TRI_WIRE_TRIPLE};
  for (int w = 0; w < 2; w++) {
    for (int discard = 0; discard < 2; discard++) {
      outcome ours, theirs;
      int flags = discard ? TRI_CALL_DISCARD_BODY : 0;
      run_case(data, size, wires[w], flags, 0, &ours);
      run_case(data, size, wires[w], flags, 1, &theirs);
      if (!same(&ours, &theirs) && !allowed_difference(&ours, &theirs)) {
        for (int i = 0; i < 3; i++)
          fprintf(stderr, "call %d: ours %d \"%s\", nghttp2's %d \"%s\"\n", i,
                  ours.code[i], ours.msg[i], theirs.code[i], theirs.msg[i]);
        abort();
      }
      static outcome kept; /* the unary call: the same with or without the copy */
      if (!discard) kept = ours;
      else if (ours.code[0] != kept.code[0] || ours.resp_len != kept.resp_len) {
        fprintf(stderr,
                "wire %d unary call: kept %d \"%s\" (%lld bytes), "
                "discarded %d \"%s\" (%lld bytes)\n",
                wires[w], kept.code[0], kept.msg[0], kept.resp_len, ours.code[0],
                ours.msg[0], ours.resp_len);
        abort();
      }
    }
  }
  return 0;
}
