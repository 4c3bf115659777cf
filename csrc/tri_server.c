/*
 * tri_server.c: the embedded BenchmarkService echo server (see tri_server.h
 * for the behaviour).  Layout of this file:
 *   1. types          4. output queue       7. request handling
 *   2. small helpers  5. responses          8. nghttp2 callbacks
 *   3. timer heap     6. stream lifetime    9. connections, workers, API
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
#include "tri_error.h"
#include "tri_frame.h"
#include "tri_mem.h"
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

static const char SERVICE_PREFIX[] = "/benchmark.BenchmarkService/";

/* ==== 1. types ========================================================== */

enum { WIRE_NONE = 0, WIRE_GRPC, WIRE_TRIPLE };
enum { M_UNKNOWN = 0, M_UNARY, M_STREAM };

typedef struct srv_conn srv_conn;
typedef struct srv_worker srv_worker;
typedef struct srv_stream srv_stream;

struct srv_stream {
  srv_conn *conn;
  int32_t id;
  srv_stream *prev, *next; /* conn->streams */
  srv_stream *owe_next;    /* conn->owing, while on_owing */
  int heap_idx;            /* in the worker's timer heap, -1 when absent */
  int64_t tkey;            /* its key there */
  int64_t hold_until;      /* x-delay-ms: the answer starts then (0: none) */
  int64_t deadline;        /* grpc-timeout / triple-timeout-ms (0: none) */

  /* Request headers. */
  uint8_t wire, method;
  unsigned is_post : 1, json : 1, go : 1, req_ended : 1, finished : 1,
      headers_sent : 1, deferred : 1, on_owing : 1, q_ref : 1, reset : 1,
      msg_bin : 1, grpc_encoded : 1, body_encoded : 1;
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
  tri_buf *md;             /* x-echo-* records: u32 klen, u32 vlen, key, value */
  size_t echo_n;
  tri_buf *msg;            /* status message (raw bytes) */

  /* Request body. */
  tri_frame_decoder dec;
  tri_buf *cur;            /* gRPC message being received: prefix + payload */
  tri_buf *body;           /* gRPC unary request message / Triple body */
  int nmsg;                /* gRPC messages received */
  int64_t owed;            /* bytes received, not yet credited to the peer */

  /* Response. */
  int status;              /* final code, once finished */
  tri_buf *q_head, *q_tail; /* bytes not yet framed, from q_off in q_head */
  size_t q_off;
  size_t q_bytes;
};

/* One entry of a connection's output: `len` bytes at `ptr` (a response
 * buffer, NO_COPY) or at staging[off] (ptr NULL).  `own`, when set, is a
 * buffer this entry releases once written (the entry may be empty). */
typedef struct srv_out {
  const uint8_t *ptr;
  size_t off, len;
  tri_buf *own;
} srv_out;

struct srv_conn {
  srv_worker *w;
  int fd;
  nghttp2_session *sess;
  tri_arena arena; /* nghttp2's allocations (this worker only) */
  nghttp2_mem mem;
  srv_out *out;    /* pending output: out[out_head..out_n) */
  size_t out_head, out_n, out_cap;
  tri_buf *staging; /* copied frame bytes that `out` refers to by offset */
  size_t pending;   /* bytes in out[out_head..out_n) */
  srv_stream *streams;
  srv_stream *owing; /* streams with owed > 0 */
  int64_t conn_owed; /* bytes of closed streams to credit to the connection */
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
  srv_stream **heap;
  size_t heap_n, heap_cap;
  srv_stream *spare; /* free stream objects, linked by next */
  size_t spare_n;
  tri_buf *scratch;  /* header strings being built */
};

struct tri_server {
  tri_server_opts opts; /* host points into hostbuf */
  char hostbuf[256];
  tri_stats stats;
  tri_pool pool;
  int lfd, stop_fd, port;
  int started, stopped, acceptor_running;
  pthread_t acceptor;
  _Atomic int stopping;
  srv_worker *workers;
  int nworkers;
  unsigned rr; /* acceptor thread only */
  char errstr[200];
};

/* ==== 2. small helpers ================================================== */

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

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

/* The Connect / Triple name of a code (docs/triple-wire.md §5 table A). */
static const char *connect_name(int code) {
  static const char *const names[] = {
      "ok",          "canceled",          "unknown",          "invalid_argument",
      "deadline_exceeded", "not_found",   "already_exists",   "permission_denied",
      "resource_exhausted", "failed_precondition", "aborted", "out_of_range",
      "unimplemented", "internal",        "unavailable",      "data_loss",
      "unauthenticated"};
  return code >= 0 && code <= 16 ? names[code] : "unknown";
}

/* dubbo-go's code -> HTTP status (§5 table A, dubbo-go column). */
static int triple_http_status(int code) {
  static const int http[] = {200, 408, 500, 400, 408, 404, 409, 403, 429,
                             412, 409, 400, 404, 500, 503, 500, 401};
  return code >= 0 && code <= 16 ? http[code] : 500;
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

#define NVL_LIT(l, n, v) nvl_add(l, n, sizeof(n) - 1, v, strlen(v))

static char *nvl_space(nvlist *l, size_t n) {
  if (l->sp_len + n > l->sp_cap) return NULL;
  char *p = l->sp + l->sp_len;
  l->sp_len += n;
  return p;
}

/* Adds the x-echo-* pairs, with `prefix` ("" or "trailer-") on the keys. */
static void nvl_add_echo(nvlist *l, const srv_stream *st, const char *prefix) {
  if (!st->md) return;
  size_t plen = strlen(prefix);
  const uint8_t *p = tri_buf_begin(st->md), *end = p + st->md->len;
  while (p < end) {
    uint32_t kl, vl;
    memcpy(&kl, p, 4);
    memcpy(&vl, p + 4, 4);
    const char *k = (const char *)p + 8, *v = k + kl;
    if (plen) {
      char *name = nvl_space(l, plen + kl);
      if (!name) return;
      memcpy(name, prefix, plen);
      memcpy(name + plen, k, kl);
      nvl_add(l, name, plen + kl, v, vl);
    } else {
      nvl_add(l, k, kl, v, vl);
    }
    p += 8 + kl + vl;
  }
}

/* Adds grpc-status and, when there is a message, grpc-message. */
static void nvl_add_status(nvlist *l, const srv_stream *st) {
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

/* ==== 3. timer heap (per worker, keyed by tkey) ========================= */

/* When the stream next needs the worker: its delay, then its deadline. */
static int64_t timer_at(const srv_stream *st) {
  if (st->finished) return 0;
  int64_t t = 0;
  if (!st->go && st->hold_until) t = st->hold_until;
  if (st->deadline && (!t || st->deadline < t)) t = st->deadline;
  return t;
}

static void heap_swap(srv_worker *w, size_t a, size_t b) {
  srv_stream *x = w->heap[a];
  w->heap[a] = w->heap[b];
  w->heap[b] = x;
  w->heap[a]->heap_idx = (int)a;
  w->heap[b]->heap_idx = (int)b;
}

static void heap_up(srv_worker *w, size_t i) {
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (w->heap[p]->tkey <= w->heap[i]->tkey) break;
    heap_swap(w, i, p);
    i = p;
  }
}

static void heap_down(srv_worker *w, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < w->heap_n && w->heap[l]->tkey < w->heap[m]->tkey) m = l;
    if (r < w->heap_n && w->heap[r]->tkey < w->heap[m]->tkey) m = r;
    if (m == i) return;
    heap_swap(w, i, m);
    i = m;
  }
}

static void heap_remove(srv_worker *w, srv_stream *st) {
  if (st->heap_idx < 0) return;
  size_t i = (size_t)st->heap_idx, last = w->heap_n - 1;
  st->heap_idx = -1;
  w->heap_n--;
  if (i == last) return;
  w->heap[i] = w->heap[last];
  w->heap[i]->heap_idx = (int)i;
  heap_up(w, i);
  heap_down(w, (size_t)w->heap[i]->heap_idx);
}

/* Puts the stream where timer_at says (or takes it out).  Returns -1 when
 * the heap cannot grow (the caller treats it like any allocation failure). */
static int heap_update(srv_worker *w, srv_stream *st) {
  int64_t t = timer_at(st);
  if (!t) {
    heap_remove(w, st);
    return 0;
  }
  if (st->heap_idx >= 0) {
    st->tkey = t;
    heap_up(w, (size_t)st->heap_idx);
    heap_down(w, (size_t)st->heap_idx);
    return 0;
  }
  if (w->heap_n == w->heap_cap) {
    size_t cap = w->heap_cap ? 2 * w->heap_cap : 64;
    srv_stream **h = tri_mem_alloc(&w->srv->stats, cap * sizeof(*h));
    if (!h) return -1;
    if (w->heap_n) memcpy(h, w->heap, w->heap_n * sizeof(*h));
    tri_mem_free(w->heap);
    w->heap = h;
    w->heap_cap = cap;
  }
  st->tkey = t;
  st->heap_idx = (int)w->heap_n;
  w->heap[w->heap_n++] = st;
  heap_up(w, (size_t)st->heap_idx);
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

static int out_push(srv_conn *c, const uint8_t *ptr, size_t off, size_t len,
                    tri_buf *own) {
  if (c->out_n == c->out_cap) {
    size_t cap = 2 * c->out_cap;
    srv_out *o = tri_mem_alloc(stats_of(c), cap * sizeof(*o));
    if (!o) return -1;
    memcpy(o, c->out, c->out_n * sizeof(*o));
    tri_mem_free(c->out);
    c->out = o;
    c->out_cap = cap;
  }
  srv_out *e = &c->out[c->out_n++];
  e->ptr = ptr;
  e->off = off;
  e->len = len;
  e->own = own;
  c->pending += len;
  return 0;
}

/* Appends a copy of p[0..n) (frame bytes from nghttp2). */
static int out_copy(srv_conn *c, const uint8_t *p, size_t n) {
  size_t at = c->staging->len;
  if (tri_buf_append(pool_of(c), &c->staging, p, n)) return -1;
  if (c->out_n > c->out_head) {
    srv_out *last = &c->out[c->out_n - 1];
    if (!last->ptr && !last->own && last->off + last->len == at) {
      last->len += n;
      c->pending += n;
      return 0;
    }
  }
  if (out_push(c, NULL, at, n, NULL)) {
    c->staging->len = at;
    return -1;
  }
  return 0;
}

/* Writes pending output, one writev per IOV_BATCH entries.  Returns 1 when
 * all of it went, 0 when the socket is full, -1 on error. */
static int write_out(srv_conn *c) {
  while (c->out_head < c->out_n) {
    struct iovec iov[IOV_BATCH];
    int k = 0;
    size_t want = 0, left = 0;
    for (size_t i = c->out_head; i < c->out_n && k < IOV_BATCH; i++) {
      srv_out *e = &c->out[i];
      if (!e->len) continue;
      iov[k].iov_base = (void *)(uintptr_t)(
          e->ptr ? e->ptr : tri_buf_begin(c->staging) + e->off);
      iov[k].iov_len = e->len;
      want += e->len;
      k++;
    }
    if (k) {
      ssize_t w;
      do {
        w = writev(c->fd, iov, k);
      } while (w < 0 && errno == EINTR);
      if (w < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
      TRI_STATS_ADD(stats_of(c), write_syscalls, 1);
      TRI_STATS_ADD(stats_of(c), bytes_written, w);
      left = (size_t)w;
    }
    /* Retire what was written; empty entries only release their buffer. */
    while (c->out_head < c->out_n) {
      srv_out *e = &c->out[c->out_head];
      if (e->len > left) {
        if (e->ptr) e->ptr += left;
        else e->off += left;
        e->len -= left;
        c->pending -= left;
        break;
      }
      left -= e->len;
      c->pending -= e->len;
      tri_pool_put(pool_of(c), e->own);
      c->out_head++;
    }
    if (k && c->out_head < c->out_n && c->pending &&
        c->out[c->out_head].len && left == 0 &&
        /* the kernel took less than offered: the socket is full */
        c->pending + 0 > 0 && want > 0 && (size_t)want != 0) {
      size_t taken = 0;
      (void)taken;
    }
  }
  c->out_head = c->out_n = 0;
  c->pending = 0;
  c->staging->len = 0;
  return 1;
}
