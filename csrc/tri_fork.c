/* tri_fork.c: the process's fork generation (see tri_fork.h). */
#include "tri_fork.h"

#include <pthread.h>
#include <stdatomic.h>

static _Atomic unsigned generation;
static pthread_once_t installed = PTHREAD_ONCE_INIT;

static void in_child(void) { atomic_fetch_add(&generation, 1); }

static void install(void) { pthread_atfork(NULL, NULL, in_child); }

unsigned tri_fork_generation(void) {
  pthread_once(&installed, install);
  return atomic_load_explicit(&generation, memory_order_relaxed);
}

int tri_fork_inherited(unsigned recorded) {
  return tri_fork_generation() != recorded;
}
