/* test_thread.c: threads the core starts block asynchronous signals (so a
 * Ctrl-C reaches the host's main thread), starting one leaves the caller's
 * own mask alone, and the thread carries the name it was given. */
#include <signal.h>
#include <string.h>

#include "tri_test.h"
#include "tri_thread.h"

struct seen {
  sigset_t mask;
  char name[16];
};

static void *report_mask(void *arg) {
  struct seen *out = arg;
  pthread_sigmask(SIG_BLOCK, NULL, &out->mask);
  return NULL;
}

static void *report_name(void *arg) {
  struct seen *out = arg;
  pthread_getname_np(pthread_self(), out->name, sizeof(out->name));
  return NULL;
}

void test_thread(void) {
  sigset_t before, after;
  struct seen seen = {0};
  sigemptyset(&seen.mask);
  pthread_sigmask(SIG_BLOCK, NULL, &before);
  pthread_t t;
  CHECK_EQ_INT(tri_thread_create(&t, "tri-test", report_mask, &seen), 0);
  pthread_join(t, NULL);
  sigset_t child = seen.mask;
  pthread_sigmask(SIG_BLOCK, NULL, &after);
  CHECK(sigismember(&child, SIGINT) == 1);
  CHECK(sigismember(&child, SIGTERM) == 1);
  CHECK(sigismember(&child, SIGPIPE) == 1);
  CHECK(sigismember(&child, SIGSEGV) == 0); /* synchronous: never blocked */
  CHECK(sigismember(&after, SIGINT) == sigismember(&before, SIGINT));
  CHECK(sigismember(&after, SIGTERM) == sigismember(&before, SIGTERM));

  /* The name is visible from the thread itself, as from top -H or gdb. */
  CHECK_EQ_INT(tri_thread_create(&t, "tri-test-name", report_name, &seen), 0);
  pthread_join(t, NULL);
  CHECK(strcmp(seen.name, "tri-test-name") == 0);
}
