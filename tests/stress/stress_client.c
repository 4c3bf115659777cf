/*
 * stress_client.c: many threads sharing one channel against the embedded
 * echo server, for ThreadSanitizer (make test-tsan).  It is not a unit test
 * (it uses loopback TCP); it exists so data races between callers, the I/O
 * thread and the writer show up under TSan.  Exit status 0 means every
 * response matched its request and every stream came back whole.  Then the
 * load generator runs against the same server in both its shapes (its loop on
 * the I/O thread as a hook, and on driver threads), two connections each.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tri_call.h"
#include "tri_channel.h"
#include "tri_error.h"
#include "tri_load.h"
#include "tri_server.h"
#include "tri_wire.h"

#define THREADS 6
#define UNARY_CALLS 300
#define STREAMS 20
#define STREAM_MSGS 50

static tri_channel *ch;
static int failures;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

static void fail(const char *what, int id) {
  pthread_mutex_lock(&fail_lock);
  failures++;
  fprintf(stderr, "thread %d: %s\n", id, what);
  pthread_mutex_unlock(&fail_lock);
}

static void unary_calls(int id) {
  for (int i = 0; i < UNARY_CALLS; i++) {
    char req[32];
    int n = snprintf(req, sizeof(req), "\x0a%c%d-%d", 0, id, i);
    req[1] = (char)(n - 2); /* BenchmarkRequest{payload} */
    tri_call *c;
    if (tri_call_new(ch, &c, "/benchmark.BenchmarkService/UnaryCall", 37,
                     5000000000LL, 0)) {
      fail("call_new", id);
      continue;
    }
    tri_call_set_request_borrowed(c, (const uint8_t *)req, (size_t)n);
    if (i % 50 == 7) tri_call_cancel(c, TRI_CODE_CANCELLED, "stress cancel");
    tri_call_start(c);
    tri_call_wait(c, -1);
    const uint8_t *p;
    size_t len;
    tri_call_response(c, &p, &len);
    if (tri_call_code(c) == TRI_CODE_OK && (len != (size_t)n || memcmp(p, req, len)))
      fail("unary echo mismatch", id);
    if (tri_call_code(c) != TRI_CODE_OK && tri_call_code(c) != TRI_CODE_CANCELLED)
      fail("unary status", id);
    tri_call_release(c);
  }
}

static void streams(int id) {
  for (int s = 0; s < STREAMS; s++) {
    tri_call *c;
    if (tri_call_new(ch, &c, "/benchmark.BenchmarkService/StreamCall", 38,
                     10000000000LL,
                     TRI_CALL_CLIENT_STREAMING | TRI_CALL_SERVER_STREAMING)) {
      fail("stream_new", id);
      continue;
    }
    tri_call_start(c);
    uint8_t msg[64];
    memset(msg, 'm', sizeof(msg));
    msg[0] = 0x0a;
    msg[1] = 62;
    int got = 0;
    for (int i = 0; i < STREAM_MSGS; i++) {
      if (tri_call_write(c, msg, sizeof(msg))) fail("write", id);
      tri_buf *m;
      if (i % 10 == 9 && tri_call_read(c, 5000000000LL, &m) == 1) { /* ping */
        got++;
        tri_call_msg_release(c, m);
      }
    }
    tri_call_done_writing(c);
    tri_buf *m;
    while (tri_call_read(c, 5000000000LL, &m) == 1) {
      got++;
      tri_call_msg_release(c, m);
    }
    if (tri_call_code(c) != TRI_CODE_OK || got != STREAM_MSGS) fail("stream", id);
    tri_call_release(c);
  }
}

/* A counted load: every call must end OK. */
static void load_run(const char *port, int mode, int driver_threads) {
  tri_load_config c;
  tri_load_config_init(&c);
  c.host = "127.0.0.1";
  c.port = port;
  c.mode = mode;
  c.connections = 2;
  c.concurrency = 16;
  c.duration_s = 0;
  c.count = 3000;
  c.driver_threads = driver_threads;
  tri_load *l;
  if (tri_load_new(&l, &c) || tri_load_run(l)) {
    fail("load run failed", 100 + mode * 2 + driver_threads);
    return;
  }
  const tri_load_result *r = tri_load_results(l);
  if (r->calls < 3000 || r->errors) fail("load: short or failed calls", 100 + mode);
  tri_load_del(l);
}

static void *worker(void *arg) {
  int id = (int)(long)arg;
  if (id % 2) streams(id);
  else unary_calls(id);
  return NULL;
}

int main(void) {
  tri_server *srv;
  tri_server_opts so;
  tri_server_opts_init(&so);
  so.threads = 2;
  if (tri_server_new(&srv, &so) || tri_server_start(srv)) {
    fprintf(stderr, "server did not start\n");
    return 2;
  }
  char port[16];
  snprintf(port, sizeof(port), "%d", tri_server_port(srv));
  tri_channel_opts o;
  tri_channel_opts_init(&o);
  o.host = "127.0.0.1";
  o.port = port;
  if (tri_channel_new(&ch, &o)) return 2;
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  tri_channel_close(ch);
  tri_channel_del(ch);
  for (int mode = TRI_LOAD_UNARY; mode <= TRI_LOAD_UNARY_STREAM_PATH; mode++)
    for (int driver_threads = 0; driver_threads < 2; driver_threads++)
      load_run(port, mode, driver_threads);
  tri_server_del(srv);
  printf("stress: %d failures\n", failures);
  return failures ? 1 : 0;
}
