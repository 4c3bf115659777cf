/* test_server.c: the embedded echo server (tri_server) over loopback.
 *
 * Unlike the other suites this one uses the network: it starts the server
 * on 127.0.0.1 port 0 and talks to it with the tiny blocking nghttp2 client
 * below (one connection, a few streams, everything on this thread). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tri_error.h"
#include "tri_frame.h"
#include "tri_gzip.h"
#include "server/runtime.h"
#include "server/ts_codec.h"
#include "tri_server.h"
#include "tri_test.h"

#define WAIT_MS 5000

/* ---- the test client ---------------------------------------------------- */

typedef struct {
  int32_t id;
  int status;          /* :status */
  char hdrs[2048];     /* "name: value\n" lines of the response headers */
  size_t hdrs_len;
  char trl[2048];      /* ... and of the trailers */
  size_t trl_len;
  uint8_t *body;
  size_t body_len, body_cap;
  int closed;
  uint32_t rst; /* error code at close */
  uint8_t req[1 << 16]; /* request bytes still to send */
  size_t req_len, req_off;
  int req_end, deferred;
  const uint8_t *big; /* a large request body sent instead of req */
  size_t big_len;
} tc_stream;

typedef struct {
  int fd;
  nghttp2_session *s;
  int eof;
  int wu_stream;      /* WINDOW_UPDATE frames received for streams */
  int32_t wu_max;     /* their largest increment */
  int goaway;         /* GOAWAY frames received */
  int32_t goaway_last; /* the last one's last-stream-id */
} tc_client;

static int64_t ms_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void append(char *dst, size_t *len, size_t cap, const uint8_t *n,
                   size_t nl, const uint8_t *v, size_t vl) {
  if (*len + nl + vl + 3 >= cap) return;
  memcpy(dst + *len, n, nl);
  *len += nl;
  memcpy(dst + *len, ": ", 2);
  *len += 2;
  memcpy(dst + *len, v, vl);
  *len += vl;
  dst[(*len)++] = '\n';
  dst[*len] = 0;
}

static int tc_on_header(nghttp2_session *s, const nghttp2_frame *f,
                        const uint8_t *n, size_t nl, const uint8_t *v,
                        size_t vl, uint8_t flags, void *u) {
  tc_stream *st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
  if (!st || f->hd.type != NGHTTP2_HEADERS) return 0;
  if (f->headers.cat == NGHTTP2_HCAT_RESPONSE) {
    if (nl == 7 && memcmp(n, ":status", 7) == 0) st->status = atoi((const char *)v);
    append(st->hdrs, &st->hdrs_len, sizeof(st->hdrs), n, nl, v, vl);
  } else {
    append(st->trl, &st->trl_len, sizeof(st->trl), n, nl, v, vl);
  }
  return 0;
}

static int tc_on_data(nghttp2_session *s, uint8_t flags, int32_t id,
                      const uint8_t *d, size_t len, void *u) {
  tc_stream *st = nghttp2_session_get_stream_user_data(s, id);
  if (!st) return 0;
  if (st->body_len + len > st->body_cap) {
    size_t cap = st->body_cap ? st->body_cap : 1024;
    while (cap < st->body_len + len) cap *= 2;
    st->body = realloc(st->body, cap);
    st->body_cap = cap;
  }
  memcpy(st->body + st->body_len, d, len);
  st->body_len += len;
  return 0;
}

static int tc_on_frame(nghttp2_session *s, const nghttp2_frame *f, void *u) {
  tc_client *cl = u;
  if (f->hd.type == NGHTTP2_WINDOW_UPDATE && f->hd.stream_id) {
    cl->wu_stream++;
    if (f->window_update.window_size_increment > cl->wu_max)
      cl->wu_max = f->window_update.window_size_increment;
  }
  if (f->hd.type == NGHTTP2_GOAWAY) {
    cl->goaway++;
    cl->goaway_last = f->goaway.last_stream_id;
  }
  return 0;
}

static int tc_on_close(nghttp2_session *s, int32_t id, uint32_t code, void *u) {
  tc_stream *st = nghttp2_session_get_stream_user_data(s, id);
  if (st) {
    st->closed = 1;
    st->rst = code;
  }
  return 0;
}

static ssize_t tc_read(nghttp2_session *s, int32_t id, uint8_t *buf,
                       size_t length, uint32_t *flags, nghttp2_data_source *src,
                       void *u) {
  tc_stream *st = src->ptr;
  const uint8_t *p = st->big ? st->big : st->req;
  size_t total = st->big ? st->big_len : st->req_len;
  size_t n = total - st->req_off;
  if (n > length) n = length;
  memcpy(buf, p + st->req_off, n);
  st->req_off += n;
  if (st->req_off == total) {
    if (st->req_end) *flags |= NGHTTP2_DATA_FLAG_EOF;
    else if (n == 0) {
      st->deferred = 1;
      return NGHTTP2_ERR_DEFERRED;
    }
  }
  return (ssize_t)n;
}

static int tc_connect(tc_client *cl, int port) {
  memset(cl, 0, sizeof(*cl));
  cl->fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(cl->fd, (struct sockaddr *)&a, sizeof(a))) return -1;
  int one = 1;
  setsockopt(cl->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  nghttp2_session_callbacks *cb;
  nghttp2_session_callbacks_new(&cb);
  nghttp2_session_callbacks_set_on_header_callback(cb, tc_on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, tc_on_data);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, tc_on_close);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, tc_on_frame);
  nghttp2_session_client_new(&cl->s, cb, cl);
  nghttp2_session_callbacks_del(cb);
  nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 24}};
  nghttp2_submit_settings(cl->s, NGHTTP2_FLAG_NONE, iv, 1);
  nghttp2_session_set_local_window_size(cl->s, NGHTTP2_FLAG_NONE, 0, 1 << 30);
  return 0;
}

static void tc_close(tc_client *cl) {
  nghttp2_session_del(cl->s);
  close(cl->fd);
}

static void tc_free(tc_stream *st) {
  free(st->body);
  free(st);
}

/* Sends what the session has, then reads for up to `ms` (one poll). */
static void tc_step(tc_client *cl, int ms) {
  const uint8_t *p;
  ssize_t n;
  while ((n = nghttp2_session_mem_send(cl->s, &p)) > 0) {
    while (n > 0) {
      ssize_t w = send(cl->fd, p, (size_t)n, MSG_NOSIGNAL);
      if (w <= 0) return;
      p += w;
      n -= w;
    }
  }
  struct pollfd pf = {.fd = cl->fd, .events = POLLIN};
  if (poll(&pf, 1, ms) <= 0) return;
  uint8_t buf[65536];
  ssize_t r = read(cl->fd, buf, sizeof(buf));
  if (r <= 0) {
    cl->eof = 1;
    return;
  }
  nghttp2_session_mem_recv(cl->s, buf, (size_t)r);
}

/* Pumps until the stream is closed or has `body` bytes.  Returns 0 then. */
static int tc_wait(tc_client *cl, tc_stream *st, size_t body) {
  int64_t end = ms_now() + WAIT_MS;
  while (ms_now() < end && !cl->eof) {
    if (st->closed || (body && st->body_len >= body)) return 0;
    tc_step(cl, 20);
  }
  return st->closed || (body && st->body_len >= body) ? 0 : -1;
}

/* Starts a POST to `path`; hv holds extra name, value pairs (NULL-ended). */
static tc_stream *tc_start(tc_client *cl, const char *path, const char *ct,
                           const char *const *hv, const void *body,
                           size_t len, int end) {
  tc_stream *st = calloc(1, sizeof(*st));
  memcpy(st->req, body, len);
  st->req_len = len;
  st->req_end = end;
  nghttp2_nv nva[24];
  size_t n = 0;
#define NV(a, b)                                                        \
  nva[n++] = (nghttp2_nv){(uint8_t *)(a), (uint8_t *)(b), strlen(a),     \
                          strlen(b), NGHTTP2_NV_FLAG_NONE}
  NV(":method", "POST");
  NV(":scheme", "http");
  NV(":path", path);
  NV(":authority", "127.0.0.1");
  NV("content-type", ct);
  if (strncmp(ct, "application/grpc", 16) == 0) NV("te", "trailers");
  for (size_t i = 0; hv && hv[i]; i += 2) NV(hv[i], hv[i + 1]);
#undef NV
  nghttp2_data_provider prd = {.source.ptr = st, .read_callback = tc_read};
  st->id = nghttp2_submit_request(cl->s, NULL, nva, n, &prd, st);
  return st;
}

static void tc_more(tc_client *cl, tc_stream *st, const void *d, size_t n,
                    int end) {
  memcpy(st->req + st->req_len, d, n);
  st->req_len += n;
  st->req_end = end;
  if (st->deferred) {
    st->deferred = 0;
    nghttp2_session_resume_data(cl->s, st->id);
  }
}

static size_t grpc_frame(uint8_t *out, const void *msg, size_t n) {
  tri_frame_put_prefix(out, 0, (uint32_t)n);
  memcpy(out + TRI_FRAME_PREFIX, msg, n);
  return n + TRI_FRAME_PREFIX;
}

static int has(const char *text, const char *line) {
  return strstr(text, line) != NULL;
}

/* ---- gzip helpers (tri_gzip, as the server uses it) -------------------- */

static tri_stats gz_stats;
static tri_pool gz_bufs;
static tri_gzip_pool gz_zp;

static void gz_init(void) {
  tri_pool_init(&gz_bufs, &gz_stats);
  tri_gzip_pool_init(&gz_zp, &gz_stats);
}

static void gz_done(void) {
  tri_gzip_pool_free(&gz_zp);
  tri_pool_free(&gz_bufs);
}

/* gzip(p[0..n)) into out (malloc'd); returns its length. */
static size_t gz(const void *p, size_t n, uint8_t **out) {
  tri_buf *b = NULL;
  if (tri_gzip_compress(&gz_zp, &gz_bufs, p, n, 0, &b)) return 0;
  *out = malloc(b->len ? b->len : 1);
  memcpy(*out, tri_buf_begin(b), b->len);
  size_t len = b->len;
  tri_pool_put(&gz_bufs, b);
  return len;
}

/* Inflates p[0..n) and compares it with want[0..wn).  1 when equal. */
static int ungz_is(const uint8_t *p, size_t n, const void *want, size_t wn) {
  tri_buf *b = NULL;
  if (tri_gzip_decompress(&gz_zp, &gz_bufs, p, n, -1, &b)) return 0;
  int ok = b->len == wn && memcmp(tri_buf_begin(b), want, wn) == 0;
  tri_pool_put(&gz_bufs, b);
  return ok;
}

/* A gRPC message with the payload gzip'd (flag 0x01); returns its length. */
static size_t grpc_gz_frame(uint8_t *out, const void *msg, size_t n) {
  uint8_t *z;
  size_t zn = gz(msg, n, &z);
  tri_frame_put_prefix(out, TRI_FRAME_FLAG_COMPRESSED, (uint32_t)zn);
  memcpy(out + TRI_FRAME_PREFIX, z, zn);
  free(z);
  return zn + TRI_FRAME_PREFIX;
}

/* Checks that body[0..n) is exactly one gRPC message with flag `flag`
 * whose (inflated) payload is want[0..wn). */
static int one_message_is(const uint8_t *body, size_t n, int flag,
                          const void *want, size_t wn) {
  if (n < TRI_FRAME_PREFIX || body[0] != flag) return 0;
  uint32_t len = (uint32_t)body[1] << 24 | (uint32_t)body[2] << 16 |
                 (uint32_t)body[3] << 8 | body[4];
  if (len != n - TRI_FRAME_PREFIX) return 0;
  if (!flag) return len == wn && memcmp(body + TRI_FRAME_PREFIX, want, wn) == 0;
  return ungz_is(body + TRI_FRAME_PREFIX, len, want, wn);
}

#define UNARY "/benchmark.BenchmarkService/UnaryCall"
#define STREAM "/benchmark.BenchmarkService/StreamCall"
#define GRPC "application/grpc"

/* ---- tests -------------------------------------------------------------- */

static void unary_echo(int port) {
  tc_client cl;
  CHECK_EQ_INT(tc_connect(&cl, port), 0);
  uint8_t msg[100], req[200];
  for (int i = 0; i < 100; i++) msg[i] = (uint8_t)i;
  size_t n = grpc_frame(req, msg, sizeof(msg));
  tc_stream *st = tc_start(&cl, UNARY, GRPC, NULL, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 200);
  CHECK(has(st->hdrs, "content-type: application/grpc\n"));
  CHECK_MEM(st->body, st->body_len, req, n);
  CHECK(has(st->trl, "grpc-status: 0\n"));
  CHECK_EQ_INT(st->rst, 0);
  tc_free(st);

  /* 1 MiB: DATA by reference, many frames, windows. */
  size_t big = (1 << 20) + TRI_FRAME_PREFIX;
  uint8_t *b = malloc(big);
  tri_frame_put_prefix(b, 0, 1 << 20);
  for (size_t i = TRI_FRAME_PREFIX; i < big; i++) b[i] = (uint8_t)(i * 7);
  st = tc_start(&cl, UNARY, "application/grpc+proto", NULL, "", 0, 1);
  st->big = b;
  st->big_len = big;
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_MEM(st->body, st->body_len, b, big);
  CHECK(has(st->trl, "grpc-status: 0\n"));
  tc_free(st);
  free(b);

  /* Twenty at once on one connection. */
  tc_stream *many[20];
  for (int i = 0; i < 20; i++) {
    msg[0] = (uint8_t)i;
    n = grpc_frame(req, msg, 1 + (size_t)i);
    many[i] = tc_start(&cl, UNARY, GRPC, NULL, req, n, 1);
  }
  for (int i = 0; i < 20; i++) {
    CHECK_EQ_INT(tc_wait(&cl, many[i], 0), 0);
    CHECK_EQ_INT(many[i]->body_len, TRI_FRAME_PREFIX + 1 + i);
    CHECK(many[i]->body_len > 5 && many[i]->body[5] == (uint8_t)i);
    tc_free(many[i]);
  }
  tc_close(&cl);
}

static void stream_echo(int port) {
  tc_client cl;
  CHECK_EQ_INT(tc_connect(&cl, port), 0);
  uint8_t f[3][64], all[192];
  size_t fl[3], total = 0;
  for (int i = 0; i < 3; i++) {
    char m[32];
    int k = snprintf(m, sizeof(m), "message number %d", i);
    fl[i] = grpc_frame(f[i], m, (size_t)k);
    memcpy(all + total, f[i], fl[i]);
    total += fl[i];
  }
  const char *hv[] = {"x-echo-k", "v", NULL};
  tc_stream *st = tc_start(&cl, STREAM, GRPC, hv, f[0], fl[0], 0);
  /* Each echo arrives before the next message is sent. */
  CHECK_EQ_INT(tc_wait(&cl, st, fl[0]), 0);
  CHECK_EQ_INT(st->body_len, fl[0]);
  CHECK(has(st->hdrs, "x-echo-k: v\n"));
  tc_more(&cl, st, f[1], fl[1], 0);
  CHECK_EQ_INT(tc_wait(&cl, st, fl[0] + fl[1]), 0);
  CHECK_EQ_INT(st->body_len, fl[0] + fl[1]);
  CHECK(!st->closed);
  tc_more(&cl, st, f[2], fl[2], 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_MEM(st->body, st->body_len, all, total);
  CHECK(has(st->trl, "grpc-status: 0\n"));
  CHECK(has(st->trl, "x-echo-k: v\n"));
  tc_free(st);

  /* x-response-size on a stream: each answer is the generated message. */
  st = tc_start(&cl, STREAM, GRPC, (const char *[]){"x-response-size", "3", NULL},
                all, total, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  static const uint8_t gen[] = {0, 0, 0, 0, 5, 0x0a, 3, 'a', 'a', 'a'};
  CHECK_EQ_INT(st->body_len, 3 * sizeof(gen));
  CHECK(st->body_len >= sizeof(gen) && memcmp(st->body, gen, sizeof(gen)) == 0);
  tc_free(st);
  tc_close(&cl);
}

static void grpc_errors(int port) {
  tc_client cl;
  CHECK_EQ_INT(tc_connect(&cl, port), 0);
  uint8_t req[16];
  size_t n = grpc_frame(req, "hi", 2);

  tc_stream *st = tc_start(&cl, "/benchmark.BenchmarkService/Nope", GRPC, NULL,
                           req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 200);
  CHECK(has(st->hdrs, "grpc-status: 12\n")); /* trailers-only */
  CHECK_EQ_INT(st->body_len, 0);
  tc_free(st);

  const char *hv[] = {"x-status", "7", "x-message", "nope 100%",
                      "x-echo-foo", "bar", NULL};
  st = tc_start(&cl, UNARY, GRPC, hv, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "x-echo-foo: bar\n"));
  CHECK(has(st->trl, "grpc-status: 7\n"));
  CHECK(has(st->trl, "grpc-message: nope 100%25\n"));
  CHECK(has(st->trl, "x-echo-foo: bar\n"));
  CHECK_EQ_INT(st->body_len, 0);
  tc_free(st);

  /* x-message-bin wins, base64 of "caf\xc3\xa9". */
  const char *hb[] = {"x-status", "3", "x-message-bin", "Y2Fmw6k", "x-message",
                      "plain", NULL};
  st = tc_start(&cl, UNARY, GRPC, hb, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: 3\n"));
  CHECK(has(st->hdrs, "grpc-message: caf%C3%A9\n"));
  tc_free(st);

  /* x-status: 0 on UnaryCall: one empty message, OK. */
  st = tc_start(&cl, UNARY, GRPC, (const char *[]){"x-status", "0", NULL}, req,
                n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_MEM(st->body, st->body_len, "\0\0\0\0\0", 5);
  CHECK(has(st->trl, "grpc-status: 0\n"));
  tc_free(st);

  /* A bad control value. */
  st = tc_start(&cl, UNARY, GRPC, (const char *[]){"x-status", "99", NULL}, req,
                n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: 3\n"));
  tc_free(st);

  /* A truncated envelope, a compressed one without grpc-encoding, and
   * unknown envelope flags. */
  st = tc_start(&cl, UNARY, GRPC, NULL, "\0\0\0\0\x09" "abc", 8, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: 13\n"));
  tc_free(st);
  st = tc_start(&cl, UNARY, GRPC, NULL, "\x01\0\0\0\x03" "abc", 8, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: 13\n"));
  CHECK(has(st->hdrs, "without grpc-encoding"));
  tc_free(st);
  st = tc_start(&cl, UNARY, GRPC, NULL, "\x02\0\0\0\x03" "abc", 8, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: 13\n"));
  tc_free(st);

  /* Two messages on UnaryCall, and none. */
  uint8_t two[32];
  memcpy(two, req, n);
  memcpy(two + n, req, n);
  st = tc_start(&cl, UNARY, GRPC, NULL, two, 2 * n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: 13\n"));
  tc_free(st);
  st = tc_start(&cl, UNARY, GRPC, NULL, "", 0, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: 13\n"));
  tc_free(st);

  /* Not a gRPC or Triple content-type. */
  st = tc_start(&cl, UNARY, "text/plain", NULL, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 415);
  tc_free(st);
  tc_close(&cl);
}

static void behaviours(int port) {
  tc_client cl;
  CHECK_EQ_INT(tc_connect(&cl, port), 0);
  uint8_t req[16];
  size_t n = grpc_frame(req, "hi", 2);

  tc_stream *st = tc_start(&cl, UNARY, GRPC, (const char *[]){"x-reset", "1", NULL},
                           req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->rst, NGHTTP2_CANCEL);
  CHECK_EQ_INT(st->status, 0);
  tc_free(st);

  int64_t t0 = ms_now();
  st = tc_start(&cl, UNARY, GRPC, (const char *[]){"x-delay-ms", "150", NULL},
                req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(ms_now() - t0 >= 150);
  CHECK_MEM(st->body, st->body_len, req, n);
  tc_free(st);

  /* The deadline passes during the delay. */
  t0 = ms_now();
  const char *hd[] = {"x-delay-ms", "3000", "grpc-timeout", "50m", NULL};
  st = tc_start(&cl, UNARY, GRPC, hd, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: 4\n"));
  CHECK(ms_now() - t0 < 2000);
  tc_free(st);
  tc_close(&cl);
}

static void triple_wire(int port) {
  tc_client cl;
  CHECK_EQ_INT(tc_connect(&cl, port), 0);
  const char *hv[] = {"x-echo-a", "b", "triple-protocol-version", "0.1.0", NULL};
  tc_stream *st = tc_start(&cl, UNARY, "application/proto", hv, "\x0a\x03xyz", 5, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 200);
  CHECK(has(st->hdrs, "content-type: application/proto\n"));
  CHECK(has(st->hdrs, "x-echo-a: b\n"));
  CHECK(has(st->hdrs, "trailer-x-echo-a: b\n"));
  CHECK_MEM(st->body, st->body_len, "\x0a\x03xyz", 5);
  CHECK_EQ_INT(st->trl_len, 0);
  tc_free(st);

  const char *he[] = {"x-status", "5", "x-message", "gone \"away\"", NULL};
  st = tc_start(&cl, UNARY, "application/proto", he, "", 0, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 404);
  CHECK(has(st->hdrs, "content-type: application/json\n"));
  const char *want = "{\"code\":\"not_found\",\"message\":\"gone \\\"away\\\"\"}";
  CHECK_MEM(st->body, st->body_len, want, strlen(want));
  tc_free(st);

  st = tc_start(&cl, "/benchmark.BenchmarkService/Nope", "application/json",
                NULL, "{}", 2, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 404);
  CHECK(st->body && memmem(st->body, st->body_len, "\"unimplemented\"", 15));
  tc_free(st);

  /* JSON with x-response-size: protojson with padded base64. */
  st = tc_start(&cl, UNARY, "application/json",
                (const char *[]){"x-response-size", "4", NULL}, "{}", 2, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_STR(st->body, st->body_len, "{\"payload\":\"YWFhYQ==\"}");
  tc_free(st);

  const char *ht[] = {"x-delay-ms", "3000", "triple-timeout-ms", "30", NULL};
  st = tc_start(&cl, UNARY, "application/proto", ht, "", 0, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 408);
  tc_free(st);
  tc_close(&cl);
}

/* gzip both ways on both wires (the default response rule: the client
 * accepts gzip and compressed its request or sent x-compress-response: 1). */
static void gzip_wire(int port) {
  tc_client cl;
  CHECK_EQ_INT(tc_connect(&cl, port), 0);
  uint8_t msg[3000], req[4096];
  for (size_t i = 0; i < sizeof(msg); i++) msg[i] = (uint8_t)("abcab"[i % 5]);
  size_t n = grpc_gz_frame(req, msg, sizeof(msg));
  CHECK(n < 200);

  /* Compressed request, gzip accepted: a compressed echo. */
  const char *h_gz[] = {"grpc-encoding", "gzip", "grpc-accept-encoding",
                        "identity, gzip", NULL};
  tc_stream *st = tc_start(&cl, UNARY, GRPC, h_gz, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-encoding: gzip\n"));
  CHECK(has(st->hdrs, "grpc-accept-encoding: gzip\n"));
  CHECK(one_message_is(st->body, st->body_len, 1, msg, sizeof(msg)));
  CHECK(has(st->trl, "grpc-status: 0\n"));
  tc_free(st);

  /* Compressed request, gzip not accepted: a plain echo. */
  st = tc_start(&cl, UNARY, GRPC, (const char *[]){"grpc-encoding", "gzip", NULL},
                req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(!has(st->hdrs, "grpc-encoding:"));
  CHECK(one_message_is(st->body, st->body_len, 0, msg, sizeof(msg)));
  tc_free(st);

  /* Plain request with x-compress-response: 1: compressed only if accepted. */
  uint8_t plain[4096];
  size_t pn = grpc_frame(plain, msg, sizeof(msg));
  const char *h_x[] = {"x-compress-response", "1", "grpc-accept-encoding", "gzip",
                       NULL};
  st = tc_start(&cl, UNARY, GRPC, h_x, plain, pn, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-encoding: gzip\n"));
  CHECK(one_message_is(st->body, st->body_len, 1, msg, sizeof(msg)));
  tc_free(st);
  st = tc_start(&cl, UNARY, GRPC, (const char *[]){"x-compress-response", "1", NULL},
                plain, pn, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(one_message_is(st->body, st->body_len, 0, msg, sizeof(msg)));
  tc_free(st);
  /* Plain request, gzip accepted, nothing asked: plain. */
  st = tc_start(&cl, UNARY, GRPC, (const char *[]){"grpc-accept-encoding", "gzip", NULL},
                plain, pn, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(one_message_is(st->body, st->body_len, 0, msg, sizeof(msg)));
  tc_free(st);
  /* x-response-size with compression. */
  const char *h_rs[] = {"x-compress-response", "1", "grpc-accept-encoding", "gzip",
                        "x-response-size", "1000", NULL};
  st = tc_start(&cl, UNARY, GRPC, h_rs, plain, pn, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  uint8_t gen[1003] = {0x0a, 0xe8, 0x07};
  memset(gen + 3, 'a', 1000);
  CHECK(one_message_is(st->body, st->body_len, 1, gen, sizeof(gen)));
  CHECK(st->body_len < 100);
  tc_free(st);

  /* Corrupt gzip data: INTERNAL.  An unknown grpc-encoding: UNIMPLEMENTED. */
  st = tc_start(&cl, UNARY, GRPC, h_gz, "\x01\0\0\0\x04" "\x1f\x8b\x08\x00", 9, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: 13\n"));
  tc_free(st);
  uint8_t bad[256];
  memcpy(bad, req, n);
  bad[n - 3] ^= 0x55; /* the CRC32 trailer */
  st = tc_start(&cl, UNARY, GRPC, h_gz, bad, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: 13\n"));
  tc_free(st);
  st = tc_start(&cl, UNARY, GRPC, (const char *[]){"grpc-encoding", "br", NULL},
                plain, pn, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: 12\n"));
  tc_free(st);

  /* A stream: each message inflated, echoed compressed. */
  uint8_t f2[256];
  size_t n2 = grpc_gz_frame(f2, "second", 6);
  st = tc_start(&cl, STREAM, GRPC, h_gz, req, n, 0);
  CHECK_EQ_INT(tc_wait(&cl, st, 1), 0);
  tc_more(&cl, st, f2, n2, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-encoding: gzip\n"));
  CHECK(st->body_len > TRI_FRAME_PREFIX);
  size_t first = TRI_FRAME_PREFIX + ((size_t)st->body[3] << 8 | st->body[4]);
  CHECK(first < st->body_len);
  if (first < st->body_len) {
    CHECK(one_message_is(st->body, first, 1, msg, sizeof(msg)));
    CHECK(one_message_is(st->body + first, st->body_len - first, 1, "second", 6));
  }
  CHECK(has(st->trl, "grpc-status: 0\n"));
  tc_free(st);

  /* Triple: content-encoding gzip in, the whole body gzip'd out. */
  uint8_t *z;
  size_t zn = gz(msg, sizeof(msg), &z);
  const char *t_gz[] = {"content-encoding", "gzip", "accept-encoding", "gzip", NULL};
  st = tc_start(&cl, UNARY, "application/proto", t_gz, z, zn, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 200);
  CHECK(has(st->hdrs, "content-encoding: gzip\n"));
  CHECK(has(st->hdrs, "accept-encoding: gzip\n"));
  CHECK(ungz_is(st->body, st->body_len, msg, sizeof(msg)));
  char cl_line[64];
  snprintf(cl_line, sizeof(cl_line), "content-length: %zu\n", st->body_len);
  CHECK(has(st->hdrs, cl_line));
  tc_free(st);
  /* ... not accepted: plain. */
  st = tc_start(&cl, UNARY, "application/proto",
                (const char *[]){"content-encoding", "gzip", NULL}, z, zn, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(!has(st->hdrs, "content-encoding:"));
  CHECK_MEM(st->body, st->body_len, msg, sizeof(msg));
  tc_free(st);
  /* x-compress-response on a plain Triple request. */
  const char *t_x[] = {"x-compress-response", "1", "accept-encoding", "br, gzip", NULL};
  st = tc_start(&cl, UNARY, "application/proto", t_x, msg, sizeof(msg), 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "content-encoding: gzip\n"));
  CHECK(ungz_is(st->body, st->body_len, msg, sizeof(msg)));
  tc_free(st);
  /* Corrupt body: internal (500); unknown encoding: unimplemented (404);
   * an error body is never compressed. */
  const char *t_st[] = {"content-encoding", "gzip", "accept-encoding", "gzip",
                        "x-status", "9", NULL};
  st = tc_start(&cl, UNARY, "application/proto", t_gz, "\x1f\x8b\x08", 3, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 500);
  CHECK(st->body && memmem(st->body, st->body_len, "\"internal\"", 10));
  tc_free(st);
  st = tc_start(&cl, UNARY, "application/proto",
                (const char *[]){"content-encoding", "br", NULL}, msg, 10, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 404);
  tc_free(st);
  st = tc_start(&cl, UNARY, "application/proto", t_st, z, zn, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 412);
  CHECK(!has(st->hdrs, "content-encoding:"));
  CHECK(st->body && memmem(st->body, st->body_len, "failed_precondition", 19));
  tc_free(st);
  free(z);
  tc_close(&cl);
}

/* Inflating stops at max_message: RESOURCE_EXHAUSTED on both wires. */
static void gzip_bomb(void) {
  tri_server_opts o;
  tri_server_opts_init(&o);
  o.max_message = 4096;
  tri_server *srv;
  CHECK_EQ_INT(tri_server_new(&srv, &o), 0);
  CHECK_EQ_INT(tri_server_start(srv), 0);
  tc_client cl;
  CHECK_EQ_INT(tc_connect(&cl, tri_server_port(srv)), 0);
  uint8_t *zeros = calloc(1, 1 << 20), req[8192];
  size_t n = grpc_gz_frame(req, zeros, 1 << 20); /* 1 MiB -> about 1 KiB */
  CHECK(n < 4096);
  const char *h_gz[] = {"grpc-encoding", "gzip", NULL};
  tc_stream *st = tc_start(&cl, UNARY, GRPC, h_gz, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: 8\n"));
  tc_free(st);
  /* At the limit exactly: fine. */
  n = grpc_gz_frame(req, zeros, 4096);
  st = tc_start(&cl, UNARY, GRPC, h_gz, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(one_message_is(st->body, st->body_len, 0, zeros, 4096));
  tc_free(st);
  st = tc_start(&cl, UNARY, "application/proto",
                (const char *[]){"content-encoding", "gzip", NULL},
                req + TRI_FRAME_PREFIX, n - TRI_FRAME_PREFIX, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 200);
  tc_free(st);
  n = grpc_gz_frame(req, zeros, 4097);
  st = tc_start(&cl, UNARY, "application/proto",
                (const char *[]){"content-encoding", "gzip", NULL},
                req + TRI_FRAME_PREFIX, n - TRI_FRAME_PREFIX, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 429);
  tc_free(st);
  free(zeros);
  tc_close(&cl);
  tri_server_del(srv);
}

/* ---- grpc.testing.TestService ------------------------------------------ */

/* The hand-written protobuf coding (no network). */
static void ts_codec(void) {
  /* SimpleRequest{response_size: 314159, payload{body: "abc"},
   * response_compressed{true}, response_status{2, "hi"},
   * expect_compressed{} (false), fill_username, unknown 99 varint, unknown
   * 15 fixed64, unknown 14 fixed32}. */
  static const uint8_t simple[] = {
      0x10, 0xaf, 0x96, 0x13,                   /* 2: 314159 */
      0x1a, 0x05, 0x12, 0x03, 'a', 'b', 'c',    /* 3: payload */
      0x32, 0x02, 0x08, 0x01,                   /* 6: BoolValue{true} */
      0x3a, 0x06, 0x08, 0x02, 0x12, 0x02, 'h', 'i', /* 7: EchoStatus */
      0x42, 0x00,                               /* 8: BoolValue{} */
      0x20, 0x01,                               /* 4: true */
      0x98, 0x06, 0x05,                         /* 99: 5 */
      0x79, 1, 2, 3, 4, 5, 6, 7, 8,             /* 15: fixed64 */
      0x75, 1, 2, 3, 4};                        /* 14: fixed32 */
  tri_ts_request r;
  CHECK_EQ_INT(tri_ts_decode_simple(simple, sizeof(simple), &r), 0);
  CHECK_EQ_INT(r.response_size, 314159);
  CHECK_EQ_INT(r.response_type, 0);
  CHECK_EQ_INT(r.payload_len, 3);
  CHECK_EQ_INT(r.response_compressed, 1);
  CHECK_EQ_INT(r.expect_compressed, 0);
  CHECK_EQ_INT(r.has_status, 1);
  CHECK_EQ_INT(r.status_code, 2);
  CHECK_STR(r.status_msg, r.status_msg_len, "hi");
  CHECK_EQ_INT(r.fill_username, 1);
  CHECK_EQ_INT(tri_ts_decode_simple(NULL, 0, &r), 0); /* empty: defaults */
  /* An empty JSON body is no object; NULL with no bytes is no pointer
   * arithmetic either (the server fuzzer's UBSan find). */
  CHECK_EQ_INT(tri_ts_decode_simple_json(NULL, 0, &r), -1);
  CHECK_EQ_INT(r.response_compressed, -1);
  CHECK_EQ_INT(r.expect_compressed, -1);
  CHECK_EQ_INT(r.has_status, 0);
  /* A negative int32 is a 10-byte varint. */
  static const uint8_t neg[] = {0x10, 0xff, 0xff, 0xff, 0xff, 0xff,
                                0xff, 0xff, 0xff, 0xff, 0x01};
  CHECK_EQ_INT(tri_ts_decode_simple(neg, sizeof(neg), &r), 0);
  CHECK_EQ_INT(r.response_size, -1);
  /* Malformed: truncated varint, length past the end, wrong wire type for
   * a known field, a group, field number 0, an 11-byte varint, a bad
   * nested message. */
  static const uint8_t bad1[] = {0x10, 0x80};
  static const uint8_t bad2[] = {0x1a, 0x05, 0x12};
  static const uint8_t bad3[] = {0x12, 0x01, 0x00};
  static const uint8_t bad4[] = {0x0b, 0x0c};
  static const uint8_t bad5[] = {0x00, 0x01};
  static const uint8_t bad6[] = {0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                 0xff, 0xff, 0xff, 0xff, 0x01};
  static const uint8_t bad7[] = {0x3a, 0x02, 0x08, 0x80};
  CHECK_EQ_INT(tri_ts_decode_simple(bad1, sizeof(bad1), &r), -1);
  CHECK_EQ_INT(tri_ts_decode_simple(bad2, sizeof(bad2), &r), -1);
  CHECK_EQ_INT(tri_ts_decode_simple(bad3, sizeof(bad3), &r), -1);
  CHECK_EQ_INT(tri_ts_decode_simple(bad4, sizeof(bad4), &r), -1);
  CHECK_EQ_INT(tri_ts_decode_simple(bad5, sizeof(bad5), &r), -1);
  CHECK_EQ_INT(tri_ts_decode_simple(bad6, sizeof(bad6), &r), -1);
  CHECK_EQ_INT(tri_ts_decode_simple(bad7, sizeof(bad7), &r), -1);

  /* StreamingOutputCallRequest: three ResponseParameters around a payload,
   * then response_status{code: 0}. */
  static const uint8_t out[] = {
      0x12, 0x02, 0x08, 0x09,                         /* {size 9} */
      0x1a, 0x02, 0x12, 0x00,                         /* payload{} */
      0x12, 0x08, 0x08, 0xe4, 0x00, 0x10, 0xe8, 0x07, /* {100, 1000 us, */
      0x1a, 0x00,                                     /*  compressed{}} */
      0x12, 0x04, 0x1a, 0x02, 0x08, 0x01,             /* {compressed true} */
      0x3a, 0x00};                                    /* status{} */
  CHECK_EQ_INT(tri_ts_decode_output(out, sizeof(out), &r), 0);
  CHECK_EQ_INT(r.nparams, 3);
  CHECK_EQ_INT(r.has_status, 1);
  CHECK_EQ_INT(r.status_code, 0);
  size_t off = 0;
  tri_ts_params prm;
  CHECK_EQ_INT(tri_ts_next_params(out, sizeof(out), &off, &prm), 1);
  CHECK_EQ_INT(prm.size, 9);
  CHECK_EQ_INT(prm.interval_us, 0);
  CHECK_EQ_INT(prm.compressed, -1);
  CHECK_EQ_INT(tri_ts_next_params(out, sizeof(out), &off, &prm), 1);
  CHECK_EQ_INT(prm.size, 100);
  CHECK_EQ_INT(prm.interval_us, 1000);
  CHECK_EQ_INT(prm.compressed, 0);
  CHECK_EQ_INT(tri_ts_next_params(out, sizeof(out), &off, &prm), 1);
  CHECK_EQ_INT(prm.size, 0);
  CHECK_EQ_INT(prm.compressed, 1);
  CHECK_EQ_INT(tri_ts_next_params(out, sizeof(out), &off, &prm), 0);
  static const uint8_t out_bad[] = {0x12, 0x02, 0x08};
  CHECK_EQ_INT(tri_ts_decode_output(out_bad, sizeof(out_bad), &r), -1);
  off = 0;
  CHECK_EQ_INT(tri_ts_next_params(out_bad, sizeof(out_bad), &off, &prm), -1);

  /* StreamingInputCallRequest{payload{body: 4 bytes}, expect_compressed{1}}. */
  static const uint8_t in[] = {0x0a, 0x06, 0x12, 0x04, 0, 0, 0, 0,
                               0x12, 0x02, 0x08, 0x01};
  CHECK_EQ_INT(tri_ts_decode_input(in, sizeof(in), &r), 0);
  CHECK_EQ_INT(r.payload_len, 4);
  CHECK_EQ_INT(r.expect_compressed, 1);
  CHECK_EQ_INT(tri_ts_decode_input(in, 5, &r), -1);

  /* Encoders. */
  uint8_t buf[64];
  CHECK_EQ_INT(tri_ts_payload_msg_len(3, 0), 7);
  CHECK_EQ_INT(tri_ts_payload_msg_put(buf, 3, 0), 7);
  CHECK_MEM(buf, 7, "\x0a\x05\x12\x03\0\0\0", 7);
  CHECK_EQ_INT(tri_ts_payload_msg_put(buf, 0, 0), 2);
  CHECK_MEM(buf, 2, "\x0a\x00", 2);
  CHECK_EQ_INT(tri_ts_payload_msg_len(0, 1), 4);
  CHECK_EQ_INT(tri_ts_payload_msg_put(buf, 0, 1), 4);
  CHECK_MEM(buf, 4, "\x0a\x02\x08\x01", 4);
  CHECK_EQ_INT(tri_ts_payload_msg_len(314159, 0), 1 + 3 + 1 + 3 + 314159);
  CHECK_EQ_INT(tri_ts_aggregated_put(buf, 74922), 4);
  CHECK_MEM(buf, 4, "\x08\xaa\xc9\x04", 4);
  CHECK_EQ_INT(tri_ts_aggregated_put(buf, 0), 0);
  /* What the encoder writes, the decoder of the response shape reads back
   * (StreamingInputCallRequest has the same payload field 1). */
  uint8_t *big = malloc(tri_ts_payload_msg_len(1000, 0));
  size_t bn = tri_ts_payload_msg_put(big, 1000, 0);
  CHECK_EQ_INT(tri_ts_decode_input(big, bn, &r), 0);
  CHECK_EQ_INT(r.payload_len, 1000);
  free(big);
}

#define TS "/grpc.testing.TestService/"

/* Payload sizes of the gRPC messages in body[0..n) (responses with the
 * payload shape), into sizes[]; returns the count (-1 if malformed). */
static int payload_sizes(const uint8_t *body, size_t n, int64_t *sizes,
                         int cap, int *compressed) {
  int k = 0;
  size_t at = 0;
  while (at < n) {
    if (n - at < TRI_FRAME_PREFIX || k >= cap) return -1;
    uint32_t len = (uint32_t)body[at + 1] << 24 | (uint32_t)body[at + 2] << 16 |
                   (uint32_t)body[at + 3] << 8 | body[at + 4];
    if (len > n - at - TRI_FRAME_PREFIX) return -1;
    const uint8_t *m = body + at + TRI_FRAME_PREFIX;
    size_t ml = len;
    tri_buf *plain = NULL;
    if (compressed) compressed[k] = body[at];
    if (body[at] == 1) {
      if (tri_gzip_decompress(&gz_zp, &gz_bufs, m, ml, -1, &plain)) return -1;
      m = tri_buf_begin(plain);
      ml = plain->len;
    }
    tri_ts_request r;
    int rv = tri_ts_decode_input(m, ml, &r);
    tri_pool_put(&gz_bufs, plain);
    if (rv) return -1;
    sizes[k++] = (int64_t)r.payload_len;
    at += TRI_FRAME_PREFIX + len;
  }
  return k;
}

/* A StreamingOutputCallRequest asking for `n` responses of sizes[i] bytes,
 * each after interval_us, as a gRPC message; returns its length. */
static size_t output_request(uint8_t *out, const int *sizes, int n,
                             int interval_us, int compressed) {
  uint8_t m[256];
  size_t k = 0;
  for (int i = 0; i < n; i++) {
    uint8_t prm[32];
    size_t pk = 0;
    prm[pk++] = 0x08;
    for (uint32_t v = (uint32_t)sizes[i]; ; v >>= 7) {
      prm[pk++] = (uint8_t)(v >= 0x80 ? (v & 0x7f) | 0x80 : v);
      if (v < 0x80) break;
    }
    if (interval_us) {
      prm[pk++] = 0x10;
      for (uint32_t v = (uint32_t)interval_us; ; v >>= 7) {
        prm[pk++] = (uint8_t)(v >= 0x80 ? (v & 0x7f) | 0x80 : v);
        if (v < 0x80) break;
      }
    }
    if (compressed >= 0) {
      prm[pk++] = 0x1a;
      prm[pk++] = compressed ? 2 : 0;
      if (compressed) prm[pk++] = 0x08, prm[pk++] = 0x01;
    }
    m[k++] = 0x12;
    m[k++] = (uint8_t)pk;
    memcpy(m + k, prm, pk);
    k += pk;
  }
  return grpc_frame(out, m, k);
}

static void test_service(int port) {
  tc_client cl;
  CHECK_EQ_INT(tc_connect(&cl, port), 0);
  int64_t sizes[16];
  int comp[16];
  uint8_t req[512];

  /* EmptyCall: one empty message. */
  tc_stream *st = tc_start(&cl, TS "EmptyCall", GRPC, NULL, "\0\0\0\0\0", 5, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_MEM(st->body, st->body_len, "\0\0\0\0\0", 5);
  CHECK(has(st->trl, "grpc-status: 0\n"));
  tc_free(st);

  /* UnaryCall: response_size 1000, echo metadata to its places. */
  static const uint8_t simple[] = {0x10, 0xe8, 0x07};
  size_t n = grpc_frame(req, simple, sizeof(simple));
  const char *hm[] = {"x-grpc-test-echo-initial", "ini", "x-grpc-test-echo-trailing-bin",
                      "AAEC", NULL};
  st = tc_start(&cl, TS "UnaryCall", GRPC, hm, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(payload_sizes(st->body, st->body_len, sizes, 16, NULL), 1);
  CHECK_EQ_INT(sizes[0], 1000);
  CHECK(has(st->hdrs, "x-grpc-test-echo-initial: ini\n"));
  CHECK(!has(st->hdrs, "x-grpc-test-echo-trailing-bin"));
  CHECK(has(st->trl, "x-grpc-test-echo-trailing-bin: AAEC\n"));
  CHECK(!has(st->trl, "x-grpc-test-echo-initial"));
  CHECK(has(st->trl, "grpc-status: 0\n"));
  tc_free(st);

  /* response_status and response_compressed; lower-case method. */
  static const uint8_t failing[] = {0x3a, 0x07, 0x08, 0x05, 0x12, 0x03, 'n', '%', 'o'};
  n = grpc_frame(req, failing, sizeof(failing));
  st = tc_start(&cl, TS "unaryCall", GRPC, NULL, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: 5\n"));
  CHECK(has(st->hdrs, "grpc-message: n%25o\n"));
  tc_free(st);
  static const uint8_t gzr[] = {0x10, 0xe8, 0x07, 0x32, 0x02, 0x08, 0x01};
  n = grpc_frame(req, gzr, sizeof(gzr));
  st = tc_start(&cl, TS "UnaryCall", GRPC,
                (const char *[]){"grpc-accept-encoding", "gzip", NULL}, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-encoding: gzip\n"));
  CHECK_EQ_INT(payload_sizes(st->body, st->body_len, sizes, 16, comp), 1);
  CHECK_EQ_INT(sizes[0], 1000);
  CHECK_EQ_INT(comp[0], 1);
  CHECK(st->body_len < 100);
  tc_free(st);
  /* ... without grpc-accept-encoding: not compressed. */
  st = tc_start(&cl, TS "UnaryCall", GRPC, NULL, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(payload_sizes(st->body, st->body_len, sizes, 16, comp), 1);
  CHECK_EQ_INT(comp[0], 0);
  tc_free(st);

  /* expect_compressed: a plain request fails, a compressed one passes. */
  static const uint8_t expect[] = {0x10, 0x05, 0x42, 0x02, 0x08, 0x01};
  n = grpc_frame(req, expect, sizeof(expect));
  st = tc_start(&cl, TS "UnaryCall", GRPC, NULL, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: 3\n"));
  tc_free(st);
  n = grpc_gz_frame(req, expect, sizeof(expect));
  st = tc_start(&cl, TS "UnaryCall", GRPC, (const char *[]){"grpc-encoding", "gzip", NULL},
                req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(payload_sizes(st->body, st->body_len, sizes, 16, NULL), 1);
  CHECK_EQ_INT(sizes[0], 5);
  tc_free(st);

  /* Not a SimpleRequest: INTERNAL. */
  n = grpc_frame(req, "\x12\x01", 2);
  st = tc_start(&cl, TS "UnaryCall", GRPC, NULL, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: 13\n"));
  tc_free(st);

  /* StreamingOutputCall: three answers 40 ms apart (a timer). */
  int so[] = {10, 0, 70000};
  n = output_request(req, so, 3, 40000, -1);
  int64_t t0 = ms_now();
  st = tc_start(&cl, TS "StreamingOutputCall", GRPC, NULL, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(ms_now() - t0 >= 120);
  CHECK_EQ_INT(payload_sizes(st->body, st->body_len, sizes, 16, NULL), 3);
  CHECK(sizes[0] == 10 && sizes[1] == 0 && sizes[2] == 70000);
  CHECK(has(st->trl, "grpc-status: 0\n"));
  tc_free(st);
  /* ... with compressed true then false (gzip accepted). */
  n = output_request(req, so, 1, 0, 1);
  size_t n2 = output_request(req + n, so + 2, 1, 0, 0);
  st = tc_start(&cl, TS "FullDuplexCall", GRPC,
                (const char *[]){"grpc-accept-encoding", "gzip", NULL}, req, n + n2, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(payload_sizes(st->body, st->body_len, sizes, 16, comp), 2);
  CHECK(comp[0] == 1 && comp[1] == 0);
  CHECK(sizes[0] == 10 && sizes[1] == 70000);
  tc_free(st);

  /* FullDuplexCall: each request answered before the next is sent. */
  n = output_request(req, so, 1, 0, -1);
  st = tc_start(&cl, TS "FullDuplexCall", GRPC, NULL, req, n, 0);
  CHECK_EQ_INT(tc_wait(&cl, st, 5 + 4 + 10), 0);
  n = output_request(req, so + 2, 1, 0, -1);
  tc_more(&cl, st, req, n, 0);
  CHECK_EQ_INT(tc_wait(&cl, st, 19 + 70013), 0);
  CHECK(!st->closed);
  /* then a status request: the call ends with it. */
  static const uint8_t stq[] = {0x3a, 0x04, 0x08, 0x09, 0x12, 0x00};
  n = grpc_frame(req, stq, sizeof(stq));
  tc_more(&cl, st, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(payload_sizes(st->body, st->body_len, sizes, 16, NULL), 2);
  CHECK(has(st->trl, "grpc-status: 9\n"));
  tc_free(st);

  /* HalfDuplexCall: nothing before the half-close. */
  n = output_request(req, so, 2, 0, -1);
  st = tc_start(&cl, TS "HalfDuplexCall", GRPC, NULL, req, n, 0);
  t0 = ms_now();
  while (ms_now() - t0 < 150) tc_step(&cl, 20);
  CHECK_EQ_INT(st->body_len, 0);
  tc_more(&cl, st, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(payload_sizes(st->body, st->body_len, sizes, 16, NULL), 4);
  CHECK(sizes[0] == 10 && sizes[1] == 0 && sizes[2] == 10 && sizes[3] == 0);
  CHECK(has(st->trl, "grpc-status: 0\n"));
  tc_free(st);

  /* StreamingInputCall: the sum; an empty stream gives 0 (empty message). */
  uint8_t in[64];
  static const uint8_t in1[] = {0x0a, 0x05, 0x12, 0x03, 1, 2, 3};
  static const uint8_t in2[] = {0x0a, 0x04, 0x12, 0x02, 1, 2};
  n = grpc_frame(in, in1, sizeof(in1));
  n += grpc_frame(in + n, in2, sizeof(in2));
  st = tc_start(&cl, TS "StreamingInputCall", GRPC, NULL, in, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_MEM(st->body, st->body_len, "\0\0\0\0\x02\x08\x05", 7);
  tc_free(st);
  st = tc_start(&cl, TS "StreamingInputCall", GRPC, NULL, "", 0, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_MEM(st->body, st->body_len, "\0\0\0\0\0", 5);
  tc_free(st);

  /* UnimplementedCall, UnimplementedService. */
  st = tc_start(&cl, TS "UnimplementedCall", GRPC, NULL, "\0\0\0\0\0", 5, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: 12\n"));
  tc_free(st);
  st = tc_start(&cl, "/grpc.testing.UnimplementedService/UnimplementedCall", GRPC,
                NULL, "\0\0\0\0\0", 5, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: 12\n"));
  tc_free(st);

  /* Triple: proto and JSON UnaryCall, a JSON status, streams refused. */
  st = tc_start(&cl, TS "UnaryCall", "application/proto", NULL, simple,
                sizeof(simple), 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 200);
  tri_ts_request r;
  CHECK_EQ_INT(tri_ts_decode_input(st->body, st->body_len, &r), 0);
  CHECK_EQ_INT(r.payload_len, 1000);
  tc_free(st);
  const char *js = "{\"responseSize\": 4, \"payload\": {\"body\": \"AAAA\"},"
                   " \"unknown\": [1, {\"a\": null}], \"fill_username\": true}";
  st = tc_start(&cl, TS "UnaryCall", "application/json", NULL, js, strlen(js), 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 200);
  CHECK_STR(st->body, st->body_len, "{\"payload\":{\"body\":\"AAAAAA==\"}}");
  tc_free(st);
  js = "{\"response_status\":{\"code\":6,\"message\":\"a\\u00e9\\ud83d\\ude00\\t\"}}";
  st = tc_start(&cl, TS "UnaryCall", "application/json", NULL, js, strlen(js), 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 409);
  CHECK_STR(st->body, st->body_len,
            "{\"code\":\"already_exists\",\"message\":\"a\xc3\xa9\xf0\x9f\x98\x80\\u0009\"}");
  tc_free(st);
  st = tc_start(&cl, TS "UnaryCall", "application/json", NULL, "{\"x\":", 5, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 400);
  tc_free(st);
  st = tc_start(&cl, TS "EmptyCall", "application/json", NULL, "{}", 2, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_STR(st->body, st->body_len, "{}");
  tc_free(st);
  st = tc_start(&cl, TS "FullDuplexCall", "application/proto", NULL, "", 0, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 404);
  tc_free(st);
  tc_close(&cl);
}

/* ---- x-misbehave -------------------------------------------------------- */

static void misbehave_modes(int port) {
  tc_client cl;
  CHECK_EQ_INT(tc_connect(&cl, port), 0);
  uint8_t msg[100], req[200];
  for (int i = 0; i < 100; i++) msg[i] = (uint8_t)i;
  size_t n = grpc_frame(req, msg, sizeof(msg));

  /* rst-mid-response: headers, half the message, RST_STREAM(INTERNAL). */
  const char *h_rst[] = {"x-misbehave", "rst-mid-response", NULL};
  tc_stream *st = tc_start(&cl, UNARY, GRPC, h_rst, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 200);
  CHECK_MEM(st->body, st->body_len, req, (n + 1) / 2);
  CHECK_EQ_INT(st->rst, NGHTTP2_INTERNAL_ERROR);
  CHECK_EQ_INT(st->trl_len, 0);
  tc_free(st);
  /* ... a big message (sent by reference), on a stream, on an error, and
   * on the Triple wire. */
  uint8_t *big = calloc(1, 100005);
  tri_frame_put_prefix(big, 0, 100000);
  st = tc_start(&cl, UNARY, GRPC, h_rst, "", 0, 1);
  st->big = big;
  st->big_len = 100005;
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->body_len, 50003);
  CHECK_EQ_INT(st->rst, NGHTTP2_INTERNAL_ERROR);
  tc_free(st);
  free(big);
  st = tc_start(&cl, STREAM, GRPC, h_rst, req, n, 0);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->body_len, (n + 1) / 2);
  CHECK_EQ_INT(st->rst, NGHTTP2_INTERNAL_ERROR);
  tc_free(st);
  const char *h_rst_err[] = {"x-misbehave", "rst-mid-response", "x-status", "5", NULL};
  st = tc_start(&cl, UNARY, GRPC, h_rst_err, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 200);
  CHECK(!has(st->hdrs, "grpc-status"));
  CHECK_EQ_INT(st->rst, NGHTTP2_INTERNAL_ERROR);
  tc_free(st);
  st = tc_start(&cl, UNARY, "application/proto", h_rst, msg, 100, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 200);
  CHECK_MEM(st->body, st->body_len, msg, 50);
  CHECK_EQ_INT(st->rst, NGHTTP2_INTERNAL_ERROR);
  tc_free(st);

  /* bad-grpc-status: grpc-status: abc (in the trailers, or trailers-only). */
  const char *h_bs[] = {"x-misbehave", "bad-grpc-status", NULL};
  st = tc_start(&cl, UNARY, GRPC, h_bs, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_MEM(st->body, st->body_len, req, n);
  CHECK(has(st->trl, "grpc-status: abc\n"));
  tc_free(st);
  const char *h_bs2[] = {"x-misbehave", "bad-grpc-status", "x-status", "3", NULL};
  st = tc_start(&cl, UNARY, GRPC, h_bs2, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: abc\n"));
  tc_free(st);
  st = tc_start(&cl, UNARY, "application/proto", h_bs, msg, 10, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 400);
  tc_free(st);

  /* wrong-content-type: 200 text/html with a body, no trailers. */
  const char *h_ct[] = {"x-misbehave", "wrong-content-type", NULL};
  st = tc_start(&cl, TS "UnaryCall", GRPC, h_ct, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(st->status, 200);
  CHECK(has(st->hdrs, "content-type: text/html"));
  CHECK(st->body_len > 10 && memcmp(st->body, "<html>", 6) == 0);
  CHECK_EQ_INT(st->trl_len, 0);
  CHECK_EQ_INT(st->rst, 0);
  tc_free(st);

  /* An unknown mode. */
  st = tc_start(&cl, UNARY, GRPC, (const char *[]){"x-misbehave", "explode", NULL},
                req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: 3\n"));
  tc_free(st);

  /* never-answer: nothing comes (not even at grpc-timeout); the other
   * streams go on; the client's RST ends it. */
  const char *h_nv[] = {"x-misbehave", "never-answer", "grpc-timeout", "50m", NULL};
  tc_stream *nv = tc_start(&cl, UNARY, GRPC, h_nv, req, n, 1);
  st = tc_start(&cl, UNARY, GRPC, NULL, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_MEM(st->body, st->body_len, req, n);
  tc_free(st);
  int64_t t0 = ms_now();
  while (ms_now() - t0 < 200) tc_step(&cl, 20);
  CHECK_EQ_INT(nv->status, 0);
  CHECK(!nv->closed);
  nghttp2_submit_rst_stream(cl.s, NGHTTP2_FLAG_NONE, nv->id, NGHTTP2_CANCEL);
  CHECK_EQ_INT(tc_wait(&cl, nv, 0), 0);
  tc_free(nv);
  tc_close(&cl);
}

/* goaway: the streams below go on, this one is refused, the connection
 * closes once they are done (or after GOAWAY_LINGER_MAX_MS). */
static void misbehave_goaway(int port) {
  tc_client cl;
  CHECK_EQ_INT(tc_connect(&cl, port), 0);
  uint8_t req[16];
  size_t n = grpc_frame(req, "hi", 2);
  tc_stream *slow = tc_start(&cl, UNARY, GRPC,
                             (const char *[]){"x-delay-ms", "300", NULL}, req, n, 1);
  tc_step(&cl, 20);
  tc_stream *st = tc_start(&cl, UNARY, GRPC,
                           (const char *[]){"x-misbehave", "goaway", NULL}, req, n, 1);
  int64_t t0 = ms_now();
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_EQ_INT(cl.goaway, 1);
  CHECK_EQ_INT(cl.goaway_last, slow->id);
  CHECK_EQ_INT(st->rst, NGHTTP2_REFUSED_STREAM); /* how nghttp2 closes it */
  CHECK_EQ_INT(st->status, 0);
  CHECK_EQ_INT(tc_wait(&cl, slow, 0), 0);
  CHECK_MEM(slow->body, slow->body_len, req, n);
  CHECK(has(slow->trl, "grpc-status: 0\n"));
  int64_t end = ms_now() + WAIT_MS;
  while (!cl.eof && ms_now() < end) tc_step(&cl, 20);
  CHECK(cl.eof);
  CHECK(ms_now() - t0 < 1000);
  tc_free(st);
  tc_free(slow);
  tc_close(&cl);

  /* A stream that outlives the linger is cut. */
  CHECK_EQ_INT(tc_connect(&cl, port), 0);
  slow = tc_start(&cl, UNARY, GRPC, (const char *[]){"x-delay-ms", "5000", NULL},
                  req, n, 1);
  tc_step(&cl, 20);
  st = tc_start(&cl, UNARY, GRPC, (const char *[]){"x-misbehave", "goaway", NULL},
                req, n, 1);
  t0 = ms_now();
  end = t0 + WAIT_MS;
  while (!cl.eof && ms_now() < end) tc_step(&cl, 20);
  CHECK(cl.eof);
  CHECK(ms_now() - t0 >= 900 && ms_now() - t0 < 2500);
  CHECK(!slow->closed);
  tc_free(st);
  tc_free(slow);
  tc_close(&cl);

  /* The first stream of a connection: GOAWAY(0), at once. */
  CHECK_EQ_INT(tc_connect(&cl, port), 0);
  st = tc_start(&cl, UNARY, GRPC, (const char *[]){"x-misbehave", "goaway", NULL},
                req, n, 1);
  end = ms_now() + WAIT_MS;
  while (!cl.eof && ms_now() < end) tc_step(&cl, 20);
  CHECK(cl.eof);
  CHECK_EQ_INT(cl.goaway_last, 0);
  CHECK(st->closed);
  tc_free(st);
  tc_close(&cl);
}

/* bad-hpack: the client's HPACK decoder rejects the block and ends the
 * connection; tiny-window: 1-byte WINDOW_UPDATEs. */
static void misbehave_frames(int port) {
  tc_client cl;
  CHECK_EQ_INT(tc_connect(&cl, port), 0);
  uint8_t req[4096];
  size_t n = grpc_frame(req, "hi", 2);
  tc_stream *ok = tc_start(&cl, UNARY, GRPC, NULL, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, ok, 0), 0);
  tc_free(ok);
  tc_stream *st = tc_start(&cl, UNARY, GRPC,
                           (const char *[]){"x-misbehave", "bad-hpack", NULL}, req, n, 1);
  int64_t end = ms_now() + WAIT_MS;
  while (nghttp2_session_want_read(cl.s) && ms_now() < end) tc_step(&cl, 20);
  CHECK_EQ_INT(nghttp2_session_want_read(cl.s), 0); /* the client gave up */
  CHECK_EQ_INT(st->status, 0);
  tc_step(&cl, 20); /* its GOAWAY(COMPRESSION_ERROR) goes out */
  tc_free(st);
  tc_close(&cl);

  /* tiny-window on a stream: the first message came with the big window;
   * the next ones come a byte per WINDOW_UPDATE. */
  CHECK_EQ_INT(tc_connect(&cl, port), 0);
  st = tc_start(&cl, STREAM, GRPC, (const char *[]){"x-misbehave", "tiny-window", NULL},
                req, n, 0);
  CHECK_EQ_INT(tc_wait(&cl, st, n), 0);
  CHECK_EQ_INT(nghttp2_session_get_remote_settings(
                   cl.s, NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE), 1);
  uint8_t m2[600];
  memset(m2, 'w', sizeof(m2));
  size_t n2 = grpc_frame(req, m2, sizeof(m2));
  tc_step(&cl, 50); /* the credit for the first message */
  int wu0 = cl.wu_stream;
  cl.wu_max = 0;
  tc_more(&cl, st, req, n2, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->trl, "grpc-status: 0\n"));
  CHECK_EQ_INT(st->body_len, n + n2);
  CHECK(cl.wu_stream - wu0 >= (int)n2 - 2);
  CHECK_EQ_INT(cl.wu_max, 1);
  tc_free(st);
  /* A later stream on the connection starts with a 1-byte window. */
  n = grpc_frame(req, m2, 50);
  st = tc_start(&cl, UNARY, GRPC, NULL, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_MEM(st->body, st->body_len, req, n);
  CHECK(has(st->trl, "grpc-status: 0\n"));
  tc_free(st);
  tc_close(&cl);
}

/* Misbehaving clients hurt only their own connection. */
static void robustness(int port) {
  /* Not HTTP/2 at all: the server closes the connection. */
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  CHECK_EQ_INT(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  const char http1[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  CHECK_EQ_INT(send(fd, http1, sizeof(http1) - 1, MSG_NOSIGNAL),
               (long)sizeof(http1) - 1);
  char buf[4096];
  int closed = 0;
  int64_t end = ms_now() + WAIT_MS;
  while (!closed && ms_now() < end) {
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    if (poll(&pf, 1, 50) > 0) closed = read(fd, buf, sizeof(buf)) <= 0;
  }
  CHECK(closed);
  close(fd);

  /* A client that vanishes in the middle of a stream. */
  tc_client cl;
  CHECK_EQ_INT(tc_connect(&cl, port), 0);
  tc_stream *st = tc_start(&cl, STREAM, GRPC, NULL, "\0\0\0\0\x10" "part", 9, 0);
  tc_step(&cl, 50);
  tc_close(&cl);
  tc_free(st);

  /* And one whose HPACK block is garbage. */
  CHECK_EQ_INT(tc_connect(&cl, port), 0);
  tc_step(&cl, 20);
  static const uint8_t bad[] = {0, 0, 4, 1, 5, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff};
  CHECK_EQ_INT(send(cl.fd, bad, sizeof(bad), MSG_NOSIGNAL), (long)sizeof(bad));
  end = ms_now() + WAIT_MS;
  while (!cl.eof && ms_now() < end) tc_step(&cl, 50);
  CHECK(cl.eof);
  tc_close(&cl);

  /* The server still serves. */
  CHECK_EQ_INT(tc_connect(&cl, port), 0);
  uint8_t req[16];
  size_t n = grpc_frame(req, "ok", 2);
  st = tc_start(&cl, UNARY, GRPC, NULL, req, n, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK_MEM(st->body, st->body_len, req, n);
  tc_free(st);
  tc_close(&cl);
}

/* The fuzzers' hook (tri__server_feed): a request fed as bytes is parsed,
 * routed and answered by a server that never started, and a second, broken
 * connection after it is refused without harm. */
static void feed_hook(void) {
  tri_server_opts o;
  tri_server_opts_init(&o);
  tri_server *srv;
  CHECK_EQ_INT(tri_server_new(&srv, &o), 0);
  nghttp2_hd_deflater *dfl;
  CHECK_EQ_INT(nghttp2_hd_deflate_new(&dfl, 4096), 0);
#define NV(n, v) {(uint8_t *)n, (uint8_t *)v, sizeof(n) - 1, sizeof(v) - 1, 0}
  nghttp2_nv nv[] = {NV(":method", "POST"), NV(":scheme", "http"),
                     NV(":path", "/benchmark.BenchmarkService/UnaryCall"),
                     NV(":authority", "x"), NV("content-type", "application/grpc"),
                     NV("x-response-size", "3000")};
#undef NV
  static const char hello[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                              "\x00\x00\x00\x04\x00\x00\x00\x00\x00";
  uint8_t in[512];
  size_t n = sizeof(hello) - 1;
  memcpy(in, hello, n);
  ssize_t hl = nghttp2_hd_deflate_hd(dfl, in + n + 9, 256, nv, 6);
  CHECK(hl > 0);
  const uint8_t hh[9] = {0, 0, (uint8_t)hl, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS,
                         0, 0, 0, 1};
  memcpy(in + n, hh, 9);
  n += 9 + (size_t)hl;
  uint8_t env[16];
  size_t el = grpc_frame(env, "ab", 2);
  const uint8_t dh[9] = {0, 0, (uint8_t)el, NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM,
                         0, 0, 0, 1};
  memcpy(in + n, dh, 9);
  memcpy(in + n + 9, env, el);
  n += 9 + el;
  nghttp2_hd_deflate_del(dfl);
  CHECK_EQ_INT(tri__server_feed(srv, in, n), 0);
  const tri_stats *stats = tri_server_stats(srv);
  CHECK_EQ_INT(stats->calls, 1);
  CHECK(stats->bytes_written > 3000); /* the generated answer went out */
  CHECK_EQ_INT(tri__server_feed(srv, (const uint8_t *)"GET / HTTP/1.1\r\n\r\n", 18), 0);
  CHECK_EQ_INT(stats->connects, 2);
  CHECK_EQ_INT(stats->calls, 1);
  tri_server_del(srv);
}

void test_server(void) {
  tri_server_opts o;
  tri_server_opts_init(&o);
  o.threads = 2;
  tri_server *srv;
  CHECK_EQ_INT(tri_server_new(&srv, &o), 0);
  CHECK_EQ_INT(tri_server_port(srv), 0);
  CHECK_EQ_INT(tri_server_start(srv), 0);
  CHECK_EQ_INT(tri_server_start(srv), TRI_ERR_INVALID);
  int port = tri_server_port(srv);
  CHECK(port > 0);
  unary_echo(port);
  stream_echo(port);
  grpc_errors(port);
  behaviours(port);
  triple_wire(port);
  gz_init();
  gzip_wire(port);
  gzip_bomb();
  ts_codec();
  test_service(port);
  misbehave_modes(port);
  misbehave_goaway(port);
  misbehave_frames(port);
  robustness(port);
  feed_hook();
  CHECK(tri_server_stats(srv)->connects >= 8);

  /* Stop with a connection open and a call waiting on its delay. */
  tc_client cl;
  CHECK_EQ_INT(tc_connect(&cl, port), 0);
  uint8_t req[16];
  size_t n = grpc_frame(req, "zz", 2);
  tc_stream *st = tc_start(&cl, UNARY, GRPC,
                           (const char *[]){"x-delay-ms", "60000", NULL}, req, n, 1);
  tc_step(&cl, 50);
  int64_t t0 = ms_now();
  CHECK_EQ_INT(tri_server_stop(srv), 0);
  CHECK(ms_now() - t0 < 2000);
  CHECK_EQ_INT(tri_server_stop(srv), 0);
  int64_t end = ms_now() + WAIT_MS;
  while (!cl.eof && ms_now() < end) tc_step(&cl, 50);
  CHECK(cl.eof);
  tc_close(&cl);
  tc_free(st);
  tri_server_del(srv);

  /* Bad options; a port already taken. */
  o.threads = 1000;
  CHECK_EQ_INT(tri_server_new(&srv, &o), TRI_ERR_INVALID);
  tri_server *a, *b;
  CHECK_EQ_INT(tri_server_new(&a, NULL), 0);
  CHECK_EQ_INT(tri_server_start(a), 0);
  tri_server_opts_init(&o);
  o.port = tri_server_port(a);
  CHECK_EQ_INT(tri_server_new(&b, &o), 0);
  CHECK_EQ_INT(tri_server_start(b), TRI_ERR_SYSTEM);
  CHECK(strstr(tri_server_errstr(b), "cannot listen") != NULL);
  tri_server_del(b);
  tri_server_del(a);
  tri_server_del(NULL);
  gz_done();
}
