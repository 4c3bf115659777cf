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
#include "tri_handoff.h"
#include "tri_int.h"
#include "tri_loop.h"
#include "tri_wire.h"
#include "tri_writer.h"
#include "tri_tjson.h"

#define MD_STATUS_MESSAGE 2 /* record kind of the status message */
#define REC_HDR 9
#define RECV_QUEUE_LIMIT (4 << 20) /* unread bytes before the window stops */
#define SEND_LIMIT_MIN (256 << 10) /* unsent bytes before writers block */

static void futex_wake_all(_Atomic uint32_t *word) {
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}

/* Waits while *word (a futex word of `c`) == seen, up to timeout_ns (< 0:
 * forever); may return early.  A call whose connection runs on a driven loop
 * (tri_loop.h) may have nobody else to turn it: the wait turns it itself. */
static void futex_wait_seq(tri_call *c, _Atomic uint32_t *word, uint32_t seen,
                           int64_t timeout_ns) {
  tri_loop *loop = c->ch->opts.io_loop;
  if (loop && tri_loop_is_driven(loop)) {
    tri_loop_block(loop, word, seen, timeout_ns);
    return;
  }
  struct timespec ts, *tsp = NULL;
  if (timeout_ns >= 0) {
    ts.tv_sec = timeout_ns / 1000000000LL;
    ts.tv_nsec = timeout_ns % 1000000000LL;
    tsp = &ts;
  }
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, seen, tsp, NULL, 0);
}

static void bump(_Atomic uint32_t *seq, _Atomic int *waiters) {
  atomic_fetch_add(seq, 1);
  if (atomic_load(waiters)) futex_wake_all(seq);
}

/* Queues one of the call's ops with a reference of its own, unless `flag`
 * says it is queued already. */
static void push_op(tri_call *c, tri_op *op, _Atomic int *flag) {
  if (flag && atomic_exchange(flag, 1)) return;
  atomic_fetch_add(&c->refs, 1);
  if (!c->conn || tri__conn_push(c->conn, &op->node)) {
    if (flag) atomic_store(flag, 0);
    atomic_fetch_sub(&c->refs, 1); /* a dead connection fails the call itself */
  }
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

static ssize_t stream_sink(void *ctx, tri_buf *chunk, int end, int may_block);
static void stream_armed(void *ctx);

int tri_call_new(tri_channel *ch, tri_call **out, const char *path,
                 size_t path_len, int64_t timeout_ns, int flags) {
  if (path_len == 0 || path[0] != '/') return TRI_ERR_INVALID;
  tri_call *c = tri__channel_call_get(ch);
  if (!c) return TRI_ERR_NOMEM;
  /* The struct's kept header buffer when it fits, else one from the pool. */
  size_t need = path_len + 256;
  tri_buf *kept = c->hdr_spare;
  c->hdr_spare = NULL;
  if (kept && kept->cap >= need) {
    kept->off = kept->len = 0;
    c->hdr = kept;
  } else {
    tri_pool_put(&ch->pool, kept);
    c->hdr = tri_pool_get(&ch->pool, need, 0);
  }
  if (!c->hdr) {
    tri__channel_call_put(ch, c);
    return TRI_ERR_NOMEM;
  }
  tri_buf_append(&ch->pool, &c->hdr, path, path_len);
  c->path_len = path_len;
  c->deadline = timeout_ns < 0 ? 0 : tri__now() + timeout_ns;
  if (timeout_ns == 0) c->deadline = tri__now(); /* already expired */
  c->flags = flags;
  c->triple =
      ch->opts.wire == TRI_WIRE_TRIPLE &&
      ((flags & ~(TRI_CALL_DISCARD_BODY | TRI_CALL_OWNABLE_RESPONSES)) == 0 ||
       (flags & TRI_CALL_UNARY_BODY));
  c->discard =
      (flags & TRI_CALL_DISCARD_BODY) && !(flags & TRI_CALL_SERVER_STREAMING);
  c->compress = ch->opts.compress;
  pthread_mutex_init(&c->rlock, NULL);
  if (flags & TRI_CALL_CLIENT_STREAMING) {
    tri_writer_sink sink = {stream_sink, stream_armed, c};
    tri_writer_init(&c->writer, &ch->pool, ch->opts.write_buffer_size, &sink);
    c->writer.bare = c->triple; /* the Triple unary body has no envelope */
    tri_mpsc_init(&c->chunkq);
    c->data_op.kind = TRI_OP_DATA;
    c->timer_op.kind = TRI_OP_TIMER;
    int64_t wm = ch->opts.write_buffer_size;
    c->send_limit = 4 * wm > SEND_LIMIT_MIN ? 4 * wm : SEND_LIMIT_MIN;
  }
  c->credit_op.kind = TRI_OP_CREDIT;
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

/* Bytes of envelope in front of the payload: none on the Triple unary wire,
 * whose body is the bare message. */
static size_t prefix_len(const tri_call *c) {
  return c->triple ? 0 : TRI_FRAME_PREFIX;
}

void tri_call_set_request_borrowed(tri_call *c, const uint8_t *p, size_t n) {
  tri_frame_put_prefix(c->prefix, 0, (uint32_t)n);
  c->seg0 = c->prefix;
  c->seg0_len = prefix_len(c);
  c->seg1 = p;
  c->seg1_len = n;
}

static void set_request_buf(tri_call *c, tri_buf *b, uint8_t flags) {
  /* The prefix goes into the headroom so prefix and payload are one run. */
  size_t pl = prefix_len(c);
  if (pl) {
    b->off -= pl;
    tri_frame_put_prefix(b->data + b->off, flags, (uint32_t)b->len);
    b->len += pl;
  }
  c->req = b;
  c->seg0 = NULL;
  c->seg0_len = 0;
  c->seg1 = tri_buf_begin(b);
  c->seg1_len = b->len;
}

void tri_call_set_request_buf(tri_call *c, tri_buf *b) { set_request_buf(c, b, 0); }

void tri_call_set_compression(tri_call *c, int compress) { c->compress = compress; }

/* The tri_gzip format of a TRI_COMPRESS_* value other than NONE. */
static int zformat(int compress) {
  return compress == TRI_COMPRESS_DEFLATE ? TRI_ZFMT_DEFLATE : TRI_ZFMT_GZIP;
}

/* Replaces the request with its compressed form (caller thread, before start). */
static int compress_request(tri_call *c) {
  size_t pl = c->req ? prefix_len(c) : 0;
  const uint8_t *p = c->req ? tri_buf_begin(c->req) + pl : c->seg1;
  size_t n = c->req ? c->req->len - pl : c->seg1_len;
  tri_buf *z;
  int rv = tri_zlib_compress(&c->ch->zpool, zformat(c->compress), &c->ch->pool, p, n,
                             TRI_FRAME_PREFIX, &z);
  if (rv) return rv;
  tri_pool_put(&c->ch->pool, c->req);
  set_request_buf(c, z, TRI_FRAME_FLAG_COMPRESSED);
  return 0;
}

void tri_call_set_notify(tri_call *c, void *token) {
  tri_call_set_notify_events(c, token, TRI_EV_DONE);
}

void tri_call_set_notify_events(tri_call *c, void *token, int mask) {
  c->token = token;
  c->notify = mask;
}

/* Queues the call's token if it asked for `ev` and is not queued already. */
static void notify_event(tri_call *c, int ev) {
  /* Nothing after DONE: the caller may let go of its token then.  (All
   * events come from the I/O thread, so `done` cannot change under us.) */
  if (ev != TRI_EV_DONE && atomic_load(&c->done)) return;
  if ((c->notify & ev) && !atomic_exchange(&c->notify_queued, 1))
    tri__channel_notify(c->ch, c);
}

void *tri_call_token(const tri_call *c) { return c->token; }

static size_t payload_len(const tri_call *c) {
  if (c->flags & TRI_CALL_CLIENT_STREAMING) return 0; /* checked per write */
  return c->seg0_len + c->seg1_len - prefix_len(c);
}

int tri_call_start(tri_call *c) {
  tri_channel *ch = c->ch;
  c->started = 1;
  TRI_STATS_ADD(&ch->stats, calls, 1);
  if (!(c->flags & TRI_CALL_CLIENT_STREAMING) && !c->seg1 && !c->seg0)
    tri_call_set_request_borrowed(c, NULL, 0);
  /* Until the call is handed to a connection only this thread sees it, so
   * the notify mask may be lifted for the endings found here. */
  int mask = c->notify;
  if (mask & TRI_EV_QUIET_START) c->notify = 0;
  if (atomic_load(&c->cancel_req)) {
    tri__call_complete(c, c->cancel_code, "%s", c->cancel_msg);
    goto ended;
  }
  if (ch->opts.max_send_bytes >= 0 &&
      payload_len(c) > (size_t)ch->opts.max_send_bytes) {
    tri__call_complete(c, TRI_CODE_RESOURCE_EXHAUSTED,
                       "Sent message larger than max (%zu vs. %lld)",
                       payload_len(c), (long long)ch->opts.max_send_bytes);
    goto ended;
  }
  if (c->compress != TRI_COMPRESS_NONE &&
      !(c->flags & TRI_CALL_CLIENT_STREAMING) && compress_request(c)) {
    tri__call_complete(c, TRI_CODE_INTERNAL, "request compression failed");
    goto ended;
  }
  tri_conn *avoid = NULL;
  for (int attempt = 0; attempt < 3; attempt++) {
    tri_conn *conn;
    char why[400];
    int rv = tri__channel_conn(ch, avoid, &conn, why, sizeof(why));
    if (rv) {
      /* Closed: CANCELLED, as grpcio.  No connection (backing off, or none
       * could be made): UNAVAILABLE at once, as grpcio without wait_for_ready. */
      c->unprocessed = rv == TRI_ERR_CLOSED ? 0 : TRI_UNPROCESSED_NO_CONNECTION;
      tri__call_complete(c, rv == TRI_ERR_CLOSED ? TRI_CODE_CANCELLED : TRI_CODE_UNAVAILABLE,
                         "%s", why);
      goto ended;
    }
    c->conn = conn;
    c->notify = mask; /* before the push: the I/O thread reads it */
    atomic_fetch_add(&c->refs, 1); /* the I/O thread's reference */
    if (tri__conn_push(conn, &c->submit_op.node) == 0) return 0;
    if (mask & TRI_EV_QUIET_START) c->notify = 0; /* refused: still ours */
    atomic_fetch_sub(&c->refs, 1);
    c->conn = NULL;
    avoid = conn;
    tri__conn_unref(conn);
  }
  c->unprocessed = TRI_UNPROCESSED_REFUSED;
  tri__call_complete(c, TRI_CODE_UNAVAILABLE, "connection is closing");
ended:
  c->notify = mask;
  return 1;
}

int tri_call_done(const tri_call *c) {
  return atomic_load_explicit(&((tri_call *)c)->done, memory_order_acquire);
}

int tri_call_notify_final(const tri_call *c) { return c->notify_final; }

int64_t tri_call_deadline(const tri_call *c) { return c->deadline; }

int tri_call_unprocessed(const tri_call *c) {
  return tri_call_done(c) ? (int)c->unprocessed : 0;
}

int tri_call_response_started(const tri_call *c) {
  return atomic_load(&c->headers_done) && c->response_started;
}

void tri_call_set_handoff(tri_call *c) {
  c->handoff = !(c->flags & (TRI_CALL_CLIENT_STREAMING | TRI_CALL_SERVER_STREAMING));
}

int tri_call_wait(tri_call *c, int64_t timeout_ns) {
  if (tri_call_done(c)) {
    if (c->handoff) tri__handoff_resumed(c);
    return 0;
  }
  int64_t end = timeout_ns < 0 ? 0 : tri__now() + timeout_ns;
  atomic_fetch_add(&c->waiters, 1);
  if (c->handoff) tri_handoff_yield(); /* about to sleep: the next caller's turn */
  if (!atomic_load(&c->done)) tri__wakes_flush();
  while (!atomic_load(&c->done)) {
    int64_t left = -1;
    if (timeout_ns >= 0) {
      left = end - tri__now();
      if (left <= 0) break;
    }
    futex_wait_seq(c, (_Atomic uint32_t *)(void *)&c->done, 0, left);
  }
  atomic_fetch_sub(&c->waiters, 1);
  if (!atomic_load(&c->done)) return TRI_ERR_TIMEOUT;
  if (c->handoff) tri__handoff_resumed(c);
  return 0;
}

int tri_call_cancel(tri_call *c, int code, const char *message) {
  int expected = 0;
  if (tri_call_done(c) || tri_call_orphaned(c)) return 0;
  if (!atomic_compare_exchange_strong(&c->cancel_req, &expected, 2)) return 0;
  c->cancel_code = code;
  c->cancel_msg = message;
  atomic_store(&c->cancel_req, 1);
  /* Not started yet: tri_call_start sees cancel_req.  A dead connection
   * fails the call by itself, so a refused push needs no handling. */
  push_op(c, &c->cancel_op, NULL);
  return 1;
}

int tri_call_code(const tri_call *c) { return c->code; }

int tri_call_orphaned(const tri_call *c) {
  return c->started && !tri_call_done(c) && tri_channel_inherited(c->ch);
}

int tri_call_cancel_requested(const tri_call *c) {
  return atomic_load(&((tri_call *)c)->cancel_req) != 0;
}

void tri_call_message(const tri_call *c, const char **p, size_t *n) {
  static const char lost[] = "out of memory (the status message was lost)";
  if (c->msg_lost) {
    *p = lost;
    *n = sizeof(lost) - 1;
    return;
  }
  *p = c->md && c->msg_len ? (const char *)c->md->data + c->md->off + c->msg_off
                           : "";
  *n = c->md ? c->msg_len : 0;
}

void tri_call_response(const tri_call *c, const uint8_t **p, size_t *n) {
  *p = c->resp ? tri_buf_begin(c->resp) : NULL;
  *n = c->resp ? c->resp->len : 0;
}

tri_buf *tri_call_take_response(tri_call *c) {
  tri_buf *b = c->resp;
  if (!b || !tri_buf_detached(b)) return NULL;
  c->resp_size = b->len;
  c->resp = NULL;
  return b;
}

int tri_call_response_size(const tri_call *c, size_t *n) {
  /* A unary call that ended OK got its one message (it would have ended
   * INTERNAL otherwise: tri__call_on_close).  got_message is not read here: it
   * is a bit field next to in_session, which the I/O thread still writes
   * after the call completed (stream_closed), so reading it from the
   * caller's thread would be a data race (TSan's stress run). */
  int got = c->code == TRI_CODE_OK;
  *n = !got ? 0 : c->resp ? c->resp->len : c->resp_size;
  return got;
}

int tri_call_md_next(const tri_call *c, size_t *iter, int *kind,
                     const char **key, size_t *kn, const char **value,
                     size_t *vn) {
  size_t ilen = c->imd ? c->imd->len : 0;
  for (;;) {
    const uint8_t *k, *v;
    if (*iter < ilen) {
      if (read_record(c->imd, iter, kind, &k, kn, &v, vn)) return -1;
      *key = (const char *)k;
      *value = (const char *)v;
      return 0;
    }
    size_t off = *iter - ilen;
    int rv = read_record(c->md, &off, kind, &k, kn, &v, vn);
    *iter = off + ilen;
    if (rv) return -1;
    if (*kind == MD_STATUS_MESSAGE) continue;
    *key = (const char *)k;
    *value = (const char *)v;
    return 0;
  }
}

void tri_call_release(tri_call *c) {
  if (tri_call_orphaned(c)) return; /* the parent's I/O thread holds it: nothing here */
  if (c->started && !tri_call_done(c)) {
    tri_call_cancel(c, TRI_CODE_CANCELLED, "Cancelled");
    tri_call_wait(c, -1);
  }
  tri__call_unref(c);
}

void tri__call_unref(tri_call *c) {
  if (atomic_fetch_sub(&c->refs, 1) != 1) return;
  tri_channel *ch = c->ch;
  if (c->hdr && c->hdr->cap <= TRI_CALL_HDR_KEEP) { /* for the struct's next call */
    c->hdr_spare = c->hdr;
    c->hdr = NULL;
  }
  tri_pool_put(&ch->pool, c->hdr);
  tri_pool_put(&ch->pool, c->req);
  tri_pool_put(&ch->pool, c->resp);
  tri_pool_put(&ch->pool, c->md);
  tri_pool_put(&ch->pool, c->imd);
  tri__call_free_streams(c);
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
    } else {
      c->msg_lost = 1;
    }
  }
  if (code != TRI_CODE_OK && c->resp) {
    tri_pool_put(&c->ch->pool, c->resp); /* grpcio gives no response on error */
    c->resp = NULL;
  }
  if (c->conn) tri__conn_call_finished(c->conn, c);
  /* Decided before `done` is published: a waiter that sees done sees it.  A
   * large response's caller is woken at once: its copy and parse are long,
   * and another caller may run meanwhile. */
  int handoff = c->handoff && tri__conn_on_io_thread() &&
                !(c->resp && c->resp->len >= TRI_HANDOFF_DIRECT_BYTES);
  if (handoff) atomic_store(&c->hstate, TRI_HS_QUEUED);
  atomic_store(&c->done, 1);
  /* Readers and writers blocked on this call see the end. */
  bump(&c->recv_seq, &c->recv_waiters);
  bump(&c->send_seq, &c->send_waiters);
  notify_event(c, TRI_EV_DONE);
  if (!atomic_load(&c->waiters)) return;
  if (handoff) tri__handoff_push(c); /* woken in turn (tri_handoff.h) */
  else syscall(SYS_futex, &c->done, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
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
  tri_buf **bp = kind == TRI_MD_INITIAL ? &c->imd : &c->md;
  if (!*bp && !(*bp = tri_pool_get(pool, 512, 0))) return TRI_ERR_NOMEM;
  if (!tri_md_key_is_bin((const char *)n, nl))
    return append_record(pool, bp, kind, n, nl, v, vl);
  /* Binary: each comma-separated base64 part is one value. */
  size_t start = 0;
  for (size_t i = 0; i <= vl; i++) {
    if (i < vl && v[i] != ',') continue;
    size_t part = i - start;
    int rv = tri_buf_reserve(pool, &(*bp), REC_HDR + nl + part);
    if (rv) return rv;
    uint8_t *dst = tri_buf_begin((*bp)) + (*bp)->len + REC_HDR + nl;
    long dn = tri_base64_decode((const char *)v + start, part, dst);
    if (dn < 0) dn = 0; /* undecodable: keep the key with an empty value */
    uint8_t h[REC_HDR];
    uint32_t k32 = (uint32_t)nl, v32 = (uint32_t)dn;
    h[0] = (uint8_t)kind;
    memcpy(h + 1, &k32, 4);
    memcpy(h + 5, &v32, 4);
    memcpy(tri_buf_begin((*bp)) + (*bp)->len, h, REC_HDR);
    memcpy(tri_buf_begin((*bp)) + (*bp)->len + REC_HDR, n, nl);
    (*bp)->len += REC_HDR + nl + (size_t)dn;
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
    c->block_has_status = 1;
    return 0;
  }
  if (name_is(name, nl, c->triple ? "content-encoding" : "grpc-encoding")) {
    /* Only a response header block (it has :status) says how the body is
     * encoded; in trailers, after the body, the field is ignored, as HTTP
     * forbids content-processing fields there. */
    if (!c->block_has_status) return 0;
    c->resp_deflate = vl == 7 && memcmp(value, "deflate", 7) == 0;
    c->resp_gzip = c->resp_deflate || (vl == 4 && memcmp(value, "gzip", 4) == 0);
    c->resp_enc_unknown = !c->resp_gzip && !(vl == 8 && memcmp(value, "identity", 8) == 0);
    return 0;
  }
  if (c->triple) {
    if (name_is(name, nl, "content-type")) {
      /* A Triple answer is application/<codec>; anything else (an HTML error
       * page from a proxy, say) is not a message. */
      if (vl < 12 || memcmp(value, "application/", 12) != 0) c->bad_content_type = 1;
      return 0;
    }
    /* Triple: trailing metadata travels as "trailer-" headers (§1.3). */
    if (nl > 8 && memcmp(name, "trailer-", 8) == 0)
      return add_received_md(c, TRI_MD_TRAILING, name + 8, nl - 8, value, vl);
    if (transport_key(name, nl) || name_is(name, nl, "accept-encoding") ||
        (nl > 7 && memcmp(name, "triple-", 7) == 0))
      return 0;
    return add_received_md(c, TRI_MD_INITIAL, name, nl, value, vl);
  }
  if (name_is(name, nl, "content-type")) {
    static const char g[] = "application/grpc";
    if (vl < sizeof(g) - 1 || memcmp(value, g, sizeof(g) - 1) != 0 ||
        (vl > sizeof(g) - 1 && value[sizeof(g) - 1] != '+' &&
         value[sizeof(g) - 1] != ';')) {
      c->bad_content_type = 1;
      size_t k = vl < sizeof(c->bad_ct) - 1 ? vl : sizeof(c->bad_ct) - 1;
      for (size_t i = 0; i < k; i++) /* printable ASCII only in messages */
        c->bad_ct[i] =
            value[i] >= 0x20 && value[i] < 0x7f ? (char)value[i] : '?';
      c->bad_ct[k] = 0;
    }
    return 0;
  }
  if (name_is(name, nl, "grpc-status")) {
    int s = tri_parse_status((const char *)value, vl);
    c->grpc_status = s < 0 ? -2 : s;
    return 0;
  }
  if (name_is(name, nl, "grpc-message")) {
    /* grpc-go sends an empty one with every OK: nothing to keep, and no
     * buffer taken for it (tri_call_message gives "" either way). */
    if (vl == 0) return 0;
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

/* A complete response message: keep it (unary response) or queue it for the
 * reader (server streaming). */
static int message_done(tri_call *c) {
  if (!(c->flags & TRI_CALL_SERVER_STREAMING)) {
    c->got_message = 1;
    return 0;
  }
  tri_buf *m = c->resp;
  c->resp = NULL;
  c->got_message = 1;
  m->next = NULL;
  pthread_mutex_lock(&c->rlock);
  if (c->recvq_tail) c->recvq_tail->next = m;
  else c->recvq = m;
  c->recvq_tail = m;
  atomic_fetch_add(&c->recvq_bytes, (int64_t)m->len + TRI_FRAME_PREFIX);
  pthread_mutex_unlock(&c->rlock);
  bump(&c->recv_seq, &c->recv_waiters);
  notify_event(c, TRI_EV_MESSAGE);
  return 0;
}

/* Triple unary: the body is the bare message (or a JSON error); collect it
 * whole, bounded by the receive limit (error bodies by 1 MiB). */
static int triple_body(tri_call *c, const uint8_t *data, size_t len,
                       int64_t max_recv) {
  tri_pool *pool = &c->ch->pool;
  int64_t cap = c->http_status == 200 ? max_recv : (1 << 20);
  size_t have = c->resp ? c->resp->len : c->resp_size;
  if (cap >= 0 && have + len > (uint64_t)cap) {
    tri__call_complete(c, TRI_CODE_RESOURCE_EXHAUSTED,
                       "Received message larger than max (%zu vs. %lld)",
                       have + len, (long long)cap);
    return TRI_CODE_RESOURCE_EXHAUSTED;
  }
  /* Counted only: a 200 body that needs no inflating and no parsing. */
  if (c->discard && c->http_status == 200 && !c->resp_gzip &&
      !c->resp_enc_unknown) {
    c->resp_size += len;
    return 0;
  }
  if ((!c->resp && !(c->resp = tri_pool_get(pool, len, 0))) ||
      tri_buf_append(pool, &c->resp, data, len)) {
    tri__call_complete(c, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
    return TRI_CODE_RESOURCE_EXHAUSTED;
  }
  return 0;
}

/* Inflates the message just received (flag 0x01) in place of c->resp. */
static int inflate_message(tri_call *c, int64_t max_recv) {
  tri_buf *out;
  int rv = tri_zlib_decompress(&c->ch->zpool,
                               c->resp_deflate ? TRI_ZFMT_DEFLATE : TRI_ZFMT_GZIP,
                               &c->ch->pool, tri_buf_begin(c->resp), c->resp->len,
                               max_recv, &out);
  if (rv == TRI_ERR_TOO_LARGE) {
    tri__call_complete(c, TRI_CODE_RESOURCE_EXHAUSTED,
                       "Received message larger than max after decompression "
                       "(limit %lld)", (long long)max_recv);
    return TRI_CODE_RESOURCE_EXHAUSTED;
  }
  if (rv) {
    tri__call_complete(c, TRI_CODE_INTERNAL, "%s",
                       rv == TRI_ERR_NOMEM ? "out of memory inflating a message"
                                           : "corrupt compressed message (invalid, truncated "
                                             "or trailing data)");
    return TRI_CODE_INTERNAL;
  }
  tri_pool_put(&c->ch->pool, c->resp);
  c->resp = out;
  return 0;
}

/* DISCARD_BODY: a message that had to be kept (to inflate it) is dropped
 * once checked, leaving its length. */
static void drop_kept(tri_call *c) {
  if (!c->discard || !c->resp) return;
  c->resp_size = c->resp->len;
  tri_pool_put(&c->ch->pool, c->resp);
  c->resp = NULL;
}

/* Whether a gRPC message of `length` bytes goes into a buffer of its own
 * (TRI_CALL_OWNABLE_RESPONSES): uncompressed (an inflated message is written
 * elsewhere) and big enough that a second copy would cost more than the
 * allocation the pool saves. */
static int ownable(const tri_call *c, uint32_t length) {
  return (c->flags & TRI_CALL_OWNABLE_RESPONSES) && !c->msg_compressed &&
         length >= TRI_CALL_OWNABLE_MIN;
}

size_t tri__call_body_room(tri_call *c, uint8_t **dst) {
  if (c->completed || c->triple || c->http_status != 200 || c->bad_content_type ||
      c->malformed || c->counting || c->msg_compressed || !c->resp || !c->dec.in_body ||
      c->resp->len != c->dec.got)
    return 0;
  *dst = tri_buf_begin(c->resp) + c->resp->len;
  return c->dec.length - c->dec.got;
}

int tri__call_on_data(tri_call *c, const uint8_t *data, size_t len,
                      int64_t max_recv) {
  if (c->completed) return 0;
  if (c->triple) return triple_body(c, data, len, max_recv);
  /* A body that is not gRPC (HTTP error page, wrong content-type) is
   * ignored: the status comes from the HTTP status at the end. */
  if (c->http_status != 200 || c->bad_content_type) return 0;
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
      if ((ev.flags & TRI_FRAME_FLAG_COMPRESSED) && !c->resp_gzip) {
        tri__call_complete(c, TRI_CODE_INTERNAL,
                           c->resp_enc_unknown
                               ? "compressed message with an unsupported grpc-encoding"
                               : "compressed message without grpc-encoding");
        return TRI_CODE_INTERNAL;
      }
      c->msg_compressed = (ev.flags & TRI_FRAME_FLAG_COMPRESSED) != 0;
      if (max_recv >= 0 && ev.length > (uint64_t)max_recv) {
        tri__call_complete(c, TRI_CODE_RESOURCE_EXHAUSTED,
                           "Received message larger than max (%u vs. %lld)",
                           ev.length, (long long)max_recv);
        return TRI_CODE_RESOURCE_EXHAUSTED;
      }
      if (c->got_message && !(c->flags & TRI_CALL_SERVER_STREAMING)) {
        tri__call_complete(c, TRI_CODE_INTERNAL,
                           "unary call received more than one message");
        return TRI_CODE_INTERNAL;
      }
      c->counting = c->discard && !c->msg_compressed;
      if (c->counting) {
        c->resp_size = 0;
        break;
      }
      c->resp = ownable(c, ev.length)
                    ? tri_buf_new(&c->ch->stats, (size_t)ev.length + 1,
                                  TRI_CALL_OWNABLE_HEADROOM)
                    : tri_pool_get(pool, ev.length, 0);
      if (!c->resp) {
        tri__call_complete(c, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
        return TRI_CODE_RESOURCE_EXHAUSTED;
      }
      break;
    case TRI_FRAME_CHUNK:
      if (c->counting) {
        c->resp_size += ev.len;
        break;
      }
      {
        uint8_t *to = tri_buf_begin(c->resp) + c->resp->len;
        if (ev.data != to) /* else an in-place read put it there already */
          memcpy(to, ev.data, ev.len);
      }
      c->resp->len += ev.len;
      break;
    case TRI_FRAME_END:
      if (c->msg_compressed) {
        int code = inflate_message(c, max_recv);
        if (code) return code;
      }
      drop_kept(c);
      c->counting = 0;
      message_done(c);
      break;
    }
  }
}

/* Final status of a Triple unary call: 200 carries the message; anything
 * else a JSON error, or nothing usable, then table B (§5). */
static void triple_close(tri_call *c) {
  tri_pool *pool = &c->ch->pool;
  if (c->resp_gzip && c->resp && c->resp->len) {
    int64_t limit = c->http_status == 200 ? c->ch->opts.max_recv_bytes : (1 << 20);
    if (inflate_message(c, limit)) return;
  } else if (c->resp_enc_unknown && c->resp && c->resp->len) {
    tri__call_complete(c, TRI_CODE_INTERNAL, "unknown content-encoding");
    return;
  }
  if (c->http_status == 200 && c->bad_content_type) {
    tri__call_complete(c, TRI_CODE_INTERNAL, "unexpected content-type in a Triple response");
    return;
  }
  if (c->http_status == 200 && c->discard) {
    drop_kept(c); /* inflated above when compressed; counted otherwise */
    message_done(c);
    tri__call_complete(c, TRI_CODE_OK, NULL);
    return;
  }
  if (c->http_status == 200) {
    if (!c->resp && !(c->resp = tri_pool_get(pool, 0, 0))) {
      tri__call_complete(c, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
      return;
    }
    message_done(c); /* kept, or queued for tri_call_read */
    tri__call_complete(c, TRI_CODE_OK, NULL);
    return;
  }
  size_t n = c->resp ? c->resp->len : 0;
  tri_buf *scratch = tri_pool_get(pool, TRI_TJSON_MSG_CAP(n) + TRI_TJSON_PB_CAP(n), 0);
  int code;
  size_t ml, pl;
  if (scratch && n &&
      tri_tjson_error_parse((const char *)tri_buf_begin(c->resp), n, &code,
                            (char *)tri_buf_begin(scratch), &ml,
                            tri_buf_begin(scratch) + TRI_TJSON_MSG_CAP(n),
                            &pl) == 0) {
    /* Already binary (a google.rpc.Status): stored as is, not base64-decoded. */
    if (!c->md) c->md = tri_pool_get(pool, 512, 0);
    if (c->md)
      append_record(pool, &c->md, TRI_MD_TRAILING, "grpc-status-details-bin", 23,
                    tri_buf_begin(scratch) + TRI_TJSON_MSG_CAP(n), pl);
    tri__call_complete(c, code, "%.*s", (int)ml, (const char *)tri_buf_begin(scratch));
  } else {
    tri__call_complete(c, tri_code_from_http_triple(c->http_status),
                       "HTTP status %d", c->http_status);
  }
  tri_pool_put(pool, scratch);
}

void tri__call_on_close(tri_call *c, uint32_t error_code) {
  if (c->completed) return;
  if (c->triple && error_code == NGHTTP2_NO_ERROR) {
    triple_close(c);
    return;
  }
  if (c->grpc_status == -1 && error_code != NGHTTP2_NO_ERROR) {
    if (error_code == NGHTTP2_REFUSED_STREAM)
      c->unprocessed = c->http_status == 0 ? TRI_UNPROCESSED_REFUSED : 0; /* no response */
    if (error_code == NGHTTP2_REFUSED_STREAM && c->conn && c->conn->goaway)
      tri__call_complete(c, TRI_CODE_UNAVAILABLE,
                         "stream not processed: the server sent GOAWAY");
    else
      tri__call_complete(c, tri_code_from_rst(error_code),
                         "stream reset by peer: %s (0x%x)",
                         nghttp2_http2_strerror(error_code), error_code);
    return;
  }
  if (c->http_status == 200 && c->bad_content_type) {
    /* Not a gRPC answer, whatever it carries: grpc's HTTP-to-gRPC mapping
     * gives UNKNOWN for 200 (as grpc-go and grpcio do). */
    tri__call_complete(
        c, TRI_CODE_UNKNOWN,
        "HTTP status 200 with content-type \"%s\", not application/grpc",
        c->bad_ct);
    return;
  }
  if (c->grpc_status == -1) {
    if (c->http_status != 200 && c->http_status != 0)
      tri__call_complete(c, tri_code_from_http(c->http_status),
                         "Received http2 header with status: %d",
                         c->http_status);
    else
      tri__call_complete(c, TRI_CODE_INTERNAL,
                         "response ended without grpc-status");
    return;
  }
  if (c->grpc_status == -2) {
    tri__call_complete(c, TRI_CODE_INTERNAL, "malformed grpc-status");
    return;
  }
  int code = c->grpc_status > 16 ? TRI_CODE_UNKNOWN : c->grpc_status;
  /* A cut-off message only matters when the server claims success: an error
   * status (a deadline, say) may legitimately end a stream mid-message. */
  if (code == TRI_CODE_OK && tri_frame_decoder_partial(&c->dec)) {
    tri__call_complete(c, TRI_CODE_INTERNAL,
                       "response ended inside a message (truncated)");
    return;
  }
  if (code == TRI_CODE_OK && !c->got_message &&
      !(c->flags & TRI_CALL_SERVER_STREAMING)) {
    tri__call_complete(c, TRI_CODE_INTERNAL,
                       "unary call completed without a response message");
    return;
  }
  tri__call_complete(c, code, NULL);
}

void tri__call_headers_done(tri_call *c) {
  if (atomic_exchange(&c->headers_done, 1)) return;
  bump(&c->recv_seq, &c->recv_waiters);
  notify_event(c, TRI_EV_HEADERS);
}

/* ---- client streaming ------------------------------------------------- */

/* Waits (caller thread) until `len` more unsent bytes fit, or the call ends. */
static int wait_for_room(tri_call *c, size_t len) {
  for (;;) {
    uint32_t seen = atomic_load(&c->send_seq);
    if (tri_call_done(c)) return TRI_ERR_CLOSED;
    int64_t u = atomic_load(&c->unsent);
    if (u == 0 || u + (int64_t)len <= c->send_limit) return 0;
    atomic_fetch_add(&c->send_waiters, 1);
    tri__wakes_flush();
    futex_wait_seq(c, &c->send_seq, seen, -1);
    atomic_fetch_sub(&c->send_waiters, 1);
  }
}

/* The writer's sink: hands sealed chunks to the I/O thread. */
static ssize_t stream_sink(void *ctx, tri_buf *chunk, int end, int may_block) {
  tri_call *c = ctx;
  size_t len = chunk ? chunk->len : 0;
  if (chunk && may_block) {
    int rv = wait_for_room(c, len);
    if (rv) {
      tri_pool_put(&c->ch->pool, chunk);
      return rv;
    }
  }
  if (tri_call_done(c)) {
    tri_pool_put(&c->ch->pool, chunk);
    return TRI_ERR_CLOSED;
  }
  if (chunk) {
    atomic_fetch_add(&c->unsent, (int64_t)len);
    tri_mpsc_push(&c->chunkq, &chunk->qnode);
  }
  if (end) atomic_store(&c->end_requested, 1);
  push_op(c, &c->data_op, &c->data_queued);
  return (ssize_t)len;
}

static void stream_armed(void *ctx) {
  tri_call *c = ctx;
  if (c->ch->opts.write_buffer_delay_us == 0) return;
  push_op(c, &c->timer_op, &c->timer_queued);
}

/* Returns `rv`.  A request message lost for want of memory would leave
 * the server waiting for the rest of the stream, so out of memory ends the
 * call (RESOURCE_EXHAUSTED; the server sees RST_STREAM). */
static int write_result(tri_call *c, int rv) {
  if (rv == TRI_ERR_NOMEM)
    tri_call_cancel(c, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory writing the request");
  return rv;
}

/* A reader waits for a message and none of our bytes are in flight. */
static int nagle_sends_now(tri_call *c) {
  return atomic_load(&c->readers) && atomic_load(&c->unsent) == 0;
}

int tri_call_write(tri_call *c, const uint8_t *msg, size_t n) {
  if (!(c->flags & TRI_CALL_CLIENT_STREAMING) || !c->started)
    return TRI_ERR_INVALID;
  if (tri_call_done(c) || atomic_load(&c->cancel_req)) return TRI_ERR_CLOSED;
  int64_t max = c->ch->opts.max_send_bytes;
  if (max >= 0 && n > (size_t)max) return TRI_ERR_TOO_LARGE;
  /* One bare message: a second would corrupt the body (writers may race). */
  if (c->triple && atomic_exchange(&c->triple_written, 1)) return TRI_ERR_INVALID;
  /* Nagle's rule for a reader that waits (see wait_message): with nothing
   * in flight the message goes at once, and no flush timer is armed. */
  int (*write)(tri_writer *, const uint8_t *, size_t, uint8_t) =
      nagle_sends_now(c) ? tri_writer_write_now : tri_writer_write;
  int rv;
  if (c->compress == TRI_COMPRESS_NONE) {
    rv = write(&c->writer, msg, n, 0);
  } else {
    tri_buf *z;
    rv = tri_zlib_compress(&c->ch->zpool, zformat(c->compress), &c->ch->pool, msg, n, 0,
                           &z);
    if (rv) return write_result(c, rv);
    rv = write(&c->writer, tri_buf_begin(z), z->len, TRI_FRAME_FLAG_COMPRESSED);
    tri_pool_put(&c->ch->pool, z);
  }
  /* Looked at again after writing: a reader that began to wait meanwhile
   * may have found nothing to flush yet. */
  if (rv == 0 && write == tri_writer_write && nagle_sends_now(c))
    tri_writer_flush_nowait(&c->writer);
  return write_result(c, rv);
}

int tri_call_write_would_not_block(tri_call *c, size_t n) {
  /* Without the writer's lock: the I/O thread holds it for an instant when
   * its flush timer looks at the chunk, and "would block" said then, with
   * nothing queued, would wait for a TRI_EV_WRITABLE that never comes (an
   * asyncio ping-pong stream hung until its deadline that way). */
  int64_t unsent = atomic_load(&c->unsent);
  int64_t pending = tri_writer_pending_bytes(&c->writer);
  /* Nothing queued anywhere: a write never waits (the sink lets one batch
   * through whatever its size). */
  if (unsent == 0 && pending == 0) return 1;
  int64_t worst = (int64_t)(n + TRI_FRAME_PREFIX + c->writer.watermark);
  if (unsent + pending + worst <= c->send_limit) return 1;
  /* It would wait.  Make sure something is in flight, so that its being
   * written produces TRI_EV_WRITABLE: with nothing unsent, handing the
   * pending chunk over cannot block. */
  if (unsent == 0) tri_writer_flush(&c->writer);
  return 0;
}

static int64_t deadline_of(int64_t timeout_ns) {
  return timeout_ns < 0 ? 0 : tri__now() + timeout_ns;
}

/* Sleeps until *seq moves past `seen` or the deadline `end` (0: none) passes,
 * counted in *waiters meanwhile (so that bump() wakes it).  Returns
 * TRI_ERR_TIMEOUT once the deadline has passed, else 0. */
static int wait_seq(tri_call *c, _Atomic uint32_t *seq, _Atomic int *waiters,
                    uint32_t seen, int64_t end) {
  int64_t left = -1;
  if (end) {
    left = end - tri__now();
    if (left <= 0) return TRI_ERR_TIMEOUT;
  }
  atomic_fetch_add(waiters, 1);
  tri__wakes_flush();
  futex_wait_seq(c, seq, seen, left);
  atomic_fetch_sub(waiters, 1);
  return 0;
}

int tri_call_wait_writable(tri_call *c, size_t n, int64_t timeout_ns) {
  int64_t end = deadline_of(timeout_ns);
  for (;;) {
    uint32_t seen = atomic_load(&c->send_seq);
    if (tri_call_done(c) || tri_call_write_would_not_block(c, n)) return 0;
    if (wait_seq(c, &c->send_seq, &c->send_waiters, seen, end)) return TRI_ERR_TIMEOUT;
  }
}

int tri_call_flush(tri_call *c) {
  if (!(c->flags & TRI_CALL_CLIENT_STREAMING)) return TRI_ERR_INVALID;
  return write_result(c, tri_writer_flush(&c->writer));
}

int tri_call_done_writing(tri_call *c) {
  if (!(c->flags & TRI_CALL_CLIENT_STREAMING)) return TRI_ERR_INVALID;
  return write_result(c, tri_writer_close(&c->writer));
}

void tri__call_chunk_written(tri_call *c, tri_buf *chunk) {
  int64_t left = atomic_fetch_sub(&c->unsent, (int64_t)chunk->len) - (int64_t)chunk->len;
  tri_pool_put(&c->ch->pool, chunk);
  bump(&c->send_seq, &c->send_waiters);
  /* Nagle's rule for a reader that waits: the bytes in flight are out, so
   * what was written meanwhile goes now (see wait_message). */
  if (left == 0 && !c->completed && atomic_load(&c->readers) &&
      tri_writer_pending_bytes(&c->writer) > 0)
    tri_writer_flush_nowait(&c->writer);
  if (left <= c->send_limit / 2) notify_event(c, TRI_EV_WRITABLE);
}

/* ---- server streaming ------------------------------------------------- */

static tri_buf *pop_message(tri_call *c) {
  pthread_mutex_lock(&c->rlock);
  tri_buf *m = c->recvq;
  if (m) {
    c->recvq = m->next;
    if (!c->recvq) c->recvq_tail = NULL;
  }
  pthread_mutex_unlock(&c->rlock);
  if (!m) return NULL;
  int64_t left = atomic_fetch_sub(&c->recvq_bytes, (int64_t)m->len + TRI_FRAME_PREFIX) -
                 ((int64_t)m->len + TRI_FRAME_PREFIX);
  /* Space freed: let the I/O thread return the withheld window. */
  if (atomic_load(&c->owed) > 0 && left < RECV_QUEUE_LIMIT / 2 && !tri_call_done(c))
    push_op(c, &c->credit_op, &c->credit_queued);
  return m;
}

/* Sleeps until recv_seq moves past `seen` or the deadline `end` (0: none)
 * passes.  Returns TRI_ERR_TIMEOUT once the deadline has passed. */
static int wait_recv(tri_call *c, uint32_t seen, int64_t end) {
  return wait_seq(c, &c->recv_seq, &c->recv_waiters, seen, end);
}

/* wait_recv for tri_call_read.  A reader that waits may be waiting for the
 * answer to a request still in the coalescing writer (a ping-pong driven by
 * a request iterator on another thread).  So while a reader waits, requests
 * follow Nagle's rule: one written with nothing in flight goes at once
 * (tri_call_write); one written while bytes are in flight goes when they
 * have been written (tri__call_chunk_written), so writes still coalesce
 * under load.  The reader announces itself (readers) before it looks at the
 * writer for the last time, and a writer looks at readers after writing
 * (sequentially consistent both), so one of the two always sees the other.
 * (Waiting for the response headers flushes nothing.) */
void tri_call_reader_waits(tri_call *c, int waiting) {
  if (!waiting) {
    atomic_fetch_sub(&c->readers, 1);
    return;
  }
  atomic_fetch_add(&c->readers, 1);
  if ((c->flags & TRI_CALL_CLIENT_STREAMING) && tri_writer_pending_bytes(&c->writer) > 0)
    tri_writer_flush_nowait(&c->writer);
}

static int wait_message(tri_call *c, uint32_t seen, int64_t end) {
  tri_call_reader_waits(c, 1);
  int rv = wait_recv(c, seen, end);
  tri_call_reader_waits(c, 0);
  return rv;
}

/* True once the caller's own cancel() ended the call (grpcio then reports
 * CANCELLED at once, without the responses that were still queued). */
static int cancelled_by_caller(tri_call *c) {
  return tri_call_done(c) && atomic_load(&c->cancel_req) == 1 &&
         c->code == TRI_CODE_CANCELLED;
}

int tri_call_read(tri_call *c, int64_t timeout_ns, tri_buf **msg) {
  if (!(c->flags & TRI_CALL_SERVER_STREAMING)) return TRI_ERR_INVALID;
  int64_t end = deadline_of(timeout_ns);
  int flushed = 0;
  for (;;) {
    uint32_t seen = atomic_load(&c->recv_seq);
    if (atomic_load(&c->cancel_req) == 1 && !tri_call_done(c)) {
      /* cancel() was accepted: wait for it to take effect instead of
       * handing out responses that arrived before it. */
      int64_t left = timeout_ns < 0 ? -1 : end - tri__now();
      if (timeout_ns == 0 || (timeout_ns > 0 && left <= 0) ||
          tri_call_wait(c, left) != 0)
        return TRI_ERR_TIMEOUT;
    }
    if (cancelled_by_caller(c)) return 0; /* what was queued is dropped */
    if ((*msg = pop_message(c))) return 1;
    if (tri_call_done(c)) return (*msg = pop_message(c)) ? 1 : 0;
    if (!flushed && (c->flags & TRI_CALL_CLIENT_STREAMING) &&
        tri_writer_pending_bytes(&c->writer) > 0) {
      /* Never make a ping-pong wait for the flush timer.  Without waiting
       * for a writer busy in another thread: then the timer covers it. */
      flushed = tri_writer_flush_nowait(&c->writer) != TRI_ERR_AGAIN;
    }
    if (timeout_ns == 0 || wait_message(c, seen, end)) return TRI_ERR_TIMEOUT;
  }
}

void tri_call_msg_release(tri_call *c, tri_buf *msg) {
  tri_pool_put(&c->ch->pool, msg);
}

int tri_call_wait_headers(tri_call *c, int64_t timeout_ns) {
  int64_t end = deadline_of(timeout_ns);
  for (;;) {
    uint32_t seen = atomic_load(&c->recv_seq);
    if (atomic_load(&c->headers_done) || tri_call_done(c)) return 0;
    if (timeout_ns == 0 || wait_recv(c, seen, end)) return TRI_ERR_TIMEOUT;
  }
}

int tri_call_initial_md_next(const tri_call *c, size_t *iter, const char **key,
                             size_t *kn, const char **value, size_t *vn) {
  int kind;
  const uint8_t *k, *v;
  if (!atomic_load(&((tri_call *)c)->headers_done) && !tri_call_done(c)) return -1;
  if (read_record(c->imd, iter, &kind, &k, kn, &v, vn)) return -1;
  *key = (const char *)k;
  *value = (const char *)v;
  return 0;
}

void tri__call_free_streams(tri_call *c) {
  tri_pool *pool = &c->ch->pool;
  if (c->flags & TRI_CALL_CLIENT_STREAMING) {
    for (tri_node *n = tri_mpsc_take_all(&c->chunkq); n;) {
      tri_node *next = n->next;
      tri_pool_put(pool, container_of(n, tri_buf, qnode));
      n = next;
    }
    while (c->sendq) {
      tri_buf *b = c->sendq;
      c->sendq = b->next;
      tri_pool_put(pool, b);
    }
    tri_writer_free(&c->writer);
  }
  while (c->recvq) {
    tri_buf *b = c->recvq;
    c->recvq = b->next;
    tri_pool_put(pool, b);
  }
  pthread_mutex_destroy(&c->rlock);
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

/* Decimal digits of v into out (no terminator); returns their count. */
static size_t format_size(size_t v, char out[24]) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
  return n;
}

size_t tri__call_headers(tri_call *c, nghttp2_nv *nva, size_t cap,
                         tri_hpack_filter *filter, tri_timeout_memo *memo) {
  static const nghttp2_nv method = NV_STATIC(":method", "POST");
  static const nghttp2_nv scheme = NV_STATIC(":scheme", "http");
  static const nghttp2_nv scheme_tls = NV_STATIC(":scheme", "https");
  static const nghttp2_nv grpc_ct = NV_STATIC("content-type", "application/grpc");
  static const nghttp2_nv te = NV_STATIC("te", "trailers");
  static const nghttp2_nv grpc_accept = NV_STATIC("grpc-accept-encoding", "gzip");
  static const nghttp2_nv grpc_enc = NV_STATIC("grpc-encoding", "gzip");
  static const nghttp2_nv grpc_enc_deflate = NV_STATIC("grpc-encoding", "deflate");
  static const nghttp2_nv tri_version = NV_STATIC("triple-protocol-version", "0.1.0");
  static const nghttp2_nv spec_version = NV_STATIC("tri-protocol-version", "1.0.0");
  static const nghttp2_nv accept = NV_STATIC("accept-encoding", "gzip");
  static const nghttp2_nv content_enc = NV_STATIC("content-encoding", "gzip");
  static const nghttp2_nv content_enc_deflate = NV_STATIC("content-encoding", "deflate");
  const tri_channel_opts *o = &c->ch->opts;
  int gz = c->compress != TRI_COMPRESS_NONE, deflate = c->compress == TRI_COMPRESS_DEFLATE;
  tri_timeout_memo none = {0};
  if (!memo) memo = &none;
  size_t n = 0;
  if (cap < 16) return 0;
  nva[n++] = method;
  nva[n++] = o->tls ? scheme_tls : scheme;
  nva[n++] = nv_make(":path", 5, tri_buf_begin(c->hdr), c->path_len);
  nva[n++] = nv_make(":authority", 10, o->authority, strlen(o->authority));
  nva[n++] = nv_make("user-agent", 10, o->user_agent, strlen(o->user_agent));
  if (c->triple && !(c->flags & TRI_CALL_CLIENT_STREAMING)) {
    /* The Triple fast path knows its body size: say so (a Dubbo server may
     * size its buffer by it).  Not on the gRPC wire: the envelope carries
     * the length, and nghttp2 never indexes content-length, so it would cost
     * a literal HPACK field on every call. */
    size_t cl = format_size(c->seg0_len + c->seg1_len, c->clen);
    nva[n++] = nv_make("content-length", 14, c->clen, cl);
  }
  if (c->triple) { /* docs/triple-wire.md §1.1 */
    nva[n++] = nv_make("content-type", 12, o->content_type_triple,
                       strlen(o->content_type_triple));
    int go = o->dialect != TRI_DIALECT_SPEC, spec = o->dialect != TRI_DIALECT_GO;
    if (go) nva[n++] = tri_version;
    if (spec) nva[n++] = spec_version;
    nva[n++] = accept;
    if (gz) nva[n++] = deflate ? content_enc_deflate : content_enc;
    /* Rounded up, as grpc-timeout below.  Both names carry the same decimal
     * milliseconds (dubbo-go: triple-timeout-ms; Java and dubbo-js:
     * tri-service-timeout). */
    int tl = c->deadline
                 ? tri_timeout_memo_text(memo, TRI_TIMEOUT_TRIPLE,
                                         c->deadline - tri__now(), c->timeout)
                 : 0;
    if (tl && go) nva[n++] = nv_make("triple-timeout-ms", 17, c->timeout, (size_t)tl);
    if (tl && spec) nva[n++] = nv_make("tri-service-timeout", 19, c->timeout, (size_t)tl);
  } else { /* §3.1 */
    nva[n++] = grpc_ct;
    nva[n++] = te;
    nva[n++] = grpc_accept;
    if (gz) nva[n++] = deflate ? grpc_enc_deflate : grpc_enc;
    if (c->deadline) {
      /* Rounded up: one value for every call with this timeout (HPACK). */
      int tl = tri_timeout_memo_text(memo, TRI_TIMEOUT_GRPC,
                                     c->deadline - tri__now(), c->timeout);
      nva[n++] = nv_make("grpc-timeout", 12, c->timeout, (size_t)tl);
    }
  }
  if (o->service_group[0])
    nva[n++] = nv_make("tri-service-group", 17, o->service_group,
                       strlen(o->service_group));
  if (o->service_version[0])
    nva[n++] = nv_make("tri-service-version", 19, o->service_version,
                       strlen(o->service_version));
  size_t off = c->path_len;
  int kind;
  const uint8_t *k, *v;
  size_t kn, vn;
  while (n < cap && read_record(c->hdr, &off, &kind, &k, &kn, &v, &vn) == 0) {
    nva[n] = nv_make(k, kn, v, vn);
    if (filter && !tri_hpack_filter_popular(filter, k, kn, v, vn))
      nva[n].flags |= NGHTTP2_NV_FLAG_NO_INDEX;
    n++;
  }
  return n;
}
