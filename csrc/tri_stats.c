#include "tri_stats.h"

const char *const tri_stats_names[] = {
    "calls",       "write_syscalls", "bytes_written", "read_syscalls",
    "bytes_read",  "allocations",    "pool_hits",     "pool_misses",
    "wakeups",     "connects",       "connect_failures", "write_stalls",
    "keepalive_timeouts", "bytes_read_in_place", 0};

int tri_stats_snapshot(const tri_stats *st, uint64_t *out, int max) {
  /* The struct is a plain array of same-typed atomics, in name order. */
  const _Atomic uint64_t *f = &st->calls;
  int n = (int)(sizeof(tri_stats) / sizeof(_Atomic uint64_t));
  if (n > max) n = max;
  for (int i = 0; i < n; i++)
    out[i] = atomic_load_explicit(&f[i], memory_order_relaxed);
  return n;
}

void tri_stats_accumulate(tri_stats *dst, const tri_stats *src) {
  const _Atomic uint64_t *f = &src->calls;
  _Atomic uint64_t *t = &dst->calls;
  int n = (int)(sizeof(tri_stats) / sizeof(_Atomic uint64_t));
  for (int i = 0; i < n; i++)
    atomic_fetch_add_explicit(&t[i], atomic_load_explicit(&f[i], memory_order_relaxed),
                              memory_order_relaxed);
}
