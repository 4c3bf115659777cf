/*
 * tri_clock: the one clock of the library, CLOCK_MONOTONIC in nanoseconds.
 * Deadlines, timers, backoff and the load generator's schedule all read it,
 * so their times compare with one another.  Inline: the client reads it a
 * few times per call.
 */
#ifndef TRI_CLOCK_H
#define TRI_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t tri__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#endif
