#include "tri_thread.h"

#include <signal.h>

int tri_thread_create(pthread_t *thread, const char *name,
                      void *(*fn)(void *), void *arg) {
  sigset_t all, old;
  sigfillset(&all);
  static const int synchronous[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL,
                                    SIGTRAP, SIGABRT, SIGSYS};
  for (size_t i = 0; i < sizeof(synchronous) / sizeof(synchronous[0]); i++)
    sigdelset(&all, synchronous[i]);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rv = pthread_create(thread, NULL, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rv == 0) pthread_setname_np(*thread, name);
  return rv;
}
