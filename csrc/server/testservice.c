/*
 * testservice.c: grpc.testing.TestService (see testservice.h).
 */
#include "server/testservice.h"

#include <stdio.h>
#include <string.h>

#include "server/respond.h"
#include "server/runtime.h"
#include "tri_clock.h"
#include "tri_error.h"
#include "tri_wire.h"

/* Answers come from the job queue (StreamingOutputCall and the duplexes). */
static int job_method(int m) { return m == T_SOUT || m == T_FULL || m == T_HALF; }

/* Whether a TestService response is compressed: what the request asked
 * (response_compressed / ResponseParameters.compressed; -1: absent) when
 * the client accepts gzip, else the default rule. */
static int ts_gz(const srv_stream *st, int asked) {
  if (asked < 0) return st->gz_out;
  return asked && st->accept_gz;
}

/* {payload: `size` zero bytes}: SimpleResponse / StreamingOutputCallResponse.
 * NULL when the call failed (bad size, out of memory). */
static tri_buf *ts_payload(srv_stream *st, int64_t size, int32_t type) {
  int64_t max = st->conn->w->srv->opts.max_message;
  if (size < 0) {
    srv_fail(st, TRI_CODE_INVALID_ARGUMENT, "negative response size %lld",
         (long long)size);
    return NULL;
  }
  if (size > max) {
    srv_fail(st, TRI_CODE_RESOURCE_EXHAUSTED,
         "response size %lld is larger than the limit of %lld",
         (long long)size, (long long)max);
    return NULL;
  }
  size_t n = tri_ts_payload_msg_len((uint32_t)size, type);
  tri_buf *b = srv_msg_buf(st, n);
  if (!b) return NULL;
  tri_ts_payload_msg_put(tri_buf_begin(b), (uint32_t)size, type);
  return srv_msg_done(st, b, n);
}

/* Ends a unary TestService call with `m` (taken; NULL: no message, or an
 * empty body on the Triple wire), compressed when `gz`. */
static void ts_answer(srv_stream *st, tri_buf *m, int gz) {
  if (st->wire == WIRE_TRIPLE) {
    st->gz_out = gz ? 1 : 0;
    srv_triple_respond(st, TRI_CODE_OK, m);
    return;
  }
  if (m) srv_grpc_emit(st, m, gz);
  srv_grpc_finish(st, TRI_CODE_OK, NULL, 0);
}

/* EchoStatus code as a status: 1..16, anything else UNKNOWN. */
static int32_t echo_code(int32_t code) {
  return code >= 1 && code <= 16 ? code : TRI_CODE_UNKNOWN;
}

/* response_status with a nonzero code ends the call with it: returns 1. */
static int ts_status(srv_stream *st, const tri_ts_request *r) {
  if (!r->has_status || r->status_code == 0) return 0;
  srv_set_msg(st, r->status_msg, r->status_msg_len);
  srv_fail(st, echo_code(r->status_code), NULL);
  return 1;
}

/* expect_compressed that does not match the request: INVALID_ARGUMENT. */
static int ts_expect(srv_stream *st, int expect, int compressed) {
  if (expect < 0 || expect == (compressed != 0)) return 0;
  srv_fail(st, TRI_CODE_INVALID_ARGUMENT,
       expect ? "expect_compressed: the request message was not compressed"
              : "expect_compressed false: the request message was compressed");
  return 1;
}

/* An unparsable request: INTERNAL on the gRPC wire (as gRPC servers say),
 * INVALID_ARGUMENT on the Triple wire (as dubbo-go and Connect say). */
static void ts_unparsable(srv_stream *st, const char *type) {
  srv_fail(st, st->wire == WIRE_TRIPLE ? TRI_CODE_INVALID_ARGUMENT
                                   : TRI_CODE_INTERNAL,
       "cannot parse the request as grpc.testing.%s", type);
}

/* UnaryCall: SimpleRequest in p[0..n) (gz: it arrived compressed). */
static void ts_unary(srv_stream *st, const uint8_t *p, size_t n, int gz) {
  tri_ts_request r;
  if (tri_ts_decode_simple(p, n, &r)) {
    ts_unparsable(st, "SimpleRequest");
    return;
  }
  if (ts_expect(st, r.expect_compressed, gz) || ts_status(st, &r)) return;
  tri_buf *m = ts_payload(st, r.response_size, r.response_type);
  if (m) ts_answer(st, m, ts_gz(st, r.response_compressed));
}

/* A JSON body in a new buffer. */
static tri_buf *ts_json_text(srv_stream *st, const char *text) {
  size_t n = strlen(text);
  tri_buf *b = srv_msg_buf(st, n);
  if (!b) return NULL;
  memcpy(tri_buf_begin(b), text, n);
  return srv_msg_done(st, b, n);
}

/* UnaryCall with the JSON codec: {"payload":{"body":"<base64 zeros>"}}. */
static void ts_unary_json(srv_stream *st, const uint8_t *p, size_t n, int gz) {
  tri_ts_request r;
  if (tri_ts_decode_simple_json(p, n, &r)) {
    ts_unparsable(st, "SimpleRequest (JSON)");
    return;
  }
  if (ts_expect(st, r.expect_compressed, gz) || ts_status(st, &r)) return;
  int64_t max = st->conn->w->srv->opts.max_message;
  if (r.response_size < 0 || r.response_size > max) {
    srv_fail(st, r.response_size < 0 ? TRI_CODE_INVALID_ARGUMENT
                                 : TRI_CODE_RESOURCE_EXHAUSTED,
         "bad response size %d", (int)r.response_size);
    return;
  }
  size_t size = (size_t)r.response_size, b64 = (size + 2) / 3 * 4;
  tri_buf *b = srv_msg_buf(st, b64 + 64);
  if (!b) return;
  char *o = (char *)tri_buf_begin(b);
  size_t k = 0;
  if (r.response_type)
    k = (size_t)sprintf(o, "{\"payload\":{\"type\":%d", (int)r.response_type);
  else
    k = (size_t)sprintf(o, "{\"payload\":{");
  if (size) {
    k += (size_t)sprintf(o + k, "%s\"body\":\"", r.response_type ? "," : "");
    for (size_t i = 0; i < size / 3; i++, k += 4) memcpy(o + k, "AAAA", 4);
    if (size % 3 == 1) memcpy(o + k, "AA==", 4), k += 4;
    if (size % 3 == 2) memcpy(o + k, "AAA=", 4), k += 4;
    o[k++] = '"';
  }
  memcpy(o + k, "}}", 2);
  k += 2;
  ts_answer(st, srv_msg_done(st, b, k), ts_gz(st, r.response_compressed));
}

/* Appends a job.  Returns -1 (the call failed) when out of memory. */
static int ts_push_job(srv_stream *st, const srv_job *j) {
  if (st->jobs_n == st->jobs_cap) {
    if (st->jobs_head) { /* reuse the room of done jobs */
      st->jobs_n -= st->jobs_head;
      memmove(st->jobs, st->jobs + st->jobs_head, st->jobs_n * sizeof(*j));
      st->jobs_head = 0;
    } else {
      uint32_t cap = st->jobs_cap ? 2 * st->jobs_cap : 8;
      srv_job *a = tri_mem_alloc(stats_of(st->conn), cap * sizeof(*a));
      if (!a) {
        srv_fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
        return -1;
      }
      if (st->jobs_n) memcpy(a, st->jobs, st->jobs_n * sizeof(*a));
      tri_mem_free(st->jobs);
      st->jobs = a;
      st->jobs_cap = cap;
    }
  }
  st->jobs[st->jobs_n++] = *j;
  return 0;
}

/* A StreamingOutputCallRequest (StreamingOutputCall, FullDuplexCall,
 * HalfDuplexCall): queues its answers, or the status it asks for. */
static void ts_output_request(srv_stream *st, const uint8_t *p, size_t n) {
  if (st->finished || st->status_queued) return;
  tri_ts_request r;
  if (tri_ts_decode_output(p, n, &r)) {
    ts_unparsable(st, "StreamingOutputCallRequest");
    return;
  }
  if (r.has_status && r.status_code != 0) {
    srv_set_msg(st, r.status_msg, r.status_msg_len);
    srv_job j = {.kind = JOB_STATUS, .code = echo_code(r.status_code)};
    if (ts_push_job(st, &j) == 0) st->status_queued = 1;
    return;
  }
  int64_t max = st->conn->w->srv->opts.max_message;
  size_t off = 0;
  tri_ts_params prm;
  int rv;
  while ((rv = tri_ts_next_params(p, n, &off, &prm)) == 1) {
    if (prm.size < 0 || prm.size > max) {
      srv_fail(st, prm.size < 0 ? TRI_CODE_INVALID_ARGUMENT
                            : TRI_CODE_RESOURCE_EXHAUSTED,
           "bad response size %d (limit %lld)", (int)prm.size, (long long)max);
      return;
    }
    srv_job j = {.kind = JOB_MSG,
                 .size = (uint32_t)prm.size,
                 .interval_us = prm.interval_us > 0 ? prm.interval_us : 0,
                 .type = r.response_type,
                 .gz = (int8_t)prm.compressed};
    if (ts_push_job(st, &j)) return;
  }
  if (rv < 0) ts_unparsable(st, "StreamingOutputCallRequest");
}

/* A StreamingInputCallRequest: adds its payload to the total. */
static void ts_input_message(srv_stream *st, const uint8_t *p, size_t n,
                             int gz) {
  tri_ts_request r;
  if (tri_ts_decode_input(p, n, &r)) {
    ts_unparsable(st, "StreamingInputCallRequest");
    return;
  }
  if (ts_expect(st, r.expect_compressed, gz)) return;
  st->agg += (int64_t)r.payload_len;
  if (st->agg > INT32_MAX) st->agg = INT32_MAX;
}

void srv_ts_pump(srv_stream *st) {
  srv_worker *w = st->conn->w;
  while (!st->finished && st->go && job_method(st->method) &&
         !(st->method == T_HALF && !st->req_ended)) {
    if (st->jobs_head == st->jobs_n) {
      st->jobs_head = st->jobs_n = 0;
      if (st->req_ended) srv_grpc_finish(st, TRI_CODE_OK, NULL, 0);
      break;
    }
    if (st->q_bytes >= STREAM_OUT_LIMIT) {
      if (!st->pump_blocked) {
        st->pump_blocked = 1;
        st->conn->n_blocked++;
      }
      break;
    }
    srv_job j = st->jobs[st->jobs_head];
    if (j.kind == JOB_MSG && j.interval_us > 0) {
      int64_t now = tri__now();
      if (!st->job_due) st->job_due = now + (int64_t)j.interval_us * 1000;
      if (st->job_due > now) break; /* run_timers calls again */
    }
    st->job_due = 0;
    st->jobs_head++;
    if (j.kind == JOB_STATUS) {
      srv_fail(st, j.code, NULL);
      break;
    }
    tri_buf *m = ts_payload(st, j.size, j.type);
    if (!m) break;
    srv_grpc_emit(st, m, ts_gz(st, j.gz));
  }
  if (!st->finished && srv_timer_update(w, st))
    srv_fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
}

void srv_ts_complete(srv_stream *st, const uint8_t *p, size_t n, int gz) {
  switch (st->method) {
  case T_EMPTY:
    if (st->wire == WIRE_GRPC) ts_answer(st, srv_empty_message(st), st->gz_out);
    else if (st->json) ts_answer(st, ts_json_text(st, "{}"), st->gz_out);
    else ts_answer(st, NULL, 0);
    break;
  case T_UNARY:
    if (st->json) ts_unary_json(st, p, n, gz);
    else ts_unary(st, p, n, gz);
    break;
  case T_SOUT:
    ts_output_request(st, p, n);
    srv_ts_pump(st);
    break;
  case T_SIN: {
    uint8_t out[16];
    size_t k = tri_ts_aggregated_put(out, (int32_t)st->agg);
    tri_buf *m = srv_msg_buf(st, k);
    if (!m) break;
    memcpy(tri_buf_begin(m), out, k);
    ts_answer(st, srv_msg_done(st, m, k), st->gz_out);
    break;
  }
  case T_FULL:
  case T_HALF:
    srv_ts_pump(st);
    break;
  }
}

void srv_ts_message(srv_stream *st, tri_buf *m, int gz) {
  const uint8_t *p = tri_buf_begin(m) + TRI_FRAME_PREFIX;
  size_t n = m->len - TRI_FRAME_PREFIX;
  if (st->method == T_SIN) ts_input_message(st, p, n, gz);
  else ts_output_request(st, p, n);
  tri_pool_put(pool_of(st->conn), m);
  srv_ts_pump(st);
}
