/* test_thread.c: threads the core starts block asynchronous signals (so a
 * Ctrl-C reaches the host's main thread), and starting one leaves the
 * caller's own mask alone. */
#include <signal.h>

#include "tri_test.h"
#include "tri_thread.h"

static void *report_mask(void *arg) {
  sigset_t *out = arg;
  pthread_sigmask(SIG_BLOCK, NULL, out);
  return NULL;
}

void test_thread(void) {
  sigset_t before, after, child;
  sigemptyset(&child);
  pthread_sigmask(SIG_BLOCK, NULL, &before);
  pthread_t t;
  CHECK_EQ_INT(tri_thread_create(&t, report_mask, &child), 0);
  pthread_join(t, NULL);
  pthread_sigmask(SIG_BLOCK, NULL, &after);
  CHECK(sigismember(&child, SIGINT) == 1);
  CHECK(sigismember(&child, SIGTERM) == 1);
  CHECK(sigismember(&child, SIGPIPE) == 1);
  CHECK(sigismember(&child, SIGSEGV) == 0); /* synchronous: never blocked */
  CHECK(sigismember(&after, SIGINT) == sigismember(&before, SIGINT));
  CHECK(sigismember(&after, SIGTERM) == sigismember(&before, SIGTERM));
}
