#include "tri_thread.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>

/* What the new thread needs before it runs `fn`: its name is set by the
 * thread itself, first, so that no code of `fn` ever runs unnamed. */
typedef struct start {
  const char *name;
  void *(*fn)(void *);
  void *arg;
} start;

static void *named_start(void *p) {
  start s = *(start *)p;
  free(p);
  pthread_setname_np(pthread_self(), s.name);
  return s.fn(s.arg);
}

int tri_thread_create(pthread_t *thread, const char *name,
                      void *(*fn)(void *), void *arg) {
  start *s = malloc(sizeof(*s));
  if (!s) return ENOMEM;
  *s = (start){name, fn, arg};
  sigset_t all, old;
  sigfillset(&all);
  static const int synchronous[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL,
                                    SIGTRAP, SIGABRT, SIGSYS};
  for (size_t i = 0; i < sizeof(synchronous) / sizeof(synchronous[0]); i++)
    sigdelset(&all, synchronous[i]);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rv = pthread_create(thread, NULL, named_start, s);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rv) free(s);
  return rv;
}
