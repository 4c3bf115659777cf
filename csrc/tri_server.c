/*
 * tri_server.c: the embedded server, BenchmarkService (echo) and
 * grpc.testing.TestService (see tri_server.h for the behaviour).  Layout of
 * this file:
 *   1. types          4. output queue       7. request handling (7a the
 *   2. small helpers  5. responses             TestService, 7b answering,
 *      (+ grpc.testing 6. stream lifetime       7c x-misbehave)
 *      protobuf)                            8. nghttp2 callbacks
 *   3. timers                               9. connections, workers, API
 *
 * Ownership inside a worker: a srv_conn owns its socket, its nghttp2
 * session, its streams (list `streams`) and its output queue.  A srv_stream
 * owns its request buffers and its response queue (q_head..q_tail, buffers
 * from the server's pool).  A response buffer leaves the stream when its
 * last byte is framed: if DATA frames point into it (NO_COPY), ownership
 * moves to the output entry of that last frame and the buffer returns to
 * the pool once the socket has taken those bytes.  nghttp2_session_del calls
 * no callbacks, so closing a connection frees its streams from our list.
 */
#include "tri_server.h"

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "tri_buf.h"
#include "tri_clock.h"
#include "tri_deadlines.h"
#include "tri_error.h"
#include "tri_frame.h"
#include "tri_gzip.h"
#include "tri_mem.h"
#include "tri_outq.h"
#include "tri_pb.h"
#include "tri_thread.h"
#include "tri_tjson.h"
#include "tri_wire.h"

#define RBUF_SIZE (256u << 10)      /* one read() per worker buffer */
#define READS_PER_EVENT 8           /* fairness between connections */
#define OUT_WATERMARK (2u << 20)    /* stop pulling frames above this */
#define STREAM_OUT_LIMIT (4u << 20) /* stop crediting input above this */
#define NOCOPY_MIN 4096             /* slices this big go out by reference */
#define IOV_BATCH 1024              /* IOV_MAX */
#define MAX_DELAY_MS 3600000        /* as the test peers */
#define MAX_STATUS_MSG 4096         /* longest status message kept */
#define MAX_THREADS 64
#define SPARE_STREAMS 1024          /* stream objects kept per worker */
#define GOAWAY_LINGER_MIN_MS 100    /* x-misbehave: goaway: open at least... */
#define GOAWAY_LINGER_MAX_MS 1000   /* ...and at most this long after it */


/* ==== 1. types ========================================================== */

enum { WIRE_NONE = 0, WIRE_GRPC, WIRE_TRIPLE };
enum { ENC_NONE = 0, ENC_IDENTITY, ENC_GZIP, ENC_OTHER };
/* Methods: benchmark.BenchmarkService (M_*) and grpc.testing.TestService
 * (T_*). */
enum {
  M_UNKNOWN = 0,
  M_UNARY,
  M_STREAM,
  T_EMPTY,  /* EmptyCall */
  T_UNARY,  /* UnaryCall */
  T_SOUT,   /* StreamingOutputCall */
  T_SIN,    /* StreamingInputCall */
  T_FULL,   /* FullDuplexCall */
  T_HALF,   /* HalfDuplexCall */
  T_UNIMPL  /* UnimplementedCall */
};

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
/* Answers come from the job queue (StreamingOutputCall and the duplexes). */
static int job_method(int m) { return m == T_SOUT || m == T_FULL || m == T_HALF; }

/* One queued answer of a streaming TestService call: a response message
 * after interval_us, or the end of the call with `code` (st->msg). */
typedef struct srv_job {
  uint32_t size;
  int32_t interval_us;
  int32_t type;  /* PayloadType of the response */
  int32_t code;  /* JOB_STATUS */
  int8_t gz;     /* -1: the default rule */
  uint8_t kind;
} srv_job;
enum { JOB_MSG = 0, JOB_STATUS };

/* x-misbehave modes (tri_server.h). */
enum {
  MB_NONE = 0,
  MB_RST_MID,     /* rst-mid-response */
  MB_GOAWAY,      /* goaway */
  MB_BAD_HPACK,   /* bad-hpack */
  MB_BAD_STATUS,  /* bad-grpc-status */
  MB_WRONG_CT,    /* wrong-content-type */
  MB_TINY_WINDOW, /* tiny-window */
  MB_NEVER        /* never-answer */
};

static const char *const MISBEHAVE[] = {
    "", "rst-mid-response", "goaway", "bad-hpack", "bad-grpc-status",
    "wrong-content-type", "tiny-window", "never-answer"};

/* Where an echoed metadata pair goes. */
enum { MD_INITIAL = 1, MD_TRAILING = 2, MD_BOTH = 3 };

typedef struct srv_conn srv_conn;
typedef struct srv_worker srv_worker;
typedef struct srv_stream srv_stream;

struct srv_stream {
  srv_conn *conn;
  int32_t id;
  srv_stream *prev, *next; /* conn->streams */
  srv_stream *owe_next;    /* conn->owing, while on_owing */
  int timer_slot;          /* in the worker's timers, -1 when absent */
  int64_t hold_until;      /* x-delay-ms: the answer starts then (0: none) */
  int64_t deadline;        /* grpc-timeout / triple-timeout-ms (0: none) */

  /* Request headers. */
  uint8_t wire, method;
  unsigned is_post : 1, json : 1, go : 1, req_ended : 1, finished : 1,
      headers_sent : 1, deferred : 1, on_owing : 1, q_ref : 1, reset : 1,
      msg_bin : 1;
  /* Compression (gzip only): what the request said and what we answer. */
  uint8_t grpc_enc, content_enc; /* ENC_*: grpc-encoding, content-encoding */
  unsigned grpc_accept_gz : 1, http_accept_gz : 1, x_compress : 1,
      req_gz : 1,   /* the request is compressed (its encoding is gzip) */
      accept_gz : 1, /* the client accepts gzip responses (on its wire) */
      gz_out : 1,   /* compress every response (the default rule) */
      gz_hdr : 1,   /* gRPC: send grpc-encoding: gzip */
      cur_gz : 1,   /* the message being received has flag 0x01 */
      body_gz : 1;  /* the unary request message arrived compressed */
  int bad_code;            /* first header problem, answered at end (0: none) */
  char bad_msg[160];
  char ct[96];             /* request content-type (Triple echoes it) */
  size_t ct_len;
  char path[96];           /* for error messages; truncated */
  size_t path_len;
  int ctl_status;          /* x-status, -1: none */
  int64_t delay_ms;        /* x-delay-ms */
  int64_t resp_size;       /* x-response-size, -1: echo */
  int64_t clen;            /* content-length, -1: none */
  tri_buf *md;             /* echoed metadata records: u32 klen, u32 vlen,
                              u8 MD_* (where it goes), k, v */
  size_t echo_n;
  tri_buf *msg;            /* status message (raw bytes) */

  /* Request body. */
  tri_frame_decoder dec;
  tri_buf *cur;            /* gRPC message being received: prefix + payload */
  tri_buf *body;           /* gRPC unary request message / Triple body */
  int nmsg;                /* gRPC messages received */
  int64_t owed;            /* bytes received, not yet credited to the peer */

  /* TestService: queued answers of a streaming call (jobs[jobs_head ..
   * jobs_n)), the time the head one is due (0: not timed), and the total
   * of StreamingInputCall. */
  srv_job *jobs;
  uint32_t jobs_head, jobs_n, jobs_cap;
  int64_t job_due;
  int64_t agg;
  uint8_t mb;                /* x-misbehave: MB_* */
  unsigned rst_armed : 1,    /* rst-mid-response: RST once the queue drains */
      never : 1,             /* never-answer: the stream is left alone */
      plain_end : 1,         /* END_STREAM on the last DATA, no trailers */
      pump_blocked : 1,      /* jobs wait for queued output to drain */
      status_queued : 1;     /* a JOB_STATUS is queued: later requests are
                                ignored */

  /* Response. */
  int status;              /* final code, once finished */
  tri_buf *q_head, *q_tail; /* bytes not yet framed, from q_off in q_head */
  size_t q_off;
  size_t q_bytes;
};

struct srv_conn {
  srv_worker *w;
  int fd;
  nghttp2_session *sess;
  tri_arena arena; /* nghttp2's allocations (this worker only) */
  nghttp2_mem mem;
  tri_outq out;    /* pending output; an entry's `buf` is a response
                      buffer that DATA frames pointed into, freed once
                      written */
  srv_stream *streams;
  srv_stream *owing; /* streams with owed > 0 */
  int64_t conn_owed; /* bytes of closed streams to credit to the connection */
  int n_blocked;     /* streams with pump_blocked */
  int64_t linger_min, linger_max; /* after our x-misbehave GOAWAY (0: none) */
  unsigned tiny : 1; /* tiny-window was applied */
  unsigned epollout : 1, dirty : 1, dead : 1;
  srv_conn *prev, *next, *dirty_next;
};

struct srv_worker {
  tri_server *srv;
  pthread_t thread;
  int running; /* thread created (controlling thread) */
  int epfd, evfd;
  nghttp2_session_callbacks *cbs;
  nghttp2_option *opt;
  uint8_t *rbuf;
  pthread_mutex_t lock; /* guards pend/pend_n/pend_cap */
  int *pend;            /* sockets handed over by the acceptor */
  size_t pend_n, pend_cap;
  /* Worker thread only. */
  srv_conn *conns, *dirty;
  tri_deadlines timers;  /* streams by when they next need the worker */
  int n_linger;      /* connections with linger_max set */
  srv_stream *spare; /* free stream objects, linked by next */
  size_t spare_n;
  tri_buf *scratch;  /* header strings being built */
};

struct tri_server {
  tri_server_opts opts; /* host points into hostbuf */
  char hostbuf[256];
  tri_stats stats;
  tri_pool pool;
  tri_gzip_pool zp; /* gzip streams shared by the workers (thread-safe) */
  int lfd, stop_fd, port;
  int started, stopped, acceptor_running;
  pthread_t acceptor;
  _Atomic int stopping;
  srv_worker *workers;
  int nworkers;
  unsigned rr; /* acceptor thread only */
  char errstr[200];
};

/* Forward declarations (the sections below call each other). */
static tri_buf *inflate_to(srv_stream *st, const uint8_t *in, size_t n,
                           size_t headroom, const char *what);
static void pump(srv_stream *st);

/* ==== 2. small helpers ================================================== */

static tri_pool *pool_of(srv_conn *c) { return &c->w->srv->pool; }
static tri_stats *stats_of(srv_conn *c) { return &c->w->srv->stats; }

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

static int token_is(const uint8_t *v, size_t n, const char *lit) {
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
  if (token_is(v, n, "identity")) return ENC_IDENTITY;
  if (token_is(v, n, "gzip")) return ENC_GZIP;
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
    if (token_is(v + b, i - b, "gzip")) return 1;
    while (i < n && v[i] != ',') i++; /* parameters */
  }
  return 0;
}

/* dubbo-go's code -> HTTP status (§5 table A, dubbo-go column). */
static int triple_http_status(int code) {
  static const int http[] = {200, 408, 500, 400, 408, 404, 409, 403, 429,
                             412, 409, 400, 404, 500, 503, 500, 401};
  return code >= 0 && code <= 16 ? http[code] : 500;
}

/* ==== grpc.testing protobuf (tri_server.h) ============================= */

typedef struct {
  const uint8_t *p, *end;
} pbr;

static int pb_varint(pbr *r, uint64_t *v) {
  size_t k = tri_pb_varint_get(r->p, (size_t)(r->end - r->p), v);
  r->p += k;
  return k ? 0 : -1;
}

/* The next field: its number and wire type; the varint in *v (wire type 0)
 * or the bytes in data[0..len) (wire type 2); fixed32/64 are skipped.
 * Returns 1, 0 at the end, -1 when malformed (groups included). */
static int pb_next(pbr *r, uint32_t *field, int *wt, uint64_t *v,
                   const uint8_t **data, size_t *len) {
  if (r->p == r->end) return 0;
  uint64_t key;
  if (pb_varint(r, &key) || (key >> 3) == 0 || (key >> 3) > 0x1fffffff)
    return -1;
  *field = (uint32_t)(key >> 3);
  *wt = (int)(key & 7);
  size_t left = (size_t)(r->end - r->p);
  switch (*wt) {
  case 0:
    return pb_varint(r, v) ? -1 : 1;
  case 1:
    if (left < 8) return -1;
    r->p += 8;
    return 1;
  case 5:
    if (left < 4) return -1;
    r->p += 4;
    return 1;
  case 2:
    if (pb_varint(r, v) || *v > (uint64_t)(r->end - r->p)) return -1;
    *data = r->p;
    *len = (size_t)*v;
    r->p += *len;
    return 1;
  default:
    return -1;
  }
}

/* Iterates the fields of p[0..n) into the named locals; `known(f, w)` is
 * the wire type field f must have (-1: unknown, skipped). */
#define PB_FIELDS(p, n)                                                    \
  pbr r_ = {(p), (p) + (n)};                                               \
  uint32_t f;                                                              \
  int wt, rv_;                                                             \
  uint64_t v = 0;                                                          \
  const uint8_t *d = NULL;                                                 \
  size_t dl = 0;                                                           \
  while ((rv_ = pb_next(&r_, &f, &wt, &v, &d, &dl)) == 1)
#define PB_END()                                                           \
  if (rv_ < 0) return -1

static int pb_boolvalue(const uint8_t *p, size_t n, int *out) {
  *out = 0;
  PB_FIELDS(p, n) {
    if (f == 1) {
      if (wt != 0) return -1;
      *out = v != 0;
    }
  }
  PB_END();
  return 0;
}

static int pb_payload(const uint8_t *p, size_t n, size_t *body_len) {
  *body_len = 0;
  PB_FIELDS(p, n) {
    if ((f == 1 && wt != 0) || (f == 2 && wt != 2)) return -1;
    if (f == 2) *body_len = dl;
  }
  PB_END();
  return 0;
}

static int pb_status(const uint8_t *p, size_t n, tri_ts_request *r) {
  r->has_status = 1;
  PB_FIELDS(p, n) {
    if ((f == 1 && wt != 0) || (f == 2 && wt != 2)) return -1;
    if (f == 1) r->status_code = (int32_t)(uint32_t)v;
    if (f == 2) r->status_msg = d, r->status_msg_len = dl;
  }
  PB_END();
  return 0;
}

static void ts_request_init(tri_ts_request *r) {
  memset(r, 0, sizeof(*r));
  r->response_compressed = r->expect_compressed = -1;
}

int tri_ts_decode_simple(const uint8_t *p, size_t n, tri_ts_request *r) {
  ts_request_init(r);
  PB_FIELDS(p, n) {
    int want = f == 1 || f == 2 || f == 4 || f == 5   ? 0
               : f == 3 || f == 6 || f == 7 || f == 8 ? 2
                                                      : -1;
    if (want >= 0 && wt != want) return -1;
    switch (f) {
    case 1: r->response_type = (int32_t)(uint32_t)v; break;
    case 2: r->response_size = (int32_t)(uint32_t)v; break;
    case 3: if (pb_payload(d, dl, &r->payload_len)) return -1; break;
    case 4: r->fill_username = v != 0; break;
    case 5: r->fill_oauth_scope = v != 0; break;
    case 6: if (pb_boolvalue(d, dl, &r->response_compressed)) return -1; break;
    case 7: if (pb_status(d, dl, r)) return -1; break;
    case 8: if (pb_boolvalue(d, dl, &r->expect_compressed)) return -1; break;
    }
  }
  PB_END();
  return 0;
}

static int pb_params(const uint8_t *p, size_t n, tri_ts_params *o) {
  o->size = o->interval_us = 0;
  o->compressed = -1;
  PB_FIELDS(p, n) {
    int want = f == 1 || f == 2 ? 0 : f == 3 ? 2 : -1;
    if (want >= 0 && wt != want) return -1;
    if (f == 1) o->size = (int32_t)(uint32_t)v;
    if (f == 2) o->interval_us = (int32_t)(uint32_t)v;
    if (f == 3 && pb_boolvalue(d, dl, &o->compressed)) return -1;
  }
  PB_END();
  return 0;
}

int tri_ts_decode_output(const uint8_t *p, size_t n, tri_ts_request *r) {
  ts_request_init(r);
  PB_FIELDS(p, n) {
    int want = f == 1 ? 0 : f == 2 || f == 3 || f == 7 ? 2 : -1;
    if (want >= 0 && wt != want) return -1;
    tri_ts_params prm;
    switch (f) {
    case 1: r->response_type = (int32_t)(uint32_t)v; break;
    case 2:
      if (pb_params(d, dl, &prm)) return -1;
      r->nparams++;
      break;
    case 3: if (pb_payload(d, dl, &r->payload_len)) return -1; break;
    case 7: if (pb_status(d, dl, r)) return -1; break;
    }
  }
  PB_END();
  return 0;
}

int tri_ts_decode_input(const uint8_t *p, size_t n, tri_ts_request *r) {
  ts_request_init(r);
  PB_FIELDS(p, n) {
    if ((f == 1 || f == 2) && wt != 2) return -1;
    if (f == 1 && pb_payload(d, dl, &r->payload_len)) return -1;
    if (f == 2 && pb_boolvalue(d, dl, &r->expect_compressed)) return -1;
  }
  PB_END();
  return 0;
}

int tri_ts_next_params(const uint8_t *p, size_t n, size_t *off,
                       tri_ts_params *out) {
  if (*off > n) return -1;
  pbr r = {p + *off, p + n};
  uint32_t f;
  int wt, rv;
  uint64_t v;
  const uint8_t *d = NULL;
  size_t dl = 0;
  while ((rv = pb_next(&r, &f, &wt, &v, &d, &dl)) == 1) {
    if (f != 2) continue;
    if (wt != 2 || pb_params(d, dl, out)) return -1;
    *off = (size_t)(r.p - p);
    return 1;
  }
  *off = n;
  return rv;
}

/* Payload{1: type, 2: size zero bytes} without its key and length. */
static size_t payload_len(uint32_t size, int32_t type) {
  size_t n = 0;
  if (type) n += 1 + tri_pb_varint_len((uint64_t)(int64_t)type);
  if (size) n += 1 + tri_pb_varint_len(size) + size;
  return n;
}

size_t tri_ts_payload_msg_len(uint32_t size, int32_t type) {
  size_t inner = payload_len(size, type);
  return 1 + tri_pb_varint_len(inner) + inner;
}

size_t tri_ts_payload_msg_put(uint8_t *out, uint32_t size, int32_t type) {
  size_t inner = payload_len(size, type), n = 0;
  out[n++] = 0x0a; /* field 1, length-delimited */
  n += tri_pb_varint_put(out + n, inner);
  if (type) {
    out[n++] = 0x08; /* Payload.type */
    n += tri_pb_varint_put(out + n, (uint64_t)(int64_t)type);
  }
  if (size) {
    out[n++] = 0x12; /* Payload.body */
    n += tri_pb_varint_put(out + n, size);
    memset(out + n, 0, size);
    n += size;
  }
  return n;
}

size_t tri_ts_aggregated_put(uint8_t *out, int32_t total) {
  if (!total) return 0;
  out[0] = 0x08;
  return 1 + tri_pb_varint_put(out + 1, (uint64_t)(int64_t)total);
}

/* ==== header lists ====================================================== */

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

/* ==== 3. timers (per worker: tri_deadlines) ============================ */

/* When the stream next needs the worker: its delay, then its deadline. */
static int64_t timer_at(const srv_stream *st) {
  if (st->finished) return 0;
  int64_t t = 0;
  if (!st->go && st->hold_until) t = st->hold_until;
  if (st->job_due && (!t || st->job_due < t)) t = st->job_due;
  if (st->deadline && (!t || st->deadline < t)) t = st->deadline;
  return t;
}

static void timer_remove(srv_worker *w, srv_stream *st) {
  if (st->timer_slot < 0) return;
  tri_deadlines_remove(&w->timers, st->timer_slot);
  st->timer_slot = -1;
}

/* Puts the stream where timer_at says (or takes it out).  Returns -1 when
 * the set cannot grow (the caller treats it like any allocation failure). */
static int timer_update(srv_worker *w, srv_stream *st) {
  int64_t t = timer_at(st);
  if (!t) {
    timer_remove(w, st);
    return 0;
  }
  if (st->timer_slot >= 0) {
    tri_deadlines_update(&w->timers, st->timer_slot, t);
    return 0;
  }
  int slot = tri_deadlines_add(&w->timers, st, t);
  if (slot < 0) return -1;
  st->timer_slot = slot;
  return 0;
}

/* ==== 4. output queue =================================================== */

static void mark_dirty(srv_conn *c) {
  if (c->dirty) return;
  c->dirty = 1;
  c->dirty_next = c->w->dirty;
  c->w->dirty = c;
}

static void conn_kill(srv_conn *c) {
  c->dead = 1;
  mark_dirty(c);
}

/* Returns a written (or dropped) entry's buffer to the pool. */
static void out_done(tri_outq_entry *e, void *pool) { tri_pool_put(pool, e->buf); }

/* Writes pending output, one sendmsg per IOV_BATCH entries.  Returns 1 when
 * all of it went, 0 when the socket is full, -1 on error. */
static int write_out(srv_conn *c) {
  while (!tri_outq_empty(&c->out)) {
    struct iovec iov[IOV_BATCH];
    size_t want, wrote = 0;
    size_t k = tri_outq_iov(&c->out, iov, IOV_BATCH, &want);
    if (k) {
      /* sendmsg, not writev: MSG_NOSIGNAL keeps a vanished client from
       * raising SIGPIPE in a host process that did not ignore it. */
      struct msghdr mh = {.msg_iov = iov, .msg_iovlen = k};
      ssize_t w;
      do {
        w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
      } while (w < 0 && errno == EINTR);
      if (w < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
      TRI_STATS_ADD(stats_of(c), write_syscalls, 1);
      TRI_STATS_ADD(stats_of(c), bytes_written, w);
      wrote = (size_t)w;
    }
    /* Retire what was written; empty entries only release their buffer. */
    if (tri_outq_written(&c->out, wrote, out_done, NULL, pool_of(c))) return 1;
    if (wrote < want) return 0; /* the kernel took less: socket full */
  }
  tri_outq_clear(&c->out);
  return 1;
}

static void set_epollout(srv_conn *c, int on) {
  if (c->epollout == (unsigned)on) return;
  struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0),
                           .data.ptr = c};
  epoll_ctl(c->w->epfd, EPOLL_CTL_MOD, c->fd, &ev);
  c->epollout = on ? 1 : 0;
}

/* Pulls every frame nghttp2 has (up to the watermark) and writes them in
 * one writev, again while the session wants to write and the socket takes
 * it.  A full socket arms EPOLLOUT; the next wake-up goes on from there. */
static void conn_flush(srv_conn *c) {
  if (c->dead) return;
  for (;;) {
    while (c->out.pending < OUT_WATERMARK) {
      const uint8_t *p;
      ssize_t n = nghttp2_session_mem_send(c->sess, &p);
      if (n < 0) {
        conn_kill(c);
        return;
      }
      if (n == 0) break;
      if (tri_outq_stage(&c->out, p, (size_t)n)) {
        conn_kill(c);
        return;
      }
    }
    if (tri_outq_empty(&c->out)) break;
    int rv = write_out(c);
    if (rv < 0) {
      conn_kill(c);
      return;
    }
    if (rv == 0) {
      set_epollout(c, 1);
      return;
    }
    if (!nghttp2_session_want_write(c->sess)) break;
  }
  set_epollout(c, 0);
  /* After a GOAWAY (ours or the peer's) both end once everything is out
   * (but an x-misbehave GOAWAY lingers a little: misbehave_goaway). */
  if (!nghttp2_session_want_read(c->sess) &&
      !nghttp2_session_want_write(c->sess) &&
      !(c->linger_min && tri__now() < c->linger_min))
    conn_kill(c);
}

/* Credits received bytes back to the peer's windows, except for streams
 * whose unsent responses are over STREAM_OUT_LIMIT (they wait until the
 * client reads).  Returns 1 when something was credited. */
static int settle(srv_conn *c) {
  int did = 0;
  srv_stream **pp = &c->owing;
  while (*pp) {
    srv_stream *st = *pp;
    if (st->q_bytes < STREAM_OUT_LIMIT) {
      nghttp2_session_consume(c->sess, st->id, (size_t)st->owed);
      st->owed = 0;
      st->on_owing = 0;
      *pp = st->owe_next;
      did = 1;
    } else {
      pp = &st->owe_next;
    }
  }
  if (c->conn_owed > 0) {
    nghttp2_session_consume_connection(c->sess, (size_t)c->conn_owed);
    c->conn_owed = 0;
    did = 1;
  }
  return did;
}

/* ==== 5. responses ====================================================== */

static void set_msg(srv_stream *st, const void *p, size_t n) {
  tri_pool *pool = pool_of(st->conn);
  if (n > MAX_STATUS_MSG) n = MAX_STATUS_MSG;
  if (!st->msg && !(st->msg = tri_pool_get(pool, n, 0))) return;
  st->msg->len = 0;
  if (tri_buf_append(pool, &st->msg, p, n)) st->msg->len = 0;
}

/* nghttp2 refused a submit (out of memory): the stream can only be reset. */
static void submit_failed(srv_stream *st) {
  nghttp2_submit_rst_stream(st->conn->sess, NGHTTP2_FLAG_NONE, st->id,
                            NGHTTP2_INTERNAL_ERROR);
  st->finished = 1;
  timer_remove(st->conn->w, st);
}

/* New response bytes or a decided end: resume the deferred data source. */
static void wake_data(srv_stream *st) {
  if (st->deferred) {
    st->deferred = 0;
    nghttp2_session_resume_data(st->conn->sess, st->id);
  }
  mark_dirty(st->conn);
}

/* Queues a response buffer (taking it). */
static void q_push(srv_stream *st, tri_buf *b) {
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

/* Drops queued response bytes that no frame has started on. */
static void q_drop_unstarted(srv_stream *st) {
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

/* Emits a NO_COPY DATA frame: its header is copied, its payload is queued
 * by reference; the buffer moves to the output entry that ends it. */
static int send_data_cb(nghttp2_session *s, nghttp2_frame *frame,
                        const uint8_t *framehd, size_t length,
                        nghttp2_data_source *src, void *user) {
  (void)s;
  srv_conn *c = user;
  srv_stream *st = src->ptr;
  if (tri_outq_stage(&c->out, framehd, 9)) return NGHTTP2_ERR_CALLBACK_FAILURE;
  if (frame->data.padlen > 0) {
    uint8_t pad = (uint8_t)(frame->data.padlen - 1);
    if (tri_outq_stage(&c->out, &pad, 1)) return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  tri_buf *h = st->q_head;
  if (length) {
    tri_outq_entry *e =
        tri_outq_push(&c->out, tri_buf_begin(h) + st->q_off, 0, length);
    if (!e) return NGHTTP2_ERR_CALLBACK_FAILURE;
    st->q_ref = 1;
    st->q_off += length;
    st->q_bytes -= length;
    if (st->q_off == h->len) {
      e->buf = h;
      st->q_head = h->next;
      if (!st->q_head) st->q_tail = NULL;
      st->q_off = 0;
      st->q_ref = 0;
    }
  }
  if (frame->data.padlen > 1) {
    static const uint8_t zeros[256];
    if (tri_outq_stage(&c->out, zeros, frame->data.padlen - 1))
      return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  return 0;
}

static nghttp2_data_provider provider(srv_stream *st) {
  nghttp2_data_provider prd;
  prd.source.ptr = st;
  prd.read_callback = read_cb;
  return prd;
}

/* gRPC response headers; with trailers_only, the status rides along and
 * the stream ends there. */
static void grpc_headers(srv_stream *st, int trailers_only) {
  nvlist l;
  if (nvl_init(st->conn->w, &l, 8 + st->echo_n, nvl_bytes(st))) {
    submit_failed(st);
    return;
  }
  NVL_LIT(&l, ":status", "200");
  NVL_LIT(&l, "content-type", "application/grpc");
  NVL_LIT(&l, "grpc-accept-encoding", "gzip");
  if (st->gz_hdr) NVL_LIT(&l, "grpc-encoding", "gzip");
  if (trailers_only) nvl_add_status(&l, st);
  nvl_add_echo(&l, st, "", trailers_only ? MD_BOTH : MD_INITIAL);
  nghttp2_data_provider prd = provider(st);
  if (nghttp2_submit_response(st->conn->sess, st->id, l.nv, l.n,
                              trailers_only ? NULL : &prd)) {
    submit_failed(st);
    return;
  }
  st->headers_sent = 1;
  mark_dirty(st->conn);
}

/* Decides the gRPC status (msg may be NULL: keep the x-message one).  The
 * trailers follow whatever responses are queued. */
static void grpc_finish(srv_stream *st, int code, const char *msg, size_t n) {
  if (st->finished) return;
  st->finished = 1;
  st->status = code;
  if (msg) set_msg(st, msg, n);
  timer_remove(st->conn->w, st);
  if (st->headers_sent) {
    wake_data(st);
    return;
  }
  if (code != TRI_CODE_OK) q_drop_unstarted(st);
  if (st->mb == MB_RST_MID) st->rst_armed = 1; /* headers, then RST */
  /* Trailers-only unless metadata must be echoed in both places. */
  grpc_headers(st, !st->q_head && !st->echo_n && !st->rst_armed);
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

/* Answers a Triple unary call: 200 with `body` (taken; may be NULL), or the
 * error status and JSON body for code != OK. */
static void triple_respond(srv_stream *st, int code, tri_buf *body) {
  tri_pool *pool = pool_of(st->conn);
  if (st->finished) {
    tri_pool_put(pool, body);
    return;
  }
  st->finished = 1;
  st->status = code;
  timer_remove(st->conn->w, st);
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
      set_msg(st, "out of memory", 13);
      triple_respond(st, TRI_CODE_RESOURCE_EXHAUSTED, NULL);
      return;
    }
  }
  nvlist l;
  if (nvl_init(st->conn->w, &l, 6 + 2 * st->echo_n, nvl_bytes(st))) {
    tri_pool_put(pool, body);
    submit_failed(st);
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
  nghttp2_data_provider prd = provider(st);
  int has_body = body && body->len;
  if (has_body) q_push(st, body);
  else tri_pool_put(pool, body);
  if (st->mb == MB_RST_MID) has_body = st->rst_armed = 1; /* then RST */
  if (nghttp2_submit_response(st->conn->sess, st->id, l.nv, l.n,
                              has_body ? &prd : NULL)) {
    submit_failed(st);
    return;
  }
  st->headers_sent = 1;
  mark_dirty(st->conn);
}

/* A plain HTTP answer (405, 415) with no body. */
static void http_reply(srv_stream *st, const char *status) {
  if (st->finished) return;
  st->finished = 1;
  timer_remove(st->conn->w, st);
  nghttp2_nv nv[] = {{(uint8_t *)":status", (uint8_t *)(uintptr_t)status, 7,
                      strlen(status), NGHTTP2_NV_FLAG_NONE}};
  if (nghttp2_submit_response(st->conn->sess, st->id, nv, 1, NULL))
    submit_failed(st);
  st->headers_sent = 1;
  mark_dirty(st->conn);
}

static void rst(srv_stream *st, uint32_t h2_code) {
  st->finished = 1;
  timer_remove(st->conn->w, st);
  nghttp2_submit_rst_stream(st->conn->sess, NGHTTP2_FLAG_NONE, st->id, h2_code);
  mark_dirty(st->conn);
}

/* Ends the call with `code` on its wire; fmt NULL keeps the message that is
 * already set (x-message). */
__attribute__((format(printf, 3, 4))) static void fail(srv_stream *st,
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
    if (fmt) set_msg(st, m, (size_t)n);
    triple_respond(st, code, NULL);
  } else {
    grpc_finish(st, code, fmt ? m : NULL, (size_t)n);
  }
}

/* Queues one gRPC response message `m` (prefix + payload, flags 0; taken),
 * gzip'd first when `gz` (then flag 0x01; the headers say grpc-encoding:
 * gzip whenever a message may be compressed). */
static void grpc_emit(srv_stream *st, tri_buf *m, int gz) {
  tri_server *s = st->conn->w->srv;
  if (gz) {
    tri_buf *z = NULL;
    int rv = tri_gzip_compress(&s->zp, &s->pool,
                               tri_buf_begin(m) + TRI_FRAME_PREFIX,
                               m->len - TRI_FRAME_PREFIX, TRI_FRAME_PREFIX, &z);
    tri_pool_put(&s->pool, m);
    if (rv) {
      fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
      return;
    }
    z->off -= TRI_FRAME_PREFIX;
    z->len += TRI_FRAME_PREFIX;
    tri_frame_put_prefix(tri_buf_begin(z), TRI_FRAME_FLAG_COMPRESSED,
                         (uint32_t)(z->len - TRI_FRAME_PREFIX));
    m = z;
  }
  q_push(st, m);
}

/* x-response-size: BenchmarkResponse{payload: N x 'a'}, in an envelope for
 * gRPC, or as protojson {"payload":"<base64>"} for application/json. */
static tri_buf *generated_response(srv_stream *st) {
  size_t n = (size_t)st->resp_size;
  tri_pool *pool = pool_of(st->conn);
  if (st->json) {
    size_t q = n / 3, r = n % 3;
    tri_buf *b = tri_pool_get(pool, 16 + 4 * (q + 1), 0);
    if (!b) return NULL;
    char *p = (char *)tri_buf_begin(b);
    if (!n) {
      memcpy(p, "{}", 2);
      b->len = 2;
      return b;
    }
    size_t k = 0;
    memcpy(p, "{\"payload\":\"", 12);
    k = 12;
    for (size_t i = 0; i < q; i++, k += 4) memcpy(p + k, "YWFh", 4);
    if (r == 1) memcpy(p + k, "YQ==", 4), k += 4;
    if (r == 2) memcpy(p + k, "YWE=", 4), k += 4;
    memcpy(p + k, "\"}", 2);
    b->len = k + 2;
    return b;
  }
  uint8_t hdr[12];
  size_t h = 0;
  if (n) {
    hdr[h++] = 0x0a; /* field 1, length-delimited */
    h += tri_pb_varint_put(hdr + h, n);
  }
  size_t pre = st->wire == WIRE_GRPC ? TRI_FRAME_PREFIX : 0;
  tri_buf *b = tri_pool_get(pool, pre + h + n, 0);
  if (!b) return NULL;
  uint8_t *p = tri_buf_begin(b);
  if (pre) tri_frame_put_prefix(p, 0, (uint32_t)(h + n));
  memcpy(p + pre, hdr, h);
  memset(p + pre + h, 'a', n);
  b->len = pre + h + n;
  return b;
}

/* An empty message in an envelope (UnaryCall with x-status: 0). */
static tri_buf *empty_message(srv_stream *st) {
  tri_buf *b = tri_pool_get(pool_of(st->conn), TRI_FRAME_PREFIX, 0);
  if (!b) return NULL;
  tri_frame_put_prefix(tri_buf_begin(b), 0, 0);
  b->len = TRI_FRAME_PREFIX;
  return b;
}

/* ==== 6. stream lifetime ================================================ */

static srv_stream *stream_new(srv_conn *c, int32_t id) {
  srv_worker *w = c->w;
  srv_stream *st = w->spare;
  if (st) {
    w->spare = st->next;
    w->spare_n--;
  } else {
    st = tri_mem_alloc(stats_of(c), sizeof(*st));
    if (!st) return NULL;
  }
  memset(st, 0, sizeof(*st));
  st->conn = c;
  st->id = id;
  st->timer_slot = -1;
  st->ctl_status = -1;
  st->resp_size = -1;
  st->clen = -1;
  tri_frame_decoder_init(&st->dec);
  st->next = c->streams;
  if (c->streams) c->streams->prev = st;
  c->streams = st;
  TRI_STATS_ADD(stats_of(c), calls, 1);
  return st;
}

/* Frees a stream.  While the connection lives, a response buffer that DATA
 * frames still point into is handed to the output queue (an empty entry
 * after those frames) instead of being freed. */
static void stream_free(srv_stream *st, int conn_dying) {
  srv_conn *c = st->conn;
  srv_worker *w = c->w;
  tri_pool *pool = pool_of(c);
  timer_remove(w, st);
  if (st->prev) st->prev->next = st->next;
  else c->streams = st->next;
  if (st->next) st->next->prev = st->prev;
  if (st->on_owing) {
    srv_stream **pp = &c->owing;
    while (*pp != st) pp = &(*pp)->owe_next;
    *pp = st->owe_next;
  }
  c->conn_owed += st->owed;
  tri_buf *b = st->q_head;
  if (b && st->q_ref && !conn_dying) {
    tri_buf *next = b->next;
    tri_outq_entry *e = tri_outq_push(&c->out, NULL, 0, 0);
    if (e) {
      e->buf = b;
    } else {
      conn_kill(c); /* the queue will never be written: free it now */
      tri_pool_put(pool, b);
    }
    b = next;
  }
  while (b) {
    tri_buf *next = b->next;
    tri_pool_put(pool, b);
    b = next;
  }
  if (st->pump_blocked) c->n_blocked--;
  tri_mem_free(st->jobs);
  tri_pool_put(pool, st->cur);
  tri_pool_put(pool, st->body);
  tri_pool_put(pool, st->md);
  tri_pool_put(pool, st->msg);
  if (w->spare_n < SPARE_STREAMS) {
    st->next = w->spare;
    w->spare = st;
    w->spare_n++;
  } else {
    tri_mem_free(st);
  }
}

/* ==== 7. request handling =============================================== */

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

/* One request header (initial HEADERS only; names are lower-case). */
static void req_header(srv_stream *st, const uint8_t *name, size_t nl,
                       const uint8_t *v, size_t vl) {
#define IS(lit) (nl == sizeof(lit) - 1 && memcmp(name, lit, nl) == 0)
  int64_t x;
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
    if (!st->msg_bin) set_msg(st, v, vl);
  } else if (IS("x-message-bin")) {
    uint8_t tmp[MAX_STATUS_MSG + 8];
    size_t in = vl > MAX_STATUS_MSG / 3 * 4 ? MAX_STATUS_MSG / 3 * 4 : vl;
    long n = tri_base64_decode((const char *)v, in, tmp);
    if (n < 0) {
      header_error(st, TRI_CODE_INVALID_ARGUMENT, "bad x-message-bin");
    } else {
      set_msg(st, tmp, (size_t)n);
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
    st->mb = MB_NONE;
    for (int i = 1; i < (int)(sizeof(MISBEHAVE) / sizeof(MISBEHAVE[0])); i++)
      if (token_is(v, vl, MISBEHAVE[i])) st->mb = (uint8_t)i;
    if (st->mb == MB_NONE)
      header_error(st, TRI_CODE_INVALID_ARGUMENT, "unknown x-misbehave %.*s",
                   (int)(vl < 32 ? vl : 32), (const char *)v);
  } else if (IS("x-reset")) {
    st->reset = parse_uint(v, vl, INT32_MAX, &x) == 0 && x != 0;
  }
#undef IS
}

/* ==== 7a. grpc.testing.TestService ===================================== */

/* Whether a TestService response is compressed: what the request asked
 * (response_compressed / ResponseParameters.compressed; -1: absent) when
 * the client accepts gzip, else the default rule. */
static int ts_gz(const srv_stream *st, int asked) {
  if (asked < 0) return st->gz_out;
  return asked && st->accept_gz;
}

/* A response message in a new buffer: gRPC with its prefix (flags 0),
 * Triple bare.  NULL when out of memory (the call failed). */
static tri_buf *msg_buf(srv_stream *st, size_t n) {
  size_t pre = st->wire == WIRE_GRPC ? TRI_FRAME_PREFIX : 0;
  tri_buf *b = tri_pool_get(pool_of(st->conn), pre + n, 0);
  if (!b) {
    fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
    return NULL;
  }
  if (pre) tri_frame_put_prefix(tri_buf_begin(b), 0, (uint32_t)n);
  b->off += pre; /* the caller writes the message at tri_buf_begin */
  return b;
}

/* Finishes msg_buf's buffer once its n bytes are written. */
static tri_buf *msg_done(srv_stream *st, tri_buf *b, size_t n) {
  size_t pre = st->wire == WIRE_GRPC ? TRI_FRAME_PREFIX : 0;
  b->off -= pre;
  b->len = pre + n;
  return b;
}

/* {payload: `size` zero bytes}: SimpleResponse / StreamingOutputCallResponse.
 * NULL when the call failed (bad size, out of memory). */
static tri_buf *ts_payload(srv_stream *st, int64_t size, int32_t type) {
  int64_t max = st->conn->w->srv->opts.max_message;
  if (size < 0) {
    fail(st, TRI_CODE_INVALID_ARGUMENT, "negative response size %lld",
         (long long)size);
    return NULL;
  }
  if (size > max) {
    fail(st, TRI_CODE_RESOURCE_EXHAUSTED,
         "response size %lld is larger than the limit of %lld",
         (long long)size, (long long)max);
    return NULL;
  }
  size_t n = tri_ts_payload_msg_len((uint32_t)size, type);
  tri_buf *b = msg_buf(st, n);
  if (!b) return NULL;
  tri_ts_payload_msg_put(tri_buf_begin(b), (uint32_t)size, type);
  return msg_done(st, b, n);
}

/* Ends a unary TestService call with `m` (taken; NULL: no message, or an
 * empty body on the Triple wire), compressed when `gz`. */
static void ts_answer(srv_stream *st, tri_buf *m, int gz) {
  if (st->wire == WIRE_TRIPLE) {
    st->gz_out = gz ? 1 : 0;
    triple_respond(st, TRI_CODE_OK, m);
    return;
  }
  if (m) grpc_emit(st, m, gz);
  grpc_finish(st, TRI_CODE_OK, NULL, 0);
}

/* EchoStatus code as a status: 1..16, anything else UNKNOWN. */
static int32_t echo_code(int32_t code) {
  return code >= 1 && code <= 16 ? code : TRI_CODE_UNKNOWN;
}

/* response_status with a nonzero code ends the call with it: returns 1. */
static int ts_status(srv_stream *st, const tri_ts_request *r) {
  if (!r->has_status || r->status_code == 0) return 0;
  set_msg(st, r->status_msg, r->status_msg_len);
  fail(st, echo_code(r->status_code), NULL);
  return 1;
}

/* expect_compressed that does not match the request: INVALID_ARGUMENT. */
static int ts_expect(srv_stream *st, int expect, int compressed) {
  if (expect < 0 || expect == (compressed != 0)) return 0;
  fail(st, TRI_CODE_INVALID_ARGUMENT,
       expect ? "expect_compressed: the request message was not compressed"
              : "expect_compressed false: the request message was compressed");
  return 1;
}

/* An unparsable request: INTERNAL on the gRPC wire (as gRPC servers say),
 * INVALID_ARGUMENT on the Triple wire (as dubbo-go and Connect say). */
static void ts_unparsable(srv_stream *st, const char *type) {
  fail(st, st->wire == WIRE_TRIPLE ? TRI_CODE_INVALID_ARGUMENT
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

/* ---- the JSON codec of the Triple wire (protojson), UnaryCall only ---- */

/* Matches a key by its proto name or its lowerCamelCase JSON name. */
static int jkey(const char *k, size_t kl, const char *proto, const char *camel) {
  return (kl == strlen(proto) && memcmp(k, proto, kl) == 0) ||
         (kl == strlen(camel) && memcmp(k, camel, kl) == 0);
}

static int j_payload(tri_tjson_cur *c, const char *k, size_t kl, void *arg) {
  tri_ts_request *r = arg;
  if (jkey(k, kl, "body", "body")) {
    tri_tjson_ws(c);
    if (tri_tjson_lit(c, "null") == 0) return 0;
    size_t n;
    if (tri_tjson_string(c, NULL, 0, &n)) return -1;
    r->payload_len = n / 4 * 3; /* about right: the body is not used */
    return 0;
  }
  return tri_tjson_skip(c, 1);
}

static int j_status(tri_tjson_cur *c, const char *k, size_t kl, void *arg) {
  tri_ts_request *r = arg;
  if (jkey(k, kl, "code", "code")) return tri_tjson_int32(c, &r->status_code);
  if (jkey(k, kl, "message", "message")) {
    static _Thread_local char msg[MAX_STATUS_MSG];
    tri_tjson_ws(c);
    if (tri_tjson_string(c, msg, sizeof(msg), &r->status_msg_len)) return -1;
    if (r->status_msg_len > sizeof(msg)) r->status_msg_len = sizeof(msg);
    r->status_msg = (const uint8_t *)msg;
    return 0;
  }
  return tri_tjson_skip(c, 1);
}

static int j_simple(tri_tjson_cur *c, const char *k, size_t kl, void *arg) {
  tri_ts_request *r = arg;
  if (jkey(k, kl, "response_type", "responseType")) {
    tri_tjson_ws(c);
    if (c->p < c->end && *c->p == '"' && tri_tjson_lit(c, "\"COMPRESSABLE\"") == 0) {
      r->response_type = 0;
      return 0;
    }
    return tri_tjson_int32(c, &r->response_type);
  }
  if (jkey(k, kl, "response_size", "responseSize"))
    return tri_tjson_int32(c, &r->response_size);
  if (jkey(k, kl, "payload", "payload")) return tri_tjson_object(c, j_payload, r);
  if (jkey(k, kl, "response_compressed", "responseCompressed"))
    return tri_tjson_bool(c, &r->response_compressed);
  if (jkey(k, kl, "expect_compressed", "expectCompressed"))
    return tri_tjson_bool(c, &r->expect_compressed);
  if (jkey(k, kl, "response_status", "responseStatus")) {
    r->has_status = 1;
    return tri_tjson_object(c, j_status, r);
  }
  return tri_tjson_skip(c, 1);
}

int tri_ts_decode_simple_json(const uint8_t *p, size_t n, tri_ts_request *r) {
  ts_request_init(r);
  tri_tjson_cur c = {(const char *)p, (const char *)p + n};
  if (!n || tri_tjson_object(&c, j_simple, r)) return -1;
  tri_tjson_ws(&c);
  return c.p == c.end ? 0 : -1;
}

/* A JSON body in a new buffer. */
static tri_buf *ts_json_text(srv_stream *st, const char *text) {
  size_t n = strlen(text);
  tri_buf *b = msg_buf(st, n);
  if (!b) return NULL;
  memcpy(tri_buf_begin(b), text, n);
  return msg_done(st, b, n);
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
    fail(st, r.response_size < 0 ? TRI_CODE_INVALID_ARGUMENT
                                 : TRI_CODE_RESOURCE_EXHAUSTED,
         "bad response size %d", (int)r.response_size);
    return;
  }
  size_t size = (size_t)r.response_size, b64 = (size + 2) / 3 * 4;
  tri_buf *b = msg_buf(st, b64 + 64);
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
  ts_answer(st, msg_done(st, b, k), ts_gz(st, r.response_compressed));
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
        fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
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
    set_msg(st, r.status_msg, r.status_msg_len);
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
      fail(st, prm.size < 0 ? TRI_CODE_INVALID_ARGUMENT
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

/* Runs the job queue: each response after its interval (a timer, never a
 * sleep), while the stream's queued output is under STREAM_OUT_LIMIT; the
 * call ends OK once the client half-closed and every job ran.
 * HalfDuplexCall starts only after the half-close. */
static void pump(srv_stream *st) {
  srv_worker *w = st->conn->w;
  while (!st->finished && st->go && job_method(st->method) &&
         !(st->method == T_HALF && !st->req_ended)) {
    if (st->jobs_head == st->jobs_n) {
      st->jobs_head = st->jobs_n = 0;
      if (st->req_ended) grpc_finish(st, TRI_CODE_OK, NULL, 0);
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
      fail(st, j.code, NULL);
      break;
    }
    tri_buf *m = ts_payload(st, j.size, j.type);
    if (!m) break;
    grpc_emit(st, m, ts_gz(st, j.gz));
  }
  if (!st->finished && timer_update(w, st))
    fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
}

/* ==== 7b. answering ===================================================== */

/* benchmark UnaryCall: the echo (or x-response-size).  Takes `body`. */
static void bench_unary(srv_stream *st, tri_buf *body) {
  if (st->resp_size >= 0) {
    tri_pool_put(pool_of(st->conn), body);
    if (!(body = generated_response(st))) {
      fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
      return;
    }
  }
  if (st->wire == WIRE_TRIPLE) {
    triple_respond(st, TRI_CODE_OK, body);
    return;
  }
  grpc_emit(st, body, st->gz_out);
  grpc_finish(st, TRI_CODE_OK, NULL, 0);
}

/* The request is complete and the delay is over: answer it. */
static void complete_request(srv_stream *st) {
  if (st->finished) return;
  tri_pool *pool = pool_of(st->conn);
  if (st->wire == WIRE_GRPC && tri_frame_decoder_partial(&st->dec)) {
    fail(st, TRI_CODE_INTERNAL, "malformed request: truncated message");
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
      fail(st, TRI_CODE_INTERNAL, "%s request has no message",
           st->method == M_UNARY ? "UnaryCall" : "the");
      return;
    }
    gz = st->body_gz;
    if (body) p = tri_buf_begin(body) + TRI_FRAME_PREFIX, n = body->len - TRI_FRAME_PREFIX;
  }
  switch (st->method) {
  case M_UNARY:
    bench_unary(st, body);
    return;
  case M_STREAM:
    grpc_finish(st, TRI_CODE_OK, NULL, 0);
    break;
  case T_EMPTY:
    if (st->wire == WIRE_GRPC) ts_answer(st, empty_message(st), st->gz_out);
    else if (st->json) ts_answer(st, ts_json_text(st, "{}"), st->gz_out);
    else ts_answer(st, NULL, 0);
    break;
  case T_UNARY:
    if (st->json) ts_unary_json(st, p, n, gz);
    else ts_unary(st, p, n, gz);
    break;
  case T_SOUT:
    ts_output_request(st, p, n);
    pump(st);
    break;
  case T_SIN: {
    uint8_t out[16];
    size_t k = tri_ts_aggregated_put(out, (int32_t)st->agg);
    tri_buf *m = msg_buf(st, k);
    if (!m) break;
    memcpy(tri_buf_begin(m), out, k);
    ts_answer(st, msg_done(st, m, k), st->gz_out);
    break;
  }
  case T_FULL:
  case T_HALF:
    pump(st);
    break;
  }
  tri_pool_put(pool, body);
}

/* The start of the answer, once x-delay-ms has passed. */
static void stream_go(srv_stream *st) {
  st->go = 1;
  if (st->finished) return;
  if (st->reset) {
    rst(st, NGHTTP2_CANCEL);
    return;
  }
  if (st->ctl_status > 0) {
    fail(st, st->ctl_status, NULL);
    return;
  }
  if (st->ctl_status == 0) {
    if (st->wire == WIRE_TRIPLE) {
      triple_respond(st, TRI_CODE_OK, NULL);
      return;
    }
    if (st->method == M_UNARY) {
      tri_buf *b = empty_message(st);
      if (b) grpc_emit(st, b, st->gz_out);
    }
    grpc_finish(st, TRI_CODE_OK, NULL, 0);
    return;
  }
  /* A stream's headers go now: a client may wait for them before sending. */
  if (st->wire == WIRE_GRPC && early_headers(st->method)) grpc_headers(st, 0);
  if (st->req_ended) complete_request(st);
  else pump(st); /* FullDuplexCall requests that came during the delay */
}

static void stream_deadline(srv_stream *st) {
  if (st->finished) return;
  if (st->wire == WIRE_TRIPLE) {
    set_msg(st, "Deadline Exceeded", 17);
    triple_respond(st, TRI_CODE_DEADLINE_EXCEEDED, NULL);
    return;
  }
  q_drop_unstarted(st);
  grpc_finish(st, TRI_CODE_DEADLINE_EXCEEDED, "Deadline Exceeded", 17);
}

/* ==== 7c. x-misbehave =================================================== */

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
  timer_remove(c->w, st);
  if (nghttp2_submit_goaway(c->sess, NGHTTP2_FLAG_NONE, last, NGHTTP2_NO_ERROR,
                            (const uint8_t *)why, sizeof(why) - 1)) {
    conn_kill(c);
    return;
  }
  if (!c->linger_max) {
    int64_t now = tri__now();
    c->linger_min = now + GOAWAY_LINGER_MIN_MS * 1000000LL;
    c->linger_max = now + GOAWAY_LINGER_MAX_MS * 1000000LL;
    c->w->n_linger++;
  }
  mark_dirty(c);
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
  timer_remove(st->conn->w, st);
  if (tri_outq_stage(&st->conn->out, frame, sizeof(frame)))
    conn_kill(st->conn);
  mark_dirty(st->conn);
}

/* wrong-content-type: 200, content-type text/html, an HTML body, the end
 * of the stream (no trailers, no grpc-status). */
static void misbehave_content_type(srv_stream *st) {
  static const char html[] = "<html><body>not a gRPC server</body></html>\n";
  tri_buf *b = tri_pool_get(pool_of(st->conn), sizeof(html) - 1, 0);
  if (!b) {
    fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
    return;
  }
  memcpy(tri_buf_begin(b), html, sizeof(html) - 1);
  b->len = sizeof(html) - 1;
  st->finished = 1;
  st->plain_end = 1;
  timer_remove(st->conn->w, st);
  q_push(st, b);
  nghttp2_nv nv[] = {
      {(uint8_t *)":status", (uint8_t *)"200", 7, 3, NGHTTP2_NV_FLAG_NONE},
      {(uint8_t *)"content-type", (uint8_t *)"text/html; charset=utf-8", 12, 24,
       NGHTTP2_NV_FLAG_NONE}};
  nghttp2_data_provider prd = provider(st);
  if (nghttp2_submit_response(st->conn->sess, st->id, nv, 2, &prd)) {
    submit_failed(st);
    return;
  }
  st->headers_sent = 1;
  mark_dirty(st->conn);
}

/* tiny-window: SETTINGS_INITIAL_WINDOW_SIZE = 1 for the rest of this
 * connection (see tri_server.h). */
static void tiny_window(srv_conn *c) {
  if (c->tiny) return;
  nghttp2_settings_entry iv = {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1};
  if (nghttp2_submit_settings(c->sess, NGHTTP2_FLAG_NONE, &iv, 1) == 0)
    c->tiny = 1;
  mark_dirty(c);
}

/* Applies x-misbehave at the end of the request headers.  Returns 1 when
 * the mode took the stream over (nothing else is to be done with it). */
static int misbehave(srv_stream *st) {
  switch (st->mb) {
  case MB_NEVER: /* no answer, no deadline: only the client ends it */
    st->never = 1;
    st->deadline = 0;
    timer_remove(st->conn->w, st);
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
      fail(st, TRI_CODE_INVALID_ARGUMENT,
           "x-misbehave: bad-grpc-status is a gRPC-wire mode");
      return 1;
    }
    return 0;
  default: /* rst-mid-response acts on the answer */
    return 0;
  }
}

/* The request headers are complete. */
static void headers_done(srv_stream *st) {
  if (!st->is_post) {
    http_reply(st, "405");
    return;
  }
  if (st->wire == WIRE_NONE) {
    http_reply(st, "415");
    return;
  }
  if (st->bad_code) {
    fail(st, st->bad_code, "%s", st->bad_msg);
    return;
  }
  if (st->mb && misbehave(st)) return;
  if (st->method == M_UNKNOWN) {
    fail(st, TRI_CODE_UNIMPLEMENTED, "unknown method %s", st->path);
    return;
  }
  if (st->method == T_UNIMPL) {
    fail(st, TRI_CODE_UNIMPLEMENTED, "%s is not implemented", st->path);
    return;
  }
  if (st->wire == WIRE_TRIPLE && !triple_ok(st->method)) {
    fail(st, TRI_CODE_UNIMPLEMENTED, "%s is served on the gRPC wire only",
         st->path);
    return;
  }
  /* Compression: gzip or identity.  The default response rule: compress
   * when the client accepts gzip and compressed its request or asked with
   * x-compress-response: 1. */
  uint8_t enc = st->wire == WIRE_GRPC ? st->grpc_enc : st->content_enc;
  if (enc == ENC_OTHER) {
    fail(st, TRI_CODE_UNIMPLEMENTED,
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
  if (timer_update(st->conn->w, st)) {
    fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
    return;
  }
  if (!st->hold_until) stream_go(st);
}

static void request_end(srv_stream *st) {
  st->req_ended = 1;
  if (st->go) complete_request(st);
}

/* Checks a request message's envelope flags.  0x01 (compressed) needs
 * grpc-encoding: gzip; any other flag is malformed.  Returns 1 when the
 * message may be read. */
static int check_flags(srv_stream *st, uint8_t flags) {
  if (flags & ~TRI_FRAME_FLAG_COMPRESSED) {
    fail(st, TRI_CODE_INTERNAL, "malformed message: flags 0x%02x", flags);
    return 0;
  }
  st->cur_gz = (flags & TRI_FRAME_FLAG_COMPRESSED) != 0;
  if (st->cur_gz && !st->req_gz) {
    fail(st, TRI_CODE_INTERNAL,
         "compressed message without grpc-encoding: gzip");
    return 0;
  }
  return 1;
}

/* Ends the call after tri_gzip_decompress failed with `rv`. */
static void inflate_failed(srv_stream *st, int rv, const char *what) {
  if (rv == TRI_ERR_TOO_LARGE)
    fail(st, TRI_CODE_RESOURCE_EXHAUSTED,
         "decompressed %s is larger than the limit of %lld", what,
         (long long)st->conn->w->srv->opts.max_message);
  else if (rv == TRI_ERR_FRAME)
    fail(st, TRI_CODE_INTERNAL, "%s: invalid gzip data", what);
  else
    fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
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
    fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
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
      fail(st, TRI_CODE_INTERNAL, "%s request has more than one message",
           st->method == M_UNARY ? "UnaryCall" : "the");
      return;
    }
    st->body = m;
    st->body_gz = gz ? 1 : 0;
    return;
  }
  if (st->method != M_STREAM) { /* TestService streams */
    const uint8_t *p = tri_buf_begin(m) + TRI_FRAME_PREFIX;
    size_t n = m->len - TRI_FRAME_PREFIX;
    if (st->method == T_SIN) ts_input_message(st, p, n, gz);
    else ts_output_request(st, p, n);
    tri_pool_put(pool_of(st->conn), m);
    pump(st);
    return;
  }
  if (st->resp_size >= 0) {
    tri_pool_put(pool_of(st->conn), m);
    if (!(m = generated_response(st))) {
      fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
      return;
    }
  }
  grpc_emit(st, m, st->gz_out); /* before go (x-delay-ms) it waits */
}

static void grpc_data(srv_stream *st, const uint8_t *d, size_t n) {
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
        fail(st, TRI_CODE_RESOURCE_EXHAUSTED,
             "message of %u bytes is larger than the limit of %lld",
             ev.length, (long long)max);
        return;
      }
      st->cur = tri_pool_get(pool_of(st->conn),
                             TRI_FRAME_PREFIX + (size_t)ev.length, 0);
      if (!st->cur) {
        fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
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

static void triple_data(srv_stream *st, const uint8_t *d, size_t n) {
  tri_pool *pool = pool_of(st->conn);
  int64_t max = st->conn->w->srv->opts.max_message;
  size_t have = st->body ? st->body->len : 0;
  if ((int64_t)(have + n) > max) {
    fail(st, TRI_CODE_RESOURCE_EXHAUSTED,
         "request body is larger than the limit of %lld", (long long)max);
    return;
  }
  if (!st->body) {
    size_t hint = st->clen > 0 && st->clen <= max ? (size_t)st->clen : n;
    if (!(st->body = tri_pool_get(pool, hint, 0))) {
      fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
      return;
    }
  }
  if (tri_buf_append(pool, &st->body, d, n))
    fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
}

/* ==== 8. nghttp2 callbacks ============================================== */

static srv_stream *stream_of(nghttp2_session *s, int32_t id) {
  return nghttp2_session_get_stream_user_data(s, id);
}

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f,
                            void *user) {
  if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
    return 0;
  srv_stream *st = stream_new(user, f->hd.stream_id);
  if (!st) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* resets it */
  nghttp2_session_set_stream_user_data(s, f->hd.stream_id, st);
  return 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f,
                     const uint8_t *name, size_t nl, const uint8_t *value,
                     size_t vl, uint8_t flags, void *user) {
  (void)flags, (void)user;
  if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
    return 0; /* trailers from the client carry nothing we use */
  srv_stream *st = stream_of(s, f->hd.stream_id);
  if (st) req_header(st, name, nl, value, vl);
  return 0;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f,
                         void *user) {
  (void)user;
  if (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) return 0;
  srv_stream *st = stream_of(s, f->hd.stream_id);
  if (!st) return 0;
  if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST)
    headers_done(st);
  if (f->hd.flags & NGHTTP2_FLAG_END_STREAM) request_end(st);
  mark_dirty(st->conn);
  return 0;
}

static int on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t id,
                         const uint8_t *data, size_t len, void *user) {
  (void)flags;
  srv_conn *c = user;
  srv_stream *st = stream_of(s, id);
  if (!st) {
    c->conn_owed += (int64_t)len;
    return 0;
  }
  st->owed += (int64_t)len;
  if (!st->on_owing) {
    st->on_owing = 1;
    st->owe_next = c->owing;
    c->owing = st;
  }
  mark_dirty(c);
  if (st->finished || st->never) return 0; /* the rest is dropped */
  if (st->wire == WIRE_GRPC) grpc_data(st, data, len);
  else triple_data(st, data, len);
  return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t code,
                           void *user) {
  (void)code, (void)user;
  srv_stream *st = stream_of(s, id);
  if (st) stream_free(st, 0);
  return 0;
}

static ssize_t read_length(nghttp2_session *s, uint8_t type, int32_t sid,
                           int32_t conn_win, int32_t stream_win,
                           uint32_t max_frame, void *user) {
  (void)s, (void)type, (void)sid, (void)user;
  int32_t n = conn_win < stream_win ? conn_win : stream_win;
  if ((uint32_t)n > max_frame) n = (int32_t)max_frame;
  return n > 0 ? n : 1;
}

/* ==== 9. connections ==================================================== */

static void *arena_malloc(size_t n, void *u) { return tri_arena_alloc(u, n); }
static void arena_free(void *p, void *u) { tri_arena_free(u, p); }
static void *arena_calloc(size_t n, size_t sz, void *u) {
  return tri_arena_calloc(u, n, sz);
}
static void *arena_realloc(void *p, size_t n, void *u) {
  return tri_arena_realloc(u, p, n);
}

/* Takes `fd` (closing it on failure). */
static void conn_new(srv_worker *w, int fd) {
  tri_server *s = w->srv;
  srv_conn *c = tri_mem_calloc(&s->stats, 1, sizeof(*c));
  if (!c) goto fail;
  c->w = w;
  c->fd = fd;
  tri_arena_init(&c->arena, &s->stats);
  c->mem.mem_user_data = &c->arena;
  c->mem.malloc = arena_malloc;
  c->mem.free = arena_free;
  c->mem.calloc = arena_calloc;
  c->mem.realloc = arena_realloc;
  tri_outq_entry *entries = tri_mem_alloc(&s->stats, 64 * sizeof(*entries));
  tri_buf *staging = tri_pool_get(&s->pool, 64u << 10, 0);
  if (!entries || !staging) {
    tri_mem_free(entries);
    tri_pool_put(&s->pool, staging);
    goto fail;
  }
  tri_outq_init(&c->out, entries, 64, staging, &s->pool, &s->stats, 1);
  if (nghttp2_session_server_new3(&c->sess, w->cbs, c, w->opt, &c->mem))
    goto fail;
  const tri_server_opts *o = &s->opts;
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, o->max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, o->stream_window},
      {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, o->max_frame_size},
      {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
  };
  if (nghttp2_submit_settings(c->sess, NGHTTP2_FLAG_NONE, iv, 4) ||
      nghttp2_session_set_local_window_size(c->sess, NGHTTP2_FLAG_NONE, 0,
                                            (int32_t)o->conn_window))
    goto fail;
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
  if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev)) goto fail;
  c->next = w->conns;
  if (w->conns) w->conns->prev = c;
  w->conns = c;
  TRI_STATS_ADD(&s->stats, connects, 1);
  mark_dirty(c); /* our SETTINGS go out now */
  return;
fail:
  close(fd);
  if (!c) return;
  if (c->sess) nghttp2_session_del(c->sess);
  tri_pool_put(&s->pool, c->out.staging);
  tri_mem_free(c->out.e);
  tri_arena_free_all(&c->arena);
  tri_mem_free(c);
}

static void conn_free(srv_conn *c) {
  srv_worker *w = c->w;
  tri_pool *pool = pool_of(c);
  if (c->linger_max) w->n_linger--;
  epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  nghttp2_session_del(c->sess); /* calls no callbacks */
  tri_outq_drop(&c->out, out_done, pool);
  while (c->streams) stream_free(c->streams, 1);
  tri_pool_put(pool, c->out.staging);
  tri_mem_free(c->out.e);
  tri_arena_free_all(&c->arena);
  if (c->prev) c->prev->next = c->next;
  else w->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  tri_mem_free(c);
}

static void conn_read(srv_conn *c) {
  srv_worker *w = c->w;
  for (int i = 0; i < READS_PER_EVENT; i++) {
    ssize_t r = read(c->fd, w->rbuf, RBUF_SIZE);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (r <= 0) { /* reset, or the client went away */
      conn_kill(c);
      return;
    }
    TRI_STATS_ADD(stats_of(c), read_syscalls, 1);
    TRI_STATS_ADD(stats_of(c), bytes_read, r);
    ssize_t rv = nghttp2_session_mem_recv(c->sess, w->rbuf, (size_t)r);
    if (rv < 0) {
      /* Not HTTP/2 (bad preface) or a fatal error: say so if we can. */
      nghttp2_session_terminate_session(c->sess, NGHTTP2_PROTOCOL_ERROR);
      conn_flush(c);
      conn_kill(c);
      return;
    }
    if ((size_t)r < RBUF_SIZE) return; /* drained (level-triggered) */
  }
}

/* ==== workers =========================================================== */

/* Resumes the job queues that waited for their output to drain.  Returns 1
 * when one went on. */
static int unblock(srv_conn *c) {
  int did = 0;
  for (srv_stream *st = c->streams; st && c->n_blocked; st = st->next) {
    if (!st->pump_blocked || st->q_bytes >= STREAM_OUT_LIMIT) continue;
    st->pump_blocked = 0;
    c->n_blocked--;
    pump(st);
    did = 1;
  }
  return did;
}

static void process_dirty(srv_worker *w) {
  while (w->dirty) {
    srv_conn *c = w->dirty;
    w->dirty = c->dirty_next;
    /* c->dirty stays set meanwhile, so marks made now are no-ops. */
    if (!c->dead) {
      settle(c);
      conn_flush(c);
      if (!c->dead && settle(c)) conn_flush(c);
      while (!c->dead && c->n_blocked && unblock(c)) conn_flush(c);
    }
    c->dirty = 0;
    if (c->dead) conn_free(c);
  }
}

/* Closes the connections whose x-misbehave GOAWAY linger is over. */
static void run_lingers(srv_worker *w, int64_t now) {
  for (srv_conn *c = w->conns; c && w->n_linger; c = c->next) {
    if (!c->linger_max || c->dead) continue;
    if (now >= c->linger_max ||
        (now >= c->linger_min && !nghttp2_session_want_read(c->sess) &&
         !nghttp2_session_want_write(c->sess))) {
      conn_flush(c);
      conn_kill(c);
    }
  }
}

/* The earliest linger end still to come (0: none). */
static int64_t next_linger(srv_worker *w) {
  int64_t t = 0;
  if (!w->n_linger) return 0;
  for (srv_conn *c = w->conns; c; c = c->next) {
    if (!c->linger_max || c->dead) continue;
    int64_t at = c->linger_min > tri__now() ? c->linger_min : c->linger_max;
    if (!t || at < t) t = at;
  }
  return t;
}

static void run_timers(srv_worker *w) {
  int64_t now = tri__now();
  if (w->n_linger) run_lingers(w, now);
  while (tri_deadlines_count(&w->timers) &&
         tri_deadlines_first_at(&w->timers) <= now) {
    srv_stream *st = tri_deadlines_first(&w->timers);
    timer_remove(w, st);
    if (st->conn->dead) continue;
    if (!st->go && st->hold_until && st->hold_until <= now) stream_go(st);
    if (!st->finished && st->job_due && st->job_due <= now) pump(st);
    if (!st->finished && st->deadline && st->deadline <= now)
      stream_deadline(st);
    if (timer_update(w, st))
      fail(st, TRI_CODE_RESOURCE_EXHAUSTED, "out of memory");
    mark_dirty(st->conn);
  }
}

static int next_timeout_ms(srv_worker *w) {
  int64_t at = tri_deadlines_count(&w->timers)
                   ? tri_deadlines_first_at(&w->timers)
                   : 0,
          lg = next_linger(w);
  if (lg && (!at || lg < at)) at = lg;
  if (!at) return -1;
  int64_t left = at - tri__now();
  if (left <= 0) return 0;
  int64_t ms = (left + 999999) / 1000000;
  return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* Takes the sockets the acceptor handed over. */
static void adopt(srv_worker *w) {
  for (;;) {
    int fds[64];
    pthread_mutex_lock(&w->lock);
    size_t n = w->pend_n < 64 ? w->pend_n : 64;
    if (n) memcpy(fds, w->pend + (w->pend_n - n), n * sizeof(int));
    w->pend_n -= n;
    pthread_mutex_unlock(&w->lock);
    if (!n) return;
    for (size_t i = 0; i < n; i++) conn_new(w, fds[i]);
  }
}

static void *worker_main(void *arg) {
  srv_worker *w = arg;
  tri_server *s = w->srv;
  struct epoll_event evs[64];
  while (!atomic_load(&s->stopping)) {
    int n = epoll_wait(w->epfd, evs, 64, next_timeout_ms(w));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; i++) {
      srv_conn *c = evs[i].data.ptr;
      if (!c) { /* the eventfd: new sockets or stop */
        uint64_t v;
        ssize_t r = read(w->evfd, &v, sizeof(v));
        (void)r;
        adopt(w);
        continue;
      }
      if (c->dead) continue;
      if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) conn_read(c);
      mark_dirty(c);
    }
    run_timers(w);
    process_dirty(w);
  }
  /* Stop: a GOAWAY where it can go out at once, then close everything. */
  for (srv_conn *c = w->conns; c; c = c->next) {
    if (c->dead) continue;
    nghttp2_session_terminate_session(c->sess, NGHTTP2_NO_ERROR);
    conn_flush(c);
  }
  w->dirty = NULL;
  while (w->conns) conn_free(w->conns);
  pthread_mutex_lock(&w->lock);
  for (size_t i = 0; i < w->pend_n; i++) close(w->pend[i]);
  w->pend_n = 0;
  pthread_mutex_unlock(&w->lock);
  while (w->spare) {
    srv_stream *st = w->spare;
    w->spare = st->next;
    tri_mem_free(st);
  }
  w->spare_n = 0;
  tri_deadlines_free(&w->timers);
  return NULL;
}

/* Gives an accepted socket to the next worker (round robin). */
static void hand_over(tri_server *s, int fd) {
  srv_worker *w = &s->workers[s->rr++ % (unsigned)s->nworkers];
  pthread_mutex_lock(&w->lock);
  if (w->pend_n == w->pend_cap) {
    size_t cap = w->pend_cap ? 2 * w->pend_cap : 16;
    int *p = tri_mem_alloc(&s->stats, cap * sizeof(int));
    if (!p) {
      pthread_mutex_unlock(&w->lock);
      close(fd);
      return;
    }
    if (w->pend_n) memcpy(p, w->pend, w->pend_n * sizeof(int));
    tri_mem_free(w->pend);
    w->pend = p;
    w->pend_cap = cap;
  }
  w->pend[w->pend_n++] = fd;
  pthread_mutex_unlock(&w->lock);
  uint64_t one = 1;
  ssize_t r = write(w->evfd, &one, sizeof(one));
  (void)r;
}

static void *acceptor_main(void *arg) {
  tri_server *s = arg;
  struct pollfd pf[2] = {{.fd = s->lfd, .events = POLLIN},
                         {.fd = s->stop_fd, .events = POLLIN}};
  while (!atomic_load(&s->stopping)) {
    int n = poll(pf, 2, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (pf[1].revents) break;
    if (!(pf[0].revents & POLLIN)) continue;
    for (;;) {
      int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
            errno == ENOMEM)
          poll(&pf[1], 1, 10); /* out of descriptors: back off a little */
        break;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      hand_over(s, fd);
    }
  }
  return NULL;
}

/* ==== API =============================================================== */

void tri_server_opts_init(tri_server_opts *o) {
  memset(o, 0, sizeof(*o));
  o->host = "127.0.0.1";
  o->port = 0;
  o->threads = 1;
  o->stream_window = (16u << 20) - 1;
  o->conn_window = (1u << 30) - 1;
  o->max_frame_size = 64u << 10;
  o->max_concurrent_streams = 10000;
  o->max_message = 64 << 20;
}

int tri_server_new(tri_server **out, const tri_server_opts *opts) {
  tri_server_opts o;
  if (opts) o = *opts;
  else tri_server_opts_init(&o);
  if (!o.host) o.host = "127.0.0.1";
  if (o.threads == 0) o.threads = 1;
  if (o.threads < 0 || o.threads > MAX_THREADS || o.port < 0 ||
      o.port > 65535 || strlen(o.host) >= 256 ||
      o.stream_window > (uint32_t)INT32_MAX ||
      o.conn_window > (uint32_t)INT32_MAX || o.max_frame_size < 16384 ||
      o.max_frame_size > 16777215 || o.max_message < 0 ||
      o.max_message > (int64_t)UINT32_MAX)
    return TRI_ERR_INVALID;
  tri_server *s = tri_mem_calloc(NULL, 1, sizeof(*s));
  if (!s) return TRI_ERR_NOMEM;
  TRI_STATS_ADD(&s->stats, allocations, 1); /* itself */
  s->workers = tri_mem_calloc(&s->stats, (size_t)o.threads, sizeof(srv_worker));
  if (!s->workers) {
    tri_mem_free(s);
    return TRI_ERR_NOMEM;
  }
  s->opts = o;
  snprintf(s->hostbuf, sizeof(s->hostbuf), "%s", o.host);
  s->opts.host = s->hostbuf;
  s->nworkers = o.threads;
  s->lfd = s->stop_fd = -1;
  tri_pool_init(&s->pool, &s->stats);
  tri_gzip_pool_init(&s->zp, &s->stats);
  for (int i = 0; i < s->nworkers; i++) {
    srv_worker *w = &s->workers[i];
    w->srv = s;
    w->epfd = w->evfd = -1;
    tri_deadlines_init(&w->timers, &s->stats);
    pthread_mutex_init(&w->lock, NULL);
  }
  *out = s;
  return 0;
}

/* Stops and joins every thread that runs, and closes what start opened. */
static void shutdown_threads(tri_server *s) {
  atomic_store(&s->stopping, 1);
  uint64_t one = 1;
  ssize_t r;
  if (s->stop_fd >= 0) r = write(s->stop_fd, &one, sizeof(one));
  if (s->acceptor_running) pthread_join(s->acceptor, NULL);
  s->acceptor_running = 0;
  for (int i = 0; i < s->nworkers; i++) {
    srv_worker *w = &s->workers[i];
    if (w->running) {
      r = write(w->evfd, &one, sizeof(one));
      pthread_join(w->thread, NULL);
      w->running = 0;
    }
  }
  (void)r;
  for (int i = 0; i < s->nworkers; i++) {
    srv_worker *w = &s->workers[i];
    if (w->epfd >= 0) close(w->epfd);
    if (w->evfd >= 0) close(w->evfd);
    w->epfd = w->evfd = -1;
    tri_mem_free(w->rbuf);
    w->rbuf = NULL;
    tri_pool_put(&s->pool, w->scratch);
    w->scratch = NULL;
    if (w->cbs) nghttp2_session_callbacks_del(w->cbs);
    if (w->opt) nghttp2_option_del(w->opt);
    w->cbs = NULL;
    w->opt = NULL;
  }
  if (s->lfd >= 0) close(s->lfd);
  if (s->stop_fd >= 0) close(s->stop_fd);
  s->lfd = s->stop_fd = -1;
}

static int listen_on(tri_server *s) {
  char port[8];
  snprintf(port, sizeof(port), "%d", s->opts.port);
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  const char *host = s->opts.host[0] ? s->opts.host : NULL;
  int rv = getaddrinfo(host, port, &hints, &res);
  if (rv) {
    snprintf(s->errstr, sizeof(s->errstr), "cannot resolve %s: %s",
             s->opts.host, gai_strerror(rv));
    return TRI_ERR_RESOLVE;
  }
  int err = 0;
  for (struct addrinfo *a = res; a; a = a->ai_next) {
    int fd =
        socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 1024) == 0) {
      struct sockaddr_storage ss;
      socklen_t sl = sizeof(ss);
      getsockname(fd, (struct sockaddr *)&ss, &sl);
      s->port = ntohs(ss.ss_family == AF_INET6
                          ? ((struct sockaddr_in6 *)&ss)->sin6_port
                          : ((struct sockaddr_in *)&ss)->sin_port);
      s->lfd = fd;
      freeaddrinfo(res);
      return 0;
    }
    err = errno;
    close(fd);
  }
  freeaddrinfo(res);
  snprintf(s->errstr, sizeof(s->errstr), "cannot listen on %s:%d: %s",
           s->opts.host, s->opts.port, strerror(err));
  return TRI_ERR_SYSTEM;
}

static int make_callbacks(srv_worker *w) {
  if (nghttp2_session_callbacks_new(&w->cbs) || nghttp2_option_new(&w->opt))
    return -1;
  nghttp2_session_callbacks *cb = w->cbs;
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
  nghttp2_session_callbacks_set_send_data_callback(cb, send_data_cb);
  nghttp2_session_callbacks_set_data_source_read_length_callback(cb,
                                                                 read_length);
  nghttp2_option_set_no_auto_window_update(w->opt, 1); /* see settle() */
  nghttp2_option_set_no_closed_streams(w->opt, 1);
  /* Accept values with outer blanks, as grpc-go and grpcio servers do. */
  nghttp2_option_set_no_rfc9113_leading_and_trailing_ws_validation(w->opt, 1);
  return 0;
}

int tri_server_start(tri_server *s) {
  if (s->started) return TRI_ERR_INVALID;
  s->started = 1;
  s->errstr[0] = 0;
  int rv = listen_on(s);
  if (rv) {
    s->stopped = 1;
    return rv;
  }
  s->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (s->stop_fd < 0) goto fail;
  for (int i = 0; i < s->nworkers; i++) {
    srv_worker *w = &s->workers[i];
    w->epfd = epoll_create1(EPOLL_CLOEXEC);
    w->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    w->rbuf = tri_mem_alloc(&s->stats, RBUF_SIZE);
    w->scratch = tri_pool_get(&s->pool, 4096, 0);
    if (w->epfd < 0 || w->evfd < 0 || !w->rbuf || !w->scratch ||
        make_callbacks(w))
      goto fail;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->evfd, &ev)) goto fail;
  }
  for (int i = 0; i < s->nworkers; i++) {
    srv_worker *w = &s->workers[i];
    if (tri_thread_create(&w->thread, worker_main, w)) goto fail;
    w->running = 1;
  }
  if (tri_thread_create(&s->acceptor, acceptor_main, s)) goto fail;
  s->acceptor_running = 1;
  return 0;
fail:
  if (!s->errstr[0])
    snprintf(s->errstr, sizeof(s->errstr), "cannot start the server: %s",
             strerror(errno));
  shutdown_threads(s);
  s->stopped = 1;
  return TRI_ERR_SYSTEM;
}

int tri_server_port(const tri_server *s) { return s->port; }

int tri_server_stop(tri_server *s) {
  if (!s->started || s->stopped) return 0;
  shutdown_threads(s);
  s->stopped = 1;
  return 0;
}

void tri_server_del(tri_server *s) {
  if (!s) return;
  tri_server_stop(s);
  for (int i = 0; i < s->nworkers; i++) {
    pthread_mutex_destroy(&s->workers[i].lock);
    tri_mem_free(s->workers[i].pend);
  }
  tri_mem_free(s->workers);
  tri_gzip_pool_free(&s->zp);
  tri_pool_free(&s->pool);
  tri_mem_free(s);
}

const tri_stats *tri_server_stats(const tri_server *s) { return &s->stats; }

const char *tri_server_errstr(const tri_server *s) { return s->errstr; }
