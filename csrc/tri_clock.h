/*
 * tri_clock: the one clock of the library, CLOCK_MONOTONIC in nanoseconds.
 * Deadlines, timers, backoff and the load generator's schedule all read it,
 * so their times compare with one another.  Inline: the client reads it a
 * few times per call.  Also here, so that no other file reads a clock: the
 * same time as a timespec (for condition variables set to CLOCK_MONOTONIC),
 * and the CPU time of the calling thread (the load generator's measure of
 * its driver threads' work; not a time base).
 */
#ifndef TRI_CLOCK_H
#define TRI_CLOCK_H

#include <limits.h>
#include <stdint.h>
#include <time.h>

static inline int64_t tri__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* `at` (tri__now time) as the CLOCK_MONOTONIC timespec that
 * pthread_cond_timedwait takes on a condition variable set to that clock. */
static inline struct timespec tri_clock_timespec(int64_t at) {
  struct timespec ts;
  ts.tv_sec = (time_t)(at / 1000000000LL);
  ts.tv_nsec = (long)(at % 1000000000LL);
  return ts;
}

/* CPU time the calling thread has used, in ns (CLOCK_THREAD_CPUTIME_ID). */
static inline int64_t tri_clock_thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* An epoll timeout for a wake-up at `at` (tri__now time; 0 = none): -1 for
 * none, 0 when it has passed, else the milliseconds left rounded up (so the
 * loop never wakes just before it), at most INT_MAX. */
static inline int tri_clock_timeout_ms(int64_t at) {
  if (!at) return -1;
  int64_t left = at - tri__now();
  if (left <= 0) return 0;
  int64_t ms = (left + 999999) / 1000000;
  return ms > INT_MAX ? INT_MAX : (int)ms;
}

#endif
