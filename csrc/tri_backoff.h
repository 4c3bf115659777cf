/*
 * tri_backoff: gRPC connection backoff between failed connection attempts
 * (grpc/grpc doc/connection-backoff.md), as a pure state machine: no clock,
 * no I/O, no locking (the channel calls it under its lock).
 *
 * After a connection attempt that started at time S failed, the next attempt
 * may start at S + delay.  The first delay is `initial`; each further
 * consecutive failure multiplies it by `multiplier` (1.6), up to `max`.  Every
 * delay is jittered by a uniform factor in [1 - jitter, 1 + jitter] (0.2), as
 * grpc core does, so channels that failed together spread out.  A successful
 * attempt (tri_backoff_reset) starts the sequence over.
 *
 * Times and delays are nanoseconds (CLOCK_MONOTONIC for the channel).
 */
#ifndef TRI_BACKOFF_H
#define TRI_BACKOFF_H

#include <stdint.h>

/* grpcio's defaults (connection-backoff.md). */
#define TRI_BACKOFF_INITIAL_MS 1000
#define TRI_BACKOFF_MAX_MS 120000
#define TRI_BACKOFF_MIN_CONNECT_TIMEOUT_MS 20000
#define TRI_BACKOFF_MULTIPLIER 1.6
#define TRI_BACKOFF_JITTER 0.2
/* grpc core never backs off (or gives an attempt) less than this. */
#define TRI_BACKOFF_FLOOR_MS 100

typedef struct tri_backoff {
  int64_t initial_ns;
  int64_t max_ns;
  double multiplier;
  double jitter;
  int64_t current_ns; /* un-jittered delay of the last failure; 0: none */
  uint32_t failures;  /* consecutive failed attempts */
  uint64_t rng;       /* xorshift64* state; never 0 */
} tri_backoff;

/* Sets the parameters (ms values below TRI_BACKOFF_FLOOR_MS are raised to
 * it, and max to at least initial) and a jitter seed; no failures yet. */
void tri_backoff_init(tri_backoff *b, uint32_t initial_ms, uint32_t max_ms,
                      uint64_t seed);

/* Records a failed attempt that started at `started`.  Returns when the next
 * attempt may start (started + the jittered delay). */
int64_t tri_backoff_failed(tri_backoff *b, int64_t started);

/* Records a successful attempt: the next failure waits `initial` again. */
void tri_backoff_reset(tri_backoff *b);

/* The un-jittered delay the next failure will get (initial when none yet). */
int64_t tri_backoff_next_delay(const tri_backoff *b);

#endif
