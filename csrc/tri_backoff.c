#include "tri_backoff.h"

#define MS 1000000LL

void tri_backoff_init(tri_backoff *b, uint32_t initial_ms, uint32_t max_ms,
                      uint64_t seed) {
  if (initial_ms < TRI_BACKOFF_FLOOR_MS) initial_ms = TRI_BACKOFF_FLOOR_MS;
  if (max_ms < TRI_BACKOFF_FLOOR_MS) max_ms = TRI_BACKOFF_FLOOR_MS;
  if (max_ms < initial_ms) max_ms = initial_ms;
  b->initial_ns = (int64_t)initial_ms * MS;
  b->max_ns = (int64_t)max_ms * MS;
  b->multiplier = TRI_BACKOFF_MULTIPLIER;
  b->jitter = TRI_BACKOFF_JITTER;
  b->current_ns = 0;
  b->failures = 0;
  b->rng = seed ? seed : 0x9e3779b97f4a7c15ULL;
}

/* A uniform double in [0, 1) (xorshift64*: jitter needs spread, not quality). */
static double uniform(tri_backoff *b) {
  uint64_t x = b->rng;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  b->rng = x;
  return (double)((x * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

int64_t tri_backoff_next_delay(const tri_backoff *b) {
  if (!b->current_ns) return b->initial_ns;
  double next = (double)b->current_ns * b->multiplier;
  return next > (double)b->max_ns ? b->max_ns : (int64_t)next;
}

int64_t tri_backoff_failed(tri_backoff *b, int64_t started) {
  b->current_ns = tri_backoff_next_delay(b);
  b->failures++;
  double factor = 1.0 - b->jitter + 2.0 * b->jitter * uniform(b);
  return started + (int64_t)((double)b->current_ns * factor);
}

void tri_backoff_reset(tri_backoff *b) {
  b->current_ns = 0;
  b->failures = 0;
}
