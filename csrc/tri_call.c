/*
 * tri_call.c: the caller's side of an RPC and the per-call protocol logic the
 * I/O thread runs (response headers, messages, final status).
 *
 * The request header buffer `hdr` holds the path followed by metadata
 * records; the received-metadata buffer `md` holds records too.  A record is
 * [u8 kind][u32 key_len][u32 value_len][key][value], lengths in host order.
 */
#include <errno.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tri_conn.h"
#include "tri_error.h"
#include "tri_int.h"
#include "tri_wire.h"

#define MD_STATUS_MESSAGE 2 /* record kind of the status message */
#define REC_HDR 9

int64_t tri__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int append_record(tri_pool *pool, tri_buf **bp, int kind, const void *k,
                         size_t kn, const void *v, size_t vn) {
  uint8_t h[REC_HDR];
  uint32_t k32 = (uint32_t)kn, v32 = (uint32_t)vn;
  h[0] = (uint8_t)kind;
  memcpy(h + 1, &k32, 4);
  memcpy(h + 5, &v32, 4);
  int rv = tri_buf_reserve(pool, bp, REC_HDR + kn + vn);
  if (rv) return rv;
  tri_buf_append(pool, bp, h, REC_HDR);
  tri_buf_append(pool, bp, k, kn);
  tri_buf_append(pool, bp, v, vn);
  return 0;
}

/* Reads the record at *off in b; advances *off.  Returns -1 at the end. */
static int read_record(const tri_buf *b, size_t *off, int *kind,
                       const uint8_t **k, size_t *kn, const uint8_t **v,
                       size_t *vn) {
  if (!b || *off + REC_HDR > b->len) return -1;
  const uint8_t *p = b->data + b->off + *off;
  uint32_t k32, v32;
  memcpy(&k32, p + 1, 4);
  memcpy(&v32, p + 5, 4);
  *kind = p[0];
  *k = p + REC_HDR;
  *kn = k32;
  *v = p + REC_HDR + k32;
  *vn = v32;
  *off += REC_HDR + k32 + v32;
  return 0;
}

/* ---- caller side ------------------------------------------------------ */

int tri_call_new(tri_channel *ch, tri_call **out, const char *path,
                 size_t path_len, int64_t timeout_ns) {
  if (path_len == 0 || path[0] != '/') return TRI_ERR_INVALID;
  tri_call *c = tri__channel_call_get(ch);
  if (!c) return TRI_ERR_NOMEM;
  c->hdr = tri_pool_get(&ch->pool, path_len + 256, 0);
  if (!c->hdr) {
    tri__channel_call_put(ch, c);
    return TRI_ERR_NOMEM;
  }
  tri_buf_append(&ch->pool, &c->hdr, path, path_len);
  c->path_len = path_len;
  c->deadline = timeout_ns < 0 ? 0 : tri__now() + timeout_ns;
  if (timeout_ns == 0) c->deadline = tri__now(); /* already expired */
  *out = c;
  return 0;
}

int tri_call_add_metadata(tri_call *c, const char *key, size_t kn,
                          const char *value, size_t vn) {
  if (!tri_md_key_valid(key, kn) || tri_md_key_reserved(key, kn))
    return TRI_ERR_INVALID;
  tri_pool *pool = &c->ch->pool;
  if (!tri_md_key_is_bin(key, kn)) {
    if (!tri_md_value_valid(value, vn)) return TRI_ERR_INVALID;
    return append_record(pool, &c->hdr, 0, key, kn, value, vn);
  }
  /* Binary value: reserve the record, then base64 straight into it. */
  size_t en = tri_base64_len(vn);
  int rv = tri_buf_reserve(pool, &c->hdr, REC_HDR + kn + en);
  if (rv) return rv;
  uint8_t h[REC_HDR];
  uint32_t k32 = (uint32_t)kn, v32 = (uint32_t)en;
  h[0] = 0;
  memcpy(h + 1, &k32, 4);
  memcpy(h + 5, &v32, 4);
  tri_buf_append(pool, &c->hdr, h, REC_HDR);
  tri_buf_append(pool, &c->hdr, key, kn);
  tri_base64_encode((const uint8_t *)value, vn,
                    (char *)tri_buf_begin(c->hdr) + c->hdr->len);
  c->hdr->len += en;
  return 0;
}

void tri_call_set_request_borrowed(tri_call *c, const uint8_t *p, size_t n) {
  tri_frame_put_prefix(c->prefix, 0, (uint32_t)n);
  c->seg0 = c->prefix;
  c->seg0_len = TRI_FRAME_PREFIX;
  c->seg1 = p;
  c->seg1_len = n;
}

void tri_call_set_request_buf(tri_call *c, tri_buf *b) {
  /* The prefix goes into the headroom so prefix and payload are one run. */
  b->off -= TRI_FRAME_PREFIX;
  tri_frame_put_prefix(b->data + b->off, 0, (uint32_t)b->len);
  b->len += TRI_FRAME_PREFIX;
  c->req = b;
  c->seg0 = NULL;
  c->seg0_len = 0;
  c->seg1 = tri_buf_begin(b);
  c->seg1_len = b->len;
}

void tri_call_set_notify(tri_call *c, void *token) {
  c->token = token;
  c->notify = 1;
}

void *tri_call_token(const tri_call *c) { return c->token; }

static size_t payload_len(const tri_call *c) {
  return c->seg0_len + c->seg1_len - TRI_FRAME_PREFIX;
}

void tri_call_start(tri_call *c) {
  tri_channel *ch = c->ch;
  c->started = 1;
  TRI_STATS_ADD(&ch->stats, calls, 1);
  if (!c->seg1 && !c->seg0) tri_call_set_request_borrowed(c, NULL, 0);
  if (atomic_load(&c->cancel_req)) {
    tri__call_complete(c, c->cancel_code, "%s", c->cancel_msg);
    return;
  }
  if (ch->opts.max_send_bytes >= 0 &&
      payload_len(c) > (size_t)ch->opts.max_send_bytes) {
    tri__call_complete(c, TRI_CODE_RESOURCE_EXHAUSTED,
                       "Sent message larger than max (%zu vs. %lld)",
                       payload_len(c), (long long)ch->opts.max_send_bytes);
    return;
  }
  tri_conn *avoid = NULL;
  for (int attempt = 0; attempt < 3; attempt++) {
    tri_conn *conn = tri__channel_conn(ch, avoid);
    if (!conn) {
      tri__call_complete(c, TRI_CODE_CANCELLED, "Channel closed");
      return;
    }
    c->conn = conn;
    atomic_fetch_add(&c->refs, 1); /* the I/O thread's reference */
    if (tri__conn_push(conn, &c->submit_op.node) == 0) return;
    atomic_fetch_sub(&c->refs, 1);
    c->conn = NULL;
    avoid = conn;
    tri__conn_unref(conn);
  }
  tri__call_complete(c, TRI_CODE_UNAVAILABLE, "connection is closing");
}

int tri_call_done(const tri_call *c) {
  return atomic_load_explicit(&((tri_call *)c)->done, memory_order_acquire);
}

int tri_call_wait(tri_call *c, int64_t timeout_ns) {
  if (tri_call_done(c)) return 0;
  int64_t end = timeout_ns < 0 ? 0 : tri__now() + timeout_ns;
  atomic_fetch_add(&c->waiters, 1);
  while (!atomic_load(&c->done)) {
    struct timespec ts, *tsp = NULL;
    if (timeout_ns >= 0) {
      int64_t left = end - tri__now();
      if (left <= 0) break;
      ts.tv_sec = left / 1000000000LL;
      ts.tv_nsec = left % 1000000000LL;
      tsp = &ts;
    }
    syscall(SYS_futex, &c->done, FUTEX_WAIT_PRIVATE, 0, tsp, NULL, 0);
  }
  atomic_fetch_sub(&c->waiters, 1);
  return atomic_load(&c->done) ? 0 : TRI_ERR_TIMEOUT;
}

void tri_call_cancel(tri_call *c, int code, const char *message) {
  int expected = 0;
  if (tri_call_done(c)) return;
  if (!atomic_compare_exchange_strong(&c->cancel_req, &expected, 2)) return;
  c->cancel_code = code;
  c->cancel_msg = message;
  atomic_store(&c->cancel_req, 1);
  /* Not started yet: tri_call_start sees cancel_req.  A dead connection
   * fails the call by itself, so a refused push needs no handling. */
  if (c->conn) {
    atomic_fetch_add(&c->refs, 1);
    if (tri__conn_push(c->conn, &c->cancel_op.node)) atomic_fetch_sub(&c->refs, 1);
  }
}

int tri_call_code(const tri_call *c) { return c->code; }

void tri_call_message(const tri_call *c, const char **p, size_t *n) {
  *p = c->md && c->msg_len ? (const char *)c->md->data + c->md->off + c->msg_off
                           : "";
  *n = c->md ? c->msg_len : 0;
}

void tri_call_response(const tri_call *c, const uint8_t **p, size_t *n) {
  *p = c->resp ? tri_buf_begin(c->resp) : NULL;
  *n = c->resp ? c->resp->len : 0;
}

int tri_call_md_next(const tri_call *c, size_t *iter, int *kind,
                     const char **key, size_t *kn, const char **value,
                     size_t *vn) {
  for (;;) {
    const uint8_t *k, *v;
    if (read_record(c->md, iter, kind, &k, kn, &v, vn)) return -1;
    if (*kind == MD_STATUS_MESSAGE) continue;
    *key = (const char *)k;
    *value = (const char *)v;
    return 0;
  }
}

void tri_call_release(tri_call *c) {
  if (c->started && !tri_call_done(c)) {
    tri_call_cancel(c, TRI_CODE_CANCELLED, "Cancelled");
    tri_call_wait(c, -1);
  }
  tri__call_unref(c);
}

void tri__call_unref(tri_call *c) {
  if (atomic_fetch_sub(&c->refs, 1) != 1) return;
  tri_channel *ch = c->ch;
  tri_pool_put(&ch->pool, c->hdr);
  tri_pool_put(&ch->pool, c->req);
  tri_pool_put(&ch->pool, c->resp);
  tri_pool_put(&ch->pool, c->md);
  if (c->conn) tri__conn_unref(c->conn);
  tri__channel_call_put(ch, c);
}

/* ---- I/O thread side ---------------------------------------------------- */

void tri__call_complete(tri_call *c, int code, const char *fmt, ...) {
  if (c->completed) return;
  c->completed = 1;
  c->code = code;
  if (fmt) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof(msg)) n = sizeof(msg) - 1;
    if (!c->md) c->md = tri_pool_get(&c->ch->pool, 512, 0);
    if (c->md && append_record(&c->ch->pool, &c->md, MD_STATUS_MESSAGE, "", 0,
                               msg, (size_t)n) == 0) {
      c->msg_off = c->md->len - (size_t)n;
      c->msg_len = (size_t)n;
    }
  }
  if (code != TRI_CODE_OK && c->resp) {
    tri_pool_put(&c->ch->pool, c->resp); /* grpcio gives no response on error */
    c->resp = NULL;
  }
  if (c->conn) tri__conn_call_finished(c->conn, c);
  atomic_store(&c->done, 1);
  if (c->notify) tri__channel_notify(c->ch, c);
  if (atomic_load(&c->waiters))
    syscall(SYS_futex, &c->done, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}

static int name_is(const uint8_t *n, size_t nl, const char *lit) {
  size_t l = strlen(lit);
  return nl == l && memcmp(n, lit, l) == 0;
}

/* Keys the transport consumes; they are not shown as metadata. */
static int transport_key(const uint8_t *n, size_t nl) {
  return (nl > 0 && n[0] == ':') || name_is(n, nl, "content-type") ||
         name_is(n, nl, "grpc-status") || name_is(n, nl, "grpc-message") ||
         name_is(n, nl, "grpc-encoding") ||
         name_is(n, nl, "grpc-accept-encoding") || name_is(n, nl, "te") ||
         name_is(n, nl, "content-length");
}

static int add_received_md(tri_call *c, int kind, const uint8_t *n, size_t nl,
                           const uint8_t *v, size_t vl) {
  tri_pool *pool = &c->ch->pool;
  if (!c->md && !(c->md = tri_pool_get(pool, 512, 0))) return TRI_ERR_NOMEM;
  if (!tri_md_key_is_bin((const char *)n, nl))
    return append_record(pool, &c->md, kind, n, nl, v, vl);
  /* Binary: each comma-separated base64 part is one value. */
  size_t start = 0;
  for (size_t i = 0; i <= vl; i++) {
    if (i < vl && v[i] != ',') continue;
    size_t part = i - start;
    int rv = tri_buf_reserve(pool, &c->md, REC_HDR + nl + part);
    if (rv) return rv;
    uint8_t *dst = tri_buf_begin(c->md) + c->md->len + REC_HDR + nl;
    long dn = tri_base64_decode((const char *)v + start, part, dst);
    if (dn < 0) dn = 0; /* undecodable: keep the key with an empty value */
    uint8_t h[REC_HDR];
    uint32_t k32 = (uint32_t)nl, v32 = (uint32_t)dn;
    h[0] = (uint8_t)kind;
    memcpy(h + 1, &k32, 4);
    memcpy(h + 5, &v32, 4);
    memcpy(tri_buf_begin(c->md) + c->md->len, h, REC_HDR);
    memcpy(tri_buf_begin(c->md) + c->md->len + REC_HDR, n, nl);
    c->md->len += REC_HDR + nl + (size_t)dn;
    start = i + 1;
  }
  return 0;
}

int tri__call_on_header(tri_call *c, const nghttp2_frame *frame,
                        const uint8_t *name, size_t nl, const uint8_t *value,
                        size_t vl) {
  if (c->completed) return 0;
  int trailers = frame->headers.cat == NGHTTP2_HCAT_HEADERS ||
                 (frame->hd.flags & NGHTTP2_FLAG_END_STREAM);
  if (name_is(name, nl, ":status")) {
    int s = 0;
    for (size_t i = 0; i < vl; i++) s = s * 10 + (value[i] - '0');
    c->http_status = s;
    return 0;
  }
  if (name_is(name, nl, "content-type")) {
    static const char g[] = "application/grpc";
    if (vl < sizeof(g) - 1 || memcmp(value, g, sizeof(g) - 1) != 0 ||
        (vl > sizeof(g) - 1 && value[sizeof(g) - 1] != '+' &&
         value[sizeof(g) - 1] != ';'))
      c->bad_content_type = 1;
    return 0;
  }
  if (name_is(name, nl, "grpc-status")) {
    int s = tri_parse_status((const char *)value, vl);
    c->grpc_status = s < 0 ? -2 : s;
    return 0;
  }
  if (name_is(name, nl, "grpc-message")) {
    tri_pool *pool = &c->ch->pool;
    if (!c->md && !(c->md = tri_pool_get(pool, 512, 0))) return TRI_ERR_NOMEM;
    int rv = tri_buf_reserve(pool, &c->md, REC_HDR + vl);
    if (rv) return rv;
    uint8_t *dst = tri_buf_begin(c->md) + c->md->len + REC_HDR;
    size_t dn = tri_percent_decode((const char *)value, vl, (char *)dst);
    uint8_t h[REC_HDR] = {MD_STATUS_MESSAGE};
    uint32_t v32 = (uint32_t)dn;
    memcpy(h + 5, &v32, 4);
    memcpy(tri_buf_begin(c->md) + c->md->len, h, REC_HDR);
    c->msg_off = c->md->len + REC_HDR;
    c->msg_len = dn;
    c->md->len += REC_HDR + dn;
    return 0;
  }
  if (transport_key(name, nl)) return 0;
  return add_received_md(c, trailers ? TRI_MD_TRAILING : TRI_MD_INITIAL, name,
                         nl, value, vl);
}

int tri__call_on_data(tri_call *c, const uint8_t *data, size_t len,
                      int64_t max_recv) {
  if (c->completed) return 0;
  tri_pool *pool = &c->ch->pool;
  while (1) {
    size_t used;
    tri_frame_event ev;
    tri_frame_event_type t = tri_frame_decode(&c->dec, data, len, &used, &ev);
    data += used;
    len -= used;
    switch (t) {
    case TRI_FRAME_NEED_MORE:
      return 0;
    case TRI_FRAME_HEADER:
      if (ev.flags & ~TRI_FRAME_FLAG_COMPRESSED) {
        tri__call_complete(c, TRI_CODE_INTERNAL,
                           "invalid message envelope flags 0x%02x", ev.flags);
        return TRI_CODE_INTERNAL;
      }
      if (ev.flags & TRI_FRAME_FLAG_COMPRESSED) {
        tri__call_complete(c, TRI_CODE_INTERNAL,
                           "compressed message without grpc-encoding");
        return TRI_CODE_INTERNAL;
      }
      if (max_recv >= 0 && ev.length > (uint64_t)max_recv) {
        tri__call_complete(c, TRI_CODE_RESOURCE_EXHAUSTED,
                           "Received message larger than max (%u vs. %lld)",
                           ev.length, (long long)max_recv);
        return TRI_CODE_RESOURCE_EXHAUSTED;
      }
      if (c->got_message) {
        tri__call_complete(c, TRI_CODE_INTERNAL,
                           "unary call received more than one message");
        return TRI_CODE_INTERNAL;
      }
      c->resp = tri_pool_get(pool, ev.length, 0);
      if (!c->resp) {
        tri__call_complete(c, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
        return TRI_CODE_RESOURCE_EXHAUSTED;
      }
      break;
    case TRI_FRAME_CHUNK:
      memcpy(tri_buf_begin(c->resp) + c->resp->len, ev.data, ev.len);
      c->resp->len += ev.len;
      break;
    case TRI_FRAME_END:
      c->got_message = 1;
      break;
    }
  }
}

void tri__call_on_close(tri_call *c, uint32_t error_code) {
  if (c->completed) return;
  if (c->grpc_status == -1 && error_code != NGHTTP2_NO_ERROR) {
    tri__call_complete(c, tri_code_from_rst(error_code),
                       "stream reset by peer: %s (0x%x)",
                       nghttp2_http2_strerror(error_code), error_code);
    return;
  }
  if (c->grpc_status == -1) {
    if (c->http_status != 200 && c->http_status != 0)
      tri__call_complete(c, tri_code_from_http(c->http_status),
                         "Received http2 header with status: %d",
                         c->http_status);
    else if (c->bad_content_type)
      tri__call_complete(c, TRI_CODE_INTERNAL, "unexpected content-type");
    else
      tri__call_complete(c, TRI_CODE_INTERNAL,
                         "response ended without grpc-status");
    return;
  }
  if (c->grpc_status == -2) {
    tri__call_complete(c, TRI_CODE_INTERNAL, "malformed grpc-status");
    return;
  }
  if (tri_frame_decoder_partial(&c->dec)) {
    tri__call_complete(c, TRI_CODE_INTERNAL,
                       "response ended inside a message (truncated)");
    return;
  }
  int code = c->grpc_status > 16 ? TRI_CODE_UNKNOWN : c->grpc_status;
  if (code == TRI_CODE_OK && !c->got_message) {
    tri__call_complete(c, TRI_CODE_INTERNAL,
                       "unary call completed without a response message");
    return;
  }
  tri__call_complete(c, code, NULL);
}

size_t tri__call_header_count(const tri_call *c) {
  size_t off = c->path_len, n = 0;
  int kind;
  const uint8_t *k, *v;
  size_t kn, vn;
  while (read_record(c->hdr, &off, &kind, &k, &kn, &v, &vn) == 0) n++;
  return n;
}

#define NV_STATIC(n, v)                                                  \
  {                                                                      \
    (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, sizeof(v) - 1,        \
        NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE     \
  }

static nghttp2_nv nv_make(const void *n, size_t nl, const void *v, size_t vl) {
  nghttp2_nv nv = {(uint8_t *)n, (uint8_t *)v, nl, vl,
                   NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE};
  return nv;
}

size_t tri__call_headers(tri_call *c, nghttp2_nv *nva, size_t cap) {
  static const nghttp2_nv fixed_head[] = {NV_STATIC(":method", "POST"),
                                          NV_STATIC(":scheme", "http")};
  static const nghttp2_nv fixed_tail[] = {
      NV_STATIC("content-type", "application/grpc"),
      NV_STATIC("te", "trailers")};
  const tri_channel_opts *o = &c->ch->opts;
  size_t n = 0;
  if (cap < 8) return 0;
  nva[n++] = fixed_head[0];
  nva[n++] = fixed_head[1];
  nva[n++] = nv_make(":path", 5, tri_buf_begin(c->hdr), c->path_len);
  nva[n++] = nv_make(":authority", 10, o->authority, strlen(o->authority));
  nva[n++] = fixed_tail[0];
  nva[n++] = fixed_tail[1];
  nva[n++] = nv_make("user-agent", 10, o->user_agent, strlen(o->user_agent));
  if (c->deadline) {
    int tl = tri_grpc_timeout_encode(c->deadline - tri__now(), c->timeout);
    nva[n++] = nv_make("grpc-timeout", 12, c->timeout, (size_t)tl);
  }
  size_t off = c->path_len;
  int kind;
  const uint8_t *k, *v;
  size_t kn, vn;
  while (n < cap && read_record(c->hdr, &off, &kind, &k, &kn, &v, &vn) == 0)
    nva[n++] = nv_make(k, kn, v, vn);
  return n;
}
