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

  /* A truncated envelope, and a compressed one. */
  st = tc_start(&cl, UNARY, GRPC, NULL, "\0\0\0\0\x09" "abc", 8, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: 13\n"));
  tc_free(st);
  st = tc_start(&cl, UNARY, GRPC, NULL, "\x01\0\0\0\x03" "abc", 8, 1);
  CHECK_EQ_INT(tc_wait(&cl, st, 0), 0);
  CHECK(has(st->hdrs, "grpc-status: 12\n"));
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
  robustness(port);
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
}
