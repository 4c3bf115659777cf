/*
 * respond.c: answering a call on its wire (see respond.h).
 */
#include "server/respond.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "server/runtime.h"
#include "tri_error.h"
#include "tri_tjson.h"
#include "tri_wire.h"

#define NOCOPY_MIN 4096             /* slices this big go out by reference */

/* dubbo-go's code -> HTTP status (§5 table A, dubbo-go column). */
static int triple_http_status(int code) {
  static const int http[] = {200, 408, 500, 400, 408, 404, 409, 403, 429,
                             412, 409, 400, 404, 500, 503, 500, 401};
  return code >= 0 && code <= 16 ? http[code] : 500;
}

/* A header list for one submit, built in the worker's scratch buffer:
 * nghttp2 copies names and values at submit, so the space is reused. */
typedef struct {
  nghttp2_nv *nv;
  size_t n, cap;
  char *sp;
  size_t sp_len, sp_cap;
} nvlist;

static int nvl_init(srv_worker *w, nvlist *l, size_t nvs, size_t bytes) {
  size_t need = nvs * sizeof(nghttp2_nv) + bytes;
  w->scratch->len = 0;
  if (tri_buf_reserve(&w->srv->pool, &w->scratch, need)) return -1;
  l->nv = (nghttp2_nv *)(void *)tri_buf_begin(w->scratch);
  l->n = 0;
  l->cap = nvs;
  l->sp = (char *)(l->nv + nvs);
  l->sp_len = 0;
  l->sp_cap = bytes;
  return 0;
}

#define NVL_LIT(l, n, v) nvl_add(l, n, sizeof(n) - 1, v, strlen(v))

static void nvl_add(nvlist *l, const char *name, size_t nlen, const char *value,
                    size_t vlen) {
  if (l->n >= l->cap) return; /* sized by the caller; never happens */
  nghttp2_nv *nv = &l->nv[l->n++];
  nv->name = (uint8_t *)(uintptr_t)name;
  nv->namelen = nlen;
  nv->value = (uint8_t *)(uintptr_t)value;
  nv->valuelen = vlen;
  nv->flags = NGHTTP2_NV_FLAG_NONE;
}

static char *nvl_space(nvlist *l, size_t n) {
  if (l->sp_len + n > l->sp_cap) return NULL;
  char *p = l->sp + l->sp_len;
  l->sp_len += n;
  return p;
}

/* Adds the echoed pairs that go `where` (MD_INITIAL or MD_TRAILING), with
 * `prefix` ("" or "trailer-") on the keys. */
static void nvl_add_echo(nvlist *l, const srv_stream *st, const char *prefix,
                         int where) {
  if (!st->md) return;
  size_t plen = strlen(prefix);
  const uint8_t *p = tri_buf_begin(st->md), *end = p + st->md->len;
  while (p < end) {
    uint32_t kl, vl;
    memcpy(&kl, p, 4);
    memcpy(&vl, p + 4, 4);
    int goes = p[8];
    const char *k = (const char *)p + 9, *v = k + kl;
    p += 9 + kl + vl;
    if (!(goes & where)) continue;
    if (plen) {
      char *name = nvl_space(l, plen + kl);
      if (!name) return;
      memcpy(name, prefix, plen);
      memcpy(name + plen, k, kl);
      nvl_add(l, name, plen + kl, v, vl);
    } else {
      nvl_add(l, k, kl, v, vl);
    }
  }
}

/* Nonzero when the list is within the client's SETTINGS_MAX_HEADER_LIST_SIZE
 * (HPACK size).  A larger one is never sent: the stream is reset with
 * INTERNAL_ERROR instead, as grpc-go does, and the client's other calls go
 * on. */
static int fits_client(const srv_stream *st, const nvlist *l) {
  uint64_t size = 0;
  for (size_t i = 0; i < l->n; i++)
    size += l->nv[i].namelen + l->nv[i].valuelen + 32;
  return size <= nghttp2_session_get_remote_settings(
                     st->conn->sess, NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE);
}

/* Adds grpc-status and, when there is a message, grpc-message. */
static void nvl_add_status(nvlist *l, const srv_stream *st) {
  if (st->mb == MB_BAD_STATUS) { /* x-misbehave: not a number */
    NVL_LIT(l, "grpc-status", "abc");
    return;
  }
  char *code = nvl_space(l, 4);
  if (!code) return;
  int n = snprintf(code, 4, "%d", st->status);
  nvl_add(l, "grpc-status", 11, code, (size_t)n);
  if (st->status != 0 && st->msg && st->msg->len) {
    char *m = nvl_space(l, 3 * st->msg->len);
    if (!m) return;
    size_t ml = tri_percent_encode((const char *)tri_buf_begin(st->msg),
                                   st->msg->len, m);
    nvl_add(l, "grpc-message", 12, m, ml);
  }
}

/* Room for a list with the echo pairs (twice) and a status message. */
static size_t nvl_bytes(const srv_stream *st) {
  return (st->md ? 2 * st->md->len : 0) + 16 * st->echo_n +
         (st->msg ? 3 * st->msg->len : 0) + 128;
}

void srv_set_msg(srv_stream *st, const void *p, size_t n) {
  tri_pool *pool = pool_of(st->conn);
  if (n > MAX_STATUS_MSG) n = MAX_STATUS_MSG;
  if (!st->msg && !(st->msg = tri_pool_get(pool, n, 0))) return;
  st->msg->len = 0;
  if (tri_buf_append(pool, &st->msg, p, n)) st->msg->len = 0;
}

void srv_submit_failed(srv_stream *st) {
  nghttp2_submit_rst_stream(st->conn->sess, NGHTTP2_FLAG_NONE, st->id,
                            NGHTTP2_INTERNAL_ERROR);
  st->finished = 1;
  srv_timer_remove(st->conn->w, st);
}

/* New response bytes or a decided end: resume the deferred data source. */
static void wake_data(srv_stream *st) {
  if (st->deferred) {
    st->deferred = 0;
    nghttp2_session_resume_data(st->conn->sess, st->id);
  }
  srv_mark_dirty(st->conn);
}

void srv_q_push(srv_stream *st, tri_buf *b) {
  if (st->mb == MB_RST_MID) { /* half of the first message, then RST */
    if (st->rst_armed) {
      tri_pool_put(pool_of(st->conn), b);
      return;
    }
    st->rst_armed = 1;
    b->len = (b->len + 1) / 2;
  }
  b->next = NULL;
  if (st->q_tail) st->q_tail->next = b;
  else st->q_head = b;
  st->q_tail = b;
  st->q_bytes += b->len;
  wake_data(st);
}

void srv_q_drop_unstarted(srv_stream *st) {
  tri_pool *pool = pool_of(st->conn);
  tri_buf *keep = (st->q_off || st->q_ref) ? st->q_head : NULL;
  tri_buf *b = keep ? keep->next : st->q_head;
  while (b) {
    tri_buf *next = b->next;
    tri_pool_put(pool, b);
    b = next;
  }
  if (keep) {
    keep->next = NULL;
    st->q_head = st->q_tail = keep;
    st->q_bytes = keep->len - st->q_off;
  } else {
    st->q_head = st->q_tail = NULL;
    st->q_off = 0;
    st->q_bytes = 0;
  }
}

static int submit_trailers(srv_stream *st) {
  nvlist l;
  if (nvl_init(st->conn->w, &l, 4 + st->echo_n, nvl_bytes(st))) return -1;
  nvl_add_status(&l, st);
  nvl_add_echo(&l, st, "", MD_TRAILING);
  if (!fits_client(st, &l)) return -1; /* the caller's failure resets it */
  return nghttp2_submit_trailer(st->conn->sess, st->id, l.nv, l.n) ? -1 : 0;
}

/* The end of the response body: END_STREAM on the last DATA (Triple), or
 * no END_STREAM and the trailers after it (gRPC). */
static int end_data(srv_stream *st, uint32_t *flags) {
  *flags |= NGHTTP2_DATA_FLAG_EOF;
  if (st->wire != WIRE_GRPC || st->plain_end) return 0;
  *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
  return submit_trailers(st);
}

/* The data source of every response.  A slice of at least NOCOPY_MIN bytes
 * (or the rest of a buffer already sent by reference) goes out NO_COPY, one
 * buffer per frame; smaller messages are copied, several per frame. */
static ssize_t read_cb(nghttp2_session *s, int32_t id, uint8_t *buf,
                       size_t length, uint32_t *flags, nghttp2_data_source *src,
                       void *user) {
  (void)s, (void)id;
  srv_conn *c = user;
  srv_stream *st = src->ptr;
  tri_buf *h = st->q_head;
  /* rst-mid-response: the half message went out; nghttp2 answers this
   * return with RST_STREAM(INTERNAL_ERROR). */
  if (!h && st->rst_armed) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  if (h && (h->len - st->q_off >= NOCOPY_MIN || st->q_ref)) {
    size_t rem = h->len - st->q_off;
    size_t n = rem < length ? rem : length;
    *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    if (n == rem && !h->next && st->finished && !st->rst_armed &&
        end_data(st, flags))
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    return (ssize_t)n;
  }
  size_t n = 0;
  while (h && n < length) {
    size_t rem = h->len - st->q_off;
    if (rem >= NOCOPY_MIN) break; /* next frame, by reference */
    size_t take = rem < length - n ? rem : length - n;
    memcpy(buf + n, tri_buf_begin(h) + st->q_off, take);
    n += take;
    st->q_off += take;
    st->q_bytes -= take;
    if (st->q_off < h->len) break;
    st->q_head = h->next;
    if (!st->q_head) st->q_tail = NULL;
    st->q_off = 0;
    tri_pool_put(pool_of(c), h);
    h = st->q_head;
  }
  if (!st->q_head && !st->rst_armed) {
    if (st->finished) {
      if (end_data(st, flags)) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    } else if (n == 0) {
      st->deferred = 1;
      return NGHTTP2_ERR_DEFERRED;
    }
  }
  return (ssize_t)n;
}

nghttp2_data_provider srv_provider(srv_stream *st) {
  nghttp2_data_provider prd;
  prd.source.ptr = st;
  prd.read_callback = read_cb;
  return prd;
}

void srv_grpc_headers(srv_stream *st, int trailers_only) {
  nvlist l;
  if (nvl_init(st->conn->w, &l, 8 + st->echo_n, nvl_bytes(st))) {
    srv_submit_failed(st);
    return;
  }
  NVL_LIT(&l, ":status", "200");
  NVL_LIT(&l, "content-type", "application/grpc");
  NVL_LIT(&l, "grpc-accept-encoding", "gzip");
  if (st->gz_hdr) NVL_LIT(&l, "grpc-encoding", "gzip");
  if (trailers_only) nvl_add_status(&l, st);
  nvl_add_echo(&l, st, "", trailers_only ? MD_BOTH : MD_INITIAL);
  nghttp2_data_provider prd = srv_provider(st);
  if (!fits_client(st, &l) ||
      nghttp2_submit_response(st->conn->sess, st->id, l.nv, l.n,
                              trailers_only ? NULL : &prd)) {
    srv_submit_failed(st);
    return;
  }
  st->headers_sent = 1;
  srv_mark_dirty(st->conn);
}

void srv_grpc_finish(srv_stream *st, int code, const char *msg, size_t n) {
  if (st->finished) return;
  st->finished = 1;
  st->status = code;
  if (msg) srv_set_msg(st, msg, n);
  srv_timer_remove(st->conn->w, st);
  if (st->headers_sent) {
    wake_data(st);
    return;
  }
  if (code != TRI_CODE_OK) srv_q_drop_unstarted(st);
  if (st->mb == MB_RST_MID) st->rst_armed = 1; /* headers, then RST */
  /* Trailers-only unless metadata must be echoed in both places. */
  srv_grpc_headers(st, !st->q_head && !st->echo_n && !st->rst_armed);
}

/* The JSON error body {"code":"<name>","message":"..."} of the Triple wire. */
static tri_buf *triple_error_body(srv_stream *st) {
  size_t ml = st->msg ? st->msg->len : 0;
  tri_buf *b = tri_pool_get(pool_of(st->conn), 64 + 6 * ml, 0);
  if (!b) return NULL;
  char *p = (char *)tri_buf_begin(b);
  size_t n = (size_t)sprintf(p, "{\"code\":\"%s\"", tri_tjson_code_name(st->status));
  if (ml) {
    n += (size_t)sprintf(p + n, ",\"message\":\"");
    const uint8_t *m = tri_buf_begin(st->msg);
    for (size_t i = 0; i < ml; i++) {
      uint8_t ch = m[i];
      if (ch == '"' || ch == '\\') {
        p[n++] = '\\';
        p[n++] = (char)ch;
      } else if (ch < 0x20) {
        n += (size_t)sprintf(p + n, "\\u%04x", ch);
      } else {
        p[n++] = (char)ch;
      }
    }
    p[n++] = '"';
  }
  p[n++] = '}';
  b->len = n;
  return b;
}

void srv_triple_respond(srv_stream *st, int code, tri_buf *body) {
  tri_pool *pool = pool_of(st->conn);
  if (st->finished) {
    tri_pool_put(pool, body);
    return;
  }
  st->finished = 1;
  st->status = code;
  srv_timer_remove(st->conn->w, st);
  if (code != TRI_CODE_OK) {
    tri_pool_put(pool, body);
    body = triple_error_body(st);
  }
  /* The whole body is gzip'd (never an error body, never an empty one). */
  int gz = code == TRI_CODE_OK && st->gz_out && body && body->len;
  if (gz) {
    tri_server *s = st->conn->w->srv;
    tri_buf *z = NULL;
    int rv = tri_gzip_compress(&s->zp, pool, tri_buf_begin(body), body->len,
                               0, &z);
    tri_pool_put(pool, body);
    body = z;
    if (rv) {
      st->finished = 0;
      srv_set_msg(st, "out of memory", 13);
      srv_triple_respond(st, TRI_CODE_RESOURCE_EXHAUSTED, NULL);
      return;
    }
  }
  nvlist l;
  if (nvl_init(st->conn->w, &l, 6 + 2 * st->echo_n, nvl_bytes(st))) {
    tri_pool_put(pool, body);
    srv_submit_failed(st);
    return;
  }
  char *status = nvl_space(&l, 4), *clen = nvl_space(&l, 24);
  int sn = snprintf(status, 4, "%d", triple_http_status(code));
  int cn = snprintf(clen, 24, "%zu", body ? body->len : (size_t)0);
  nvl_add(&l, ":status", 7, status, (size_t)sn);
  if (code == TRI_CODE_OK) nvl_add(&l, "content-type", 12, st->ct, st->ct_len);
  else NVL_LIT(&l, "content-type", "application/json");
  nvl_add(&l, "content-length", 14, clen, (size_t)cn);
  NVL_LIT(&l, "accept-encoding", "gzip");
  if (gz) NVL_LIT(&l, "content-encoding", "gzip");
  nvl_add_echo(&l, st, "", MD_INITIAL);
  nvl_add_echo(&l, st, "trailer-", MD_TRAILING);
  if (!fits_client(st, &l)) {
    tri_pool_put(pool, body);
    srv_submit_failed(st);
    return;
  }
  nghttp2_data_provider prd = srv_provider(st);
  int has_body = body && body->len;
  if (has_body) srv_q_push(st, body);
  else tri_pool_put(pool, body);
  if (st->mb == MB_RST_MID) has_body = st->rst_armed = 1; /* then RST */
  if (nghttp2_submit_response(st->conn->sess, st->id, l.nv, l.n,
                              has_body ? &prd : NULL)) {
    srv_submit_failed(st);
    return;
  }
  st->headers_sent = 1;
  srv_mark_dirty(st->conn);
}

void srv_http_reply(srv_stream *st, const char *status) {
  if (st->finished) return;
  st->finished = 1;
  srv_timer_remove(st->conn->w, st);
  nghttp2_nv nv[] = {{(uint8_t *)":status", (uint8_t *)(uintptr_t)status, 7,
                      strlen(status), NGHTTP2_NV_FLAG_NONE}};
  if (nghttp2_submit_response(st->conn->sess, st->id, nv, 1, NULL))
    srv_submit_failed(st);
  st->headers_sent = 1;
  srv_mark_dirty(st->conn);
}

void srv_rst(srv_stream *st, uint32_t h2_code) {
  st->finished = 1;
  srv_timer_remove(st->conn->w, st);
  nghttp2_submit_rst_stream(st->conn->sess, NGHTTP2_FLAG_NONE, st->id, h2_code);
  srv_mark_dirty(st->conn);
}

__attribute__((format(printf, 3, 4))) void srv_fail(srv_stream *st,
                                                    int code,
                                                    const char *fmt, ...) {
  if (st->finished) return;
  char m[256];
  int n = 0;
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    n = vsnprintf(m, sizeof(m), fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if (n >= (int)sizeof(m)) n = (int)sizeof(m) - 1;
  }
  if (st->wire == WIRE_TRIPLE) {
    if (fmt) srv_set_msg(st, m, (size_t)n);
    srv_triple_respond(st, code, NULL);
  } else {
    srv_grpc_finish(st, code, fmt ? m : NULL, (size_t)n);
  }
}

void srv_grpc_emit(srv_stream *st, tri_buf *m, int gz) {
  tri_server *s = st->conn->w->srv;
  if (gz) {
    tri_buf *z = NULL;
    int rv = tri_gzip_compress(&s->zp, &s->pool,
                               tri_buf_begin(m) + TRI_FRAME_PREFIX,
                               m->len - TRI_FRAME_PREFIX, TRI_FRAME_PREFIX, &z);
    tri_pool_put(&s->pool, m);
    if (rv) {
      srv_fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
      return;
    }
    z->off -= TRI_FRAME_PREFIX;
    z->len += TRI_FRAME_PREFIX;
    tri_frame_put_prefix(tri_buf_begin(z), TRI_FRAME_FLAG_COMPRESSED,
                         (uint32_t)(z->len - TRI_FRAME_PREFIX));
    m = z;
  }
  srv_q_push(st, m);
}

tri_buf *srv_empty_message(srv_stream *st) {
  tri_buf *b = tri_pool_get(pool_of(st->conn), TRI_FRAME_PREFIX, 0);
  if (!b) return NULL;
  tri_frame_put_prefix(tri_buf_begin(b), 0, 0);
  b->len = TRI_FRAME_PREFIX;
  return b;
}

tri_buf *srv_msg_buf(srv_stream *st, size_t n) {
  size_t pre = st->wire == WIRE_GRPC ? TRI_FRAME_PREFIX : 0;
  tri_buf *b = tri_pool_get(pool_of(st->conn), pre + n, 0);
  if (!b) {
    srv_fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  if (pre) tri_frame_put_prefix(tri_buf_begin(b), 0, (uint32_t)n);
  b->off += pre; /* the caller writes the message at tri_buf_begin */
  return b;
}

tri_buf *srv_msg_done(srv_stream *st, tri_buf *b, size_t n) {
  size_t pre = st->wire == WIRE_GRPC ? TRI_FRAME_PREFIX : 0;
  b->off -= pre;
  b->len = pre + n;
  return b;
}
