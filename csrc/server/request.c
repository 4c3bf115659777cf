/*
 * request.c: reading a call (see request.h).
 */
#include "server/request.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "server/echo.h"
#include "server/misbehave.h"
#include "server/respond.h"
#include "server/runtime.h"
#include "server/testservice.h"
#include "tri_clock.h"
#include "tri_error.h"
#include "tri_wire.h"

#define MAX_DELAY_MS 3600000        /* as the test peers */

static const struct {
  const char *name;
  uint8_t method;
} ROUTES[] = {
    {"/benchmark.BenchmarkService/UnaryCall", M_UNARY},
    {"/benchmark.BenchmarkService/StreamCall", M_STREAM},
    {"/grpc.testing.TestService/EmptyCall", T_EMPTY},
    {"/grpc.testing.TestService/UnaryCall", T_UNARY},
    {"/grpc.testing.TestService/StreamingOutputCall", T_SOUT},
    {"/grpc.testing.TestService/StreamingInputCall", T_SIN},
    {"/grpc.testing.TestService/FullDuplexCall", T_FULL},
    {"/grpc.testing.TestService/HalfDuplexCall", T_HALF},
    {"/grpc.testing.TestService/UnimplementedCall", T_UNIMPL},
};

/* The request is one message (unary or server streaming). */
static int single_request(int m) {
  return m == M_UNARY || m == T_EMPTY || m == T_UNARY || m == T_SOUT ||
         m == T_UNIMPL;
}

/* The response headers go out at once (streaming calls). */
static int early_headers(int m) {
  return m == M_STREAM || m == T_SOUT || m == T_SIN || m == T_FULL ||
         m == T_HALF;
}

/* Served on the Triple (unary) wire too. */
static int triple_ok(int m) {
  return m == M_UNARY || m == T_EMPTY || m == T_UNARY || m == T_UNIMPL;
}

/* Parses a decimal 0..max with surrounding blanks.  Returns 0 or -1. */
static int parse_uint(const uint8_t *v, size_t n, int64_t max, int64_t *out) {
  while (n && (v[0] == ' ' || v[0] == '\t')) v++, n--;
  while (n && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
  if (n == 0 || n > 19) return -1;
  int64_t x = 0;
  for (size_t i = 0; i < n; i++) {
    if (v[i] < '0' || v[i] > '9') return -1;
    x = x * 10 + (v[i] - '0');
    if (x > max) return -1;
  }
  *out = x;
  return 0;
}

static int prefix_is(const uint8_t *v, size_t n, const char *lit) {
  size_t k = strlen(lit);
  return n >= k && memcmp(v, lit, k) == 0;
}

int srv_token_is(const uint8_t *v, size_t n, const char *lit) {
  size_t k = strlen(lit);
  if (n != k) return 0;
  for (size_t i = 0; i < n; i++) {
    uint8_t ch = v[i];
    if (ch >= 'A' && ch <= 'Z') ch = (uint8_t)(ch + 32);
    if (ch != (uint8_t)lit[i]) return 0;
  }
  return 1;
}

/* A grpc-encoding / content-encoding value: ENC_IDENTITY, ENC_GZIP or
 * ENC_OTHER (blanks around it are ignored; case-insensitive). */
static uint8_t encoding_of(const uint8_t *v, size_t n) {
  while (n && (v[0] == ' ' || v[0] == '\t')) v++, n--;
  while (n && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
  if (srv_token_is(v, n, "identity")) return ENC_IDENTITY;
  if (srv_token_is(v, n, "gzip")) return ENC_GZIP;
  return ENC_OTHER;
}

/* Nonzero when a (grpc-)accept-encoding list names gzip: tokens split on
 * commas and blanks, parameters (";q=...") ignored. */
static int lists_gzip(const uint8_t *v, size_t n) {
  size_t i = 0;
  while (i < n) {
    while (i < n && (v[i] == ',' || v[i] == ' ' || v[i] == '\t')) i++;
    size_t b = i;
    while (i < n && v[i] != ',' && v[i] != ' ' && v[i] != '\t' && v[i] != ';')
      i++;
    if (srv_token_is(v + b, i - b, "gzip")) return 1;
    while (i < n && v[i] != ',') i++; /* parameters */
  }
  return 0;
}

__attribute__((format(printf, 3, 4))) static void header_error(
                                                               srv_stream *st, int code, const char *fmt, ...) {
  if (st->bad_code) return; /* the first problem is the one reported */
  st->bad_code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st->bad_msg, sizeof(st->bad_msg), fmt, ap);
  va_end(ap);
}

static void md_add(srv_stream *st, const uint8_t *k, size_t kl,
                   const uint8_t *v, size_t vl, int where) {
  tri_pool *pool = pool_of(st->conn);
  if (!st->md && !(st->md = tri_pool_get(pool, 9 + kl + vl, 0))) goto nomem;
  uint32_t l32[2] = {(uint32_t)kl, (uint32_t)vl};
  if (tri_buf_reserve(pool, &st->md, 9 + kl + vl)) goto nomem;
  uint8_t *p = tri_buf_begin(st->md) + st->md->len;
  memcpy(p, l32, 8);
  p[8] = (uint8_t)where;
  memcpy(p + 9, k, kl);
  memcpy(p + 9 + kl, v, vl);
  st->md->len += 9 + kl + vl;
  st->echo_n++;
  return;
nomem:
  header_error(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory for metadata");
}

static void set_deadline(srv_stream *st, int64_t ns) {
  if (ns == INT64_MAX) return; /* "no timeout" */
  int64_t now = tri__now();
  int64_t d = ns > INT64_MAX - now ? INT64_MAX : now + ns;
  if (!st->deadline || d < st->deadline) st->deadline = d;
}

/* The method of a :path: exact, or with the method's first letter
 * lower-cased (dubbo-go's second lookup).  M_UNKNOWN when none. */
static uint8_t route(const uint8_t *v, size_t vl) {
  for (size_t i = 0; i < sizeof(ROUTES) / sizeof(ROUTES[0]); i++) {
    const char *r = ROUTES[i].name;
    size_t rl = strlen(r);
    if (vl != rl) continue;
    const char *slash = strrchr(r, '/');
    size_t at = (size_t)(slash - r) + 1; /* the method's first letter */
    if (memcmp(v, r, at) || memcmp(v + at + 1, r + at + 1, rl - at - 1))
      continue;
    if (v[at] == (uint8_t)r[at] || v[at] == (uint8_t)(r[at] + 32))
      return ROUTES[i].method;
  }
  return M_UNKNOWN;
}

void srv_req_header(srv_stream *st, const uint8_t *name, size_t nl,
                    const uint8_t *v, size_t vl) {
#define IS(lit) (nl == sizeof(lit) - 1 && memcmp(name, lit, nl) == 0)
  int64_t x;
  /* Headers over our SETTINGS_MAX_HEADER_LIST_SIZE (a client that ignored
   * it) fail this stream only: RESOURCE_EXHAUSTED once the block has ended.
   * nghttp2 still decodes the rest of the block (the connection's HPACK
   * state needs it); the pseudo-headers and content-type are still read, so
   * the answer goes out on the request's wire, and nothing else is kept. */
  uint64_t total = (uint64_t)st->hdr_bytes + nl + vl + 32;
  st->hdr_bytes = total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
  uint32_t limit = st->conn->w->srv->opts.max_metadata_size;
  if (st->hdr_bytes > limit) {
    header_error(st, TRI_CODE_RESOURCE_EXHAUSTED,
                 "request metadata over the server's limit of %u bytes "
                 "(SETTINGS_MAX_HEADER_LIST_SIZE)",
                 limit);
    if (!(nl && name[0] == ':') && !IS("content-type")) return;
  }
  if (nl && name[0] == ':') {
    if (IS(":method")) {
      st->is_post = vl == 4 && memcmp(v, "POST", 4) == 0;
    } else if (IS(":path")) {
      size_t k = vl < sizeof(st->path) - 1 ? vl : sizeof(st->path) - 1;
      memcpy(st->path, v, k);
      st->path[k] = 0;
      st->path_len = k;
      st->method = route(v, vl);
    }
    return;
  }
  if (IS("content-type")) {
    st->wire = WIRE_NONE;
    if (vl >= sizeof(st->ct)) return;
    memcpy(st->ct, v, vl);
    st->ct_len = vl;
    if (prefix_is(v, vl, "application/grpc") &&
        (vl == 16 || v[16] == '+' || v[16] == ';'))
      st->wire = WIRE_GRPC;
    else if (prefix_is(v, vl, "application/proto") &&
             (vl == 17 || v[17] == ';'))
      st->wire = WIRE_TRIPLE;
    else if (prefix_is(v, vl, "application/json") &&
             (vl == 16 || v[16] == ';'))
      st->wire = WIRE_TRIPLE, st->json = 1;
  } else if (IS("content-length")) {
    if (parse_uint(v, vl, INT64_MAX / 2, &x) == 0) st->clen = x;
  } else if (IS("grpc-timeout")) {
    if (tri_grpc_timeout_decode((const char *)v, vl, &x))
      header_error(st, TRI_CODE_INVALID_ARGUMENT, "malformed grpc-timeout %.*s",
                   (int)(vl < 32 ? vl : 32), (const char *)v);
    else
      set_deadline(st, x);
  } else if (IS("triple-timeout-ms")) {
    if (vl > 10 || parse_uint(v, vl, 9999999999LL, &x))
      header_error(st, TRI_CODE_INVALID_ARGUMENT,
                   "malformed triple-timeout-ms %.*s", (int)(vl < 32 ? vl : 32),
                   (const char *)v);
    else
      set_deadline(st, x * 1000000LL);
  } else if (IS("triple-protocol-version")) {
    if (!(vl == 5 && memcmp(v, "0.1.0", 5) == 0))
      header_error(st, TRI_CODE_INVALID_ARGUMENT,
                   "unsupported triple-protocol-version");
  } else if (IS("grpc-encoding")) {
    st->grpc_enc = encoding_of(v, vl);
  } else if (IS("content-encoding")) {
    st->content_enc = encoding_of(v, vl);
  } else if (IS("grpc-accept-encoding")) {
    st->grpc_accept_gz |= lists_gzip(v, vl);
  } else if (IS("accept-encoding")) {
    st->http_accept_gz |= lists_gzip(v, vl);
  } else if (IS("x-compress-response")) {
    st->x_compress = parse_uint(v, vl, INT32_MAX, &x) == 0 && x != 0;
  } else if (nl > 7 && memcmp(name, "x-echo-", 7) == 0) {
    md_add(st, name, nl, v, vl, MD_BOTH);
  } else if (IS("x-grpc-test-echo-initial")) {
    md_add(st, name, nl, v, vl, MD_INITIAL);
  } else if (IS("x-grpc-test-echo-trailing-bin")) {
    md_add(st, name, nl, v, vl, MD_TRAILING);
  } else if (IS("x-status")) {
    if (parse_uint(v, vl, 16, &x))
      header_error(st, TRI_CODE_INVALID_ARGUMENT, "bad x-status %.*s",
                   (int)(vl < 32 ? vl : 32), (const char *)v);
    else
      st->ctl_status = (int)x;
  } else if (IS("x-message")) {
    if (!st->msg_bin) srv_set_msg(st, v, vl);
  } else if (IS("x-message-bin")) {
    uint8_t tmp[MAX_STATUS_MSG + 8];
    size_t in = vl > MAX_STATUS_MSG / 3 * 4 ? MAX_STATUS_MSG / 3 * 4 : vl;
    long n = tri_base64_decode((const char *)v, in, tmp);
    if (n < 0) {
      header_error(st, TRI_CODE_INVALID_ARGUMENT, "bad x-message-bin");
    } else {
      srv_set_msg(st, tmp, (size_t)n);
      st->msg_bin = 1;
    }
  } else if (IS("x-delay-ms")) {
    if (parse_uint(v, vl, MAX_DELAY_MS, &x))
      header_error(st, TRI_CODE_INVALID_ARGUMENT, "bad x-delay-ms %.*s",
                   (int)(vl < 32 ? vl : 32), (const char *)v);
    else
      st->delay_ms = x;
  } else if (IS("x-response-size")) {
    if (parse_uint(v, vl, st->conn->w->srv->opts.max_message, &x))
      header_error(st, TRI_CODE_INVALID_ARGUMENT, "bad x-response-size %.*s",
                   (int)(vl < 32 ? vl : 32), (const char *)v);
    else
      st->resp_size = x;
  } else if (IS("x-misbehave")) {
    st->mb = srv_misbehave_mode(v, vl);
    if (st->mb == MB_NONE)
      header_error(st, TRI_CODE_INVALID_ARGUMENT, "unknown x-misbehave %.*s",
                   (int)(vl < 32 ? vl : 32), (const char *)v);
  } else if (IS("x-reset")) {
    st->reset = parse_uint(v, vl, INT32_MAX, &x) == 0 && x != 0;
  }
#undef IS
}

static tri_buf *inflate_to(srv_stream *st, const uint8_t *in, size_t n,
                           size_t headroom, const char *what);

/* The request is complete and the delay is over: answer it. */
static void complete_request(srv_stream *st) {
  if (st->finished) return;
  tri_pool *pool = pool_of(st->conn);
  if (st->wire == WIRE_GRPC && tri_frame_decoder_partial(&st->dec)) {
    srv_fail(st, TRI_CODE_INTERNAL, "malformed request: truncated message");
    return;
  }
  tri_buf *body = st->body;
  st->body = NULL;
  const uint8_t *p = NULL;
  size_t n = 0;
  int gz;
  if (st->wire == WIRE_TRIPLE) {
    if (st->req_gz && body && body->len) { /* content-encoding: gzip */
      tri_buf *plain = inflate_to(st, tri_buf_begin(body), body->len, 0, "body");
      tri_pool_put(pool, body);
      if (!(body = plain)) return;
    }
    gz = st->req_gz;
    if (body) p = tri_buf_begin(body), n = body->len;
  } else {
    if (single_request(st->method) && !body) {
      srv_fail(st, TRI_CODE_INTERNAL, "%s request has no message",
           st->method == M_UNARY ? "UnaryCall" : "the");
      return;
    }
    gz = st->body_gz;
    if (body) p = tri_buf_begin(body) + TRI_FRAME_PREFIX, n = body->len - TRI_FRAME_PREFIX;
  }
  if (st->method == M_UNARY || st->method == M_STREAM) {
    srv_echo_complete(st, body);
    return;
  }
  srv_ts_complete(st, p, n, gz);
  tri_pool_put(pool, body);
}

void srv_stream_go(srv_stream *st) {
  st->go = 1;
  if (st->finished) return;
  if (st->reset) {
    srv_rst(st, NGHTTP2_CANCEL);
    return;
  }
  if (st->ctl_status > 0) {
    srv_fail(st, st->ctl_status, NULL);
    return;
  }
  if (st->ctl_status == 0) {
    if (st->wire == WIRE_TRIPLE) {
      srv_triple_respond(st, TRI_CODE_OK, NULL);
      return;
    }
    if (st->method == M_UNARY) {
      tri_buf *b = srv_empty_message(st);
      if (b) srv_grpc_emit(st, b, st->gz_out);
    }
    srv_grpc_finish(st, TRI_CODE_OK, NULL, 0);
    return;
  }
  /* A stream's headers go now: a client may wait for them before sending. */
  if (st->wire == WIRE_GRPC && early_headers(st->method)) srv_grpc_headers(st, 0);
  if (st->req_ended) complete_request(st);
  else srv_ts_pump(st); /* FullDuplexCall requests that came during the delay */
}

void srv_stream_deadline(srv_stream *st) {
  if (st->finished) return;
  if (st->wire == WIRE_TRIPLE) {
    srv_set_msg(st, "Deadline Exceeded", 17);
    srv_triple_respond(st, TRI_CODE_DEADLINE_EXCEEDED, NULL);
    return;
  }
  srv_q_drop_unstarted(st);
  srv_grpc_finish(st, TRI_CODE_DEADLINE_EXCEEDED, "Deadline Exceeded", 17);
}

void srv_headers_done(srv_stream *st) {
  if (!st->is_post) {
    srv_http_reply(st, "405");
    return;
  }
  if (st->wire == WIRE_NONE) {
    srv_http_reply(st, "415");
    return;
  }
  if (st->bad_code) {
    srv_fail(st, st->bad_code, "%s", st->bad_msg);
    return;
  }
  if (st->mb && srv_misbehave(st)) return;
  if (st->method == M_UNKNOWN) {
    srv_fail(st, TRI_CODE_UNIMPLEMENTED, "unknown method %s", st->path);
    return;
  }
  if (st->method == T_UNIMPL) {
    srv_fail(st, TRI_CODE_UNIMPLEMENTED, "%s is not implemented", st->path);
    return;
  }
  if (st->wire == WIRE_TRIPLE && !triple_ok(st->method)) {
    srv_fail(st, TRI_CODE_UNIMPLEMENTED, "%s is served on the gRPC wire only",
         st->path);
    return;
  }
  /* Compression: gzip or identity.  The default response rule: compress
   * when the client accepts gzip and compressed its request or asked with
   * x-compress-response: 1. */
  uint8_t enc = st->wire == WIRE_GRPC ? st->grpc_enc : st->content_enc;
  if (enc == ENC_OTHER) {
    srv_fail(st, TRI_CODE_UNIMPLEMENTED,
         "unknown compression: supported encodings are gzip, identity");
    return;
  }
  st->req_gz = enc == ENC_GZIP;
  st->accept_gz =
      st->wire == WIRE_GRPC ? st->grpc_accept_gz : st->http_accept_gz;
  st->gz_out = st->accept_gz && (st->req_gz || st->x_compress);
  /* TestService messages choose one by one: grpc-encoding: gzip goes in
   * the headers whenever the client accepts it. */
  st->gz_hdr = st->wire == WIRE_GRPC &&
               (st->gz_out || (st->method >= T_EMPTY && st->accept_gz));
  if (st->delay_ms > 0) st->hold_until = tri__now() + st->delay_ms * 1000000LL;
  if (srv_timer_update(st->conn->w, st)) {
    srv_fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
    return;
  }
  if (!st->hold_until) srv_stream_go(st);
}

void srv_request_end(srv_stream *st) {
  st->req_ended = 1;
  if (st->go) complete_request(st);
}

/* Checks a request message's envelope flags.  0x01 (compressed) needs
 * grpc-encoding: gzip; any other flag is malformed.  Returns 1 when the
 * message may be read. */
static int check_flags(srv_stream *st, uint8_t flags) {
  if (flags & ~TRI_FRAME_FLAG_COMPRESSED) {
    srv_fail(st, TRI_CODE_INTERNAL, "malformed message: flags 0x%02x", flags);
    return 0;
  }
  st->cur_gz = (flags & TRI_FRAME_FLAG_COMPRESSED) != 0;
  if (st->cur_gz && !st->req_gz) {
    srv_fail(st, TRI_CODE_INTERNAL,
         "compressed message without grpc-encoding: gzip");
    return 0;
  }
  return 1;
}

/* Ends the call after tri_gzip_decompress failed with `rv`. */
static void inflate_failed(srv_stream *st, int rv, const char *what) {
  if (rv == TRI_ERR_TOO_LARGE)
    srv_fail(st, TRI_CODE_RESOURCE_EXHAUSTED,
         "decompressed %s is larger than the limit of %lld", what,
         (long long)st->conn->w->srv->opts.max_message);
  else if (rv == TRI_ERR_FRAME)
    srv_fail(st, TRI_CODE_INTERNAL, "%s: invalid gzip data", what);
  else
    srv_fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
}

/* Inflates in[0..n) (bounded by max_message) into a new buffer with
 * `headroom` bytes in front.  NULL when the call failed. */
static tri_buf *inflate_to(srv_stream *st, const uint8_t *in, size_t n,
                           size_t headroom, const char *what) {
  tri_server *s = st->conn->w->srv;
  tri_buf *plain = NULL;
  int rv = tri_gzip_decompress(&s->zp, &s->pool, in, n, s->opts.max_message,
                               &plain);
  if (rv) {
    inflate_failed(st, rv, what);
    return NULL;
  }
  if (!headroom) return plain;
  tri_buf *out = tri_pool_get(&s->pool, plain->len, headroom);
  if (out) {
    memcpy(tri_buf_begin(out), tri_buf_begin(plain), plain->len);
    out->len = plain->len;
  } else {
    srv_fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
  }
  tri_pool_put(&s->pool, plain);
  return out;
}

/* A compressed request message (prefix + gzip data, taken): the same
 * message inflated, prefix + plain payload.  NULL when the call failed. */
static tri_buf *inflate_message(srv_stream *st, tri_buf *m) {
  tri_buf *out = inflate_to(st, tri_buf_begin(m) + TRI_FRAME_PREFIX,
                            m->len - TRI_FRAME_PREFIX, TRI_FRAME_PREFIX,
                            "message");
  tri_pool_put(pool_of(st->conn), m);
  if (!out) return NULL;
  out->off -= TRI_FRAME_PREFIX;
  out->len += TRI_FRAME_PREFIX;
  tri_frame_put_prefix(tri_buf_begin(out), 0,
                       (uint32_t)(out->len - TRI_FRAME_PREFIX));
  return out;
}

/* A whole gRPC request message (prefix + payload, flags 0; inflated
 * already when it arrived compressed, `gz`). */
static void on_message(srv_stream *st, tri_buf *m, int gz) {
  st->nmsg++;
  if (st->finished) {
    tri_pool_put(pool_of(st->conn), m);
    return;
  }
  if (single_request(st->method)) {
    if (st->body) {
      tri_pool_put(pool_of(st->conn), m);
      srv_fail(st, TRI_CODE_INTERNAL, "%s request has more than one message",
           st->method == M_UNARY ? "UnaryCall" : "the");
      return;
    }
    st->body = m;
    st->body_gz = gz ? 1 : 0;
    return;
  }
  if (st->method == M_STREAM) srv_echo_message(st, m);
  else srv_ts_message(st, m, gz); /* TestService streams */
}

void srv_grpc_data(srv_stream *st, const uint8_t *d, size_t n) {
  int64_t max = st->conn->w->srv->opts.max_message;
  for (;;) {
    size_t used;
    tri_frame_event ev;
    tri_frame_event_type t = tri_frame_decode(&st->dec, d, n, &used, &ev);
    d += used;
    n -= used;
    switch (t) {
    case TRI_FRAME_NEED_MORE:
      return;
    case TRI_FRAME_HEADER:
      if (!check_flags(st, ev.flags)) return;
      if ((int64_t)ev.length > max) {
        srv_fail(st, TRI_CODE_RESOURCE_EXHAUSTED,
             "message of %u bytes is larger than the limit of %lld",
             ev.length, (long long)max);
        return;
      }
      st->cur = tri_pool_get(pool_of(st->conn),
                             TRI_FRAME_PREFIX + (size_t)ev.length, 0);
      if (!st->cur) {
        srv_fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
        return;
      }
      tri_frame_put_prefix(tri_buf_begin(st->cur), 0, ev.length);
      st->cur->len = TRI_FRAME_PREFIX;
      break;
    case TRI_FRAME_CHUNK:
      memcpy(tri_buf_begin(st->cur) + st->cur->len, ev.data, ev.len);
      st->cur->len += ev.len;
      break;
    case TRI_FRAME_END: {
      tri_buf *m = st->cur;
      int gz = st->cur_gz;
      st->cur = NULL;
      if (gz && !(m = inflate_message(st, m))) return;
      on_message(st, m, gz);
      if (st->finished) return;
      break;
    }
    }
  }
}

void srv_triple_data(srv_stream *st, const uint8_t *d, size_t n) {
  tri_pool *pool = pool_of(st->conn);
  int64_t max = st->conn->w->srv->opts.max_message;
  size_t have = st->body ? st->body->len : 0;
  if ((int64_t)(have + n) > max) {
    srv_fail(st, TRI_CODE_RESOURCE_EXHAUSTED,
         "request body is larger than the limit of %lld", (long long)max);
    return;
  }
  if (!st->body) {
    size_t hint = st->clen > 0 && st->clen <= max ? (size_t)st->clen : n;
    if (!(st->body = tri_pool_get(pool, hint, 0))) {
      srv_fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
      return;
    }
  }
  if (tri_buf_append(pool, &st->body, d, n))
    srv_fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
}
