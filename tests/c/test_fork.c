/* test_fork.c: a channel inherited across fork() fails calls at once and is
 * deleted in the child without waiting for the parent's I/O thread (which
 * does not exist there).  Loopback only: a listening socket of the test's own
 * (no server answers; the parent's connection waits for SETTINGS). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tri_buf.h"
#include "tri_call.h"
#include "tri_channel.h"
#include "tri_error.h"
#include "tri_fork.h"
#include "tri_test.h"
#include "tri_wire.h"

#define UNARY "/benchmark.BenchmarkService/UnaryCall"

/* Runs fn in a child (alarm: a hang kills it) and returns its exit status. */
static int in_child(int (*fn)(void *), void *arg) {
  pid_t pid = fork();
  if (pid == 0) {
    alarm(10);
    _exit(fn(arg));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

static int generation_child(void *arg) {
  unsigned parent = *(unsigned *)arg;
  if (tri_fork_generation() != parent + 1) return 1;
  if (!tri_fork_inherited(parent)) return 2;
  return 0;
}

struct inherited {
  tri_channel *ch;
  tri_call *in_flight; /* started by the parent before the fork */
};

static int inherited_child(void *arg) {
  struct inherited *in = arg;
  tri_channel *ch = in->ch;
  if (!tri_channel_inherited(ch)) return 1;
  /* The parent's call cannot complete here: it is orphaned, never waited for. */
  if (!tri_call_orphaned(in->in_flight)) return 6;
  if (tri_call_cancel(in->in_flight, TRI_CODE_CANCELLED, "child")) return 7;
  if (tri_call_wait(in->in_flight, 100000000LL) != TRI_ERR_TIMEOUT) return 8;
  tri_call_release(in->in_flight); /* returns at once */
  tri_call *c;
  if (tri_call_new(ch, &c, UNARY, strlen(UNARY), 5000000000LL, 0)) return 2;
  tri_call_set_request_borrowed(c, (const uint8_t *)"x", 1);
  if (!tri_call_start(c)) return 3; /* must end at start, not wait for a thread */
  if (tri_call_code(c) != TRI_CODE_UNAVAILABLE) return 4;
  const char *msg;
  size_t n;
  tri_call_message(c, &msg, &n);
  if (!memmem(msg, n, "fork", 4)) return 5;
  tri_call_release(c);
  tri_channel_del(ch); /* no pthread_join of the parent's I/O thread */
  return 0;
}

/* Detached buffers across fork(): another thread of the parent takes and
 * gives back detached buffers all the time, so its pool lock may be held at
 * the fork; the child must still free what it inherited and take new ones
 * (the pool starts over there) instead of hanging on that lock. */
static atomic_int churning;

static void *churn(void *arg) {
  (void)arg;
  while (atomic_load(&churning)) tri_buf_free(tri_buf_new(NULL, 100000, 64));
  return NULL;
}

static int detached_child(tri_buf *inherited) {
  tri_buf_free(inherited);
  for (int i = 0; i < 100; i++) {
    tri_buf *b = tri_buf_new(NULL, 100000, 64);
    if (!b || !tri_buf_detached(b)) return 1;
    tri_buf_free(b);
  }
  return 0;
}

/* detached_child in a child of this process: its result (0 = passed) comes
 * through a pipe, then the child kills itself.  A buffer the churning thread
 * held at the fork is lost in the child (that thread does not exist there),
 * and a leak checker (valgrind, LeakSanitizer) would fail the child at its
 * exit for it; SIGKILL ends the child without that check.  A hang is killed
 * by the alarm and reads as a failure (no result). */
static int detached_in_child(tri_buf *inherited) {
  int fds[2];
  if (pipe(fds)) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    alarm(10);
    char result = (char)detached_child(inherited);
    if (write(fds[1], &result, 1) != 1) _exit(3);
    kill(getpid(), SIGKILL);
  }
  close(fds[1]);
  char result = 2;
  ssize_t got = read(fds[0], &result, 1);
  close(fds[0]);
  waitpid(pid, NULL, 0);
  return got == 1 ? result : 2;
}

static void detached_buffers_in_a_child(void) {
  pthread_t t;
  atomic_store(&churning, 1);
  CHECK_EQ_INT(pthread_create(&t, NULL, churn, NULL), 0);
  int failed = 0;
  for (int i = 0; i < 30; i++) {
    tri_buf *mine = tri_buf_new(NULL, 100000, 64);
    failed += detached_in_child(mine) != 0;
    tri_buf_free(mine);
  }
  atomic_store(&churning, 0);
  pthread_join(t, NULL);
  CHECK_EQ_INT(failed, 0);
}

void test_fork(void) {
  detached_buffers_in_a_child();
  unsigned gen = tri_fork_generation();
  CHECK_EQ_INT(tri_fork_inherited(gen), 0);
  CHECK_EQ_INT(in_child(generation_child, &gen), 0);
  CHECK_EQ_INT(tri_fork_generation(), gen); /* the parent's is unchanged */

  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof(sa);
  CHECK_EQ_INT(bind(lfd, (struct sockaddr *)&sa, len), 0);
  CHECK_EQ_INT(listen(lfd, 8), 0);
  getsockname(lfd, (struct sockaddr *)&sa, &len);
  char port[16];
  snprintf(port, sizeof(port), "%d", ntohs(sa.sin_port));
  tri_channel_opts o;
  tri_channel_opts_init(&o);
  o.host = "127.0.0.1";
  o.port = port;
  tri_channel *ch;
  CHECK_EQ_INT(tri_channel_new(&ch, &o), 0);
  /* A call in flight: the channel has a connection and an I/O thread. */
  tri_call *c;
  CHECK_EQ_INT(tri_call_new(ch, &c, UNARY, strlen(UNARY), -1, 0), 0);
  tri_call_set_request_borrowed(c, (const uint8_t *)"p", 1);
  CHECK_EQ_INT(tri_call_start(c), 0);
  CHECK_EQ_INT(tri_channel_inherited(ch), 0);
  CHECK_EQ_INT(tri_call_orphaned(c), 0);
  struct inherited in = {ch, c};
  CHECK_EQ_INT(in_child(inherited_child, &in), 0);
  /* The parent's channel is untouched by the child. */
  CHECK_EQ_INT(tri_call_done(c), 0);
  tri_call_cancel(c, TRI_CODE_CANCELLED, "test over");
  CHECK_EQ_INT(tri_call_wait(c, 5000000000LL), 0);
  CHECK_EQ_INT(tri_call_code(c), TRI_CODE_CANCELLED);
  tri_call_release(c);
  tri_channel_del(ch);
  close(lfd);
}
