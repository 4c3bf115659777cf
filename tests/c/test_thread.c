/* test_thread.c: threads the core starts block asynchronous signals (so a
 * Ctrl-C reaches the host's main thread), starting one leaves the caller's
 * own mask alone, and the thread carries the name it was given. */
#include <signal.h>
#include <string.h>

#include "tri_test.h"
#include "tri_thread.h"

struct seen {
  sigset_t mask;
};

static void *report_mask(void *arg) {
  struct seen *out = arg;
  pthread_sigmask(SIG_BLOCK, NULL, &out->mask);
  return NULL;
}

/* Waits until the test has looked at its name. */
static void *wait_for_release(void *arg) {
  pthread_mutex_t *release = arg;
  pthread_mutex_lock(release);
  pthread_mutex_unlock(release);
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

  /* The running thread carries its name once tri_thread_create returned, as
   * top -H or gdb show it. */
  pthread_mutex_t release = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&release);
  CHECK_EQ_INT(tri_thread_create(&t, "tri-test-name", wait_for_release, &release), 0);
  char name[16] = "";
  pthread_getname_np(t, name, sizeof(name));
  CHECK(strcmp(name, "tri-test-name") == 0);
  pthread_mutex_unlock(&release);
  pthread_join(t, NULL);
}
