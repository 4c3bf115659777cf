/*
 * blocking_threads.c: the Python sync path's threading with no Python.
 *
 * N threads each make blocking unary calls through the C core, the way N
 * Python threads do through the sync API: tri_call_start hands the call to
 * the connection's I/O thread, tri_call_wait sleeps until the I/O thread
 * completes it.  No GIL, no interpreter, no hand-off between callers (each
 * is woken by the I/O thread when its call completes).  What this costs per
 * call, against the C load generator's single thread making the same calls,
 * is what the threading of a blocking API costs on this machine before any
 * Python runs.
 *
 * It prints one JSON line: the client process's CPU time (user + system),
 * system time and voluntary context switches per call, and calls per second,
 * measured over the timed calls after every thread made one call.
 *
 *     make build/blocking_threads
 *     build/blocking_threads HOST PORT [threads=50] [calls=20000] [payload bytes=128]
 *
 * `benchmarks/python_wakeups.py --arm threads` (or `--arms c,threads,sync`
 * with --base) builds it in a checkout (that make target), starts the peer
 * and runs it next to the Python arms.  Loopback only; every run is bounded by `calls`
 * and a 30 s deadline per call.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "tri_buf.h"
#include "tri_call.h"
#include "tri_channel.h"
#include "tri_pb.h"

#define METHOD "/benchmark.BenchmarkService/UnaryCall"

static tri_channel *ch;
static const uint8_t *request;
static size_t request_len;
static long per_thread;
static pthread_barrier_t start, stop;
static int failures;

/* One blocking call; 0 when it ended OK. */
static int call_once(void) {
  tri_call *c = NULL;
  if (tri_call_new(ch, &c, METHOD, strlen(METHOD), 30LL * 1000 * 1000 * 1000, 0)) return -1;
  tri_call_set_request_borrowed(c, request, request_len);
  tri_call_start(c);
  tri_call_wait(c, -1);
  int code = tri_call_code(c);
  tri_call_release(c);
  return code;
}

static void *caller(void *arg) {
  (void)arg;
  int bad = call_once() != 0; /* the warm-up call, before the clock */
  pthread_barrier_wait(&start);
  for (long i = 0; i < per_thread; i++) bad |= call_once() != 0;
  pthread_barrier_wait(&stop);
  if (bad) __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
  return NULL;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s HOST PORT [threads] [calls] [payload bytes]\n", argv[0]);
    return 2;
  }
  int threads = argc > 3 ? atoi(argv[3]) : 50;
  long calls = argc > 4 ? atol(argv[4]) : 20000;
  size_t size = argc > 5 ? (size_t)atol(argv[5]) : 128;
  if (threads < 1 || threads > 1000 || calls < threads || size > (64u << 20)) {
    fprintf(stderr, "threads 1-1000, calls >= threads, payload up to 64 MiB\n");
    return 2;
  }
  per_thread = calls / threads;
  tri_channel_opts o;
  tri_channel_opts_init(&o);
  o.host = argv[1];
  o.port = argv[2];
  o.max_recv_bytes = (int64_t)size + 1024; /* echoes come back */
  if (tri_channel_new(&ch, &o)) return fprintf(stderr, "channel refused\n"), 1;
  uint8_t *payload = calloc(1, size ? size : 1);
  tri_buf *msg = NULL;
  if (!payload || tri_pb_pack_benchmark_request(tri_channel_pool(ch), payload, size, 0, &msg))
    return fprintf(stderr, "packing the request failed\n"), 1;
  request = tri_buf_begin(msg);
  request_len = msg->len;

  pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
  pthread_barrier_init(&stop, NULL, (unsigned)threads + 1);
  pthread_t *t = calloc((size_t)threads, sizeof(*t));
  for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, caller, NULL);
  pthread_barrier_wait(&start);
  struct rusage r0, r1;
  getrusage(RUSAGE_SELF, &r0);
  double t0 = now_s();
  pthread_barrier_wait(&stop);
  double t1 = now_s();
  getrusage(RUSAGE_SELF, &r1);
  for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);

  double n = (double)per_thread * threads;
  double user = (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) * 1e6 +
                (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec);
  double sys = (r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1e6 +
               (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec);
  printf("RESULT {\"calls\": %.0f, \"cpu_us_per_call\": %.3f, \"sys_us_per_call\": %.3f, "
         "\"vcsw_per_call\": %.3f, \"minflt_per_call\": %.3f, \"qps\": %.1f, "
         "\"failed_threads\": %d}\n",
         n, (user + sys) / n, sys / n, (double)(r1.ru_nvcsw - r0.ru_nvcsw) / n,
         (double)(r1.ru_minflt - r0.ru_minflt) / n, n / (t1 - t0), failures);
  tri_pool_put(tri_channel_pool(ch), msg);
  free(payload);
  free(t);
  tri_channel_del(ch);
  return failures ? 1 : 0;
}
